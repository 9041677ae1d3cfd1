"""The ``pythonic`` format (template language v2): a list of Python calls, ``[f(a=1), g()]``
(``runtime/pythonic.py``; template-language.md "Content parsers")."""

from __future__ import annotations

import re
from collections.abc import Callable

import regex

from ..content import _grammar_pythonic, _make_pythonic
from ..pythonic import _JSON_WORDS as _PY_ALL_WORDS
from ..pythonic import quick_read as _quick_pythonic
from .base import ACCEPTED, UNDECIDED, Boundary, Format, Plan, Problems, bool_args, call_shape, is_tool_field


def check(args: dict, where: str = "content_args") -> Problems:
    """Load-time checks of pythonic's ``content_args``."""
    problems: Problems = []
    suffix = args.get("strip_suffix")
    if "strip_suffix" in args and not (isinstance(suffix, str) and suffix):
        problems.append(("", f"pythonic 'strip_suffix' must be a non-empty string, got {suffix!r}"))
    return problems + bool_args(args, ("allow_bare", "json_literals"), "pythonic")


def plan(field) -> Plan:
    """Ends itself and may reject its opener. A tool field whose transform keeps the reader's calls
    (``{content.name}``/``{content.arguments}`` per element, or no transform) converts them to JSON as they
    are written."""
    base = {"ends_itself": True, "can_reject": True, "empty_none": True}
    if is_tool_field(field):
        shape = call_shape(field)
        keeps = field.transform is None or (shape is not None and shape.each and shape.name == ("key", "name")
                                            and shape.arguments == ("keys", ("arguments",)))
        if keeps:
            return Plan("pythonic", **base, arguments="pythonic", call="object", name_key="name",
                        arg_keys=("arguments",))
    return Plan("pythonic", **base)


# ------------------------------------------------------------------------------------------------
# The boundary reader: where a call list ends (``end: "value"``, ``reject``; the core's Format.reader).

_PY_SPACE = re.compile(r"[ \t\r\n\f\v]*")
_NAME_START = regex.compile(r"[^\W\d]")
_NAME_REST = regex.compile(r"\w*")
_PY_CODE_STOP = re.compile(r"[\[\](){}'\"]")
_PY_STRING_STOP = {"'": re.compile(r"['\\]"), '"': re.compile(r'["\\]')}
_OPENERS = "([{"
_CLOSERS = ")]}"


class PythonicBoundary(Boundary):
    """End of a pythonic call list ``[f(a=1), g()]`` or of a bare call ``f(a=1)``.

    Accept rule (the grammar of :mod:`respc.runtime.pythonic`): after whitespace, ``[`` followed
    (after whitespace) by ``]`` or by a dotted name and ``(``; or, with ``allow_bare``, a dotted
    name directly followed by ``(``. The decoder stays UNDECIDED while the name is being read and
    ACCEPTS at the ``(``; ``Sure, I can`` is REJECTED at the ``,``. After that it tracks
    ``()[]{}`` nesting and strings in either quote, triple quotes included, where a backslash
    always protects the next character (true of raw strings too). The value ends at the bracket
    that closes the list (or the bare call's parenthesis).
    """

    def __init__(self, allow_bare: bool = True) -> None:
        self.status = UNDECIDED
        self._allow_bare = allow_bare
        self._state = "start"
        self._depth = 0
        self._quote = ""
        self._carry = ""

    def _scan(self, data: str) -> int:
        state = self._state
        if state == "start":
            # Quick path (issue 14): a whole call list of the pythonic reader's quick subset
            # (strings without backslashes, no nesting but the calls' own brackets) ends where
            # that reader stops: the scan below would accept at the first '(' and reach depth 0 at
            # the same closing bracket (tests/test_quick_readers.py compares the two). Not tried
            # before a ')' is there (a streamed body's first pieces, prose probed after a '['):
            # no call list is complete without one.
            got = _quick_pythonic(data, self._allow_bare, None, _PY_ALL_WORDS) if ")" in data else None
            if got is not None:
                self.status = ACCEPTED
                self._state = "done"
                return got[1]
        i, n = 0, len(data)
        depth = self._depth
        try:
            while i < n:
                if state == "code":
                    m = _PY_CODE_STOP.search(data, i)
                    if m is None:
                        break
                    i = m.start()
                    char = data[i]
                    if char in _OPENERS:
                        depth += 1
                        i += 1
                    elif char in _CLOSERS:
                        depth -= 1
                        i += 1
                        if depth == 0:
                            state = "done"
                            return i
                    elif data.startswith(char * 3, i):
                        self._quote = char * 3
                        state = "string"
                        i += 3
                    elif n - i < 3 and data[i:] == char * (n - i):
                        self._carry = data[i:]  # ', '' : an empty string or a triple quote
                        break
                    elif data.startswith(char * 2, i):
                        i += 2  # the empty string
                    else:
                        self._quote = char
                        state = "string"
                        i += 1
                elif state == "string":
                    quote = self._quote
                    m = _PY_STRING_STOP[quote[0]].search(data, i)
                    if m is None:
                        break
                    i = m.start()
                    if data[i] == "\\":
                        if i + 1 == n:
                            state = "escape"
                            break
                        i += 2
                    elif len(quote) == 1 or data.startswith(quote, i):
                        i += len(quote)
                        state = "code"
                    elif n - i < 3 and data[i:] == quote[0] * (n - i):
                        self._carry = data[i:]
                        break
                    else:
                        i += 1
                elif state == "escape":
                    i += 1
                    state = "string"
                elif state == "start" or state == "list":
                    i = _PY_SPACE.match(data, i).end()
                    if i == n:
                        break
                    char = data[i]
                    if state == "start" and char == "[":
                        depth = 1
                        state = "list"
                        i += 1
                    elif state == "list" and char == "]":
                        self.status = ACCEPTED
                        state = "done"
                        return i + 1
                    elif _NAME_START.match(char) and (state == "list" or self._allow_bare):
                        state = "name"
                        i += 1
                    else:
                        return self._reject()
                elif state == "name":
                    i = _NAME_REST.match(data, i).end()
                    if i == n:
                        break
                    char = data[i]
                    i += 1
                    if char == ".":
                        state = "dot"
                    elif char == "(":
                        self.status = ACCEPTED
                        depth += 1
                        state = "code"
                    else:
                        return self._reject()
                else:  # "dot": a name must follow
                    if not _NAME_START.match(data[i]):
                        return self._reject()
                    state = "name"
                    i += 1
            return -1
        finally:
            if self._state != "rejected":
                self._state = state
            self._depth = depth


def pythonic_boundary(args: dict) -> Callable[[], Boundary]:
    """Factory of :class:`PythonicBoundary` decoders for a pythonic field's ``content_args``.

    Args:
        args (dict): ``allow_bare`` (bool, default true).

    Returns:
        Callable[[], Boundary]: a new decoder per call (one per open region).
    """
    allow_bare = bool(args.get("allow_bare", True))
    return lambda: PythonicBoundary(allow_bare)


FORMAT = Format("pythonic", True, check, plan, _make_pythonic, reader=pythonic_boundary, ends_itself=True,
                can_reject=True, grammar=_grammar_pythonic, since=2)
