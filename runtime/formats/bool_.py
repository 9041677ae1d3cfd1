"""The ``bool`` format: the stripped body read as a bool (template-language.md "Content parsers")."""

from __future__ import annotations

from ..content import ContentParser, _error, _grammar_any
from .base import Format, Plan, no_problems, text_grammar
from .text import make as make_text


def plan(field) -> Plan:
    """A scalar: clean chunks, the value only at the close; an empty body reads."""
    return Plan("bool", dirty=False)


_TRUE_WORDS = frozenset({"true", "1"})


def make(args: dict) -> ContentParser:
    """The whole-body parser (template-language.md "Content parsers"); raises ContentParseError."""
    prepare = make_text(args)

    def parse_bool(text: str) -> bool:
        try:
            return prepare(text).lower() in _TRUE_WORDS
        except (TypeError, AttributeError) as exc:
            raise _error("bool", "as a bool", text, exc) from exc

    return parse_bool


FORMAT = Format("bool", False, no_problems, plan, make, grammar=_grammar_any, never_string="a bool",
                body_grammar=text_grammar)
