"""``respc.spark.lines_udf`` on a Spark ``local-cluster`` (issue 29): two worker JVMs, each with its own
executor and Python workers, on this machine (needs pyspark and Java 17+; run with
``python -m pytest -q -m spark tests/test_spark_cluster.py -s``).

The input is split into several partitions; the rows come back from both executors (each row also
carries ``<host>:<pid of its executor's Python daemon>``, printed with ``-s``), and the records are
byte for byte the lines ``respc parse --jsonl`` writes for the same input, in input order.
"""

from __future__ import annotations

import json
import os
import shutil
import sys

import pytest

from respc.compiler.cli import main
from support_batch import batch_records

pytestmark = pytest.mark.spark
pytest.importorskip("pyspark")
pytest.importorskip("pandas")
pytest.importorskip("pyarrow")
if shutil.which("java") is None:
    pytest.skip("Spark needs Java (apt-get install default-jre-headless)", allow_module_level=True)


def test_local_cluster_two_executors_give_the_cli_bytes(tmp_path, monkeypatch):
    import pyspark
    from pyspark.sql import SparkSession
    from pyspark.sql.functions import udf

    import respc.spark

    # the executors are started from SPARK_HOME's scripts: pip's pyspark carries them
    monkeypatch.setenv("SPARK_HOME", os.environ.get("SPARK_HOME") or os.path.dirname(pyspark.__file__))
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    records = batch_records(400)
    lines = [json.dumps(r) for r in records] + ["not json"]
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["parse", "qwen3", "--jsonl", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "cli.jsonl"),
                 "--workers", "1"]) == 0
    spark = (SparkSession.builder.master("local-cluster[2,1,512]").appName("respc-cluster-test")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.pyspark.python", sys.executable)
             .config("spark.executor.memory", "512m").config("spark.sql.files.maxPartitionBytes", "8192")
             .config("spark.sql.files.openCostInBytes", "0").getOrCreate())
    try:
        parse = respc.spark.lines_udf("qwen3")
        where = udf(lambda: f"{os.uname().nodename}:{os.getppid()}", "string")
        df = spark.read.text(str(tmp_path / "in.jsonl"))
        assert df.rdd.getNumPartitions() > 4
        rows = df.select(parse("value").alias("record"), where().alias("executor")).collect()
        executors = {row["executor"] for row in rows}
        print("rows per executor:", {e: sum(row["executor"] == e for row in rows) for e in sorted(executors)})
        infos = spark.sparkContext._jsc.sc().statusTracker().getExecutorInfos()
        assert len(infos) == 3  # the driver and two executors
    finally:
        spark.stop()
    assert [row["record"] for row in rows] == (tmp_path / "cli.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(executors) == 2, executors
