"""A lake for the dashboard's tests and benchmark, written with the real ``LakeWriter`` (and the
snapshot as ``kpulse collect`` publishes it), with the numbers the pages must show.

``write_lake(path, now, groups=..., partitions_per_group=..., history_cycles=...)`` writes one
cluster (``CLUSTER``) whose state is described by the returned :class:`Expected`."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from kpulse.lake.store import SNAPSHOT_DIR, LakeWriter

CLUSTER = "test"
APP = "orders-app"
INSTANCES = ("orders-app-1", "orders-app-2")
STREAMS_GROUP = "orders-streams"
"""A Streams group (KIP-1071) without metrics endpoints: Reconciling, its second member still
moving to its target tasks."""
CYCLE_SECONDS = 10.0
IDLE = {1: 0.55, 2: 0.15, 3: 0.05}
"""Request handler idle per broker: one healthy, one warning (< 0.2), one critical (< 0.1)."""
LOAD = {1: (40, 20), 2: (38, 14), 3: (12, 2)}
"""Broker -> (partitions, leaders): broker 3 is light (it was down)."""


@dataclass
class Expected:
    now: float
    snapshot_time: float
    brokers_up: int = 2
    brokers_total: int = 3
    under_replicated: int = 5
    offline: int = 1
    under_min_isr: int = 2
    groups: list[str] = field(default_factory=list)
    worst_group: str = ""
    """The group with the largest lag in seconds."""
    worst_group_lag: int = 0
    firing: list[tuple[str, str, str]] = field(default_factory=list)
    """(rule, severity, entity) firing now, in triage order."""
    slo_page: str = "partition-health"
    slo_page_budget: float = -0.25
    slo_rows: int = 3
    idle_groups: list[str] = field(default_factory=list)
    """Groups with no members whose offsets do not move (STOP), each firing ConsumerGroupStatus."""


def _group_name(index: int) -> str:
    return f"group-{index:04d}"


def write_lake(path: str, now: float, *, groups: int = 12, partitions_per_group: int = 4, history_cycles: int = 60,
               lag_cycles: int = 3, topics: int | None = None, snapshot_age: float = 2.0,
               slo_for_every_group: bool = False, idle_groups: int = 0) -> Expected:
    """Write the lake and the snapshot; ``history_cycles`` cycles of ``CYCLE_SECONDS`` end at ``now``.
    ``idle_groups`` more groups are STOP (no members, offsets still), each with its firing
    ConsumerGroupStatus alert in the snapshot and its ``firing`` event in ``alert_event``: an alert storm."""
    writer = LakeWriter(path, clock=lambda: now, max_buffered_rows=50_000_000)  # one flush for everything
    snapshot_time = now - snapshot_age
    times = [snapshot_time - CYCLE_SECONDS * i for i in range(history_cycles)][::-1]
    expected = Expected(now=now, snapshot_time=snapshot_time)
    topics = topics or max(1, groups)
    health, broker_state, broker_metrics, group_rows, statuses = [], [], [], [], []
    for t in times:
        health.append({"time": t, "cluster": CLUSTER, "brokers_up": 2, "brokers_total": 3, "topic_count": topics,
                       "partition_count": topics * partitions_per_group, "under_replicated_partitions": 5,
                       "offline_partitions": 1, "under_min_isr_partitions": 2, "preferred_leader_imbalance": 3,
                       "controller_id": 1, "active_controller_count": 1})
        for broker, idle in IDLE.items():
            up = broker != 3
            broker_state.append({"time": t, "cluster": CLUSTER, "broker_id": broker, "up": up,
                                 "partition_count": LOAD[broker][0], "leader_count": LOAD[broker][1]})
            broker_metrics.append({"time": t, "cluster": CLUSTER, "broker_id": broker,
                                   "request_handler_idle_ratio": idle if up else None,
                                   "network_processor_idle_ratio": 0.8 if up else None,
                                   "bytes_in_per_sec": 1000.0 * broker if up else None,
                                   "bytes_out_per_sec": 3000.0 * broker if up else None,
                                   "under_replicated_partitions": {1: 3, 2: 2, 3: None}[broker],
                                   "partition_count": LOAD[broker][0], "leader_count": LOAD[broker][1],
                                   "error": None if up else "connection refused"})
        for collector in ("cluster_metadata", "broker_metrics", "consumer_lag", "streams_apps", "probe"):
            statuses.append({"time": t, "cluster": CLUSTER, "collector": collector, "up": True,
                             "duration_seconds": 0.1})
    snapshot_groups: list[dict[str, Any]] = []
    for index in range(groups):
        name = _group_name(index)
        expected.groups.append(name)
        lag_seconds = float(index * 10)
        total_lag = index * 100
        status = "STOP" if index % 5 == 4 else "OK"
        for j, t in enumerate(times):
            group_rows.append({"time": t, "cluster": CLUSTER, "group_id": name, "state": "Stable", "members": 1,
                               "partitions": partitions_per_group, "total_lag": total_lag * (j + 1) // len(times),
                               "max_lag_seconds": lag_seconds * (j + 1) / len(times), "status": status,
                               "lag_seconds_threshold": 60.0})
        parts = [{"topic": f"topic-{index % topics:04d}", "partition": p, "committed_offset": 1000,
                  "log_end_offset": 1000 + total_lag // partitions_per_group,
                  "lag": total_lag // partitions_per_group, "lag_seconds": lag_seconds, "status": status,
                  "reasons": {}} for p in range(partitions_per_group)]
        snapshot_groups.append({"group_id": name, "state": "Stable", "members": 1,
                                "partition_count": partitions_per_group, "total_lag": total_lag,
                                "max_lag_seconds": lag_seconds, "status": status, "lag_seconds_threshold": 60.0,
                                "error": None, "partitions": parts})
    for index in range(idle_groups):
        name = f"idle-{index:05d}"
        expected.idle_groups.append(name)
        snapshot_groups.append({"group_id": name, "state": "Empty", "members": 0, "partition_count": 1,
                                "total_lag": 5, "max_lag_seconds": 30.0, "status": "STOP",
                                "lag_seconds_threshold": 600.0, "error": None,
                                "partitions": [{"topic": "retired", "partition": 0, "committed_offset": 5,
                                                "log_end_offset": 10, "lag": 5, "lag_seconds": 30.0,
                                                "status": "STOP", "reasons": {}}]})
    expected.worst_group = _group_name(groups - 1)
    expected.worst_group_lag = (groups - 1) * 100
    lag_rows = [{"time": t, "cluster": CLUSTER, "group_id": g["group_id"], "topic": p["topic"],
                 "partition": p["partition"], "committed_offset": p["committed_offset"],
                 "log_end_offset": p["log_end_offset"], "lag": p["lag"], "lag_seconds": p["lag_seconds"],
                 "status": p["status"]} for t in times[-lag_cycles:] for g in snapshot_groups for p in g["partitions"]]
    rebalance_start, rebalance_end = now - 300, now - 240
    instance_rows = [{"time": t, "cluster": CLUSTER, "application_id": APP, "instance": instance, "up": True,
                      "client_state": "REBALANCING" if rebalance_start <= t < rebalance_end else "RUNNING",
                      "alive_threads": 1, "failed_threads": 0, "group_state": "Stable", "expected_instances": 2}
                     for t in times for instance in INSTANCES]
    transitions = [{"time": when, "cluster": CLUSTER, "application_id": APP, "instance": instance,
                    "from_state": before, "to_state": after}
                   for instance in INSTANCES
                   for when, before, after in ((rebalance_start, "RUNNING", "REBALANCING"),
                                               (rebalance_end, "REBALANCING", "RUNNING"))]
    probe = [{"time": t, "cluster": CLUSTER, "broker_id": b, "partition": b - 1, "produced": 1, "produce_errors": 0,
              "consumed": 1, "lost": 0, "duplicated": 0, "latency_p50_ms": 5.0, "latency_p99_ms": 9.0,
              "latency_max_ms": 9.0} for t in times for b in (1, 2)]
    lag_group = _group_name(groups - 1)
    alert_rows = [
        {"time": now - 900, "cluster": CLUSTER, "rule": "UnderReplicatedPartitions", "severity": "warning",
         "entity": f"cluster/{CLUSTER}", "state": "firing", "value": 5.0, "since": now - 960,
         "summary": "5 under-replicated partitions"},
        {"time": now - 600, "cluster": CLUSTER, "rule": "OfflinePartitions", "severity": "critical",
         "entity": f"cluster/{CLUSTER}", "state": "firing", "value": 1.0, "since": now - 600,
         "summary": "1 offline partitions (no leader): clients fail now"},
        {"time": now - 500, "cluster": CLUSTER, "rule": "BrokerDown", "severity": "critical", "entity": "broker/3",
         "state": "firing", "value": 0.0, "since": now - 560, "summary": "broker 3 is down"},
        {"time": now - 400, "cluster": CLUSTER, "rule": "ConsumerGroupLagSeconds", "severity": "warning",
         "entity": f"group/{lag_group}", "state": "firing", "value": float((groups - 1) * 10),
         "since": now - 460, "summary": f"consumer group {lag_group} is behind"},
        {"time": now - 100, "cluster": CLUSTER, "rule": "ConsumerGroupStatus", "severity": "warning",
         "entity": "group/old-group", "state": "resolved", "value": 3.0, "since": now - 2000,
         "summary": "resolved: consumer group old-group is STOP"},
    ]
    alert_rows += [{"time": now - 300 + index * 0.01, "cluster": CLUSTER, "rule": "ConsumerGroupStatus",
                    "severity": "warning", "entity": f"group/{name}", "state": "firing", "value": 5.0,
                    "since": now - 300 + index * 0.01,
                    "summary": f"consumer group {name} is STOP: no members and the committed offsets do not move, "
                               "lag 5"} for index, name in enumerate(expected.idle_groups)]
    expected.firing = [("OfflinePartitions", "critical", f"cluster/{CLUSTER}"), ("BrokerDown", "critical", "broker/3"),
                       ("UnderReplicatedPartitions", "warning", f"cluster/{CLUSTER}"),
                       ("ConsumerGroupLagSeconds", "warning", f"group/{lag_group}")]
    slo_rows, minute_rows = _slo_rows(now, groups, slo_for_every_group)
    expected.slo_rows = 3 + (groups - 1 if slo_for_every_group else 0)
    for table, rows in (("cluster_health", health), ("broker_state", broker_state), ("broker_metrics", broker_metrics),
                        ("consumer_group", group_rows), ("consumer_lag", lag_rows), ("streams_instance", instance_rows),
                        ("streams_transition", transitions), ("probe", probe), ("alert_event", alert_rows),
                        ("collector_status", statuses), ("slo_status", slo_rows), ("slo_minute", minute_rows)):
        writer.append(table, rows)
    result = writer.flush()
    assert result.ok, result.errors
    snapshot = _snapshot(snapshot_time, topics, partitions_per_group, snapshot_groups, rebalance_start, rebalance_end,
                         alert_rows)
    directory = os.path.join(path, SNAPSHOT_DIR)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, f"{CLUSTER}.json"), "w") as out:
        json.dump(snapshot, out)
    return expected


def _slo_rows(now: float, groups: int, every_group: bool) -> tuple[list[dict], list[dict]]:
    """Three SLOs evaluated every minute for the last hour: one paging with its budget overspent,
    one ticket, one healthy (and, with ``every_group``, a healthy freshness SLO per other group)."""
    healthy_groups = [("consumer-freshness", _group_name(i), "consumer_group", "consumer_freshness_minutes", None, None,
                       0.9, 0.5) for i in range(groups - 1)] if every_group else []
    specs = healthy_groups + [("partition-health", CLUSTER, "cluster", "partition_health_minutes", "page", "page_1h_5m", -0.25, 20.0),
             ("consumer-freshness", _group_name(groups - 1), "consumer_group", "consumer_freshness_minutes", "ticket",
              "ticket_1d_2h", 0.4, 3.5),
             ("streams-availability", APP, "streams_app", "streams_availability_minutes", None, None, 0.97, 0.2)]
    status, minutes = [], []
    evaluated = [now - 60 * (59 - i) for i in range(60)]
    for slo, entity, scope, indicator, alert, conditions, budget, burn in specs:
        for i, t in enumerate(evaluated):
            remaining = 1.0 - (1.0 - budget) * (i + 1) / len(evaluated)
            status.append({"time": t, "cluster": CLUSTER, "slo": slo, "entity": entity, "scope": scope,
                           "indicator": indicator, "budgeting_method": "Timeslices", "objective": 0.999,
                           "window": "30d", "sli": 0.999 - 0.001 * (1 - remaining), "good_events": 1000 + i,
                           "valid_events": 1001 + i, "error_budget_remaining": remaining, "burn_rate_5m": burn,
                           "burn_rate_30m": burn, "burn_rate_1h": burn, "burn_rate_2h": burn, "burn_rate_6h": burn,
                           "burn_rate_1d": burn, "burn_rate_3d": burn, "burn_rate_window": burn,
                           "time_to_exhaustion_seconds": None if remaining <= 0 else 3600.0 * remaining / burn,
                           "alert": alert if i == len(evaluated) - 1 else None,
                           "alert_conditions": conditions if i == len(evaluated) - 1 else None,
                           # 30 days at 0.999 allow 43.2 bad minutes
                           "bad_slices": round((1 - remaining) * 43.2), "allowed_bad_slices": 43.2,
                           "observed_minutes": 1001 + i, "coverage": (1001 + i) / 43200, "min_events": None,
                           "budget_status": "exhausted" if remaining < 0 else "ok"})
            minutes.append({"time": t - 60, "cluster": CLUSTER, "slo": slo, "entity": entity,
                            "good": 1 if burn < 1 else 0, "valid": 1})
    return status, minutes


def _snapshot(taken: float, topics: int, partitions_per_group: int, groups: list[dict], rebalance_start: float,
              rebalance_end: float, alert_rows: list[dict]) -> dict:
    brokers: list[dict[str, Any]]
    brokers = [{"id": b, "up": b != 3, "partition_count": LOAD[b][0], "leader_count": LOAD[b][1],
                "preferred_leader_count": LOAD[b][1], "request_handler_idle_ratio": IDLE[b] if b != 3 else None,
                "network_processor_idle_ratio": 0.8 if b != 3 else None,
                "bytes_in_per_sec": 1000.0 * b if b != 3 else None, "bytes_out_per_sec": 3000.0 * b if b != 3 else None,
                "messages_in_per_sec": 10.0, "produce_p99_ms": 4.0, "fetch_p99_ms": 500.0,
                "error": None if b != 3 else "connection refused", "reasons": {}} for b in (1, 2, 3)]
    firing = [{"rule": r["rule"], "severity": r["severity"], "entity": r["entity"], "value": r["value"],
               "summary": r["summary"], "since": r["since"], "runbook": r["rule"]}
              for r in alert_rows if r["state"] == "firing"]
    return {
        "time": taken, "cluster_name": CLUSTER,
        "cluster": {"controller_id": 1, "brokers": [{"id": b, "up": b != 3, "address": f"127.0.0.1:{9090 + b}"}
                                                    for b in (1, 2, 3)],
                    "brokers_up": 2, "brokers_total": 3, "topic_count": topics,
                    "partition_count": topics * partitions_per_group, "under_replicated_partitions": 5,
                    "offline_partitions": 1, "under_min_isr_partitions": 2, "preferred_leader_imbalance": 3,
                    "active_controller_count": 1, "reasons": {},
                    "problem_partitions": [{"topic": "orders", "partition": 2, "leader": 1, "replicas": [1, 2, 3],
                                            "isr": [1], "problems": ["under_min_isr", "under_replicated"],
                                            "elr": [2], "last_known_elr": []}],
                    "fenced_broker_count": 1, "active_broker_count": 2, "metadata_error_count": 0,
                    "quorum": {"leader_id": 1, "leader_epoch": 5, "high_watermark": 1200,
                               "voters": [{"id": 1, "log_end_offset": 1200, "lag": 0, "last_fetch_time": taken,
                                           "last_caught_up_time": taken, "caught_up_age_seconds": 0.0},
                                          {"id": 2, "log_end_offset": 1199, "lag": 1, "last_fetch_time": taken - 0.5,
                                           "last_caught_up_time": taken - 0.5, "caught_up_age_seconds": 0.5},
                                          {"id": 3, "log_end_offset": 700, "lag": 500, "last_fetch_time": taken - 90,
                                           "last_caught_up_time": taken - 95, "caught_up_age_seconds": 95.0}],
                               "observers": [], "max_voter_lag": 500, "max_voter_caught_up_age_seconds": 95.0,
                               "voter_lag_threshold_records": 1000, "voter_lag_threshold_seconds": 30.0}},
        "brokers": brokers,
        "consumer_groups": groups,
        "streams_apps": [{"application_id": APP, "protocol": "classic", "group": None,
                          "state": "RUNNING", "group_state": "Stable", "members": 2,
                          "group_error": None, "expected_instances": 2,
                          "instances": [{"id": i, "endpoint": f"http://127.0.0.1:1939{n}/metrics", "state": "RUNNING",
                                         "up": True, "alive_threads": 1, "failed_threads": 0,
                                         "thread_states": {f"{i}-StreamThread-1": "RUNNING"}, "error": None}
                                        for n, i in enumerate(INSTANCES, 1)],
                          "transitions": [{"time": rebalance_start, "instance": i, "from": "RUNNING",
                                           "to": "REBALANCING", "inferred": False} for i in INSTANCES]
                          + [{"time": rebalance_end, "instance": i, "from": "REBALANCING", "to": "RUNNING",
                              "inferred": False} for i in INSTANCES],
                          "rebalances": {"count": 1, "total_seconds": 60.0, "ongoing_seconds": None}},
                         streams_group_app(taken)],
        "probe": {"topic": "kpulse-probe", "produce_availability": 1.0, "consume_availability": 1.0, "lost": 0},
        "alerts": firing,
        "collectors": [{"name": n, "up": True, "duration_seconds": 0.1, "error": None}
                       for n in ("cluster_metadata", "broker_metrics", "consumer_lag", "streams_apps", "probe")],
    }


def streams_group_app(taken: float) -> dict:
    """The snapshot entry of :data:`STREAMS_GROUP`: two members, ``m-2`` reconciling (it has no
    task yet, its target is subtopology 0 partition 1), input lag 7 + 0 + 5."""
    def tasks(active, target):
        return {"active_tasks": active, "standby_tasks": {}, "warmup_tasks": {}, "target_active_tasks": target,
                "target_standby_tasks": {}, "target_warmup_tasks": {}}

    members = [{"member_id": "m-1", "member_epoch": 8, "process_id": "p-1", "client_id": "orders-streams-p-1",
                "client_host": "/10.0.0.1", "instance_id": None, "user_endpoint": None, "topology_epoch": 0,
                "is_classic": False, "reconciling": False, **tasks({"0": [0], "1": [0, 1]}, {"0": [0], "1": [0, 1]})},
               {"member_id": "m-2", "member_epoch": 7, "process_id": "p-2", "client_id": "orders-streams-p-2",
                "client_host": "/10.0.0.2", "instance_id": None, "user_endpoint": "10.0.0.2:7070",
                "topology_epoch": 0, "is_classic": False, "reconciling": True, **tasks({}, {"0": [1]})}]
    lag = [("orders", 0, 3, 10, 7), ("orders-streams-by-customer-repartition", 0, 4, 4, 0),
           ("orders-streams-by-customer-repartition", 1, 1, 6, 5)]
    return {"application_id": STREAMS_GROUP, "protocol": "streams", "state": None, "group_state": "Reconciling",
            "members": 2, "group_error": None, "expected_instances": None, "instances": [],
            "group": {"state": "Reconciling", "group_epoch": 8, "assignment_epoch": 8, "topology_epoch": 0,
                      "missing_topics": None,
                      "subtopologies": [{"subtopology_id": "0", "source_topics": ["orders"],
                                         "repartition_source_topics": [],
                                         "repartition_sink_topics": ["orders-streams-by-customer-repartition"],
                                         "changelog_topics": []},
                                        {"subtopology_id": "1",
                                         "source_topics": ["orders-streams-by-customer-repartition"],
                                         "repartition_source_topics": ["orders-streams-by-customer-repartition"],
                                         "repartition_sink_topics": [],
                                         "changelog_topics": ["orders-streams-counts-changelog"]}],
                      "members": members, "input_scope": "assigned",
                      "input_partitions": [{"topic": t, "partition": p, "committed_offset": c, "log_end_offset": e,
                                            "lag": lag_, "error": None} for t, p, c, e, lag_ in lag],
                      "total_lag": 12, "lag_error": None},
            "transitions": [{"time": taken - 30, "instance": "(group)", "from": "Stable", "to": "Reconciling",
                             "inferred": False}],
            "rebalances": {"count": 1, "total_seconds": 30.0, "ongoing_seconds": 30.0}}
