"""The metadata collector agrees with the official kafka-topics (and, for every partition's
oldest and newest offset, kafka-get-offsets) on a real cluster, healthy and with a broker killed."""

from __future__ import annotations

import time

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from collectors.cluster.cluster_metadata import ClusterMetadataCollector
from collectors.protocol import CollectContext
from kpulse.config import parse_config
from tests.conftest import kpulse, start_broker_and_restore_leaders
from tests.support import admin_for, described_partitions, fill_topic, official

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def cluster_config(local_cluster, tmp_path_factory):
    layout = local_cluster.layout
    data = {"clusters": [{"name": "test", "bootstrap_servers": layout.bootstrap_servers,
                          "metrics": {"source": "jmx_exporter",
                                      "broker_endpoints": {n.node_id: n.metrics_url for n in layout.nodes}}}]}
    return parse_config(data, source="test", base_dir=tmp_path_factory.mktemp("cfg")).cluster(None)


def collect(collector, config):
    return collector.collect(CollectContext(config, time.time())).sections["cluster"]


def official_counts(bootstrap: str) -> tuple[int, int, int]:
    """(under-replicated, unavailable, under-min-ISR) partitions as kafka-topics lists them, all topics."""
    under_replicated, unavailable, under_min_isr = (
        len(described_partitions(bootstrap, flag, None)) for flag in
        ("--under-replicated-partitions", "--unavailable-partitions", "--under-min-isr-partitions"))
    return under_replicated, unavailable, under_min_isr


def test_a_healthy_cluster_has_no_problem_partitions_and_every_broker_up(cluster_config, bootstrap):
    section = collect(ClusterMetadataCollector(cluster_config), cluster_config)
    assert [b["id"] for b in section["brokers"] if b["up"]] == [1, 2, 3]
    ours = (section["under_replicated_partitions"], section["offline_partitions"], section["under_min_isr_partitions"])
    assert ours == official_counts(bootstrap)
    assert ours[:2] == (0, 0)
    assert sum(b["leader_count"] for b in section["broker_load"]) == section["partition_count"]


def official_offsets(bootstrap: str, time_spec: str) -> dict[tuple[str, int], int]:
    """``kafka-get-offsets --time <spec>`` over every topic, internal ones included."""
    text = official("kafka-get-offsets", "--bootstrap-server", bootstrap, "--time", time_spec)
    assert not text.startswith("EXIT"), text
    return {(topic, int(number)): int(offset) for topic, number, offset in (line.rsplit(":", 2) for line in text.split())}


def test_every_partition_of_every_topic_has_its_replicas_and_offsets_as_the_official_tools_give_them(
        cluster_config, bootstrap):
    from confluent_kafka import TopicPartition

    fill_topic(bootstrap, "meta.offsets", {0: 10, 1: 4})
    trimmed = TopicPartition("meta.offsets", 0, 6)
    admin = admin_for(bootstrap)  # kept: a future of an admin client gone is never answered
    admin.delete_records([trimmed], request_timeout=15)[trimmed].result(timeout=20)

    section = collect(ClusterMetadataCollector(cluster_config), cluster_config)
    ours = {(topic["name"], p["partition"]): p for topic in section["topics"] for p in topic["partitions"]}
    described = {(row["Topic"], int(row["Partition"])): row for row in described_partitions(bootstrap, "", None)}

    assert set(ours) == set(described) and ("__consumer_offsets", 0) in ours  # internal topics too
    assert {key: (p["leader"], p["replicas"], p["isr"]) for key, p in ours.items()} == {
        key: (int(row["Leader"]), [int(b) for b in row["Replicas"].split(",")], [int(b) for b in row["Isr"].split(",")])
        for key, row in described.items()}
    ends, starts = official_offsets(bootstrap, "-1"), official_offsets(bootstrap, "-2")
    assert set(ends) == set(starts) == set(ours)
    assert all(p["log_start_offset"] is not None and p["log_end_offset"] is not None and "reasons" not in p
               for p in ours.values())
    # nothing writes to the cluster meanwhile but the offsets commits: the test's own topic is steady
    assert [(ours[("meta.offsets", n)]["log_start_offset"], ours[("meta.offsets", n)]["log_end_offset"])
            for n in (0, 1)] == [(starts[("meta.offsets", n)], ends[("meta.offsets", n)]) for n in (0, 1)] == [
        (6, 10), (0, 4)]


def test_after_killing_a_broker_the_counts_equal_what_kafka_topics_lists(cluster_config, bootstrap):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [NewTopic("meta.rf3", num_partitions=6, replication_factor=3, config={"min.insync.replicas": "3"}),
              # min.insync.replicas=1: with the cluster's 2, a single replica is under min ISR for
              # good, and every later test of cluster-wide partition health would see it
              NewTopic("meta.rf1", num_partitions=3, replica_assignment=[[1], [2], [3]],
                       config={"min.insync.replicas": "1"})]
    for future in admin.create_topics(topics).values():
        try:
            future.result(30)
        except Exception:  # noqa: BLE001 - already there from a rerun
            pass
    collector = ClusterMetadataCollector(cluster_config)
    collect(collector, cluster_config)
    kpulse("cluster", "kill-broker", "1")
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                section = collect(collector, cluster_config)
            except Exception:  # noqa: BLE001 - a cycle may time out while the cluster notices the loss
                if time.monotonic() > deadline:
                    raise
                continue
            official = official_counts(bootstrap)
            ours = (section["under_replicated_partitions"], section["offline_partitions"],
                    section["under_min_isr_partitions"])
            settled = ours == official and section["offline_partitions"] >= 1
            if settled or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert ours == official, f"kpulse {ours} != kafka-topics {official}"
        assert section["offline_partitions"] >= 1  # meta.rf1 partition 0 lives only on broker 1
        assert section["under_min_isr_partitions"] >= 6  # meta.rf3 wants all three in sync
        assert {b["id"]: b["up"] for b in section["brokers"]}[1] is False
        problems = {(p["topic"], p["partition"]): p["problems"] for p in section["problem_partitions"]}
        assert "offline" in problems[("meta.rf1", 0)]
    finally:
        start_broker_and_restore_leaders(1, bootstrap)
