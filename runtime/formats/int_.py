"""The ``int`` format: the stripped body read as an int (template-language.md "Content parsers")."""

from __future__ import annotations

from ..content import ContentParser, _error, _stripped
from .base import Format, Plan, no_problems
from .text import make as make_text


def plan(field) -> Plan:
    """A scalar: clean chunks, the value only at the close; an empty body cannot be read."""
    return Plan("int", dirty=False, empty_none=True)


def make(args: dict) -> ContentParser:
    """The whole-body parser (template-language.md "Content parsers"); raises ContentParseError."""
    prepare = make_text(args)

    def parse_int(text: str) -> int:
        try:
            return int(prepare(text))
        except (ValueError, TypeError, AttributeError) as exc:
            raise _error("int", "as an integer", text, exc) from exc

    return parse_int


def grammar(args: dict) -> str:
    """A Lark rule body for an int body (docs/formats.md: ``Format.grammar``)."""
    return _stripped(args, r"[-+]?\d(?:_?\d)*")


FORMAT = Format("int", False, no_problems, plan, make, grammar=grammar, never_string="an int")
