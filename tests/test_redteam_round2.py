"""Red-team regressions, round 2: attacks on the whole-text search paths (issue 33;
docs/security.md "Whole-text searches and prompt hooks"), the format
plans emitted into generated modules, the new catalogue families and the serving prompt hooks.
Each test runs the attack exactly as it was tried; a fixed one passes, one whose fix lies in code
being edited elsewhere is marked ``xfail(strict=True)`` with the defect named.
"""

from __future__ import annotations

import random

import importlib

import pytest
import regex

from respc.compiler.api import compile_template
from respc.runtime import whole
from respc.runtime.stream import lead_search
from support import best_time

_CALL = '<tool_call>{"name": "f", "arguments": {}}</tool_call>'


def _both(parser_class, prefix, text, errors):
    """(message or error, diagnostics) of the streaming path and of the whole-text path."""
    out = []
    for single in (False, True):
        parser = parser_class(prefix, errors=errors)
        try:
            if single:
                message = whole.finish(parser, text)
            else:
                parser.feed(text)
                message = parser.finalize()[0]
        except (ValueError, KeyError, TypeError) as exc:
            message = ("error", type(exc).__name__, str(exc))
        out.append((message, parser.diagnostics))
    return out


# --- lead_search: a long lead that starts inside the 4 kB window and ends past it ---------------

def test_lead_search_long_lead_straddling_the_window_end():
    """With leads ('<tool_call>', 'tool_') the first window (LEAD_WINDOW=4096) was searched for
    each lead ending by its end: '<tool_call>' at 4086 (ending at 4097) was not seen and the
    'tool_' inside it at 4087 was answered, not the leftmost match at 4086."""
    pattern = regex.compile(r"<tool_call>|tool_")
    leads = ("<tool_call>", "tool_")
    for s in range(4080, 4100):
        buf = "x" * s + "<tool_call>" + "y" * 5000
        assert lead_search(pattern, buf, 0, leads).span() == pattern.search(buf, 0).span(), s


def test_lead_search_after_a_miss_keeps_a_straddling_lead():
    """After a miss (_lead_search_on) a straddling '<tool_call>{' at 4087 was skipped for good
    (the next window started after a later 'tool_' miss): None where the engine finds a match."""
    pattern = regex.compile(r"<tool_call>\{|tool_\[")
    leads = ("<tool_call>", "tool_")
    buf = "<tool_call>x" + "x" * 4075 + "<tool_call>{" + "y" * 9000
    found = lead_search(pattern, buf, 0, leads)
    assert found is not None and found.span() == pattern.search(buf, 0).span() == (4087, 4099)


def test_lead_search_equals_engine_on_leads_at_window_edges():
    rng = random.Random(7)
    cases = [(r"<tool_call>|tool_", ("<tool_call>", "tool_")),
             (r"<tool_call>\{|tool_\[", ("<tool_call>", "tool_")),
             (r"abcdef!|cd\?|e", ("abcdef", "cd", "e")),
             (r"<\|python_start\|>|(?=\[\s*[A-Za-z_][\w.]*\()", ("<|python_start|>", "["))]
    pieces = ["<tool_call>", "tool_", "tool_call>", "<tool_call>{", "[f(", "abcdef", "cdef!", "cd?", "e"]
    for _ in range(300):
        source, leads = rng.choice(cases)
        pattern = regex.compile(source)
        parts, size, n = [], 0, rng.choice([8192, 20000])
        while size < n:
            part = rng.choice(pieces) if rng.random() < 0.02 else "q" * rng.randint(1, 300)
            parts.append(part)
            size += len(part)
        buf = "".join(parts)
        for _ in range(3):
            at = rng.choice([4096, 8192, 12288, 16384]) - rng.randint(0, 20)
            piece = rng.choice(pieces)
            buf = buf[:at] + piece + buf[at + len(piece):]
        pos = rng.choice([0, 1, rng.randint(0, 100)])
        got, want = lead_search(pattern, buf, pos, leads), pattern.search(buf, pos)
        assert (got and got.span()) == (want and want.span()), (source, pos)


def test_whole_text_equals_streaming_with_a_lead_inside_a_lead():
    """The template's opener '<tool_call>|tool_' has the lead 'tool_' inside '<tool_call>': with
    the call at 4086 the whole-text path (strict) lost the tool call (its text left in content)
    where streaming parsed it (D2)."""
    template = {"respc_version": 2, "defaults": {"role": "assistant"}, "start_anchor": "<|a|>",
                "fields": {"tool_calls": {"open_pattern": "<tool_call>|tool_", "close": "</tool_call>",
                                          "content": "json", "repeats": True,
                                          "transform": {"type": "function", "function": "{content}"}},
                           "content": {"repeats": True, "join": ""}}}
    parser_class = compile_template(template).ResponseParser
    for s in (4084, 4086, 4088, 4090, 8180):
        text = "x" * s + _CALL + "y" * 5000
        for errors in ("strict", "recover"):
            streamed, single = _both(parser_class, "<|a|>", text, errors)
            assert single == streamed, (s, errors)
            assert streamed[0]["tool_calls"][0]["function"]["name"] == "f"


# --- vLLM: the tool parser reads after the rendered prompt (functionary v3.2's '>>>') -----------

class _Record:
    """A stand-in for vLLM's pydantic protocol classes: keyword arguments as attributes."""

    def __init__(self, **fields):
        self.__dict__.update({"content": None, "reasoning": None, "tool_calls": []}, **fields)


class _Base:
    def __init__(self, tokenizer, *args, **kwargs):
        self.model_tokenizer = tokenizer
        self.tools = args[0] if args else kwargs.get("tools")

    def adjust_request(self, request):
        return request


class _Manager:
    @staticmethod
    def register_module(*args, **kwargs):
        return None


class _CharTokenizer:
    """Ids are code points."""

    def decode(self, ids, skip_special_tokens=True, clean_up_tokenization_spaces=False):
        return "".join(map(chr, ids))


@pytest.fixture
def vllm_stub(monkeypatch):
    """respc.vllm imported over stand-ins of the few vLLM names it uses (vLLM is not installed here);
    the real module is taken out of sys.modules again afterwards."""
    import sys
    import types

    protocol = types.ModuleType("vllm.entrypoints.generate.base.protocol")
    for name in ("DeltaFunctionCall", "DeltaMessage", "DeltaToolCall", "ExtractedToolCallInformation",
                 "FunctionCall", "ToolCall"):
        setattr(protocol, name, type(name, (_Record,), {}))
    reasoning = types.ModuleType("vllm.reasoning")
    reasoning.ReasoningParser, reasoning.ReasoningParserManager = _Base, _Manager
    tools = types.ModuleType("vllm.tool_parsers")
    tools.ToolParser, tools.ToolParserManager = _Base, _Manager
    for name, module in {"vllm": types.ModuleType("vllm"), "vllm.entrypoints": types.ModuleType("x"),
                         "vllm.entrypoints.generate": types.ModuleType("x"),
                         "vllm.entrypoints.generate.base": types.ModuleType("x"),
                         "vllm.entrypoints.generate.base.protocol": protocol, "vllm.reasoning": reasoning,
                         "vllm.tool_parsers": tools}.items():
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.delitem(sys.modules, "respc.vllm", raising=False)
    import respc

    had = getattr(respc, "vllm", None)
    module = importlib.import_module("respc.vllm")
    yield module
    sys.modules.pop("respc.vllm", None)
    if had is None:
        respc.__dict__.pop("vllm", None)
    else:
        respc.vllm = had


class _Request:
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    tool_choice = "auto"


def _served(rv, family, prompt, output):
    """(whole content, streamed content) of vLLM's composed parser for ``output`` after ``prompt``."""
    out = []
    for streamed in (False, True):
        class Delegating:  # vLLM's DelegatingParser keeps the reasoning parser, then builds the tool parser
            def __init__(self):
                self._reasoning_parser = rv.reasoning_parser_class(family)(_CharTokenizer())
                self._reasoning_parser.set_prompt_token_ids([ord(c) for c in prompt])
                self.tool = rv.tool_parser_class(family)(_CharTokenizer(), _Request.tools)

        tool = Delegating().tool
        assert tool._partner is not None
        if not streamed:
            out.append(tool.extract_tool_calls(output, _Request()).content)
            continue
        parts = []
        for ch in output:
            delta = tool.extract_tool_calls_streaming("", "", ch, [], [], [], _Request())
            parts.append(delta.content if delta is not None and delta.content else "")
        last = tool.finish_streaming()
        parts.append(last.content if last is not None and last.content else "")
        out.append("".join(parts))
    return out


@pytest.mark.parametrize("family, prompt", [
    ("hermes2pro", "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nSure, "),
    ("functionary_v3_2", "<|start_header_id|>assistant<|end_header_id|>\n\n>>>all\nSure, "),
])
def test_vllm_tool_parser_does_not_send_the_prompts_answer_text(vllm_stub, family, prompt):
    """A prefilled assistant message (vLLM's continue_final_message: the prompt ends inside the
    answer) was sent again as output: the tool parser read after the prompt and sent the prompt's
    answer text 'Sure, ' as content, whole and streamed ('Sure, ok' for the output 'ok')."""
    assert _served(vllm_stub, family, prompt, "ok") == ["ok", "ok"]


def test_vllm_tool_parser_prompt_opener_still_read(vllm_stub):
    """functionary v3.2's prompt ends in '>>>': the output 'all\\nok' is the answer 'ok'."""
    prompt = "<|start_header_id|>assistant<|end_header_id|>\n\n>>>"
    assert _served(vllm_stub, "functionary_v3_2", prompt, "all\nok") == ["ok", "ok"]


# --- SGLang: the reasoning detector reads after the rendered prompt (the plug-in's hooks) --------

class _SGLangResult:
    def __init__(self, normal_text="", reasoning_text="", calls=None):
        self.normal_text, self.reasoning_text, self.calls = normal_text, reasoning_text, calls or []


class _SGLangReasoningBase:
    def __init__(self, think_start_token, think_end_token, force_reasoning=False, stream_reasoning=True,
                 **kwargs):
        self.think_start_token, self.think_end_token = think_start_token, think_end_token
        self.stream_reasoning = stream_reasoning


@pytest.fixture
def sglang_stub(monkeypatch):
    """respc.sglang imported over stand-ins of the few SGLang names it uses (SGLang is not
    installed here); taken out of sys.modules again afterwards."""
    import sys
    import types

    base = types.ModuleType("sglang.srt.function_call.base_format_detector")
    base.BaseFormatDetector = type("BaseFormatDetector", (), {"__init__": lambda self, *a, **k: None})
    core = types.ModuleType("sglang.srt.function_call.core_types")
    core.StreamingParseResult, core.ToolCallItem = _SGLangResult, type("ToolCallItem", (_Record,), {})
    reasoning = types.ModuleType("sglang.srt.parser.reasoning_parser")
    reasoning.BaseReasoningFormatDetector, reasoning.StreamingParseResult = _SGLangReasoningBase, _SGLangResult
    for name in ("sglang", "sglang.srt", "sglang.srt.function_call", "sglang.srt.parser"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    for module in (base, core, reasoning):
        monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.delitem(sys.modules, "respc.sglang", raising=False)
    import respc

    had = getattr(respc, "sglang", None)
    module = importlib.import_module("respc.sglang")
    yield module
    sys.modules.pop("respc.sglang", None)
    if had is None:
        respc.__dict__.pop("sglang", None)
    else:
        respc.sglang = had


@pytest.mark.parametrize("tool_parser_active", [False, True])
def test_sglang_reasoning_detector_does_not_send_the_prompts_answer_text(sglang_stub, tool_parser_active):
    """A prefilled assistant message after a closed reasoning block: the detector given the rendered
    prompt (use_prompt, the plug-in's hook) sent the prompt's answer text 'Sure, ' again as normal
    text ('Sure, ok' for the output 'ok'), whole and streamed, when no tool parser read it."""
    prompt = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nSure, "
    detector = sglang_stub.RespcReasoningDetector("qwen3", tool_call_parser_active=tool_parser_active)
    detector.use_prompt(prompt)
    # with a tool parser the normal text is the raw output with the prompt's reasoning delimiters
    # first (the module docstring of respc.sglang), which the function-call detector reads
    want = "<think></think>ok" if tool_parser_active else "ok"
    whole_result = detector.detect_and_parse("ok")
    assert (whole_result.normal_text, whole_result.reasoning_text) == (want, "")
    streamed = [detector.parse_streaming_increment(ch) for ch in "ok"] + [detector.finish()]
    assert "".join(r.normal_text for r in streamed) == want


def test_vllm_extract_content_ids_is_linear(vllm_stub):
    """RespcReasoningParser.extract_content_ids (non-streaming, since bc68df8) parsed
    prompt + decode(ids[:k]) for k = 0, 1, ... until the phase ended: quadratic in the output (a
    2,000-token unfinished reasoning 0.13 s, 20,000 tokens about 13 s). Now one pass: twice the
    output takes at most 2.5x the time (best of seven)."""
    parser = vllm_stub.reasoning_parser_class("qwen3")(_CharTokenizer())
    parser.set_prompt_token_ids([ord(c) for c in "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n"])

    def ids(n):
        return [ord(c) for c in ("thinking words " * (n // 15 + 1))[:n]]

    small, large = ids(10000), ids(20000)
    assert parser.extract_content_ids(large) == []  # the reasoning never ends: no content ids
    ratio = (best_time(lambda: parser.extract_content_ids(large), 7)
             / best_time(lambda: parser.extract_content_ids(small), 7))
    assert ratio <= 2.5, f"2x the output took {ratio:.1f}x the time"


def test_vllm_extract_content_ids_keeps_the_last_anchor_rule(vllm_stub):
    """The one-pass search reads after the last start anchor of the prompt and the head, as
    _phase_over does: an anchor written in the output starts the reading again; the ids after the
    shortest head that ends the phase are returned (the same answers as the quadratic search)."""
    tok = _CharTokenizer()
    parser = vllm_stub.reasoning_parser_class("qwen3")(tok)
    parser.set_prompt_token_ids([ord(c) for c in "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n"])
    text = "a</think>bc"  # the closer ends the phase
    assert "".join(map(chr, parser.extract_content_ids([ord(c) for c in text]))) == "bc"
    # an anchor in the output: what follows it is read afresh (an open reasoning block, not closed)
    text = "a<|im_start|>assistant\n<think>x</think>yz"
    assert "".join(map(chr, parser.extract_content_ids([ord(c) for c in text]))) == "yz"
    text = "a<|im_start|>assistant\n<think>xyz"
    assert parser.extract_content_ids([ord(c) for c in text]) == []


def test_vllm_extract_content_ids_start_pinned_anchor_reads_the_prompt_only(vllm_stub):
    """trinity's start anchor ``\\A(?:(?!<think>\\n?\\Z).)*`` (the prompt up to a trailing opener)
    matched over the prompt and each head took the head too, so the phase never ended and no
    content id was ever returned; it is matched in the prompt only, as the parser reads its prompt."""
    parser = vllm_stub.reasoning_parser_class("trinity")(_CharTokenizer())
    parser.set_prompt_token_ids([ord(c) for c in "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n"])
    assert "".join(map(chr, parser.extract_content_ids([ord(c) for c in "r</think> done"]))) == " done"


# --- recover: a long pending match that dies in text collected while the parser waited ----------

def _recover_outcome(parser_class, prefix, text, cuts):
    parser = parser_class(prefix, None, errors="recover")
    at = 0
    for cut in cuts:
        parser.feed(text[at:cut])
        at = cut
    parser.feed(text[at:])
    return parser.finalize()[0], parser.diagnostics


def test_long_hold_collected_text_is_scanned_before_the_end():
    """inkling's tool opener ``(?:(?:<|message_model|>|^)[^<]*)?<|content_invoke_tool_json|>``
    holds answer text from offset 0 while no '<' came. Fed in two chunks (1,090 characters, then
    the rest) the parser waited for the held text to double (LONG_HOLD) and finalize reported all
    of it as a 'truncated-delimiter' (0 to the end), though the '<|m' after it had ended that
    match: the one-chunk feed and the whole-text path report nothing (D2, diagnostics)."""
    import json

    from support import REPO

    parser_class = importlib.import_module("respc.generated.inkling").ResponseParser
    prefix = json.loads((REPO / "tests/cases/families/inkling.json").read_text(encoding="utf-8"))["cases"][0]["prefix"]
    text = "w" * 1100 + "<|m|>" + "w" * 10
    single = whole.finish(parser_class(prefix, None, errors="recover"), text)
    one = _recover_outcome(parser_class, prefix, text, [])
    assert one == (single, [])
    assert _recover_outcome(parser_class, prefix, text, [1090]) == one


def test_vllm_tool_parser_prefill_then_a_call_sends_no_prompt_text(vllm_stub):
    """The prefill 'Sure, ' followed by a tool call only: the answer region (opened in the prompt)
    closed with the value 'Sure,', which was sent and returned as content."""
    prompt = "<|im_start|>assistant\nSure, "
    output = '<tool_call>{"name": "f", "arguments": {}}</tool_call>'
    whole_content, streamed = _served(vllm_stub, "hermes2pro", prompt, output)
    assert not whole_content and not streamed


def test_sglang_prefill_then_a_call_sends_no_prompt_text(sglang_stub):
    """The prefill 'Sure, ' followed by a tool call only: the answer region (opened in the prompt)
    closed with the value 'Sure,', which the reasoning detector sent as normal text."""
    prompt = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nSure, "
    output = '<tool_call>{"name": "f", "arguments": {}}</tool_call>'
    detector = sglang_stub.RespcReasoningDetector("qwen3")
    detector.use_prompt(prompt)
    assert detector.detect_and_parse(output).normal_text == ""
    streamed = [detector.parse_streaming_increment(ch) for ch in output] + [detector.finish()]
    assert "".join(r.normal_text for r in streamed) == ""


# --- glm5_3_flash: a tag call written after the short form's '>' -------------------------------

@pytest.mark.parametrize("text", ["<tool_call>f>x</tool_call>",
                                  "<tool_call>f>\n<arg_key>a</arg_key><arg_value>1</arg_value></tool_call>"])
def test_glm5_3_flash_call_that_is_neither_form_is_malformed_not_silent_text(text):
    """The short form's opener '<tool_call>NAME>' matched and its JSON body rejected the first
    character, so the whole call became answer text without a diagnostic in both modes (strict
    returned it as content), where glm4_5 reports the same call malformed."""
    from respc.runtime.errors import ContentParseError

    parser_class = importlib.import_module("respc.generated.glm5_3_flash").ResponseParser
    with pytest.raises(ContentParseError):
        whole.finish(parser_class("<|assistant|>", None, errors="strict"), text)
    parser = parser_class("<|assistant|>", None, errors="recover")
    message = whole.finish(parser, text)
    assert message.get("content") == text and "tool_calls" not in message
    assert [d["kind"] for d in parser.diagnostics] == ["malformed"]
