"""D2 for alternations whose later branch begins with an unbounded repeat (issue 24 item 5).

A partial search returns a complete match before an earlier partial one: ``b|.+c`` over ``ab``
gives ``b`` at 1, though ``.+c`` from 0 may still match. When that complete match ended at the
buffer edge the scanner held text from its start only, and committed what lay before it; it now
asks the probe where the leftmost path still waiting for input starts (docs/template-language.md,
"D2: chunking never changes the result")."""

from __future__ import annotations

import random

import pytest

import respc
from support import chunkings, merged_events, outcome


def _view(result: tuple) -> tuple:
    """The chunking-independent view of an outcome: the message and the merged events (or the error)."""
    if result[0] == "error":
        return result[:3]
    return result[0], merged_events(result[1])


def _close(pattern: str, version: int) -> dict:
    template = {"start_anchor": "<|a|>", "fields": {"t": {"open": "<t>", "close_pattern": pattern}, "content": {}}}
    return {"respc_version": 2, **template} if version == 2 else template


def _open(pattern: str, version: int) -> dict:
    template = {"start_anchor": "<|a|>", "fields": {"x": {"open_pattern": pattern}, "content": {}}}
    return {"respc_version": 2, **template} if version == 2 else template


@pytest.mark.parametrize("version", [1, 2])
def test_close_pattern_b_or_repeat_c(version):
    module = respc.compile_template(_close("b|.+c", version))
    assert outcome(module, "", ["<t>ab", "c d"])[0] == {"content": "d"}
    assert module.parse_response("<t>abc d", prefix="") == {"content": "d"}


@pytest.mark.parametrize("version", [1, 2])
def test_open_pattern_repeat_k_or_x(version):
    module = respc.compile_template(_open(".*k|x", version))
    assert outcome(module, "", ["-x", "k"])[0] == {}
    assert module.parse_response("-xk", prefix="") == {}


PATTERNS = ["b|.+c", ".*k|x", "a|.*b", "x|[^y]+z", "b|a.+c", ".+?c|b", "c|.+b", "k|\\w+x", "b|(?:a|b)+c", "ab|.+c"]


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("pattern", PATTERNS)
def test_streamed_equals_whole(pattern, version):
    """Random short outputs over the patterns' characters, as close and as open patterns: every
    chunking (whole, per character, random pieces, two random cuts) gives the whole text's
    message and events (merged)."""
    rng = random.Random(pattern)
    for build, head in ((_close, "<t>"), (_open, "")):
        module = respc.compile_template(build(pattern, version))
        for _ in range(60):
            text = head + "".join(rng.choice("abckxyz -") for _ in range(rng.randint(1, 9)))
            whole = _view(outcome(module, "", [text]))
            cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, 2)))
            ways = [*chunkings(text, text).values(),
                    [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]]
            for chunks in ways:
                assert _view(outcome(module, "", chunks)) == whole, (pattern, chunks)
