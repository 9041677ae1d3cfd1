"""The ``float`` format: the stripped body read as a float (template-language.md "Content parsers")."""

from __future__ import annotations

from ..content import ContentParser, _error, _stripped
from .base import Format, Plan, no_problems
from .text import make as make_text


def plan(field) -> Plan:
    """A scalar: clean chunks, the value only at the close; an empty body cannot be read."""
    return Plan("float", dirty=False, empty_none=True)


def make(args: dict) -> ContentParser:
    """The whole-body parser (template-language.md "Content parsers"); raises ContentParseError."""
    prepare = make_text(args)

    def parse_float(text: str) -> float:
        try:
            return float(prepare(text))
        except (ValueError, TypeError, AttributeError) as exc:
            raise _error("float", "as a float", text, exc) from exc

    return parse_float


def grammar(args: dict) -> str:
    """A Lark rule body for a float body (docs/formats.md: ``Format.grammar``)."""
    return _stripped(args, r"[-+]?(?:(?:\d(?:_?\d)*(?:\.(?:\d(?:_?\d)*)?)?|\.\d(?:_?\d)*)(?:[eE][-+]?\d(?:_?\d)*)?"
                           r"|(?i:inf|infinity|nan))")


FORMAT = Format("float", False, no_problems, plan, make, grammar=grammar, never_string="a float")
