"""Unit tests for respc.runtime.transforms (docs/template-language.md "Transforms", deviations D4 and
D5), plus a differential
check of apply_transform / field processing against the transformers reference.
"""

from __future__ import annotations

import types

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from respc.runtime import ContentParseError, PlaceholderError, RespcError, UnknownPlaceholderError
from respc.runtime.transforms import (
    PLACEHOLDER,
    PLACEHOLDER_V2,
    apply_transform,
    compile_transform,
    make_field_processor,
    placeholder_errors,
    placeholder_roots,
    transform_errors,
)

TOOL_CALL = {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}}


# --- PLACEHOLDER / load-time helpers ------------------------------------------------------------

@pytest.mark.parametrize("text,root", [("{content}", "content"), ("{a.b.c}", "a.b.c"), ("{_x1}", "_x1")])
def test_placeholder_fullmatch(text, root):
    assert PLACEHOLDER.fullmatch(text).group(1) == root


@pytest.mark.parametrize("text", ["{a.}", "{.a}", "{a b}", "{}", "content", "{a}{b}"])
def test_not_a_placeholder(text):
    assert PLACEHOLDER.fullmatch(text) is None


def test_placeholder_errors_finds_mixed_strings_depth_first():
    transform = {"a": "name: {content}", "b": ["{ok}", "x{y}z", {"c": "{p.q} tail"}], "d": "{fine}", "e": 3}
    assert placeholder_errors(transform) == ["'name: {content}'", "'x{y}z'", "'{p.q} tail'"]


def test_placeholder_errors_empty_for_valid_transforms():
    assert placeholder_errors(TOOL_CALL) == []
    assert placeholder_errors("{content}") == []
    assert placeholder_errors(["literal {not placeholder", None, 1.5]) == []


def test_placeholder_errors_ignores_dict_keys():
    assert placeholder_errors({"{x} y": "{x}"}) == []


def test_placeholder_roots_first_seen_order_without_duplicates():
    transform = {"f": {"name": "{name}", "args": "{content.args}"}, "id": "{id}", "again": ["{name}", "{content}"]}
    assert placeholder_roots(transform) == ["name", "content", "id"]


def test_placeholder_roots_skips_literals_and_mixed():
    assert placeholder_roots({"a": "x {y}", "b": "plain", "c": 1}) == []
    assert placeholder_roots("{only}") == ["only"]


# --- apply_transform -----------------------------------------------------------------------------

def test_whole_string_placeholder_preserves_type():
    scope = {"content": {"x": [1, 2]}, "n": 5, "flag": False, "none": None}
    assert apply_transform({"a": "{content}", "b": "{n}", "c": "{flag}", "d": "{none}"}, scope) == {
        "a": {"x": [1, 2]}, "b": 5, "c": False, "d": None}


def test_top_level_placeholder_string():
    assert apply_transform("{content}", {"content": [1]}) == [1]


def test_literals_and_scalars_kept():
    assert apply_transform({"type": "function", "n": 1, "f": 2.5, "z": None, "t": True, "s": "x {y}"}, {}) == {
        "type": "function", "n": 1, "f": 2.5, "z": None, "t": True, "s": "x {y}"}


def test_nested_lists_and_dicts_substituted():
    assert apply_transform([{"a": ["{v}", "lit"]}, "{v}"], {"v": "V"}) == [{"a": ["V", "lit"]}, "V"]


def test_dotted_path_indexes_dicts():
    scope = {"content": {"name": "f", "args": {"x": {"y": 1}}}}
    assert apply_transform({"n": "{content.name}", "y": "{content.args.x.y}"}, scope) == {"n": "f", "y": 1}


def test_missing_root_is_key_error_listing_available():
    with pytest.raises(KeyError, match=r"transform placeholder '\{missing\}' is not defined. Available: \['a', 'b'\]"):
        apply_transform({"x": "{missing}"}, {"b": 1, "a": 2})


def test_missing_key_is_value_error():
    with pytest.raises(ContentParseError, match="missing key 'args'") as info:
        apply_transform("{content.args}", {"content": {"name": "n"}})
    assert isinstance(info.value, ValueError)
    assert "Available: ['name']" in str(info.value)


@pytest.mark.parametrize("value,type_name", [("n", "str"), ([1], "list"), (None, "NoneType"), (3, "int")])
def test_indexing_into_non_dict_is_value_error(value, type_name):
    with pytest.raises(ValueError, match=f"cannot index into {type_name} at 'x'"):
        apply_transform("{content.x}", {"content": value})


def test_result_never_aliases_template():
    template = {"a": {"b": [1, {"c": 2}]}, "d": []}
    out = apply_transform(template, {})
    assert out == template
    out["a"]["b"][1]["c"] = 99
    out["d"].append(1)
    assert template == {"a": {"b": [1, {"c": 2}]}, "d": []}


def test_substituted_value_is_the_scope_object():
    content = {"k": 1}
    assert apply_transform({"x": "{content}"}, {"content": content})["x"] is content


def test_compile_transform_reusable():
    build = compile_transform(TOOL_CALL)
    assert build({"name": "a", "content": {}}) == {"type": "function", "function": {"name": "a", "arguments": {}}}
    assert build({"name": "b", "content": {"x": 1}})["function"] == {"name": "b", "arguments": {"x": 1}}


# --- make_field_processor ------------------------------------------------------------------------

def test_processor_without_transform_returns_parsed_value():
    process = make_field_processor("n", "int", {}, None, False, ())
    assert process(" 7 ", {}) == 7


def test_processor_transform_with_content_and_open_group():
    process = make_field_processor("tool_calls", "json", {}, TOOL_CALL, False, ("name",))
    assert process('{"x": 1}', {"name": "f"}) == {"type": "function", "function": {"name": "f", "arguments": {"x": 1}}}


def test_processor_content_overrides_a_group_named_content():
    process = make_field_processor("f", "text", {}, "{content}", False, ("content",))
    assert process(" body ", {"content": "group"}) == "body"


def test_processor_builds_its_content_parser_on_first_use(monkeypatch):
    """Building a processor (what a module's import does per field) compiles no tag_pattern; the
    first body, and the first errors="recover" repair, build the parser from the arguments as
    they were when the processor was made."""
    import regex as regex_module

    seen: list[str] = []
    compile_ = regex_module.compile
    monkeypatch.setattr(regex_module, "compile", lambda p, *a, **k: seen.append(p) or compile_(p, *a, **k))
    args = {"tag_pattern": r"<p=(?P<key>\w+)>(?P<value>.*?)</p>"}
    process = make_field_processor("call", "xml-inline", args, None, False, ())
    assert seen == [] and process.repair_on_success is True
    args["tag_pattern"] = "changed"
    assert process("<p=a>1</p><p=b>2</p>", {}) == {"a": "1", "b": "2"}
    assert seen == [r"<p=(?P<key>\w+)>(?P<value>.*?)</p>"]
    assert process.repair("<p=a>1<p=b>2</p>", {}) == ({"a": "1", "b": "2"}, [
        "missing '</p>' added before the next '<p='"])


def test_D4_close_group_in_scope():
    # The caller merges open and close groupdicts; a close group reaches the transform.
    process = make_field_processor("content", "text", {}, {"text": "{content}", "why": "{why}"}, False, ("why",))
    assert process("hi", {"why": "STOP"}) == {"text": "hi", "why": "STOP"}


def test_D4_open_and_close_groups_together():
    process = make_field_processor("c", "text", {}, ["{a}", "{b}"], False, ("a", "b"))
    assert process("", {"a": "open", "b": "close"}) == ["open", "close"]


def test_D5_unmatched_group_is_none():
    process = make_field_processor("c", "text", {}, {"id": "{id}", "text": "{content}"}, False, ("id",))
    assert process("hi", {"id": None}) == {"id": None, "text": "hi"}
    assert process("hi", {}) == {"id": None, "text": "hi"}


def test_D5_undeclared_name_still_key_error():
    process = make_field_processor("c", "text", {}, {"id": "{other}"}, False, ("id",))
    with pytest.raises(KeyError, match="other"):
        process("hi", {})


def test_transform_each_applies_per_element_with_groups():
    transform = {"type": "function", "function": {"name": "{tool_name}", "arguments": "{parameters}", "by": "{who}"}}
    process = make_field_processor("tool_calls", "json", {}, transform, True, ("who",))
    body = '[{"tool_name": "a", "parameters": {"x": 1}}, {"tool_name": "b", "parameters": {}}]'
    assert process(body, {"who": "me"}) == [
        {"type": "function", "function": {"name": "a", "arguments": {"x": 1}, "by": "me"}},
        {"type": "function", "function": {"name": "b", "arguments": {}, "by": "me"}},
    ]


def test_transform_each_element_keys_override_groups_and_no_content():
    process = make_field_processor("t", "json", {}, {"v": "{v}"}, True, ("v",))
    assert process('[{"v": 1}, {}]', {"v": "group"}) == [{"v": 1}, {"v": "group"}]
    process = make_field_processor("t", "json", {}, "{content}", True, ())
    with pytest.raises(KeyError):
        process("[{}]", {})


def test_transform_each_empty_list():
    process = make_field_processor("t", "json", {}, {"v": "{v}"}, True, ())
    assert process("[]", {}) == []


def test_transform_each_non_list_is_value_error_naming_field():
    process = make_field_processor("tool_calls", "json", {}, {"v": "{v}"}, True, ())
    with pytest.raises(ContentParseError, match="Field 'tool_calls': transform_each requires the parsed content to be a list, got dict"):
        process('{"v": 1}', {})


def test_transform_each_non_dict_element_is_value_error():
    process = make_field_processor("tool_calls", "json", {}, {"v": "{v}"}, True, ())
    with pytest.raises(ValueError, match="each list element to be a dict, got int"):
        process('[{"v": 1}, 2]', {})


def test_processor_parse_error_names_field():
    process = make_field_processor("v", "json", {}, None, False, ())
    with pytest.raises(ContentParseError, match="Field 'v': json parser could not parse region as JSON"):
        process("nope", {})


def test_processor_dotted_error_names_field():
    process = make_field_processor("x", "json", {}, {"a": "{content.args}"}, False, ())
    with pytest.raises(ContentParseError, match="Field 'x': .*missing key 'args'"):
        process('{"name": "n"}', {})


def test_processor_results_are_independent():
    process = make_field_processor("x", "text", {}, {"list": [], "v": "{content}"}, False, ())
    first = process("a", {})
    first["list"].append(1)
    assert process("b", {}) == {"list": [], "v": "b"}


# --- differential against the transformers reference --------------------------------------------

@pytest.fixture(scope="module")
def ref():
    return pytest.importorskip("transformers.utils.chat_parsing.content_parsers")


names = st.sampled_from(["content", "name", "a", "b"])
paths = st.lists(names, min_size=1, max_size=3).map(lambda p: "{" + ".".join(p) + "}")
transforms = st.recursive(
    st.none() | st.integers() | st.sampled_from(["lit", "x {a}"]) | paths,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["k", "l", "m"]), inner, max_size=3),
    max_leaves=6,
)
scope_values = st.recursive(
    st.none() | st.integers() | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(names, inner, max_size=3),
    max_leaves=6,
)


def _outcome(fn):
    # (a transform's value or exception class, not a parse: unrelated to support.feed_outcome)
    try:
        return ("ok", fn())
    except KeyError:
        return ("KeyError",)
    except ValueError:
        return ("ValueError",)


@settings(max_examples=400, deadline=None)
@given(transform=transforms, scope=st.dictionaries(names, scope_values, max_size=4))
def test_differential_apply_transform(ref, transform, scope):
    assert _outcome(lambda: apply_transform(transform, scope)) == _outcome(
        lambda: ref._apply_transform(transform, scope))


@settings(max_examples=200, deadline=None)
@given(transform=transforms, each=st.booleans(), body=st.sampled_from(
    ['{"a": 1}', '[{"a": {"b": 2}}, {"name": "x"}]', "[]", "[1]", '"s"', '[{"content": 0}]']),
    captures=st.dictionaries(st.sampled_from(["name", "b"]), st.text(max_size=2), max_size=2))
def test_differential_field_processing(ref, transform, each, body, captures):
    field = types.SimpleNamespace(name="f", content="json", content_args={}, transform=transform, transform_each=each)
    process = make_field_processor("f", "json", {}, transform, each, tuple(captures))
    assert _outcome(lambda: process(body, captures)) == _outcome(lambda: ref.process_field(body, field, captures))


# --- PlaceholderError (issue 7: no bare KeyError from transforms) ------------------------------

def test_unknown_root_is_placeholder_error_and_key_error():
    with pytest.raises(UnknownPlaceholderError) as info:
        apply_transform({"x": "{nmae}"}, {"name": "f"})
    error = info.value
    assert isinstance(error, PlaceholderError) and isinstance(error, ContentParseError)
    assert isinstance(error, KeyError) and isinstance(error, ValueError) and isinstance(error, RespcError)
    # printed as given, not quoted like a KeyError's key
    assert str(error) == "transform placeholder '{nmae}' is not defined. Available: ['name']"


@pytest.mark.parametrize("transform, scope, text", [
    ("{content.args}", {"content": {"name": "n"}},
     "transform placeholder '{content.args}' is missing key 'args'. Available: ['name']"),
    ("{content.x}", {"content": [1]}, "transform placeholder '{content.x}' cannot index into list at 'x'"),
])
def test_key_errors_are_placeholder_errors_not_key_errors(transform, scope, text):
    with pytest.raises(PlaceholderError) as info:
        apply_transform(transform, scope)
    assert not isinstance(info.value, KeyError)
    assert str(info.value) == text


def test_processor_keeps_placeholder_error_class_and_names_field():
    process = make_field_processor("calls", "json", {}, {"a": "{content.args}"}, False, ())
    with pytest.raises(PlaceholderError) as info:
        process('{"name": "n"}', {})
    assert str(info.value) == "Field 'calls': transform placeholder '{content.args}' is missing key 'args'. " \
                              "Available: ['name']"
    process = make_field_processor("calls", "json", {}, {"a": "{missing}"}, False, ())
    with pytest.raises(UnknownPlaceholderError) as info:
        process("{}", {})
    assert isinstance(info.value, KeyError)
    assert str(info.value) == "Field 'calls': transform placeholder '{missing}' is not defined. Available: ['content']"


def test_placeholder_errors_exported_from_runtime():
    import respc.runtime as rt
    assert rt.PlaceholderError is PlaceholderError and rt.UnknownPlaceholderError is UnknownPlaceholderError
    assert {"PlaceholderError", "UnknownPlaceholderError", "transform_errors", "PLACEHOLDER_V2"} <= set(rt.__all__)


# --- v2 transforms: $first, $key, $value ---------------------------------------------------------

CALL_FIRST = {"name": "{content.name}", "arguments": {"$first": ["{content.parameters}", "{content.arguments}", {}]}}


@pytest.mark.parametrize("content, arguments", [
    ({"name": "f"}, {}),
    ({"name": "f", "arguments": {"a": 1}}, {"a": 1}),
    ({"name": "f", "parameters": {"p": 2}, "arguments": {"a": 1}}, {"p": 2}),
    ({"name": "f", "parameters": None, "arguments": {"a": 1}}, {"a": 1}),  # None does not resolve
])
def test_first_takes_first_resolving_alternative(content, arguments):
    assert apply_transform(CALL_FIRST, {"content": content}, v2=True) == {"name": "f", "arguments": arguments}


def test_first_default_is_fresh_each_time():
    build = compile_transform(CALL_FIRST, v2=True)
    first = build({"content": {"name": "f"}})
    first["arguments"]["x"] = 1
    assert build({"content": {"name": "g"}}) == {"name": "g", "arguments": {}}


def test_first_alternative_resolves_only_when_all_its_placeholders_do():
    transform = {"$first": [{"n": "{content.name}", "a": "{content.args}"}, {"n": "{content.name}"}]}
    assert apply_transform(transform, {"content": {"name": "f"}}, v2=True) == {"n": "f"}
    assert apply_transform(transform, {"content": {"name": "f", "args": 1}}, v2=True) == {"n": "f", "a": 1}


def test_first_null_literal_default_and_nested_first():
    transform = {"$first": ["{a}", {"$first": ["{b}", None]}, "unused"]}
    assert apply_transform(transform, {"a": None, "b": None}, v2=True) is None
    assert apply_transform(transform, {"a": None, "b": "B"}, v2=True) == "B"
    assert apply_transform(transform, {"a": "A", "b": "B"}, v2=True) == "A"


def test_first_without_resolving_alternative_lists_reasons():
    with pytest.raises(PlaceholderError) as info:
        apply_transform({"$first": ["{content.p}", "{other}"]}, {"content": {}}, v2=True)
    assert not isinstance(info.value, KeyError)
    assert str(info.value) == ("no alternative of '$first' resolved: transform placeholder '{content.p}' is "
                               "missing key 'p'. Available: []; transform placeholder '{other}' is not "
                               "defined. Available: ['content']")


def test_first_and_dollar_segments_are_literals_in_v1():
    assert apply_transform({"$first": ["{a}", {}]}, {"a": None}) == {"$first": [None, {}]}
    assert apply_transform("{content.$key}", {"content": {"a": 1}}) == "{content.$key}"


def test_key_and_value_with_transform_each():
    process = make_field_processor("tool_calls", "json", {}, {"name": "{content.$key}", "arguments": "{content.$value}"},
                                   True, (), v2=True)
    assert process('[{"get_weather": {"city": "Paris"}}, {"run": {}}]', {}) == [
        {"name": "get_weather", "arguments": {"city": "Paris"}},
        {"name": "run", "arguments": {}},
    ]


def test_value_segment_can_be_indexed_further():
    assert apply_transform("{content.$value.city}", {"content": {"get_weather": {"city": "Paris"}}}, v2=True) == "Paris"


@pytest.mark.parametrize("content, got", [
    ({"a": 1, "b": 2}, "a dict with 2 keys ['a', 'b']"),
    ({}, "a dict with 0 keys []"),
    ([1], "list"),
])
def test_key_needs_one_key_dict(content, got):
    with pytest.raises(PlaceholderError) as info:
        apply_transform({"n": "{content.$key}"}, {"content": content}, v2=True)
    assert str(info.value) == f"transform placeholder '{{content.$key}}': '$key' needs a dict with exactly one key, got {got}"


def test_transform_each_v2_binds_content_to_element_after_its_keys():
    process = make_field_processor("t", "json", {}, {"c": "{content}", "v": "{v}"}, True, ("v",), v2=True)
    assert process('[{"v": 1}, {"content": 5}]', {"v": "g"}) == [
        {"c": {"v": 1}, "v": 1}, {"c": {"content": 5}, "v": "g"}]
    v1 = make_field_processor("t", "json", {}, {"c": "{content}"}, True, ())
    assert v1('[{"content": 5}]', {}) == [{"c": 5}]


def test_v2_placeholder_pattern_and_mixing():
    assert PLACEHOLDER_V2.fullmatch("{content.$key}").group(1) == "content.$key"
    assert PLACEHOLDER_V2.fullmatch("{content.$value.a}").group(1) == "content.$value.a"
    assert PLACEHOLDER.fullmatch("{content.$key}") is None
    assert placeholder_errors({"a": "x {content.$key}"}, v2=True) == ["'x {content.$key}'"]
    assert placeholder_errors({"a": "x {content.$key}"}) == []
    assert placeholder_roots({"$first": ["{content.p}", "{name}", {}]}, v2=True) == ["content", "name"]


def test_transform_errors():
    assert transform_errors({"$first": 1, "$frist": []}) == []  # v1: literal dicts
    assert transform_errors(CALL_FIRST, v2=True) == []
    assert transform_errors({"a": {"$first": []}}, v2=True) == [
        "'$first' needs a non-empty list of alternatives (e.g. [\"{content.parameters}\", \"{content.arguments}\", "
        "{}]), got []"]
    assert transform_errors({"$first": ["{a}", {}], "b": 1}, v2=True) == [
        "'$first' must be the only key of its dict, found ['$first', 'b']"]
    assert transform_errors({"$frist": ["{a}"]}, v2=True) == [
        "unknown transform operator '$frist' (the only one is '$first'; in a version 2 template a dict key "
        "starting with '$' is an operator)"]
    assert transform_errors(["{content.$kye}", "{$key}", "{content.$key.x}", "{not a placeholder}"], v2=True) == [
        "'{content.$kye}' is not a valid placeholder: a name, then '.key', '.$key' or '.$value' segments, "
        "e.g. \"{content.$value}\"",
        "'{$key}' is not a valid placeholder: a name, then '.key', '.$key' or '.$value' segments, "
        "e.g. \"{content.$value}\"",
        "'{content.$key.x}': nothing can follow '$key' (the key is a string)",
    ]


# --- the direct builder of make_field_processor (issue 14) ----------------------------------------

DIRECT_TRANSFORMS = [
    {"type": "function", "function": "{content}"},
    TOOL_CALL,
    {"a": ["{content.x}", 1, None, "lit", 2.5, True], "b": "{content.x.y}", "c": {"d": "{name}"}},
    "{content}",
    "{content.x}",
    "literal",
    ["{name}", "{content}"],
    {"n": "{other}"},
    {"$first": ["{content.x}", "lit"]},  # a literal dict in v1, the operator in v2 (not direct)
    {"k": "{content.$key}"},  # a literal string in v1, a segment in v2 (not direct)
    # $first over content paths and literals: direct in v2 (issue 33), json tool calls' form first
    {"type": "function", "function": {"name": "{content.name}",
                                      "arguments": {"$first": ["{content.parameters}", "{content.arguments}", {}]}}},
    {"$first": ["{content.x.y}", "{content.x}", "lit"]},
    {"$first": ["{content}", {"a": [1, "s"]}]},
    {"$first": ["{content.x}"]},  # no default: nothing resolves on most bodies
    {"$first": ["{content.x}", "{name}"]},  # a root other than content: not direct
]
DIRECT_BODIES = ['{"x": {"y": 1}}', "[1, 2]", '"s"', '{"x": 2}', "{}", "null", '{"x": {"z": 1}}', "oops",
                 '{"x": null}', '{"x": {"y": null}}', '{"name": "f", "parameters": {"a": 1}}',
                 '{"name": "f", "arguments": {"b": 2}}', '{"name": "f", "parameters": null, "arguments": "x"}']
DIRECT_CAPTURES = [{}, {"name": "f"}, {"other": 3}, {"name": None, "content": "shadowed"}]


DIRECT_BODIES_EACH = ['[{"x": {"y": 1}, "name": "g"}, {"content": 5}]', "[]", '[{"x": 2}, 3]', '{"x": 2}', "[{}]"]


def _general(transform, body, captures, v2, each):
    """What field processing gives without any shortcut: json.loads, then apply_transform on
    the scope docs/template-language.md "Transforms" describes (declared groups None, captures, then content; with
    transform_each: the element's keys, then in v2 content bound to the element)."""
    import json

    scope = dict.fromkeys(("name",))
    scope.update(captures)
    try:
        value = json.loads(body)
    except ValueError:
        return ContentParseError, "json parser could not parse region as JSON."
    if each and not isinstance(value, list):
        return ContentParseError, "transform_each requires the parsed content to be a list, " \
            f"got {type(value).__name__}."
    try:
        if not each:
            return "value", apply_transform(transform, {**scope, "content": value}, v2=v2)
        out = []
        for item in value:
            if not isinstance(item, dict):
                return ContentParseError, "transform_each requires each list element to be a dict, " \
                    f"got {type(item).__name__}."
            out.append(apply_transform(transform, {**scope, **item, **({"content": item} if v2 else {})}, v2=v2))
        return "value", out
    except (ValueError, KeyError) as exc:
        return type(exc), str(exc)


@pytest.mark.parametrize("each", [False, True])
@pytest.mark.parametrize("v2", [False, True])
@pytest.mark.parametrize("transform", DIRECT_TRANSFORMS, ids=repr)
def test_direct_builder_equals_apply_transform(transform, v2, each):
    process = make_field_processor("tool_calls", "json", {}, transform, each, ("name",), v2=v2)
    bodies = DIRECT_BODIES_EACH if each else DIRECT_BODIES
    for body in bodies:
        for captures in DIRECT_CAPTURES:
            kind, expected = _general(transform, body, captures, v2, each)
            if kind == "value":
                got = process(body, captures)
                assert got == expected, (body, captures)
                again = process(body, captures)
                if isinstance(got, (dict, list)):
                    assert got is not again  # built fresh at every close
                continue
            with pytest.raises(Exception) as info:
                process(body, captures)
            assert type(info.value) is kind, (body, captures)
            message = str(info.value)
            if kind is ContentParseError:
                assert message.splitlines()[0] == "Field 'tool_calls': " + expected
            else:
                assert message == "Field 'tool_calls': " + expected


def test_direct_builder_keeps_key_order_and_scope_objects():
    from respc.runtime.transforms import _direct

    assert _direct(TOOL_CALL, frozenset({"name"}), True) is not None  # the shortcut is what runs
    assert _direct(TOOL_CALL, frozenset(), True, True) is not None
    assert _direct({"$first": ["{name}", {}]}, frozenset({"name"}), True) is None  # not a content path
    assert _direct({"$first": ["{content.parameters}", {}]}, frozenset(), True) is not None  # issue 33
    process = make_field_processor("tool_calls", "json", {}, TOOL_CALL, False, ("name",), v2=True)
    got = process('{"city": "Paris"}', {"name": "get_weather"})
    assert list(got) == ["type", "function"] and list(got["function"]) == ["name", "arguments"]
    assert got == {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    assert process("[]", {}) == {"type": "function", "function": {"name": None, "arguments": []}}
