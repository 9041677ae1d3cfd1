"""The Lark grammar embedded as ``GRAMMAR`` accepts every conforming output (SPEC 8).

For every conformance vector with an expected message and every corpus vector of a catalogue
family, the text the parser consumes (the prefix after its last start anchor, then the output) must
parse with Lark (Earley, dynamic lexer, ``regex=True``) under that template's grammar.
"""

from __future__ import annotations

import importlib

import lark
import pytest
import regex

import respc
from respc.compiler.api import compile_source
from support import CONFORMANCE, CORPUS, REPO, load_jsonl, params

VECTORS = [v for v in load_jsonl(CONFORMANCE) if "message" in v["expect"]]
CORPUS_VECTORS = load_jsonl(CORPUS)


def _consumed(module, prefix: str, text: str) -> str:
    last = None
    for match in module.ResponseParser.START_ANCHOR.finditer(prefix):
        last = match.end()
    return (prefix if last is None else prefix[last:]) + text


def _lark(grammar: str) -> lark.Lark:
    return lark.Lark(grammar, parser="earley", lexer="dynamic", regex=True)


@pytest.mark.parametrize("vector", params(VECTORS, CONFORMANCE, lambda v: v["id"]))
def test_conformance_output_parses(vector):
    module = respc.compile_template(vector["template"])
    tree = _lark(module.GRAMMAR).parse(_consumed(module, vector["prefix"], vector["text"]))
    assert tree.data == "start"


@pytest.mark.parametrize("vector", params(CORPUS_VECTORS, CORPUS, lambda v: v["id"]))
def test_corpus_output_parses(vector):
    module = importlib.import_module(f"respc.generated.{vector['family']}")
    tree = _lark(module.GRAMMAR).parse(_consumed(module, vector["prefix"], vector["text"]))
    assert tree.data == "start"


def test_grammar_shape_for_qwen3():
    grammar = compile_source(REPO / "templates" / "qwen3.json").grammar
    assert "region_0: OPEN_0 BODY_0? CLOSE_0?  // field 'reasoning_content'" in grammar
    assert "OPEN_1: /(?:<tool_call>)/s" in grammar
    tree = _lark(grammar).parse("<think>a</think>b<tool_call>{}</tool_call>")
    kinds = [child.data for child in tree.children]
    # The grammar is ambiguous (a close is optional because the stream may end inside a region);
    # Earley picks one derivation, but every one holds both regions in order.
    assert [k for k in kinds if k != "implicit_text"] == ["region_0", "region_1"]
    assert kinds[0] == "region_0"


def test_zero_width_open_is_guarded():
    grammar = compile_source({"start_anchor": "A", "fields": {
        "r": {"open_pattern": "(?:^|<think>)", "close": "</think>"}, "content": {}}}).grammar
    assert "(?!\\G)" in grammar
    assert regex.search(r"region_0: OPEN_0 BODY_0\? CLOSE_0\? \| BODY_0 CLOSE_0\?", grammar)
    assert _lark(grammar).parse("x</think>y").data == "start"
