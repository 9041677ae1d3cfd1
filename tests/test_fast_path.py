"""The fast paths of the stream parser change nothing (runtime/stream.py, StreamParser.feed).

A chunk that arrives while nothing is held and holds no character that can start a watched
delimiter is routed without scanning; a trigger character ending such a chunk is held without
scanning. Here every catalogue template and a few regex templates parse the same outputs with and
without those paths (``FAST_PATH`` of all ``None`` disables them), in many chunkings, and the event
lists must be identical, not merely equivalent.
"""

from __future__ import annotations

import json
import random

import pytest

import respc
from support import REPO, run_stream

FAMILY_DIR = REPO / "tests" / "cases" / "families"
NAMES = sorted(p.stem for p in (REPO / "templates").glob("*.json"))

REGEX_TEMPLATES = {
    "lookbehind-open": ({"start_anchor": "A", "fields": {
        "x": {"open_pattern": r"(?<=\n)<x>", "close": "</x>"}, "content": {}}},
        ["a <x>no\n<x>yes</x> b<x", "\n<x>z</x>", "tail <", "<x>"]),
    "word-boundary": ({"start_anchor": "A", "fields": {
        "x": {"open_pattern": r"\bcall:", "close": ";"}, "content": {}}},
        ["recall: no; call: yes; xcall: no", "call:a;b", "c call:"]),
    "caret-or-tag-open": ({"start_anchor": "A", "fields": {
        "r": {"open_pattern": r"^\s*(?:<think>\s*)?|<think>\s*", "close": "</think>"}, "content": {}}},
        ["<think>a</think>b <think>c</think>", "plain</think> rest", "  x</think>y"]),
    "lookahead-open": ({"start_anchor": "A", "fields": {
        "call": {"open_pattern": r'(?=\{"name")', "close": ";", "content": "json"}, "content": {}}},
        ['text {x} then {"name": 1}; more { "name" {"na', 'a{"name": 2};{"name": 3}']),
    "context-lookbehind-start": ({"start_anchor": "A", "fields": {
        "x": {"open_pattern": r"(?<=\n\n)\w+:", "close": "."}, "content": {}}},
        ["intro\n\nkey: value. more\nno: x\n\nyes:", " a. b"]),
    "lead-pattern": ({"start_anchor": "A", "fields": {
        "x": {"open_pattern": r"<\|tool>(?P<n>\w+):", "close": "<|end|>", "transform": {"n": "{n}", "a": "{content}"}},
        "content": {}}},
        ["a < b <|tool>f:1<|end|> <|t", "<|tool>g:2<|end|><", "x <|"]),
}


def _slow(module):
    class NoFastPath(module.ResponseParser):
        __slots__ = ()
        FAST_PATH = tuple((None, None) for _ in module.ResponseParser.FAST_PATH)

    return NoFastPath


def _chunkings(text: str, seed: str):
    rng = random.Random(seed)
    yield [text]
    yield list(text)
    for _ in range(4):
        pieces, i = [], 0
        while i < len(text):
            step = rng.randint(1, 9)
            pieces.append(text[i:i + step])
            i += step
        yield pieces


def _compare(module, prefix, text, tools, seed):
    slow = _slow(module)
    for chunks in _chunkings(text, seed):
        fast_message, fast_events = run_stream(module, prefix, chunks, tools)
        parser = slow(prefix, tools)
        events = list(parser.initial_events)
        for chunk in chunks:
            events.extend(parser.feed(chunk))
        message, final = parser.finalize()
        assert (fast_message, fast_events) == (message, events + final), chunks


@pytest.mark.parametrize("name", NAMES)
def test_catalogue_cases_same_events_without_fast_path(name):
    module = respc.compile_template(REPO / "templates" / f"{name}.json")
    cases = json.loads((FAMILY_DIR / f"{name}.json").read_text(encoding="utf-8"))["cases"]
    filler = "Plain words < and <x or [a] with (parens), then `ticks` and | bars. "
    for case in cases:
        _compare(module, case["prefix"], filler + case["text"], case.get("tools"), f"{name}/{case['name']}")


@pytest.mark.parametrize("key", sorted(REGEX_TEMPLATES))
def test_regex_templates_same_events_without_fast_path(key):
    template, texts = REGEX_TEMPLATES[key]
    module = respc.compile_template(template)
    for i, text in enumerate(texts):
        _compare(module, "", text, None, f"{key}/{i}")
