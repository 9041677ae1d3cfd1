"""The ``pythonic`` format (template language v2): a list of Python calls, ``[f(a=1), g()]``
(``runtime/pythonic.py``; template-language.md "Content parsers"): its checks and plan, its boundary reader
(:class:`PythonicBoundary`: where the call list ends) and its argument reader (:class:`PythonicArgs`: the calls
converted to JSON argument text as they are written, for the OpenAI adapter)."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable
from typing import Any

import regex

from ..content import ContentParser, _failing
from ..pythonic import PYTHON_SPACE, parse_pythonic
from ..repair import NOTES
from ..pythonic import _JSON_WORDS as _PY_ALL_WORDS
from ..pythonic import quick_read as _quick_pythonic
from .base import (ACCEPTED, REJECTED, ArgumentStream, UNDECIDED, Boundary, Format, InsideReader, Plan, Problems, bool_args,
                   call_shape, is_tool_field)


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
#: a call's name as the reader reads it (``_NAME`` parts joined by dots): the grammar export's
#: offered tools are written only when their name is one
_CALL_NAME = regex.compile(r"[^\W\d]\w*(?:\.[^\W\d]\w*)*")
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
            # Quick path (README.md "Performance"): a whole call list of the pythonic reader's quick subset
            # (strings without backslashes, no nesting but the calls' own brackets) ends where
            # that reader stops: the scan below would accept at the first '(' and reach depth 0 at
            # the same closing bracket (tests/test_formats_pythonic.py compares the two). Not tried
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


# ------------------------------------------------------------------------------------------------
# The argument reader (plan "pythonic"): calls converted to JSON argument text as they are written.
#
# Pythonic tool calls converted to JSON argument text as they are written
# (docs/openai.md "Which formats stream arguments as they are written").
#
# Theory of operation
# -------------------
# A ``pythonic`` tool-call body (:mod:`respc.runtime.pythonic`: ``[get_weather(city='Paris',
# days=3), other(x="a\\"b")]``, or a bare call) is read one character at a time by
# :class:`PythonicArgs`, a state machine over the reader's grammar, and turned into the events of
# :class:`respc.openai.ChatCompletionStream`'s JSON scanner: ``call`` and ``name`` at each call's
# ``(`` (the name is complete there: no space may stand before the parenthesis), ``args``
# fragments, ``end`` at its ``)``.
#
# What goes out is always a beginning of ``json.dumps(arguments, ensure_ascii=False)`` of the
# arguments the message will hold (``{"key": value, ...}``, the same separators):
#
# * A keyword argument whose value begins with a string (any quote, triple quotes, an ``r``/``u``
#   prefix) streams as JSON string text: ``{"key": "`` at the opening quote, then the decoded
#   characters as they are read (Python escapes decoded, one by one even when split across
#   chunks, then escaped as JSON escapes them), the closing ``"`` once the next token shows the
#   value ended (a ``,`` or ``)``; whitespace and a following string, which Python concatenates,
#   keep it open).
# * Any other value (number, ``True``/``False``/``None``, list, tuple, dict, set), and a string
#   the tool schema types (template-language.md "Tool-argument typing"), is held until it is complete (the ``,`` or
#   ``)`` after it at bracket depth 0, strings skipped), then read by :func:`respc.runtime.pythonic.parse_pythonic`
#   itself (so it is exactly the message's value: tuples and sets become lists, ``None`` null),
#   typed by the tool schema and sent as ``"key": <json>``.
# * Text the reader would reject (a positional argument, a name that is not a literal, a
#   malformed escape, ``==``) stops the machine (``dead``) before anything about it is sent; the
#   region then finishes at its close (:func:`finish`): when what was sent is a beginning of the
#   message's arguments text, the rest goes out, otherwise the stream's own check reports it.
#
# The region's format plan (``runtime/formats/pythonic.py``, decided at compile time) says whether the
# template's transform passes the reader's ``name``/``arguments`` through unchanged; other transforms go
# out at close.
#

_SIMPLE = {
    "\\": "\\", "'": "'", '"': '"', "a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r",
    "t": "\t", "v": "\v", "\n": "",
}
_HEX = {"x": 2, "u": 4, "U": 8}
_HEXDIGITS = frozenset("0123456789abcdefABCDEF")
_OCTAL = frozenset("01234567")
_PREFIX = frozenset("rRuU")
#: the states of :class:`_Str` inside its body (a triple-quoted one with no quote pending reads the same)
_PLAIN_STATES = frozenset(("one", "three"))
#: per quote character, the match of a run of string characters that stand for themselves
_PLAIN_RUN = {q: re.compile(r"[^\\" + q + "]+").match for q in "'\""}
_OPEN = frozenset("([{")
_CLOSE = frozenset(")]}")


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _json_chars(text: str) -> str:
    """``text`` as the inside of a JSON string, escaped as ``json.dumps`` escapes it."""
    return _dumps(text)[1:-1]


_ARG_NAME_START = regex.compile(r"[^\W\d]").match  # runtime.pythonic's _NAME, one character at a time
_ARG_NAME_CHAR = regex.compile(r"\w").match


def _name_start(c: str) -> bool:
    return _ARG_NAME_START(c) is not None


def _name_char(c: str) -> bool:
    return _ARG_NAME_CHAR(c) is not None


class _Bad(Exception):
    """The text cannot be what the reader accepts (the machine stops)."""


class _Str:
    """One Python string literal after its prefix, from its first quote: :meth:`feed` takes one
    character and returns 0 (taken), 1 (taken, the string ended) or 2 (not taken: the string
    ended before it, the caller reads it again); decoded characters go to ``out``. Follows
    :meth:`respc.runtime.pythonic._Reader.string`: the first closing quote (run) ends it, a
    raw string keeps a backslash and the character after it, escapes as Python's."""

    __slots__ = ("q", "raw", "skim", "state", "back", "quotes", "esc", "out")

    def __init__(self, quote: str, raw: bool, out: list[str], skim: bool = False) -> None:
        self.q = quote
        self.raw = raw
        self.skim = skim       # only find the end: a backslash protects the next character
        self.state = "open1"   # open1/open2 (deciding triple), one, three, esc, hex, name, octal, cr
        self.back = "one"      # the body state an escape returns to
        self.quotes = 0        # quotes seen in a row inside a triple-quoted string
        self.esc = ""          # the escape being read (after the backslash)
        self.out = out

    def feed(self, c: str) -> int:
        state = self.state
        if state == "open1":
            if c == self.q:
                self.state = "open2"
                return 0
            self.state = "one"
            return self._body(c)
        if state == "open2":
            if c == self.q:
                self.state = "three"
                return 0
            return 2  # '' : the empty string
        if state in ("one", "three"):
            return self._body(c)
        return self._escape(c)

    def _body(self, c: str) -> int:
        q = self.q
        if self.state == "three":
            if c == q:
                self.quotes += 1
                if self.quotes == 3:
                    return 1
                return 0
            if self.quotes:
                self.out.append(q * self.quotes)
                self.quotes = 0
        elif c == q:
            return 1
        if c == "\\":
            self.esc = ""
            self.back, self.state = self.state, "esc"
            return 0
        self.out.append(c)
        return 0

    def _back(self) -> None:
        self.state = self.back

    def _escape(self, c: str) -> int:
        state = self.state
        if state == "esc":
            if self.skim:
                self._back()
                return 0
            if self.raw:
                self.out.append("\\" + c)  # r'\'' keeps both characters
                self._back()
                return 0
            if c in _SIMPLE:
                self.out.append(_SIMPLE[c])
                self._back()
            elif c == "\r":
                self.state = "cr"
            elif c in _HEX:
                self.esc = c
                self.state = "hex"
            elif c == "N":
                self.esc = "N"
                self.state = "name"
            elif c in _OCTAL:
                self.esc = c
                self.state = "octal"
            else:
                self.out.append("\\" + c)  # an unknown escape keeps its backslash
                self._back()
            return 0
        if state == "cr":  # \<CR> and \<CR><LF> continue the line
            self._back()
            return 0 if c == "\n" else self._body(c)
        if state == "hex":
            if c not in _HEXDIGITS:
                raise _Bad(f"truncated \\{self.esc[0]} escape")
            self.esc += c
            if len(self.esc) == 1 + _HEX[self.esc[0]]:
                code = int(self.esc[1:], 16)
                if code > 0x10FFFF:
                    raise _Bad("escape beyond U+10FFFF")
                self.out.append(chr(code))
                self._back()
            return 0
        if state == "name":
            if self.esc == "N":
                if c != "{":  # \N without {...}: an unknown escape, kept
                    self.out.append("\\N")
                    self._back()
                    return self._body(c)
                self.esc = "N{"
                return 0
            if c != "}":
                self.esc += c
                return 0
            try:
                self.out.append(unicodedata.lookup(self.esc[2:]))
            except KeyError:
                raise _Bad("unknown character name") from None
            self._back()
            return 0
        # octal: up to three digits
        if c in _OCTAL and len(self.esc) < 3:
            self.esc += c
            if len(self.esc) == 3:
                self.out.append(chr(int(self.esc, 8)))
                self._back()
            return 0
        self.out.append(chr(int(self.esc, 8)))
        self._back()
        return self._body(c)


class PythonicArgs:
    """Incremental reader of a pythonic tool-call body that sends each call's arguments as JSON
    text while they are written (module docstring).

    Args:
        out (Callable[[str, int, str], None]): ``out(kind, n, text)`` with kind ``"call"`` (call
            ``n`` of the region began: its ``(``), ``"name"`` (its name, at the ``(``),
            ``"args"`` (a fragment of its arguments JSON) or ``"end"`` (its arguments are
            complete: the ``)``).
        held (Callable[[int, str], Any]): ``held(n, key)`` true when the tool schema may change
            argument ``key`` of call ``n`` (its value is then held until complete).
        typed (Callable[[int, str, Any], str]): ``typed(n, key, value)`` -> the JSON text of
            ``value`` as the message holds it (the schema typing applied).
        allow_bare (bool), strip_suffix (str | None), json_literals (bool): the region's
            ``pythonic`` ``content_args``.

    ``feed(text)`` takes the body's next piece (any size, any split); ``dead`` is true once the
    text can no longer be what the reader accepts (nothing more is sent); ``complete`` once the
    call list (or bare call) ended.
    """

    mode = "pythonic"

    def __init__(self, out: Callable, held: Callable, typed: Callable, *, allow_bare: bool = True,
                 strip_suffix: str | None = None, json_literals: bool = False) -> None:
        self.out, self.held, self.typed = out, held, typed
        self.allow_bare = allow_bare
        self.strip_suffix = strip_suffix
        self.json_literals = json_literals
        self.words = {"True", "False", "None"} | ({"true", "false", "null"} if json_literals else set())
        self.state = "start"
        self.bare = False
        self.n = -1
        self.buf: list[str] = []     # the name, keyword or held value being read
        self.key = ""
        self.begun = False           # "{" of the current call's arguments was sent
        self.string: _Str | None = None
        self.decoded: list[str] = []  # decoded characters of the streamed string not sent yet
        self.skimmed: list[str] = []  # (what a string inside a held value decodes to: unused)
        self.depth = 0
        self.raw_next = False        # a string prefix r/R was read
        self.dead = False
        self.complete = False

    # --- driving ---------------------------------------------------------------------------
    def feed(self, text: str) -> None:
        """Read the next piece of the body (see the class docstring)."""
        if self.dead:
            return
        emit: list[str] = []
        i, n = 0, len(text)
        try:
            while i < n:
                string = self.string
                if string is not None and string.state in _PLAIN_STATES and not string.quotes:
                    # a run of a string's plain characters (no quote, no backslash) in one step: each
                    # stands for itself, as the character path reads it
                    m = _PLAIN_RUN[string.q](text, i)
                    if m is not None:
                        run = m.group()
                        string.out.append(run)
                        if self.state == "cap":
                            self.buf.append(run)
                        i = m.end()
                        continue
                self._char(text[i], emit)
                i += 1
        except _Bad:
            self.dead = True
        self._flush(emit)

    def _flush(self, emit: list[str]) -> None:
        if self.decoded:
            emit.append(_json_chars("".join(self.decoded)))
            self.decoded.clear()
        if emit:
            self.out("args", self.n, "".join(emit))
            emit.clear()

    def _sep(self) -> str:
        first = not self.begun
        self.begun = True
        return "{" if first else ", "

    def _char(self, c: str, emit: list[str]) -> None:
        state = self.state
        # --- inside a string (streamed, or skimmed within a held value) -----------------------
        string = self.string
        if string is not None:
            got = string.feed(c)
            if state == "cap":
                if got != 2:
                    self.buf.append(c)
                if got:
                    self.string = None
                    self.skimmed.clear()
                    if got == 2:
                        self._capture(c, emit)
                return
            if got:
                self.string = None
                self.state = "safter"
                if got == 2:
                    self._after_string(c, emit)
            return
        if state == "cap":
            self._capture(c, emit)
        elif state == "safter":
            self._after_string(c, emit)
        elif c in PYTHON_SPACE and state in ("start", "list0", "list1", "lsep", "args0", "kw_sp", "val0", "aval", "done"):
            return
        elif state == "start":
            if c == "[":
                self.state = "list0"
            elif _name_start(c) and self.allow_bare:
                self.bare = True
                self._begin_name(c)
            else:
                raise _Bad("expected '[' or a call")
        elif state in ("list0", "list1"):
            if c == "]":
                self.state = "done"
                self.complete = True
            elif _name_start(c):
                self._begin_name(c)
            else:
                raise _Bad("expected a call")
        elif state == "name":
            if _name_char(c):
                self.buf.append(c)
            elif c == ".":
                self.buf.append(c)
                self.state = "dot"
            elif c == "(":
                self._open_call(emit)
            else:
                raise _Bad("expected '(' after the call name")
        elif state == "dot":
            if not _name_start(c):
                raise _Bad("expected a name after '.'")
            self.buf.append(c)
            self.state = "name"
        elif state == "args0":
            if c == ")":
                self._close_call(emit)
            elif _name_start(c):
                self.buf = [c]
                self.state = "kw"
            else:
                raise _Bad("expected a keyword argument (positional arguments have no name)")
        elif state == "kw":
            if _name_char(c):
                self.buf.append(c)
                return
            self.key = "".join(self.buf)
            if self.key in self.words:
                raise _Bad("a literal is not a keyword")
            if c == "=":
                self.state = "eq"
            elif c in PYTHON_SPACE:
                self.state = "kw_sp"
            else:
                raise _Bad("expected '=' after the argument name")
        elif state == "kw_sp":
            if c != "=":
                raise _Bad("expected '=' after the argument name")
            self.state = "eq"
        elif state == "eq":
            if c == "=":
                raise _Bad("'==' is not a keyword argument")
            self.state = "val0"
            self._char(c, emit)
        elif state == "val0":
            self._value(c, emit)
        elif state in ("prefix", "sprefix"):
            if c not in "'\"":
                raise _Bad("a name is not a literal")
            self._open_string(c, emit, state == "sprefix")
        elif state == "aval":
            self._separator(c, emit)
        elif state == "lsep":
            if c == ",":
                self.state = "list1"
            elif c == "]":
                self.state = "done"
                self.complete = True
            else:
                raise _Bad("expected ',' or ']' after a call")
        elif state == "done":
            raise _Bad("text after the calls")

    # --- calls -------------------------------------------------------------------------------
    def _begin_name(self, c: str) -> None:
        self.buf = [c]
        self.state = "name"

    def _open_call(self, emit: list[str]) -> None:
        name = "".join(self.buf)
        suffix = self.strip_suffix
        if suffix and name.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
        self._flush(emit)
        self.n += 1
        self.begun = False
        self.out("call", self.n, "")
        self.out("name", self.n, name)
        self.state = "args0"

    def _close_call(self, emit: list[str]) -> None:
        emit.append("}" if self.begun else "{}")
        self._flush(emit)
        self.out("end", self.n, "")
        if self.bare:
            self.state = "done"
            self.complete = True
        else:
            self.state = "lsep"

    def _separator(self, c: str, emit: list[str]) -> None:
        if c == ",":
            self.state = "args0"
        elif c == ")":
            self._close_call(emit)
        else:
            raise _Bad("expected ',' or ')' after an argument")

    # --- values ------------------------------------------------------------------------------
    def _value(self, c: str, emit: list[str]) -> None:
        held = bool(self.held(self.n, self.key))
        if not held and c in "'\"":
            self.raw_next = False
            self._open_string(c, emit, False)
        elif not held and c in _PREFIX:
            self.raw_next = c in "rR"
            self.state = "prefix"
        else:
            self.buf = []
            self.depth = 0
            self.state = "cap"
            self._capture(c, emit)

    def _open_string(self, quote: str, emit: list[str], more: bool) -> None:
        """A string of a streamed value opens (``more``: one that continues the value's previous
        string, which Python concatenates; otherwise ``"key": "`` goes out first)."""
        if not more:
            emit.append(self._sep() + _dumps(self.key) + ': "')
        self.string = _Str(quote, self.raw_next, self.decoded)
        self.state = "sin"

    def _after_string(self, c: str, emit: list[str]) -> None:
        """After a streamed string: whitespace and another string continue it; ``,``/``)`` end it."""
        if c in PYTHON_SPACE:
            return
        if c in "'\"":
            self.raw_next = False
            self._open_string(c, emit, True)
        elif c in _PREFIX:
            self.raw_next = c in "rR"
            self.state = "sprefix"
        elif c in ",)":
            if self.decoded:
                emit.append(_json_chars("".join(self.decoded)))
                self.decoded.clear()
            emit.append('"')
            self.state = "aval"
            self._separator(c, emit)
        else:
            raise _Bad("expected ',' or ')' after a string")

    def _capture(self, c: str, emit: list[str]) -> None:
        """A held value: collect its text to its end at bracket depth 0, then send it typed."""
        if self.depth == 0 and c in ",)":
            raw = "".join(self.buf)
            try:
                value = parse_pythonic("_(_=" + raw + ")", allow_bare=True,
                                       json_literals=self.json_literals)[0]["arguments"]["_"]
            except Exception:  # noqa: BLE001 - not a value the reader accepts
                raise _Bad("not a literal") from None
            emit.append(self._sep() + _dumps(self.key) + ": " + self.typed(self.n, self.key, value))
            self.state = "aval"
            self._separator(c, emit)
            return
        self.buf.append(c)
        if c in "'\"":
            self.string = _Str(c, False, self.skimmed, skim=True)
        elif c in _OPEN:
            self.depth += 1
        elif c in _CLOSE:
            if self.depth == 0:
                raise _Bad("unbalanced bracket")
            self.depth -= 1


def reader_options(args: dict) -> dict:
    """The reader options (``allow_bare``, ``strip_suffix``, ``json_literals``) of a pythonic region's
    ``content_args``; which regions convert as written is the format's plan (``runtime/formats/pythonic.py``:
    the transform keeps the reader's ``name``/``arguments``)."""
    suffix = args.get("strip_suffix")
    return {"allow_bare": bool(args.get("allow_bare", True)), "strip_suffix": suffix if isinstance(suffix, str) else None,
            "json_literals": bool(args.get("json_literals", False))}


def make(args: dict) -> ContentParser:
    """The whole-body parser (``runtime/pythonic.py`` ``parse_pythonic``); raises ContentParseError."""
    strip_suffix = args.get("strip_suffix")
    allow_bare = args.get("allow_bare", True)
    if strip_suffix is not None and not isinstance(strip_suffix, str):
        return _failing("pythonic", f"strip_suffix must be a string, got {strip_suffix!r}")

    json_literals = bool(args.get("json_literals", False))

    def parse_pythonic_body(text: str) -> list[dict]:
        return parse_pythonic(text, allow_bare=bool(allow_bare), strip_suffix=strip_suffix,
                              json_literals=json_literals)

    return parse_pythonic_body


#: a keyword argument's name and ``=`` right before a string (the text before the quote, at most 64 characters)
_KEYWORD_BEFORE = regex.compile(r"([^\W\d]\w*)\s*=\s*\Z")
#: what follows a keyword argument's string value: the next keyword argument, or the call's end and then the
#: next call, the list's end or the body's end
_VALUE_END = regex.compile(r"\s*(?:,\s*[^\W\d]\w*\s*=|\)\s*(?:,\s*[^\W\d][\w.]*\s*\(|\]\s*\Z|\Z))")
_QUOTES = regex.compile(r"['\"]")


def _requote(text: str) -> tuple[str, list[str]]:
    """Escape quotes of a keyword argument's string's own kind written unescaped inside it (see :func:`repair`).

    One pass: outside strings, each quote opens a string; a keyword argument's single-quoted string
    (``name='...'``, not triple-quoted, no prefix) ends at the first unescaped quote of its kind that
    :data:`_VALUE_END` follows, and the unescaped quotes before it are escaped; any other string ends at
    its first unescaped quote. Returns the text and one note per string rewritten.
    """
    out: list[str] = []
    notes: list[str] = []
    i, n = 0, len(text)
    while True:
        m = _QUOTES.search(text, i)
        if m is None:
            out.append(text[i:])
            return "".join(out), notes
        q, start = m.group(), m.start()
        if text.startswith(q * 3, start):
            end = text.find(q * 3, start + 3)
            end = n if end < 0 else end + 3
            out.append(text[i:end])
            i = end
            continue
        keyword = _KEYWORD_BEFORE.search(text, max(i, start - 64), start)
        inner: list[int] = []  # unescaped quotes of the kind inside the string
        close = -1
        j = start + 1
        while j < n:
            c = text[j]
            if c == "\\":
                j += 2
                continue
            if c == q:
                if keyword is None or _VALUE_END.match(text, j + 1):
                    close = j
                    break
                inner.append(j)
            j += 1
        if close < 0:  # no end the value could have: the string ends at its first quote, unchanged
            close = inner[0] if inner else n
            inner = []
        out.append(text[i:start + 1])
        last = start + 1
        for at in inner:
            out.append(text[last:at] + "\\")
            last = at
        out.append(text[last:close + 1])
        if inner:
            notes.append(NOTES["python-quotes"].format(len(inner), q, keyword.group(1)))
        i = close + 1


class InPythonString(InsideReader):
    """Whether a pythonic body stands inside a string of its call list (docs/security.md, "Closers
    inside an open value"; red team s12), strings read as the recover repair reads them
    (:func:`_requote`: either quote, triple quotes, backslash escapes, and a keyword argument's
    string ``content='it's done'`` runs to the quote of its kind that the next argument or the
    call's end follows, so a closer written after ``it'`` is inside it; the strict reading would
    see ``'it'`` end there, and a later ``'`` open a string that holds the next call). Each piece is
    read once (linear); once :class:`PythonicBoundary` sees the list end outside every string,
    never inside again."""

    __slots__ = ("_scan", "_quotes", "_over")

    def __init__(self, allow_bare: bool) -> None:
        self._scan: "PythonicBoundary | None" = PythonicBoundary(allow_bare)
        self._quotes = _RequoteReader()
        self._over = False

    def feed(self, text: str) -> bool:
        if self._over:
            return False
        scan = self._scan
        if scan is not None:
            end = scan.feed(text)
            if end >= 0:
                # the list ended there as the boundary reads it: over unless the repair's reading
                # still stands in a string at that point
                if not self._quotes.feed(text[:end]):
                    self._over = True
                    return False
                self._scan = None
                return self._quotes.feed(text[end:])
            if scan.status == REJECTED:
                self._over = True
                return False
        return self._quotes.feed(text)


class _RequoteReader:
    """Where :func:`_requote` reads strings, read incrementally for "is the body, if it ended here,
    inside a string?": outside strings each quote opens one; a triple-quoted string runs to its
    closing triple; a keyword argument's single-quoted string (``name='``) to the first unescaped
    quote of its kind that :data:`_VALUE_END` follows; any other string to its first unescaped quote.
    A decision that depends on where the body ends (a quote that ``_VALUE_END`` follows only up to
    the end, or only partly) is taken for this end and made again with the next piece."""

    __slots__ = ("_tail", "_mode", "_quote", "_keyword", "_last", "_resume")

    def __init__(self) -> None:
        self._tail = ""  # text from the last undecided point on, with up to 64 characters before it
        self._mode = "out"  # out, one (a one-quote string), three (a triple-quoted one)
        self._quote = ""
        self._keyword = False
        self._last = 0  # in _tail: where text after the last string starts (_KEYWORD_BEFORE's bound)
        self._resume = 0  # in _tail: where reading goes on

    def feed(self, text: str) -> bool:
        data = self._tail + text
        n = len(data)
        i = self._resume
        answer = None
        while True:
            if self._mode == "out":
                m = _QUOTES.search(data, i)
                if m is None:
                    i = n
                    break
                q, start = m.group(), m.start()
                if n - start < 3 and data[start:] == q * (n - start):
                    # ' or '' at the end: a string still open, or an empty one (or a triple quote)
                    answer = n - start == 1
                    i = start
                    break
                if data.startswith(q * 3, start):
                    self._mode, self._quote, i = "three", q * 3, start + 3
                    continue
                self._keyword = _KEYWORD_BEFORE.search(data, max(self._last, start - 64), start) is not None
                self._mode, self._quote, i = "one", q, start + 1
                continue
            if self._mode == "three":
                j = data.find(self._quote, i)
                if j < 0:
                    i = max(i, n - 2)  # a closing triple may be being written
                    answer = True
                    break
                self._mode, i = "out", j + 3
                self._last = i
                continue
            # a one-quote string
            m = (_SQ_STOP if self._quote == "'" else _DQ_STOP).search(data, i)
            if m is None:
                i = n
                answer = True
                break
            j = m.start()
            if data[j] == "\\":
                if j + 1 >= n:
                    i, answer = j, True
                    break
                i = j + 2
                continue
            if not self._keyword:
                self._mode, i = "out", j + 1
                self._last = i
                continue
            end = _VALUE_END.match(data, j + 1, partial=True)
            if end is not None and (end.partial or end.end() >= n):
                # decided only by where the body ends: a full match here ends the string
                answer = end.partial
                i = j
                break
            if end is not None:
                self._mode, i = "out", j + 1
                self._last = i
                continue
            i = j + 1  # a quote of its kind inside the string
        # keep the undecided text (and 64 characters before it for _KEYWORD_BEFORE)
        keep = max(0, i - 64)
        self._tail = data[keep:]
        self._last = max(0, self._last - keep)
        self._resume = i - keep
        if answer is None:
            answer = self._mode != "out"
        return answer


_SQ_STOP = regex.compile(r"['\\\\]")
_DQ_STOP = regex.compile(r'["\\\\]')


def inside(args: dict) -> Callable[[], InPythonString]:
    """The ``inside`` reader factory of pythonic (:class:`InPythonString`) for ``content_args`` ``args``."""
    allow_bare = bool(args.get("allow_bare", True))
    return lambda: InPythonString(allow_bare)


def repair(args: dict) -> Callable[[str], "tuple[Any, list[str]] | None"]:
    """``errors="recover"``: unescaped quotes inside a keyword argument's string (notes in
    ``runtime/repair.py``, docs/events.md "Repairs and policies"). LFM2 writes
    ``bash(command='python3 -c "print(f(x='a'))"')``: the string's own quote kind unescaped inside it.
    A keyword argument's string runs to the quote of its kind that the next keyword argument (``, name=``),
    or the call's end and then the next call, the list's end or the body's end, follows; the quotes
    before it are escaped. Tried only when the strict parse fails; ``fix`` returns None when nothing was
    rewritten (the strict error stands)."""
    parse = make(args)

    def fix(text: str) -> "tuple[Any, list[str]] | None":
        rewritten, notes = _requote(text)
        if not notes:
            return None
        return parse(rewritten), notes

    return fix


def grammar(args: dict) -> str:
    """A Lark rule body for a pythonic call list, approximate (docs/formats.md: ``Format.grammar``)."""
    call = r"[^\W\d]\w*(?:\.[^\W\d]\w*)*\([\s\S]*\)"
    bare = f"|{call}" if args.get("allow_bare", True) is not False else ""
    return rf"/\s*(?:\[\s*(?:{call}\s*)?\]{bare})\s*/s"


class PythonicStream(ArgumentStream):
    """Plan ``"pythonic"``: Python calls converted to JSON as they are written (:class:`PythonicArgs`, with
    ``options`` from :func:`reader_options`); :class:`~respc.runtime.formats.base.ArgumentStream` describes the
    protocol."""

    def __init__(self, options: dict) -> None:
        self.options = options

    def open(self, host: Any, region: Any, base: int) -> "PythonicArgs":
        """Wired to the stream's call deltas and to its tool typing (``parser._tools``, applied when the
        region is ``typed``)."""
        tools = getattr(host.parser, "_tools", None) if getattr(region, "typed", True) else None

        def out(kind: str, n: int, payload: str) -> None:
            host.scanned(region, base + n, kind, payload)

        def held(n: int, key: str) -> bool:
            return bool(tools) and bool(host.held(host.call(base + n).name, key))

        def typed(n: int, key: str, value: Any) -> str:
            if tools:
                value = host.coerce(host.call(base + n).name, key, value, region)
            return _dumps(value)

        return PythonicArgs(out, held, typed, **self.options)

    def close(self, reader: "PythonicArgs", host: Any, base: int, calls: list) -> None:
        """A call the reader stopped inside (``dead``) whose sent arguments are a beginning of the
        message's ``json.dumps`` text gets the rest, so it still adds up to the message; any other
        difference is left to the adapter's own check (a diagnostic)."""
        if not reader.dead:
            return
        for k, value in enumerate(calls):
            if base + k >= host.ncalls():
                break
            call = host.call(base + k)
            function = value.get("function", value) if isinstance(value, dict) else {}
            arguments = function.get("arguments") if isinstance(function, dict) else None
            if call.done or not call.nsent or not isinstance(arguments, dict):
                continue
            whole, sent = _dumps(arguments), call.args
            if whole.startswith(sent):
                call.fwd.append(whole[len(sent):])
                call.done = True
                host.send_args(call)


def stream(plan: Plan, args: dict) -> ArgumentStream | None:
    """``Format.stream`` of pythonic: calls converted as written (``"pythonic"``)."""
    return PythonicStream(reader_options(args)) if plan.arguments == "pythonic" else None


# --- grammar export (docs/grammar.md, "Formats write their bodies") -------------------------------------------

def body_grammar(b: Any, f: Any, tool: bool, shape: Any, where: str) -> Any:
    """:attr:`Format.body_grammar` of ``pythonic``: a list of calls (or one bare call, unless ``allow_bare``
    is false), each naming an offered tool with keyword arguments valid against its schema."""
    ir = b.ir
    if tool:
        jb = ir.JsonBuilder(b.g, ir.JsonDialect(pythonic=True), b.body_watch(f))
        return ir.seq(jb.ws(), _pythonic_calls(b, f, where), jb.ws())
    return ir.seq(ir.WS, _pythonic_calls(b, f, where), ir.WS)


def _pythonic_calls(b: Any, f: Any, where: str) -> Any:
    """The call list: Python literals as values (JSON words too with ``json_literals``), keyword
    arguments in any order, every required one present; a tool without declared properties takes any
    keyword arguments (docs/grammar.md "What the grammar says")."""
    ir = b.ir
    seq, alt, Lit, Rep, Chars, opt = ir.seq, ir.alt, ir.Lit, ir.Rep, ir.Chars, ir.opt
    jb = ir.JsonBuilder(b.g, ir.JsonDialect(python_literals=bool(f.content_args.get("json_literals")), pythonic=True),
                        b.body_watch(f))
    ws = jb.ws()
    per_tool = []
    # a tool whose name the reader does not read as a call's name (``get-weather``: the call is
    # text to it, so a call required would be missing) is never written
    tools = [(n, s) for n, s in (b.tools if b.has_tools else [(None, None)]) if n is None or _CALL_NAME.fullmatch(n)]
    if not tools:
        return ir.Lit("\x00never")
    for name, schema in tools:
        nm = Lit(name) if name is not None else b.name_node(None)
        if schema is None or not (schema.get("properties")):
            # a tool without declared properties takes any keyword arguments (docs/grammar.md "What the grammar says")
            ident = seq(Chars(((0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))),
                        Rep(Chars(((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)))))
            kw = seq(ident, ws, Lit("="), ws, jb.value())
            body = opt(seq(kw, Rep(seq(ws, Lit(","), ws, kw)), opt(seq(ws, Lit(",")))))
        else:
            required = set(schema.get("required") or ())
            members = [(seq(Lit(k), ws, Lit("="), ws, jb.schema(s, f"{where} tool {name!r} parameters.{k}")),
                        k in required) for k, s in schema["properties"].items()]
            body = jb._members(members, 0, False)
        per_tool.append(seq(nm, Lit("("), ws, body, ws, Lit(")")))
    call = b.g.share("pycall", alt(*per_tool))
    more = Rep(seq(ws, Lit(","), ws, call)) if b.parallel else ir.EMPTY
    forms = [("[", seq(Lit("["), ws, call, more, ws, Lit("]")))]
    if f.content_args.get("allow_bare", True) is not False:
        forms.append(("", call))
    bare = bool(getattr(b, "bare_open", False))
    if f.open is not None and f.open.pattern is not None and (bare or not ir.delimiter_leads(f.open, ir.Grammar(), where)):
        # an open that is only a lookahead (olmo3's ``(?=[A-Za-z_])`` inside its call section), or
        # the alternative of one that matches no text (llama4's ``(?=\[\s*[A-Za-z_][\w.]*\()``,
        # ``bare_open``): the parser opens the field only where the lookahead holds, so only the
        # forms it admits, for every offered tool, are calls; a ``[`` it refuses is text inside
        # the section (docs/events.md, "Text inside a call section"), so the bracketed list is left
        # out there, and a bare call after no open is text (a call required but none read)
        rx = regex.compile(ir.without_optional_repairs(f.open.pattern))
        names = [n for n, _ in tools if n]
        kept = [(lead, node) for lead, node in forms
                if all((m := rx.match(lead + n + "(")) is not None and m.end() == 0 for n in names or ["f"])]
        if bare:
            if not kept:
                return Lit("\x00never")
            forms = kept
        else:
            forms = kept or forms
    # a body an earlier field with the same open reads (its reader does not refuse how it starts) is
    # never this field's: llama3_json's JSON call takes ``[``, so its builtin calls are bare there
    names = [n for n, _ in b.tools if n] if b.has_tools else []
    forms = [(lead, node) for lead, node in forms
             if not any(b.claimed(f, lead + n) for n in (names or ["f"]))]
    if not forms:
        return Lit("\x00never")
    return alt(*(node for _lead, node in forms))


FORMAT = Format("pythonic", True, check, plan, make, reader=pythonic_boundary, ends_itself=True, repair=repair,
                can_reject=True, grammar=grammar, since=2, stream=stream, body_grammar=body_grammar, inside=inside)
