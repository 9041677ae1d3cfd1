"""SGLang's server app over HTTP on 127.0.0.1, called with the official ``openai`` client (issue 25).

``tests/test_sglang_serving.py`` calls ``OpenAIServingChat.handle_request`` in-process. Here the
same serving object (its stand-in tokenizer manager and template manager, SGLang's ``ServerArgs``
for ``--reasoning-parser respc-<t> --tool-call-parser respc-<t>`` published) sits in
``app.state.openai_serving_chat`` of SGLang's own FastAPI app (``sglang.srt.entrypoints.http_server
.app``, the app ``sglang serve`` runs, with its middleware and ``/v1/chat/completions`` route),
served by uvicorn in a background thread on a free loopback port, without the app's lifespan
(which builds every serving object from a real tokenizer manager). The client is
``openai.OpenAI(base_url="http://127.0.0.1:<port>/v1")``: Chat Completions and Responses
(``/v1/responses``, SGLang's ``OpenAIServingResponses``), ``stream`` true and false, for one case
with tool calls per family of qwen3, hermes2pro, llama3_json, kimi_k2 and gpt_oss (20 requests).
docs/serving.md, "Over HTTP" (SGLang).

Install and run: docs/serving.md, "Behind SGLang's OpenAI serving layer"
(``python -m pytest -q -m sglang tests/test_sglang_http.py``).
"""

from __future__ import annotations

import importlib
import json
import threading
import time

import pytest

pytestmark = [pytest.mark.sglang, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

pytest.importorskip("sglang.srt.entrypoints.openai.serving_chat",
                    reason="SGLang's serving modules are not installed (docs/serving.md)")
http_server = pytest.importorskip("sglang.srt.entrypoints.http_server",
                                  reason="SGLang's HTTP server module does not import (docs/serving.md)")

import uvicorn  # noqa: E402
from openai import OpenAI  # noqa: E402
from openai.lib.streaming.chat import ChatCompletionStreamState  # noqa: E402

from serving_support import tools_for  # noqa: E402
from serving_support import family as family_cases  # noqa: E402
from support_sglang import MODEL, _serve  # noqa: E402

HTTP_FAMILIES = ["qwen3", "hermes2pro", "llama3_json", "kimi_k2", "gpt_oss"]


def _case(family: str, tmp_root: str):
    for case in family_cases(family)["cases"]:
        chat, manager, prefix = _serve(family, case, tmp_root)
        module = importlib.import_module(f"respc.generated.{family}")
        tools = tools_for(case, family, prefix)
        message = module.parse_response(case["text"], prefix=prefix, tools=tools, errors="recover")
        if message.get("tool_calls"):
            return case, chat, manager, tools, message
    raise AssertionError(f"{family}: no case with tool calls")


@pytest.mark.parametrize("family", HTTP_FAMILIES)
def test_over_http(family, tmp_path_factory):
    """Chat Completions and Responses, streamed and whole, through SGLang's app under uvicorn and the ``openai``
    client: reasoning, content, tool names, parsed arguments and finish reason equal respc's
    message (read with the prefix SGLang's information gives)."""
    root = str(tmp_path_factory.getbasetemp() / "sglang-http-tokenizers")
    case, chat, manager, tools, message = _case(family, root)
    from sglang.srt.entrypoints.openai.serving_responses import OpenAIServingResponses

    app = http_server.app
    app.state.openai_serving_chat = chat
    app.state.openai_serving_responses = OpenAIServingResponses(manager, chat.template_manager,
                                                                enable_prompt_tokens_details=True, tool_server=None)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.02)
        port = server.servers[0].sockets[0].getsockname()[1]
        client = OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0, timeout=60)
        expected = [(c["function"]["name"], c["function"]["arguments"]) for c in message["tool_calls"]]
        extra = {"chat_template_kwargs": {"respc_prompt": case["prefix"]}}
        for stream in (False, True):
            kwargs = dict(model=MODEL, messages=[{"role": "user", "content": "hi"}], tools=tools,
                          tool_choice="auto", extra_body=extra)
            if stream:
                state = ChatCompletionStreamState()
                for chunk in client.chat.completions.create(stream=True, **kwargs):
                    state.handle_chunk(chunk)
                completion = state.get_final_completion()
            else:
                completion = client.chat.completions.create(**kwargs)
            choice = completion.choices[0]
            got = choice.message
            assert ((got.model_extra or {}).get("reasoning_content") or "") == (message.get("reasoning_content") or "")
            assert (got.content or "") == (message.get("content") or ""), (stream, got)
            calls = [(c.function.name, c.function.arguments if isinstance(a, str) else json.loads(c.function.arguments))
                     for c, (_, a) in zip(got.tool_calls or [], expected)]
            assert calls == expected and len(got.tool_calls or []) == len(expected), (stream, got)
            assert choice.finish_reason == "tool_calls"

            # --- /v1/responses
            flat = [{"type": "function", **t["function"]} for t in tools]
            rkwargs = dict(model=MODEL, input="hi", tools=flat, tool_choice="auto", extra_body=extra)
            if stream:
                response, kinds = None, []
                for event in client.responses.create(stream=True, **rkwargs):
                    kinds.append(event.type)
                    assert event.type != "error", event
                    if event.type == "response.completed":
                        response = event.response
                assert response is not None, kinds
            else:
                response = client.responses.create(**rkwargs)
            assert response.status == "completed", response
            items = [item for item in response.output if item.type == "function_call"]
            assert [(c.name, c.arguments if isinstance(a, str) else json.loads(c.arguments))
                    for c, (_, a) in zip(items, expected)] == expected, (stream, response.output)
            assert len(items) == len(expected)
            text = "".join(part.text for item in response.output if item.type == "message"
                           for part in item.content if part.type == "output_text")
            assert (text or "") == (message.get("content") or ""), (stream, response.output)
        assert len(manager.requests) == 4  # both requests reached the tokenizer manager over HTTP
    finally:
        server.should_exit = True
        thread.join(timeout=10)
