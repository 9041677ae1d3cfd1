"""Where the transformers 5.23 reference itself misbehaves beyond respc's deviations (docs/template-language.md
"Where respc deliberately differs from the transformers reference, and why").

Each test pins the reference's behaviour (so a transformers upgrade that changes it is noticed)
and states what ours does: either the same, because respc keeps the reference's behaviour there
(the differential suite expects it), or the D2 result, when the quirk is a chunking dependence.
"""

from __future__ import annotations

import json

import pytest

import respc
from support import REPO, merged_events, run_stream

ref_module = pytest.importorskip("transformers.utils.chat_parsing")
RefParser = ref_module.ResponseParser


def ref_stream(template: dict, prefix: str, chunks: list[str]) -> tuple[dict, list[dict]]:
    parser = RefParser(template, prefix=prefix)
    events = list(parser.initial_events)
    for chunk in chunks:
        events += parser.feed(chunk)
    message, final = parser.finalize()
    return message, events + final


ZERO_WIDTH_CLOSE = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|assistant|>",
    "fields": {
        "content": {"close_pattern": "(?=STOP)"},
        "tool": {"open": "<x>", "close": "</x>"},
    },
}


@pytest.mark.parametrize("chunks", [["abcSTOP<x>call</x>tail"], list("abcSTOP<x>call</x>tail"),
                                    ["abc", "STOP<x>", "call</x>tail"]])
def test_zero_width_close_on_empty_region_drops_rest_of_stream(chunks):
    """Reference data loss: a zero-width close that matches while its region is still empty
    "stops processing of this input" to avoid an endless loop -- but nothing ever moves the
    position past it, so every later feed and even ``finalize`` stop at the same spot. Everything
    after the first zero-width close of an empty region is silently lost, including whole explicit
    regions (``<x>call</x>`` here) and the text after them.

    docs/template-language.md "Zero-width delimiters" keeps this rule ("A zero-width close on a
    region that received no text stops the processing of the current input"), and no deviation
    covers it, so ours does the same and the differential suite expects it. A fix (commit the
    zero-width close, then keep scanning from the next character) would have to become a numbered
    deviation first.
    """
    ref_message, ref_events = ref_stream(ZERO_WIDTH_CLOSE, "", chunks)
    assert ref_message == {"role": "assistant", "content": "abc"}
    assert not any(e.get("field") == "tool" for e in ref_events)
    ours_message, ours_events = run_stream(respc.compile_template(ZERO_WIDTH_CLOSE), "", chunks)
    assert ours_message == ref_message
    assert merged_events(ours_events) == merged_events(ref_events)


def test_zero_width_close_at_start_loses_whole_output():
    """The same quirk at offset 0: the output starts with the stop marker, so nothing is parsed."""
    assert ref_stream(ZERO_WIDTH_CLOSE, "", ["STOP<x>call</x>"])[0] == {"role": "assistant"}
    assert respc.parse_response("STOP<x>call</x>", ZERO_WIDTH_CLOSE, prefix="") == {"role": "assistant"}


ERNIE = json.loads((REPO / "templates" / "ernie4_5.json").read_text(encoding="utf-8")) \
    if (REPO / "templates" / "ernie4_5.json").is_file() else None


@pytest.mark.skipif(ERNIE is None, reason="templates/ernie4_5.json is absent")
def test_optional_group_after_anchor_commits_before_it_is_complete():
    """Reference chunking dependence outside the pattern classes D2 lists
    (docs/template-language.md "D2: chunking never changes the result").

    ernie4_5's ``open_pattern`` is ``^\\s*(?:<think>\\s*)?|<think>\\s*``. With partial matching,
    the ``regex`` module reports the *complete* zero-width match at offset 0 (the optional group
    skipped) rather than a partial match of ``<think>``; it does not end at the buffer edge, so
    the reference commits it. Fed ``"<th"`` first, the reasoning region opens before ``<think>``
    and the tag text lands in ``reasoning_content``; fed whole, the tag is consumed as part of the
    delimiter. The pattern has no end anchor, lookahead or greedy ``.*`` (the classes D2 and
    ``respc check`` name), yet the reference result depends on the chunking. D2 ("chunking never
    changes the result") still applies: ours gives the whole-text result for every chunking.
    """
    text = "<think>\nabc</think>x"
    whole, _ = ref_stream(ERNIE, "", [text])
    split, _ = ref_stream(ERNIE, "", ["<th", "ink>\nabc</think>x"])
    assert whole == {"role": "assistant", "reasoning_content": "abc", "content": "x"}
    assert split == {"role": "assistant", "reasoning_content": "<think>\nabc", "content": "x"}
    module = respc.compile_template(ERNIE)
    for chunks in ([text], ["<th", "ink>\nabc</think>x"], list(text)):
        assert run_stream(module, "", chunks)[0] == whole
