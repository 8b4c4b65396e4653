"""The lake's data contract: one Parquet dataset per table, these columns, these types.

The SLO job and the dashboard read only these tables. Every table has ``time`` (UTC timestamp of
the collection cycle) and ``cluster`` (the configured cluster name), and is partitioned by
``date=YYYY-MM-DD`` (UTC) of ``time``. A value that could not be collected is null, never zero.
Changing a column's type is a breaking change for readers: add columns, never retype them.
"""

from __future__ import annotations

import pyarrow as pa

TIME = pa.timestamp("us", tz="UTC")


def _table(*columns: tuple[str, pa.DataType]) -> pa.Schema:
    return pa.schema([("time", TIME), ("cluster", pa.string()), *columns])


SCHEMAS: dict[str, pa.Schema] = {
    # One row per cycle: partition health from the Admin API (works without JMX).
    "cluster_health": _table(
        ("brokers_up", pa.int32()), ("brokers_total", pa.int32()),
        ("topic_count", pa.int32()), ("partition_count", pa.int32()),
        ("under_replicated_partitions", pa.int32()), ("offline_partitions", pa.int32()),
        ("under_min_isr_partitions", pa.int32()), ("preferred_leader_imbalance", pa.int32()),
        ("controller_id", pa.int32()), ("active_controller_count", pa.int32()),
    ),
    # One row per broker per cycle, from metadata.
    "broker_state": _table(
        ("broker_id", pa.int32()), ("up", pa.bool_()),
        ("partition_count", pa.int32()), ("leader_count", pa.int32()),
    ),
    # One row per broker per cycle, from its metrics endpoint (or Prometheus).
    "broker_metrics": _table(
        ("broker_id", pa.int32()),
        ("request_handler_idle_ratio", pa.float64()), ("network_processor_idle_ratio", pa.float64()),
        ("bytes_in_per_sec", pa.float64()), ("bytes_out_per_sec", pa.float64()),
        ("messages_in_per_sec", pa.float64()),
        ("under_replicated_partitions", pa.int32()), ("under_min_isr_partitions", pa.int32()),
        ("offline_partitions", pa.int32()), ("active_controller", pa.int32()), ("controller_id", pa.int32()),
        ("partition_count", pa.int32()), ("leader_count", pa.int32()),
        ("produce_p99_ms", pa.float64()), ("fetch_p99_ms", pa.float64()),
        ("scrape_seconds", pa.float64()), ("error", pa.string()),
    ),
    # One row per group, topic and partition per cycle.
    "consumer_lag": _table(
        ("group_id", pa.string()), ("topic", pa.string()), ("partition", pa.int32()),
        ("committed_offset", pa.int64()), ("log_end_offset", pa.int64()), ("lag", pa.int64()),
        ("lag_seconds", pa.float64()), ("status", pa.string()),
    ),
    # One row per group per cycle. total_lag and max_lag_seconds are over the partitions whose
    # value is known; *_unknown_partitions counts the partitions (with a committed offset) left out:
    # > 0 with a non-null value means the value is partial, a lower bound. Null in files written
    # before these columns were added (not known whether the value was complete).
    "consumer_group": _table(
        ("group_id", pa.string()), ("state", pa.string()), ("members", pa.int32()),
        ("partitions", pa.int32()), ("total_lag", pa.int64()), ("max_lag_seconds", pa.float64()),
        ("status", pa.string()), ("lag_seconds_threshold", pa.float64()),
        ("lag_unknown_partitions", pa.int32()), ("lag_seconds_unknown_partitions", pa.int32()),
    ),
    # One row per Streams instance per cycle.
    "streams_instance": _table(
        ("application_id", pa.string()), ("instance", pa.string()), ("up", pa.bool_()),
        ("client_state", pa.string()), ("alive_threads", pa.int32()), ("failed_threads", pa.int32()),
        ("group_state", pa.string()), ("expected_instances", pa.int32()),
    ),
    # One row per observed state change of a Streams instance.
    "streams_transition": _table(
        ("application_id", pa.string()), ("instance", pa.string()),
        ("from_state", pa.string()), ("to_state", pa.string()),
    ),
    # One row per probe cycle and target broker (the leader of one probe partition).
    "probe": _table(
        ("broker_id", pa.int32()), ("partition", pa.int32()),
        ("produced", pa.int32()), ("produce_errors", pa.int32()),
        ("consumed", pa.int32()), ("lost", pa.int32()), ("duplicated", pa.int32()),
        ("latency_p50_ms", pa.float64()), ("latency_p99_ms", pa.float64()), ("latency_max_ms", pa.float64()),
    ),
    # One row per alert state change (firing, resolved).
    "alert_event": _table(
        ("rule", pa.string()), ("severity", pa.string()), ("entity", pa.string()),
        ("state", pa.string()), ("value", pa.float64()), ("since", TIME), ("summary", pa.string()),
    ),
    # One row per collector per cycle.
    "collector_status": _table(
        ("collector", pa.string()), ("up", pa.bool_()), ("duration_seconds", pa.float64()),
        ("error", pa.string()),
    ),
    # One row per operation attempt (reset, election, reassignment), refused ones included.
    "audit": _table(
        ("action_id", pa.string()), ("actor", pa.string()), ("action", pa.string()),
        ("target", pa.string()), ("result", pa.string()), ("plan_json", pa.string()),
        ("before_json", pa.string()), ("after_json", pa.string()), ("error", pa.string()),
        ("approved_by", pa.string()),
    ),
    # SLO job (spark_jobs): good/valid per SLO, entity and minute; null = no data.
    "slo_minute": _table(
        ("slo", pa.string()), ("entity", pa.string()), ("good", pa.int64()), ("valid", pa.int64()),
    ),
    # SLO job: SLI, error budget, burn rates and alerts per SLO, entity and evaluation time.
    "slo_status": _table(
        ("slo", pa.string()), ("entity", pa.string()), ("scope", pa.string()), ("indicator", pa.string()),
        ("budgeting_method", pa.string()), ("objective", pa.float64()), ("window", pa.string()),
        ("sli", pa.float64()), ("good_events", pa.int64()), ("valid_events", pa.int64()),
        ("error_budget_remaining", pa.float64()),
        *[(f"burn_rate_{w}", pa.float64()) for w in ("5m", "30m", "1h", "2h", "6h", "1d", "3d", "window")],
        ("time_to_exhaustion_seconds", pa.float64()), ("alert", pa.string()), ("alert_conditions", pa.string()),
    ),
    # Samples that could not be written and were dropped: the gap is recorded instead.
    "lake_gap": _table(
        ("table_name", pa.string()), ("first_time", TIME), ("last_time", TIME),
        ("rows_dropped", pa.int64()), ("reason", pa.string()),
    ),
}
