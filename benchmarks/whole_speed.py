"""Whole text at scan speed (issue 33;
README.md "Performance"): ``parse_response`` against the transformers reference and
the find floor, and streaming against its floor, on realistic prose and on the adversarial filler.

Inputs, per catalogue template and size (default 10 kB and 100 kB), two sets reported apart:

* ``realistic``: the family's output (its reasoning delimiters, its tool calls written as the
  family's real sample writes them: ``inputs.pieces(..., real_calls=True)``, the call from the
  family's test case with its newlines and spacing, inside the tool-call section that sample opens
  and closes, e.g. ``<｜tool▁calls▁begin｜>`` … ``<｜tool▁calls▁end｜>``, or, for a family that
  writes its calls as one list, its sample's list of 2 or 3 calls once; ``--literal-calls`` gives
  the literal-built calls used before 2026-12-05) with reasoning and answer lengthened by varied
  prose holding ``<``, ``[``,
  ``{``, ``|`` and newlines at the density measured in the corpus's real outputs
  (``inputs.corpus_density``, printed first; a built-in sample without ``../shared``);
* ``adversarial``: the same with ``inputs.FILLER``, ten times as dense in ``<`` (the set
  ``bench.py`` uses).

Per input, in one run, interleaved (every round times each figure once; the least of ``--rounds``
rounds is kept), CPU time (``time.process_time``) with the cyclic collector off, each figure a loop
calibrated to about 2 ms after one untimed call:

* ``ours``: ``module.parse_response(text, "")`` (the whole-text path, ``runtime/whole.py``);
* ``ref``: ``transformers.utils.chat_parsing.parse_response`` on the template's v1 form (``n/a``
  for a v2-only template);
* ``floor``: one ``str.find`` per literal ``open``/``close`` delimiter over the text;
* ``ours 0 calls``: ``ours`` on the same input without its tool calls (prose of the same length),
  so ``per call`` = (ours - ours 0 calls) / calls, the cost of decoding one call;
* ``stream``: µs per 4-character chunk, ``feed`` of every chunk + ``finalize``, against
  ``bench.Floor`` (one event dict per chunk);
* ``sglang`` / ``vllm``: the engine's own non-streaming path on the same text (``benchmarks/engines.py``:
  SGLang's ``ReasoningParser`` / ``FunctionCallParser`` ``parse_non_stream``, vLLM's composed
  parser's ``parse``, i.e. its ``extract_reasoning`` and ``extract_tool_calls``; parsers built per
  request, as the servers build them), with ``<engine>/ours``. A column only for an engine that
  imports here (a printed line says why one is left out; the two engines live in different
  virtual environments, so run this once in each); ``n/a: why`` for a family without an engine
  parser or whose parser cannot run here; ``(k calls)`` when the engine's parser read another
  number of tool calls than respc (it then did less work, or other work). ``calls`` (and
  ``per call``) count the tool calls respc reads in the input.

Targets (issue 33): ref/ours >= 3 (the reference at least 3 times slower); engine/ours >= 3; ours <= 3 x floor + calls x ``--per-call-us`` (the per-call cost
this benchmark states); stream/floor <= 3. A whole-text message that differs from the streaming
one stops the run.

Usage: ``python benchmarks/whole_speed.py [--templates a,b] [--sizes 10k,100k] [--sets
realistic,adversarial] [--rounds 5] [--literal-calls] [--json out.json]``; ``--compare before.json after.json``
prints the before/after table of two saved runs (markdown).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import logging
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import engines  # noqa: E402
import inputs  # noqa: E402

#: the per-call cost the whole-text target allows on top of 3x the find floor (µs per tool call)
PER_CALL_US = 20.0
#: a timed loop runs for at least this long (seconds of CPU)
LOOP_S = 0.002


def _loop(fn, n: int) -> float:
    """CPU µs per call of ``n`` calls of ``fn``, collector off."""
    gc.disable()
    try:
        t0 = time.process_time()
        for _ in range(n):
            fn()
        return (time.process_time() - t0) / n * 1e6
    finally:
        gc.enable()


def _calibrate(fn) -> int:
    t0 = time.process_time()
    fn()
    once = time.process_time() - t0
    return max(1, min(5000, int(LOOP_S / max(once, 1e-7))))


def _interleaved(fns: dict, rounds: int) -> dict:
    """{key: least µs per call over ``rounds`` rounds}; each round calls every function's loop once,
    after one untimed call (warm, as a batch job runs it)."""
    counts = {k: _calibrate(fn) for k, fn in fns.items()}
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(rounds):
        for key, fn in fns.items():
            fn()
            best[key] = min(best[key], _loop(fn, counts[key]))
    return best


def _stream(parser_class, chunks):
    def run():
        parser = parser_class("")
        feed = parser.feed
        for chunk in chunks:
            feed(chunk)
        return parser.finalize()[0]
    return run


def _floor_stream(chunks):
    from bench import Floor

    def run():
        parser = Floor()
        feed = parser.feed
        for chunk in chunks:
            feed(chunk)
        return parser.finalize()[0]
    return run


def measure(names: list[str], sizes: list[int], sets: list[str], rounds: int, per_call: float,
            real_calls: bool = True) -> list[dict]:
    from transformers.utils.chat_parsing import parse_response as ref_parse

    density, source = inputs.corpus_density()
    print(f"markup density per 1,000 characters of prose, {source}:")
    print("  realistic:   " + "  ".join(f"{c!r} {density[c]:.2f}" for c in inputs.MARKUP))
    filler = inputs.FILLER
    print("  adversarial: " + "  ".join(f"{c!r} {filler.count(c) * 1000 / len(filler):.2f}" for c in inputs.MARKUP)
          + "  (inputs.FILLER)")
    found = engines.available()
    active = [e for e, why in found.items() if why is None]
    for engine, why in found.items():
        if why is not None:
            print(f"no {engine} column: {why}")
    head = _head(active)
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    rows = []
    for name in names:
        doc = inputs.load(name)
        ref_doc = None if inputs.reference_missing(name) else inputs.reference_doc(name)
        module = importlib.import_module(f"respc.generated.{name}")
        literals = sorted({lit for spec in doc["fields"].values() for key in ("open", "close")
                           for lit in inputs._literals(spec.get(key))})
        for which in sets:
            for size in sizes:
                if which == "realistic":
                    text, dropped = inputs.realistic_build(name, size, density, doc, real_calls=real_calls)
                    bare, _ = inputs.realistic_build(name, size, density, doc, calls=0, real_calls=real_calls)
                else:
                    text, dropped = inputs.build(name, size, doc), ""
                    bare = inputs.build(name, size, doc, calls=0)
                parse = module.parse_response
                message = parse(text, "")
                if message != _stream(module.ResponseParser, [text])():
                    raise AssertionError(f"{name} {which} {size}: the whole-text and streaming messages differ")
                chunks = inputs.chunks(text)
                fns = {
                    "ours": lambda: parse(text, ""),
                    "ours0": lambda: parse(bare, ""),
                    "floor": lambda: [text.find(lit) for lit in literals],
                    "stream": _stream(module.ResponseParser, chunks),
                    "sfloor": _floor_stream(chunks),
                }
                equal = "n/a"
                if ref_doc is not None:
                    try:
                        equal = "yes" if ref_parse(text, ref_doc, prefix="") == message else "no"
                    except Exception as exc:  # noqa: BLE001 - the reference raises several kinds
                        equal = f"ref raises {type(exc).__name__}"
                    fns["ref"] = lambda: ref_parse(text, ref_doc, prefix="")
                skipped, found = {}, {}
                names = sorted({c["function"]["name"] for c in message.get("tool_calls") or []})
                for engine in active:
                    fn, why, found[engine] = engines.whole_call(engine, name, text, names)
                    if fn is None:
                        skipped[engine] = why
                    else:
                        fns[engine] = fn
                ncalls = len(message.get("tool_calls") or [])
                t = _interleaved(fns, rounds)
                row = {
                    "template": name, "set": which, "size": size, "calls": ncalls, "dropped": dropped,
                    "ours_us": t["ours"], "ours0_us": t["ours0"], "floor_us": t["floor"] if literals else None,
                    "ref_us": t.get("ref"), "stream_us": t["stream"] / len(chunks),
                    "sfloor_us": t["sfloor"] / len(chunks), "equal": equal, "engines": active,
                }
                for engine in active:
                    row[f"{engine}_us"] = t.get(engine)
                    row[f"{engine}_skip"] = skipped.get(engine)
                    row[f"{engine}_calls"] = found[engine]
                row["ours_calls"] = len(message.get("tool_calls") or [])
                _judge(row, per_call)
                rows.append(row)
                _print_row(row)
    return rows


def _judge(row: dict, per_call: float) -> None:
    row["ref_ratio"] = row["ref_us"] / row["ours_us"] if row["ref_us"] else None
    row["floor_ratio"] = row["ours_us"] / row["floor_us"] if row["floor_us"] else None
    row["per_call_us"] = (row["ours_us"] - row["ours0_us"]) / row["calls"] if row["calls"] else None
    row["stream_ratio"] = row["stream_us"] / row["sfloor_us"]
    row["allowed_us"] = 3 * row["floor_us"] + row["calls"] * per_call if row["floor_us"] else None
    row["ok_ref"] = None if row["ref_ratio"] is None else row["ref_ratio"] >= 3
    row["ok_floor"] = None if row["allowed_us"] is None else row["ours_us"] <= row["allowed_us"]
    row["ok_stream"] = row["stream_ratio"] <= 3
    for engine in row.get("engines", ()):
        us = row.get(f"{engine}_us")
        row[f"{engine}_ratio"] = us / row["ours_us"] if us else None
        row[f"ok_{engine}"] = None if not us else row[f"{engine}_ratio"] >= 3


HEAD = ("| template | set | size | ours µs | ref µs | floor µs | ref/ours | ours/floor | 0 calls µs | µs/call "
        "| ≤3·floor+calls | stream/floor | equal |")


def _head(active: list[str]) -> str:
    """The table head: :data:`HEAD` and, per engine found here, its µs and its time over ours."""
    return HEAD + "".join(f" {e} µs | {e}/ours |" for e in active)


def _f(value, spec=".1f", none="n/a") -> str:
    return none if value is None else format(value, spec)


def _print_row(row: dict) -> None:
    mark = {True: "yes", False: "NO", None: "n/a"}
    print(f"| {row['template']} | {row['set']} | {row['size'] // 1000} kB | {row['ours_us']:.1f} | "
          f"{_f(row['ref_us'])} | {_f(row['floor_us'], '.2f', 'no literal')} | {_f(row['ref_ratio'], '.2f')}x | "
          f"{_f(row['floor_ratio'], '.2f')} | {row['ours0_us']:.1f} | {_f(row['per_call_us'])} | "
          f"{mark[row['ok_floor']]} ({_f(row['allowed_us'])}) | {row['stream_ratio']:.2f} | {row['equal']}"
          + (f" (prose without {row['dropped']!r})" if row["dropped"] else "") + " |"
          + "".join(f" {_engine_cell(row, e)} | {_f(row.get(e + '_ratio'), '.2f')}x |"
                    for e in row.get("engines", ())), flush=True)


def _engine_cell(row: dict, engine: str) -> str:
    """An engine's µs, with the number of calls it read when that differs from respc's."""
    us = row.get(f"{engine}_us")
    if not us:
        return f"n/a: {row.get(engine + '_skip')}"
    calls = row.get(f"{engine}_calls")
    return f"{us:.1f}" + (f" ({calls} calls)" if calls != row.get("ours_calls") else "")


def summary(rows: list[dict]) -> None:
    print()
    for which in sorted({r["set"] for r in rows}, reverse=True):
        for size in sorted({r["size"] for r in rows}):
            sel = [r for r in rows if r["set"] == which and r["size"] == size]
            if not sel:
                continue
            print(f"{which} {size // 1000} kB ({len(sel)} templates):")
            over = [r for r in sel if r["ok_floor"] is False]
            if over:
                print("  over 3 x floor + calls x per-call: " + ", ".join(
                    f"{r['template']} {r['ours_us']:.0f}/{r['allowed_us']:.0f}" for r in over))
            for key, label, worst, ok in (("ref_ratio", "ours vs ref (ref/ours, >= 3)", min, "ok_ref"),
                                          ("floor_ratio", "ours/floor", max, "ok_floor"),
                                          ("stream_ratio", "streaming/floor (<= 3)", max, "ok_stream")):
                vals = [(r[key], r["template"]) for r in sel if r[key] is not None]
                if not vals:
                    continue
                w = worst(vals)
                met = sum(1 for r in sel if r[ok])
                known = sum(1 for r in sel if r[ok] is not None)
                print(f"  {label}: median {statistics.median(v for v, _ in vals):.2f}, worst {w[0]:.2f} ({w[1]}); "
                      f"target met {met}/{known}")
            for engine in sorted({e for r in sel for e in r.get("engines", ())}):
                vals = [(r[f"{engine}_ratio"], r["template"]) for r in sel if r.get(f"{engine}_ratio")]
                if not vals:
                    continue
                behind = sorted((v, t) for v, t in vals if v < 1)
                same = [r[f"{engine}_ratio"] for r in sel if r.get(f"{engine}_ratio")
                        and r.get(f"{engine}_calls") == r.get("ours_calls")]
                print(f"  {engine} non-streaming parser vs ours ({engine}/ours, >= 3): median "
                      f"{statistics.median(v for v, _ in vals):.2f} over {len(vals)} templates "
                      + (f"({statistics.median(same):.2f} over the {len(same)} where it reads respc's number of "
                         f"calls)" if same else "(none reads respc's number of calls)")
                      + f", target met {sum(1 for v, _ in vals if v >= 3)}/{len(vals)}; not ahead (< 1): "
                      + (", ".join(f"{t} {v:.2f}" for v, t in behind) or "none"))
                skipped = sorted({(r["template"], r[f"{engine}_skip"]) for r in sel if r.get(f"{engine}_skip")})
                own = [t for t, why in skipped if not why.startswith("no ")]
                if own:
                    print(f"  {engine} parser not run here: " + "; ".join(f"{t}: {why}" for t, why in skipped
                                                                          if t in own))
            calls = [r["per_call_us"] for r in sel if r["per_call_us"] is not None]
            if calls:
                print(f"  µs per tool call: median {statistics.median(calls):.1f}, max {max(calls):.1f}")


def compare(before_path: str, after_path: str, per_call: float) -> None:
    """Markdown before/after tables of two ``--json`` runs: one per input set, one row per
    template, ``before → after`` per cell, then the summary lines of both runs (targets judged
    with ``per_call`` µs per tool call)."""
    def load(path):
        rows = json.loads(Path(path).read_text())["rows"]
        for row in rows:
            _judge(row, per_call)
        return {(r["template"], r["set"], r["size"]): r for r in rows}

    before, after = load(before_path), load(after_path)
    sizes = sorted({k[2] for k in after})
    for which in ("realistic", "adversarial"):
        keys = sorted({k[0] for k in after if k[1] == which})
        if not keys:
            continue
        head = ["template"]
        for label in ("ref/ours", "ours/floor", "stream/floor"):
            head += [f"{label} {size // 1000} kB" for size in sizes]
        head += [f"µs/call {size // 1000} kB" for size in sizes]
        print(f"\n**{which}** (before → after)\n")
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for name in keys:
            cells = [name]
            for key, spec in (("ref_ratio", ".2f"), ("floor_ratio", ".2f"), ("stream_ratio", ".2f")):
                for size in sizes:
                    b, a = before.get((name, which, size)), after.get((name, which, size))
                    if a is None:
                        cells.append("")
                        continue
                    mark = {"ref_ratio": "ok_ref", "floor_ratio": "ok_floor", "stream_ratio": "ok_stream"}[key]
                    flag = "" if a[mark] is None or a[mark] else " ✗"
                    cells.append(f"{_f(b and b[key], spec)} → {_f(a[key], spec)}{flag}")
            for size in sizes:
                b, a = before.get((name, which, size)), after.get((name, which, size))
                cells.append(f"{_f(b and b['per_call_us'])} → {_f(a and a['per_call_us'])}")
            print("| " + " | ".join(cells) + " |")
    for label, rows in (("before", before), ("after", after)):
        print(f"\n{label}:")
        summary(list(rows.values()))


def engine_table(paths: list[str]) -> None:
    """Markdown table of the engine columns of saved ``--json`` runs (one run per engine's
    environment): per template and size, ``<engine>/ours`` (✗ under 3, ``k calls`` when the engine's
    parser read another number of tool calls than respc), and why a family's engine parser did
    not run."""
    rows: dict[tuple, dict] = {}
    found: list[str] = []
    for path in paths:
        for row in json.loads(Path(path).read_text())["rows"]:
            for engine in row.get("engines", ()):
                if engine not in found:
                    found.append(engine)
                key = (row["template"], row["set"], row["size"])
                rows.setdefault(key, {"template": row["template"], "ours_calls": row.get("ours_calls")})
                rows[key].update({k: v for k, v in row.items() if k.startswith(engine)})
    sizes = sorted({k[2] for k in rows})
    without: list[str] = []
    for which in sorted({k[1] for k in rows}, reverse=True):
        head = ["template"] + [f"{e}/ours {s // 1000} kB" for e in found for s in sizes]
        print(f"\n**{which}** (engine time / ours; ✗: under 3)\n")
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for name in sorted({k[0] for k in rows if k[1] == which}):
            cells = [name]
            for engine in found:
                for size in sizes:
                    row = rows.get((name, which, size), {})
                    ratio = row.get(f"{engine}_ratio")
                    if ratio is None:
                        why = row.get(f"{engine}_skip") or "not run"
                        cells.append("—" if why.startswith("no ") else f"n/a ({why.split(':')[0]})")
                        continue
                    calls = row.get(f"{engine}_calls")
                    cells.append(f"{ratio:.2f}" + ("" if ratio >= 3 else " ✗")
                                 + ("" if calls == row.get("ours_calls") else f" ({calls} calls)"))
            if any(cell != "—" for cell in cells[1:]):
                print("| " + " | ".join(cells) + " |")
            elif which == sorted({k[1] for k in rows}, reverse=True)[0]:
                without.append(name)
    print(f"\nNo parser of these engines for {len(without)} templates: {', '.join(without)}.")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--templates", default=None, type=inputs.templates_arg, help="comma-separated (default: all)")
    ap.add_argument("--sizes", default="10k,100k", type=inputs.sizes_arg)
    ap.add_argument("--sets", default="realistic,adversarial")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--per-call-us", type=float, default=PER_CALL_US)
    ap.add_argument("--json", default=None, metavar="FILE")
    ap.add_argument("--literal-calls", action="store_true",
                    help="realistic set with the literal-built tool calls of before 2026-12-05 (for comparison)")
    ap.add_argument("--compare", nargs=2, default=None, metavar=("BEFORE", "AFTER"))
    ap.add_argument("--engine-table", nargs="+", default=None, metavar="JSON",
                    help="print the engine columns of saved --json runs as one markdown table")
    args = ap.parse_args(argv)
    if args.engine_table:
        engine_table(args.engine_table)
        return 0
    if args.compare:
        compare(*args.compare, args.per_call_us)
        return 0
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    logging.disable(logging.CRITICAL)
    sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    rows = measure(args.templates or inputs.catalogue(), args.sizes, sets, args.rounds, args.per_call_us,
                   real_calls=not args.literal_calls)
    summary(rows)
    if args.json:
        Path(args.json).write_text(json.dumps({"per_call_us": args.per_call_us, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
