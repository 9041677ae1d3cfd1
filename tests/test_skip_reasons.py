"""Without ../shared the suite skips and says which file is missing (issue 13.6).

A parametrized test over an empty vector list would show pytest's "got empty parameter set";
``support.params`` turns that into a skip naming the file. Checked by running a few test modules
in a subprocess with ``RESPC_SHARED`` pointing at a folder that does not exist.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import support
from support import CONFORMANCE, REPO, missing

SELECTION = ["tests/test_conformance.py", "tests/test_grammar.py", "tests/test_cli.py", "tests/test_catalogue.py",
             "tests/test_roundtrip.py", "-k", "vector or conformance or corpus or output_parses or roundtrip"]


def test_missing_shared_folder_skips_naming_the_file(tmp_path):
    absent = tmp_path / "no-shared"
    env = {**os.environ, "RESPC_SHARED": str(absent)}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", *SELECTION],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:]
    assert "empty parameter set" not in out
    skips = [line for line in out.splitlines() if line.startswith("SKIPPED")]
    # (pytest may print the folder relative to the checkout: only its last part is compared)
    conformance = (f"{absent.name}/conformance/hf.jsonl not found: the shared conformance vectors are not in the "
                   "folder RESPC_SHARED names")
    corpus = (f"{absent.name}/corpus/vectors.jsonl not found: the shared corpus vectors are not in the folder "
              "RESPC_SHARED names")
    # the round trip runs this repository's own chat templates (tests/cases/chat_templates) without
    # ../shared; its other skips are the per-family ones its configs declare (tests/cases/roundtrip)
    declared = tuple(reason for path in (REPO / "tests" / "cases" / "roundtrip").glob("*.json")
                     for reason in json.loads(path.read_text(encoding="utf-8")).get("skip", {}).values())
    assert skips and all(line.endswith((conformance, corpus) + declared) for line in skips), skips
    for reason in (conformance, corpus):
        assert any(line.endswith(reason) for line in skips), reason
    assert "chat_templates not found" not in out
    assert re.search(r"\b[1-9]\d* passed", out), out[-2000:]


def test_default_reason_names_the_path_beside_the_checkout(monkeypatch):
    monkeypatch.delenv("RESPC_SHARED", raising=False)
    beside = REPO.parent / "shared" / "other" / "data.jsonl"
    assert missing(beside) == ("../shared/other/data.jsonl not found: shared test data are not beside this "
                               "checkout (or set RESPC_SHARED to their folder)")
    if "RESPC_SHARED" not in os.environ and support.SHARED == REPO.parent / "shared":
        assert missing(CONFORMANCE) == ("../shared/conformance/hf.jsonl not found: the shared conformance vectors "
                                        "are not beside this checkout (or set RESPC_SHARED to their folder)")


def test_params_keeps_values_and_ids():
    values = support.params([{"id": "a"}, {"id": "b"}], CONFORMANCE, lambda v: v["id"])
    assert [(p.values, p.id) for p in values] == [(({"id": "a"},), "a"), (({"id": "b"},), "b")]
    assert support.params(["x"], CONFORMANCE) == ["x"]
    (empty,) = support.params([], Path("/nowhere/file.jsonl"))
    assert empty.id == "missing" and empty.marks[0].kwargs["reason"].startswith("/nowhere/file.jsonl not found: ")
