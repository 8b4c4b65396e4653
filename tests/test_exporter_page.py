"""The exporter's page as ``kpulse collect`` serves it: rendered once per snapshot
(``SnapshotExporter.text``), the same series prometheus_client's own rendering of the families
gives (hostile group names included), the ``group`` granularity without the per-partition series,
and the HTTP server answering the newest page. Pure: no Kafka (the live tests of the collector
scrape the same server)."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from exporters.prometheus import PARTITION_SERIES, SnapshotExporter, serve
from kpulse.config import load_config
from tests.support import wait_for

HOSTILE = 'odd "group"\\with\na newline'


def snapshot(groups: list[str], lag: int = 5) -> dict:
    return {"time": 1.0, "cluster_name": "prod",
            "cluster": {"brokers_up": 3, "brokers_total": 3},
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
    exporter = SnapshotExporter(granularity=granularity)
    exporter.update(snapshot(["orders-app", HOSTILE]))

    text = exporter.text().decode()
    rendered = samples(text)

    assert rendered == samples(from_families(exporter))
    # written as prometheus_client writes them: labels sorted by name, values as Go floats
    assert set(text.splitlines()) == set(from_families(exporter).splitlines())
    assert rendered[("kafka_consumergroup_lag_sum", (("cluster", "prod"), ("consumergroup", HOSTILE)))] == 10
    delivery = (("alertmanager", "http://am:9093"), ("cluster", "prod"))
    assert (rendered[("kpulse_alertmanager_notifications_sent_total", delivery)],
            rendered[("kpulse_alertmanager_notifications_failed_total", delivery)],
            rendered[("kpulse_alertmanager_up", delivery)]) == (12, 3, 0)
    assert "# TYPE kpulse_alertmanager_notifications_failed_total counter" in text


def test_group_granularity_drops_the_per_partition_series_and_keeps_the_group_ones():
    by_partition, by_group = SnapshotExporter("partition"), SnapshotExporter("group")
    for exporter in (by_partition, by_group):
        exporter.update(snapshot(["orders-app"]))

    names_partition = {name for name, _ in samples(by_partition.text().decode())}
    names_group = {name for name, _ in samples(by_group.text().decode())}

    assert set(PARTITION_SERIES) <= names_partition
    assert names_group == names_partition - set(PARTITION_SERIES)
    assert {"kafka_consumergroup_lag_sum", "kpulse_consumergroup_lag_seconds", "kpulse_sharegroup_lag_sum",
            "kafka_topic_partition_current_offset"} <= names_group


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
