"""The ``text`` format: the body as a string, stripped unless ``"strip": false`` (template-language.md "Content
parsers")."""

from __future__ import annotations

from ..content import _grammar_any, _make_text
from .base import Format, Plan, call_shape, is_tool_field, no_problems, text_mode


def plan(field) -> Plan:
    """Streams as text (``"strip"``/``"raw"``); a tool field with a fixed name whose one argument is the body
    streams it as that argument (functionary's ``{"code": "{content}"}``)."""
    strips = bool(field.content_args.get("strip", True))
    if is_tool_field(field):
        shape = call_shape(field)
        if (shape is not None and not shape.each and shape.name is not None and shape.name[0] == "fixed"
                and shape.arguments is not None and shape.arguments[0] == "one"):
            return Plan("text", dirty=False, text=text_mode(field, strips), arguments="text-argument", call="args",
                        name=shape.name[1], arg_key=shape.arguments[1], strip=strips)
    return Plan("text", dirty=False, text=text_mode(field, strips))


FORMAT = Format("text", False, no_problems, plan, _make_text, grammar=_grammar_any)
