"""A field that neither joins nor repeats written twice (docs/events.md "Overwritten values",
docs/template-language.md "Closing a region and storing its value").

The defect: granite3's ``tool_calls`` did not repeat, so a second ``<tool_call>`` block replaced the
first one's calls with no diagnostic, in both modes: a server executed only ``b``. Now any second
non-empty value over a non-empty one is reported (``overwritten``); a tool-call field keeps both
calls in ``errors="recover"`` and raises in ``"strict"``.
"""

from __future__ import annotations

import copy
import importlib
import json

import pytest

from support import REPO, chunkings, run_stream

from respc.compiler.api import compile_template
from respc.openai import ChatCompletionStream
from respc.runtime.errors import ContentParseError
import respc

ISSUE = ('<tool_call>[{"name": "a", "arguments": {}}]</tool_call>'
         '<tool_call>[{"name": "b", "arguments": {}}]</tool_call>')
CALL_A = {"type": "function", "function": {"name": "a", "arguments": {}}}
CALL_B = {"type": "function", "function": {"name": "b", "arguments": {}}}
BOTH = {"role": "assistant", "tool_calls": [CALL_A, CALL_B]}
CHUNKINGS = sorted(chunkings(ISSUE, "overwrite"))


def _feed(module_or_name, text, errors, chunks=None):
    if isinstance(module_or_name, str):
        parser = respc.get_response_parser(module_or_name, prefix="", errors=errors)
    else:
        parser = module_or_name.ResponseParser("", errors=errors)
    for chunk in chunks if chunks is not None else [text]:
        parser.feed(chunk)
    message, _ = parser.finalize()
    return message, parser.diagnostics


@pytest.mark.parametrize("errors", ["strict", "recover"])
@pytest.mark.parametrize("how", CHUNKINGS)
def test_granite3_keeps_both_tool_call_blocks(errors, how):
    """The issue's string, exactly: granite3 (whose tool_calls now repeat) gives both calls."""
    message, diagnostics = _feed("granite3", ISSUE, errors, chunkings(ISSUE, "overwrite")[how])
    assert message == BOTH
    assert diagnostics == []
    assert importlib.import_module("respc.generated.granite3").parse_response(ISSUE, prefix="", errors=errors) == BOTH


def _no_repeat_granite():
    """granite3's template as it was: a tool_calls field without "repeats"."""
    template = json.loads((REPO / "templates" / "granite3.json").read_text())
    template = copy.deepcopy(template)
    template["fields"]["tool_calls"].pop("repeats", None)
    return compile_template(template)


OVERWRITTEN_CALLS = {
    "kind": "overwritten", "field": "tool_calls", "start": 0, "end": 43,
    "message": "Field 'tool_calls' does not repeat but was written again (offsets 55 to 98): the later calls "
               "are appended to those of this block, not put in their place.",
    "text": '<tool_call>[{"name": "a", "arguments": {}}]'}


@pytest.mark.parametrize("how", CHUNKINGS)
def test_non_repeating_tool_calls_recover_appends_and_says_so(how):
    module = _no_repeat_granite()
    message, diagnostics = _feed(module, ISSUE, "recover", chunkings(ISSUE, "overwrite")[how])
    assert message == BOTH
    assert diagnostics == [OVERWRITTEN_CALLS]
    assert module.parse_response(ISSUE, prefix="", errors="recover") == BOTH


@pytest.mark.parametrize("how", CHUNKINGS)
def test_non_repeating_tool_calls_strict_raises(how):
    module = _no_repeat_granite()
    with pytest.raises(ContentParseError) as info:
        _feed(module, ISSUE, "strict", chunkings(ISSUE, "overwrite")[how])
    assert str(info.value) == (
        "Field 'tool_calls': a second block (offsets 55 to 98) would replace the tool calls of the block at "
        "offsets 0 to 43; the field does not repeat, and dropping a call is a wrong answer "
        "(errors='recover' keeps both).")
    assert (info.value.field, info.value.start, info.value.end) == ("tool_calls", 55, 98)
    assert info.value.partial_message == {"role": "assistant", "tool_calls": [CALL_A]}


def test_openai_stream_of_appended_calls_equals_the_message():
    module = _no_repeat_granite()
    for how, chunks in chunkings(ISSUE, "overwrite").items():
        stream = ChatCompletionStream(module.ResponseParser("", errors="recover"), ids=lambda n: f"call_{n}",
                                      completion_id="x", created=0)
        out = []
        for chunk in chunks:
            out.extend(stream.feed(chunk))
        out.extend(stream.finalize())
        assert stream.message == BOTH, how
        names = [d["function"]["name"] for c in out for d in c["choices"][0]["delta"].get("tool_calls", [])
                 if "name" in d.get("function", {})]
        assert names == ["a", "b"], how
        assert stream.diagnostics == [], how
        assert [c["function"]["name"] for c in stream.openai_message()["tool_calls"]] == ["a", "b"], how


TITLE = {"respc_version": 2, "defaults": {"role": "assistant"}, "start_anchor": "<|assistant|>",
         "fields": {"title": {"open": "<title>", "close": "</title>"}, "content": {}}}
TEXT = "<title>one</title>Hi<title>two</title>"


@pytest.mark.parametrize("errors", ["strict", "recover"])
def test_non_repeating_text_field_written_twice_is_reported(errors):
    module = compile_template(TITLE)
    for how, chunks in chunkings(TEXT, "title").items():
        message, diagnostics = _feed(module, TEXT, errors, chunks)
        assert message == {"role": "assistant", "title": "two", "content": "Hi"}, how
        assert diagnostics == [{
            "kind": "overwritten", "field": "title", "start": 0, "end": 18,
            "message": "Field 'title' does not repeat: the value of this block was replaced by the block at "
                       "offsets 20 to 38.",
            "text": "<title>one</title>"}], how


def test_an_empty_later_value_never_overwrites_and_is_not_reported():
    module = compile_template(TITLE)
    message, diagnostics = _feed(module, "<title>one</title>Hi<title></title>", "strict")
    assert message == {"role": "assistant", "title": "one", "content": "Hi"}
    assert diagnostics == []
