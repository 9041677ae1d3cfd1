"""Grammar export benchmark (issue 10;
docs/grammar.md "Cost"): how long building and compiling a template's grammar takes.

Run ``python benchmarks/grammar.py [--templates qwen3,hermes2pro] [--tools 1,8,32]``. For each
template and tool count it prints the median of 3 runs of: building the IR and rendering all four
formats (respc), compiling the xgrammar EBNF (``GrammarCompiler.compile_grammar``, byte vocabulary),
building an llguidance matcher (``LLMatcher``, byte vocabulary), and building plus compiling the
xgrammar structural tag (``Grammar.from_structural_tag``; ``n/a`` for templates it cannot express).
The engines are the ``grammar`` extra; a missing engine prints ``-``. This prints figures; it asserts nothing about time.

``--builtin`` prints instead respc's structural tag against xgrammar's built-in one for the same tools
(``xgrammar.builtin_structural_tag.get_model_structural_tag``, style in :data:`BUILTIN`), for every
template with a built-in style: xgrammar's compile (byte vocabulary, one thread, no cache, CPU ms, best
of 3) of respc's tag, of the built-in tag as it is by default (properties in schema order) and with
``any_order=True`` (properties in any order, as respc's tag and parser take them), and respc's own build
of the tag (ms). ``--schemas same`` gives every tool the same schema, ``distinct`` names every tool's
properties (and enum member) apart; ``both`` (the default) prints both. ``--vocab N`` compiles over N
tokens (the 256 bytes, then made-up words) instead of 257.
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


#: respc template -> xgrammar 0.2.9's built-in structural-tag style for the same output format
BUILTIN = {"gemma4": "gemma_4", "qwen3": "qwen_3", "hermes2pro": "qwen_3", "llama3_json": "llama", "kimi_k2": "kimi",
           "gpt_oss": "harmony", "deepseek_r1": "deepseek_r1", "deepseek_v3_1": "deepseek_v3_1",
           "qwen3_coder": "qwen_3_coder", "qwen3_5": "qwen_3_5", "glm4_5": "glm_4_7", "minimax_m2": "minimax",
           "minimax_m3": "minimax_m3", "deepseek_v3_2": "deepseek_v3_2", "kimi_k3": "kimi_k3",
           "deepseek_v4": "deepseek_v4", "deepseek_v4_1": "deepseek_v4_1", "cohere": "cohere", "exaone4": "exaone"}


def tools(n: int, distinct: bool = False) -> list[dict]:
    """``n`` tools with four typed parameters each (two required); ``distinct``: each tool's
    property names (and enum member) carry its number, so no two tools share a schema."""
    def k(x: str, i: int) -> str:
        return f"{x}_{i}" if distinct else x
    return [{"type": "function", "function": {"name": f"tool_{i}", "parameters": {
        "type": "object", "required": [k("query", i), k("limit", i)], "properties": {
            k("query", i): {"type": "string"}, k("limit", i): {"type": "integer"},
            k("mode", i): {"type": "string", "enum": ["fast", k("exact", i)]},
            k("tags", i): {"type": "array", "items": {"type": "string"}}}}}}
        for i in range(n)]


def _cpu_best(fn, runs: int = 3) -> float:
    """CPU milliseconds of ``fn()``, best of ``runs`` (the machine is shared)."""
    times = []
    for _ in range(runs):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times) * 1000


def xgr_compiler(vocab: int = 257):
    """An xgrammar compiler over ``vocab`` tokens (256 bytes, made-up words, the end token), one
    thread, no cache."""
    import xgrammar as xgr

    words = [bytes([i]) for i in range(256)]
    letters = "etaoinshrdlucmfwypvbgk"
    i = 0
    while len(words) < vocab - 1:
        i += 1
        w, j = "", i
        while j:
            j, r = divmod(j, len(letters))
            w += letters[r]
        words.append((" " + w if i % 2 else w).encode())
    info = xgr.TokenizerInfo(words + [b"<eos>"], vocab_type=xgr.VocabType.RAW, stop_token_ids=[len(words)])
    return xgr.GrammarCompiler(info, cache_enabled=False, max_threads=1)


def builtin_table(names: list[str], counts: list[int], schemas: list[str], vocab: int) -> None:
    """Print respc's structural tag against xgrammar's built-in one (module docstring, ``--builtin``)."""
    from xgrammar.builtin_structural_tag import get_model_structural_tag

    compiler = xgr_compiler(vocab)
    print(f"vocabulary {vocab} tokens; CPU ms, best of 3")
    print(f"{'template':<14} {'style':<14} {'schemas':<8} {'tools':>5} {'respc tag':>10} {'built-in':>9} "
          f"{'any order':>10} {'ratio':>6} {'ratio any':>9} {'respc build':>12}")
    for name in names:
        template = compile_source(REPO / "templates" / f"{name}.json").template
        style = BUILTIN[name]
        for kind in schemas:
            for n in counts:
                offered = tools(n, kind == "distinct")
                try:
                    tag = json.dumps(build_structural_tag(template, offered)[0])
                except StructuralTagError:
                    respc = build = None
                else:
                    build = _cpu_best(lambda: build_structural_tag(template, offered))
                    respc = _cpu_best(lambda: compiler.compile_structural_tag(tag))
                plain = get_model_structural_tag(style, tools=offered)
                anyo = get_model_structural_tag(style, tools=offered, any_order=True)
                b = _cpu_best(lambda: compiler.compile_structural_tag(plain))
                a = _cpu_best(lambda: compiler.compile_structural_tag(anyo))
                cells = ["refused"] * 2 + ["-"] * 3 if respc is None else [
                    f"{respc:.1f}", "", f"{respc / b:.1f}", f"{respc / a:.1f}", f"{build:.1f}"]
                print(f"{name:<14} {style:<14} {kind:<8} {n:>5} {cells[0]:>10} {b:>9.1f} {a:>10.1f} {cells[2]:>6} "
                      f"{cells[3]:>9} {cells[4]:>12}", flush=True)


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
    ap.add_argument("--builtin", action="store_true", help="respc's structural tag against xgrammar's built-in one")
    ap.add_argument("--schemas", default="both", choices=("same", "distinct", "both"))
    ap.add_argument("--vocab", type=int, default=257)
    args = ap.parse_args()
    if args.builtin:
        names = list(BUILTIN) if args.templates == DEFAULT else args.templates.split(",")
        schemas = ["same", "distinct"] if args.schemas == "both" else [args.schemas]
        builtin_table(names, [int(x) for x in args.tools.split(",")], schemas, args.vocab)
        return
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
