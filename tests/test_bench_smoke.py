"""Smoke test of the benchmark's input builders (benchmarks/inputs.py): not a timing.

The benchmark compares respc with the transformers reference on generated outputs; those outputs are
only meaningful if both parsers agree on them (same message) and they contain what the benchmark
says they contain (reasoning, answer, tool calls). Checked at 2 kB for two families: one with
literal delimiters (qwen3) and one whose tool calls come from a regex ``open_pattern`` (gpt_oss).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import inputs  # noqa: E402

import respc  # noqa: E402

chat_parsing = pytest.importorskip("transformers.utils.chat_parsing")


@pytest.mark.parametrize("name", ["qwen3", "gpt_oss"])
def test_generated_inputs_parse_equal(name):
    doc = inputs.load(name)
    text = inputs.build(name, 2000, doc)
    assert 1900 <= len(text) <= 2100
    chunks = inputs.chunks(text)
    assert "".join(chunks) == text and all(len(c) <= inputs.CHUNK for c in chunks)

    module = respc.compile_template(doc)
    ours = module.ResponseParser("")
    for chunk in chunks:
        ours.feed(chunk)
    ours_message, _ = ours.finalize()

    ref = chat_parsing.ResponseParser(inputs.reference_doc(name), prefix="")
    for chunk in chunks:
        ref.feed(chunk)
    ref_message, _ = ref.finalize()

    assert ours_message == ref_message
    assert module.parse_response(text, "") == chat_parsing.parse_response(text, inputs.reference_doc(name), prefix="") == ref_message
    # the input holds what the benchmark claims: long reasoning, an answer, three tool calls
    assert len(ours_message["reasoning_content"]) > 1000
    assert "<" in ours_message["content"]
    assert len(ours_message["tool_calls"]) == inputs.N_TOOL_CALLS
    assert ours_message["tool_calls"][0]["function"]["name"] == "get_weather"


def test_adversarial_inputs_are_built():
    for case in inputs.adversarial_inputs():
        text = case.text(2000)
        assert text.startswith(case.head) and 2000 - len(case.unit) < len(text) <= 2000
