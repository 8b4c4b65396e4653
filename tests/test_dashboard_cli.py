"""`kpulse dashboard` as a user runs it: it serves the app on the configured port, and a taken
port or a bad config is one line and exit 1, never a traceback."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys

import yaml

from tests.dashboard_browser import wait_for_dashboard
from tests.conftest import TEST_PORT_BASE

PORT = TEST_PORT_BASE + 502


def write_config(tmp_path, port: int):
    config = {"clusters": [{"name": "c", "bootstrap_servers": "127.0.0.1:9"}], "lake": {"path": str(tmp_path / "lake")},
              "dashboard": {"port": port, "host": "127.0.0.1"}}
    path = tmp_path / "kpulse.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def kpulse(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "cli.main", *args], capture_output=True, text=True, timeout=timeout)


def test_dashboard_serves_on_the_configured_port_and_stops_on_sigterm(tmp_path):
    path = write_config(tmp_path, PORT)
    process = subprocess.Popen([sys.executable, "-m", "cli.main", "--config", str(path), "dashboard"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for_dashboard(PORT, process)
    finally:
        process.send_signal(signal.SIGTERM)
        output = process.communicate(timeout=30)[0]
    assert f"kpulse dashboard: http://127.0.0.1:{PORT}" in output
    assert "Traceback" not in output


def test_a_taken_port_is_one_line_and_exit_1(tmp_path):
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", PORT + 1))
        squatter.listen()
        result = kpulse("--config", str(write_config(tmp_path, PORT + 1)), "dashboard")
    assert result.returncode == 1
    assert result.stderr.startswith(f"kpulse: error: cannot serve the dashboard on 127.0.0.1:{PORT + 1}")
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_bad_config_is_one_line_and_exit_1(tmp_path):
    path = tmp_path / "kpulse.yaml"
    path.write_text("clusters: [{name: c, bootstrap_servers: \"127.0.0.1:9\"}]\ndashboard: {prot: 1}\n")
    result = kpulse("--config", str(path), "dashboard")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "prot" in result.stderr
