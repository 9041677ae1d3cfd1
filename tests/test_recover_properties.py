"""Property test of errors="recover" on every catalogue template (issue 8).

Inputs: each catalogue family's own cases (``tests/cases/families/<name>.json``: a prefix and a
model output), damaged at random by hypothesis: truncated at any point, one delimiter occurrence
deleted, doubled, or swapped with another, random text inserted (characters delimiters and JSON are
made of, plus arbitrary ones), and the markup damage of issue 8: a space inserted inside or next to a
delimiter (what a decoder puts between special tokens), a piece of a delimiter written twice (a
harmony recipient twice), a delimiter's text written somewhere else (a stray closer or opener). A
*delimiter occurrence* is a match, in the output, of a field's ``open``/``close`` literal or
``open_pattern``/``close_pattern`` regex.

For every damaged output, fed whole, one character at a time and in random pieces:

1. ``errors="recover"`` never raises, in ``feed`` nor in ``finalize``;
2. the message and the diagnostics do not depend on the chunking;
3. every character is accounted for. *Accounted* means: the parser's ledger (``ledger=True``,
   ``runtime/stream.py``) has entries ``(start, end, kind)`` that tile the input exactly -- sorted,
   no gap, no overlap -- from the start of the prefix remainder (negative offsets) to the end of
   the output; every ``"text"`` entry is text a ``region_chunk`` event carried (the chunks of the
   output, concatenated, equal the output's ``"text"`` entries, concatenated); every
   ``"diagnostic"`` entry lies inside a diagnostic's ``[start, end)`` whose ``text`` is that slice
   of the output; ``"delimiter"`` entries are openers and closers the automaton consumed and
   ``"discarded"`` ones text the template itself discards (null slots, no implicit field);
4. every diagnostic with offsets and a ``text``, and every ``region_malformed`` event, quotes the
   output exactly: ``output[start:end] == text`` -- a whole malformed, truncated or repaired region
   included, when a copy of a delimiter inside it is held by another diagnostic (issue 24 item 5;
   docs/events.md).

Bounded: a fixed number of examples per run (derandomized), well under a minute.
"""

from __future__ import annotations

import importlib
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support import REPO, SHARED, damage, damage_cases, damage_ops, load_jsonl, missing

FAMILIES = Path(__file__).resolve().parent / "cases" / "families"
NAMES = sorted(p.stem for p in (REPO / "templates").glob("*.json") if (FAMILIES / p.name).is_file())
CASES = damage_cases()
OPS = damage_ops()


def _run(module, prefix: str, chunks: list[str]):
    parser = module.ResponseParser(prefix, errors="recover", ledger=True)
    events = list(parser.initial_events)
    for chunk in chunks:
        events += parser.feed(chunk)
    message, final = parser.finalize()
    return message, events + final, parser.diagnostics, parser.ledger


def _check_accounted(rest: str, text: str, events: list, diagnostics: list, ledger: list) -> None:
    """``rest``: the prefix after its last start anchor (offsets -len(rest)..0), ``text``: the output."""
    entries = sorted(ledger)
    full = rest + text  # offset o is full[o + len(rest)]
    if not full:
        return
    assert entries, "no ledger entries"
    assert (entries[0][0], entries[-1][1]) == (-len(rest), len(text)), (entries[0], entries[-1])
    for (s1, e1, k1), (s2, e2, k2) in zip(entries, entries[1:]):
        assert e1 == s2, f"gap or overlap between {(s1, e1, k1)} and {(s2, e2, k2)}"
    chunks = "".join(e["text"] for e in events if e["type"] == "region_chunk")
    texts = "".join(full[s + len(rest):e + len(rest)] for s, e, k in entries if k == "text")
    assert chunks == texts
    for s, e, k in entries:
        if k == "diagnostic":
            assert any(d["start"] <= s and e <= d["end"] and text[d["start"]:d["end"]] == d["text"]
                       for d in diagnostics), f"diagnostic text {text[s:e]!r} at {s}-{e} is in no diagnostic"


def _check_quotes(text: str, events: list, diagnostics: list, where) -> None:
    """Point 4 of the module docstring: what a diagnostic or ``region_malformed`` event quotes is
    the output at its offsets (a negative start: the prefix remainder, not checked here)."""
    for d in [*diagnostics, *(e for e in events if e["type"] == "region_malformed")]:
        if d.get("text") is not None and d.get("start") is not None and d["start"] >= 0:
            assert text[d["start"]:d["end"]] == d["text"], (where, d)


@settings(max_examples=250, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(case=st.integers(0, max(len(CASES) - 1, 0)), ops=OPS, seed=st.integers(0, 2**16))
def test_recover_never_raises_and_accounts_for_every_character(case, ops, seed):
    name, prefix, text, spans = CASES[case]
    damaged = damage(text, spans, ops)
    module = importlib.import_module(f"respc.generated.{name}")
    rng = random.Random(seed)
    pieces, i = [], 0
    while i < len(damaged):
        step = rng.randint(1, 9)
        pieces.append(damaged[i:i + step])
        i += step
    results = [_run(module, prefix, chunks) for chunks in ([damaged], list(damaged), pieces)]
    anchors = [m.end() for m in module.ResponseParser.START_ANCHOR.finditer(prefix)] if prefix else []
    rest = prefix[anchors[-1]:] if anchors else ""  # recover ignores a prefix without its anchor
    whole = results[0]
    for message, events, diagnostics, ledger in results:
        assert (message, diagnostics) == (whole[0], whole[2]), (name, damaged)
        _check_accounted(rest, damaged, events, diagnostics, ledger)
        _check_quotes(damaged, events, diagnostics, (name, damaged))


def test_every_catalogue_template_has_cases():
    assert len({c[0] for c in CASES}) == len(NAMES) >= 40


def test_doubled_opener_inside_a_malformed_region_is_in_its_text():
    """Issue 24 item 5: a region_malformed diagnostic's text is the output at its start/end, also
    when a copy of the opener inside the region is held by a ``repaired`` diagnostic (the copy
    then also reaches the answer with the rest of the region's text)."""
    module = importlib.import_module("respc.generated.apriel_1_5")
    text = ('Let me check.\n<tool_calls><tool_calls>[{"name": "f", "arguments": {"a": 1 2}}]</tool_calls>'
            '[END FINAL RESPONSE]\n<|end|>')
    for chunks in ([text], list(text)):
        message, events, diagnostics, _ = _run(module, "", chunks)
        assert [(d["kind"], d["start"], d["end"], d["text"]) for d in diagnostics] == [
            ("repaired", 26, 38, "<tool_calls>"), ("malformed", 14, 91, text[14:91])]
        assert [(e["start"], e["end"], e["text"]) for e in events if e["type"] == "region_malformed"] == [
            (14, 91, text[14:91])]
        assert message["content"] == "Let me check." + text[14:91]


@pytest.mark.parametrize("path", ["vectors.jsonl", "peer_vectors.jsonl", "peer_vectors2.jsonl"])
def test_corpus_diagnostics_quote_the_output(path):
    """Point 4 on the shared corpus (``../shared/corpus``), in recover mode, whole and per character."""
    vectors = [v for v in load_jsonl(SHARED / "corpus" / path) if v.get("family") in NAMES and "text" in v]
    if not vectors:
        pytest.skip(missing(SHARED / "corpus" / path))
    for vector in vectors:
        module = importlib.import_module(f"respc.generated.{vector['family']}")
        text = vector["text"]
        for chunks in ([text], list(text)):
            _, events, diagnostics, _ = _run(module, vector.get("prefix") or "", chunks)
            _check_quotes(text, events, diagnostics, vector["id"])
