"""Per-family table for the serving engines (issue 25): respc's plug-in against the engine's own
parser, through the engine's real OpenAI chat serving layer, on the corpus and engine-test outputs.

For every output of ../shared/corpus/{vectors,peer_vectors,peer_vectors2}.jsonl whose family is a
catalogue template AND has an engine parser (the ``VLLM`` / ``SGLANG`` maps below), one request
streamed and one whole goes through the engine's chat serving object twice: once with
``respc-<family>`` as tool-call and reasoning parser, once with the engine's own parsers. The
serving objects, the stand-in engine (vLLM's own incremental detokenizer, the stop token stripped;
SGLang's detokenizer's cumulative text) and the client (the ``openai`` package's types and stream
accumulator) are those of tests/test_vllm_serving.py and tests/test_sglang_serving.py (from
tests/support_vllm.py and tests/support_sglang.py); the
tokenizer is a byte-level BPE trained on the family's outputs and prompts, its delimiters listed
special tokens. The prompt the engine renders is the vector's ``prefix``.

A request is *right* when the message the client gets equals the vector's ``expect.message``:
reasoning and content (whitespace-stripped, absent = empty), and the tool calls (names, and
arguments parsed as JSON equal to the expected ones), in order. An error response or exception is
wrong.

Run (each in its engine's environment, docs/serving.md):

    . .venv/bin/activate && python benchmarks/serving_table.py vllm
    . .venv-sglang/bin/activate && python benchmarks/serving_table.py sglang

Prints a Markdown table (per family: requests, right with respc, right with the engine's parser)
and the totals; ``--family NAME`` (repeatable) limits it, ``--failures`` lists the wrong requests.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import logging
import os
import re
import sys
import tempfile
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "corpus"
FILES = ["vectors.jsonl", "peer_vectors.jsonl", "peer_vectors2.jsonl"]
#: tag-like delimiters (``<think>``, ``</tool_call>``, ``◁think▷``): ordinary added tokens (not
#: special) of the tokenizer, one id each, as in the models' tokenizers; the engines' own parsers
#: look several of them up by id at start-up
TAGS = re.compile(r"</?[A-Za-z_][\w.:-]{0,40}>|◁/?think▷")

#: catalogue family -> (vLLM 0.33 tool parser, reasoning parser) of the engine's own
VLLM = {
    "apertus": ("apertus", None), "command_r7b": ("cohere_command3", "cohere_command3"),
    "deepseek_r1": ("deepseek_v3", "deepseek_r1"), "deepseek_v3": ("deepseek_v3", None),
    "deepseek_v3_1": ("deepseek_v31", "deepseek_v3"), "deepseek_v3_2": ("deepseek_v32", "deepseek_v3"),
    "deepseek_v4": ("deepseek_v4", "deepseek_v4"), "ernie4_5": ("ernie45", "ernie45"),
    "functiongemma": ("functiongemma", None), "gemma4": ("gemma4", "gemma4"), "gigachat3": ("gigachat3", None),
    "glm4_5": ("glm45", "glm45"), "gpt_oss": ("openai", "openai_gptoss"), "granite3": ("granite", None),
    "granite4": ("granite4", None), "hermes2pro": ("hermes", None), "hunyuan_a13b": ("hunyuan_a13b", "hunyuan_a13b"),
    "internlm2": ("internlm", None), "k2_horizon": ("k2_horizon", "k2_horizon"), "kimi_k2": ("kimi_k2", None),
    "kimi_k2_thinking": ("kimi_k2", "kimi_k2"), "kimi_k3": ("kimi_k3", "kimi_k3"), "lfm2": ("lfm2", None),
    "ling3": ("ling3", "ling3"), "llama3_json": ("llama3_json", None), "llama4_pythonic": ("llama4_pythonic", None),
    "magistral": ("mistral", "mistral"), "minimax_m2": ("minimax_m2", "minimax_m2"),
    "minimax_m3": ("minimax_m3", "minimax_m3"), "mistral_nemo": ("mistral", None),
    "mistral_small_3_2": ("mistral", None), "muse_glimmer": ("muse_glimmer", "muse_glimmer"),
    "nemotron3_nano": ("qwen3_coder", "nemotron_v3"), "olmo3": ("olmo3", None), "olmo3_think": ("olmo3", "olmo3"),
    "poolside": ("poolside_v1", "poolside_v1"), "qwen2_5": ("hermes", None), "qwen3": ("hermes", "qwen3"),
    "qwen3_5": ("qwen3_coder", "qwen3"), "qwen3_coder": ("qwen3_coder", "qwen3"), "seed_oss": ("seed_oss", "seed_oss"),
    "smollm3": ("hermes", "qwen3"), "step3": ("step3", "step3"), "step3p5": ("step3p5", "step3p5"),
    "xlam": ("xlam", None),
}
#: catalogue family -> (SGLang 0.5.23 tool-call parser, reasoning parser) of the engine's own
SGLANG = {
    "apertus": ("apertus2509", "apertus2509"), "deepseek_r1": ("deepseekv3", "deepseek-r1"),
    "deepseek_v3": ("deepseekv3", None), "deepseek_v3_1": ("deepseekv31", "deepseek-v3"),
    "deepseek_v3_2": ("deepseekv32", "deepseek-v3"), "deepseek_v4": ("deepseekv4", "deepseek-v4"),
    "gemma4": ("gemma4", "gemma4"), "gigachat3": ("gigachat3", None), "glm4_5": ("glm45", "glm45"),
    "gpt_oss": ("gpt-oss", "gpt-oss"), "hermes2pro": ("hermes", None), "hunyuan": ("hunyuan", "hunyuan"),
    "k2_horizon": ("k2_horizon", "k2_horizon"), "kimi_k2": ("kimi_k2", None),
    "kimi_k2_thinking": ("kimi_k2", "kimi_k2"),
    "kimi_k3": ("kimi_k3", "kimi_k3"), "kimi_vl": (None, "kimi"), "lfm2": ("lfm2", None), "ling3": ("ling3", "ling3"),
    "llama3_json": ("llama3", None), "llama4_pythonic": ("pythonic", None), "magistral": ("mistral", "mistral"),
    "minimax_m2": ("minimax-m2", "minimax"), "minimax_m3": ("minimax-m3", "minimax-m3"),
    "mistral_nemo": ("mistral", None), "mistral_small_3_2": ("mistral", None),
    "nemotron3_nano": ("qwen3_coder", "nemotron_3"), "poolside": ("poolside_v1", "poolside_v1"),
    "qwen2_5": ("qwen25", None), "qwen3": ("qwen", "qwen3"), "qwen3_5": ("qwen3_coder", "qwen3"),
    "qwen3_coder": ("qwen3_coder", "qwen3"), "smollm3": ("hermes", "qwen3"), "spark2_5": ("spark25", None),
    "step3": ("step3", "step3"), "step3p5": ("step3p5", "step3p5"),
}


def peer_prefixes() -> dict[str, str]:
    """Vector id -> the prompt its family file gives it (``peer_prefix`` in
    tests/cases/families/*.json): an engine test with prefix ``""`` that starts its parser inside
    the reasoning stands for a prompt that ends with the opener (tests/test_peer_vectors.py)."""
    return {vid: prefix for path in sorted((ROOT / "tests" / "cases" / "families").glob("*.json"))
            for vid, prefix in json.loads(path.read_text(encoding="utf-8")).get("peer_prefix", {}).items()}


def vectors() -> dict[str, list[dict]]:
    """The corpus outputs per family, catalogue families only; ``prefix`` is the family file's
    ``peer_prefix`` where it gives one (:func:`peer_prefixes`), as the parser tests use it."""
    out: dict[str, list[dict]] = {}
    prompts = peer_prefixes()
    for name in FILES:
        for line in (SHARED / name).read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                row["prefix"] = prompts.get(row["id"], row["prefix"])
                if (ROOT / "templates" / f"{row['family']}.json").exists():
                    out.setdefault(row["family"], []).append(row)
    return out


def tokenizer_dir(family: str, rows: list[dict], root: str) -> str:  # noqa: C901
    """A byte-level BPE trained on the family's prompts and outputs, delimiters spelled like special
    tokens as listed special tokens (as tests/serving_support.py builds it for the test families),
    and tag-like delimiters (:data:`TAGS`) as ordinary added tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from serving_support import CHAT_TEMPLATE, EOS, SPECIAL

    texts = [r["prefix"] for r in rows] + [r["text"] for r in rows]
    specials = sorted({m for t in texts for m in SPECIAL.findall(t)})
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=800, special_tokens=specials + [EOS], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    hf = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=EOS, additional_special_tokens=specials)
    template = (ROOT / "templates" / f"{family}.json").read_text(encoding="utf-8").replace("\\\\", "")
    tags = {m for t in texts + [template] for m in TAGS.findall(t)} | {"<think>", "</think>"}
    hf.add_tokens(sorted(tags - set(specials)))
    hf.chat_template = CHAT_TEMPLATE
    path = Path(root) / family
    hf.save_pretrained(path)
    config = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": len(hf),
              "bos_token_id": None, "eos_token_id": hf.eos_token_id}
    (path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return str(path)


def tools_of(row: dict) -> list:
    """The vector's tools, or one per expected call name (``f`` when there is none)."""
    if row.get("tools"):
        return row["tools"]
    names = sorted({c["function"]["name"] for c in row["expect"]["message"].get("tool_calls") or []}) or ["f"]
    return [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in names]


def right(row: dict, reasoning: str | None, content: str | None, calls: list) -> bool:
    """Whether (reasoning, content, [(name, arguments text)]) is the vector's expected message."""
    want = row["expect"]["message"]
    if (reasoning or "").strip() != (want.get("reasoning_content") or "").strip():
        return False
    if (content or "").strip() != (want.get("content") or "").strip():
        return False
    expected = [(c["function"]["name"], c["function"]["arguments"]) for c in want.get("tool_calls") or []]
    if len(calls) != len(expected):
        return False
    for (name, text), (want_name, want_args) in zip(calls, expected):
        try:
            args = json.loads(text) if isinstance(text, str) else text
        except ValueError:
            return False
        if name != want_name or args != want_args:
            return False
    return True


# --- vLLM ------------------------------------------------------------------------------------------

def vllm_runner():
    import support_vllm as t
    import respc.vllm as rv
    from vllm.entrypoints.openai.chat_completion.serving import OpenAIServingChat
    from vllm.entrypoints.openai.models.serving import BaseModelPath, OpenAIServingModels
    from vllm.renderers.hf import HfRenderer
    from vllm.renderers.online_renderer import OnlineRenderer
    from vllm.tokenizers import get_tokenizer

    tokenizers: dict[str, object] = {}

    def run(family: str, tokdir: str, row: dict, stream: bool, own: bool) -> bool:
        if own:
            tool, reasoning = VLLM[family]
        else:
            rv.register(family)
            tool = reasoning = f"respc-{family}"
        if tokdir not in tokenizers:
            tokenizers[tokdir] = get_tokenizer(tokdir)
        model_config = t._ModelConfig(tokenizer=tokdir)
        renderer = HfRenderer(t._VllmConfig(model_config), tokenizers[tokdir])
        engine = t._Engine(model_config, renderer, row["text"], row["id"])
        options = dict(enable_auto_tools=tool is not None, tool_parser=tool, reasoning_parser=reasoning or "")
        online = OnlineRenderer(model_config, renderer, request_logger=None, chat_template=t.CHAT_TEMPLATE,
                                chat_template_content_format="string", **{**options, "reasoning_parser": reasoning})
        models_ = OpenAIServingModels(engine, [BaseModelPath(name=t.MODEL, model_path=t.MODEL)])
        chat = OpenAIServingChat(engine, models_, "assistant", online_renderer=online, request_logger=None,
                                 chat_template=t.CHAT_TEMPLATE, chat_template_content_format="string", **options)
        message, _, _, _ = asyncio.run(t._complete(chat, t._request(row["prefix"], tools_of(row), stream=stream)))
        calls = [(c.function.name, c.function.arguments) for c in message.tool_calls or []]
        return right(row, (message.model_extra or {}).get("reasoning"), message.content, calls)

    return run, VLLM


# --- SGLang ----------------------------------------------------------------------------------------

def sglang_runner():
    import support_sglang as t
    import respc.sglang as rs
    from sglang.srt.entrypoints.openai.serving_chat import OpenAIServingChat
    from sglang.srt.plugins import load_plugins
    from sglang.srt.runtime_context import publish
    from sglang.srt.server_args import ServerArgs

    load_plugins()  # as `sglang serve` does at start: respc's entry point and its hooks
    published: dict[tuple, ServerArgs] = {}

    def run(family: str, tokdir: str, row: dict, stream: bool, own: bool) -> bool:
        if own:
            tool, reasoning = SGLANG[family]
        else:
            tool = reasoning = rs.register(family)
        key = (tool, reasoning, tokdir)
        if key not in published:
            published[key] = ServerArgs(model_path=tokdir, device="cpu", tool_call_parser=tool,
                                        reasoning_parser=reasoning)
        publish(published[key], role="tokenizer")
        module = importlib.import_module(f"respc.generated.{family}")
        opener, _ = rs._reasoning_delimiters(module)
        force = bool(opener) and row["prefix"].rstrip().endswith(opener.rstrip())
        manager = t._TokenizerManager(published[key], tokdir, row["text"], row["id"])
        chat = OpenAIServingChat(manager, t._TemplateManager(force))
        message, _ = asyncio.run(t._complete(chat, t._request(row["prefix"], tools_of(row), stream=stream)))
        calls = [(c.function.name, c.function.arguments) for c in message.tool_calls or []]
        return right(row, (message.model_extra or {}).get("reasoning_content"), message.content, calls)

    return run, SGLANG


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("engine", choices=["vllm", "sglang"])
    parser.add_argument("--family", action="append", help="only this family (repeatable)")
    parser.add_argument("--failures", action="store_true", help="list the wrong requests")
    args = parser.parse_args(argv)
    if not SHARED.is_dir():
        print(f"{SHARED} is absent", file=sys.stderr)
        return 2
    sys.path.insert(0, str(ROOT / "tests"))
    warnings.filterwarnings("ignore")
    logging.disable(logging.CRITICAL)
    run, mapping = vllm_runner() if args.engine == "vllm" else sglang_runner()
    rows = vectors()
    families = sorted(f for f in rows if f in mapping and (not args.family or f in args.family))
    unsupported = sorted(f for f in rows if f not in mapping)
    total: dict[str, int] = {"n": 0, "respc": 0, "own": 0}
    lines = [f"| family | {args.engine} parsers (tool, reasoning) | requests | respc right | engine's own right |",
             "|---|---|---:|---:|---:|"]
    failures = []
    with tempfile.TemporaryDirectory() as root:
        for family in families:
            tokdir = tokenizer_dir(family, rows[family], root)
            counts = {"respc": 0, "own": 0}
            own_errors: list[str] = []
            for row in rows[family]:
                for stream in (False, True):
                    for who in ("respc", "own"):
                        try:
                            ok = run(family, tokdir, row, stream, who == "own")
                        except Exception as exc:  # noqa: BLE001 - an engine error is a wrong answer
                            ok, why = False, f"{type(exc).__name__}: {str(exc)[-150:]}"
                            if who == "own":
                                own_errors.append(why)
                        else:
                            why = "differs"
                        counts[who] += ok
                        if not ok:
                            failures.append(f"{who}\t{'stream' if stream else 'whole'}\t{row['id']}\t{why}")
            n = 2 * len(rows[family])
            tool, reasoning = mapping[family]
            runs = len(own_errors) < n  # the engine's own parser answered at least once
            note = "" if runs else f" (every request failed: {own_errors[0].split(':')[0]})"
            lines.append(f"| {family} | {tool or '-'}, {reasoning or '-'} | {n} | {counts['respc']} | "
                         f"{counts['own']}{note} |")
            for key in ("", "runs_"):
                if key and not runs:
                    continue
                total[key + "families"] = total.get(key + "families", 0) + 1
                total[key + "n"] = total.get(key + "n", 0) + n
                total[key + "respc"] = total.get(key + "respc", 0) + counts["respc"]
                total[key + "own"] = total.get(key + "own", 0) + counts["own"]
            print(lines[-1], file=sys.stderr, flush=True)
    lines.append(f"| **all {len(families)} families** | | **{total['n']}** | **{total['respc']}** | "
                 f"**{total['own']}** |")
    lines.append(f"| **the {total.get('runs_families', 0)} where the engine's parser runs** | | "
                 f"**{total.get('runs_n', 0)}** | **{total.get('runs_respc', 0)}** | **{total.get('runs_own', 0)}** |")
    print("\n".join(lines))
    print(f"\nOutputs: {total['n'] // 2} ({', '.join(FILES)}), each streamed and whole.")
    print(f"Catalogue families in the corpus without a {args.engine} parser (not counted): {', '.join(unsupported)}")
    if args.failures:
        print("\n" + "\n".join(failures))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    raise SystemExit(main())
