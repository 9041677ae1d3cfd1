"""The vLLM plug-in (issue 9) behind vLLM's own OpenAI chat-completion serving layer.

``tests/test_vllm_plugin.py`` calls vLLM's ``DelegatingParser`` directly. Here a request goes through
``vllm.entrypoints.openai.chat_completion.serving.OpenAIServingChat.create_chat_completion`` -- the
code a ``vllm serve`` process runs per HTTP request -- with the server options ``vllm serve
--enable-auto-tool-choice --tool-call-parser respc-<t> --reasoning-parser respc-<t>`` sets:

- vLLM's ``OnlineRenderer`` and ``HfRenderer`` render the prompt with a chat template and tokenize it
  (``adjust_request`` runs there, so ``skip_special_tokens`` is whatever the plug-in left it);
- a stand-in engine client (the only thing mocked, besides the model config) detokenizes the case's
  output text as the engine's output processor would, honouring the request's
  ``skip_special_tokens``: in ``RequestOutput`` deltas of 1-4 tokens when streaming, one final
  ``RequestOutput`` otherwise;
- vLLM's ``chat_completion_stream_generator`` (``ChatStreamProcessor``, ``parse_delta`` per delta)
  builds the server-sent events, and ``chat_completion_full_generator`` (``parse``,
  ``assemble_chat_message_fields``) the whole response.

The client side is the official ``openai`` package: every ``data:`` line is validated as a
``ChatCompletionChunk`` and accumulated by ``openai.lib.streaming.chat.ChatCompletionStreamState``;
the whole response is validated as a ``ChatCompletion``. Reasoning, content, tool names, parsed
arguments, ids and ``finish_reason`` must equal respc's own message for the same prompt and output.

Tokenizer: no model tokenizer is available offline, so each family gets a real byte-level BPE
tokenizer trained (``tokenizers``) on its cases' prompts and outputs, saved to disk and loaded
back with vLLM's own ``vllm.tokenizers.get_tokenizer``. Delimiters spelled like special tokens
(``<|...|>``, ``<｜...｜>``, ``[TOOL_CALLS]``) are its special tokens, as in the models' tokenizers; a
delimiter therefore is one token and vanishes from the output unless the plug-in's
``adjust_request`` asks for ``skip_special_tokens=False``. The chat template is ``{{ respc_prompt
}}``: the request passes the case's rendered prompt in ``chat_template_kwargs``, so vLLM renders
exactly the prompt the case was recorded with (a model's own template would need its tokenizer).

Install and run: README, "vLLM plug-in" (``python -m pytest -q -m vllm tests/test_vllm_serving.py``).
"""

from __future__ import annotations

import asyncio
import importlib
import json

import pytest

pytestmark = [pytest.mark.vllm, pytest.mark.filterwarnings("ignore:max_tokens is deprecated:DeprecationWarning")]

INSTALL = 'python -m pip install --no-deps vllm==0.33.0 && python -m pip install -e ".[test,vllm]"'
pytest.importorskip("vllm.entrypoints.openai.chat_completion.serving",
                    reason=f"vLLM's serving modules are not installed: {INSTALL}")

from vllm.entrypoints.openai.chat_completion.serving import OpenAIServingChat  # noqa: E402
from vllm.entrypoints.openai.models.serving import BaseModelPath, OpenAIServingModels  # noqa: E402
from vllm.renderers.hf import HfRenderer  # noqa: E402
from vllm.renderers.online_renderer import OnlineRenderer  # noqa: E402
from vllm.tokenizers import get_tokenizer  # noqa: E402

import respc.vllm as rv  # noqa: E402
from serving_support import CHAT_TEMPLATE, arguments_like, bpe_tokenizer_dir, case_params, tools_for  # noqa: E402
from serving_support import family as family_cases  # noqa: E402
from serving_support import SPLIT_LIMITS, SPLIT_LIMITS_END  # noqa: E402
from support_vllm import MODEL, _complete, _Engine, _ModelConfig, _request, _VllmConfig, _serving  # noqa: E402


def _reasoning_after_content(family, prefix, text):
    """True when a reasoning region opens after another field's or a first reasoning block: without
    tool parsing vLLM hands the text after the first block on as content, that block included."""
    module = importlib.import_module(f"respc.generated.{family}")
    parser = module.ResponseParser(prefix, errors="recover")
    events = parser.feed(text) + parser.finalize()[1]  # the prompt's own blocks do not count
    other = False
    for event in events:
        if rv._neutral(event):
            continue
        if event["field"] != "reasoning_content" or event["type"] == "region_close":
            other = True
        elif event["type"] == "region_open" and other:
            return True
    return False


def _cases() -> list:
    """serving_support.case_params, less the cases vLLM splits at a known limit (tests/test_vllm_plugin.py)."""
    return case_params(skip=set(SPLIT_LIMITS) | set(SPLIT_LIMITS_END))


def _reasoning(message) -> str | None:
    return (message.model_extra or {}).get("reasoning") or None


@pytest.mark.parametrize("family,case", _cases())
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("specials", ["listed", "unlisted"])
def test_served_with_tools(family, case, stream, specials, tmp_path_factory):
    """tool_choice="auto" with tools: what the client accumulates equals respc's message. The
    tokenizer's delimiters are special tokens listed in ``all_special_tokens``, or flagged special in
    tokenizer.json only (Llama 3's way): vLLM's detokenizer drops both kinds unless the plug-in
    turned ``skip_special_tokens`` off (issue 25 item 1)."""
    root = str(tmp_path_factory.getbasetemp() / "vllm-tokenizers")
    tools = tools_for(case, family)
    module = importlib.import_module(f"respc.generated.{family}")
    message = module.parse_response(case["text"], prefix=case["prefix"], tools=tools, errors="recover")
    chat, engine = _serving(family, bpe_tokenizer_dir(family, root, specials == "listed"), case["text"],
                            case["name"])
    got, finish, usage, lines = asyncio.run(_complete(chat, _request(case["prefix"], tools, stream=stream)))

    # vLLM rendered the case's prompt, and passed the plug-in's prompt-side decisions to the engine
    (call,) = engine.calls
    tok = chat.renderer.tokenizer
    assert tok.decode(call["prompt"]["prompt_token_ids"], skip_special_tokens=False) == case["prefix"]
    if message.get("reasoning_content"):
        assert call["kwargs"]["reasoning_ended"] is False  # the output reasons: the prompt did not end it
    ids = tok.encode(case["text"], add_special_tokens=False) + [tok.eos_token_id]  # and the stop token
    assert usage.completion_tokens == len(ids)
    # usage.completion_tokens_details.reasoning_tokens: the plug-in's count_reasoning_tokens
    details = usage.completion_tokens_details
    reasoning_tokens = details.reasoning_tokens if details is not None else 0
    if message.get("reasoning_content"):
        assert 0 < reasoning_tokens < len(ids) or (reasoning_tokens == len(ids) and not message.get("content")
                                                    and not message.get("tool_calls"))
    else:  # none, or only whitespace between the reasoning's delimiters (counted as vLLM's own counters do)
        assert reasoning_tokens <= sum(1 for i in ids if not tok.decode([i], skip_special_tokens=False).strip())

    assert _reasoning(got) == (message.get("reasoning_content") or None)
    assert (got.content or None) == (message.get("content") or None)
    expected = [(c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls") or []]
    calls = [(c.function.name, arguments_like(c.function.arguments, a))
             for c, (_, a) in zip(got.tool_calls or [], expected)]
    assert calls == expected and len(got.tool_calls or []) == len(expected)
    assert [c.id for c in got.tool_calls or []] == [f"call_{n}" for n in range(len(expected))]
    assert finish == ("tool_calls" if expected else "stop")


@pytest.mark.parametrize("family,case", _cases())
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("tools", ["tool_choice_none", "no_tools"])
def test_served_without_tool_parsing(family, case, stream, tools, tmp_path_factory):
    """tool_choice="none", or no tools: no tool calls, finish_reason "stop", the reasoning as
    respc reads it, and the rest of the output as content, as written: its tail, which respc reads
    (after the prompt when it is the whole output, else with prefix "", as the tool parser would) as
    the message's content and calls."""
    root = str(tmp_path_factory.getbasetemp() / "vllm-tokenizers")
    declared = tools_for(case, family)
    module = importlib.import_module(f"respc.generated.{family}")
    message = module.parse_response(case["text"], prefix=case["prefix"], tools=declared, errors="recover")
    chat, engine = _serving(family, bpe_tokenizer_dir(family, root), case["text"], case["name"])
    request = (_request(case["prefix"], declared, stream=stream, tool_choice="none") if tools == "tool_choice_none"
               else _request(case["prefix"], None, stream=stream))
    got, finish, _, _ = asyncio.run(_complete(chat, request))

    assert not got.tool_calls and finish == "stop"
    # without tool parsing vLLM hands the text after the first reasoning on as content, a later
    # reasoning block included
    if not _reasoning_after_content(family, case["prefix"], case["text"]):
        assert _reasoning(got) == (message.get("reasoning_content") or None)
    content = got.content or ""
    assert case["text"].endswith(content)
    # read as the tool parser would: after the prompt when it is the whole output (functionary
    # v3.2's prompt ends in '>>>'), else after the reasoning (prefix "")
    rest = module.parse_response(content, prefix=case["prefix"] if content == case["text"] else "",
                                 tools=declared, errors="recover")
    assert (rest.get("content") or None) == (message.get("content") or None)
    assert [c["function"] for c in rest.get("tool_calls") or []] == [
        c["function"] for c in message.get("tool_calls") or []]


# --- the Responses API (/v1/responses), issue 25 item 2 -----------------------------------------------

#: families whose call name comes after the call's opener (the adapter knows a call before its name)
RESPONSES_FAMILIES = ["hermes2pro", "llama3_json", "xlam", "qwen3"]


def _responses(family: str, tokenizer_dir: str, text: str, seed: str):
    """vLLM's Responses serving object (``/v1/responses``) as ``vllm serve`` builds it with the respc
    parsers of ``family``, and the stand-in engine."""
    from vllm.entrypoints.openai.responses.serving import OpenAIServingResponses

    chat, engine = _serving(family, tokenizer_dir, text, seed)
    options = dict(enable_auto_tools=True, tool_parser=f"respc-{family}", reasoning_parser=f"respc-{family}")
    responses = OpenAIServingResponses(engine, chat.models, chat.online_renderer, request_logger=None,
                                       chat_template=CHAT_TEMPLATE, chat_template_content_format="string", **options)
    return responses, engine


async def _respond(responses, request):
    """The final ``Response`` as the ``openai`` client reads it (validated), and the stream's event
    types (None when not streamed)."""
    from openai.types.responses import Response, ResponseStreamEvent
    from pydantic import TypeAdapter

    result = await responses.create_responses(request)
    if not request.stream:
        assert not hasattr(result, "error"), result
        return Response.model_validate_json(result.model_dump_json()), None
    adapter, kinds, final = TypeAdapter(ResponseStreamEvent), [], None
    async for event in result:
        data = event.model_dump_json() if hasattr(event, "model_dump_json") else str(event)
        parsed = adapter.validate_json(data)
        kinds.append(parsed.type)
        assert parsed.type != "error", data
        if parsed.type == "response.completed":
            final = parsed.response
    assert final is not None, kinds
    return final, kinds


def _responses_cases() -> list:
    params = []
    for family in RESPONSES_FAMILIES:
        for case in family_cases(family)["cases"]:
            params.append(pytest.param(family, case, id=f"{family}-{case['name']}"))
    return params


@pytest.mark.parametrize("family,case", _responses_cases())
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_responses_api(family, case, stream, tmp_path_factory):
    """/v1/responses through vLLM's ``OpenAIServingResponses`` (streamed and whole): the response
    completes, and its function calls (names, parsed arguments) and output text equal respc's
    message. Streamed, the plug-in sent a call's first delta with an id and an empty ``function``
    before the name was known, and vLLM's function_call item failed validation on ``name``."""
    from vllm.entrypoints.openai.responses.protocol import ResponsesRequest

    root = str(tmp_path_factory.getbasetemp() / "vllm-tokenizers")
    tools = tools_for(case, family)
    module = importlib.import_module(f"respc.generated.{family}")
    message = module.parse_response(case["text"], prefix=case["prefix"], tools=tools, errors="recover")
    responses, _ = _responses(family, bpe_tokenizer_dir(family, root), case["text"], case["name"])
    flat = [{"type": "function", **t["function"]} for t in tools]
    request = ResponsesRequest(model=MODEL, input="hi", stream=stream, tools=flat, tool_choice="auto",
                               chat_template_kwargs={"respc_prompt": case["prefix"]})
    response, _ = asyncio.run(_respond(responses, request))
    assert response.status == "completed", response
    calls = [item for item in response.output if item.type == "function_call"]
    expected = [(c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls") or []]
    assert [(c.name, arguments_like(c.arguments, a)) for c, (_, a) in zip(calls, expected)] == expected
    assert len(calls) == len(expected)
    text = "".join(part.text for item in response.output if item.type == "message"
                   for part in item.content if part.type == "output_text")
    assert (text or None) == (message.get("content") or None)


# --- no tool parser at all (vllm serve without --enable-auto-tool-choice) --------------------------

#: families whose cases write a call that ends an unclosed reasoning block (only the end of the
#: output decides it), served here besides FAMILIES
UNCLOSED_CALL_FAMILIES = ["qwen3_5", "deepseek_v4"]


def _serving_without_tool_parser(family: str, tokenizer_dir: str, text: str, seed: str) -> OpenAIServingChat:
    """vLLM's chat serving object as ``vllm serve --reasoning-parser respc-<family>`` builds it: no
    ``--enable-auto-tool-choice``, so vLLM composes no tool parser."""
    rv.register(family)
    model_config = _ModelConfig(tokenizer=tokenizer_dir)
    renderer = HfRenderer(_VllmConfig(model_config), get_tokenizer(tokenizer_dir))
    engine = _Engine(model_config, renderer, text, seed)
    options = dict(reasoning_parser=f"respc-{family}")
    online = OnlineRenderer(model_config, renderer, request_logger=None, chat_template=CHAT_TEMPLATE,
                            chat_template_content_format="string", **options)
    models_ = OpenAIServingModels(engine, [BaseModelPath(name=MODEL, model_path=MODEL)])
    return OpenAIServingChat(engine, models_, "assistant", online_renderer=online, request_logger=None,
                             chat_template=CHAT_TEMPLATE, chat_template_content_format="string", **options)


def _unclosed_call_cases() -> list:
    params = _cases()
    for family in UNCLOSED_CALL_FAMILIES:
        for case in family_cases(family)["cases"]:
            params.append(pytest.param(family, case, id=f"{family}-{case['name']}"))
    return params


@pytest.mark.parametrize("family,case", _unclosed_call_cases())
def test_served_without_a_tool_parser_streamed_equals_whole(family, case, tmp_path_factory):
    """No tool parser at all (``--reasoning-parser`` only), a request with tools and
    ``tool_choice="none"``: streamed equals whole, and no answer text is lost. A call written
    inside unclosed reasoning (qwen3_5 ``<think>I need the forecast.<tool_call>...``) came out of
    the reasoning parser's end of stream as a tool call, which vLLM's chat layer drops without a
    tool parser: the streamed content was empty while the whole answer gave the call's text."""
    root = str(tmp_path_factory.getbasetemp() / "vllm-tokenizers")
    declared = tools_for(case, family)
    module = importlib.import_module(f"respc.generated.{family}")
    message = module.parse_response(case["text"], prefix=case["prefix"], tools=declared, errors="recover")
    tokenizer_dir = bpe_tokenizer_dir(family, root)
    answers = []
    for stream in (False, True):
        chat = _serving_without_tool_parser(family, tokenizer_dir, case["text"], case["name"])
        got, finish, _, _ = asyncio.run(_complete(chat, _request(case["prefix"], declared, stream=stream,
                                                                 tool_choice="none")))
        assert not got.tool_calls and finish == "stop"
        answers.append((_reasoning(got), got.content or None))
    whole_answer, streamed = answers
    assert streamed == whole_answer
    content = whole_answer[1] or ""
    assert case["text"].endswith(content)
    # every call respc reads is in the content as written (its name at least)
    for call in message.get("tool_calls") or []:
        assert call["function"]["name"] in content


# --- a respc reasoning parser beside another tool parser (issue 25, the leftover of item 5) -------------

def _serving_with(family: str, tool_parser: str | None, tokenizer_dir: str, text: str, seed: str) -> OpenAIServingChat:
    """vLLM's chat serving object as ``vllm serve --reasoning-parser respc-<family> --enable-auto-tool-choice
    --tool-call-parser <tool_parser>`` builds it: respc's reasoning parser beside another tool parser
    (one of vLLM's own)."""
    rv.register(family)
    model_config = _ModelConfig(tokenizer=tokenizer_dir)
    renderer = HfRenderer(_VllmConfig(model_config), get_tokenizer(tokenizer_dir))
    engine = _Engine(model_config, renderer, text, seed)
    options = dict(enable_auto_tools=True, tool_parser=tool_parser, reasoning_parser=f"respc-{family}")
    online = OnlineRenderer(model_config, renderer, request_logger=None, chat_template=CHAT_TEMPLATE,
                            chat_template_content_format="string", **options)
    models_ = OpenAIServingModels(engine, [BaseModelPath(name=MODEL, model_path=MODEL)])
    return OpenAIServingChat(engine, models_, "assistant", online_renderer=online, request_logger=None,
                             chat_template=CHAT_TEMPLATE, chat_template_content_format="string", **options)


_QWEN3_PROMPT = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
_QWEN3_CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'


def _foreign_cases() -> list:
    """(reasoning family, vLLM tool parser, prompt, output): calls that end an unclosed reasoning block
    (only the end of the output decides that the reasoning phase ended before them), with answer
    text after them or not."""
    params = [
        pytest.param("qwen3", "hermes", _QWEN3_PROMPT, "<think>I need the forecast." + _QWEN3_CALL, id="qwen3-hermes-call"),
        pytest.param("qwen3", "hermes", _QWEN3_PROMPT, "<think>I need the forecast." + _QWEN3_CALL + "\nand more",
                     id="qwen3-hermes-call-then-text"),
        pytest.param("qwen3", "hermes", _QWEN3_PROMPT, "<think>I need " + _QWEN3_CALL + "\n" + _QWEN3_CALL,
                     id="qwen3-hermes-two-calls"),
        pytest.param("qwen3", "hermes", _QWEN3_PROMPT, "<think>A</think>x" + _QWEN3_CALL + "<think>B</think>done",
                     id="qwen3-hermes-later-block"),
    ]
    for family, parser, names in (("qwen3_5", "qwen3_xml", ("berrylm_vllm_tool_call_ends_reasoning",
                                                             "berrylm_sglang_tool_call_without_think_end")),
                                  ("deepseek_v4", "deepseek_v4", ("call_block_ends_unclosed_reasoning",))):
        for case in family_cases(family)["cases"]:
            if case["name"] in names:
                params.append(pytest.param(family, parser, case["prefix"], case["text"],
                                           id=f"{family}-{parser}-{case['name']}"))
    return params


@pytest.mark.parametrize("family,tool_parser,prefix,text", _foreign_cases())
@pytest.mark.parametrize("tool_choice", ["auto", "none"])
def test_foreign_tool_parser_streamed_equals_whole(family, tool_parser, prefix, text, tool_choice, tmp_path_factory):
    """``--reasoning-parser respc-qwen3 --tool-call-parser hermes`` (respc's reasoning parser beside
    one of vLLM's tool parsers): what the client accumulates from the stream equals the non-streamed
    message. A call inside unclosed reasoning came out of the reasoning parser's end of stream as
    respc's tool calls, the foreign tool parser never seeing the text, while the whole output handed
    that text to the tool parser: ``"...</tool_call>\\nand more"`` streamed the answer "and more",
    whole Hermes' reading, without it."""
    root = str(tmp_path_factory.getbasetemp() / "vllm-tokenizers")
    case = {"prefix": prefix, "text": text, "tools": None}
    declared = tools_for(case, family)
    tokenizer_dir = bpe_tokenizer_dir(family, root)
    answers = []
    for stream in (False, True):
        chat = _serving_with(family, tool_parser, tokenizer_dir, text, "foreign")
        got, finish, _, _ = asyncio.run(_complete(chat, _request(prefix, declared, stream=stream,
                                                                 tool_choice=tool_choice)))
        calls = [(c.function.name, json.loads(c.function.arguments)) for c in got.tool_calls or []]
        answers.append((_reasoning(got), got.content or None, calls, finish))
    whole_answer, streamed = answers
    assert streamed == whole_answer
    reasoning, content, calls, finish = whole_answer
    if tool_choice == "none":
        assert not calls and finish == "stop"
    else:  # the tool parser read the calls (no call text lost)
        assert calls and finish == "tool_calls"


# --- a surrogate code point in the arguments (red team s12b) -----------------------------------------

#: hermes2pro outputs whose JSON escapes give surrogate code points in an argument value: a lone one,
#: and a pair (two escapes, which Python's json reads as one character, kept by the test as UTF-16)
SURROGATE_TEXTS = ['<tool_call>\n{"name": "get_weather", "arguments": {"city": "\\ud800"}}\n</tool_call>',
                   '<tool_call>\n{"name": "get_weather", "arguments": {"city": "x\\udc00\\ud800y"}}\n</tool_call>']


@pytest.mark.parametrize("text", SURROGATE_TEXTS, ids=["lone", "reversed-pair"])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_served_arguments_with_a_surrogate_escape(text, stream, tmp_path_factory):
    """A JSON body whose value is the escape ``"\\ud800"``: respc re-dumped the arguments with
    ``json.dumps(..., ensure_ascii=False)``, so the plug-in's ``FunctionCall``/``DeltaFunctionCall``
    held a raw surrogate and pydantic's ``model_dump_json`` (what vLLM does to send the response or a
    chunk) raised: the whole response failed, the stream sent an error. Now the arguments write it as
    its JSON escape: the response serializes and its arguments read back as the message's."""
    family = "hermes2pro"
    case = family_cases(family)["cases"][0]
    root = str(tmp_path_factory.getbasetemp() / "vllm-tokenizers")
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    module = importlib.import_module(f"respc.generated.{family}")
    message = module.parse_response(text, prefix=case["prefix"], tools=tools, errors="recover")
    chat, _ = _serving(family, bpe_tokenizer_dir(family, root), text, "surrogate")
    got, finish, _, lines = asyncio.run(_complete(chat, _request(case["prefix"], tools, stream=stream)))
    for line in lines or ():
        line.encode("utf-8")
    (call,) = got.tool_calls
    got.model_dump_json()
    want = message["tool_calls"][0]["function"]["arguments"]["city"]
    assert json.loads(call.function.arguments)["city"].encode("utf-16-le", "surrogatepass") == want.encode(
        "utf-16-le", "surrogatepass")
    assert call.function.arguments.isascii() and finish == "tool_calls"
