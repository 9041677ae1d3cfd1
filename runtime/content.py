"""Content parsers: turn the body text of a closed region into a value (template-language.md "Content parsers").

Theory of operation
-------------------
Every field names one content parser (``text``, ``int``, ``float``, ``bool``, ``json``,
``xml-inline``, ``kv-lines``, and in template v2 ``pythonic`` and ``xml-tree``) and a ``content_args`` dict. Each
parser is one :class:`~respc.runtime.formats.base.Format` in the table of ``runtime/formats``
(docs/formats.md), which holds its load-time checks and its plan and points at its implementation here;
``PARSERS`` is that table. A generated parser calls
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

import functools
import json
from collections.abc import Callable
from typing import Any

import regex

from .errors import ContentParseError
from .repair import NOTES

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


@functools.lru_cache(maxsize=256)
def _compile_tag_pattern(pattern: str) -> regex.Pattern:
    """Compile an ``xml-inline`` ``tag_pattern`` with DOTALL, as the reference does."""
    return regex.compile(pattern, regex.DOTALL)


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


def _make_xml_inline(args: dict) -> ContentParser:
    tag_pattern = args.get("tag_pattern")
    if tag_pattern is None:
        return _failing("xml-inline", "'tag_pattern' content_arg is required")
    try:
        compiled = _compile_tag_pattern(tag_pattern)
    except (regex.error, TypeError) as exc:
        return _failing("xml-inline", f"invalid tag_pattern {tag_pattern!r}: {exc}")
    sub_parse, switch = _make_value_parser(args.get("value_parser"))
    if switch is not None and switch not in compiled.groupindex:
        return _failing("xml-inline", f"value_parser switch group {switch!r} is not a named group of "
                                      f"tag_pattern {tag_pattern!r}")
    merge = bool(args.get("merge_duplicates", False))
    skip = args.get("unmatched", "error") == "skip"
    has_value_group = "value" in compiled.groupindex
    # Groups are read by number: the regex module looks a group name up in a dict it builds per
    # read (0.7 us a name, issue 14); a name used twice is one group there, so one number.
    numbers = compiled.groupindex
    key_at, value_at = numbers.get("key"), numbers.get("value")
    switch_at = numbers.get(switch) if switch is not None else None

    def parse_xml_inline(text: str, raws: dict | None = None) -> dict:
        # raws (errors="recover" repair): match index -> (the value text to use instead, the
        # body offset its closing text ends at)
        out: dict[str, Any] = {}
        last = 0
        for index, m in enumerate(compiled.finditer(text)):
            if not skip and m.start() > last:
                _unaccounted_gap(text, last, m.start(), False)
            last = m.end()
            key = m.group(key_at) if key_at is not None else None
            if key is None:
                raise ContentParseError(
                    "xml-inline: tag_pattern must have a named group 'key' that matches. "
                    f"Pattern: {tag_pattern}\nContent: {text!r}"
                )
            raw = m.group(value_at) if has_value_group else ""
            if raws and index in raws:
                raw, raw_end = raws[index]
                last = max(last, raw_end)  # the repaired value runs past the match
            if sub_parse is None:
                value = raw
            elif raw is None:
                raise ContentParseError(
                    f"xml-inline: group 'value' did not match for key {key!r}, so value_parser "
                    f"has nothing to parse.\nContent: {text!r}"
                )
            else:
                value = sub_parse(raw, m.group(switch_at) if switch is not None else None)
            if merge and key in out:
                previous = out[key]
                if not isinstance(previous, list):
                    out[key] = previous = [previous]
                previous.append(value)
            else:
                out[key] = value
        if not skip and last < len(text):
            _unaccounted_gap(text, last, len(text), True)
        return out

    parse_xml_inline.compiled = compiled
    return parse_xml_inline


def _unaccounted_gap(text: str, start: int, end: int, tail: bool) -> None:
    """Raise unless ``text[start:end]``, body text no ``tag_pattern`` match covers, is accounted
    for: whitespace, or (``tail``: after the last match) closing tags ``</name>`` of the enclosing
    markup (``\n</function>\n`` of a Qwen3-Coder call), each with whitespace around it.

    Raises:
        ContentParseError: naming the offset in the body and the text (docs/template-language.md,
            "Text no parser accounted for").
    """
    gap = text[start:end]
    if not gap or gap.isspace() or (tail and _CLOSING_TAGS.fullmatch(gap)):
        return
    offset = start + len(gap) - len(gap.lstrip())
    shown = gap.strip()
    if len(shown) > 60:
        shown = shown[:57] + "..."
    raise ContentParseError(f"xml-inline: text at offset {offset} of the body matches no tag_pattern: "
                            f"{shown!r}.\nContent: {text!r}")


_META = set("()[]{}.*+?|^$\\")
#: closing tags at the end of a body: the enclosing markup (``</function>``)
_CLOSING_TAGS = regex.compile(r"(?:\s*</[^<>/]+>)+\s*$")


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


def _literal_end(pattern: str, from_end: bool) -> str:
    """The literal text a regex starts (or ends) with: ``<parameter=`` of
    ``<parameter=(?P<key>...)``; "" when it starts (ends) with a regex construct."""
    out: list[str] = []
    if not from_end:
        i = 0
        while i < len(pattern):
            c = pattern[i]
            if c == "\\" and i + 1 < len(pattern) and not pattern[i + 1].isalnum():
                out.append(pattern[i + 1])
                i += 2
                continue
            if c in _META:
                break
            out.append(c)
            i += 1
        return "".join(out)
    i = len(pattern) - 1
    while i >= 0:
        c = pattern[i]
        escaped = i > 0 and pattern[i - 1] == "\\"
        if escaped and not c.isalnum():
            out.append(c)
            i -= 2
            continue
        if c in _META or escaped:
            break
        out.append(c)
        i -= 1
    return "".join(reversed(out))


def _repair_xml_inline(args: dict) -> Callable[[str], "tuple[Any, list[str]] | None"]:
    """``errors="recover"``: two kinds of damage to tags (notes in ``runtime/repair.py``).

    * A missing close: ``<parameter=a>1<parameter=b>2</parameter>`` or a last parameter with no
      ``</parameter>`` before the region's close. When ``tag_pattern`` starts and ends with
      literal text (``<parameter=`` ... ``</parameter>``, three characters or more), an opening
      with no closing after it before the next opening (or the end of the body) gets one.
    * A value that holds its own closing text:
      ``<parameter name="c">A </parameter> B</parameter></invoke>``: the lazy ``tag_pattern`` ends
      the value at the first ``</parameter>`` and the rest, up to the next match, is skipped. When
      that skipped text ends with the match's closing text again, the value runs to that last one.

    ``fix`` returns None when neither applies.
    """
    parse = _make_xml_inline(args)
    compiled = getattr(parse, "compiled", None)
    if compiled is None or "value" not in compiled.groupindex:
        return lambda text: None
    opening = _literal_end(args["tag_pattern"], False)
    closing = _literal_end(args["tag_pattern"], True)
    if len(opening) < 3 or len(closing) < 3 or closing in opening:
        opening = closing = ""

    def add_closes(text: str, notes: list[str]) -> str:
        if not opening or opening not in text:
            return text
        starts = []
        at = text.find(opening)
        while at >= 0:
            starts.append(at)
            at = text.find(opening, at + len(opening))
        pieces, last = [], 0
        for index, start in enumerate(starts):
            limit = starts[index + 1] if index + 1 < len(starts) else len(text)
            segment = text[start:limit]
            pieces.append(text[last:start])
            if closing not in segment:
                # before the closing tags of the enclosing markup (``</function>``), if any
                tail = _CLOSING_TAGS.search(segment)
                cut = tail.start() if tail is not None else len(segment.rstrip())
                pieces.append(segment[:cut] + closing + segment[cut:])
                where = (f"before the next {opening!r}" if index + 1 < len(starts)
                         else f"before {segment[cut:].strip()!r}" if tail is not None else "at the end of the body")
                notes.append(NOTES["missing-close"].format(closing, where))
            else:
                pieces.append(segment)
            last = limit
        return "".join(pieces)

    def fix(text: str) -> "tuple[Any, list[str]] | None":
        notes: list[str] = []
        text = add_closes(text, notes)
        matches = list(compiled.finditer(text))
        if not matches and text.strip().startswith("{"):
            # the body written as a JSON object instead of tags
            try:
                value = json.loads(text)
            except ValueError:
                return None
            return (value, [NOTES["json-body"]]) if isinstance(value, dict) else None
        raws: dict[int, str] = {}
        for index, m in enumerate(matches):
            if m.start("value") < 0:
                continue
            limit = matches[index + 1].start() if index + 1 < len(matches) else len(text)
            close_text = text[m.end("value"):m.end()]
            tag = close_text.strip()
            skipped = text[m.end():limit]
            if not tag or not skipped.strip():
                continue
            last = text.rfind(tag, m.end(), limit)
            if last < 0 or text[last + len(tag):limit].strip():
                continue
            raw = text[m.start("value"):last]
            raws[index] = (raw.rstrip() if close_text[:1].isspace() else raw, last + len(tag))
            key = m.group("key") if "key" in compiled.groupindex else None
            notes.append(NOTES["inner-close"].format(key, tag))
        if not notes:
            return None
        return parse(text, raws), notes

    return fix


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
