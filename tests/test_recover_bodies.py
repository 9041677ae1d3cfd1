"""Body-level repairs of damaged engine outputs (``errors="recover"``; each a format's ``repair``,
docs/events.md "Repairs and policies"): MiniCPM's collapsed tags (a recover-only ``tag_pattern``,
docs/template-language.md "xml-inline"), DeepSeek-V4's arguments wrapper (xml-inline) and LFM2's
unescaped quotes (pythonic). Each output is the one in ``../shared/corpus/peer_vectors2.jsonl``,
written out here so the test runs without it; whole text, one character at a time and random
chunkings give the engine's message and the same ``repaired`` diagnostics; strict is unchanged."""

from __future__ import annotations

import pytest

from respc.generated import deepseek_v4, lfm2, minicpm4

from support import chunkings, tool_call

MINICPM_TEXT = ("<functionname=\"get_weather\"><paramname=\"city\">\u4e0a\u6d77</param><paramname=\"date\">"
                "2024-06-27</param></function>\n")
DSV4_TEXT = ("<\uff5cDSML\uff5ctool_calls><\uff5cDSML\uff5cinvoke name=\"get_weather\"><\uff5cDSML\uff5cparameter "
             "name=\"arguments\" string=\"false\">{\"location\":\"Beijing\"}</\uff5cDSML\uff5cparameter></\uff5cDSML"
             "\uff5cinvoke></\uff5cDSML\uff5ctool_calls>")
LFM2_PREFIX = "<|startoftext|><|im_start|>user\nWhat's the weather in Paris?<|im_end|>\n<|im_start|>assistant\n"
LFM2_TEXT = ("<|tool_call_start|>[bash(command='cd /testbed && python3 -c \"from sympy import latex\n"
             "print(latex(3*x, mul_symbol='\\,'))\"')]<|tool_call_end|>")
WEATHER = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "date": {"type": "string"},
                                     "location": {"type": "string"}}}}}]


def _run(module, prefix, chunks, errors, tools=None):
    parser = module.ResponseParser(prefix, tools, errors=errors)
    for chunk in chunks:
        parser.feed(chunk)
    message, _ = parser.finalize()
    return message, parser.diagnostics


def _call(name, arguments):
    """The message of one call (support.tool_call wrapped in an assistant message)."""
    return {"role": "assistant", "tool_calls": [tool_call(name, arguments)]}


def _each_chunking(module, prefix, text, tools=None):
    results = {how: _run(module, prefix, chunks, "recover", tools) for how, chunks in chunkings(text, text).items()}
    assert results["chars"] == results["whole"] and results["random"] == results["whole"]
    return results["whole"]


def test_minicpm4_collapsed_function_and_param_tags():
    """``<functionname=...>`` and ``<paramname=...>`` (the space lost): the template's recover-only opener
    and recover-only tag_pattern read the call, one ``repaired`` diagnostic each."""
    message, diagnostics = _each_chunking(minicpm4, "", MINICPM_TEXT, WEATHER)
    assert message == _call("get_weather", {"city": "\u4e0a\u6d77", "date": "2024-06-27"})
    assert diagnostics == [
        {"kind": "repaired", "field": "tool_calls", "start": 0, "end": 28,
         "message": "recover opener: '<functionname=\"get_weather\">' accepted in the delimiter "
                    "'<functionname=\"get_weather\">' (a repair the template declares)",
         "text": "<functionname=\"get_weather\">"},
        {"kind": "repaired", "field": "tool_calls", "start": 0, "end": 103,
         "message": "tag '<paramname=\"city\">' read by the recover-only tag_pattern",
         "text": MINICPM_TEXT[:103]},
        {"kind": "repaired", "field": "tool_calls", "start": 0, "end": 103,
         "message": "tag '<paramname=\"date\">' read by the recover-only tag_pattern",
         "text": MINICPM_TEXT[:103]},
    ]
    assert _run(minicpm4, "", [MINICPM_TEXT], "strict", WEATHER) == (
        {"role": "assistant", "content": MINICPM_TEXT.rstrip("\n")}, [])


def test_deepseek_v4_arguments_wrapper():
    """The whole argument object written as one ``arguments`` parameter: unwrapped in recover."""
    message, diagnostics = _each_chunking(deepseek_v4, "", DSV4_TEXT, WEATHER)
    assert message == _call("get_weather", {"location": "Beijing"})
    assert diagnostics == [
        {"kind": "repaired", "field": "tool_calls", "start": 18, "end": 155,
         "message": "the only parameter 'arguments' holds the argument object: unwrapped",
         "text": DSV4_TEXT[18:155]},
    ]
    strict, _ = _run(deepseek_v4, "", [DSV4_TEXT], "strict", WEATHER)
    assert strict == _call("get_weather", {"arguments": {"location": "Beijing"}})


def test_lfm2_unescaped_quotes_in_a_python_string():
    """Quotes of a string's own kind written unescaped inside it: the string runs to the quote a
    keyword argument's or call's end follows; the others are escaped."""
    message, diagnostics = _each_chunking(lfm2, LFM2_PREFIX, LFM2_TEXT)
    assert message == _call("bash", {"command": "cd /testbed && python3 -c \"from sympy import latex\n"
                                                "print(latex(3*x, mul_symbol='\\,'))\""})
    assert diagnostics == [
        {"kind": "repaired", "field": "tool_calls", "start": 0, "end": 140,
         "message": "2 unescaped \"'\" inside the string of 'command': escaped",
         "text": LFM2_TEXT},
    ]
    with pytest.raises(Exception, match="expected ',' or '\\)' in the arguments of 'bash'"):
        _run(lfm2, LFM2_PREFIX, [LFM2_TEXT], "strict")


@pytest.mark.parametrize("value,message", [
    (7, "content_args.recover_tag_pattern must be a non-empty regex string, got 7"),
    ("<p (?P<key>\\w+)>(?P<value>.*?)</p>", "content_args.recover_tag_pattern is tag_pattern itself"),
    ("<p(?P<key>\\w+)>.*?</p>", "content_args.recover_tag_pattern must have the named groups of tag_pattern "
                               "['key', 'value'], got ['key']"),
    ("<p(?P<key>\\w+)>(?P<value>.*?</p>", "invalid content_args.recover_tag_pattern regex"),
])
def test_recover_tag_pattern_load_checks(value, message):
    """The load-time checks of ``recover_tag_pattern`` name the key (template-language.md "xml-inline")."""
    from respc.compiler.api import compile_template
    from respc.runtime.errors import TemplateError

    template = {"respc_version": 2, "start_anchor": "<a>", "fields": {
        "tool_calls": {"open_pattern": "<f=(?P<name>\\w+)>", "close": "</f>", "content": "xml-inline",
                       "content_args": {"tag_pattern": "<p (?P<key>\\w+)>(?P<value>.*?)</p>",
                                        "recover_tag_pattern": value},
                       "repeats": True, "role": "tool_calls",
                       "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}}},
        "content": {}}}
    with pytest.raises(TemplateError, match="recover_tag_pattern") as info:
        compile_template(template)
    assert message in str(info.value)


def test_no_parser_class_has_a_new():
    """Building a parser pays nothing for recover classes (runtime/stream.py ``_become_recover``): no
    parser class has a Python ``__new__``; a recover-mode parser of a template with recover-only
    delimiters is still its RECOVER_CLASS, a strict one the class itself, and a caller's subclass
    keeps its overrides in recover mode."""
    import importlib
    import inspect

    from respc.runtime.stream import StreamParser
    from support import CATALOGUE_TEMPLATES

    assert "__new__" not in StreamParser.__dict__
    for name in CATALOGUE_TEMPLATES:
        cls = importlib.import_module(f"respc.generated.{name}").ResponseParser
        assert cls.__new__ is object.__new__, name
    parser = minicpm4.ResponseParser("", errors="recover")
    assert type(parser) is minicpm4.ResponseParser.RECOVER_CLASS
    assert type(minicpm4.ResponseParser("")) is minicpm4.ResponseParser
    assert "errors" in inspect.signature(minicpm4.ResponseParser).parameters

    class Counted(minicpm4.ResponseParser):
        def feed(self, text):
            return super().feed(text)

    class Slotted(minicpm4.ResponseParser):
        __slots__ = ()

    for sub in (Counted, Slotted):
        got = sub("", errors="recover")
        assert isinstance(got, sub) and isinstance(got, minicpm4.ResponseParser.RECOVER_CLASS)
        got.feed(MINICPM_TEXT)
        message, _ = got.finalize()
        assert message == _call("get_weather", {"city": "\u4e0a\u6d77", "date": "2024-06-27"})
