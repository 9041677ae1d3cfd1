"""Peer vectors, second harvest: more engine parser-test outputs through the catalogue parsers.

Data: ``../shared/corpus/peer_vectors2.jsonl`` (196 outputs with expected messages from llama.cpp's
``tests/test-chat.cpp``, vLLM 0.34's tool- and reasoning-parser tests, Ollama's Laguna parser tests and
LMDeploy's Qwen3 parser tests; keys and conventions in ``../shared/corpus/README.md``, the same as
``peer_vectors.jsonl``). Used exactly as ``test_peer_vectors.py`` uses the first file: every vector is
fed whole, one character at a time, in random pieces and in its own ``chunks`` when it has them,
through the parser under ``generated/``; the final message must equal ``expect.message``. A vector
whose ``note`` says "malformed output" (in this file the phrase may follow the note's prefix
sentence) is parsed with ``errors="recover"``, every other one with ``"strict"``.

Known failures are listed per vector id in ``tests/cases/peer2_xfail.json`` as
``{"class": ..., "reason": ...}`` and run as strict xfail, so a fix shows as XPASS and its entry
must go. The classes:

- ``missing-family``: the family has no catalogue template yet (issue 11);
- ``recovery``: damaged output ("malformed output" note) that ``errors="recover"`` does not repair
  the way the engine does (issue 8);
- ``catalogue-gap``: a form of a catalogue family its template does not read (issue 11);
- ``empty-pieces``: empty reasoning pieces are joined (issue 24 item 5).

``test_counts_by_class`` prints the figures. The module skips when ``../shared`` is absent.
"""

from __future__ import annotations

from collections import Counter

import pytest

from support import CATALOGUE_TEMPLATES, PEER2_XFAIL, SHARED, load_jsonl, peer_message, peer_params

PEER2 = SHARED / "corpus" / "peer_vectors2.jsonl"
XFAIL = PEER2_XFAIL
CLASSES = ("missing-family", "recovery", "catalogue-gap", "empty-pieces")

if not PEER2.is_file():
    pytest.skip(f"{PEER2} is absent (../shared is not checked out)", allow_module_level=True)

VECTORS = load_jsonl(PEER2)


def _is_malformed(vector: dict) -> bool:
    return "malformed output" in (vector.get("note") or "")


@pytest.mark.parametrize("vector,how", peer_params(VECTORS, XFAIL, lambda entry: f"{entry['class']}: {entry['reason']}"))
def test_peer_vector2(vector, how):
    assert vector["family"] in CATALOGUE_TEMPLATES, f"no catalogue template for {vector['family']}"
    errors = "recover" if _is_malformed(vector) else "strict"
    assert peer_message(vector, how, errors) == vector["expect"]["message"]


def test_xfail_table_is_well_formed():
    """Each entry names a real vector, a known class and a reason; ``missing-family`` exactly for
    families without a template, ``recovery`` only for damaged outputs."""
    by_id = {v["id"]: v for v in VECTORS}
    assert sorted(set(XFAIL) - set(by_id)) == []
    for vid, entry in XFAIL.items():
        assert sorted(entry) == ["class", "reason"], vid
        assert entry["class"] in CLASSES, vid
        assert entry["reason"].strip(), vid
        missing = by_id[vid]["family"] not in CATALOGUE_TEMPLATES
        assert (entry["class"] == "missing-family") == missing, vid
        if entry["class"] == "recovery":
            assert _is_malformed(by_id[vid]), f"{vid}: 'recovery' is for vectors whose note says malformed output"
    for vid, vector in by_id.items():
        if vector["family"] not in CATALOGUE_TEMPLATES:
            assert vid in XFAIL, f"{vid}: family {vector['family']!r} is missing but not listed"


def test_counts_by_class(capsys):
    """The figures: vectors expected to pass, and expected failures per class."""
    counts = Counter(XFAIL[v["id"]]["class"] if v["id"] in XFAIL else "pass" for v in VECTORS)
    with capsys.disabled():
        print(f"\npeer_vectors2: {len(VECTORS)} vectors: {dict(sorted(counts.items()))}")
    assert sum(counts.values()) == len(VECTORS)
