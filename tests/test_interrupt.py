"""Ctrl-C ends ``respc parse`` with one line saying what was written, and exit status 130 (README, "Use").

Each test starts the real command in its own process group and sends SIGINT to the whole group, as a
terminal does on Ctrl-C (the pool's workers get it too).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="process groups and SIGINT are POSIX")

RECORD = {"prompt": "<|im_start|>assistant\n<think>\n",
          "output": "Let me think.</think>\n\nHello " + "there " * 200 + "<tool_call>\n"
                    '{"name": "f", "arguments": {"x": 1}}\n</tool_call>'}


def _default_sigint() -> None:
    # A command started in the background by a non-interactive shell inherits SIGINT ignored, and
    # Python then installs no KeyboardInterrupt handler: give the child the terminal's default.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(args: list[str], **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "respc", *args], stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=_default_sigint, **kwargs)


def _interrupt(proc: subprocess.Popen, ready) -> tuple[int, str]:
    started = time.monotonic()
    while not ready() and time.monotonic() < started + 180 and proc.poll() is None:
        time.sleep(0.05)
    assert proc.poll() is None, "the command ended before it could be interrupted"
    # Interrupting a command that has not yet written would test the zero-record message only: a
    # slow machine gets time, and if it never gets there the test says so rather than misleading.
    assert ready(), f"the command wrote nothing to interrupt after {time.monotonic() - started:.0f} s"
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    return proc.returncode, err


def _records(tmp_path):
    source = tmp_path / "in.jsonl"
    with open(source, "w") as handle:
        for i in range(30_000):
            handle.write(json.dumps({"id": f"r{i}", **RECORD}) + "\n")
    return source


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    return lines[0]


@pytest.mark.parametrize("workers", [1, 2])
def test_jsonl_to_stdout_ctrl_c_names_what_was_written(tmp_path, workers):
    source = _records(tmp_path)
    out = tmp_path / "out.jsonl"
    with open(out, "wb") as handle:
        proc = _start(["parse", "qwen3", "--jsonl", str(source), "--prefix-key", "prompt",
                       "--workers", str(workers), "--batch-size", "64"], stdout=handle)
        rc, err = _interrupt(proc, lambda: out.stat().st_size > 100_000)
    assert rc == 130, err
    line = _one_line(err)
    assert line.startswith("respc: interrupted: ") and " written to standard output, whole and in input order" \
        in line, line
    written = int(line.split("interrupted: ")[1].split(" record")[0].replace(",", ""))
    lines = out.read_text().splitlines()
    assert len(lines) == written, line  # every record counted is in the output, whole, and no other
    assert written > 0 and "; the last was line " in line, line
    last = json.loads(lines[-1])
    assert line.endswith(f"the last was line {written}, id {last['id']!r}")


@pytest.mark.parametrize("workers", [1, 2])
def test_jsonl_to_a_file_ctrl_c_leaves_it_and_says_so(tmp_path, workers):
    source = _records(tmp_path)
    out = tmp_path / "out.jsonl"
    out.write_text("old\n")
    proc = _start(["parse", "qwen3", "--jsonl", str(source), "-o", str(out), "--prefix-key", "prompt",
                   "--workers", str(workers), "--batch-size", "64"], stdout=subprocess.DEVNULL)
    rc, err = _interrupt(proc, lambda: any(p.stat().st_size > 100_000 for p in tmp_path.iterdir()
                                           if p.name not in ("in.jsonl", "out.jsonl")))
    assert rc == 130, err
    line = _one_line(err)
    assert line.startswith("respc: interrupted after ") and line.endswith(
        f"; {str(out)!r} was not written (a run writes its output file only when it ends)"), line
    assert out.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "out.jsonl"]


def test_events_ctrl_c_at_a_pipe_is_one_line(tmp_path):
    read, write = os.pipe()
    proc = _start(["parse", "qwen3", "-", "--prefix", "", "--events"], stdin=read, stdout=subprocess.PIPE)
    os.close(read)
    os.write(write, b"Hello there, ")
    first = proc.stdout.readline()  # the parser answered: it now waits in its read of the pipe
    assert json.loads(first)["type"] == "region_open"
    rc, err = _interrupt(proc, lambda: True)
    os.close(write)
    assert rc == 130, err
    assert err.strip().splitlines() == [err.strip()], err
    assert "Traceback" not in err
    assert err.startswith("respc: interrupted (") and "JSON value" in err, err
