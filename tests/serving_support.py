"""What the engine serving tests share (tests/test_vllm_serving.py, tests/test_sglang_serving.py):
the families served, their cases, and a real tokenizer trained on them offline; and the cases the
vLLM two-parser split cannot give (tests/test_vllm_plugin.py, tests/test_vllm_serving.py). Imports
no engine."""

from __future__ import annotations

import importlib
import json
import re
from functools import lru_cache
from pathlib import Path

import pytest

FAMILIES_DIR = Path(__file__).parent / "cases" / "families"
#: catalogue families served (both Mistral templates stand for "mistral")
FAMILIES = ["qwen3", "hermes2pro", "gpt_oss", "deepseek_v3_1", "kimi_k2", "qwen3_coder", "mistral_nemo",
            "mistral_small_3_2", "glm4_5", "gemma4", "minimax_m2", "deepseek_r1", "functionary_v3_2"]
#: the test server's chat template: the request passes the case's rendered prompt in
#: ``chat_template_kwargs`` (a model's own template would need the model's tokenizer)
CHAT_TEMPLATE = "{{ respc_prompt }}"
#: how special tokens are spelled in the models' tokenizers
SPECIAL = re.compile(r"<\|[^|<>\s]{1,40}\|>|<｜[^｜]{1,60}｜>|\[[A-Z_]{3,20}\]")
EOS = "<respc_eos>"


def case_params(skip=frozenset()) -> list:
    """``pytest.param(family, case)`` for every case of every served family (:data:`FAMILIES`), with the id
    ``<family>-<case name>``, less the ids in ``skip``."""
    params = []
    for name in FAMILIES:
        for case in family(name)["cases"]:
            cid = f"{name}-{case['name']}"
            if cid not in skip:
                params.append(pytest.param(name, case, id=cid))
    return params


def arguments_like(text: str, like):
    """A call's accumulated argument ``text`` read the way ``like`` (the expected arguments) is written: as
    text when ``like`` is a string, else as JSON."""
    return text if isinstance(like, str) else json.loads(text)


def family(name: str) -> dict:
    """tests/cases/families/<name>.json."""
    return json.loads((FAMILIES_DIR / f"{name}.json").read_text(encoding="utf-8"))


@lru_cache(maxsize=None)
def bpe_tokenizer_dir(name: str, root: str, listed: bool = True) -> str:
    """A directory under ``root`` holding a Hugging Face tokenizer for family ``name``: a byte-level
    BPE (vocabulary 800) trained with ``tokenizers`` on the family's case prompts and outputs, whose
    special tokens are the special-token spellings found in them (:data:`SPECIAL`) plus an EOS
    token, with :data:`CHAT_TEMPLATE`; and a ``config.json`` (GPT-2's model type) so that the
    engines' loaders find a model config beside it.

    The special tokens are flagged ``"special": true`` in ``tokenizer.json`` either way; with
    ``listed`` they are also listed (``additional_special_tokens``, so ``all_special_tokens`` has
    them), without it they are not, as in Llama 3's tokenizer (``<|python_tag|>``)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    cases = family(name)["cases"]
    texts = [c["prefix"] for c in cases] + [c["text"] for c in cases]
    specials = sorted({m for t in texts for m in SPECIAL.findall(t)})
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=800, special_tokens=specials + [EOS], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    listing = {"additional_special_tokens": specials} if listed else {}
    hf = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=EOS, **listing)
    hf.chat_template = CHAT_TEMPLATE
    path = Path(root) / (name if listed else f"{name}-unlisted")
    hf.save_pretrained(path)
    for text in texts:  # the round trip the tests rely on
        assert hf.decode(hf.encode(text, add_special_tokens=False), skip_special_tokens=False) == text
    config = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": len(hf),
              "bos_token_id": None, "eos_token_id": hf.eos_token_id}
    (path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return str(path)


def tools_for(case: dict, name: str, prefix: str | None = None) -> list:
    """The case's tools, or tools named after the calls respc reads (every call's tool declared)."""
    if case.get("tools"):
        return case["tools"]
    module = importlib.import_module(f"respc.generated.{name}")
    message = module.parse_response(case["text"], prefix=case["prefix"] if prefix is None else prefix,
                                    errors="recover")
    names = sorted({c["function"]["name"] for c in message.get("tool_calls") or []}) or ["f"]
    return [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in names]


#: cases the two-parser split cannot give (strict). None now: a tool call written inside the
#: reasoning (deepseek_v4's DSML block ending unclosed reasoning, intern_s1's action block, solar_open2's
#: calls between blocks, trinity's calls inside <think>, qwen3_5's call ending an unclosed <think>) is
#: read by the tool parser from where the reasoning parser stopped (RespcReasoningParser.handover)
SPLIT_LIMITS: dict[str, str] = {}
#: the same split, the other way. None now: an end-of-turn mark inside the reasoning (plamo3's
#: <|plamo:tag|>, which ends the whole output) is read in the reasoning's context by the tool parser
SPLIT_LIMITS_END: dict[str, str] = {}
