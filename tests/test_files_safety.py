"""Input files are untrusted, output files are written whole (issue 23 items 7-10; docs/security.md
"Files"). Each test runs the attack as the issue writes it:

* item 7: a JSONL record whose output holds a lone surrogate (``"\\ud800"``, valid JSON) no longer
  stops ``respc parse --jsonl`` (1 or 2 workers, ``--errors recover`` too): it gets its own error line
  and every other record is written, in order; other per-record failures go the same way;
* item 8: ``respc parse qwen3 --jsonl io.jsonl -o io.jsonl`` (and the same file through a symlink or a
  hard link) is refused with exit 2 and the input is untouched;
* item 9: no predictable temporary name: a symlink planted at ``.out.py.respc-tmp`` or ``X.tmp`` is not
  followed, a user's own ``X.tmp`` is not clobbered, an interrupted ``--jsonl -o`` leaves no half file;
* item 10: ``--html`` and ``graph -o`` keep a 600 file's mode; ``NaN`` and ``1e999999`` in a JSON body
  are refused in strict, malformed (text kept) in recover, and never reach ``--jsonl`` output.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import respc
from respc.compiler import batch
from respc.compiler.cli import main

ROOT = Path(__file__).resolve().parent.parent
QWEN3 = ROOT / "templates" / "qwen3.json"
CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'


def _no_constants(name: str):
    raise AssertionError(f"{name} in output: not JSON")


def _read_lines(path: Path) -> list[dict]:
    """The output lines, read as strict JSON (NaN/Infinity refused, surrogates refused by UTF-8)."""
    text = path.read_bytes().decode("utf-8")
    return [json.loads(line, parse_constant=_no_constants) for line in text.splitlines()]


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A temp folder holding templates/qwen3.json, as the working directory."""
    (tmp_path / "templates").mkdir()
    shutil.copy(QWEN3, tmp_path / "templates" / "qwen3.json")
    monkeypatch.chdir(tmp_path)
    return tmp_path


# -- item 7: one bad record ------------------------------------------------------------------------

def _surrogate_input(path: Path) -> None:
    lines = [json.dumps({"id": 0, "prefix": "", "output": "Sunny." + CALL}),
             '{"id": 1, "prefix": "", "output": "\\ud800"}',  # a lone surrogate: valid JSON
             json.dumps({"id": 2, "prefix": "", "output": "Rainy."})]
    path.write_text("\n".join(lines) + "\n", encoding="ascii")


@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.parametrize("errors", [[], ["--errors", "recover"], ["--errors", "strict"]])
def test_lone_surrogate_record_gets_its_own_error_line(workdir, capsys, workers, errors):
    _surrogate_input(workdir / "in.jsonl")
    code = main(["parse", "qwen3", "--jsonl", "in.jsonl", "-o", "out.jsonl", "--workers", workers, *errors])
    err = capsys.readouterr().err
    assert code == (1 if "strict" in errors else 0)
    out = _read_lines(workdir / "out.jsonl")
    assert [r["id"] for r in out] == [0, 1, 2]
    assert out[0]["message"]["tool_calls"][0]["function"]["arguments"] == {"city": "Paris"}
    assert out[2]["message"] == {"role": "assistant", "content": "Rainy."}
    assert out[1]["message"] is None
    [diagnostic] = out[1]["diagnostics"]
    assert diagnostic["kind"] == "error"
    assert "lone surrogate" in diagnostic["message"] and "U+D800" in diagnostic["message"]
    assert "cannot parse output" not in err
    assert "1 failure" in err
    if "strict" in errors:
        assert "in.jsonl: line 2: " in err


def test_other_bad_records_each_get_an_error_line(workdir, capsys):
    good = json.dumps({"id": "g", "prefix": "", "output": "ok"})
    lines = [good,
             "[" * 100000 + "]" * 100000,                     # nesting deeper than the JSON reader goes
             '{"id": NaN, "prefix": "", "output": "x"}',      # an id JSON cannot write
             '{"id": "\\udc00", "prefix": "", "output": "x"}',  # an id UTF-8 cannot write
             '{"id": 5, "prefix": "", "output": 5}',          # not text
             '{"id": 6, "prefix": ""}',                       # no output
             '{"id": 7, "prefix": "", "output": "' + "y" * 3_000_000 + '"}',  # a large record
             good]
    (workdir / "in.jsonl").write_text("\n".join(lines) + "\n", encoding="ascii")
    for workers in ("1", "2"):
        assert main(["parse", "qwen3", "--jsonl", "in.jsonl", "-o", "out.jsonl", "--workers", workers]) == 0
        out = _read_lines(workdir / "out.jsonl")
        assert [r["id"] for r in out] == ["g", None, None, None, 5, 6, 7, "g"]
        assert [r["message"] is None for r in out] == [False, True, True, True, True, True, False, False]
        assert out[6]["message"]["content"] == "y" * 3_000_000
        assert "RecursionError" in out[1]["diagnostics"][0]["message"]
        assert "not finite" in out[2]["diagnostics"][0]["message"]
        assert "U+DC00" in out[3]["diagnostics"][0]["message"]
        assert "5 failures" in capsys.readouterr().err


def test_dump_record_never_raises():
    """Every writer (CLI, Ray, Spark) serialises with dump_record: a record it cannot write becomes
    an error record, not an exception."""
    line = batch.dump_record({"id": 3, "message": {"role": "assistant", "content": "\ud800"}, "diagnostics": []})
    record = json.loads(line.encode("utf-8"))
    assert record["id"] == 3 and record["message"] is None
    line = batch.dump_record({"id": 4, "message": {"a": float("nan")}, "diagnostics": []})
    assert json.loads(line, parse_constant=_no_constants)["message"] is None


# -- item 8: output over input ---------------------------------------------------------------------

def _io_input(path: Path) -> bytes:
    data = "".join(json.dumps({"id": i, "prefix": "", "output": f"r{i}"}) + "\n" for i in range(3)).encode()
    path.write_bytes(data)
    return data


@pytest.mark.parametrize("link", [None, "same", "dot", "symlink", "hardlink"])
def test_output_over_input_is_refused(workdir, capsys, link):
    data = _io_input(workdir / "io.jsonl")
    out = {None: "io.jsonl", "same": "io.jsonl", "dot": "./io.jsonl", "symlink": "link.jsonl",
           "hardlink": "hard.jsonl"}[link]
    if link == "symlink":
        os.symlink("io.jsonl", workdir / "link.jsonl")
    elif link == "hardlink":
        os.link(workdir / "io.jsonl", workdir / "hard.jsonl")
    argv = ["parse", "qwen3", "--jsonl", "io.jsonl", "-o", out]
    if link is not None:
        argv += ["--workers", "1"]
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(f"respc: cannot write {out!r}: it is the input file 'io.jsonl'")
    assert (workdir / "io.jsonl").read_bytes() == data


def test_stdout_appending_to_the_input_is_refused(workdir):
    data = _io_input(workdir / "io.jsonl")
    with open(workdir / "io.jsonl", "ab") as sink:
        done = subprocess.run([sys.executable, "-m", "respc", "parse", "qwen3", "--jsonl", "io.jsonl", "-o", "-",
                               "--workers", "1"], stdout=sink, stderr=subprocess.PIPE, timeout=60, cwd=workdir)
    assert done.returncode == 2
    assert b"is the input file 'io.jsonl'" in done.stderr
    assert (workdir / "io.jsonl").read_bytes() == data


@pytest.mark.parametrize("argv,victim", [
    (["parse", "qwen3", "in.txt", "--prefix", "", "--html", "in.txt"], "in.txt"),
    (["parse", "qwen3", "in.txt", "--prefix-file", "p.txt", "--html", "p.txt"], "p.txt"),
    (["parse", "qwen3", "--jsonl", "in.jsonl", "--prefix-file", "p.txt", "-o", "p.txt"], "p.txt"),
    (["compile", "templates/qwen3.json", "-o", "templates/qwen3.json"], "templates/qwen3.json"),
    (["graph", "templates/qwen3.json", "-o", "templates/qwen3.json"], "templates/qwen3.json"),
])
def test_no_writer_replaces_a_file_it_reads(workdir, capsys, argv, victim):
    _inputs(workdir)
    (workdir / "p.txt").write_text("", encoding="utf-8")
    before = (workdir / victim).read_bytes()
    assert main(argv) == 2
    assert f"it is the input file {victim!r}" in capsys.readouterr().err
    assert (workdir / victim).read_bytes() == before


# -- item 9: predictable temporary names -----------------------------------------------------------

#: each writer, its argv writing OUT, and the temporary name it used to write beside OUT
_WRITERS = {
    "compile -o": (lambda out: ["compile", "templates/qwen3.json", "-o", out], ".{}.respc-tmp"),
    "graph -o": (lambda out: ["graph", "templates/qwen3.json", "-o", out], "{}.tmp"),
    "parse --html": (lambda out: ["parse", "templates/qwen3.json", "in.txt", "--prefix", "", "--html", out],
                     "{}.tmp"),
    "parse --jsonl -o": (lambda out: ["parse", "templates/qwen3.json", "--jsonl", "in.jsonl", "-o", out,
                                      "--workers", "1"], "{}.tmp"),
}


def _inputs(workdir: Path) -> None:
    (workdir / "in.txt").write_text("hi", encoding="utf-8")
    (workdir / "in.jsonl").write_text('{"output": "hi", "prefix": ""}\n', encoding="utf-8")


@pytest.mark.parametrize("option", list(_WRITERS))
def test_a_symlink_planted_at_the_temporary_name_is_not_followed(workdir, option):
    _inputs(workdir)
    argv, tmp = _WRITERS[option]
    (workdir / "victim").write_text("precious", encoding="utf-8")
    os.symlink(workdir / "victim", workdir / tmp.format("out.x"))
    assert main(argv("out.x")) == 0
    assert (workdir / "victim").read_text(encoding="utf-8") == "precious"
    assert os.path.islink(workdir / tmp.format("out.x"))
    assert (workdir / "out.x").stat().st_size > 0 and not (workdir / "out.x").is_symlink()


@pytest.mark.parametrize("option", list(_WRITERS))
def test_a_users_own_tmp_file_is_not_clobbered_and_nothing_is_left(workdir, option):
    _inputs(workdir)
    argv, tmp = _WRITERS[option]
    (workdir / tmp.format("X")).write_text("mine", encoding="utf-8")
    before = sorted(p.name for p in workdir.iterdir())
    assert main(argv("X")) == 0
    assert (workdir / tmp.format("X")).read_text(encoding="utf-8") == "mine"
    assert sorted(p.name for p in workdir.iterdir()) == sorted([*before, "X"])


@pytest.mark.parametrize("option", list(_WRITERS))
def test_every_writer_keeps_mode_600_and_follows_a_symlink(workdir, option):
    """Item 10: ``--html`` and ``graph -o`` reset a 600 file to 644; ``compile -o`` keeps the mode."""
    _inputs(workdir)
    argv, _ = _WRITERS[option]
    (workdir / "real").write_text("old", encoding="utf-8")
    os.chmod(workdir / "real", 0o600)
    assert main(argv("real")) == 0
    assert stat.S_IMODE(os.stat(workdir / "real").st_mode) == 0o600
    os.symlink("real", workdir / "alias")
    assert main(argv("alias")) == 0
    assert os.path.islink(workdir / "alias")
    assert stat.S_IMODE(os.stat(workdir / "real").st_mode) == 0o600
    # a new file gets the umask's mode, as open() would give it
    mask = os.umask(0o022)
    os.umask(mask)
    assert main(argv("new")) == 0
    assert stat.S_IMODE(os.stat(workdir / "new").st_mode) == 0o666 & ~mask


def test_interrupted_jsonl_run_leaves_the_old_output(workdir, monkeypatch):
    """``--jsonl -o`` writes to a temporary file and renames it: a crash mid-run keeps the old file."""
    lines = "".join(json.dumps({"id": i, "prefix": "", "output": f"r{i}"}) + "\n" for i in range(10))
    (workdir / "in.jsonl").write_text(lines, encoding="utf-8")
    (workdir / "out.jsonl").write_text("old\n", encoding="utf-8")
    calls = []
    real = batch.RecordParser.parse_lines

    def crash(self, chunk):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(self, chunk)

    monkeypatch.setattr(batch.RecordParser, "parse_lines", crash)
    assert main(["parse", "qwen3", "--jsonl", "in.jsonl", "-o", "out.jsonl", "--workers", "1",
                 "--batch-size", "2"]) == 130
    assert (workdir / "out.jsonl").read_text(encoding="utf-8") == "old\n"
    assert sorted(p.name for p in workdir.iterdir()) == ["in.jsonl", "out.jsonl", "templates"]


# -- item 10: NaN and 1e999999 in a JSON body ------------------------------------------------------

@pytest.mark.parametrize("number", ["NaN", "1e999999", "-Infinity"])
def test_D9_non_finite_numbers_in_a_json_body(workdir, capsys, number):
    output = f'Hi.<tool_call>{{"name": "f", "arguments": {{"a": {number}}}}}</tool_call>'
    call = output[len("Hi."):]
    with pytest.raises(ValueError, match="not finite"):
        respc.parse_response(output, "qwen3", prefix="")
    message = respc.parse_response(output, "qwen3", prefix="", errors="recover")
    assert message == {"role": "assistant", "content": "Hi." + call}  # the text is kept
    parser = respc.get_response_parser("qwen3", prefix="", errors="recover")
    parser.feed(output)
    parser.finalize()
    assert [d["kind"] for d in parser.diagnostics] == ["malformed"]
    assert "not finite" in parser.diagnostics[0]["message"]
    (workdir / "in.jsonl").write_text(json.dumps({"id": 1, "prefix": "", "output": output}) + "\n",
                                      encoding="utf-8")
    assert main(["parse", "qwen3", "--jsonl", "in.jsonl", "-o", "out.jsonl", "--workers", "1"]) == 0
    [record] = _read_lines(workdir / "out.jsonl")  # strict JSON: no NaN, no Infinity
    assert record["message"] == {"role": "assistant", "content": "Hi." + call}
    assert [d["kind"] for d in record["diagnostics"]] == ["malformed"]
    assert main(["parse", "qwen3", "--jsonl", "in.jsonl", "-o", "out.jsonl", "--workers", "1",
                 "--errors", "strict"]) == 1
    [record] = _read_lines(workdir / "out.jsonl")
    assert record["message"] is None and "not finite" in record["diagnostics"][0]["message"]


def test_atomic_output_never_replaces_a_device(tmp_path):
    """The writer itself (not only the CLI's check) refuses a target that is not a regular file:
    a device renamed over is gone for everyone (docs/security.md, "Files")."""
    import errno

    from respc.compiler.files import atomic_output

    device = tmp_path / "null"
    try:
        os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except (PermissionError, AttributeError, OSError):
        pytest.skip("cannot make a device node here (needs root)")
    link = tmp_path / "link"
    link.symlink_to(device)
    for target in (device, link, tmp_path):
        with pytest.raises(OSError) as caught:
            with atomic_output(target) as handle:
                handle.write(b"x")
        assert caught.value.errno == errno.EINVAL
    assert stat.S_ISCHR(os.stat(device).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "null"]
