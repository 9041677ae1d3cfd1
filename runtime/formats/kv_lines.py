"""The ``kv-lines`` format: one ``key: value`` pair per line (template-language.md "Content parsers")."""

from __future__ import annotations

from typing import Any

from ..content import ContentParser, _error, _failing, _grammar_any, _make_value_parser
from ..errors import ContentParseError
from .base import REPARSE, Format, Plan, Problems, call_shape, is_tool_field, unmatched_problems, value_parser_problems
from .text import make as make_text


def check(args: dict, where: str = "content_args") -> Problems:
    """Load-time checks of kv-lines' ``content_args``."""
    problems: Problems = []
    for sep_key in ("line_sep", "kv_sep"):
        if sep_key in args and not (isinstance(args[sep_key], str) and args[sep_key]):
            problems.append(("", f"kv-lines '{sep_key}' must be a non-empty string"))
    return problems + unmatched_problems(args) + value_parser_problems(args, where, None, "kv-lines")


def make(args: dict) -> ContentParser:
    """The whole-body parser: one ``key<kv_sep>value`` pair per ``line_sep`` line, key and value stripped
    (unless ``"strip": false``), a blank line skipped, a line without ``kv_sep`` malformed (D7) unless
    ``"unmatched": "skip"``; ``value_parser`` (a spec, or in v2 a switch on ``"key"``) reads each value."""
    line_sep = args.get("line_sep", "\n")
    kv_sep = args.get("kv_sep", ":")
    prepare = make_text(args)
    sub_parse, switch = _make_value_parser(args.get("value_parser"))
    skip = args.get("unmatched", "error") == "skip"
    if switch is not None and switch != "key":
        return _failing("kv-lines", f"value_parser can only switch on 'key', not {switch!r}")

    def parse_kv_lines(text: str) -> dict:
        out: dict[str, Any] = {}
        try:
            lines = text.split(line_sep)
        except (ValueError, TypeError) as exc:
            raise _error("kv-lines", f"with line_sep {line_sep!r}", text, exc) from exc
        at = 0  # offset of the current line in the body
        for line in lines:
            offset, at = at, at + len(line) + len(line_sep)
            whole, line = line, prepare(line)
            try:
                if not line or line.isspace():
                    continue
                lacks = kv_sep not in line
                if not lacks:
                    key, value = line.split(kv_sep, 1)
            except (ValueError, TypeError) as exc:
                raise _error("kv-lines", f"with kv_sep {kv_sep!r}", text, exc) from exc
            if lacks:
                if skip:
                    continue
                offset += len(whole) - len(whole.lstrip())
                shown = line.strip() if len(line.strip()) <= 60 else line.strip()[:57] + "..."
                raise ContentParseError(
                    f"kv-lines: the line at offset {offset} of the body has no {kv_sep!r}: {shown!r}."
                    f"\nContent: {text!r}")
            value = prepare(value)
            key = prepare(key)
            out[key] = value if sub_parse is None else sub_parse(value, key)
        return out

    return parse_kv_lines


def lenient(args: dict) -> dict | None:
    """The arguments that read a body still being written, whose last line may be cut (``"unmatched": "skip"``);
    None when ``args`` already read it so."""
    return {**args, "unmatched": "skip"} if args.get("unmatched", "error") != "skip" else None


def plan(field) -> Plan:
    """Only its closer ends it; an empty body reads as ``{}``. A tool field named by an open-delimiter group
    whose arguments are the body streams them parameter by parameter."""
    shape = call_shape(field) if is_tool_field(field) else None
    if (shape is not None and not shape.each and shape.arguments == ("body",) and shape.name is not None
            and shape.name[0] == "group"):
        return Plan("kv-lines", arguments="per-parameter", call="args", name_group=shape.name[1])
    return Plan("kv-lines")


def stream(plan: Plan, args: dict):
    """``Format.stream`` of kv-lines: parameter by parameter (``"per-parameter"``)."""
    return REPARSE if plan.arguments == "per-parameter" else None


FORMAT = Format("kv-lines", True, check, plan, make, grammar=_grammar_any, never_string="a dict", lenient=lenient,
                stream=stream)
