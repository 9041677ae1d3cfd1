"""A/B of streaming ours/floor between two trees, in CPU time: for a machine shared with other work.

Each tree is a folder laid out as the installed package (``respc/``, ``respc/runtime``, ...), made
from a git revision with ``git archive REV respc_pkg runtime compiler generated templates`` and the
folders moved under ``respc/`` (benchmarks/README.md, "OpenAI deltas"). Per template and size, on
this checkout's benchmark input (``inputs.build``, 4-character chunks), a worker process per tree
(``PYTHONPATH`` on the tree) times ``rounds`` interleaved rounds of ours (``compile_template``'s
parser: feed every chunk, finalize) and :class:`bench.Floor`, each a loop of about 30 ms, in CPU
time (``time.process_time``, collector off): a process the machine leaves waiting is not charged,
which wall-clock figures are (at load 8 to 12 on two cores single ``bench.py --stream-only`` rounds
came out 10 to 30 times the floor). ``best`` is the least ours over the least floor, ``median`` the
median of the per-round ratios; the trees alternate ``alternations`` times and each cell is the
median over them. CPU-time ratios run higher than quiet wall-clock ones (the floor, a tight loop,
loses least to a shared cache), so compare the two trees, not these ratios with other tables.

Usage: ``python benchmarks/ab_floor.py TREE_A TREE_B t1,t2 10000,100000 ALTERNATIONS ROUNDS OUT.json``.
"""
import sys, os, json, subprocess, statistics, gc, time
BENCH = os.path.dirname(os.path.abspath(__file__))
if sys.argv[1] == "worker":
    sys.path.insert(0, BENCH)
    import inputs, respc
    from bench import Floor
    names, sizes, rounds = sys.argv[2].split(","), [int(x) for x in sys.argv[3].split(",")], int(sys.argv[4])
    out = {}
    pt = time.process_time
    for name in names:
        doc = inputs.load(name); mod = respc.compile_template(doc)
        for size in sizes:
            chunks = inputs.chunks(inputs.build(name, size, doc)); n = len(chunks)
            def ours():
                p = mod.ResponseParser(""); f = p.feed
                for c in chunks: f(c)
                p.finalize()
            def floor():
                p = Floor(); f = p.feed
                for c in chunks: f(c)
                p.finalize()
            reps = max(1, int(0.03 / max(1e-6, (lambda t0: (ours(), pt() - t0)[1])(pt()))))
            o_runs, f_runs = [], []
            gc.disable()
            for _ in range(rounds):
                t0 = pt()
                for _ in range(reps): ours()
                o = (pt() - t0) / reps
                t0 = pt()
                for _ in range(reps): floor()
                f = (pt() - t0) / reps
                o_runs.append(o); f_runs.append(f)
            gc.enable()
            out[f"{name}:{size}"] = {"best": min(o_runs) / min(f_runs),
                                     "median": statistics.median(o / f for o, f in zip(o_runs, f_runs)),
                                     "ours_us": min(o_runs) / n * 1e6, "floor_us": min(f_runs) / n * 1e6}
    print(json.dumps(out))
    sys.exit()
trees = {"before": sys.argv[1], "after": sys.argv[2]}
names, sizes, alternations, rounds = sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6]
res = {}
for a in range(alternations):
    for tag in ("before", "after"):
        env = dict(os.environ, PYTHONPATH=trees[tag])
        r = subprocess.run([sys.executable, __file__, "worker", names, sizes, rounds], capture_output=True, text=True, env=env)
        if r.returncode:
            print(r.stderr[-2000:]); sys.exit(1)
        d = json.loads(r.stdout.strip().splitlines()[-1])
        for k, v in d.items():
            res.setdefault((k, tag), []).append(v)
json.dump({f"{k}|{t}": v for (k, t), v in res.items()}, open(sys.argv[7], "w"), indent=1)
keys = sorted({k for k, _ in res}, key=lambda k: (k.split(":")[0], int(k.split(":")[1])))
print(f"{'template:size':28s} {'best before':>11s} {'after':>6s} {'median before':>13s} {'after':>6s}")
for k in keys:
    b, a = res[(k, "before")], res[(k, "after")]
    f = lambda v, key: statistics.median(x[key] for x in v)
    print(f"{k:28s} {f(b,'best'):11.2f} {f(a,'best'):6.2f} {f(b,'median'):13.2f} {f(a,'median'):6.2f}")
