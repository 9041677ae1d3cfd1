"""Content parsers: turn the body text of a closed region into a value (SPEC section 5).

Theory of operation
-------------------
Every field names one content parser (``text``, ``int``, ``float``, ``bool``, ``json``,
``xml-inline``, ``kv-lines``) and a ``content_args`` dict. A generated parser calls
:func:`make_content_parser` once per field at import time and then calls the returned closure each
time a region of that field closes, so all argument handling (defaults, regex compilation, nested
``value_parser`` set-up) happens once. :func:`parse_content` is the one-shot form of the same thing.

The semantics are those of the transformers reference, quirks included (``int()``/``float()``
number syntax, ``bool`` accepting only ``true``/``1``, last-wins keys), with one deliberate
difference, deviation D6 (SPEC section 9), in the ``json`` dialect knobs:

* ``unquoted_keys`` quotes a bare identifier key only outside string literals, and also when
  whitespace separates it from the preceding ``{`` or ``,`` (``{a: 1, c: 2}`` parses;
  ``{"s": "x,y:z", k: 1}`` keeps the string intact).
* ``string_delims`` is applied by a scanner that turns each delimited span straight into a JSON
  string literal, so no reserved sentinel characters exist (text containing ``\\x01``/``\\x02``
  parses) and delimiters inside ordinary JSON strings are left alone.
* with ``allow_non_json``, every failure -- bad dialect arguments included -- falls back to the
  stripped text.

Every failure raises :class:`~respc.runtime.errors.ContentParseError` (a ``ValueError``) whose
message names the parser and quotes the content with ``repr``. Errors that depend only on
``content_args`` (a missing ``tag_pattern``, an unknown ``value_parser`` name) are raised when a
region is parsed, as the reference does, never at import time.
"""

from __future__ import annotations

import functools
import json
import re as _stdre
from collections.abc import Callable
from typing import Any

import regex

from .errors import ContentParseError

__all__ = [
    "STREAMABLE_PARSERS",
    "CONTENT_PARSER_NAMES",
    "parse_content",
    "make_content_parser",
]

#: Parsers whose region chunks are part of the final value; their chunks carry ``dirty=False``
#: (SPEC 4.4). The structured parsers only give a value on close, so their chunks are dirty.
STREAMABLE_PARSERS: frozenset[str] = frozenset({"text", "int", "float", "bool"})

#: Every content parser name, in SPEC order.
CONTENT_PARSER_NAMES: tuple[str, ...] = (
    "text",
    "int",
    "float",
    "bool",
    "json",
    "xml-inline",
    "kv-lines",
)

ContentParser = Callable[[str], Any]


# --------------------------------------------------------------------------------------------
# Cached regex compilation (content_args patterns are compiled once per pattern string).


@functools.lru_cache(maxsize=256)
def _compile_tag_pattern(pattern: str) -> regex.Pattern:
    """Compile an ``xml-inline`` ``tag_pattern`` with DOTALL, as the reference does."""
    return regex.compile(pattern, regex.DOTALL)


@functools.lru_cache(maxsize=256)
def _dialect_finder(opens: tuple[str, ...], unquoted_keys: bool) -> _stdre.Pattern:
    """A pattern that finds the next position the JSON dialect scanner must look at.

    That is: the first character of any ``string_delims`` opener, a ``"`` (a JSON string to
    skip), and -- with ``unquoted_keys`` -- a ``{`` or ``,`` (a key may follow).
    """
    chars = {'"'}
    if unquoted_keys:
        chars.update("{,")
    chars.update(o[0] for o in opens if o)
    return _stdre.compile("[" + "".join(_stdre.escape(c) for c in sorted(chars)) + "]")


# A JSON string body after its opening quote: escapes skip one character; stops after the
# closing quote. An unterminated string runs to the end of the text.
_JSON_STRING_REST = _stdre.compile(r'[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', _stdre.DOTALL)
# JSON insignificant whitespace, then a bare key directly followed by its colon. The reference
# uses a Unicode ``\w+`` key, so do we.
_BARE_KEY = _stdre.compile(r"[ \t\r\n]*(\w+):")


# --------------------------------------------------------------------------------------------
# Scalar parsers.


def _identity(text: str) -> str:
    return text


def _error(parser: str, what: str, text: Any, exc: BaseException | None = None) -> ContentParseError:
    message = f"{parser} parser could not parse region {what}.\nContent: {text!r}"
    if exc is not None:
        message += f"\nError: {exc}"
    return ContentParseError(message)


def _make_text(args: dict) -> ContentParser:
    return str.strip if args.get("strip", True) else _identity


def _make_int(args: dict) -> ContentParser:
    prepare = _make_text(args)

    def parse_int(text: str) -> int:
        try:
            return int(prepare(text))
        except (ValueError, TypeError, AttributeError) as exc:
            raise _error("int", "as an integer", text, exc) from exc

    return parse_int


def _make_float(args: dict) -> ContentParser:
    prepare = _make_text(args)

    def parse_float(text: str) -> float:
        try:
            return float(prepare(text))
        except (ValueError, TypeError, AttributeError) as exc:
            raise _error("float", "as a float", text, exc) from exc

    return parse_float


_TRUE_WORDS = frozenset({"true", "1"})


def _make_bool(args: dict) -> ContentParser:
    prepare = _make_text(args)

    def parse_bool(text: str) -> bool:
        try:
            return prepare(text).lower() in _TRUE_WORDS
        except (TypeError, AttributeError) as exc:
            raise _error("bool", "as a bool", text, exc) from exc

    return parse_bool


# --------------------------------------------------------------------------------------------
# json and its dialects (deviation D6).


def _checked_delims(string_delims: Any) -> tuple[tuple[str, str], ...]:
    """Validate ``string_delims`` into a tuple of (open, close) string pairs.

    Raises:
        ValueError: the argument is not a list of two-string pairs.
    """
    pairs = []
    for pair in string_delims:
        if isinstance(pair, str):
            raise ValueError(f"string_delims entry {pair!r} is not an [open, close] pair")
        open_d, close_d = pair
        if not isinstance(open_d, str) or not isinstance(close_d, str):
            raise ValueError(f"string_delims entry {pair!r} must hold two strings")
        pairs.append((open_d, close_d))
    return tuple(pairs)


def _apply_dialects(text: str, delims: tuple[tuple[str, str], ...], unquoted_keys: bool) -> str:
    """Rewrite lax JSON into strict JSON in one left-to-right scan (deviation D6).

    Outside JSON string literals: a span ``open ... close`` of a ``string_delims`` pair (the first
    pair whose opener starts here and whose closer follows; the closer is its next occurrence)
    becomes ``json.dumps`` of the enclosed text, and with ``unquoted_keys`` an identifier that
    follows ``{`` or ``,`` (after optional whitespace) and is directly followed by ``:`` gets
    quoted. JSON string literals are copied verbatim.

    Args:
        text (str): the region body.
        delims (tuple[tuple[str, str], ...]): validated ``string_delims`` pairs, in priority order.
        unquoted_keys (bool): whether to quote bare keys.

    Returns:
        str: the rewritten text (``text`` itself when nothing changed).
    """
    finder = _dialect_finder(tuple(o for o, _ in delims), unquoted_keys)
    out: list[str] = []
    copied = 0  # text[:copied] is already in ``out``
    pos = 0
    length = len(text)
    # Closers known to be absent from the rest of the text: once a search for one fails, later
    # openers of that pair are plain text, and searching again would make the scan quadratic.
    exhausted: set[str] = set()
    while pos < length:
        m = finder.search(text, pos)
        if m is None:
            break
        at = m.start()
        handled = False
        for open_d, close_d in delims:
            if open_d and close_d not in exhausted and text.startswith(open_d, at):
                body_start = at + len(open_d)
                end = text.find(close_d, body_start)
                if end < 0:
                    exhausted.add(close_d)
                    continue
                out.append(text[copied:at])
                out.append(json.dumps(text[body_start:end]))
                pos = copied = end + len(close_d)
                handled = True
                break
        if handled:
            continue
        char = text[at]
        if char == '"':
            pos = _JSON_STRING_REST.match(text, at + 1).end()
        elif unquoted_keys and char in "{,":
            key = _BARE_KEY.match(text, at + 1)
            if key is not None:
                out.append(text[copied:key.start(1)])
                out.append('"' + key.group(1) + '"')
                copied = key.end(1)
                pos = key.end()
            else:
                pos = at + 1
        else:
            pos = at + 1
    if not out:
        return text
    out.append(text[copied:])
    return "".join(out)


def _make_json(args: dict) -> ContentParser:
    allow_non_json = bool(args.get("allow_non_json"))
    unquoted_keys = bool(args.get("unquoted_keys", False))
    fallback = _make_text(args)
    # Validate the dialect arguments once; a bad value is reported (or, with allow_non_json,
    # falls back to text) when a region is parsed, like every other failure.
    bad_args: Exception | None = None
    delims: tuple[tuple[str, str], ...] = ()
    try:
        delims = _checked_delims(args.get("string_delims") or [])
    except (ValueError, TypeError) as exc:
        bad_args = exc
    dialects = bool(delims) or unquoted_keys

    def parse_json(text: str) -> Any:
        working = text
        try:
            if bad_args is not None:
                raise ValueError(f"invalid string_delims: {bad_args}")
            if dialects:
                working = _apply_dialects(text, delims, unquoted_keys)
            return json.loads(working)
        except (ValueError, TypeError, AttributeError, RecursionError) as exc:
            if allow_non_json:
                try:
                    return fallback(text)
                except (TypeError, AttributeError):
                    pass  # not even text: report below
            if working is text or working == text:
                raise ContentParseError(
                    f"json parser could not parse region as JSON.\nContent: {text!r}\nError: {exc}"
                ) from exc
            raise ContentParseError(
                "json: could not parse after dialect transforms.\n"
                f"Original: {text!r}\nTransformed: {working!r}\nError: {exc}"
            ) from exc

    return parse_json


# --------------------------------------------------------------------------------------------
# Structured parsers: xml-inline and kv-lines.


def _make_value_parser(value_parser: Any) -> ContentParser | None:
    """Build the nested parser of a ``value_parser`` argument (``{"name", "args"}``), or None.

    A malformed ``value_parser`` gives a parser that raises when first used, so bad arguments
    fail at parse time like the reference.
    """
    if value_parser is None:
        return None
    if not isinstance(value_parser, dict):
        return _failing("value_parser", f"value_parser must be a dict, got {value_parser!r}")
    return _build(value_parser.get("name", "text"), value_parser.get("args", {}))


def _failing(parser: str, reason: str) -> ContentParser:
    def fail(text: str) -> Any:
        raise ContentParseError(f"{parser}: {reason}.\nContent: {text!r}")

    return fail


def _make_xml_inline(args: dict) -> ContentParser:
    tag_pattern = args.get("tag_pattern")
    if tag_pattern is None:
        return _failing("xml-inline", "'tag_pattern' content_arg is required")
    try:
        compiled = _compile_tag_pattern(tag_pattern)
    except (regex.error, TypeError) as exc:
        return _failing("xml-inline", f"invalid tag_pattern {tag_pattern!r}: {exc}")
    sub_parse = _make_value_parser(args.get("value_parser"))
    merge = bool(args.get("merge_duplicates", False))
    has_value_group = "value" in compiled.groupindex

    def parse_xml_inline(text: str) -> dict:
        out: dict[str, Any] = {}
        for m in compiled.finditer(text):
            key = m.group("key") if "key" in compiled.groupindex else None
            if key is None:
                raise ContentParseError(
                    "xml-inline: tag_pattern must have a named group 'key' that matches. "
                    f"Pattern: {tag_pattern}\nContent: {text!r}"
                )
            raw = m.group("value") if has_value_group else ""
            if sub_parse is None:
                value = raw
            elif raw is None:
                raise ContentParseError(
                    f"xml-inline: group 'value' did not match for key {key!r}, so value_parser "
                    f"has nothing to parse.\nContent: {text!r}"
                )
            else:
                value = sub_parse(raw)
            if merge and key in out:
                previous = out[key]
                if not isinstance(previous, list):
                    out[key] = previous = [previous]
                previous.append(value)
            else:
                out[key] = value
        return out

    return parse_xml_inline


def _make_kv_lines(args: dict) -> ContentParser:
    line_sep = args.get("line_sep", "\n")
    kv_sep = args.get("kv_sep", ":")
    prepare = _make_text(args)
    sub_parse = _make_value_parser(args.get("value_parser"))

    def parse_kv_lines(text: str) -> dict:
        out: dict[str, Any] = {}
        try:
            lines = text.split(line_sep)
        except (ValueError, TypeError) as exc:
            raise _error("kv-lines", f"with line_sep {line_sep!r}", text, exc) from exc
        for line in lines:
            line = prepare(line)
            try:
                if not line or kv_sep not in line:
                    continue
                key, value = line.split(kv_sep, 1)
            except (ValueError, TypeError) as exc:
                raise _error("kv-lines", f"with kv_sep {kv_sep!r}", text, exc) from exc
            value = prepare(value)
            out[prepare(key)] = value if sub_parse is None else sub_parse(value)
        return out

    return parse_kv_lines


# --------------------------------------------------------------------------------------------
# Dispatch.

_FACTORIES: dict[str, Callable[[dict], ContentParser]] = {
    "text": _make_text,
    "int": _make_int,
    "float": _make_float,
    "bool": _make_bool,
    "json": _make_json,
    "xml-inline": _make_xml_inline,
    "kv-lines": _make_kv_lines,
}


def _build(name: Any, args: Any) -> ContentParser:
    factory = _FACTORIES.get(name) if isinstance(name, str) else None
    if factory is None:
        return _failing(
            "content", f"unknown content parser {name!r}; known: {list(CONTENT_PARSER_NAMES)}"
        )
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return _failing(str(name), f"content_args must be a dict, got {args!r}")
    return factory(args)


def make_content_parser(name: str, args: dict) -> Callable[[str], Any]:
    """Build the parser for one field once; call the result on every region close (SPEC 5).

    Args:
        name (str): one of :data:`CONTENT_PARSER_NAMES`.
        args (dict): the field's ``content_args`` (``None`` is taken as ``{}``). It is read now;
            later changes to it are not seen.

    Returns:
        Callable[[str], Any]: ``parser(body) -> value``. For ``text`` with ``strip`` this is
        ``str.strip`` itself. The closure raises :class:`ContentParseError` on any failure.
        An unknown ``name`` or malformed arguments also give a closure that raises
        :class:`ContentParseError` when called (parse time, as in the reference), never an error
        here.
    """
    return _build(name, args)


def parse_content(text: str, name: str, args: dict) -> Any:
    """Parse one region body with the named content parser (SPEC 5, deviation D6).

    Args:
        text (str): the region body, delimiters excluded.
        name (str): the content parser name, one of :data:`CONTENT_PARSER_NAMES`.
        args (dict): its ``content_args``.

    Returns:
        Any: ``str`` for ``text``; ``int``/``float``/``bool``; any JSON value for ``json`` (or the
        stripped text with ``allow_non_json``); ``dict`` for ``xml-inline`` and ``kv-lines``.

    Raises:
        ContentParseError: the body does not parse, the parser is unknown, or its arguments are
            unusable (for example ``xml-inline`` without ``tag_pattern``).
    """
    return _build(name, args)(text)


# TEMPORARY (core branch): the registry the decoders branch provides.
from dataclasses import dataclass as _dc  # noqa: E402


@_dc(frozen=True)
class _Rec:
    name: str
    self_delimiting: bool
    can_reject: bool
    boundary: Any


def _json_boundary(args):
    from .decoders import JsonBoundary
    return JsonBoundary


PARSERS = {n: _Rec(n, n == "json", n == "json", _json_boundary if n == "json" else None)
           for n in CONTENT_PARSER_NAMES}
