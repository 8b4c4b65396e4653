"""The exporter's page on the real cluster with the demo workload running, as ``kpulse collect``
renders it from a snapshot of the demo (three cycles a second apart, as ``kpulse collect --once``;
both peers' sets on): ``promtool check metrics`` finds no problem, kafka_exporter's topic series
cover every partition of every topic the Admin API lists (internal ones included, not only the
partitions some group reads), and kafka-lag-exporter's series label the demo's consumers with their
members. The HTTP serving and the exact names are tested without Kafka in
``tests/test_exporter_page.py``."""

from __future__ import annotations

import subprocess
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from collectors.runner import CollectionService
from exporters.prometheus import COMPATIBILITIES, KAFKA_EXPORTER_SERIES, LAG_EXPORTER_SERIES, SnapshotExporter
from kpulse.config import parse_config
from kpulse.snapshot import to_json
from tests.conftest import ARTIFACTS
from tests.prometheus_server import binary
from tests.support import admin_for

pytestmark = pytest.mark.cluster

CLUSTER = "demo"
SAVED = ARTIFACTS / "exporter"
HEALTHY_GROUP = "demo-healthy"
"""A classic group of the demo with a member reading demo.payments (localkafka/demo/topology.py)."""


def partitions_listed(admin) -> frozenset[tuple[str, str]]:
    """Every (topic, partition) of the cluster, as the Admin API lists them."""
    return frozenset((name, str(number)) for name, topic in admin.list_topics(timeout=30).topics.items()
                     for number in topic.partitions)


@pytest.fixture(scope="module")
def demo_page(local_cluster, demo_workload, tmp_path_factory):
    """(The page of a snapshot of the demo, the snapshot, the partitions the cluster had then) once
    the demo's healthy group has members and no topic came or went during the last cycle (the
    Streams apps create theirs as they start)."""
    layout = local_cluster.layout
    directory = tmp_path_factory.mktemp("exporter-live")
    config = parse_config({
        "clusters": [{"name": CLUSTER, "bootstrap_servers": layout.bootstrap_servers,
                      "metrics": {"source": "jmx_exporter", "timeout_seconds": 10,
                                  "broker_endpoints": {n.node_id: n.metrics_url for n in layout.nodes}},
                      "streams_apps": [{"application_id": "kpulse-demo-streams", "expected_instances": 2,
                                        "metrics_endpoints": [f"http://127.0.0.1:{layout.streams_metrics_port(j)}"
                                                              "/metrics" for j in (1, 2)]}]}],
        "lake": {"path": str(directory / "lake")}}, source="test", base_dir=directory, environ={})
    service = CollectionService(config, deliver_alerts=False)
    admin = admin_for(layout.bootstrap_servers)
    try:
        deadline = time.monotonic() + 120
        readings = 0
        while True:  # three readings a second apart (status and time lag need them), the group formed
            before = partitions_listed(admin)
            snapshot = service.cycle().snapshots[CLUSTER]
            listed = partitions_listed(admin)
            readings += 1
            groups = {g["group_id"]: g for g in snapshot["consumer_groups"]}
            if readings >= 3 and (groups.get(HEALTHY_GROUP) or {}).get("member_details") and before == listed:
                break
            assert time.monotonic() < deadline, f"the demo's {HEALTHY_GROUP} has no members: {sorted(groups)}"
            time.sleep(1)
    finally:
        service.close()
    exporter = SnapshotExporter(compatibility=COMPATIBILITIES)
    exporter.update(snapshot)
    text = exporter.text().decode()
    SAVED.mkdir(parents=True, exist_ok=True)  # to read after the run: the demo's page and its snapshot
    (SAVED / "demo-metrics.txt").write_text(text)
    (SAVED / "demo-snapshot.json").write_bytes(to_json(snapshot))
    return text, snapshot, listed


def samples(text: str, name: str) -> list:
    return [s for family in text_string_to_metric_families(text) for s in family.samples if s.name == name]


def test_promtool_check_metrics_finds_no_problem_on_the_demos_page(demo_page):
    text, _, _ = demo_page
    checked = subprocess.run([binary("promtool"), "check", "metrics"], input=text, capture_output=True, text=True,
                             timeout=60)
    assert (checked.returncode, checked.stdout + checked.stderr) == (0, "")


def test_kafka_exporters_topic_series_cover_every_partition_of_every_topic_the_cluster_has(demo_page):
    text, _, listed = demo_page
    assert ("__consumer_offsets", "0") in listed and ("kpulse-probe", "0") in listed

    for name in ("kafka_topic_partition_current_offset", "kafka_topic_partition_oldest_offset",
                 "kafka_topic_partition_leader", "kafka_topic_partition_replicas",
                 "kafka_topic_partition_in_sync_replica", "kafka_topic_partition_leader_is_preferred",
                 "kafka_topic_partition_under_replicated_partition"):
        served = {(s.labels["topic"], s.labels["partition"]) for s in samples(text, name)}
        assert served == listed, (name, sorted(listed ^ served)[:10])
    topics = {topic for topic, _ in listed}
    assert {s.labels["topic"]: s.value for s in samples(text, "kafka_topic_partitions")} == {
        topic: sum(1 for name, _ in listed if name == topic) for topic in topics}
    names = {family.name for family in text_string_to_metric_families(text)}
    assert set(KAFKA_EXPORTER_SERIES) <= names and set(LAG_EXPORTER_SERIES) <= names


def test_kafka_lag_exporters_series_label_each_partition_with_the_member_assigned_it(demo_page):
    text, snapshot, _ = demo_page
    group = next(g for g in snapshot["consumer_groups"] if g["group_id"] == HEALTHY_GROUP)
    known = {(p["topic"], str(p["partition"])) for p in group["partitions"] if p["lag"] is not None}
    owners = {(topic, str(number)): (m["client_host"], m["member_id"], m["client_id"])
              for m in group["member_details"] for topic, numbers in m["assignment"].items() for number in numbers
              if (topic, str(number)) in known}  # a partition without a commit has no lag: absent, not NaN
    served = {(s.labels["topic"], s.labels["partition"]): (s.labels["member_host"], s.labels["consumer_id"],
                                                           s.labels["client_id"])
              for s in samples(text, "kafka_consumergroup_group_lag") if s.labels["group"] == HEALTHY_GROUP}
    assert served == owners and owners
    assert {s.labels["cluster_name"] for s in samples(text, "kafka_consumergroup_group_max_lag_seconds")} == {CLUSTER}
