"""Incremental boundary decoders: where a self-delimiting region body ends (template v2, ``end: "value"``).

Theory of operation
-------------------
A region whose field says ``"end": "value"`` has no closing delimiter of its own: it ends where its
content parser's value ends (``{"name": "f"} Anything else?`` ends after the ``}``). The streaming
core feeds such a body, chunk by chunk, to one :class:`Boundary` per open region. The decoder keeps
only the little state needed to find the end -- bracket depth, whether it is inside a string, an
escape in flight, a few held characters of a delimiter split across chunks -- and never builds the
value: the whole-body parser of :mod:`respc.runtime.content` does that once the region closes.

Every decoder is a character-level state machine whose only lookahead is held in ``_carry``, so
the result never depends on the chunking: fed ``"ab"`` or ``"a"``, ``"b"`` it reaches the same
state, and the end offset found is the same on every chunking (``tests/test_decoders.py`` checks
this with hypothesis). The text is skimmed with precompiled regex searches, so the cost is linear
in the body length.

Status (one of :data:`UNDECIDED`, :data:`ACCEPTED`, :data:`REJECTED`) starts at ``UNDECIDED`` while
only whitespace was seen and changes once, at the first significant character(s): ``REJECTED``
means the body cannot start a value of this format, so the opener was not an opener (the core's
``reject`` rule). A decoder never rejects after it accepted; an invalid body that was accepted
is reported by the whole-body parser when the region closes.

Decoders only find ends; they do not validate. For a well-formed value the end is exactly where the
whole-body reader stops (``json.JSONDecoder.raw_decode`` after the dialect rewrite,
:func:`respc.runtime.pythonic.read_pythonic`).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from typing import Any

import regex

from .errors import ParserStateError
from .pythonic import _JSON_WORDS as _PY_ALL_WORDS
from .pythonic import quick_read as _quick_pythonic

__all__ = [
    "UNDECIDED",
    "ACCEPTED",
    "REJECTED",
    "Boundary",
    "JsonBoundary",
    "PythonicBoundary",
    "json_boundary",
    "pythonic_boundary",
    "JSON_ACCEPT_DEFAULT",
]

#: Only whitespace seen so far.
UNDECIDED = 0
#: The body starts a value of this format; the decoder now looks for its end.
ACCEPTED = 1
#: The body cannot start a value of this format (its first significant characters say so).
REJECTED = 2

#: Default ``accept`` of the json parser: a self-delimiting body must start an object or an array.
JSON_ACCEPT_DEFAULT = "{["

# Searches for one of a few literal characters use the standard library's engine: the same answer as
# `regex` for a set of literal characters, at a third of the cost per call (decoders make one call
# per string, bracket or escape of the body).
_JSON_SPACE = re.compile(r"[ \t\r\n]*")
_PY_SPACE = re.compile(r"[ \t\r\n\f\v]*")
_JSON_STRING_STOP = re.compile(r'["\\]')
# The rest of a top-level scalar (number or bare literal): up to the first character that cannot
# continue one. For a well-formed scalar this is where raw_decode stops.
_SCALAR_REST = regex.compile(r"[\w.+\-]*")
_NAME_START = regex.compile(r"[^\W\d]")
_NAME_REST = regex.compile(r"\w*")
_PY_CODE_STOP = re.compile(r"[\[\](){}'\"]")
_PY_STRING_STOP = {"'": re.compile(r"['\\]"), '"': re.compile(r'["\\]')}
_OPENERS = "([{"
_CLOSERS = ")]}"
# The standard library's C reader: on a well-formed JSON object or array it stops exactly where the
# character-level scan below ends (both end at the bracket that closes the first one).
_RAW_DECODE = json.JSONDecoder().raw_decode


@functools.lru_cache(maxsize=64)
def _code_stop(firsts: str) -> re.Pattern:
    """The search for the next character that matters in JSON code: a bracket, a quote, or the
    first character of a ``string_delims`` opener (compiled once per opener set, not per region)."""
    return re.compile("[" + re.escape('{}[]"' + firsts) + "]")


_PLAIN_CODE_STOP = _code_stop("")
_WAIT = object()  # "the held text might still become a delimiter"


class Boundary:
    """Finds where a self-delimiting value ends, fed the region body piece by piece.

    Attributes:
        status (int): :data:`UNDECIDED`, :data:`ACCEPTED` or :data:`REJECTED`.
    """

    status: int = UNDECIDED

    def feed(self, text: str) -> int:
        """Consume the next piece of the region's body.

        Args:
            text (str): the next chunk (any length, ``""`` included).

        Returns:
            int: ``-1`` while the value goes on (or while UNDECIDED/REJECTED); else the offset in
            ``text`` just past the value's last character. After a non-negative answer the value
            ended and the decoder must not be fed again.

        Raises:
            ParserStateError: fed again after the value ended.
        """
        if self._state == "done":
            raise ParserStateError(f"{type(self).__name__} fed again after its value ended")
        if self._state == "rejected":
            return -1
        data = self._carry + text
        base = len(self._carry)
        self._carry = ""
        end = self._scan(data)
        return end - base if end >= 0 else -1

    _state = "start"
    _carry = ""  # held lookahead: text that may still become a delimiter, scanned again next time

    def _scan(self, data: str) -> int:
        """Advance over ``data`` (held text + new chunk); the end offset in ``data``, or -1."""
        raise NotImplementedError

    def _reject(self) -> int:
        self.status = REJECTED
        self._state = "rejected"
        return -1


class JsonBoundary(Boundary):
    """End of the first JSON value of a body, in respc's json dialects (deviation D6).

    Accept rule: after JSON whitespace, the first significant character must be one of ``accept``
    (default ``"{["``: an object or an array); a ``string_delims`` opener counts as ``"``. Any
    other start is REJECTED. Inside the value only strings and brackets matter: ``"..."`` with
    backslash escapes, ``string_delims`` spans (no escapes; the first pair in declaration order
    whose opener starts there; the span ends at the next occurrence of its closer), and ``{[``
    / ``]}`` nesting. Bare keys (``unquoted_keys``) and Python literals hold no structure, so they
    need no tracking. A top-level number or literal (when ``accept`` allows one) ends at the
    first character that cannot continue it, so it ends only when more text arrives.

    Difference from the whole-body scanner: that scanner treats an opener whose closer never
    follows as plain text; a decoder cannot know that in advance and keeps waiting for the closer
    (the region then ends with the stream and the whole-body parser reports the error).
    """

    def __init__(self, accept: str = JSON_ACCEPT_DEFAULT,
                 string_delims: tuple[tuple[str, str], ...] = ()) -> None:
        self.status = UNDECIDED
        self._accept = accept
        if string_delims:
            self._delims = tuple((o, c) for o, c in string_delims if o and c)
            firsts = "".join(sorted({o[0] for o, _ in self._delims}))
            self._opener_firsts = firsts
            self._code_stop = _code_stop(firsts)
        else:  # the common case, one decoder per tool call: nothing to derive
            self._delims = ()
            self._opener_firsts = ""
            self._code_stop = _PLAIN_CODE_STOP
        self._state = "start"
        self._depth = 0
        self._closer = ""
        self._carry = ""

    def _opener_at(self, data: str, i: int) -> Any:
        rest = len(data) - i
        for pair in self._delims:
            if data.startswith(pair[0], i):
                return pair
            if rest < len(pair[0]) and pair[0].startswith(data[i:]):
                return _WAIT
        return None

    def _scan(self, data: str) -> int:
        state = self._state
        i, n = 0, len(data)
        depth = self._depth
        try:
            while i < n:
                if state == "code":
                    m = self._code_stop.search(data, i)
                    if m is None:
                        break
                    i = m.start()
                    char = data[i]
                    if char in self._opener_firsts:
                        pair = self._opener_at(data, i)
                        if pair is _WAIT:
                            self._carry = data[i:]
                            break
                        if pair is not None:
                            self._closer = pair[1]
                            state = "delimited"
                            i += len(pair[0])
                            continue
                    i += 1
                    if char == '"':
                        state = "string"
                    elif char in "{[":
                        depth += 1
                    elif char in "}]":
                        depth -= 1
                        if depth == 0:
                            state = "done"
                            return i
                elif state == "string":
                    m = _JSON_STRING_STOP.search(data, i)
                    if m is None:
                        break
                    i = m.end()
                    if m.group() == "\\":
                        if i == n:
                            state = "escape"
                            break
                        i += 1
                    elif depth:
                        state = "code"
                    else:
                        state = "done"
                        return i
                elif state == "escape":
                    i += 1
                    state = "string"
                elif state == "delimited":
                    j = data.find(self._closer, i)
                    if j < 0:
                        keep = max(i, n - len(self._closer) + 1)
                        self._carry = data[keep:]
                        break
                    i = j + len(self._closer)
                    if depth:
                        state = "code"
                    else:
                        state = "done"
                        return i
                elif state == "scalar":
                    i = _SCALAR_REST.match(data, i).end()
                    if i < n:
                        state = "done"
                        return i
                else:  # "start": nothing significant seen yet
                    i = _JSON_SPACE.match(data, i).end()
                    if i == n:
                        break
                    # A string_delims opener starts a string: only looked for when strings are accepted.
                    pair = self._opener_at(data, i) if '"' in self._accept else None
                    if pair is _WAIT:
                        self._carry = data[i:]
                        break
                    if pair is not None:
                        self.status = ACCEPTED
                        self._closer = pair[1]
                        state = "delimited"
                        i += len(pair[0])
                        continue
                    char = data[i]
                    if char not in self._accept:
                        return self._reject()
                    self.status = ACCEPTED
                    if char in "{[" and not self._delims and data.find("}" if char == "{" else "]", i + 1) > 0:
                        # Quick path: a well-formed standard JSON value here ends where the C reader
                        # stops. Anything else (a dialect, a value cut by the chunk) is scanned below.
                        # (Without its closing bracket yet, the value cannot be complete: the C
                        # reader's error, costly to build, is not asked for.)
                        try:
                            end = _RAW_DECODE(data, i)[1]
                        except (ValueError, RecursionError):
                            pass
                        else:
                            state = "done"
                            return end
                    i += 1
                    if char in "{[":
                        depth = 1
                        state = "code"
                    elif char == '"':
                        state = "string"
                    else:
                        state = "scalar"
            return -1
        finally:
            if self._state != "rejected":
                self._state = state
            self._depth = depth


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


def _delims(args: dict) -> tuple[tuple[str, str], ...]:
    raw = args.get("string_delims") or ()
    try:
        return tuple((o, c) for o, c in raw if isinstance(o, str) and isinstance(c, str))
    except (TypeError, ValueError):
        return ()  # load-time checks refuse these; a decoder never raises on its arguments


def json_boundary(args: dict) -> Callable[[], Boundary]:
    """Factory of :class:`JsonBoundary` decoders for a json field's ``content_args``.

    Args:
        args (dict): ``accept`` (str, default :data:`JSON_ACCEPT_DEFAULT`), ``string_delims``.

    Returns:
        Callable[[], Boundary]: a new decoder per call (one per open region). Without
        ``string_delims`` it has an attribute ``verdict``, ``verdict(text) -> status``: the
        status a new decoder has after ``feed(text)`` (see :func:`_json_verdict`).
    """
    accept = args.get("accept", JSON_ACCEPT_DEFAULT)
    if not isinstance(accept, str):
        accept = JSON_ACCEPT_DEFAULT
    delims = _delims(args)

    def factory() -> Boundary:
        return JsonBoundary(accept, delims)

    if not delims:
        factory.verdict = _json_verdict(accept)
    return factory


def _json_verdict(accept: str) -> Callable[[str], int]:
    """``verdict(text) -> status``: the :attr:`Boundary.status` a new :class:`JsonBoundary`
    without ``string_delims`` has once fed ``text`` -- UNDECIDED while ``text`` is JSON whitespace,
    then ACCEPTED or REJECTED by its first significant character (the accept rule), which later
    text never changes. For the streaming core's ``reject`` test (issue 14: it needs only the
    status, not a decoder)."""

    def verdict(text: str) -> int:
        i = _JSON_SPACE.match(text).end()
        if i == len(text):
            return UNDECIDED
        return ACCEPTED if text[i] in accept else REJECTED

    return verdict


def pythonic_boundary(args: dict) -> Callable[[], Boundary]:
    """Factory of :class:`PythonicBoundary` decoders for a pythonic field's ``content_args``.

    Args:
        args (dict): ``allow_bare`` (bool, default true).

    Returns:
        Callable[[], Boundary]: a new decoder per call (one per open region).
    """
    allow_bare = bool(args.get("allow_bare", True))
    return lambda: PythonicBoundary(allow_bare)
