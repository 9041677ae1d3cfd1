"""Grammar export cost (issue 27 "Cost"; docs/grammar.md "Cost"): respc's own structural-tag build
is linear in the number of offered tools, and so is xgrammar's compile of the exports (below). Each tool's EBNF element once carried every rule built so
far (every earlier tool's too), so the tag's size and build time grew with the square of the
tools (gemma4 1026 ms and 3.3 MB at 32 tools). Growth is measured as a ratio: 2x the tools, at
most 2.5x the time (best of a few repeats) and at most 2.5x the bytes. No engine is needed.
"""

from __future__ import annotations

import json
import time

import pytest

from respc.compiler.api import compile_source
from respc.compiler.grammar_structural import build_structural_tag
from support import REPO, best_time

#: the templates whose build was superlinear (16 -> 32 tools: 3.8x to 4.6x)
TEMPLATES = ("gemma4", "kimi_k2", "gpt_oss", "deepseek_r1")


def _tools(n: int) -> list[dict]:
    """``n`` tools with four typed parameters each (benchmarks/grammar.py's set)."""
    return [{"type": "function", "function": {"name": f"tool_{i}", "parameters": {
        "type": "object", "required": ["query", "limit"], "properties": {
            "query": {"type": "string"}, "limit": {"type": "integer"},
            "mode": {"type": "string", "enum": ["fast", "exact"]}, "tags": {"type": "array", "items": {"type": "string"}}}}}}
        for i in range(n)]


@pytest.mark.parametrize("name", TEMPLATES)
def test_structural_tag_size_linear_in_tools(name):
    t = compile_source(str(REPO / "templates" / f"{name}.json")).template
    small = len(json.dumps(build_structural_tag(t, _tools(16))[0]))
    large = len(json.dumps(build_structural_tag(t, _tools(32))[0]))
    assert large / small <= 2.5, f"{name}: 16 -> 32 tools, tag {small} -> {large} bytes ({large / small:.1f}x)"


def _check_build_growth(name: str, small_tools: list, large_tools: list, limit: float) -> None:
    """Fail unless building ``name``'s tag for ``large_tools`` takes at most ``limit`` times as long
    as for ``small_tools`` (best of a few repeats) in one of three rounds."""
    t = compile_source(str(REPO / "templates" / f"{name}.json")).template
    ratios = []
    for _ in range(3):  # a busy machine can slow one round; a superlinear build fails every round
        small = best_time(lambda: build_structural_tag(t, small_tools))
        large = best_time(lambda: build_structural_tag(t, large_tools))
        ratios.append(large / small)
        if ratios[-1] <= limit:
            return
    pytest.fail(f"{name}: {len(small_tools)} -> {len(large_tools)} tools, build time ratios "
                f"{', '.join(f'{r:.1f}x' for r in ratios)} (at most {limit}x)")


@pytest.mark.parametrize("name", TEMPLATES)
def test_structural_tag_build_time_linear_in_tools(name):
    _check_build_growth(name, _tools(16), _tools(32), 2.5)


#: templates whose per-parameter tags go through a value-parser switch (the slowest builds at 32 tools
#: of different schemas: each parameter's tag pattern is translated and narrowed once per template,
#: not once per parameter, docs/grammar.md "Cost")
SWITCHED = ("kimi_k3", "deepseek_v3_2")


@pytest.mark.parametrize("name", SWITCHED)
def test_structural_tag_build_time_linear_in_distinct_tools(name):
    """8 -> 32 tools of different schemas: at most 4.5x the build time (4x is linear)."""
    _check_build_growth(name, _distinct_tools(8), _distinct_tools(32), 4.5)


# --- the engine's own compile (xgrammar), 16 -> 32 tools ------------------------------------------

#: (template, structural tag or EBNF): all four grew 2.8x to 3.3x on 16 -> 32 tools before (CPU time) (docs/grammar.md
#: "Cost" has the table with xgrammar's built-in structural tags)
ENGINE_CASES = [("gemma4", False), ("gemma4", True), ("llama3_json", False), ("kimi_k2", True)]


def _xgr_compile_ms(text: str, structural: bool) -> float:
    """xgrammar's compile of ``text`` (EBNF, or a structural tag's JSON) over a byte vocabulary, one
    thread, no cache: CPU milliseconds, best of 3 (CPU time: the machine is shared)."""
    import xgrammar as xgr

    info = xgr.TokenizerInfo([bytes([i]) for i in range(256)] + [b"<eos>"], vocab_type=xgr.VocabType.RAW,
                             stop_token_ids=[256])
    compiler = xgr.GrammarCompiler(info, cache_enabled=False, max_threads=1)
    fn = compiler.compile_structural_tag if structural else compiler.compile_grammar
    times = []
    for _ in range(3):
        start = time.process_time()
        fn(text)
        times.append(time.process_time() - start)
    return min(times) * 1000


@pytest.mark.parametrize("name, structural", ENGINE_CASES,
                         ids=[f"{n}-{'structural-tag' if st else 'ebnf'}" for n, st in ENGINE_CASES])
def test_xgrammar_compile_time_linear_in_tools(name, structural):
    """Each tool's identical schema rules (and each region form's copy of them) were written again, so
    xgrammar's compile grew with the square of the tools (gemma4: 611 -> 2471 ms, 16 -> 32 tools);
    identical rules are shared now (docs/grammar.md "Cost")."""
    pytest.importorskip("xgrammar")
    from respc.compiler.grammar_ir import build_grammar_ir
    from respc.compiler.grammar_render import render

    t = compile_source(str(REPO / "templates" / f"{name}.json")).template

    def text(n: int) -> str:
        if structural:
            return json.dumps(build_structural_tag(t, _tools(n))[0])
        return render(build_grammar_ir(t, _tools(n)), "xgrammar")

    small, large = text(16), text(32)
    ratios = []
    for _ in range(3):
        ratios.append(_xgr_compile_ms(large, structural) / _xgr_compile_ms(small, structural))
        if ratios[-1] <= 2.5:
            return
    pytest.fail(f"{name}: 16 -> 32 tools, xgrammar compile time ratios {', '.join(f'{r:.1f}x' for r in ratios)} "
                "(at most 2.5x)")


# --- against xgrammar's built-in structural tags, tools of different schemas -----------------------

def _distinct_tools(n: int) -> list[dict]:
    """``_tools(n)`` with every tool's property names (and enum member) its own: nothing to share."""
    return [{"type": "function", "function": {"name": f"tool_{i}", "parameters": {
        "type": "object", "required": [f"query_{i}", f"limit_{i}"], "properties": {
            f"query_{i}": {"type": "string"}, f"limit_{i}": {"type": "integer"},
            f"mode_{i}": {"type": "string", "enum": ["fast", f"exact_{i}"]},
            f"tags_{i}": {"type": "array", "items": {"type": "string"}}}}}}
        for i in range(n)]


#: respc template -> xgrammar 0.2.9's built-in style for the same format; at 32 tools of different
#: schemas respc's tag compiled 13.4x / 7.4x / 8.9x as long as the built-in before each any-order
#: member became a rule of its own (docs/grammar.md "Cost"; 1.4x / 2.1x / 2.4x after)
BUILTIN_CASES = {"gemma4": "gemma_4", "qwen3": "qwen_3", "llama3_json": "llama"}


@pytest.mark.parametrize("name", BUILTIN_CASES)
def test_xgrammar_compile_near_the_builtin_tag_with_distinct_schemas(name):
    """xgrammar's compile of respc's structural tag, 32 tools of different schemas, at most 4x that
    of xgrammar's own tag for the same tools (the same engine, vocabulary and machine: a ratio)."""
    pytest.importorskip("xgrammar")
    from xgrammar.builtin_structural_tag import get_model_structural_tag

    t = compile_source(str(REPO / "templates" / f"{name}.json")).template
    tools = _distinct_tools(32)
    ours = json.dumps(build_structural_tag(t, tools)[0])
    theirs = get_model_structural_tag(BUILTIN_CASES[name], tools=tools).model_dump_json()
    ratios = []
    for _ in range(3):
        ratios.append(_xgr_compile_ms(ours, True) / _xgr_compile_ms(theirs, True))
        if ratios[-1] <= 4:
            return
    pytest.fail(f"{name}: respc's tag / built-in tag compile time {', '.join(f'{r:.1f}x' for r in ratios)} (at most 4x)")
