"""vLLM's server app over HTTP on 127.0.0.1, called with the official ``openai`` client (issue 25).

``tests/test_vllm_serving.py`` calls ``OpenAIServingChat`` / ``OpenAIServingResponses`` in-process.
Here the same serving objects (built as ``vllm serve --enable-auto-tool-choice --tool-call-parser
respc-<t> --reasoning-parser respc-<t>`` builds them, with that file's stand-in engine: vLLM's own
incremental detokenizer, the stop token left out of the text) sit behind vLLM's own FastAPI routers
for ``/v1/chat/completions`` and ``/v1/responses`` (the ``attach_router`` functions ``vllm serve``'s
``build_app`` calls, and its exception handlers), served by uvicorn in a background thread on a free
loopback port. The client is ``openai.OpenAI(base_url="http://127.0.0.1:<port>/v1")``: Chat
Completions and Responses, ``stream`` true and false, for one case with tool calls per family of
qwen3, hermes2pro, llama3_json, kimi_k2 and gpt_oss (20 requests). What the client gets equals
respc's message for the case. docs/serving.md, "Over HTTP" (the recipe this test follows).

Install and run: README, "vLLM plug-in" (``python -m pytest -q -m vllm tests/test_vllm_http.py``).
"""

from __future__ import annotations

import importlib
import random
import threading
import time

import pytest

pytestmark = [pytest.mark.vllm, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

pytest.importorskip("vllm.entrypoints.openai.chat_completion.api_router",
                    reason='vLLM\'s server modules are not installed: python -m pip install --no-deps vllm==0.33.0 '
                           '&& python -m pip install -e ".[test,vllm]"')
pytest.importorskip("uvicorn", reason='uvicorn is not installed: python -m pip install -e ".[test,vllm]"')

import uvicorn  # noqa: E402
from fastapi import FastAPI  # noqa: E402
from openai import OpenAI  # noqa: E402
from openai.lib.streaming.chat import ChatCompletionStreamState  # noqa: E402
from vllm.entrypoints.openai.chat_completion.api_router import attach_router as attach_chat  # noqa: E402
from vllm.entrypoints.openai.responses.api_router import attach_router as attach_responses  # noqa: E402
from vllm.entrypoints.openai.responses.serving import OpenAIServingResponses  # noqa: E402
from vllm.entrypoints.serve.exception_handling.register import init_exception_handler  # noqa: E402

from serving_support import CHAT_TEMPLATE, arguments_like, bpe_tokenizer_dir, tools_for  # noqa: E402
from serving_support import family as family_cases  # noqa: E402
from support_vllm import MODEL, _serving  # noqa: E402

#: the families served over HTTP (each: its first case with tool calls)
HTTP_FAMILIES = ["qwen3", "hermes2pro", "llama3_json", "kimi_k2", "gpt_oss"]


class _Server:
    """uvicorn serving ``app`` on 127.0.0.1 (a free port the OS picks) in a daemon thread."""

    def __init__(self, app: FastAPI) -> None:
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning",
                                                    lifespan="off"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert self.thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.02)
        self.port = self.server.servers[0].sockets[0].getsockname()[1]

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def _app(family: str, tokenizer_dir: str):
    """vLLM's routers for ``/v1/chat/completions`` and ``/v1/responses`` (as ``build_app`` attaches
    them), with ``app.state`` holding the serving objects ``init_app_state`` would store."""
    chat, engine = _serving(family, tokenizer_dir, "", family)
    options = dict(enable_auto_tools=True, tool_parser=f"respc-{family}", reasoning_parser=f"respc-{family}")
    responses = OpenAIServingResponses(engine, chat.models, chat.online_renderer, request_logger=None,
                                       chat_template=CHAT_TEMPLATE, chat_template_content_format="string", **options)
    app = FastAPI()
    attach_chat(app)
    attach_responses(app)
    init_exception_handler(app)
    app.state.openai_serving_chat = chat
    app.state.openai_serving_responses = responses
    return app, engine


def _case(family: str) -> dict:
    module = importlib.import_module(f"respc.generated.{family}")
    for case in family_cases(family)["cases"]:
        tools = tools_for(case, family)
        message = module.parse_response(case["text"], prefix=case["prefix"], tools=tools, errors="recover")
        if message.get("tool_calls"):
            return {**case, "tools": tools, "message": message}
    raise AssertionError(f"{family}: no case with tool calls")


@pytest.mark.parametrize("family", HTTP_FAMILIES)
def test_over_http(family, tmp_path_factory):
    """Chat Completions and Responses, streamed and whole, through vLLM's routers under uvicorn and
    the ``openai`` client: content, reasoning, tool names, parsed arguments and finish reason equal
    respc's message; every streamed chunk/event validates as the client's types."""
    case = _case(family)
    message, tools = case["message"], case["tools"]
    expected = [(c["function"]["name"], c["function"]["arguments"]) for c in message["tool_calls"]]
    root = str(tmp_path_factory.getbasetemp() / "vllm-http-tokenizers")
    app, engine = _app(family, bpe_tokenizer_dir(family, root))
    server = _Server(app)
    try:
        client = OpenAI(base_url=f"http://127.0.0.1:{server.port}/v1", api_key="unused", max_retries=0, timeout=60)
        extra = {"chat_template_kwargs": {"respc_prompt": case["prefix"]}}
        engine.text = case["text"]
        for stream in (False, True):
            engine.rng = random.Random(case["name"])
            # --- /v1/chat/completions
            if stream:
                state = ChatCompletionStreamState()
                for chunk in client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}],
                                                            tools=tools, tool_choice="auto", stream=True,
                                                            extra_body=extra):
                    state.handle_chunk(chunk)
                completion = state.get_final_completion()
            else:
                completion = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}],
                                                            tools=tools, tool_choice="auto", extra_body=extra)
            choice = completion.choices[0]
            got = choice.message
            assert (got.content or None) == (message.get("content") or None), (stream, got)
            assert ((got.model_extra or {}).get("reasoning") or None) == (message.get("reasoning_content") or None)
            calls = [(c.function.name, arguments_like(c.function.arguments, a))
                     for c, (_, a) in zip(got.tool_calls or [], expected)]
            assert calls == expected and len(got.tool_calls or []) == len(expected), (stream, got)
            assert choice.finish_reason == "tool_calls"

            # --- /v1/responses
            engine.rng = random.Random(case["name"])
            flat = [{"type": "function", **t["function"]} for t in tools]
            if stream:
                response, kinds = None, []
                for event in client.responses.create(model=MODEL, input="hi", tools=flat, tool_choice="auto",
                                                     stream=True, extra_body=extra):
                    kinds.append(event.type)
                    assert event.type != "error", event
                    if event.type == "response.completed":
                        response = event.response
                assert response is not None, kinds
            else:
                response = client.responses.create(model=MODEL, input="hi", tools=flat, tool_choice="auto",
                                                   extra_body=extra)
            assert response.status == "completed", response
            items = [item for item in response.output if item.type == "function_call"]
            assert [(c.name, arguments_like(c.arguments, a)) for c, (_, a) in zip(items, expected)] == expected
            assert len(items) == len(expected)
            text = "".join(part.text for item in response.output if item.type == "message"
                           for part in item.content if part.type == "output_text")
            assert (text or None) == (message.get("content") or None)
        assert len(engine.calls) == 4  # every request reached the engine through the routers
    finally:
        server.close()
