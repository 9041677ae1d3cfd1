"""The ``xml-tree`` format (template language v2): a value written as nested XML elements (MiniMax-M3 tool
arguments; template-language.md "Content parsers")."""

from __future__ import annotations

import regex

from ..content import _TREE_NAME, _grammar_any, _make_xml_tree
from .base import Format, Plan, Problems


def check(args: dict, where: str = "content_args") -> Problems:
    """Load-time checks of xml-tree's ``content_args``."""
    problems: Problems = []
    unknown = sorted(set(args) - {"tag_prefix", "item_tag"})
    if unknown:
        problems.append(("", f"xml-tree has unknown arguments {unknown} (allowed: ['tag_prefix', 'item_tag'])"))
    if "tag_prefix" in args and not isinstance(args["tag_prefix"], str):
        problems.append(("tag_prefix", f"xml-tree 'tag_prefix' must be a string, got {args['tag_prefix']!r}"))
    if "item_tag" in args and not (isinstance(args["item_tag"], str) and regex.fullmatch(_TREE_NAME, args["item_tag"])):
        problems.append(("item_tag", f"xml-tree 'item_tag' must be a tag name (no spaces, quotes or <>/), "
                                     f"got {args['item_tag']!r}"))
    return problems


def plan(field) -> Plan:
    """Only its closer ends it; an empty body reads as the empty text."""
    return Plan("xml-tree")


FORMAT = Format("xml-tree", True, check, plan, _make_xml_tree, grammar=_grammar_any, since=2)
