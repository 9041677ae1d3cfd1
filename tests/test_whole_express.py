"""The whole-text path's express regions (issue 33, per-call cost): a region opened into a state
that watches only its own literal close is read at once in strict mode
(``StreamParser._express``, ``runtime/stream.py`` ``_express_table``). These tests check that the
catalogue's tool-call regions take it, and that every answer (message, error text, field,
offsets, partial message, diagnostics) stays the streaming path's on damaged bodies of those
regions: bad JSON or tags, empty bodies, non-finite numbers, bad names, typed arguments, a cut
closer, a field written twice, text around and between the regions.
"""

from __future__ import annotations

import importlib
import json
import random

import pytest

import respc

from support import REPO, catalogue_parser, family_cases, same_whole_and_stream

from respc.runtime import stream as rt_stream
from respc.runtime import whole

NAMES = sorted(p.stem for p in (REPO / "templates").glob("*.json"))
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
    real = rt_stream.StreamParser._express_store  # (every express region, chained or not)

    def spy(self, *args):
        taken.append(type(self).__module__)
        return real(self, *args)

    rt_stream.StreamParser._express_store = spy
    try:
        for name in EXPECTED:
            module = importlib.import_module(f"respc.generated.{name}")
            for case in family_cases(name):
                if "tool_calls" in case["message"]:
                    module.parse_response(case["text"], case["prefix"])
    finally:
        rt_stream.StreamParser._express_store = real
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
    real = rt_stream.StreamParser._express

    def spy(self, *args):
        taken.append(self._recover)
        return real(self, *args)

    rt_stream.StreamParser._express = spy
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
        rt_stream.StreamParser._express = real


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
    real = rt_stream.StreamParser._close

    def spy(self, *args, **kwargs):
        closes.append(args[1:2])
        return real(self, *args, **kwargs)

    rt_stream.StreamParser._close = spy
    try:
        message = module.parse_response(text, "")
    finally:
        rt_stream.StreamParser._close = real
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
    assert rt_stream._first_closer("ab</c>!x<end>", ("</c>", "</c>!", "<end>"), 0) == (2, "</c>!")
    assert rt_stream._first_closer("ab<end></c>!", ("</c>", "</c>!", "<end>"), 1) == (2, "<end>")
    assert rt_stream._first_closer("ab</c", ("</c>", "</c>!"), 0) == (-1, "")


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
