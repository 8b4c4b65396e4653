"""The collection loop: isolation of failing collectors, the snapshot, the lake, the exporter and
the `kpulse collect` command on the real cluster."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

import pytest
import yaml
from prometheus_client import CollectorRegistry, generate_latest

from collectors.registry import default_registry
from exporters.prometheus import SnapshotExporter
from kpulse.lake.reader import read_table
from collectors.protocol import CollectContext, CollectorResult, DuplicateCollectorError, Registry, run_isolated
from collectors.runner import CollectionService
from kpulse.lake.rows import Columns
from kpulse.config import load_config
from tests.support import collect_config, free_port
from datetime import UTC


class Broken:
    name = "broken"

    def collect(self, context):
        raise ConnectionError("cannot reach the thing\nsecond line")


class Fixed:
    name = "fixed"

    def collect(self, context):
        return CollectorResult(sections={"fixed": 1}, rows={"collector_status": []})


def test_a_failing_collector_is_marked_down_with_its_error_and_the_others_keep_running():
    sections, _, statuses = run_isolated([Broken(), Fixed()], CollectContext(cluster=None, now=0.0))
    assert sections == {"fixed": 1}
    assert [(s.name, s.up, s.error) for s in statuses] == [
        ("broken", False, "ConnectionError: cannot reach the thing"), ("fixed", True, None)]


def test_rows_as_columns_reach_the_lake_whole_and_two_collectors_of_one_table_merge():
    class Lagging:
        name = "lagging"

        def __init__(self, topic):
            self.topic = topic

        def collect(self, context):
            return CollectorResult(rows={"consumer_lag": Columns(2, time=context.now, cluster="c", group_id="g",
                                                                 topic=self.topic, partition=[0, 1])})

    one = Lagging("a")
    _, rows, _ = run_isolated([one], CollectContext(cluster=None, now=5.0))
    assert isinstance(rows["consumer_lag"], Columns) and rows["consumer_lag"].column("partition") == [0, 1]
    _, rows, _ = run_isolated([one, Lagging("b")], CollectContext(cluster=None, now=5.0))
    assert [(r["topic"], r["partition"]) for r in rows["consumer_lag"]] == [("a", 0), ("a", 1), ("b", 0), ("b", 1)]


def test_the_registry_refuses_a_second_collector_of_the_same_name():
    registry = Registry()
    registry.register("fixed", lambda cluster: Fixed())
    with pytest.raises(DuplicateCollectorError, match="'fixed' is already registered"):
        registry.register("fixed", lambda cluster: Fixed())
    assert set(default_registry(with_add_ons=False).names) >= {"cluster_metadata", "broker_metrics", "consumer_lag"}


def test_the_loop_settles_the_garbage_collector_after_its_first_cycle_and_then_every_n_cycles(tmp_path, monkeypatch):
    from collectors import runner
    from kpulse.config import parse_config

    config = parse_config({"clusters": [{"name": "c", "bootstrap_servers": "node-1:9092"}],
                           "lake": {"path": str(tmp_path / "lake")}}, source="test", base_dir=tmp_path)
    registry = Registry()
    registry.register("fixed", lambda cluster: Fixed())
    settled = []
    monkeypatch.setattr(runner, "settle_gc", lambda: settled.append(len(settled)))
    for every, expected in ((3, 3), (None, 0)):  # cycles 1, 4 and 7 of seven; never by default
        settled.clear()
        service = CollectionService(config, registry=registry, gc_settle_cycles=every)
        for _ in range(7):
            service.cycle()
        assert len(settled) == expected


def test_a_buffer_filling_before_the_minutely_flush_is_written_early_not_dropped(tmp_path):
    """At 10,000 groups x 10 partitions a minute of consumer_lag rows (600,000) outgrew the writer's
    buffer (200,000) before the once-a-minute flush: two thirds were dropped as a lake_gap."""
    from kpulse.config import parse_config
    from kpulse.lake.store import LakeWriter

    class Many:
        name = "many"

        def collect(self, context):
            return CollectorResult(rows={"consumer_lag": Columns(4, time=context.now, cluster="c", group_id="g",
                                                                 topic="t", partition=[0, 1, 2, 3])})

    config = parse_config({"clusters": [{"name": "c", "bootstrap_servers": "node-1:9092"}],
                           "lake": {"path": str(tmp_path / "lake")}}, source="test", base_dir=tmp_path)
    registry = Registry()
    registry.register("many", lambda cluster: Many())
    lake = LakeWriter(str(tmp_path / "lake"), max_buffered_rows=10)
    now = [1_700_000_000.0]
    service = CollectionService(config, registry=registry, lake=lake, clock=lambda: now[0], flush_seconds=3600)
    for _ in range(6):  # 24 rows, and the buffer holds 10
        service.cycle()
        now[0] += 10
    service.flush()
    assert lake.pending_gaps() == [] and read_table(str(tmp_path / "lake"), "lake_gap").empty
    assert len(read_table(str(tmp_path / "lake"), "consumer_lag")) == 24


def test_the_snapshot_is_built_once_from_the_finished_cycle_and_nothing_handed_on_is_changed_after(tmp_path):
    """The snapshot carries the cycle's connection check, expected-idle labels, alerts and refused lake
    rows, and is built once from them: the groups a collector returned, the observation the alert
    rules read and the snapshot the exporter was given are each left as they were handed on."""
    import copy
    import dataclasses

    from alerting.rules import rule_by_name
    from alerting.state import AlertState
    from kpulse.config import parse_config

    returned = []

    class Groups:
        name = "groups"

        def collect(self, context):
            groups = [{"group_id": name, "status": "STOP", "total_lag": 5, "partitions": []}
                      for name in ("retired", "live")]
            returned.append((groups, copy.deepcopy(groups)))
            return CollectorResult(sections={"consumer_groups": groups},
                                   rows={"consumer_lag": [{"time": context.now, "cluster": "c", "no_such_column": 1}]})

    class Gate:
        def check(self):
            return {"ok": True, "error": None, "conclusive": True, "cluster_operations": [], "limits": []}

    class Exporter:
        def __init__(self):
            self.given = []

        def update(self, snapshot):
            self.given.append((snapshot, copy.deepcopy(snapshot)))

    evaluated = []
    status_rule = rule_by_name("ConsumerGroupStatus")

    def check(snapshot):
        evaluated.append((snapshot, copy.deepcopy(snapshot)))
        return status_rule.check(snapshot)

    rule = dataclasses.replace(status_rule, check=check, for_seconds=0)
    config = parse_config({"clusters": [{"name": "c", "bootstrap_servers": "node-1:9092",
                                         "consumer_groups": {"expected_idle": ["retired"]}}],
                           "lake": {"path": str(tmp_path / "lake")}}, source="test", base_dir=tmp_path)
    registry = Registry()
    registry.register("groups", lambda cluster: Groups())
    exporter = Exporter()
    service = CollectionService(config, registry=registry, exporter=exporter, connection_gate=lambda cluster: Gate(),
                                alert_state_factory=lambda cluster: AlertState([rule], cluster=cluster.name),
                                clock=lambda: 1_700_000_000.0)
    snapshot = service.cycle().snapshots["c"]

    assert [g.get("expected_idle") for g in snapshot["consumer_groups"]] == [True, None]
    assert [a["entity"] for a in snapshot["alerts"]] == ["group/live"]
    assert snapshot["connection"]["ok"] is True and len(snapshot["lake_errors"]) == 1
    (observation, as_evaluated), = evaluated
    assert observation["connection"]["ok"] is True and observation["consumer_groups"][0]["expected_idle"] is True
    for handed, as_handed in (returned[0], (observation, as_evaluated), exporter.given[0]):
        assert handed == as_handed
    assert exporter.given[0][0] is snapshot


def test_settling_keeps_live_objects_out_of_collections_and_frees_garbage_at_the_next_settle():
    import gc
    import weakref

    from collectors import runner
    from collectors.runner import settle_gc

    class Node:
        pass

    thresholds = gc.get_threshold()
    try:
        first, second = Node(), Node()
        first.other, second.other = second, first  # a reference cycle: only the collector frees it
        alive = weakref.ref(first)
        settle_gc()
        assert gc.get_freeze_count() > 0
        del first, second
        gc.collect()
        assert alive() is not None  # frozen: not even a full collection looks at it
        settle_gc()
        assert alive() is None
        assert gc.get_threshold()[0] == runner.GC_YOUNG_THRESHOLD  # young collections made rare
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)


def exposition(snapshot) -> str:
    exporter = SnapshotExporter()
    exporter.update(snapshot)
    registry = CollectorRegistry()
    registry.register(exporter)
    return generate_latest(registry).decode()


def test_the_exporter_uses_kafka_exporter_names_and_leaves_nulls_out():
    topic = {"name": "t", "partitions": [{"partition": n, "leader": 1, "replicas": [1], "isr": [1],
                                          "log_start_offset": 0, "log_end_offset": end} for n, end in ((0, 20), (1, 5))]}
    snapshot = {"cluster_name": "prod", "cluster": {"brokers_up": 3, "under_replicated_partitions": None,
                                                    "topics": [topic]},
                "brokers": [], "streams_apps": [], "probe": None, "alerts": [],
                "collectors": [{"name": "consumer_lag", "up": False, "duration_seconds": 0.5, "error": "x"}],
                "consumer_groups": [{"group_id": "billing", "members": 0, "total_lag": 12, "max_lag_seconds": 4.5,
                                     "status": "STOP", "partitions": [
                                         {"topic": "t", "partition": 0, "committed_offset": 8, "log_end_offset": 20,
                                          "lag": 12, "lag_seconds": 4.5},
                                         {"topic": "t", "partition": 1, "committed_offset": None,
                                          "log_end_offset": 5, "lag": None, "lag_seconds": None}]}]}
    text = exposition(snapshot)
    assert 'kafka_consumergroup_lag{cluster="prod",consumergroup="billing",partition="0",topic="t"} 12.0' in text
    assert 'partition="1"' in text.split("kafka_topic_partition_current_offset", 1)[1]  # log end known
    assert not any(line.startswith("kafka_consumergroup_lag{") and 'partition="1"' in line
                   for line in text.splitlines())
    assert 'kpulse_consumergroup_status{cluster="prod",consumergroup="billing",status="STOP"} 1.0' in text
    assert 'kpulse_consumergroup_status{cluster="prod",consumergroup="billing",status="OK"} 0.0' in text
    assert 'kpulse_collector_up{cluster="prod",collector="consumer_lag"} 0.0' in text
    assert "kpulse_cluster_under_replicated_partitions" not in text
    assert 'kafka_brokers{cluster="prod"} 3.0' in text


# --- on the real cluster ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def config_file(local_cluster, tmp_path_factory):
    return collect_config(local_cluster.layout, tmp_path_factory.mktemp("collect"),
                          exporter={"port": free_port(), "host": "127.0.0.1"})


@pytest.mark.cluster
def test_collect_once_json_prints_the_documented_snapshot(config_file):
    result = subprocess.run([sys.executable, "-m", "cli.main", "--config", str(config_file), "collect", "--once",
                             "--json"], capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr
    snapshot = json.loads(result.stdout)
    cluster = snapshot["cluster"]
    for key in ("controller_id", "brokers", "under_replicated_partitions", "offline_partitions",
                "under_min_isr_partitions", "active_controller_count"):
        assert key in cluster
    assert cluster["active_controller_count"] == 1
    assert cluster["controller_id"] in (1, 2, 3)
    assert [b["up"] for b in cluster["brokers"]] == [True, True, True]
    for broker in snapshot["brokers"]:
        for key in ("request_handler_idle_ratio", "network_processor_idle_ratio", "bytes_in_per_sec",
                    "bytes_out_per_sec", "partition_count", "leader_count"):
            assert broker[key] is not None or key in broker["reasons"], (broker["id"], key)
        assert 0 <= broker["request_handler_idle_ratio"] <= 1
    for key in ("consumer_groups", "streams_apps", "alerts", "collectors"):
        assert isinstance(snapshot[key], list)
    assert all(c["up"] for c in snapshot["collectors"]), snapshot["collectors"]
    lake = load_config(config_file).lake.path
    health = read_table(lake, "cluster_health")
    assert len(health) == 3 and set(health["cluster"]) == {"test"}
    assert (health["under_replicated_partitions"] == cluster["under_replicated_partitions"]).iloc[-1]
    assert os.path.exists(os.path.join(lake, "_snapshots", "test.json"))


@pytest.mark.cluster
def test_a_collector_that_fails_is_down_in_the_snapshot_the_exporter_and_the_lake(config_file):
    config = load_config(config_file)
    registry = default_registry(with_add_ons=False)
    registry.register("broken", lambda cluster: Broken())
    exporter = SnapshotExporter()
    service = CollectionService(config, registry=registry, exporter=exporter)
    snapshot = service.cycle().snapshots["test"]
    statuses = {c["name"]: c for c in snapshot["collectors"]}
    assert statuses["broken"]["up"] is False and "cannot reach the thing" in statuses["broken"]["error"]
    assert statuses["cluster_metadata"]["up"] is True
    assert snapshot["cluster"]["brokers_up"] == 3
    registry_ = CollectorRegistry()
    registry_.register(exporter)
    assert 'kpulse_collector_up{cluster="test",collector="broken"} 0.0' in generate_latest(registry_).decode()
    rows = read_table(config.lake.path, "collector_status")
    assert not rows[rows["collector"] == "broken"]["up"].any()


@pytest.mark.cluster
def test_collect_serves_prometheus_metrics_and_stops_cleanly_on_sigterm(config_file):
    port = load_config(config_file).exporter.port
    process = subprocess.Popen([sys.executable, "-m", "cli.main", "--config", str(config_file), "collect"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline, text = time.monotonic() + 60, ""
        while time.monotonic() < deadline and "kpulse_collector_up" not in text:
            time.sleep(1)
            try:
                text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
            except OSError:
                continue
        assert 'kpulse_collector_up{cluster="test",collector="cluster_metadata"} 1.0' in text
        assert 'kafka_brokers{cluster="test"} 3.0' in text
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert "collector stopped" in out


@pytest.mark.cluster
def test_a_crashed_collector_process_is_restarted_and_the_crash_recorded(config_file):
    import psutil

    config = load_config(config_file)
    port = config.exporter.port
    supervisor = subprocess.Popen([sys.executable, "-m", "cli.main", "--config", str(config_file), "collect"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def serving() -> bool:
        try:
            return "kpulse_collector_up" in urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                                                  timeout=5).read().decode()
        except OSError:
            return False

    def wait(check, timeout=60):
        deadline = time.monotonic() + timeout
        while not check():
            assert time.monotonic() < deadline, "timed out"
            time.sleep(0.5)

    try:
        wait(serving)
        [first] = psutil.Process(supervisor.pid).children()
        environ = first.environ()  # the loop's environment (cli.collect)
        assert environ.get("MALLOC_ARENA_MAX") == "2" and environ.get("ARROW_DEFAULT_MEMORY_POOL") == "system"
        first.send_signal(signal.SIGSEGV)  # what a crash in the native client library looks like
        wait(lambda: [c.pid for c in psutil.Process(supervisor.pid).children()] not in ([], [first.pid]))
        wait(serving)
    finally:
        supervisor.send_signal(signal.SIGTERM)
        out, err = supervisor.communicate(timeout=60)
    assert supervisor.returncode == 0, err
    assert "collector process died (signal SIGSEGV); restarting" in out
    rows = read_table(config.lake.path, "collector_status")
    crash = rows[rows["collector"] == "kpulse-collect"]
    assert len(crash) == 1 and not crash["up"].iloc[0] and "SIGSEGV" in crash["error"].iloc[0]


def test_the_published_snapshot_is_plain_json_whatever_the_values():
    from datetime import datetime

    from kpulse.snapshot import to_json

    since = datetime(2026, 11, 24, 3, 0, tzinfo=UTC)
    text = to_json({"time": 1.5, "lag_seconds": float("nan"), "since": since, "by_broker": {1: "up"},
                    "offset": 2**62})
    assert json.loads(text) == {"time": 1.5, "lag_seconds": None, "since": str(since), "by_broker": {"1": "up"},
                                "offset": 2**62}


@pytest.mark.cluster
def test_a_killed_collection_loop_leaves_a_lake_gap_and_its_firing_alert_keeps_its_since(local_cluster, tmp_path):
    """kill -9 of the loop (not the supervisor): the rows it had buffered since its last flush are
    a ``lake_gap`` row covering that interval, and an alert firing before the kill fires after the
    restart with the same ``since``."""
    import psutil

    from tests.support import admin_for, commit, create_topic, produce

    bootstrap = local_cluster.layout.bootstrap_servers
    admin = admin_for(bootstrap)
    create_topic(admin, "crash.stopped", 1)
    produce(bootstrap, "crash.stopped", {0: 20}, first_ms=int(time.time() * 1000) - 60_000, step_ms=100)
    commit(admin, "crash-stopped", {("crash.stopped", 0): 5})  # no members, offset still: STOP
    lake = tmp_path / "lake"
    port = free_port()
    config_path = tmp_path / "kpulse.yaml"
    config_path.write_text(yaml.safe_dump({
        "clusters": [{"name": "test", "bootstrap_servers": bootstrap,
                      "consumer_groups": {"include": ["crash-stopped"]}}],
        "lake": {"path": str(lake)}, "intervals": {"collect_seconds": 1},
        "exporter": {"port": port, "host": "127.0.0.1"}}))
    snapshot_file = lake / "_snapshots" / "test.json"

    def stopped_alert():
        try:
            alerts = json.loads(snapshot_file.read_text())["alerts"]
        except (OSError, ValueError, KeyError):
            return None
        return next((a for a in alerts if a["rule"] == "ConsumerGroupStatus"
                     and a["entity"] == "group/crash-stopped"), None)

    def wait(check, timeout=90):
        deadline = time.monotonic() + timeout
        while not (found := check()):
            assert time.monotonic() < deadline, "timed out"
            time.sleep(0.2)
        return found

    supervisor = subprocess.Popen([sys.executable, "-m", "cli.main", "--config", str(config_path), "collect"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        before = wait(stopped_alert)
        time.sleep(4)  # a few more cycles, buffered and not flushed yet (the lake is flushed once a minute)
        [child] = psutil.Process(supervisor.pid).children()
        killed_at = time.time()
        child.send_signal(signal.SIGKILL)
        wait(lambda: [c.pid for c in psutil.Process(supervisor.pid).children()] not in ([], [child.pid]))
        restarted = time.time()
        after = wait(lambda: (a := stopped_alert()) and json.loads(snapshot_file.read_text())["time"] > restarted
                     and a)
    finally:
        supervisor.send_signal(signal.SIGTERM)
        out, err = supervisor.communicate(timeout=60)
    assert supervisor.returncode == 0, err
    assert "collector process died (signal SIGKILL)" in out
    assert after["since"] == before["since"] and after["severity"] == before["severity"]
    events = read_table(str(lake), "alert_event")
    mine = events[events["entity"] == "group/crash-stopped"]
    assert list(mine["state"]) == ["firing"], mine  # announced once, not again after the restart

    gaps = read_table(str(lake), "lake_gap")
    health_gap = gaps[gaps["table_name"] == "cluster_health"]
    assert len(health_gap) == 1, gaps
    gap = health_gap.iloc[0]
    assert "SIGKILL" in gap["reason"] and gap["rows_dropped"] >= 3
    assert gap["first_time"].timestamp() < killed_at - 3 and killed_at <= gap["last_time"].timestamp() < restarted
    health = read_table(str(lake), "cluster_health")
    before_gap = health[health["time"] <= gap["first_time"]]
    inside = health[(health["time"] > gap["first_time"]) & (health["time"] < gap["last_time"])]
    assert len(before_gap) >= 1 and inside.empty  # the rows written end where the gap begins
