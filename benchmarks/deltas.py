"""µs per chunk of a parser wrapped in ``respc.openai.ChatCompletionStream`` (issue 9), against the
parser alone and against the floor loop, on the benchmark inputs (``benchmarks/inputs.py``: long
reasoning, an answer, three tool calls, fed in 4-character chunks).

Run ``python benchmarks/deltas.py [--size 100k] [--templates qwen3,gpt_oss,...] [--repeat 5]``.
Prints figures; asserts nothing about time. Target: the adapter adds at most 50 % to the parser.
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import inputs  # noqa: E402
from bench import Floor, median, parse_size, table  # noqa: E402

from respc.openai import ChatCompletionStream  # noqa: E402

DEFAULT_TEMPLATES = ("qwen3", "gpt_oss", "qwen3_coder", "hermes2pro", "mistral_small_3_2", "deepseek_v3_1",
                     "glm4_5", "kimi_k2", "granite3")
TARGET = 1.5


def _time(make, chunks, repeat: int) -> float:
    best = []
    for _ in range(repeat):
        obj = make()
        feed = obj.feed
        t0 = time.process_time()
        for chunk in chunks:
            feed(chunk)
        obj.finalize()
        best.append((time.process_time() - t0) / len(chunks) * 1e6)
    return statistics.median(best)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="100k")
    ap.add_argument("--templates", default=",".join(DEFAULT_TEMPLATES))
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    size = parse_size(args.size)
    rows, ratios = [], []
    for name in args.templates.split(","):
        module = importlib.import_module(f"respc.generated.{name}")
        text = inputs.build(name, size)
        chunks = inputs.chunks(text)
        floor = _time(Floor, chunks, args.repeat)
        parser = _time(lambda: module.ResponseParser(""), chunks, args.repeat)
        stream = _time(lambda: ChatCompletionStream(module.ResponseParser(""), ids=lambda n: f"call_{n}"),
                       chunks, args.repeat)
        ratios.append(stream / parser)
        rows.append([name, f"{floor:.3f}", f"{parser:.2f}", f"{stream:.2f}", f"{stream / parser:.2f}",
                     f"{stream - parser:.2f}"])
    rows.append(["median", "", "", "", f"{median(ratios):.2f}", ""])
    print(f"{args.size} output in {inputs.CHUNK}-character chunks, µs per chunk (CPU time, median of {args.repeat} runs)")
    print(table(["template", "floor", "parser", "parser+stream", "stream/parser", "added µs"], rows))
    print(f"target stream/parser <= {TARGET}: {'met' if median(ratios) <= TARGET else 'NOT met'} (median)")
    # context: what a server does with each chunk next (serialise it for the wire)
    chunk = ChatCompletionStream(module.ResponseParser(""))._chunk({"content": "abcd"})
    n = 20000
    t0 = time.process_time()
    for _ in range(n):
        json.dumps(chunk)
    dumps = (time.process_time() - t0) / n * 1e6
    t0 = time.process_time()
    for _ in range(n):
        _ = [{"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m",
              "choices": [{"index": 0, "delta": {"content": "abcd"}, "logprobs": None, "finish_reason": None}]}]
    build = (time.process_time() - t0) / n * 1e6
    print(f"for scale: building one chunk dict {build:.2f} µs, json.dumps of it {dumps:.2f} µs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
