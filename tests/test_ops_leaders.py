"""Preferred leader election on the real cluster: restart a broker, its partitions stay led by
others; kpulse's plan shows them, and executing it gives leadership back to the preferred
replicas (read back from metadata)."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from tests.support import admin_for, config_file, create_topic

pytestmark = pytest.mark.cluster

TOPIC = "ops-leaders"
ASSIGNMENT = [[1, 2, 3], [2, 3, 1], [3, 1, 2]]


def leaders(admin) -> dict[int, int]:
    return {p: meta.leader for p, meta in admin.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions.items()}


def wait_for(condition, what: str, timeout: float = 30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def test_election_restores_preferred_leaders_after_a_broker_restart(local_cluster, bootstrap, tmp_path):
    admin = admin_for(bootstrap)
    create_topic(admin, TOPIC, 3, assignment=ASSIGNMENT)
    assert leaders(admin) == {0: 1, 1: 2, 2: 3}
    local_cluster.stop_broker(2)
    try:
        wait_for(lambda: leaders(admin)[1] != 2 and leaders(admin)[1] >= 0, "partition 1 to move off broker 2")
    finally:
        local_cluster.start_broker(2)
    in_sync = lambda: 2 in admin.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions[1].isrs  # noqa: E731
    wait_for(in_sync, "broker 2 back in the ISR")
    moved_to = leaders(admin)[1]
    assert moved_to in (1, 3)
    config = config_file(tmp_path / "kpulse.yaml", bootstrap, tmp_path / "lake")

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "cli.main", "--config", str(config), "elect-leaders",
                               "--topic", TOPIC, *args], capture_output=True, text=True, timeout=120)

    dry = cli()
    assert dry.returncode == 0, dry.stderr
    assert f"{TOPIC}-1: leader {moved_to} -> preferred 2" in dry.stdout
    assert leaders(admin)[1] == moved_to, "the plan changes nothing"

    done = cli("--execute", "--json")

    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)["result"]
    assert [(r["partition"], r["before"], r["after"], r["error"]) for r in result["partitions"]] == [(1, moved_to, 2, None)]
    assert leaders(admin) == {0: 1, 1: 2, 2: 3}
    again = json.loads(cli("--json").stdout)["plan"]
    assert again["moves"] == []
