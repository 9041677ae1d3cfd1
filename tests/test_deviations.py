"""One test per deviation from the reference (docs/template-language.md "Where respc
deliberately differs from the transformers reference, and why"), named after it, with literal values."""

from __future__ import annotations

import importlib

import pytest

import respc
from respc.openai import ChatCompletionStream
from respc.runtime.errors import ContentParseError
from support import merged_events, run_stream

CHATML = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>"},
        "content": {"close": "<|im_end|>"},
    },
}


def test_D1_empty_block_never_erases_content():
    assert respc.parse_response("Hello<|im_end|>\n", CHATML, prefix="") == {"role": "assistant", "content": "Hello"}


def test_D1_empty_block_never_extends_a_join_field():
    template = {"start_anchor": "A", "fields": {
        "content": {"close": "<|im_end|>", "repeats": True, "join": "|"}}}
    assert respc.parse_response("a<|im_end|> <|im_end|>b", template, prefix="") == {"content": "a|b"}


THINK_JOIN = {"start_anchor": "<|a|>", "fields": {
    "reasoning_content": {"open": "<think>", "close": "</think>", "repeats": True, "join": "\n\n"},
    "content": {"repeats": True, "join": ""}}}


@pytest.mark.parametrize("name", ["qwen3", "template"])
@pytest.mark.parametrize("errors", ["strict", "recover"])
def test_D1_empty_pieces_are_never_joined(name, errors):
    """Issue 24 item 5
    (docs/template-language.md "D1: empty never erases"): ``<think></think>Hi<think></think>`` gave reasoning "\n\n"
    (two empty pieces joined) while ``<think>a</think>Hi<think></think>`` gave "a"; the reference gives
    "\n\n" and "a\n\n"."""
    if name == "qwen3":
        module, prefix = importlib.import_module("respc.generated.qwen3"), ""
    else:
        module, prefix = respc.compile_template(THINK_JOIN), "<|a|>"
    for text, reasoning in [("<think></think>Hi<think></think>", None), ("<think>a</think>Hi<think></think>", "a"),
                            ("<think></think>Hi<think>b</think>", "b"), ("<think>a</think>Hi<think>b</think>", "a\n\nb"),
                            ("<think>a</think>Hi<think></think>x<think>b</think>", "a\n\nb")]:
        for chunks in ([text], list(text)):
            message, _ = run_stream(module, prefix, chunks, errors=errors)
            assert message.get("reasoning_content") == reasoning, (text, chunks)
            assert message["content"] == ("Hix" if "x" in text else "Hi")
            # the OpenAI delta adapter sends what the message stores, no separator before "b"
            stream = ChatCompletionStream(module.ResponseParser(prefix, errors=errors))
            chunks_out = [c for piece in chunks for c in stream.feed(piece)] + stream.finalize()
            sent = "".join(c["choices"][0]["delta"].get("reasoning_content") or "" for c in chunks_out if c.get("choices"))
            assert (sent, stream.diagnostics) == (reasoning or "", [])


def test_D1_events_are_unchanged():
    module = respc.compile_template(CHATML)
    _, events = run_stream(module, "", ["Hello<|im_end|>\n"])
    assert events[-1] == {"type": "region_close", "field": "content", "value": ""}


GREEDY = {"defaults": {"role": "assistant"}, "start_anchor": "<|assistant|>", "fields": {
    "call": {"open_pattern": "<call name=(?P<name>.*)>", "close": "</call>",
             "transform": {"name": "{name}", "body": "{content}"}},
    "content": {}}}


@pytest.mark.parametrize("chunks", [["<call name=foo>body</call>"], list("<call name=foo>body</call>"),
                                    ["<call name=f", "oo>bo", "dy</ca", "ll>"]])
def test_D2_greedy_open_pattern_is_chunking_independent(chunks):
    message, events = run_stream(respc.compile_template(GREEDY), "", chunks)
    assert message == {"role": "assistant", "call": {"name": "foo>body</call", "body": ""}}
    assert merged_events(events) == [
        {"type": "region_open", "field": "call"},
        {"type": "region_close", "field": "call", "value": {"name": "foo>body</call", "body": ""}},
    ]


def test_D2_dollar_close_waits_for_end_of_stream():
    template = {"start_anchor": "[BEGIN]", "fields": {"body": {"close_pattern": "$"}}}
    module = respc.compile_template(template)
    for chunks in (["hello\nworld"], list("hello\nworld"), ["hello\n", "world"]):
        assert run_stream(module, "", chunks)[0] == {"body": "hello\nworld"}


def test_D2_greedy_optional_part_is_held_until_decided():
    template = {"start_anchor": "A:", "fields": {
        "reasoning_content": {"open_pattern": r"^\s*(?:<think>\s*)?", "close": "</think>"},
        "content": {}}}
    module = respc.compile_template(template)
    for chunks in (["<think>why</think>ok"], list("<think>why</think>ok"), ["<th", "ink>why</think>ok"]):
        assert run_stream(module, "", chunks)[0] == {"reasoning_content": "why", "content": "ok"}


def test_D3_required_field_with_only_an_empty_value_is_missing():
    template = {"start_anchor": "A", "fields": {"answer": {"open": "<a>", "close": "</a>", "optional": False}}}
    with pytest.raises(ValueError, match="answer"):
        respc.parse_response("<a>  </a>", template, prefix="")


def test_D4_close_pattern_captures_reach_the_transform():
    template = {"start_anchor": "A", "fields": {
        "content": {"close_pattern": "(?P<why>STOP|END)", "transform": {"text": "{content}", "why": "{why}"}}}}
    assert respc.parse_response("hiSTOP", template, prefix="") == {"content": {"text": "hi", "why": "STOP"}}


def test_D4_same_group_in_open_and_close_is_rejected():
    template = {"start_anchor": "A", "fields": {"x": {
        "open_pattern": "<(?P<n>a)>", "close_pattern": "</(?P<n>a)>", "transform": {"n": "{n}"}}}}
    with pytest.raises(respc.runtime.TemplateError, match="both open_pattern and close_pattern"):
        respc.compile_template(template)


def test_D5_unmatched_optional_group_is_none():
    template = {"start_anchor": "A", "fields": {"c": {
        "open_pattern": r"<c(?: id=(?P<id>\d+))?>", "close": "</c>", "transform": {"id": "{id}", "text": "{content}"}}}}
    assert respc.parse_response("<c>hi</c>", template, prefix="") == {"c": {"id": None, "text": "hi"}}
    assert respc.parse_response("<c id=7>hi</c>", template, prefix="") == {"c": {"id": "7", "text": "hi"}}


def test_D4_D5_groups_read_by_number_equal_groupdict():
    # the streaming core reads a delimiter's groups by number (runtime/stream.py _put_groups):
    # a name written in two alternatives is one group, an unmatched group is None
    import regex

    from respc.runtime.stream import _put_groups

    pattern = regex.compile(r"<(?P<zeta>z)?(x)?(?P<alpha>a)>|<(?P<alpha>b)(?P<mid>\d)?>")
    for text in ["<za>", "<a>", "<xa>", "<b>", "<b7>"]:
        match = pattern.search(text)
        scope = dict.fromkeys(("mid", "alpha", "zeta"))
        _put_groups(scope, match)
        expected = dict.fromkeys(("mid", "alpha", "zeta"))
        expected.update(match.groupdict())
        assert list(scope.items()) == list(expected.items()), text
    template = {"start_anchor": "A", "fields": {"c": {
        "open_pattern": r"<c(?: id=(?P<id>\d+))?(?: (?P<id>#\w))?>", "close": "</c>",
        "transform": {"id": "{id}", "text": "{content}"}}}}
    parser = respc.compile_template(template).ResponseParser("")
    for piece in ["<c #a>h", "i</c><c>x</c><c id=3", ">y</c>"]:
        parser.feed(piece)
    assert parser.finalize()[0] == {"c": {"id": "3", "text": "y"}}
    assert respc.parse_response("<c #a>hi</c>", template, prefix="") == {"c": {"id": "#a", "text": "hi"}}


def test_D6_json_dialects_keep_strings_intact():
    template = {"start_anchor": "A", "fields": {"v": {
        "open": "<v>", "close": "</v>", "content": "json", "content_args": {"unquoted_keys": True}}}}
    assert respc.parse_response('<v>{"s": "x,y:z", k: 1}</v>', template, prefix="") == {"v": {"s": "x,y:z", "k": 1}}
    assert respc.parse_response("<v>{a: 1, c: 2}</v>", template, prefix="") == {"v": {"a": 1, "c": 2}}


def test_D6_allow_non_json_falls_back_on_every_failure():
    template = {"start_anchor": "A", "fields": {"v": {"open": "<v>", "close": "</v>", "content": "json",
                "content_args": {"string_delims": [["<<", ">>"]], "allow_non_json": True}}}}
    assert respc.parse_response('<v>{"a": "x\x01"}</v>', template, prefix="") == {"v": '{"a": "x\x01"}'}


GLM = {"defaults": {"role": "assistant"}, "start_anchor": "<|assistant|>", "fields": {
    "tool_calls": {"open_pattern": "<tool_call>\\s*(?P<name>[^\\s<]+)", "close": "</tool_call>",
                   "content": "xml-inline", "repeats": True,
                   "content_args": {"tag_pattern": "<arg_key>\\s*(?P<key>.*?)\\s*</arg_key>\\s*"
                                                   "<arg_value>(?P<value>.*?)</arg_value>"},
                   "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}}},
    "content": {}}}


def test_D10_a_cut_value_is_never_returned():
    """The reference returns get_weather with no arguments for the cut call; respc's strict parse
    raises, recover drops it with a truncated diagnostic (docs/events.md, "Truncated regions")."""
    cut = "Hi<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Par"
    with pytest.raises(ContentParseError, match=r"ended inside this region before its close \(truncated\)"):
        respc.parse_response(cut, GLM, prefix="")
    assert respc.parse_response(cut, GLM, prefix="", errors="recover") == {"role": "assistant", "content": "Hi"}
    closed = cut + "is</arg_value></tool_call>"
    assert respc.parse_response(closed, GLM, prefix="")["tool_calls"] == [
        {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]


def test_D10_a_whole_json_body_needs_no_closer():
    template = {"start_anchor": "A", "fields": {"v": {"open": "<v>", "close": "</v>", "content": "json"}}}
    assert respc.parse_response('<v>{"a": 1}', template, prefix="") == {"v": {"a": 1}}
    with pytest.raises(ContentParseError, match="truncated"):
        respc.parse_response("<v> ", template, prefix="")
