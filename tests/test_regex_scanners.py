"""The scanners of states that watch a regex delimiter: each search shortcut the compiler plans
(compiler/automaton.py ``plan_scans``, emitted per state) against the general path (issue 31: one
test module per component, not per optimisation). Sections:

1. The required-factor prefilter of regex delimiters changes nothing (issue 14).

A regex delimiter with a literal every match contains (``to=functions.`` in gpt-oss's tool-call
open, ``[TOOL_CALLS]`` in Mistral's) is first looked for with ``str.find``; without it the
scanner searches for a partial match only near the end of the buffer (``compiler.automaton.Factor``).
Here each template is compiled twice, with the prefilter and with it switched off (the general
path), and both parse the same texts in many chunkings: the catalogue cases, random splices of
them with delimiter fragments, and synthetic templates for bounded and unbounded parts before the
factor. Events, messages and errors must be identical.

2. Partial searches of long undecided text by leads or after offset 0 change nothing (issue 14).

With ``eos`` false a scanner asks the ``regex`` engine for the leftmost complete match of a
regex delimiter, else its leftmost partial match (docs/template-language.md
"Partial matches and holding back"). Over a long undecided text (one big
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

3. Long pending matches stay linear and keep their results (docs/template-language.md "D2: chunking
   never changes the result"; issue: linear time).

Text held behind a regex delimiter that is still pending for 1024 characters or more is searched
again only once it has doubled (``runtime.stream.LONG_HOLD``). The message and the merged events
must not change for any chunking, and work must stay proportional to the output.
"""

from __future__ import annotations

import json
import random
import re
import types

import pytest
import regex

import respc
from respc.compiler import automaton
from respc.compiler.api import compile_source
from respc.runtime import partial_barrier, partial_late, partial_search
from respc.runtime import stream
from respc.runtime.scanners import build_now, scanner_sources
from respc.runtime.stream import LONG_HOLD
from support import (FAMILY_DIR, REPO, chunkings, exec_module, generated, merged_events, outcome, random_pieces,
                     run_stream)


# -- 1. the required-factor prefilter of a regex delimiter changes nothing (issue 14) -------------


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


def _factor_module(spec, factor: bool) -> types.ModuleType:
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


def _factor_chunkings(text: str, rng: random.Random):
    yield [text]
    yield list(text)
    for _ in range(3):
        yield random_pieces(text, rng, 12)


def _factor_compare(fast, slow, prefix, text, tools, seed):
    rng = random.Random(seed)
    for chunks in _factor_chunkings(text, rng):
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
    fast, slow = _factor_module(path, True), _factor_module(path, False)
    cases = json.loads((FAMILY_DIR / f"{name}.json").read_text(encoding="utf-8"))["cases"]
    filler = "Plain words < and <x or [a] with (parens), to=x, then `ticks` and | bars. "
    for case in cases:
        _factor_compare(fast, slow, case["prefix"], filler + case["text"], case.get("tools"), f"{name}/{case['name']}")
    rng = random.Random(name)
    pieces = _fragments("", cases, _factors(path))
    prefix = cases[0]["prefix"] if cases else ""
    for k in range(25):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(5, 40)))
        _factor_compare(fast, slow, prefix, text, None, f"{name}/random/{k}")


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
    fast, slow = _factor_module(spec, True), _factor_module(spec, False)
    rng = random.Random(key)
    pieces = texts + [t[k:k + 3] for t in texts for k in range(len(t))] + ["</c>", "</", " ", "\n"]
    for i, text in enumerate(texts):
        _factor_compare(fast, slow, "", text + "</c>" + text, None, f"{key}/{i}")
    for k in range(40):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(3, 30)))
        _factor_compare(fast, slow, "", text, None, f"{key}/random/{k}")


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


# -- 2. partial searches of long undecided text by leads or after offset 0 (issue 14) -------------

FILLER = "Plain words < and <x or [a] with (parens) {b}, to=x, then `ticks`, | bars and \"quotes\". "


def _partial_module(spec, long: int, tag: str) -> types.ModuleType:
    """The module of ``spec`` whose scanners the runtime builds with ``long`` as PARTIAL_LONG
    (the searches it writes as an ``if``: the engine's below, the helpers' from there on)."""
    module = exec_module(compile_source(spec).source, f"respc_partial_test_{tag}")
    saved = stream.PARTIAL_LONG
    stream.PARTIAL_LONG = long
    try:
        for parser_class in (module.ResponseParser, getattr(module, "_RecoverParser", None)):
            if parser_class is not None:
                build_now(parser_class)
                module.__dict__.setdefault("_sources", []).extend(scanner_sources(parser_class))
    finally:
        stream.PARTIAL_LONG = saved
    return module


def _partial_names() -> list[str]:
    names = []
    for path in sorted((REPO / "templates").glob("*.json")):
        module = generated(path.stem)
        if any("_rt.partial_" in source for source in scanner_sources(module.ResponseParser)):
            names.append(path.stem)
    return names


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


def _partial_chunkings(text: str, seed: str) -> list[list[str]]:
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
    names = _partial_names()
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


@pytest.mark.parametrize("name", _partial_names())
def test_catalogue_same_events_with_and_without_the_helpers(name):
    path = REPO / "templates" / f"{name}.json"
    helpers, engine = _partial_module(path, 0, "helpers"), _partial_module(path, 10**9, "engine")
    with_helpers, without = "".join(helpers._sources), "".join(engine._sources)
    # every scan takes the helpers in the one, none in the other
    # (a scanner writes the two searches as an if, or a probe's as a conditional expression)
    assert "_rt.partial_" in with_helpers and "_rt.partial_" in without
    assert re.search(r"< 0(:| else _rt\.partial_)", with_helpers) and re.search(r"< 1000000000(:| else _rt\.partial_)", without)
    cases = json.loads((FAMILY_DIR / f"{name}.json").read_text(encoding="utf-8"))["cases"]
    for case in cases:
        for k, text in enumerate((case["text"], FILLER + case["text"], FILLER * 4 + case["text"] + FILLER)):
            for chunks in _partial_chunkings(text, f"{name}/{case['name']}/{k}"):
                assert (outcome(helpers, case["prefix"], chunks, case.get("tools"))
                        == outcome(engine, case["prefix"], chunks, case.get("tools"))), (case["name"], chunks)
    rng = random.Random(name)
    compiled = compile_source(path)
    patterns = [p for p, _ in automaton.plan_scans(compiled.template, compiled.automaton).regexes]
    pieces = _pieces(cases, patterns)
    prefix = cases[0]["prefix"] if cases else ""
    for k in range(25):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(5, 40)))
        for chunks in _partial_chunkings(text, f"{name}/random/{k}"):
            assert outcome(helpers, prefix, chunks, None) == outcome(engine, prefix, chunks, None), (k, chunks)


def test_long_feed_searches_from_the_first_lead():
    """One big feed of xlam prose: the engine is asked from the first place a lead can start, not
    from the start of the undecided text (the helpers' point; the events are the engine's)."""
    module = _partial_module(REPO / "templates" / "xlam.json", 256, "xlam")
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
    """``window_partial`` (the engine's partial phase a window at a time, issue 23;
    docs/security.md "Model output: time and memory") against
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


def test_window_partial_skips_an_empty_partial_match_at_the_window_edge():
    """A probe that may start with an empty path reports an empty partial match at every window's
    edge; that says no path from inside the window reaches it, so the next window starts there and
    windows double (issue 33: plamo3's call-opener probe over its 177 held characters took 14
    engine calls, now 6). The answer stays the engine's."""
    from respc.runtime import stream

    probe = regex.compile(r"(?>(?:\s*<tag>))(?!)", regex.DOTALL)
    calls = []

    class Counting:
        pattern = probe.pattern

        def search(self, *args, **kwargs):
            calls.append("search")
            return probe.search(*args, **kwargs)

        def match(self, *args, **kwargs):
            calls.append("match")
            return probe.match(*args, **kwargs)

    text = "a" * 200
    got = stream.window_partial(Counting(), text, 0, None, complete=False, window=32)
    want = probe.search(text, 0, partial=True)
    assert (got.span(), got.partial) == (want.span(), want.partial) == ((200, 200), True)
    assert len(calls) <= 4, calls


# -- 3. long pending matches stay linear and keep their results (LONG_HOLD) ----------------------
LAZY = {"start_anchor": "A:", "fields": {
    "call": {"open_pattern": r"<call to=(?P<name>\w+).*?<msg>", "close": "</call>",
             "transform": {"name": "{name}", "body": "{content}"}},
    "content": {}}}
GREEDY = {"start_anchor": "A:", "fields": {
    "call": {"open_pattern": "<call name=(?P<name>.*)>", "close": "</call>",
             "transform": {"name": "{name}", "body": "{content}"}},
    "content": {}}}


def _chunked(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


@pytest.mark.parametrize("size", [1, 4, 37, 5000])
def test_lazy_open_pending_for_long_then_completing(size):
    filler = "x y " * (LONG_HOLD * 2)
    text = "before <call to=f " + filler + "<msg>body</call> after"
    module = respc.compile_template(LAZY)
    whole, whole_events = run_stream(module, "", [text])
    message, events = run_stream(module, "", _chunked(text, size))
    # `content` does not repeat, so its second block ("after") replaces the first (docs/template-language.md
    # "`repeats`")
    assert whole == {"content": "after", "call": {"name": "f", "body": "body"}}
    assert message == whole
    assert merged_events(events) == merged_events(whole_events)


def test_lazy_open_that_never_completes_is_text_at_end_of_stream():
    text = "<call to=f " + "z" * (LONG_HOLD * 8)
    module = respc.compile_template(LAZY)
    message, events = run_stream(module, "", _chunked(text, 4))
    assert message == {"content": text}
    assert [e["type"] for e in merged_events(events)] == ["region_open", "region_chunk", "region_close"]


@pytest.mark.parametrize("size", [3, 4096])
def test_greedy_indeterminate_open_over_long_text(size):
    text = "<call name=a>" + "b" * (LONG_HOLD * 3) + "</call>tail"
    module = respc.compile_template(GREEDY)
    whole, _ = run_stream(module, "", [text])
    message, _ = run_stream(module, "", _chunked(text, size))
    # greedy `.*` runs to the last '>' (that of </call>), whatever the chunking (D2)
    assert message == whole == {"call": {"name": "a>" + "b" * (LONG_HOLD * 3) + "</call", "body": "tail"}}


def test_start_anchored_delimiter_is_not_searched_after_offset_0():
    """A delimiter whose every match starts at offset 0 (gpt_oss's ``(?P<repair_stripped_tokens>^analysis)``,
    ``anchored`` with nothing left after it) is not searched by a short scan after offset 0: the
    engine could only fail there (``partial_late``'s first step). The message is the family's."""
    module = respc.compile_template(json.loads((REPO / "templates" / "gpt_oss.json").read_text(encoding="utf-8")))
    assert "_D1.search(buf, pos, partial=True)" not in scanner_sources(module.ResponseParser)[0]
    starts = []

    class Counting:
        def __init__(self, real):
            self.real = real

        def search(self, buf, pos=0, *args, **kwargs):
            starts.append(pos)
            return self.real.search(buf, pos, *args, **kwargs)

        def match(self, buf, pos=0, *args, **kwargs):
            starts.append(pos)
            return self.real.match(buf, pos, *args, **kwargs)

    module._D1 = Counting(regex.compile(module._D1.pattern, regex.DOTALL))
    text = ("Let me think. a < b, analysis<|channel|>analysis<|message|>Look it up.<|end|>"
            "<|start|>assistant<|channel|>final<|message|>It is sunny.<|return|>")
    parser = module.ResponseParser("")
    for i in range(0, len(text), 4):
        parser.feed(text[i:i + 4])
    message, _ = parser.finalize()
    assert message["reasoning_content"] == "Look it up." and message["content"].endswith("It is sunny.")
    assert starts and set(starts) == {0}, starts
