"""Content formats: one module per format, each exporting one :class:`~respc.runtime.formats.base.Format`,
registered in one table, :data:`FORMATS` (docs/formats.md; template-language.md "Content parsers").

Adding a format: write ``runtime/formats/<name>.py`` exporting ``FORMAT`` and add it to the tuple below;
validation, emission, the streaming core and the OpenAI adapter read it from here.
"""

from __future__ import annotations

from typing import Any

from . import bool_, float_, int_, json_, kv_lines, pythonic, text, xml_inline, xml_tree
from .base import Format, Plan, Problems

__all__ = ["FORMATS", "Format", "Plan", "FORMAT_NAMES", "STREAMABLE", "content_args_problems", "plan_of"]

#: Every content format, in documentation order (template-language.md "Content parsers", then the v2 additions).
FORMATS: dict[str, Format] = {
    module.FORMAT.name: module.FORMAT
    for module in (text, int_, float_, bool_, json_, xml_inline, kv_lines, pythonic, xml_tree)
}

#: Every format name, in :data:`FORMATS` order.
FORMAT_NAMES: tuple[str, ...] = tuple(FORMATS)

#: Formats whose region chunks are part of the final value (``dirty=False``, events.md "The events").
STREAMABLE: frozenset[str] = frozenset(name for name, f in FORMATS.items() if not f.dirty)


def content_args_problems(name: str, args: Any, where: str = "content_args") -> Problems:
    """Every load-time problem of one field's ``content_args`` (template-language.md "Load-time checks"), in
    check order.

    Args:
        name (str): a format name of :data:`FORMATS`.
        args (Any): the ``content_args`` value as written in the template.
        where (str): the key path of ``args`` in the field (``"content_args"``), quoted by the messages.

    Returns:
        list[tuple[str, str]]: ``(arg path, problem)``; the path is relative to ``where`` (``""``: ``where``
        itself), so the key at fault is ``where`` or ``f"{where}.{path}"``. Empty when the arguments are
        usable. ``compiler/validate.py`` raises the first as a TemplateError.
    """
    if not isinstance(args, dict):
        return [("", f"'{where}' must be a dict, got {type(args).__name__}")]
    return FORMATS[name].check(args, where)


def plan_of(field: Any) -> Plan:
    """The compile-time :class:`Plan` of a field (:class:`respc.compiler.ir.Field`), by its format."""
    return FORMATS[field.content].plan(field)
