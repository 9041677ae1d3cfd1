"""SGLang's chat serving object with the respc detectors, around a stand-in tokenizer manager that
"generates" a given text (docs/serving.md, "Behind SGLang's OpenAI serving layer"), shared by
``tests/test_sglang_serving.py`` (in-process), ``tests/test_sglang_http.py`` (over HTTP) and
``benchmarks/serving_table.py`` (with the request and the client's reading of the response). How
the stand-ins work: ``tests/test_sglang_serving.py``'s module docstring. Importing it loads SGLang's
plug-ins (as ``sglang serve`` does at start) and skips the importing test module when SGLang's
serving modules are not installed.
"""

from __future__ import annotations

import importlib
import random
from typing import Any

import pytest

INSTALL = ('python -m pip install -e ".[test,sglang]" && python -m pip install --no-deps sglang==0.5.23 '
           '&& python -m pip install -e ".[sglang-serving]"')
pytest.importorskip("sglang.srt.entrypoints.openai.serving_chat",
                    reason=f"SGLang's serving modules are not installed: {INSTALL}")

from openai.lib.streaming.chat import ChatCompletionStreamState  # noqa: E402
from openai.types.chat import ChatCompletion, ChatCompletionChunk  # noqa: E402
from sglang.srt.entrypoints.openai.protocol import ChatCompletionRequest  # noqa: E402
from sglang.srt.entrypoints.openai.serving_chat import OpenAIServingChat  # noqa: E402
from sglang.srt.plugins import load_plugins  # noqa: E402
from sglang.srt.runtime_context import publish  # noqa: E402
from sglang.srt.server_args import ServerArgs  # noqa: E402
from transformers import PreTrainedTokenizerFast  # noqa: E402

import respc.sglang as rs  # noqa: E402
from serving_support import bpe_tokenizer_dir  # noqa: E402


MODEL = "respc-test-model"
load_plugins()  # as `sglang serve` does at start (idempotent)


class _ModelConfig:
    is_multimodal = False

    class hf_config:  # noqa: N801 - SGLang reads model_config.hf_config.model_type
        model_type = "respc"  # not gpt_oss / gemma4: SGLang would special-case them
        architectures = ["GPT2LMHeadModel"]

    def get_default_sampling_params(self) -> dict:
        return {}


class _RequestLogger:
    log_requests = False
    log_requests_level = 0


class _TemplateManager:
    """The attributes of SGLang's ``TemplateManager`` that the chat path reads: a Jinja template
    (the tokenizer's), and ``force_reasoning`` (the template opened the reasoning)."""

    chat_template_name = None
    jinja_template_content_format = "string"
    reasoning_config = None
    python_chat_template = None
    jinja_template_may_reorder_tool_results = False

    def __init__(self, force_reasoning: bool) -> None:
        self.force_reasoning = force_reasoning


class _TokenizerManager:
    """A tokenizer manager whose ``generate_request`` "generates" ``text`` (see tests/test_sglang_serving.py's
    module docstring)."""

    def __init__(self, server_args: ServerArgs, tokenizer_dir: str, text: str, seed: str) -> None:
        self.server_args = server_args
        self.tokenizer = PreTrainedTokenizerFast.from_pretrained(tokenizer_dir)
        self.model_config = _ModelConfig()
        self.served_model_name = MODEL
        self.model_path = tokenizer_dir
        self.request_logger = _RequestLogger()
        self.text = text
        self.rng = random.Random(seed)
        self.requests: list = []

    def config_value(self, name: str) -> Any:
        return getattr(self.server_args, name)

    def create_abort_task(self, request: Any) -> None:
        return None

    async def generate_request(self, request, raw_request=None):
        self.requests.append(request)
        ids = self.tokenizer.encode(self.text, add_special_tokens=False)
        skip = request.sampling_params.get("skip_special_tokens", True)
        end, last = 0, False
        while not last:  # at least one step: an empty output still ends with the stop token's step
            end = min(len(ids), end + self.rng.randint(1, 4)) if request.stream else len(ids)
            text = self.tokenizer.decode(ids[:end], skip_special_tokens=skip)
            if text.endswith("\ufffd") and end < len(ids):
                continue
            last = end == len(ids)
            yield {"text": text, "index": 0, "output_ids": ids[:end],
                   "meta_info": {"id": "chatcmpl-respc", "prompt_tokens": len(request.input_ids or []),
                                 "completion_tokens": end, "cached_tokens": 0, "weight_version": "default",
                                 "finish_reason": {"type": "stop", "matched": None} if last else None}}


_PUBLISHED: dict[str, ServerArgs] = {}


def _server_args(name: str, tokenizer_dir: str) -> ServerArgs:
    """SGLang's ``ServerArgs`` for ``--reasoning-parser NAME --tool-call-parser NAME``, published as
    the process config (what ``sglang serve`` does at start)."""
    args = _PUBLISHED.get(name)
    if args is None:
        args = ServerArgs(model_path=tokenizer_dir, device="cpu", tool_call_parser=name, reasoning_parser=name)
        _PUBLISHED[name] = args
    publish(args, role="tokenizer")
    return args


def _serve(family: str, case: dict, tmp_root: str):
    name = rs.register(family)
    tokenizer_dir = bpe_tokenizer_dir(family, tmp_root)
    module = importlib.import_module(f"respc.generated.{family}")
    opener, _ = rs._reasoning_delimiters(module)
    force = bool(opener) and case["prefix"].rstrip().endswith(opener.rstrip())
    manager = _TokenizerManager(_server_args(name, tokenizer_dir), tokenizer_dir, case["text"], case["name"])
    # the prompt the detector reads: the rendered one, which the plug-in's hooks hand it
    return OpenAIServingChat(manager, _TemplateManager(force)), manager, case["prefix"]


class _RawRequest:
    headers: dict = {}

    async def is_disconnected(self) -> bool:
        return False


async def _complete(chat: OpenAIServingChat, request: ChatCompletionRequest):
    """(message, finish_reason) as the openai client reads the response."""
    response = await chat.handle_request(request, _RawRequest())
    if not request.stream:
        body = response.model_dump_json() if hasattr(response, "model_dump_json") else response.body
        assert b'"error"' not in (body if isinstance(body, bytes) else body.encode()), body
        completion = ChatCompletion.model_validate_json(body)
        return completion.choices[0].message, completion.choices[0].finish_reason
    state, lines = ChatCompletionStreamState(), []
    async for line in response.body_iterator:
        line = line.decode() if isinstance(line, bytes) else line
        lines.append(line)
        assert line.startswith("data: ") and line.endswith("\n\n"), line
        data = line[len("data: "):-2]
        if data == "[DONE]":
            break
        assert '"error"' not in data, data
        state.handle_chunk(ChatCompletionChunk.model_validate_json(data))
    assert lines[-1] == "data: [DONE]\n\n"
    completion = state.get_final_completion()
    return completion.choices[0].message, completion.choices[0].finish_reason


def _request(prefix: str, tools: list | None, *, stream: bool, tool_choice: str = "auto", **extra):
    kwargs: dict[str, Any] = {"tools": tools, "tool_choice": tool_choice} if tools is not None else {}
    return ChatCompletionRequest(model=MODEL, messages=[{"role": "user", "content": "hi"}], stream=stream,
                                 chat_template_kwargs={"respc_prompt": prefix}, **kwargs, **extra)
