"""Partition reassignment on the real cluster: a balanced plan moves replicas under a replication
throttle, completes, verifies and leaves no throttle behind; a throttled move can be cancelled
and its replicas go back. Plus the pure planner: few moves, drain, racks."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from operations.access import User
from operations.reassign import throttle_configs
from operations.reassign_plan import balance, drain
from tests.support import admin_for, config_file, create_topic, operations_for

RF1 = {"min.insync.replicas": "1"}

ADMIN = User("ada", "admin")


def fill(bootstrap: str, topic: str, partitions: int, kilobytes: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for i in range(kilobytes * partitions):
        producer.produce(topic, value=b"x" * 1000, partition=i % partitions)
    assert producer.flush(30) == 0


def replicas(admin, topic: str) -> dict[int, list[int]]:
    return {p: list(m.replicas) for p, m in admin.list_topics(topic, timeout=10).topics[topic].partitions.items()}


@pytest.mark.cluster
def test_a_balancing_reassignment_moves_replicas_completes_and_clears_its_throttles(bootstrap, tmp_path):
    admin = admin_for(bootstrap)
    # Single-replica topics with min.insync.replicas=1: with the cluster's default of 2, KRaft leaves
    # a single-replica partition leaderless after its broker is killed and restarted (later tests do).
    create_topic(admin, "ops-reassign", 3, assignment=[[1], [1], [1]], config=RF1)
    fill(bootstrap, "ops-reassign", 3, 200)
    operations = operations_for(tmp_path, bootstrap)

    plan = operations.plan_reassignment("test", ["ops-reassign"], [1, 2, 3])
    assert [(m.partition, m.current, m.target) for m in plan.moves] == [(0, (1,), (2,)), (1, (1,), (3,))]
    assert replicas(admin, "ops-reassign") == {0: [1], 1: [1], 2: [1]}, "planning changes nothing"

    started = operations.start_reassignment(ADMIN, plan, throttle_bytes=20_000_000)
    throttles = throttle_configs(admin, [1, 2, 3], ["ops-reassign"])
    done = operations.reassigner("test").wait(plan, 60, lambda status: None)
    verified = operations.verify_reassignment(ADMIN, plan)

    assert started.result in ("in-progress", "ok")
    if started.result == "ok":  # complete at its read-back: no throttle was left behind to verify
        assert started.throttles_removed and all(not values for values in throttles.values())
    else:
        assert throttles["broker 2"] == {"leader.replication.throttled.rate": "20000000",
                                         "follower.replication.throttled.rate": "20000000"}
        assert throttles["topic ops-reassign"] == {"leader.replication.throttled.replicas": "0:1,1:1",
                                                   "follower.replication.throttled.replicas": "0:2,1:3"}
    assert done.result == "ok" and verified.result == "ok" and verified.throttles_removed
    assert replicas(admin, "ops-reassign") == {0: [2], 1: [3], 2: [1]}
    assert all(not values for values in throttle_configs(admin, [1, 2, 3], ["ops-reassign"]).values())
    operations.close()
    actions = [(r["action"], r["result"]) for r in operations.audit.read().to_dict("records")]
    assert actions == [("reassign:execute", started.result), ("reassign:verify", "ok")]


@pytest.mark.cluster
def test_a_throttled_move_is_cancelled_from_the_cli_and_its_replicas_go_back(bootstrap, tmp_path):
    admin = admin_for(bootstrap)
    create_topic(admin, "ops-reassign-slow", 1, assignment=[[2]], config=RF1)
    fill(bootstrap, "ops-reassign-slow", 1, 3000)  # one fetch (1 MB) passes the throttle, the rest waits
    config = config_file(tmp_path / "kpulse.yaml", bootstrap, tmp_path / "lake")
    plan_file = tmp_path / "plan.json"

    def cli(*args):
        result = subprocess.run([sys.executable, "-m", "cli.main", "--config", str(config), "reassign", *args],
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        return result.stdout

    cli("generate", "--topics", "ops-reassign-slow", "--drain", "2", "--output", str(plan_file))
    target = json.loads(plan_file.read_text())["moves"][0]["target"]
    started = json.loads(cli("execute", "--plan", str(plan_file), "--throttle", "20000", "--json"))
    moving = json.loads(cli("verify", "--plan", str(plan_file), "--json"))
    cancelled = json.loads(cli("cancel", "--plan", str(plan_file), "--json"))

    assert target in ([1], [3])
    assert started["result"] == moving["result"] == "in-progress", "3 MB at 20 kB/s take minutes"
    assert cancelled["result"] == "cancelled" and cancelled["partitions"][0]["replicas"] == [2]
    assert replicas(admin, "ops-reassign-slow") == {0: [2]}
    assert all(not values for values in throttle_configs(admin, [1, 2, 3], ["ops-reassign-slow"]).values())


# --- the pure planner -----------------------------------------------------------------------------

def moved(before, after) -> int:
    return sum(len(set(after[tp]) - set(before[tp])) for tp in before)


def test_balance_moves_as_few_replicas_as_it_takes_and_spreads_leaders():
    before = {("t", p): [1, 2] for p in range(6)}  # broker 3 is new and empty
    after = balance(before, [1, 2, 3])

    counts = {b: sum(b in r for r in after.values()) for b in (1, 2, 3)}
    leaders = {b: sum(r[0] == b for r in after.values()) for b in (1, 2, 3)}
    assert counts == {1: 4, 2: 4, 3: 4} and moved(before, after) == 4
    assert leaders == {1: 2, 2: 2, 3: 2}
    assert balance(after, [1, 2, 3]) == after, "a balanced assignment stays as it is"


def test_drain_moves_only_the_drained_brokers_replicas_and_respects_racks():
    before = {("t", 0): [1, 4], ("t", 1): [2, 3], ("t", 2): [4, 2]}
    racks = {1: "a", 2: "b", 3: "a", 4: "c"}
    after = drain(before, 4, [1, 2, 3, 4], racks)

    assert after[("t", 1)] == [2, 3]
    assert all(4 not in r for r in after.values())
    assert after[("t", 0)] == [1, 2], "broker 3 shares rack a with broker 1"
    assert after[("t", 2)] in ([1, 2], [3, 2])
