"""The optional Kafka sink: rows reach their topics as JSON on the real cluster, and what cannot
be delivered is recorded as a lake gap instead of vanishing."""

from __future__ import annotations

import json
import time
from datetime import datetime, UTC

import pytest
from confluent_kafka import Consumer

from exporters.kafka_sink import GapLedger, KafkaSink, record_value
from kpulse.lake.reader import read_table
from kpulse.lake.store import LakeWriter
from collectors.runner import CollectionService
from kpulse.config import parse_config

T = 1_700_000_000.25


def test_a_row_becomes_json_with_utc_times_and_nulls():
    value = json.loads(record_value("consumer_group", {
        "time": T, "cluster": "prod", "group_id": "g", "total_lag": None, "max_lag_seconds": float("nan"),
        "members": 3}))
    assert value == {"time": "2023-11-14T22:13:20.250000Z", "cluster": "prod", "group_id": "g",
                     "total_lag": None, "max_lag_seconds": None, "members": 3}
    aware = datetime(2024, 2, 29, 23, 59, 59, 999999, tzinfo=UTC)
    assert json.loads(record_value("alert_event", {"time": aware, "since": aware}))["since"] == \
        "2024-02-29T23:59:59.999999Z"


def test_the_timestamp_columns_are_those_of_the_table_schema_an_add_on_table_included(monkeypatch):
    import pyarrow as pa

    from kpulse.lake import schema

    monkeypatch.setattr(schema, "_ADD_ON_SCHEMAS", {})
    schema.register_tables({"topic_census": pa.schema([("time", schema.TIME), ("cluster", pa.string()),
                                                       ("checked_at", schema.TIME), ("since", pa.string())])})
    value = json.loads(record_value("topic_census", {"time": T, "cluster": "prod", "checked_at": T + 1,
                                                     "since": "yesterday"}))
    assert value == {"time": "2023-11-14T22:13:20.250000Z", "cluster": "prod",
                     "checked_at": "2023-11-14T22:13:21.250000Z", "since": "yesterday"}


def test_dropped_rows_merge_into_one_gap_per_table_and_cluster():
    ledger = GapLedger(clock=lambda: T + 100)
    for offset in (5, 1, 9):
        ledger.record("consumer_lag", "prod", T + offset, "kafka sink: timed out")
    ledger.record("probe", "prod", T, "kafka sink: queue full")
    gaps = {gap.table: gap for gap in ledger.take()}
    lag = gaps["consumer_lag"]
    assert (lag.rows_dropped, lag.first_time.timestamp(), lag.last_time.timestamp()) == (3, T + 1, T + 9)
    assert lag.time.timestamp() == T + 100 and gaps["probe"].rows_dropped == 1
    assert ledger.take() == []


@pytest.mark.cluster
def test_every_lake_row_of_a_cycle_reaches_its_topic(local_cluster, tmp_path):
    config = parse_config({
        "clusters": [{"name": "sinktest", "bootstrap_servers": local_cluster.layout.bootstrap_servers,
                      "consumer_groups": {"include": ["nothing-matches"]}, "probe": {"enabled": False}}],
        "lake": {"path": str(tmp_path / "lake"), "kafka_sink": {"cluster": "sinktest", "topic_prefix": "sinktest."}},
    }, source="test", base_dir=tmp_path)
    service = CollectionService(config, flush_seconds=3600)
    try:
        result = service.cycle()
    finally:
        service.close()
    cluster = result.snapshots["sinktest"]["cluster"]
    consumer = Consumer({"bootstrap.servers": local_cluster.layout.bootstrap_servers, "group.id": "sinktest-reader",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe(["sinktest.cluster_health", "sinktest.broker_state"])
    records: dict[str, list[dict]] = {"sinktest.cluster_health": [], "sinktest.broker_state": []}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (not records["sinktest.cluster_health"]
                                           or len(records["sinktest.broker_state"]) < 3):
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            assert message.key() == b"sinktest"
            records[message.topic()].append(json.loads(message.value()))
    consumer.close()
    (health,) = records["sinktest.cluster_health"]
    assert health["brokers_up"] == 3 and health["partition_count"] == cluster["partition_count"]
    assert health["under_replicated_partitions"] == cluster["under_replicated_partitions"]
    assert sorted(row["broker_id"] for row in records["sinktest.broker_state"]) == [1, 2, 3]
    assert read_table(str(tmp_path / "lake"), "lake_gap").empty


def test_rows_the_sink_cannot_deliver_are_recorded_as_a_lake_gap(tmp_path):
    """Nothing listens on the sink's port: after its retry time every row is a counted gap."""
    sink = KafkaSink({"bootstrap.servers": "127.0.0.1:9"}, "down.", message_timeout_seconds=1.0,
                     admin_factory=lambda settings: _NoAdmin())
    rows = [{"time": T + i, "cluster": "prod", "collector": "c", "up": True} for i in range(5)]
    assert sink.append("collector_status", rows) == 5
    deadline = time.monotonic() + 20
    while sink.poll(0.2) and time.monotonic() < deadline:
        pass
    (gap,) = sink.gaps.take()
    assert (gap.table, gap.cluster, gap.rows_dropped) == ("collector_status", "prod", 5)
    assert (gap.first_time.timestamp(), gap.last_time.timestamp()) == (T, T + 4)
    assert "timed out" in gap.reason.lower()

    lake = LakeWriter(str(tmp_path / "lake"))
    sink.gaps.record("collector_status", "prod", T + 7, "kafka sink: Local: Message timed out")
    config = parse_config({"clusters": [{"name": "prod", "bootstrap_servers": "127.0.0.1:9"}],
                           "lake": {"path": str(tmp_path / "lake")}}, source="test", base_dir=tmp_path)
    service = CollectionService(config, lake=lake, kafka_sink=sink, registry=_empty_registry())
    assert service.flush() is None
    written = read_table(str(tmp_path / "lake"), "lake_gap")
    assert written[["table_name", "cluster", "rows_dropped"]].values.tolist() == [["collector_status", "prod", 1]]
    assert written["reason"][0].startswith("kafka sink")


class _NoAdmin:
    def create_topics(self, topics, **_):
        raise RuntimeError("no cluster here")


def _empty_registry():
    from collectors.protocol import Registry

    return Registry()
