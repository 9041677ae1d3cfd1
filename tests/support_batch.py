"""The qwen3 batch records the batch tests share (``tests/test_batch.py``, ``tests/test_ray.py``,
``tests/test_ray_nodes.py``, ``tests/test_spark.py``, ``tests/test_spark_cluster.py``) and the output
record each should give with ``errors="recover"`` (docs/security.md, "Files": a bad record is reported
on its own line, every other record is written).
"""

from __future__ import annotations


CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
GOOD = {"role": "assistant", "reasoning_content": "hmm", "content": "Sunny.",
        "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]}
BAD_ERROR = ("ContentParseError: Field 'tool_calls': json parser could not parse region as JSON. | "
             "Content: '{\"name\": oops' | Error: Expecting value: line 1 column 10 (char 9)")


def batch_records(n: int = 5) -> list[dict]:
    """``n`` qwen3 records; every third one (ids 2, 5, ...) has a broken tool-call body."""
    out = []
    for i in range(n):
        text = '<tool_call>{"name": oops</tool_call>' if i % 3 == 2 else f"<think>hmm</think>Sunny.{CALL}"
        out.append({"id": i, "prefix": "", "output": text})
    return out


BAD_RAW = '<tool_call>{"name": oops</tool_call>'


def expected_record(record: dict) -> dict:
    """errors="recover": the broken call's raw text goes to content, with a 'malformed' diagnostic."""
    if record["id"] % 3 == 2:
        return {"id": record["id"], "message": {"role": "assistant", "content": BAD_RAW}, "diagnostics": [
            {"kind": "malformed", "field": "tool_calls", "start": 0, "end": len(BAD_RAW),
             "message": BAD_ERROR.replace(" | ", "\n"), "text": BAD_RAW}]}
    return {"id": record["id"], "message": GOOD, "diagnostics": []}
