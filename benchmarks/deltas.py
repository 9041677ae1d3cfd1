"""µs per chunk of a parser wrapped in ``respc.openai.ChatCompletionStream`` (issue 9), against the
parser alone, against the floor loop and against the floor loop that also builds one chunk dict per
chunk (the least any dict-returning adapter adds), on the benchmark inputs (``benchmarks/inputs.py``: long
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


def _once(make, chunks) -> float:
    obj = make()
    feed = obj.feed
    t0 = time.process_time()
    for chunk in chunks:
        feed(chunk)
    obj.finalize()
    return (time.process_time() - t0) / len(chunks) * 1e6


def _interleaved(makers: dict, chunks, repeat: int) -> dict:
    """Median µs per chunk of each maker, the makers run in turn ``repeat`` times (one process,
    interleaved, so a load change on a shared machine hits them all alike)."""
    runs: dict = {name: [] for name in makers}
    for _ in range(repeat):
        for name, make in makers.items():
            runs[name].append(_once(make, chunks))
    return {name: statistics.median(times) for name, times in runs.items()}


class FloorChunk(Floor):
    """The floor loop plus building one ``chat.completion.chunk`` dict per chunk the cheapest way
    (``dict.copy`` of templates, as the adapter's fast path does): the least any adapter that
    returns chunk dicts can cost on top of a parser."""

    __slots__ = ()
    OUTER = {"id": "chatcmpl-x", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": None}
    INNER = {"index": 0, "delta": None, "logprobs": None, "finish_reason": None}

    def feed(self, text):
        events = Floor.feed(self, text)
        choice = self.INNER.copy()
        choice["delta"] = {"content": events[0]["text"]}
        chunk = self.OUTER.copy()
        chunk["choices"] = [choice]
        return [chunk]


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
        got = _interleaved({
            "floor": Floor, "floor+chunk": FloorChunk, "parser": lambda: module.ResponseParser(""),
            "stream": lambda: ChatCompletionStream(module.ResponseParser(""), ids=lambda n: f"call_{n}"),
        }, chunks, args.repeat)
        floor, chunk_floor, parser, stream = got["floor"], got["floor+chunk"], got["parser"], got["stream"]
        ratios.append(stream / parser)
        rows.append([name, f"{floor:.3f}", f"{chunk_floor - floor:.2f}", f"{parser:.2f}", f"{stream:.2f}",
                     f"{stream / parser:.2f}", f"{stream - parser:.2f}"])
    rows.append(["median", "", "", "", "", f"{median(ratios):.2f}", ""])
    print(f"{args.size} output in {inputs.CHUNK}-character chunks, µs per chunk (CPU time, median of {args.repeat} "
          "interleaved runs; 'chunk dict': what building one chunk dict adds to the floor loop)")
    print(table(["template", "floor", "chunk dict", "parser", "parser+stream", "stream/parser", "added µs"], rows))
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
