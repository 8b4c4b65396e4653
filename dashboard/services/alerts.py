"""Alert triage: the alerts firing now, from the ``alert_event`` history and the latest snapshot
(newer than the lake's last flush), with acknowledgements; and for one alert, the metric to chart
around it and the pages of the entities it names. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from collections.abc import Mapping

import pandas as pd

from alerting.grouping import AlertGroup, group_alerts
from dashboard.services.acks import EVERY_ENTITY, Ack, effective
from dashboard.services.columns import Column, table
from kpulse.snapshot import Snapshot

SEVERITY_ORDER = {"critical": 0, "warning": 1}
URGENCY = {"critical": 2, "warning": 1}
ALERT_COLUMNS = ["rule", "severity", "entity", "since", "age_seconds", "value", "summary", "ack", "ack_by",
                 "ack_until", "silenced"]


def firing_alerts(events: pd.DataFrame, snapshot: Snapshot | None, acks: Mapping[tuple[str, str], Ack],
                  now: float) -> pd.DataFrame:
    """Alerts firing now: critical first, then the oldest first.

    For each (rule, entity) the newest word wins: an ``alert_event`` row, or the snapshot (its
    ``alerts`` list is everything firing at its time, so a key it lacks has resolved since)."""
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    if not events.empty:
        newest = events.sort_values("time").groupby(["rule", "entity"], sort=False).tail(1)
        newest = newest.assign(time=epoch_seconds(newest["time"]), since=epoch_seconds(newest["since"]))
        for row in newest.to_dict("records"):
            latest[(row["rule"], row["entity"])] = row
    if snapshot is not None:
        taken = float(snapshot["time"])
        in_snapshot = {(a["rule"], a["entity"]): a for a in snapshot.get("alerts") or []}
        for key in list(latest):
            if latest[key]["time"] <= taken and key not in in_snapshot:
                del latest[key]
        for key, alert in in_snapshot.items():
            if key not in latest or latest[key]["time"] <= taken:
                latest[key] = {**alert, "state": "firing", "time": taken}
    rows = []
    for (rule, entity), row in latest.items():
        if row.get("state") != "firing":
            continue
        ack = effective(acks, rule, entity)
        rows.append({"rule": rule, "severity": row["severity"], "entity": entity, "since": float(row["since"]),
                     "age_seconds": now - row["since"], "value": row.get("value"), "summary": row.get("summary"),
                     "ack": ack.kind if ack else None, "ack_by": ack.by if ack else None,
                     "ack_until": ack.until if ack else None, "silenced": bool(ack and ack.kind == "silence")})
    frame = pd.DataFrame(rows, columns=ALERT_COLUMNS)
    if frame.empty:
        return frame
    frame["_order"] = frame["severity"].map(SEVERITY_ORDER).fillna(9)
    frame = frame.sort_values(["_order", "since", "rule", "entity"]).drop(columns="_order").reset_index(drop=True)
    # whole columns at once: a Timestamp per row costs ~0.1 s per 1,000 alerts
    frame["since"] = pd.to_datetime(frame["since"], unit="s", utc=True)
    frame["ack_until"] = pd.to_datetime(frame["ack_until"].astype("float64"), unit="s", utc=True)
    return frame


def epoch_seconds(times: pd.Series) -> pd.Series:
    """Timestamps (the lake's, UTC) as epoch seconds (float)."""
    times = pd.to_datetime(times, utc=True)
    return (times - pd.Timestamp(0, tz="UTC")) / pd.Timedelta(seconds=1)


GROUP_COLUMNS = ["severity", "rule", "affected", "entities", "critical", "since", "age_seconds", "summary", "ack",
                 "ack_by", "ack_until", "acknowledged", "silenced"]
"""One row per alert group: ``affected`` is the entity of a group of one, else "2,000 groups";
``summary`` the entity's summary (of the first, "and N more", for many); ``ack*`` the group's own
acknowledgement (of its one entity, for a group of one); ``acknowledged`` / ``silenced`` count its
entities that are."""


_NEITHER = "Empty: neither acknowledged nor silenced."
_ACK = (Column("ack", "Acknowledged or silenced", help=_NEITHER), Column("ack_by", "By", help=_NEITHER),
        Column("ack_until", "Until", "UTC", kind="datetime", format="YYYY-MM-DD HH:mm", help=_NEITHER))
GROUP_TABLE = table(
    Column("rule", "Rule", key=True), Column("severity", "Severity"),
    Column("affected", "Affected", help="The entity, or how many are affected."),
    Column("entities", "Entities"), Column("age", "Firing for", help="Since the oldest of its entities fired."),
    Column("summary", "Summary"), *_ACK,
    Column("acknowledged", "Entities acknowledged", help="Of its entities, those acknowledged or silenced."),
    Column("silenced", "Entities silenced"))
"""The alert groups (:func:`grouped`, with the page's ``age`` in words) as the page shows them."""
ENTITY_TABLE = table(
    Column("entity", "Entity", key=True), Column("severity", "Severity"), Column("age", "Firing for"),
    Column("summary", "Summary"), *_ACK)
"""One group's entities (:func:`group_members`, with the page's ``age`` in words) as the page shows them."""


def alert_groups(firing: pd.DataFrame) -> list[AlertGroup]:
    """The firing alerts (:func:`firing_alerts`' frame) grouped by rule, in triage order."""
    if firing.empty:
        return []
    since = epoch_seconds(firing["since"]).tolist()
    return group_alerts({"rule": r, "severity": s, "entity": e, "since": t}
                        for r, s, e, t in zip(firing["rule"], firing["severity"], firing["entity"], since))


def grouped(firing: pd.DataFrame, acks: Mapping[tuple[str, str], Ack], now: float
            ) -> tuple[list[AlertGroup], pd.DataFrame]:
    """The firing alerts (:func:`firing_alerts`' frame) grouped by rule (one cluster's:
    ``alerting/grouping.py``), in triage order, and those groups as a table (:data:`GROUP_COLUMNS`)."""
    if firing.empty:
        return [], pd.DataFrame(columns=GROUP_COLUMNS)
    groups = alert_groups(firing)
    entity_rows = {(r, e): i for i, (r, e) in enumerate(zip(firing["rule"], firing["entity"]))}
    per_rule = firing.groupby("rule", sort=False).agg(acknowledged=("ack", "count"), silenced=("silenced", "sum"))
    rows = []
    for group in groups:
        first = firing.iloc[entity_rows[(group.rule, group.entities[0])]]
        own = acks.get((group.rule, EVERY_ENTITY))
        single = first if group.count == 1 and own is None else None
        summary = first["summary"] if group.count == 1 else f"{first['summary']} (and {group.count - 1:,} more)"
        rows.append({"severity": group.severity, "rule": group.rule, "affected": group.affected,
                     "entities": group.count, "critical": group.critical,
                     "since": pd.Timestamp(group.since, unit="s", tz="UTC"), "age_seconds": now - group.since,
                     "summary": summary,
                     "ack": own.kind if own else single["ack"] if single is not None else None,
                     "ack_by": own.by if own else single["ack_by"] if single is not None else None,
                     "ack_until": pd.Timestamp(own.until, unit="s", tz="UTC") if own
                     else single["ack_until"] if single is not None else None,
                     "acknowledged": int(per_rule.at[group.rule, "acknowledged"]),
                     "silenced": int(per_rule.at[group.rule, "silenced"])})
    return groups, pd.DataFrame(rows, columns=GROUP_COLUMNS)


def group_members(firing: pd.DataFrame, rule: str) -> pd.DataFrame:
    """The firing rows of one rule (one group's entities), in triage order, with ``severity_rank``
    (2 critical, 1 warning: the worst sorts first when sorted descending) for sorting the list."""
    rows = firing[firing["rule"] == rule]
    return rows.assign(severity_rank=rows["severity"].map(URGENCY).fillna(0)).reset_index(drop=True)


def alert_key(row: Mapping[str, Any]) -> str:
    return f"{row['rule']} · {row['entity']}"


def parse_entity(entity: str) -> tuple[str, str]:
    """``broker/1`` -> (``broker``, ``1``); ``probe`` -> (``probe``, ``""``)."""
    kind, _, name = entity.partition("/")
    return kind, name


ENTITY_PAGES = {"broker": ("brokers", "broker"), "group": ("groups", "group"), "streams": ("streams", "app"),
                "sharegroup": ("share_groups", "sharegroup"),
                "cluster": ("overview", None), "probe": ("overview", None), "collector": ("overview", None)}
"""Entity kind -> (page, query parameter naming the entity on it)."""


@dataclass(frozen=True)
class ContextQuery:
    """What to chart around an alert: ``column`` of lake ``table``, rows where ``match_column``
    equals ``match_value`` (all rows when ``None``)."""

    table: str
    column: str
    title: str
    match_column: str | None = None
    match_value: Any = None
    threshold: float | None = None


def context_query(rule: str, entity: str) -> ContextQuery | None:
    kind, name = parse_entity(entity)
    cluster_counts = {"UnderReplicatedPartitions": "under_replicated_partitions",
                      "OfflinePartitions": "offline_partitions", "UnderMinIsrPartitions": "under_min_isr_partitions",
                      "ActiveControllerCount": "active_controller_count"}
    if rule in cluster_counts:
        return ContextQuery("cluster_health", cluster_counts[rule], cluster_counts[rule].replace("_", " "))
    if rule in ("RequestHandlerIdleLow", "RequestHandlerIdleCritical") and kind == "broker":
        return ContextQuery("broker_metrics", "request_handler_idle_ratio", f"broker {name} request handler idle",
                            "broker_id", int(name), 0.2 if rule.endswith("Low") else 0.1)
    if rule == "BrokerDown" and kind == "broker":
        return ContextQuery("broker_state", "up", f"broker {name} up (1) / down (0)", "broker_id", int(name))
    if rule == "ConsumerGroupStatus" and kind == "group":
        return ContextQuery("consumer_group", "total_lag", f"group {name} lag (offsets)", "group_id", name)
    if rule == "ConsumerGroupLagSeconds" and kind == "group":
        return ContextQuery("consumer_group", "max_lag_seconds", f"group {name} lag (seconds)", "group_id", name)
    if rule == "ShareGroupNotAcknowledging" and kind == "sharegroup":
        return ContextQuery("share_group", "total_lag", f"share group {name} lag (records not acknowledged)",
                            "group_id", name)
    if rule == "StreamsAppNotRunning" and kind == "streams":
        return ContextQuery("streams_instance", "running", f"{name}: instances RUNNING", "application_id", name)
    if rule == "ProbeFailing":
        return ContextQuery("probe", "failed", "probe: records not produced or lost")
    if rule == "CollectorDown" and kind == "collector":
        return ContextQuery("collector_status", "up", f"collector {name} up (1) / down (0)", "collector", name)
    return None


def context_series(query: ContextQuery, rows: pd.DataFrame) -> pd.DataFrame:
    """(time, value) of the query over the lake rows read around the alert."""
    if query.match_column is not None and not rows.empty:
        rows = rows[rows[query.match_column] == query.match_value]
    if rows.empty:
        return pd.DataFrame(columns=["time", "value"])
    if query.column == "running":
        values = rows.assign(value=(rows["client_state"] == "RUNNING").astype(int)).groupby("time")["value"].sum()
        return values.reset_index()
    if query.column == "failed":
        values = rows.assign(value=rows["produce_errors"].fillna(0) + rows["lost"].fillna(0)).groupby("time")["value"].sum()
        return values.reset_index()
    values = rows[["time", query.column]].rename(columns={query.column: "value"})
    values["value"] = values["value"].astype("float64")
    return values.sort_values("time").reset_index(drop=True)


def with_snapshot_point(query: ContextQuery, series: pd.DataFrame, snapshot: Snapshot | None) -> pd.DataFrame:
    """The series plus the snapshot's value at its time: the lake is flushed about once a minute,
    the snapshot every cycle, so the newest point (often the alert's cause) comes from it. The lake
    column charted (``query.column``) is read from the snapshot field of the same name: the
    ``cluster_health``, ``broker_metrics``, ``consumer_group`` and ``share_group`` columns charted have
    the names of :class:`kpulse.snapshot.ClusterHealth`, ``Broker``, ``ConsumerGroup`` and
    ``ShareGroupState`` fields."""
    if snapshot is None:
        return series
    value: object = None
    cluster = snapshot.get("cluster")
    if query.table == "cluster_health":
        value = cluster.get(query.column) if cluster else None
    elif query.table == "broker_metrics":
        value = next((b.get(query.column) for b in snapshot.get("brokers") or [] if b.get("id") == query.match_value),
                     None)
    elif query.table == "broker_state":
        up = next((b.get("up") for b in (cluster.get("brokers") or [] if cluster else [])
                   if b.get("id") == query.match_value), None)
        value = None if up is None else float(up)
    elif query.table == "consumer_group":
        value = next((g.get(query.column) for g in snapshot.get("consumer_groups") or []
                      if g.get("group_id") == query.match_value), None)
    elif query.table == "share_group":
        share = snapshot.get("share_groups")
        value = next((g.get(query.column) for g in (share.get("groups") or [] if share else [])
                      if g.get("group_id") == query.match_value), None)
    if not isinstance(value, int | float):  # a charted column is a number: None when not collected
        return series
    point = pd.DataFrame({"time": [pd.Timestamp(float(snapshot["time"]), unit="s", tz="UTC")], "value": [float(value)]})
    return point if series.empty else pd.concat([series, point], ignore_index=True)


def lake_columns(query: ContextQuery) -> list[str]:
    """The columns to read for ``query``."""
    if query.column == "running":
        return ["time", "application_id", "client_state"]
    if query.column == "failed":
        return ["time", "produce_errors", "lost"]
    return ["time", query.column] + ([query.match_column] if query.match_column else [])
