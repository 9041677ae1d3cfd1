"""Helpers shared by the test modules: where ../shared is, vector loading, chunkings."""

from __future__ import annotations

import json
import random
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
CONFORMANCE = SHARED / "conformance" / "hf.jsonl"
CORPUS = SHARED / "corpus" / "vectors.jsonl"


def load_jsonl(path: Path) -> list[dict]:
    """Read one JSON object per non-empty line; [] when the file is absent."""
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def chunkings(text: str, seed: str) -> dict[str, list[str]]:
    """The chunkings every vector is fed in: whole, one character at a time, random pieces."""
    rng = random.Random(seed)
    pieces, i = [], 0
    while i < len(text):
        step = rng.randint(1, 7)
        pieces.append(text[i:i + step])
        i += step
    return {"whole": [text], "chars": list(text), "random": pieces}


def run_stream(module, prefix, chunks, tools=None, errors="strict"):
    """Feed ``chunks`` to a fresh parser; return (message, all events incl. initial and final)."""
    parser = module.ResponseParser(prefix, tools, errors=errors)
    events = list(parser.initial_events)
    for chunk in chunks:
        events.extend(parser.feed(chunk))
    message, final = parser.finalize()
    return message, events + final


def merged_events(events: list[dict]) -> list[dict]:
    """Events with consecutive chunks of one region merged: the chunking-independent view (D2)."""
    out: list[dict] = []
    for event in events:
        if (event["type"] == "region_chunk" and out and out[-1]["type"] == "region_chunk"
                and out[-1]["field"] == event["field"]):
            out[-1] = {**out[-1], "text": out[-1]["text"] + event["text"]}
        else:
            out.append(dict(event))
    return out
