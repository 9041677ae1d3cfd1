"""``respc.ray.parse_dataset`` on a local Ray cluster (extra ``ray``; run with ``python -m pytest -q -m ray``).

The output records equal, byte for byte, the lines ``respc parse --jsonl`` writes for the same input
(failed records included), in input order; rows given as columns parse to the same messages.
"""

from __future__ import annotations

import json

import pytest

from respc.compiler.cli import main
from support_batch import batch_records, expected_record

pytestmark = pytest.mark.ray
ray = pytest.importorskip("ray")
pytest.importorskip("ray.data")


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True
    context.enable_progress_bars = False
    yield
    ray.shutdown()


def test_lines_give_the_cli_bytes(cluster, tmp_path):
    import respc.ray

    records = batch_records(40)
    lines = [json.dumps(r) for r in records] + ["not json"]
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["parse", "qwen3", "--jsonl", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "cli.jsonl"),
                 "--workers", "1"]) == 0
    ds = ray.data.read_text(str(tmp_path / "in.jsonl"))
    out = respc.ray.parse_dataset(ds, "qwen3", lines_column="text", batch_size=7)
    rows = [row["record"] for row in out.take_all()]
    assert rows == (tmp_path / "cli.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(r) for r in rows[:-1]] == [expected_record(r) for r in records]


def test_rows_as_columns(cluster):
    import respc.ray

    records = batch_records(9)
    ds = ray.data.from_items(records)
    out = respc.ray.parse_dataset(ds, "qwen3", batch_size=4)
    assert [json.loads(row["record"]) for row in out.take_all()] == [expected_record(r) for r in records]
