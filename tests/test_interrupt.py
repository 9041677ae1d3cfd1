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


def _start(args: list[str], **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "respc", *args], stderr=subprocess.PIPE, text=True,
                            start_new_session=True, **kwargs)


def _interrupt(proc: subprocess.Popen, ready) -> tuple[int, str]:
    deadline = time.monotonic() + 60
    while not ready() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert proc.poll() is None, "the command ended before it could be interrupted"
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    return proc.returncode, err


@pytest.mark.parametrize("workers", [1, 2])
def test_jsonl_ctrl_c_is_one_line_naming_what_was_written(tmp_path, workers):
    source = tmp_path / "in.jsonl"
    with open(source, "w") as handle:
        for i in range(200_000):
            handle.write(json.dumps({"id": f"r{i}", **RECORD}) + "\n")
    out = tmp_path / "out.jsonl"
    proc = _start(["parse", "qwen3", "--jsonl", str(source), "-o", str(out), "--prefix-key", "prompt",
                   "--workers", str(workers), "--batch-size", "64"], stdout=subprocess.DEVNULL)
    partial = out.parent / "out.jsonl"
    rc, err = _interrupt(proc, lambda: any(p.stat().st_size > 100_000 for p in tmp_path.iterdir()
                                           if p.name != "in.jsonl"))
    assert rc == 130, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert lines[0].startswith("respc: interrupted: ") and "records written to" in lines[0], lines[0]
    written = int(lines[0].split("interrupted: ")[1].split(" record")[0].replace(",", ""))
    assert written > 0
    last = json.loads(partial.read_text().splitlines()[-1]) if partial.exists() else None
    if last is not None:  # what the line names is the last record in the file
        assert f"id {last['id']!r}" in lines[0]


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
