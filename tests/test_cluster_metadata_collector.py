"""The metadata collector agrees with the official kafka-topics on a real cluster, healthy and
with a broker killed."""

from __future__ import annotations

import time

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from collectors.cluster.cluster_metadata import ClusterMetadataCollector
from collectors.protocol import CollectContext
from kpulse.config import parse_config
from tests.conftest import kpulse, start_broker_and_restore_leaders
from tests.support import described_partitions

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
