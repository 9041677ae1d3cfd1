"""Scanners decide with the matching engine's semantics (issue 7; docs/template-language.md "Choosing the
next delimiter", "D2: chunking
never changes the result").

Three defects of the reference's way of asking "may this delimiter still match?", each with its
repro, and a property over random small templates built from the constructs involved:

* the analysis read patterns with the stdlib ``re`` parser while the ``regex`` module matches them
  (``[[:alpha:]]`` is a POSIX class for ``regex``, a set of ``[:ahlp`` for ``re``), so the fast path
  routed text in which a delimiter started;
* a complete match hid an earlier (or longer) partial one (close ``["ab", "abcd"]``, close pattern
  ``$|/\\|``);
* zero-width assertions were judged as if the text ended at the buffer edge (close ``<\\b``).

Every chunking must give the whole-text result: message, and events once consecutive chunks of a
region are merged.
"""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import respc
from respc.compiler.automaton import classify_pattern, edge_probe
from support import merged_events, random_cuts, run_stream


def _chunkings(text: str, seed: int = 0):
    """Whole, characters, four random cuts into 2 to 6 pieces, each named (the D2 invariant's chunkings)."""
    yield "whole", [text]
    yield "chars", list(text)
    rng = random.Random(seed)
    for k in range(4):
        yield f"random{k}", random_cuts(text, rng, min(len(text) - 1, rng.randint(1, 5))) if len(text) > 1 else [text]


def _outcome(module, chunks):
    # (not support.feed_outcome: D2 compares merged events, the chunking-independent view, not each feed's)
    try:
        message, events = run_stream(module, "", chunks)
    except (ValueError, KeyError) as exc:
        return ("error", type(exc).__name__)
    return ("ok", message, merged_events(events))


def _assert_invariant(module, text, expected=None):
    whole = _outcome(module, [text])
    if expected is not None:
        assert whole[:2] == ("ok", expected)
    for how, chunks in _chunkings(text):
        assert _outcome(module, chunks) == whole, (how, chunks)


# --- 1. the engine's reading of a pattern ----------------------------------------------------
ALPHA_CALL = {"start_anchor": "<|a|>", "fields": {
    "content": {"content": "text"},
    "call": {"open_pattern": "[[:alpha:]]+\\(", "close": ")"}}}


def test_issue_repro_posix_class_open():
    module = respc.compile_template(ALPHA_CALL)
    assert run_stream(module, "", ["one ", "two xyz(q) end"])[0] == {"content": "end", "call": "q"}
    _assert_invariant(module, "one two xyz(q) end", {"content": "end", "call": "q"})


@pytest.mark.parametrize("pattern,text,x,content", [
    ("[[:digit:]]+:", "abc 42:x; rest", "x", "rest"),
    (r"\p{L}+:", "12 wörd:x; rest", "x", "rest"),
    (r"(?V1)[[a-z]--[aeiou]]+!", "ae bcd!x; tail", "x", "tail"),
    (r"\mcall:", "recall: no; call:yes; z", "yes", "z"),
    (r"(?>a+)b:", "aaa ab:x; t", "x", "t"),
    (r"a++b:", "aa aab:x; t", "x", "t"),
    (r"([[:alpha:]])(?1)=", "1a xy=v; t", "v", "t"),
    (r"\X\X:", "e\u0301e:v; t", "v", "t"),
    (r"(?:call){e<=1}:", "x cell:v; t", "v", "t"),
    (r"x\Ky:", "axy:v; t", "v", "t"),
    (r"(?r)ab:", "q ab:v; t", "v", "t"),
])
def test_regex_only_syntax_is_chunking_invariant(pattern, text, x, content):
    template = {"start_anchor": "A", "fields": {"x": {"open_pattern": pattern, "close": ";"}, "content": {}}}
    # `content` does not repeat: its last block wins (docs/template-language.md "`repeats`")
    _assert_invariant(respc.compile_template(template), text, {"content": content, "x": x})


@pytest.mark.parametrize("pattern", [
    "[[:alpha:]]+\\(", "[[:digit:]]x", r"\p{L}", r"\mx", r"(?V1)[[a-z]--[b]]", r"\Xx", "a{e<=1}b",
    "[[a]x", "(?w)x", "x{ 1}",
])
def test_patterns_the_two_parsers_read_differently_are_not_analysed(pattern):
    facts = classify_pattern(pattern)
    assert (facts.first_chars, facts.lead, facts.context) == (None, "", None)


def test_analysed_first_characters_hold_for_the_engine():
    assert classify_pattern(r"<\|tool>(?P<n>\w+):").first_chars == "<"
    assert classify_pattern(r"[ab]x|c").first_chars == "abc"
    assert classify_pattern(r"[\d]x").first_chars is None  # a category: not a small literal set


@pytest.mark.parametrize("pattern,probe,rewritten", [
    ("ab", "(?>(?:ab))(?!)", False),
    (r"<\b", r"(?>(?:<(?:(?=[\s\S])\b)))(?!)", True),
    (r"[\b$]x", r"(?>(?:[\b$]x))(?!)", False),  # inside a set: backspace and a dollar sign
    (r"a\Z", r"(?>(?:a(?:(?=[\s\S])(?!))))(?!)", True),
    (r"\$", r"(?>(?:\$))(?!)", False),
    (r"(?#$)x$", r"(?>(?:(?#$)x(?:(?=\n?(?=[\s\S])(?!))|$)))(?!)", True),
    (r"x\Ky", None, False),
    ("(?x) a b", None, False),
    ("(?r)ab", None, False),
])
def test_edge_probe(pattern, probe, rewritten):
    assert edge_probe(pattern) == (probe, rewritten)


# --- 2. partial matches a complete one hides, assertions at the edge -------------------------
def _region(close_key, close):
    return {"start_anchor": "A", "fields": {"t": {"open": "<t>", close_key: close}, "content": {}}}


@pytest.mark.parametrize("template,chunks,expected", [
    (_region("close", ["ab", "abcd"]), ["<t>xabc", "dy"], {"t": "x", "content": "y"}),
    (_region("close", ["abcd", "bc"]), ["<t>xab", "cdy"], {"t": "x", "content": "y"}),
    (_region("close", ["xabc", "ab"]), ["<t>qxab", "c!"], {"t": "q", "content": "!"}),
    (_region("close_pattern", r"$|/\|"), ["<t>x/", "|y"], {"t": "x", "content": "y"}),
    (_region("close_pattern", r"<\b"), ["<t>", "<", "k"], {"content": "k"}),
    (_region("close_pattern", r"<\b"), ["<t>a<", " <k"], {"t": "a<", "content": "k"}),
    (_region("close_pattern", r"a(?=bc)|ab"), ["<t>xab", "cz"], {"t": "x", "content": "bcz"}),
    (_region("close_pattern", r"x$"), ["<t>axa", "x"], {"t": "axa"}),
    (_region("close_pattern", r"(?:ab)?c|a"), ["<t>qa", "bc!"], {"t": "q", "content": "!"}),
])
def test_answer_is_held_until_it_cannot_change(template, chunks, expected):
    module = respc.compile_template(template)
    assert run_stream(module, "", chunks)[0] == expected
    _assert_invariant(module, "".join(chunks), expected)


def test_literal_list_close_does_not_hide_an_open_prefix():
    # `</x>` matched (a complete close), while the buffer ends in `<t`, a prefix of the open `<tx>`
    template = {"start_anchor": "A", "fields": {
        "t": {"open": "<tx>", "close": "!"}, "content": {"close": ["</x>", "<y>"]}}}
    module = respc.compile_template(template)
    _assert_invariant(module, "a</x>b<tx>c!d")


# --- 3. the property ---------------------------------------------------------------------------
OPEN_PATTERNS = ["[[:alpha:]]+\\(", "[[:digit:]]+:", r"\p{L}+\|", r"<\b", r"\bab", r"x\M", r"a(?=bc)",
                 r"a(?!b)c?", r"(?:ab)?c", r"a.*?>", r"<.*>", r"(?>a+)b", r"a++:", "ab{e<=1}:",
                 r"(?V1)[[a-z]--[aeiou]]+;", r"\X\|", r"/\||<", r"(?i)AB"]
CLOSE_PATTERNS = OPEN_PATTERNS + [r"$", r"\Z", r"$|/\|", r"x$", r";(?=\s)", r"\n(?!\n)"]
LITERALS = [["ab"], ["ab", "abcd"], ["abcd", "bc"], ["<"], ["</t>"], [")"], ["x", "xab"], [";"], ["|"]]
ALPHABET = list("abcdxy<>/|():;! \n1éß") + ["e\u0301", "ab", "abc", "<t>", "</t>", "x$"]


def _delimiter(draw, kind):
    if draw(st.booleans()):
        return {kind: draw(st.sampled_from(LITERALS))}
    return {kind + "_pattern": draw(st.sampled_from(OPEN_PATTERNS if kind == "open" else CLOSE_PATTERNS))}


@st.composite
def small_template(draw):
    fields = {}
    for name in ("f", "g")[:draw(st.integers(1, 2))]:
        spec = _delimiter(draw, "open")
        if draw(st.integers(0, 4)):
            spec.update(_delimiter(draw, "close"))
        fields[name] = spec
    implicit = {"repeats": True}
    if draw(st.booleans()):
        implicit.update(_delimiter(draw, "close"))
    fields["content"] = implicit
    return {"start_anchor": "A", "fields": fields}


_MODULES: dict[str, object] = {}


def _module(template):
    key = json.dumps(template)  # key order kept: field order ranks delimiters
    if key not in _MODULES:
        _MODULES[key] = respc.compile_template(template)
    return _MODULES[key]


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(small_template(), st.lists(st.sampled_from(ALPHABET), max_size=14).map("".join),
       st.lists(st.integers(1, 30), max_size=6))
def test_every_chunking_gives_the_whole_text_result(template, text, cuts):
    module = _module(template)
    whole = _outcome(module, [text])
    points = sorted({c for c in cuts if c < len(text)})
    bounds = [0, *points, len(text)]
    for chunks in (list(text), [text[a:b] for a, b in zip(bounds, bounds[1:])]):
        assert _outcome(module, chunks) == whole, (template, chunks)
