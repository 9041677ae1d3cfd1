"""Tool-argument typing (template-language.md "Tool-argument typing") and the tool schemas it reads.

Theory of operation
-------------------
When a parser is given ``tools``, every value a region closes with is checked for tool calls
(``{"function": {"name": str, "arguments": dict}}``, or a list of them); each **string** argument
is converted according to the JSON-schema type its tool declares for that parameter.

Three steps, the first two once per parser:

1. :func:`tool_parameters` turns the ``tools`` argument (JSON-schema dicts, bare
   ``{"name", "parameters"}`` dicts, or Python functions/methods via :func:`get_json_schema`)
   into ``tool name -> parameters.properties``; an item of another shape is a
   :class:`ToolSpecError` naming it (the reference skips it silently).
2. :func:`compile_tool_types` turns that into ``tool name -> parameter -> type names`` (a
   :class:`ToolTypes`), reading ``type`` (a string or a list), ``anyOf``/``oneOf`` members
   (recursively) and ``nullable``. Parameters without any type are dropped.
3. :func:`coerce_tool_calls` is called per region close with the compiled table. For
   convenience it also accepts the raw ``tool_parameters`` dict (compiled on the fly).

Conversion tries the declared types in order; the first that succeeds wins and a string that no
type accepts stays as it is (``string`` itself never converts). ``integer``: ``int()``, or a
float-written whole number (``"3.0"``). ``number``: ``float()``, NaN and infinities rejected, an
integer-valued number written without ``.`` stays an ``int``. ``boolean``: ``true/1/false/0`` in
any case. ``null``: ``null``/``None``. ``object``/``array``: JSON text decoding to that type. A
list under a parameter whose types lack ``array`` (what ``merge_duplicates`` builds) is converted
element by element.

As in the reference, the ``arguments`` dicts are converted in place and a tool-call dict is
returned as the same object, while a list of tool calls is returned as a new list.
"""

from __future__ import annotations

import enum
import inspect
import json
import re
import sys
import types as _types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from .errors import ContentParseError, RespcError

__all__ = [
    "is_function_name",
    "ToolTypes",
    "ToolSpecError",
    "DocstringParsingException",
    "TypeHintParsingException",
    "tool_parameters",
    "compile_tool_types",
    "coerce_tool_calls",
    "check_tool_call_names",
    "get_json_schema",
]


# --------------------------------------------------------------------------------------------
# Tool schemas.


class ToolSpecError(RespcError, TypeError):
    """The ``tools`` argument is not in a shape respc reads (events.md "The parser object"; template-language.md
    "Tool-argument typing"): not a list, or an item that is neither a tool dict nor a Python function. The message
    names the item and the expected shape. (The reference skips such items silently; respc says so instead.)"""


_TOOL_SHAPE = ('{"type": "function", "function": {"name": str, "parameters": {"type": "object", '
               '"properties": {...}}}}, a bare {"name": str, "parameters": {...}}, or a Python function')


def _tool_spec(tool: Any, index: int) -> tuple[str, dict]:
    """One ``tools`` item -> (name, properties); :class:`ToolSpecError` when it has another shape."""
    where = f"tools[{index}]"
    if not isinstance(tool, dict):
        raise ToolSpecError(f"{where} is {type(tool).__name__} {repr(tool)[:60]}; a tool is {_TOOL_SHAPE}")
    spec = tool.get("function", tool)
    if not isinstance(spec, dict):
        raise ToolSpecError(f"{where}['function'] is {type(spec).__name__}, not a dict; a tool is {_TOOL_SHAPE}")
    name = spec.get("name")
    if not isinstance(name, str):
        has = (f"its 'name' is {type(name).__name__}" if "name" in spec
               else f"keys: {', '.join(map(repr, spec))}" if spec else "an empty dict")
        raise ToolSpecError(f"{where} has no string 'name' ({has}); a tool is {_TOOL_SHAPE}")
    parameters = spec.get("parameters")
    if parameters is None:
        return name, {}
    if not isinstance(parameters, dict):
        raise ToolSpecError(f"{where} (tool {name!r}): 'parameters' is {type(parameters).__name__}; "
                            "it must be a JSON schema object like {\"type\": \"object\", \"properties\": {...}}")
    properties = parameters.get("properties")
    if properties is None:
        return name, {}
    if not isinstance(properties, dict):
        raise ToolSpecError(f"{where} (tool {name!r}): 'parameters.properties' is {type(properties).__name__}; "
                            "it must map each parameter name to its JSON schema")
    found = _Properties(properties)
    found.root = parameters
    return name, found


class _Properties(dict):
    """A tool's ``parameters.properties``, with ``root``: the ``parameters`` schema its ``$ref``
    pointers resolve against."""

    root: dict


def tool_parameters(tools: list | None) -> dict[str, dict]:
    """Map each tool name to its ``parameters.properties`` (events.md "The parser object"; template-language.md
    "Tool-argument typing").

    Args:
        tools (list | tuple | None): entries of the form ``{"type": "function", "function":
            {...}}``, a bare ``{"name": ..., "parameters": {...}}``, or a Python function or
            method (turned into a schema with :func:`get_json_schema`).

    Returns:
        dict[str, dict]: tool name -> properties dict (``{}`` when the tool has no
        ``parameters`` or no ``properties``). A later tool of the same name wins.

    Raises:
        ToolSpecError: (a ``TypeError``) ``tools`` is not a list, or an item is neither a dict
            nor a function/method, a dict has no string ``name``, or its ``parameters`` /
            ``properties`` are not dicts. The reference skips these silently; respc does not.
        DocstringParsingException, TypeHintParsingException: a function cannot be converted
            (the message says what its docstring or hints need).
    """
    if tools is None:
        return {}
    if not isinstance(tools, (list, tuple)):
        raise ToolSpecError(f"tools must be a list of tools, not {type(tools).__name__} {repr(tools)[:60]}; "
                            f"each tool is {_TOOL_SHAPE}")
    params: dict[str, dict] = {}
    for index, tool in enumerate(tools):
        if inspect.isfunction(tool) or inspect.ismethod(tool):
            try:
                tool = get_json_schema(tool)
            except (DocstringParsingException, TypeHintParsingException) as exc:
                raise type(exc)(f"tools[{index}]: {exc}") from None
        name, properties = _tool_spec(tool, index)
        params[name] = properties
    return params


#: how many levels below a parameter typing follows a value (nested objects and arrays); deeper
#: values keep what the content parser gave (docs/template-language.md, "Tool-argument typing")
MAX_TYPING_DEPTH = 64
#: how many ``$ref`` hops one schema may take before it counts as unresolvable
_MAX_REF_HOPS = 32


def _resolve(schema: Any, root: Any) -> Any:
    """``schema`` with its ``$ref`` followed (a local JSON pointer ``#/...`` into ``root``, the
    tool's ``parameters``); a reference that does not resolve, or a chain longer than
    ``_MAX_REF_HOPS``, gives ``{}`` (no type)."""
    hops = 0
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
        ref = schema["$ref"]
        hops += 1
        if hops > _MAX_REF_HOPS or not (ref == "#" or ref.startswith("#/")):
            return {}
        target = root
        for part in ref[2:].split("/") if ref != "#" else ():
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(target, dict) and part in target:
                target = target[part]
            elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
                target = target[int(part)]
            else:
                return {}
        schema = target
    return schema


def _schema_types(schema: Any, root: Any = None, hops: int = 0) -> tuple[str, ...]:
    """The JSON-schema type names a parameter schema admits, in declaration order: its ``type``,
    then those of its ``anyOf``, ``oneOf`` and ``allOf`` members (``$ref`` followed), then
    ``"null"`` when ``nullable``."""
    schema = _resolve(schema, root)
    if not isinstance(schema, dict) or hops > _MAX_REF_HOPS:
        return ()
    found: list[str] = []
    declared = schema.get("type")
    if isinstance(declared, str):
        found.append(declared)
    elif isinstance(declared, list):
        found.extend(name for name in declared if isinstance(name, str))
    for key in ("anyOf", "oneOf", "allOf"):
        members = schema.get(key)
        for member in members if isinstance(members, list) else ():
            found.extend(_schema_types(member, root, hops + 1))
    if schema.get("nullable") and "null" not in found:
        found.append("null")
    return tuple(found)


class SchemaType(tuple):
    """The type names one schema admits (the tuple itself, as :func:`_schema_types` lists them),
    with what typing needs below it: ``properties`` (key -> :class:`SchemaType` of an object's
    members, from every object member of ``anyOf``/``oneOf``/``allOf``, the first schema of a key
    winning), ``extra`` (``additionalProperties`` when it is a schema) and ``items`` (an array's
    element schema). Built by :func:`compile_tool_types`; schemas that refer to themselves
    (``$ref``) give a cyclic graph, never an endless one."""

    properties: "dict[str, SchemaType]"
    extra: "SchemaType | None"
    items: "SchemaType | None"

    @property
    def nested(self) -> bool:
        """Whether anything below this schema is typed."""
        return bool(self.properties) or self.extra is not None or self.items is not None


def _schema_node(schema: Any, root: Any, memo: dict) -> SchemaType:
    """The :class:`SchemaType` of ``schema`` (``$ref`` into ``root`` followed), shared through
    ``memo`` (id of a resolved schema -> its node) so a recursive schema is compiled once."""
    schema = _resolve(schema, root)
    if not isinstance(schema, dict):
        schema = {}
    node = memo.get(id(schema))
    if node is not None:
        return node
    node = SchemaType(_schema_types(schema, root))
    node.properties, node.extra, node.items = {}, None, None
    memo[id(schema)] = node
    memo.setdefault("keep", []).append(schema)  # ids stay valid while the memo lives
    for member in _members(schema, root):
        properties = member.get("properties")
        if isinstance(properties, dict):
            for key, sub in properties.items():
                if key not in node.properties:
                    node.properties[key] = _schema_node(sub, root, memo)
        extra = member.get("additionalProperties")
        if node.extra is None and isinstance(extra, dict) and extra:
            node.extra = _schema_node(extra, root, memo)
        items = member.get("items")
        if node.items is None and isinstance(items, dict) and items:
            node.items = _schema_node(items, root, memo)
    return node


def _members(schema: dict, root: Any, hops: int = 0) -> list[dict]:
    """``schema`` and, recursively, its ``anyOf``/``oneOf``/``allOf`` members (``$ref`` followed)."""
    out = [schema]
    if hops > _MAX_REF_HOPS:
        return out
    for key in ("anyOf", "oneOf", "allOf"):
        members = schema.get(key)
        for member in members if isinstance(members, list) else ():
            member = _resolve(member, root)
            if isinstance(member, dict):
                out.extend(_members(member, root, hops + 1))
    return out


class ToolTypes(dict):
    """``tool name -> {parameter name -> SchemaType}`` (a :class:`SchemaType` is the tuple of
    JSON-schema type names, with the schemas below it).

    Built by :func:`compile_tool_types`; a distinct type so :func:`coerce_tool_calls` can tell it
    from a raw :func:`tool_parameters` result. Only parameters with at least one type (at any
    depth) appear, and only tools with at least one such parameter.
    """


def compile_tool_types(params: Mapping[str, Mapping]) -> ToolTypes:
    """Precompute the types of every tool parameter, once per parser (template-language.md "Tool-argument typing"),
    as deep as the schemas go (docs/template-language.md, "Tool-argument typing").

    Args:
        params (Mapping[str, Mapping]): the result of :func:`tool_parameters` (``$ref`` pointers
            resolve against the tool's ``parameters`` it keeps; a plain mapping of properties
            resolves them against itself).

    Returns:
        ToolTypes: ``{tool: {parameter: SchemaType(("integer", "null", ...))}}``.
    """
    compiled = ToolTypes()
    for name, properties in params.items():
        if not properties:
            continue
        root = getattr(properties, "root", properties)
        memo: dict = {}
        table = {}
        for key, schema in properties.items():
            node = _schema_node(schema, root, memo)
            if node or node.nested:
                table[key] = node
        if table:
            compiled[name] = table
    return compiled


_INF = float("inf")


def _convert(raw: str, type_names: tuple[str, ...]) -> Any:
    """Convert one string argument by the first of ``type_names`` that accepts it."""
    for type_name in type_names:
        if type_name == "integer":
            try:
                return int(raw)
            except ValueError:
                pass
            try:
                number = float(raw)
            except ValueError:
                continue
            if number.is_integer():
                return int(number)
        elif type_name == "number":
            try:
                number = float(raw)
            except ValueError:
                continue
            if number != number or number == _INF or number == -_INF:
                continue
            if number.is_integer() and "." not in raw:
                return int(number)
            return number
        elif type_name == "boolean":
            word = raw.strip().lower()
            if word in ("true", "1"):
                return True
            if word in ("false", "0"):
                return False
        elif type_name == "null":
            if raw.strip() in ("null", "None"):
                return None
        elif type_name == "object" or type_name == "array":
            try:
                decoded = json.loads(raw)
            except (ValueError, RecursionError):
                continue
            if isinstance(decoded, dict if type_name == "object" else list):
                return decoded
    return raw


def _typed(value: Any, node: SchemaType, depth: int) -> Any:
    """``value`` typed by ``node``: a string converted by its type names (:func:`_convert`), then
    an object's members and an array's elements typed by the schemas below, down to
    :data:`MAX_TYPING_DEPTH` levels. Dicts are changed in place; a list is rebuilt."""
    if isinstance(value, str):
        if not node:
            return value
        value = _convert(value, node)
    if depth >= MAX_TYPING_DEPTH or not node.nested and isinstance(value, dict):
        return value
    if isinstance(value, dict):
        properties, extra = node.properties, node.extra
        for key, member in value.items():
            child = properties.get(key, extra)
            if child is not None:
                value[key] = _typed(member, child, depth + 1)
    elif isinstance(value, list):
        if "array" in node or (not node and node.items is not None):
            if node.items is not None:
                return [_typed(item, node.items, depth + 1) for item in value]
        else:
            # a list where the schema wants no array (merge_duplicates collected it): each element
            return [_typed(item, node, depth + 1) for item in value]
    return value


def _coerce(value: Any, tool_types: ToolTypes) -> Any:
    if isinstance(value, list):
        return [_coerce(item, tool_types) for item in value]
    if not isinstance(value, dict):
        return value
    call = value.get("function")
    if not isinstance(call, dict):
        return value
    name, arguments = call.get("name"), call.get("arguments")
    if not isinstance(name, str) or not isinstance(arguments, dict):
        return value
    table = tool_types.get(name)
    if not table:
        return value
    for key, argument in arguments.items():
        node = table.get(key)
        if node is not None:
            arguments[key] = _typed(argument, node, 0)
    return value


def coerce_tool_calls(value: Any, params: Mapping) -> Any:
    """Type the string arguments of the tool calls in a closed region value (template-language.md "Tool-argument
    typing").

    Args:
        value (Any): a region value; tool calls are dicts ``{"function": {"name": str,
            "arguments": dict, ...}, ...}``, possibly in (nested) lists. Anything else is
            returned unchanged.
        params (Mapping): preferably a :class:`ToolTypes` from :func:`compile_tool_types`
            (what generated parsers pass); a raw :func:`tool_parameters` dict is compiled on
            each call.

    Returns:
        Any: ``value`` itself for a dict (its ``arguments`` converted in place), a new list for
        a list, the unchanged value otherwise. Unknown tools and parameters are left alone.
    """
    if not isinstance(params, ToolTypes):
        params = compile_tool_types(params)
    return _coerce(value, params)


#: characters no function name holds: whitespace, markup, quotes, brackets (a name holding them
#: is body text an open pattern took, ``{"name":"get_weather",...}`` as a name)
_NOT_A_NAME = re.compile(r"[\s<>{}\[\]()\"']")


def is_function_name(name: Any) -> bool:
    """Whether ``name`` is a name a parser accepts for a tool call's function: a non-empty ``str``
    without whitespace, markup, quotes or brackets (docs/template-language.md, "Tool calls need a
    name"). A grammar export refuses a tool whose name is not (docs/grammar.md, "Tool names")."""
    return isinstance(name, str) and bool(name) and _NOT_A_NAME.search(name) is None


#: a call's function has no ``arguments`` key (it takes none)
_NO_ARGUMENTS = object()

#: function names already checked (a parse names the same few tools again and again)
_GOOD_NAMES: set = set()


def _good_name(name: str) -> bool:
    """Remember ``name`` (a ``str`` checked to be a function name) for :func:`check_tool_call_names`;
    True. The set is bounded: emptied when it holds 1,024 names."""
    if len(_GOOD_NAMES) >= 1024:
        _GOOD_NAMES.clear()
    _GOOD_NAMES.add(name)
    return True


def check_tool_call_names(value: Any, field: str | None = None) -> None:
    """Refuse a tool call without a function name (docs/template-language.md, "Tool calls need a
    name"), or whose arguments are no object (docs/events.md, "Bodies no parser accounts for, calls
    without a name": never a silent ``{}``).

    A tool call is a dict with a ``"function"`` key (or a list of such dicts); its ``function``
    must be a dict whose ``name`` is a non-empty string without whitespace, quotes, brackets,
    braces, parentheses or angle brackets, and whose ``arguments``, when it has that key, is an
    object (a dict) or a string (arguments written as JSON text): ``null``, a list, a number or a
    bool is refused. Any other value (a region that holds no tool calls) is not looked at.

    Args:
        value (Any): a closed region's value, after its transform.
        field (str | None): the region's field, named in the message.

    Raises:
        ContentParseError: a tool call has no such name; the message quotes what it has.
    """
    cls = value.__class__
    if cls is str:
        return  # no tool call (the answer text of most regions)
    calls = (value,) if cls is dict else value if isinstance(value, list) else (value,)
    for call in calls:
        if not isinstance(call, dict) or "function" not in call:
            continue
        function = call["function"]
        name = function.get("name") if isinstance(function, dict) else None
        if (name.__class__ is str and name in _GOOD_NAMES) or (
                isinstance(name, str) and name and _NOT_A_NAME.search(name) is None and _good_name(name)):
            arguments = function.get("arguments", _NO_ARGUMENTS)
            if arguments is _NO_ARGUMENTS or isinstance(arguments, (dict, str)):
                continue
            where = f"Field {field!r}: " if field is not None else ""
            raise ContentParseError(f"{where}tool call whose arguments are no object: its 'arguments' is "
                                    f"{type(arguments).__name__} {arguments!r}, not an object of arguments")
        if not isinstance(function, dict):
            why = f"its 'function' is {type(function).__name__} {function!r}, not an object with a name"
        elif "name" not in function:
            why = f"its 'function' has no 'name' (keys {sorted(map(str, function))})"
        elif not isinstance(name, str):
            why = f"its name is {type(name).__name__} {name!r}, not a string"
        else:
            why = f"its name {name!r} is not a function name"
        where = f"Field {field!r}: " if field is not None else ""
        raise ContentParseError(f"{where}tool call without a function name: {why}")


# --------------------------------------------------------------------------------------------
# get_json_schema: a function's Google-style docstring and type hints -> a tool schema.


class DocstringParsingException(RespcError, ValueError):
    """A function given as a tool has no docstring, or no description for an argument."""


class TypeHintParsingException(RespcError, TypeError):
    """A function given as a tool has an argument without a type hint, or one with no JSON
    schema equivalent."""


_JSON_SCALAR_NAMES: dict[type, str] = {
    int: "integer",
    float: "number",
    str: "string",
    bool: "boolean",
    type(None): "null",
}

# Bare types and their schemas; a fresh copy is returned each time since callers add keys.
_BARE_SCHEMAS: dict[Any, dict] = {
    int: {"type": "integer"},
    float: {"type": "number"},
    str: {"type": "string"},
    bool: {"type": "boolean"},
    type(None): {"type": "null"},
    list: {"type": "array"},
    tuple: {"type": "array"},
    dict: {"type": "object"},
    Any: {},
}


def _bare_schema(hint: Any) -> dict | None:
    try:
        known = _BARE_SCHEMAS.get(hint)
    except TypeError:  # unhashable hint
        known = None
    if known is not None:
        return dict(known)
    # transformers maps PIL images and torch tensors when those libraries are installed; a hint
    # can only be one of those classes if the library is already imported, so look there.
    pil_image = sys.modules.get("PIL.Image")
    if pil_image is not None and hint is getattr(pil_image, "Image", None):
        return {"type": "image"}
    torch = sys.modules.get("torch")
    if torch is not None and hint is getattr(torch, "Tensor", None):
        return {"type": "audio"}
    return None


def _enum_schema(values: list) -> dict:
    names = list(dict.fromkeys(_JSON_SCALAR_NAMES[type(v)] for v in values))
    return {"type": names[0] if len(names) == 1 else names, "enum": values}


def _hint_schema(hint: Any) -> dict:
    """The JSON schema of one type hint, as transformers' ``get_json_schema`` writes it."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is None:
        if isinstance(hint, type) and issubclass(hint, enum.Enum):
            values = [member.value for member in hint]
            if not values:
                raise TypeHintParsingException(
                    f"The Enum {hint.__name__} has no members, so no value could match it."
                )
            if any(type(v) not in _JSON_SCALAR_NAMES for v in values):
                raise TypeHintParsingException(
                    f"The Enum {hint.__name__} has member values that are not JSON scalars "
                    f"(int, float, str, bool or None): {values}"
                )
            return _enum_schema(values)
        schema = _bare_schema(hint)
        if schema is None:
            raise TypeHintParsingException(
                f"Cannot convert the type hint {hint!r} to a JSON schema (a custom class?). "
                "Use basic types, Enum, Literal, and list/tuple/dict/Union of those, or pass a "
                "hand-written JSON schema for the tool instead of the function."
            )
        return schema
    if origin is typing.Union or origin is _types.UnionType:
        members = [_hint_schema(a) for a in args if a is not type(None)]
        if len(members) == 1:
            schema = members[0]
        elif all(m.keys() == {"type"} and isinstance(m["type"], str) for m in members):
            names = sorted({m["type"] for m in members})
            schema = {"type": names[0] if len(names) == 1 else names}
        else:
            schema = {"anyOf": members}
        if type(None) in args:
            schema["nullable"] = True
        return schema
    if origin is typing.Literal and args:
        if any(type(a) not in _JSON_SCALAR_NAMES for a in args):
            raise TypeHintParsingException(
                "typing.Literal may only list int, float, str, bool or None values."
            )
        return _enum_schema(list(args))
    if origin is list:
        return {"type": "array", "items": _hint_schema(args[0])} if args else {"type": "array"}
    if origin is tuple:
        if not args:
            return {"type": "array"}
        if len(args) == 1:
            raise TypeHintParsingException(
                f"The type hint {str(hint).replace('typing.', '')} is a one-element tuple; use "
                "list[...] for a variable-length input, or the element type itself."
            )
        if ... in args:
            raise TypeHintParsingException(
                "'...' in a tuple type hint cannot be converted; use list[...] instead."
            )
        return {"type": "array", "prefixItems": [_hint_schema(a) for a in args]}
    if origin is dict:
        schema = {"type": "object"}
        if len(args) == 2:
            schema["additionalProperties"] = _hint_schema(args[1])
        return schema
    raise TypeHintParsingException(f"Cannot convert the type hint {hint!r} to a JSON schema.")


def _parameters_schema(func: Callable, func_name: str) -> dict:
    hints = typing.get_type_hints(func)
    signature = inspect.signature(func)
    params = signature.parameters
    receiver = next(iter(params), None)
    if receiver not in ("self", "cls") or params[receiver].annotation is not inspect.Parameter.empty:
        receiver = None
    required = []
    for name, param in params.items():
        if name == receiver:
            continue
        if param.annotation is inspect.Parameter.empty:
            raise TypeHintParsingException(
                f"Argument {name} is missing a type hint in function {func_name}"
            )
        if param.default is inspect.Parameter.empty:
            required.append(name)
    properties: dict[str, Any] = {}
    for name, hint in hints.items():
        if name == receiver:
            continue
        if name == "return":
            # The model never writes the return value: an unconvertible return hint is dropped.
            try:
                properties[name] = _hint_schema(hint)
            except TypeHintParsingException:
                pass
        else:
            properties[name] = _hint_schema(hint)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


_SECTION_NAMES = ("Args:", "Returns:", "Raises:")
_ARGS_HEADER = re.compile(r"\n\s*Args:\n")
_RETURNS_HEADER = re.compile(r"\n\s*Returns:\n")
_ARG_LINE = re.compile(r"([ \t]*)(\w+):")
_CHOICES = re.compile(r"\(choices:\s*(.*?)\)\s*$", re.IGNORECASE)


def _first_of(text: str, markers: tuple[str, ...]) -> int:
    """Index of the earliest occurrence of any marker in ``text``, or ``len(text)``."""
    found = [i for i in (text.find(m) for m in markers) if i >= 0]
    return min(found) if found else len(text)


def _split_args_block(block: str) -> dict[str, str]:
    """Split an ``Args:`` block into ``{argument: description}``.

    An argument starts at a line ``<indent>name:``; it continues over the following lines until
    one that also looks like ``name:`` and is not indented deeper than the argument's own line.
    Lines before the first argument are ignored; descriptions are joined with single spaces.
    """
    out: dict[str, str] = {}
    name: str | None = None
    indent = ""
    pieces: list[str] = []
    for line in block.split("\n"):
        if not line.strip():
            continue
        m = _ARG_LINE.match(line)
        # A "name:" line indented deeper than the current argument's line continues it.
        deeper = line.startswith(indent) and line[len(indent):len(indent) + 1] in (" ", "\t")
        starts = m is not None and (name is None or not deeper)
        if starts:
            if name is not None:
                out[name] = " ".join(p for p in pieces if p)
            indent, name = m.group(1), m.group(2)
            pieces = [line[m.end():].strip()]
        elif name is not None:
            pieces.append(line.strip())
    if name is not None:
        out[name] = " ".join(p for p in pieces if p)
    return out


def _parse_docstring(doc: str) -> tuple[str, dict[str, str], str | None]:
    """Split a cleaned Google-style docstring into (description, argument docs, returns doc)."""
    description = doc[:_first_of(doc, _SECTION_NAMES)].strip()
    args: dict[str, str] = {}
    header = _ARGS_HEADER.search(doc)
    if header is not None:
        rest = doc[header.end():]
        args = _split_args_block(rest[:_first_of(rest, _SECTION_NAMES[1:])])
    returns = None
    header = _RETURNS_HEADER.search(doc)
    if header is not None:
        rest = doc[header.end():]
        returns = rest[:_first_of(rest, ("Raises:",))].strip()
    return description, args, returns


_DOCSTRING_NEEDS = (
    "A function used as a tool needs a Google-style docstring: a description of what it does, then "
    "an 'Args:' section with one indented 'name: description' line per argument (or pass a JSON-schema "
    "dict instead of the function)."
)


def get_json_schema(func: Callable) -> dict:
    """Build the JSON schema of a function for use as a tool, like transformers does (events.md "The parser object").

    The description comes from the docstring before ``Args:``/``Returns:``/``Raises:``; every
    argument needs a description in the ``Args:`` block (``name: text``, continued on deeper
    indented lines), optionally ending in ``(choices: [json list])`` which becomes an ``enum``;
    a ``Returns:`` block describes the return hint. ``self``/``cls`` without a hint are skipped.
    Hints map as: ``str``/``int``/``float``/``bool``/``None`` -> ``string``/``integer``/
    ``number``/``boolean``/``null``; ``list[X]`` -> ``array`` with ``items``; ``tuple[X, Y]`` ->
    ``array`` with ``prefixItems``; ``dict[str, X]`` -> ``object`` with
    ``additionalProperties``; ``Literal``/``Enum`` -> ``enum``; ``Any`` -> ``{}``; unions of
    plain types -> a sorted ``type`` list, other unions -> ``anyOf``; ``None`` in a union ->
    ``"nullable": true``.

    Args:
        func (Callable): a function or method with type hints and a Google-style docstring.

    Returns:
        dict: ``{"type": "function", "function": {"name", "description", "parameters":
        {"type": "object", "properties": {...}, "required": [...]}, ["return": {...}]}}``.

    Raises:
        DocstringParsingException: (a ``ValueError``) no docstring, or an argument without a
            description.
        TypeHintParsingException: (a ``TypeError``) an argument without a type hint, or a hint
            with no JSON-schema form.
        json.JSONDecodeError: a ``(choices: ...)`` list is not JSON.
    """
    doc = inspect.getdoc(func)
    func_name = getattr(func, "__name__", "operation")
    if not doc:
        raise DocstringParsingException(
            f"Cannot generate JSON schema for {func_name} because it has no docstring! {_DOCSTRING_NEEDS}"
        )
    description, arg_docs, returns_doc = _parse_docstring(doc.strip())
    parameters = _parameters_schema(func, func_name)
    returns = parameters["properties"].pop("return", None)
    if returns is not None and returns_doc is not None:
        returns["description"] = returns_doc
    for name, schema in parameters["properties"].items():
        if name not in arg_docs:
            raise DocstringParsingException(
                f"Cannot generate JSON schema for {func_name} because the docstring has no "
                f"description for the argument '{name}'. {_DOCSTRING_NEEDS}"
            )
        text = arg_docs[name]
        choices = _CHOICES.search(text)
        if choices is not None:
            schema["enum"] = [c.strip() if isinstance(c, str) else c
                              for c in json.loads(choices.group(1))]
            text = text[:choices.start()].strip()
        schema["description"] = text
    function = {"name": func_name, "description": description, "parameters": parameters}
    if returns is not None:
        function["return"] = returns
    return {"type": "function", "function": function}
