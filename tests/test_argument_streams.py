"""The formats tell the OpenAI adapter which argument reader a tool region uses (``Format.stream``,
``runtime/formats/base.py`` ``ArgumentStream``; docs/formats.md "Argument readers"): the adapter
drives every reader through one protocol and names no format or argument mode."""

from __future__ import annotations

import ast
import dataclasses

from respc.runtime.formats import FORMAT_NAMES, FORMATS
from respc.runtime.formats.base import ARGUMENT_MODES, ArgumentStream

from support import REPO

#: the reader kinds the adapter used to switch on beside the modes and formats
READER_KINDS = ("xml", "reparse", "dialect", "const", "pythonic")
#: format names that are also ordinary words of the adapter ("text": an event's and a delta's text)
COMMON_WORDS = {"text"}


def test_openai_names_no_format_or_argument_mode():
    """No string constant of ``respc/openai.py`` (docstrings aside) is a format name, an argument mode or
    a reader kind: the choice of reader lives in the formats."""
    tree = ast.parse((REPO / "respc_pkg" / "openai.py").read_text(encoding="utf-8"))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)) and node.body
                  and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    named = sorted({node.value for node in ast.walk(tree)
                    if isinstance(node, ast.Constant) and id(node) not in docstrings
                    and node.value in (set(FORMAT_NAMES) - COMMON_WORDS) | set(ARGUMENT_MODES) | set(READER_KINDS)})
    assert named == []


def test_every_argument_mode_has_its_formats_stream():
    """Each format whose plans stream arguments answers ``stream`` with an ArgumentStream."""
    from respc.generated import hermes2pro, lfm2, minicpm4, qwen3_coder

    for module in (hermes2pro, lfm2, minicpm4, qwen3_coder):
        for region in module.ResponseParser.REGIONS:
            plan = region.plan
            if region.slot == "tool_calls" and plan is not None and plan.arguments is not None:
                got = FORMATS[plan.format].stream(plan, region.process.content_args or {})
                assert isinstance(got, ArgumentStream), (module.__name__, region.name, plan.arguments)


def test_the_format_decides_how_arguments_stream(monkeypatch):
    """A format whose ``stream`` answers None makes its calls' arguments go out in one piece at the close."""
    from respc.generated import hermes2pro
    from respc import openai as adapter

    text = '<tool_call>\n{"name": "f", "arguments": {"city": "Paris"}}\n</tool_call>'

    def argument_pieces():
        adapter._PLANS.clear()
        stream = adapter.ChatCompletionStream(hermes2pro.ResponseParser("<|im_start|>assistant\n"))
        chunks = [c for piece in text for c in stream.feed(piece)] + stream.finalize()
        return [c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"] for c in chunks
                if c["choices"] and "tool_calls" in c["choices"][0]["delta"]
                and "arguments" in c["choices"][0]["delta"]["tool_calls"][0]["function"]]

    assert len(argument_pieces()) > 1
    monkeypatch.setitem(FORMATS, "json", dataclasses.replace(FORMATS["json"], stream=lambda plan, args: None))
    try:
        assert argument_pieces() == ['{"city": "Paris"}']
    finally:
        adapter._PLANS.clear()


def test_the_adapter_skips_work_a_chunk_does_not_need(monkeypatch):
    """Adapter cost (benchmarks/deltas.py): a feed that gives no event while a tool region is open does
    not take the general way, and a reader whose stream never ticks (json call objects) is not ticked;
    the message and the deltas are unchanged (tests/test_openai.py checks streamed == whole)."""
    from respc.generated import hermes2pro
    from respc import openai as adapter
    from respc.runtime.formats.json_ import JsonStream

    text = ('<tool_call>\n{"name": "f", "arguments": {"city": "Paris", "n": [1, 2, 3]}}\n</tool_call>'
            '<tool_call>\n{"name": "g", "arguments": {}}\n</tool_call>')
    empty = []
    chunks_of = adapter.ChatCompletionStream._chunks

    def counting(self, events):
        if not events and self._fast_now:  # (after the role chunk)
            empty.append(1)
        return chunks_of(self, events)

    def no_tick(*args):
        raise AssertionError("a json call-object reader was ticked")

    monkeypatch.setattr(adapter.ChatCompletionStream, "_chunks", counting)
    monkeypatch.setattr(JsonStream, "tick", no_tick)
    adapter._PLANS.clear()
    try:
        stream = adapter.ChatCompletionStream(hermes2pro.ResponseParser("<|im_start|>assistant\n"), ids=str)
        for piece in text:
            stream.feed(piece)
        feeds = len(empty)
        stream.finalize()
    finally:
        adapter._PLANS.clear()
    assert feeds == 0
    assert [c["function"]["name"] for c in stream.message["tool_calls"]] == ["f", "g"]
    assert stream.openai_message()["tool_calls"][0]["function"]["arguments"] == '{"city": "Paris", "n": [1, 2, 3]}'
