"""The SGLang plug-in (issue 9) behind SGLang's own OpenAI chat-completion serving layer.

``tests/test_sglang_plugin.py`` calls SGLang's ``ReasoningParser`` and ``FunctionCallParser``
directly. Here a request goes through ``sglang.srt.entrypoints.openai.serving_chat.OpenAIServingChat
.handle_request`` -- what a ``sglang serve --reasoning-parser respc-<t> --tool-call-parser respc-<t>``
process runs per HTTP request -- with SGLang's ``ServerArgs`` for those options published as the
process config (``sglang.srt.runtime_context.publish``):

- SGLang converts the request (``_convert_to_internal_request``: the chat template rendered with
  the tokenizer's ``apply_chat_template``, tokenized, sampling parameters, ``skip_special_tokens``);
- a stand-in tokenizer manager (the only thing mocked, with the template manager's few attributes)
  "generates" the case's output: it decodes the output's token ids as SGLang's detokenizer would,
  with the request's ``skip_special_tokens``, as the cumulative text of 1-4 more tokens per step
  (SGLang's default, non-incremental streaming output), or one final result;
- SGLang's ``_generate_chat_stream`` (reasoning parser, then tool-call parser, per delta, the SSE
  lines and the finish reason) and ``_build_chat_response`` build the answer.

The client is the official ``openai`` package, as in tests/test_vllm_serving.py. SGLang's plug-ins
are loaded as ``sglang serve`` loads them (``sglang.srt.plugins.load_plugins``: respc's entry point,
which registers the parsers and the hooks that hand the respc reasoning detector the rendered
prompt, ``respc.sglang.install_hooks``), so respc's message is read with the case's prompt, as in
tests/test_vllm_serving.py. The template manager's ``force_reasoning`` is still set when the prompt
ends with the reasoning opener; with the prompt known the detector does not use it.

Install and run: README, "SGLang plug-in" (``python -m pytest -q -m sglang tests/test_sglang_serving.py``).
"""

from __future__ import annotations

import asyncio
import importlib
import json

import pytest

pytestmark = [pytest.mark.sglang, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

INSTALL = ('python -m pip install -e ".[test,sglang]" && python -m pip install --no-deps sglang==0.5.23 '
           '&& python -m pip install -e ".[sglang-serving]"')
pytest.importorskip("sglang.srt.entrypoints.openai.serving_chat",
                    reason=f"SGLang's serving modules are not installed: {INSTALL}")

from sglang.srt.entrypoints.openai.protocol import ChatCompletionRequest  # noqa: E402
from sglang.srt.entrypoints.openai.serving_chat import OpenAIServingChat  # noqa: E402
from sglang.srt.runtime_context import publish  # noqa: E402
from sglang.srt.server_args import ServerArgs  # noqa: E402

import respc.sglang as rs  # noqa: E402
from serving_support import arguments_like, bpe_tokenizer_dir, case_params, tools_for  # noqa: E402
from serving_support import family as family_cases  # noqa: E402
from support_sglang import MODEL, _complete, _RawRequest, _request, _serve, _TemplateManager, _TokenizerManager  # noqa: E402


def _reasoning(message) -> str:
    return (message.model_extra or {}).get("reasoning_content") or ""


@pytest.mark.parametrize("family,case", case_params())
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_served_with_tools(family, case, stream, tmp_path_factory):
    """tool_choice="auto" with tools: what the client accumulates equals respc's message."""
    root = str(tmp_path_factory.getbasetemp() / "sglang-tokenizers")
    chat, manager, prefix = _serve(family, case, root)
    module = importlib.import_module(f"respc.generated.{family}")
    tools = tools_for(case, family, prefix)
    message = module.parse_response(case["text"], prefix=prefix, tools=tools, errors="recover")
    got, finish = asyncio.run(_complete(chat, _request(case["prefix"], tools, stream=stream)))

    (sent,) = manager.requests
    assert manager.tokenizer.decode(sent.input_ids, skip_special_tokens=False) == case["prefix"]
    assert sent.sampling_params["skip_special_tokens"] is False  # SGLang's rule with tools
    assert _reasoning(got) == (message.get("reasoning_content") or "")
    assert (got.content or "") == (message.get("content") or "")
    expected = [(c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls") or []]
    calls = [(c.function.name, arguments_like(c.function.arguments, a))
             for c, (_, a) in zip(got.tool_calls or [], expected)]
    assert calls == expected and len(got.tool_calls or []) == len(expected)
    ids = [c.id for c in got.tool_calls or []]
    assert all(ids) and len(set(ids)) == len(ids)
    assert finish == ("tool_calls" if expected else "stop")


@pytest.mark.parametrize("family,case", case_params())
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("tools", ["tool_choice_none", "no_tools"])
def test_served_without_tool_parsing(family, case, stream, tools, tmp_path_factory):
    """tool_choice="none", or no tools (with ``skip_special_tokens: false``, as docs/serving.md
    says to send): no tool calls, finish_reason "stop", and reasoning and content as respc's
    message has them (the reasoning detector gives the answer as the message stores it when no
    tool-call parser reads its output)."""
    root = str(tmp_path_factory.getbasetemp() / "sglang-tokenizers")
    chat, manager, prefix = _serve(family, case, root)
    module = importlib.import_module(f"respc.generated.{family}")
    declared = tools_for(case, family, prefix)
    message = module.parse_response(case["text"], prefix=prefix, tools=declared, errors="recover")
    request = _request(case["prefix"], declared if tools == "tool_choice_none" else None, stream=stream,
                       tool_choice="none", skip_special_tokens=False)
    got, finish = asyncio.run(_complete(chat, request))

    assert not got.tool_calls and finish == "stop"
    assert _reasoning(got) == (message.get("reasoning_content") or "")
    assert (got.content or "") == (message.get("content") or "")


def test_prompt_state_per_family():
    """Whether the generation prompt opens the reasoning, per catalogue family with a model chat
    template in ../shared/corpus/chat_templates: rendered with a user message and the template's
    default options, read by respc. SGLang's own computation -- ``detect_reasoning_pattern`` (what
    ``TemplateManager`` stores as ``force_reasoning``), then ``OpenAIServingChat._get_reasoning_from_request``
    for a request without options -- gives the ``force_reasoning`` the detector receives; the respc
    reasoning detector built with it must read output that starts inside the reasoning as reasoning
    exactly when the prompt opened it (issue 25 item 3: DeepSeek-R1 gave "This is a reasoning
    sectionThis is the rest" as content)."""
    from types import SimpleNamespace

    from sglang.srt.parser.template_detection import detect_reasoning_pattern
    from transformers.utils.chat_template_utils import render_jinja_template

    from support import SHARED

    folder = SHARED / "corpus" / "chat_templates"
    if not folder.is_dir():
        pytest.skip("../shared/corpus/chat_templates is absent")
    checked = []
    for path in sorted(folder.glob("*.jinja")):
        family = path.stem
        try:
            module = importlib.import_module(f"respc.generated.{family}")
        except ModuleNotFoundError:
            continue
        if not any(region.slot == "reasoning_content" for region in module.ResponseParser.REGIONS):
            continue
        source = path.read_text(encoding="utf-8")
        try:
            rendered, _ = render_jinja_template(conversations=[[{"role": "user", "content": "hi"}]],
                                                chat_template=source, add_generation_prompt=True,
                                                bos_token="<s>", eos_token="</s>")
        except Exception:  # noqa: BLE001 - a template that needs tools or functions to render
            continue
        opens = "x" in (module.parse_response("x", prefix=rendered[0], errors="recover").get("reasoning_content") or "")
        always, config = detect_reasoning_pattern(source)
        serving = SimpleNamespace(reasoning_parser=f"respc-{family}", _reasoning_detector=None,
                                  template_manager=SimpleNamespace(force_reasoning=always, reasoning_config=config))
        request = ChatCompletionRequest(model="m", messages=[{"role": "user", "content": "hi"}])
        force = always or OpenAIServingChat._get_reasoning_from_request(serving, request)
        opener, closer = rs._reasoning_delimiters(module)
        if not opener or not closer:
            continue  # no literal pair to write (gpt-oss's channels)
        # what the model writes after that prompt: the opener only where the prompt did not write it
        output = ("" if opens else opener) + "This is a reasoning section" + closer + "This is the rest"
        out = rs.RespcReasoningDetector(family, force_reasoning=force).detect_and_parse(output)
        got = (out.reasoning_text, out.normal_text)
        assert got == ("This is a reasoning section", "This is the rest"), (family, force, opens, got)
        checked.append((family, force, opens))
    assert {f for f, force, opens in checked if opens and not force} == set(rs.PROMPT_OPENS_REASONING), checked


# --- /v1/responses: the rendered prompt through the plug-in's hook on _make_request ---------------

def _respond(family: str, case: dict, tmp_root: str, tools: list, stream: bool) -> tuple[dict, str]:
    """SGLang's ``OpenAIServingResponses.create_responses`` for the case (``/v1/responses``, built
    as ``sglang serve`` builds it beside the chat serving object): the final response as a dict, and
    the prompt the request kept for the respc detector."""
    from types import SimpleNamespace

    from sglang.srt.entrypoints.openai.protocol import ResponsesRequest
    from sglang.srt.entrypoints.openai.serving_responses import OpenAIServingResponses

    chat, manager, _ = _serve(family, case, tmp_root)
    responses = OpenAIServingResponses(manager, chat.template_manager)
    flat = [{"type": "function", **t["function"]} for t in tools]
    request = ResponsesRequest(model=MODEL, input="hi", stream=stream, tools=flat, tool_choice="auto",
                               chat_template_kwargs={"respc_prompt": case["prefix"]})
    raw = _RawRequest()
    raw.state = SimpleNamespace()

    async def run() -> dict:
        result = await responses.create_responses(request, raw)
        if not stream:
            assert not hasattr(result, "body") or b'"error"' not in result.body, result.body
            return json.loads(result.model_dump_json())
        final = None
        async for event in getattr(result, "body_iterator", result):
            event = event.decode() if isinstance(event, bytes) else event
            data = json.loads(event.split("data: ", 1)[1])
            assert data.get("type") != "error", data
            if data.get("type") == "response.completed":
                final = data["response"]
        assert final is not None
        return final

    return asyncio.run(run()), request._response_parser_prefix


def _responses_message(response: dict) -> dict:
    """(reasoning, output text, [(name, arguments)]) of a Responses API response."""
    reasoning = "".join(part.get("text", "") for item in response["output"] if item["type"] == "reasoning"
                        for part in item.get("content") or [])
    text = "".join(part.get("text", "") for item in response["output"] if item["type"] == "message"
                   for part in item["content"] if part["type"] == "output_text")
    calls = [(item["name"], item["arguments"]) for item in response["output"] if item["type"] == "function_call"]
    return {"reasoning": reasoning, "text": text, "calls": calls}


@pytest.mark.parametrize("family,case", case_params())
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_responses_api_reads_the_rendered_prompt(family, case, stream, tmp_path_factory):
    """``/v1/responses`` through SGLang's ``OpenAIServingResponses``: the plug-in's hook around
    ``_make_request`` (an ``async def``) keeps the rendered prompt on the request, so the respc
    reasoning detector reads after it, as on the chat path: reasoning, output text and calls equal
    respc's message for the case's prompt. Before, the detector fell back to force_reasoning and
    PROMPT_OPENS_REASONING and misread a prompt that closed the reasoning (DeepSeek-R1 and MiniMax-M2
    after tool outputs or with thinking off)."""
    root = str(tmp_path_factory.getbasetemp() / "sglang-tokenizers")
    tools = tools_for(case, family, case["prefix"])
    module = importlib.import_module(f"respc.generated.{family}")
    message = module.parse_response(case["text"], prefix=case["prefix"], tools=tools, errors="recover")
    response, kept = _respond(family, case, root, tools, stream)
    assert response["status"] == "completed", response
    assert kept == case["prefix"]
    got = _responses_message(response)
    assert got["reasoning"] == (message.get("reasoning_content") or "")
    assert got["text"] == (message.get("content") or "")
    expected = [(c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls") or []]
    assert [(name, arguments_like(arguments, a))
            for (name, arguments), (_, a) in zip(got["calls"], expected)] == expected
    assert len(got["calls"]) == len(expected)


# --- a respc reasoning detector beside SGLang's own function-call detector (issue 25, item 5's leftover) ---

_QWEN3_PROMPT = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
_QWEN3_CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
_FOREIGN_TEXTS = {"call": "<think>I need the forecast." + _QWEN3_CALL,
                  "call-then-text": "<think>I need the forecast." + _QWEN3_CALL + "\nand more",
                  "two-calls": "<think>I need " + _QWEN3_CALL + "\n" + _QWEN3_CALL}


@pytest.mark.parametrize("text", list(_FOREIGN_TEXTS.values()), ids=list(_FOREIGN_TEXTS))
@pytest.mark.parametrize("tool_choice", ["auto", "none"])
def test_foreign_function_call_detector(text, tool_choice, tmp_path_factory):
    """``--reasoning-parser respc-qwen3 --tool-call-parser qwen`` (SGLang's own detector): calls
    that end an unclosed reasoning block. The respc reasoning detector handed SGLang's detector the
    raw text with the reasoning's delimiters kept (what respc's own function-call detector reads),
    and the ``<think>`` reached the client as content, streamed and whole. Now SGLang's detector
    gets the text without reasoning markup: streamed and whole give the same reasoning and content,
    and whole the calls respc reads. (Streamed, SGLang's own detector sends only the first call of
    a chunk, without its arguments: see the test below.)"""
    root = str(tmp_path_factory.getbasetemp() / "sglang-tokenizers")
    name = rs.register("qwen3")
    tokenizer_dir = bpe_tokenizer_dir("qwen3", root)
    args = ServerArgs(model_path=tokenizer_dir, device="cpu", tool_call_parser="qwen", reasoning_parser=name)
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}}}}]
    answers = []
    for stream in (False, True):
        publish(args, role="tokenizer")
        manager = _TokenizerManager(args, tokenizer_dir, text, "foreign")
        chat = OpenAIServingChat(manager, _TemplateManager(False))
        got, finish = asyncio.run(_complete(chat, _request(_QWEN3_PROMPT, tools, stream=stream,
                                                           tool_choice=tool_choice, skip_special_tokens=False)))
        answers.append((_reasoning(got), got.content or None, [c.function.name for c in got.tool_calls or []],
                        finish, [c.function.arguments for c in got.tool_calls or []]))
    (whole_answer, streamed) = answers
    # reasoning, content and finish reason alike; the streamed calls are the first of the whole
    # answer's (SGLang's detector streams one call of a chunk, without arguments: test below)
    assert (streamed[0], streamed[1], streamed[3]) == (whole_answer[0], whole_answer[1], whole_answer[3])
    _, content, names, finish, arguments = whole_answer
    assert streamed[2] == names[:len(streamed[2])] and bool(streamed[2]) == bool(names)
    assert "<think>" not in (content or "") and "</think>" not in (content or "")
    message = importlib.import_module("respc.generated.qwen3").parse_response(
        text, prefix=_QWEN3_PROMPT, tools=tools, errors="recover")
    assert whole_answer[0] == message["reasoning_content"]
    if tool_choice == "auto":  # the calls respc reads (answer text after a call: SGLang's detector's rule)
        assert [(n, json.loads(a)) for n, a in zip(names, arguments)] == [
            (c["function"]["name"], c["function"]["arguments"]) for c in message["tool_calls"]]
    else:
        assert not names and finish == "stop"


@pytest.mark.xfail(strict=True, reason="SGLang 0.5.23's own detector: a whole call in one streamed chunk "
                                       "goes out without its arguments")
def test_sglang_own_detector_streams_a_call_given_whole():
    """What the streamed half of the test above meets, without respc: SGLang's ``qwen`` detector fed
    one complete call in one chunk (and the end of the stream) sends the name with empty arguments
    and records nothing for its end-of-stream check. The respc reasoning detector can release a
    call that ends an unclosed reasoning block only at the end of the output."""
    from sglang.srt.entrypoints.openai.protocol import Tool
    from sglang.srt.function_call.function_call_parser import FunctionCallParser

    tools = [Tool(type="function", function={"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}}})]
    parser = FunctionCallParser(tools, "qwen")
    _, calls = parser.parse_stream_chunk(_QWEN3_CALL)
    _, end = parser.parse_stream_end()
    assert "".join(c.parameters for c in calls + end) == '{"city": "Paris"}'


#: hermes2pro outputs whose JSON escapes give surrogate code points in an argument value (red team s12b)
SURROGATE_TEXTS = ['<tool_call>\n{"name": "get_weather", "arguments": {"city": "\\ud800"}}\n</tool_call>',
                   '<tool_call>\n{"name": "get_weather", "arguments": {"city": "x\\udc00\\ud800y"}}\n</tool_call>']


@pytest.mark.parametrize("text", SURROGATE_TEXTS, ids=["lone", "reversed-pair"])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_served_arguments_with_a_surrogate_escape(text, stream, tmp_path_factory):
    """A JSON body whose value is the escape ``"\\ud800"``: the detector's ``parameters`` (the
    arguments re-dumped with ``json.dumps(..., ensure_ascii=False)``) held a raw surrogate, and
    SGLang's ``model_dump_json`` of the response or chunk raised. Now the arguments write it as its
    JSON escape: the response serializes and its arguments read back as the message's."""
    family = "hermes2pro"
    case = dict(family_cases(family)["cases"][0], text=text, name="surrogate")
    root = str(tmp_path_factory.getbasetemp() / "sglang-tokenizers")
    chat, _, prefix = _serve(family, case, root)
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    module = importlib.import_module(f"respc.generated.{family}")
    message = module.parse_response(text, prefix=prefix, tools=tools, errors="recover")
    got, finish = asyncio.run(_complete(chat, _request(case["prefix"], tools, stream=stream)))
    (call,) = got.tool_calls
    got.model_dump_json()
    want = message["tool_calls"][0]["function"]["arguments"]["city"]
    assert json.loads(call.function.arguments)["city"].encode("utf-16-le", "surrogatepass") == want.encode(
        "utf-16-le", "surrogatepass")
    assert call.function.arguments.isascii() and finish == "tool_calls"
