"""Content parsers: turn the body text of a closed region into a value (template-language.md "Content parsers").

Theory of operation
-------------------
Every field names one content parser (``text``, ``int``, ``float``, ``bool``, ``json``,
``xml-inline``, ``kv-lines``, and in template v2 ``pythonic`` and ``xml-tree``) and a ``content_args`` dict. Each
parser is one :class:`~respc.runtime.formats.base.Format` in the table of ``runtime/formats``
(docs/formats.md), which holds its load-time checks, its plan and its implementation (``make``, ``repair``,
``grammar`` in ``runtime/formats/<name>.py``); ``PARSERS`` is that table. What stays here is shared: the
dispatch, the ``value_parser`` set-up of ``xml-inline`` and ``kv-lines``, error helpers, ``group_end``. A generated parser calls
:func:`make_content_parser` once per field at import time and then calls the returned closure each
time a region of that field closes, so all argument handling (defaults, regex compilation, nested
``value_parser`` set-up) happens once. :func:`parse_content` is the one-shot form of the same thing.

The semantics are those of the transformers reference, quirks included (``int()``/``float()``
number syntax, ``bool`` accepting only ``true``/``1``, last-wins keys), with one deliberate
difference, deviation D6 (template-language.md "Where respc deliberately differs from the transformers reference,
and why"), in the ``json`` dialect knobs:

* ``unquoted_keys`` quotes a bare identifier key only outside string literals, and also when
  whitespace separates it from the preceding ``{`` or ``,`` (``{a: 1, c: 2}`` parses;
  ``{"s": "x,y:z", k: 1}`` keeps the string intact).
* ``string_delims`` is applied by a scanner that turns each delimited span straight into a JSON
  string literal, so no reserved sentinel characters exist (text containing ``\\x01``/``\\x02``
  parses) and delimiters inside ordinary JSON strings are left alone.
* with ``allow_non_json``, every failure -- bad dialect arguments included -- falls back to the
  stripped text.
* ``python_literals`` (v2) reads ``True``/``False``/``None`` outside string literals (and outside
  ``string_delims`` spans) as ``true``/``false``/``null``, by the same scanner.

``value_parser`` of ``xml-inline`` and ``kv-lines`` may be a switch (v2):
``{"switch": GROUP, "cases": {TEXT: parser spec, ...}, "default": parser spec}`` picks the value's
parser by the text GROUP captured (a named group of ``tag_pattern``; for ``kv-lines`` only ``"key"``,
the stripped key). A group that did not take part, or a text no case names, uses ``default``; with
no ``default`` the value is kept as it would be without a ``value_parser``.

Every failure raises :class:`~respc.runtime.errors.ContentParseError` (a ``ValueError``) whose
message names the parser and quotes the content with ``repr``. Errors that depend only on
``content_args`` (a missing ``tag_pattern``, an unknown ``value_parser`` name) are raised when a
region is parsed, as the reference does, never at import time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import regex

from .errors import ContentParseError

__all__ = [
    "PARSERS",
    "STREAMABLE_PARSERS",
    "CONTENT_PARSER_NAMES",
    "content_args_problems",
    "parse_content",
    "make_content_parser",
    "group_end",
]

ContentParser = Callable[[str], Any]


# --------------------------------------------------------------------------------------------
# Cached regex compilation (content_args patterns are compiled once per pattern string).


# --------------------------------------------------------------------------------------------
# Scalar parsers.


def _error(parser: str, what: str, text: Any, exc: BaseException | None = None) -> ContentParseError:
    message = f"{parser} parser could not parse region {what}.\nContent: {text!r}"
    if exc is not None:
        message += f"\nError: {exc}"
    return ContentParseError(message)


# --------------------------------------------------------------------------------------------
# json and its dialects (deviation D6).


# --------------------------------------------------------------------------------------------
# Structured parsers: xml-inline, and the value_parser of xml-inline and kv-lines (a switch in v2).

#: ``value_parser(raw, selector)``: parse one value; ``selector`` is the text the switch group
#: captured (``None`` when it did not take part or the value parser is not a switch).
ValueParser = Callable[[str, "str | None"], Any]


def _spec_parser(spec: dict) -> ContentParser:
    """The parser of a ``{"name": ..., "args": ...}`` spec (name defaults to ``text``)."""
    return _build(spec.get("name", "text"), spec.get("args", {}))


def _make_value_parser(value_parser: Any) -> tuple[ValueParser | None, str | None]:
    """Build the nested parser of a ``value_parser`` argument.

    Args:
        value_parser (Any): ``None``, a spec ``{"name", "args"}``, or a switch
            ``{"switch": GROUP, "cases": {TEXT: spec}, "default": spec}``.

    Returns:
        tuple[ValueParser | None, str | None]: the parser (``None`` without a value_parser) and
        the switch group (``None`` unless a switch). A malformed argument gives a parser that
        raises :class:`ContentParseError` when first used, so bad arguments fail at parse time
        like the reference.
    """
    if value_parser is None:
        return None, None
    if not isinstance(value_parser, dict):
        fail = _failing("value_parser", f"value_parser must be a dict, got {value_parser!r}")
        return (lambda raw, selector: fail(raw)), None
    if "switch" not in value_parser:
        parse = _spec_parser(value_parser)
        return (lambda raw, selector: parse(raw)), None
    group = value_parser.get("switch")
    cases = value_parser.get("cases", {})
    default = value_parser.get("default")
    if (not isinstance(group, str) or not isinstance(cases, dict)
            or not all(isinstance(spec, dict) for spec in cases.values())
            or not (default is None or isinstance(default, dict))):
        fail = _failing("value_parser", f"malformed value_parser switch {value_parser!r}")
        return (lambda raw, selector: fail(raw)), None
    parsers = {case: _spec_parser(spec) for case, spec in cases.items()}
    fallback = None if default is None else _spec_parser(default)

    def parse_switch(raw: str, selector: str | None) -> Any:
        parse = parsers.get(selector, fallback) if selector is not None else fallback
        return raw if parse is None else parse(raw)

    return parse_switch, group


def _failing(parser: str, reason: str) -> ContentParser:
    def fail(text: str) -> Any:
        raise ContentParseError(f"{parser}: {reason}.\nContent: {text!r}")

    return fail


def group_end(pattern: str, start: int) -> int:
    """The index just past the group of regex source ``pattern`` that opens at ``start`` (its
    ``(``), parentheses matched with escapes and character classes skipped; ``len(pattern)``
    when the group is not closed. Used by ``compiler/grammar_ir.py`` and ``respc.openai``."""
    depth, j, in_class = 0, start, False
    while j < len(pattern):
        c = pattern[j]
        if c == "\\":
            j += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return len(pattern)


# --------------------------------------------------------------------------------------------
# xml-tree (v2): a value written as nested XML elements (MiniMax-M3 tool arguments).


# --------------------------------------------------------------------------------------------
# pythonic (v2): see respc.runtime.pythonic.


#: what a regex argument's compile may raise (the formats' load-time checks catch it)
_REGEX_ERRORS = (regex.error, ValueError, OverflowError, RecursionError, TypeError)


# --------------------------------------------------------------------------------------------
# Grammar fragments: one Lark rule body (a /.../ terminal, regex module syntax) per parser for the
# region's body text. They approximate (a regex cannot count brackets): grammar export builds on
# them and may replace the json/pythonic ones by real sub-grammars. Each matches a non-empty body;
# the caller makes a body optional.

_ANY_BODY = r"/[\s\S]+/s"


def _stripped(args: dict, core: str) -> str:
    space = r"\s*" if args.get("strip", True) else ""
    return f"/{space}(?:{core}){space}/s"


def _grammar_any(args: dict) -> str:
    return _ANY_BODY


# --------------------------------------------------------------------------------------------
# Dispatch.


def _build(name: Any, args: Any) -> ContentParser:
    from .formats import FORMATS

    record = FORMATS.get(name) if isinstance(name, str) else None
    if record is None:
        return _failing(
            "content", f"unknown content parser {name!r}; known: {list(FORMATS)}"
        )
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return _failing(str(name), f"content_args must be a dict, got {args!r}")
    return record.processor(args)


def make_content_parser(name: str, args: dict) -> Callable[[str], Any]:
    """Build the parser for one field once; call the result on every region close (template-language.md "Content
    parsers").

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
    """Parse one region body with the named content parser (template-language.md "Content parsers", D6).

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


# --------------------------------------------------------------------------------------------
# The table lives in runtime/formats (one module per format, each importing its implementation from
# here); these names read it there, when first asked (the format modules import this one).

_FROM_FORMATS = {"PARSERS": "FORMATS", "CONTENT_PARSER_NAMES": "FORMAT_NAMES", "STREAMABLE_PARSERS": "STREAMABLE",
                 "content_args_problems": "content_args_problems"}


def __getattr__(name: str) -> Any:
    """``PARSERS`` (the :data:`respc.runtime.formats.FORMATS` table), ``CONTENT_PARSER_NAMES``,
    ``STREAMABLE_PARSERS`` and ``content_args_problems``, from :mod:`respc.runtime.formats`."""
    if name in _FROM_FORMATS:
        from . import formats

        return getattr(formats, _FROM_FORMATS[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
