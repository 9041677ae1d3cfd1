"""Tool-call bodies converted to JSON text as they stream (the converters of ``runtime/formats``, issue 9;
docs/openai.md "Which formats stream arguments as they are written"):
Gemma 4 / FunctionGemma JSON dialects, Apertus name-as-key JSON, Inkling's ``args`` key,
functionary's ``<|python_tag|>`` code as ``{"code": ...}``.

Each test feeds real-shaped outputs (the families' own delimiters, as in
``tests/cases/families/*.json``) through a catalogue parser wrapped in a ``ChatCompletionStream``
and checks the argument fragments one by one: what goes out before the close, what is held, that
the concatenation parses to exactly the message's arguments, and that nothing sent is taken back.
"""

from __future__ import annotations

import importlib
import json
import random

import pytest

from respc.runtime import ContentParseError
from respc.openai import ChatCompletionStream, argument_streaming
from respc.runtime.formats.json_ import DialectJson, NameKeyed
from respc.runtime.formats.text import TextArgs
from respc.runtime.formats.json_ import _apply_dialects
from respc.runtime.errors import ContentParseError
from support import REPO

GEMMA4 = "<bos><|turn>user\nWeather?<turn|>\n<|turn>model\n"
FUNCTIONGEMMA = "<start_of_turn>user\nWeather?<end_of_turn>\n<start_of_turn>model\n"
APERTUS = "<|user_start|>Weather?<|user_end|><|assistant_start|>"
INKLING = "<|message_user|><|content_text|>Weather?<|end_message|><|message_model|>"
LLAMA = "<|start_header_id|>assistant<|end_header_id|>\n\n"
Q = '<|"|>'  # gemma4's string delimiter

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
    "city": {"type": "string"}, "days": {"type": "integer"}, "tags": {"type": "array"}}}}}]


def _stream(family, prefix, chunks, tools=None, errors="strict", **options):
    module = importlib.import_module(f"respc.generated.{family}")
    stream = ChatCompletionStream(module.ResponseParser(prefix, tools, errors=errors), ids=lambda n: f"call_{n}",
                                  completion_id="x", created=0, **options)
    per_feed = [stream.feed(chunk) for chunk in chunks]
    per_feed.append(stream.finalize())
    return stream, per_feed


def _pieces(per_feed, index=0, key="arguments"):
    """(feed number, text) of every ``function.<key>`` delta of call ``index``, in order."""
    # (test_openai_pythonic's _pieces reads bare deltas, not chunks, and tells name from arguments)
    got = []
    for n, chunks in enumerate(per_feed):
        for chunk in chunks:
            for call in (chunk["choices"][0]["delta"].get("tool_calls", ()) if chunk["choices"] else ()):
                piece = call.get("function", {}).get(key)
                if call["index"] == index and piece:
                    got.append((n, piece))
    return got


def _args(per_feed, index=0):
    return [p for _, p in _pieces(per_feed, index)]


def _message_args(stream, index=0):
    return stream.message["tool_calls"][index]["function"]["arguments"]


def test_catalogue_plans():
    """The regions this module handles, as ``argument_streaming`` reports them (docs/openai.md)."""
    want = {"gemma4": {"tool_calls": "converted as written"},
            "functiongemma": {"tool_calls": "converted as written"},
            "apertus": {"tool_calls": "as written"},
            "inkling": {"tool_calls": "as written"},
            "functionary_v3_1": {"tool_calls": "as written", "python_call": "converted as written"},
            "llama3_json": {"tool_calls": "as written", "tagged_json_call": "as written",
                            "builtin_tool_call": "converted as written"},  # (pythonic: runtime/formats/pythonic.py)
            "minimax_m3": {"tool_calls": "converted as written"}}
    for family, plan in want.items():
        assert argument_streaming(importlib.import_module(f"respc.generated.{family}").ResponseParser) == plan, family


# --- JSON dialects: gemma4 <|"|>, functiongemma <escape> ------------------------------------

def test_gemma4_strings_stream_by_character_typed_values_held():
    """gemma4 per character, with tools: the name goes out at the open delimiter, bare keys are
    quoted, a delimited string streams one character per feed (the closer's characters held until
    it is complete or ruled out), the integer and the array (typed by the schema) go out whole."""
    text = ("<|tool_call>call:get_weather{city:" + Q + 'Pa"r<|is' + Q + ",days:7,tags:[" + Q + "a" + Q + ",1]}"
            "<tool_call|>")
    stream, per_feed = _stream("gemma4", GEMMA4, list(text), TOOLS)
    assert [p for _, p in _pieces(per_feed, key="name")] == ["get_weather"]
    args = _args(per_feed)
    assert _message_args(stream) == {"city": 'Pa"r<|is', "days": 7, "tags": ["a", 1]}
    assert "".join(args) == '{"city":"Pa\\"r<|is","days":7,"tags":["a", 1]}'  # (typed: sent as json.dumps)
    # "<|" inside the value is held while it may still be the closer <|"|>, then sent with "i"
    # (a bare key is held until its ':' shows it is one; the typed array goes out with the '}')
    assert args == ['{', '"city":', '"', 'P', 'a', '\\"', 'r', '<|i', 's', '"', ',"days":', '7', ',"tags":',
                    '["a", 1]}']
    # everything was sent before the close delimiter was complete
    last = max(n for n, _ in _pieces(per_feed))
    assert last < text.index("<tool_call|>") + len("<tool_call|>") - 1
    assert stream.diagnostics == []


def test_functiongemma_escape_strings_with_json_punctuation():
    """functiongemma ``<escape>`` strings holding JSON punctuation, quotes, backslashes, newlines
    and a cut ``<esc`` (text, not the closer), fed per character and in three pieces."""
    value = 'a, b: {c} "d" \\ <esc\nz'
    text = "<start_function_call>call:note{text:<escape>" + value + "<escape>,n:{k:[1,2.5,true,null]}}<end_function_call>"
    for chunks in (list(text), [text[:40], text[40:61], text[61:]]):
        stream, per_feed = _stream("functiongemma", FUNCTIONGEMMA, chunks)
        want = {"text": value, "n": {"k": [1, 2.5, True, None]}}
        assert _message_args(stream) == want
        joined = "".join(_args(per_feed))
        assert json.loads(joined) == want and stream.diagnostics == []
        assert joined == '{"text":' + json.dumps(value, ensure_ascii=False) + ',"n":{"k":[1,2.5,true,null]}}'
    assert len(_args(per_feed)) == 3  # one fragment per feed


def test_dialect_rewrite_equals_the_runtime_rewrite():
    """Seeded random Gemma-4 dialect bodies in random chunkings: the incremental rewrite parses to
    what the runtime's whole-body rewrite parses to, and the stream through gemma4 adds up to the
    message with no diagnostics."""
    rng = random.Random("gemma4-dialect")
    alphabet = ["a", " ", "\n", "<", "|", '"', "\\", "<|", '<|"', "é", "{", ",", ":", "}", "1"]

    def value(depth):
        kind = rng.choice(["s", "s", "n", "b", "o", "l"] if depth < 2 else ["s", "n", "b"])
        if kind == "s":
            return Q + "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8))) + Q
        if kind == "n":
            return rng.choice(["0", "-3", "2.5", "1e3"])
        if kind == "b":
            return rng.choice(["true", "false", "null"])
        if kind == "o":
            return obj(depth + 1)
        return "[" + ",".join(value(depth + 1) for _ in range(rng.randint(0, 3))) + "]"

    def obj(depth):
        keys = rng.sample(["city", "k2", "x_y", "日付", "n"], rng.randint(0, 3))
        return "{" + ",".join(rng.choice(["", " ", "\n"]) + k + ":" + value(depth) for k in keys) + "}"

    module = importlib.import_module("respc.generated.gemma4")
    for trial in range(150):
        body = obj(0)
        expect = json.loads(_apply_dialects(body, ((Q, Q),), True))
        cuts = sorted(rng.sample(range(1, len(body)), min(len(body) - 1, rng.randint(0, 12)))) if len(body) > 1 else []
        pieces = [body[a:b] for a, b in zip([0] + cuts, cuts + [len(body)])]
        convert = DialectJson(((Q, Q),), True)
        assert json.loads("".join(convert.feed(p) for p in pieces) + convert.finish()) == expect, body
        text = "<|tool_call>call:f" + body + "<tool_call|>"
        split = sorted(rng.sample(range(1, len(text)), rng.randint(1, 20)))
        stream, per_feed = _stream("gemma4", GEMMA4, [text[a:b] for a, b in zip([0] + split, split + [len(text)])])
        assert _message_args(stream) == expect and stream.diagnostics == [], text
        assert json.loads("".join(_args(per_feed))) == expect, text


def test_dialect_key_and_opener_edge_cases():
    """What the runtime copies stays copied: a word not followed by ':' is no key, a key written
    with a space before its ':' is not quoted, a first pair's longer opener is waited for and a
    shorter later one taken when it fails."""
    convert = DialectJson((("<|x|>", "<|x|>"),), True)
    assert convert.feed("[1, true") + convert.finish() == "[1, true"
    convert = DialectJson((), True)
    assert convert.feed("{a :1}") == _apply_dialects("{a :1}", (), True)
    pairs = (("<<q", "q>>"), ("<<", ">>"))
    for body in ['[<<qa"q>>]', '[<<a"b>>]']:
        convert = DialectJson(pairs, False)
        got = "".join(convert.feed(c) for c in body) + convert.finish()
        assert json.loads(got) == json.loads(_apply_dialects(body, pairs, False)), body


def test_gemma4_truncated_call_recover():
    """gemma4 cut off inside a delimited string, errors="recover": "hold" sends no call (the
    message has none); "stream" has sent the call as written and names it in a diagnostic."""
    text = "<|tool_call>call:get_weather{city:" + Q + "Par"
    stream, per_feed = _stream("gemma4", GEMMA4, list(text), errors="recover")
    assert _pieces(per_feed) == [] and "tool_calls" not in stream.message
    stream, per_feed = _stream("gemma4", GEMMA4, list(text), errors="recover", recover_arguments="stream")
    assert "".join(_args(per_feed)) == '{"city":"Par'
    assert [(d["kind"], d["cause"], d["sent"]) for d in stream.diagnostics] == [
        ("streamed-call-malformed", "truncated", '{"city":"Par')]


# --- Apertus: the name as the key -----------------------------------------------------------

def test_apertus_name_as_key_streams_each_call():
    """apertus per character: each call's name goes out once its key is read, then its arguments
    object as written; three calls in one list, the last with empty arguments."""
    text = ('<|tools_prefix|>[{"get_weather": {"city": "Par\\"is", "days": [1, 2]}}, {"get_time": {"tz": "CET"}}, '
            '{"ping": {}}]<|tools_suffix|>')
    stream, per_feed = _stream("apertus", APERTUS, list(text))
    want = [{"city": 'Par"is', "days": [1, 2]}, {"tz": "CET"}, {}]
    assert [_message_args(stream, n) for n in range(3)] == want
    assert [[p for _, p in _pieces(per_feed, n, "name")] for n in range(3)] == [["get_weather"], ["get_time"], ["ping"]]
    first = _args(per_feed, 0)
    assert "".join(first) == '{"city": "Par\\"is", "days": [1, 2]}'
    assert first[:5] == ["{", '"', "c", "i", "t"]  # character by character
    assert "".join(_args(per_feed, 1)) == '{"tz": "CET"}' and "".join(_args(per_feed, 2)) == "{}"
    # the first call's arguments were complete before the second call's name was read
    assert max(n for n, _ in _pieces(per_feed, 0)) < min(n for n, _ in _pieces(per_feed, 1, "name"))
    assert stream.diagnostics == []


def test_name_keyed_rewrite():
    convert = NameKeyed(bare=False)
    body = '[ {"a\\"b" :{"x": "{\\"k\\": 1}"}} , {"c": {}}]'
    got = "".join(convert.feed(c) for c in body) + convert.finish()
    assert json.loads(got) == [{"name": 'a"b', "arguments": {"x": '{"k": 1}'}}, {"name": "c", "arguments": {}}]


# --- Inkling: the "args" key ----------------------------------------------------------------

def test_inkling_args_stream_as_written():
    """inkling per character: the payload's name (which wins over the header's) then the ``args``
    object as written, typed values held with tools; a call without ``args`` sends ``{}``."""
    text = ('<|message_model|>other<|content_invoke_tool_json|>{"name":"get_weather","args":{"city":"SF","days":"3"}}'
            '<|end_message|><|message_model|>w<|content_invoke_tool_json|>{"name":"w"}<|end_message|>')
    stream, per_feed = _stream("inkling", "", list(text), TOOLS)
    assert [p for _, p in _pieces(per_feed, 0, "name")] == ["get_weather"]
    args = _args(per_feed, 0)
    assert "".join(args) == '{"city":"SF","days":3}' and '3}' in args and _message_args(stream) == {"city": "SF", "days": 3}
    assert "S" in args  # by character
    assert "".join(_args(per_feed, 1)) == "{}" and _message_args(stream, 1) == {}
    assert stream.diagnostics == []


# --- functionary's <|python_tag|> code -------------------------------------------------------

def test_python_tag_code_streams_as_a_json_string():
    """functionary_v3_1 per character: ``{"code": "`` at the first character the message keeps,
    the code as JSON string text (quotes, tabs, newlines escaped), the whitespace the text parser
    strips never sent (inner whitespace sent once text follows), ``"}`` at the close."""
    code = 'print("a\tb")\n  x = 1'
    text = "Let me compute.<|python_tag|>  \n" + code + "  \n<|eom_id|>"
    stream, per_feed = _stream("functionary_v3_1", LLAMA, list(text))
    assert stream.message["tool_calls"] == [{"type": "function", "function": {"name": "python",
                                                                              "arguments": {"code": code}}}]
    assert [p for _, p in _pieces(per_feed, key="name")] == ["python"]
    args = _args(per_feed)
    assert "".join(args) == json.dumps({"code": code}, ensure_ascii=False)
    # the tab and the newline are whitespace that may be trailing: held, sent with what follows
    assert args[0] == '{"code": "p' and args[-1] == '"}' and "\\tb" in args and "\\n  x" in args
    assert not any(a[-1].isspace() for a in args)  # whitespace is held until text follows it
    start = text.index("<|python_tag|>") + len("<|python_tag|>")
    assert _pieces(per_feed)[0][0] == start + 3  # the "p" (after the stripped "  \n")
    assert stream.diagnostics == []


def test_python_tag_empty_and_typed_code():
    """An empty body sends its call at the close; a schema that types ``code`` as an integer holds
    it and sends it typed."""
    stream, per_feed = _stream("functionary_v3_1", LLAMA, list("<|python_tag|> \n<|eom_id|>"))
    assert _args(per_feed) == ['{"code": ""}'] and stream.diagnostics == []
    tools = [{"type": "function", "function": {"name": "python", "parameters": {
        "type": "object", "properties": {"code": {"type": "integer"}}}}}]
    stream, per_feed = _stream("functionary_v3_1", LLAMA, list("<|python_tag|>42<|eom_id|>"), tools)
    assert _message_args(stream) == {"code": 42}
    assert "".join(_args(per_feed)) == '{"code": 42}' and '"42"' not in "".join(_args(per_feed))
    assert stream.diagnostics == []


def test_text_args_converter():
    convert = TextArgs("code", strip=True)
    got = [convert.feed(p) for p in [" ", "\ta", " ", "b\\", "\n "]] + [convert.finish()]
    assert got == ["", '{"code": "a', "", " b\\\\", "", '"}']
    assert json.loads("".join(got)) == {"code": "a b\\"}


# --- llama3_json's <|python_tag|> JSON call (a second tool region of the slot) ----------------

def test_second_tool_region_chunks_reach_its_scanner():
    """llama3_json ``<|python_tag|>{...}``: its chunks name no region; they go to the tool region
    that is open, so the arguments stream as written (they used to wait for the close)."""
    text = '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}<|eom_id|>'
    stream, per_feed = _stream("llama3_json", LLAMA, list(text))
    args = _args(per_feed)
    assert "".join(args) == '{"city": "Paris"}' and len(args) > 10
    assert _message_args(stream) == {"city": "Paris"} and stream.diagnostics == []


# --- MiniMax-M3: nested XML arguments (xml-tree values) ---------------------------------------

P = "]<]minimax[>["  # MiniMax-M3's tag prefix
MINIMAX_M3 = "]~b]ai\n"


def _m3(params: str) -> str:
    return f'{P}<tool_call>\n{P}<invoke name="create_order">{params}{P}</invoke>\n{P}</tool_call>'


def test_minimax_m3_vllm_nested_case_streams():
    """vLLM's nested-order test (tests/cases/families/minimax_m3.json) per character, with its
    tools: the leaf string ``note`` streams one character per feed, the typed leaves (``user_id``
    integer, ``urgent`` boolean) and the nested values (``shipping`` object, ``items`` list) go out
    whole at their closing tags, typed; the fragments parse to exactly the message's arguments."""
    family = json.loads((REPO / "tests" / "cases" / "families" / "minimax_m3.json").read_text(encoding="utf-8"))
    case = next(c for c in family["cases"] if c["name"] == "vllm_nested_tool_call")
    for errors, options in (("strict", {}), ("recover", {"recover_arguments": "stream"})):
        stream, per_feed = _stream("minimax_m3", case["prefix"], list(case["text"]), case.get("tools"), errors, **options)
        args = _args(per_feed)
        want = _message_args(stream)
        assert json.loads("".join(args)) == want and want["shipping"] == {"city": "Singapore", "zip": 18956}
        assert want["user_id"] == 42 and args[:3] == ['{"user_id": ', '42, "urgent": ', 'true, "note": "P']
        assert args[3:8] == list("lease")
        assert ', "shipping": ' in args and '{"city": "Singapore", "zip": 18956}, "items": ' in args
        assert stream.diagnostics == [], errors


def test_minimax_m3_leaf_nested_and_repeated_keys():
    """Without tools: a leaf keeps its whitespace and streams (its closing tag's beginning held);
    text that only starts like an element (``]<]minimax[>[<c `` never closed as a tag) is a leaf; a
    value that is a clean element sequence is held and sent as an object / list; a key written
    again (the message collects its values in a list) is sent again with the whole list, which
    JSON readers keep (last key wins)."""
    params = (f"{P}<a> x\ty {P}</a>{P}<b> {P}<c {P}</b>{P}<l>{P}<item>1{P}</item>{P}<item>{P}<k>v{P}</k>{P}</item>{P}</l>"
              f"{P}<a>2{P}</a>")
    text = _m3(params)
    stream, per_feed = _stream("minimax_m3", MINIMAX_M3, list(text))
    want = {"a": [" x\ty ", "2"], "b": f" {P}<c ", "l": ["1", {"k": "v"}]}
    assert _message_args(stream) == want
    args = _args(per_feed)
    # (the leading space is undecided until "x" shows the value cannot begin an element)
    assert args[:5] == ['{"a": " x', "\\t", "y", " ", '"']
    assert ', "l": ["1", {"k": "v"}]' in args and ', "a": [" x\\ty ", "2"]' in args
    assert json.loads("".join(args)) == want and stream.diagnostics == []
    # a key met again whose first value is a list: the runtime appends to that list
    stream, per_feed = _stream("minimax_m3", MINIMAX_M3, list(_m3(params + f"{P}<l>3{P}</l>")))
    assert _message_args(stream)["l"] == ["1", {"k": "v"}, "3"]
    assert _args(per_feed)[-2:] == [', "l": ["1", {"k": "v"}, "3"]', "}"] and stream.diagnostics == []


def test_minimax_m3_cut_off_call():
    """A parameter left unclosed -- the invoke closes inside it, or the output ends inside it
    (vLLM's unclosed second invocation) -- leaves body text no tag accounts for (D7:
    docs/template-language.md "D7: text no parser accounts for is an error"; issue 24
    item 3): strict raises, naming the offset; recover makes no call (it was malformed or
    truncated): "hold" sends nothing for it, "stream" reports what it sent."""
    tools = [{"type": "function", "function": {"name": "create_order", "parameters": {
        "type": "object", "properties": {"user_id": {"type": "integer"}}}}}]
    text = _m3(f"{P}<user_id>1{P}</user_id>")[:-len(f"{P}</invoke>\n{P}</tool_call>")]
    cases = [  # (chunks, tools, offset and text of the error, recover's cause)
        (list(_m3(f"{P}<a>1{P}</a>{P}<b>{P}<c>x{P}</c>")), None, f"34 of the body matches no tag_pattern: '{P}<b>'",
         "malformed"),
        (list(text + f"{P}<user_id>2"), tools, f"46 of the body matches no tag_pattern: '{P}<user_id>2'", "truncated"),
        (list(text[:-len(f"{P}<user_id>1{P}</user_id>")] + f"{P}<user_id>2"), tools,
         f"0 of the body matches no tag_pattern: '{P}<user_id>2'", "truncated"),
        (list(_m3(f"{P}<s>ab")), None, f"0 of the body matches no tag_pattern: '{P}<s>ab'", "malformed"),
    ]
    for chunks, given, error, cause in cases:
        with pytest.raises(ContentParseError) as caught:
            _stream("minimax_m3", MINIMAX_M3, chunks, given)
        if cause == "truncated":  # the output ended inside the call (docs/events.md, "Truncated regions")
            assert "Field 'tool_calls': the output ended inside this region before its close (truncated)" in str(
                caught.value)
        else:
            assert f"Field 'tool_calls': xml-inline: text at offset {error}" in str(caught.value)
        stream, per_feed = _stream("minimax_m3", MINIMAX_M3, chunks, given, "recover")
        assert "tool_calls" not in stream.message and stream.diagnostics == []
        assert _pieces(per_feed, key="name") == [] and _args(per_feed) == []
        stream, per_feed = _stream("minimax_m3", MINIMAX_M3, chunks, given, "recover", recover_arguments="stream")
        assert "tool_calls" not in stream.message
        assert [(d["kind"], d["cause"]) for d in stream.diagnostics] == [("streamed-call-malformed", cause)]


def test_minimax_m3_random_values_and_chunkings():
    """Seeded random nested values (leaves with cut tags and whitespace, objects, lists, repeated
    keys), with and without tools, in random chunkings: the message equals the whole-text parse,
    no diagnostics, the fragments parse to its arguments."""
    rng = random.Random("minimax_m3")
    module = importlib.import_module("respc.generated.minimax_m3")
    tools = [{"type": "function", "function": {"name": "create_order", "parameters": {"type": "object", "properties": {
        "n": {"type": "integer"}, "s": {"type": "string"}, "o": {"type": "object"}}}}}]
    alphabet = ["a", " ", "\n", "<", "/", ">", '"', "\\", f"{P}<", f"{P}</", "]<]mini", "é", "1"]

    def value(depth):
        kind = rng.random()
        if depth < 2 and kind < 0.25:
            return "".join(f"{P}<{k}>{value(depth + 1)}{P}</{k}>" for k in rng.sample(["x", "y", "z"], rng.randint(1, 2)))
        if depth < 2 and kind < 0.4:
            return "".join(f"{P}<item>{value(depth + 1)}{P}</item>" for _ in range(rng.randint(1, 3)))
        if kind < 0.55:
            return str(rng.randint(-9, 99))
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))

    for trial in range(150):
        params = "".join(f"{P}<{k}>{value(0)}{P}</{k}>" + rng.choice(["", "\n"])
                         for k in (rng.choice(["n", "s", "o", "w"]) for _ in range(rng.randint(0, 4))))
        text = _m3(params)
        given = tools if trial % 2 else None
        expect = module.parse_response(text, prefix=MINIMAX_M3, tools=given)
        cuts = sorted(rng.sample(range(1, len(text)), rng.randint(1, 30)))
        stream, per_feed = _stream("minimax_m3", MINIMAX_M3, [text[a:b] for a, b in zip([0] + cuts, cuts + [len(text)])],
                                   given)
        assert stream.message == expect and stream.diagnostics == [], text
        assert json.loads("".join(_args(per_feed))) == expect["tool_calls"][0]["function"]["arguments"], text


def test_gemma4_omitted_opening_delimiter_recover_stream():
    """SGLang's gemma4 case ``omitted_opening_delimiter`` (peer vector
    sglang/gemma4/omitted_opening_delimiter): the value lacks its opening ``<|"|>``; the recover
    repair reads the bare text before the lone delimiter as the string, and so does the stream
    (the bare value is held until what ends it), so ``recover_arguments="stream"`` declares no
    difference; a valid bare value (number, literal) goes out as written."""
    text = '<|tool_call>call:web_search{query:weather in Tokyo<|"|>}<tool_call|>'
    for chunks in (list(text), [text[:30], text[30:]]):
        stream, per_feed = _stream("gemma4", GEMMA4, chunks, errors="recover", recover_arguments="stream")
        assert _message_args(stream) == {"query": "weather in Tokyo"}
        assert "".join(_args(per_feed)) == '{"query":"weather in Tokyo"}' and stream.diagnostics == []
    text = "<|tool_call>call:set{value:42,on:true,l:[1,null]}<tool_call|>"
    stream, per_feed = _stream("gemma4", GEMMA4, list(text))
    assert "".join(_args(per_feed)) == '{"value":42,"on":true,"l":[1,null]}' and stream.diagnostics == []
    assert ',"on":' in _args(per_feed) and "42" in _args(per_feed)  # held until "," ended it


def test_plan_leaves_what_it_cannot_convert_at_close():
    """Python literals and a text fallback (the body may not be JSON) are not converted; nor a
    delimiter that begins with a character JSON text may begin with; nor a text body whose call
    name comes from a group (the name is not the template's constant). The same fields with
    the convertible options are converted (so each refusal is the option's). Decided by the
    json and text formats' plans at compile time (runtime/formats, docs/formats.md)."""
    from respc.compiler.ir import Field
    from respc.openai import _label as label
    from respc.runtime.formats import plan_of

    def field(content, args, transform, groups=("name",)):
        return Field(name="tool_calls", open=None, close=None, content=content, content_args=args, repeats=False,
                     join=None, optional=True, transform=transform, transform_each=False, group_names=groups,
                     slot="tool_calls")

    by_group = {"function": {"name": "{name}", "arguments": "{content}"}}
    for args in ({"python_literals": True, "unquoted_keys": True}, {"allow_non_json": True, "unquoted_keys": True},
                 {"string_delims": [["x", "x"]]}):
        assert plan_of(field("json", args, by_group)).arguments is None, args
    for args in ({"unquoted_keys": True}, {"string_delims": [["'", "'"]]}):
        plan = plan_of(field("json", args, by_group))
        assert (plan.arguments, plan.name_group, label(plan)) == ("dialect-json", "name", "converted as written"), args

    named = {"function": {"name": "{n}", "arguments": {"code": "{content}"}}}
    assert plan_of(field("text", {}, named, ("n",))).arguments is None
    fixed = plan_of(field("text", {}, {"function": {"name": "py", "arguments": {"code": "{content}"}}}, ()))
    assert (fixed.arguments, fixed.name, fixed.arg_key, fixed.strip) == ("text-argument", "py", "code", True)
    assert label(fixed) == "converted as written" and label(None) == "at close"
