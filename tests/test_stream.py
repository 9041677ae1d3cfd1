"""The stream parser (runtime/stream.py ``StreamParser``): its shortcuts against its general path.

1. The fast paths of ``StreamParser.feed`` change nothing. A chunk that arrives while nothing is
   held and holds no character that can start a watched delimiter is routed without scanning; a
   trigger character ending such a chunk is held without scanning; a chunk that keeps a regex
   delimiter pending is read by its automaton (``HOLD_REGEX``). Here every catalogue template and a
   few regex templates parse the same outputs with and without those paths (``FAST_PATH`` of all
   ``None`` and an empty ``HOLD_REGEX`` disable them), in many chunkings, and the event lists each
   ``feed`` returns must be identical, not merely equivalent: on the catalogue cases, and on random
   texts spliced from each template's delimiters, their pieces and plain prose (start anchors,
   leading lookaheads, context kept lazily by the quickest path, two trigger characters).
2. The quick proof of a plain tool call (``_plain_call``, issue 33) never lets through a value
   that the two checks it stands for (``check_tool_call_names``, ``_non_finite``) refuse, and the
   rewritten ``_non_finite`` finds the same value the plain walk finds.
"""

from __future__ import annotations

import json
import math
import random

import pytest

import respc
from respc.runtime import stream
from respc.runtime import tools as runtime_tools
from respc.runtime.errors import ContentParseError
from support import CATALOGUE_NAMES, FAMILY_DIR, REPO, delimiter_pieces, feed_outcome, random_pieces

NAMES = CATALOGUE_NAMES

# --- 1. the fast paths of feed -------------------------------------------------------------------

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
    # start anchors only (ANCHOR_CONTEXT): the quickest path leaves the buffer's context as it was
    "caret-in-group-open": ({"start_anchor": "A", "fields": {
        "call": {"open_pattern": r"(?:(?:<m>|^)[^<]*)?<call>", "close": "<end>"},
        "content": {"close": ["<m>", "<end>"]}}},
        ["intro<call>a<end> b<m>name<call>c<end> d < e", "x <m>y<m>z <call>w<end>", "<m>q<call", "p<c"]),
    "string-anchor-two-triggers": ({"start_anchor": "A", "fields": {
        "r": {"open_pattern": r"\A\s*\[R\]|<r>", "close": "</r>"}, "content": {}}},
        [" [R]a</r>b [R] <r>c</r> [x] <y", "[R][R]</r>", "a [", "<r> [R"]),
    # a multiline ^ reads the character before it: the real context is kept (lazily)
    "multiline-caret-open": ({"start_anchor": "A", "fields": {
        "x": {"open_pattern": r"(?m)^call:", "close": ";"}, "content": {}}},
        ["a\ncall: yes; recall: no\n", "call:x;\n\ncall:", "c\nca", "x\n"]),
    "lead-pattern": ({"start_anchor": "A", "fields": {
        "x": {"open_pattern": r"<\|tool>(?P<n>\w+):", "close": "<|end|>", "transform": {"n": "{n}", "a": "{content}"}},
        "content": {}}},
        ["a < b <|tool>f:1<|end|> <|t", "<|tool>g:2<|end|><", "x <|"]),
}


def _slow(module):
    class NoFastPath(module.ResponseParser):
        __slots__ = ()
        FAST_PATH = tuple((None, None) for _ in module.ResponseParser.FAST_PATH)
        HOLD_REGEX = ()  # and no held-regex reads (tests/test_held.py)
        HOLD_LITERALS = ()  # and no held literals decided without a scan

    return NoFastPath


def _chunkings(text: str, seed: str):
    """Whole, one character at a time, and four random chunkings of 1 to 9 characters (more random
    ones, and longer pieces, than support.chunkings: each is compared event for event)."""
    rng = random.Random(seed)
    yield [text]
    yield list(text)
    for _ in range(4):
        yield random_pieces(text, rng, 9)


def _compare(module, prefix, text, tools, seed):
    slow = _slow(module)
    for chunks in _chunkings(text, seed):
        fast = feed_outcome(module.ResponseParser, prefix, chunks, tools)
        assert fast == feed_outcome(slow, prefix, chunks, tools), chunks


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


#: plain prose pieces: words, spaces and the characters the catalogue's regex delimiters begin or
#: continue with, so random texts reach every fast path and leave it
_PROSE = ["word ", "to", "=", "t", " ", "  ", "\n", "ab", "a<b ", "x[1] ", "{ }", "`", "functions.", "analysis"]


def _pieces(name: str) -> list[str]:
    """The splice pieces of ``name`` (support.delimiter_pieces: its delimiters, their halves, case slices) and prose."""
    return delimiter_pieces(name) + _PROSE


@pytest.mark.parametrize("name", NAMES)
def test_random_splices_same_events_without_fast_path(name):
    module = respc.compile_template(REPO / "templates" / f"{name}.json")
    cases = json.loads((FAMILY_DIR / f"{name}.json").read_text(encoding="utf-8"))["cases"]
    prefixes = [""] + [c["prefix"] for c in cases[:3]]
    pieces = _pieces(name)
    rng = random.Random(name)
    for k in range(25):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 40)))
        prefix = prefixes[k % len(prefixes)]
        slow = _slow(module)
        for chunks in _chunkings(text, f"{name}/{k}"):
            fast = feed_outcome(module.ResponseParser, prefix, chunks, None)
            assert fast == feed_outcome(slow, prefix, chunks, None), (prefix, chunks)


def test_fast_path_is_taken_where_it_was_refused():
    """The point of the late triggers and the lazy context: the outside state of templates whose
    opener has a start anchor or a leading lookahead now has triggers, and plain prose goes
    through the quickest path even with CONTEXT 1 (ernie4_5) or two triggers (mistral_nemo)."""
    for name, triggers in (("ernie4_5", "<"), ("llama4_pythonic", "<["), ("inkling", "<"), ("mistral_nemo", "<[")):
        module = respc.compile_template(REPO / "templates" / f"{name}.json")
        assert module.ResponseParser.FAST_PATH[0][0] == triggers, name
        calls = []

        class Counted(module.ResponseParser):
            __slots__ = ()

            def _run(self, events, eos):
                calls.append(eos)  # noqa: B023 - the class is used in this iteration only
                super()._run(events, eos)

        parser = Counted("")
        first = parser.feed("Hello <b ")
        field = first[-1]["field"]  # ernie4_5: the reasoning, opened at the start anchor
        assert parser._quiet and calls == [False] and first[-1]["text"].endswith("<b "), name
        events = parser.feed(" wor")
        assert events == [{"type": "region_chunk", "field": field, "text": " wor", "dirty": False}], name
        assert calls == [False], name
        message, _ = parser.finalize()
        assert message[field] == "Hello <b  wor" and calls == [False, True], name


def test_anchor_context_leaves_the_buffer_as_it_was():
    """A CONTEXT there only for start anchors (ANCHOR_CONTEXT: ernie4_5's ``^\\s*(?:<think>…``,
    inkling's and gpt_oss's): the quickest path neither remembers the chunk nor trims the
    buffer, so a plain chunk costs what it costs with CONTEXT 0, and a later scan searches from
    the old context character, where ``^`` cannot match either; a word boundary keeps the
    chunk's own tail (lazily, _last)."""
    for name in ("ernie4_5", "inkling", "gpt_oss"):
        cls = respc.compile_template(REPO / "templates" / f"{name}.json").ResponseParser
        assert (cls.CONTEXT, cls.ANCHOR_CONTEXT) == (1, True), name
    module, Counted, calls = _counted("ernie4_5")
    parser = Counted("")
    parser.feed("Hello <b ")
    buf, pos = parser._buf, parser._pos
    assert parser._quiet and pos == len(buf) == 1 and not parser._wide
    chunk = lambda text: {"type": "region_chunk", "field": "reasoning_content", "text": text, "dirty": False}  # noqa: E731
    assert parser.feed("worl") == [chunk("worl")]
    assert parser.feed("d x<y") == [chunk("d x<y")]  # a trigger, no head: routed by the fast path
    assert (parser._buf, parser._pos, parser._last) == (buf, pos, None) and len(calls) == 1
    assert parser.feed("</think>  z") == [{"type": "region_close", "field": "reasoning_content",
                                           "value": "Hello <b world x<y"},
                                          {"type": "region_open", "field": "content"},
                                          {"type": "region_chunk", "field": "content", "text": "  z", "dirty": False}]
    # in the answer, '^\\s*' would match at a trimmed buffer start: it does not, the buffer keeps
    # a character before the search position
    assert parser.feed("  ab") == [{"type": "region_chunk", "field": "content", "text": "  ab", "dirty": False}]
    assert len(calls) == 2 and parser._pos == 1
    texts = ["Hello <b world x<y <think></think>z", "  <think>a</think> b <think>c</think>d",
             "x</think>\n <think> y</think>"]
    for i, text in enumerate(texts):
        _compare(module, "", text, None, f"ernie4_5-anchor/{i}")
    lazy = respc.compile_template(REGEX_TEMPLATES["word-boundary"][0]).ResponseParser
    assert (lazy.CONTEXT, lazy.ANCHOR_CONTEXT) == (1, False)
    parser = lazy("")
    parser.feed("Hello ")
    assert parser._quiet and parser._wide
    parser.feed("worl")
    assert parser._last == "worl"


def _counted(name: str):
    """(parser class of catalogue template ``name`` that records each ``_run`` call, the calls)."""
    module = respc.compile_template(REPO / "templates" / f"{name}.json")
    calls = []

    class Counted(module.ResponseParser):
        __slots__ = ()

        def _run(self, events, eos):
            calls.append(eos)
            super()._run(events, eos)

    return module, Counted, calls


def test_run_path_holds_trailing_whitespace_without_scanning():
    """gpt_oss's tool-call opener ``(?:<|start|>...)?\\s*to=functions\\.…`` is a run of whitespace
    then a literal (HOLD_RUNS): a chunk ending in whitespace, or in whitespace and a piece of
    ``to=functions.``, is held by the fast path itself, and the events are those of a scan."""
    module, Counted, calls = _counted("gpt_oss")
    assert module.ResponseParser.HOLD_RUNS[0][0][1] == "to=functions."
    parser = Counted("")
    parser.feed("So")
    assert parser._quiet and len(calls) == 1
    chunk = lambda text: {"type": "region_chunk", "field": "content", "text": text, "dirty": False}  # noqa: E731
    assert parser.feed("me \n") == [chunk("me")]
    assert parser.feed(" t") == []  # " \n t" may still become " \n to=functions."
    assert parser.feed("o=x") == [chunk(" \n to=x")]  # "to=x" is no prefix of the literal: routed
    assert parser.feed("xx ") == [chunk("xx")]
    assert len(calls) == 1  # no scan since the first chunk
    message, _ = parser.finalize()
    assert message["content"] == "Some \n to=xxx" and calls == [False, True]  # (the content is stripped)
    texts = ["Some \n to=xxx", "a  to=functions.f <|constrain|>json<|message|>{}<|call|> b \t",
             "x " + " " * 1500 + "to=functions.g<|message|>{\"a\": 1}<|call|>", "tail to", "end \n"]
    for i, text in enumerate(texts):
        _compare(module, "", text, None, f"gpt_oss-run/{i}")


def test_run_path_takes_prose_with_spaces_and_t_without_scanning():
    """muse_glimmer's openers ``(?:<|start|>assistant)?[ \\t]*to=self…`` (and ``to=…``, ``to=user``)
    start with a space, a tab, a ``t`` or ``<``: as first characters every chunk of prose holds
    one, so every chunk was scanned (issue 33: streaming at 25x the floor). They are runs and a
    literal (HOLD_RUNS, compiler/automaton.py ``ranked``): only ``to=`` or a ``<|`` in the text,
    or a run and a piece of the literal at its end, make the fast path stop."""
    module, Counted, calls = _counted("muse_glimmer")
    assert module.ResponseParser.FAST_PATH[0][0] == "<"
    assert [row[1] for row in module.ResponseParser.HOLD_RUNS[0]] == ["to=self", "to=", "to=user"]
    parser = Counted("")
    parser.feed("So")
    chunk = lambda text: {"type": "region_chunk", "field": "content", "text": text, "dirty": False}  # noqa: E731
    assert parser.feed("me text to ") == [chunk("me text to")]  # " " may begin "[ \t]*to=": held
    assert parser.feed("the tent ") == [chunk(" the tent")]
    assert parser.feed("\tt") == []  # " \tt" may still become " \tto=user<|message|>"
    assert parser.feed("oo ") == [chunk(" \ttoo")]
    assert len(calls) == 1  # no scan since the first chunk
    message, _ = parser.finalize()
    assert message["content"] == "Some text to the tent \ttoo"
    texts = ["Some text to the tent", "to=self<|message|>think <|eot|> then to=user<|message|>answer",
             "a \t to=user<|message|>b", "x <|start|>assistant to=f.g<|message|><atem:function_calls>"
             "\n<atem:invoke name=\"f.g\">\n<atem:parameter name=\"a\">1</atem:parameter>\n</atem:invoke>"
             "\n</atem:function_calls> y to", "tail t", "to= x to=y to"]
    for i, text in enumerate(texts):
        _compare(module, "", text, None, f"muse-run/{i}")


#: gpt_oss answers around its run-and-literal opener ``\s*to=functions\.``: held whitespace at
#: chunk ends, whitespace then ``t``, near misses of the literal, a real call after held
#: whitespace, ``<|channel|>`` after held whitespace, and texts that end in held text
_RUN_TEXTS = [
    "Some words \n to=functions.get_weather <|constrain|>json<|message|>{\"a\": 1}<|call|> after it",
    "a  t b  to c to= d to=f e to=functions\n x  t",
    "the tt  tto=functions.g<|message|>{}<|call|>tail ",
    "ws then \t<|channel|>final<|message|>the answer<|return|>",
    "x \u3000to=functions.f<|message|>{}<|call|> \u2028t\u2028 y",
    "a <b t<|end|> t< t <| tto",
    "to=functions.h<|message|>{}<|call|>",
    "it ends in t",
    "it ends in a run \n\t ",
    "t",
    " ",
    "a t\to\u00a0t o t=to",
]


def _same_at_every_split(fast_class, slow_class, text, errors, seed):
    """``text`` cut in two at every offset, in three at every pair of offsets when it is short, and in
    the :func:`_chunkings` of ``seed``, after both prompts: the same outcome with and without the fast paths."""
    splits = [[text[:i], text[i:]] for i in range(1, len(text))]
    if len(text) <= 30:
        splits += [[text[:i], text[i:j], text[j:]] for i in range(1, len(text)) for j in range(i + 1, len(text))]
    splits += list(_chunkings(text, seed))
    for prefix in ("", "<|start|>assistant"):
        for chunks in splits:
            fast = feed_outcome(fast_class, prefix, chunks, None, errors)
            assert fast == feed_outcome(slow_class, prefix, chunks, None, errors), (prefix, chunks)


@pytest.mark.parametrize("errors", ["strict", "recover"])
def test_run_quickest_path_same_events_at_every_split(errors):
    """gpt_oss's answer state has its own quickest path (runtime/stream.py ``_one_run``): a
    chunk ending in whitespace or ``t`` holds that run itself, and the next chunk is routed with
    the held text in front. Every text split in two at every offset, in three at every pair of
    offsets (short texts), character by character and in random chunkings gives the events and
    the message of the general path; with ``errors="recover"`` also its diagnostics (text held at
    the end of the stream)."""
    module = respc.compile_template(REPO / "templates" / "gpt_oss.json")
    assert module.ResponseParser._RUN1[0] is not None  # the path is on in the answer state
    slow = _slow(module)
    for text in _RUN_TEXTS:
        _same_at_every_split(module.ResponseParser, slow, text, errors, "run/" + text)


def test_run_quickest_path_random_texts():
    """Random gpt_oss answers spliced from whitespace runs (of several kinds), ``t``, pieces of
    ``to=functions.``, its delimiters and prose, fed in random chunks of 1 to 6 characters: the
    events and messages are those of the general path."""
    module = respc.compile_template(REPO / "templates" / "gpt_oss.json")
    slow = _slow(module)
    pieces = [" ", "  ", "\n", "\t", "\u3000", "\u2028", "t", "to", "to=", "to=f", "to=functions", "to=functions.",
              "functions.", "f<|message|>{}<|call|>", "<|channel|>final<|message|>", "<|end|>", "<|", "<", "a",
              "the ", "word", "tt", "o=", "<|start|>assistant", "<|channel|>commentary", " to=functions.x "]
    rng = random.Random("gpt_oss-run")
    for k in range(300):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 16)))
        chunks = random_pieces(text, rng, 6)
        fast = feed_outcome(module.ResponseParser, "", chunks, None)
        assert fast == feed_outcome(slow, "", chunks, None), chunks


def test_run_quickest_path_is_taken():
    """In gpt_oss's answer, plain chunks, chunks that end in whitespace or ``t``, and the chunks
    after them are read by feed itself: no _run_path call and no scan."""
    module, Counted, calls = _counted("gpt_oss")
    paths = []

    class Paths(Counted):
        __slots__ = ()

        def _run_path(self, text, runs):
            paths.append(text)  # noqa: B023 - the class is used in this test only
            return super()._run_path(text, runs)

    parser = Paths("")
    parser.feed("So")
    assert parser._quiet and len(calls) == 1
    chunk = lambda text: {"type": "region_chunk", "field": "content", "text": text, "dirty": False}  # noqa: E731
    got = [parser.feed(c) for c in ("me w", "ords ", "and", " the", " \n", "rest t", "hen", " at", " t")]
    assert got == [[chunk("me w")], [chunk("ords")], [chunk(" and")], [chunk(" the")], [],
                   [chunk(" \nrest")], [chunk(" then")], [chunk(" a")], [chunk("t")]]
    assert paths == [] and len(calls) == 1
    # " t" then "o" may still become " to=functions.": _run_path reads it, nothing is scanned
    assert parser.feed("o") == [] and paths == ["o"] and len(calls) == 1
    assert parser.feed("=x") == [chunk(" to=x")]
    message, _ = parser.finalize()
    assert message["content"] == "Some words and the \nrest then at to=x"


#: muse_glimmer texts around its three run-and-literal openers ``[ \t]*to=self``, ``[ \t]*to=``,
#: ``[ \t]*to=user`` (each after an optional ``<|start|>assistant``)
_MUSE_TEXTS = [
    "Some words \t to=user<|message|>the answer<|eot|> after",
    "a  t b  to c to= d to=s e to=self\n x  t",
    "the tt  tto=self<|message|>think<|eom|>tail ",
    "x <|start|>assistant to=f.g<|message|><atem:function_calls>\n<atem:invoke name=\"f.g\">\n"
    "<atem:parameter name=\"a\">1</atem:parameter>\n</atem:invoke>\n</atem:function_calls> y t",
    "a <b t<|eot|> t< t <| tto",
    "it ends in t",
    "it ends in a run \t ",
    "t",
    " ",
    "a t\to t o t=to\n to",
]


def _muse_slow(module):
    """The general path of muse_glimmer as generated: no fast paths, and its own CONTEXT 0 (the
    run quickest path keeps one decided character, runtime/stream.py ``__init_subclass__``)."""
    class General(_slow(module)):
        __slots__ = ()
        CONTEXT = 0
        ANCHOR_CONTEXT = False

    return General


@pytest.mark.parametrize("errors", ["strict", "recover"])
def test_run_quickest_path_several_runs_at_every_split(errors):
    """muse_glimmer's answer state watches three run-and-literal openers with the same class and
    the same first two literal characters (``to``): one quickest path serves them all
    (runtime/stream.py ``_one_run``). Every text split in two at every offset, in three at every
    pair of offsets (short texts), character by character and in random chunkings gives the
    events and the message of the general path (with the template's own CONTEXT 0)."""
    module = respc.compile_template(REPO / "templates" / "muse_glimmer.json")
    assert module.ResponseParser._RUN1[0] is not None and module.ResponseParser.CONTEXT == 1
    slow = _muse_slow(module)
    assert slow.CONTEXT == 0
    for text in _MUSE_TEXTS:
        _same_at_every_split(module.ResponseParser, slow, text, errors, "muse/" + text)


def test_run_quickest_path_several_runs_random_texts():
    """Random muse_glimmer outputs spliced from runs of spaces and tabs, ``t``, pieces of its
    literals, its delimiters and prose, in random chunks of 1 to 6 characters: the events and
    messages are those of the general path."""
    module = respc.compile_template(REPO / "templates" / "muse_glimmer.json")
    slow = _muse_slow(module)
    pieces = [" ", "  ", "\t", "\n", "t", "to", "to=", "to=s", "to=self", "to=u", "to=user", "to=f.g", "<|message|>",
              "<|eot|>", "<|eom|>", "<|", "<", "a", "the ", "word", "tt", "o=", "<|start|>assistant",
              "<atem:function_calls>", "</atem:function_calls>", "self", "user"]
    rng = random.Random("muse-run")
    for k in range(300):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 16)))
        chunks = random_pieces(text, rng, 6)
        for errors in ("strict", "recover"):
            fast = feed_outcome(module.ResponseParser, "", chunks, None, errors)
            assert fast == feed_outcome(slow, "", chunks, None, errors), chunks


def test_three_character_heads_route_near_misses_without_scanning():
    """FAST_PATH compares three characters of each delimiter: in gemma4's answer, ``b<c;`` is
    not the start of ``<channel|>`` (two characters, ``<c``, would scan it), a chunk ending in
    ``<c`` or ``<ch`` holds those characters, and the events are those of a scan."""
    module, Counted, calls = _counted("gemma4")
    assert "<ch" in module.ResponseParser.FAST_PATH[0][1]
    parser = Counted("")
    parser.feed("So")
    assert parser._quiet and len(calls) == 1
    chunk = lambda text: {"type": "region_chunk", "field": "content", "text": text, "dirty": False}  # noqa: E731
    assert parser.feed("me b<c; ") == [chunk("me b<c; ")]
    assert parser.feed("and <c") == [chunk("and ")]  # "<c" may still become "<channel|>"
    assert parser.feed("at") == [chunk("<cat")]
    assert parser.feed(" x<") == [chunk(" x")]
    assert len(calls) == 1  # no scan since the first chunk
    # "<ch" is a whole head, held as a live start of '<channel|>' by the held-text automaton
    # (HOLD_REGEX) without a scan; "<chose" is not: scanned
    assert parser.feed("ch") == []
    assert len(calls) == 1
    assert parser.feed("ose") == [chunk("<chose")]
    assert len(calls) == 2
    message, _ = parser.finalize()
    assert message["content"] == "Some b<c; and <cat x<chose" and calls == [False, False, True]
    for i, text in enumerate(["a<c <ch <cha <chann", "x <channel|> y", "t <c", "<ch"]):
        _compare(module, "", text, None, f"gemma4-heads/{i}")
    # inside hyperclovax's tool call, '</arg_key>' is not '</tool_call>': no scan for it
    module, Counted, calls = _counted("hyperclovax_seed_think")
    assert module.ResponseParser.FAST_PATH[2][1] == frozenset({"</t"})
    call = '<tool_call>get_current_weather\n<arg_key>location</arg_key>\n<arg_value>"Seoul"</arg_value>\n</tool_call>'
    parser = Counted("", [{"type": "function", "function": {"name": "get_current_weather", "parameters": {}}}])
    events = [e for k in range(0, len(call), 4) for e in parser.feed(call[k:k + 4])]
    assert events[0]["type"] == "region_open" and events[-1]["type"] == "region_close"
    three = calls.count(False)
    # the same parser comparing two characters ('</'): it also scans the body's two '</ar'
    # chunks (of '</arg_key>' and '</arg_value>') and the '>\n</' before the close, which three
    # characters hold without a scan; the events are the same

    class Two(Counted):
        __slots__ = ()
        FAST_PATH = tuple((t, None if h is None else frozenset(x[:2] for x in h))
                          for t, h in module.ResponseParser.FAST_PATH)
        HOLD_LITERALS = ()  # (which would decide '</ar' without a scan too, with any heads)

    calls.clear()
    parser = Two("", [{"type": "function", "function": {"name": "get_current_weather", "parameters": {}}}])
    assert [e for k in range(0, len(call), 4) for e in parser.feed(call[k:k + 4])] == events
    assert calls.count(False) == three + 3
    _compare(module, "", "pre " + call + " post", None, "hyperclovax-heads")


def test_value_region_chunks_without_scanning():
    """A v2 region that ends where its value ends (granite3's JSON tool-call list): a chunk with
    no possible delimiter start goes to the value's decoder without a scan while the value goes
    on; the chunk in which it ends is scanned on from the value's end, as a scan does it."""
    module, Counted, calls = _counted("granite3")
    parser = Counted("")
    parser.feed("Hello. ")
    parser.feed("<|tool_call|>[")
    n = len(calls)
    assert parser._bdq and not parser._quiet
    body = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
    for i in range(0, len(body), 4):
        events = parser.feed(body[i:i + 4])
        assert events == [{"type": "region_chunk", "field": "tool_calls", "text": body[i:i + 4], "dirty": True}]
    assert len(calls) == n  # no scan inside the value
    events = parser.feed("] then")
    assert len(calls) == n + 1 and [e["type"] for e in events] == ["region_chunk", "region_close", "region_open",
                                                                   "region_chunk"]
    message, _ = parser.finalize()
    assert message["tool_calls"] == [{"type": "function", "function": {"name": "get_weather",
                                                                      "arguments": {"city": "Paris"}}}]
    texts = ['<|tool_call|>[{"name": "f", "arguments": {"s": "a]b<"}}] x <|tool_call|>[{"name"',
             '<|tool_call|>[] <|tool_call|>[{"name": "g", "arguments": {}}, {"name": "h", "arguments": {}}]]']
    for i, text in enumerate(texts):
        _compare(module, "", text, None, f"granite3-value/{i}")


def _outcome_text(parser_class, prefix, chunks, tools):
    """:func:`support.feed_outcome` fed through ``feed_text``: a ``str`` it returns stands for the one
    ``region_chunk`` of the open region, so the events it stands for are rebuilt here; returns
    (outcome, how many chunks came back as text)."""
    parser = parser_class(prefix, tools)
    events = [parser.initial_events]
    as_text = 0
    try:
        for chunk in chunks:
            got = parser.feed_text(chunk)
            if got.__class__ is str:
                as_text += 1
                assert got == chunk and not parser._dirty
                got = [{"type": "region_chunk", "field": parser._name, "text": got, "dirty": parser._dirty}]
            events.append(got)
        message, final = parser.finalize()
    except (ValueError, KeyError, TypeError) as exc:
        return ("error", type(exc).__name__, str(exc), events), as_text
    return (message, events + [final], parser.diagnostics, parser.ledger), as_text


@pytest.mark.parametrize("name", NAMES)
def test_feed_text_is_feed(name):
    """``StreamParser.feed_text`` (the adapters' feed, respc.openai) gives exactly ``feed``'s events
    on the catalogue cases and random splices, in every chunking; and it does hand chunks over as
    text (the point of it) on long plain prose."""
    module = respc.compile_template(REPO / "templates" / f"{name}.json")
    cases = json.loads((FAMILY_DIR / f"{name}.json").read_text(encoding="utf-8"))["cases"]
    pieces = _pieces(name)
    rng = random.Random("text/" + name)
    texts = [(c["prefix"], "Plain words < and <x or [a], then | bars. " + c["text"], c.get("tools")) for c in cases]
    texts += [("", "".join(rng.choice(pieces) for _ in range(rng.randint(1, 40))), None) for _ in range(10)]
    for prefix, text, tools in texts:
        for chunks in _chunkings(text, f"text/{name}/{text[:20]}"):
            got, _ = _outcome_text(module.ResponseParser, prefix, chunks, tools)
            assert got == feed_outcome(module.ResponseParser, prefix, chunks, tools), (prefix, chunks)


@pytest.mark.parametrize("name", ["qwen3", "hermes2pro", "deepseek_r1", "kimi_k2", "glm4_5", "mistral_nemo",
                                  "ernie4_5", "granite3"])
def test_feed_text_hands_plain_chunks_over_as_text(name):
    """On plain prose in 4-character chunks, all but the chunks around the start come back as text."""
    module = respc.compile_template(REPO / "templates" / f"{name}.json")
    prose = "just some words without any markup at all " * 40
    chunks = [prose[i:i + 4] for i in range(0, len(prose), 4)]
    got, as_text = _outcome_text(module.ResponseParser, "", chunks, None)
    assert got == feed_outcome(module.ResponseParser, "", chunks, None)
    assert as_text >= len(chunks) - 3, (as_text, len(chunks))


def test_literal_states_decide_held_text_without_scanning():
    """In a state that watches literal delimiters only (HOLD_LITERALS), text that starts like one
    of them is held and released by the fast path: minimax_m3's call body, where every tag starts
    with the close's first 13 characters (']<]minimax[>[<user_id>...'), is scanned only for its
    close, and the events are those of the parser without HOLD_LITERALS and of the one without
    any fast path, on every chunking."""
    module, Counted, calls = _counted("minimax_m3")
    lits = module.ResponseParser.HOLD_LITERALS
    assert lits[3][0] == (']<]minimax[>[</invoke>',) and lits[2] is None  # S2 watches a regex
    tag = "]<]minimax[>["
    call = (tag + '<tool_call>\n' + tag + '<invoke name="create_order">' + tag + '<user_id>42' + tag
            + '</user_id>' + tag + '<note>at ]<] desk' + tag + '</note>' + tag + '</invoke>\n' + tag
            + '</tool_call>')
    text = "Sure." + call + " Done."

    class NoLiterals(Counted):
        __slots__ = ()
        HOLD_LITERALS = ()

    outcomes = []
    for cls in (Counted, NoLiterals):
        calls.clear()
        parser = cls("")
        events = [e for k in range(0, len(text), 4) for e in parser.feed(text[k:k + 4])]
        message, final = parser.finalize()
        outcomes.append((events + final, message, calls.count(False)))
    (events, message, scans), (events_no, message_no, scans_no) = outcomes
    assert (events, message) == (events_no, message_no)
    assert message["tool_calls"] == [{"type": "function", "function": {
        "name": "create_order", "arguments": {"user_id": "42", "note": "at ]<] desk"}}}]  # (no tools: text)
    assert message["content"] == "Sure.Done."  # (each block stripped, joined with "")
    # without HOLD_LITERALS, 7 more chunks are scanned: '.]<]' before the call (the content
    # state's heads), and in the body '</us', 'note', ']<] ', ']<]m', '[</n', ']<]m', each
    # bringing or going on with text that starts like the close and is not it
    assert (scans, scans_no) == (7, 14)
    for i in range(3):
        _compare(module, "", text, None, f"minimax_m3-literals/{i}")


@pytest.mark.parametrize("name", CATALOGUE_NAMES)
def test_trigger_hold_search_is_the_loop(name):
    """``_trigger_hold`` answers with one search of ``_hold_search``'s pattern per state; the loop
    it replaces (``_trigger_hold_plain``) gives the same answer on random texts of each state's
    trigger and head characters (strict and recover classes), and on every catalogue case cut
    at random."""
    from respc.runtime.stream import _trigger_hold, _trigger_hold_plain
    from support import family_cases, random_pieces

    module = respc.compile_template(REPO / "templates" / f"{name}.json")
    rng = random.Random(f"hold-{name}")
    classes = [module.ResponseParser]
    if hasattr(module, "_RecoverParser"):
        classes.append(module._RecoverParser)
    cases = [piece for case in family_cases(name) for piece in random_pieces(case["text"], rng, 9)]
    searched = 0
    for parser_class in classes:
        parser_class("")  # (the first parser compiles the searches)
        for triggers, heads in parser_class._FAST:
            if heads is None or not triggers:
                continue
            searched += heads[3] is not None
            alphabet = sorted(set(triggers) | set("".join(heads[0])) | set("ab \n"))
            texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 9))) for _ in range(600)]
            for text in texts + cases:
                assert _trigger_hold(text, triggers, heads) == _trigger_hold_plain(text, triggers, heads), \
                    (name, triggers, text)
    assert searched or all(heads is None or not triggers for c in classes for triggers, heads in c._FAST)


# --- 2. the quick proof of a plain tool call -----------------------------------------------------

NAN, INF = float("nan"), float("inf")

VALUES = [
    {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 7}}},
    {"type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
    {"type": "function", "function": {"name": "get_weather"}},
    {"function": {"name": "get_weather", "arguments": None}},
    {"function": {"name": "get_weather", "arguments": 3}},
    {"function": {"name": "get_weather", "arguments": True}},
    {"function": {"name": "get_weather", "arguments": [1]}},
    {"function": {"name": "get_weather", "arguments": {"x": NAN}}},
    {"function": {"name": "get_weather", "arguments": {"x": 1.5}}},
    {"function": {"name": "get_weather", "arguments": {"x": [INF]}}},
    {"function": {"name": "get_weather", "arguments": {INF: 1}}},
    {"function": {"name": "get_weather", "arguments": {}}, "id": INF},
    {"function": {"name": "get_weather", "arguments": {}, "extra": -INF}},
    {"function": {"name": "get weather", "arguments": {}}},
    {"function": {"name": "", "arguments": {}}},
    {"function": {"name": ["get_weather"], "arguments": {}}},
    {"function": {"arguments": {}}},
    {"function": "get_weather"},
    {"name": "get_weather", "arguments": {"x": NAN}},
    {1: "a", "function": {"name": "get_weather"}},
    # nested arguments (xlam's lists and objects): plain when nothing inside is non-finite
    {"function": {"name": "get_weather", "arguments": {"stops": ["Paris", {"k": None}], "o": {"t": {"c": 1}}}}},
    {"function": {"name": "get_weather", "arguments": {"stops": ["Paris", {"k": NAN}]}}},
    {"function": {"name": "get_weather", "arguments": {"o": {INF: 1}}}},
    {"function": {"name": "get_weather", "arguments": {"o": {1.5: 1, "x": (2, -INF)}}}},
    {"function": {"name": "get weather", "arguments": {"o": [1]}}},
]


def _checks(value):
    """What the two checks say: the error message, or None when both let it through."""
    try:
        runtime_tools.check_tool_call_names(value, "tool_calls")
    except ContentParseError as exc:
        return str(exc)
    bad = stream._non_finite(value)
    return None if bad is None else f"non-finite {bad!r}"


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_plain_call_only_when_both_checks_pass(value):
    runtime_tools.check_tool_call_names(VALUES[0], "tool_calls")  # get_weather is a name checked before
    verdict = _checks(value)
    if stream._plain_call(value):
        assert verdict is None
    # and the first three, the common shapes, take the quick way
    if value is VALUES[0] or value is VALUES[1] or value is VALUES[2] or value is VALUES[20]:
        assert stream._plain_call(value)


def _walk(value):
    """The first non-finite float, in the order _non_finite documents (dict keys, then values)."""
    if isinstance(value, float):
        return value if not math.isfinite(value) else None
    if isinstance(value, dict):
        for key in value:
            if not isinstance(key, str) and _walk(key) is not None:
                return key
        items = value.values()
    elif isinstance(value, (list, tuple)):
        items = value
    else:
        return None
    for item in items:
        found = _walk(item)
        if found is not None:
            return found
    return None


@pytest.mark.parametrize("value", VALUES + [[1, {"a": (2, INF)}, NAN], (NAN,), 1e999, "x", None, True],
                         ids=range(len(VALUES) + 6))
def test_non_finite_finds_the_first(value):
    got, want = stream._non_finite(value), _walk(value)
    assert (got is None) == (want is None)
    if want is not None:
        assert got is want or (math.isnan(got) and math.isnan(want)) or got == want


LISTS = [[VALUES[0], VALUES[1]], [], [VALUES[0], VALUES[7]], [VALUES[0], VALUES[13]], [VALUES[2], "x"],
         [VALUES[0], [VALUES[0]]], [VALUES[0], {"function": {"name": "get_weather", "arguments": {"x": INF}}}],
         [VALUES[4], VALUES[0]]]


@pytest.mark.parametrize("value", LISTS, ids=range(len(LISTS)))
def test_plain_calls_only_when_both_checks_pass(value):
    # a list of calls (a transform_each region, mistral_nemo's [TOOL_CALLS][...]) takes the quick
    # way only when the two checks pass it as well
    runtime_tools.check_tool_call_names(VALUES[0], "tool_calls")
    verdict = _checks(value)
    if stream._plain_calls(value):
        assert verdict is None
    if value is LISTS[0] or value is LISTS[1]:
        assert stream._plain_calls(value)
    else:
        assert not stream._plain_calls(value)
