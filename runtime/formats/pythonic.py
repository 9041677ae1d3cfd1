"""The ``pythonic`` format (template language v2): a list of Python calls, ``[f(a=1), g()]``
(``runtime/pythonic.py``; template-language.md "Content parsers")."""

from __future__ import annotations

from ..content import _grammar_pythonic, _make_pythonic
from ..decoders import pythonic_boundary
from .base import Format, Plan, Problems, bool_args, call_shape, is_tool_field


def check(args: dict, where: str = "content_args") -> Problems:
    """Load-time checks of pythonic's ``content_args``."""
    problems: Problems = []
    suffix = args.get("strip_suffix")
    if "strip_suffix" in args and not (isinstance(suffix, str) and suffix):
        problems.append(("", f"pythonic 'strip_suffix' must be a non-empty string, got {suffix!r}"))
    return problems + bool_args(args, ("allow_bare", "json_literals"), "pythonic")


def plan(field) -> Plan:
    """Ends itself and may reject its opener. A tool field whose transform keeps the reader's calls
    (``{content.name}``/``{content.arguments}`` per element, or no transform) converts them to JSON as they
    are written."""
    base = {"ends_itself": True, "can_reject": True, "empty_none": True}
    if is_tool_field(field):
        shape = call_shape(field)
        keeps = field.transform is None or (shape is not None and shape.each and shape.name == ("key", "name")
                                            and shape.arguments == ("keys", ("arguments",)))
        if keeps:
            return Plan("pythonic", **base, arguments="pythonic", call="object", name_key="name",
                        arg_keys=("arguments",))
    return Plan("pythonic", **base)


FORMAT = Format("pythonic", True, check, plan, _make_pythonic, reader=pythonic_boundary, ends_itself=True,
                can_reject=True, grammar=_grammar_pythonic, since=2)
