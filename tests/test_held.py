"""Held regex delimiters (compiler/held.py, runtime/held.py) against the scan they stand for (issue 14).

A chunk that keeps a regex delimiter pending is read by its automaton, not scanned.

compiler/held.py builds, per state, the position automata of the eligible regex delimiters
(``HOLD_REGEX``); runtime/held.py runs them as a lazy DFA and ``StreamParser.feed`` skips the scan
while one delimiter's start at the held offset is live and has no complete match. The claim is
that the scan would have held from the same offset and emitted nothing, so here:

* the automaton's verdict is checked against the ``regex`` module's own partial search on every
  eligible catalogue pattern (live and nothing complete => a partial match at offset 0);
* every template with ``HOLD_REGEX`` parses its openers -- whole, cut at every offset, damaged
  midway (a ``<`` or a space in the name, a character dropped), the stream ending inside one, an
  opener written again after a piece of one -- with and without the shortcut (``HOLD_REGEX``
  empty), in several chunkings, in both error modes, with offsets and the ledger on: events,
  message, diagnostics, ledger and errors must be identical;
* the shortcut is taken (kimi_k2's opener in 4-character chunks is scanned only a few times);
* what the compiler refuses (lookarounds, anchors, backreferences, atomic groups and possessive
  repeats it cannot prove, case folding, patterns that match empty);
* possessive runs it reads (``[^<\\s]++``, gpt_oss's call opener): the automaton's verdict is the
  ``regex`` module's on the possessive source itself, on random strings whole and cut at every
  offset, and gpt_oss's opener in small chunks is no longer scanned per chunk.
"""

from __future__ import annotations

import random
import types

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import respc
from respc.compiler.api import compile_source
from respc.compiler.held import MAX_POSITIONS, held_plan, position_automaton
from respc.runtime import HeldAutomaton, LazyPattern
from respc.runtime.held import STOP, HeldRegex, automaton_table
from support import CATALOGUE_NAMES, REPO, compiled, family_cases, feed_outcome, random_pieces

NAMES = CATALOGUE_NAMES


def _patterns(module) -> list[str]:
    """The regex delimiters of a generated module (its ``_D<k>`` globals: a LazyPattern until
    first searched, then the compiled pattern)."""
    return [v.pattern for k, v in sorted(vars(module).items())
            if k.startswith("_D") and k[2:].isdigit() and isinstance(v, (regex.Pattern, LazyPattern))]


HELD_NAMES = [n for n in NAMES if any(t is not None for t in compiled(n).ResponseParser.HOLD_REGEX)]


def _general(module):
    class General(module.ResponseParser):
        __slots__ = ()
        HOLD_REGEX = ()

    return General


#: the parser options that also show the ledger, with offsets on
EXTRAS = {"ledger": True, "offsets": True}


def _outcome(parser_class, prefix, chunks, errors, extras=False):
    """:func:`support.feed_outcome` without tools (events per call, message, diagnostics, ledger, or
    the error raised); with ``extras`` the ledger is kept, with offsets on."""
    return feed_outcome(parser_class, prefix, chunks, None, errors, **(EXTRAS if extras else {}))


def _chunkings(text: str, rng: random.Random):
    """Pieces of 4 and 3 characters at every shift, characters, random pieces: the held offset falls at
    every place of a delimiter (other modules' chunkings are random only)."""
    for size in (4, 3):
        for shift in range(size):
            yield ([text[:shift]] if shift else []) + [text[i:i + size] for i in range(shift, len(text), size)]
    yield list(text)
    yield random_pieces(text, rng, 9)


def _openers(name: str) -> list[str]:
    """Matches of the module's regex delimiters in the catalogue cases, one per pattern, longest
    first (the openers the shortcut reads)."""
    module = compiled(name)
    found: dict[str, str] = {}
    for pattern in _patterns(module):
        rx = regex.compile(pattern, regex.DOTALL)
        for case in family_cases(name):
            for m in rx.finditer(case["text"]):
                if len(m.group()) > len(found.get(pattern, "")):
                    found[pattern] = m.group()
    return [o for o in found.values() if len(o) >= 2]


#: how many texts :func:`_variants` makes per offset
VARIANTS = 7


def _variants(opener: str, step: int):
    """Texts around one opener: cut at an offset (the stream ends there, or prose follows),
    damaged there (a ``<`` or a space inserted, one or two characters dropped), and written again
    after a piece of it (:data:`VARIANTS` per offset)."""
    yield opener
    for k in range(1, len(opener), step):
        yield opener[:k]
        yield opener[:k] + " then prose."
        yield opener[:k] + "<" + opener[k:]
        yield opener[:k] + " " + opener[k:]
        yield opener[:k] + opener[k + 1:]
        yield opener[:k] + opener[k + 2:]  # two dropped: kimi's ":0"
        yield opener[:k] + opener


@pytest.mark.parametrize("name", HELD_NAMES)
def test_openers_cut_and_damaged_same_events_as_the_scan(name):
    module = compiled(name)
    general = _general(module)
    rng = random.Random(name)
    cases = family_cases(name)
    prefix = cases[0]["prefix"]
    step = 1 if name in ("kimi_k2", "step3", "deepseek_v3_1") else 2 if name == "gpt_oss" else 4
    for opener in _openers(name):
        for k, variant in enumerate(_variants(opener, step)):
            text = "Some prose < first. " + variant
            # (each kind of variant meets both modes, with and without the extras)
            kind, offset = k % VARIANTS, k // VARIANTS
            errors = ("strict", "recover")[(kind + offset) % 2]
            extras = (kind + offset) % 3 == 0
            for chunks in _chunkings(text, rng):
                want = _outcome(general, prefix, chunks, errors, extras)
                assert _outcome(module.ResponseParser, prefix, chunks, errors, extras) == want, (errors, chunks)


@pytest.mark.parametrize("name", HELD_NAMES)
def test_catalogue_cases_same_events_as_the_scan_in_both_modes(name):
    module = compiled(name)
    general = _general(module)
    rng = random.Random("cases/" + name)
    for case in family_cases(name):
        for errors in ("strict", "recover"):
            for chunks in _chunkings(case["text"], rng):
                want = _outcome(general, case["prefix"], chunks, errors, errors == "recover")
                assert _outcome(module.ResponseParser, case["prefix"], chunks, errors, errors == "recover") == want


_SPLICE_NAMES = ["kimi_k2", "kimi_k2_thinking", "gpt_oss", "step3", "deepseek_v3", "glm4_5", "hunyuan", "plamo3",
                 "solar_open", "magistral", "dots", "kimi_k3"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
@pytest.mark.parametrize("name", _SPLICE_NAMES)
def test_random_splices_around_openers(name, data):
    """Random texts from pieces of the openers (cut anywhere), damage and prose, in random chunks,
    in both modes: the shortcut changes nothing."""
    module = compiled(name)
    openers = _openers(name)
    pieces = [" ", "<", ":", "0", ":0", "x", "\n", "words ", "<|", "|>", '"', "."]
    for o in openers:
        pieces += [o, o[: len(o) // 2], o[len(o) // 2:], o[:5], o[-5:]]
    parts = data.draw(st.lists(st.sampled_from(pieces), min_size=1, max_size=12))
    text = "".join(parts)
    cuts = sorted(data.draw(st.sets(st.integers(0, len(text)), max_size=12)))
    chunks = [text[a:b] for a, b in zip([0] + cuts, cuts + [len(text)]) if b > a]
    errors = data.draw(st.sampled_from(["strict", "recover"]))
    prefix = data.draw(st.sampled_from(["", family_cases(name)[0]["prefix"]]))
    want = _outcome(_general(module), prefix, chunks, errors, True)
    assert _outcome(module.ResponseParser, prefix, chunks, errors, True) == want


#: small templates whose openers stress what the catalogue's do not: a start that stays live while
#: a later one completes (``regex`` then returns the later, complete match: the scan routes the
#: text before it), alternatives, bounded repeats, Unicode classes, a close that may begin like
#: the region's opener written again (errors="recover" watches for that copy first)
CUSTOM = {
    "later-complete": ({"start_anchor": "A", "fields": {"x": {"open_pattern": r"<call \w+ [^!]*!|\[x\]", "close": ";"},
                                   "content": {}}},
                       ["<call ", "f ", "ab ", "[x]", "!", ";", " ", "[", "x", "]", "<", "more", "\n"]),
    "later-complete-edge": ({"start_anchor": "A", "fields": {"x": {"open_pattern": r"<c [^!]*!\w*|\[x\]", "close": ";"},
                                                            "content": {}}},
                            ["<c ", "ab ", "[x]", "!", "w", ";", " ", "[", "x", "]", "<", "more"]),
    "lazy-any": ({"start_anchor": "A", "fields": {"x": {"open_pattern": r"<a>(?:.*?)</a>|<b>", "close": ";"}, "content": {}}},
                 ["<a>", "</a>", "<b>", "<", "/", "a>", "b", "x", ";", " "]),
    "bounded": ({"start_anchor": "A", "fields": {"x": {"open_pattern": r"<\d{2,4}:[\s\u00a0]{1,3}\w+=", "close": "</>"},
                            "content": {}}},
                ["<", "12", "3", "45", ":", " ", "\u00a0", "\u2028", "é", "ab", "=", "</>", "x"]),
    "opener-again": ({"start_anchor": "A", "fields": {"r": {"open": "<r>", "close_pattern": r"<r>\w+;|</r>"},
                                                     "content": {}}},
                     ["<r>", "<r", ">", "ab", ";", "</r>", " ", "<", "r", "x"]),
    "greedy-tail": ({"start_anchor": "A", "fields": {
        "x": {"open_pattern": r"<t>\s*(?P<n>[^\s<]+)", "close": "</t>", "transform": {"n": "{n}", "c": "{content}"}},
        "y": {"open_pattern": r"<u>(?:ab|a)+", "close": "</u>"}, "content": {}}},
        ["<t>", "<t", ">", " ", "get", "_x", "<", "\n", "</t>", "<u>", "ab", "a", "b", "</u>", "z"]),
    "lazy-tail": ({"start_anchor": "A", "fields": {"x": {"open_pattern": r"<t>\w+?", "close": "</t>"}, "content": {}}},
                  ["<t>", "<", "t>", "ab", "c", " ", "</t>"]),
    "two-openers": ({"start_anchor": "A", "fields": {"x": {"open_pattern": r"<x \w+>", "close": "</x>"},
                                "y": {"open_pattern": r"(?:<x a>)?<y>", "close": "</y>"}, "content": {}}},
                    ["<x ", "a>", "b>", "<y>", "</x>", "</y>", "<", "x", " "]),
    # quotes, a backslash, non-ASCII and U+2028 in the tables' JSON text (compiler/emit.py _lit)
    "quoted": ({"start_anchor": "A", "fields": {"x": {"open_pattern": "<c n='(?P<n>[^'\"\\\\]+)'\u2028\u00e9\\\\>",
                                                      "close": ";", "transform": {"n": "{n}", "c": "{content}"}},
                                                "content": {}}},
               ["<c n='", "a\"", "b'", "'\u2028", "\u00e9\\", ">", "x;", "<c n='q'", "\u2028\u00e9\\>", ";", "<"]),
}


@pytest.mark.parametrize("key", sorted(CUSTOM))
def test_custom_openers_same_events_as_the_scan(key):
    template, pieces = CUSTOM[key]
    module = respc.compile_template(template)
    assert any(t is not None for t in module.ResponseParser.HOLD_REGEX)
    general = _general(module)
    rng = random.Random(key)
    for k in range(120):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 14)))
        errors = ("strict", "recover")[k % 2]
        for chunks in _chunkings(text, rng):
            want = _outcome(general, "", chunks, errors, k % 3 == 0)
            assert _outcome(module.ResponseParser, "", chunks, errors, k % 3 == 0) == want, (errors, chunks)


def test_long_pending_opener_waits_like_the_scan():
    """Held text reaching LONG_HOLD is left to the scan, which then searches again only once it has
    doubled (so chunk boundaries stay the scan's): a lazy opener pending over 3,000 characters."""
    template, _ = CUSTOM["lazy-any"]
    module = respc.compile_template(template)
    text = "intro <a>" + "name " * 600 + "</a>body; after"
    chunks = [text[i:i + 7] for i in range(0, len(text), 7)]
    for errors in ("strict", "recover"):
        assert _outcome(module.ResponseParser, "", chunks, errors) == _outcome(_general(module), "", chunks, errors)


def _counted(module, calls: list):
    """Two subclasses of ``module``'s parser that log each scan (``_run``) in ``calls``: one with
    the held-regex reads, one without (the general path)."""

    class Counted(module.ResponseParser):
        __slots__ = ()

        def _run(self, events, eos):
            calls.append(eos)
            super()._run(events, eos)

    class CountedGeneral(Counted):
        __slots__ = ()
        HOLD_REGEX = ()

    return Counted, CountedGeneral


def test_kimi_opener_in_small_chunks_is_scanned_twice():
    """The point: kimi_k2's opener, held over 18 four-character chunks, is scanned when it starts
    and when its match completes, not in between (the general path scans all 18); the events
    are the scan's."""
    calls: list = []
    counted, general = _counted(compiled("kimi_k2"), calls)
    opener = "<|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>"
    chunks = [opener[i:i + 4] for i in range(0, len(opener), 4)]
    assert len(chunks) == 18
    for parser_class, scans in ((counted, 2), (general, 18)):
        parser = parser_class("")
        events = parser.feed("Let me check. ")
        calls.clear()
        events += [e for c in chunks for e in parser.feed(c)]
        assert len(calls) == scans, (parser_class, calls)
        events += parser.feed('{"city": "Paris"}<|tool_call_end|>')
        message, final = parser.finalize()
        assert message["tool_calls"][0]["function"]["name"] == "get_weather"
        if scans == 2:
            fast = events + final
        else:
            assert events + final == fast


def test_glm_name_in_small_chunks_is_not_scanned():
    """glm4_5's opener ``<tool_call>\\s*(?P<name>[^\\s<]+)`` is complete after the name's first
    character and held while the name may go on (its match ends at the buffer edge): those chunks
    take the anchored match, not the scan (HeldRegex.edges); the events are the scan's."""
    module = compiled("glm4_5")
    tables = [x for t in module.ResponseParser.HOLD_REGEX if t is not None for x in t]
    assert any(automaton_table(x)[0] is not None for x in tables)  # a pattern that can go on
    calls: list = []
    counted, general = _counted(module, calls)
    text = "<tool_call>get_current_weather_in_a_city\n<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>"
    chunks = ["Let me check. "] + [text[i:i + 4] for i in range(0, len(text), 4)]
    outcomes = []
    for parser_class in (counted, general):
        calls.clear()
        parser = parser_class("")
        events = [parser.feed(c) for c in chunks[:12]]  # the prose and the opener up to "_a_c"
        outcomes.append((len(calls), events))
    (fast_scans, fast_events), (general_scans, general_events) = outcomes
    assert fast_events == general_events
    assert general_scans == 12 and fast_scans <= 4, (fast_scans, general_scans)


def test_anchored_match_at_the_edge_is_the_search():
    """What HeldRegex.edges rests on: a complete anchored match at 0 that ends at the text's end
    is what the ``regex`` module's partial search returns, on every eligible pattern that can go on
    after a complete match."""
    patterns = sorted({p for n in NAMES for p in _patterns(compiled(n))})
    patterns += [spec["open_pattern"] for template, _ in CUSTOM.values() for spec in template["fields"].values()
                 if "open_pattern" in spec]
    rng = random.Random(15)
    seen = 0
    for pattern in patterns:
        table = position_automaton(pattern)
        if table is None or not table.extends:
            continue
        rx = regex.compile(pattern, regex.DOTALL)
        for s in _verdict_cases(pattern, rng):
            m = rx.match(s, 0, partial=True)
            if m is not None and not m.partial and m.end() == len(s):
                seen += 1
                w = rx.search(s, 0, partial=True)
                assert w is not None and not w.partial and w.span() == m.span(), (pattern, s)
    assert seen > 200, seen


def _verdict_cases(pattern: str, rng: random.Random):
    """Strings near a pattern's matches: prefixes and slices of its literal skeleton, some with
    characters replaced, and random strings from its characters and a few others."""
    skeleton = regex.sub(r"\\(.)", r"\1", pattern)
    pool = sorted(set(pattern)) + list(" \n\t_.:ab09<>|\"'{}[]é中\u00a0\u2028")
    for _ in range(1500):
        roll = rng.random()
        if roll < 0.6:
            i = rng.randint(0, len(skeleton))
            j = rng.randint(i, len(skeleton))
            s = skeleton[:j] if rng.random() < 0.7 else skeleton[i:j]
            if rng.random() < 0.5:
                s = "".join(c if rng.random() > 0.08 else rng.choice(pool) for c in s)
        else:
            s = "".join(rng.choice(pool) for _ in range(rng.randint(1, 12)))
        if s:
            yield s


def test_automaton_verdict_is_the_regex_modules_partial_search():
    """Live at 0 with no complete match, by the automaton, is a partial match at 0 by ``regex``
    (the scanner's hold), on every eligible catalogue pattern; and the automaton stops once a
    match is complete (so it never hides one). Reading the text at once or piece by piece gives
    the same state."""
    patterns = sorted({p for n in NAMES for p in _patterns(compiled(n))})
    patterns += [spec["open_pattern"] for template, _ in CUSTOM.values() for spec in template["fields"].values()
                 if "open_pattern" in spec]
    rng = random.Random(14)
    eligible = 0
    live = 0
    for pattern in patterns:
        table = position_automaton(pattern)
        if table is None:
            continue
        eligible += 1
        held = HeldRegex((None, table.tests, table.first, table.follow, table.last))
        rx = regex.compile(pattern, regex.DOTALL)
        for s in _verdict_cases(pattern, rng):
            d = held.run(held.start, s)
            cut = rng.randint(0, len(s))
            assert held.run(held.run(held.start, s[:cut]), s[cut:]) is d, (pattern, s)
            m = rx.search(s, 0, partial=True)
            if d is not STOP:
                live += 1
                assert m is not None and m.partial and m.start() == 0, (pattern, s, m)
            elif m is not None and not m.partial:
                continue  # a complete match somewhere: stopped, as it must
    assert eligible >= 30 and live > 2000, (eligible, live)


@pytest.mark.parametrize("pattern", [
    r"(?=\{)", r"a(?=b*)", r"a(?=b)c", r"^\s*<think>", r"<a>\b", r"(?<=\n)<x>", r"(<a>)\1", r"(?>ab|a)c",
    r"a*+b", r"(?i)<tool>", r"<x(?i:y)>", r"\s*", r"(?:<a>)?", r"<x>$", r"<x>\Z", r"\Gx",
    r"<x{e<=1}>", r"[[a]b]", r"a{1000}",
    # possessive runs the compiler cannot prove equal to what it models (compiler/held.py
    # "Possessive runs"): the run takes what follows (dead), follows partly in its class, is
    # entered again, nullable, bounded, longer than one class
    r"a++a", r"x[^<\s]++[a<]", r"x\w++[a\s]", r"(?:a++)+b", r"a{1,3}+b", r"x(?:ab)++c", r"(?>a+|b)c",
])
def test_compiler_refuses_what_the_automaton_does_not_model(pattern):
    assert position_automaton(pattern) is None


def test_classes_keep_the_regex_modules_unicode_meaning():
    """``\\s``, ``\\d``, ``\\w`` and negated sets are tested by ``regex`` itself: U+00A0, U+2028
    are ``\\s`` for it (U+001C is not, though ``str.isspace`` says so), Arabic-Indic digits are
    ``\\d``, ``é`` and ``中`` are ``\\w``."""
    table = position_automaton(r"<x>\s\d\w[^:<>\s]")
    held = HeldRegex((None, table.tests, table.first, table.follow, table.last))
    assert held.run(held.start, "<x>\u00a0\u0660é") is not STOP
    assert held.run(held.start, "<x>\u2028\u0661中") is not STOP
    assert held.run(held.start, "<x>\x1c") is STOP
    assert held.run(held.start, "<x> 1a:") is STOP
    assert held.run(held.start, "<x> 1a") is not STOP
    assert held.run(held.start, "<x> 1ab") is STOP  # complete: the scan must run


def test_position_automaton_of_kimi_opener():
    """Tables of a real opener: one position per one-character item, ``+?`` as a loop, the
    optional group skippable, one last position."""
    pattern = r"<\|tool_call_begin\|>\s*(?:functions\.)?(?P<name>[^:<>\s]+?):\d+\s*<\|tool_call_argument_begin\|>"
    table = position_automaton(pattern)
    assert len(table.tests) == len("<|tool_call_begin|>") + 1 + len("functions.") + 1 + 1 + 1 + 1 \
        + len("<|tool_call_argument_begin|>")
    assert table.tests[:3] == ("<", "|", "t") and table.tests[19] == "\\s" and table.tests[30] == "[^:<>\\s]"
    assert table.first == (0,) and table.last == (len(table.tests) - 1,)
    assert table.follow[18] == (19, 20, 30)  # after '>': \s*, 'functions.', or the name
    assert table.follow[30] == (30, 31)  # the name repeats or ':' follows
    assert len(table.tests) <= MAX_POSITIONS


def test_several_delimiters_one_complete_other_live():
    """gpt_oss outside: ``<|start|>assistant`` completes one delimiter while the tool-call opener
    (whose optional prefix it is) stays live: the automaton goes on, and the scan agrees."""
    a = position_automaton(r"<\|start\|>assistant")
    b = position_automaton(r"(?:<\|start\|>assistant)?\s*to=functions\.")
    held = HeldRegex(*((None, t.tests, t.first, t.follow, t.last) for t in (a, b)))
    assert held.run(held.start, "<|start|>assistant to=fun") is not STOP
    assert held.run(held.start, "<|start|>assistant to=functions.") is STOP
    assert held.run(held.start, "<|start|>assistantx") is STOP
    held_a = HeldRegex((None, a.tests, a.first, a.follow, a.last))
    assert held_a.run(held_a.start, "<|start|>assistant") is STOP


@pytest.mark.parametrize("name", ["kimi_k2", "gpt_oss"])
def test_caches_full_changes_nothing(name, monkeypatch):
    """With every cache of runtime/held.py full from the start (nothing is kept: each step is
    computed again), the events are still the scan's."""
    import respc.runtime.held as held_module

    for cap in ("MAX_EDGES", "MAX_STATES", "MAX_CHARS"):
        monkeypatch.setattr(held_module, cap, 0)
    module = respc.compile_template(REPO / "templates" / f"{name}.json")
    general = _general(module)
    rng = random.Random("caps/" + name)
    for opener in _openers(name):
        for k, variant in enumerate(_variants(opener, 5)):
            text = "Prose < x. " + variant
            for chunks in list(_chunkings(text, rng))[:3]:
                errors = ("strict", "recover")[(k % VARIANTS + k // VARIANTS) % 2]
                assert _outcome(module.ResponseParser, "", chunks, errors) == _outcome(general, "", chunks, errors)


@pytest.mark.parametrize("key", ["quoted", *HELD_NAMES])
def test_tables_are_records_compiled_on_first_use(key):
    """A module writes each automaton as one ``HeldAutomaton`` record built by keyword (issue 31,
    docs/security.md "Declared scanners and named records":
    no JSON in strings); it is the compiler's own table, and a parser class compiles its tests
    only when text is first held in that state."""
    template = CUSTOM[key][0] if key in CUSTOM else REPO / "templates" / f"{key}.json"
    compiled = compile_source(template)
    module = types.ModuleType("held_json_" + key)  # not respc.compile_template's cached module
    exec(compile(compiled.source, f"<{key}>", "exec"), module.__dict__)
    plan = held_plan(compiled.automaton)
    assert len(module.ResponseParser.HOLD_REGEX) == len(plan)
    # per state, whether the module wrote _rt.HELD_LITERALS (the runtime builds its automata)
    # per state whether its tuple ends with HELD_LITERALS: its literal delimiters' automata are the
    # runtime's, after the regex delimiters' written out
    mixed = [False] * len(plan)
    if f"    HOLD_REGEX = (_rt.HELD_LITERALS,) * {len(plan)}\n" in compiled.source:
        derived = [True] * len(plan)  # every state derived: one line for them all
    else:
        block = (compiled.source.split("    HOLD_REGEX = (\n", 1)[1].split("\n    )\n", 1)[0]
                 if plan != (None,) * len(plan) else "")
        # a derived state is one line, "_rt.HELD_LITERALS,  # S_...", any other has its "# S_..." line first
        derived = []
        for line in block.splitlines():
            if line.startswith(("        _rt.HELD_LITERALS,  # S", "        # S")):
                derived.append(line.startswith("        _rt.HELD_LITERALS,  # S"))
            elif line.startswith("            _rt.HELD_LITERALS,  # its literal delimiters'"):
                mixed[len(derived) - 1] = True
    for k, (entry, tables) in enumerate(zip(module.ResponseParser.HOLD_REGEX, plan)):
        if tables is None:
            assert entry is None
            continue
        assert all(isinstance(record, HeldAutomaton) for record in entry)
        if derived[k]:
            # a declared state's automata, built by the runtime from its literals (HELD_LITERALS):
            # the same language per delimiter as the compiler's, and no match that goes on
            # (in rank order; the compiler's follow the watch order: the DFA reads them alike)
            assert sorted(map(sorted, map(_language, entry))) == sorted(map(sorted, map(_language, tables)))
            assert not any(t.extends for t in tables)
            continue
        if mixed[k]:
            literal = {w.delimiter.pattern for w in compiled.automaton.states[k].watches
                       if w.delimiter.literals is not None}
            mine = [t for t in tables if t.pattern in literal]
            tables = [t for t in tables if t.pattern not in literal]
            assert mine and tables and not any(t.extends for t in mine)
            assert sorted(map(sorted, map(_language, entry[len(tables):]))) == sorted(map(sorted, map(_language, mine)))
            entry = entry[:len(tables)]
        assert [automaton_table(record) for record in entry] == [
            (t.pattern if t.extends else None, t.tests, t.first, t.follow, t.last) for t in tables]
        assert [record.late for record in entry] == [t.late for t in tables]
    held = [h for h in module.ResponseParser._HELD if h is not None]
    assert held and all(h._automata is not None for h in held)  # nothing decoded by the import
    if key == "quoted":  # outside, the opener's start is held: state 0's tables are read
        parser = module.ResponseParser("A")
        for chunk in ("text ", "<c n='"):  # nothing held before either chunk: scanned, not decoded
            parser.feed(chunk)
            assert module.ResponseParser._HELD[0]._automata is not None
        parser.feed("a")  # "<c n='" is held: read by the automaton, so decoded
        assert module.ResponseParser._HELD[0]._automata is None
        assert module.ResponseParser._HELD[0].run(module.ResponseParser._HELD[0].start, "<c n='a") is not STOP


def _language(table) -> set[str]:
    """The words a position automaton of one-character tests accepts (a literal delimiter's:
    finite, no loops)."""
    words = set()
    todo = [(p, table.tests[p]) for p in table.first]
    while todo:
        p, word = todo.pop()
        assert len(word) <= 200 and all(len(t) == 1 for t in table.tests)
        if p in table.last:
            words.add(word)
        todo += [(q, word + table.tests[q]) for q in table.follow[p]]
    return words


def test_bad_table_text_is_a_clear_error():
    """JSON of another shape (a module not made by respc) fails on first use, naming the entry."""
    held = HeldRegex('[null, ["a"], [0]]', lazy=True)
    assert held.start is None
    with pytest.raises(ValueError, match=r"HOLD_REGEX entry '\[null, \[\"a\"\], \[0\]\]'\.\.\. is not "
                                         r"\[edge, tests, first, follow, last\] JSON"):
        held.build()
    with pytest.raises(ValueError, match="is not"):
        HeldRegex('{"a": 1}')
    built = HeldRegex('[null, ["a"], [0], [[]], [0]]')
    assert built.start is not None and built.build() is built.start and built.run(built.start, "a") is STOP


#: possessive runs (and atomic groups) compiler/held.py reads exactly ("Possessive runs"): what
#: follows is disjoint from the run's class, or (gpt_oss) partly all inside it (a link dropped)
POSSESSIVE = [
    r"x[^<\s]++\s", r"<t>[^<\s]++", r"xa++(?:ta)?<", r"x[^<\s]++(?:\s*to=[^<\s]++)?\s*<\|m\|>",
    r"x[^<\s]++\s*a", r"x\w++(?:\s+\w++)*;", r"x(?>[^<\s]+)(?:\s*to)?<", r"x(?>ab)c|xa", r"<n>\d{2,}+\.\d++",
    r"to=functions\.(?P<name>[^<\s]++)(?:\s*<\|channel\|>\w+)?\s*(?:<\|message\|>|<\|end\|>)",
]


def _possessive_cases(pattern: str, rng: random.Random):
    yield from _verdict_cases(pattern, rng)
    pool = sorted(set(pattern) - set("\\()?:+*[]^")) + list(" \n<tox.é\u00a0")
    head = regex.sub(r"\\(.)", r"\1", pattern)[:3]  # random tails after the pattern's start
    for k in range(800):
        yield head[:k % 4] + "".join(rng.choice(pool) for _ in range(rng.randint(1, 16)))


@pytest.mark.parametrize("pattern", POSSESSIVE)
def test_possessive_run_verdict_is_the_regex_modules_on_the_possessive_source(pattern):
    """Read as their greedy form with links dropped, possessive runs give the ``regex`` module's
    own answer on the possessive source: live at 0 with nothing complete is exactly a partial
    match at 0 (both ways), the verdict is the same whatever offset the text is cut at, and a
    complete anchored match at the text's end is what the search returns (HeldRegex.edges)."""
    table = position_automaton(pattern)
    assert table is not None, pattern
    held = HeldRegex((None, table.tests, table.first, table.follow, table.last))
    rx = regex.compile(pattern, regex.DOTALL)
    rng = random.Random(pattern)
    live = stopped = 0
    for s in _possessive_cases(pattern, rng):
        d = held.run(held.start, s)
        for cut in range(len(s) + 1):
            assert held.run(held.run(held.start, s[:cut]), s[cut:]) is d, (pattern, s, cut)
        m = rx.search(s, 0, partial=True)
        partial_at_0 = m is not None and m.partial and m.start() == 0
        assert (d is not STOP) == partial_at_0, (pattern, s, m)
        live += d is not STOP
        stopped += d is STOP
        if table.extends:
            a = rx.match(s, 0, partial=True)
            if a is not None and not a.partial and a.end() == len(s):
                assert m is not None and not m.partial and m.span() == a.span(), (pattern, s)
    assert live >= 10 and stopped >= 100, (live, stopped)


def test_gpt_oss_call_opener_in_small_chunks_is_not_scanned_per_chunk():
    """The point of "Possessive runs": gpt_oss's call opener ``...to=functions.(?P<name>[^<\\s]++)
    ...<|message|>`` was ineligible (possessive), so each 4-character chunk from ``to=`` to
    ``<|message|>`` was a full scan; now the automaton reads them (issue 33: 470 us a call)."""
    calls: list = []
    counted, general = _counted(compiled("gpt_oss"), calls)
    opener = "<|start|>assistant<|channel|>commentary to=functions.get_current_weather <|constrain|>json<|message|>"
    chunks = [opener[i:i + 4] for i in range(0, len(opener), 4)]
    outcomes = []
    for parser_class in (counted, general):
        parser = parser_class("")
        events = parser.feed("<|channel|>final<|message|>Let me check.<|end|>")
        calls.clear()
        events += [e for c in chunks for e in parser.feed(c)]
        scans = len(calls)
        events += parser.feed('{"location": "Paris"}<|call|>')
        message, final = parser.finalize()
        assert message["tool_calls"][0]["function"]["name"] == "get_current_weather"
        outcomes.append((scans, events + final))
    (fast, fast_events), (slow, slow_events) = outcomes
    assert fast_events == slow_events
    assert slow >= 20 and fast <= 6, (fast, slow)


# --- possessive repeats on Python 3.10 (compiler/sre.py mark_possessive) -----------------------

_POSSESSIVE_SOURCES = [
    r"\s*to=functions\.(?P<name>[^<\s]++)(?P<again>\s*to=functions\.[^<\s]++)?\s*<\|message\|>",
    "a++", "a*+b", "x?+", r"\x41++", r"\u00e9{2,3}+", "(a|b)++c", "(?:ab)*+", "[]a]++", r"[^\]x]++y",
    "a{2}+", "(?P<n>x++)+?", r"(?=a++)b", "a+?b++", r"\d++\.\w*+", "(?:x(?:y++)z)++",
    r"\N{LATIN SMALL LETTER A}++", "a{,3}+", r"(a)(?(1)b++|c?+)", "(?i:a++)", r"\101++", "a|b++|c",
    r"\+++", "[+]++", r"(?#a++)b++",
]


@pytest.mark.parametrize("pattern", _POSSESSIVE_SOURCES)
def test_possessive_read_without_the_311_parser_is_the_311_tree(pattern):
    """Python 3.10's parser has no possessive repeats: compiler/sre.py rewrites each as the greedy
    repeat in a marked group and turns the group back into 3.11's node (same tree, widths, groups)."""
    import re
    from re import _parser as sre_parse

    from respc.compiler import sre

    native = sre_parse.parse(pattern, re.DOTALL)
    marked = sre._parse_marked(pattern, re.DOTALL)
    assert repr(marked.data) == repr(native.data)
    assert marked.getwidth() == native.getwidth()
    assert marked.state.groupdict == native.state.groupdict


@pytest.mark.parametrize("pattern", ["a+b", "a+?", r"\++", "[++]", "a{2}", "(?x)a ++", "(?as:a+)+"])
def test_nothing_possessive_is_not_rewritten(pattern):
    from respc.compiler import sre

    assert sre.mark_possessive(pattern) is None


def test_gpt_oss_compiles_the_same_without_possessive_parsing(monkeypatch):
    """Python 3.10 (pyproject's floor) reads no ``[^<\\s]++``: with the standard parser refusing
    possessive repeats as 3.10's does, gpt_oss still compiles to the checked-in module, held table
    included (before, the table was missing)."""
    import re

    from respc.compiler import sre

    real = sre._sre_parse.parse

    def parse_310(source, flags=0, state=None):
        tree = real(source, flags) if state is None else real(source, flags, state)
        if "POSSESSIVE_REPEAT" in repr(tree.data):
            raise re.error("multiple repeat", source)
        return tree

    monkeypatch.setattr(sre, "NATIVE_POSSESSIVE", False)
    monkeypatch.setattr(sre._sre_parse, "parse", parse_310)
    _clear_compiler_caches()
    got = compile_source(REPO / "templates" / "gpt_oss.json", source_name="templates/gpt_oss.json",
                         command="respc compile templates/gpt_oss.json -o generated/gpt_oss.py").source
    _clear_compiler_caches()  # (nothing read the 3.10 way stays for the tests after this one)
    assert "HOLD_REGEX" in got
    assert got == (REPO / "generated" / "gpt_oss.py").read_text(encoding="utf-8")


def _clear_compiler_caches() -> None:
    """Empty every functools cache of the compiler's modules (they keep pattern analyses)."""
    import sys

    for module_name, module in list(sys.modules.items()):
        if module_name.startswith(("respc.compiler", "compiler.")) and module is not None:
            for value in list(vars(module).values()):
                if callable(getattr(value, "cache_clear", None)):
                    value.cache_clear()


@pytest.mark.parametrize("pattern", [
    r"functools(?=\[)", r"<tool_call>[ \t\n]*(?=\{)", r"<tool_call>\s*(?P<name>[^\s<>]+)>(?=\s*\{)",
    r"(?:<ifm\|tool_calls>\s*)?<ifm\|tool_call>(?P<name>[^\s<>{\[\"]+)(?=\s|<)",
])
def test_trailing_lookahead_verdict_is_the_regex_modules(pattern):
    """``P(?=Y)`` is read as ``P Y`` (compiler/held.py "A trailing lookahead"): live with nothing
    complete is a partial match at 0 by ``regex`` on the source itself, and a complete match of
    the source stops the automaton; on random strings, read whole and cut."""
    table = position_automaton(pattern)
    assert table is not None
    held = HeldRegex((None, table.tests, table.first, table.follow, table.last))
    rx = regex.compile(pattern, regex.DOTALL)
    rng = random.Random(pattern)
    alphabet = sorted(set(regex.sub(r"\\[sS]|\\.|[()?:<>P*+\[\]^|]", "", pattern)) | set(" \n<>{[x|"))
    matches = ["functools", "<tool_call>", "<tool_call>  get>", "<ifm|tool_calls> <ifm|tool_call>get_x"]
    live = complete = 0
    for _ in range(3000):
        s = rng.choice(matches + [""]) + "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6)))
        d = held.run(held.start, s)
        cut = rng.randint(0, len(s))
        assert held.run(held.run(held.start, s[:cut]), s[cut:]) is d, s
        m = rx.search(s, 0, partial=True)
        if d is not STOP:
            live += 1
            assert m is not None and m.partial and m.start() == 0, (s, m)
        elif rx.match(s, 0) is not None:
            complete += 1  # a complete match at 0 stops the automaton (the scan then runs)
    assert live > 100 and complete > 10, (live, complete)


def test_k2_horizon_call_name_in_small_chunks_is_not_scanned_per_chunk():
    """k2_horizon's call opener ends with ``(?=\\s|<)``: its name in 4-character chunks is read by
    the held automaton, not scanned at every chunk (issue 33); the events are the scan's."""
    text = "<ifm|tool_calls><ifm|tool_call>lookup_the_weather_for_a_city<ifm|arg_key>q</ifm|arg_key>" \
           "<ifm|arg_value>1</ifm|arg_value></ifm|tool_call>"
    chunks = ["Let me check. "] + [text[i:i + 4] for i in range(0, len(text), 4)]
    # the prose and the opener up to "_cit"
    fast_scans, general_scans = _scans_with_and_without_automata("k2_horizon", chunks, 17,
                                                                 "lookup_the_weather_for_a_city")
    assert general_scans >= 12 and fast_scans <= 4, (fast_scans, general_scans)


def _scans_with_and_without_automata(name: str, chunks: list, cut: int, call_name: str) -> tuple[int, int]:
    """Feed ``chunks`` to ``name``'s parser with its held automata and without (the general path),
    check that both read the call ``call_name`` with the same events, and return how many scans
    each made over the first ``cut`` chunks."""
    calls: list = []
    counted, general = _counted(compiled(name), calls)
    outcomes = []
    for parser_class in (counted, general):
        calls.clear()
        parser = parser_class("")
        events = [parser.feed(c) for c in chunks[:cut]]
        scans = len(calls)
        events += [parser.feed(c) for c in chunks[cut:]]
        message, final = parser.finalize()
        assert message["tool_calls"][0]["function"]["name"] == call_name
        outcomes.append((scans, events, final))
    (fast_scans, *fast), (general_scans, *general_out) = outcomes
    assert fast == general_out
    return fast_scans, general_scans


#: patterns with a start anchor, and texts their matches are made of
LATE = {
    r"(?:(?:<\|message_model\|>|^)[^<]*)?<\|content_invoke_tool_json\|>":
        ["<|message_model|>", "get_x", "<|content_invoke_tool_json|>", "<", "|", "a b"],
    r"(?:^|<a>)\s*<call>": ["<a>", " ", "\n", "<call>", "<", "x"],
    r"(?:\A|;)(?:x|y)*<c>|<d>": [";", "x", "y", "<c>", "<d>", "<", "z"],
}


@pytest.mark.parametrize("pattern", sorted(LATE))
def test_late_verdict_is_the_regex_modules_after_offset_0(pattern):
    """A start anchor read late (compiler/held.py "Start anchors"): on held text that starts after
    offset 0 of the buffer (one character before it), live with nothing complete is a partial
    match there by ``regex`` on the source itself, and a complete match of the source from there
    stops the automaton; the plain reading refuses the pattern."""
    assert position_automaton(pattern) is None
    table = position_automaton(pattern, late=True)
    assert table is not None and table.late
    held = HeldRegex(HeldAutomaton(None, table.tests, table.first, table.follow, table.last, late=True))
    assert held.late
    rx = regex.compile(pattern, regex.DOTALL)
    rng = random.Random(pattern)
    live = complete = 0
    for _ in range(3000):
        s = "".join(rng.choice(LATE[pattern]) for _ in range(rng.randint(1, 5)))
        s = s[:rng.randint(1, len(s))]
        d = held.run(held.start, s)
        cut = rng.randint(0, len(s))
        assert held.run(held.run(held.start, s[:cut]), s[cut:]) is d, s
        m = rx.search(rng.choice("x<\n;") + s, 1, partial=True)
        if d is not STOP:
            live += 1
            assert m is not None and m.partial and m.start() == 1, (s, m)
        elif m is not None and not m.partial:
            complete += 1
    assert live > 100 and complete > 20, (live, complete)


@pytest.mark.parametrize("pattern", [r"^abc", r"\Aabc|x", r"a^b", r"(?m)(?:^|x)a", r"(?:$|x)a", r"<a>[^<]*"])
def test_late_reading_refuses_what_it_cannot_read(pattern):
    """No late automaton where dropping the anchor leaves an unreachable position, where the
    anchor is not a start anchor or MULTILINE reads it after newlines, or where there is no
    anchor to drop (the plain reading is then the one)."""
    assert position_automaton(pattern, late=True) is None


def test_inkling_call_name_in_small_chunks_is_not_scanned_per_chunk():
    """inkling's call opener has a ``^`` (``(?:(?:<|message_model|>|^)[^<]*)?<|content_invoke_tool_json|>``):
    read late, its name in 4-character chunks is read by the held automaton, not scanned at every
    chunk; at the start of the response (the held text at offset 0) it is scanned as before. The
    events are the scan's either way."""
    call = '<|message_model|>get_the_weather_for_a_city<|content_invoke_tool_json|>{"name": "w", "args": {}}' \
           "<|end_message|>"
    for lead in ("Let me check. ", ""):
        chunks = ([lead] if lead else []) + [call[i:i + 4] for i in range(0, len(call), 4)]
        # up to the name's "a_ci"
        fast_scans, general_scans = _scans_with_and_without_automata("inkling", chunks, 12, "w")
        if lead:
            assert general_scans >= 10 and fast_scans <= 3, (fast_scans, general_scans)
        else:
            assert fast_scans == general_scans, (fast_scans, general_scans)
