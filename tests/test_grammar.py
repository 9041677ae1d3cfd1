"""The Lark grammar embedded as ``GRAMMAR`` accepts conforming outputs and rejects malformed ones
(docs/grammar.md, issue 10).

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
    lines = grammar.splitlines()
    assert "region_1: /<tool_call>/ ws call_27 ws /<\\/tool_call>/" in lines
    assert ("text: /(?:(?!<\\|endoftext\\|>|<tool_call>|<\\|im_end\\|>|<\\/think>|<think>)[\\s\\S])+/s?"
            in lines)
    tree = _lark(grammar).parse('<think>a</think>b<tool_call>{"name": "f", "arguments": {}}</tool_call>')
    assert [child.data for child in tree.children if hasattr(child, "data")] == ["text", "region_0", "text",
                                                                                 "region_1", "text"]


@pytest.mark.parametrize("text", [
    '<tool_call>{"name": "f", "arguments": {"a": 1}</tool_call>',        # unbalanced braces
    '<tool_call>{"name": "f"}</tool_call>',                              # no arguments
    '<tool_call>{"name": "f", "arguments": {}}</tool_call',              # close cut, text follows
    '<tool_call>{"name": "f", "arguments": {}} and more',                # unclosed, then text
])
def test_grammar_rejects_malformed_qwen3_outputs(text):
    module = importlib.import_module("respc.generated.qwen3")
    with pytest.raises(lark.exceptions.LarkError):
        _lark(module.GRAMMAR).parse(text)


def test_zero_width_open_is_guarded():
    grammar = compile_source({"start_anchor": "A", "fields": {
        "r": {"open_pattern": "(?:^|<think>)", "close": "</think>"}, "content": {}}}).grammar
    # the anchored branch is read exactly (docs/grammar.md "Anchored opens"): the region opens
    # empty at offset 0 only, elsewhere with <think>
    assert "anchor AT_BEGINNING dropped" not in grammar
    parser = _lark(grammar)
    assert parser.parse("x</think>y").data == "start"
    assert parser.parse("x</think>y<think>z</think>").data == "start"


def test_lazy_open_is_text_up_to_the_first_literal():
    # `<call name=(?P<name>.*?)>`: the name is text up to the first '>' (Python re's `*?`), so the
    # grammar rejects a name holding '>' that the greedy reading would let through
    grammar = compile_source({"start_anchor": "A", "fields": {
        "call": {"open_pattern": "<call name=(?P<name>.*?)>", "close": "</call>", "content": "json",
                 "transform": {"name": "{name}", "arguments": "{content}"}}, "content": {}}}).grammar
    assert "inexact" not in grammar
    parser = _lark(grammar)
    assert parser.parse('<call name=foo>{"a": 1}</call>').data == "start"
    with pytest.raises(lark.exceptions.LarkError):
        parser.parse('<call name=fo>o>{"a": 1}</call>')


def test_greedy_open_runs_to_the_last_literal():
    # `<call name=(?P<name>.*)>` matches up to the LAST '>' (the reference's whole-string reading)
    grammar = compile_source({"start_anchor": "A", "fields": {
        "call": {"open_pattern": "<call name=(?P<name>.*)>", "close": "</call>", "content": "text",
                 "transform": {"name": "{name}", "body": "{content}"}}, "content": {}}}).grammar
    assert "open_region_0: /<call name=(?:[\\s\\S]){0,}>/s /(?:(?!<\\/call>)[\\s\\S])+/s?" in grammar.splitlines()
    assert _lark(grammar).parse("<call name=a>b</call>").data == "start"


def test_optional_declared_repairs_are_left_out_of_grammar_delimiters():
    """A declared repair (``(?P<repair_...>...)?``, runtime/stream.py) is damage the parser accepts,
    not markup a grammar should let a model write; a non-optional repair group is kept."""
    from respc.compiler.grammar_ir import without_optional_repairs

    assert without_optional_repairs(r"<\|call\|>(?P<repair_filler>commentary(?=<\|))?|<\|end\|>") == r"<\|call\|>|<\|end\|>"
    assert without_optional_repairs(r"<\|start\|>(?P<repair_space>\s)?assistant") == r"<\|start\|>assistant"
    assert without_optional_repairs(r"a(?P<repair_x>[)(])?b") == "ab"              # parentheses in a class
    assert without_optional_repairs(r"a(?P<repair_x>\))?b") == "ab"                 # an escaped parenthesis
    assert without_optional_repairs(r"(?P<repair_t>^analysis)") == r"(?P<repair_t>^analysis)"  # not optional
    assert without_optional_repairs(r"a(?P<repair_y>c)??d") == r"a(?P<repair_y>c)??d"          # lazy: kept
    assert without_optional_repairs(r"a(?P<name>x)?b") == r"a(?P<name>x)?b"        # not a repair group
