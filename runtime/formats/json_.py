"""The ``json`` format and its dialects (template-language.md "Content parsers", deviation D6): the whole-body
parser, the incremental reader (``runtime/decoders.py`` :class:`JsonBoundary`), the recover repair, the
load-time checks and the plan."""

from __future__ import annotations

import re

from ..content import _grammar_json, _make_json, _repair_json
from ..decoders import json_boundary
from .base import Format, Plan, Problems, bool_args, call_shape, is_tool_field

#: the call-object keys the adapter streams from (name key, then arguments keys in the order tried)
NAME_KEYS = ("name", "tool_name")
ARG_KEYS = ("arguments", "parameters", "args", "input", "params")
#: characters a ``string_delims`` opener must not start with for its body to convert as it streams: they
#: also start JSON text, so the converter could not tell the two apart character by character
_JSON_START = set('{}[],:"-+.0123456789 \t\r\n') | set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_WORD = re.compile(r"\w")


def accept_chars(args: dict) -> str:
    """Every character ``accept`` may name: JSON value starts, Python literals, delimiter openers."""
    chars = '{["-0123456789tfn'
    if args.get("python_literals") is True:
        chars += "TFN"
    return chars


def check(args: dict, where: str = "content_args") -> Problems:
    """Load-time checks of json's ``content_args`` (template-language.md "Load-time checks")."""
    problems: Problems = []
    if "string_delims" in args:
        delims = args["string_delims"]
        if not isinstance(delims, list) or not all(
            isinstance(pair, list) and len(pair) == 2 and all(isinstance(s, str) and s for s in pair)
            for pair in delims
        ):
            problems.append(("", "json 'string_delims' must be a list of [open, close] pairs of "
                                 "non-empty strings"))
    problems += bool_args(args, ("python_literals",), "json")
    if "accept" in args:
        accept = args["accept"]
        allowed = accept_chars(args)
        if not isinstance(accept, str) or not accept:
            problems.append(("", f"json 'accept' must be a non-empty string of first characters, got {accept!r}"))
        else:
            bad = sorted({c for c in accept if c not in allowed})
            if bad:
                problems.append(("", f"json 'accept' names {bad}, which cannot start a JSON value "
                                     f"(allowed: {allowed!r}; a string_delims opener counts as '\"')"))
    return problems


def stream_pairs(args: dict) -> tuple[tuple[str, str], ...] | None:
    """The ``string_delims`` pairs when a converter can tell each from JSON text by its first character
    (docs/openai.md), else None."""
    try:
        pairs = tuple((str(o), str(c)) for o, c in args.get("string_delims") or [])
    except (TypeError, ValueError):
        return None
    if any(not o or not c or o[0] in _JSON_START or _WORD.match(o[0]) or o[0].isspace() for o, c in pairs):
        return None
    return pairs


def plan(field) -> Plan:
    """Ends itself and may reject its opener; an empty body cannot be read (unless ``allow_non_json``).

    A tool field's arguments stream (:class:`Plan`): plain JSON as written when the call is a call object
    (name under ``name``/``tool_name``, arguments under the keys the transform reads) or the arguments
    object named by an open-delimiter group; a ``[{name: arguments}]`` list (``name-keyed``); the
    ``string_delims``/``unquoted_keys`` dialects converted (arguments object named by a group). Python
    literals and ``allow_non_json`` go at the close.
    """
    args = field.content_args
    lax = bool(args.get("allow_non_json"))
    base = {"ends_itself": True, "can_reject": True, "empty_none": not lax}
    shape = call_shape(field) if is_tool_field(field) and not lax and not args.get("python_literals") else None
    if shape is None:
        return Plan("json", **base)
    dialect = bool(args.get("string_delims")) or bool(args.get("unquoted_keys"))
    by_group = (shape.name is not None and shape.name[0] == "group" and shape.arguments == ("body",)
                and not shape.each)
    if dialect:
        if by_group and stream_pairs(args) is not None:
            return Plan("json", **base, arguments="dialect-json", call="args", name_group=shape.name[1])
        return Plan("json", **base)
    if by_group:
        return Plan("json", **base, arguments="json", call="args", name_group=shape.name[1])
    if shape.name is not None and shape.name[0] == "key" and shape.arguments is not None \
            and shape.arguments[0] == "keys":
        keys = shape.arguments[1]
        if shape.name[1] in NAME_KEYS:
            found = tuple(k for k in ARG_KEYS[:2] if k in keys)
            if found:
                return Plan("json", **base, arguments="json", call="object", name_key=shape.name[1], arg_keys=found)
        other = [k for k in ARG_KEYS[2:] if k in keys]
        if shape.name[1] == "name" and other:
            return Plan("json", **base, arguments="json", call="object", name_key="name", arg_keys=(other[0],))
    if shape.name == ("$key",) and shape.arguments == ("$value",) and shape.each:
        return Plan("json", **base, arguments="name-keyed", call="object", name_key="name", arg_keys=("arguments",))
    return Plan("json", **base)


FORMAT = Format("json", True, check, plan, _make_json, reader=json_boundary, ends_itself=True, can_reject=True,
                repair=_repair_json, grammar=_grammar_json)
