"""Interleaved A/B of two folders of generated modules (issue 31): per catalogue template, the
per-chunk streaming cost (µs per 4-character chunk, ``feed`` of every chunk + ``finalize``, on
``inputs.build``'s adversarial 10 kB output) and the whole-text ``parse_response`` cost of folder
A's module and folder B's, in one process, alternating (every round times each figure once; the
least CPU time, ``time.process_time``, of the rounds is kept; collector off). Both modules must
give the same message. Ratios B/A from one run are what to compare: absolute figures move with
the machine's load.

Usage: ``python benchmarks/ab_generated.py BEFORE_DIR AFTER_DIR qwen3,gpt_oss [SIZE] [ROUNDS]``
(for example a copy of ``generated/`` from before a change, and ``generated``).
"""
import sys
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
import ab_timing
from ab_timing import stream, cpu_per_call as t
ab_timing.usage(__doc__, 3)
import inputs
A, B = sys.argv[1], sys.argv[2]
names = sys.argv[3].split(",")
size = int(sys.argv[4]) if len(sys.argv) > 4 else 10000
rounds = int(sys.argv[5]) if len(sys.argv) > 5 else 7

def load(d, name, tag):
    return ab_timing.load_module(f"{d}/{name}.py", f"ab_{tag}_{name}")

print(f"{'template':22s} {'strA us/ch':>10s} {'strB':>8s} {'B/A':>6s} {'wholeA us':>10s} {'wholeB':>8s} {'B/A':>6s}")
for name in names:
    text = inputs.build(name, size)
    chunks = inputs.chunks(text)
    ma, mb = load(A, name, "a"), load(B, name, "b")
    assert stream(ma, chunks) == stream(mb, chunks), name
    assert ma.parse_response(text, "") == mb.parse_response(text, ""), name
    sa = sb = wa = wb = 1e9
    # calibrate
    reps = ab_timing.calls_for(lambda: stream(ma, chunks), 0.05)
    wreps = ab_timing.calls_for(lambda: ma.parse_response(text, ""), 0.02)
    for _ in range(rounds):
        sa = min(sa, t(lambda: stream(ma, chunks), reps)); sb = min(sb, t(lambda: stream(mb, chunks), reps))
        wa = min(wa, t(lambda: ma.parse_response(text, ""), wreps)); wb = min(wb, t(lambda: mb.parse_response(text, ""), wreps))
    n = len(chunks)
    print(f"{name:22s} {sa/n*1e6:10.3f} {sb/n*1e6:8.3f} {sb/sa:6.3f} {wa*1e6:10.1f} {wb*1e6:8.1f} {wb/wa:6.3f}", flush=True)
