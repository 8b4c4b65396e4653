"""The snapshot: what `kpulse collect --once --json` prints and the dashboard reads, composed from
the sections the collectors return. Pure: no I/O.

Shape (every value may be null, with ``reasons`` saying why)::

    {"time", "cluster_name",
     "cluster": {controller_id, brokers[{id, up, address}], brokers_up, brokers_total,
                 under_replicated_partitions, offline_partitions, under_min_isr_partitions,
                 active_controller_count, preferred_leader_imbalance, topic_count, partition_count,
                 problem_partitions[...], reasons{}},
     "brokers": [{id, up, request_handler_idle_ratio, network_processor_idle_ratio,
                  bytes_in_per_sec, bytes_out_per_sec, messages_in_per_sec, partition_count,
                  leader_count, preferred_leader_count, produce_p99_ms, fetch_p99_ms, error, reasons}],
     "consumer_groups": [{group_id, state, members, partition_count, total_lag, total_lag_partial,
                          lag_unknown_partitions, max_lag_seconds, max_lag_seconds_partial,
                          lag_seconds_unknown_partitions, status, lag_seconds_threshold, error,
                          reasons{}, partitions[{topic, partition, committed_offset,
                          log_end_offset, lag, lag_seconds, status, reasons{}}]}],
     "streams_apps": [{application_id, state, instances[{id, state}], transitions[{time, instance, from, to}]}],
     "probe": {...} | null,
     "alerts": [{rule, severity, entity, value, summary, since}],
     "collectors": [{name, up, duration_seconds, error}]}

A group's ``total_lag`` / ``max_lag_seconds`` are over the partitions whose value is known;
``lag_unknown_partitions`` / ``lag_seconds_unknown_partitions`` count the partitions with a
committed offset that were left out (a log end not read while a broker is down), and
``total_lag_partial`` / ``max_lag_seconds_partial`` are true when the value is over some partitions
but not all (a lower bound), with ``reasons`` naming the partitions and why.
"""

from __future__ import annotations

from typing import Any

import orjson

from collectors.protocol import CollectorStatus

_METRIC_FIELDS = ("request_handler_idle_ratio", "network_processor_idle_ratio", "bytes_in_per_sec",
                  "bytes_out_per_sec", "messages_in_per_sec", "produce_p99_ms", "fetch_p99_ms")


def compose(cluster_name: str, now: float, sections: dict[str, Any],
            statuses: list[CollectorStatus]) -> dict[str, Any]:
    down = {s.name: s.error for s in statuses if not s.up}
    metadata = sections.get("cluster")
    metrics = sections.get("broker_metrics") or {}
    cluster = _cluster(metadata, metrics, down)
    return {
        "time": now,
        "cluster_name": cluster_name,
        "cluster": cluster,
        "brokers": _brokers(metadata, metrics, down),
        "consumer_groups": sections.get("consumer_groups", []),
        "streams_apps": sections.get("streams_apps", []),
        "probe": sections.get("probe"),
        "alerts": [],
        "collectors": [{"name": s.name, "up": s.up, "duration_seconds": round(s.duration_seconds, 4),
                        "error": s.error} for s in statuses],
    }


_JSON_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


def to_json(snapshot: dict[str, Any]) -> bytes:
    """The snapshot as JSON (what ``_snapshots/<cluster>.json`` holds): keys made text, anything not
    JSON by nature (a datetime, a dataclass) written as ``str()`` of it, NaN and infinity as null."""
    return orjson.dumps(snapshot, default=str, option=_JSON_OPTIONS)


def _cluster(metadata: dict | None, metrics: dict, down: dict[str, str]) -> dict[str, Any]:
    if metadata is None:
        why = down.get("cluster_metadata", "cluster metadata not collected")
        keys = ("controller_id", "brokers_up", "brokers_total", "under_replicated_partitions", "offline_partitions",
                "under_min_isr_partitions", "preferred_leader_imbalance", "topic_count", "partition_count")
        cluster = {key: None for key in keys}
        cluster.update(brokers=[], problem_partitions=[], reasons={key: why for key in keys})
    else:
        cluster = {key: value for key, value in metadata.items() if key != "broker_load"}
        cluster["reasons"] = dict(metadata.get("reasons", {}))
    cluster["active_controller_count"] = metrics.get("active_controller_count")
    cluster["controller_id"] = metrics.get("controller_id")
    if cluster["controller_id"] is not None:
        cluster["reasons"].pop("controller_id", None)
    for key in ("active_controller_count", "controller_id"):
        if cluster[key] is None:
            cluster["reasons"].setdefault(key, (metrics.get("reasons") or {}).get(key)
                                          or down.get("broker_metrics") or metrics.get("note")
                                          or "needs broker metrics")
    return cluster


def _brokers(metadata: dict | None, metrics: dict, down: dict[str, str]) -> list[dict[str, Any]]:
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
