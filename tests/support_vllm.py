"""vLLM's chat serving object as ``vllm serve`` builds it with the respc parsers, around a stand-in
engine that "generates" a given text (docs/serving.md, "Behind vLLM's OpenAI serving layer"), shared
by ``tests/test_vllm_serving.py`` (in-process), ``tests/test_vllm_http.py`` (over HTTP) and
``benchmarks/serving_table.py`` (with the request and the client's reading of the response). How the
engine and the model config stand in for a model: ``tests/test_vllm_serving.py``'s module docstring.
Importing it skips the importing test module when vLLM's serving modules are not installed.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

import pytest

INSTALL = 'python -m pip install --no-deps vllm==0.33.0 && python -m pip install -e ".[test,vllm]"'
pytest.importorskip("vllm.entrypoints.openai.chat_completion.serving",
                    reason=f"vLLM's serving modules are not installed: {INSTALL}")

from openai.lib.streaming.chat import ChatCompletionStreamState  # noqa: E402
from openai.types.chat import ChatCompletion, ChatCompletionChunk  # noqa: E402
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest  # noqa: E402
from vllm.config import MultiModalConfig, ParallelConfig  # noqa: E402
from vllm.entrypoints.openai.chat_completion.serving import OpenAIServingChat  # noqa: E402
from vllm.entrypoints.openai.models.serving import BaseModelPath, OpenAIServingModels  # noqa: E402
from vllm.outputs import CompletionOutput, RequestOutput  # noqa: E402
from vllm.renderers.hf import HfRenderer  # noqa: E402
from vllm.renderers.online_renderer import OnlineRenderer  # noqa: E402
from vllm.sampling_params import RequestOutputKind  # noqa: E402
from vllm.tokenizers import get_tokenizer  # noqa: E402

import respc.vllm as rv  # noqa: E402
from serving_support import CHAT_TEMPLATE  # noqa: E402


MODEL = "respc-test-model"


@dataclass
class _HfConfig:
    model_type: str = "respc"  # not "gpt_oss": vLLM would use its Harmony path instead of the parsers


@dataclass
class _ModelConfig:
    """The attributes of vLLM's ``ModelConfig`` that the chat serving path reads."""

    tokenizer: str = MODEL
    model: str = MODEL
    served_model_name: str = MODEL
    task: str = "generate"
    runner_type: str = "generate"
    trust_remote_code: bool = False
    tokenizer_mode: str = "auto"
    tokenizer_revision: Any = None
    revision: Any = None
    code_revision: Any = None
    hf_overrides: Any = None
    max_model_len: int = 1 << 16
    multimodal_config: Any = field(default_factory=MultiModalConfig)
    hf_config: Any = field(default_factory=_HfConfig)
    hf_text_config: Any = field(default_factory=_HfConfig)
    logits_processors: Any = None
    allowed_local_media_path: str = ""
    allowed_media_domains: Any = None
    encoder_config: Any = None
    generation_config: str = "auto"
    override_generation_config: dict = field(default_factory=dict)
    media_io_kwargs: dict = field(default_factory=dict)
    skip_tokenizer_init: bool = False
    is_encoder_decoder: bool = False
    is_multimodal_model: bool = False
    supports_multimodal_inputs: bool = False
    enable_prompt_embeds: bool = False
    renderer_num_workers: int = 1

    def get_diff_sampling_param(self) -> dict:
        return {}


@dataclass
class _VllmConfig:
    model_config: Any
    parallel_config: Any = field(default_factory=ParallelConfig)


class _Engine:
    """An engine client that "generates" ``text`` and then the tokenizer's EOS token, a stop token:
    the ids go through vLLM's own incremental detokenizer (``IncrementalDetokenizer.from_new_request``,
    with the request's ``skip_special_tokens``; the stop token is left out of the text, as the engine
    leaves it) and come out as ``RequestOutput``\\ s, 1-4 tokens per step when streaming."""

    errored = False

    def __init__(self, model_config: _ModelConfig, renderer: HfRenderer, text: str, seed: str) -> None:
        from unittest.mock import MagicMock

        self.model_config, self.renderer, self.text = model_config, renderer, text
        self.input_processor, self.io_processor = MagicMock(), MagicMock()
        self.rng = random.Random(seed)
        self.calls: list[dict] = []

    def check_admission(self, n: int = 1, request_id: str | None = None) -> None:
        return None

    async def generate(self, prompt, params, request_id, **kwargs):
        from types import SimpleNamespace

        from vllm.v1.engine.detokenizer import IncrementalDetokenizer

        self.calls.append({"prompt": prompt, "params": params, "kwargs": kwargs})
        tok = self.renderer.tokenizer
        ids = tok.encode(self.text, add_special_tokens=False) + [tok.eos_token_id]
        detokenizer = IncrementalDetokenizer.from_new_request(tok, SimpleNamespace(
            sampling_params=params, prompt_token_ids=prompt["prompt_token_ids"], request_id=request_id))
        delta = params.output_kind == RequestOutputKind.DELTA
        start, end = 0, 0
        while end < len(ids):
            end = min(len(ids), end + self.rng.randint(1, 4)) if delta else len(ids)
            last = end == len(ids)
            detokenizer.update(ids[start:end], stop_terminated=last)
            text = detokenizer.get_next_output_text(last, delta)
            output = CompletionOutput(index=0, text=text, token_ids=ids[start:end] if delta else ids,
                                      cumulative_logprob=None, logprobs=None,
                                      finish_reason="stop" if last else None, stop_reason=None)
            start = end
            yield RequestOutput(request_id=request_id, prompt=None, prompt_token_ids=prompt["prompt_token_ids"],
                                prompt_logprobs=None, outputs=[output], finished=last)


def _serving(family: str, tokenizer_dir: str, text: str, seed: str) -> tuple[OpenAIServingChat, _Engine]:
    """vLLM's chat serving object as ``vllm serve`` builds it with the respc parsers of ``family``."""
    registered = rv.register(family)
    for cls in registered[f"respc-{family}"]:
        cls.tool_call_ids = staticmethod(lambda n: f"call_{n}")
    model_config = _ModelConfig(tokenizer=tokenizer_dir)
    renderer = HfRenderer(_VllmConfig(model_config), get_tokenizer(tokenizer_dir))
    engine = _Engine(model_config, renderer, text, seed)
    options = dict(enable_auto_tools=True, tool_parser=f"respc-{family}", reasoning_parser=f"respc-{family}")
    online = OnlineRenderer(model_config, renderer, request_logger=None, chat_template=CHAT_TEMPLATE,
                            chat_template_content_format="string", **options)
    models_ = OpenAIServingModels(engine, [BaseModelPath(name=MODEL, model_path=MODEL)])
    chat = OpenAIServingChat(engine, models_, "assistant", online_renderer=online, request_logger=None,
                             chat_template=CHAT_TEMPLATE, chat_template_content_format="string", **options)
    return chat, engine


async def _complete(chat: OpenAIServingChat, request: ChatCompletionRequest):
    """The response as a client reads it: (message, finish_reason, usage, SSE lines or None)."""
    response = await chat.create_chat_completion(request)
    if not request.stream:
        assert not hasattr(response, "error"), response
        completion = ChatCompletion.model_validate_json(response.model_dump_json())
        return completion.choices[0].message, completion.choices[0].finish_reason, completion.usage, None
    state, lines, usage = ChatCompletionStreamState(), [], None
    async for line in response:
        lines.append(line)
        assert line.startswith("data: ") and line.endswith("\n\n"), line
        data = line[len("data: "):-2]
        if data == "[DONE]":
            break
        chunk = ChatCompletionChunk.model_validate_json(data)
        assert "error" not in json.loads(data), data
        usage = chunk.usage or usage
        state.handle_chunk(chunk)
    assert lines[-1] == "data: [DONE]\n\n"
    completion = state.get_final_completion()
    return completion.choices[0].message, completion.choices[0].finish_reason, usage, lines


def _request(prefix: str, tools: list | None, *, stream: bool, tool_choice: str | None = "auto"):
    kwargs: dict[str, Any] = {"tools": tools, "tool_choice": tool_choice} if tools is not None else {}
    if stream:
        kwargs["stream_options"] = {"include_usage": True}
    return ChatCompletionRequest(model=MODEL, messages=[{"role": "user", "content": "hi"}], stream=stream,
                                 chat_template_kwargs={"respc_prompt": prefix}, **kwargs)
