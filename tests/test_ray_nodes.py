"""``respc.ray.parse_dataset`` across two real Ray nodes on this machine (issue 29; extra ``ray``; run with
``python -m pytest -q -m ray tests/test_ray_nodes.py``).

``ray start --head`` and a second ``ray start --address`` start two nodes (two raylets, two object
stores) with their own resources (2 CPUs each, and a custom resource naming the node). The parse runs
on a pool of two actors that each need 1.5 CPUs, so no node can hold both: the rows come back from
both nodes (``node_column`` names the node of each row; the ids are printed with ``-s``), and the
records are byte for byte the lines ``respc parse --jsonl`` writes for the same input, in input order.
On a loaded machine one actor may finish the small input before the other has started; the parse is
then run again (at most three times, the bytes checked each time) until both nodes took part.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from respc.compiler.cli import main
from support_batch import batch_records

pytestmark = pytest.mark.ray
ray = pytest.importorskip("ray")
pytest.importorskip("ray.data")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _ray(*args: str, env: dict) -> None:
    exe = Path(sys.executable).with_name("ray")
    done = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=180, env=env, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.fixture(scope="module")
def two_nodes():
    port = _free_port()
    temp = tempfile.mkdtemp(prefix="respc-ray-")
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    address = f"127.0.0.1:{port}"
    try:
        _ray("start", "--head", f"--port={port}", "--node-ip-address=127.0.0.1", "--num-cpus=2",
             '--resources={"respc_node_a": 1}', "--include-dashboard=false", f"--temp-dir={temp}",
             "--disable-usage-stats", env=env)
        _ray("start", f"--address={address}", "--node-ip-address=127.0.0.1", "--num-cpus=2",
             '--resources={"respc_node_b": 1}', "--disable-usage-stats", env=env)
        ray.init(address=address, log_to_driver=False)
        context = ray.data.DataContext.get_current()
        context.execution_options.preserve_order = True
        context.enable_progress_bars = False
        context.wait_for_min_actors_s = 120  # both actors up before the first batch, so both get work
        yield address
    finally:
        if ray.is_initialized():
            ray.shutdown()
        _stop(temp)
        shutil.rmtree(temp, ignore_errors=True)


def _stop(temp: str) -> None:
    """End the processes of this cluster only (``ray stop`` would end every Ray cluster of the user on
    the machine): those whose command line names its temporary folder, by process id."""
    import signal
    import time

    def ours() -> list[int]:
        pids = []
        for entry in os.listdir("/proc"):
            if entry.isdigit() and int(entry) != os.getpid():
                try:
                    with open(f"/proc/{entry}/cmdline", "rb") as handle:
                        if temp.encode() in handle.read():
                            pids.append(int(entry))
                except OSError:
                    pass
        return pids

    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in ours():
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.monotonic() + 15
        while ours() and time.monotonic() < deadline:
            time.sleep(0.2)


def test_tasks_land_on_both_nodes_and_give_the_cli_bytes(two_nodes, tmp_path):
    import respc.ray

    nodes = [node for node in ray.nodes() if node["Alive"]]
    assert len(nodes) == 2, nodes
    assert {name for node in nodes for name in node["Resources"] if name.startswith("respc_node_")} == {
        "respc_node_a", "respc_node_b"}
    records = batch_records(600)
    lines = [json.dumps(r) for r in records] + ["not json"]
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["parse", "qwen3", "--jsonl", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "cli.jsonl"),
                 "--workers", "1"]) == 0
    # the reads stay on the head node and take at most 0.5 of its CPUs, so they never keep an actor
    # of 1.5 CPUs off either node
    ds = ray.data.read_text(str(tmp_path / "in.jsonl"), override_num_blocks=30,
                            ray_remote_args={"num_cpus": 0.25, "resources": {"respc_node_a": 0.01}})
    expected = (tmp_path / "cli.jsonl").read_text(encoding="utf-8").splitlines()
    spread = []
    for _ in range(3):  # on a loaded machine one actor can finish the small input before the other is up
        out = respc.ray.parse_dataset(ds, "qwen3", lines_column="text", batch_size=10, node_column="node",
                                      num_cpus=1.5,
                                      compute=ray.data.ActorPoolStrategy(size=2, max_tasks_in_flight_per_actor=1))
        rows = out.take_all()
        assert [row["record"] for row in rows] == expected  # every run: the CLI's bytes, in order
        spread.append({node: sum(row["node"] == node for row in rows) for node in {row["node"] for row in rows}})
        print("rows per node id:", spread[-1])
        if len(spread[-1]) == 2:
            break
    assert set(spread[-1]) == {node["NodeID"] for node in nodes}, (spread, [node["NodeID"] for node in nodes])
