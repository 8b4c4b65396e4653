"""The Brokers page: one row per broker, time series from the lake, partition and leader
balance, the KRaft quorum and controller figures, the problem partitions with their ELR. Pure."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Literal, TypedDict

import pandas as pd

from dashboard.services.columns import Column, table
from kpulse.snapshot import ClusterHealth, KraftQuorum, ProblemPartition, QuorumReplica, Snapshot

BrokerField = Literal["id", "up", "partition_count", "leader_count", "preferred_leader_count",
                      "request_handler_idle_ratio", "network_processor_idle_ratio", "bytes_in_per_sec",
                      "bytes_out_per_sec", "produce_p99_ms", "fetch_p99_ms", "metadata_apply_lag_ms",
                      "metadata_error_count", "error"]
"""The :class:`kpulse.snapshot.Broker` fields the broker table shows."""
BROKER_TABLE: dict[str, BrokerField] = {
    "broker": "id", "up": "up", "partitions": "partition_count", "leaders": "leader_count",
    "preferred_leaders": "preferred_leader_count", "request_handler_idle": "request_handler_idle_ratio",
    "network_idle": "network_processor_idle_ratio", "bytes_in_per_sec": "bytes_in_per_sec",
    "bytes_out_per_sec": "bytes_out_per_sec", "produce_p99_ms": "produce_p99_ms", "fetch_p99_ms": "fetch_p99_ms",
    "metadata_apply_lag_ms": "metadata_apply_lag_ms", "metadata_errors": "metadata_error_count",
    "error": "error",
}
"""Column of the page's broker table -> the :class:`kpulse.snapshot.Broker` field it shows, under
the short headings the page has always had (``under_replicated`` comes from the lake instead)."""
BROKER_COLUMNS = ["broker", "up", "partitions", "leaders", "preferred_leaders", "request_handler_idle",
                  "network_idle", "bytes_in_per_sec", "bytes_out_per_sec", "under_replicated", "produce_p99_ms",
                  "fetch_p99_ms", "metadata_apply_lag_ms", "metadata_errors", "error"]
_NOT_READ = " Empty: not read; the lines under the table say why."
BROKER_TABLE_COLUMNS = table(
    Column("broker", "Broker", key=True), Column("up", "Up"),
    Column("under_replicated", "Under-replicated partitions",
           help="Under-replicated partitions it leads, from its newest metrics." + _NOT_READ),
    Column("request_handler_idle", "Request handler idle", "%", kind="number", format="percent",
           help="Idle share of its request handler threads: below 20 % warning, below 10 % critical." + _NOT_READ),
    Column("network_idle", "Network idle", "%", kind="number", format="percent",
           help="Idle share of its network processor threads." + _NOT_READ),
    Column("bytes_in_per_sec", "Bytes in", "B/s", kind="number", format="bytes", help="From producers." + _NOT_READ),
    Column("bytes_out_per_sec", "Bytes out", "B/s", kind="number", format="bytes",
           help="To consumers and followers." + _NOT_READ),
    Column("produce_p99_ms", "Produce p99", "ms", kind="number", format="%.1f",
           help="99th percentile of its Produce request time." + _NOT_READ),
    Column("fetch_p99_ms", "Fetch p99", "ms", kind="number", format="%.1f",
           help="99th percentile of its consumer Fetch request time." + _NOT_READ),
    Column("partitions", "Partitions", help="Replicas it hosts."), Column("leaders", "Leaders"),
    Column("preferred_leaders", "Preferred leaders", help="Partitions whose preferred (first) replica it is."),
    Column("metadata_apply_lag_ms", "Metadata apply lag", "ms", kind="number", format="%.0f",
           help="How far behind the metadata log its applied metadata is." + _NOT_READ),
    Column("metadata_errors", "Metadata errors", help="Errors loading or applying metadata." + _NOT_READ),
    Column("error", "Error", help="Why the broker could not be read."))
"""The broker table as the page shows it: health first."""


def broker_table(snapshot: Snapshot | None, latest_metrics: pd.DataFrame) -> pd.DataFrame:
    """The snapshot's brokers, with URP led by each broker from its newest ``broker_metrics`` row."""
    urp: dict[int, object] = {}
    if latest_metrics is not None and not latest_metrics.empty:
        newest = latest_metrics.sort_values("time").groupby("broker_id").tail(1)
        urp = dict(zip(newest["broker_id"].astype(int), newest["under_replicated_partitions"]))
    rows = []
    for broker in (snapshot.get("brokers") if snapshot else None) or []:
        rows.append({**{column: broker.get(field) for column, field in BROKER_TABLE.items()},
                     "under_replicated": urp.get(broker.get("id"))})
    frame = pd.DataFrame(rows, columns=BROKER_COLUMNS)
    for column in ("partitions", "leaders", "preferred_leaders", "under_replicated", "metadata_errors"):
        frame[column] = pd.array(pd.to_numeric(frame[column], errors="coerce"), dtype="Int64")  # a count, not 3.0
    return frame


def balance(table: pd.DataFrame) -> dict[str, float | None]:
    """How uneven partitions and leaders are: the busiest broker's share over the mean, minus 1
    (0 = perfectly even, 0.5 = the busiest has 50 % more than the average)."""
    result = {}
    for column in ("partitions", "leaders"):
        values = pd.to_numeric(table[column], errors="coerce").dropna() if len(table) else pd.Series(dtype=float)
        mean = values.mean() if len(values) else None
        result[column] = None if not mean else float(values.max() / mean - 1)
    return result


def balance_frame(table: pd.DataFrame) -> pd.DataFrame:
    """Long form (broker, kind, count) for a grouped bar chart of partitions and leaders."""
    long = table.melt(id_vars=["broker"], value_vars=["partitions", "leaders"], var_name="kind", value_name="count")
    long["broker"] = long["broker"].astype(str)
    long["count"] = long["count"].astype("float64")  # a broker's unknown count: a gap, not pandas' NA, for Plotly
    return long


def series(metrics: pd.DataFrame, column: str) -> pd.DataFrame:
    """(time, broker, value) of one ``broker_metrics`` column, brokers as text for colouring."""
    frame = metrics[["time", "broker_id", column]].rename(columns={"broker_id": "broker", column: "value"})
    frame["broker"] = "broker " + frame["broker"].astype(str)
    return frame


# --- KRaft ---------------------------------------------------------------------------------------------

QUORUM_COLUMNS = ["node", "role", "log_end_offset", "lag", "caught_up_age_seconds", "last_fetch_age_seconds"]
PROBLEM_COLUMNS = ["topic", "partition", "problems", "leader", "replicas", "isr", "elr", "last_known_elr"]
QUORUM_TABLE = table(
    Column("node", "Node", key=True), Column("role", "Role"),
    Column("lag", "Lag", "records", help="How far its metadata log is behind the quorum leader's. Empty: not read."),
    Column("log_end_offset", "Log end offset", help="Of its metadata log. Empty: not read."),
    Column("caught_up_age_seconds", "Last caught up", "s ago", kind="number", format="%.1f",
           help="When it last caught up with the leader. Empty: not reported."),
    Column("last_fetch_age_seconds", "Last fetch", "s ago", kind="number", format="%.1f",
           help="When it last fetched from the leader. Empty: not reported."))
"""The KRaft quorum's voters and observers (:func:`quorum_table`) as the page shows them."""
_IDS = " — : not read (the line above the table says why)."
PROBLEM_TABLE = table(
    Column("topic", "Topic", key=True), Column("partition", "Partition", key=True),
    Column("problems", "Problems"), Column("leader", "Leader", help="Empty: no leader (offline)."),
    Column("replicas", "Replicas"), Column("isr", "ISR", help="The in-sync replicas."),
    Column("elr", "ELR", help="Eligible leader replicas: out of the ISR, still electable without losing committed "
                              "data." + _IDS),
    Column("last_known_elr", "Last known ELR", help="The candidates of an unclean recovery once the partition is "
                                                    "offline." + _IDS))
"""The problem partitions (:func:`problem_partition_table`) as the Brokers page shows them."""
TOPIC_PROBLEM_TABLE = PROBLEM_TABLE[1:]
"""The same on one topic's page: without the topic."""


METRIC_LABELS = {column.name: column.header.lower() for column in BROKER_TABLE_COLUMNS if column.name in (
    "request_handler_idle", "network_idle", "bytes_in_per_sec", "bytes_out_per_sec", "produce_p99_ms", "fetch_p99_ms",
    "metadata_apply_lag_ms", "metadata_errors")}
"""The broker table's metric columns, named as the page heads them (without the unit, in table order)."""


def metric_reasons(snapshot: Snapshot | None) -> list[str]:
    """Why the broker table's metrics are empty, one line per reason and set of brokers, the columns
    in table order ("request handler idle, bytes in unknown for brokers 1, 2: broker metrics are not
    configured (metrics.source: none)"): each broker's ``reasons``, else its ``error``, else "not
    collected". Only the fields a broker's entry holds."""
    lines: dict[tuple[str, tuple[int, ...]], list[str]] = {}
    brokers = (snapshot.get("brokers") if snapshot else None) or []
    for column, label in METRIC_LABELS.items():
        field = BROKER_TABLE[column]
        missing: dict[str, list[int]] = {}
        for broker in brokers:
            if field in broker and broker[field] is None:
                reason = (broker.get("reasons") or {}).get(field) or broker.get("error") or "not collected"
                missing.setdefault(reason, []).append(broker["id"])
        for reason, ids in missing.items():
            lines.setdefault((reason, tuple(ids)), []).append(label)
    return [f"{', '.join(labels)} unknown for broker{'s' if len(ids) > 1 else ''} {', '.join(map(str, ids))}: {reason}"
            for (reason, ids), labels in lines.items()]


FIGURE_LABELS = {"leader": "quorum leader", "epoch": "leader epoch", "high_watermark": "high watermark",
                 "fenced_brokers": "fenced brokers", "active_brokers": "active brokers",
                 "metadata_errors": "metadata errors"}
FIGURE_REASONS = {"leader": ("quorum",), "epoch": ("quorum",), "high_watermark": ("quorum",),
                  "fenced_brokers": ("fenced_broker_count", "kraft_brokers"),
                  "active_brokers": ("active_broker_count", "kraft_brokers"),
                  "metadata_errors": ("metadata_error_count",)}
"""A KRaft figure -> the ``cluster.reasons`` that say why it is null, the first found applies."""


class ControllerFigures(TypedDict):
    """The KRaft figures of the Brokers page's header (:func:`controller_figures`)."""

    leader: int | None
    epoch: int | None
    high_watermark: int | None
    fenced_brokers: int | None
    active_brokers: int | None
    metadata_errors: int | None
    reasons: dict[str, str]


def figure_reasons(figures: ControllerFigures) -> list[str]:
    """Why :func:`controller_figures`' null figures are null, one line per reason naming the figures
    it leaves empty ("Quorum leader, leader epoch, high watermark: not authorized: Describe on cluster
    (DescribeQuorum)")."""
    reasons = figures.get("reasons") or {}
    lines: dict[str, list[str]] = {}
    for key, label in FIGURE_LABELS.items():
        if figures.get(key) is None:
            why = next((reasons[r] for r in FIGURE_REASONS[key] if reasons.get(r)), "not collected")
            lines.setdefault(why, []).append(label)
    return [_capitalized(f"{', '.join(labels)}: {why}") for why, labels in lines.items()]


def _capitalized(line: str) -> str:
    return line[:1].upper() + line[1:]


def controller_figures(snapshot: Snapshot | None) -> ControllerFigures:
    """The KRaft figures of the page's header: quorum leader, epoch, high watermark, fenced and active
    brokers, metadata errors; None where not known (``reasons`` says why)."""
    cluster: ClusterHealth | Mapping[str, None] = (snapshot.get("cluster") if snapshot else None) or {}
    quorum: KraftQuorum | Mapping[str, None] = cluster.get("quorum") or {}
    return {"leader": quorum.get("leader_id"), "epoch": quorum.get("leader_epoch"),
            "high_watermark": quorum.get("high_watermark"),
            "fenced_brokers": cluster.get("fenced_broker_count"), "active_brokers": cluster.get("active_broker_count"),
            "metadata_errors": cluster.get("metadata_error_count"),
            "reasons": {key: why for key, why in (cluster.get("reasons") or {}).items()
                        if key in ("quorum", "fenced_broker_count", "active_broker_count", "kraft_brokers",
                                   "metadata_error_count", "elr")}}


def quorum_table(snapshot: Snapshot | None) -> pd.DataFrame:
    """One row per voter (the leader first) and observer, as ``kafka-metadata-quorum describe
    --replication`` lists them; ages are seconds before the snapshot's time."""
    cluster: ClusterHealth | Mapping[str, None] = (snapshot.get("cluster") if snapshot else None) or {}
    quorum: KraftQuorum | Mapping[str, None] = cluster.get("quorum") or {}
    taken = snapshot.get("time") if snapshot else None
    rows = []
    roles: tuple[tuple[Callable[[QuorumReplica], str], Sequence[QuorumReplica]], ...] = (
        (lambda r: "leader" if r["id"] == quorum.get("leader_id") else "follower", quorum.get("voters") or []),
        (lambda r: "observer", quorum.get("observers") or []))
    for role_of, replicas in roles:
        for replica in replicas:
            fetched = replica.get("last_fetch_time")
            rows.append({"node": replica["id"], "role": role_of(replica),
                         "log_end_offset": replica.get("log_end_offset"), "lag": replica.get("lag"), "caught_up_age_seconds": replica.get("caught_up_age_seconds"),
                         "last_fetch_age_seconds": None if fetched is None or taken is None
                         else max(0.0, taken - fetched)})
    frame = pd.DataFrame(rows, columns=QUORUM_COLUMNS)
    for column in ("log_end_offset", "lag"):
        frame[column] = pd.array(frame[column], dtype="Int64")
    return frame


def problem_partition_table(snapshot: Snapshot | None, topic: str | None = None) -> pd.DataFrame:
    """The snapshot's problem partitions (of ``topic`` when given) with ELR and LastKnownElr as
    ``kafka-topics --describe`` prints them (ids joined by commas; empty when none, ``—`` when not
    read). Kafka-supplied names stay text."""
    def ids(values: Sequence[int] | None) -> str:
        return "—" if values is None else ", ".join(map(str, values))

    cluster = snapshot.get("cluster") if snapshot else None
    problems: Sequence[ProblemPartition] = (cluster.get("problem_partitions") if cluster else None) or []
    rows = [{"topic": p["topic"], "partition": p["partition"], "problems": ", ".join(p.get("problems") or []),
             "leader": p.get("leader"), "replicas": ids(p.get("replicas")), "isr": ids(p.get("isr")),
             "elr": ids(p.get("elr")), "last_known_elr": ids(p.get("last_known_elr"))}
            for p in problems if topic is None or p["topic"] == topic]
    frame = pd.DataFrame(rows, columns=PROBLEM_COLUMNS)
    frame["leader"] = pd.array(pd.to_numeric(frame["leader"], errors="coerce"), dtype="Int64")
    return frame
