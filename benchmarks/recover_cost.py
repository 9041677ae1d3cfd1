"""Cost of errors="recover" per call (µs): each family case of a template parsed whole and streamed
in 4-character chunks, and one value full of closers (a closer inside an open value every 17
characters, 2,000 of them), best of several repeats (CPU time: the machine may be shared).

    python benchmarks/recover_cost.py [TEMPLATE ...]   (default: qwen3_coder gemma4 kimi_k2_thinking glm4_5)
"""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from support import family_cases  # noqa: E402

#: a body with a value full of closers, per template: (head, unit, tail)
FULL = {
    "qwen3_coder": ("<tool_call>\n<function=write>\n<parameter=content>\nx", "ab c</tool_call> ",
                    "\n</parameter>\n</function>\n</tool_call>"),
    "gemma4": ('<|tool_call>call:write{content:<|"|>x', "ab <tool_call|> ", '<|"|>}<tool_call|>'),
    "kimi_k2_thinking": ('<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>'
                         '{"code": "x', "ab <|tool_call_begin|> ", '"}<|tool_call_end|><|tool_calls_section_end|>'),
    "glm4_5": ("<tool_call>write\n<arg_key>content</arg_key>\n<arg_value>x", "ab </tool_call> ",
               "</arg_value>\n</tool_call>"),
    "lfm2": ('<|tool_call_start|>[write(content="x', "ab c<|tool_call_end|> ", '")]<|tool_call_end|>'),
}


def best(fn, repeats=5):
    out = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        out = min(out, time.process_time() - t0)
    return out


def measure(name: str) -> tuple[float, float, float]:
    module = importlib.import_module(f"respc.generated.{name}")
    cases = [(c.get("prefix", ""), c["text"], c.get("tools")) for c in family_cases(name)]

    def whole():
        for prefix, text, tools in cases:
            p = module.ResponseParser(prefix, tools, errors="recover")
            p.feed(text)
            p.finalize()

    def streamed():
        for prefix, text, tools in cases:
            p = module.ResponseParser(prefix, tools, errors="recover")
            for i in range(0, len(text), 4):
                p.feed(text[i:i + 4])
            p.finalize()

    head, unit, tail = FULL[name]
    full = head + unit * 2000 + tail
    prefix = cases[0][0] if cases else ""

    def closers():
        p = module.ResponseParser(prefix, errors="recover")
        p.feed(full)
        p.finalize()

    n = len(cases)
    return (best(lambda: [whole() for _ in range(10)]) / (10 * n) * 1e6,
            best(lambda: [streamed() for _ in range(3)]) / (3 * n) * 1e6,
            best(closers) * 1e6)


if __name__ == "__main__":
    names = sys.argv[1:] or list(FULL)[:4]
    print(f"{'template':18} {'whole µs/call':>14} {'4-char µs/call':>15} {'closers µs':>11}")
    for name in names:
        w, s, c = measure(name)
        print(f"{name:18} {w:14.1f} {s:15.1f} {c:11.0f}")
