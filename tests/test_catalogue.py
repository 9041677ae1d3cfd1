"""The catalogue: every family's own cases and its real corpus outputs (issue: catalogue coverage).

Data lives in ``tests/cases/families/<family>.json``: ``cases`` (outputs written from the format,
with literal expected messages; they need nothing from ../shared) and ``corpus_xfail`` (corpus
vectors the template language cannot express, each with its reason; strict xfail so a fix shows).
Every case and vector is fed whole, one character at a time and in random pieces, through the
parser checked in under ``generated/`` (imported as ``respc.generated.<family>``).
"""

from __future__ import annotations

import pytest

from support import CORPUS, FAMILIES, REPO, chunkings, generated, load_jsonl, missing, params, run_stream

TEMPLATES = sorted(p.stem for p in (REPO / "templates").glob("*.json"))
CORPUS_VECTORS = load_jsonl(CORPUS)
HOWS = ("whole", "chars", "random")

# The families named in ../shared/corpus/README.md (27 with outputs, 11 with chat templates only).
EXPECTED_FAMILIES = sorted("""
hermes2pro qwen2_5 qwen3 qwen3_coder qwen3_5 smollm3 gpt_oss llama3_json llama4_pythonic mistral_nemo
mistral_small_3_2 magistral deepseek_r1 deepseek_v3 deepseek_v3_2 kimi_k2 minimax_m2 xlam ernie4_5
granite3 command_r7b gemma4 apriel_1_6_thinker nemotron_nano_v2 lfm2 firefunction_v2 apertus
deepseek_v3_1 glm4_5 seed_oss hunyuan_a13b internlm2 granite4 phi4_mini apriel_1_5 nemotron3_nano
functionary_v3_1 kimi_k2_thinking
""".split())


def test_every_family_has_a_template_and_cases():
    assert sorted(set(EXPECTED_FAMILIES) - set(TEMPLATES)) == []
    assert sorted(set(TEMPLATES) - set(FAMILIES)) == []
    for name, data in FAMILIES.items():
        assert data["family"] == name
        assert len(data["cases"]) >= 5, f"{name}: too few own cases"
        for key in ("models", "thinking_switch", "not_expressible", "corpus_xfail"):
            assert key in data, f"{name}: missing {key}"


OWN_CASES = [(family, case) for family, data in FAMILIES.items() for case in data["cases"]]


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("family,case", OWN_CASES, ids=[f"{f}/{c['name']}" for f, c in OWN_CASES])
def test_own_case(family, case, how):
    """A case is parsed in ``case["errors"]`` mode ("strict" unless told); ``diagnostics``, when
    the case has it, lists the parser's diagnostics as ``[kind, start, end]``."""
    chunks = chunkings(case["text"], f"{family}/{case['name']}")[how]
    parser = generated(family).ResponseParser(case["prefix"], case.get("tools"), errors=case.get("errors", "strict"))
    for chunk in chunks:
        parser.feed(chunk)
    message, _ = parser.finalize()
    assert message == case["message"]
    if "diagnostics" in case:
        assert [[d["kind"], d["start"], d["end"]] for d in parser.diagnostics] == case["diagnostics"]


def _corpus_params():
    found = []
    for vector in CORPUS_VECTORS:
        family = vector["family"]
        reason = FAMILIES.get(family, {}).get("corpus_xfail", {}).get(vector["id"])
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        found.append(pytest.param(vector, marks=marks, id=vector["id"]))
    return params(found, CORPUS)


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("vector", _corpus_params())
def test_corpus_vector(vector, how):
    family = vector["family"]
    assert family in TEMPLATES, f"no catalogue template for {family}"
    chunks = chunkings(vector["text"], vector["id"])[how]
    message, _ = run_stream(generated(family), vector["prefix"], chunks, vector.get("tools"))
    assert message == vector["expect"]["message"]


def test_corpus_xfail_names_real_vectors():
    if not CORPUS_VECTORS:
        pytest.skip(missing(CORPUS))
    ids = {v["id"] for v in CORPUS_VECTORS}
    listed = {vid for data in FAMILIES.values() for vid in data["corpus_xfail"]}
    assert sorted(listed - ids) == []


def test_readme_table_lists_every_family():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    table = readme[readme.index("| family | models | thinking switch | not expressible |"):]
    for name, data in FAMILIES.items():
        switch = f"`{data['thinking_switch']}`" if data["thinking_switch"] else "—"
        assert f"| `{name}` | " in table, f"README table has no row for {name}"
        row = next(line for line in table.splitlines() if line.startswith(f"| `{name}` | "))
        assert f" | {switch} | " in row
        limits = (data["not_expressible"] or "—").replace("|", "\\|")
        assert row.endswith(f" | {limits} |"), f"README row of {name} does not say its limits as its family file does"
