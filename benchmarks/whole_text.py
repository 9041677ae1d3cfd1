"""Whole-text parsing, interleaved in one process (issue 14; README.md "Performance"): the whole-text path against the
streaming path on the same complete text, the transformers reference, and issue 14's floor.

For each catalogue template and size, on ``inputs.build(name, size)``:

* ``whole``: ``runtime.whole.finish`` (what ``parse_response`` runs: one end-of-stream pass);
* ``via feed``: ``feed(text)`` then ``finalize()`` (the streaming path; ``parse_response`` before);
* ``ref``: ``transformers.utils.chat_parsing.parse_response`` on the template's v1 form;
* ``floor``: one ``str.find`` per watched literal delimiter over the text.

Each figure is the minimum over 5 rounds of 3 calls, the four measured in turn inside every round,
so load on a shared machine moves them together; a reference slower than 0.3 s per call is timed
once. Both of ours are checked to give the same message.

``--batch N`` instead times loops over ``N`` records per family of ``benchmarks/batch.py`` (its
generator and seed): parse + ``dump_record`` per record through each path, and the reference loop
on the first ``--ref-records`` of them.

``--before REV`` instead times ``parse_response``'s whole-text path as it is now against the same
path at git revision ``REV`` (its ``runtime/whole.py``, the ``JsonBoundary`` methods of its
``runtime/decoders.py`` and its ``generated/<name>.py``, loaded from git and swapped in; the rest of
the runtime is today's), interleaved in one process, in the mode ``--errors`` (strict or recover),
with the reference (``--no-ref``: without; n/a for a v2 template without a v1 form) and the find
floor; ``--rounds`` rounds.

Usage: ``python benchmarks/whole_text.py [--templates a,b] [--sizes 10k,100k] [--batch 571]
[--before c8d3998 --errors recover] [--no-ref]``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import inputs  # noqa: E402


def _best(fn, calls: int) -> float:
    best = float("inf")
    for _ in range(calls):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best * 1e3


def _streaming(parser, text: str) -> dict:
    parser.feed(text)
    return parser.finalize()[0]


def _inputs(names: list[str], sizes: list[int], need_ref: bool = True):
    """Per template and size: (name, size, parser class, reference template, watched literals, text);
    the reference template is None for a v2 template without a v1 form unless ``need_ref``
    (then the template is skipped)."""
    for name in names:
        doc = inputs.load(name)
        try:
            ref_doc = inputs.reference_doc(name)
        except FileNotFoundError as exc:  # a v2 template without a v1 form: the reference cannot run it
            if need_ref:
                print(f"| {name} | skipped: no v1 form for the reference ({exc.filename}) |")
                continue
            ref_doc = None
        parser_class = importlib.import_module(f"respc.generated.{name}").ResponseParser
        literals = sorted({lit for spec in doc["fields"].values() for key in ("open", "close")
                           for lit in inputs._literals(spec.get(key))})
        for size in sizes:
            try:
                text = inputs.build(name, size, doc)
            except AssertionError as exc:  # inputs.py refuses templates its filler would trigger
                print(f"| {name} | skipped: {exc} |")
                break
            yield name, size, parser_class, ref_doc, literals, text


def texts(names: list[str], sizes: list[int]) -> None:
    from transformers.utils.chat_parsing import parse_response as ref_parse

    from respc.runtime import whole

    print("| template | size | whole ms | via feed ms | ref ms | floor ms | ref/whole | ref/via feed | whole/floor |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, size, parser_class, ref_doc, literals, text in _inputs(names, sizes):
        if whole.finish(parser_class(""), text) != _streaming(parser_class(""), text):
            raise AssertionError(f"{name}: the whole-text path and the streaming path differ")
        runs = {
            "whole": lambda: whole.finish(parser_class(""), text),
            "feed": lambda: _streaming(parser_class(""), text),
            "ref": lambda: ref_parse(text, ref_doc, prefix=""),
            "floor": lambda: [text.find(lit) for lit in literals],
        }
        slow_ref = _best(runs["ref"], 1) > 300
        best = dict.fromkeys(runs, float("inf"))
        for _ in range(5):
            for key, fn in runs.items():
                if key == "ref" and slow_ref and best["ref"] < float("inf"):
                    continue
                best[key] = min(best[key], _best(fn, 1 if key == "ref" and slow_ref else 3))
        floor = f"{best['whole'] / best['floor']:.1f}" if literals else "no literal"
        print(f"| {name} | {size // 1000} kB | {best['whole']:.3f} | {best['feed']:.3f} | {best['ref']:.3f} | "
              f"{best['floor']:.3f} | {best['ref'] / best['whole']:.1f}x | {best['ref'] / best['feed']:.1f}x | "
              f"{floor} |", flush=True)


def batches(per_family: int, ref_records: int, rounds: int) -> None:
    import batch
    from transformers.utils.chat_parsing import parse_response as ref_parse

    import respc
    from respc.compiler.batch import dump_record
    from respc.runtime import stream, whole

    folder = Path(tempfile.mkdtemp(prefix="respc-whole-"))
    print("| family | records | whole-text path ms/record | streaming path ms/record | reference ms/record "
          "| ref/whole | ref/streaming |")
    print("|---|---|---|---|---|---|---|")
    for family in batch.DEFAULT_FAMILIES.split(","):
        src = folder / f"{family}.jsonl"
        batch.generate(family, per_family, src, 0.03, 12)
        records = [json.loads(line) for line in src.read_text(encoding="utf-8").splitlines()]
        module = respc.compile_template(family)
        ref_doc = inputs.reference_doc(family)

        def ours(module=module, records=records):
            for r in records:
                try:
                    out = {"id": r["id"], "message": module.parse_response(r["output"], r["prefix"]), "diagnostics": []}
                except ValueError as exc:
                    out = {"id": r["id"], "message": None, "diagnostics": [{"kind": "error", "message": str(exc)}]}
                dump_record(out)

        def ref(records=records[:ref_records], ref_doc=ref_doc):
            for r in records:
                try:
                    out = {"id": r["id"], "message": ref_parse(r["output"], ref_doc, prefix=r["prefix"])}
                except Exception as exc:  # noqa: BLE001 - the reference raises several kinds
                    out = {"id": r["id"], "message": None, "error": str(exc)}
                json.dumps(out, ensure_ascii=False)

        best = {"whole": float("inf"), "feed": float("inf"), "ref": float("inf")}
        try:
            for _ in range(rounds):
                stream.finish_whole = whole.finish
                best["whole"] = min(best["whole"], _best(ours, 1) / len(records))
                stream.finish_whole = _streaming  # parse_response through feed + finalize
                best["feed"] = min(best["feed"], _best(ours, 1) / len(records))
                stream.finish_whole = whole.finish
                best["ref"] = min(best["ref"], _best(ref, 1) / min(ref_records, len(records)))
        finally:
            stream.finish_whole = whole.finish
        print(f"| {family} | {len(records)} | {best['whole']:.3f} | {best['feed']:.3f} | {best['ref']:.3f} | "
              f"{best['ref'] / best['whole']:.1f}x | {best['ref'] / best['feed']:.1f}x |", flush=True)
        src.unlink()
    folder.rmdir()


def _module_at(rev: str, path: str, name: str):
    """The module ``path`` (``runtime/...``) as it was at git revision ``rev``, as package ``respc.runtime``."""
    import subprocess
    import types

    source = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=inputs.REPO, check=True, capture_output=True,
                            text=True).stdout
    module = types.ModuleType(name)
    module.__package__ = "respc.runtime"
    exec(compile(source, f"{rev}:{path}", "exec"), module.__dict__)  # noqa: S102 - our own history
    return module


def _generated_at(rev: str, name: str):
    """The generated module ``generated/<name>.py`` as it was at git revision ``rev`` (importing
    today's runtime), or None when it did not exist there."""
    import subprocess
    import types

    shown = subprocess.run(["git", "show", f"{rev}:generated/{name}.py"], cwd=inputs.REPO, capture_output=True,
                           text=True)
    if shown.returncode:
        return None
    module = types.ModuleType(f"respc.generated._before_{name}")
    exec(compile(shown.stdout, f"{rev}:generated/{name}.py", "exec"), module.__dict__)  # noqa: S102 - our own history
    return module


def before_after(names: list[str], sizes: list[int], rev: str, errors: str, rounds: int, ref: bool = True) -> None:
    from transformers.utils.chat_parsing import parse_response as ref_parse

    from respc.runtime import decoders, whole

    old_whole = _module_at(rev, "runtime/whole.py", "respc.runtime._whole_before")
    old_dec = _module_at(rev, "runtime/decoders.py", "respc.runtime._decoders_before")
    swapped = ("__init__", "_scan")
    now = {k: getattr(decoders.JsonBoundary, k) for k in swapped}
    then = {k: getattr(old_dec.JsonBoundary, k) for k in swapped}

    def install(methods):
        for k, fn in methods.items():
            setattr(decoders.JsonBoundary, k, fn)

    print(f"| template | size | before ({rev}) ms | after ms | before/after | ref ms | ref/after | floor ms "
          "| before/floor | after/floor |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    old_classes: dict = {}
    try:
        for name, size, parser_class, ref_doc, literals, text in _inputs(names, sizes, need_ref=False):
            if name not in old_classes:
                module = _generated_at(rev, name)
                old_classes[name] = module.ResponseParser if module is not None else parser_class
            old_class = old_classes[name]
            runs = {
                "before": lambda: old_whole.finish(old_class("", errors=errors), text),
                "after": lambda: whole.finish(parser_class("", errors=errors), text),
                "ref": lambda: ref_parse(text, ref_doc, prefix=""),
                "floor": lambda: [text.find(lit) for lit in literals],
            }
            if ref_doc is None or not ref:
                del runs["ref"]
            install(then)
            started = time.perf_counter()
            expected = runs["before"]()
            slow_before = time.perf_counter() - started > 0.3  # (inkling's opener before bd71cf1 at 1 MB)
            install(now)
            if runs["after"]() != expected:
                raise AssertionError(f"{name}: before and after differ")
            slow_ref = "ref" in runs and _best(runs["ref"], 1) > 300
            best = dict.fromkeys(runs, float("inf"))
            for _ in range(rounds):
                for key, fn in runs.items():
                    slow = (key == "ref" and slow_ref) or (key == "before" and slow_before)
                    if slow and best[key] < float("inf"):
                        continue
                    install(then if key == "before" else now)
                    best[key] = min(best[key], _best(fn, 1 if slow else 3))
            install(now)
            floors = (f"{best['before'] / best['floor']:.2f} | {best['after'] / best['floor']:.2f}" if literals
                      else "no literal | no literal")
            refs = (f"{best['ref']:.3f} | {best['ref'] / best['after']:.1f}x" if "ref" in best else "n/a | n/a")
            print(f"| {name} | {size // 1000} kB | {best['before']:.3f} | {best['after']:.3f} | "
                  f"{best['before'] / best['after']:.2f}x | {refs} | {best['floor']:.3f} | {floors} |", flush=True)
    finally:
        install(now)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--templates", default=None, type=inputs.templates_arg,
                    help="comma-separated catalogue names (default: all)")
    ap.add_argument("--sizes", default="10k,100k", type=inputs.sizes_arg, help="output sizes (default 10k,100k)")
    ap.add_argument("--batch", type=int, default=None, metavar="N", help="time batch loops of N records per family")
    ap.add_argument("--ref-records", type=int, default=150, help="--batch: records per family for the reference")
    ap.add_argument("--rounds", type=int, default=3, help="--batch, --before: rounds (the minimum is kept)")
    ap.add_argument("--before", default=None, metavar="REV",
                    help="time runtime/whole.py and JsonBoundary at git revision REV against today's "
                         "(the generated modules and the rest of the runtime are today's)")
    ap.add_argument("--errors", default="strict", choices=("strict", "recover"), help="--before: the parse mode")
    ap.add_argument("--no-ref", action="store_true", help="--before: leave the reference out")
    args = ap.parse_args(argv)
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    logging.disable(logging.CRITICAL)
    if args.batch:
        batches(args.batch, args.ref_records, args.rounds)
        return 0
    names = args.templates or inputs.catalogue()
    sizes = args.sizes
    if args.before:
        before_after(names, sizes, args.before, args.errors, args.rounds, not args.no_ref)
        return 0
    texts(names, sizes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
