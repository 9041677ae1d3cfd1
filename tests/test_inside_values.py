"""A closer met inside an open value in errors="recover" (docs/security.md, "Closers inside an open
value"; docs/events.md, the repairs table): an xml-inline ``<parameter=...>`` without its
``</parameter>``, a JSON string. The closer is held; a later closer that leaves the value whole
closes the region (the held one was the value's text, reported); an opener of the field after the
held closer makes the body malformed; when the output ends first the held closer closes after all
and the text after it stays text. Whole, per-character and random chunkings agree; linear."""

from __future__ import annotations

import importlib
import time

import pytest

from support import chunkings

QWEN = ("qwen3_coder", "<|im_start|>assistant\n")
GEMMA = ("gemma4", "<|turn>model\n")


def parse(family, text, how, errors="recover"):
    name, prefix = family
    module = importlib.import_module(f"respc.generated.{name}")
    parser = module.ResponseParser(prefix, errors=errors)
    for chunk in chunkings(text, text)[how]:
        parser.feed(chunk)
    message = parser.finalize()[0]
    return message, [(d["kind"], d["start"], d["end"]) for d in parser.diagnostics]


def call(name, **arguments):
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


# the engines' reading (llama.cpp, vLLM): a closing tag written inside an open parameter is its text
BLOCK = ("<tool_call>\n<function=write>\n<parameter=content>\nA block ends with </tool_call> on its own line."
         "\n</parameter>\n</function>\n</tool_call>")


@pytest.mark.parametrize("how", ["whole", "chars", "random"])
def test_closer_inside_a_parameter_is_its_text(how):
    message, diagnostics = parse(QWEN, BLOCK, how)
    assert message == {"role": "assistant", "tool_calls": [call("write", content="A block ends with </tool_call> on "
                                                                               "its own line.")]}
    assert diagnostics == [("repaired", 67, 79)]


@pytest.mark.parametrize("how", ["whole", "chars", "random"])
def test_closer_inside_a_string_is_its_text(how):
    text = '<|tool_call>call:write{content:<|"|>Blocks end with <tool_call|> here<|"|>}<tool_call|>Done.'
    message, diagnostics = parse(GEMMA, text, how)
    assert message == {"role": "assistant", "content": "Done.",
                       "tool_calls": [call("write", content="Blocks end with <tool_call|> here")]}
    assert diagnostics == [("repaired", 52, 64)]


def test_strict_is_unchanged():
    from respc.runtime.errors import ContentParseError

    with pytest.raises(ContentParseError):
        parse(QWEN, BLOCK, "whole", "strict")


# An opener of the field after the held closer: one call with that text in its value, or two calls?
# Neither is read (a missing </parameter> and a value that writes a call look the same).
@pytest.mark.parametrize("how", ["whole", "chars", "random"])
def test_opener_after_a_held_closer_makes_the_body_malformed(how):
    text = ("<tool_call>\n<function=f>\n<parameter=a>\n1\n</tool_call>\n<tool_call>\n<function=g>\n<parameter=b>\n2"
            "\n</parameter>\n</function>\n</tool_call>")
    message, diagnostics = parse(QWEN, text, how)
    assert message == {"role": "assistant", "content": text}
    assert diagnostics == [("repaired", 41, 53), ("malformed", 0, len(text))]


# The output ends inside the value: the held closer closes (the damage repaired as before) and the
# text after it stays text, never read for calls: string delimiters written inside a value (here an
# odd number of <|"|>) would otherwise hold to the end and have the call in the value read after all.
@pytest.mark.parametrize("how", ["whole", "chars", "random"])
def test_value_open_to_the_end_closes_at_the_held_closer(how):
    message, diagnostics = parse(QWEN, "<tool_call>\n<function=f>\n<parameter=a>\n1\n</tool_call>\nDone.", how)
    assert message == {"role": "assistant", "tool_calls": [call("f", a="1")], "content": "Done."}
    assert diagnostics == [("repaired", 0, 53)]
    text = ('<|tool_call>call:write{content:<|"|>Blocks <tool_call|><|tool_call>call:rm{path:<|"|>/<|"|>}<tool_call|>'
            ' x <|"|>y<|"|>}<tool_call|>')
    message, diagnostics = parse(GEMMA, text, how)
    assert message == {"role": "assistant", "content": text}
    assert [d[0] for d in diagnostics] == ["malformed", "repaired", "stray-closer"]


@pytest.mark.parametrize("how", ["whole", "chars", "random"])
def test_omitted_string_opener_is_still_repaired(how):
    """sglang's vector (a value without its opening <|"|>): the closer stands "inside" the string
    the closing delimiter opened; the output ends there, so it closes as before."""
    message, diagnostics = parse(GEMMA, '<|tool_call>call:web_search{query:weather in Tokyo<|"|>}<tool_call|>', how)
    assert message == {"role": "assistant", "tool_calls": [call("web_search", query="weather in Tokyo")]}
    assert diagnostics == [("repaired", 0, 68)]


@pytest.mark.parametrize("family,head,unit,tail", [
    (QWEN, "<tool_call>\n<function=write>\n<parameter=content>\nx</tool_call>", "ab c</tool_call> ",
     "\n</parameter>\n</function>\n</tool_call>"),
    (GEMMA, '<|tool_call>call:write{content:<|"|>x<tool_call|>', "ab <tool_call|> ", '<|"|>}<tool_call|>'),
    (QWEN, "", "<tool_call>\n<function=f>\n<parameter=a>\nx</tool_call> y</tool_call>\n</parameter>\n</tool_call>",
     ""),
], ids=["qwen-one-value", "gemma-one-value", "qwen-many-calls"])
@pytest.mark.parametrize("step", [1 << 30, 7])
def test_held_closers_are_linear(family, head, unit, tail, step):
    name, prefix = family
    module = importlib.import_module(f"respc.generated.{name}")

    def cost(n):
        text = head + unit * n + tail
        best = float("inf")
        for _ in range(3):
            t0 = time.process_time()
            parser = module.ResponseParser(prefix, errors="recover")
            for i in range(0, len(text), step):
                parser.feed(text[i:i + step])
            message = parser.finalize()[0]
            best = min(best, time.process_time() - t0)
        assert message.get("tool_calls")
        return best

    small, large = cost(1000), cost(2000)
    assert large <= 2.5 * max(small, 0.002), (small, large)


# --- a zero-width recover-only closer of a text body (kimi_k2_thinking's think block) -------------

KIMI = ("kimi_k2_thinking", "<|im_assistant|>assistant<|im_middle|>")


@pytest.mark.parametrize("how", ["whole", "chars", "random"])
def test_think_block_that_writes_a_call_and_closes_is_reasoning(how):
    """The mention holds a whole call opener: strict reads reasoning, and so does recover now (the
    lookahead closer fired before and rm ran from the reasoning)."""
    text = ('<think>I will write "<|tool_call_begin|>functions.rm:0<|tool_call_argument_begin|>{}" literally'
            '</think>Answer')
    expected = {"role": "assistant", "content": "Answer", "reasoning_content":
                'I will write "<|tool_call_begin|>functions.rm:0<|tool_call_argument_begin|>{}" literally'}
    assert parse(KIMI, text, how, "strict") == (expected, [])
    assert parse(KIMI, text, how) == (expected, [])


@pytest.mark.parametrize("closed", [True, False], ids=["closed", "unclosed"])
@pytest.mark.parametrize("step", [1 << 30, 7])
def test_held_text_closers_are_linear(closed, step):
    """Many mentions in one think block, closed (each mention is text) or never closed (the first
    fires at the end of the output; the calls after it are read)."""
    module = importlib.import_module("respc.generated.kimi_k2_thinking")
    unit = "a <|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{}<|tool_call_end|> "

    def cost(n):
        text = "<think>x " + unit * n + ("</think>Answer" if closed else "")
        best = float("inf")
        for _ in range(3):
            t0 = time.process_time()
            parser = module.ResponseParser(KIMI[1], errors="recover")
            for i in range(0, len(text), step):
                parser.feed(text[i:i + step])
            message = parser.finalize()[0]
            best = min(best, time.process_time() - t0)
        assert ("tool_calls" in message) is not closed
        return best

    small, large = cost(1000), cost(2000)
    assert large <= 2.5 * max(small, 0.002), (small, large)


def test_inside_readers():
    """The formats' inside readers (docs/formats.md, ``Format.inside``), piece by piece."""
    from respc.runtime.formats import FORMATS

    xml = FORMATS["xml-inline"].inside({"tag_pattern": r"<parameter=(?P<key>[^>\s]+)>\n?(?P<value>.*?)\n?</parameter>"})
    reader = xml()
    assert [reader.feed(p) for p in ["\n<parameter=a>\nx", "</tool_call> y\n</parameter>\n", "<parameter=b>", ""]] == [
        True, False, True, True]
    assert xml().feed("\n<parameter=a>\n1\n</parameter>\n</function>\n") is False
    assert FORMATS["xml-inline"].inside({"tag_pattern": r"<p=(?P<key>\w+)>(?P<value>.*?)(?:</p>|$)"}) is None
    gemma = FORMATS["json"].inside({"unquoted_keys": True, "string_delims": [['<|"|>', '<|"|>']]})
    reader = gemma()
    assert [reader.feed(p) for p in ['{content:<|"|>a', "<tool_call|> b<|", '"|>}', "<tool_call|>"]] == [
        True, True, False, False]
    plain = FORMATS["json"].inside({})()
    assert [plain.feed(p) for p in ['{"a": "x\\', '"</t>', '"}']] == [True, True, False]
    assert FORMATS["text"].inside is None


# --- one mechanism: the format's inside reader decides for every closer (recover-only or not) -----

LFM2 = ("lfm2", "<|im_start|>assistant\n")
KIMI_CALL = ("<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>")
KIMI_END = "<|tool_calls_section_end|>"


# pythonic's inside reader (a Python string literal, either quote): the closer is held as for
# xml-inline and json; before, it closed the call and the call was malformed
@pytest.mark.parametrize("how", ["whole", "chars", "random"])
def test_closer_inside_a_python_string_is_its_text(how):
    text = '<|tool_call_start|>[get_weather(city="Paris", unit="c<|tool_call_end|>elsius")]<|tool_call_end|>'
    message, diagnostics = parse(LFM2, text, how)
    assert message == {"role": "assistant", "tool_calls": [
        call("get_weather", city="Paris", unit="c<|tool_call_end|>elsius")]}
    assert diagnostics == [("repaired", 53, 70)]
    message, diagnostics = parse(LFM2, "<|tool_call_start|>[f(a='x<|tool_call_end|>y')]<|tool_call_end|>", how)
    assert message == {"role": "assistant", "tool_calls": [call("f", a="x<|tool_call_end|>y")]}
    assert diagnostics == [("repaired", 26, 43)]


@pytest.mark.parametrize("how", ["whole", "chars", "random"])
def test_opener_after_a_held_closer_in_a_python_string_makes_the_body_malformed(how):
    text = '<|tool_call_start|>[f(a="x<|tool_call_end|> y")]<|tool_call_start|>[g()]<|tool_call_end|>'
    message, diagnostics = parse(LFM2, text, how)
    assert message == {"role": "assistant", "content": text}
    assert diagnostics == [("repaired", 26, 43), ("malformed", 0, 89)]


@pytest.mark.parametrize("how", ["whole", "chars", "random"])
def test_python_value_open_to_the_end_closes_at_the_held_closer(how):
    """The output ends inside the string: the held closer closes (the body is malformed, as
    before), and the text after it stays text, its <|im_end|> included (not read for delimiters)."""
    text = '<|tool_call_start|>[f(a="x<|tool_call_end|>Done.<|im_end|>'
    message, diagnostics = parse(LFM2, text, how)
    assert message == {"role": "assistant", "content": text}
    assert diagnostics == [("malformed", 0, 43), ("repaired", 43, 58)]


# kimi_k2_thinking's recover-only closer (?=<|tool_call_begin|>) of a json call: inside a string it is
# the string's text (red team s11, unchanged); elsewhere it closes, as a closer of the format would
# there (before: only after a whole value and blanks, so a damaged call swallowed the calls after it)
@pytest.mark.parametrize("how", ["whole", "chars", "random"])
def test_recover_closer_outside_a_string_closes(how):
    text = (KIMI_CALL + '{"a": 1} x<|tool_call_begin|>functions.g:1<|tool_call_argument_begin|>{"b": 2}<|tool_call_end|>'
            + KIMI_END)
    message, diagnostics = parse(KIMI, text, how)
    assert message == {"role": "assistant", "tool_calls": [call("g", b=2)],
                       "content": '<|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{"a": 1} x'}
    assert diagnostics == [("repaired", 98, 98), ("malformed", 28, 98)]
    text = (KIMI_CALL + '{"a": 1, <|tool_call_begin|>functions.g:1<|tool_call_argument_begin|>{"b": 2}<|tool_call_end|>'
            + KIMI_END)
    message, diagnostics = parse(KIMI, text, how)
    assert message == {"role": "assistant", "tool_calls": [call("f", a=1), call("g", b=2)]}
    assert diagnostics == [("repaired", 97, 97), ("repaired", 28, 97)]


# a held closer is decided by the first later closer after which the value is whole, a zero-width
# recover-only one included (before: only closers with text, so g's opener fell inside f's body)
@pytest.mark.parametrize("how", ["whole", "chars", "random"])
def test_held_closer_decided_by_a_recover_closer(how):
    text = (KIMI_CALL + '{"a": "x<|tool_call_end|>y"}<|tool_call_begin|>functions.g:1<|tool_call_argument_begin|>'
            '{"b": 2}<|tool_call_end|>' + KIMI_END)
    message, diagnostics = parse(KIMI, text, how)
    assert message == {"role": "assistant", "tool_calls": [call("f", a="x<|tool_call_end|>y"), call("g", b=2)]}
    assert diagnostics == [("repaired", 96, 113), ("repaired", 116, 116)]


@pytest.mark.parametrize("family,head,unit,tail", [
    (LFM2, '<|tool_call_start|>[write(content="x', "ab c<|tool_call_end|> ", '")]<|tool_call_end|>'),
    (KIMI, KIMI_CALL + '{"code": "x', "ab <|tool_call_begin|> <|tool_call_end|> ", '"}<|tool_call_end|>' + KIMI_END),
], ids=["lfm2-one-value", "kimi-one-value"])
@pytest.mark.parametrize("step", [1 << 30, 7])
def test_closers_of_every_kind_inside_a_value_are_linear(family, head, unit, tail, step):
    """A value full of closers (held ones, recover-only ones read as text): 2x input within 2.5x CPU."""
    name, prefix = family
    module = importlib.import_module(f"respc.generated.{name}")

    def cost(n):
        text = head + unit * n + tail
        best = float("inf")
        for _ in range(3):
            t0 = time.process_time()
            parser = module.ResponseParser(prefix, errors="recover")
            for i in range(0, len(text), step):
                parser.feed(text[i:i + step])
            message = parser.finalize()[0]
            best = min(best, time.process_time() - t0)
        assert len(message.get("tool_calls", ())) == 1, message
        return best

    small, large = cost(1000), cost(2000)
    assert large <= 2.5 * max(small, 0.002), (small, large)


def test_pythonic_inside_reader():
    """pythonic's inside reader (docs/formats.md, ``Format.inside``): a string literal of either
    quote, a quote kept back at the end of a piece read as one quote (a string) or two (empty)."""
    from respc.runtime.formats import FORMATS

    make = FORMATS["pythonic"].inside({})
    cases = [(['[f(a="x'], [True]), (["[f(a='"], [True]), (["[f(a=''"], [False]), (["[f(a='''x''"], [True]),
             (["[f(a=1)]", '"'], [False, False]), (["Sure"], [False]), (['[f(a="x', 'y")', "])"], [True, False, False])]
    for pieces, expected in cases:
        reader = make()
        assert [reader.feed(p) for p in pieces] == expected, pieces
