"""The ``float`` format: the stripped body read as a float (template-language.md "Content parsers")."""

from __future__ import annotations

from ..content import _grammar_float, _make_float
from .base import Format, Plan, no_problems


def plan(field) -> Plan:
    """A scalar: clean chunks, the value only at the close; an empty body cannot be read."""
    return Plan("float", dirty=False, empty_none=True)


FORMAT = Format("float", False, no_problems, plan, _make_float, grammar=_grammar_float, never_string="a float")
