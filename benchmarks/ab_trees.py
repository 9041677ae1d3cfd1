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
import gc, hashlib, importlib.util, json, os, subprocess, sys, tempfile, time
if sys.argv[1] == "worker":
    root, name, path = sys.argv[2], sys.argv[3], sys.argv[4]
    spec = importlib.util.spec_from_file_location("m", f"{root}/generated/{name}.py")
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
    text = open(path, encoding="utf-8").read()
    chunks = [text[i:i + 4] for i in range(0, len(text), 4)]
    def stream():
        p = m.ResponseParser(""); f = p.feed
        for c in chunks: f(c)
        return p.finalize()[0]
    def t(fn, reps):
        gc.disable(); t0 = time.process_time()
        for _ in range(reps): fn()
        r = (time.process_time() - t0) / reps; gc.enable(); return r
    msg = stream()
    r0 = t(stream, 1); reps = max(1, int(0.05 / r0))
    w0 = t(lambda: m.parse_response(text, ""), 1); wreps = max(1, int(0.02 / max(w0, 1e-6)))
    s = min(t(stream, reps) for _ in range(3)); w = min(t(lambda: m.parse_response(text, ""), wreps) for _ in range(3))
    h = hashlib.sha256(json.dumps(msg, sort_keys=True, default=str).encode()).hexdigest()[:8]
    print(json.dumps({"s": s / len(chunks) * 1e6, "w": w * 1e6, "h": h}))
    sys.exit()
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
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
