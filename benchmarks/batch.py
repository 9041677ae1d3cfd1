"""respc batch benchmark (issue 12): ``respc parse --jsonl`` on one core, on all cores, on Ray, against
a plain Python loop over the transformers reference, on the same generated records.

Run ``python benchmarks/batch.py --records 1000000`` (default 20,000; see ``benchmarks/README.md``).

Records: for each family of ``--families`` (a catalogue template each; one JSONL file per family,
since one run parses with one template), ``records / families`` lines
``{"id": "<family>-<n>", "prefix": "", "output": ...}``. An output is 1-20 kB (uniform), built
from the family's own delimiters (``benchmarks/inputs.py``): reasoning in 60 % of the records
(when the family has a reasoning field), an answer, and 0-3 tool calls (uniform); ``--damaged``
(default 3 %) of the records are cut in the middle of their last tool call (or, without one,
have a stray closing delimiter appended), which makes most of them fail to parse. Generation is
seeded and streamed to disk.

Paths timed (records/s over all families; each in a fresh process except the loops):

* ``cli 1 worker``: ``python -m respc parse TEMPLATE --jsonl IN -o OUT --workers 1``;
* ``cli N workers``: the same with ``--workers N`` (N = the usable cores);
* ``ray``: ``respc.ray.parse_dataset`` over ``ray.data.read_text`` on ``ray.init(num_cpus=N)``,
  rows written to a file; checked byte-identical to the CLI output (cluster start not timed);
* ``ours loop``: a plain Python loop (json.loads, ``module.parse_response``, json.dumps), no I/O;
* ``reference loop``: the same loop over ``transformers.utils.chat_parsing.parse_response`` on the
  first ``--ref-records`` records of each family (default 2,000; the reference is slower).

Also: peak RSS of each CLI run (``ru_maxrss`` of the process tree, so memory stays flat in the
number of records if this stays flat across ``--records``), and how many non-damaged records give
the same message with ours and the reference (the deviations D1-D11 of
docs/template-language.md may explain a difference).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import inputs  # noqa: E402

# llama3_json is not among them: inputs.py refuses it (its filler prose contains the template's `;` close)
DEFAULT_FAMILIES = "qwen3,gpt_oss,qwen3_coder,mistral_nemo,deepseek_r1,glm4_5,hermes2pro,kimi_k2"


def say(*parts) -> None:
    print(*parts, flush=True)


def generate(family: str, count: int, path: Path, damaged: float, seed: int) -> dict:
    """Write ``count`` records of ``family`` to ``path``; returns counts of what was written."""
    doc = inputs.load(family)
    p = inputs.pieces(family, doc)
    rng = random.Random(f"{seed}-{family}")
    stats = {"records": count, "damaged": 0, "bytes": 0, "with_tool_calls": 0, "with_reasoning": 0}
    closers = [c for spec in doc["fields"].values() for c in inputs._literals(spec.get("close"))]
    with open(path, "w", encoding="utf-8") as out:
        for n in range(count):
            size = rng.randint(1000, 20000)
            calls = (p.tool_call or "") * rng.randint(0, 3)
            parts = []
            room = max(size - len(calls), 64)
            if p.reasoning is not None and rng.random() < 0.6:
                opener, closer = p.reasoning
                body = max(int(room * rng.uniform(0.3, 0.8)) - len(opener) - len(closer), 8)
                parts.append(opener + inputs._filler(body) + closer)
                room = max(room - len(parts[0]), 16)
                stats["with_reasoning"] += 1
            parts.append(inputs._filler(room))
            text = "".join(parts) + calls
            if calls:
                stats["with_tool_calls"] += 1
            if rng.random() < damaged:
                stats["damaged"] += 1
                if calls:
                    text = text[: len(text) - len(p.tool_call) // 2]
                elif closers:
                    text += closers[0]
            line = json.dumps({"id": f"{family}-{n}", "prefix": "", "output": text, "damaged": text != "".join(parts) + calls}, ensure_ascii=False)
            out.write(line + "\n")
            stats["bytes"] += len(line) + 1
    return stats


def run_cli(family: str, src: Path, dst: Path, workers: int) -> tuple[float, str, int]:
    """``python -m respc parse --jsonl`` in a fresh process: (seconds, summary line, peak RSS kB)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "respc", "parse", family, "--jsonl", str(src), "-o", str(dst),
                           "--workers", str(workers), "--no-progress"], capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"respc parse --jsonl failed ({done.returncode}): {done.stderr[-2000:]}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return seconds, done.stderr.strip().splitlines()[-1], max(peak, before)


def loop_ours(family: str, src: Path, keep: int) -> tuple[float, int, list]:
    """Parse every record of ``src`` in a plain loop; returns (seconds, records, the first ``keep``
    messages), so memory stays flat however many records the file holds."""
    import respc
    from respc.compiler.batch import dump_record

    module = respc.compile_template(family)
    started = time.perf_counter()
    n, messages = 0, []
    with open(src, encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            try:
                message = module.parse_response(record["output"], record["prefix"])
                out = {"id": record["id"], "message": message, "diagnostics": []}
            except ValueError as exc:
                out = {"id": record["id"], "message": None, "diagnostics": [{"kind": "error", "message": str(exc)}]}
            dump_record(out)
            if n < keep:
                messages.append(out["message"])
            n += 1
    return time.perf_counter() - started, n, messages


def loop_reference(family: str, src: Path, limit: int) -> tuple[float, int, list]:
    from transformers.utils.chat_parsing import parse_response as ref_parse

    doc = inputs.reference_doc(family)  # a v2 template's v1 form: what a user of the reference has
    started = time.perf_counter()
    n, messages = 0, []
    with open(src, encoding="utf-8") as handle:
        for line in handle:
            if n >= limit:
                break
            record = json.loads(line)
            try:
                message = ref_parse(record["output"], doc, prefix=record["prefix"])
                out = {"id": record["id"], "message": message, "diagnostics": []}
            except Exception as exc:  # noqa: BLE001 - the reference raises ValueError/KeyError/...
                out = {"id": record["id"], "message": None, "diagnostics": [{"kind": "error", "message": str(exc)}]}
            json.dumps(out, ensure_ascii=False)
            messages.append(out["message"])
            n += 1
    return time.perf_counter() - started, n, messages


def run_ray(files: dict[str, Path], out_dir: Path, workers: int) -> tuple[float, dict[str, bool]]:
    import ray

    import respc.ray

    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True
    context.enable_progress_bars = False
    total, identical = 0.0, {}
    try:
        for family, src in files.items():
            started = time.perf_counter()
            ds = respc.ray.parse_dataset(ray.data.read_text(str(src)), family, lines_column="text")
            dst = out_dir / f"{family}.ray.jsonl"
            with open(dst, "w", encoding="utf-8") as out:
                for batch in ds.iter_batches(batch_size=1024, batch_format="pyarrow"):
                    out.write("".join(r + "\n" for r in batch.column("record").to_pylist()))
            total += time.perf_counter() - started
            identical[family] = dst.read_bytes() == (out_dir / f"{family}.1.jsonl").read_bytes()
    finally:
        ray.shutdown()
    return total, identical


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=20000, help="records in all (default 20000; the issue's figure is 1000000)")
    ap.add_argument("--families", default=DEFAULT_FAMILIES, help="catalogue templates, one file each")
    ap.add_argument("--damaged", type=float, default=0.03, help="fraction of damaged records (default 0.03)")
    ap.add_argument("--ref-records", type=int, default=2000, help="records per family for the reference loop")
    ap.add_argument("--workers", type=int, default=None, help="N for the all-cores runs (default: usable cores)")
    ap.add_argument("--dir", default=None, help="where the files go (default: a temp folder, removed)")
    ap.add_argument("--no-ray", action="store_true", help="skip the Ray path")
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--reuse", action="store_true",
                    help="with --dir: keep input files generated before with the same arguments (a manifest says so)")
    args = ap.parse_args(argv)
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    from respc.compiler.batch import default_workers

    workers = args.workers or default_workers()
    families = [f.strip() for f in args.families.split(",") if f.strip()]
    import tempfile

    tmp = tempfile.TemporaryDirectory() if args.dir is None else None
    folder = Path(args.dir or tmp.name)
    folder.mkdir(parents=True, exist_ok=True)
    per = max(1, args.records // len(families))
    say(f"# respc batch benchmark: {per * len(families):,} records ({per:,} per family x {len(families)}), "
        f"{workers} workers, damaged {args.damaged:.0%}")
    files, gen = {}, {}
    started = time.perf_counter()
    manifest = folder / "manifest.json"
    wanted = {"per": per, "families": families, "damaged": args.damaged, "seed": args.seed}
    old = json.loads(manifest.read_text()) if args.reuse and manifest.exists() else {}
    for family in families:
        files[family] = folder / f"{family}.in.jsonl"
    if old.get("wanted") == wanted and all(f.exists() for f in files.values()):
        gen = old["gen"]
        say(f"reusing the input files in {folder} (manifest.json matches)")
    else:
        for family in families:
            gen[family] = generate(family, per, files[family], args.damaged, args.seed)
        manifest.write_text(json.dumps({"wanted": wanted, "gen": gen}))
    total_bytes = sum(g["bytes"] for g in gen.values())
    say(f"generated {total_bytes / 1e9:.2f} GB in {time.perf_counter() - started:.0f} s: "
        + ", ".join(f"{k}: {sum(g[k] for g in gen.values()):,}" for k in ("with_reasoning", "with_tool_calls", "damaged")))

    rows = {}
    cli = {1: [0.0, 0, []], workers: [0.0, 0, []]}
    for n in sorted(cli):
        for family, src in files.items():
            seconds, summary, peak = run_cli(family, src, folder / f"{family}.{n}.jsonl", n)
            cli[n][0] += seconds
            cli[n][1] = max(cli[n][1], peak)
            cli[n][2].append(f"{family}: {summary}")
        rows[f"cli {n} worker{'s' if n > 1 else ''}"] = (per * len(families), cli[n][0])
        say(f"cli --workers {n}: {cli[n][0]:.1f} s, peak RSS {cli[n][1] / 1024:.0f} MB")
        for line in cli[n][2]:
            say("   ", line)
    identical_workers = all((folder / f"{f}.1.jsonl").read_bytes() == (folder / f"{f}.{workers}.jsonl").read_bytes()
                            for f in families)
    say(f"1 worker and {workers} workers give identical bytes: {identical_workers}")
    if not args.no_ray:
        try:
            seconds, identical = run_ray(files, folder, workers)
            rows[f"ray ({workers} CPUs)"] = (per * len(families), seconds)
            say(f"ray: {seconds:.1f} s; byte-identical to the CLI: {identical}")
        except ImportError as exc:
            say(f"ray: skipped ({exc})")
    ours_total, ref_total, ours_n, ref_n, same, compared = 0.0, 0.0, 0, 0, 0, 0
    per_family = []
    for family, src in files.items():
        t, n, ours_messages = loop_ours(family, src, args.ref_records)
        ours_total, ours_n = ours_total + t, ours_n + n
        ours_rate = n / t
        t, n, ref_messages = loop_reference(family, src, args.ref_records)
        ref_total, ref_n = ref_total + t, ref_n + n
        per_family.append((family, ours_rate, n / t))
        with open(src, encoding="utf-8") as handle:
            for (ours, ref), line in zip(zip(ours_messages, ref_messages), handle):
                if not json.loads(line)["damaged"]:
                    compared += 1
                    same += ours == ref
    rows["ours, plain loop (1 core, no I/O)"] = (ours_n, ours_total)
    rows["reference, plain loop (1 core)"] = (ref_n, ref_total)
    say(f"ours == reference on {same:,} of {compared:,} undamaged records compared")
    ref_rate = ref_n / ref_total
    say("\n| path | records | seconds | records/s | vs reference loop |")
    say("|---|---|---|---|---|")
    for name, (n, seconds) in rows.items():
        rate = n / seconds
        say(f"| {name} | {n:,} | {seconds:.1f} | {rate:,.0f} | {rate / ref_rate:.1f}x |")
    say("\nplain loops per family (records/s, 1 core):\n\n| family | ours | reference | ours/reference |\n|---|---|---|---|")
    for family, ours_rate, ref_rate_f in per_family:
        say(f"| {family} | {ours_rate:,.0f} | {ref_rate_f:,.0f} | {ours_rate / ref_rate_f:.1f}x |")
    one = rows["cli 1 worker"]
    many = rows[f"cli {workers} worker{'s' if workers > 1 else ''}"]
    say(f"\nscaling: {workers} workers = {one[1] / many[1]:.2f}x one worker (target >= {0.8 * workers:.1f})")
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
