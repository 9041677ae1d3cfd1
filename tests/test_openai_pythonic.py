"""Pythonic tool calls streamed as JSON argument text while they are written (issue 9; docs/openai.md
"Which formats stream arguments as they are written";
``runtime/formats/pythonic.py`` ``PythonicArgs``): llama4_pythonic, lfm2, olmo3 and llama3_json's builtin calls.

Each test feeds real model-style output through the catalogue parser wrapped in a
``ChatCompletionStream`` and reads the tool-call deltas; the property tests compare the stream with
the message on generated call lists in many Python spellings, and the converter with
``runtime.pythonic.parse_pythonic`` on arbitrary text.
"""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from respc.openai import ChatCompletionStream, argument_streaming
from respc.runtime.formats.pythonic import PythonicArgs
from respc.runtime.errors import ContentParseError
from respc.runtime.pythonic import parse_pythonic
from support import generated  # noqa: E402


def _run(family: str, chunks: list[str], tools=None, errors="strict", **options):
    stream = ChatCompletionStream(generated(family).ResponseParser("", tools, errors=errors),
                                  ids=lambda n: f"call_{n}", created=0, **options)
    per_feed = []  # the deltas each feed returned
    for chunk in chunks:
        per_feed.append([c["choices"][0]["delta"] for c in stream.feed(chunk)])
    per_feed.append([c["choices"][0]["delta"] for c in stream.finalize() if c["choices"]])
    return stream, per_feed


def _random_chunks(text: str, rng, most: int) -> list[str]:
    """``text`` cut into pieces of 1 to ``most`` characters, sizes drawn from ``rng``."""
    chunks, i = [], 0
    while i < len(text):
        step = rng.randint(1, most)
        chunks.append(text[i:i + step])
        i += step
    return chunks


def _pieces(per_feed: list, index: int = 0) -> list[tuple[int, str, str]]:
    """(feed number, "name" | "arguments", text) of call ``index``'s deltas, in order."""
    # (test_openai_dialects' _pieces reads whole chunks, one key at a time)
    out = []
    for n, deltas in enumerate(per_feed):
        for delta in deltas:
            for call in delta.get("tool_calls", []):
                if call["index"] != index:
                    continue
                for key in ("name", "arguments"):
                    if call["function"].get(key):
                        out.append((n, key, call["function"][key]))
    return out


def _args(per_feed: list, index: int = 0) -> str:
    return "".join(text for _, key, text in _pieces(per_feed, index) if key == "arguments")


def test_catalogue_pythonic_regions_are_converted_as_written():
    assert argument_streaming(generated("llama4_pythonic").ResponseParser) == {"tool_calls": "converted as written"}
    assert argument_streaming(generated("olmo3").ResponseParser) == {"tool_calls": "converted as written"}
    assert argument_streaming(generated("lfm2").ResponseParser)["tool_calls"] == "converted as written"
    assert argument_streaming(generated("llama3_json").ResponseParser)["builtin_tool_call"] == "converted as written"
    # a text body made into {"code": ...} by its transform is not pythonic (runtime/formats/text.py converts it)
    assert argument_streaming(generated("functionary_v3_1").ResponseParser)["python_call"] == "converted as written"


def test_per_character_name_at_the_parenthesis_then_strings_character_by_character():
    text = "[get_weather(city='Paris', days=3), other(x=\"a\\\"b\")]<|eot|>"
    stream, per_feed = _run("llama4_pythonic", list(text))
    first = _pieces(per_feed, 0)
    # the name goes out with the feed of "(" (feed number = its offset)
    assert first[0] == (text.index("("), "name", "get_weather")
    assert [p[2] for p in first[1:]] == ['{"city": "', "P", "a", "r", "i", "s", '"', ', "days": 3}']
    # the closing quote waits for the ',' (a string could follow and continue the value)
    assert first[7][0] == text.index(",")
    # 3 is held until the ')' shows it complete
    assert first[8][0] == text.index(")")
    second = _pieces(per_feed, 1)
    assert [p[2] for p in second] == ["other", '{"x": "', "a", '\\"', "b", '"}']
    assert json.loads(_args(per_feed, 1)) == {"x": 'a"b'}
    assert stream.message["tool_calls"][1]["function"]["arguments"] == {"x": 'a"b'}
    assert stream.diagnostics == []


@pytest.mark.parametrize("literal,value", [
    (r"'Martha\'s Vineyard'", "Martha's Vineyard"),
    (r'"say \"hi\""', 'say "hi"'),
    (r"'tab\there\nline'", "tab\there\nline"),
    (r"'\x41\101\u00e9\U0001F600\N{BULLET}'", "AAé😀•"),
    (r"r'C:\dir\n'", "C:\\dir\\n"),
    (r"'unknown \q escape'", "unknown \\q escape"),
    ("'''it's ''quoted'' '''", "it's ''quoted'' "),
    ('"""a\nb"""', "a\nb"),
    ("'joined' \"and\"   '''three'''", "joinedandthree"),
    ("'line \\\ncontinued'", "line continued"),
    ("'a)b,c]d(e'", "a)b,c]d(e"),
    ("''", ""),
    ("u'x'", "x"),
    ("'bell\\7'", "bell\x07"),
    ("'\\\\'", "\\"),
])
@pytest.mark.parametrize("how", ["chars", "whole", "pairs"])
def test_string_escapes_and_quote_styles(literal, value, how):
    text = f"[f(s={literal}, n=1)]<|eot|>"
    chunks = {"chars": list(text), "whole": [text], "pairs": [text[i:i + 2] for i in range(0, len(text), 2)]}[how]
    stream, per_feed = _run("llama4_pythonic", chunks)
    assert stream.message["tool_calls"][0]["function"]["arguments"] == {"s": value, "n": 1}
    assert json.loads(_args(per_feed)) == {"s": value, "n": 1}
    assert _args(per_feed) == json.dumps({"s": value, "n": 1}, ensure_ascii=False)
    assert stream.diagnostics == []


def test_escape_split_across_chunks_goes_out_decoded_once_complete():
    chunks = ["[f(s='ab\\", "x4", "1c\\N{BUL", "LET}', n=1)]", "<|eot|>"]
    stream, per_feed = _run("llama4_pythonic", chunks)
    # (feed number, text): "\x4" alone sends nothing, "1c" completes it; "\N{BUL" waits for "LET}"
    assert [(n, text) for n, key, text in _pieces(per_feed) if key == "arguments"] == [
        (0, '{"s": "ab'), (2, "Ac"), (3, '•", "n": 1}')]


def test_held_values_go_out_whole_and_typed_as_the_message_has_them():
    text = ("[f(data=[1, (2, 3), {'k': ')]'}], flag=True, nothing=None, t=(1,), one=(5), "
            "n=- 4, h=0x1f, big=1_000, x=.5, s={7, 8})]<|eot|>")
    stream, per_feed = _run("llama4_pythonic", list(text))
    expected = {"data": [1, [2, 3], {"k": ")]"}], "flag": True, "nothing": None, "t": [1], "one": 5,
                "n": -4, "h": 31, "big": 1000, "x": 0.5, "s": [7, 8]}
    assert stream.message["tool_calls"][0]["function"]["arguments"] == expected
    fragments = [p[2] for p in _pieces(per_feed) if p[1] == "arguments"]
    assert fragments == ['{"data": [1, [2, 3], {"k": ")]"}]', ', "flag": true', ', "nothing": null', ', "t": [1]',
                         ', "one": 5', ', "n": -4', ', "h": 31', ', "big": 1000', ', "x": 0.5', ', "s": [7, 8]}']  # the ")" ends the last value and the call


def test_schema_typed_string_is_held_and_sent_typed():
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "days": {"type": "integer"}, "ok": {"type": "boolean"}}}}}]
    text = "<|tool_call_start|>[get_weather(city=\"Paris\", days='15', ok='true')]<|tool_call_end|>"
    stream, per_feed = _run("lfm2", list(text), tools)
    assert stream.message["tool_calls"][0]["function"]["arguments"] == {"city": "Paris", "days": 15, "ok": True}
    fragments = [p[2] for p in _pieces(per_feed) if p[1] == "arguments"]
    assert fragments == ['{"city": "', "P", "a", "r", "i", "s", '"', ', "days": 15', ', "ok": true}']


def test_json_words_in_olmo3_and_a_builtin_call_with_its_suffix_stripped():
    stream, per_feed = _run("olmo3", list('<function_calls>f(a=true, b=null, c="x")\ng()</function_calls>'))
    assert [c["function"]["arguments"] for c in stream.message["tool_calls"]] == [{"a": True, "b": None, "c": "x"}, {}]
    assert _args(per_feed, 0) == '{"a": true, "b": null, "c": "x"}' and _args(per_feed, 1) == "{}"
    text = "<|python_tag|>brave_search.call(query=\"what's up (today)\")<|eom_id|>"
    stream, per_feed = _run("llama3_json", list(text))
    assert _pieces(per_feed)[0][1:] == ("name", "brave_search")
    assert json.loads(_args(per_feed)) == {"query": "what's up (today)"}
    assert stream.message["tool_calls"][0]["function"] == {"name": "brave_search",
                                                           "arguments": {"query": "what's up (today)"}}
    assert len([p for p in _pieces(per_feed) if p[1] == "arguments"]) > 10  # streamed, not at close


def test_cut_off_call_per_errors_mode():
    chunks = list("Hi [get_weather(city='Pa")
    with pytest.raises(ContentParseError):
        _run("llama4_pythonic", chunks)
    # recover, hold: never a call; the raw text is content, as in the message
    stream, per_feed = _run("llama4_pythonic", chunks, errors="recover")
    assert _pieces(per_feed) == [] and "tool_calls" not in stream.message
    assert "".join(d.get("content", "") for f in per_feed for d in f) == stream.message["content"]
    # recover, stream: the call stays as sent, named in the diagnostics
    stream, per_feed = _run("llama4_pythonic", chunks, errors="recover", recover_arguments="stream")
    assert _args(per_feed) == '{"city": "Pa'
    assert [(d["kind"], d["sent"]) for d in stream.diagnostics] == [("streamed-call-malformed", '{"city": "Pa')]


def test_positional_argument_sends_nothing_past_the_name():
    chunks = list("<|tool_call_start|>[f('x', y=1)]<|tool_call_end|>")
    stream, per_feed = _run("lfm2", chunks, errors="recover", recover_arguments="stream")
    assert [p[1:] for p in _pieces(per_feed)] == [("name", "f")]
    assert [d["kind"] for d in stream.diagnostics] == ["streamed-call-malformed"]
    assert stream.diagnostics[0]["sent"] == ""
    stream, per_feed = _run("lfm2", chunks, errors="recover")
    assert _pieces(per_feed) == [] and "tool_calls" not in stream.message
    assert "".join(d.get("content", "") for f in per_feed for d in f) == stream.message["content"] == "".join(chunks)


def test_stopped_reader_finishes_at_the_close_when_what_it_sent_is_a_beginning():
    """A converter that stopped (as it does on text it does not read) sends the rest at the close."""
    stream = ChatCompletionStream(generated("llama4_pythonic").ResponseParser(""), ids=lambda n: f"call_{n}")
    sent = [c["choices"][0]["delta"] for c in stream.feed("[f(a='xy")]
    scanner = next(state[0] for state in stream._open.values())
    scanner.dead = True
    for piece in ("z', b=[1, 2])", ", g(c=1)]"):
        sent += [c["choices"][0]["delta"] for c in stream.feed(piece)]
    sent += [c["choices"][0]["delta"] for c in stream.finalize() if c["choices"]]
    assert stream.diagnostics == []
    assert json.loads(_args([sent], 0)) == {"a": "xyz", "b": [1, 2]}
    assert _args([sent], 0).startswith('{"a": "xy')
    assert json.loads(_args([sent], 1)) == {"c": 1}


# --- properties ------------------------------------------------------------------------------

_NAMES = st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True).filter(lambda s: s not in ("true", "false", "null"))


def _py_string(draw, s: str) -> str:
    """``s`` written as a Python string literal in one of several spellings (maybe concatenated)."""
    style = draw(st.sampled_from(["repr", "single", "double", "triple", "concat", "raw"]))
    if style == "raw" and not any(c in s for c in "'\\\n\r"):
        return "r'" + s + "'"
    if style == "concat" and len(s) > 1:
        cut = draw(st.integers(1, len(s) - 1))
        return _py_string(draw, s[:cut]) + draw(st.sampled_from(["", " ", "\n  "])) + _py_string(draw, s[cut:])
    if style in ("single", "double", "triple"):
        quote = {"single": "'", "double": '"', "triple": "'''"}[style]
        out = []
        for c in s:
            if c == "\\" or c == quote[0]:
                out.append("\\" + c)
            elif c in "\n\r" and style != "triple":
                out.append(draw(st.sampled_from(["\\n" if c == "\n" else "\\r", "\\x%02x" % ord(c), "\\%03o" % ord(c)])))
            elif ord(c) < 0x20 or c == "\x7f":
                out.append(draw(st.sampled_from(["\\x%02x" % ord(c), "\\u%04x" % ord(c)])))
            elif ord(c) > 0xFFFF:
                out.append(draw(st.sampled_from([c, "\\U%08x" % ord(c)])))
            else:
                out.append(c)
        body = "".join(out)
        if style == "triple" and body.endswith("'") and not body.endswith("\\'"):
            body = body[:-1] + "\\'"
        return quote + body + quote
    return repr(s)


def _py(draw, value) -> tuple[str, object]:
    """(Python literal text, the value the message holds) for a generated value."""
    space = lambda: draw(st.sampled_from(["", " ", "  ", "\n"]))  # noqa: E731
    if isinstance(value, str):
        return _py_string(draw, value), value
    if value is None or isinstance(value, bool):
        return repr(value), value
    if isinstance(value, int):
        return draw(st.sampled_from([repr(value), hex(value) if value >= 0 else "- " + str(-value)])), value
    if isinstance(value, float):
        return repr(value), value
    if isinstance(value, dict):
        items = [(_py_string(draw, k), _py(draw, v)) for k, v in value.items()]
        return "{" + ", ".join(f"{k}{space()}:{space()}{t}" for k, (t, _) in items) + "}", \
            {k: v for k, (_, (_, v)) in zip(value, items)}
    # a list: written as a list or a tuple
    items = [_py(draw, v) for v in value]
    inner = ("," + space()).join(t for t, _ in items)
    if draw(st.booleans()):
        return "[" + space() + inner + space() + "]", [v for _, v in items]
    return "(" + inner + ("," if len(items) == 1 else "") + ")", [v for _, v in items]


_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6)


@st.composite
def _call_lists(draw):
    calls, parts = [], []
    for _ in range(draw(st.integers(1, 3))):
        name = draw(st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True))
        arguments = draw(st.dictionaries(_NAMES, _VALUES, max_size=4))
        written, held = [], {}
        for key, value in arguments.items():
            text, stored = _py(draw, value)
            written.append(f"{key}{draw(st.sampled_from(['', ' ']))}={draw(st.sampled_from(['', ' ']))}{text}")
            held[key] = stored
        trailing = "," if written and draw(st.booleans()) else ""
        parts.append(f"{name}(" + ", ".join(written) + trailing + ")")
        calls.append({"name": name, "arguments": held})
    return "[" + ", ".join(parts) + "]", calls


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_call_lists(), st.randoms(use_true_random=False))
def test_stream_adds_up_to_the_message_and_never_contradicts_it(case, rng):
    body, calls = case
    stream, per_feed = _run("llama4_pythonic", _random_chunks(body + "<|eot|>", rng, 6))
    message_calls = [c["function"] for c in stream.message["tool_calls"]]
    assert message_calls == calls  # the generator writes what the reader reads
    assert stream.diagnostics == []
    for n, call in enumerate(message_calls):
        final = json.dumps(call["arguments"], ensure_ascii=False)
        sent = ""
        for feed in per_feed:  # after every feed, what was sent is a beginning of the final text
            sent += _args([feed], n)
            assert final.startswith(sent), (body, sent)
        assert sent == final
        assert [p[2] for p in _pieces(per_feed, n) if p[1] == "name"] == [call["name"]]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_call_lists(), st.randoms(use_true_random=False), st.data())
def test_cut_off_output_with_recover(case, rng, data):
    """Output cut anywhere (the engine's length limit): with recover_arguments="stream" every call
    sent is a beginning of the call the whole output has (its arguments text a beginning of their
    JSON), and a call cut short is named in the diagnostics; with "hold" no cut call is sent."""
    body, calls = case
    cut = data.draw(st.integers(1, len(body) - 1))
    chunks = _random_chunks(body[:cut], rng, 5)
    stream, per_feed = _run("llama4_pythonic", chunks, errors="recover", recover_arguments="stream")
    kept = {d["index"]: d["sent"] for d in stream.diagnostics if d["kind"] == "streamed-call-malformed"}
    assert {d["kind"] for d in stream.diagnostics} <= {"streamed-call-malformed"}
    message_calls = [c["function"] for c in stream.message.get("tool_calls") or []]
    assert message_calls == []  # the list is not closed: nothing in it is a call of the message
    n = 0
    while _pieces(per_feed, n):
        names = [p[2] for p in _pieces(per_feed, n) if p[1] == "name"]
        assert names == [calls[n]["name"]]
        assert json.dumps(calls[n]["arguments"], ensure_ascii=False).startswith(_args(per_feed, n))
        assert kept[n] == _args(per_feed, n)
        n += 1
    assert set(kept) == set(range(n))
    stream, per_feed = _run("llama4_pythonic", chunks, errors="recover")
    assert _pieces(per_feed, 0) == [] and stream.diagnostics == []


_ALPHABET = list("f(a=1,'\"\\)[]{} x_.rN\nTrueNone-0:") + ["'''", "\\x4", "\\N{BULLET}", "b=", "g("]


@st.composite
def _any_bodies(draw):
    """Text near pythonic call lists: a generated call list with a few characters or tokens
    inserted, deleted or replaced (often still valid), or tokens strung at random. (Measured:
    about 40 % of the bodies drawn are accepted by the reader.)"""
    if draw(st.booleans()):
        return "".join(draw(st.lists(st.sampled_from(_ALPHABET), max_size=25)))
    body = draw(_call_lists())[0]
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(body)))
        edit = draw(st.sampled_from(["insert", "delete", "replace"]))
        token = draw(st.sampled_from(_ALPHABET))
        if edit == "insert":
            body = body[:at] + token + body[at:]
        elif edit == "delete":
            body = body[:at] + body[at + 1:]
        else:
            body = body[:at] + token + body[at + len(token):]
    return body


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_any_bodies(), st.integers(1, 5))
def test_converter_agrees_with_the_reader_on_any_text(body, step):
    """Whatever text: the converter never raises; when the reader accepts it, every call's
    fragments parse to the reader's arguments and the converter ended where the reader did."""
    got: dict = {}

    def out(kind, n, text):
        entry = got.setdefault(n, {"name": None, "args": "", "end": False})
        entry.update({"name": text} if kind == "name" else {"end": True} if kind == "end" else {})
        if kind == "args":
            entry["args"] += text

    converter = PythonicArgs(out, lambda n, k: False, lambda n, k, v: json.dumps(v, ensure_ascii=False))
    for i in range(0, len(body), step):
        converter.feed(body[i:i + step])
    try:
        calls = parse_pythonic(body, allow_bare=True)
    except ContentParseError:
        return
    assert not converter.dead and converter.complete, body
    assert [(g["name"], json.loads(g["args"]), g["end"]) for g in got.values()] == [
        (c["name"], c["arguments"], True) for c in calls], body


_STRING_TOKENS = st.sampled_from(["\\", "'", '"', "\n", "\r", "x", "0", "7", "8", "N", "{", "}", "u", "U", "a",
                                  "F", "4", "1", "BULLET", " ", ")", ",", "]", "r", "'''", '"""'])


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["'", '"', "'''", "r'", 'R"""', "u'"]), st.lists(_STRING_TOKENS, max_size=14), st.integers(1, 3))
def test_string_literals_decode_as_the_reader_decodes(quote, tokens, step):
    """Escape-heavy string values (about 70 % of them valid): when the reader accepts the call,
    the streamed JSON string text is the reader's value, whatever the chunk size."""
    body = "f(a=" + quote + "".join(tokens) + quote.lstrip("rRu") + ")"
    sent, ends = [], []

    def out(kind, n, text):
        if kind == "args":
            sent.append(text)
        ends.append(kind == "end")

    converter = PythonicArgs(out, lambda n, k: False, lambda n, k, v: json.dumps(v, ensure_ascii=False))
    for i in range(0, len(body), step):
        converter.feed(body[i:i + step])
    try:
        calls = parse_pythonic(body)
    except ContentParseError:
        return
    assert "".join(sent) == json.dumps(calls[0]["arguments"], ensure_ascii=False), body
    assert ends[-1] and converter.complete and not converter.dead, body


def test_random_real_outputs_of_each_family_add_up():
    """The four families on hand-written outputs in random chunkings (seeded)."""
    cases = [
        ("llama4_pythonic", "Sure. [search(query='a [b] (c), d', n=2), noop()]<|eot|>"),
        ("lfm2", "<think>hm</think>Ok.<|tool_call_start|>[set(config={\"a\": True, 'b': [1, 2.5e3]}, "
                 "name='''multi\nline''')]<|tool_call_end|>"),
        ("olmo3", "Let me.<function_calls>run(cmd=\"echo 'hi' \\\\\", env={'K': None})\n"
                  "wait(s=0.5)</function_calls>"),
        ("llama3_json", "<|python_tag|>python.call(code='print(\"x\")\\nprint(1)')<|eom_id|>"),
    ]
    rng = random.Random(9)
    for family, text in cases:
        for _ in range(5):
            stream, per_feed = _run(family, _random_chunks(text, rng, 8))
            assert stream.diagnostics == [], family
            for n, call in enumerate(stream.message["tool_calls"]):
                assert _args(per_feed, n) == json.dumps(call["function"]["arguments"], ensure_ascii=False), family
