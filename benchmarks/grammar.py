"""Grammar export benchmark (issue 10): how long building and compiling a template's grammar takes.

Run ``python benchmarks/grammar.py [--templates qwen3,hermes2pro] [--tools 1,8,32]``. For each
template and tool count it prints the median of 3 runs of: building the IR and rendering all four
formats (respc), compiling the xgrammar EBNF (``GrammarCompiler.compile_grammar``, byte vocabulary),
building an llguidance matcher (``LLMatcher``, byte vocabulary), and building plus compiling the
xgrammar structural tag (``Grammar.from_structural_tag``; ``n/a`` for templates it cannot express).
The engines are the ``grammar`` extra; a missing engine prints ``-``. This prints figures; it asserts nothing about time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from respc.compiler.api import compile_source  # noqa: E402
from respc.compiler.grammar_ir import build_grammar_ir  # noqa: E402
from respc.compiler.grammar_render import FORMATS, render  # noqa: E402
from respc.compiler.grammar_structural import StructuralTagError, build_structural_tag  # noqa: E402

DEFAULT = "qwen3,hermes2pro,qwen3_coder,llama4_pythonic,mistral_small_3_2,kimi_k2,gpt_oss,deepseek_v3_2"


def tools(n: int) -> list[dict]:
    """``n`` tools with four typed parameters each (two required)."""
    return [{"type": "function", "function": {"name": f"tool_{i}", "parameters": {
        "type": "object", "required": ["query", "limit"], "properties": {
            "query": {"type": "string"}, "limit": {"type": "integer"},
            "mode": {"type": "string", "enum": ["fast", "exact"]}, "tags": {"type": "array", "items": {"type": "string"}}}}}}
        for i in range(n)]


def _median(fn, runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--templates", default=DEFAULT)
    ap.add_argument("--tools", default="1,8,32")
    args = ap.parse_args()
    try:
        import grammar_engines as eng
        import llguidance
        import xgrammar as xgr
    except ImportError:
        eng = None
    print(f"{'template':<20} {'tools':>5} {'respc ms':>9} {'xgrammar ms':>12} {'llguidance ms':>14} "
          f"{'struct tag ms':>14} {'gbnf bytes':>11}")
    for name in args.templates.split(","):
        template = compile_source(REPO / "templates" / f"{name}.json")
        for n in (int(x) for x in args.tools.split(",")):
            offered = tools(n)
            respc_ms = _median(lambda: [render(build_grammar_ir(template.template, offered), f) for f in FORMATS])
            g = build_grammar_ir(template.template, offered)
            ebnf, lark = render(g, "xgrammar"), render(g, "llguidance")
            xg = ll = "-"
            if eng is not None:
                compiler = eng._xgr_compiler()
                xg = f"{_median(lambda: compiler.compile_grammar(xgr.Grammar.from_ebnf(ebnf))):.1f}"
                tok = eng._ll_tokenizer()
                ll = f"{_median(lambda: llguidance.LLMatcher(tok, lark, log_level=0)):.1f}"
            st = "-" if eng is None else "n/a"
            try:
                build_structural_tag(template.template, offered)
            except StructuralTagError:
                pass
            else:
                if eng is not None:
                    def structural() -> None:
                        tag, _notes = build_structural_tag(template.template, offered)
                        compiler.compile_grammar(xgr.Grammar.from_structural_tag(json.dumps(tag)))
                    st = f"{_median(structural):.1f}"
            print(f"{name:<20} {n:>5} {respc_ms:>9.1f} {xg:>12} {ll:>14} {st:>14} {len(render(g, 'gbnf')):>11}")


if __name__ == "__main__":
    main()
