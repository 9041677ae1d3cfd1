"""The whole-text path (runtime/whole.py): it gives what the streaming path gives.

``parse_response`` parses a complete output in one end-of-stream pass; the streaming path feeds
the same text and finalizes (two passes, the first with ``eos=False``). Both must give the same
message, or the same error (type, text, field, offsets, partial message), and the parser must end
in the same state (its diagnostics). Sections:

1. Every catalogue case, every shared corpus, peer and conformance vector, and random texts spliced
   from each template's delimiters (issue 14). Recover mode and event-consuming callers take the
   streaming path (the module docstring says why); that fallback is checked too.
2. Express regions (issue 33, per-call cost): a region opened into a state that watches only its
   own literal close is read at once in strict mode (``StreamParser._express``, ``runtime/stream.py``
   ``_express_table``). The catalogue's tool-call regions take it, and every answer (message, error
   text, field, offsets, partial message, diagnostics) stays the streaming path's on damaged bodies
   of those regions: bad JSON or tags, empty bodies, non-finite numbers, bad names, typed
   arguments, a cut closer, a field written twice, text around and between the regions.
3. Long random outputs (issue 33): the whole-text path's searches take other ways on long texts
   than on the short ones of section 1: ``lead_search`` keeps looking for leads with ``str.find``
   past LEAD_MISSES misses when they lie far apart, ``barrier_search`` looks factor by factor (a
   window the engine searches, a candidate confirmed over the whole text) when more than
   BARRIER_LONG characters follow, and ``WholeText.find`` keeps looking for a sentinel that misses
   sparsely. Outputs of 5-14 kB are spliced at random (fixed seeds) from prose, markup that starts
   such leads, factors and sentinels without completing them, and the family's own test-case
   outputs; both paths must give the same message, error and diagnostics in both modes
   (``same_whole_and_stream`` of tests/support.py), and the new ways must be taken.
"""

from __future__ import annotations

import importlib
import json
import random
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import respc
from respc import runtime
from respc.runtime import stream, whole
from support import (CATALOGUE_NAMES, CONFORMANCE, CONFORMANCE_DEVIATIONS, CORPUS, SHARED, WHOLE_ERRORS,
                     catalogue_parser, damage, damage_cases, damage_ops, delimiter_pieces, family_cases, load_jsonl,
                     params, same_whole_and_stream)

NAMES = CATALOGUE_NAMES
PEER = SHARED / "corpus" / "peer_vectors.jsonl"


# --- 1. every case and vector, random splices ----------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_catalogue_cases(name):
    parser_class = catalogue_parser(name)
    filler = "Plain words < and <x or [a] with (parens), to=x, then `ticks` and | bars. "
    cases = family_cases(name)
    assert cases, f"no catalogue cases for {name}"
    for case in cases:
        for text in (case["text"], filler + case["text"], case["text"] + filler, case["text"][:-3]):
            same_whole_and_stream(parser_class, case["prefix"], text, case.get("tools"))


def _vector_id(vector):
    return vector["id"]


@pytest.mark.parametrize("vector", params([v for v in load_jsonl(CORPUS) if v["family"] in NAMES], CORPUS,
                                          _vector_id))
def test_corpus_vectors(vector):
    same_whole_and_stream(catalogue_parser(vector["family"]), vector["prefix"], vector["text"], vector.get("tools"))


@pytest.mark.parametrize("vector", params([v for v in load_jsonl(PEER) if v["family"] in NAMES], PEER, _vector_id))
def test_peer_vectors(vector):
    same_whole_and_stream(catalogue_parser(vector["family"]), vector["prefix"], vector["text"], vector.get("tools"))


@pytest.mark.parametrize("vector", params(load_jsonl(CONFORMANCE), CONFORMANCE, _vector_id))
def test_conformance_vectors(vector):
    try:
        module = respc.compile_template(vector["template"])
    except WHOLE_ERRORS:
        pytest.skip("the vector's template does not load (a load-stage error vector)")
    outcome = same_whole_and_stream(module.ResponseParser, vector["prefix"], vector["text"], vector.get("tools"))
    if vector["id"] in CONFORMANCE_DEVIATIONS:  # D7/D8: respc refuses the body the reference reads
        message = outcome[0]
        assert message[:2] == ("error", "ContentParseError") and message[2].startswith(CONFORMANCE_DEVIATIONS[vector["id"]]["error"])
    elif "message" in vector["expect"]:
        assert outcome[0] == vector["expect"]["message"]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(data=st.data())
@pytest.mark.parametrize("name", NAMES)
def test_random_splices(name, data):
    pieces = delimiter_pieces(name)
    parts = data.draw(st.lists(st.sampled_from(pieces), min_size=1, max_size=30))
    cases = family_cases(name)
    prefix = data.draw(st.sampled_from([c["prefix"] for c in cases] or [""]))
    same_whole_and_stream(catalogue_parser(name), prefix, "".join(parts))


def test_single_pass_is_taken_and_skips_the_streaming_pass():
    """The point of the path: feed() is never called, in either mode; strict mode also makes no
    eos=False pass."""
    parser_class = catalogue_parser("qwen3")
    calls = []

    class Watched(parser_class):
        __slots__ = ()

        def feed(self, text):
            calls.append(text)
            return super().feed(text)

        def _run(self, events, eos):
            calls.append(eos)
            return super()._run(events, eos)

    text = "<think>a</think>b<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>"
    message = whole.finish(Watched(""), text)
    assert calls == [True]
    assert message["tool_calls"] == [{"type": "function", "function": {"name": "f", "arguments": {}}}]
    assert message["reasoning_content"] == "a" and message["content"] == "b"
    calls.clear()
    assert whole.finish(Watched("", errors="recover"), text) == message
    assert calls == [False, True]
    calls.clear()
    ledgered = Watched("", errors="recover", ledger=True)
    assert whole.finish(ledgered, text) == message
    assert calls == [text, False, True] and ledgered.ledger


def test_recover_keeps_the_truncated_delimiter_diagnostic():
    """What the eos=False pass held at the end is reported, as when streaming, and stays text."""
    text = "Sure.<tool_c"
    parser = catalogue_parser("qwen3")("", errors="recover")
    message = whole.finish(parser, text)
    assert message["content"] == "Sure.<tool_c"
    assert [(d["kind"], d["start"], d["end"], d["text"]) for d in parser.diagnostics] == [
        ("truncated-delimiter", 5, 12, "<tool_c")]
    assert same_whole_and_stream(catalogue_parser("qwen3"), "", text)[0]["content"] == "Sure.<tool_c"  # strict: text


def test_long_pending_match_falls_back_to_feed_in_recover():
    """A parser holding a long pending match: feed collects text before it scans again, so the
    recover path goes through feed; strict mode needs no eos=False pass and stays single."""
    parser_class = catalogue_parser("qwen3")
    for errors, single in (("strict", True), ("recover", False)):
        parser = parser_class("", errors=errors)
        parser._rescan_at = 10**9  # as _run leaves it after a long hold
        assert whole._whole_ok(parser) is single


@settings(max_examples=300, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(case=st.integers(0, max(len(damage_cases()) - 1, 0)), ops=damage_ops())
def test_recover_damaged_outputs(case, ops):
    """The damaged outputs of the recover property suite: both paths agree in both modes."""
    name, prefix, text, spans = damage_cases()[case]
    same_whole_and_stream(catalogue_parser(name), prefix, damage(text, spans, ops))


_FIND_TEXT = st.text(alphabet="<|>_ab/\n\uff5c\u2581x", max_size=60)
_FIND_SUB = st.sampled_from(["<|im_end|>", "<tool_call>", "ab", "a", "", "<|", "_a", "\uff5cx\u2581", "xx", "|>",
                             "abx"])


@settings(max_examples=600, deadline=None)
@given(text=_FIND_TEXT, sub=_FIND_SUB | _FIND_TEXT, start=st.none() | st.integers(-70, 70),
       end=st.none() | st.integers(-70, 70), dense=st.booleans(), near=st.sampled_from([1, 3, 8, 512]))
def test_whole_text_find_is_str_find(text, sub, start, end, dense, near):
    """WholeText.find returns what str.find returns, whatever the arguments, the window searched
    first (``near``, small here so the sentinel search runs on short texts) and however often the
    sentinel misses (``dense`` repeats it many times)."""
    if dense:
        text = text + "|_\uff5c" * 30 + text
    buf = whole.WholeText(text)
    args = (start,) if end is None else (start, end)
    saved, whole._NEAR = whole._NEAR, near
    try:
        assert buf.find(sub, *args) == text.find(sub, *args)
        assert buf.find(sub) == text.find(sub)
    finally:
        whole._NEAR = saved
    assert type(buf[1:]) is str and buf == text


@settings(max_examples=400, deadline=None)
@given(text=_FIND_TEXT, subs=st.lists(st.sampled_from(["ab", "xa", "abx", "a", "<|", "_a", "<|im_end|>"]), min_size=1,
                                      max_size=2),
       queries=st.lists(st.tuples(st.integers(-5, 130), st.none() | st.integers(0, 130)), min_size=2, max_size=12),
       near=st.sampled_from([1, 3, 8]))
def test_whole_text_find_remembers_exactly(text, subs, queries, near):
    """Many searches on one WholeText (what one parse asks, in any order): each returns what
    str.find returns, whatever the earlier ones left in its memory of long searches."""
    text = text + "|_\uff5c" * 10 + text
    buf = whole.WholeText(text)
    saved, whole._NEAR = whole._NEAR, near
    try:
        for k, (start, end) in enumerate(queries):
            sub = subs[k % len(subs)]
            args = (start,) if end is None else (start, end)
            assert buf.find(sub, *args) == text.find(sub, *args), (sub, args)
    finally:
        whole._NEAR = saved


def test_whole_text_find_remembers_only_what_holds():
    """The memory of a long search without a sentinel (``"name"``: every character common) on one
    text: later searches from before, between and after its start and its answer, and of other
    literals, all give str.find's answer."""
    prose = "the name of a named thing, " * 60
    text = prose + '{"name": 1}' + prose + '"name"' + prose
    buf = whole.WholeText(text)
    first, second = text.find('"name"'), text.rfind('"name"')
    starts = [len(prose) + 30, 0, first, first + 1, 5, second, second + 1, len(text) - 600, first - 1, 3 * len(prose)]
    for sub in ('"name"', "named", '"name"'):
        for start in starts + starts[::-1]:
            assert buf.find(sub, start) == text.find(sub, start), (sub, start)
            assert buf.find(sub, start, start + 700) == text.find(sub, start, start + 700), (sub, start)


def test_whole_text_find_refuses_what_str_find_refuses():
    buf = whole.WholeText("a<|b|>")
    for bad in (None, 3, ["<|"], b"<|"):
        with pytest.raises(TypeError):
            buf.find(bad)
    with pytest.raises(TypeError):
        buf.find("<|", "0")


def test_whole_text_find_over_long_prose():
    """The sentinel path on a long text: a literal absent, present far away, and after misses."""
    prose = "Consider a < b and b<c; the wind <10 km/h. " * 400
    text = prose + "<|x|> <|im_end" + prose + "<|im_end|>" + prose
    buf = whole.WholeText(text)
    for sub in ("<|im_end|>", "<tool_call>", "<|x|>", "|>", "functools"):
        for start in (0, 5, len(prose), len(prose) + 3, len(text) - 20):
            assert buf.find(sub, start) == text.find(sub, start), (sub, start)
            assert buf.find(sub, start, len(prose) + 40) == text.find(sub, start, len(prose) + 40)


@pytest.mark.parametrize("span", [1, 1024, 10**9])
def test_whole_text_find_with_sparse_sentinel_misses(span):
    """Issue 33: prose with a ``|`` every 1-2 kB (as real outputs have) makes ``<|im_end|>``'s
    sentinel miss more than _MISSES times; while the misses lie _MISS_SPAN apart or more the
    sentinel search goes on (span 1024), otherwise ``str.find`` takes the rest (span 10**9: always;
    span 1: never). Every answer is str.find's, from every start tried and with every end."""
    prose = ("Read a | b as either one, the wind is mild and the sky clear today. " * 20 + "\n") * 40
    text = prose + "<|im_end" + prose + "<|im_end|>" + prose + "x<|im_end|>"
    buf = whole.WholeText(text)
    saved, whole._MISS_SPAN = whole._MISS_SPAN, span
    try:
        for sub in ("<|im_end|>", "<|x|>", "| b", "<|im_end"):
            for start in (0, 7, len(prose) - 3, len(prose) + 3, 2 * len(prose), len(text) - 11, len(text)):
                assert buf.find(sub, start) == text.find(sub, start), (sub, start)
                for end in (start + 600, start + 5000, len(text) - 1):
                    assert buf.find(sub, start, end) == text.find(sub, start, end), (sub, start, end)
    finally:
        whole._MISS_SPAN = saved


def test_whole_text_sentinels_are_rare_characters():
    assert whole._plan("<|im_end|>") == ("|", 1)
    assert whole._plan("<tool_call>") == ("_", 5)
    assert whole._plan("<\uff5ctool\u2581calls\uff5c>") == ("\uff5c", 1)
    assert whole._plan("functools") == ("", 0)  # no uncommon character: str.find
    assert whole._plan("functools[") == ("[", 9)  # firefunction_v2's lead (see lead_search)
    assert whole._plan("[TOOL_CALLS]") == ("_", 5) and whole._plan("</s>") == (">", 3)


def test_parse_response_batch_keeps_item_numbers():
    """parse_response goes through the whole-text path and still names the failing batch item."""
    module = importlib.import_module("respc.generated.qwen3")
    good = "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>"
    with pytest.raises(ValueError) as info:
        module.parse_response([good, "<tool_call>{\"name\": </tool_call>"], prefix="")
    assert info.value.item == 1
    assert info.value.start == 0 and info.value.field == "tool_calls"


def test_token_ids_and_finalized_parser_fall_back_to_feed():
    parser_class = catalogue_parser("qwen3")
    parser = parser_class("")
    parser.finalize()
    with pytest.raises(RuntimeError, match="already finalized"):
        whole.finish(parser, "x")


def test_random_splices_are_not_trivial():
    """The spliced inputs reach tool calls and errors, so the comparison above sees them."""
    rng = random.Random(7)
    pieces = delimiter_pieces("qwen3")
    kinds = set()
    for _ in range(300):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 30)))
        message, _ = same_whole_and_stream(catalogue_parser("qwen3"), "", text)
        kinds.add("error" if isinstance(message, tuple) else "tools" if message.get("tool_calls") else "text")
    assert kinds == {"error", "tools", "text"}


# --- 2. express regions --------------------------------------------------------------------------

#: templates whose tool-call region the express path reads (the families profiled in issue 33)
EXPECTED = ("deepseek_v3_1", "glm4_5", "hermes2pro", "kimi_k2", "mistral_nemo", "qwen3", "qwen3_coder")


def _express_names() -> list[str]:
    return [name for name in NAMES if any(any(row) for row in catalogue_parser(name)._EXPRESS)]


def _closers(name: str) -> set[str]:
    return {text for row in catalogue_parser(name)._EXPRESS for closer in row if closer
            for text in ((closer,) if isinstance(closer, str) else closer)}


def test_profiled_tool_call_regions_are_express():
    """The tool-call regions of the families the per-call cost was profiled on take the express
    path, and a whole-text parse of a family case with a call goes through it."""
    express = _express_names()
    assert set(EXPECTED) <= set(express), sorted(set(EXPECTED) - set(express))
    assert len(express) >= 30, express
    taken = []
    real = stream.StreamParser._express_store  # (every express region, chained or not)

    def spy(self, *args):
        taken.append(type(self).__module__)
        return real(self, *args)

    stream.StreamParser._express_store = spy
    try:
        for name in EXPECTED:
            module = importlib.import_module(f"respc.generated.{name}")
            for case in family_cases(name):
                if "tool_calls" in case["message"]:
                    module.parse_response(case["text"], case["prefix"])
    finally:
        stream.StreamParser._express_store = real
    assert {m.rsplit(".", 1)[-1] for m in taken} == set(EXPECTED)


def _variants(name: str, text: str, rng: random.Random) -> list[str]:
    """``text`` with each closer of an express region damaged around it (bad or empty bodies,
    non-finite numbers, bad names, a cut closer), doubled, cut, and with text around it."""
    out = [text, text + text, "a < b [c] {d} | e\n" + text + "\nafter", text.replace("\n", "")]
    for closer in _closers(name):
        at = text.find(closer)
        if at < 0:
            continue
        for bad in ("{", " NaN", "", " ", ', "x": Infinity}', "<", closer[:-1]):
            out.append(text[:at] + bad + text[at:])
            out.append(text[:at] + bad)
        out.append(text[:at + len(closer)])
        out.append(text[:at + len(closer) - 1])
        out.append(text[:at + len(closer)] + text[:at + len(closer)])
        for word in ("get_weather", "city"):
            out.append(text.replace(word, "bad name!", 1))
            out.append(text.replace(word, "1e999", 1))
        k = rng.randrange(len(text) + 1)
        out.append(text[:k] + closer + text[k:])
    return out


@pytest.mark.parametrize("name", _express_names())
def test_express_regions_read_as_streaming(name):
    """Every family case of a template with express regions, damaged around their closers
    (:func:`_variants`), gives the same outcome whole and streamed, strict and recover, with the
    case's tools and without."""
    parser = catalogue_parser(name)
    rng = random.Random(name)
    cases = family_cases(name)
    if not cases:
        pytest.skip(f"{name}: no family cases")
    for case in cases[:4]:
        for text in _variants(name, case["text"], rng):
            for tools in {None, json.dumps(case.get("tools"))}:
                same_whole_and_stream(parser, case["prefix"], text, None if tools is None else json.loads(tools))


@pytest.mark.parametrize("body", ["hello", "", " \n", '{"name": "f", "arguments": {}}', '[1]', ' {"name": "f"',
                                  'x {"name": "f", "arguments": {}}', '"f"', "<tool_call>", "{"])
def test_express_tentative_open_decides_as_streaming(body):
    """qwen3's tool call is a tentative open (v2 ``reject``): a body that does not start as a
    JSON object gives the opener back to the answer; the express path decides it the same way."""
    parser = catalogue_parser("qwen3")
    for text in (f"<tool_call>{body}</tool_call>", f"Hi <tool_call>{body}</tool_call> and <tool_call>{body}</tool_call>",
                 f"<think>a</think><tool_call>{body}</tool_call>ok<|im_end|>"):
        same_whole_and_stream(parser, "", text)


def _chained_names() -> list[str]:
    return [name for name in _express_names() if catalogue_parser(name)._CHAIN]


@pytest.mark.parametrize("name", _chained_names())
def test_chained_express_regions_read_as_streaming(name):
    """Regions written back to back (the next opener right where a closer ended: read without
    a scan, ``_CHAIN``), some damaged, cut or separated, give what streaming gives."""
    parser = catalogue_parser(name)
    done = 0
    for leads, pattern, _field, closer in catalogue_parser(name)._CHAIN:
        if not isinstance(closer, str):
            continue  # a close of the outside region (test_section_markers_chain_as_streaming), several closers
        for case in family_cases(name)[:8]:
            text = case["text"]
            if pattern is None:
                a = text.find(leads[0])
                opener = leads[0]
            else:
                found = pattern.search(text)
                a, opener = (found.start(), found.group()) if found else (-1, "")
            b = text.find(closer, a + len(opener))
            if a < 0 or b < 0:
                continue
            seg = text[a:b + len(closer)]
            body = seg[len(opener):-len(closer)]
            bad = opener + body[: len(body) // 2] + closer
            for joined in (seg * 3, seg + bad + seg, bad + seg, seg + seg + opener, seg + opener + body,
                           seg + " " + seg + seg, seg + opener + closer + seg, seg + opener + " x" + closer + seg,
                           text[:a] + seg * 2 + text[a:], seg + seg[:-1]):
                same_whole_and_stream(parser, case["prefix"], joined)
                done += 1
    if not done:
        pytest.skip(f"{name}: no family case writes a chained region")


_WRITTEN_TWICE = {
    "respc_version": 2,
    "start_anchor": "<|assistant|>",
    "fields": {
        "answer": {"open": "<a>", "close": "</a>", "content": "text"},
        "calls": {"open": "<c>", "close": "</c>", "content": "json", "role": "tool_calls",
                  "transform": {"type": "function", "function": "{content}"}},
        "content": {"content": "text", "repeats": True, "join": ""},
    },
}


@pytest.mark.parametrize("text", ["<a>x</a><a>y</a>", "<a>x</a> <a>y</a>", "<a>x</a><a></a><a>z</a>",
                                  '<c>{"name": "f", "arguments": {}}</c><c>{"name": "g", "arguments": {}}</c>',
                                  '<c>{"name": "f", "arguments": {}}</c>hi<c>{"name": "g", "arguments": {}}</c>'])
def test_express_field_written_twice(text):
    """A field that neither repeats nor joins, written twice (an ``overwritten`` diagnostic
    quoting the first block, opener included; a tool-call role field not named ``tool_calls``: a
    strict error naming both blocks): the express path stores the block as ``_close`` does."""
    parser = respc.compile_template(_WRITTEN_TWICE).ResponseParser
    assert any(any(row) for row in parser._EXPRESS)
    same_whole_and_stream(parser, "", text)


_TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}}]


@pytest.mark.parametrize("name, call", [
    ("hermes2pro", '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": "7"}}\n</tool_call>'),
    ("kimi_k2", '<|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "Paris", "days": "7"}'
                '<|tool_call_end|>'),
    ("qwen3_coder", "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n7\n"
                    "</parameter>\n</function>\n</tool_call>"),
])
def test_express_calls_typed_by_tools(name, call):
    """With ``tools=`` the arguments of express and chained calls are typed as ``_close`` types
    them (``"7"`` of an integer parameter), and a value the schema refuses fails the same way."""
    parser = catalogue_parser(name)
    for text in ("Hi " + call, "Hi " + call * 3, call + call.replace("7", "seven")):
        same_whole_and_stream(parser, "", text, _TOOLS)
    message = importlib.import_module(f"respc.generated.{name}").parse_response("Hi " + call * 2, "", tools=_TOOLS)
    assert [c["function"]["arguments"]["days"] for c in message["tool_calls"]] == [7, 7]


def test_express_is_the_whole_text_path_only():
    """Streaming (feed + finalize) and recover mode never take the express path; strict whole
    text does."""
    module = importlib.import_module("respc.generated.hermes2pro")
    text = 'Hi <tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>'
    taken = []
    real = stream.StreamParser._express

    def spy(self, *args):
        taken.append(self._recover)
        return real(self, *args)

    stream.StreamParser._express = spy
    try:
        parser = module.ResponseParser("")
        parser.feed(text)
        streamed = parser.finalize()[0]
        assert taken == []
        assert whole.finish(module.ResponseParser("", errors="recover"), text) == streamed
        assert taken == []
        assert whole.finish(module.ResponseParser(""), text) == streamed
        assert taken == [False]
    finally:
        stream.StreamParser._express = real


def _quiet(name: str) -> list[str]:
    """The links of ``_CHAIN`` that close the outside region (a call section's markers, an end of
    turn): stepped over right where a region ended."""
    return [leads[0] for leads, _pattern, field, _closer in catalogue_parser(name)._CHAIN if field is None]


def _quiet_names() -> list[str]:
    return [name for name in _chained_names() if _quiet(name)]


def test_section_markers_are_chain_links():
    """kimi_k2's and deepseek_v3_1's call-section markers are links of the chain (issue 33: each
    cost a scan, a close and a leave of the empty outside region, ~7 us per output)."""
    assert {"<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"} <= set(_quiet("kimi_k2"))
    assert {"<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"} <= set(_quiet("deepseek_v3_1"))


@pytest.mark.parametrize("name, text", [
    ("kimi_k2", "Hi<|tool_calls_section_begin|>" + "<|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>"
                '{"city": "Paris"}<|tool_call_end|>' * 3 + "<|tool_calls_section_end|>"),
    ("deepseek_v3_1", "Hi<｜tool▁calls▁begin｜>" + '<｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}'
                      "<｜tool▁call▁end｜>" * 3 + "<｜tool▁calls▁end｜><｜end▁of▁sentence｜>"),
])
def test_section_markers_take_no_scan(name, text):
    """The realistic tail of kimi_k2 and deepseek_v3_1 (answer, section opener, three calls back to
    back, section closer): the answer is closed once, the section's markers and calls are read by
    the chain, and only the end of the stream closes again (``_close`` twice, not three or four
    times); the message is streaming's."""
    module = importlib.import_module(f"respc.generated.{name}")
    closes = []
    real = stream.StreamParser._close

    def spy(self, *args, **kwargs):
        closes.append(args[1:2])
        return real(self, *args, **kwargs)

    stream.StreamParser._close = spy
    try:
        message = module.parse_response(text, "")
    finally:
        stream.StreamParser._close = real
    assert len(message["tool_calls"]) == 3 and message["content"] == "Hi"
    assert len(closes) == 2, closes
    same_whole_and_stream(catalogue_parser(name), "", text)


@pytest.mark.parametrize("name", _quiet_names())
def test_section_markers_chain_as_streaming(name):
    """The outside region's closers right after a region (section markers, end of turn) doubled,
    cut, with text or whitespace after them, between back-to-back calls, and spliced at random
    places into the family's cases give what streaming gives, strict and recover."""
    parser = catalogue_parser(name)
    rng = random.Random("quiet " + name)
    closers = sorted(_closers(name))
    done = 0
    for case in family_cases(name)[:3]:
        text = case["text"]
        for q in _quiet(name):
            variants = [q + text, text + q, text + q + q, q + q + text]
            for closer in closers:
                at = text.find(closer)
                if at < 0:
                    continue
                cut = at + len(closer)
                head, tail = text[:cut], text[cut:]
                variants += [head + q + tail, head + q + q + tail, head + q + "x" + tail, head + q + " " + tail,
                             head + q[:-1] + tail, head + q + head + tail, head + q + text[at - 5:],
                             head + " " + q + tail, head + q]
            for _ in range(4):
                k = rng.randrange(len(text) + 1)
                variants.append(text[:k] + q + text[k:])
            for joined in variants:
                same_whole_and_stream(parser, case["prefix"], joined)
                done += 1
    if not done:
        pytest.skip(f"{name}: no family cases")


#: closers that start alike: at one place the longer one is the close (the literal scanner's rule)
_SEVERAL = {
    "respc_version": 2,
    "start_anchor": "<|assistant|>",
    "fields": {
        "calls": {"open": "<c>", "close": ["</c>", "</c>!", "<end>"], "content": "json", "role": "tool_calls",
                  "repeats": True, "transform": {"type": "function", "function": "{content}"}},
        "content": {"content": "text", "repeats": True, "join": ""},
    },
}


def test_several_closers_are_express():
    """A region whose state watches several literal closers of its one close edge (gigachat3's
    ``</s>`` or ``<|message_sep|>``, muse_glimmer's three end tokens) is express too: its closers
    are a tuple, the first in the text ends it."""
    assert catalogue_parser("gigachat3")._EXPRESS[0][0] == ("</s>", "<|message_sep|>")
    for name in ("gigachat3", "muse_glimmer", "granite3", "functionary_v3_1"):
        assert name in _express_names(), name
    assert stream._first_closer("ab</c>!x<end>", ("</c>", "</c>!", "<end>"), 0) == (2, "</c>!")
    assert stream._first_closer("ab<end></c>!", ("</c>", "</c>!", "<end>"), 1) == (2, "<end>")
    assert stream._first_closer("ab</c", ("</c>", "</c>!"), 0) == (-1, "")


_CALL = '{"name": "f", "arguments": {"a": 1}}'


@pytest.mark.parametrize("text", [
    f"<c>{_CALL}</c>!", f"<c>{_CALL}</c>", f"<c>{_CALL}<end>", f"hi <c>{_CALL}</c>!<c>{_CALL}<end>x",
    f"<c>{_CALL}</c>!!", f"<c>{_CALL}</c", f"<c>{_CALL}<end", f"<c>{_CALL}</c>x</c>!", f"<c>{_CALL}<end></c>!",
    f"<c>{_CALL[:-1]}</c>!", f"<c></c>!<c>{_CALL}</c>", f"<c>{_CALL}</c>!<c>{_CALL}</c>!<c>{_CALL}</c>!",
    "<c>[1]<end>", f"<c>{_CALL}<c>{_CALL}</c>",
])
def test_several_closers_read_as_streaming(text):
    """Closers that start alike (``</c>`` and ``</c>!``: the longer wins at one place), one that
    comes first, cut ones, back-to-back regions: the express path reads what streaming reads."""
    parser = respc.compile_template(_SEVERAL).ResponseParser
    assert parser._EXPRESS[0][0] == ("</c>", "</c>!", "<end>")
    same_whole_and_stream(parser, "", text)


@pytest.mark.parametrize("name, text", [
    ("hermes2pro", 'Hi <tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>'),
    ("kimi_k2", "Hi<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>"
                '{"a": 1}<|tool_call_end|><|tool_calls_section_end|>'),
    ("qwen3", '<think>a</think>Hi <tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>'),
])
def test_no_scan_at_the_end_after_an_express_region(name, text):
    """An output that ends with its calls: state 0's scanner is not asked again at the end of the
    text (``_END_QUIET``: it could find nothing there), once per scan that found something; the
    message is streaming's."""
    parser = catalogue_parser(name)
    assert parser._END_QUIET
    module = importlib.import_module(f"respc.generated.{name}")
    asked = []
    real = parser.SCANNERS

    def spy(scan):
        def scanned(buf, pos, eos, memo):
            asked.append(pos == len(buf))
            return scan(buf, pos, eos, memo)
        return scanned

    parser.SCANNERS = tuple(spy(scan) for scan in real)
    try:
        message = module.parse_response(text, "")
    finally:
        parser.SCANNERS = real
    assert message["tool_calls"] and asked and not any(asked), asked
    same_whole_and_stream(parser, "", text)
    for cut in (text[:-1], text + " ", text + text):
        same_whole_and_stream(parser, "", cut)


# --- 3. long outputs -----------------------------------------------------------------------------

#: templates whose complete-text scans use lead_search, barrier_search or sentinel finds over prose
LONG_NAMES = ["xlam", "llama4_pythonic", "qwen3_coder", "muse_glimmer", "gpt_oss", "inkling", "llama3_json",
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


@pytest.mark.parametrize("name", LONG_NAMES)
def test_long_outputs_whole_equals_streaming(name):
    parser_class = catalogue_parser(name)
    for text in _texts(name, 5, zlib.crc32(name.encode())):
        same_whole_and_stream(parser_class, "", text)


def test_long_outputs_take_the_new_ways(monkeypatch):
    """The texts above reach the lead loop past LEAD_MISSES sparse misses and the factor-by-factor
    window (else the test above would only repeat the short texts of the first section)."""
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
    run over it), so 32,000 calls (1.8 MB) took 2.2 s where 1,000 took 14 ms (issue 33;
    docs/security.md "Whole text at scan speed"). The
    characters fed to the decoders grow with the text, not with its square."""
    module = importlib.import_module("respc.generated.llama3_json")
    call = '{"name": "get_weather", "parameters": {"city": "Paris"}};'
    small = _fed_to_decoders(module, call * 500, whole_text)
    large = _fed_to_decoders(module, call * 1000, whole_text)
    assert 0 < large <= 2.5 * small, (small, large)
