"""The ``float`` format: the stripped body read as a float (template-language.md "Content parsers")."""

from __future__ import annotations

from ..content import _stripped
from .base import Format, Plan, no_problems
from .int_ import scalar_make


def plan(field) -> Plan:
    """A scalar: clean chunks, the value only at the close; an empty body cannot be read."""
    return Plan("float", dirty=False, empty_none=True)


make = scalar_make("float", float, "as a float")


def grammar(args: dict) -> str:
    """A Lark rule body for a float body (docs/formats.md: ``Format.grammar``)."""
    return _stripped(args, r"[-+]?(?:(?:\d(?:_?\d)*(?:\.(?:\d(?:_?\d)*)?)?|\.\d(?:_?\d)*)(?:[eE][-+]?\d(?:_?\d)*)?"
                           r"|(?i:inf|infinity|nan))")


FORMAT = Format("float", False, no_problems, plan, make, grammar=grammar, never_string="a float")
