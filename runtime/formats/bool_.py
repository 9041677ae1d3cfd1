"""The ``bool`` format: the stripped body read as a bool (template-language.md "Content parsers")."""

from __future__ import annotations

from ..content import _grammar_any, _make_bool
from .base import Format, Plan, no_problems


def plan(field) -> Plan:
    """A scalar: clean chunks, the value only at the close; an empty body reads."""
    return Plan("bool", dirty=False)


FORMAT = Format("bool", False, no_problems, plan, _make_bool, grammar=_grammar_any, never_string="a bool")
