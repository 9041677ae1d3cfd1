"""The ``xml-inline`` format: parameters matched by a ``tag_pattern`` regex with groups ``key`` and ``value``
(template-language.md "Content parsers")."""

from __future__ import annotations

import regex

from ..content import _REGEX_ERRORS, _grammar_any, _make_xml_inline, _repair_xml_inline
from .base import Format, Plan, Problems, call_shape, is_tool_field, unmatched_problems, value_parser_problems

#: the value group a ``tag_pattern`` must have (once) for its values to stream as written
VALUE_GROUP = "(?P<value>.*?)"


def check(args: dict, where: str = "content_args") -> Problems:
    """Load-time checks of xml-inline's ``content_args``."""
    pattern = args.get("tag_pattern")
    if not isinstance(pattern, str):
        return [("", "xml-inline needs 'tag_pattern', a regex string with groups 'key' and 'value'")]
    try:
        compiled = regex.compile(pattern, regex.DOTALL)
    except _REGEX_ERRORS as exc:
        return [("tag_pattern", f"invalid {where}.tag_pattern regex {pattern!r}: {exc}")]
    if "key" not in compiled.groupindex:
        return [("", f"xml-inline tag_pattern {pattern!r} has no named group 'key'")]
    groups = tuple(sorted(compiled.groupindex, key=compiled.groupindex.__getitem__))
    return unmatched_problems(args) + value_parser_problems(args, where, groups)


def _split(pattern: str) -> tuple[regex.Pattern, str] | None:
    """The compiled text before the value group and the text after it, when the pattern has the value group
    once and the part before it has the ``key`` group."""
    if pattern.count(VALUE_GROUP) != 1:
        return None
    before, after = pattern.split(VALUE_GROUP)
    try:
        opening = regex.compile(before, regex.DOTALL)
    except _REGEX_ERRORS:
        return None
    return (opening, after) if "key" in opening.groupindex else None


def lenient(args: dict) -> dict | None:
    """The arguments that read a body still being written, which may end in a cut-off tag
    (``"unmatched": "skip"``); None when ``args`` already read it so."""
    return {**args, "unmatched": "skip"} if args.get("unmatched", "error") != "skip" else None


def plan(field) -> Plan:
    """Only its closer ends it; an empty body reads as ``{}``. A tool field named by an open-delimiter group
    whose arguments are the body streams them: ``xml-tree`` values (MiniMax-M3: ``CLOSE`` names the key by
    ``(?P=key)``, duplicates merged) as nested JSON, parameters with one lazy value group (``OPEN(?P<value>.*?)
    CLOSE``, no group after it, no ``merge_duplicates``) converted as written, any other body parameter by
    parameter."""
    if not is_tool_field(field):
        return Plan("xml-inline")
    shape = call_shape(field)
    if shape is None or shape.each or shape.arguments != ("body",) or shape.name is None or shape.name[0] != "group":
        return Plan("xml-inline")
    args = field.content_args
    group = shape.name[1]
    pattern = args.get("tag_pattern")
    spec = args.get("value_parser")
    split = _split(pattern) if isinstance(pattern, str) else None
    if isinstance(spec, dict) and spec.get("name") == "xml-tree":
        tree = spec.get("args") or {}
        if (split is not None and split[1].count("(?P=key)") == 1 and args.get("merge_duplicates") is True
                and isinstance(tree.get("tag_prefix", ""), str) and isinstance(tree.get("item_tag", "item"), str)):
            return Plan("xml-inline", arguments="xml-tree", call="args", name_group=group)
        return Plan("xml-inline")
    if split is not None and not args.get("merge_duplicates"):
        try:
            closing = regex.compile(split[1], regex.DOTALL)
        except _REGEX_ERRORS:
            closing = None
        switch = spec.get("switch") if isinstance(spec, dict) else None
        if closing is not None and not closing.groups and (switch is None or switch in split[0].groupindex):
            return Plan("xml-inline", arguments="xml-parameters", call="args", name_group=group)
    return Plan("xml-inline", arguments="per-parameter", call="args", name_group=group)


FORMAT = Format("xml-inline", True, check, plan, _make_xml_inline, repair=_repair_xml_inline, repair_on_success=True,
                grammar=_grammar_any, never_string="a dict", lenient=lenient)
