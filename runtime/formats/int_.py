"""The ``int`` format: the stripped body read as an int (template-language.md "Content parsers")."""

from __future__ import annotations

from typing import Any, Callable

from ..content import ContentParser, _error, _stripped
from .base import Format, Plan, no_problems
from .text import make as make_text


def plan(field) -> Plan:
    """A scalar: clean chunks, the value only at the close; an empty body cannot be read."""
    return Plan("int", dirty=False, empty_none=True)


def scalar_make(kind: str, convert: Callable[[str], Any], how: str) -> Callable[[dict], ContentParser]:
    """The ``make`` of a scalar format (``int``, ``float``): the body prepared as ``text`` prepares it
    (stripped unless ``"strip": false``), then ``convert``; a body it cannot read raises
    ContentParseError naming ``kind`` and ``how`` (template-language.md "Content parsers")."""

    def make(args: dict) -> ContentParser:
        prepare = make_text(args)

        def parse(text: str) -> Any:
            try:
                return convert(prepare(text))
            except (ValueError, TypeError, AttributeError) as exc:
                raise _error(kind, how, text, exc) from exc

        return parse

    return make


make = scalar_make("int", int, "as an integer")


def grammar(args: dict) -> str:
    """A Lark rule body for an int body (docs/formats.md: ``Format.grammar``)."""
    return _stripped(args, r"[-+]?\d(?:_?\d)*")


FORMAT = Format("int", False, no_problems, plan, make, grammar=grammar, never_string="an int")
