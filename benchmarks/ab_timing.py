"""What the two A/B benchmarks share (``ab_generated.py``, ``ab_trees.py``; benchmarks/README.md,
"A/B of two folders of generated modules" and "A/B of two whole trees"): loading a generated module
from its file, streaming an output through it, and CPU time per call. Standard library only, so
that ``ab_trees.py``'s worker can import it under another tree's interpreter and respc.
"""
import gc
import importlib.util
import sys
import time


def usage(doc: str, least: int) -> None:
    """Print ``doc`` (a script's docstring, its usage) and exit when ``sys.argv`` asks for help
    (``-h``, ``--help``: status 0) or holds fewer than ``least`` arguments (status 2)."""
    args = sys.argv[1:]
    if args[:1] in (["-h"], ["--help"]):
        print(doc.strip())
        sys.exit(0)
    if len(args) < least:
        print(doc.strip(), file=sys.stderr)
        sys.exit(2)


def load_module(path: str, name: str):
    """The generated module in the file ``path`` (str), imported as ``name`` (str; registered in
    ``sys.modules`` under it). Raises what importing the module raises (``FileNotFoundError``,
    ``RuntimeError`` from its ABI check)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def stream(module, chunks: list) -> dict:
    """The message (dict) a fresh ``module.ResponseParser("")`` gives after ``feed`` of every
    piece of ``chunks`` (list[str]) and ``finalize`` (docs/events.md, "The parser object")."""
    parser = module.ResponseParser("")
    feed = parser.feed
    for chunk in chunks:
        feed(chunk)
    return parser.finalize()[0]


def cpu_per_call(fn, reps: int) -> float:
    """Mean CPU seconds (``time.process_time``, the garbage collector off) of one call of ``fn``
    (no arguments) over ``reps`` (int, at least 1) calls in a row."""
    gc.disable()
    start = time.process_time()
    for _ in range(reps):
        fn()
    spent = (time.process_time() - start) / reps
    gc.enable()
    return spent


def calls_for(fn, seconds: float) -> int:
    """How many calls of ``fn`` take about ``seconds`` (float) of CPU time, from one timed call;
    at least 1 (a call timed at under a microsecond counts as one microsecond)."""
    return max(1, int(seconds / max(cpu_per_call(fn, 1), 1e-6)))
