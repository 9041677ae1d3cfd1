"""Which delta-parity cases stream text the message later replaces, and why.

    python benchmarks/replaced_text.py

Runs the Python OpenAI adapter (``respc.openai.ChatCompletionStream``) over the case list of
``tests/test_js_target.py``'s delta parity (accepted catalogue templates with their vectors, random
outputs and written outputs; the synthetic templates; the conformance templates: whole, per
character and random chunkings; strict, and recover with ``"hold"`` and ``"stream"``), groups the
``"the message replaced text already sent"`` diagnostics by cause, and checks on every case that
the accumulated text less the reported ranges is the non-streamed message's text
(docs/openai.md "Text a later block replaces"). Needs ../shared for the conformance templates.
"""

from __future__ import annotations

import collections
import sys
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

import support_js as parity  # noqa: E402

from respc.compiler.api import compile_template  # noqa: E402
from respc.compiler.source import read_template  # noqa: E402
from respc.openai import ChatCompletionStream  # noqa: E402
from support import CONFORMANCE, chunkings  # noqa: E402

REPLACED = "the message replaced text already sent"


def cases() -> Iterator[tuple[str, object, list[dict]]]:
    """``(template key, template spec, vectors)`` as ``tests/test_js_target.py`` builds them for
    ``test_delta_parity`` and ``test_delta_parity_synthetic_and_conformance``."""
    for name in parity._accepted_catalogue():
        path = str(REPO / "templates" / f"{name}.json")
        vectors = parity._vectors_of(name) + parity._random_outputs(read_template(path).template, name, 30)
        if name in ("hermes2pro", "jamba"):
            vectors += [{"id": f"json/{k}", "prefix": "", "text": t} for k, t in enumerate(parity.JSON_REGIONS)]
        vectors += [{"id": f"adapter/{k}", "prefix": "", "text": t}
                    for k, t in enumerate(parity.DELTA_OUTPUTS.get(name, ()))]
        yield name, path, vectors
    for name, spec in parity.SYNTHETIC.items():
        yield name, spec, parity._random_outputs(read_template(spec).template, name, 30)
    if CONFORMANCE.is_file():
        for key, spec, vectors in parity._conformance_templates():
            yield key, spec, vectors + parity._random_outputs(read_template(spec).template, key, 5)


def without(text: str, ranges: list[tuple[int, int]]) -> str:
    """``text`` less the union of ``ranges`` (``(start, end)`` character offsets)."""
    keep = [True] * len(text)
    for start, end in ranges:
        for i in range(start, end):
            keep[i] = False
    return "".join(c for c, k in zip(text, keep) if k)


def cause(parser, diagnostic: dict) -> str:
    """Why the message no longer holds a reported range: the parser's ``overwritten`` diagnostic for
    the field (docs/events.md "Overwritten values"), or a block whose text as sent differs."""
    if any(d.get("kind") == "overwritten" for d in parser.diagnostics):
        return "a text field that neither joins nor repeats written again (overwritten)"
    return "a block's text as sent is not what the message stores"


def main() -> int:
    """Print the table of causes (cases and diagnostics per mode) and the cases that break the
    rule; returns 1 when any does."""
    table: collections.Counter = collections.Counter()
    templates: dict[str, set] = collections.defaultdict(set)
    broken = []
    total = 0
    for key, spec, vectors in cases():
        module = compile_template(spec)
        for vector in vectors:
            for how, chunks in chunkings(vector["text"], vector["id"]).items():
                for errors, recover in parity.DELTA_MODES:
                    total += 1
                    parser = module.ResponseParser(vector["prefix"], None, errors=errors)
                    stream = ChatCompletionStream(parser, ids=lambda n: f"call_{n}", completion_id="x", created=0,
                                                  recover_arguments=recover)
                    try:
                        feeds = [stream.feed(chunk) for chunk in chunks] + [stream.finalize()]
                    except Exception:  # noqa: BLE001 - strict raises on some outputs: not a stream
                        continue
                    replaced = [d for d in stream.diagnostics if d.get("problem") == REPLACED]
                    mode = f"{errors}/{recover}"
                    for d in replaced:
                        table[(cause(parser, d), mode, "diagnostics")] += 1
                        templates[cause(parser, d)].add(key)
                    if replaced:
                        table[(cause(parser, replaced[0]), mode, "cases")] += 1
                    if any(d.get("kind") == "streamed-call-malformed" for d in stream.diagnostics):
                        continue  # (a call kept as sent: docs/openai.md, recover_arguments="stream")
                    got = parity._accumulated(feeds)
                    want = parity.parser_message(module, vector["prefix"], chunks, errors)
                    for field in ("content", "reasoning_content"):
                        ranges = [(d["start"], d["end"]) for d in replaced if d["field"] == field]
                        if without(got.get(field) or "", ranges) != (want.get(field) or ""):
                            broken.append(f"{key} {vector['id']} [{how}, {mode}] {field}")
    print(f"{total} cases")
    for (why, mode, what), count in sorted(table.items()):
        print(f"{count:6d} {what:11s} {mode:15s} {why}")
    for why, keys in templates.items():
        print(f"{why}: {len(keys)} templates")
    print(f"{len(broken)} cases where the accumulated text less the reported ranges is not the message")
    for line in broken[:20]:
        print("  " + line)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
