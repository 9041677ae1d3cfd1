"""The public API of a generated module and of ``respc`` (docs/events.md "The parser object",
prefix handling: docs/template-language.md "The prefix and the start anchor").

prefix required (None explains why; "" and [] opt out), token ids with a tokenizer, batches and
prefix broadcasting, the finalize state machine, ``respc`` conveniences agreeing with a generated
module, the compile cache, initial events, the start anchor's last match, and tools given as typed
Python callables.
"""

from __future__ import annotations

import json
import logging
from typing import Optional

import pytest

import respc
from respc.generated import qwen3
from respc.runtime.errors import ContentParseError, ParserStateError

T = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|assistant|>",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>"},
        "tool_calls": {
            "open_pattern": "<call (?P<name>\\w+)>",
            "close": "</call>",
            "content": "xml-inline",
            "content_args": {"tag_pattern": "<(?P<key>\\w+)>(?P<value>.*?)</(?P=key)>"},
            "repeats": True,
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        },
        "content": {"close": "<|end|>"},
    },
}


@pytest.fixture(scope="module")
def mod():
    return respc.compile_template(T)


# -- prefix is required ----------------------------------------------------------------------------
def _explains(error: Exception) -> None:
    text = str(error)
    assert "requires `prefix`" in text
    assert "chat templates often pre-write part of the assistant message" in text
    assert 'pass prefix="" (or []) to opt out explicitly' in text


def test_prefix_none_raises_value_error_explaining_why(mod):
    with pytest.raises(ValueError) as info:
        mod.ResponseParser(None)
    _explains(info.value)


@pytest.mark.parametrize("call", [
    lambda m: m.ResponseParser(),
    lambda m: m.get_response_parser(),
    lambda m: m.parse_response("hi"),
    lambda m: m.parse_response(["a", "b"]),
    lambda m: m.parse_response("hi", prefix=None),
    lambda m: respc.parse_response("hi", T),
    lambda m: respc.get_response_parser(T),
    lambda m: qwen3.parse_response("hi<|im_end|>"),
], ids=["ResponseParser", "get_response_parser", "parse_response", "batch", "explicit-None", "respc.parse_response",
        "respc.get_response_parser", "catalogue-module"])
def test_prefix_omitted_raises_value_error(mod, call):
    with pytest.raises(ValueError) as info:
        call(mod)
    _explains(info.value)


@pytest.mark.parametrize("opt_out", ["", []], ids=["empty-str", "empty-list"])
def test_empty_prefix_opts_out(mod, opt_out):
    assert mod.parse_response("<think>a</think>b<|end|>", prefix=opt_out) == {
        "role": "assistant", "reasoning_content": "a", "content": "b"}
    parser = mod.ResponseParser(opt_out)
    assert parser.initial_events == []
    assert parser.feed("b") == [{"type": "region_open", "field": "content"},
                                {"type": "region_chunk", "field": "content", "text": "b", "dirty": False}]
    assert parser.finalize() == ({"role": "assistant", "content": "b"},
                                 [{"type": "region_close", "field": "content", "value": "b"}])


# -- token ids -------------------------------------------------------------------------------------
class FakeTokenizer:
    """A tokenizer with a fixed vocabulary: id i decodes to VOCAB[i]."""

    VOCAB = ["<|assistant|>", "<think>", "</think>", "Hello", " world", "<|end|>", "hmm", "<|user|>", "Hi", "<th",
             "ink>"]

    def __init__(self) -> None:
        self.calls: list[list[int]] = []

    def decode(self, ids) -> str:
        self.calls.append(list(ids))
        return "".join(self.VOCAB[i] for i in ids)


def test_token_ids_with_tokenizer(mod):
    tok = FakeTokenizer()
    message = mod.parse_response([1, 6, 2, 3, 4, 5], prefix=[7, 8, 0], tokenizer=tok)
    assert message == {"role": "assistant", "reasoning_content": "hmm", "content": "Hello world"}
    assert tok.calls == [[1, 6, 2, 3, 4, 5], [7, 8, 0]]


def test_token_ids_prefix_preopens_region(mod):
    tok = FakeTokenizer()
    # prefix "<|user|>Hi<|assistant|><think>" pre-opens reasoning; the output only closes it
    assert mod.parse_response((6, 2, 3, 5), prefix=(7, 8, 0, 1), tokenizer=tok) == {
        "role": "assistant", "reasoning_content": "hmm", "content": "Hello"}


def test_token_ids_streamed(mod):
    parser = mod.ResponseParser([0, 9], tokenizer=FakeTokenizer())  # prefix "<|assistant|><th": held
    assert parser.initial_events == []
    assert parser.feed([10]) == [{"type": "region_open", "field": "reasoning_content"}]
    assert parser.feed([6, 2]) == [
        {"type": "region_chunk", "field": "reasoning_content", "text": "hmm", "dirty": False},
        {"type": "region_close", "field": "reasoning_content", "value": "hmm"},
    ]
    assert parser.feed("Hi") == [{"type": "region_open", "field": "content"},
                                 {"type": "region_chunk", "field": "content", "text": "Hi", "dirty": False}]
    assert parser.finalize()[0] == {"role": "assistant", "reasoning_content": "hmm", "content": "Hi"}


def test_token_ids_batch(mod):
    assert mod.parse_response([[3, 5], [1, 6, 2, 8]], prefix="", tokenizer=FakeTokenizer()) == [
        {"role": "assistant", "content": "Hello"},
        {"role": "assistant", "reasoning_content": "hmm", "content": "Hi"},
    ]


def test_token_id_prefix_broadcast_to_batch(mod):
    assert mod.parse_response([[6, 2, 3], [2, 8]], prefix=[0, 1], tokenizer=FakeTokenizer()) == [
        {"role": "assistant", "reasoning_content": "hmm", "content": "Hello"},
        {"role": "assistant", "content": "Hi"},
    ]


def test_respc_parse_response_token_ids():
    assert respc.parse_response([3, 4], T, prefix=[0], tokenizer=FakeTokenizer()) == {
        "role": "assistant", "content": "Hello world"}


@pytest.mark.parametrize("call", [
    lambda m: m.parse_response([3, 5], prefix=""),
    lambda m: m.parse_response("Hello", prefix=[7, 0]),
    lambda m: m.ResponseParser([7, 0]),
    lambda m: m.ResponseParser("").feed([3]),
    lambda m: m.parse_response([[3], [4]], prefix=""),
], ids=["response", "prefix", "parser-prefix", "feed", "batch"])
def test_token_ids_without_tokenizer_type_error(mod, call):
    with pytest.raises(TypeError) as info:
        call(mod)
    assert "token ids need tokenizer= (any object with decode(ids) -> str)" in str(info.value)


def test_tokenizer_decode_must_return_text(mod):
    class Bad:
        def decode(self, ids):
            return ids

    with pytest.raises(TypeError) as info:
        mod.parse_response([1, 2], prefix="", tokenizer=Bad())
    assert str(info.value) == "tokenizer.decode returned list for the response, expected str"


# -- batches ---------------------------------------------------------------------------------------
def test_batch_of_strings_returns_list(mod):
    assert mod.parse_response(["a<|end|>", "<think>t</think>b", "<call f><x>1</x></call>"], prefix="") == [
        {"role": "assistant", "content": "a"},
        {"role": "assistant", "reasoning_content": "t", "content": "b"},
        {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"x": "1"}}}]},
    ]


def test_one_item_batch_returns_one_item_list(mod):
    assert mod.parse_response(["a"], prefix="") == [{"role": "assistant", "content": "a"}]
    assert respc.parse_response(["a"], T, prefix="") == [{"role": "assistant", "content": "a"}]


def test_tuple_is_a_batch_and_empty_batch_is_empty(mod):
    assert mod.parse_response(("a", "b"), prefix="") == [{"role": "assistant", "content": "a"},
                                                         {"role": "assistant", "content": "b"}]
    assert mod.parse_response([], prefix="") == []


def test_single_prefix_is_broadcast(mod):
    assert mod.parse_response(["x</think>y", "z</think>"], prefix="<|user|>q<|assistant|><think>") == [
        {"role": "assistant", "reasoning_content": "x", "content": "y"},
        {"role": "assistant", "reasoning_content": "z"},
    ]
    assert mod.parse_response(["a", "b"], prefix=[]) == [{"role": "assistant", "content": "a"},
                                                         {"role": "assistant", "content": "b"}]


def test_one_prefix_per_item(mod):
    assert mod.parse_response(["x</think>y", "x</think>y"], prefix=["<|assistant|><think>", "<|assistant|>"]) == [
        {"role": "assistant", "reasoning_content": "x", "content": "y"},
        {"role": "assistant", "content": "x</think>y"},
    ]


@pytest.mark.parametrize("prefixes", [["", "", ""], [""]], ids=["too-many", "too-few"])
def test_prefix_list_of_wrong_length(mod, prefixes):
    with pytest.raises(ValueError) as info:
        mod.parse_response(["a", "b"], prefix=prefixes)
    assert str(info.value).startswith(f"Got 2 response(s) but {len(prefixes)} prefix(es); `prefix` must be a "
                                      "single sequence (broadcast to every response), or one prefix per response.")


# -- finalize state machine ------------------------------------------------------------------------
def test_feed_after_finalize_raises(mod):
    parser = mod.ResponseParser("")
    parser.feed("hi")
    assert parser.finalize()[0] == {"role": "assistant", "content": "hi"}
    with pytest.raises(RuntimeError) as info:
        parser.feed("more")
    assert isinstance(info.value, ParserStateError)
    assert str(info.value) == "ResponseParser already finalized (or failed earlier)"


def test_finalize_twice_raises(mod):
    parser = mod.ResponseParser("")
    parser.finalize()
    with pytest.raises(RuntimeError):
        parser.finalize()


def test_parser_refuses_to_go_on_after_an_error():
    module = respc.compile_template({"start_anchor": "A", "fields": {
        "n": {"open": "<n>", "close": "</n>", "content": "int"}, "content": {}}})
    parser = module.ResponseParser("")
    with pytest.raises(ValueError) as info:
        parser.feed("<n>seven</n>")
    assert isinstance(info.value, ContentParseError)
    with pytest.raises(RuntimeError):
        parser.feed("ok")
    with pytest.raises(RuntimeError):
        parser.finalize()


# -- respc conveniences agree with a generated module ----------------------------------------------
QWEN_PREFIX = "<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n<think>\n"
QWEN_TEXT = ('Let me call it.\n</think>\n\nChecking.\n<tool_call>\n{"name": "get_weather", "arguments": '
             '{"city": "Paris", "days": "3"}}\n</tool_call><|im_end|>')
QWEN_TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}}]
QWEN_MESSAGE = {
    "role": "assistant",
    "reasoning_content": "Let me call it.",
    "content": "Checking.",
    "tool_calls": [{"type": "function", "function": {"name": "get_weather",
                                                     "arguments": {"city": "Paris", "days": 3}}}],
}


def test_parse_response_agrees_with_generated_module():
    generated = qwen3.parse_response(QWEN_TEXT, prefix=QWEN_PREFIX, tools=QWEN_TOOLS)
    via_respc = respc.parse_response(QWEN_TEXT, "qwen3", prefix=QWEN_PREFIX, tools=QWEN_TOOLS)
    assert generated == via_respc == QWEN_MESSAGE
    # untyped without tools: the string argument stays a string
    assert qwen3.parse_response(QWEN_TEXT, prefix=QWEN_PREFIX)["tool_calls"][0]["function"]["arguments"] == {
        "city": "Paris", "days": "3"}


def test_get_response_parser_agrees_with_generated_module():
    def run(parser):
        events = list(parser.initial_events)
        for i in range(0, len(QWEN_TEXT), 5):
            events += parser.feed(QWEN_TEXT[i:i + 5])
        message, final = parser.finalize()
        return message, events + final

    generated = run(qwen3.get_response_parser(prefix=QWEN_PREFIX, tools=QWEN_TOOLS))
    via_respc = run(respc.get_response_parser("qwen3", prefix=QWEN_PREFIX, tools=QWEN_TOOLS))
    assert generated == via_respc
    message, events = generated
    assert message == QWEN_MESSAGE
    opens_closes = [(e["type"], e["field"]) for e in events if e["type"] != "region_chunk"]
    assert opens_closes == [
        ("region_open", "reasoning_content"), ("region_close", "reasoning_content"),
        ("region_open", "content"), ("region_close", "content"),
        ("region_open", "tool_calls"), ("region_close", "tool_calls"),
    ]


def test_respc_convenience_types():
    parser = respc.get_response_parser(T, prefix="")
    assert type(parser).__name__ == "ResponseParser"
    assert isinstance(parser, respc.compile_template(T).ResponseParser)


# -- compile cache ---------------------------------------------------------------------------------
def test_compile_template_cache_returns_same_module():
    first = respc.compile_template(T)
    assert respc.compile_template(T) is first
    reordered = {"fields": dict(T["fields"]), "start_anchor": T["start_anchor"], "defaults": {"role": "assistant"}}
    assert respc.compile_template(reordered) is first
    assert respc.compile_template("qwen3") is respc.compile_template("qwen3")
    other = respc.compile_template({**T, "defaults": {"role": "model"}})
    assert other is not first
    assert other.parse_response("x", prefix="") == {"role": "model", "content": "x"}


# Issue 23, item 2: two templates that differ only in the order of "fields" behave differently
# (v2 ranks tied delimiters by declaration order), so they must not share a hash or a cached module.
FIELDS_A = {"respc_version": 2, "start_anchor": "<s>",
            "fields": {"a": {"open": "<t>", "close": "</t>", "content": "json"}, "b": {"open": "<t>", "close": "</t>"},
                       "content": {}}}
FIELDS_B = {"respc_version": 2, "start_anchor": "<s>",
            "fields": {"b": {"open": "<t>", "close": "</t>"}, "a": {"open": "<t>", "close": "</t>", "content": "json"},
                       "content": {}}}


def test_cache_tells_field_order_apart():
    text = 'hi <t>{"a": 1}</t>'
    a, b = respc.compile_template(FIELDS_A), respc.compile_template(FIELDS_B)
    assert a is not b and a.TEMPLATE_SHA256 != b.TEMPLATE_SHA256
    assert a.parse_response(text, prefix="") == {"content": "hi", "a": {"a": 1}}
    assert b.parse_response(text, prefix="") == {"content": "hi", "b": '{"a": 1}'}
    assert respc.parse_response(text, FIELDS_B, prefix="") == {"content": "hi", "b": '{"a": 1}'}


def test_hash_keeps_every_order_but_the_two_known_not_to_matter():
    from respc.compiler.ir import template_sha256

    base = {"start_anchor": "A", "defaults": {"x": 1, "y": 2},
            "fields": {"f": {"open": "<f>", "close": "</f>", "transform": {"p": "{content}", "q": "lit"}},
                       "content": {}}}
    same = {"fields": {"f": {"transform": {"p": "{content}", "q": "lit"}, "close": "</f>", "open": "<f>"},
                       "content": {}}, "defaults": {"x": 1, "y": 2}, "start_anchor": "A"}
    assert template_sha256(base) == template_sha256(same)  # top-level and field-spec keys: read by name
    for other in ({**base, "defaults": {"y": 2, "x": 1}},
                  {**base, "fields": {"content": {}, "f": base["fields"]["f"]}},
                  {**base, "fields": {**base["fields"], "f": {**base["fields"]["f"], "transform": {"q": "lit", "p": "{content}"}}}}):
        assert template_sha256(other) != template_sha256(base)


def test_cached_module_is_not_mutated_by_caller_template():
    template = {"start_anchor": "A", "defaults": {"role": "assistant"}, "fields": {"content": {}}}
    module = respc.compile_template(template)
    template["defaults"]["role"] = "changed"
    assert module.parse_response("x", prefix="") == {"role": "assistant", "content": "x"}
    message = module.parse_response("x", prefix="")
    message["role"] = "mutated"
    assert module.parse_response("y", prefix="") == {"role": "assistant", "content": "y"}


# -- prefix processing (docs/template-language.md "The prefix and the start anchor") ----------------
def test_initial_events_from_prefix_that_opens_and_closes(mod):
    parser = mod.ResponseParser("<|user|>Hi<|assistant|><think>plan</think>")
    assert parser.initial_events == [
        {"type": "region_open", "field": "reasoning_content"},
        {"type": "region_chunk", "field": "reasoning_content", "text": "plan", "dirty": False},
        {"type": "region_close", "field": "reasoning_content", "value": "plan"},
    ]
    assert parser.feed("ok<|e") == [{"type": "region_open", "field": "content"},
                                    {"type": "region_chunk", "field": "content", "text": "ok", "dirty": False}]
    assert parser.feed("nd|>") == [{"type": "region_close", "field": "content", "value": "ok"}]
    # the region the prefix closed is in the final message
    assert parser.finalize() == ({"role": "assistant", "reasoning_content": "plan", "content": "ok"}, [])


def test_initial_events_from_prefix_that_leaves_region_open(mod):
    parser = mod.ResponseParser("<|assistant|><think>")
    assert parser.initial_events == [{"type": "region_open", "field": "reasoning_content"}]
    assert parser.feed("deep</think>") == [
        {"type": "region_chunk", "field": "reasoning_content", "text": "deep", "dirty": False},
        {"type": "region_close", "field": "reasoning_content", "value": "deep"},
    ]


def test_start_anchor_last_match_cuts_prefix(mod, caplog):
    prefix = "<|assistant|><think>old</think>old answer<|end|><|user|>q<|assistant|>"
    with caplog.at_level(logging.INFO, logger="respc"):
        parser = mod.ResponseParser(prefix)
    assert parser.initial_events == []
    assert caplog.records == []
    assert mod.parse_response("new<|end|>", prefix=prefix) == {"role": "assistant", "content": "new"}


def test_start_anchor_applies_to_prefix_only(mod):
    assert mod.parse_response("a<|assistant|>b", prefix="") == {"role": "assistant", "content": "a<|assistant|>b"}


def test_anchor_not_found_uses_whole_prefix_and_logs(mod, caplog):
    with caplog.at_level(logging.INFO, logger="respc"):
        message = mod.parse_response("thought</think>answer", prefix="<think>pre ")
    assert message == {"role": "assistant", "reasoning_content": "pre thought", "content": "answer"}
    records = [r for r in caplog.records if r.name == "respc"]
    assert len(records) == 1
    assert records[0].levelno == logging.INFO
    assert records[0].getMessage() == "<dict>: start anchor not found in the prefix; the whole prefix is parsed"


def test_anchor_not_found_logs_catalogue_source(caplog):
    with caplog.at_level(logging.INFO, logger="respc"):
        assert qwen3.parse_response("x</think>y", prefix="<think>") == {
            "role": "assistant", "reasoning_content": "x", "content": "y"}
    assert [r.getMessage() for r in caplog.records if r.name == "respc"] == [
        "templates/qwen3.json: start anchor not found in the prefix; the whole prefix is parsed"]


def test_empty_prefix_does_not_log(mod, caplog):
    with caplog.at_level(logging.DEBUG, logger="respc"):
        mod.parse_response("x", prefix="")
    assert [r for r in caplog.records if r.name == "respc"] == []


# -- tools as Python callables (docs/events.md "The parser object"; docs/template-language.md
# "Tool-argument typing") -------------------------------------------------------------------------
def get_weather(city: str, days: int, metric: bool, ratio: float, tags: list[str], extra: Optional[dict] = None):
    """Get the weather.

    Args:
        city: The city.
        days: How many days.
        metric: Metric units or not.
        ratio: A ratio.
        tags: Some tags.
        extra: Extra options.
    """


CALL = ('<call get_weather><city>Paris</city><days>3</days><metric>true</metric><ratio>0.5</ratio>'
        '<tags>["a", "b"]</tags><extra>null</extra></call><call unknown><days>3</days></call>')
TYPED = {"city": "Paris", "days": 3, "metric": True, "ratio": 0.5, "tags": ["a", "b"], "extra": None}
UNTYPED = {"city": "Paris", "days": "3", "metric": "true", "ratio": "0.5", "tags": '["a", "b"]', "extra": "null"}


def test_callable_tools_type_arguments(mod):
    message = mod.parse_response(CALL, prefix="", tools=[get_weather])
    assert message == {"role": "assistant", "tool_calls": [
        {"type": "function", "function": {"name": "get_weather", "arguments": TYPED}},
        {"type": "function", "function": {"name": "unknown", "arguments": {"days": "3"}}},
    ]}
    assert mod.parse_response(CALL, prefix="")["tool_calls"][0]["function"]["arguments"] == UNTYPED


def test_callable_tools_in_streaming_close_event(mod):
    parser = mod.ResponseParser("", tools=[get_weather])
    events = []
    for ch in CALL:
        events += parser.feed(ch)
    closes = [e["value"] for e in events if e["type"] == "region_close"]
    assert closes[0] == {"type": "function", "function": {"name": "get_weather", "arguments": TYPED}}


@pytest.mark.parametrize("tools", [
    [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "days": {"type": "integer"}, "metric": {"type": "boolean"},
        "ratio": {"type": "number"}, "tags": {"type": "array", "items": {"type": "string"}},
        "extra": {"type": "object", "nullable": True}}}}}],
    [{"name": "get_weather", "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "days": {"type": "integer"}, "metric": {"type": "boolean"},
        "ratio": {"type": "number"}, "tags": {"type": "array"}, "extra": {"type": ["object", "null"]}}}}],
], ids=["wrapped-schema", "bare-schema"])
def test_schema_tools_same_as_callable(mod, tools):
    assert mod.parse_response(CALL, prefix="", tools=tools) == mod.parse_response(CALL, prefix="", tools=[get_weather])


def test_callable_schema_matches_transformers():
    transformers_utils = pytest.importorskip("transformers.utils")
    from respc.runtime.tools import get_json_schema

    assert get_json_schema(get_weather) == transformers_utils.get_json_schema(get_weather)
    assert get_json_schema(get_weather)["function"]["parameters"]["properties"]["days"] == {
        "type": "integer", "description": "How many days."}


class ArrayTokenizer(FakeTokenizer):
    """Decodes like transformers' tokenizers: a 2-D input (here an ``IdArray`` of rows) gives a list."""

    def decode(self, ids):
        if isinstance(ids, IdArray):
            return [FakeTokenizer.decode(self, row) for row in ids.rows] if ids.two_d else FakeTokenizer.decode(
                self, ids.rows)
        return FakeTokenizer.decode(self, ids)


class IdArray:
    """Stands in for a numpy array / tensor of token ids (not a list, so it goes to decode whole)."""

    def __init__(self, rows, two_d):
        self.rows, self.two_d = rows, two_d


def test_two_dimensional_ids_decode_to_a_batch(mod):
    tok = ArrayTokenizer()
    assert mod.parse_response(IdArray([[3], [8, 5]], True), prefix="", tokenizer=tok) == [
        {"role": "assistant", "content": "Hello"}, {"role": "assistant", "content": "Hi"}]
    assert mod.parse_response(IdArray([3, 4], False), prefix=IdArray([0], False), tokenizer=tok) == {
        "role": "assistant", "content": "Hello world"}


def test_ids_array_without_tokenizer_is_a_type_error(mod):
    with pytest.raises(TypeError, match="tokenizer="):
        mod.parse_response(IdArray([3], False), prefix="")


def test_cache_keeps_the_source_label(tmp_path):
    path = tmp_path / "same.json"
    document = {"start_anchor": "A", "fields": {"content": {"close": "<end>"}}}
    path.write_text(json.dumps(document), encoding="utf-8")
    from_dict = respc.compile_template(document)
    from_file = respc.compile_template(str(path))
    assert from_dict.SOURCE == "<dict>" and from_file.SOURCE == str(path)
    assert from_dict.TEMPLATE_SHA256 == from_file.TEMPLATE_SHA256
