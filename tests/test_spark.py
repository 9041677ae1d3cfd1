"""``respc.spark.lines_udf`` on a local Spark session (``local[2]``; needs pyspark and Java 17+).

Run with ``python -m pytest -q -m spark``; the default run skips it. The records equal, byte for
byte, the lines ``respc parse --jsonl`` writes for the same input, in input order.
"""

from __future__ import annotations

import json
import shutil
import sys

import pytest

from respc.compiler.cli import main
from support_batch import batch_records, expected_record

pytestmark = pytest.mark.spark
pytest.importorskip("pyspark")
pytest.importorskip("pandas")
pytest.importorskip("pyarrow")
if shutil.which("java") is None:
    pytest.skip("Spark needs Java (apt-get install default-jre-headless)", allow_module_level=True)


def test_lines_udf_gives_the_cli_bytes(tmp_path, monkeypatch):
    from pyspark.sql import SparkSession

    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)  # Spark's Python workers: this interpreter

    import respc.spark

    records = batch_records(30)
    lines = [json.dumps(r) for r in records] + ["not json"]
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["parse", "qwen3", "--jsonl", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "cli.jsonl"),
                 "--workers", "1"]) == 0
    spark = (SparkSession.builder.master("local[2]").appName("respc-test")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2").getOrCreate())
    try:
        parse = respc.spark.lines_udf("qwen3")
        df = spark.read.text(str(tmp_path / "in.jsonl"))
        rows = [row["record"] for row in df.select(parse("value").alias("record")).collect()]
    finally:
        spark.stop()
    assert rows == (tmp_path / "cli.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(r) for r in rows[:-1]] == [expected_record(r) for r in records]
