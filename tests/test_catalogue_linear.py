"""Whitespace runs in the answer stay linear in the families whose headers may follow a run
(issue 28: muse_glimmer's recipient headers, gpt_oss's built-in tool headers, k2_horizon's calls).

A delimiter that may begin with a run of whitespace is held while the run grows; the parser must
not rescan the run for every chunk. Each output is streamed in chunks of 64 characters at two
sizes; the time may grow at most 2.5 times when the size doubles (the best of five runs each).
"""

from __future__ import annotations

import importlib
import time

import pytest

RUNS = [
    ("muse_glimmer", lambda n: "Hello" + " " * n + "x"),
    ("muse_glimmer", lambda n: "to=f" + " " * n),
    ("muse_glimmer", lambda n: "to=f<|message|>" + " " * n),
    ("gpt_oss", lambda n: "<|channel|>final<|message|>x" + " " * n + "y"),
    ("gpt_oss", lambda n: "<|channel|>analysis to=python" + " " * n),
    ("k2_horizon", lambda n: "<ifm|tool_call>a" + " " * n),
]


def _best(module, text: str) -> float:
    best = float("inf")
    for _ in range(5):
        parser = module.ResponseParser("", errors="recover")
        start = time.perf_counter()
        for i in range(0, len(text), 64):
            parser.feed(text[i:i + 64])
        parser.finalize()
        best = min(best, time.perf_counter() - start)
    return best


@pytest.mark.parametrize("family,make", RUNS, ids=[f"{f}-{i}" for i, (f, _) in enumerate(RUNS)])
def test_whitespace_run_is_linear(family, make):
    module = importlib.import_module(f"respc.generated.{family}")
    small, large = _best(module, make(200_000)), _best(module, make(400_000))
    assert large <= 2.5 * small + 0.01, (family, small, large)
