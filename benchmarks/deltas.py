"""µs per chunk of a parser wrapped in ``respc.openai.ChatCompletionStream`` (issue 9;
docs/openai.md "Cost"), on the benchmark
inputs (``benchmarks/inputs.py``: long reasoning, an answer, three tool calls, fed in 4-character
chunks), in three modes against the parser alone:

- ``parser+stream``: ``feed`` returning chunk dicts;
- ``+json.dumps``: those dicts rendered as server-sent events with ``json.dumps`` (``respc.openai.sse``),
  what a server that takes the dicts pays;
- ``parser+feed_sse``: ``feed_sse`` returning the server-sent-event text itself.

For scale, the floor loop (one event per chunk, no parsing) and what building one chunk dict adds to
it (the least any dict-returning adapter adds).

Run ``python benchmarks/deltas.py [--size 100k] [--templates qwen3,gpt_oss,...|all] [--repeat 5] [--calls N]``
(``--calls N``: the output ends in N tool calls instead of three, tool-heavy output where the argument readers
dominate).
``--before REV`` instead compares the adapter as it was at git revision ``REV`` (``respc_pkg/openai.py`` and
the helper modules it imported then, loaded from git and run on today's parsers) with today's, in one run:
the dicts and ``feed_sse`` ratios against the parser, before and after, per template.
Prints figures and, per mode, whether the target is met (median over the templates), the largest ratio and
how many templates are within it; asserts nothing
about time. Target: the adapter adds at most 50 % to the parser.
"""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
import time
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import inputs  # noqa: E402
from bench import Floor, median, table  # noqa: E402

from respc.openai import ChatCompletionStream, sse  # noqa: E402

DEFAULT_TEMPLATES = ("qwen3", "gpt_oss", "qwen3_coder", "hermes2pro", "mistral_small_3_2", "deepseek_v3_1",
                     "glm4_5", "kimi_k2", "granite3")
TARGET = 1.5


def _once(make, chunks) -> float:
    """CPU µs per chunk of one run: ``make()`` gives ``(feed, finish)``, fed every chunk, then finished."""
    feed, finish = make()
    t0 = time.process_time()
    for chunk in chunks:
        feed(chunk)
    finish()
    return (time.process_time() - t0) / len(chunks) * 1e6


def _interleaved(makers: dict, chunks, repeat: int) -> dict:
    """Least µs per chunk of each maker over ``repeat`` runs, the makers run in turn (one process,
    interleaved, so a load change on a shared machine hits them all alike; the least run is the
    least disturbed one, as ``timeit`` advises)."""
    runs: dict = {name: [] for name in makers}
    for _ in range(repeat):
        for name, make in makers.items():
            runs[name].append(_once(make, chunks))
    return {name: min(times) for name, times in runs.items()}


def _makers(module) -> dict:
    """name -> maker of ``(feed, finish)`` for every loop measured (see the module docstring)."""
    def plain(obj):
        return obj.feed, obj.finalize

    def stream():
        return ChatCompletionStream(module.ResponseParser(""), ids=lambda n: f"call_{n}")

    def dumps():
        s = stream()
        feed = s.feed
        return (lambda text: sse(feed(text))), (lambda: sse(s.finalize()) + "data: [DONE]\n\n")

    def feed_sse():
        s = stream()
        return s.feed_sse, s.finalize_sse

    return {"floor": lambda: plain(Floor()), "floor+chunk": lambda: plain(FloorChunk()),
            "parser": lambda: plain(module.ResponseParser("")), "stream": lambda: plain(stream()),
            "dumps": dumps, "sse": feed_sse}


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


def _adapter_at(rev: str):
    """``respc.openai`` as it was at git revision ``rev``, loaded from git into a module of its own; the
    helper modules it imported then (``respc.openai_pythonic``, ``respc.openai_dialects``, since folded into
    ``runtime/formats``) are loaded from ``rev`` too while it loads."""
    import respc

    def load(path: str, name: str):
        shown = subprocess.run(["git", "show", f"{rev}:{path}"], capture_output=True, text=True, cwd=HERE.parent)
        if shown.returncode:
            return None
        module = types.ModuleType(name)
        module.__file__ = f"{rev}:{path}"
        sys.modules[name] = module
        exec(compile(shown.stdout, module.__file__, "exec"), module.__dict__)  # noqa: S102 - our own history
        return module

    helpers = ("openai_pythonic", "openai_dialects")
    saved = {name: importlib.import_module(f"respc.{name}") for name in helpers}
    try:
        for name in helpers:
            old = load(f"respc_pkg/{name}.py", f"respc.{name}")
            if old is not None:
                setattr(respc, name, old)
        return load("respc_pkg/openai.py", "respc._openai_before")
    finally:
        for name, module in saved.items():
            setattr(respc, name, module)
            sys.modules[f"respc.{name}"] = module


def before_after(rev: str, templates, size, repeat: int, calls: int = inputs.N_TOOL_CALLS) -> None:
    """Print the adapter's cost at ``rev`` and now, against the parser, per template (one interleaved run)."""
    before = _adapter_at(rev).ChatCompletionStream

    def adapter(cls, module, sse: bool):
        def make():
            s = cls(module.ResponseParser(""), ids=lambda n: f"call_{n}")
            return (s.feed_sse, s.finalize_sse) if sse else (s.feed, s.finalize)
        return make

    rows, ratios = [], {k: [] for k in ("dicts before", "dicts after", "feed_sse before", "feed_sse after")}
    for name in templates:
        module = importlib.import_module(f"respc.generated.{name}")
        chunks = inputs.chunks(inputs.build(name, size, calls=calls))
        makers = {"parser": lambda: (lambda p: (p.feed, p.finalize))(module.ResponseParser("")),
                  "dicts before": adapter(before, module, False), "dicts after": adapter(ChatCompletionStream, module, False),
                  "feed_sse before": adapter(before, module, True),
                  "feed_sse after": adapter(ChatCompletionStream, module, True)}
        got = _interleaved(makers, chunks, repeat)
        row = [name, f"{got['parser']:.2f}"]
        for key in ratios:
            ratios[key].append(got[key] / got["parser"])
            row.append(f"{got[key] / got['parser']:.2f}x")
        rows.append(row)
    rows.append(["median", ""] + [f"{median(v):.2f}x" for v in ratios.values()])
    print(f"{size} output ({calls} tool calls) in {inputs.CHUNK}-character chunks; the adapter at {rev} (before) and now (after), "
          f"against the parser alone (µs per chunk; least of {repeat} interleaved runs)")
    print(table(["template", "parser"] + list(ratios), rows))


MODES = (("stream", "parser+stream (dicts)"), ("dumps", "parser+stream+json.dumps"), ("sse", "parser+feed_sse"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="100k", type=inputs.size_arg, help="output size, e.g. 10k (default 100k)")
    ap.add_argument("--templates", default=",".join(DEFAULT_TEMPLATES),
                    type=lambda text: inputs.catalogue() if text == "all" else inputs.templates_arg(text),
                    help="comma-separated catalogue names (default: the nine of the issue-9 table)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--calls", type=int, default=inputs.N_TOOL_CALLS,
                    help=f"tool calls at the end of the output (default {inputs.N_TOOL_CALLS})")
    ap.add_argument("--before", default=None, metavar="REV",
                    help="compare with respc/openai.py at this git revision instead (one run, before/after)")
    args = ap.parse_args(argv)
    size = args.size
    if args.before:
        before_after(args.before, args.templates, size, args.repeat, args.calls)
        return 0
    rows = []
    ratios: dict = {mode: [] for mode, _ in MODES}
    for name in args.templates:
        module = importlib.import_module(f"respc.generated.{name}")
        chunks = inputs.chunks(inputs.build(name, size, calls=args.calls))
        got = _interleaved(_makers(module), chunks, args.repeat)
        parser = got["parser"]
        row = [name, f"{got['floor']:.2f}", f"{got['floor+chunk'] - got['floor']:.2f}", f"{parser:.2f}"]
        for mode, _ in MODES:
            ratios[mode].append(got[mode] / parser)
            row.append(f"{got[mode]:.2f} ({got[mode] / parser:.2f}x)")
        rows.append(row)
    rows.append(["median", "", "", ""] + [f"({median(ratios[mode]):.2f}x)" for mode, _ in MODES])
    print(f"{args.size} output in {inputs.CHUNK}-character chunks, µs per chunk (CPU time, least of {args.repeat} "
          "interleaved runs; (n x): against the parser alone; 'chunk dict': what building one chunk dict adds "
          "to the floor loop)")
    print(table(["template", "floor", "chunk dict", "parser"] + [title for _, title in MODES], rows))
    for mode, title in MODES:
        verdict = "met" if median(ratios[mode]) <= TARGET else "NOT met"
        within = sum(ratio <= TARGET for ratio in ratios[mode])
        print(f"target {title} <= {TARGET} x parser: {verdict} (median {median(ratios[mode]):.2f}x, "
              f"max {max(ratios[mode]):.2f}x, {within} of {len(ratios[mode])} templates within)")
    # context: one chunk's dict and its json.dumps
    chunk = ChatCompletionStream(module.ResponseParser(""))._chunk({"content": "abcd"})
    n = 20000
    t0 = time.process_time()
    for _ in range(n):
        json.dumps(chunk, ensure_ascii=False)
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
