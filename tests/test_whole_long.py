"""Long random outputs through the whole-text path and the streaming path (issue 33).

The whole-text path's searches take other ways on long texts than on the short ones of
tests/test_whole.py: ``lead_search`` keeps looking for leads with ``str.find`` past LEAD_MISSES
misses when they lie far apart, ``barrier_search`` looks factor by factor (a window the engine
searches, a candidate confirmed over the whole text) when more than BARRIER_LONG characters follow,
and ``WholeText.find`` keeps looking for a sentinel that misses sparsely. Here outputs of 5-14 kB
are spliced at random (fixed seeds) from prose, markup that starts such leads, factors and
sentinels without completing them, and the family's own test-case outputs; both paths must give the
same message, error and diagnostics in both modes (``same_whole_and_stream`` of tests/support.py),
and the new ways must be taken.
"""

from __future__ import annotations

import importlib
import random
import zlib

import pytest

from respc import runtime
from respc.runtime import stream, whole
from support import catalogue_parser, family_cases, same_whole_and_stream

#: templates whose complete-text scans use lead_search, barrier_search or sentinel finds over prose
NAMES = ["xlam", "llama4_pythonic", "qwen3_coder", "muse_glimmer", "gpt_oss", "inkling", "llama3_json",
         "command_r_plus", "kimi_k2", "kimi_k3", "firefunction_v2", "qwen3", "internlm2", "hunyuan"]

_WORDS = "the a of weather city mild rain wind returns value list check step Paris to in or".split()
#: pieces that start a lead, a factor or a sentinel without being a delimiter (mostly)
_MARKUP = ["[", "items[0]", "[1, 2]", "{x}", "a | b", "|x|", "<", "a < b", "<|", "<|x|>", "```", "`",
           "to=self", "to=x", "<|message|>", " to=functions.", '[{"name"', '{"name": 1}', "\n", "\n\n",
           "functools", "_", ">", "<|end", "<think>", "</think>"]


def _prose(rng: random.Random, n: int) -> str:
    out, size = [], 0
    while size < n:
        piece = rng.choice(_WORDS) if rng.random() < 0.97 else rng.choice(_MARKUP)
        out.append(piece)
        size += len(piece) + 1
    return " ".join(out)


def _texts(name: str, count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    samples = [case["text"] for case in family_cases(name)] or [""]
    texts = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(1, 4)):
            parts.append(_prose(rng, rng.randint(1000, 5000)))
            if rng.random() < 0.7:
                sample = rng.choice(samples)
                cut = rng.choice([len(sample), len(sample), rng.randint(0, len(sample))])
                parts.append(sample[:cut])
        texts.append("".join(parts))
    return texts


@pytest.mark.parametrize("name", NAMES)
def test_long_outputs_whole_equals_streaming(name):
    parser_class = catalogue_parser(name)
    for text in _texts(name, 5, zlib.crc32(name.encode())):
        same_whole_and_stream(parser_class, "", text)


def test_long_outputs_take_the_new_ways(monkeypatch):
    """The texts above reach the lead loop past LEAD_MISSES sparse misses and the factor-by-factor
    window (else the test above would only repeat tests/test_whole.py)."""
    seen = {"lead misses": 0, "factor windows": 0}
    lead_on = stream._lead_search_on

    def counted_lead(pattern, buf, pos, leads, window):
        found = lead_on(pattern, buf, pos, leads, window)
        stop = found.start() if found is not None else len(buf)
        if sum(buf.count(lead, pos, stop) for lead in leads) > stream.LEAD_MISSES:
            seen["lead misses"] += 1  # more misses than the engine used to be left after
        return found

    barrier = stream.barrier_search

    def counted_barrier(pattern, buf, pos, factor, barrier_char):
        at = buf.find(factor, pos)
        if at >= 0 and len(buf) - at > stream.BARRIER_LONG:
            seen["factor windows"] += 1
        return barrier(pattern, buf, pos, factor, barrier_char)

    monkeypatch.setattr(stream, "_lead_search_on", counted_lead)
    monkeypatch.setattr(runtime, "barrier_search", counted_barrier)  # (generated modules call _rt.barrier_search)
    for name in ("xlam", "llama4_pythonic", "muse_glimmer", "gpt_oss"):
        parser_class = catalogue_parser(name)
        for text in _texts(name, 5, zlib.crc32(name.encode())):
            try:
                whole.finish(parser_class(""), text)
            except (ValueError, KeyError, TypeError):
                pass
    assert seen["lead misses"] > 0 and seen["factor windows"] > 0, seen


def _fed_to_decoders(module, text: str, whole_text: bool) -> int:
    """Characters the value decoders of one parse of ``text`` were fed in all (the whole-text
    path, or one ``feed`` of all of it)."""
    total = [0]

    def hook(region, match):
        decoder = region.boundary()
        feed = decoder.feed

        def counted(piece):
            total[0] += len(piece)
            return feed(piece)

        decoder.feed = counted
        return decoder

    parser = module.ResponseParser("")
    parser.boundary_hook = hook
    if whole_text:
        whole.finish(parser, text)
    else:
        parser.feed(text)
        parser.finalize()
    return total[0]


@pytest.mark.parametrize("whole_text", [True, False], ids=["whole text", "one feed"])
def test_value_bodies_are_read_once(whole_text):
    """llama3_json's calls end where their JSON value ends, and their state watches no delimiter:
    the decoder was given the rest of the text at every call (a slice of it, and a C reader
    run over it), so 32,000 calls (1.8 MB) took 2.2 s where 1,000 took 14 ms (issue 33). The
    characters fed to the decoders grow with the text, not with its square."""
    module = importlib.import_module("respc.generated.llama3_json")
    call = '{"name": "get_weather", "parameters": {"city": "Paris"}};'
    small = _fed_to_decoders(module, call * 500, whole_text)
    large = _fed_to_decoders(module, call * 1000, whole_text)
    assert 0 < large <= 2.5 * small, (small, large)
