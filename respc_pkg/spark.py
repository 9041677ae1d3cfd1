"""Batch parsing on Spark: ``respc.spark.lines_udf``
(README.md "Batch: millions of outputs"; needs ``pyspark`` and Java 17+).

A PySpark ``pandas_udf`` over a column of raw JSONL lines (``spark.read.text``, column ``value``)
that gives each line's output record as JSON text, byte for byte the line ``respc parse --jsonl``
writes. The template is compiled once, by the caller; the parser (a picklable
:class:`respc.compiler.batch.RecordParser`) is rebuilt once per Python worker process.

Example::

    import respc.spark
    parse = respc.spark.lines_udf("qwen3", prefix="")
    df = spark.read.text("outputs.jsonl")
    df.select(parse("value").alias("record")).write.text("parsed/")

Blank lines give ``null`` (a Spark column keeps one value per row; the CLI skips them). Spark's
Python workers must import respc, pandas and pyarrow: point ``PYSPARK_PYTHON`` at the interpreter
that has them. Tested on ``local[2]`` (``tests/test_spark.py``) and on ``local-cluster[2,1,512]``, two
executors (``tests/test_spark_cluster.py``); ``python -m pytest -q -m spark``.
"""

from __future__ import annotations

from typing import Any

from respc.compiler import batch as _batch

__all__ = ["lines_udf"]


def lines_udf(template: Any, **options: Any) -> Any:
    """A ``pandas_udf`` ``string -> string``: raw JSONL line in, output record JSON out.

    Args:
        template: anything :func:`respc.compile_template` accepts (compiled once, here).
        **options: ``keys``, ``preset``, ``prefix``, ``tools``, ``errors`` as for :func:`respc.parse_batch`.

    Raises:
        ImportError: pyspark (with pandas and pyarrow) is not installed; TemplateError: bad template.
    """
    try:
        import pandas as pd
        from pyspark.sql.functions import pandas_udf
    except ImportError:
        raise ImportError("respc.spark needs pyspark, pandas and pyarrow: pip install pyspark pandas pyarrow") from None
    parser = _batch.make_parser(template, **options)

    def parse(lines):
        return pd.Series([None if line is None or not line.strip() else
                          _batch.dump_record(parser.parse_line(line)[0]) for line in lines], dtype=object)

    # real classes, not the strings `from __future__ import annotations` would leave: Spark reads them
    parse.__annotations__ = {"lines": pd.Series, "return": pd.Series}
    return pandas_udf(parse, "string")
