"""The lake's data contract: one Parquet dataset per table, these columns, these types, and what
each column means.

The SLO job and the dashboard read only these tables. Every table has ``time`` (UTC timestamp of
the collection cycle) and ``cluster`` (the configured cluster name), and is partitioned by
``date=YYYY-MM-DD`` (UTC) of ``time``. A value that could not be collected is null, never zero.
Changing a column's type is a breaking change for readers: add columns, never retype them.

Each column is declared once, as ``(name, type, doc)``: :data:`SCHEMAS` holds the Arrow schemas
(what every file has exactly, and what the writer, the readers, the Kafka sink and the SLO job
use), :data:`COLUMN_DOCS` the docs (``docs/lake.md`` shows them; ``tests/test_lake.py`` keeps the
two equal).

Add-on collectors declare tables of their own (``collectors/protocol.py``); the collection loop
registers them here for its process (:func:`register_tables`), and :func:`table_schema` then knows
them as it knows the built-in ones. A built-in name cannot be taken.
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa

from kpulse.errors import KpulseError

TIME = pa.timestamp("us", tz="UTC")
_TIME_DOC = "Time of the collection cycle (UTC)."
_CLUSTER_DOC = "Configured cluster name."


def _table(*columns: tuple[str, pa.DataType, str], time: str = _TIME_DOC,
           cluster: str = _CLUSTER_DOC) -> tuple[pa.Schema, dict[str, str]]:
    """A table's schema (``time``, ``cluster``, then ``columns``) and its column docs."""
    declared = [("time", TIME, time), ("cluster", pa.string(), cluster), *columns]
    return pa.schema([(name, kind) for name, kind, _ in declared]), {name: doc for name, _, doc in declared}


_TABLES: dict[str, tuple[pa.Schema, dict[str, str]]] = {
    # One row per cycle: partition health from the Admin API (works without JMX).
    "cluster_health": _table(
        ("brokers_up", pa.int32(), "Brokers present in the cluster metadata this cycle."),
        ("brokers_total", pa.int32(), "Brokers known: live now, named in a replica list, or seen since the "
                                      "collector started."),
        ("topic_count", pa.int32(), "Topics in the metadata."),
        ("partition_count", pa.int32(), "Partitions of all topics."),
        ("under_replicated_partitions", pa.int32(), "Partitions whose ISR is smaller than their replica set."),
        ("offline_partitions", pa.int32(), "Partitions without a leader."),
        ("under_min_isr_partitions", pa.int32(), "Partitions whose ISR is smaller than the topic's "
                                                 "`min.insync.replicas`."),
        ("preferred_leader_imbalance", pa.int32(), "Online partitions whose leader is not the first (preferred) "
                                                   "replica."),
        ("controller_id", pa.int32(), "Active controller's node id; null when only the Admin API is available (in"
                                      " KRaft it names a random broker)."),
        ("active_controller_count", pa.int32(), "Nodes reporting themselves as the active controller (healthy: "
                                                "1); from broker metrics."),
        ("unknown_reasons", pa.string(), "Why this row's null values are null, `column: reason` joined by `; ` "
                                         "(`under_min_isr_partitions: not authorized: DescribeConfigs on 4 topics "
                                         "(...)`); null when none is. Null in files written before the column was "
                                         "added."),
    ),
    # One row per broker per cycle, from metadata.
    "broker_state": _table(
        ("broker_id", pa.int32(), "Broker (node) id."),
        ("up", pa.bool_(), "The broker is in the cluster metadata this cycle."),
        ("partition_count", pa.int32(), "Replicas hosted by the broker."),
        ("leader_count", pa.int32(), "Partitions the broker leads."),
    ),
    # One row per broker per cycle, from its metrics endpoint (or Prometheus).
    "broker_metrics": _table(
        ("broker_id", pa.int32(), "Broker (node) id."),
        ("request_handler_idle_ratio", pa.float64(), "0..1 idle fraction of the request handler threads (< 0.2 "
                                                     "warn, < 0.1 critical)."),
        ("network_processor_idle_ratio", pa.float64(), "0..1 idle fraction of the network threads."),
        ("bytes_in_per_sec", pa.float64(), "Produced bytes per second, all topics, replication excluded."),
        ("bytes_out_per_sec", pa.float64(), "Bytes fetched by consumers per second, replication excluded."),
        ("messages_in_per_sec", pa.float64(), "Produced messages per second."),
        ("under_replicated_partitions", pa.int32(), "Under-replicated partitions led by this broker."),
        ("under_min_isr_partitions", pa.int32(), "Partitions led by this broker with ISR below "
                                                 "`min.insync.replicas`."),
        ("offline_partitions", pa.int32(), "Offline partitions as the controller sees them; controller-role nodes"
                                           " only."),
        ("active_controller", pa.int32(), "1 on the active controller, 0 on other controller-role nodes, null on "
                                          "broker-only nodes."),
        ("controller_id", pa.int32(), "Node id of the active controller as this node's metadata says "
                                      "(`CurrentControllerId`; -1 = unknown). In KRaft this, not the Admin API, "
                                      "names the controller."),
        ("partition_count", pa.int32(), "Replicas hosted by this broker."),
        ("leader_count", pa.int32(), "Partitions this broker leads."),
        ("produce_p99_ms", pa.float64(), "99th percentile of Produce request total time, ms."),
        ("fetch_p99_ms", pa.float64(), "99th percentile of FetchConsumer request total time, ms."),
        ("scrape_seconds", pa.float64(), "How long reading this broker's metrics took."),
        ("error", pa.string(), "Why nothing could be read from this broker (one line); null when it answered."),
    ),
    # One row per group, topic and partition per cycle.
    "consumer_lag": _table(
        ("group_id", pa.string(), "Consumer group."),
        ("topic", pa.string(), "Topic."),
        ("partition", pa.int32(), "Partition number."),
        ("committed_offset", pa.int64(), "The group's committed offset (the next record it will read); null "
                                         "without a commit."),
        ("log_end_offset", pa.int64(), "The partition's log end offset."),
        ("lag", pa.int64(), "`log_end_offset - committed_offset`, clamped at 0; null without a commit."),
        ("lag_seconds", pa.float64(), "How far behind in time, interpolated from the log end history; null when "
                                      "it cannot be told."),
        ("status", pa.string(), "Burrow-style status: `OK`, `WARN`, `REWIND`, `STALL`, `STOP`, `ERR`; null with "
                                "too few observations."),
    ),
    # One row per group per cycle. total_lag and max_lag_seconds are over the partitions whose
    # value is known; *_unknown_partitions counts the partitions (with a committed offset) left out:
    # > 0 with a non-null value means the value is partial, a lower bound. Null in files written
    # before these columns were added (not known whether the value was complete).
    "consumer_group": _table(
        ("group_id", pa.string(), "Consumer group."),
        ("state", pa.string(), "Kafka's group state for its type (`Stable`, `PreparingRebalance`, "
                               "`CompletingRebalance`, `Assigning`, `Reconciling`, `NotReady`, `Empty`, `Dead`, …)."),
        ("members", pa.int32(), "Active members."),
        ("partitions", pa.int32(), "Partitions the group has offsets for."),
        ("total_lag", pa.int64(), "Sum of the partitions' lag over the partitions whose lag is known; null when "
                                  "none is."),
        ("max_lag_seconds", pa.float64(), "Largest `lag_seconds` of its partitions whose time lag is known; null "
                                          "when none is."),
        ("status", pa.string(), "Worst partition status (`OK` < `WARN` < `REWIND` < `STALL` < `STOP` < `ERR`)."),
        ("lag_seconds_threshold", pa.float64(), "The configured time-lag threshold for this group."),
        ("lag_unknown_partitions", pa.int32(), "Partitions with a committed offset whose lag is unknown (log end "
                                               "not read, e.g. a broker down), left out of `total_lag`: > 0 with "
                                               "a `total_lag` means the sum is partial, a lower bound. Null in "
                                               "files written before the column was added."),
        ("lag_seconds_unknown_partitions", pa.int32(), "The same for `max_lag_seconds`: partitions with a "
                                                       "committed offset whose `lag_seconds` is null."),
        ("type", pa.string(), "Group type: `classic`, `consumer` (KIP-848) or `streams` (KIP-1071). Null in "
                              "files written before the column was added."),
        ("error", pa.string(), "Why the group could not be read this cycle (`not authorized: Describe on group "
                               "G`, a coordinator that moved, ...): its figures are null and its last known "
                               "partitions count as unknown; null when it was read. Null in files written before "
                               "the column was added."),
    ),
    # One row per share group per cycle (KIP-932). total_lag is over the partitions whose lag is
    # known; lag_unknown_partitions counts the others (> 0 with a total_lag: a lower bound).
    "share_group": _table(
        ("group_id", pa.string(), "Share group."),
        ("state", pa.string(), "Kafka's share group state (`Empty`, `Stable`, `Dead`); null when the group could "
                               "not be described."),
        ("members", pa.int32(), "Members; null when the group could not be described."),
        ("group_epoch", pa.int32(), "Group epoch (bumped by every change of members or subscriptions)."),
        ("assignment_epoch", pa.int32(), "Epoch of the group's target assignment."),
        ("partitions", pa.int32(), "Partitions the broker reports share offsets for."),
        ("total_lag", pa.int64(), "Sum of the partitions' lag (records not yet acknowledged) over the partitions "
                                  "whose lag is known; null when none is."),
        ("lag_unknown_partitions", pa.int32(), "Partitions whose lag is unknown, left out of `total_lag`: > 0 with "
                                               "a `total_lag` means the sum is partial, a lower bound."),
        ("status", pa.string(), "Worst partition status (`OK` < `WARN` < `STALLED` < `NOT_CONSUMING`); null while "
                                "no partition has one."),
        ("error", pa.string(), "Why the group could not be described or its offsets read (one line); null when "
                               "they were."),
    ),
    # One row per share group, topic and partition per cycle.
    "share_partition": _table(
        ("group_id", pa.string(), "Share group."),
        ("topic", pa.string(), "Topic."),
        ("partition", pa.int32(), "Partition number."),
        ("start_offset", pa.int64(), "Share-partition start offset: every record before it is acknowledged (or "
                                     "archived); null when the group has not initialised the partition."),
        ("lag", pa.int64(), "Records not yet acknowledged, as the broker counts them (`kafka-share-groups "
                            "--describe`'s LAG; not log end minus start offset); null when unknown."),
        ("status", pa.string(), "`OK`, `WARN`, `STALLED` or `NOT_CONSUMING` over the last readings (see "
                                "docs/monitoring.md); null with too few readings."),
    ),
    # One row per Streams instance per cycle.
    "streams_instance": _table(
        ("application_id", pa.string(), "Streams `application.id` (also its consumer group)."),
        ("instance", pa.string(), "The instance (its metrics endpoint or client id)."),
        ("up", pa.bool_(), "The instance answered this cycle."),
        ("client_state", pa.string(), "KafkaStreams state (`RUNNING`, `REBALANCING`, `ERROR`, …)."),
        ("alive_threads", pa.int32(), "Stream threads alive."),
        ("failed_threads", pa.int32(), "Stream threads that died."),
        ("group_state", pa.string(), "The application's consumer group state."),
        ("expected_instances", pa.int32(), "Instances configured for the application."),
    ),
    # One row per observed state change of a Streams instance, Streams group or group member.
    "streams_transition": _table(
        ("application_id", pa.string(), "Streams `application.id`."),
        ("instance", pa.string(), "What changed: an instance (client id; KafkaStreams states), the Streams group "
                                  "itself (`(group)`; Kafka's group states `Empty`, `NotReady`, `Assigning`, "
                                  "`Reconciling`, `Stable`, `Dead`) or one of its members (`member <member id>`; "
                                  "`Stable`, `Reconciling`, `Left`)."),
        ("from_state", pa.string(), "State before."),
        ("to_state", pa.string(), "State after."),
        time="When the change was observed (UTC).",
    ),
    # One row per probe cycle and target broker (the leader of one probe partition).
    "probe": _table(
        ("broker_id", pa.int32(), "Broker leading the probe partition."),
        ("partition", pa.int32(), "Probe topic partition."),
        ("produced", pa.int32(), "Probe messages acknowledged."),
        ("produce_errors", pa.int32(), "Probe messages that failed to produce."),
        ("consumed", pa.int32(), "Probe messages read back."),
        ("lost", pa.int32(), "Acknowledged messages never read back."),
        ("duplicated", pa.int32(), "Messages read back more than once."),
        ("latency_p50_ms", pa.float64(), "Median produce-to-consume latency, ms."),
        ("latency_p99_ms", pa.float64(), "99th percentile produce-to-consume latency, ms."),
        ("latency_max_ms", pa.float64(), "Largest produce-to-consume latency, ms."),
        time="Time of the probe cycle (UTC).",
    ),
    # One row per alert state change (firing, resolved).
    "alert_event": _table(
        ("rule", pa.string(), "Alert rule name."),
        ("severity", pa.string(), "Rule severity (e.g. `warning`, `critical`)."),
        ("entity", pa.string(), "What the alert is about (a broker, group, topic, …)."),
        ("state", pa.string(), "`firing` or `resolved`."),
        ("value", pa.float64(), "The value that crossed (or fell back below) the threshold."),
        ("since", TIME, "When the alert started firing."),
        ("summary", pa.string(), "One-line human summary."),
        time="When the change was seen (UTC).",
    ),
    # One row per collector per cycle.
    "collector_status": _table(
        ("collector", pa.string(), "Collector name."),
        ("up", pa.bool_(), "The collector ran without error."),
        ("duration_seconds", pa.float64(), "How long the collector took."),
        ("error", pa.string(), "Why it failed (one line); null when up."),
    ),
    # One row per operation attempt (reset, election, reassignment), refused ones included.
    "audit": _table(
        ("action_id", pa.string(), "Unique id of the attempt (UUID)."),
        ("actor", pa.string(), "Who acted: a user of the users file, or the OS user."),
        ("action", pa.string(), "`reset-offsets`, `reset-streams-app`, `elect-leaders`, `reassign:execute`, "
                                "`reassign:verify`, `reassign:cancel`, `login` (a failed `--as`)."),
        ("target", pa.string(), "What was acted on, e.g. `group demo-stopped`, `app kpulse-demo-streams`."),
        ("result", pa.string(), "`ok`, `partial` (some partitions failed), `failed`, `refused` (a precondition "
                                "did not hold) or `denied` (role or read-only cluster); a reassignment also `in-"
                                "progress` (started), `not-started` or `cancelled`; two-person approval "
                                "`requested` or `rejected`."),
        ("plan_json", pa.string(), "The plan that was executed, as JSON."),
        ("before_json", pa.string(), "State before, as JSON (committed offsets, leaders or replica assignments)."),
        ("after_json", pa.string(), "State read back after, as JSON; null when nothing was applied."),
        ("error", pa.string(), "Why it was refused or failed (one line); null on success."),
        ("approved_by", pa.string(), "Second person who approved the action, when approval was required."),
        time="When the attempt ended (UTC).",
    ),
    # SLO job (spark_jobs): good/valid per SLO, entity and minute; null = no data.
    "slo_minute": _table(
        ("slo", pa.string(), "SLO name (from the SLO definitions YAML)."),
        ("entity", pa.string(), "What the SLO is about: the cluster name, a group id, an application id, a broker"
                                " id as text."),
        ("good", pa.int64(), "Good events (Occurrences), or 1/0 for a good/bad minute (Timeslices); null = no "
                             "data."),
        ("valid", pa.int64(), "Valid events, or 1 for a minute with data; null = no data."),
        time="Start of the minute (UTC).",
    ),
    # SLO job: slo_minute rolled up by the hour, what its updates read between the windows' edges.
    "slo_hour": _table(
        ("slo", pa.string(), "SLO name."),
        ("entity", pa.string(), "Cluster name, group id, application id or broker id."),
        ("good", pa.int64(), "Sum of the hour's `slo_minute.good` (no data counts 0)."),
        ("valid", pa.int64(), "Sum of the hour's `slo_minute.valid` (no data counts 0)."),
        ("observed", pa.int64(), "Minutes of the hour with data (`valid` not null)."),
        time="Start of the hour (UTC).",
    ),
    # SLO job: SLI, error budget, burn rates and alerts per SLO, entity and evaluation time.
    "slo_status": _table(
        ("slo", pa.string(), "SLO name."),
        ("entity", pa.string(), "Cluster name, group id, application id or broker id."),
        ("scope", pa.string(), "`cluster`, `consumer_group`, `streams_app` or `broker`."),
        ("indicator", pa.string(), "Indicator name, e.g. `partition_health_minutes`."),
        ("budgeting_method", pa.string(), "`Occurrences` or `Timeslices`."),
        ("objective", pa.float64(), "Target, e.g. 0.999 (after per-entity overrides)."),
        ("window", pa.string(), "Rolling SLO window, e.g. `30d`."),
        ("sli", pa.float64(), "Good / valid over the window; null when no valid data."),
        ("good_events", pa.int64(), "Good events (or minutes) over the window."),
        ("valid_events", pa.int64(), "Valid events (or minutes) over the window."),
        ("error_budget_remaining", pa.float64(), "Share of the error budget left: Timeslices 1 - bad_slices / "
                                                 "allowed_bad_slices, Occurrences 1 - e_T/B over the observed events; "
                                                 "0 exactly at the objective, negative once overspent (not clamped); "
                                                 "null when nothing was observed in the window."),
        ("burn_rate_5m", pa.float64(), "Error ratio over the last 5 minutes / error budget; null when no valid "
                                       "data."),
        ("burn_rate_30m", pa.float64(), "The same over 30 minutes."),
        ("burn_rate_1h", pa.float64(), "The same over 1 hour (the current burn)."),
        ("burn_rate_2h", pa.float64(), "The same over 2 hours."),
        ("burn_rate_6h", pa.float64(), "The same over 6 hours."),
        ("burn_rate_1d", pa.float64(), "The same over 1 day."),
        ("burn_rate_3d", pa.float64(), "The same over 3 days."),
        ("burn_rate_window", pa.float64(), "The same over the SLO window."),
        ("time_to_exhaustion_seconds", pa.float64(), "Remaining budget at the 1-hour burn rate, seconds; null "
                                                     "when nothing burns or the budget is spent."),
        ("alert", pa.string(), "`page`, `ticket` or null: the most severe SRE-workbook condition met."),
        ("alert_conditions", pa.string(), "Conditions met, comma-separated (`page_1h_5m`, `page_6h_30m`, "
                                          "`ticket_1d_2h`, `ticket_3d_6h`); null when none."),
        ("bad_slices", pa.int64(), "Timeslices: bad minutes in the window; null for Occurrences."),
        ("allowed_bad_slices", pa.float64(), "Timeslices: bad minutes the whole window may hold, (1 - objective) x "
                                             "window minutes (30d at 0.99: 432); null for Occurrences."),
        ("observed_minutes", pa.int64(), "Minutes of the window with data (no-data minutes are neither good nor "
                                         "bad)."),
        ("coverage", pa.float64(), "observed_minutes / the window's minutes (0..1)."),
        ("min_events", pa.int64(), "Occurrences: valid events the window needs before the SLO can page or be "
                                   "exhausted; null for Timeslices."),
        ("budget_status", pa.string(), "`ok` (remaining >= 0), `exhausted` (< 0), `too_few_events` (Occurrences "
                                       "below min_events: no alert) or `no_data` (nothing observed in the window)."),
        time="Evaluation time: the end of the newest complete minute evaluated (UTC).",
    ),
    # Written by the lake compaction (`kpulse lake compact`): consumer_lag folded into buckets of a few
    # minutes per group, topic and partition, kept after the raw rows expire.
    "consumer_lag_downsampled": _table(
        ("group_id", pa.string(), "Consumer group."),
        ("topic", pa.string(), "Topic."),
        ("partition", pa.int32(), "Partition number."),
        ("bucket_minutes", pa.int32(), "Length of the bucket that starts at `time`, minutes (`lake.retention."
                                       "downsample_minutes`)."),
        ("samples", pa.int32(), "`consumer_lag` rows folded into this row."),
        ("committed_offset", pa.int64(), "The last committed offset known in the bucket; null when none is."),
        ("log_end_offset", pa.int64(), "The last log end offset known in the bucket."),
        ("lag", pa.int64(), "The last `lag` known in the bucket."),
        ("max_lag", pa.int64(), "The largest `lag` of the bucket; null when none is known."),
        ("max_lag_seconds", pa.float64(), "The largest `lag_seconds` of the bucket; null when none is known."),
        ("status", pa.string(), "The last status known in the bucket."),
        time="Start of the bucket (UTC).",
    ),
    # One row per table and day that a compaction run changed: what it did, for the record.
    "lake_compaction": _table(
        ("run_id", pa.string(), "Id of the compaction run (one run acts on many tables and days)."),
        ("table_name", pa.string(), "Table acted on."),
        ("day", pa.string(), "The `date=` partition acted on, `YYYY-MM-DD`."),
        ("action", pa.string(), "`compact` (files merged into one), `downsample` (`consumer_lag_downsampled` "
                                "written from the day's `consumer_lag`), `expire` (partition deleted by "
                                "retention) or `clean` (leftovers of an interrupted run deleted)."),
        ("files_before", pa.int32(), "Data files in the partition before (`downsample`: in the day's `consumer_lag`)."),
        ("files_after", pa.int32(), "Data files in the partition after."),
        ("rows_before", pa.int64(), "Rows in the partition before (from the Parquet footers; `downsample`: the day's `consumer_lag` rows)."),
        ("rows_after", pa.int64(), "Rows in the partition after."),
        ("bytes_before", pa.int64(), "Bytes of the partition's data files before (`downsample`: the day's `consumer_lag`)."),
        ("bytes_after", pa.int64(), "Bytes of the partition's data files after."),
        ("seconds", pa.float64(), "How long the action took."),
        time="When the action ended (UTC).", cluster="`*`: a partition holds rows of every cluster.",
    ),
    # Samples that could not be written and were dropped: the gap is recorded instead.
    "lake_gap": _table(
        ("table_name", pa.string(), "Table the dropped rows belonged to."),
        ("first_time", TIME, "`time` of the oldest dropped row."),
        ("last_time", TIME, "`time` of the newest dropped row."),
        ("rows_dropped", pa.int64(), "How many rows were dropped."),
        ("reason", pa.string(), "Why (buffer limit and the last write error)."),
        time="When the first of these rows was dropped (UTC).", cluster="Cluster of the dropped rows.",
    ),
}

SCHEMAS: dict[str, pa.Schema] = {name: schema for name, (schema, _) in _TABLES.items()}
"""Built-in table name -> its Arrow schema."""
COLUMN_DOCS: dict[str, dict[str, str]] = {name: docs for name, (_, docs) in _TABLES.items()}
"""Built-in table name -> column name -> what the column means."""


class LakeTableError(KpulseError):
    """An add-on's table cannot be registered (one line)."""


_ADD_ON_SCHEMAS: dict[str, pa.Schema] = {}
"""Tables declared by add-on collectors, registered by this process."""


def register_tables(tables: Mapping[str, pa.Schema]) -> None:
    """Make the tables add-on collectors declare known to this process's lake writer and readers.
    A built-in table may be declared only with its own schema (the built-in collectors declare
    theirs); an add-on's table must begin with ``time`` and ``cluster`` as every table does, and
    cannot be declared again with other columns. Raises :class:`LakeTableError`, registering none."""
    fresh: dict[str, pa.Schema] = {}
    for name, schema in tables.items():
        known = SCHEMAS.get(name)
        if known is not None:
            if not schema.equals(known):
                raise LakeTableError(f"lake table {name!r} is built in: an add-on cannot declare it "
                                     f"(its columns: {', '.join(known.names)})")
            continue
        if schema.names[:2] != ["time", "cluster"] or schema.types[:2] != [TIME, pa.string()]:
            raise LakeTableError(f"lake table {name!r} must begin with time ({TIME}) and cluster (string), "
                                 f"as every table does; its columns: {', '.join(schema.names)}")
        earlier = _ADD_ON_SCHEMAS.get(name, fresh.get(name))
        if earlier is not None and not schema.equals(earlier):
            raise LakeTableError(f"lake table {name!r} is declared twice with different columns: "
                                 f"{', '.join(earlier.names)} and {', '.join(schema.names)}")
        fresh[name] = schema
    _ADD_ON_SCHEMAS.update(fresh)


def table_schema(name: str) -> pa.Schema | None:
    """The schema of a built-in table or of an add-on's registered one; ``None`` for any other name."""
    return SCHEMAS.get(name) or _ADD_ON_SCHEMAS.get(name)


def known_table_schema(name: str) -> pa.Schema:
    """:func:`table_schema`, or ``ValueError`` naming the known tables for any other name (what the
    writer and the reader say of a table nobody declared)."""
    schema = table_schema(name)
    if schema is None:
        raise ValueError(f"unknown lake table {name!r}; known tables: {', '.join(sorted(table_names()))}")
    return schema


def table_names() -> list[str]:
    """Every table this process knows: the built-in ones, then the add-ons' registered ones."""
    return [*SCHEMAS, *(name for name in _ADD_ON_SCHEMAS if name not in SCHEMAS)]
