"""SGLang plug-in (issue 9, item 5): ``respc.sglang`` detectors read through SGLang's own classes.

Marker ``sglang`` (excluded from the default run; README, "SGLang plug-in", has the install and the
command). Every catalogue case (``tests/cases/families/*.json``), corpus vector and peer vector
(``../shared/corpus``; xfail entries left out, as tests/test_openai.py does) is fed whole, one
character at a time and in random pieces:

* through the two detectors chained as SGLang's chat server chains them (the reasoning detector's
  ``normal_text`` into the function-call detector), streaming and one-shot;
* through SGLang's own ``ReasoningParser`` and ``FunctionCallParser`` with the detectors registered
  under ``respc-<family>`` (these get the prefix SGLang can give: the template's reasoning opener
  when the prompt opened reasoning, else ``""``).

Each time the reasoning, the answer and the tool calls (names, JSON-parsed parameters) must equal
respc's own message for the same text, prefix and tools (``errors="recover"``).
"""

from __future__ import annotations

import importlib
import json
import logging
from pathlib import Path

import pytest

from support import CORPUS, SHARED, chunkings, load_jsonl

INSTALL = ('python -m pip install -e ".[test,sglang]" && python -m pip install --no-deps sglang==0.5.23 '
           '(README, "SGLang plug-in")')
pytest.importorskip("sglang.srt.function_call.base_format_detector", reason=f"sglang is not installed: {INSTALL}")

from sglang.srt.entrypoints.openai.protocol import Tool  # noqa: E402
from sglang.srt.function_call.base_format_detector import BaseFormatDetector  # noqa: E402
from sglang.srt.function_call.core_types import StreamingParseResult, ToolCallItem  # noqa: E402
from sglang.srt.function_call.function_call_parser import FunctionCallParser  # noqa: E402
from sglang.srt.parser.reasoning_parser import BaseReasoningFormatDetector, ReasoningParser  # noqa: E402

import respc.sglang as rs  # noqa: E402

pytestmark = pytest.mark.sglang

HERE = Path(__file__).resolve().parent
FAMILIES = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted((HERE / "cases" / "families").glob("*.json"))}
PEER = SHARED / "corpus" / "peer_vectors.jsonl"
PEER_XFAIL = json.loads((HERE / "cases" / "peer_xfail.json").read_text(encoding="utf-8"))
PEER_PREFIX = {vid: prefix for data in FAMILIES.values() for vid, prefix in data.get("peer_prefix", {}).items()}
TEMPLATES = {p.stem for p in (HERE.parent / "templates").glob("*.json")}


def _vectors() -> list:
    """(family, id, prefix, text, tools) of every case and vector."""
    found = [pytest.param(family, case["prefix"], case["text"], case.get("tools"), id=f"{family}/{case['name']}")
             for family, data in FAMILIES.items() for case in data["cases"]]
    if CORPUS.is_file():
        for vector in load_jsonl(CORPUS):
            if vector["id"] not in FAMILIES.get(vector["family"], {}).get("corpus_xfail", {}):
                found.append(pytest.param(vector["family"], vector["prefix"], vector["text"], vector.get("tools"),
                                          id=vector["id"]))
    if PEER.is_file():
        for vector in load_jsonl(PEER):
            if vector["family"] in TEMPLATES and vector["id"] not in PEER_XFAIL:
                found.append(pytest.param(vector["family"], PEER_PREFIX.get(vector["id"], vector["prefix"]),
                                          vector["text"], vector.get("tools"), id=vector["id"]))
    return found


VECTORS = _vectors()


def _message(family: str, prefix: str, text: str, tools) -> dict:
    parser = importlib.import_module(f"respc.generated.{family}").ResponseParser(prefix, tools, errors="recover")
    parser.feed(text)
    return parser.finalize()[0]


def _want(message: dict) -> tuple:
    calls = [(c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls") or []]
    return message.get("reasoning_content") or "", message.get("content") or "", calls


def _parsed(parameters: str, like):
    return parameters if isinstance(like, str) else json.loads(parameters)


def _merged(items: list, message: dict) -> list:
    """Streamed ToolCallItems merged per call (``tool_index`` is the call's number)."""
    calls: dict[int, list] = {}
    for item in items:
        assert isinstance(item, ToolCallItem)
        entry = calls.setdefault(item.tool_index, [None, ""])
        if item.name is not None:
            assert entry[0] is None, f"call {item.tool_index} named twice"
            entry[0] = item.name
        entry[1] += item.parameters
    assert sorted(calls) == list(range(len(calls)))
    wanted = [c["function"]["arguments"] for c in message.get("tool_calls") or []]
    return [(name, _parsed(params, like)) for (name, params), like in
            zip((calls[n] for n in sorted(calls)), wanted + [{}] * len(calls))]


def _streamed_want(want: tuple, detector) -> tuple:
    """What a streaming function-call detector must give: respc's message, except the calls its
    stream declares diverging (``recover_arguments="stream"``, docs/openai.md): a call whose
    repaired arguments differ from its fragments has the fragments' arguments. A call sent and
    then found malformed (the stream keeps it, the message does not) occurs in no vector yet."""
    diagnostics = detector._stream.diagnostics if detector._stream is not None else []
    assert not [d for d in diagnostics if d.get("kind") != "streamed-arguments-differ"], diagnostics
    calls = list(want[2])
    for d in diagnostics:
        calls[d["index"]] = (calls[d["index"]][0], json.loads(d["sent"]))
    return want[0], want[1], calls


def _chained(family, prefix, chunks, tools):
    """SGLang's order: reasoning detector first, its normal_text into the function-call detector."""
    reasoning = rs.RespcReasoningDetector(family, prefix=prefix, tool_call_parser_active=True)
    detector = rs.RespcFunctionCallDetector(family)
    think, content, items = [], [], []
    for chunk in chunks + [None]:
        out = reasoning.parse_streaming_increment(chunk) if chunk is not None else reasoning.finish()
        think.append(out.reasoning_text)
        result = detector.parse_streaming_increment(out.normal_text, tools)
        assert isinstance(result, StreamingParseResult)
        content.append(result.normal_text)
        items.extend(result.calls)
    end = detector.finish(tools)
    content.append(end.normal_text)
    items.extend(end.calls)
    return "".join(think), "".join(content), items, detector


@pytest.mark.parametrize("family,prefix,text,tools", VECTORS)
def test_detectors_equal_message(family, prefix, text, tools):
    message = _message(family, prefix, text, tools)
    want = _want(message)
    sgl_tools = [Tool.model_validate(t) for t in tools or []]
    for how, chunks in chunkings(text, f"{family}/{text[:20]}").items():
        think, content, items, detector = _chained(family, prefix, chunks, sgl_tools)
        assert (think, content, _merged(items, message)) == _streamed_want(want, detector), how
    # one-shot
    split = rs.RespcReasoningDetector(family, prefix=prefix, tool_call_parser_active=True).detect_and_parse(text)
    result = rs.RespcFunctionCallDetector(family).detect_and_parse(split.normal_text, sgl_tools)
    indices = {t.function.name: n for n, t in enumerate(sgl_tools)}
    assert [c.tool_index for c in result.calls] == [indices.get(name, -1) for name, _ in want[2]]
    got = [(c.name, _parsed(c.parameters, like)) for c, (_, like) in zip(result.calls, want[2])]
    assert (split.reasoning_text, result.normal_text, got) == want
    assert len(result.calls) == len(want[2])


def _sglang_tools(tools, message) -> list:
    """The request's tools; without any, one untyped tool per called name (FunctionCallParser
    reads nothing when a request declares no tools)."""
    if tools:
        return tools
    names = dict.fromkeys(c["function"]["name"] for c in message.get("tool_calls") or []) or {"respc_none": None}
    return [{"type": "function", "function": {"name": name, "parameters": {"type": "object"}}} for name in names]


@pytest.mark.parametrize("family,prefix,text,tools", VECTORS)
def test_through_sglang_parsers(family, prefix, text, tools):
    name = rs.register(family)
    module = importlib.import_module(f"respc.generated.{family}")
    opener, _ = rs._reasoning_delimiters(module)
    force = bool(opener) and prefix.rstrip().endswith(opener.rstrip())
    sglang_prefix = rs.sglang_prefix(module, force)
    tools = _sglang_tools(tools, _message(family, sglang_prefix, text, tools))
    message = _message(family, sglang_prefix, text, tools)
    want = _want(message)
    sgl_tools = [Tool.model_validate(t) for t in tools]
    for how, chunks in chunkings(text, f"{family}/{text[:20]}").items():
        reasoning = ReasoningParser(name, stream_reasoning=True, force_reasoning=force, tool_call_parser_active=True)
        calls = FunctionCallParser(sgl_tools, name)
        assert isinstance(reasoning.detector, rs.RespcReasoningDetector)
        think, content, items = [], [], []
        for chunk in chunks + [None]:
            r, normal = reasoning.parse_stream_chunk(chunk) if chunk is not None else reasoning.parse_stream_end()
            think.append(r or "")
            answer, got = calls.parse_stream_chunk(normal or "")
            content.append(answer)
            items.extend(got)
        answer, got = calls.parse_stream_end()
        content.append(answer)
        items.extend(got)
        assert ("".join(think), "".join(content), _merged(items, message)) == _streamed_want(want, calls.detector), how
    r, normal = ReasoningParser(name, force_reasoning=force, tool_call_parser_active=True).parse_non_stream(text)
    answer, got = FunctionCallParser(sgl_tools, name).parse_non_stream(normal)
    assert (r or "", answer, [(c.name, _parsed(c.parameters, like)) for c, (_, like) in zip(got, want[2])]) == want
    assert len(got) == len(want[2])


def test_classes_are_sglangs_and_registered():
    name = rs.register("qwen3")
    assert name == "respc-qwen3"
    tool_class = FunctionCallParser.ToolCallParserEnum[name]
    assert issubclass(tool_class, BaseFormatDetector) and issubclass(tool_class, rs.RespcFunctionCallDetector)
    assert issubclass(ReasoningParser.DetectorMap[name], BaseReasoningFormatDetector)
    detector = tool_class()
    assert detector.supports_structural_tag() is False and detector.parses_required_natively() is True
    with pytest.raises(ValueError, match="respc grammar"):
        detector.structure_info()
    with pytest.raises(ValueError, match="pass name="):
        rs.register({"fields": {}})


def test_register_plugin_registers_the_catalogue():
    rs.register_plugin()
    assert {f"respc-{t}" for t in TEMPLATES} <= set(FunctionCallParser.ToolCallParserEnum)
    assert {f"respc-{t}" for t in TEMPLATES} <= set(ReasoningParser.DetectorMap)


def test_reasoning_without_tool_parser_gives_the_answer():
    """With no tool-call parser behind it, normal_text is the answer as the message holds it."""
    text = "a thought</think>\n\nThe answer.<|im_end|>"
    out = rs.RespcReasoningDetector("qwen3", force_reasoning=True).detect_and_parse(text)
    assert (out.reasoning_text, out.normal_text) == ("a thought", "The answer.")
    held = rs.RespcReasoningDetector("qwen3", force_reasoning=True, stream_reasoning=False)
    first = held.parse_streaming_increment("a thou")
    assert (first.reasoning_text, first.normal_text) == ("", "")
    rest = held.parse_streaming_increment("ght</think>\n\nThe")
    assert (rest.reasoning_text, rest.normal_text) == ("a thought", "The")


def test_has_tool_call_and_unknown_tools_kept():
    detector = rs.RespcFunctionCallDetector("qwen3")
    assert detector.has_tool_call('<tool_call>\n{"name": "x", "arguments": {}}\n</tool_call>')
    assert not detector.has_tool_call("plain text")
    result = detector.detect_and_parse('Hi<tool_call>\n{"name": "x", "arguments": {"a": 1}}\n</tool_call>', [])
    assert result.normal_text == "Hi"
    assert [(c.tool_index, c.name, c.parameters) for c in result.calls] == [(-1, "x", '{"a": 1}')]


def test_malformed_output_never_raises():
    detector = rs.RespcFunctionCallDetector("qwen3")
    got = [detector.parse_streaming_increment(c, []) for c in '<tool_call>\n{"name": "x", "argu']
    end = detector.finish([])
    assert all(isinstance(r, StreamingParseResult) for r in got + [end])
    assert "".join(r.normal_text for r in got + [end]) == ""  # respc's recover message has no content here
    assert _message("qwen3", "", '<tool_call>\n{"name": "x", "argu', None).get("content") in (None, "")


def test_sglang_loads_the_plugin_and_accepts_the_names(caplog):
    """SGLang's own plug-in loader (entry point group ``sglang.srt.plugins``, from pyproject.toml)
    registers the parsers, and its command line accepts them (no model is loaded)."""
    from importlib.metadata import entry_points

    from sglang.srt.plugins import load_plugins
    from sglang.srt.server_args import prepare_server_args

    assert [e.value for e in entry_points(group="sglang.srt.plugins") if e.name == "respc"] == [
        "respc.sglang:register_plugin"]
    load_plugins()
    args = prepare_server_args(["--model-path", "unused", "--reasoning-parser", "respc-gpt_oss",
                                "--tool-call-parser", "respc-gpt_oss"])
    assert (args.reasoning_parser, args.tool_call_parser) == ("respc-gpt_oss", "respc-gpt_oss")
    # and the hooks that hand the reasoning detector the rendered prompt are applied: the serving
    # ones exactly when SGLang's serving layer imports (the sglang-serving extra), else left out
    # without an ERROR from SGLang's registry
    from sglang.srt.plugins.hook_registry import HookRegistry

    serving = {rs._CONVERT, rs._RESPONSES_MAKE}
    try:
        importlib.import_module("sglang.srt.entrypoints.openai.serving_chat")
        importlib.import_module("sglang.srt.entrypoints.openai.serving_responses")
    except Exception:  # noqa: BLE001 - the minimal install: fastapi and the rest missing
        assert rs._REASONING_INIT in HookRegistry._patched
        assert not serving & (HookRegistry._patched | set(HookRegistry._hooks))
    else:
        assert serving | {rs._REASONING_INIT} <= HookRegistry._patched
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR and "hook" in r.getMessage()]


def test_reasoning_parser_hook_hands_the_prompt_to_the_detector():
    """After SGLang's ``ReasoningParser.__init__`` (hooked by the plug-in) a respc detector reads the
    request's rendered prompt (``_response_parser_prefix``, which the hook after
    ``_convert_to_internal_request`` fills): MiniMax-M2 with thinking closed in the prompt answers as
    content, though the family's default reads output as reasoning; functionary v3.2's prompt ends
    in '>>>', which the function-call detector behind it then sees."""
    from sglang.srt.entrypoints.openai.protocol import ChatCompletionRequest
    from sglang.srt.plugins import load_plugins

    load_plugins()
    for family, prompt, text, want in (
            ("minimax_m2", "]~b]ai\n<think>\n\n</think>\n\n", "The answer.", ("", "The answer.")),
            ("minimax_m2", "]~b]ai\n<think>\n", "Thinking.</think>The answer.", ("Thinking.", "The answer.")),
            ("functionary_v3_2", "<|start_header_id|>assistant<|end_header_id|>\n\n>>>", "all\nHello",
             ("", ">>>all\nHello"))):
        name = rs.register(family)
        request = ChatCompletionRequest(model="m", messages=[{"role": "user", "content": "hi"}])
        request._response_parser_prefix = prompt
        parser = ReasoningParser(name, True, False, request, tool_call_parser_active=family == "functionary_v3_2")
        assert parser.detector.prompt_known and parser.detector.prefix == prompt
        reasoning, normal = parser.parse_non_stream(text)
        assert (reasoning or "", normal) == want, family
    tools = [Tool.model_validate(t) for t in _sglang_tools(None, {})]
    answer, calls = FunctionCallParser(tools, name).parse_non_stream(">>>all\nHello")
    assert (answer, calls) == ("Hello", [])


def test_arguments_stream_as_written_and_a_cut_call_stays():
    """With ``recover_arguments = "stream"`` the function-call detector streams arguments as
    written: the first fragment comes before the call's end; a call cut off by the end of the
    output stays as it was sent, and the stream's diagnostics name it (respc's message has no call).
    By default ("hold", issue 25 item 5) the stream gives what the whole answer gives: no call."""
    text = 'Hi<tool_call>\n{"name": "x", "arguments": {"a": 1, "b": "cd'
    held = rs.RespcFunctionCallDetector("qwen3")
    got = [held.parse_streaming_increment(c, []) for c in text] + [held.finish([])]
    assert [item for r in got for item in r.calls] == []
    assert "".join(r.normal_text for r in got) == "Hi"
    detector = rs.RespcFunctionCallDetector("qwen3")
    detector.recover_arguments = "stream"
    got = [detector.parse_streaming_increment(c, []) for c in text]
    first = next(n for n, r in enumerate(got) if any(item.parameters for item in r.calls))
    assert first == text.index('{"a"')
    end = detector.finish([])
    items = [item for r in got + [end] for item in r.calls]
    assert [i.name for i in items if i.name] == ["x"]
    assert "".join(i.parameters for i in items) == '{"a": 1, "b": "cd'
    assert "".join(r.normal_text for r in got + [end]) == "Hi"
    assert [(d["kind"], d["cause"], d["index"]) for d in detector._stream.diagnostics] == [
        ("streamed-call-malformed", "truncated", 0)]
    assert _message("qwen3", "", text, None) == {"role": "assistant", "content": "Hi"}
