"""respc benchmark: generated streaming parsers vs the transformers reference vs a floor loop.

Run ``python benchmarks/bench.py`` (see ``benchmarks/README.md`` for the options and what each
column means). This prints figures; it asserts nothing about time.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import os
import platform
import py_compile
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import tracemalloc
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import inputs  # noqa: E402  (benchmarks/inputs.py, next to this file)

KB, MB = inputs.KB, inputs.MB
QUICK_TEMPLATES = ("qwen3", "gpt_oss", "qwen3_coder")

#: Targets (project goals), checked against the printed figures.
TARGET_FLOOR_RATIO = 3.0      # ours/floor at every size
TARGET_REF_SPEEDUP = 5.0      # reference/ours at 10 kB
TARGET_GROWTH = 1.5           # adversarial inputs: per-chunk cost between sizes, to count as linear
TARGET_FLAT = 1.1             # issue 14: per-chunk cost at 1 MB / 10 kB
TARGET_WHOLE_REF = 2.0        # issue 14: reference/ours whole-text parse_response at 100 kB and 1 MB
TARGET_WHOLE_FLOOR = 2.0      # issue 14: ours whole-text / the find floor at 100 kB and 1 MB
TARGET_LINEAR = 1.2           # issue 14: 1 MB parse_response / ten 100 kB ones
TARGET_COMPILE_MS = 200.0     # compile_source per template
TARGET_IMPORT_MS = 10.0       # import of one generated module


# --- small helpers --------------------------------------------------------------------------------

def size_label(size: int) -> str:
    if size >= MB and size % MB == 0:
        return f"{size // MB} MB"
    if size >= KB and size % KB == 0:
        return f"{size // KB} kB"
    return f"{size} B"


def fmt(value, spec: str = ".2f", missing: str = "-") -> str:
    return missing if value is None else format(value, spec)


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def flat_ratio(large: dict, small: dict) -> float | None:
    """The flat-cost figure of issue 14
    (README.md "Performance", the targets): ours/floor per chunk at a large size over the same at a
    small one (rows of ``bench_template``'s ``sizes``).

    Each size's ours/floor is taken within its own interleaved rounds, so what the machine does
    between the two sizes' loops (the floor alone ran at 0.24 and 0.48 µs per chunk in two rounds
    of one run) and what any loop over a bigger chunk list pays (the floor's own 1 MB / 10 kB is
    1.0-1.3) cancel; a missed target's line gives the raw ``ours_us`` ratio and the floor's beside
    it. Returns None when either is missing."""
    return ratio(large.get("ours_floor"), small.get("ours_floor"))


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def table(headers: list[str], rows: list[list[str]], align: str | None = None) -> str:
    """A plain-text table; ``align`` is one of ``<``/``>`` per column (default: first left)."""
    align = align or "<" + ">" * (len(headers) - 1)
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows)]
    line = lambda cells: "  ".join(format(str(c), a + str(w)) for c, a, w in zip(cells, align, widths))  # noqa: E731
    out = [line(headers), "  ".join("-" * w for w in widths)]
    out.extend(line(r) for r in rows)
    return "\n".join(out)


def say(*parts) -> None:
    print(*parts, flush=True)


def machine() -> dict:
    """nproc, CPU model, Python and library versions, the repository commit."""
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE.parent,
                                capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        commit = "?"
    import regex
    import transformers

    return {
        "nproc": os.cpu_count(),
        "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "cpu": cpu,
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "transformers": transformers.__version__,
        "regex": regex.__version__,
        "commit": commit,
    }


# --- the three contenders -------------------------------------------------------------------------

class Floor:
    """The cheapest possible streaming parser: one ``region_chunk`` event per chunk, nothing else.

    Same call shape as a real parser (a ``feed`` method returning a fresh event list), so
    ``ours/floor`` is the overhead of actually parsing.
    """

    __slots__ = ()

    def feed(self, text):
        events = []
        events.append({"type": "region_chunk", "field": "content", "text": text, "dirty": False})
        return events

    def finalize(self):
        return {}, []


@contextlib.contextmanager
def _no_gc():
    """The cyclic collector off while a call is timed, as ``timeit`` does. (Until session 5 each
    timed call followed a ``gc.collect()``, which left the caches cold: a 70 µs whole-text parse
    then took 150-215 µs, and sub-millisecond figures were inflated by about 0.1 ms each.)"""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def run_feed(make, chunks, budget: float | None = None):
    """Feed ``chunks`` to ``make()`` and finalize; return ``(seconds, chunks fed, message)``.

    With ``budget`` (seconds) the run stops early once it is exceeded (checked every 256 chunks),
    without finalizing: then the message is None.
    """
    with _no_gc():
        parser = make()
        feed = parser.feed
        if budget is None:
            t0 = time.perf_counter()
            for chunk in chunks:
                feed(chunk)
            message = parser.finalize()[0]
            return time.perf_counter() - t0, len(chunks), message
        t0 = time.perf_counter()
        done = 0
        n = len(chunks)
        while done < n:
            for chunk in chunks[done:done + 256]:
                feed(chunk)
            done = min(done + 256, n)
            if time.perf_counter() - t0 > budget and done < n:
                return time.perf_counter() - t0, done, None
        message = parser.finalize()[0]
        return time.perf_counter() - t0, n, message


def per_chunk_us(make, chunks, repeat: int):
    """Median µs per chunk over ``repeat`` runs, and the last run's message."""
    times, message = [], None
    for _ in range(repeat):
        seconds, fed, message = run_feed(make, chunks)
        times.append(seconds / fed * 1e6)
    return statistics.median(times), message


def peak_bytes(make, chunks) -> int:
    """tracemalloc peak of one feed+finalize (the chunks already exist, so this is what the parser adds)."""
    gc.collect()
    tracemalloc.start()
    try:
        parser = make()
        feed = parser.feed
        for chunk in chunks:
            feed(chunk)
        parser.finalize()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def stream_parse(module, text: str) -> dict:
    """A complete text through the streaming path: ``feed(text)`` then ``finalize()``."""
    parser = module.ResponseParser("")
    parser.feed(text)
    return parser.finalize()[0]


def whole_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        with _no_gc():
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def ref_tail_estimate(ref_cls, ref_doc, text: str, window: int, budget: float | None = None) -> float | None:
    """Reference µs/chunk at the *end* of ``text``: pre-feed all but ``window`` chars in 4 kB pieces
    (few buffer copies; not one piece, since a partial regex search over a long undecided run can be
    quadratic, see the whole-text adversarial case), then time the last ``window`` chars in 4-char
    chunks. Used to estimate the reference's 1 MB figure without paying its O(n²) run. With
    ``budget`` (seconds), None when the pre-feed alone takes longer (then it is abandoned)."""
    gc.collect()
    parser = ref_cls(ref_doc, prefix="")
    head = text[:-window]
    t0 = time.perf_counter()
    for i in range(0, len(head), 4 * KB):
        parser.feed(head[i:i + 4 * KB])
        if budget is not None and time.perf_counter() - t0 > budget:
            return None
    tail = inputs.chunks(text[-window:])
    feed = parser.feed
    t0 = time.perf_counter()
    for chunk in tail:
        feed(chunk)
    parser.finalize()
    return (time.perf_counter() - t0) / len(tail) * 1e6


# --- the benchmark proper -------------------------------------------------------------------------

def extrapolate(history: list[tuple[int, float]], size: int) -> float | None:
    """Predicted seconds of one reference call at ``size`` chars from ``history``, the
    ``(size, seconds)`` pairs measured at smaller sizes (ascending), or None with no history.

    The growth exponent is the one measured between the last two sizes, clamped to [1, 2]
    (linear to quadratic); with a single measured size it is 2, the worst case the reference shows
    (its buffer concatenation, and quadratic regex searches on some templates).
    """
    if not history:
        return None
    s1, t1 = history[-1]
    k = 2.0
    if len(history) >= 2:
        s0, t0 = history[-2]
        if t0 > 0 and t1 > 0 and s1 > s0:
            k = min(2.0, max(1.0, math.log(t1 / t0) / math.log(s1 / s0)))
    return t1 * (size / s1) ** k


def _median_runs(fns: dict, rounds: int, single: set[str] = frozenset()):
    """Interleaved rounds: each round calls every function of ``fns`` once, in order (a shared
    machine's load then falls on all of them alike). Returns ``({key: median ms}, {key: last
    result})``; a key in ``single`` is called in the first round only (a slow reference call).

    Each timed call comes right after an untimed call of the same function (keys in ``single``
    excepted), so every function is timed warm, as a batch job calling it back to back runs it:
    timed cold, each would pay for what the function before it left in the caches (before
    session 6 ours followed the reference's call and the find floor followed the streaming
    parse, which had just read the text: gpt_oss's 100 kB parse was timed at 0.59 ms, 0.31 ms
    back to back)."""
    times = {k: [] for k in fns}
    results = {}
    for i in range(rounds):
        for key, fn in fns.items():
            if key in single and i > 0:
                continue
            with _no_gc():
                if key not in single:
                    fn()
                t0 = time.perf_counter()
                results[key] = fn()
                times[key].append((time.perf_counter() - t0) * 1e3)
    return {k: statistics.median(v) for k, v in times.items()}, results


def _equal_cell(ours_msg, ours_whole, ref_msgs: list, v1_msg) -> str:
    """``yes`` (ours, streamed and whole-text, equals every reference message), ``v1 form`` (the v2
    template differs from the reference, and respc on the template's v1 form, the template the
    reference runs, equals it: a v2 construct the v1 form cannot express), ``NO`` otherwise."""
    if ours_msg != ours_whole:
        return "NO (whole != stream)"
    if all(m == ours_msg for m in ref_msgs):
        return "yes"
    if v1_msg is not None and all(m == v1_msg for m in ref_msgs):
        return "v1 form"
    return "NO"


def bench_template(name: str, sizes: list[int], args, ref_cls, ref_parse) -> dict:
    """All streaming and whole-text figures of one catalogue template, at every size in ``sizes``.

    Ours and the floor always run. The reference runs when the template has one
    (:func:`inputs.reference_missing`) and its call at this size, extrapolated from the smaller
    sizes (:func:`extrapolate`), fits ``args.ref_budget`` seconds; otherwise its cells record the
    reason (``ref_skip``) and the extrapolated seconds. Per size the row holds µs per chunk
    (``ours_us``, ``floor_us``, ``ref_us``; ``ref_est_us`` for the 1 MB estimate), peaks (bytes),
    whole-text ms (``ours_parse_ms``, ``stream_parse_ms``, ``find_floor_ms``, ``ref_parse_ms``)
    and ``equal`` (see :func:`_equal_cell`).
    """
    import respc

    doc = inputs.load(name)
    missing = inputs.reference_missing(name)
    ref_doc = None if missing else inputs.reference_doc(name)
    module = respc.compile_template(doc)
    v1_module = respc.compile_template(ref_doc) if ref_doc is not None and ref_doc is not doc \
        and "respc_version" in doc else None
    pieces = inputs.pieces(name, doc)
    literals = sorted({lit for spec in doc["fields"].values() for key in ("open", "close")
                       for lit in inputs._literals(spec.get(key))})
    # everything alive now (interpreter, transformers, the compiled modules) leaves the collector's
    # scans, and the collector is off while a call is timed (_no_gc)
    gc.collect()
    gc.freeze()
    try:
        return _bench_sizes(name, sizes, args, ref_cls, ref_parse, doc, module, v1_module, ref_doc, missing,
                            pieces, literals)
    finally:
        gc.unfreeze()


def _bench_sizes(name, sizes, args, ref_cls, ref_parse, doc, module, v1_module, ref_doc, missing, pieces,
                 literals) -> dict:
    """The per-size loop of :func:`bench_template` (same arguments, set up there)."""
    result = {"template": name, "tool_calls": pieces.tool_source, "reasoning": pieces.reasoning is not None,
              "reference": missing or "yes", "literals": len(literals), "sizes": {}}
    errors = "recover" if args.errors == "recover" else "strict"
    budget = args.ref_budget
    ours = lambda: module.ResponseParser("", errors=errors)  # noqa: E731
    ref = lambda: ref_cls(ref_doc, prefix="")  # noqa: E731
    whole_hist: list[tuple[int, float]] = []   # reference whole-text parse: (size, seconds)
    stream_hist: list[tuple[int, float]] = []  # reference streaming run: (size, seconds)
    for size in sizes:
        text = inputs.build(name, size, doc)
        chunks = inputs.chunks(text)
        n = len(chunks)
        # ours and the floor: 15 runs at <= 10 kB (a run is a millisecond or two there, and single
        # runs move by a factor of two on a shared machine: the medians of 5 moved the 10 kB ratios
        # by 10-20 % between runs), 7 up to 100 kB and 5 above (with 3, single 100 kB and 1 MB
        # cells moved by up to a third between two runs); the reference: 3 runs up to 100 kB, 1
        # above (its runs there take seconds)
        repeat = 15 if size <= 10 * KB else 7 if size <= 100 * KB else 5
        ref_runs = 3 if size <= 100 * KB else 1
        row: dict = {"chars": len(text), "chunks": n, "ref_us": None, "ref_peak": None,
                     "ref_parse_ms": None, "ref_skip": None, "ref_parse_skip": None}
        # streaming: ours, the floor and the reference in interleaved rounds
        stream_ref = missing is None and (size <= args.ref_cap or args.ref_1m)
        predicted = extrapolate(stream_hist, size)
        if stream_ref and predicted is not None and predicted > budget:
            stream_ref = False
            row["ref_skip"] = f"> budget (~{predicted:.0f} s est)"
        runs = {"ours": [], "floor": [], "ref": []}
        ours_msg = ref_stream_msg = None
        for i in range(repeat):
            seconds, _, ours_msg = run_feed(ours, chunks)
            runs["ours"].append(seconds / n * 1e6)
            seconds, _, _ = run_feed(Floor, chunks)
            runs["floor"].append(seconds / n * 1e6)
            if stream_ref and i < ref_runs:
                seconds, fed, msg = run_feed(ref, chunks, budget)
                if fed < n:  # over budget mid-run: at least this much, linear in what is left
                    row["ref_skip"] = f"> budget (stopped at {fed * inputs.CHUNK // KB} kB, " \
                                      f"~{seconds * n / fed:.0f} s est)"
                    stream_ref = False
                    runs["ref"] = []
                else:
                    runs["ref"].append(seconds / n * 1e6)
                    ref_stream_msg = msg
                    stream_hist_seconds = seconds
        row["ours_us"] = statistics.median(runs["ours"])
        row["floor_us"] = statistics.median(runs["floor"])
        if runs["ref"]:
            row["ref_us"] = statistics.median(runs["ref"])
            stream_hist.append((size, stream_hist_seconds))
        row["ours_peak"] = peak_bytes(ours, chunks)
        if row["ref_us"] is not None:
            row["ref_peak"] = peak_bytes(ref, chunks)

        # whole text: ours, ours through feed(), the find floor and the reference, interleaved
        fns = {"ours": lambda: module.parse_response(text, ""),
               "feed": lambda: stream_parse(module, text),
               "find": lambda: [text.find(lit) for lit in literals]}
        single = set()
        if missing is not None:
            row["ref_parse_skip"] = "n/a"
        else:
            predicted = extrapolate(whole_hist, size)
            if predicted is not None and predicted > budget:
                row["ref_parse_skip"] = f"> budget (~{predicted:.0f} s est)"
                row["ref_parse_est_ms"] = predicted * 1e3
            else:
                fns["ref"] = lambda: ref_parse(text, ref_doc, prefix="")
                if predicted is not None and predicted > 0.3:
                    single.add("ref")
        ms, out = _median_runs(fns, repeat, single)
        row["ours_parse_ms"], row["stream_parse_ms"], row["find_floor_ms"] = ms["ours"], ms["feed"], ms["find"]
        if "ref" in ms:
            row["ref_parse_ms"] = ms["ref"]
            whole_hist.append((size, ms["ref"] / 1e3))

        # the reference's 1 MB streaming estimate, when it is not streamed for real
        if missing is None and row["ref_us"] is None and not row["ref_skip"]:
            if row["ref_parse_skip"]:  # its whole-text parse is over budget: so is pre-feeding
                row["ref_skip"] = "> budget (whole-text parse over budget)"
            else:
                head = ref_tail_estimate(ref_cls, ref_doc, text[:20 * KB], 4 * KB) if len(text) > 20 * KB else None
                tail = ref_tail_estimate(ref_cls, ref_doc, text, 10 * KB, budget)
                if tail is None:
                    row["ref_skip"] = f"> budget (pre-feeding {size_label(size)} took over {budget:g} s)"
                else:
                    est = (head + tail) / 2 if head is not None else tail
                    row["ref_est_us"] = est
                    row["ref_est_s"] = est * n / 1e6

        if missing is not None:
            row["equal"] = "n/a"
        else:
            ref_msgs = [m for m in (ref_stream_msg, out.get("ref")) if m is not None]
            if not ref_msgs:
                row["equal"] = "not run"
            else:
                v1_msg = v1_module.parse_response(text, "") if v1_module is not None else None
                row["equal"] = _equal_cell(ours_msg, out["ours"], ref_msgs, v1_msg)
        row["ref_ours"] = ratio(row["ref_us"] if row["ref_us"] is not None else row.get("ref_est_us"),
                                row["ours_us"])
        # ours/floor is the median of the per-round ratios: ours and the floor of one round ran
        # back to back, so a round the machine slowed counts against both (the medians' ratio
        # mixes rounds: the floor alone moved 0.24-0.48 µs per chunk between rounds of one run)
        row["ours_runs_us"], row["floor_runs_us"] = runs["ours"], runs["floor"]
        row["ours_floor"] = statistics.median(o / f for o, f in zip(runs["ours"], runs["floor"]))
        result["sizes"][size] = row
    result["calls"] = _bench_calls(name, min(sizes), doc, module, pieces, literals, ours) if pieces.tool_call else None
    return result


def _bench_calls(name, size, doc, module, pieces, literals, ours) -> dict:
    """What the tool calls cost (for the targets' reasons, :func:`miss_reasons`), at ``size``
    (the smallest): ours/floor streaming the same output without its calls (prose of the same
    length; interleaved with the floor, 15 runs); µs to stream one call alone (the calls of an
    output in 4-character chunks, parser built and finalized, less an empty parser's cost); ms of
    ``parse_response`` on the calls alone, and the find floor of a 100 kB output for scale."""
    prose = inputs.chunks(inputs.build(name, size, doc, calls=0))
    runs: dict = {"ours": [], "floor": []}
    for _ in range(15):
        runs["ours"].append(run_feed(ours, prose)[0])
        runs["floor"].append(run_feed(Floor, prose)[0])
    calls_text = pieces.tool_call * inputs.N_TOOL_CALLS
    alone = inputs.chunks(calls_text)
    ms = _median_runs({"calls": lambda: run_feed(ours, alone), "empty": lambda: run_feed(ours, []),
                       "whole": lambda: module.parse_response(calls_text, "")}, 15)[0]
    big = inputs.build(name, 100 * KB, doc)
    find = _median_runs({"find": lambda: [big.find(lit) for lit in literals]}, 5)[0]["find"] if literals else None
    return {"prose_ours_floor": ratio(statistics.median(runs["ours"]), statistics.median(runs["floor"])),
            "stream_us_per_call": max(ms["calls"] - ms["empty"], 0.0) * 1e3 / inputs.N_TOOL_CALLS,
            "calls_whole_ms": ms["whole"], "find_100k_ms": find}


_COMPILE_PROBE = textwrap.dedent("""
    import json, statistics, sys, time
    t0 = time.perf_counter()
    from respc.compiler.api import compile_source
    import_ms = (time.perf_counter() - t0) * 1e3
    path = sys.argv[1]
    t0 = time.perf_counter()
    compile_source(path)
    first = (time.perf_counter() - t0) * 1e3
    again = []
    for _ in range(3):
        t0 = time.perf_counter()
        compile_source(path)
        again.append((time.perf_counter() - t0) * 1e3)
    print(json.dumps({"import_ms": import_ms, "first_ms": first, "again_ms": statistics.median(again)}))
""")


def compile_times(names: list[str]) -> dict[str, dict]:
    """``compile_source`` (load, validate, automaton, grammar, emit) per template, each in a fresh
    interpreter: ``first`` is the first compile in that process (what ``respc compile`` pays after its
    imports; regex/jinja caches cold), ``again`` the median of 3 more (caches warm), ``import_ms`` the
    one-off import of the compiler (lark, jinja2)."""
    out = {}
    for name in names:
        proc = subprocess.run([sys.executable, "-c", _COMPILE_PROBE, str(inputs.TEMPLATES / f"{name}.json")],
                              capture_output=True, text=True, check=True)
        out[name] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


_IMPORT_PROBE = textwrap.dedent("""
    import importlib, json, sys, time
    sys.path.insert(0, sys.argv[1])
    names = sys.argv[2:]
    t0 = time.perf_counter()
    import regex, respc.runtime
    runtime_ms = (time.perf_counter() - t0) * 1e3
    out = {}
    for name in names:
        t0 = time.perf_counter()
        importlib.import_module("bench_gen_" + name)
        out[name] = (time.perf_counter() - t0) * 1e3
    print(json.dumps({"runtime_ms": runtime_ms, "modules": out}))
""")


def import_times(names: list[str]) -> dict:
    """Import time of each generated module in a fresh interpreter: ``cold`` (from source, writes
    the .pyc) then ``warm`` (from the .pyc); ``respc.runtime`` + ``regex`` are imported first and
    timed separately (every generated module pays that once per process)."""
    from respc.compiler.api import compile_source

    with tempfile.TemporaryDirectory(prefix="respc-bench-") as tmp:
        for name in names:
            source = compile_source(inputs.TEMPLATES / f"{name}.json").source
            Path(tmp, f"bench_gen_{name}.py").write_text(source, encoding="utf-8")
        runs = []
        for phase in ("cold", "warm"):
            if phase == "warm":  # write the .pyc files (explicitly: PYTHONDONTWRITEBYTECODE may be set)
                for name in names:
                    py_compile.compile(str(Path(tmp, f"bench_gen_{name}.py")), doraise=True)
            flags = ["-B"] if phase == "cold" else []
            proc = subprocess.run([sys.executable, *flags, "-c", _IMPORT_PROBE, tmp, *names],
                                  capture_output=True, text=True, check=True)
            runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    return {"runtime_ms": runs[0]["runtime_ms"], "runtime_warm_ms": runs[1]["runtime_ms"],
            "cold": runs[0]["modules"], "warm": runs[1]["modules"]}


def bench_adversarial(cases, sizes: list[int], budget: float, ref_cls) -> list[dict]:
    """Per-chunk cost of ours on each adversarial case at each size (a run stops after ``budget``
    seconds; the next larger size is then not run). The reference is timed at the smallest size."""
    import respc

    rows = []
    for case in cases:
        doc = case.document()
        ref_doc = case.reference_document()
        module = respc.compile_template(doc)
        row = {"case": case.label, "template": case.template, "sizes": {}}
        capped = False
        for size in sizes:
            if capped:
                row["sizes"][size] = {"skipped": True}
                continue
            chunks = inputs.chunks(case.text(size))
            seconds, fed, _ = run_feed(lambda: module.ResponseParser(""), chunks, budget)
            capped = fed < len(chunks)
            row["sizes"][size] = {"us": seconds / fed * 1e6, "fed_chars": fed * inputs.CHUNK,
                                  "capped": capped}
        chunks = inputs.chunks(case.text(sizes[0]))
        seconds, fed, _ = run_feed(lambda: ref_cls(ref_doc, prefix=""), chunks, budget)
        row["ref_us"] = seconds / fed * 1e6
        row["ref_capped"] = fed < len(chunks)
        rows.append(row)
        say(f"  adversarial: {case.template}: {case.label} done")
    return rows


def bench_whole_adversarial(sizes: list[int], budget: float, ref_parse) -> list[dict]:
    """Whole-text ``parse_response`` of prose without any ``"`` on apertus, whose tool-call
    ``open_pattern`` (``(?<=\\},\\s?\\{")(?P<name>[^"]+)":``) makes a *partial* regex search over
    undecided text quadratic; whole-text parsing feeds everything as one non-final chunk, so both
    parsers pay it. A size is not run when the previous one, scaled quadratically, exceeds ``budget``."""
    import respc

    doc = inputs.load("apertus")

    ref_doc = inputs.reference_doc("apertus")
    module = respc.compile_template(doc)
    rows, previous = [], None
    for size in sizes:
        if previous is not None and previous[1] * (size / previous[0]) ** 2 > budget:
            rows.append({"size": size, "skipped": True})
            continue
        text = (inputs.FILLER * (size // len(inputs.FILLER) + 1))[:size]
        ours = whole_ms(lambda: module.parse_response(text, ""), 1)
        ref = whole_ms(lambda: ref_parse(text, ref_doc, prefix=""), 1)
        rows.append({"size": size, "ours_ms": ours, "ref_ms": ref})
        previous = (size, max(ours, ref) / 1e3)
    return rows


def bench_whole_many_calls(counts: list[int], budget: float, ref_parse) -> list[dict]:
    """Whole-text ``parse_response`` of qwen3 output made of ``count`` back-to-back tool calls.

    Every commit moves the position on; a parser that searched again from there to the end for a
    delimiter that never comes (here ``<think>``) would do quadratic work. The reference is run
    while its previous size, scaled quadratically, stays under ``budget`` seconds."""
    import respc

    doc = inputs.load("qwen3")

    ref_doc = inputs.reference_doc("qwen3")
    module = respc.compile_template(doc)
    call = '<tool_call>{"name": "f", "arguments": {}}</tool_call>'
    rows, previous_ref = [], None
    for count in counts:
        text = call * count + "<|im_end|>"
        ours = whole_ms(lambda: module.parse_response(text, ""), 1)
        ref = None
        if previous_ref is None or previous_ref[1] * (count / previous_ref[0]) ** 2 <= budget:
            ref = whole_ms(lambda: ref_parse(text, ref_doc, prefix=""), 1)
            previous_ref = (count, ref / 1e3)
        rows.append({"count": count, "size": len(text), "ours_ms": ours, "ref_ms": ref})
    return rows


def report_whole_many_calls(rows: list[dict]) -> None:
    say("\n## whole-text parse with many tool calls: qwen3 (parse_response, one call; ms)")
    out, prev = [], None
    for row in rows:
        growth = "" if prev is None else f"{row['ours_ms'] / prev['ours_ms']:.1f}x for {row['count'] / prev['count']:.3g}x the calls"
        out.append([str(row["count"]), size_label(row["size"]), fmt(row["ours_ms"], ".1f"),
                    fmt(row["ref_ms"], ".1f", "not run (projected > budget)"), growth])
        prev = row
    say(table(["tool calls", "size", "ours ms", "ref ms", "ours growth"], out))


def profile_ours(name: str, size: int, top: int = 14) -> str:
    """cProfile of ours feeding ``size`` chars of template ``name`` (tottime order)."""
    import cProfile
    import io
    import pstats

    import respc

    doc = inputs.load(name)
    module = respc.compile_template(doc)
    chunks = inputs.chunks(inputs.build(name, size, doc))
    profiler = cProfile.Profile()
    parser = module.ResponseParser("")
    profiler.enable()
    for chunk in chunks:
        parser.feed(chunk)
    parser.finalize()
    profiler.disable()
    stream = io.StringIO()
    pstats.Stats(profiler, stream=stream).sort_stats("tottime").print_stats(top)
    return stream.getvalue()


# --- report ---------------------------------------------------------------------------------------

def _ref_stream_cell(row: dict) -> str:
    if row["ref_us"] is not None:
        return fmt(row["ref_us"])
    if row.get("ref_est_us") is not None:
        return f"~{row['ref_est_us']:.1f} est"
    return row["ref_skip"] or "n/a"


def _ref_parse_cell(row: dict) -> str:
    return fmt(row["ref_parse_ms"], ".2f") if row["ref_parse_ms"] is not None else row["ref_parse_skip"] or "-"


def report_sizes(results: list[dict], sizes: list[int], args) -> None:
    for size in sizes:
        say(f"\n## {size_label(size)} output, fed in {inputs.CHUNK}-char chunks "
            f"(µs per chunk; peak = tracemalloc peak of one feed; parse = whole-text parse_response)")
        rows = []
        for res in results:
            row = res["sizes"].get(size)
            if row is None:
                continue
            ref_peak = f"{row['ref_peak'] / KB:.0f} kB" if row["ref_peak"] is not None else \
                "n/a" if res["reference"] != "yes" else "not run"
            rows.append([
                res["template"], fmt(row["ours_us"]), _ref_stream_cell(row), fmt(row["floor_us"], ".3f"),
                fmt(row["ref_ours"], ".1f") + ("*" if row["ref_us"] is None and row["ref_ours"] is not None else ""),
                fmt(row["ours_floor"], ".1f"),
                f"{row['ours_peak'] / KB:.0f} kB", ref_peak,
                fmt(row["ours_parse_ms"], ".2f"), fmt(row.get("stream_parse_ms"), ".2f"),
                fmt(row.get("find_floor_ms"), ".3f") if res["literals"] else "no literal",
                _ref_parse_cell(row),
                fmt(ratio(row["ref_parse_ms"], row["ours_parse_ms"]), ".1f"),
                row["equal"],
            ])
        med = lambda key: median(r["sizes"][size].get(key) for r in results if size in r["sizes"])  # noqa: E731
        rows.append(["MEDIAN", fmt(med("ours_us")), fmt(med("ref_us")) if med("ref_us") else
                     f"~{fmt(med('ref_est_us'), '.1f')} est", fmt(med("floor_us"), ".3f"),
                     fmt(med("ref_ours"), ".1f"), fmt(med("ours_floor"), ".1f"),
                     f"{fmt(med('ours_peak') and med('ours_peak') / KB, '.0f')} kB",
                     f"{fmt(med('ref_peak') and med('ref_peak') / KB, '.0f')} kB" if med("ref_peak") else "-",
                     fmt(med("ours_parse_ms")), fmt(med("stream_parse_ms")), fmt(med("find_floor_ms"), ".3f"),
                     fmt(med("ref_parse_ms")), "", ""])
        say(table(["template", "ours", "ref", "floor", "ref/ours", "ours/floor", "peak ours", "peak ref",
                   "parse ours ms", "via feed ms", "find floor ms", "parse ref ms", "ref/ours", "equal"], rows))
        estimated = [r["sizes"][size] for r in results if size in r["sizes"]
                     and r["sizes"][size].get("ref_est_us") is not None]
        if estimated:
            worst = max(r["ref_est_s"] for r in estimated)
            say(f"  * reference streaming run at {size_label(size)} not run (would take up to {worst:.0f} s "
                f"per template: it re-concatenates its whole buffer on every feed, O(n²)); '~X est' = mean of its "
                f"µs/chunk at the start (first 20 kB) and at the end (last 10 kB, after pre-feeding "
                f"the rest in 4 kB pieces). --ref-1m runs it for real.")
        over = [r["template"] for r in results if size in r["sizes"] and any(
            (r["sizes"][size].get(key) or "").startswith("> budget") for key in ("ref_skip", "ref_parse_skip"))]
        if over:
            say(f"  reference over the budget ({args.ref_budget:g} s per call, extrapolated from the smaller sizes) "
                f"at {size_label(size)}, not run: {', '.join(over)}")
        absent = [r["template"] for r in results if r["reference"] != "yes" and size in r["sizes"]]
        if absent:
            say(f"  reference n/a (v2-only, no v1 form in tests/cases/v1_templates; the reference reads only "
                f"language v1): {', '.join(absent)}")
        v1 = [r["template"] for r in results if r["sizes"].get(size, {}).get("equal") == "v1 form"]
        if v1:
            say(f"  'v1 form': the v2 template's message differs from the reference's, and respc on the v1 form "
                f"(the template the reference runs) equals it, a v2 construct the v1 form cannot express: "
                f"{', '.join(v1)}")
        bad = [r["template"] for r in results if r["sizes"].get(size, {}).get("equal", "").startswith("NO")]
        if bad:
            say(f"  !! messages differ from the reference for: {', '.join(bad)}")


def report_build(ctimes: dict, itimes: dict) -> None:
    say("\n## compile (compile_source in a fresh interpreter: first call, then median of 3 more) and "
        "import of the generated module (fresh interpreter, respc.runtime+regex pre-imported)")
    first = {n: c["first_ms"] for n, c in ctimes.items()}
    again = {n: c["again_ms"] for n, c in ctimes.items()}
    rows = [[n, fmt(first[n], ".1f"), fmt(again[n], ".1f"), fmt(itimes["cold"].get(n), ".2f"),
             fmt(itimes["warm"].get(n), ".2f")] for n in ctimes]
    for label, agg in (("MEDIAN", median), ("MAX", max)):
        rows.append([label, fmt(agg(first.values()), ".1f"), fmt(agg(again.values()), ".1f"),
                     fmt(agg(itimes["cold"].values()), ".2f"), fmt(agg(itimes["warm"].values()), ".2f")])
    say(table(["template", "compile ms (first)", "compile ms (again)", "import ms (cold, from .py)",
               "import ms (warm, from .pyc)"], rows))
    say(f"  once per process: respc.compiler import (lark, jinja2) "
        f"{median(c['import_ms'] for c in ctimes.values()):.0f} ms; respc.runtime + regex import "
        f"{itimes['runtime_ms']:.1f} ms cold, {itimes['runtime_warm_ms']:.1f} ms warm")


def report_adversarial(rows: list[dict], sizes: list[int], budget: float) -> None:
    say(f"\n## adversarial inputs (ours, µs per {inputs.CHUNK}-char chunk; each run stops after {budget:g} s; "
        f"ref at {size_label(sizes[0])})")
    headers = ["template", "case", f"ref {size_label(sizes[0])}"] + [size_label(s) for s in sizes]
    headers += [f"{size_label(sizes[i + 1])}/{size_label(sizes[i])}" for i in range(len(sizes) - 1)] + ["linear?"]
    out = []
    for row in rows:
        cells = [row["template"], row["case"], fmt(row["ref_us"]) + (" (capped)" if row["ref_capped"] else "")]
        values = []
        for size in sizes:
            cell = row["sizes"][size]
            if cell.get("skipped"):
                cells.append("not run")
                values.append(None)
            elif cell["capped"]:
                cells.append(f"{cell['us']:.1f} (stopped at {cell['fed_chars'] // KB} kB)")
                values.append(None)
            else:
                cells.append(fmt(cell["us"]))
                values.append(cell["us"])
        growth = [ratio(values[i + 1], values[i]) for i in range(len(sizes) - 1)]
        cells += [fmt(g, ".2f") for g in growth]
        any_capped = any(row["sizes"][s].get("capped") or row["sizes"][s].get("skipped") for s in sizes)
        linear = not any_capped and all(g is not None and g <= TARGET_GROWTH for g in growth)
        cells.append("yes" if linear else "NO")
        row["linear"] = linear
        out.append(cells)
    say(table(headers, out, "<<" + ">" * (len(headers) - 2)))


def report_whole_adversarial(rows: list[dict]) -> None:
    say("\n## adversarial whole-text parse: apertus, prose without '\"' (parse_response, one call; ms)")
    out, prev = [], None
    for row in rows:
        if row.get("skipped"):
            out.append([size_label(row["size"]), "not run (projected > budget)", "", ""])
            continue
        growth = "" if prev is None else f"{row['ours_ms'] / prev['ours_ms']:.1f}x for {row['size'] / prev['size']:.3g}x the size"
        out.append([size_label(row["size"]), fmt(row["ours_ms"], ".1f"), fmt(row["ref_ms"], ".1f"), growth])
        prev = row
    say(table(["size", "ours ms", "ref ms", "ours growth"], out))


def _mark(ok: bool | None) -> str:
    return "n/a" if ok is None else "yes" if ok else "NO"


def target_table(results: list[dict], sizes: list[int]) -> tuple[list[str], list[list[str]], list[str]]:
    """Issue 14's targets per template
    (README.md "Performance"): ``(headers, rows, summary)``; ``rows`` are lists of cell
    strings, ``summary`` one dict per target (``target``, ``met``, ``of`` applicable templates,
    ``na``, ``detail``, ``line``: the printed summary line).

    One row per template with every target's figure(s) and a mark (``yes``, ``NO``, ``n/a``):
    streaming ours/floor <= 3 at every size; reference/ours >= 5 streaming at the smallest size;
    per-chunk cost flat, ours/floor at the largest size / at the smallest <= 1.1 (:func:`flat_ratio`); whole-text reference/ours >= 2 and
    ours/find floor <= 2 at the two largest sizes; one big feed linear, parse_response at the
    largest size <= 1.2 x (largest/second-largest) parse_responses at the second-largest. With the
    default sizes (10 kB, 100 kB, 1 MB) these are exactly issue 14's targets. A figure from an
    extrapolated reference (over the budget) is shown as ``~X`` and counts; a reference that
    cannot run (v2-only) makes its targets ``n/a``. Every ratio is within one run.
    """
    sizes = sorted(sizes)
    small, large = sizes[0], sizes[-1]
    upper = sizes[-2:] if len(sizes) >= 2 else sizes
    mid = sizes[-2] if len(sizes) >= 2 else None
    lab = size_label
    headers = (["template"] + [f"o/f {lab(s)}" for s in sizes] + [f"<={TARGET_FLOOR_RATIO:g}"]
               + [f"ref/o {lab(small)}", f">={TARGET_REF_SPEEDUP:g}"]
               + ([f"{lab(large)}/{lab(small)}", f"<={TARGET_FLAT:g}"] if mid is not None else [])
               + [f"whole ref/o {lab(s)}" for s in upper] + [f">={TARGET_WHOLE_REF:g}"]
               + [f"whole/find {lab(s)}" for s in upper] + [f"<={TARGET_WHOLE_FLOOR:g}"]
               + ([f"{lab(large)}/({large // mid}x{lab(mid)})", f"<={TARGET_LINEAR:g}"] if mid is not None else [])
               + ["met"])
    names = ["stream ours/floor <= %g at %s" % (TARGET_FLOOR_RATIO, ", ".join(lab(s) for s in sizes)),
             "stream reference/ours >= %g at %s" % (TARGET_REF_SPEEDUP, lab(small))]
    keys = ["stream", "ref"]
    if mid is not None:
        names.append(f"per-chunk cost flat: ours/floor {lab(large)} / {lab(small)} <= {TARGET_FLAT:g}")
        keys.append("flat")
    names += [f"whole-text reference/ours >= {TARGET_WHOLE_REF:g} at {', '.join(lab(s) for s in upper)}",
              f"whole-text ours/find floor <= {TARGET_WHOLE_FLOOR:g} at {', '.join(lab(s) for s in upper)}"]
    keys += ["whole_ref", "whole_floor"]
    if mid is not None:
        names.append(f"one big feed linear: parse {lab(large)} <= {TARGET_LINEAR:g} x {large // mid} "
                     f"parses of {lab(mid)}")
        keys.append("linear")
    marks: dict[str, list] = {n: [] for n in names}  # (template, ok or None, worst figure)
    rows = []
    for res in results:
        per = res["sizes"]
        cells = [res["template"]]
        checks = []
        # streaming ours/floor
        vals = [per[s]["ours_floor"] for s in sizes]
        cells += [fmt(v, ".1f") for v in vals]
        checks.append((all(v <= TARGET_FLOOR_RATIO for v in vals), max(vals)))
        # reference/ours streaming at the smallest size (a real run only)
        r = per[small]
        v = r["ref_ours"] if r["ref_us"] is not None else None
        cells.append(fmt(v, ".1f") if v is not None else ("n/a" if res["reference"] != "yes" else "not run"))
        checks.append((None if v is None else v >= TARGET_REF_SPEEDUP, v))
        # per-chunk flat: ours per chunk at the largest size over the smallest, each against the
        # floor of its own rounds (see FLAT below)
        if mid is not None:
            v = flat_ratio(per[large], per[small])
            cells.append(fmt(v, ".2f"))
            checks.append((v <= TARGET_FLAT, v))
        # whole-text against the reference
        vals = []
        for s in upper:
            row = per[s]
            if row["ref_parse_ms"] is not None:
                v = ratio(row["ref_parse_ms"], row["ours_parse_ms"])
                cells.append(fmt(v, ".1f"))
            elif row.get("ref_parse_est_ms") is not None:
                v = ratio(row["ref_parse_est_ms"], row["ours_parse_ms"])
                cells.append(f"~{v:.0f}")
            else:
                v = None
                cells.append("n/a" if res["reference"] != "yes" else "not run")
            vals.append(v)
        known = [v for v in vals if v is not None]
        checks.append((None if not known else all(v >= TARGET_WHOLE_REF for v in known), min(known, default=None)))
        # whole-text against the find floor
        if res["literals"]:
            vals = [ratio(per[s]["ours_parse_ms"], per[s]["find_floor_ms"]) for s in upper]
            cells += [fmt(v, ".1f") for v in vals]
            checks.append((all(v is not None and v <= TARGET_WHOLE_FLOOR for v in vals), max(vals, key=lambda x: x or 0)))
        else:
            cells += ["no literal"] * len(upper)
            checks.append((None, None))
        # one big feed linear
        if mid is not None:
            v = ratio(per[large]["ours_parse_ms"], per[mid]["ours_parse_ms"] * (large / mid))
            cells.append(fmt(v, ".2f"))
            checks.append((v <= TARGET_LINEAR, v))
        # marks, in header order: after each target's figures
        out, k = [cells[0]], 1
        widths = [len(sizes), 1] + ([1] if mid is not None else []) + [len(upper), len(upper)] \
            + ([1] if mid is not None else [])
        for (ok, worst), width, name in zip(checks, widths, names):
            out += cells[k:k + width] + [_mark(ok)]
            k += width
            marks[name].append((res["template"], ok, worst))
        applicable = [ok for ok, _ in checks if ok is not None]
        out.append(f"{sum(applicable)}/{len(applicable)}")
        rows.append(out)
    summary = []
    for name, key in zip(names, keys):
        entries = marks[name]
        app = [e for e in entries if e[1] is not None]
        met = sum(1 for e in app if e[1])
        detail = f"{met}/{len(app)} templates meet it"
        if len(app) < len(entries):
            detail += f" ({len(entries) - len(app)} n/a)"
        failing = [e for e in app if not e[1] and e[2] is not None]
        if failing:
            lower_is_better = "<=" in name
            worst = max(failing, key=lambda e: e[2]) if lower_is_better else min(failing, key=lambda e: e[2])
            detail += f"; worst {worst[0]} {worst[2]:.2f}"
        summary.append({"target": name, "key": key, "met": met, "of": len(app), "na": len(entries) - len(app),
                        "detail": detail, "line": f"{name}: {detail}",
                        "misses": [(e[0], e[2]) for e in app if not e[1]]})
    return headers, rows, summary


def miss_reasons(results: list[dict], sizes: list[int], summary: list[dict]) -> list[str]:
    """One line per template and missed target (``summary`` from :func:`target_table`): the
    nearest figure, and what this run measured about why (``result["calls"]``, see
    :func:`_bench_calls`): a streaming miss at the smallest size only whose output meets the
    target without its tool calls is the calls' fixed cost; a whole-text find-floor miss where the
    calls alone take more than the target allows is their decoding. Other misses give the
    figures only (RESULTS.md says what is known of them)."""
    sizes = sorted(sizes)
    small, lab = sizes[0], size_label
    by_name = {res["template"]: res for res in results}
    lines = []
    for entry in summary:
        for name, worst in entry["misses"]:
            res, key = by_name[name], entry["key"]
            per, calls = res["sizes"], res.get("calls")
            figure = "n/a" if worst is None else f"{worst:.2f}"
            why = ""
            if key == "stream":
                over = [lab(s) for s in sizes if per[s]["ours_floor"] > TARGET_FLOOR_RATIO]
                figure = ", ".join(f"{lab(s)} {per[s]['ours_floor']:.1f}" for s in sizes)
                if calls and over == [lab(small)] and calls["prose_ours_floor"] <= TARGET_FLOOR_RATIO:
                    row = per[small]
                    share = calls["stream_us_per_call"] * inputs.N_TOOL_CALLS / (row["ours_us"] * row["chunks"])
                    why = (f"{lab(small)} only: {calls['prose_ours_floor']:.1f} without its {inputs.N_TOOL_CALLS} "
                           f"tool calls; a call streamed costs {calls['stream_us_per_call']:.0f} µs, the calls "
                           f"{share:.0%} of the {lab(small)} run")
                elif calls:
                    why = f"without its tool calls {calls['prose_ours_floor']:.1f} at {lab(small)}"
            elif key == "flat":
                raw = ratio(per[sizes[-1]]["ours_us"], per[small]["ours_us"])
                floor = ratio(per[sizes[-1]]["floor_us"], per[small]["floor_us"])
                why = (f"µs per chunk {lab(sizes[-1])} / {lab(small)}: ours {raw:.2f}, the floor {floor:.2f}"
                       if raw is not None and floor is not None else "")
            elif key == "ref" and calls:
                row = per[small]
                share = calls["stream_us_per_call"] * inputs.N_TOOL_CALLS / (row["ours_us"] * row["chunks"])
                why = (f"a call streamed costs {calls['stream_us_per_call']:.0f} µs, the calls {share:.0%} of "
                       f"the {lab(small)} run")
            elif key == "whole_floor" and calls and calls.get("find_100k_ms"):
                alone = calls["calls_whole_ms"] / calls["find_100k_ms"]
                if alone > TARGET_WHOLE_FLOOR / 2:
                    why = (f"the {inputs.N_TOOL_CALLS} calls alone take {calls['calls_whole_ms'] * 1e3:.0f} µs in "
                           f"parse_response, {alone:.1f}x the 100 kB find floor "
                           f"({calls['find_100k_ms'] * 1e3:.0f} µs)")
            lines.append(f"{name} — {entry['target']}: {figure}" + (f"; {why}" if why else ""))
    return lines


def report_target_table(results: list[dict], sizes: list[int], md_path: str | None = None) -> list[dict]:
    """Print :func:`target_table` (and write it as markdown to ``md_path``); return the summary."""
    headers, rows, summary = target_table(results, sizes)
    say("\n## issue 14 targets per template (ratios within this run; yes / NO / n/a; ~X = against the "
        "reference's extrapolated time, over the budget)")
    say(table(headers, rows))
    for entry in summary:
        say(f"  {entry['line']}")
    reasons = miss_reasons(results, sizes, summary)
    if reasons:
        say("\n### targets missed, per template: the nearest figure and what this run measured about why")
        for line in reasons:
            say(f"  {line}")
    if md_path:
        md = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        md += ["| " + " | ".join(r) + " |" for r in rows]
        md += [""] + [f"- {entry['line']}" for entry in summary]
        if reasons:
            md += ["", "Targets missed, per template (the nearest figure; what this run measured about why):", ""]
            md += [f"- {line}" for line in reasons]
        Path(md_path).write_text("\n".join(md) + "\n", encoding="utf-8")
        say(f"  (written as markdown to {md_path})")
    return summary


def report_targets(results, sizes, ctimes, itimes) -> list[tuple[str, bool | None, str]]:
    say("\n## targets (catalogue-wide; per template: the table above)")
    verdicts = []
    for entry in target_table(results, sizes)[2]:
        verdicts.append((entry["target"], entry["of"] > 0 and entry["met"] == entry["of"], entry["detail"]))
    if ctimes:
        first = [c["first_ms"] for c in ctimes.values()]
        worst = max(first)
        verdicts.append((f"compile <= {TARGET_COMPILE_MS:g} ms per template", worst <= TARGET_COMPILE_MS,
                         f"first compile in a process: median {median(first):.1f} ms, max {worst:.1f} ms "
                         f"(+ {median(c['import_ms'] for c in ctimes.values()):.0f} ms compiler import)"))
    if itimes:
        cold, warm = max(itimes["cold"].values()), max(itimes["warm"].values())
        verdicts.append((f"import <= {TARGET_IMPORT_MS:g} ms per module", cold <= TARGET_IMPORT_MS,
                         f"max {cold:.2f} ms cold (from .py), {warm:.2f} ms warm (.pyc); median "
                         f"{median(itimes['cold'].values()):.2f} / {median(itimes['warm'].values()):.2f} ms; "
                         f"+ {itimes['runtime_ms']:.1f} ms once for respc.runtime+regex"))
    width = max(len(v[0]) for v in verdicts)
    for label, ok, detail in verdicts:
        say(f"  [{'MET' if ok else 'NOT MET':7}] {label:{width}}  {detail}")
    return verdicts


def compare_errors(names: list[str], sizes: list[int], repeat: int = 7) -> list[dict]:
    """Per-chunk cost of ``errors="recover"`` against ``"strict"`` on the benchmark inputs
    (issue 8 target: within 10%). Runs alternate between the two modes so drift of a shared
    machine falls on both; each figure is the best of ``repeat`` runs (the least disturbed one: on
    a shared machine a median still moves by a factor of two between runs)."""
    import respc

    rows = []
    for name in names:
        doc = inputs.load(name)
        module = respc.compile_template(doc)
        try:
            inputs.pieces(name, doc)
        except Exception as exc:  # noqa: BLE001 - as main(): a template the builders cannot handle yet
            say(f"  {name}: SKIPPED ({type(exc).__name__}: {str(exc)[:160]})")
            continue
        for size in sizes:
            chunks = inputs.chunks(inputs.build(name, size, doc))
            times: dict[str, list[float]] = {"strict": [], "recover": []}
            messages = {}
            for _ in range(repeat):
                for errors in times:
                    seconds, fed, messages[errors] = run_feed(
                        lambda: module.ResponseParser("", errors=errors), chunks)
                    times[errors].append(seconds / fed * 1e6)
            strict, recover = min(times["strict"]), min(times["recover"])
            rows.append({"template": name, "size": size, "chunks": len(chunks), "strict_us": strict,
                         "recover_us": recover, "ratio": recover / strict,
                         "same": messages["strict"] == messages["recover"]})
    return rows


def stream_only(names: list[str], sizes: list[int], rounds: int) -> list[dict]:
    """Streaming ``ours/floor`` only (``--stream-only``): per template and size, ``rounds``
    interleaved runs of ours and :class:`Floor` over the benchmark input in 4-character chunks;
    the ratio is the median of the per-round ratios (as :func:`_bench_sizes`), and ``best`` the
    least run of ours over the least of the floor (steadier on a loaded machine, where a time
    slice lost inside one ~1 ms run moves a single round's ratio by several times). Prints one
    table and the templates above 3x by each; returns the rows."""
    import respc

    rows = []
    for name in names:
        doc = inputs.load(name)
        module = respc.compile_template(doc)
        row = {"template": name}
        for size in sizes:
            chunks = inputs.chunks(inputs.build(name, size, doc))
            n = len(chunks)
            ratios, ours_us, floor_us = [], [], []
            make = lambda: module.ResponseParser("")  # noqa: E731
            run_feed(make, chunks)
            for _ in range(rounds):
                o = run_feed(make, chunks)[0] / n * 1e6
                f = run_feed(Floor, chunks)[0] / n * 1e6
                ours_us.append(o)
                floor_us.append(f)
                ratios.append(o / f)
            row[size_label(size)] = {"ours_us": statistics.median(ours_us),
                                     "floor_us": statistics.median(floor_us),
                                     "ours_floor": statistics.median(ratios),
                                     "best_ratio": min(ours_us) / min(floor_us)}
        rows.append(row)
        say(f"{name:28s} " + "  ".join(f"{size_label(s)} {row[size_label(s)]['ours_floor']:5.2f}x "
                                       f"best {row[size_label(s)]['best_ratio']:5.2f}x "
                                       f"({min(1e9, row[size_label(s)]['ours_us']):.2f} µs)" for s in sizes))
    for size in sizes:
        label = size_label(size)
        for key, what in (("ours_floor", "median of the per-round ratios"), ("best_ratio", "least ours / least floor")):
            values = [r[label][key] for r in rows]
            over = sorted((r for r in rows if r[label][key] > 3), key=lambda r: -r[label][key])
            say(f"{label} ({what}): median {statistics.median(values):.2f}x; above 3x: "
                + (", ".join(f"{r['template']} {r[label][key]:.2f}x" for r in over) or "none"))
    return rows


def report_errors(rows: list[dict]) -> None:
    say("\n# errors=\"recover\" against errors=\"strict\" (µs per chunk, best of 7; target ratio <= 1.10)")
    say(table(["template", "size", "chunks", "strict", "recover", "recover/strict", "same message"],
              [[r["template"], size_label(r["size"]), str(r["chunks"]), fmt(r["strict_us"], ".3f"),
                fmt(r["recover_us"], ".3f"), fmt(r["ratio"], ".3f"), "yes" if r["same"] else "NO"] for r in rows]))
    if rows:
        geo = statistics.geometric_mean([r["ratio"] for r in rows])
        worst = max(rows, key=lambda r: r["ratio"])
        say(f"geometric mean recover/strict {geo:.3f}; worst {worst['ratio']:.3f} "
            f"({worst['template']}, {size_label(worst['size'])})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=None, type=inputs.sizes_arg,
                    help="output sizes, e.g. 10k,100k,1M (default: 10k,100k,1M)")
    ap.add_argument("--templates", default=None, type=inputs.templates_arg,
                    help="comma-separated catalogue names (default: all)")
    ap.add_argument("--quick", action="store_true", help="10k,100k on qwen3,gpt_oss,qwen3_coder (< 60 s)")
    ap.add_argument("--json", dest="json_out", default=None, help="also write every figure to this file")
    ap.add_argument("--ref-1m", action="store_true", help="run the reference's O(n²) streaming at 1 MB too")
    ap.add_argument("--ref-cap", default="100k", type=inputs.size_arg, help="largest size the reference is streamed at (default 100k)")
    ap.add_argument("--ref-budget", type=float, default=10.0, metavar="SECONDS",
                    help="skip a reference call (whole-text parse or streaming run) whose time, extrapolated "
                         "from the smaller sizes, exceeds this (default 10)")
    ap.add_argument("--targets-md", default=None, metavar="FILE",
                    help="also write the per-template issue-14 targets table as markdown to FILE")
    ap.add_argument("--no-adversarial", action="store_true", help="skip the adversarial inputs")
    ap.add_argument("--adversarial-budget", type=float, default=None,
                    help="seconds per adversarial run before it is stopped (default 5, --quick 1.5)")
    ap.add_argument("--profile", default=None, metavar="TEMPLATE[:SIZE]",
                    help="only print a cProfile of ours, e.g. qwen3:100k")
    ap.add_argument("--errors", choices=("strict", "recover", "compare"), default="strict",
                    help="errors= of our parsers (default strict); compare: only the recover/strict table")
    ap.add_argument("--stream-only", action="store_true",
                    help="only streaming ours/floor per template and size (no reference, no whole text)")
    ap.add_argument("--rounds", type=int, default=7,
                    help="interleaved rounds per size with --stream-only (default 7)")
    args = ap.parse_args(argv)

    if args.profile:
        name, _, size = args.profile.partition(":")
        if name not in inputs.catalogue():
            ap.error(f"--profile: unknown template {name!r} (the catalogue is templates/*.json)")
        try:
            size = inputs.size_arg(size or "100k")
        except argparse.ArgumentTypeError as exc:
            ap.error(f"--profile: {exc}")
        say(profile_ours(name, size))
        return 0

    sizes = args.sizes or inputs.sizes_arg("10k,100k" if args.quick else "10k,100k,1M")
    names = inputs.catalogue()
    if args.templates:
        names = args.templates
    elif args.quick:
        names = [n for n in QUICK_TEMPLATES if n in names]
    budget = args.adversarial_budget or (1.5 if args.quick else 5.0)
    if args.stream_only:
        rows = stream_only(names, args.sizes or inputs.sizes_arg("10k,100k"), args.rounds)
        if args.json_out:
            Path(args.json_out).write_text(json.dumps({"machine": machine(), "stream": rows}, indent=1),
                                           encoding="utf-8")
        return 0
    if args.errors == "compare":
        logging_off()
        rows = compare_errors(names, sizes)
        report_errors(rows)
        if args.json_out:
            Path(args.json_out).write_text(json.dumps({"machine": machine(), "errors": rows}, indent=1),
                                           encoding="utf-8")
        return 0

    logging_off()
    from transformers.utils.chat_parsing import ResponseParser as Ref
    from transformers.utils.chat_parsing import parse_response as ref_parse

    started = time.perf_counter()
    info = machine()
    say("# respc benchmark")
    say(f"machine: nproc={info['nproc']} (usable {info['affinity']}), CPU: {info['cpu']}")
    say(f"python {info['python']} ({info['implementation']}), transformers {info['transformers']}, "
        f"regex {info['regex']}, respc commit {info['commit']}")
    say(f"sizes: {', '.join(size_label(s) for s in sizes)}; {len(names)} templates; chunk = {inputs.CHUNK} chars; "
        f"reference streamed up to {size_label(args.ref_cap)}" + (" and at 1 MB" if args.ref_1m else "")
        + f"; reference budget {args.ref_budget:g} s per call")

    results, skipped = [], {}
    for name in names:
        try:
            results.append(bench_template(name, sizes, args, Ref, ref_parse))
            say(f"  {name}: done ({time.perf_counter() - started:.0f} s)")
        except Exception as exc:  # noqa: BLE001 - a new template the builders cannot handle yet
            skipped[name] = f"{type(exc).__name__}: {exc}"
            say(f"  {name}: SKIPPED ({skipped[name][:160]})")
    ctimes = compile_times([r["template"] for r in results]) if results else {}
    itimes = import_times([r["template"] for r in results]) if results else {}
    adversarial, whole_adv, many_calls = [], [], []
    if not args.no_adversarial:
        adv_sizes = [s for s in sizes if s >= 100 * KB] or sizes[-1:]
        if adv_sizes[0] != 10 * KB:
            adv_sizes = [10 * KB] + adv_sizes
        cases = [c for c in inputs.adversarial_inputs()
                 if c.template in names or (c.template == "lazy_synthetic" and "gpt_oss" in names)]
        adversarial = bench_adversarial(cases, adv_sizes, budget, Ref)
        whole_adv = bench_whole_adversarial([10 * KB, 30 * KB, 100 * KB], budget, ref_parse) \
            if "apertus" in names or not args.templates and not args.quick else []
        many_calls = bench_whole_many_calls([1000, 4000, 16000], budget, ref_parse) if "qwen3" in names else []

    say("\n# results")
    say("inputs: " + "; ".join(f"{r['template']}: tool calls {r['tool_calls']}"
                               + ("" if r["reasoning"] else ", no reasoning") for r in results
                               if r["tool_calls"] != "literals" or not r["reasoning"]))
    report_sizes(results, sizes, args)
    if results:
        report_build(ctimes, itimes)
    if adversarial:
        report_adversarial(adversarial, adv_sizes, budget)
    if many_calls:
        report_whole_many_calls(many_calls)
    if whole_adv:
        report_whole_adversarial(whole_adv)
    if results:
        report_target_table(results, sizes, args.targets_md)
    verdicts = report_targets(results, sizes, ctimes, itimes) if results else []
    if skipped:
        say("\nskipped templates: " + "; ".join(f"{k}: {v}" for k, v in skipped.items()))
    say(f"\ntotal wall time {time.perf_counter() - started:.0f} s")

    if args.json_out:
        payload = {"machine": info, "sizes": sizes, "templates": results, "compile_ms": ctimes,
                   "import_ms": itimes, "adversarial": adversarial,
                   "whole_text_adversarial": whole_adv, "skipped": skipped,
                   "targets": [{"target": t, "met": ok, "detail": d} for t, ok, d in verdicts]}
        Path(args.json_out).write_text(json.dumps(payload, indent=1, default=str), encoding="utf-8")
    return 0


def logging_off() -> None:
    """Silence transformers' "PyTorch was not found" notice (it goes to stderr anyway)."""
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")


if __name__ == "__main__":
    sys.exit(main())
