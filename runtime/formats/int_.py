"""The ``int`` format: the stripped body read as an int (template-language.md "Content parsers")."""

from __future__ import annotations

from ..content import _grammar_int, _make_int
from .base import Format, Plan, no_problems


def plan(field) -> Plan:
    """A scalar: clean chunks, the value only at the close; an empty body cannot be read."""
    return Plan("int", dirty=False, empty_none=True)


FORMAT = Format("int", False, no_problems, plan, _make_int, grammar=_grammar_int, never_string="an int")
