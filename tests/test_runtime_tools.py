"""Unit tests for respc.runtime.tools (docs/template-language.md "Tool-argument typing"): tool
schemas, get_json_schema and tool-argument typing, plus differential checks against the
transformers reference.
"""

from __future__ import annotations

import enum
import json
import math
from typing import Any, Literal, Optional, Union

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from respc.runtime.errors import RespcError
from respc.runtime.tools import (
    DocstringParsingException,
    ToolSpecError,
    ToolTypes,
    TypeHintParsingException,
    coerce_tool_calls,
    compile_tool_types,
    get_json_schema,
    tool_parameters,
)


def call(name, **arguments):
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


def typed(schema_by_param, tool="t"):
    return compile_tool_types({tool: schema_by_param})


def coerce_one(raw, schema):
    value = call("t", p=raw)
    return coerce_tool_calls(value, typed({"p": schema}))["function"]["arguments"]["p"]


# --- tool_parameters ------------------------------------------------------------------------------

def test_tool_parameters_accepts_wrapped_and_bare_schemas():
    tools = [
        {"type": "function", "function": {"name": "a", "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}}}},
        {"name": "b", "parameters": {"properties": {"y": {"type": "string"}}}},
    ]
    assert tool_parameters(tools) == {"a": {"x": {"type": "integer"}}, "b": {"y": {"type": "string"}}}


def test_tool_parameters_without_parameters_or_properties():
    tools = [{"name": "no_params"}, {"name": "null_params", "parameters": None},
             {"name": "no_props", "parameters": {"type": "object"}}]
    assert tool_parameters(tools) == {"no_params": {}, "null_params": {}, "no_props": {}}


_SHAPE = ('a tool is {"type": "function", "function": {"name": str, "parameters": {"type": "object", '
          '"properties": {...}}}}, a bare {"name": str, "parameters": {...}}, or a Python function')


@pytest.mark.parametrize("tools,message", [
    ("notalist", "tools must be a list of tools, not str 'notalist'; each tool is {"),
    ({"name": "f"}, "tools must be a list of tools, not dict {'name': 'f'}; each tool is {"),
    ([1, "x"], "tools[0] is int 1; " + _SHAPE),
    ([{"name": "ok"}, "x"], "tools[1] is str 'x'; " + _SHAPE),
    ([None], "tools[0] is NoneType None; " + _SHAPE),
    ([{"foo": 1}], "tools[0] has no string 'name' (keys: 'foo'); " + _SHAPE),
    ([{}], "tools[0] has no string 'name' (an empty dict); " + _SHAPE),
    ([{"function": "nope"}], "tools[0]['function'] is str, not a dict; " + _SHAPE),
    ([{"function": {"name": 5}}], "tools[0] has no string 'name' (its 'name' is int); " + _SHAPE),
    ([{"name": "bad_params", "parameters": []}], "tools[0] (tool 'bad_params'): 'parameters' is list; it must "
                                                 'be a JSON schema object like {"type": "object", "properties": {...}}'),
    ([{"name": "bad_props", "parameters": {"properties": "x"}}],
     "tools[0] (tool 'bad_props'): 'parameters.properties' is str; it must map each parameter name to its JSON schema"),
    ([len], "tools[0] is builtin_function_or_method <built-in function len>; " + _SHAPE),
], ids=["str", "bare-dict", "int-item", "second-item", "none-item", "no-name", "empty-dict", "function-str",
        "name-int", "parameters-list", "properties-str", "builtin"])
def test_tool_parameters_refuses_wrong_shapes(tools, message):
    """The reference skips these silently; respc names the item and the expected shape (issue 13)."""
    with pytest.raises(ToolSpecError) as info:
        tool_parameters(tools)
    assert str(info.value).startswith(message)
    assert isinstance(info.value, TypeError) and isinstance(info.value, RespcError)


def test_wrong_tools_reach_the_caller_of_a_generated_parser():
    import respc

    for tools in ("notalist", [1, "x"], [{"foo": 1}], {"name": "f"}):
        with pytest.raises(ToolSpecError):
            respc.parse_response("hi", "qwen3", prefix="", tools=tools)
    # None and [] mean no tools
    assert respc.parse_response("hi", "qwen3", prefix="", tools=[]) == {"role": "assistant", "content": "hi"}


def test_tool_parameters_none_and_empty():
    assert tool_parameters(None) == {}
    assert tool_parameters([]) == {}


def test_tool_parameters_later_tool_of_same_name_wins():
    tools = [{"name": "a", "parameters": {"properties": {"x": {}}}}, {"name": "a", "parameters": {"properties": {"y": {}}}}]
    assert tool_parameters(tools) == {"a": {"y": {}}}


def set_alarm(hour: int, enabled: bool, label: Optional[str] = None):
    """Set an alarm.

    Args:
        hour: Hour of day.
        enabled: Whether it rings.
        label: A label.
    """


def test_tool_parameters_from_function():
    assert tool_parameters([set_alarm]) == {"set_alarm": {
        "hour": {"type": "integer", "description": "Hour of day."},
        "enabled": {"type": "boolean", "description": "Whether it rings."},
        "label": {"type": "string", "nullable": True, "description": "A label."},
    }}


def test_tool_parameters_from_bound_method():
    class Clock:
        def tick(self, n: int):
            """Tick.

            Args:
                n: times
            """

    assert tool_parameters([Clock().tick]) == {"tick": {"n": {"type": "integer", "description": "times"}}}


def test_function_without_docstring_says_what_the_docstring_needs():
    def get_weather(city: str):
        pass

    with pytest.raises(DocstringParsingException) as info:
        tool_parameters([{"name": "ok"}, get_weather])
    assert str(info.value) == (
        "tools[1]: Cannot generate JSON schema for get_weather because it has no docstring! A function used as "
        "a tool needs a Google-style docstring: a description of what it does, then an 'Args:' section with one "
        "indented 'name: description' line per argument (or pass a JSON-schema dict instead of the function).")

    def get_time(zone: str):
        """The time."""

    with pytest.raises(DocstringParsingException, match=r"^tools\[0\]: .* no description for the argument "
                                                        r"'zone'\. A function used as a tool needs a Google-style"):
        tool_parameters([get_time])


# --- get_json_schema: literal expected schemas ----------------------------------------------------

def test_get_json_schema_basic():
    def multiply(x: float, y: float = 2.0) -> float:
        """
        Multiply two numbers.

        Args:
            x: The first number.
            y: The second number,
                which defaults to two.

        Returns:
            The product.
        """

    assert get_json_schema(multiply) == {"type": "function", "function": {
        "name": "multiply",
        "description": "Multiply two numbers.",
        "parameters": {
            "type": "object",
            "properties": {
                "x": {"type": "number", "description": "The first number."},
                "y": {"type": "number", "description": "The second number, which defaults to two."},
            },
            "required": ["x"],
        },
        "return": {"type": "number", "description": "The product."},
    }}


class Mode(enum.Enum):
    FAST = "fast"
    LEVEL = 2


def test_get_json_schema_type_mapping():
    def f(a: list[int], b: dict[str, bool], c: tuple[int, str], d: Union[int, str], e: int | None,
          f: Literal["x", 1], g: Any, h: Mode, i: list[int] | None, j: Optional[Any], k: list):
        """F.

        Args:
            a: a
            b: b
            c: c
            d: d
            e: e
            f: f
            g: g
            h: h
            i: i
            j: j
            k: k
        """

    props = get_json_schema(f)["function"]["parameters"]["properties"]
    assert props == {
        "a": {"type": "array", "items": {"type": "integer"}, "description": "a"},
        "b": {"type": "object", "additionalProperties": {"type": "boolean"}, "description": "b"},
        "c": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "description": "c"},
        "d": {"type": ["integer", "string"], "description": "d"},
        "e": {"type": "integer", "nullable": True, "description": "e"},
        "f": {"type": ["string", "integer"], "enum": ["x", 1], "description": "f"},
        "g": {"description": "g"},
        "h": {"type": ["string", "integer"], "enum": ["fast", 2], "description": "h"},
        "i": {"type": "array", "items": {"type": "integer"}, "nullable": True, "description": "i"},
        "j": {"nullable": True, "description": "j"},
        "k": {"type": "array", "description": "k"},
    }


def test_get_json_schema_complex_union_uses_any_of():
    def f(x: Union[list[str], int, None]):
        """F.

        Args:
            x: x
        """

    assert get_json_schema(f)["function"]["parameters"]["properties"]["x"] == {
        "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "integer"}],
        "nullable": True, "description": "x"}


def test_get_json_schema_choices_become_enum():
    def pick(drink: str):
        """Pick.

        Args:
            drink: What to drink (choices: ["tea ", "coffee"])
        """

    assert get_json_schema(pick)["function"]["parameters"]["properties"]["drink"] == {
        "type": "string", "enum": ["tea", "coffee"], "description": "What to drink"}


def test_get_json_schema_ignores_receiver_and_raises_section():
    class K:
        def m(self, q: str) -> None:
            """Method.

            Args:
                q: query
            Raises:
                ValueError: never
            """

    assert get_json_schema(K().m)["function"] == {
        "name": "m", "description": "Method.",
        "parameters": {"type": "object", "properties": {"q": {"type": "string", "description": "query"}}, "required": ["q"]},
        "return": {"type": "null"},
    }


def test_get_json_schema_unconvertible_return_is_dropped():
    def f(x: int) -> object:
        """F.

        Args:
            x: x
        """

    assert "return" not in get_json_schema(f)["function"]


def test_get_json_schema_no_docstring():
    def f(x: int):
        pass

    with pytest.raises(DocstringParsingException, match="no docstring") as info:
        get_json_schema(f)
    assert isinstance(info.value, ValueError)


def test_get_json_schema_missing_hint():
    def f(x):
        """F.

        Args:
            x: x
        """

    with pytest.raises(TypeHintParsingException, match="Argument x is missing a type hint in function f") as info:
        get_json_schema(f)
    assert isinstance(info.value, TypeError)


def test_get_json_schema_missing_description():
    def f(x: int, y: int):
        """F.

        Args:
            x: x
        """

    with pytest.raises(DocstringParsingException, match="no description for the argument 'y'"):
        get_json_schema(f)


@pytest.mark.parametrize("hint", [object, tuple[int], tuple[int, ...]])
def test_get_json_schema_unsupported_hints(hint):
    def f(x):
        """F.

        Args:
            x: x
        """

    f.__annotations__ = {"x": hint}
    with pytest.raises(TypeHintParsingException):
        get_json_schema(f)


# --- typing rules (docs/template-language.md "Tool-argument typing") ------------------------------

@pytest.mark.parametrize("raw,expected", [("7", 7), (" 7 ", 7), ("3.0", 3), ("1e2", 100), ("007", 7), ("-2", -2)])
def test_integer(raw, expected):
    got = coerce_one(raw, {"type": "integer"})
    assert got == expected and type(got) is int


@pytest.mark.parametrize("raw", ["3.5", "x", "", "inf", "nan", "true"])
def test_integer_failure_keeps_string(raw):
    assert coerce_one(raw, {"type": "integer"}) == raw


@pytest.mark.parametrize("raw,expected", [("1.5", 1.5), ("2", 2), ("2.0", 2.0), ("1e3", 1000), ("-0.25", -0.25)])
def test_number(raw, expected):
    got = coerce_one(raw, {"type": "number"})
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize("raw", ["nan", "inf", "-Infinity", "1e400", "abc"])
def test_number_rejects_non_finite(raw):
    assert coerce_one(raw, {"type": "number"}) == raw


@pytest.mark.parametrize("raw,expected", [("true", True), (" TRUE ", True), ("1", True), ("False", False), ("0", False)])
def test_boolean(raw, expected):
    assert coerce_one(raw, {"type": "boolean"}) is expected


def test_boolean_failure_keeps_string():
    assert coerce_one("yes", {"type": "boolean"}) == "yes"


@pytest.mark.parametrize("raw", ["null", "None", " null "])
def test_null(raw):
    assert coerce_one(raw, {"type": "null"}) is None


def test_null_rejects_other_text():
    assert coerce_one("nil", {"type": "null"}) == "nil"


def test_object_and_array():
    assert coerce_one('{"a": 1}', {"type": "object"}) == {"a": 1}
    assert coerce_one("[1, 2]", {"type": "array"}) == [1, 2]
    assert coerce_one("[1, 2]", {"type": "object"}) == "[1, 2]"
    assert coerce_one('{"a": 1}', {"type": "array"}) == '{"a": 1}'
    assert coerce_one("{bad", {"type": "object"}) == "{bad"


def test_string_type_never_converts():
    assert coerce_one("7", {"type": "string"}) == "7"


def test_first_type_that_succeeds_wins():
    assert coerce_one("7", {"type": ["string", "integer"]}) == 7  # string is not a conversion
    assert coerce_one("1", {"type": ["boolean", "integer"]}) is True
    assert coerce_one("1", {"type": ["integer", "boolean"]}) == 1
    assert coerce_one("x", {"type": ["integer", "boolean"]}) == "x"


def test_any_of_one_of_and_nullable():
    assert coerce_one("null", {"anyOf": [{"type": "integer"}, {"type": "null"}]}) is None
    assert coerce_one("5", {"oneOf": [{"type": "boolean"}, {"anyOf": [{"type": "integer"}]}]}) == 5
    assert coerce_one("None", {"type": "integer", "nullable": True}) is None
    assert coerce_one('{"a": 1}', {"type": "string", "anyOf": [{"type": "object"}]}) == {"a": 1}


def test_compile_tool_types_tuples():
    compiled = compile_tool_types({
        "t": {"a": {"type": ["integer", 5, "null"]}, "b": {"description": "untyped"}, "c": {"anyOf": [{"type": "number"}], "nullable": True}},
        "empty": {},
        "untyped": {"x": {}},
    })
    assert isinstance(compiled, ToolTypes)
    assert compiled == {"t": {"a": ("integer", "null"), "c": ("number", "null")}}


def test_nullable_does_not_duplicate_null():
    assert compile_tool_types({"t": {"p": {"type": ["null", "integer"], "nullable": True}}}) == {"t": {"p": ("null", "integer")}}


def test_list_under_non_array_typed_element_wise():
    value = call("t", p=["7", "x", 9, "8"])
    assert coerce_tool_calls(value, typed({"p": {"type": "integer"}}))["function"]["arguments"]["p"] == [7, "x", 9, 8]


def test_list_under_array_left_alone():
    value = call("t", p=["7"])
    assert coerce_tool_calls(value, typed({"p": {"type": "array"}}))["function"]["arguments"]["p"] == ["7"]


def test_non_string_arguments_untouched():
    value = call("t", p=7.5, q={"x": "1"})
    assert coerce_tool_calls(value, typed({"p": {"type": "integer"}, "q": {"type": "integer"}}))["function"]["arguments"] == {
        "p": 7.5, "q": {"x": "1"}}


def test_unknown_tool_and_parameter_untouched():
    types = typed({"p": {"type": "integer"}})
    assert coerce_tool_calls(call("other", p="1"), types) == call("other", p="1")
    assert coerce_tool_calls(call("t", q="1"), types) == call("t", q="1")


@pytest.mark.parametrize("value", [
    "text", 5, None, {"a": 1}, {"function": "f"},
    {"function": {"name": ["t"], "arguments": {"p": "1"}}},
    {"function": {"name": "t", "arguments": '{"p": "1"}'}},
])
def test_non_tool_calls_returned_unchanged(value):
    before = json.dumps(value)
    assert coerce_tool_calls(value, typed({"p": {"type": "integer"}})) is value
    assert json.dumps(value) == before


def test_dict_mutated_in_place_and_list_rebuilt():
    types = typed({"p": {"type": "integer"}})
    single = call("t", p="1")
    assert coerce_tool_calls(single, types) is single and single["function"]["arguments"]["p"] == 1
    calls = [call("t", p="2"), [call("t", p="3")], "x"]
    out = coerce_tool_calls(calls, types)
    assert out is not calls and out[0] is calls[0]
    assert out == [call("t", p=2), [call("t", p=3)], "x"]


def test_raw_tool_parameters_accepted_too():
    params = tool_parameters([set_alarm])
    value = call("set_alarm", hour="7", enabled="true", label="null")
    assert coerce_tool_calls(value, params) == call("set_alarm", hour=7, enabled=True, label=None)


def test_extra_keys_of_tool_call_preserved():
    value = {"id": "c1", "type": "function", "function": {"name": "t", "arguments": {"p": "4"}, "extra": 1}}
    assert coerce_tool_calls(value, typed({"p": {"type": "number"}})) == {
        "id": "c1", "type": "function", "function": {"name": "t", "arguments": {"p": 4}, "extra": 1}}


# --- differential against the transformers reference --------------------------------------------

@pytest.fixture(scope="module")
def ref_rp():
    return pytest.importorskip("transformers.utils.chat_parsing.response_parser")


@pytest.fixture(scope="module")
def ref_schema():
    return pytest.importorskip("transformers.utils.chat_template_utils").get_json_schema


def _reference_coercer(ref_rp, tools):
    parser = ref_rp.ResponseParser({"start_anchor": "x", "fields": {"content": {}}}, prefix="", tools=tools)
    return parser


def _norm(value):
    """Make NaN comparable and keep int/float/bool distinct."""
    return json.dumps(value, sort_keys=True, default=repr, allow_nan=True).replace("NaN", "nan"), repr(value)


type_names = st.sampled_from(["integer", "number", "boolean", "null", "object", "array", "string", "weird"])
schemas = st.recursive(
    st.one_of(
        st.builds(lambda t: {"type": t}, type_names),
        st.builds(lambda ts: {"type": ts}, st.lists(type_names | st.integers(), max_size=3)),
        st.just({}), st.just("not a schema"),
    ),
    lambda inner: st.one_of(
        st.builds(lambda ms: {"anyOf": ms}, st.lists(inner, max_size=3)),
        st.builds(lambda ms: {"oneOf": ms, "nullable": True}, st.lists(inner, max_size=2)),
        st.builds(lambda s: {**s, "nullable": True} if isinstance(s, dict) else s, inner),
    ),
    max_leaves=5,
)
raw_args = st.one_of(
    st.sampled_from(["7", "3.0", "3.5", "1e3", "1e400", "nan", "inf", "-0", "007", " true ", "FALSE", "1", "0",
                     "null", "None", "[1]", '{"a": 1}', "[", "", "1_000", "0x10", " 5 "]),
    st.text(max_size=6),
    st.integers(), st.none(),
    st.lists(st.sampled_from(["1", "x", "2.5", "true"]) | st.integers(), max_size=3),
)


@settings(max_examples=500, deadline=None)
@given(schema=schemas, raw=raw_args, tool_name=st.sampled_from(["t", "other"]), wrap=st.booleans())
def test_differential_coerce(ref_rp, schema, raw, tool_name, wrap):
    tools = [{"type": "function", "function": {"name": "t", "parameters": {"properties": {"p": schema}}}}]
    make = lambda: [call(tool_name, p=raw, q="1")] if wrap else call(tool_name, p=raw, q="1")  # noqa: E731
    expected = _reference_coercer(ref_rp, tools)._coerce_tool_calls(make())
    got = coerce_tool_calls(make(), compile_tool_types(tool_parameters(tools)))
    assert _norm(got) == _norm(expected)


@settings(max_examples=300, deadline=None)
@given(schema=schemas)
def test_differential_schema_types(ref_rp, schema):
    compiled = compile_tool_types({"t": {"p": schema}})
    assert compiled.get("t", {}).get("p", ()) == ref_rp._schema_types(schema)


@settings(max_examples=300, deadline=None)
@given(raw=raw_args.filter(lambda r: isinstance(r, str)), types=st.lists(type_names, max_size=4))
def test_differential_convert(ref_rp, raw, types):
    from respc.runtime.tools import _convert

    got, expected = _convert(raw, tuple(types)), ref_rp._coerce(raw, tuple(types))
    if isinstance(expected, float) and math.isnan(expected):
        assert isinstance(got, float) and math.isnan(got)
    else:
        assert (type(got), got) == (type(expected), expected)


def test_differential_tool_parameters(ref_rp):
    # well-formed tools only: where the reference skips a malformed one, respc raises ToolSpecError
    tools = [
        set_alarm, {"name": "bare", "parameters": {"properties": {"x": {"type": "integer"}}}},
        {"type": "function", "function": {"name": "wrapped", "parameters": None}},
        {"name": "no_props", "parameters": {"type": "object"}},
    ]
    assert tool_parameters(tools) == _reference_coercer(ref_rp, tools)._tool_params


class _Kind(enum.Enum):
    A = "a"
    B = 2
    C = None


def _schema_samples():
    def f1(x: int, y: float = 1.0) -> str:
        """Add things.

        Longer text.

        Args:
            x: The x value.
            y: The y value
                continued on the next line.

        Returns:
            The sum as text.
        """

    def f2(a: list[int], b: dict[str, float], c: tuple[int, str], d: Optional[int] = None):
        """Desc

        Args:
            a: A list
            b: A dict
            c: A tuple
            d: Maybe int
        """

    def f3(a: Union[int, str], b: int | None, c: list[str] | None, d: Literal["x", "y", 3], e: Any, f: _Kind):
        """Multi union.

        Args:
            a: int or str
            b: nullable int
            c: list or nothing
            d: literal
            e: anything
            f: enum
        """

    def f4(mode: str, level: int = 2):
        """Pick a mode.

        Args:
            mode: The mode (choices: ["fast", "slow "])
            level: Level (CHOICES: [1, 2, 3])
        """

    def f5(x: int):
        """No args section."""

    def f6(x):
        """Doc

        Args:
            x: X
        """

    def f7(x: "int", *args: str, **kw: int) -> None:
        """Doc

        Args:
            x: X
                y: a deeper line that looks like an argument
            args: positional
            kw: keywords
        Raises:
            ValueError: sometimes
        """

    def f8(x: bool, y: list, z: dict, w: tuple, v: None) -> _Kind:
        """Summary Returns: inline marker.

        Args:
            x: b
            y: l
            z: d
            w: t
            v: n

        Returns:
            A kind.
        """

    class K:
        def m(self, q: float) -> int:
            """Method.

            Args:
                q: Q value
            """

        @classmethod
        def c(cls, q: str):
            """Class method.

            Args:
                q: Q
            """

    def f9(a: Union[list[int], str, None], b: Optional[Any], c: int | float | bool):
        """Doc.
        Args:
            a: complex union
            b: any
            c: numbers
        """

    def f10(a: tuple[int, ...]):
        """D

        Args:
            a: x
        """

    def f11(a: Literal[1.5, True, None], b: dict, c: list[list[str]], d: dict[str, list[int | str]]):
        """  Odd   indentation.
Args:
    a: lit
    b: bare dict
    c: nested
    d: nested dict
        """

    def f12(x: int, y: int):
        """Missing y.

        Args:
            x: only x
        """

    def f13(first_arg: str, second: int = 0) -> list[str]:
        """Two paragraphs
        of description.

        Args:
            first_arg:
                Description on the next line.

            second: Second.
        Returns:
            Items, which may span
            lines.
        """

    return [f1, f2, f3, f4, f5, f6, f7, f8, K().m, K.c, f9, f10, f11, f12, f13]


@pytest.mark.parametrize("func", _schema_samples(), ids=lambda f: f.__qualname__.split(".")[-1])
def test_differential_get_json_schema(ref_schema, func):
    try:
        expected = ("ok", json.dumps(ref_schema(func)))
    except Exception as exc:  # noqa: BLE001 - only whether it fails is compared
        expected = ("error", type(exc).__name__)
    try:
        got = ("ok", json.dumps(get_json_schema(func)))  # json.dumps: key order must match too
    except (DocstringParsingException, TypeHintParsingException) as exc:
        got = ("error", type(exc).__name__)
    assert got == expected
