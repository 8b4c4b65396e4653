"""A cluster of its own, started and stopped through the CLI: `down` leaves no process behind."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import psutil
import pytest

pytestmark = pytest.mark.cluster


def run(env, *args, check=True):
    result = subprocess.run([sys.executable, "-m", "kpulse.cli", *args], capture_output=True, text=True,
                            env=env, timeout=240)
    if check:
        assert result.returncode == 0, result.stderr
    return result


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_down_stops_every_process_it_started_and_frees_every_port(tmp_path, local_cluster):
    env = {**os.environ, "KPULSE_STATE_DIR": str(tmp_path / "state"), "KPULSE_PORT_BASE": "39090"}
    run(env, "cluster", "up")
    status = json.loads(run(env, "cluster", "status", "--json").stdout)
    pids = [node["pid"] for node in status["nodes"]]
    ports = [node["port"] for node in status["nodes"]] + [node["controller_port"] for node in status["nodes"]]
    assert all(psutil.pid_exists(pid) for pid in pids)
    assert all(port_open(port) for port in ports)

    result = run(env, "cluster", "down", "--wipe")
    assert "stopped 3 node(s)" in result.stdout
    assert not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE for pid in pids)
    assert not any(port_open(port) for port in ports)
    assert not (tmp_path / "state" / "cluster").exists()
    after = json.loads(run(env, "cluster", "status", "--json").stdout)
    assert [node["running"] for node in after["nodes"]] == [False, False, False]
    # The session's own cluster is untouched.
    assert local_cluster.status().all_running
