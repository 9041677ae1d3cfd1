"""The ``kv-lines`` format: one ``key: value`` pair per line (template-language.md "Content parsers")."""

from __future__ import annotations

from ..content import _grammar_any, _make_kv_lines
from .base import Format, Plan, Problems, call_shape, is_tool_field, unmatched_problems, value_parser_problems


def check(args: dict, where: str = "content_args") -> Problems:
    """Load-time checks of kv-lines' ``content_args``."""
    problems: Problems = []
    for sep_key in ("line_sep", "kv_sep"):
        if sep_key in args and not (isinstance(args[sep_key], str) and args[sep_key]):
            problems.append(("", f"kv-lines '{sep_key}' must be a non-empty string"))
    return problems + unmatched_problems(args) + value_parser_problems(args, where, None)


def plan(field) -> Plan:
    """Only its closer ends it; an empty body reads as ``{}``. A tool field named by an open-delimiter group
    whose arguments are the body streams them parameter by parameter."""
    shape = call_shape(field) if is_tool_field(field) else None
    if (shape is not None and not shape.each and shape.arguments == ("body",) and shape.name is not None
            and shape.name[0] == "group"):
        return Plan("kv-lines", arguments="per-parameter", call="args", name_group=shape.name[1])
    return Plan("kv-lines")


FORMAT = Format("kv-lines", True, check, plan, _make_kv_lines, grammar=_grammar_any, never_string="a dict")
