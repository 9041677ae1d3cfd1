"""Streamed and whole answers agree on damaged output (issue 25 item 5).

For every corpus vector, peer vector and catalogue family case whose output respc reads with
diagnostics under ``errors="recover"`` (damaged or cut off), the message an OpenAI client
accumulates from :class:`respc.openai.ChatCompletionStream` (the ``openai`` package's own
``ChatCompletionStreamState``), whole, per character and in random pieces, is compared with the
non-streamed message (:func:`respc.openai.openai_message` of ``parse_response``):

- ``recover_arguments="hold"`` (the default, and what the vLLM and SGLang plug-ins use): equal --
  content, reasoning, tool names, ids and parsed arguments;
- ``recover_arguments="stream"``: equal, or the stream's ``diagnostics`` name the difference (a
  call sent before its body turned out damaged stays as sent: docs/openai.md, "recover_arguments");
  and never a call without a name.
"""

from __future__ import annotations

import importlib
import json

import pytest

from support import SHARED, chunkings, load_jsonl

openai_streaming = pytest.importorskip("openai.lib.streaming.chat")
from openai.types.chat import ChatCompletionChunk  # noqa: E402

from respc.openai import ChatCompletionStream, openai_message  # noqa: E402
from serving_support import FAMILIES_DIR  # noqa: E402


def _module(family: str):
    try:
        return importlib.import_module(f"respc.generated.{family}")
    except ModuleNotFoundError:
        return None


def _damaged() -> list:
    """(id, family, prefix, text, tools) of every vector and family case read with diagnostics."""
    items = []
    for name in ("vectors.jsonl", "peer_vectors.jsonl", "peer_vectors2.jsonl"):
        path = SHARED / "corpus" / name
        if path.is_file():
            items += [(v["id"], v["family"], v["prefix"], v["text"], v.get("tools")) for v in load_jsonl(path)]
    for path in sorted(FAMILIES_DIR.glob("*.json")):
        for case in json.loads(path.read_text(encoding="utf-8"))["cases"]:
            items.append((f"{path.stem}/{case['name']}", path.stem, case["prefix"], case["text"], case.get("tools")))
    params = []
    for vid, family, prefix, text, tools in items:
        module = _module(family)
        if module is None:
            continue
        parser = module.ResponseParser(prefix, tools, errors="recover")
        parser.feed(text)
        parser.finalize()
        if parser.diagnostics:
            params.append(pytest.param(family, prefix, text, tools, id=vid))
    return params


def _view(message: dict) -> dict:
    calls = []
    for call in message.get("tool_calls") or []:
        arguments = call["function"]["arguments"]
        try:
            arguments = json.loads(arguments)
        except (TypeError, ValueError):
            pass
        calls.append((call["id"], call["function"]["name"], arguments))
    return {"content": message.get("content") or None, "reasoning": message.get("reasoning_content") or None,
            "calls": calls}


def _accumulated(chunks: list[dict]) -> dict:
    state = openai_streaming.ChatCompletionStreamState()
    for chunk in chunks:
        state.handle_chunk(ChatCompletionChunk.model_validate(chunk))
    message = state.get_final_completion().choices[0].message
    return {"content": message.content, "reasoning_content": (message.model_extra or {}).get("reasoning_content"),
            "tool_calls": [{"id": c.id, "function": {"name": c.function.name, "arguments": c.function.arguments}}
                           for c in message.tool_calls or []]}


DAMAGED = _damaged()

#: recover_arguments="stream" sends a call that the region's close then finds malformed and hands to
#: content as raw text, with no diagnostic (the client sees the call and its text): left for the
#: adapter's owner, noted in the issue 25 report
#: streamed calls found malformed later without a diagnostic (none known: a mode="stream" call the
#: region then finds malformed is declared by a streamed-call-malformed diagnostic)
STREAM_UNDECLARED: set[str] = set()


def test_damaged_outputs_are_found():
    """The parametrization is not empty where the corpus is present (the family cases alone have some)."""
    assert len(DAMAGED) >= 5


@pytest.mark.parametrize("family,prefix,text,tools", DAMAGED)
@pytest.mark.parametrize("mode", ["hold", "stream"])
def test_stream_equals_whole(family, prefix, text, tools, mode, request):
    if mode == "stream" and request.node.callspec.id.split("-", 1)[1] in STREAM_UNDECLARED:
        request.applymarker(pytest.mark.xfail(strict=True, reason="a streamed call found malformed later, undeclared"))
    module = _module(family)
    whole = _view(openai_message(module.parse_response(text, prefix=prefix, tools=tools, errors="recover"),
                                 ids=lambda n: f"call_{n}"))
    for how, pieces in chunkings(text, family + text[:20]).items():
        stream = ChatCompletionStream(module.ResponseParser(prefix, tools, errors="recover"),
                                      ids=lambda n: f"call_{n}", recover_arguments=mode)
        out = []
        for piece in pieces:
            out += stream.feed(piece)
        out += stream.finalize()
        got = _view(_accumulated(out))
        assert all(name for _, name, _ in got["calls"]), (how, got)  # never a call without a name
        if mode == "hold" or not stream.diagnostics:
            assert got == whole, (mode, how)
