"""The required-factor prefilter of regex delimiters changes nothing (issue 14).

A regex delimiter with a literal every match contains (``to=functions.`` in gpt-oss's tool-call
open, ``[TOOL_CALLS]`` in Mistral's) is first looked for with ``str.find``; without it the
scanner searches for a partial match only near the end of the buffer (``compiler.automaton.Factor``).
Here each template is compiled twice, with the prefilter and with it switched off (the general
path), and both parse the same texts in many chunkings: the catalogue cases, random splices of
them with delimiter fragments, and synthetic templates for bounded and unbounded parts before the
factor. Events, messages and errors must be identical.
"""

from __future__ import annotations

import json
import random
import types

import pytest

from respc.compiler import automaton
from respc.compiler.api import compile_source
from support import REPO, exec_module, outcome, random_pieces

FAMILY_DIR = REPO / "tests" / "cases" / "families"


def _factored_names() -> list[str]:
    names = []
    for path in sorted((REPO / "templates").glob("*.json")):
        plans = automaton.plan_scans(*_ir(path))
        if any(getattr(f, "factor", None) is not None for p in plans.plans for f in p.finds):
            names.append(path.stem)
    return names


def _ir(spec):
    compiled = compile_source(spec)
    return compiled.template, compiled.automaton


def _module(spec, factor: bool) -> types.ModuleType:
    saved = automaton._factor
    if not factor:
        automaton._factor = lambda tree, pattern: None
    automaton.classify_pattern.cache_clear()
    try:
        source = compile_source(spec).source
    finally:
        automaton._factor = saved
        automaton.classify_pattern.cache_clear()
    return exec_module(source, f"respc_factor_test_{factor}")


def _chunkings(text: str, rng: random.Random):
    yield [text]
    yield list(text)
    for _ in range(3):
        yield random_pieces(text, rng, 12)


def _compare(fast, slow, prefix, text, tools, seed):
    rng = random.Random(seed)
    for chunks in _chunkings(text, rng):
        assert outcome(fast, prefix, chunks, tools) == outcome(slow, prefix, chunks, tools), chunks


def _fragments(module_text: str, cases: list[dict], factors: list[str]) -> list[str]:
    """Pieces random texts are made of: the factors, their prefixes, slices of the cases."""
    out = [" ", "\n", "  ", "<", "|", "[", "]", "{", "}", '"', "to=", "x", "ab c"]
    for f in factors:
        out.extend(f[:k] for k in range(1, len(f) + 1))
    for case in cases:
        t = case["text"]
        for k in range(0, len(t), 7):
            out.append(t[k:k + 11])
    return out


def _factors(spec) -> list[str]:
    plans = automaton.plan_scans(*_ir(spec))
    return [f.factor.text for p in plans.plans for f in p.finds if getattr(f, "factor", None) is not None]


@pytest.mark.parametrize("name", _factored_names())
def test_catalogue_same_events_with_and_without_factor(name):
    path = REPO / "templates" / f"{name}.json"
    fast, slow = _module(path, True), _module(path, False)
    cases = json.loads((FAMILY_DIR / f"{name}.json").read_text(encoding="utf-8"))["cases"]
    filler = "Plain words < and <x or [a] with (parens), to=x, then `ticks` and | bars. "
    for case in cases:
        _compare(fast, slow, case["prefix"], filler + case["text"], case.get("tools"), f"{name}/{case['name']}")
    rng = random.Random(name)
    pieces = _fragments("", cases, _factors(path))
    prefix = cases[0]["prefix"] if cases else ""
    for k in range(25):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(5, 40)))
        _compare(fast, slow, prefix, text, None, f"{name}/random/{k}")


SYNTHETIC = {
    # unbounded part before the factor, with a class (the reverse search bounds it)
    "unbounded-class": (r"(?:<s>)?\s*to=fn\.(?P<n>\w+)\s*<m>",
                        ["a to=fn.x <m>b", "  \n to=fn", "<s>  to=f", "to=fn.y", "<s>\t\tto=fn.z<m>"]),
    # bounded part before the factor, whose characters are (nearly) anything
    "bounded-any": (r".{0,3}CALL:(?P<n>\w+);", ["abcCALL:x; d", "xxxxCALL:", "CAL", "zzCALL:yy;CALL:"]),
    # bounded and with a class
    "bounded-class": (r"[ab]{1,4}::(?P<n>\w+)!", ["aaaa::x! bab::", "ccab:", "ab::q!ab", "bbbbbbbb::z!"]),
    # a factor that starts the pattern (reach 0)
    "leading": (r"\[CALL\](?P<n>[\w.\-]+)\[ARGS\]", ["x [CALL]f[ARGS]{} [CAL", "[CALL]g.h", "[CALL]a[AR"]),
}


@pytest.mark.parametrize("key", sorted(SYNTHETIC))
def test_synthetic_same_events_with_and_without_factor(key):
    pattern, texts = SYNTHETIC[key]
    spec = {"start_anchor": "A", "fields": {
        "call": {"open_pattern": pattern, "close": "</c>", "transform": {"n": "{n}", "a": "{content}"}},
        "content": {}}}
    assert _factors(spec), key
    fast, slow = _module(spec, True), _module(spec, False)
    rng = random.Random(key)
    pieces = texts + [t[k:k + 3] for t in texts for k in range(len(t))] + ["</c>", "</", " ", "\n"]
    for i, text in enumerate(texts):
        _compare(fast, slow, "", text + "</c>" + text, None, f"{key}/{i}")
    for k in range(40):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(3, 30)))
        _compare(fast, slow, "", text, None, f"{key}/random/{k}")


def test_factor_analysis_values():
    """The factors and their bounds, read off the pattern (a wrong bound would drop a hold)."""
    facts = automaton.classify_pattern
    gpt = facts(r"(?:<\|start\|>assistant)?(?:<\|channel\|>commentary)?\s*to=functions\.(?P<name>[^<\s]+)")
    assert gpt.factor == automaton.Factor("to=functions.", None, "[<|star>inchelomy\\s]")
    assert facts(r"\[TOOL_CALLS\](?P<name>[\w.\-]+)\[ARGS\]").factor == automaton.Factor("[TOOL_CALLS]", 0, None)
    assert facts(r".{0,3}CALL:").factor == automaton.Factor("CALL:", 3, None)
    # no factor: unbounded and any character before it, case-insensitive, an assertion before it
    assert facts(r".*CALL:").factor is None
    assert facts(r"(?i)CALL:").factor is None
    assert facts(r"\bx*CALL:").factor is None
    assert facts(r"(?<=\n)CALL:").factor is None
    assert facts(r"x|CALL:").factor is None
