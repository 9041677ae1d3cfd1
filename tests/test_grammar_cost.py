"""Grammar export cost (issue 27 "Cost"; docs/grammar.md "Cost"): respc's own structural-tag build
is linear in the number of offered tools. Each tool's EBNF element once carried every rule built so
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
from support import REPO

#: the templates whose build was superlinear (16 -> 32 tools: 3.8x to 4.6x)
TEMPLATES = ("gemma4", "kimi_k2", "gpt_oss", "deepseek_r1")


def _tools(n: int) -> list[dict]:
    """``n`` tools with four typed parameters each (benchmarks/grammar.py's set)."""
    return [{"type": "function", "function": {"name": f"tool_{i}", "parameters": {
        "type": "object", "required": ["query", "limit"], "properties": {
            "query": {"type": "string"}, "limit": {"type": "integer"},
            "mode": {"type": "string", "enum": ["fast", "exact"]}, "tags": {"type": "array", "items": {"type": "string"}}}}}}
        for i in range(n)]


def _best(fn, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


@pytest.mark.parametrize("name", TEMPLATES)
def test_structural_tag_size_linear_in_tools(name):
    t = compile_source(str(REPO / "templates" / f"{name}.json")).template
    small = len(json.dumps(build_structural_tag(t, _tools(16))[0]))
    large = len(json.dumps(build_structural_tag(t, _tools(32))[0]))
    assert large / small <= 2.5, f"{name}: 16 -> 32 tools, tag {small} -> {large} bytes ({large / small:.1f}x)"


@pytest.mark.parametrize("name", TEMPLATES)
def test_structural_tag_build_time_linear_in_tools(name):
    t = compile_source(str(REPO / "templates" / f"{name}.json")).template
    small_tools, large_tools = _tools(16), _tools(32)
    ratios = []
    for _ in range(3):  # a busy machine can slow one round; a superlinear build fails every round
        small = _best(lambda: build_structural_tag(t, small_tools))
        large = _best(lambda: build_structural_tag(t, large_tools))
        ratios.append(large / small)
        if ratios[-1] <= 2.5:
            return
    pytest.fail(f"{name}: 16 -> 32 tools, build time ratios {', '.join(f'{r:.1f}x' for r in ratios)} (at most 2.5x)")
