"""The exporter's page as ``kpulse collect`` serves it: rendered once per snapshot
(``SnapshotExporter.text``), the same series prometheus_client's own rendering of the families
gives (hostile group names included), the ``group`` granularity without the per-partition series,
the HTTP server answering the newest page, of every cluster or of one. The peers' series with their
names, labels and help as their sources declare them (kafka_exporter's ``kafka_exporter.go`` and
kafka-lag-exporter's ``Metrics.scala``, transcribed below with their commits), and the whole page
as ``promtool check metrics`` wants it. Pure: no Kafka (``tests/test_exporter_live.py`` scrapes the
demo's)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import urllib.error
import urllib.request
from typing import cast

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from exporters.lake_status import LakeStatusExporter
from exporters.prometheus import COMPATIBILITIES, PARTITION_SERIES, SnapshotExporter, serve
from exporters.slo_status import families as slo_families
from kpulse.config import load_config
from kpulse.lake.store import LakeWriter
from kpulse.snapshot import Snapshot
from tests.prometheus_server import binary
from tests.support import wait_for

HOSTILE = 'odd "group"\\with\na newline'


def snapshot(groups: list[str], lag: int = 5) -> dict:
    return {"time": 1.0, "cluster_name": "prod",
            "cluster": {"brokers_up": 3, "brokers_total": 3,
                        "topics": [{"name": "orders", "partitions": [
                            {"partition": p, "leader": 1, "replicas": [1, 2], "isr": [1, 2], "log_start_offset": 0,
                             "log_end_offset": 1_234_567 + lag} for p in range(2)]}]},
            "consumer_groups": [{"group_id": g, "type": "classic", "protocol_type": "consumer", "state": "Stable",
                                 "members": 1, "total_lag": 2 * lag, "lag_unknown_partitions": 0,
                                 "max_lag_seconds": 1.5, "lag_seconds_unknown_partitions": 0, "status": "OK",
                                 "partitions": [{"topic": "orders", "partition": p, "committed_offset": 1_234_567,
                                                 "log_end_offset": 1_234_567 + lag, "lag": lag, "lag_seconds": 1.5}
                                                for p in range(2)]} for g in groups],
            "share_groups": {"read_at": 1.0, "read_seconds": 0.1, "groups": [
                {"group_id": "sg", "state": "Stable", "members": 1, "total_lag": 3, "lag_unknown_partitions": 0,
                 "status": "OK", "partitions": [{"topic": "orders", "partition": 0, "lag": 3, "start_offset": 7}]}]},
            "collectors": [{"name": "consumer_lag", "up": True, "duration_seconds": 0.2}],
            "alert_delivery": [{"alertmanager": "http://am:9093", "up": False, "sent_total": 12, "failed_total": 3,
                                "pending": 2, "last_sent_at": 0.5, "last_error": "refused", "last_error_at": 0.9,
                                "next_attempt_at": 60.9}]}


def samples(text: str) -> dict[tuple[str, tuple], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def from_families(exporter: SnapshotExporter) -> str:
    registry = CollectorRegistry()
    registry.register(exporter)
    return generate_latest(registry).decode()


@pytest.mark.parametrize("granularity", ["partition", "group"])
def test_the_rendered_page_has_the_same_series_as_the_families(granularity):
    exporter = SnapshotExporter(granularity=granularity, compatibility=COMPATIBILITIES)
    exporter.update(snapshot(["orders-app", HOSTILE]))

    text = exporter.text().decode()
    rendered = samples(text)

    assert rendered == samples(from_families(exporter))
    # written as prometheus_client writes them: labels sorted by name, values as Go floats
    assert set(text.splitlines()) == set(from_families(exporter).splitlines())
    assert rendered[("kafka_consumergroup_lag_sum", (("cluster", "prod"), ("consumergroup", HOSTILE),
                                                     ("topic", "orders")))] == 10
    assert rendered[("kpulse_consumergroup_lag", (("cluster", "prod"), ("consumergroup", HOSTILE)))] == 10
    delivery = (("alertmanager", "http://am:9093"), ("cluster", "prod"))
    assert (rendered[("kpulse_alertmanager_notifications_sent_total", delivery)],
            rendered[("kpulse_alertmanager_notifications_failed_total", delivery)],
            rendered[("kpulse_alertmanager_up", delivery)]) == (12, 3, 0)
    assert "# TYPE kpulse_alertmanager_notifications_failed_total counter" in text
    assert "# TYPE kafka_consumergroup_lag_sum untyped" in text


def test_group_granularity_drops_the_per_partition_series_and_keeps_the_group_ones():
    by_partition = SnapshotExporter("partition", compatibility=COMPATIBILITIES)
    by_group = SnapshotExporter("group", compatibility=COMPATIBILITIES)
    for exporter in (by_partition, by_group):
        exporter.update(snapshot(["orders-app"]))

    names_partition = {name for name, _ in samples(by_partition.text().decode())}
    names_group = {name for name, _ in samples(by_group.text().decode())}

    assert set(PARTITION_SERIES) <= names_partition
    assert names_group == names_partition - set(PARTITION_SERIES)
    assert {"kafka_consumergroup_lag_sum", "kpulse_consumergroup_lag", "kpulse_consumergroup_lag_seconds",
            "kpulse_sharegroup_lag", "kafka_topic_partition_current_offset", "kafka_consumergroup_group_max_lag",
            "kafka_partition_latest_offset"} <= names_group


def test_an_unknown_granularity_is_refused():
    with pytest.raises(ValueError, match="granularity must be one of partition, group, got 'topic'"):
        SnapshotExporter(granularity="topic")


def test_the_granularity_is_read_from_kpulse_yaml(tmp_path):
    path = tmp_path / "kpulse.yaml"
    path.write_text("clusters: [{name: prod, bootstrap_servers: 'kafka:9092'}]\nexporter: {granularity: group}\n")
    assert load_config(path, environ={}).exporter.granularity == "group"
    path.write_text("clusters: [{name: prod, bootstrap_servers: 'kafka:9092'}]\n")
    assert load_config(path, environ={}).exporter.granularity == "partition"


def test_the_page_is_rendered_again_only_for_a_new_snapshot():
    exporter = SnapshotExporter()
    exporter.update(snapshot(["a"], lag=5))
    first = exporter.text()

    assert exporter.text() is first  # the same bytes, not a new rendering
    exporter.update(snapshot(["a"], lag=9))
    assert samples(exporter.text().decode())[
        ("kafka_consumergroup_lag", (("cluster", "prod"), ("consumergroup", "a"), ("partition", "0"),
                                     ("topic", "orders")))] == 9


def test_the_server_answers_the_newest_snapshot_and_the_extra_registry():
    exporter = SnapshotExporter()
    exporter.update(snapshot(["a"], lag=5))
    extra = CollectorRegistry()
    from prometheus_client import Gauge

    Gauge("kpulse_test_extra", "an extra registry's series", registry=extra).set(3)
    server, thread = serve(exporter, port=0, host="127.0.0.1", registry=extra)
    url = f"http://127.0.0.1:{server.server_port}/metrics"
    lag = ("kafka_consumergroup_lag", (("cluster", "prod"), ("consumergroup", "a"), ("partition", "1"),
                                       ("topic", "orders")))
    try:
        def scraped() -> dict:
            with urllib.request.urlopen(url, timeout=10) as answer:
                assert answer.headers["Content-Type"].startswith("text/plain")
                return samples(answer.read().decode())

        page = scraped()
        assert page[lag] == 5 and page[("kpulse_test_extra", ())] == 3
        exporter.update(snapshot(["a"], lag=9))  # rendered in the background; scrapes meanwhile get the last page
        wait_for(lambda: scraped()[lag] == 9, timeout=30, what="the new snapshot on /metrics")
        with pytest.raises(urllib.error.HTTPError, match="404"):
            urllib.request.urlopen(f"http://127.0.0.1:{server.server_port}/other", timeout=10)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


# --- kafka_exporter's and kafka-lag-exporter's series, as their sources declare them ------------------

KAFKA_EXPORTER = {  # kafka_exporter.go of danielqsj/kafka_exporter, commit 953e2f1: name -> (labels, help)
    "kafka_brokers": ((), "Number of Brokers in the Kafka Cluster."),
    "kafka_broker_info": (("id", "address"), "Information about the Kafka Broker."),
    "kafka_topic_partitions": (("topic",), "Number of partitions for this Topic"),
    "kafka_topic_partition_current_offset": (("topic", "partition"), "Current Offset of a Broker at Topic/Partition"),
    "kafka_topic_partition_oldest_offset": (("topic", "partition"), "Oldest Offset of a Broker at Topic/Partition"),
    "kafka_topic_partition_leader": (("topic", "partition"), "Leader Broker ID of this Topic/Partition"),
    "kafka_topic_partition_replicas": (("topic", "partition"), "Number of Replicas for this Topic/Partition"),
    "kafka_topic_partition_in_sync_replica": (("topic", "partition"),
                                              "Number of In-Sync Replicas for this Topic/Partition"),
    "kafka_topic_partition_leader_is_preferred": (("topic", "partition"),
                                                  "1 if Topic/Partition is using the Preferred Broker"),
    "kafka_topic_partition_under_replicated_partition": (("topic", "partition"),
                                                         "1 if Topic/Partition is under Replicated"),
    "kafka_consumergroup_current_offset": (("consumergroup", "topic", "partition"),
                                           "Current Offset of a ConsumerGroup at Topic/Partition"),
    "kafka_consumergroup_current_offset_sum": (("consumergroup", "topic"),
                                               "Current Offset of a ConsumerGroup at Topic for all partitions"),
    "kafka_consumergroup_lag": (("consumergroup", "topic", "partition"),
                                "Current Approximate Lag of a ConsumerGroup at Topic/Partition"),
    "kafka_consumergroup_lag_sum": (("consumergroup", "topic"),
                                    "Current Approximate Lag of a ConsumerGroup at Topic for all partitions"),
    "kafka_consumergroup_members": (("consumergroup",), "Amount of members in a consumer group"),
}
"""Its 16 metrics but kafka_consumergroupzookeeper_lag_zookeeper (ZooKeeper's offsets); kpulse adds ``cluster``."""
GTP = ("cluster_name", "group", "topic", "partition", "member_host", "consumer_id", "client_id")
LAG_EXPORTER = {  # Metrics.scala of seglo/kafka-lag-exporter, commit 3fcb3c7: name -> (labels, help)
    "kafka_partition_latest_offset": (("cluster_name", "topic", "partition"), "Latest offset of a partition"),
    "kafka_partition_earliest_offset": (("cluster_name", "topic", "partition"), "Earliest offset of a partition"),
    "kafka_consumergroup_group_max_lag": (("cluster_name", "group"), "Max group offset lag"),
    "kafka_consumergroup_group_max_lag_seconds": (("cluster_name", "group"), "Max group time lag"),
    "kafka_consumergroup_group_offset": (GTP, "Last group consumed offset of a partition"),
    "kafka_consumergroup_group_lag": (GTP, "Group offset lag of a partition"),
    "kafka_consumergroup_group_lag_seconds": (GTP, "Group time lag of a partition"),
    "kafka_consumergroup_group_sum_lag": (("cluster_name", "group"), "Sum of group offset lag"),
    "kafka_consumergroup_group_topic_sum_lag": (("cluster_name", "group", "topic"),
                                                "Sum of group offset lag across topic partitions"),
}
"""Its 10 metrics but kafka_consumergroup_poll_time_ms (an abbreviated unit: promtool refuses it)."""


def partition(number, leader, replicas, isr, start, end):
    return {"partition": number, "leader": leader, "replicas": replicas, "isr": isr, "log_start_offset": start,
            "log_end_offset": end}


def cluster_snapshot(name: str = "prod") -> dict:
    """A cluster of three brokers (one down), topic ``orders`` (a partition led by its preferred
    replica, one not and under-replicated, one offline whose offsets could not be read), the internal
    ``__consumer_offsets`` that no group reads, and two groups: ``app`` with one member assigned
    orders 0 and 1 (its commit on orders 2 is left from before), ``idle`` without members."""
    unread = {"log_start_offset": "no leader", "log_end_offset": "no leader"}
    return {
        "time": 1.0, "cluster_name": name,
        "cluster": {"brokers_up": 2, "brokers_total": 3, "brokers": [
            {"id": 1, "up": True, "address": "kafka-1:9092"}, {"id": 2, "up": True, "address": "kafka-2:9092"},
            {"id": 3, "up": False, "address": None}],
            "topics": [{"name": "__consumer_offsets", "partitions": [partition(0, 2, [2, 1], [2, 1], 0, 77)]},
                       {"name": "orders", "partitions": [
                           partition(0, 1, [1, 2], [1, 2], 5, 50), partition(1, 1, [2, 1], [1], 0, 7),
                           {**partition(2, None, [3], [], None, None), "reasons": unread}]}]},
        "consumer_groups": [
            {"group_id": "app", "type": "classic", "protocol_type": "consumer", "state": "Stable", "members": 1,
             "total_lag": 12, "max_lag_seconds": 4.0, "status": "OK",
             "member_details": [{"member_id": "m-1", "client_id": "app-client", "client_host": "/10.0.0.1",
                                 "assignment": {"orders": [0, 1]}}],
             "partitions": [
                 {"topic": "orders", "partition": 0, "committed_offset": 40, "log_end_offset": 50, "lag": 10,
                  "lag_seconds": 4.0},
                 {"topic": "orders", "partition": 1, "committed_offset": 5, "log_end_offset": 7, "lag": 2,
                  "lag_seconds": None},
                 {"topic": "orders", "partition": 2, "committed_offset": 3, "log_end_offset": None, "lag": None,
                  "lag_seconds": None}]},
            {"group_id": "idle", "type": "classic", "protocol_type": "consumer", "state": "Empty", "members": 0,
             "total_lag": 45, "max_lag_seconds": 60.0, "status": "STOP", "member_details": [],
             "partitions": [{"topic": "orders", "partition": 0, "committed_offset": 5, "log_end_offset": 50,
                             "lag": 45, "lag_seconds": 60.0},
                            {"topic": "orders", "partition": 1, "committed_offset": None, "log_end_offset": 7,
                             "lag": None, "lag_seconds": None}]}],
        "streams_apps": [], "share_groups": None, "probe": None, "alerts": [], "collectors": []}


def families_of(text: str) -> dict:
    return {family.name if family.type != "counter" else f"{family.name}_total": family
            for family in text_string_to_metric_families(text)}


def page(*compatibility: str, granularity: str = "partition", snapshots=None) -> str:
    exporter = SnapshotExporter(granularity, compatibility=compatibility)
    for each in snapshots or (cluster_snapshot(),):
        exporter.update(cast(Snapshot, each))
    return exporter.text().decode()


def values(text: str, name: str) -> dict[tuple, float]:
    """``name``'s samples: the labels but ``cluster`` (sorted by name) -> value."""
    return {tuple((k, v) for k, v in sorted(s.labels.items()) if k != "cluster"): s.value
            for family in text_string_to_metric_families(text) for s in family.samples if s.name == name}


def test_kafka_exporters_15_metrics_with_its_names_labels_and_help_and_nothing_else_of_its_prefix():
    found = {name: family for name, family in families_of(page("kafka_exporter")).items()
             if name.startswith("kafka_")}

    assert sorted(found) == sorted(KAFKA_EXPORTER)
    for name, (labels, help_text) in KAFKA_EXPORTER.items():
        assert found[name].documentation == help_text, name
        assert {tuple(sorted(s.labels)) for s in found[name].samples} == {tuple(sorted(("cluster", *labels)))}, name


def test_every_partition_of_every_topic_internal_ones_included_has_kafka_exporters_topic_series():
    text = page("kafka_exporter")
    orders, offsets = (("partition", "{}"), ("topic", "orders")), (("partition", "0"), ("topic", "__consumer_offsets"))

    def of(p):
        return tuple((k, v.format(p)) for k, v in orders)

    assert values(text, "kafka_topic_partitions") == {(("topic", "__consumer_offsets"),): 1, (("topic", "orders"),): 3}
    assert values(text, "kafka_topic_partition_current_offset") == {offsets: 77, of(0): 50, of(1): 7}  # p2 unread
    assert values(text, "kafka_topic_partition_oldest_offset") == {offsets: 0, of(0): 5, of(1): 0}
    assert values(text, "kafka_topic_partition_leader") == {offsets: 2, of(0): 1, of(1): 1}  # p2 has none
    assert values(text, "kafka_topic_partition_replicas") == {offsets: 2, of(0): 2, of(1): 2, of(2): 1}
    assert values(text, "kafka_topic_partition_in_sync_replica") == {offsets: 2, of(0): 2, of(1): 1, of(2): 0}
    assert values(text, "kafka_topic_partition_leader_is_preferred") == {offsets: 1, of(0): 1, of(1): 0, of(2): 0}
    assert values(text, "kafka_topic_partition_under_replicated_partition") == {offsets: 0, of(0): 0, of(1): 1,
                                                                              of(2): 1}
    assert values(text, "kafka_brokers") == {(): 2}
    assert values(text, "kafka_broker_info") == {(("address", "kafka-1:9092"), ("id", "1")): 1,
                                                 (("address", "kafka-2:9092"), ("id", "2")): 1}


def test_kafka_exporters_group_sums_are_per_group_and_topic_and_kpulses_own_are_per_group():
    text = page("kafka_exporter")
    app, idle = ("consumergroup", "app"), ("consumergroup", "idle")

    # kafka_exporter: over the partitions with a committed offset, the lag's over those whose lag is known
    assert values(text, "kafka_consumergroup_lag_sum") == {(app, ("topic", "orders")): 12,
                                                           (idle, ("topic", "orders")): 45}
    assert values(text, "kafka_consumergroup_current_offset_sum") == {(app, ("topic", "orders")): 48,
                                                                      (idle, ("topic", "orders")): 5}
    assert values(text, "kafka_consumergroup_members") == {(app,): 1, (idle,): 0}
    assert values(text, "kafka_consumergroup_current_offset") == {
        (app, ("partition", "0"), ("topic", "orders")): 40, (app, ("partition", "1"), ("topic", "orders")): 5,
        (app, ("partition", "2"), ("topic", "orders")): 3, (idle, ("partition", "0"), ("topic", "orders")): 5}
    assert values(text, "kpulse_consumergroup_lag") == {(app,): 12, (idle,): 45}
    assert values(text, "kpulse_consumergroup_lag_seconds") == {(app,): 4.0, (idle,): 60.0}


def test_without_kafka_exporter_in_the_compatibility_only_kpulses_own_series_are_served():
    names = set(families_of(page()))
    assert names and all(name.startswith("kpulse_") for name in names), sorted(names)


def test_kafka_lag_exporters_metrics_with_its_names_labels_help_and_semantics():
    text = page("kafka_exporter", "kafka_lag_exporter")
    found = {name: family for name, family in families_of(text).items() if name in LAG_EXPORTER}

    assert sorted(found) == sorted(LAG_EXPORTER)
    for name, (labels, help_text) in LAG_EXPORTER.items():
        assert found[name].documentation == help_text, name
        assert {tuple(sorted(s.labels)) for s in found[name].samples} == {tuple(sorted(labels))}, name
    member = (("client_id", "app-client"), ("cluster_name", "prod"), ("consumer_id", "m-1"), ("group", "app"),
              ("member_host", "/10.0.0.1"))
    unknown = (("client_id", "unknown"), ("cluster_name", "prod"), ("consumer_id", "unknown"), ("group", "idle"),
               ("member_host", "unknown"))

    def at(labels, p):
        return tuple(sorted((*labels, ("partition", str(p)), ("topic", "orders"))))

    # app's member owns orders 0 and 1 (its old commit on 2 is not served: only assigned partitions are);
    # idle has no member: its partitions with a committed offset, labelled unknown
    assert values(text, "kafka_consumergroup_group_offset") == {at(member, 0): 40, at(member, 1): 5,
                                                                at(unknown, 0): 5}
    assert values(text, "kafka_consumergroup_group_lag") == {at(member, 0): 10, at(member, 1): 2, at(unknown, 0): 45}
    assert values(text, "kafka_consumergroup_group_lag_seconds") == {at(member, 0): 4.0, at(unknown, 0): 60.0}
    app, idle = (("cluster_name", "prod"), ("group", "app")), (("cluster_name", "prod"), ("group", "idle"))
    assert values(text, "kafka_consumergroup_group_max_lag") == {app: 10, idle: 45}
    assert values(text, "kafka_consumergroup_group_max_lag_seconds") == {app: 4.0, idle: 60.0}
    assert values(text, "kafka_consumergroup_group_sum_lag") == {app: 12, idle: 45}
    assert values(text, "kafka_consumergroup_group_topic_sum_lag") == {(*app, ("topic", "orders")): 12,
                                                                       (*idle, ("topic", "orders")): 45}
    read = {(("cluster_name", "prod"), ("partition", str(p)), ("topic", "orders")) for p in (0, 1)}
    assert set(values(text, "kafka_partition_latest_offset")) == read  # only what groups read: not __consumer_offsets
    assert values(text, "kafka_partition_earliest_offset") == dict(zip(sorted(read), (5, 0)))
    assert not set(LAG_EXPORTER) & set(families_of(page("kafka_exporter")))  # off unless asked for


def slo_rows() -> list[dict]:
    from datetime import datetime, UTC

    return [{"cluster": "prod", "slo": "lag", "entity": "app", "sli": 0.99, "objective": 0.99,
             "error_budget_remaining": 0.5, "time_to_exhaustion_seconds": 3600.0, "bad_slices": 5,
             "allowed_bad_slices": 14.4, "coverage": 1.0, "valid_events": 1440, "min_events": None,
             "burn_rate_5m": 1.0, "alert": None, "budget_status": "ok", "time": datetime(2026, 1, 1, tzinfo=UTC)}]


def full_page() -> str:
    """Every series the exporter has: both peers' sets, kpulse's own (brokers, KRaft, groups, Streams,
    share groups, the probe, collectors, alerts, delivery) and the SLO series."""
    full = cluster_snapshot()
    full["brokers"] = [{"id": 1, "up": True, "partition_count": 3, "leader_count": 2, "request_handler_idle_ratio": 0.9,
                        "network_processor_idle_ratio": 0.8, "bytes_in_total": 10, "bytes_out_total": 20,
                        "messages_in_total": 1, "produce_p99_ms": 5.0, "fetch_p99_ms": 500.0,
                        "metadata_error_count": 0, "metadata_apply_lag_ms": 120.0}]
    full["cluster"].update(under_replicated_partitions=1, offline_partitions=1, under_min_isr_partitions=1,
                           active_controller_count=1, preferred_leader_imbalance=1, fenced_broker_count=0,
                           active_broker_count=2, quorum={"leader_id": 1, "leader_epoch": 3, "high_watermark": 9,
                                                          "voters": [{"id": 1, "lag": 0, "caught_up_age_seconds": 0.1}],
                                                          "observers": []})
    full["streams_apps"] = [{"application_id": "s", "protocol": "streams", "state": "RUNNING", "group_state": "Stable",
                             "members": 1, "group": {"group_epoch": 2, "assignment_epoch": 2, "topology_epoch": 1,
                                                     "total_lag": 3},
                             "instances": [{"id": "s-1", "state": "RUNNING"}]}]
    full["share_groups"] = snapshot(["x"])["share_groups"]
    full["probe"] = {"produce_availability": 1.0, "consume_availability": 1.0, "latency_p99_ms": 20.0,
                     "produced_total": 3, "consumed_total": 3, "lost_total": 0, "duplicated_total": 0}
    full["collectors"] = [{"name": "consumer_lag", "up": True, "duration_seconds": 0.2}]
    full["alerts"] = [{"rule": "ConsumerGroupStatus", "severity": "warning"}]
    full["alert_delivery"] = snapshot(["x"])["alert_delivery"]
    registry = CollectorRegistry()
    registry.register(type("Slo", (), {"collect": lambda self: slo_families(slo_rows())})())
    lake = LakeWriter(tempfile.mkdtemp(prefix="kpulse-exporter-page-"))
    lake.append("broker_state", [{"time": 1.7e9, "cluster": "c", "broker_id": 1, "up": True}])
    assert lake.flush().ok
    registry.register(LakeStatusExporter(lake))
    shutil.rmtree(lake.path)
    return page(*COMPATIBILITIES, snapshots=(full,)) + generate_latest(registry).decode()


def test_promtool_check_metrics_finds_no_problem_on_every_series_the_exporter_has():
    text = full_page()
    checked = subprocess.run([binary("promtool"), "check", "metrics"], input=text, capture_output=True, text=True,
                             timeout=60)

    assert (checked.returncode, checked.stdout + checked.stderr) == (0, "")
    names = set(families_of(text))
    assert {"kpulse_broker_produced_bytes_total", "kpulse_probe_lost_records_total", "kpulse_slo_bad_timeslices",
            "kafka_consumergroup_group_lag", "kafka_topic_partition_oldest_offset",
            "kpulse_lake_last_write_success_timestamp_seconds"} <= names  # the page is full


def test_no_series_has_a_label_of_prometheus_own_instance_or_job():
    labels = {label for family in text_string_to_metric_families(full_page()) for s in family.samples
              for label in s.labels}
    assert "streams_instance" in labels and not labels & {"instance", "job"}


def test_a_scrape_for_one_cluster_serves_only_that_clusters_series():
    exporter = SnapshotExporter()
    exporter.update(cluster_snapshot("prod"))
    exporter.update(cluster_snapshot("staging"))
    extra = CollectorRegistry()
    rows = slo_rows() + [{**slo_rows()[0], "cluster": "staging"}]
    extra.register(type("Slo", (), {"collect": lambda self: slo_families(rows)})())
    server, thread = serve(exporter, port=0, host="127.0.0.1", registry=extra)
    base = f"http://127.0.0.1:{server.server_port}/metrics"

    def clusters_in(url: str) -> set[str]:
        with urllib.request.urlopen(url, timeout=10) as answer:
            text = answer.read().decode()
        return {s.labels["cluster"] for family in text_string_to_metric_families(text) for s in family.samples}
    try:
        assert clusters_in(base) == {"prod", "staging"}
        assert clusters_in(f"{base}?cluster=staging") == {"staging"}  # the SLO series too
        assert clusters_in(f"{base}?cluster=prod") == {"prod"}
        with pytest.raises(urllib.error.HTTPError, match="404") as refused:
            urllib.request.urlopen(f"{base}?cluster=qa", timeout=10)
        assert "no cluster named 'qa' here (clusters: prod, staging)" in refused.value.read().decode()
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_the_compatibility_is_read_from_kpulse_yaml(tmp_path):
    path = tmp_path / "kpulse.yaml"
    path.write_text("clusters: [{name: prod, bootstrap_servers: 'kafka:9092'}]\n"
                    "exporter: {compatibility: [kafka_exporter, kafka_lag_exporter]}\n")
    assert load_config(path, environ={}).exporter.compatibility == ("kafka_exporter", "kafka_lag_exporter")
    path.write_text("clusters: [{name: prod, bootstrap_servers: 'kafka:9092'}]\n")
    assert load_config(path, environ={}).exporter.compatibility == ("kafka_exporter",)  # on by default
