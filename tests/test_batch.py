"""Batch parsing (compiler/batch.py, issue 12;
docs/security.md "Files"): ``respc parse --jsonl``, ``respc.parse_batch``,
``respc.columns_mapper``.

* the CLI: output records in input order, failed records (``message: null`` + an ``error``
  diagnostic), ``--errors strict`` (line numbers on stderr, exit 1), the summary line, gzip and zstd,
  ``-`` for stdin/stdout, presets and key flags, several workers giving the same bytes as one;
* the Python API: records, a dict of columns, pandas and pyarrow (when installed), lazy iteration;
* memory: the run does not hold the input (tracemalloc peak flat in the number of records).
"""

from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
import tracemalloc

import pytest

import respc
from respc.compiler import batch
from respc.compiler.cli import main
from support_batch import BAD_ERROR, BAD_RAW, GOOD, batch_records, expected_record


def _write_jsonl(path, records, opener=open) -> None:
    with opener(path, "wt", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record) + "\n")


def _read_jsonl(path, opener=open) -> list[dict]:
    with opener(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


# --- CLI -----------------------------------------------------------------------------------------

def test_cli_records_in_order_with_failures(tmp_path, capsys):
    records = batch_records(7)
    _write_jsonl(tmp_path / "in.jsonl", records)
    assert main(["parse", "qwen3", "--jsonl", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "out.jsonl"),
                 "--workers", "1"]) == 0
    assert _read_jsonl(tmp_path / "out.jsonl") == [expected_record(r) for r in records]
    err = capsys.readouterr().err
    assert err.startswith("respc: 7 records, 5 messages with tool calls, 0 repairs, 2 failures, ")
    assert err.count("\n") == 1


def test_cli_strict_reports_line_numbers_and_exits_1(tmp_path, capsys):
    lines = [json.dumps(r) for r in batch_records(3)] + ["", "not json", json.dumps([1])]
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["parse", "qwen3", "--jsonl", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "out.jsonl"),
                 "--errors", "strict", "--workers", "1"]) == 1
    out = _read_jsonl(tmp_path / "out.jsonl")
    assert len(out) == 5  # the blank line 4 gives no record; every other line does, in order
    assert out[3] == {"id": None, "message": None, "diagnostics": [
        {"kind": "error", "message": "line is not JSON: JSONDecodeError: Expecting value: line 1 column 1 (char 0)"}]}
    assert out[4]["diagnostics"] == [{"kind": "error", "message": "ValueError: a record must be a JSON object, not list"}]
    err = capsys.readouterr().err.splitlines()
    assert err[:3] == [
        f"respc: {tmp_path / 'in.jsonl'}: line 3: {BAD_ERROR}",
        f"respc: {tmp_path / 'in.jsonl'}: line 5: line is not JSON: JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
        f"respc: {tmp_path / 'in.jsonl'}: line 6: ValueError: a record must be a JSON object, not list",
    ]
    assert err[3].startswith("respc: 5 records, 2 messages with tool calls, 0 repairs, 3 failures, ")


def test_cli_recover_exits_0_despite_failures(tmp_path):
    _write_jsonl(tmp_path / "in.jsonl", batch_records(3))
    assert main(["parse", "qwen3", "--jsonl", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "o.jsonl")]) == 0


def test_cli_workers_give_the_same_bytes_as_one(tmp_path):
    """A plain file goes by byte ranges (about 45 kB: three spans of at least 16 kB), gzip by line
    batches; 2 workers give the bytes of one worker, in order."""
    records = batch_records(300)
    _write_jsonl(tmp_path / "in.jsonl", records)
    _write_jsonl(tmp_path / "in.jsonl.gz", records, gzip.open)
    for workers, src, name in (("1", "in.jsonl", "one.jsonl"), ("2", "in.jsonl", "two.jsonl"),
                               ("2", "in.jsonl.gz", "gz.jsonl")):
        assert main(["parse", "qwen3", "--jsonl", str(tmp_path / src), "-o", str(tmp_path / name),
                     "--workers", workers, "--batch-size", "1"]) == 0
    one = (tmp_path / "one.jsonl").read_bytes()
    assert one == (tmp_path / "two.jsonl").read_bytes() == (tmp_path / "gz.jsonl").read_bytes()
    assert [json.loads(line) for line in one.splitlines()] == [expected_record(r) for r in records]
    source = (tmp_path / "in.jsonl").read_bytes()
    spans = list(batch._spans(str(tmp_path / "in.jsonl"), 16384, [0]))
    assert len(spans) == 3 and spans[0][0] == 0 and sum(length for _, length in spans) == len(source)
    for (offset, length), (following, _) in zip(spans, spans[1:] + [(len(source), 0)]):
        assert offset + length == following and source[offset + length - 1:offset + length] == b"\n"
        assert length >= 16384 or following == len(source)  # whole lines, at least the target


def test_strict_line_numbers_with_workers(tmp_path, capsys):
    lines = [json.dumps(r) for r in batch_records(200)]
    lines[150] = "not json"
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["parse", "qwen3", "--jsonl", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "o.jsonl"),
                 "--workers", "2", "--batch-size", "1", "--errors", "strict"]) == 1
    err = capsys.readouterr().err.splitlines()
    expected = sorted([i + 1 for i in range(200) if i % 3 == 2 and i != 150] + [151])
    assert [int(line.split(": line ")[1].split(":")[0]) for line in err[:-1]] == expected


def test_cli_gzip_in_and_out(tmp_path):
    records = batch_records(4)
    _write_jsonl(tmp_path / "in.jsonl.gz", records, gzip.open)
    assert main(["parse", "qwen3", "--jsonl", str(tmp_path / "in.jsonl.gz"), "-o", str(tmp_path / "out.jsonl.gz"),
                 "--workers", "1"]) == 0
    assert _read_jsonl(tmp_path / "out.jsonl.gz", gzip.open) == [expected_record(r) for r in records]


def test_cli_zstd_in_and_out(tmp_path):
    zstandard = pytest.importorskip("zstandard")
    records = batch_records(4)
    data = "".join(json.dumps(r) + "\n" for r in records).encode()
    (tmp_path / "in.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(data))
    assert main(["parse", "qwen3", "--jsonl", str(tmp_path / "in.jsonl.zst"), "-o", str(tmp_path / "out.jsonl.zst"),
                 "--workers", "1"]) == 0
    with zstandard.ZstdDecompressor().stream_reader(open(tmp_path / "out.jsonl.zst", "rb")) as reader:
        out = [json.loads(line) for line in io.TextIOWrapper(reader, encoding="utf-8")]
    assert out == [expected_record(r) for r in records]


def test_zstd_without_the_extra_names_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "zstandard", None)  # import fails as if not installed
    (tmp_path / "in.jsonl.zst").write_bytes(b"")
    assert main(["parse", "qwen3", "--jsonl", str(tmp_path / "in.jsonl.zst"), "-o", str(tmp_path / "o.jsonl")]) == 2
    assert capsys.readouterr().err == ('respc: reading or writing .zst files needs the zstandard package: '
                                       'pip install "respc[batch]"\n')


def test_cli_stdin_to_stdout_subprocess(tmp_path):
    records = batch_records(3)
    data = "".join(json.dumps(r) + "\n" for r in records)
    done = subprocess.run([sys.executable, "-m", "respc", "parse", "qwen3", "--jsonl", "-", "-o", "-",
                           "--workers", "2"], input=data, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert [json.loads(line) for line in done.stdout.splitlines()] == [expected_record(r) for r in records]
    assert done.stderr.startswith("respc: 3 records, 2 messages with tool calls, 0 repairs, 1 failure, ")


def test_cli_default_prefix_and_key_flags(tmp_path):
    (tmp_path / "in.jsonl").write_text(json.dumps({"meta": {"n": "x1"}, "gen": "<think>a</think>b"}) + "\n")
    assert main(["parse", "qwen3", "--jsonl", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "o.jsonl"),
                 "--output-key", "gen", "--id-key", "meta.n", "--prefix", ""]) == 0
    assert _read_jsonl(tmp_path / "o.jsonl") == [
        {"id": "x1", "message": {"role": "assistant", "reasoning_content": "a", "content": "b"}, "diagnostics": []}]


@pytest.mark.parametrize("preset, record", [
    ("vllm", {"request_id": "r7", "prompt": "<|im_start|>assistant\n<think>",
              "outputs": [{"index": 0, "text": "a</think>b"}]}),
    ("sglang", {"text": "a</think>b", "meta_info": {"id": "r7"}, "prompt": "<|im_start|>assistant\n<think>"}),
    ("datasets", {"id": "r7", "prompt": "<|im_start|>assistant\n<think>", "completion": "a</think>b"}),
    ("openai-batch", {"id": "batch_req_1", "custom_id": "r7", "prefix": "<|im_start|>assistant\n<think>",
                      "response": {"status_code": 200, "body": {"choices": [{"message": {"content": "a</think>b"}}]}}}),
])
def test_presets_read_their_record_shape(preset, record):
    (out,) = respc.parse_batch([record], "qwen3", preset=preset)
    assert out == {"id": "r7", "message": {"role": "assistant", "reasoning_content": "a", "content": "b"},
                   "diagnostics": []}


def test_jsonl_usage_errors(tmp_path, capsys):
    assert main(["parse", "qwen3", "x.txt", "--jsonl", "in.jsonl"]) == 2
    assert "takes no FILE" in capsys.readouterr().err
    assert main(["parse", "qwen3", "--jsonl", str(tmp_path / "missing.jsonl")]) == 2
    assert capsys.readouterr().err.startswith("respc: cannot read or write ")


# --- Python API ----------------------------------------------------------------------------------

def test_parse_batch_records_and_workers():
    records = batch_records(20)
    assert list(respc.parse_batch(records, "qwen3")) == [expected_record(r) for r in records]
    assert list(respc.parse_batch(iter(records), "qwen3", workers=2, batch_size=4)) == [expected_record(r) for r in records]


def test_parse_batch_is_lazy():
    seen = []

    def source():
        for record in batch_records(6):
            seen.append(record["id"])
            yield record

    it = respc.parse_batch(source(), "qwen3")
    assert seen == []
    assert next(it)["id"] == 0 and seen == [0]


def test_parse_batch_dict_of_columns_and_defaults():
    columns = {"output": ["<think>a</think>b", "c"], "id": [10, 11]}
    out = list(respc.parse_batch(columns, "qwen3", prefix=""))
    assert [o["id"] for o in out] == [10, 11]
    assert out[1]["message"] == {"role": "assistant", "content": "c"}


def test_a_dict_of_columns_without_the_output_column_gives_one_error_record_per_row():
    """A dict of columns none of whose columns the keys read (the output under another name) is
    still that many rows: each an error record, as a record list or a DataFrame gives, never an
    empty result (which a datasets ``map(batched=True)`` would refuse as a length mismatch)."""
    columns = {"text": ["<think>a</think>b", "c", "d"]}
    error = [{"kind": "error", "message": "ValueError: record has no model output at key 'output'"}]
    out = list(respc.parse_batch(columns, "qwen3", prefix=""))
    assert out == [{"id": None, "message": None, "diagnostics": error}] * 3
    assert respc.columns_mapper("qwen3", prefix="")(columns) == {"id": [None] * 3, "message": [None] * 3,
                                                                 "diagnostics": [error] * 3}
    with pytest.raises(ValueError, match="columns have different lengths"):
        list(respc.parse_batch({"text": ["a"], "other": ["b", "c"]}, "qwen3", prefix=""))


def test_bad_arguments_raise_at_once():
    with pytest.raises(ValueError, match="errors must be one of"):
        respc.parse_batch([], "qwen3", errors="ignore")
    with pytest.raises(ValueError, match="unknown preset 'nope'"):
        respc.parse_batch([], "qwen3", preset="nope")
    with pytest.raises(ValueError, match="unknown key name"):
        respc.parse_batch([], "qwen3", keys={"text": "x"})


def test_columns_mapper_for_datasets_map():
    fn = respc.columns_mapper("qwen3")
    columns = {"output": [r["output"] for r in batch_records(3)], "prefix": ["", "", ""], "id": [0, 1, 2]}
    out = fn(columns)
    expected = [expected_record(r) for r in batch_records(3)]
    assert out == {"id": [0, 1, 2], "message": [e["message"] for e in expected],
                   "diagnostics": [e["diagnostics"] for e in expected]}
    as_json = respc.columns_mapper("qwen3", as_json=True)(columns)
    assert json.loads(as_json["message"][0]) == GOOD
    assert json.loads(as_json["message"][2]) == {"role": "assistant", "content": BAD_RAW}
    strict = respc.columns_mapper("qwen3", errors="strict")(columns)
    assert strict["message"][2] is None
    assert strict["diagnostics"][2] == [{"kind": "error", "message": BAD_ERROR}]


def test_datasets_map_batched():
    datasets = pytest.importorskip("datasets")
    records = batch_records(6)
    ds = datasets.Dataset.from_list(records)
    mapped = ds.map(respc.columns_mapper("qwen3", as_json=True), batched=True, batch_size=4)
    assert [json.loads(m) for m in mapped["message"]] == [expected_record(r)["message"] for r in records]


def test_pandas_dataframe():
    pd = pytest.importorskip("pandas")
    records = batch_records(5)
    frame = pd.DataFrame(records)
    assert list(respc.parse_batch(frame, "qwen3")) == [expected_record(r) for r in records]


def test_pyarrow_table():
    pa = pytest.importorskip("pyarrow")
    records = batch_records(5)
    table = pa.Table.from_pylist(records)
    assert list(respc.parse_batch(table, "qwen3")) == [expected_record(r) for r in records]


def test_record_parser_pickles_without_its_module():
    import pickle

    parser = batch.make_parser("qwen3", prefix="")
    parser.parse_record({"output": "x"})
    clone = pickle.loads(pickle.dumps(parser))
    assert clone._module is None
    assert clone.parse_record({"output": "x"})[0]["message"] == {"role": "assistant", "content": "x"}


# --- memory --------------------------------------------------------------------------------------

def test_memory_is_flat_in_the_number_of_records(tmp_path):
    """The run streams: the traced peak for 4,000 records is within 1.5x of that for 500."""
    parser = batch.make_parser("qwen3")
    peaks = []
    for n in (500, 4000):
        path = tmp_path / f"in{n}.jsonl"
        _write_jsonl(path, (r | {"id": i} for i, r in enumerate(batch_records(3) * (n // 3 + 1)) if i < n))
        tracemalloc.start()
        stats, _ = batch.run_jsonl(parser, str(path), str(tmp_path / "out.jsonl"), workers=1, progress=False)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert stats.records == n
    assert peaks[1] < 1.5 * peaks[0], peaks


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_progress_shows_on_a_terminal_that_reports_no_size():
    """A pseudo-terminal of 0 rows and 0 columns (``script`` run without a terminal, some CI runners):
    the progress display still writes a bar (tqdm hid it below row 0 before the fix) and the rate."""
    import os
    import pty
    import subprocess

    driver = (
        "import time\n"
        "from respc.compiler.batch import _Progress\n"
        "p = _Progress(1000)\n"
        "for i in range(1, 4):\n"
        "    time.sleep(0.55)\n"
        "    p.update(i * 250, i * 10)\n"
        "p.close()\n"
    )
    master, slave = pty.openpty()  # a new pseudo-terminal reports 0 x 0
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.run([sys.executable, "-c", driver], stdin=slave, stdout=slave, stderr=slave, env=env,
                          timeout=60, check=False)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    shown = b"".join(chunks).decode("utf-8", "replace")
    assert proc.returncode == 0, shown
    assert "respc" in shown
    # tqdm (extra "batch"): a bar at 75 %; without it: the one-line display with the rate and percentage
    assert "75%" in shown, shown
    assert "records/s" in shown, shown
