"""Peer vectors: the serving engines' own tool-parser test outputs, through the catalogue parsers.

Data: ``../shared/corpus/peer_vectors.jsonl`` (raw outputs and expected messages taken from the
tool-call and reasoning parser tests of SGLang, Ollama and vLLM; keys and conventions in
``../shared/corpus/README.md``). Every vector whose family has a catalogue template is fed whole, one
character at a time, in random pieces, and in the vector's own ``chunks`` (the engine test's delta
sequence) when it has them, through the parser checked in under ``generated/`` (imported as
``respc.generated.<family>``); the final message must equal ``expect.message`` exactly.

Known failures live in one table, ``tests/cases/peer_xfail.json``: vector id -> ``{"issue": N,
"reason": str}``, applied as strict xfail (so a fix shows as XPASS and the entry must go). ``issue`` is
the issue that will make the vector pass:

- 8 (malformed-output recovery) exactly when the vector's ``note`` starts with "malformed output";
  these vectors are parsed with ``errors="recover"`` (every other vector with ``"strict"``), and an
  entry stays only for one that recovery does not repair yet;
- 7 (template language v2) when the format needs a v2 feature (self-delimiting JSON, pythonic calls,
  key alternatives, nested regions, several regions into one slot, value parser chosen by a capture);
  the reason names the feature;
- 11 (catalogue growth) for a gap in a catalogue family itself.

A vector whose ``prefix`` is ``""`` (its family has no chat template in the corpus) may get the prompt
tail its engine test stands for from the family file's ``peer_prefix`` (vector id -> prefix): the engine
tests start their parsers in a state (thinking on: inside the reasoning block) that a real prompt puts
them in by ending with the pre-opened tag, e.g. Cohere's ``<|START_THINKING|>``; the family file names
the chat template that renders it.

The module skips when ``../shared`` is absent (a user's checkout has no corpus).
"""

from __future__ import annotations


import pytest

from support import CATALOGUE_TEMPLATES, PEER_PREFIX, PEER_XFAIL, SHARED, load_jsonl, peer_message, peer_params

PEER = SHARED / "corpus" / "peer_vectors.jsonl"
XFAIL = PEER_XFAIL
TEMPLATES = CATALOGUE_TEMPLATES
ISSUES = (7, 8, 11)

if not PEER.is_file():
    pytest.skip(f"{PEER} is absent (../shared is not checked out)", allow_module_level=True)

VECTORS = load_jsonl(PEER)


def _is_malformed(vector: dict) -> bool:
    return (vector.get("note") or "").startswith("malformed output")


@pytest.mark.parametrize("vector,how", peer_params([v for v in VECTORS if v["family"] in TEMPLATES], XFAIL,
                                                  lambda entry: f"issue {entry['issue']}: {entry['reason']}"))
def test_peer_vector(vector, how):
    errors = "recover" if _is_malformed(vector) else "strict"
    assert peer_message(vector, how, errors) == vector["expect"]["message"]


def test_every_peer_family_is_in_the_catalogue():
    assert sorted({v["family"] for v in VECTORS} - TEMPLATES) == []


def test_xfail_table_is_well_formed():
    """Each entry names a real vector of a catalogue family, a known issue and a reason; issue 8
    only for vectors whose note says the output is malformed."""
    by_id = {v["id"]: v for v in VECTORS}
    assert sorted(set(XFAIL) - set(by_id)) == []
    for vid, entry in XFAIL.items():
        assert sorted(entry) == ["issue", "reason"], vid
        assert entry["issue"] in ISSUES, vid
        assert entry["reason"].strip(), vid
        assert by_id[vid]["family"] in TEMPLATES, vid
        if _is_malformed(by_id[vid]):
            assert entry["issue"] == 8, f"{vid}: a malformed output waits for recovery (issue 8)"
        else:
            assert entry["issue"] != 8, f"{vid}: issue 8 is for vectors whose note starts with 'malformed output'"


def test_peer_prefix_only_replaces_empty_prefixes():
    by_id = {v["id"]: v for v in VECTORS}
    for vid in PEER_PREFIX:
        assert vid in by_id, f"peer_prefix names no vector: {vid}"
        assert by_id[vid]["prefix"] == "", f"{vid}: peer_prefix may only stand in for an empty prefix"
