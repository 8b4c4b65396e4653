"""A cluster of its own, started and stopped through the CLI: `down` leaves no process behind."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import psutil
import pytest

pytestmark = pytest.mark.cluster


def run(env, *args, check=True):
    result = subprocess.run([sys.executable, "-m", "cli.main", *args], capture_output=True, text=True,
                            env=env, timeout=240)
    if check:
        assert result.returncode == 0, result.stderr
    return result


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_up_starts_the_main_job_and_down_stops_every_process_it_started(tmp_path, secure_cluster):
    """`kpulse up` (what `make up` runs): cluster, demo workload, collectors, SLO job, the daily lake
    compaction and dashboard; `kpulse down` stops every one of them by PID, their children too
    (Spark's JVM), and frees every port, and leaves another Kafka running (the session's secured
    cluster, whose modules run in the same pytest worker as this one in ``make test``)."""
    from kpulse import processes

    bystander = processes.running_pid(secure_cluster.pid_file)
    assert bystander is not None
    env = {key: value for key, value in os.environ.items() if key != "KPULSE_CONFIG"}
    # below Linux's ephemeral range (32768-60999): a connection's source port cannot take the dashboard's
    env.update(KPULSE_STATE_DIR=str(tmp_path / "state"), KPULSE_PORT_BASE="24090")
    up = run(env, "up")
    assert "kpulse collect: running" in up.stdout
    assert "kpulse dashboard: running" in up.stdout and "http://127.0.0.1:24590" in up.stdout
    assert "kpulse slo: running" in up.stdout
    assert "kpulse compact: running" in up.stdout and "daily at 00:30 UTC" in up.stdout
    status = json.loads(run(env, "cluster", "status", "--json").stdout)
    demo = json.loads(run(env, "demo", "status", "--json").stdout)
    pids = [node["pid"] for node in status["nodes"]] + [p["pid"] for p in demo if p["running"]]
    pids += [json.loads(f.read_text())["pid"] for f in (tmp_path / "state" / "services").glob("*.pid.json")]
    assert len(pids) >= 3 + 4 + 3  # nodes, producer + 2 consumers + 2 Streams instances, collector, SLO job, dashboard
    ports = [node["port"] for node in status["nodes"]] + [node["controller_port"] for node in status["nodes"]]
    ports.append(24590)  # the dashboard (base + 500)
    for _ in range(120):  # Streamlit binds some seconds after it starts (more on a loaded machine)
        closed = [port for port in ports if not port_open(port)]
        if not closed:
            break
        time.sleep(0.5)
    assert all(psutil.pid_exists(pid) for pid in pids)
    assert closed == [], f"ports not open 60 s after `kpulse up`: {closed}"
    for _ in range(60):  # the SLO job's Spark JVM starts a few seconds after its driver
        children = [child.pid for pid in pids for child in psutil.Process(pid).children(recursive=True)]
        if any("java" in psutil.Process(child).name() for child in children if psutil.pid_exists(child)):
            break
        time.sleep(0.5)
    else:
        raise AssertionError("the SLO job started no Spark JVM")
    pids += children

    result = run(env, "down", "--wipe")
    assert "stopped 4 kpulse service(s), the demo workload and 3 node(s)" in result.stdout
    alive = [pid for pid in pids if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]
    assert not alive, "still running after down: " + "; ".join(
        f"{pid} {' '.join(psutil.Process(pid).cmdline())[:200]}" for pid in alive if psutil.pid_exists(pid))
    assert not any(port_open(port) for port in ports)
    assert not (tmp_path / "state" / "cluster").exists()
    after = json.loads(run(env, "cluster", "status", "--json").stdout)
    assert [node["running"] for node in after["nodes"]] == [False, False, False]
    # The other cluster is untouched.
    assert processes.running_pid(secure_cluster.pid_file) == bystander and psutil.pid_exists(bystander)


def test_up_refuses_ports_in_use_with_one_line_and_starts_nothing(tmp_path):
    with socket.socket() as squatter:
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        for base in (38090, 37590, 37090, 36590):  # these ports lie in Linux's ephemeral range: one
            try:                                    # may be some connection's source port right now
                squatter.bind(("127.0.0.1", base + 202))  # node 2's metrics port
                break
            except OSError:
                continue
        squatter.listen()
        env = {**os.environ, "KPULSE_STATE_DIR": str(tmp_path / "state"), "KPULSE_PORT_BASE": str(base)}
        result = run(env, "cluster", "up", check=False)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        f"kpulse: error: port(s) {base + 202} already in use on 127.0.0.1 (another cluster? stop it, or choose other "
        "ports with KPULSE_PORT_BASE)")
    status = json.loads(run(env, "cluster", "status", "--json").stdout)
    assert not any(node["running"] for node in status["nodes"])
