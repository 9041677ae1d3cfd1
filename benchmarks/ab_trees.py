"""A/B of two whole trees, each with its own runtime and its own generated modules (where
``ab_generated.py`` runs two folders of modules on one runtime): per catalogue template, on this
tree's benchmark input (``inputs.build``, 10 kB adversarial output, 4-character chunks), the least
CPU time (``time.process_time``, collector off) per chunk of streaming and per whole-text
``parse_response``, each tree in its own process (its interpreter and installed respc), the two
alternating for 3 rounds. "same" compares a hash of the two streamed messages (a template changed
between the trees can read the input otherwise). Ratios B/A from one run are what to compare.

Usage: ``python benchmarks/ab_trees.py ROOT_A PYTHON_A ROOT_B PYTHON_B [all|t1,t2] [SIZE]``, for
example a ``git worktree`` of an older commit with its own virtual environment as A and this
checkout as B (benchmarks/RESULTS-declarations.md, "Against the issue's tree").
"""
import hashlib, json, os, subprocess, sys, tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ab_timing
if sys.argv[1:2] == ["worker"]:
    del sys.path[0]  # the other tree's modules see no folder of this one
    root, name, path = sys.argv[2], sys.argv[3], sys.argv[4]
    m = ab_timing.load_module(f"{root}/generated/{name}.py", "m")
    text = open(path, encoding="utf-8").read()
    chunks = [text[i:i + 4] for i in range(0, len(text), 4)]
    def stream(): return ab_timing.stream(m, chunks)
    def whole(): return m.parse_response(text, "")
    msg = stream()
    reps, wreps = ab_timing.calls_for(stream, 0.05), ab_timing.calls_for(whole, 0.02)
    s = min(ab_timing.cpu_per_call(stream, reps) for _ in range(3))
    w = min(ab_timing.cpu_per_call(whole, wreps) for _ in range(3))
    h = hashlib.sha256(json.dumps(msg, sort_keys=True, default=str).encode()).hexdigest()[:8]
    print(json.dumps({"s": s / len(chunks) * 1e6, "w": w * 1e6, "h": h}))
    sys.exit()
ab_timing.usage(__doc__, 4)
import inputs
A, B = (sys.argv[1], sys.argv[2]), (sys.argv[3], sys.argv[4])
names = sys.argv[5].split(",") if len(sys.argv) > 5 and sys.argv[5] != "all" else inputs.catalogue()
size = int(sys.argv[6]) if len(sys.argv) > 6 else 10000
tmp = tempfile.mkdtemp(prefix="respc-ab-trees-")
print(f"{'template':22s} {'strA':>7s} {'strB':>7s} {'B/A':>6s} {'wholeA':>8s} {'wholeB':>8s} {'B/A':>6s} same")
for name in names:
    if not os.path.exists(f"{A[0]}/generated/{name}.py"): continue
    path = os.path.join(tmp, f"{name}.txt"); open(path, "w", encoding="utf-8").write(inputs.build(name, size))
    best = {}
    for _ in range(3):
        for tag, (root, py) in (("a", A), ("b", B)):
            r = subprocess.run([py, __file__, "worker", root, name, path], capture_output=True, text=True)
            if r.returncode: print(name, tag, r.stderr[-300:]); break
            d = json.loads(r.stdout.strip().splitlines()[-1])
            o = best.setdefault(tag, d); o["s"] = min(o["s"], d["s"]); o["w"] = min(o["w"], d["w"])
    if len(best) < 2: continue
    a, b = best["a"], best["b"]
    print(f"{name:22s} {a['s']:7.3f} {b['s']:7.3f} {b['s']/a['s']:6.3f} {a['w']:8.1f} {b['w']:8.1f} {b['w']/a['w']:6.3f} {'=' if a['h']==b['h'] else 'differs'}", flush=True)
