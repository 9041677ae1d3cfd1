"""One scanner per tool-call body that ends itself (docs/formats.md, "One reader for the end and the
arguments"): with the OpenAI adapter attached, the core's boundary decoder of a json tool region with
``end: "value"`` is the adapter's json argument reader (``ReaderBoundary``), so the body is read once; the
stream is chunk for chunk what it is with the core's own ``JsonBoundary``, and the calls are numbered
across regions opened in one feed."""

from __future__ import annotations

import importlib

import pytest

from support import chunkings

openai_streaming = pytest.importorskip("openai.lib.streaming.chat")
from openai.types.chat import ChatCompletionChunk  # noqa: E402

from respc.openai import ChatCompletionStream  # noqa: E402
from respc.runtime.formats import json_  # noqa: E402

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
    "city": {"type": "string"}, "days": {"type": "integer"}}}}},
         {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
             "x": {"type": "array"}}}}}]

CASES = [
    # (family, prefix, text, tools, bodies the core reads with the json reader)
    ("magistral", "[/INST]", '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris", "days": "3"}[TOOL_CALLS]f[ARGS]{"x": [1, "]"]}',
     TOOLS, ['{"city": "Paris", "days": "3"}', '{"x": [1, "]"]}']),
    ("llama3_json", "<|start_header_id|>assistant<|end_header_id|>\n\n",
     '{"name": "a", "parameters": {"q": "}"}}; {"name": "b", "parameters": {}}', None,
     ['{"name": "a", "parameters": {"q": "}"}}', '{"name": "b", "parameters": {}}']),
    ("granite3", "", 'Sure. <|tool_call|>[{"name":"a","arguments":{}}]<|tool_call|>[{"name":"b","arguments":{"x":1}}, '
     '{"name":"c","arguments":{}}]', None,
     ['[{"name":"a","arguments":{}}]', '[{"name":"b","arguments":{"x":1}}, {"name":"c","arguments":{}}]']),
]
#: the argument reader stops at the repeated key: the boundary decoder goes on from its state
DAMAGED = ("granite3", "", '<|tool_call|>[{"name": "f", "name": "g", "arguments": {"a": "}"}}] trailing text', None)


def _run(family, prefix, text, tools, chunks, errors, own_boundary=False):
    # (errors="recover" reads the arguments as they stream with recover_arguments="stream"; with the default
    # "hold" they go at the close and only the core reads the body)
    parser = importlib.import_module(f"respc.generated.{family}").ResponseParser(prefix, tools, errors=errors)
    if own_boundary:  # the core keeps its own JsonBoundary (the body is read twice)
        parser.boundary_hook = lambda region, match: region.boundary()
    stream = ChatCompletionStream(parser, ids=lambda n: f"call_{n}", completion_id="chatcmpl-test", created=0,
                                  recover_arguments="stream")
    out = []
    for chunk in chunks:
        out.extend(stream.feed(chunk))
    out.extend(stream.finalize())
    return stream, out


def _counting(monkeypatch):
    """Count what each scanner reads: JsonBoundary scans, and the json argument readers (each reads up to
    its value's end: the core may hand it more)."""
    seen = {"scans": 0, "readers": {}}
    scan, feed = json_.JsonBoundary._scan, json_.ArgumentReader.feed

    def counted_scan(self, data):
        seen["scans"] += 1
        return scan(self, data)

    def counted_feed(self, text):
        seen["readers"][id(self)] = self
        return feed(self, text)

    monkeypatch.setattr(json_.JsonBoundary, "_scan", counted_scan)
    monkeypatch.setattr(json_.ArgumentReader, "feed", counted_feed)
    return seen


@pytest.mark.parametrize("errors", ["strict", "recover"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_tool_bodies_that_end_themselves_are_read_once(monkeypatch, case, errors):
    family, prefix, text, tools, bodies = case
    for how, chunks in chunkings(text, family).items():
        _, before = _run(family, prefix, text, tools, chunks, errors, own_boundary=True)
        seen = _counting(monkeypatch)
        stream, out = _run(family, prefix, text, tools, chunks, errors)
        assert seen["scans"] == 0, how  # no JsonBoundary ran beside the argument reader
        read = [r.end if r.end >= 0 else r.pos for r in seen["readers"].values()]
        assert sum(read) == sum(map(len, bodies)), how  # each body character read once
        assert out == before, how  # chunk for chunk the stream of the core's own boundary decoder
        state = openai_streaming.ChatCompletionStreamState()
        for chunk in out:
            state.handle_chunk(ChatCompletionChunk.model_validate(chunk))
        calls = state.get_final_completion().choices[0].message.tool_calls
        monkeypatch.undo()
        if family == "granite3":  # (a later region replaces the calls: the stream has all three)
            assert [(c.index, c.function.name) for c in calls] == [(0, "a"), (1, "b"), (2, "c")]
            continue
        assert [(c.id, c.function.name, c.function.arguments) for c in calls] == [
            (f"call_{n}", call["function"]["name"], json_.json.dumps(call["function"]["arguments"]))
            for n, call in enumerate(stream.message["tool_calls"])], how


@pytest.mark.parametrize("errors", ["strict", "recover"])
def test_a_body_the_argument_reader_stops_in_ends_where_the_boundary_ends(errors):
    family, prefix, text, tools = DAMAGED
    for how, chunks in chunkings(text, family).items():
        stream, out = _run(family, prefix, text, tools, chunks, errors)
        _, before = _run(family, prefix, text, tools, chunks, errors, own_boundary=True)
        assert out == before, how
        assert stream.message["content"] == "trailing text", how
