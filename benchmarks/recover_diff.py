"""Differential harness for errors="recover": record what every catalogue template makes of a set of
texts (message, events, diagnostics; whole and in random chunks), and compare two recordings.

    python benchmarks/recover_diff.py record OUT.json [--mutations N] [--strict] [TEMPLATE ...]
    python benchmarks/recover_diff.py compare OLD.json NEW.json

The texts: the family cases (tests/cases/families), the shared corpus vectors (../shared/corpus:
vectors.jsonl, peer_vectors*.jsonl; skipped when absent), and seeded random mutations of the family
cases that insert the template's delimiters (closers, openers, their recover-only forms, string
delimiters) inside values. Used to show which outputs a change of the recover rules alters.
``--strict`` records errors="strict" instead (an error is recorded as what was raised)."""

from __future__ import annotations

import importlib
import json
import random
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
SHARED = REPO.parent / "shared" / "corpus"

from support import delimiter_pieces, family_cases  # noqa: E402

#: text that opens or closes a value inside bodies: strings and xml parameters
VALUE_MARKS = ['"', '<|"|>', "'", "<parameter=", "</parameter>", "<arg_value>", "</arg_value>", "=", ":"]


def cases(name: str, mutations: int) -> list[tuple[str, str, str, object]]:
    """(id, prefix, text, tools) for template ``name``."""
    out = []
    base = family_cases(name)
    for case in base:
        out.append((f"case/{case['name']}", case.get("prefix", ""), case["text"], case.get("tools")))
    for fname in ("vectors.jsonl", "peer_vectors.jsonl", "peer_vectors2.jsonl"):
        path = SHARED / fname
        if not path.is_file():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            v = json.loads(line)
            if v.get("family") == name and isinstance(v.get("text"), str):
                out.append((f"{fname}/{v.get('id')}", v.get("prefix", ""), v["text"], v.get("tools")))
    if not base or not mutations:
        return out
    rng = random.Random(f"recover-diff/{name}")
    pieces = [p for p in delimiter_pieces(name) if 0 < len(p) <= 40]
    doc = json.loads((REPO / "templates" / f"{name}.json").read_text(encoding="utf-8"))
    lits = []
    for spec in doc["fields"].values():
        for key in ("open", "close", "recover_open", "recover_close"):
            value = spec.get(key)
            for literal in ([value] if isinstance(value, str) else value or []):
                if isinstance(literal, str) and literal:
                    lits.append(literal)
    lits = lits or pieces
    for k in range(mutations):
        case = base[rng.randrange(len(base))]
        text = case["text"]
        # positions just after a value mark (inside a string or parameter), or anywhere
        marks = [m.end() for mark in VALUE_MARKS for m in re.finditer(re.escape(mark), text)]
        for _ in range(rng.randint(1, 3)):
            at = rng.choice(marks) if marks and rng.random() < 0.7 else rng.randint(0, len(text))
            at = min(at + rng.randint(0, 3), len(text))
            what = rng.choice(lits) if rng.random() < 0.7 else rng.choice(pieces)
            text = text[:at] + what + text[at:]
        if rng.random() < 0.2:
            text = text[:rng.randint(len(text) // 2, len(text))]  # cut
        out.append((f"mut/{k}/{case['name']}", case.get("prefix", ""), text, case.get("tools")))
    return out


ERRORS = "recover"


def run(module, prefix, text, tools, chunks):
    try:
        parser = module.ResponseParser(prefix, tools, errors=ERRORS)
        events = list(parser.initial_events)
        for chunk in chunks:
            events.extend(parser.feed(chunk))
        message, final = parser.finalize()
        return {"message": message, "events": events + final, "diagnostics": parser.diagnostics}
    except Exception as exc:  # recover must never raise: recorded as a finding (strict: its error)
        return {"raised": f"{type(exc).__name__}: {exc}"}


def pieces_of(text: str, seed: str) -> list[str]:
    rng = random.Random(seed)
    out, i = [], 0
    while i < len(text):
        step = rng.randint(1, 7)
        out.append(text[i:i + step])
        i += step
    return out


def record(path: str, mutations: int, only: list[str]) -> None:
    names = sorted(p.stem for p in (REPO / "templates").glob("*.json"))
    result = {}
    for name in names:
        if only and name not in only:
            continue
        module = importlib.import_module(f"respc.generated.{name}")
        for cid, prefix, text, tools in cases(name, mutations):
            key = f"{name}::{cid}"
            whole = run(module, prefix, text, tools, [text])
            chunked = run(module, prefix, text, tools, pieces_of(text, key))
            result[key] = {"text": text, "whole": whole, "chunked": chunked}
        print(name, file=sys.stderr)
    Path(path).write_text(json.dumps(result, default=repr, sort_keys=True), encoding="utf-8")


def compare(old_path: str, new_path: str) -> int:
    old = json.loads(Path(old_path).read_text(encoding="utf-8"))
    new = json.loads(Path(new_path).read_text(encoding="utf-8"))
    diffs = 0
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if a == b:
            continue
        diffs += 1
        print(f"=== {key}")
        if a is None or b is None:
            print("  only in", "new" if a is None else "old")
            continue
        print("  text:", repr(a["text"]))
        for how in ("whole", "chunked"):
            if a[how] != b[how]:
                for part in ("message", "diagnostics", "raised"):
                    if a[how].get(part) != b[how].get(part):
                        print(f"  {how} {part}:\n    old {a[how].get(part)!r}\n    new {b[how].get(part)!r}")
                if a[how].get("events") != b[how].get("events"):
                    print(f"  {how} events differ")
    raised = sum(1 for k, v in new.items() for h in ("whole", "chunked") if "raised" in v[h])
    print(f"{diffs} of {len(set(old) | set(new))} differ; {raised} runs raised in the new recording")
    return diffs


if __name__ == "__main__":
    if sys.argv[1] == "record":
        n = 300
        args = sys.argv[3:]
        if args[:1] == ["--mutations"]:
            n, args = int(args[1]), args[2:]
        if args[:1] == ["--strict"]:
            ERRORS, args = "strict", args[1:]
        record(sys.argv[2], n, args)
    else:
        compare(sys.argv[2], sys.argv[3])
