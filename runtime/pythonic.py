"""The ``pythonic`` content parser: Python call syntax read safely, without ``eval`` (template v2).

Theory of operation
-------------------
Models that were trained on Python write tool calls as Python expressions:
``[get_weather(city='Paris'), get_time()]`` (Llama 4, LFM2) or a bare ``get_weather(city="NYC")``
(OLMo 3, Llama 3.1 ``python.call(code=...)``). :func:`read_pythonic` is a small recursive-descent
reader for exactly that subset of Python, so nothing in the text is ever evaluated and every error
names the offset where reading stopped:

    calls   := '[' ws ( call ( ws ',' ws call )* ( ws ',' )? )? ws ']'  |  call        (bare form)
    call    := NAME ( '.' NAME )* '(' ws ( kwarg ( ws ',' ws kwarg )* ( ws ',' )? )? ws ')'
    kwarg   := NAME ws '=' ws value
    value   := string+ | number | '-' number | '+' number | True | False | None
             | '[' items ']' | '(' items ')' | '{' dict-or-set '}'

Strings take either quote, triple quotes, the prefixes ``r``/``u`` (any case) and Python's
escapes; adjacent strings concatenate as in Python. Numbers are Python literals (``1_000``,
``0x1f``, ``.5``, ``1e3``). Unlike Python, a raw line break inside a one-quote string is kept
(models do write them). Tuples and sets become lists (the value must be JSON-shaped), a
parenthesised single value is that value. No whitespace may stand between a call's name and its
``(`` or around the dots of a dotted name: this is what lets the boundary decoder
(:class:`respc.runtime.formats.pythonic.PythonicBoundary`) reject ``Sure, I can`` at the comma.

The value of a body is ``[{"name": str, "arguments": dict}, ...]`` in call order; a bare call gives
a one-element list. Positional arguments are an error (they have no name to go under).

:func:`parse_pythonic` first tries ``_quick_calls``, a reader of the common body only (a flat call
list with scalar keyword arguments, a few C regex matches per argument); on anything else it
gives up and the recursive-descent reader decides, value or error (see "the quick reader" below).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

import regex

from .errors import ContentParseError

__all__ = ["read_pythonic", "parse_pythonic", "PYTHON_SPACE"]

#: Whitespace between tokens (Python's, without comments or line continuations).
PYTHON_SPACE = " \t\r\n\f\v"

_SPACE = regex.compile(r"[ \t\r\n\f\v]*")
_NAME = regex.compile(r"[^\W\d]\w*")
_NUMBER = regex.compile(
    r"0[xX](?:_?[0-9a-fA-F])+|0[oO](?:_?[0-7])+|0[bB](?:_?[01])+"
    r"|(?:\d(?:_?\d)*(?:\.(?:\d(?:_?\d)*)?)?|\.\d(?:_?\d)*)(?:[eE][-+]?\d(?:_?\d)*)?[jJ]?"
)
_STRING_PREFIX = regex.compile(r"(?i:r|u)?(?=['\"])")
_SIMPLE_ESCAPES = {
    "\\": "\\", "'": "'", '"': '"', "a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r",
    "t": "\t", "v": "\v", "\n": "",
}
_HEX_ESCAPE_LENGTH = {"x": 2, "u": 4, "U": 8}
_OCTAL = regex.compile(r"[0-7]{1,3}")


#: the literal words of Python; ``json_literals`` adds JSON's, which models write inside calls too
_PY_WORDS = {"True": True, "False": False, "None": None}
_JSON_WORDS = {**_PY_WORDS, "true": True, "false": False, "null": None}


class _Reader:
    """One pass over ``text``; every method starts at ``self.pos`` and leaves it after what it read."""

    def __init__(self, text: str, json_literals: bool = False) -> None:
        self.text = text
        self.pos = 0
        self.words = _JSON_WORDS if json_literals else _PY_WORDS

    # --- helpers -----------------------------------------------------------------------------

    def fail(self, what: str, at: int | None = None) -> ContentParseError:
        at = self.pos if at is None else at
        return ContentParseError(
            f"pythonic parser could not parse region at offset {at}: {what}.\nContent: {self.text!r}"
        )

    def space(self) -> None:
        self.pos = _SPACE.match(self.text, self.pos).end()

    def peek(self) -> str:
        return self.text[self.pos:self.pos + 1]

    def expect(self, char: str, what: str) -> None:
        if self.peek() != char:
            found = repr(self.peek()) if self.peek() else "the end of the text"
            raise self.fail(f"expected {what}, found {found}")
        self.pos += 1

    def separator(self, close: str, where: str) -> bool:
        """After an item: consume ``,`` (and space) or see ``close``; True (close consumed) at the end."""
        if self.peek() == ",":
            self.pos += 1
            self.space()
        elif self.peek() != close:
            raise self.fail(f"expected ',' or {close!r} {where}")
        if self.peek() == close:
            self.pos += 1
            return True
        return False

    def name(self) -> str:
        m = _NAME.match(self.text, self.pos)
        if m is None:
            raise self.fail("expected a name")
        self.pos = m.end()
        return m.group()

    # --- calls -------------------------------------------------------------------------------

    def calls(self, allow_bare: bool, strip_suffix: str | None) -> list[dict]:
        self.space()
        if self.peek() == "[":
            self.pos += 1
            out: list[dict] = []
            self.space()
            if self.peek() == "]":
                self.pos += 1
                return out
            while True:
                out.append(self.call(strip_suffix))
                self.space()
                if self.separator("]", "after a call"):
                    return out
        if not allow_bare:
            raise self.fail("expected '[' (a bare call needs allow_bare)")
        if _NAME.match(self.text, self.pos) is None:
            raise self.fail("expected '[' or a call")
        return [self.call(strip_suffix)]

    def call(self, strip_suffix: str | None) -> dict:
        start = self.pos
        parts = [self.name()]
        while self.peek() == ".":
            self.pos += 1
            parts.append(self.name())
        name = ".".join(parts)
        if strip_suffix and name.endswith(strip_suffix) and len(name) > len(strip_suffix):
            name = name[: -len(strip_suffix)]
        if self.peek() != "(":
            raise self.fail(f"expected '(' after the call name {name!r}")
        self.pos += 1
        arguments: dict[str, Any] = {}
        self.space()
        if self.peek() == ")":
            self.pos += 1
            return {"name": name, "arguments": arguments}
        while True:
            at = self.pos
            m = _NAME.match(self.text, self.pos)
            if m is None or m.group() in self.words:
                raise self.fail("expected a keyword argument (positional arguments have no name)")
            self.pos = m.end()
            self.space()
            if self.peek() != "=" or self.text.startswith("==", self.pos):
                raise self.fail(f"expected '=' after argument name {m.group()!r} "
                                "(positional arguments have no name)", at)
            self.pos += 1
            self.space()
            arguments[m.group()] = self.value()
            self.space()
            if self.separator(")", f"in the arguments of {name!r} (call at offset {start})"):
                return {"name": name, "arguments": arguments}

    # --- values ------------------------------------------------------------------------------

    def value(self) -> Any:
        char = self.peek()
        if char in ("-", "+"):
            self.pos += 1
            self.space()
            number = self.number()
            return -number if char == "-" else number
        if char == "[":
            self.pos += 1
            return self.items("]")
        if char == "(":
            self.pos += 1
            return self.items(")", tuple_rules=True)
        if char == "{":
            self.pos += 1
            return self.braces()
        if char.isdigit() or (char == "." and self.text[self.pos + 1:self.pos + 2].isdigit()):
            return self.number()
        if _STRING_PREFIX.match(self.text, self.pos) is not None:
            return self.strings()
        m = _NAME.match(self.text, self.pos)
        if m is not None:
            word = m.group()
            if word in self.words:
                self.pos = m.end()
                return self.words[word]
            raise self.fail(f"{word!r} is not a literal (names and expressions are not evaluated)")
        raise self.fail("expected a value" if char else "expected a value, found the end of the text")

    def number(self) -> int | float:
        m = _NUMBER.match(self.text, self.pos)
        if m is None:
            raise self.fail("expected a number")
        token = m.group()
        if token[-1] in "jJ":
            raise self.fail("complex numbers are not JSON values")
        start, self.pos = self.pos, m.end()
        if _NAME.match(self.text, self.pos) is not None:
            raise self.fail(f"unexpected letters after the number {token!r}", start)
        lowered = token.lower()
        if lowered.startswith(("0x", "0o", "0b")):
            return int(token, 0)
        if any(c in lowered for c in ".e"):
            return float(token)
        if len(token) > 1 and token[0] == "0" and token.replace("_", "").strip("0"):
            raise self.fail(f"leading zeros in the integer {token!r}", start)
        return int(token)

    def items(self, close: str, tuple_rules: bool = False) -> Any:
        out: list[Any] = []
        saw_comma = False
        self.space()
        if self.peek() == close:
            self.pos += 1
            return out
        while True:
            out.append(self.value())
            self.space()
            saw_comma = saw_comma or self.peek() == ","
            if self.separator(close, "between items"):
                break
        if tuple_rules and len(out) == 1 and not saw_comma:
            return out[0]  # (x) is x, (x,) is a tuple
        return out

    def braces(self) -> Any:
        self.space()
        if self.peek() == "}":
            self.pos += 1
            return {}
        first = self.value()
        self.space()
        if self.peek() != ":":
            out_set = [first]  # a set literal: a list, as JSON has no sets
            while not self.separator("}", "in a set"):
                out_set.append(self.value())
                self.space()
            return out_set
        out: dict[Any, Any] = {}
        key = first
        while True:
            at = self.pos
            self.expect(":", "':' after a dict key")
            self.space()
            if isinstance(key, (list, dict)):
                raise self.fail("a dict key must be a string, number, bool or None", at)
            out[key] = self.value()
            self.space()
            if self.separator("}", "in a dict"):
                return out
            key = self.value()
            self.space()

    def strings(self) -> str:
        parts = [self.string()]
        while True:
            save = self.pos
            self.space()
            if _STRING_PREFIX.match(self.text, self.pos) is None:
                self.pos = save
                return "".join(parts)
            parts.append(self.string())

    def string(self) -> str:
        start = self.pos
        prefix = _STRING_PREFIX.match(self.text, self.pos)
        raw = prefix.end() > self.pos and self.text[self.pos] in "rR"
        self.pos = prefix.end()
        quote = self.text[self.pos]
        if self.text.startswith(quote * 3, self.pos):
            quote *= 3
        self.pos += len(quote)
        text, out = self.text, []
        run = self.pos
        while True:
            if self.pos >= len(text):
                raise self.fail("unterminated string", start)
            char = text[self.pos]
            if text.startswith(quote, self.pos):
                out.append(text[run:self.pos])
                self.pos += len(quote)
                return "".join(out)
            if char != "\\":
                self.pos += 1
                continue
            out.append(text[run:self.pos])
            if self.pos + 1 >= len(text):
                raise self.fail("unterminated string", start)
            if raw:
                out.append(text[self.pos:self.pos + 2])  # r'\'' keeps both characters
                self.pos += 2
            else:
                out.append(self.escape())
            run = self.pos

    def escape(self) -> str:
        text, at = self.text, self.pos
        char = text[at + 1]
        if char in _SIMPLE_ESCAPES:
            self.pos = at + 2
            return _SIMPLE_ESCAPES[char]
        if char == "\r":
            self.pos = at + (3 if text.startswith("\r\n", at + 1) else 2)
            return ""
        if char in _HEX_ESCAPE_LENGTH:
            length = _HEX_ESCAPE_LENGTH[char]
            digits = text[at + 2:at + 2 + length]
            if len(digits) != length or any(c not in "0123456789abcdefABCDEF" for c in digits):
                raise self.fail(f"truncated \\{char} escape", at)
            code = int(digits, 16)
            if code > 0x10FFFF:
                raise self.fail(f"\\{char} escape beyond U+10FFFF", at)
            self.pos = at + 2 + length
            return chr(code)
        if char == "N" and text.startswith("{", at + 2):
            end = text.find("}", at + 3)
            if end < 0:
                raise self.fail("unterminated \\N{...} escape", at)
            try:
                value = unicodedata.lookup(text[at + 3:end])
            except KeyError:
                raise self.fail(f"unknown character name in \\N{{{text[at + 3:end]}}}", at) from None
            self.pos = end + 1
            return value
        m = _OCTAL.match(text, at + 1)
        if m is not None:
            self.pos = m.end()
            return chr(int(m.group(), 8))
        self.pos = at + 2
        return "\\" + char  # an unknown escape keeps its backslash, as in Python


# --- the quick reader (README.md "Performance") ---------------------------------------------------
# Most tool calls are a flat call list with scalar keyword arguments: [get_weather(city='Paris',
# days=7)]. _quick_calls reads exactly that subset with a few C regex matches per argument instead
# of the reader's dozen Python steps, and gives up (None) on anything else, so the reader runs and
# its value or error is the answer. What the subset accepts, the reader reads to the same value:
# ASCII names (the reader's [^\W\d]\w* stops at the same non-word character), strings in one
# quote without prefix, backslash or an adjacent string (the reader's loop stops at the first
# quote; after the value only space and ',' or ')' may follow), integers without leading zeros or
# '_', decimals d.d (int()/float() of the same token; a sign is what the reader's negation gives),
# and the literal words. tests/test_formats_pythonic.py compares the two on random bodies,
# tests/test_formats.py on the catalogue's samples.

_Q_SPACE = re.compile(r"[ \t\r\n\f\v]*")
_Q_CALL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\([ \t\r\n\f\v]*")
_Q_ARG = re.compile(
    r"([A-Za-z_][A-Za-z0-9_]*)[ \t\r\n\f\v]*=[ \t\r\n\f\v]*"
    r"(?:'([^'\\]*)'|\"([^\"\\]*)\"|(-?[0-9]+\.[0-9]+)|(-?(?:0|[1-9][0-9]*))|([A-Za-z]+))"
    r"[ \t\r\n\f\v]*"
)


def _quick_call(text: str, pos: int, strip_suffix: str | None, words: dict) -> tuple[dict, int] | None:
    """One call at ``pos`` (the subset above) and the offset after its ``)``, or None."""
    m = _Q_CALL.match(text, pos)
    if m is None:
        return None
    name = m.group(1)
    if strip_suffix and name.endswith(strip_suffix) and len(name) > len(strip_suffix):
        name = name[: -len(strip_suffix)]
    pos = m.end()
    arguments: dict[str, Any] = {}
    if text.startswith(")", pos):
        return {"name": name, "arguments": arguments}, pos + 1
    match_arg = _Q_ARG.match
    while True:
        a = match_arg(text, pos)
        if a is None:
            return None
        key, single, double, decimal, integer, word = a.groups()
        if key in words:
            return None  # the reader's error: a positional literal
        if single is not None:
            value: Any = single
        elif double is not None:
            value = double
        elif integer is not None:
            if len(integer) > 40:
                return None  # int() may refuse it (the digit limit): the reader raises then
            value = int(integer)
        elif decimal is not None:
            value = float(decimal)
        elif word in words:
            value = words[word]
        else:
            return None  # a name: the reader's error
        arguments[key] = value
        pos = a.end()
        char = text[pos:pos + 1]
        if char == ",":
            pos = _Q_SPACE.match(text, pos + 1).end()
            if text.startswith(")", pos):
                return {"name": name, "arguments": arguments}, pos + 1
        elif char == ")":
            return {"name": name, "arguments": arguments}, pos + 1
        else:
            return None


def _quick_calls(text: str, allow_bare: bool, strip_suffix: str | None, words: dict) -> list[dict] | None:
    """The whole body ``text`` read as :func:`parse_pythonic` reads it, when it is a flat call list
    of the subset above (or a bare call with ``allow_bare``); None otherwise (the reader decides,
    errors included). Never raises."""
    got = quick_read(text, allow_bare, strip_suffix, words)
    if got is None or _Q_SPACE.match(text, got[1]).end() != len(text):
        return None
    return got[0]


def quick_read(text: str, allow_bare: bool, strip_suffix: str | None, words: dict) -> tuple[list[dict], int] | None:
    """:func:`read_pythonic` from offset 0 for the subset above: ``(calls, offset just past the
    closing ']' or the bare call's ')')``, or None when the text does not start with a call list
    of the subset (the text after it is not read). Never raises. The boundary decoder
    (``formats.pythonic.PythonicBoundary``) takes its end from here when it gets the whole body at once."""
    space = _Q_SPACE.match
    pos = space(text).end()
    if text.startswith("[", pos):
        pos = space(text, pos + 1).end()
        out: list[dict] = []
        if not text.startswith("]", pos):
            while True:
                got = _quick_call(text, pos, strip_suffix, words)
                if got is None:
                    return None
                out.append(got[0])
                pos = space(text, got[1]).end()
                char = text[pos:pos + 1]
                if char == ",":
                    pos = space(text, pos + 1).end()
                    if text.startswith("]", pos):
                        break
                elif char == "]":
                    break
                else:
                    return None
        return out, pos + 1
    if not allow_bare:
        return None
    got = _quick_call(text, pos, strip_suffix, words)
    if got is None:
        return None
    return [got[0]], got[1]


def read_pythonic(text: str, pos: int = 0, *, allow_bare: bool = True,
                  strip_suffix: str | None = None, json_literals: bool = False) -> tuple[list[dict], int]:
    """Read one pythonic call list (or bare call) starting at ``pos``, leading whitespace skipped.

    Args:
        text (str): the region body.
        pos (int): where to start.
        allow_bare (bool): accept a single call without ``[...]``.
        strip_suffix (str | None): removed from the end of a call name (``".call"``), unless it is
            the whole name.
        json_literals (bool): also read ``true``/``false``/``null`` (JSON words written inside a
            Python call, as LFM2 does).

    Returns:
        tuple[list[dict], int]: the calls ``[{"name": str, "arguments": dict}, ...]`` and the offset
        just past the value's last character (text after it is not read).

    Raises:
        ContentParseError: the text at ``pos`` is not a call list; the message names the offset.
    """
    reader = _Reader(text, json_literals)
    reader.pos = pos
    try:
        value = reader.calls(allow_bare, strip_suffix)
    except RecursionError:
        raise reader.fail("nesting too deep") from None
    return value, reader.pos


def parse_pythonic(text: str, *, allow_bare: bool = True, strip_suffix: str | None = None,
                   json_literals: bool = False) -> list[dict]:
    """Parse a whole region body as a pythonic call list; only whitespace may follow it.

    Args:
        text (str): the region body.
        allow_bare (bool), strip_suffix (str | None), json_literals (bool): as for
            :func:`read_pythonic`.

    Returns:
        list[dict]: ``[{"name": str, "arguments": dict}, ...]``.

    Raises:
        ContentParseError: the body is empty, is not a call list, or has text after it.
    """
    if not isinstance(text, str):
        raise ContentParseError(f"pythonic parser could not parse region: not a string.\nContent: {text!r}")
    quick = _quick_calls(text, allow_bare, strip_suffix, _JSON_WORDS if json_literals else _PY_WORDS)
    if quick is not None:
        return quick
    value, end = read_pythonic(text, allow_bare=allow_bare, strip_suffix=strip_suffix,
                               json_literals=json_literals)
    rest = _SPACE.match(text, end).end()
    if rest != len(text):
        raise ContentParseError(
            f"pythonic parser could not parse region at offset {rest}: text after the calls.\n"
            f"Content: {text!r}"
        )
    return value
