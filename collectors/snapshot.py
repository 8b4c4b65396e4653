"""Composes the snapshot (``kpulse/snapshot.py``: its types, a doc per field, the JSON Schema)
from the sections the collectors return. Pure: no I/O.

The built-in collectors' ``cluster`` (metadata) and ``broker_metrics`` sections are merged into the
snapshot's ``cluster`` and ``brokers``; ``consumer_groups``, ``streams_apps``, ``share_groups`` and
``probe`` are taken as they are; the sections add-on collectors declare follow under their own names.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Iterable

from collectors.protocol import CollectorStatus
from kpulse.snapshot import (Broker, BrokerMetricsSection, ClusterHealth, ClusterMetadataSection, CollectorState,
                             Snapshot)

_METRIC_FIELDS = ("request_handler_idle_ratio", "network_processor_idle_ratio", "bytes_in_per_sec",
                  "bytes_out_per_sec", "messages_in_per_sec", "produce_p99_ms", "fetch_p99_ms",
                  "metadata_error_count", "fenced_broker_count", "active_broker_count", "metadata_apply_lag_ms")
_KRAFT_CLUSTER_FIELDS = ("fenced_broker_count", "active_broker_count", "metadata_error_count")
"""The cluster's KRaft controller figures, from broker metrics (``collectors/brokers/broker_values.py``)."""


def compose(cluster_name: str, now: float, sections: dict[str, Any], statuses: list[CollectorStatus],
            add_on_sections: Iterable[str] = ()) -> Snapshot:
    """The snapshot of one cycle (``alerts`` empty: the loop evaluates them on it). ``add_on_sections``:
    the names of the sections add-on collectors declare, each in the snapshot (null when not returned)."""
    down = {s.name: s.error for s in statuses if not s.up}
    metadata: ClusterMetadataSection | None = sections.get("cluster")
    metrics: BrokerMetricsSection = sections.get("broker_metrics") or {}
    collectors: list[CollectorState] = [{"name": s.name, "up": s.up, "duration_seconds": round(s.duration_seconds, 4),
                                         "error": s.error} for s in statuses]
    snapshot: Snapshot = {
        "time": now,
        "cluster_name": cluster_name,
        "cluster": _cluster(metadata, metrics, down),
        "brokers": _brokers(metadata, metrics, down),
        "consumer_groups": sections.get("consumer_groups", []),
        "streams_apps": sections.get("streams_apps", []),
        "share_groups": sections.get("share_groups"),
        "probe": sections.get("probe"),
        "alerts": [],
        "collectors": collectors,
    }
    for name in add_on_sections:
        snapshot[name] = sections.get(name)  # type: ignore[literal-required]  # declared by its collector
    return snapshot


def _cluster(metadata: ClusterMetadataSection | None, metrics: BrokerMetricsSection,
             down: dict[str, str]) -> ClusterHealth:
    if metadata is None:
        why = down.get("cluster_metadata", "cluster metadata not collected")
        keys = ("controller_id", "brokers_up", "brokers_total", "under_replicated_partitions", "offline_partitions",
                "under_min_isr_partitions", "preferred_leader_imbalance", "topic_count", "partition_count")
        cluster = {key: None for key in keys}
        cluster.update(brokers=[], problem_partitions=[], quorum=None, reasons={key: why for key in (*keys, "quorum")})
    else:
        cluster = {key: value for key, value in metadata.items() if key != "broker_load"}
        cluster["reasons"] = dict(metadata.get("reasons", {}))
        cluster.setdefault("quorum", None)
        if cluster["quorum"] is None:
            cluster["reasons"].setdefault("quorum", "not read")
    from_admin = cluster.pop("kraft_from_admin", None) or {}
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
    return cluster


_ADMIN_REASONS = {"controller_id": "quorum", "active_controller_count": "quorum",
                  "fenced_broker_count": "kraft_brokers", "active_broker_count": "kraft_brokers"}
"""Which of the metadata collector's reasons says why a KRaft figure read from the Admin API
(``kraft_from_admin``, without broker metrics) is null."""


def _brokers(metadata: ClusterMetadataSection | None, metrics: BrokerMetricsSection,
             down: dict[str, str]) -> list[Broker]:
    by_id: dict[int, dict[str, Any]] = {}
    for broker in (metadata or {}).get("brokers", []):
        by_id[broker["id"]] = {"id": broker["id"], "up": broker["up"]}
    for load in (metadata or {}).get("broker_load", []):
        entry = by_id.setdefault(load["broker_id"], {"id": load["broker_id"], "up": None})
        entry.update(partition_count=load["partition_count"], leader_count=load["leader_count"],
                     preferred_leader_count=load["preferred_leader_count"])
    metric_rows = {row["broker_id"]: row for row in metrics.get("brokers", [])}
    for broker_id in metric_rows.keys() - by_id.keys():
        by_id[broker_id] = {"id": broker_id, "up": None}
    metrics_missing = down.get("broker_metrics") or metrics.get("note") or "no metrics endpoint for this broker"
    result = []
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
        result.append(entry)
    return result
