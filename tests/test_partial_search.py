"""Partial searches of long undecided text by leads or after offset 0 change nothing (issue 14).

With ``eos`` false a scanner asks the ``regex`` engine for the leftmost complete match of a
regex delimiter, else its leftmost partial match (SPEC 4.3). Over a long undecided text (one big
``feed``, the recover-mode whole-text pass, a plug-in's non-streaming call) the engine in that
mode tries a pattern with a zero-width or start-anchored alternative at every offset. The
generated scanners then search from the first place a lead of the pattern can start
(``runtime.partial_search``), after offset 0 without its start-anchored alternatives
(``runtime.partial_late``), or from the barrier before its factor (``runtime.partial_barrier``);
below ``runtime.PARTIAL_LONG`` undecided characters they ask the engine directly. Here:

* the helpers give the engine's answer (span, partial flag, groups) for every catalogue regex
  delimiter that has leads, start-anchored alternatives or a barrier plan, on random texts and
  positions;
* each template that uses them is compiled twice, with the helpers taking every scan
  (``PARTIAL_LONG`` 0) and with none (the engine's own search), and both parse the catalogue cases
  and random texts in many chunkings with identical events, messages and errors.
"""

from __future__ import annotations

import json
import random
import re
import types

import pytest
import regex

from respc.compiler import automaton, emit
from respc.compiler.api import compile_source
from respc.runtime import partial_barrier, partial_late, partial_search
from support import REPO, chunkings, exec_module, outcome

FAMILY_DIR = REPO / "tests" / "cases" / "families"
FILLER = "Plain words < and <x or [a] with (parens) {b}, to=x, then `ticks`, | bars and \"quotes\". "


def _source(spec, long: int) -> str:
    saved = emit.PARTIAL_LONG
    emit.PARTIAL_LONG = long
    try:
        return compile_source(spec).source
    finally:
        emit.PARTIAL_LONG = saved


def _module(source: str, tag: str) -> types.ModuleType:
    return exec_module(source, f"respc_partial_test_{tag}")


def _names() -> list[str]:
    return [p.stem for p in sorted((REPO / "templates").glob("*.json"))
            if "_rt.partial_" in (REPO / "generated" / f"{p.stem}.py").read_text(encoding="utf-8")]


def _delimiters() -> list[str]:
    """Every catalogue regex delimiter with leads, start-anchored alternatives or a barrier plan."""
    out: dict[str, None] = {}
    for path in sorted((REPO / "templates").glob("*.json")):
        compiled = compile_source(path)
        for pattern, _ in automaton.plan_scans(compiled.template, compiled.automaton).regexes:
            if (automaton.classify_pattern(pattern).leads or automaton.late_pattern(pattern) is not None
                    or automaton.barrier_plan(pattern) is not None):
                out[pattern] = None
    return list(out)


def _chunkings(text: str, seed: str) -> list[list[str]]:
    """support.chunkings (whole, characters, random pieces) and the benchmark's 4-character chunks."""
    return [*chunkings(text, seed).values(), [text[k:k + 4] for k in range(0, len(text), 4)]]


def _pieces(cases: list[dict], patterns: list[str]) -> list[str]:
    out = [" ", "\n", "<", "|", "[", "]", "{", "}", '"', "x", "ab c", "```", FILLER]
    for pattern in patterns:
        for lead in automaton.classify_pattern(pattern).leads or ():
            out.extend(lead[:k] for k in range(1, len(lead) + 1))
    for case in cases:
        text = case["text"]
        out.extend(text[k:k + 11] for k in range(0, len(text), 7))
    return out


def test_the_helpers_are_used():
    """The templates whose scanners call the helpers (a list that cannot silently empty)."""
    names = _names()
    assert {"xlam", "llama4_pythonic", "ernie4_5", "gpt_oss", "inkling", "llama3_json"} <= set(names), names


@pytest.mark.parametrize("pattern", _delimiters())
def test_helpers_give_the_engines_partial_search(pattern):
    """``partial_search`` / ``partial_late`` against ``pattern.search(text, pos, partial=True)``."""
    compiled = regex.compile(pattern, regex.DOTALL)
    facts = automaton.classify_pattern(pattern)
    late = automaton.late_pattern(pattern)
    if late is None and facts.leads:
        def ours(text, pos):
            return partial_search(compiled, text, pos, facts.leads)
    elif late is None:
        factor, barrier = automaton.barrier_plan(pattern)

        def ours(text, pos):
            return partial_barrier(compiled, text, pos, factor, barrier)
    else:
        late_compiled = None if late == automaton.NEVER else regex.compile(late, regex.DOTALL)
        late_leads = None if late_compiled is None else automaton.classify_pattern(late).leads

        def ours(text, pos):
            return partial_late(compiled, late_compiled, text, pos, late_leads)
    rng = random.Random(pattern)
    cases = [case for path in sorted(FAMILY_DIR.glob("*.json"))
             for case in json.loads(path.read_text(encoding="utf-8"))["cases"]][::5]
    pieces = _pieces(cases, [pattern] + ([late] if late not in (None, automaton.NEVER) else []))
    plan = automaton.barrier_plan(pattern)
    if plan is not None:
        pieces += [plan[0][:k] for k in range(1, len(plan[0]) + 1)] + [plan[1]] * 4
    # the D2 probe of a pattern without start-anchored alternatives is searched by the same helper,
    # over the whole text or a window (endpos)
    probe = None
    if late is None and facts.probe is not None:
        probe = regex.compile(facts.probe, regex.DOTALL)
        args = (facts.leads,) if facts.leads else automaton.barrier_plan(pattern)
        helper = partial_search if facts.leads else partial_barrier
    for _ in range(150):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        for pos in {0, 1, rng.randint(0, len(text)), len(text)}:
            if pos > len(text):
                continue
            want, got = compiled.search(text, pos, partial=True), ours(text, pos)
            assert (want and (want.span(), want.partial, want.groups())) == \
                   (got and (got.span(), got.partial, got.groups())), (text, pos)
            if probe is not None:
                end = rng.randint(pos, len(text))
                for want, got in ((probe.search(text, pos, partial=True), helper(probe, text, pos, *args)),
                                  (probe.search(text, pos, end, partial=True), helper(probe, text, pos, *args, end))):
                    assert (want and (want.span(), want.partial)) == (got and (got.span(), got.partial)), \
                        ("probe", text, pos, end)


@pytest.mark.parametrize("name", _names())
def test_catalogue_same_events_with_and_without_the_helpers(name):
    path = REPO / "templates" / f"{name}.json"
    with_helpers, without = _source(path, 0), _source(path, 10**9)
    # every scan takes the helpers in the one, none in the other
    # (a scanner writes the two searches as an if, or a probe's as a conditional expression)
    assert "_rt.partial_" in with_helpers and "_rt.partial_" in without
    assert re.search(r"< 0(:| else _rt\.partial_)", with_helpers) and re.search(r"< 1000000000(:| else _rt\.partial_)", without)
    helpers, engine = _module(with_helpers, "helpers"), _module(without, "engine")
    cases = json.loads((FAMILY_DIR / f"{name}.json").read_text(encoding="utf-8"))["cases"]
    for case in cases:
        for k, text in enumerate((case["text"], FILLER + case["text"], FILLER * 4 + case["text"] + FILLER)):
            for chunks in _chunkings(text, f"{name}/{case['name']}/{k}"):
                assert (outcome(helpers, case["prefix"], chunks, case.get("tools"))
                        == outcome(engine, case["prefix"], chunks, case.get("tools"))), (case["name"], chunks)
    rng = random.Random(name)
    compiled = compile_source(path)
    patterns = [p for p, _ in automaton.plan_scans(compiled.template, compiled.automaton).regexes]
    pieces = _pieces(cases, patterns)
    prefix = cases[0]["prefix"] if cases else ""
    for k in range(25):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(5, 40)))
        for chunks in _chunkings(text, f"{name}/random/{k}"):
            assert outcome(helpers, prefix, chunks, None) == outcome(engine, prefix, chunks, None), (k, chunks)


def test_long_feed_searches_from_the_first_lead():
    """One big feed of xlam prose: the engine is asked from the first place a lead can start, not
    from the start of the undecided text (the helpers' point; the events are the engine's)."""
    module = _module(_source(REPO / "templates" / "xlam.json", 256), "xlam")
    starts = []
    real = module._rt.partial_search

    def spy(pattern, buf, pos, leads, end=None):
        starts.append((pos, module._rt.lead_start(buf, pos, leads, end), len(buf) if end is None else end))
        return real(pattern, buf, pos, leads, end)

    text = "Hello. " + "word " * 200 + "[not a call] and " + "more " * 100 + '[{"name": "f", "arguments": {}}]'
    module._rt.partial_search = spy
    try:
        parser = module.ResponseParser("")
        parser.feed(text)
        message, _ = parser.finalize()
    finally:
        module._rt.partial_search = real
    assert message["tool_calls"] == [{"type": "function", "function": {"name": "f", "arguments": {}}}]
    assert message["content"].startswith("Hello. word") and message["content"].endswith("more")
    # the first search: undecided text from 0, the first lead '[' of '[not a call]'
    assert starts[0] == (0, text.index("[not"), len(text))


@pytest.mark.parametrize("pattern", _delimiters() + [r".+\Z", r"[^>]+\Z", r"<a\s*(?:b|.+c)"])
def test_window_partial_gives_the_engines_partial_search(pattern, monkeypatch):
    """``window_partial`` (the engine's partial phase a window at a time, issue 23) against
    ``pattern.search(text, pos, partial=True)``, with windows of 3 characters so that nearly every
    text is searched in windows; pieces of the pattern's own matches and ``<`` runs. Its D2 probe
    likewise, without the complete search (``complete=False``, as ``_probe_search`` calls it)."""
    from respc.runtime import stream

    monkeypatch.setattr(stream, "PARTIAL_WINDOW", 3)
    compiled = regex.compile(pattern, regex.DOTALL)
    probe_source = automaton.classify_pattern(pattern).probe
    probe = regex.compile(probe_source, regex.DOTALL) if probe_source else None
    rng = random.Random(pattern + "window")
    cases = [case for path in sorted(FAMILY_DIR.glob("*.json"))
             for case in json.loads(path.read_text(encoding="utf-8"))["cases"]][::5]
    pieces = _pieces(cases, [pattern]) + ["<", "<<<<", " ", "x"]
    for _ in range(150):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        for pos in {0, 1, rng.randint(0, len(text)), len(text)}:
            if pos > len(text):
                continue
            for end in (None, rng.randint(pos, len(text))):
                want = compiled.search(text, pos, len(text) if end is None else end, partial=True)
                got = stream.window_partial(compiled, text, pos, end)
                assert (want and (want.span(), want.partial, want.groups())) == \
                       (got and (got.span(), got.partial, got.groups())), (text, pos, end)
                if probe is not None:  # a D2 probe never completes: its windows skip that search
                    want = probe.search(text, pos, len(text) if end is None else end, partial=True)
                    got = stream.window_partial(probe, text, pos, end, complete=False, window=2)
                    assert (want and (want.span(), want.partial)) == (got and (got.span(), got.partial)), \
                        ("probe", text, pos, end)
