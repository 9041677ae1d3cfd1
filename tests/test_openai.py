"""OpenAI streaming (issue 9; docs/openai.md): ``respc.openai.ChatCompletionStream`` read by the official ``openai``
package's own stream accumulator.

Every corpus and peer vector (``../shared/corpus``; those marked xfail in
``tests/cases/peer_xfail.json`` or a family's ``corpus_xfail`` are left out: their messages are not
respc's yet) is fed whole, one character at a time and in random pieces through the catalogue parser
wrapped in a :class:`ChatCompletionStream`; the chunks go through
``openai.lib.streaming.chat.ChatCompletionStreamState`` and the accumulated completion must equal
respc's message: content, reasoning, tool names, parsed arguments, ids and finish reason. Since the
accumulator only appends, equality also shows nothing was sent that the message does not hold.
"""

from __future__ import annotations

import importlib
import json
import re

import pytest

from support import CORPUS, REPO, SHARED, chunkings, load_jsonl

openai_streaming = pytest.importorskip("openai.lib.streaming.chat")
from openai.types.chat import ChatCompletionChunk  # noqa: E402

from respc.openai import ChatCompletionStream, openai_message, sse  # noqa: E402
from respc.runtime import ContentParseError  # noqa: E402
from support import CATALOGUE_TEMPLATES as TEMPLATES, FAMILIES, PEER_PREFIX, PEER_XFAIL as XFAIL  # noqa: E402

PEER = SHARED / "corpus" / "peer_vectors.jsonl"


def _vectors() -> list:
    params = []
    for vector in load_jsonl(CORPUS):
        if vector["id"] in FAMILIES.get(vector["family"], {}).get("corpus_xfail", {}):
            continue
        params.append(pytest.param(vector, vector["prefix"], id=vector["id"]))
    for vector in load_jsonl(PEER):
        if vector["family"] not in TEMPLATES or vector["id"] in XFAIL:
            continue
        params.append(pytest.param(vector, PEER_PREFIX.get(vector["id"], vector["prefix"]), id=vector["id"]))
    return params


def _errors(vector: dict) -> str:
    """Damaged outputs ("malformed output" notes) are read with errors="recover", as the peer-vector
    tests read them; every other vector with "strict"."""
    return "recover" if (vector.get("note") or "").startswith("malformed output") else "strict"


def _stream(module, prefix, chunks, tools=None, errors="strict", **options):
    stream = ChatCompletionStream(module.ResponseParser(prefix, tools, errors=errors), ids=lambda n: f"call_{n}",
                                  completion_id="chatcmpl-test", created=0, **options)
    out = []
    for chunk in chunks:
        out.extend(stream.feed(chunk))
    out.extend(stream.finalize())
    return stream, out


def _accumulated(chunks: list[dict]):
    state = openai_streaming.ChatCompletionStreamState()
    for chunk in chunks:
        state.handle_chunk(ChatCompletionChunk.model_validate(chunk))
    return state.get_final_completion().choices[0]


def _expected_calls(message: dict) -> list:
    return [(f"call_{n}", call["function"]["name"], call["function"]["arguments"])
            for n, call in enumerate(message.get("tool_calls") or [])]


def _got_calls(choice, message: dict) -> list:
    got = []
    for call, expected in zip(choice.message.tool_calls or [], message.get("tool_calls") or []):
        arguments = call.function.arguments
        # a message whose arguments are a string (the model wrote a JSON string) sends it as is
        if not isinstance(expected["function"]["arguments"], str):
            arguments = json.loads(arguments)
        got.append((call.id, call.function.name, arguments))
    return got + [("extra", call.function.name, None) for call in (choice.message.tool_calls or [])[len(got):]]


@pytest.mark.skipif(not CORPUS.is_file(), reason="../shared/corpus is absent")
@pytest.mark.parametrize("vector,prefix", _vectors())
def test_accumulator_equals_message(vector, prefix):
    module = importlib.import_module(f"respc.generated.{vector['family']}")
    for how, chunks in chunkings(vector["text"], vector["id"]).items():
        stream, out = _stream(module, prefix, chunks, vector.get("tools"), _errors(vector))
        message = stream.message
        assert message == vector["expect"]["message"], how
        choice = _accumulated(out)
        extra = choice.message.model_extra or {}
        assert (choice.message.content or None, extra.get("reasoning_content") or None) == (
            message.get("content") or None, message.get("reasoning_content") or None), how
        assert _got_calls(choice, message) == _expected_calls(message), how
        assert choice.finish_reason == ("tool_calls" if message.get("tool_calls") else "stop"), how
        assert stream.diagnostics == [], how
        assert out[0]["choices"][0]["delta"] == {"role": "assistant"}
        assert all(c["choices"][0]["finish_reason"] is None for c in out[:-1])
        final = stream.openai_message()
        assert [c["id"] for c in final.get("tool_calls", [])] == [f"call_{n}" for n in range(len(_expected_calls(message)))]
        assert [c.function.arguments for c in choice.message.tool_calls or []] == [
            c["function"]["arguments"] for c in final.get("tool_calls", [])]
        # errors="recover" with recover_arguments="stream": a good output streams exactly as with
        # errors="strict" (unless a recover policy changes its message, e.g. a delimiter cut at the
        # end is dropped: then it adds up to that message); a damaged one gives respc's message
        # except the calls the diagnostics name
        streamed, got = _stream(module, prefix, chunks, vector.get("tools"), "recover", recover_arguments="stream")
        if _errors(vector) == "strict" and streamed.message == message:
            assert (got, streamed.diagnostics) == (out, []), how
        else:
            _check_diverging(streamed, got, how)
    # the Responses adapter on the same vector (random pieces only, to keep the module fast)
    if not any(isinstance(c["function"]["arguments"], str) for c in message.get("tool_calls") or []):
        stream, events = _responses(module, prefix, chunkings(vector["text"], vector["id"])["random"],
                                    vector.get("tools"), errors=_errors(vector))
        _check_responses(stream, events)


def _check_diverging(stream, out, how=""):
    """recover_arguments="stream" on a damaged output: the accumulated message is respc's message
    except what ``stream.diagnostics`` declares: calls sent whose region then ended malformed or
    truncated (kept in the stream as sent, their raw text not sent as content) and calls whose
    repaired arguments differ from their fragments. Returns the diagnostics' kinds."""
    message = stream.message
    choice = _accumulated(out)
    kinds = {d["kind"] for d in stream.diagnostics}
    assert kinds <= {"streamed-call-malformed", "streamed-arguments-differ"}, (how, stream.diagnostics)
    kept = {d["index"]: d for d in stream.diagnostics if d["kind"] == "streamed-call-malformed"}
    differ = {d["index"] for d in stream.diagnostics if d["kind"] == "streamed-arguments-differ"}
    calls = choice.message.tool_calls or []
    assert [call.id for call in calls] == [f"call_{n}" for n in range(len(calls))], how
    for index, diagnostic in kept.items():
        assert calls[index].function.arguments == diagnostic["sent"], how
    rest = [call for n, call in enumerate(calls) if n not in kept]
    wanted = message.get("tool_calls") or []
    assert [c.function.name for c in rest] == [c["function"]["name"] for c in wanted], how
    for call, want in zip(rest, wanted):
        arguments = want["function"]["arguments"]
        if call.index not in differ:
            got = call.function.arguments
            assert (got if isinstance(arguments, str) else json.loads(got)) == arguments, how
    content = message.get("content") or ""
    join = next((r.join for r in stream.parser.REGIONS if r.slot == "content" and not r.dirty), None) or ""
    for raw in dict.fromkeys(d["text"] for d in kept.values() if d["into"] == "content"):
        for piece in (join + raw, raw + join, raw):
            if piece and piece in content:
                content = content.replace(piece, "", 1)
                break
    assert (choice.message.content or "") == content, how
    assert ((choice.message.model_extra or {}).get("reasoning_content") or "") == (
        message.get("reasoning_content") or ""), how
    assert choice.finish_reason == ("tool_calls" if calls else "stop"), how
    return kinds


def _qwen3():
    return importlib.import_module("respc.generated.qwen3")


def _deltas(out: list[dict]) -> list[dict]:
    return [c["choices"][0]["delta"] for c in out if c["choices"]]


def test_json_arguments_stream_as_written():
    """qwen3 per character: the call's header and name come together (never a call before its
    name: issue 25 item 2), before its first argument text, and the arguments arrive in many
    fragments before the region closes."""
    text = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n</tool_call>'
    stream, out = _stream(_qwen3(), "", list(text))
    calls = [d["tool_calls"][0] for d in _deltas(out) if "tool_calls" in d]
    assert calls[0] == {"index": 0, "id": "call_0", "type": "function", "function": {"name": "get_weather"}}
    fragments = [c["function"]["arguments"] for c in calls[1:]]
    assert "".join(fragments) == '{"city": "Paris", "days": 3}'
    # one character per chunk, except the comma: it is held until the next key shows it is not a
    # trailing comma (which the recover repair drops), then goes out with it
    assert fragments == list('{"city": "Paris"') + [', "'] + list('days": 3}')
    # the last fragment came before the close delimiter was complete
    ends = [n for n, c in enumerate(out) if "tool_calls" in c["choices"][0]["delta"]]
    assert ends[-1] < len(text)


def test_typed_arguments_are_held_until_complete():
    """A string the schema types as integer is never sent as a string: it is held, then sent typed."""
    tools = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"n": {"type": "integer"}, "s": {"type": "string"}}}}}]
    text = '<tool_call>{"name": "f", "arguments": {"s": "ab", "n": "15"}}</tool_call>'
    stream, out = _stream(_qwen3(), "", list(text), tools)
    fragments = [d["tool_calls"][0]["function"].get("arguments") for d in _deltas(out) if "tool_calls" in d]
    fragments = [f for f in fragments if f]
    assert "".join(fragments) == '{"s": "ab", "n": 15}'
    assert any(f.startswith("15") for f in fragments)  # the typed value in one piece
    assert not any('"1' in f or '5"' in f for f in fragments)  # never sent as the string "15"
    assert fragments[:4] == ["{", '"', "s", '"']  # the string parameter streams as written
    assert stream.message["tool_calls"][0]["function"]["arguments"] == {"s": "ab", "n": 15}


def test_text_is_stripped_as_it_streams():
    """Trailing whitespace is held until text follows it; the block's own strip and join apply."""
    stream, out = _stream(_qwen3(), "", ["<think>\n  a ", " b  \n", "</think>", "\n\n  Hi ", "there \n"])
    deltas = _deltas(out)
    reasoning = [d["reasoning_content"] for d in deltas if "reasoning_content" in d]
    content = [d["content"] for d in deltas if "content" in d]
    assert reasoning == ["a", "  b"]
    assert content == ["Hi", " there"]
    assert stream.message["content"] == "Hi there"


def test_finish_reason_length_usage_and_reasoning_field():
    stream, out = _stream(_qwen3(), "", ["<think>x</think>y"], reasoning_field="reasoning", include_usage=True)
    assert _deltas(out)[1] == {"reasoning": "x"}
    assert out[-1]["choices"] == [] and out[-1]["usage"]["total_tokens"] == 0
    parser = _qwen3().ResponseParser("")
    cut = ChatCompletionStream(parser, created=0)
    cut.feed("abc")
    assert cut.finalize("length")[-1]["choices"][0]["finish_reason"] == "length"


def test_default_ids_are_unique_call_ids():
    text = '<tool_call>{"name": "a", "arguments": {}}</tool_call><tool_call>{"name": "b", "arguments": {}}</tool_call>'
    stream = ChatCompletionStream(_qwen3().ResponseParser(""))
    stream.feed(text)
    stream.finalize()
    ids = [c["id"] for c in stream.openai_message()["tool_calls"]]
    assert all(re.fullmatch(r"call_[0-9a-f]{24}", i) for i in ids) and len(set(ids)) == 2


def test_openai_message_shape():
    message = {"role": "assistant", "content": "hi",
               "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"a": 1}}}]}
    assert openai_message(message, ids=lambda n: f"id{n}") == {
        "role": "assistant", "content": "hi",
        "tool_calls": [{"id": "id0", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}]}


def test_sse_lines():
    assert sse([{"a": 1}]) == 'data: {"a": 1}\n\n'


def test_cli_openai_streams_through_a_pipe():
    """``respc parse --openai`` prints each event as soon as its input arrived (stdin still open)."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "respc.compiler.cli", "parse", "qwen3", "--prefix", "",
                             "--openai"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        proc.stdin.write("<think>hm</think>")
        proc.stdin.flush()
        first = json.loads(proc.stdout.readline().removeprefix("data: "))
        assert first["choices"][0]["delta"] == {"role": "assistant"}
        assert proc.stdout.readline() == "\n"
        second = json.loads(proc.stdout.readline().removeprefix("data: "))
        assert second["choices"][0]["delta"] == {"reasoning_content": "hm"}
        assert proc.stdout.readline() == "\n"
        proc.stdin.write('Hi<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>')
        proc.stdin.close()
        rest = proc.stdout.read().split("\n\n")
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == 0
    assert rest[-2:] == ["data: [DONE]", ""]
    chunks = [json.loads(line.removeprefix("data: ")) for line in rest[:-2]]
    choice = _accumulated([first, second] + chunks)
    assert choice.message.content == "Hi" and choice.finish_reason == "tool_calls"
    assert choice.message.tool_calls[0].id == "call_0"
    assert json.loads(choice.message.tool_calls[0].function.arguments) == {"a": 1}


def test_docs_table_says_how_each_family_streams():
    from support import REPO
    from respc.openai import argument_streaming

    doc = (REPO / "docs" / "openai.md").read_text(encoding="utf-8")
    for name in sorted(TEMPLATES):
        plan = argument_streaming(importlib.import_module(f"respc.generated.{name}").ResponseParser)
        cell = ", ".join(f"`{k}`: {v}" for k, v in plan.items()) or "no tool calls"
        assert f"| `{name}` | {cell} |" in doc, name


# --- Responses API events -------------------------------------------------------------------

def _responses(module, prefix, chunks, tools=None, finish_reason=None, errors="strict"):
    """(stream, events) of ``chunks`` through ``ResponsesStream``; the same run through
    ``feed_sse``/``finalize_sse`` must print exactly :func:`responses_sse` of those events."""
    from respc.openai import ResponsesStream, responses_sse

    def make():
        return ResponsesStream(module.ResponseParser(prefix, tools, errors=errors), ids=lambda n: f"call_{n}",
                               response_id="resp_test", created_at=0)

    stream, twin = make(), make()
    events, text = [], []
    for chunk in chunks:
        events.extend(stream.feed(chunk))
        text.append(twin.feed_sse(chunk))
    events.extend(stream.finalize(finish_reason))
    text.append(twin.finalize_sse(finish_reason))
    assert "".join(text) == responses_sse(events)
    return stream, events


def _check_responses(stream, events):
    """Feed ``events`` to the openai package's ResponseStreamState; check the deltas add up to the
    ``.done`` events, the completed output and respc's message."""
    from openai._models import construct_type
    from openai.lib.streaming.responses._responses import ResponseStreamState
    from openai.types.responses import ResponseStreamEvent
    from openai._types import omit

    state = ResponseStreamState(input_tools=omit, text_format=omit)
    completed = None
    for event in events:
        for out in state.handle_event(construct_type(type_=ResponseStreamEvent, value=event)):
            if out.type == "response.completed":
                completed = out.response
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    deltas: dict = {}
    for event in events:
        if event["type"].endswith(".delta"):
            deltas[event["item_id"]] = deltas.get(event["item_id"], "") + event["delta"]
        elif event["type"] in ("response.output_text.done", "response.reasoning_text.done"):
            assert deltas.get(event["item_id"], "") == event["text"]
        elif event["type"] == "response.function_call_arguments.done":
            assert deltas.get(event["item_id"], "") == event["arguments"]
    message = stream.message
    content = "".join(part.text for item in completed.output if item.type == "message" for part in item.content)
    reasoning = "".join(part.text for item in completed.output if item.type == "reasoning"
                        for part in item.content or [])
    calls = [(item.call_id, item.name, json.loads(item.arguments)) for item in completed.output
             if item.type == "function_call"]
    assert content == (message.get("content") or "")
    assert reasoning == (message.get("reasoning_content") or "")
    assert calls == [(f"call_{n}", c["function"]["name"], c["function"]["arguments"])
                     for n, c in enumerate(message.get("tool_calls") or [])]
    assert stream.chat.diagnostics == []


RESPONSES_CASES = [
    ("qwen3", "<think>\nhm, ok\n</think>\n\nLet me look. <tool_call>\n{\"name\": \"get_weather\", "
              "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call><tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>"),
    ("qwen3", "Just an answer.\n"),
    ("mistral_small_3_2", "Sure.[TOOL_CALLS]add[ARGS]{\"a\": 1, \"b\": [2, 3]}"),
    ("qwen3_coder", "<tool_call>\n<function=f>\n<parameter=x>\n1\n</parameter>\n</function>\n</tool_call>"),
]


@pytest.mark.parametrize("how", ["whole", "chars", "random"])
@pytest.mark.parametrize("family,text", RESPONSES_CASES, ids=[f"{f}-{n}" for n, (f, _) in enumerate(RESPONSES_CASES)])
def test_responses_events_accumulate_to_the_message(family, text, how):
    module = importlib.import_module(f"respc.generated.{family}")
    stream, events = _responses(module, "", chunkings(text, family)[how])
    assert events[0]["type"] == "response.created" and events[-1]["type"] == "response.completed"
    _check_responses(stream, events)


def test_responses_length_is_incomplete():
    stream, events = _responses(_qwen3(), "", ["abc"], finish_reason="length")
    assert events[-1]["type"] == "response.incomplete"
    assert events[-1]["response"]["incomplete_details"] == {"reason": "max_output_tokens"}


def _argument_pieces(out: list[dict]) -> list[tuple[int, str, str]]:
    """(chunk number, "name" | "arguments", text) of every tool-call delta, in order."""
    got = []
    for n, chunk in enumerate(out):
        for call in chunk["choices"][0]["delta"].get("tool_calls", ()):
            for key, piece in call.get("function", {}).items():
                got.append((n, key, piece))
    return got


def test_xml_parameters_stream_as_written():
    """qwen3_coder per character: the name goes out at the open delimiter; a string parameter
    streams one character per chunk as JSON string text; a parameter the schema types as integer
    is held until its closing tag, then sent typed; the newline the tag_pattern strips before
    ``</parameter>`` is never sent."""
    tools = [{"type": "function", "function": {"name": "write", "parameters": {
        "type": "object", "properties": {"path": {"type": "string"}, "n": {"type": "integer"}}}}}]
    text = ("<tool_call>\n<function=write>\n<parameter=n>\n12\n</parameter>\n<parameter=path>\n/tmp/a.txt\n"
            "</parameter>\n<parameter=body>\n" + "x" * 40 + "\n</parameter>\n</function>\n</tool_call>")
    module = importlib.import_module("respc.generated.qwen3_coder")
    stream, out = _stream(module, "", list(text), tools)
    pieces = _argument_pieces(out)
    assert [p for _, k, p in pieces if k == "name"] == ["write"]
    args = [p for _, k, p in pieces if k == "arguments"]
    assert "".join(args) == '{"n": 12, "path": "/tmp/a.txt", "body": "' + "x" * 40 + '"}'
    # typed: one piece at its closing tag; strings: one character per chunk, the closing quote at
    # </parameter>, the brace at the close
    assert args == (['{"n": 12', ', "path": "/'] + list("tmp/a.txt") + ['"', ', "body": "x'] + ["x"] * 39
                    + ['"', "}"])
    assert not any("\\n" in piece for piece in args)  # the stripped newline was never sent
    # each string character went out before the closing tag was complete
    first_x = next(n for n, k, p in pieces if p == "x")
    assert first_x < text.index("x" * 40) + 40
    assert stream.diagnostics == [] and stream.message["tool_calls"][0]["function"]["arguments"] == {
        "n": 12, "path": "/tmp/a.txt", "body": "x" * 40}


def test_xml_string_values_are_escaped_and_stripped_as_they_stream():
    """minimax_m2 (``\\s*`` around the value): leading whitespace is dropped, inner whitespace
    sent once text follows it, trailing whitespace never sent; quotes, backslashes and newlines
    are escaped piece by piece; an untyped value that looks like JSON stays a string."""
    value = 'say "hi"\\n  then\ttab \\'
    text = ('<minimax:tool_call>\n<invoke name="f">\n<parameter name="a">\n   ' + value + '  \n </parameter>\n'
            '<parameter name="b">[1, 2]</parameter>\n</invoke>\n</minimax:tool_call>')
    module = importlib.import_module("respc.generated.minimax_m2")
    for chunks in (list(text), [text[:70], text[70:75], text[75:]]):
        stream, out = _stream(module, "", chunks)
        args = [p for _, k, p in _argument_pieces(out) if k == "arguments"]
        assert stream.message["tool_calls"][0]["function"]["arguments"] == {"a": value, "b": "[1, 2]"}
        assert json.loads("".join(args)) == {"a": value, "b": "[1, 2]"}
        assert "".join(args) == json.dumps({"a": value, "b": "[1, 2]"}, ensure_ascii=False)
        assert stream.diagnostics == []
    assert len(args) == 3 or len(args) > 20  # pieces (three feeds) or characters (per character)


def test_xml_typed_by_the_value_parser_is_held():
    """deepseek_v3_2: ``string="false"`` values go through the json value parser, so they are held
    and sent decoded; ``string="true"`` values stream as text."""
    text = ('<｜DSML｜invoke name="f">\n<｜DSML｜parameter name="n" string="false">[1, 2]</｜DSML｜parameter>\n'
            '<｜DSML｜parameter name="s" string="true">ab</｜DSML｜parameter>\n</｜DSML｜invoke>')
    module = importlib.import_module("respc.generated.deepseek_v3_2")
    stream, out = _stream(module, "<｜Assistant｜></think>", list(text))
    args = [p for _, k, p in _argument_pieces(out) if k == "arguments"]
    assert args[0] == '{"n": [1, 2]'
    assert "".join(args) == '{"n": [1, 2], "s": "ab"}' and ', "s": "a' in args
    assert stream.message["tool_calls"][0]["function"]["arguments"] == {"n": [1, 2], "s": "ab"}
    assert stream.diagnostics == []


def test_recover_sends_a_malformed_call_as_content():
    """errors="recover": a body that does not parse goes to the content (as the message has it);
    tool arguments wait for the close, so nothing of the bad call was sent as a call."""
    text = 'Hi <tool_call>{"name": "f", "arguments": {"a": </tool_call> ok'
    for chunks in (list(text), [text]):
        stream = ChatCompletionStream(_qwen3().ResponseParser("", errors="recover"), created=0)
        out = [c for piece in chunks for c in stream.feed(piece)] + stream.finalize()
        choice = _accumulated(out)
        assert choice.message.content == stream.message["content"]
        assert '<tool_call>{"name": "f"' in stream.message["content"]
        assert not choice.message.tool_calls and choice.finish_reason == "stop"
        assert stream.diagnostics == []


def test_xml_repeated_parameter_parses_to_the_last_value():
    """glm4_5: a key written twice is sent twice; the fragments parse (last wins, as in JSON
    readers) to the message's arguments, which keep the last value; a typed value is held."""
    tools = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"n": {"type": "number"}, "s": {"type": "string"}}}}}]
    text = ("<tool_call>f\n<arg_key>s</arg_key>\n<arg_value>one</arg_value>\n<arg_key>n</arg_key>\n"
            "<arg_value>2.5</arg_value>\n<arg_key>s</arg_key>\n<arg_value>two</arg_value>\n</tool_call>")
    module = importlib.import_module("respc.generated.glm4_5")
    stream, out = _stream(module, "", list(text), tools)
    args = [p for _, k, p in _argument_pieces(out) if k == "arguments"]
    assert stream.message["tool_calls"][0]["function"]["arguments"] == {"s": "two", "n": 2.5}
    assert "".join(args) == '{"s": "one", "n": 2.5, "s": "two"}'
    assert ', "n": 2.5' in args and "o" in args  # the number in one piece, the strings by characters
    assert json.loads("".join(args)) == stream.message["tool_calls"][0]["function"]["arguments"]
    assert stream.diagnostics == []


def test_fast_feed_equals_the_general_path():
    """The instance's fast ``feed`` and the class's general ``feed`` give the same chunks (on
    reasoning, text with held whitespace and a tool call, in 1- and 3-character chunks); a
    subclass that overrides ``feed`` keeps its override."""
    text = "<think>\n a  b \n</think>\n\nHi  there \n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>"
    for size in (1, 3):
        chunks = [text[i:i + size] for i in range(0, len(text), size)]
        results = []
        for general in (False, True):
            stream = ChatCompletionStream(_qwen3().ResponseParser(""), ids=lambda n: f"call_{n}",
                                          completion_id="x", created=0)
            feed = (lambda piece, s=stream: ChatCompletionStream.feed(s, piece)) if general else stream.feed
            out = [c for piece in chunks for c in feed(piece)] + stream.finalize()
            results.append(out)
        assert results[0] == results[1]
        assert "".join(d.get("content", "") for d in _deltas(results[0])) == "Hi  there"

    class Counting(ChatCompletionStream):
        calls = 0

        def feed(self, text):
            Counting.calls += 1
            return super().feed(text)

    stream = Counting(_qwen3().ResponseParser(""))
    stream.feed("a")
    stream.feed("b")
    assert Counting.calls == 2


def _random_chunkings(text: str, seed: str) -> dict[str, list[str]]:
    """:func:`chunkings` plus 4-character pieces (the benchmark's) and a second random chunking."""
    import random

    rng = random.Random(seed + "/sse")
    pieces, i = [], 0
    while i < len(text):
        step = rng.randint(1, 12)
        pieces.append(text[i:i + step])
        i += step
    return {**chunkings(text, seed), "fours": [text[i:i + 4] for i in range(0, len(text), 4)], "random2": pieces}


@pytest.mark.skipif(not CORPUS.is_file(), reason="../shared/corpus is absent")
@pytest.mark.parametrize("vector,prefix", _vectors())
def test_shortcuts_equal_the_general_path_and_sse_equals_json_dumps(vector, prefix, monkeypatch):
    """On every vector and chunking, for the vector's errors mode and for errors="recover" with
    recover_arguments="stream": the instance's fast ``feed`` (its text, empty and tool-chunk
    shortcuts, the JSON reader's runs) gives exactly the chunks of the general path (the
    class's ``feed``, the json argument reader as it was before it read by runs, one character at a
    time: tests/old_json_argument_reader.py); and ``feed_sse``/``finalize_sse`` give
    byte for byte ``sse()`` (``json.dumps``) of those chunks plus ``data: [DONE]``."""
    import re as _re

    import old_json_argument_reader

    from respc.runtime.formats import json_ as json_format

    module = importlib.import_module(f"respc.generated.{vector['family']}")

    def stream(errors, options):
        return ChatCompletionStream(module.ResponseParser(prefix, vector.get("tools"), errors=errors),
                                    ids=lambda n: f"call_{n}", completion_id="chatcmpl-test", created=0, **options)

    no_runs = _re.compile(r"(?!)")  # a string-run pattern that never matches: one character at a time
    for errors, options in ((_errors(vector), {}), ("recover", {"recover_arguments": "stream"})):
        for how, chunks in _random_chunkings(vector["text"], vector["id"]).items():
            fast = stream(errors, options)
            got = [c for piece in chunks for c in fast.feed(piece)] + fast.finalize()
            with monkeypatch.context() as patch:
                # (the json reader as it was, one character at a time: tests/old_json_argument_reader.py)
                patch.setattr(json_format, "ArgumentReader", old_json_argument_reader.OldArgumentReader)
                patch.setattr(old_json_argument_reader, "_STRING_RUN", no_runs)
                general = stream(errors, options)
                want = [c for piece in chunks for c in ChatCompletionStream.feed(general, piece)] + general.finalize()
            assert got == want, how
            assert fast.diagnostics == general.diagnostics, how
            text = stream(errors, options)
            events = [text.feed_sse(piece) for piece in chunks]
            assert "".join(events) + text.finalize_sse() == sse(got) + "data: [DONE]\n\n", how
            assert all(e == "" or (e.startswith("data: {") and e.endswith("}\n\n")) for e in events), how


def test_sse_of_unusual_names_usage_and_length():
    """``feed_sse``/``finalize_sse`` equal ``sse()`` of the chunks when the model name, completion
    id and reasoning key need escaping or hold ``%``, with non-ASCII and control characters in the
    text, a usage chunk, a ``length`` finish and without the ``[DONE]`` event."""
    text = "<think>\n r\u00e9so\x01n \"%s\" \\ \ud83d\ude00 </think>\n\n%d\t\u2028tab <tool_call>" \
           '{"name": "f%", "arguments": {"k\\u00e9": "v\\n\u00e9"}}</tool_call>'
    options = dict(model='m%s "q"\u00e9', completion_id="chatcmpl-%d\\", created=7, reasoning_field="why%",
                   include_usage=True, ids=lambda n: f"call_%{n}")
    usage = {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}
    for size in (1, 3, 4, 1000):
        chunks = [text[i:i + size] for i in range(0, len(text), size)]
        for reason in (None, "length"):
            dicts = ChatCompletionStream(_qwen3().ResponseParser(""), **options)
            want = sse([c for piece in chunks for c in dicts.feed(piece)] + dicts.finalize(reason, usage))
            events = ChatCompletionStream(_qwen3().ResponseParser(""), **options)
            got = "".join(events.feed_sse(piece) for piece in chunks) + events.finalize_sse(reason, usage, done=False)
            assert got == want, (size, reason)
            got.encode("utf-8")  # what a server writes to the wire (docs/security.md, "Red team s12b")
            assert got.endswith('"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}}\n\n')
            lines = [json.loads(line[6:]) for line in got.split("\n\n")[:-2]]
            assert lines[-1]["choices"][0]["finish_reason"] == (reason or "tool_calls")
            if reason:
                continue  # (the openai accumulator refuses a "length" completion)
            choice = _accumulated(lines)
            # the surrogate code points go out as JSON escapes: a pair sent in one event reads back as
            # the character it forms, the same UTF-16 text (docs/security.md, "Red team s12b")
            assert events.message["reasoning_content"] == 'r\u00e9so\x01n "%s" \\ \ud83d\ude00'
            assert (choice.message.model_extra["why%"].encode("utf-16-le", "surrogatepass")
                    == events.message["reasoning_content"].encode("utf-16-le", "surrogatepass"))
            assert choice.message.content == "%d\t\u2028tab"


def test_sse_of_a_model_name_with_a_surrogate():
    """A model name, completion id or reasoning key holding a lone surrogate (a str a server took from a
    request without checking it) goes out as its JSON escape in every event, on the fast paths too (the
    event heads are wired once, when the stream is made): ``feed_sse`` equals ``sse()`` of the chunks and
    encodes as UTF-8 (docs/security.md, "Red team s12b"). Text chunks, a call's name and argument
    fragments, each chunking."""
    text = "<think>\nweigh it</think>\n\nThe answer, at some length. <tool_call>" \
           '{"name": "f", "arguments": {"k": "some value"}}</tool_call>'
    options = dict(model="m\ud800", completion_id="chatcmpl-\udfff", created=0, reasoning_field="why\ud83d",
                   ids=lambda n: f"call_{n}")
    for size in (1, 4, 1000):
        chunks = [text[i:i + size] for i in range(0, len(text), size)]
        dicts = ChatCompletionStream(_qwen3().ResponseParser(""), **options)
        want = sse([c for piece in chunks for c in dicts.feed(piece)] + dicts.finalize())
        events = ChatCompletionStream(_qwen3().ResponseParser(""), **options)
        pieces = [events.feed_sse(piece) for piece in chunks] + [events.finalize_sse(done=False)]
        assert "".join(pieces) == want, size
        for piece in pieces:
            piece.encode("utf-8")  # (raised UnicodeEncodeError on the fast paths' events before)
        assert want.count('"model": "m\\ud800"') == want.count("data: ") >= 4


def test_json_reader_string_runs_on_random_bodies(monkeypatch):
    """The JSON reader takes runs (string characters, whitespace, scalars, nested values) in one step: on
    seeded random argument objects (escapes, quotes, control characters, non-ASCII, nesting, typed values
    with tools) in random chunkings, the chunks equal those of the reader as it was, fed one character at
    a time (tests/old_json_argument_reader.py)."""
    import random
    import re as _re

    import old_json_argument_reader

    from respc.runtime.formats import json_ as adapter

    rng = random.Random("runs")
    alphabet = ["a", "bc", " ", '"', "\\", "\n", "\t", "\x01", "\u00e9", "\U0001f600", "{", "}", "[", ",", ":", "/"]
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
        "n": {"type": "integer"}, "s": {"type": "string"}, "o": {"type": "object"}}}}}]
    for trial in range(150):
        arguments = {}
        for _ in range(rng.randint(0, 4)):
            key = rng.choice(["s", "n", "o", 'k"e\\y', "x y", "\u00e9"])
            value = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 20)))
            arguments[key] = rng.choice([value, {"in": [value, 1]}, 5])
        body = json.dumps({"name": "f", "arguments": arguments}, ensure_ascii=rng.random() < 0.3,
                          indent=rng.choice([None, 1]))
        text = "<tool_call>\n" + body + "\n</tool_call>"
        cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(0, 40))))
        chunks = [text[a:b] for a, b in zip([0] + cuts, cuts + [len(text)])]
        given = tools if trial % 2 else None
        results = []
        for runs in (True, False):
            with monkeypatch.context() as patch:
                if not runs:  # the json reader as it was, one character at a time (tests/old_json_argument_reader.py)
                    patch.setattr(adapter, "ArgumentReader", old_json_argument_reader.OldArgumentReader)
                    patch.setattr(old_json_argument_reader, "_STRING_RUN", _re.compile(r"(?!)"))
                stream, out = _stream(_qwen3(), "", chunks, given)
            results.append((out, stream.diagnostics))
        assert results[0] == results[1], text
        assert results[0][1] == [], text
        assert json.loads(_args(results[0][0])) == stream.message["tool_calls"][0]["function"]["arguments"], text


XML_FORMS = {  # family: (call opening, one parameter, call closing), as the family's template reads them
    "qwen3_coder": ("<tool_call>\n<function=f>\n", "<parameter={k}>\n{v}\n</parameter>\n", "</function>\n</tool_call>"),
    "minimax_m2": ('<minimax:tool_call>\n<invoke name="f">\n', '<parameter name="{k}">{v}</parameter>\n',
                   "</invoke>\n</minimax:tool_call>"),
    "glm4_5": ("<tool_call>f\n", "<arg_key>{k}</arg_key>\n<arg_value>{v}</arg_value>\n", "</tool_call>"),
}
#: value pieces that stress holding: cut-off closing tags, whitespace, escapes, non-ASCII
XML_ALPHABET = ["a", " ", "\n", "<", "/", ">", '"', "\\", "</param", "</parameter", "</arg", "é", "\t", "1", "{"]


@pytest.mark.parametrize("family", sorted(XML_FORMS))
def test_xml_random_values_and_chunkings(family):
    """Seeded random parameter values (typed and untyped, with and without tools) in random
    chunkings: the message equals the whole-text parse, no diagnostics, and the fragments parse
    to its arguments."""
    import random

    rng = random.Random(family)
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
        "n": {"type": "integer"}, "s": {"type": "string"}, "o": {"type": "object"}}}}}]
    module = importlib.import_module(f"respc.generated.{family}")
    opening, parameter, closing = XML_FORMS[family]
    checked = 0
    for trial in range(120):
        params = []
        for _ in range(rng.randint(0, 3)):
            key = rng.choice(["s", "n", "o", "x"])
            value = "".join(rng.choice(XML_ALPHABET) for _ in range(rng.randint(0, 12)))
            if key == "n" and rng.random() < 0.7:
                value = str(rng.randint(-50, 50))
            if key == "o" and rng.random() < 0.7:
                value = '{"a": [1, "x"]}'
            params.append(parameter.format(k=key, v=value))
        text = opening + "".join(params) + closing
        cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(0, 30))))
        chunks = [text[a:b] for a, b in zip([0] + cuts, cuts + [len(text)])]
        given = tools if trial % 2 else None
        try:
            expect = module.parse_response(text, prefix="", tools=given)
        except ContentParseError as exc:
            # a value holding its own closing tag leaves text no tag accounts for (D7): the
            # stream raises the same error
            assert "matches no tag_pattern" in str(exc), text
            with pytest.raises(ContentParseError, match="matches no tag_pattern"):
                _stream(module, "", chunks, given)
            checked += 1
            continue
        stream, out = _stream(module, "", chunks, given)
        assert stream.message == expect and stream.diagnostics == [], text
        args = "".join(p for _, k, p in _argument_pieces(out) if k == "arguments")
        assert json.loads(args) == expect["tool_calls"][0]["function"]["arguments"], text
        checked += 1
    assert checked == 120


# --- errors="recover": recover_arguments="hold" | "stream" --------------------------------------

def _run(family, text, chunks, mode, finish_reason=None, tools=None):
    module = importlib.import_module(f"respc.generated.{family}")
    stream = ChatCompletionStream(module.ResponseParser("", tools, errors="recover"), ids=lambda n: f"call_{n}",
                                  completion_id="x", created=0, recover_arguments=mode)
    out = [c for piece in chunks for c in stream.feed(piece)] + stream.finalize(finish_reason)
    return stream, out


def _args(out: list[dict]) -> str:
    return "".join(p for _, k, p in _argument_pieces(out) if k == "arguments")


def test_stream_keeps_a_truncated_call_and_names_it():
    """qwen3, the output cut inside a call: "hold" sends no call (the message has none);
    "stream" has sent the call as it was written and keeps it, says so in a diagnostic, and the
    finish reason is that of a stream with a call (or what finalize is told)."""
    text = 'Hi <tool_call>{"name": "f", "arguments": {"a": 1'
    for chunks in (list(text), [text]):
        stream, out = _run("qwen3", text, chunks, "hold")
        assert stream.message == {"role": "assistant", "content": "Hi"}
        assert _argument_pieces(out) == [] and out[-1]["choices"][0]["finish_reason"] == "stop"
        assert stream.diagnostics == []
        stream, out = _run("qwen3", text, chunks, "stream")
        assert stream.message == {"role": "assistant", "content": "Hi"}
        choice = _accumulated(out)
        assert choice.message.content == "Hi" and choice.finish_reason == "tool_calls"
        assert [(c.id, c.function.name, c.function.arguments) for c in choice.message.tool_calls] == [
            ("call_0", "f", '{"a": 1')]
        assert [{k: d[k] for k in ("kind", "index", "cause", "text", "into", "sent", "start", "end")}
                for d in stream.diagnostics] == [
            {"kind": "streamed-call-malformed", "index": 0, "cause": "truncated",
             "text": '<tool_call>{"name": "f", "arguments": {"a": 1', "into": None, "sent": '{"a": 1',
             "start": 3, "end": len(text)}]
        assert _check_diverging(stream, out) == {"streamed-call-malformed"}
    stream, out = _run("qwen3", text, list(text), "stream", finish_reason="length")
    assert out[-1]["choices"][0]["finish_reason"] == "length"


def test_stream_malformed_call_sent_is_not_also_content():
    """qwen3, a call that closes malformed: per character its beginning was already sent, so it
    stays a call and its raw text is not sent as content (the message has it in content); fed
    whole, nothing of it was sent before the parser found it malformed, so "stream" gives exactly
    what "hold" gives (raw text to content, no call)."""
    text = 'Hi <tool_call>{"name": "f", "arguments": {"a": </tool_call> ok'
    raw = '<tool_call>{"name": "f", "arguments": {"a": </tool_call>'
    stream, out = _run("qwen3", text, list(text), "stream")
    assert stream.message["content"] == "Hi" + raw + "ok"
    choice = _accumulated(out)
    assert (choice.message.content, choice.finish_reason) == ("Hiok", "tool_calls")
    assert [(c.function.name, c.function.arguments) for c in choice.message.tool_calls] == [("f", '{"a": ')]
    assert [(d["kind"], d["cause"], d["text"], d["into"]) for d in stream.diagnostics] == [
        ("streamed-call-malformed", "malformed", raw, "content")]
    assert _check_diverging(stream, out) == {"streamed-call-malformed"}
    whole = [_run("qwen3", text, [text], mode)[1] for mode in ("hold", "stream")]
    assert whole[0] == whole[1]
    assert _accumulated(whole[1]).message.content == "Hi" + raw + "ok"


def test_stream_trailing_comma_is_held_and_dropped():
    """hermes2pro, trailing commas the recover repair removes: each comma is held until what
    follows shows whether it is trailing, so the fragments parse to the repaired arguments (no
    "streamed-arguments-differ"), and they still arrive before the region closes."""
    text = '<tool_call>\n{"name": "f", "arguments": {"a": 1, "b": [1, 2,],}}\n</tool_call>'
    for chunks in (list(text), [text[:40], text[40:60], text[60:]]):
        stream, out = _run("hermes2pro", text, chunks, "stream")
        assert stream.message["tool_calls"][0]["function"]["arguments"] == {"a": 1, "b": [1, 2]}
        assert [d["message"] for d in stream.parser.diagnostics] == ["trailing comma before ']' removed",
                                                                     "trailing comma before '}' removed"]
        assert _args(out) == '{"a": 1, "b": [1, 2]}' and stream.diagnostics == []
    stream = ChatCompletionStream(importlib.import_module("respc.generated.hermes2pro").ResponseParser(
        "", errors="recover"), recover_arguments="stream")
    fed = [_args(stream.feed(c)) for c in text]
    assert max(n for n, piece in enumerate(fed) if piece) == text.index("}}")  # the arguments' "}" as written


def test_stream_repairs_that_need_no_retraction():
    """qwen3: a raw newline in a string goes out escaped, Python literals as JSON literals (held
    until the word is complete), and brackets missing at the region's close are sent at the close:
    the fragments parse to the repaired arguments, no adapter diagnostic."""
    text = '<tool_call>{"name": "f", "arguments": {"s": "x\ny", "b": True, "c": [None, False], "d": {"e": 1</tool_call>'
    want = {"s": "x\ny", "b": True, "c": [None, False], "d": {"e": 1}}
    for chunks in (list(text), [text]):
        stream, out = _run("qwen3", text, chunks, "stream")
        assert stream.message["tool_calls"][0]["function"]["arguments"] == want
        assert _args(out) == '{"s": "x\\ny", "b": true, "c": [null, false], "d": {"e": 1}}'
        assert stream.diagnostics == []
    args = [p for _, k, p in _argument_pieces(_run("qwen3", text, list(text), "stream")[1]) if k == "arguments"]
    assert "true" in args and "T" not in "".join(args) and args[-1] == "}}"


def test_stream_arguments_differ_is_reported():
    """minimax_m2, a closing tag written inside a value (kept up to the last one by the repair):
    streamed, the value ended at the first closing tag; the call's fragments cannot be corrected
    without retracting, so the difference is reported with what was sent."""
    text = ('<minimax:tool_call>\n<invoke name="f">\n<parameter name="a">x</parameter> y</parameter>\n'
            '</invoke>\n</minimax:tool_call>')
    stream, out = _run("minimax_m2", text, list(text), "stream")
    assert stream.message["tool_calls"][0]["function"]["arguments"] == {"a": "x</parameter> y"}
    assert [(d["kind"], d["index"], d["sent"], d["message"]) for d in stream.diagnostics] == [
        ("streamed-arguments-differ", 0, '{"a": "x"}', {"a": "x</parameter> y"})]
    assert _check_diverging(stream, out) == {"streamed-arguments-differ"}
    hold, out = _run("minimax_m2", text, list(text), "hold")
    assert hold.diagnostics == [] and _args(out) == '{"a": "x</parameter> y"}'


def test_recover_arguments_checked_and_passed_to_responses():
    from respc.openai import ResponsesStream

    with pytest.raises(ValueError, match="recover_arguments must be 'hold' or 'stream', got 'later'"):
        ChatCompletionStream(_qwen3().ResponseParser("", errors="recover"), recover_arguments="later")
    text = '<tool_call>{"name": "f", "arguments": {"a": 1'
    stream = ResponsesStream(_qwen3().ResponseParser("", errors="recover"), ids=lambda n: f"call_{n}",
                             response_id="r", created_at=0, recover_arguments="stream")
    events = [e for c in text for e in stream.feed(c)]
    deltas = "".join(e["delta"] for e in events if e["type"] == "response.function_call_arguments.delta")
    assert deltas == '{"a": 1'  # streamed before the end of the output
    end = stream.finalize("length")
    assert end[-1]["type"] == "response.incomplete"
    assert [d["kind"] for d in stream.chat.diagnostics] == ["streamed-call-malformed"]


def test_xml_opening_with_an_optional_tail_waits_for_it():
    """minicpm4 (``<param name="k">`` then an optional ``<![CDATA[``) per character: the opening is
    not settled at ``<!`` (it may still be the CDATA start), so the value streams without it."""
    text = ('<function name="f"><param name="city"><![CDATA[北\n京]]></param><param name="d">x</param>'
            '</function>\n')
    module = importlib.import_module("respc.generated.minicpm4")
    for errors in ("strict", "recover"):
        stream, out = _stream(module, "<|im_start|>assistant\n", list(text), errors=errors, recover_arguments="stream")
        args = [p for _, k, p in _argument_pieces(out) if k == "arguments"]
        assert stream.message["tool_calls"][0]["function"]["arguments"] == {"city": "北\n京", "d": "x"}
        assert "".join(args) == '{"city": "北\\n京", "d": "x"}'   # never "<![CDATA["
        assert "京" in args and stream.diagnostics == []  # the value streamed character by character


def test_dumps_is_json_dumps():
    """The adapter's JSON writer (a C encoder built once) gives ``json.dumps(value,
    ensure_ascii=False)``'s text, and its error for a value JSON cannot hold."""
    from respc.openai import _dumps

    values = ["", "a\u00e9\n\t\"\\\x01\u2028\ud83d", 0, -12345678901234567890, 1.5, 1e300, float("nan"), float("inf"),
              True, False, None, [], {}, {"k\u00e9": [1, {"n": None, "f": -0.0}], "1": "x"}, {1: "int key"}, ("t", 1)]
    for value in values:
        assert _dumps(value) == json.dumps(value, ensure_ascii=False), value
    with pytest.raises(TypeError, match="Object of type set is not JSON serializable"):
        _dumps({"a": {1}})


def test_many_text_blocks_cost_linear_time():
    """hermes2pro, errors "recover", arguments streamed: many 300-character content blocks, each
    followed by a call, in 256-character feeds. Twice the output costs at most 2.5 times the time
    (support.doubling_times). Each block's close copied the whole content stored so far and compared it
    with the whole content sent (measured 5.2 times for twice the blocks); now it compares the
    block with what was sent since the last close, as the JavaScript adapter does
    (docs/openai.md)."""
    from respc.generated import hermes2pro
    from support import doubling_times

    def run(blocks: int) -> None:
        text = ("x" * 300 + ' <tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>') * blocks
        stream = ChatCompletionStream(hermes2pro.ResponseParser("", None, errors="recover"), recover_arguments="stream")
        sent = []
        for k in range(0, len(text), 256):
            sent += stream.feed(text[k:k + 256])
        stream.finalize()
        content = stream.openai_message()["content"]
        assert content == "x" * 300 * blocks and not stream.diagnostics

    run(200)
    small, large = doubling_times(lambda: run(2500), lambda: run(5000), repeats=2)
    print(f"python delta adapter, many text blocks: {small * 1e3:.0f} ms -> {large * 1e3:.0f} ms for twice the blocks")
    assert large <= 2.5 * small, (small, large)


@pytest.mark.parametrize("how", ["feed", "feed_sse", "recover-stream"])
def test_long_whitespace_run_costs_linear_time(how):
    """hermes2pro: a content block whose text has a long run of whitespace between two words, fed
    in 4-character chunks (the fast feed, feed_sse, and the event loop of recover with arguments
    streamed). The run is held (trailing whitespace of a stripped block) until the next word comes:
    twice the run costs at most 2.5 times the time. The held whitespace was copied and stripped
    again with every chunk (measured 0.12 -> 0.47 -> 4.0 s for 200k -> 400k -> 800k spaces); it is
    now kept in pieces and joined once (docs/openai.md)."""
    from respc.generated import hermes2pro
    from support import best_time

    def run(n: int) -> None:
        text = "a" + " " * n + "b" + " " * 7
        errors, recover = ("recover", "stream") if how == "recover-stream" else ("strict", "hold")
        stream = ChatCompletionStream(hermes2pro.ResponseParser("", None, errors=errors), recover_arguments=recover)
        feed = stream.feed_sse if how == "feed_sse" else stream.feed
        if how == "recover-stream":  # (a tool region open and closed first: not the fast path)
            feed('<tool_call>{"name": "f", "arguments": {}}</tool_call>')
        for k in range(0, len(text), 4):
            feed(text[k:k + 4])
        stream.finalize()
        assert stream.openai_message()["content"] == "a" + " " * n + "b"

    run(1000)
    small, large = best_time(lambda: run(200_000), 2), best_time(lambda: run(400_000), 2)
    print(f"python delta adapter, {how}, a long whitespace run: {small * 1e3:.0f} ms -> {large * 1e3:.0f} ms for twice the run")
    assert large <= 2.5 * small, (small, large)


#: recover, arguments streamed: a tool region that ends malformed or cut off after one of its calls
#: went out, holding another call whose name never came (template, feeds)
NAMELESS_KEPT = [
    ("apertus", ['<|tools_prefix|>{"a": "x"}{"name": "g", "arguments": {"c": "P']),
    ("mistral_nemo", ['[TOOL_CALLS][{"name": "f", "arguments": {"a": 1}}, ', '{"arguments": {"b": 2}} junk']),
    ("hermes2pro", ['<tool_call>[{"name": "f", "arguments": {"a": 1}}, ', '{"arguments": {"b": 2}}] junk</tool_call>',
                    '<tool_call>{"name": "h", "arguments": {}}</tool_call>']),
]


@pytest.mark.parametrize("name, feeds", NAMELESS_KEPT, ids=[n for n, _ in NAMELESS_KEPT])
def test_a_call_whose_name_never_came_is_not_kept(name, feeds):
    """errors="recover", recover_arguments="stream": a region kept because a delta of one call
    left keeps only the calls that went out. A call whose name never came was kept too: its
    arguments went out as a call with no id and no name, openai_message listed a call the client
    never got, and the next call's index skipped one (the OpenAI SDK's accumulator raises
    IndexError on index 1 before index 0). Now each call's first delta carries its id and name,
    indices run 0, 1, ... as calls go out, and the accumulated message is openai_message
    (docs/openai.md, "Arguments with errors="recover"")."""
    stream, chunks = _stream(importlib.import_module(f"respc.generated.{name}"), "", feeds, errors="recover",
                             recover_arguments="stream")
    seen = []
    for chunk in chunks:
        for delta in chunk["choices"][0]["delta"].get("tool_calls", ()):
            if delta["index"] not in seen:
                assert delta.get("id") and delta["function"].get("name"), delta
                seen.append(delta["index"])
    assert seen == list(range(len(seen))) and seen, seen
    choice = _accumulated(chunks)
    message = stream.openai_message()
    assert [(c.id, c.function.name, c.function.arguments) for c in choice.message.tool_calls] == \
        [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in message["tool_calls"]]
    assert {d["index"] for d in stream.diagnostics if d.get("kind") == "streamed-call-malformed"} <= set(seen)


def test_text_argument_whitespace_run_costs_linear_time():
    """functionary_v3_1's ``<|python_tag|>`` body streamed as the one string argument ``code``
    (runtime/formats/text.py TextArgs), with a long run of whitespace inside it, in 4-character
    feeds: twice the run costs at most 2.5 times the time. The held trailing whitespace was copied
    and stripped again with every chunk (measured 0.42 -> 1.62 -> 7.63 s for 100k -> 200k -> 400k
    spaces); it is kept in pieces and joined once when text follows (docs/openai.md)."""
    from respc.generated import functionary_v3_1
    from support import best_time

    def run(n: int) -> None:
        text = "<|python_tag|>  a" + " " * n + "b \n<|eom_id|>"
        stream = ChatCompletionStream(functionary_v3_1.ResponseParser("", None), ids=lambda k: f"call_{k}")
        for k in range(0, len(text), 4):
            stream.feed(text[k:k + 4])
        stream.finalize()
        assert stream.openai_message()["tool_calls"][0]["function"]["arguments"] == '{"code": "a' + " " * n + 'b"}'

    run(1000)
    small, large = best_time(lambda: run(100_000), 2), best_time(lambda: run(200_000), 2)
    print(f"python delta adapter, a whitespace run in a text argument: {small * 1e3:.0f} ms -> {large * 1e3:.0f} ms")
    assert large <= 2.5 * small, (small, large)
