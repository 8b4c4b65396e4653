"""The consumer lag collector: per group and partition, committed offset, log end, lag in
offsets and in seconds, and a Burrow-style status (rules in ``collectors/lag_status.py``).

It keeps, between cycles, the (log end, time) history of every consumed partition (for time lag)
and the last observations of every group's partitions (for status). Reading the cluster is in
``collectors/group_offsets.py``; the arithmetic is in ``lag_math`` and ``lag_status``.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from collectors.group_offsets import ClusterOffsets, RequestCache, read_cluster_offsets
from collectors.lag_math import OffsetHistory, estimate_lag_seconds, partition_lag
from collectors.lag_status import PartitionStatus, StatusTracker, worst_status
from collectors.protocol import CollectContext, CollectorResult, Columns
from kpulse.kafka_clients import LazyAdmin


class ConsumerLagCollector:
    name = "consumer_lag"

    def __init__(self, cluster_config, admin_factory: Callable[[dict], Any] | None = None,
                 read_offsets: Callable[..., ClusterOffsets] = read_cluster_offsets, concurrency: int = 32):
        self._cluster = cluster_config
        self._admin = LazyAdmin(cluster_config, admin_factory)
        self._read_offsets = read_offsets
        self._concurrency = concurrency
        self.history = OffsetHistory()
        self.status = StatusTracker()
        self._consumed: list[tuple[str, int]] = []
        """The partitions consumed at the last reading, sorted: their log ends are asked for first."""
        self._consumed_set: set[tuple[str, int]] = set()
        self._requests = RequestCache()

    def collect(self, context: CollectContext) -> CollectorResult:
        groups_config = self._cluster.consumer_groups
        offsets = self._read_offsets(self._admin.get(), groups_config.monitors, concurrency=self._concurrency,
                                     expected=self._consumed, request_cache=self._requests)
        consumed = {tp for group in offsets.groups for tp in group.committed}
        if consumed != self._consumed_set:
            self._consumed, self._consumed_set = sorted(consumed), consumed
        return self.evaluate(offsets, context)

    def evaluate(self, offsets: ClusterOffsets, context: CollectContext) -> CollectorResult:
        """Turn one reading of the cluster into the snapshot section and lake rows."""
        now = context.now
        for (topic, partition), log_end in offsets.log_end.items():
            self.history.record(topic, partition, log_end, now)
        groups_config = self._cluster.consumer_groups
        groups, group_rows = [], []
        for group in offsets.groups:
            has_members = group.members > 0
            partitions, statuses = [], []
            for (topic, partition), committed in sorted(group.committed.items()):
                log_end = offsets.log_end.get((topic, partition))
                status = self.status.observe_and_status(group.group_id, topic, partition, now, committed, log_end,
                                                        has_members)
                estimate = estimate_lag_seconds(self.history, topic, partition, committed, log_end, now)
                statuses.append(status)
                reasons = {}
                if log_end is None:
                    reasons["log_end_offset"] = offsets.log_end_errors.get((topic, partition), "not read")
                if committed is None:
                    reasons["committed_offset"] = "no committed offset"
                if estimate.seconds is None and estimate.reason:
                    reasons["lag_seconds"] = estimate.reason
                row = {"topic": topic, "partition": partition, "committed_offset": committed,
                       "log_end_offset": log_end, "lag": partition_lag(committed, log_end),
                       "lag_seconds": _round(estimate.seconds), "status": _STATUS_TEXT.get(status)}
                partitions.append({**row, "reasons": reasons} if reasons else row)
            lags = [p["lag"] for p in partitions if p["lag"] is not None]
            seconds = [p["lag_seconds"] for p in partitions if p["lag_seconds"] is not None]
            status = worst_status(statuses)
            summary = {
                "group_id": group.group_id, "state": group.state, "members": group.members,
                "partition_count": len(partitions),
                "total_lag": sum(lags) if lags else None,
                "max_lag_seconds": max(seconds) if seconds else None,
                "status": status.value if status else None,
                "lag_seconds_threshold": groups_config.lag_seconds_threshold_for(group.group_id),
                "error": group.error,
            }
            if status is None and partitions:
                summary["reasons"] = {"status": "not enough readings yet: the status needs "
                                                f"{self.status.min_observations} per partition"}
            groups.append({**summary, "partitions": partitions})
            group_rows.append({"time": now, "cluster": self._cluster.name, "partitions": len(partitions),
                               **{k: summary[k] for k in ("group_id", "state", "members", "total_lag",
                                                          "max_lag_seconds", "status", "lag_seconds_threshold")}})
        self._forget_vanished(offsets)
        return CollectorResult(sections={"consumer_groups": groups},
                               rows={"consumer_lag": self._lag_rows(groups, now), "consumer_group": group_rows})

    def _lag_rows(self, groups: list[dict[str, Any]], now: float) -> Columns:
        """The ``consumer_lag`` rows of this cycle, column by column from the snapshot's partitions."""
        rows = [p for group in groups for p in group["partitions"]]
        return Columns(len(rows), time=now, cluster=self._cluster.name,
                       group_id=[group["group_id"] for group in groups for _ in group["partitions"]],
                       **{name: [p[name] for p in rows] for name in _LAG_COLUMNS})

    def _forget_vanished(self, offsets: ClusterOffsets) -> None:
        present = {group.group_id for group in offsets.groups}
        for group in self.status.groups():
            if group not in present:
                self.status.forget_group(group)
        consumed = set(offsets.log_end)
        for topic, partition in self.history.known_partitions():
            if (topic, partition) not in consumed:
                self.history.forget(topic, partition)


_LAG_COLUMNS = ("topic", "partition", "committed_offset", "log_end_offset", "lag", "lag_seconds", "status")
_STATUS_TEXT = {status: status.value for status in PartitionStatus}
"""PartitionStatus -> its text (an Enum's ``.value`` is a slow property, read once per partition)."""


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)
