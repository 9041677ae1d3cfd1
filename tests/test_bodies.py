"""Issue 24 items 3 and 5: bodies that parse to nothing, tool calls without a name, schema typing
below the top level.

Rules (docs/template-language.md, "D7", "D8" and "Tool-argument typing"; docs/events.md,
"Bodies no parser accounts for"):

- D7: text an ``xml-inline`` or ``kv-lines`` body parser did not account for (anything but
  whitespace between or around the tag matches, closing tags after the last one; a non-blank line
  without ``kv_sep``) makes the body malformed: strict raises ContentParseError naming the field
  and the offset in the body; recover ends the region with ``region_malformed``, its text kept, and
  makes no call. Never a silent ``{}``.
- D8: a tool call whose function has no string name is malformed, in the message and in the
  OpenAI stream alike.
- Tool-argument typing follows the schema into objects, arrays, ``anyOf``/``oneOf``/``allOf`` and
  ``$ref`` (at most ``MAX_TYPING_DEPTH`` levels).

Every repro runs exactly as the issue writes it, whole, one character at a time and in random pieces.
"""

from __future__ import annotations

import json

import pytest

import respc
from respc.openai import ChatCompletionStream
from respc.runtime import ContentParseError
from respc.runtime.tools import MAX_TYPING_DEPTH, coerce_tool_calls, compile_tool_types, tool_parameters
from support import chunkings, generated, run_stream, tool_call

HOWS = ("whole", "chars", "random")
POOLSIDE = "<assistant>"
NS = "]<]minimax[>["
MINIMAX_M3 = "]~b]ai\n"


def _parse(name, prefix, text, how, errors, tools=None):
    """(message, region_malformed events, diagnostics) of ``text`` fed as ``how`` says."""
    module = generated(name)
    parser = module.ResponseParser(prefix, tools, errors=errors)
    events = list(parser.initial_events)
    for chunk in chunkings(text, text)[how]:
        events += parser.feed(chunk)
    message, final = parser.finalize()
    return message, [e for e in events + final if e["type"] == "region_malformed"], parser.diagnostics


def _strict_error(name, prefix, text, how, tools=None):
    with pytest.raises(ContentParseError) as caught:
        _parse(name, prefix, text, how, "strict", tools)
    return caught.value


# --- 3a: xml-inline bodies with text no tag accounts for -------------------------------------------
REPRO_JSON = '<tool_call>\n{"name":"get_weather","arguments":{"location":"Paris","days":3}}\n</tool_call>'
REPRO_NAME_JSON = '<tool_call>get_weather\n{"location":"Paris"}\n</tool_call>'


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("errors", ["strict", "recover"])
def test_poolside_reads_a_json_call_inside_tool_call(errors, how):
    """Laguna writes a call as JSON inside <tool_call> too (Ollama's Laguna parser reads both):
    the template now has that form, so the repros are the calls they spell, not a call named by
    the whole JSON with {} (first repro) or get_weather({}) (second)."""
    message, malformed, diagnostics = _parse("poolside", POOLSIDE, REPRO_JSON, how, errors)
    assert message == {"role": "assistant", "tool_calls": [tool_call("get_weather", {"location": "Paris", "days": 3})]}
    assert malformed == [] and diagnostics == []
    message, malformed, diagnostics = _parse("poolside", POOLSIDE, REPRO_NAME_JSON, how, errors)
    assert message == {"role": "assistant", "tool_calls": [tool_call("get_weather", {"location": "Paris"})]}
    assert malformed == [] and diagnostics == []


@pytest.mark.parametrize("how", HOWS)
def test_glm4_5_json_as_the_name_is_no_call(how):
    """The same first repro on glm4_5 (same open pattern, no JSON form): the name the open pattern
    took is the whole JSON, which is no function name (D8)."""
    error = _strict_error("glm4_5", "", REPRO_JSON, how)
    assert str(error) == ("Field 'tool_calls': tool call without a function name: its name "
                          "'{\"name\":\"get_weather\",\"arguments\":{\"location\":\"Paris\",\"days\":3}}' "
                          "is not a function name")
    assert (error.field, error.start, error.end) == ("tool_calls", 0, 89)
    message, malformed, diagnostics = _parse("glm4_5", "", REPRO_JSON, how, "recover")
    assert message == {"role": "assistant", "content": REPRO_JSON}
    assert [(m["field"], m["text"], m["start"], m["end"], m["into"]) for m in malformed] == [
        ("tool_calls", REPRO_JSON, 0, 89, "content")]
    assert diagnostics == [{"kind": "malformed", "field": "tool_calls", "start": 0, "end": 89,
                            "message": "ContentParseError: " + str(error), "text": REPRO_JSON}]


@pytest.mark.parametrize("how", HOWS)
def test_glm4_5_json_body_after_the_name(how):
    """The second repro on glm4_5: strict names the offset of the text no tag accounts for (it was
    get_weather({}) before); recover reads it by the reported json-body repair."""
    error = _strict_error("glm4_5", "", REPRO_NAME_JSON, how)
    assert str(error) == ("Field 'tool_calls': xml-inline: text at offset 1 of the body matches no tag_pattern: "
                          "'{\"location\":\"Paris\"}'.\nContent: '\\n{\"location\":\"Paris\"}\\n'")
    message, malformed, diagnostics = _parse("glm4_5", "", REPRO_NAME_JSON, how, "recover")
    assert message == {"role": "assistant", "tool_calls": [tool_call("get_weather", {"location": "Paris"})]}
    assert malformed == []
    assert diagnostics == [{"kind": "repaired", "field": "tool_calls", "start": 0, "end": 56,
                            "message": "a JSON object as the body instead of tags: read as JSON",
                            "text": REPRO_NAME_JSON}]


@pytest.mark.parametrize("how", HOWS)
def test_text_between_tags_makes_the_body_malformed(how):
    text = "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\nand also days=3\n</tool_call>"
    error = _strict_error("glm4_5", "", text, how)
    detail = ("Field 'tool_calls': xml-inline: text at offset 54 of the body matches no tag_pattern: 'and also days=3'."
              "\nContent: '\\n<arg_key>city</arg_key>\\n<arg_value>Paris</arg_value>\\nand also days=3\\n'")
    assert str(error) == detail
    message, malformed, diagnostics = _parse("glm4_5", "", text, how, "recover")
    assert message == {"role": "assistant", "content": text}
    assert [(m["text"], m["error"], m["into"]) for m in malformed] == [(text, "ContentParseError: " + detail, "content")]
    assert diagnostics == [{"kind": "malformed", "field": "tool_calls", "start": 0, "end": 104,
                            "message": "ContentParseError: " + detail, "text": text}]


@pytest.mark.parametrize("how", HOWS)
def test_closing_tags_after_the_last_parameter_are_accounted_for(how):
    """Qwen3-Coder's body ends with the </function> of the markup the opener began: not text."""
    text = "<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call>"
    message, malformed, diagnostics = _parse("qwen3_coder", "", text, how, "strict")
    assert message == {"role": "assistant", "tool_calls": [tool_call("f", {"a": "1"})]}
    assert malformed == [] and diagnostics == []


KV_TEMPLATE = {"respc_version": 2, "defaults": {"role": "assistant"}, "start_anchor": "<|a|>", "fields": {
    "tool_calls": {"open_pattern": "<call name=(?P<name>\\w+)>", "close": "</call>", "content": "kv-lines",
                   "repeats": True, "role": "tool_calls",
                   "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}}},
    "content": {"repeats": True, "join": ""}}}


@pytest.mark.parametrize("how", HOWS)
def test_kv_lines_line_without_separator_makes_the_body_malformed(how):
    module = respc.compile_template(KV_TEMPLATE)
    text = "Hi<call name=f>\na: 1\n  b = 2\n</call>"
    chunks = chunkings(text, text)[how]
    with pytest.raises(ContentParseError) as caught:
        run_stream(module, "", chunks)
    detail = ("Field 'tool_calls': kv-lines: the line at offset 8 of the body has no ':': 'b = 2'."
              "\nContent: '\\na: 1\\n  b = 2\\n'")
    assert str(caught.value) == detail
    message, events = run_stream(module, "", chunks, None, "recover")
    assert message == {"role": "assistant", "content": "Hi<call name=f>\na: 1\n  b = 2\n</call>"}
    assert [e["error"] for e in events if e["type"] == "region_malformed"] == ["ContentParseError: " + detail]
    # "unmatched": "skip" keeps the reference's reading
    skip = json.loads(json.dumps(KV_TEMPLATE))
    skip["fields"]["tool_calls"]["content_args"] = {"unmatched": "skip"}
    message, _ = run_stream(respc.compile_template(skip), "", chunks)
    assert message == {"role": "assistant", "content": "Hi", "tool_calls": [tool_call("f", {"a": "1"})]}


def test_unmatched_must_be_error_or_skip():
    bad = json.loads(json.dumps(KV_TEMPLATE))
    bad["fields"]["tool_calls"]["content_args"] = {"unmatched": "ignore"}
    with pytest.raises(respc.runtime.TemplateError, match="'unmatched' must be \"error\" or \"skip\", got 'ignore'"):
        respc.compile_template(bad)


# --- 3b: a tool call needs a name --------------------------------------------------------------------
REPRO_NS = '<tool_call>{"ns": {"city": "Paris"}}</tool_call>'
NS_ERROR = "Field 'tool_calls': tool call without a function name: its 'function' has no 'name' (keys ['ns'])"


@pytest.mark.parametrize("how", HOWS)
def test_qwen3_json_object_without_a_name_is_no_call(how):
    error = _strict_error("qwen3", "", REPRO_NS, how)
    assert str(error) == NS_ERROR and (error.start, error.end) == (0, 48)
    message, malformed, diagnostics = _parse("qwen3", "", REPRO_NS, how, "recover")
    assert message == {"role": "assistant", "content": REPRO_NS}
    assert [(m["text"], m["into"]) for m in malformed] == [(REPRO_NS, "content")]
    assert diagnostics == [{"kind": "malformed", "field": "tool_calls", "start": 0, "end": 48,
                            "message": "ContentParseError: " + NS_ERROR, "text": REPRO_NS}]


@pytest.mark.parametrize("how", HOWS)
def test_qwen3_nameless_call_is_not_streamed_in_hold_mode(how):
    """recover_arguments="hold": the stream sends what the message has -- the text as content,
    no tool call with arguments {} that the message lacks, finish reason "stop"."""
    parser = generated("qwen3").ResponseParser("", None, errors="recover")
    stream = ChatCompletionStream(parser, ids=lambda n: f"call_{n}", completion_id="x", created=0)
    out = [c for piece in chunkings(REPRO_NS, REPRO_NS)[how] for c in stream.feed(piece)] + stream.finalize()
    deltas = [c["choices"][0]["delta"] for c in out if c["choices"]]
    assert not any("tool_calls" in d for d in deltas)
    assert "".join(d.get("content") or "" for d in deltas) == REPRO_NS
    assert [c["choices"][0]["finish_reason"] for c in out if c["choices"]][-1] == "stop"
    assert stream.openai_message() == {"role": "assistant", "content": REPRO_NS}
    assert stream.diagnostics == []


@pytest.mark.parametrize("name,why", [
    ([" get"], "its name is list [' get'], not a string"),
    ("", "its name '' is not a function name"),
    ("get weather", "its name 'get weather' is not a function name"),
])
def test_names_that_are_no_function_names(name, why):
    text = "<tool_call>" + json.dumps({"name": name, "arguments": {}}) + "</tool_call>"
    with pytest.raises(ContentParseError, match=f"^Field 'tool_calls': tool call without a function name: {_re(why)}$"):
        run_stream(generated("qwen3"), "", [text])
    message, _ = run_stream(generated("qwen3"), "", [text], None, "recover")
    assert message == {"role": "assistant", "content": text}


def _re(text):
    import re
    return re.escape(text)


def test_dotted_and_namespaced_names_are_names():
    for name in ("functions.get_weather", "server:tool", "a/b-c_1"):
        text = "<tool_call>" + json.dumps({"name": name, "arguments": {}}) + "</tool_call>"
        message, _ = run_stream(generated("qwen3"), "", [text])
        assert message["tool_calls"][0]["function"]["name"] == name


# --- 5: schema typing below the top level -------------------------------------------------------------
def _m3(params):
    return f'{NS}<tool_call>\n{NS}<invoke name="f">{params}{NS}</invoke>\n{NS}</tool_call>'


def _tool(properties, **extra):
    return [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": properties, **extra}}}]


@pytest.mark.parametrize("how", HOWS)
def test_minimax_m3_nested_object_leaf_is_typed(how):
    tools = _tool({"n": {"type": "object", "properties": {"x": {"type": "number"}}}})
    text = _m3(f"{NS}<n>{NS}<x>1.5{NS}</x>{NS}</n>")
    message, malformed, diagnostics = _parse("minimax_m3", MINIMAX_M3, text, how, "strict", tools)
    assert message == {"role": "assistant", "tool_calls": [tool_call("f", {"n": {"x": 1.5}})]}
    assert malformed == [] and diagnostics == []


@pytest.mark.parametrize("how", HOWS)
def test_minimax_m3_array_of_objects_and_one_of(how):
    tools = _tool({
        "items": {"type": "array", "items": {"type": "object", "properties": {"qty": {"type": "integer"},
                                                                             "sku": {"type": "string"}}}},
        "u": {"oneOf": [{"type": "integer"}, {"type": "object", "properties": {"ok": {"type": "boolean"}}}]},
        "v": {"oneOf": [{"type": "integer"}, {"type": "object", "properties": {"ok": {"type": "boolean"}}}]},
    })
    item = f"{NS}<item>{NS}<sku>007{NS}</sku>{NS}<qty>2{NS}</qty>{NS}</item>"
    text = _m3(f"{NS}<items>{item}{item}{NS}</items>{NS}<u>5{NS}</u>{NS}<v>{NS}<ok>true{NS}</ok>{NS}</v>")
    message, _, _ = _parse("minimax_m3", MINIMAX_M3, text, how, "strict", tools)
    assert message["tool_calls"] == [tool_call("f", {"items": [{"sku": "007", "qty": 2}, {"sku": "007", "qty": 2}],
                                                 "u": 5, "v": {"ok": True}})]


def test_ref_any_of_nullable_and_additional_properties():
    tools = _tool({
        "a": {"$ref": "#/$defs/point"},
        "b": {"anyOf": [{"$ref": "#/$defs/point"}, {"type": "null"}]},
        "c": {"type": "object", "nullable": True, "properties": {"x": {"type": "integer"}}},
        "m": {"type": "object", "additionalProperties": {"type": "integer"}},
    }, **{"$defs": {"point": {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "number"}}}}})
    call = tool_call("f", {"a": {"x": "1", "y": "2.5"}, "b": "null", "c": {"x": "3"}, "m": {"p": "4", "q": "x"}})
    coerce_tool_calls(call, compile_tool_types(tool_parameters(tools)))
    assert call["function"]["arguments"] == {"a": {"x": 1, "y": 2.5}, "b": None, "c": {"x": 3}, "m": {"p": 4, "q": "x"}}


def test_recursive_schema_and_depth_limit():
    """A schema that refers to itself compiles once (a cycle); typing stops MAX_TYPING_DEPTH levels
    below the parameter and leaves deeper values as the parser gave them."""
    tools = _tool({"t": {"$ref": "#/$defs/tree"}},
                  **{"$defs": {"tree": {"type": "object", "properties": {"v": {"type": "integer"},
                                                                         "kid": {"$ref": "#/$defs/tree"}}}}})
    types = compile_tool_types(tool_parameters(tools))
    node = types["f"]["t"]
    assert node.properties["kid"] is node

    def tree(depth):
        value = {"v": "1"}
        for _ in range(depth):
            value = {"v": "1", "kid": value}
        return value

    shallow = tool_call("f", {"t": tree(3)})
    coerce_tool_calls(shallow, types)
    assert shallow["function"]["arguments"]["t"] == {"v": 1, "kid": {"v": 1, "kid": {"v": 1, "kid": {"v": 1}}}}
    deep = tool_call("f", {"t": tree(MAX_TYPING_DEPTH + 5)})
    coerce_tool_calls(deep, types)
    level, depth = deep["function"]["arguments"]["t"], 0
    while "kid" in level:
        assert level["v"] == (1 if depth < MAX_TYPING_DEPTH else "1"), depth
        level, depth = level["kid"], depth + 1


@pytest.mark.parametrize("name,args,text,error", [
    ("json", {}, '{"a": 1} and more', "json parser could not parse region as JSON"),
    ("pythonic", {}, "[f(a=1)] and more", "pythonic parser could not parse region at offset 9: text after the calls"),
    ("pythonic", {}, "f(a=1) g(b=2)", "pythonic parser could not parse region at offset 7: text after the calls"),
])
def test_other_parsers_refuse_text_after_their_value(name, args, text, error):
    """The audit of issue 24 item 3
    (docs/template-language.md "D7: text no parser accounts for is an error"): json and pythonic already refuse text
    after their value; xml-tree keeps a body that is not a clean element sequence as its text (all of it)."""
    with pytest.raises(ContentParseError, match=_re(error)):
        respc.runtime.parse_content(text, name, args)
    assert respc.runtime.parse_content("<a>1</a> tail", "xml-tree", {}) == "<a>1</a> tail"


# --- a call whose arguments are not an object (issue 26) ------------------------------------------
@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("arguments, shown", [("null", "NoneType None"), ("[]", "list []"), ("5", "int 5")])
def test_arguments_that_are_no_object_make_the_call_malformed(how, arguments, shown):
    """``"arguments": null`` (or ``[]``, ``5``) is no arguments object: strict raises naming the field,
    recover keeps the text as content and the OpenAI stream sends no call, never a silent ``"{}"``
    (docs/events.md, "Bodies no parser accounts for, calls without a name")."""
    text = '<tool_call>\n{"name": "f", "arguments": %s}\n</tool_call>' % arguments
    error = _strict_error("hermes2pro", "", text, how)
    assert str(error) == (f"Field 'tool_calls': tool call whose arguments are no object: its 'arguments' is "
                          f"{shown}, not an object of arguments")
    message, malformed, _ = _parse("hermes2pro", "", text, how, "recover")
    assert message == {"role": "assistant", "content": text}
    assert [(m["text"], m["into"]) for m in malformed] == [(text, "content")]
    for hold in ("hold", "stream"):
        parser = generated("hermes2pro").ResponseParser("", None, errors="recover")
        stream = ChatCompletionStream(parser, ids=lambda n: f"call_{n}", completion_id="x", created=0,
                                      recover_arguments=hold)
        out = [c for piece in chunkings(text, text)[how] for c in stream.feed(piece)] + stream.finalize()
        deltas = [c["choices"][0]["delta"] for c in out if c["choices"]]
        calls = [d["tool_calls"][0] for d in deltas if "tool_calls" in d]
        # no arguments are ever sent; "hold" sends no call, "stream" may have sent the name already
        # (the call is then kept as sent, with its diagnostic: docs/openai.md)
        assert not any("arguments" in c.get("function", {}) for c in calls), hold
        if hold == "hold" or not calls:
            assert not calls and "".join(d.get("content") or "" for d in deltas) == text
        else:
            assert [d["kind"] for d in stream.diagnostics] == ["streamed-call-malformed"]
            assert "tool call whose arguments are no object" in stream.diagnostics[0]["error"]


def test_openai_message_sends_arguments_as_the_message_holds_them():
    """``openai_message`` writes a call's arguments as the message holds them; only a call with no
    ``arguments`` at all has the empty object."""
    from respc.openai import openai_message

    def args(function):
        return openai_message({"role": "assistant", "tool_calls": [{"type": "function", "function": function}]},
                              ids=lambda n: "c")["tool_calls"][0]["function"]["arguments"]

    assert args({"name": "f", "arguments": []}) == "[]"
    assert args({"name": "f", "arguments": {}}) == "{}"
    assert args({"name": "f"}) == "{}"
