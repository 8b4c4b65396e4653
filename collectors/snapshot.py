"""Composes the snapshot (``kpulse/snapshot.py``: its types, a doc per field, the JSON Schema) of
one collection cycle, once, from everything the cycle produced. Pure: no I/O.

A cycle is composed in two steps, each building new values and changing none it is given:
:func:`observe` shapes what the cycle observed (the collectors' sections, the connection check, the
expected-idle labels the groups get, ``kpulse/expected_idle.py``), which the alert rules evaluate;
:func:`compose` makes the snapshot of that observation and of what the cycle made of it
(:class:`Outcome`: the alerts firing, the rules that raised, the alert delivery, the lake rows
refused). Nothing changes the snapshot after: the exporter, the lake's ``_snapshots`` and the pages
read it as it was composed.

The built-in collectors' ``cluster`` (metadata) and ``broker_metrics`` sections are merged into the
snapshot's ``cluster`` and ``brokers``; ``consumer_groups`` (labelled), ``streams_apps``,
``share_groups`` and ``probe`` are taken as they are; the sections add-on collectors declare follow
under their own names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast
from collections.abc import Iterable, Mapping, Sequence

from collectors.protocol import CollectorStatus
from kpulse.config.model import ConsumerGroupsConfig
from kpulse.expected_idle import Mark, labelled
from kpulse.snapshot import (AlertmanagerDelivery, Broker, BrokerMetricsSection, ClusterConnection, ClusterHealth,
                             ClusterMetadataSection, CollectorState, ConsumerGroup, FiringAlert, Snapshot)

_METRIC_FIELDS = ("request_handler_idle_ratio", "network_processor_idle_ratio", "bytes_in_per_sec",
                  "bytes_out_per_sec", "messages_in_per_sec", "bytes_in_total", "bytes_out_total",
                  "messages_in_total", "produce_p99_ms", "fetch_p99_ms",
                  "metadata_error_count", "fenced_broker_count", "active_broker_count", "metadata_apply_lag_ms")
_KRAFT_CLUSTER_FIELDS = ("fenced_broker_count", "active_broker_count", "metadata_error_count")
"""The cluster's KRaft controller figures, from broker metrics (``collectors/brokers/broker_values.py``)."""


@dataclass(frozen=True)
class Outcome:
    """What a cycle made of its observation, which its snapshot carries beside it."""

    alerts: list[FiringAlert] = field(default_factory=list)
    """The alerts firing after the cycle's evaluation (``alerting/state.py``)."""
    alert_errors: list[str] = field(default_factory=list)
    """The alert rules that raised, one line each (in the snapshot only when there are any)."""
    alert_delivery: list[AlertmanagerDelivery] | None = None
    """The delivery to each configured Alertmanager; ``None``: no delivery configured (left out of the
    snapshot)."""
    lake_errors: list[str] = field(default_factory=list)
    """The lake rows refused this cycle, one line each (in the snapshot only when there are any)."""


def observe(cluster_name: str, now: float, sections: Mapping[str, Any], statuses: Sequence[CollectorStatus],
            add_on_sections: Iterable[str] = (), *, connection: ClusterConnection | None = None,
            consumer_groups: ConsumerGroupsConfig | None = None,
            idle_marks: Mapping[str, Mark] | None = None) -> Snapshot:
    """What one cycle observed, in the snapshot's shape with no alert firing yet: what the alert rules
    evaluate, and what :func:`compose` makes the snapshot of. ``add_on_sections``: the names of the
    sections add-on collectors declare, each in it (null when not returned); ``connection``: the check
    made before the collectors ran (left out when none was made); ``consumer_groups`` and
    ``idle_marks``: the cluster's config and expected-idle marks, which decide the groups'
    ``expected_idle`` labels (without a config, the groups are taken as returned)."""
    down = {s.name: s.error for s in statuses if not s.up}
    metadata: ClusterMetadataSection | None = sections.get("cluster")
    metrics: BrokerMetricsSection | None = sections.get("broker_metrics") or None
    collectors: list[CollectorState] = [{"name": s.name, "up": s.up, "duration_seconds": round(s.duration_seconds, 4),
                                         "error": s.error} for s in statuses]
    groups: list[ConsumerGroup] = sections.get("consumer_groups", [])
    if consumer_groups is not None:
        groups = labelled(groups, consumer_groups, idle_marks or {})
    snapshot: Snapshot = {
        "time": now,
        "cluster_name": cluster_name,
        "cluster": _cluster(metadata, metrics, down),
        "brokers": _brokers(metadata, metrics, down),
        "consumer_groups": groups,
        "streams_apps": sections.get("streams_apps", []),
        "share_groups": sections.get("share_groups"),
        "probe": sections.get("probe"),
        "alerts": [],
        "collectors": collectors,
    }
    observation: dict[str, Any] = {**snapshot, **{name: sections.get(name) for name in add_on_sections}}
    if connection is not None:
        observation["connection"] = connection
    return cast(Snapshot, observation)  # with the add-on sections, which a TypedDict cannot name


def compose(observation: Snapshot, outcome: Outcome) -> Snapshot:
    """The snapshot of one finished cycle: its ``observation`` (:func:`observe`) with the alerts
    firing after it and, when there are any, the rules that raised, the alert delivery and the lake
    rows refused. A new dict: neither argument is changed."""
    snapshot: Snapshot = {**observation, "alerts": outcome.alerts}
    if outcome.alert_errors:
        snapshot["alert_errors"] = outcome.alert_errors
    if outcome.alert_delivery is not None:
        snapshot["alert_delivery"] = outcome.alert_delivery
    if outcome.lake_errors:
        snapshot["lake_errors"] = outcome.lake_errors
    return snapshot


def _cluster(metadata: ClusterMetadataSection | None, metrics_section: BrokerMetricsSection | None,
             down: Mapping[str, str | None]) -> ClusterHealth:
    metrics: Mapping[str, Any] = metrics_section or {}
    cluster: dict[str, Any]
    if metadata is None:
        why = down.get("cluster_metadata", "cluster metadata not collected")
        keys = ("controller_id", "brokers_up", "brokers_total", "under_replicated_partitions", "offline_partitions",
                "under_min_isr_partitions", "preferred_leader_imbalance", "topic_count", "partition_count")
        cluster = {key: None for key in keys}
        cluster.update(brokers=[], problem_partitions=[], quorum=None, topics=None,
                       reasons={key: why for key in (*keys, "quorum", "topics")})
    else:
        cluster = {key: value for key, value in metadata.items() if key != "broker_load"}
        cluster["reasons"] = dict(metadata.get("reasons", {}))
        cluster.setdefault("quorum", None)
        if cluster["quorum"] is None:
            cluster["reasons"].setdefault("quorum", "not read")
    from_admin: Mapping[str, int | None] = cluster.pop("kraft_from_admin", None) or {}
    admin_reasons = {key: cluster["reasons"].get(reason) for key, reason in _ADMIN_REASONS.items()}
    for key in ("active_controller_count", "controller_id", *_KRAFT_CLUSTER_FIELDS):
        value = metrics.get(key)
        cluster[key] = value if value is not None else from_admin.get(key)
    if cluster["controller_id"] is not None:
        cluster["reasons"].pop("controller_id", None)
    elif from_admin and admin_reasons["controller_id"]:  # why the Admin API's fallback did not tell it either
        cluster["reasons"]["controller_id"] = admin_reasons["controller_id"]
    for key in ("active_controller_count", "controller_id", *_KRAFT_CLUSTER_FIELDS):
        if cluster[key] is None:
            cluster["reasons"].setdefault(key, (from_admin and admin_reasons.get(key))
                                          or (metrics.get("note") and down.get("cluster_metadata"))
                                          or (metrics.get("reasons") or {}).get(key)
                                          or down.get("broker_metrics") or metrics.get("note")
                                          or "needs broker metrics")
    return cast(ClusterHealth, cluster)  # the metadata section's fields, with the metrics' and the reasons


_ADMIN_REASONS = {"controller_id": "quorum", "active_controller_count": "quorum",
                  "fenced_broker_count": "kraft_brokers", "active_broker_count": "kraft_brokers"}
"""Which of the metadata collector's reasons says why a KRaft figure read from the Admin API
(``kraft_from_admin``, without broker metrics) is null."""


def _brokers(metadata: ClusterMetadataSection | None, metrics_section: BrokerMetricsSection | None,
             down: Mapping[str, str | None]) -> list[Broker]:
    metrics: Mapping[str, Any] = metrics_section or {}
    by_id: dict[int, dict[str, Any]] = {}
    for broker in metadata.get("brokers", []) if metadata is not None else []:
        by_id[broker["id"]] = {"id": broker["id"], "up": broker["up"]}
    for load in metadata.get("broker_load", []) if metadata is not None else []:
        entry = by_id.setdefault(load["broker_id"], {"id": load["broker_id"], "up": None})
        entry.update(partition_count=load["partition_count"], leader_count=load["leader_count"],
                     preferred_leader_count=load["preferred_leader_count"])
    metric_rows = {row["broker_id"]: row for row in metrics.get("brokers", [])}
    for broker_id in metric_rows.keys() - by_id.keys():
        by_id[broker_id] = {"id": broker_id, "up": None}
    metrics_missing = down.get("broker_metrics") or metrics.get("note") or "no metrics endpoint for this broker"
    result: list[Broker] = []
    for broker_id in sorted(by_id):
        entry = by_id[broker_id]
        row = metric_rows.get(broker_id)
        reasons = dict(row.get("reasons", {})) if row else {}
        for name in _METRIC_FIELDS:
            entry[name] = row.get(name) if row else None
            if entry[name] is None and name not in reasons:
                reasons[name] = metrics_missing
        for name in ("partition_count", "leader_count"):
            if entry.get(name) is None and row is not None:
                entry[name] = row.get(name)
            entry.setdefault(name, None)
        entry.setdefault("preferred_leader_count", None)
        entry["error"] = row.get("error") if row else None
        entry["reasons"] = reasons
        result.append(cast(Broker, entry))  # every field of a Broker set above
    return result
