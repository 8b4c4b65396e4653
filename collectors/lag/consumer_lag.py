"""The consumer lag collector: per group and partition, committed offset, log end, lag in
offsets and in seconds, and a Burrow-style status (rules in ``collectors/lag/lag_status.py``).

It keeps, between cycles, the (log end, time) history of every consumed partition (for time lag)
and the last observations of every group's partitions (for status); a partition's history is kept
through cycles where its log end could not be read (a leader moving) or its group's offsets could
not be read (the group's coordinator moving), and dropped only when no listed group consumes it
any more. A group's ``total_lag`` and ``max_lag_seconds`` are over the partitions whose value is
known and say how many were left out (``lag_math.sum_over_partitions``).

Reading the cluster is in ``kpulse/kafka/group_offsets.py``; the rules are stated in ``lag_math`` and
``lag_status`` and applied to all group partitions at once by ``lag_arrays``.
"""

from __future__ import annotations

from typing import Any, Callable

from collectors.lag.groups_reading import GroupsReading
from collectors.lag.lag_arrays import REASONS, STATUS_BY_CODE, LagArrays
from collectors.lag.lag_math import PartitionTotal, max_over_partitions, sum_over_partitions
from collectors.protocol import CollectContext, CollectorResult
from kpulse.kafka.batched_client import BatchedClient
from kpulse.kafka.clients import LazyAdmin
from kpulse.kafka.committed_offsets import BatchedOffsetFetch, Coordinators
from kpulse.kafka.group_describe import GroupReader
from kpulse.kafka.group_listing import GroupListing
from kpulse.kafka.group_model import ConsumerGroup as KIP848Group, StreamsGroup, member_partitions
from kpulse.kafka.group_offsets import ClusterOffsets, RequestCache, read_cluster_offsets
from kpulse.kafka.log_ends import LeaderLogEnds
from kpulse.lake.rows import Columns
from kpulse.lake.schema import SCHEMAS
from kpulse.snapshot import ConsumerGroup, GroupMember, GroupPartition


class ConsumerLagCollector:
    name = "consumer_lag"
    sections = {"consumer_groups": list[ConsumerGroup]}
    tables = {table: SCHEMAS[table] for table in ("consumer_lag", "consumer_group")}

    def __init__(self, cluster_config, admin_factory: Callable[[dict], Any] | None = None,
                 read_offsets: Callable[..., ClusterOffsets] = read_cluster_offsets, concurrency: int = 32,
                 batched: bool = True, batched_client_factory: Callable[..., Any] | None = None):
        self._cluster = cluster_config
        self._admin = LazyAdmin(cluster_config, admin_factory)
        self._read_offsets = read_offsets
        self._concurrency = concurrency
        self.lag = LagArrays()
        """Log end histories and status windows between cycles (the rules: ``lag_math``, ``lag_status``)."""
        self._consumed: list[tuple[str, int]] = []
        """The partitions consumed at the last reading, sorted: their log ends are asked for first."""
        self._consumed_set: set[tuple[str, int]] = set()
        self._partitions_of: dict[str, frozenset[tuple[str, int]]] = {}
        """Group -> the partitions it consumed when last read: a group that could not be read this
        cycle (its coordinator down) still consumes them, so their histories are kept."""
        self._requests = RequestCache()
        self.batched_client = BatchedClient(cluster_config, batched_client_factory) if batched else None
        """The client of the batched reads below (None: everything is read through librdkafka)."""
        coordinators = Coordinators()  # shared: the describe calls go to the coordinators OffsetFetch found
        self.committed = BatchedOffsetFetch(self.batched_client, coordinators) if batched else None
        self.log_ends = LeaderLogEnds(self.batched_client) if batched else None
        self.listing = GroupListing(self.batched_client) if batched else None
        self.reader = GroupReader(self.batched_client, coordinators) if batched else None
        """Describes each group by the call of its type (None: librdkafka's DescribeConsumerGroups)."""

    def collect(self, context: CollectContext) -> CollectorResult:
        groups_config = self._cluster.consumer_groups
        listed: list = []

        def list_groups(timeout: float):
            found = self.listing.read(timeout)
            listed.append(found)
            return found

        offsets = self._read_offsets(self._admin.get(), groups_config.monitors, concurrency=self._concurrency,
                                     expected=self._consumed, request_cache=self._requests,
                                     read_committed=self.committed.read if self.committed else None,
                                     read_log_ends=self.log_ends.read if self.log_ends else None,
                                     list_groups=list_groups if self.listing else None,
                                     describe_groups=self._describe if self.reader else None)
        if context.shared is not None and listed and listed[0] is not None:  # read through the batched client
            context.shared.publish(self.name, GroupsReading(listed[0], offsets))
        consumed = {tp for group in offsets.groups for tp in group.committed}
        if consumed != self._consumed_set:
            self._consumed, self._consumed_set = sorted(consumed), consumed
        return self.evaluate(offsets, context)

    def _describe(self, listings: list, timeout: float) -> dict | None:
        """``GroupReader.describe``; None when its client cannot be used now (librdkafka describes)."""
        from kafka.protocol.metadata import FindCoordinatorRequest

        from kpulse.kafka.batched_client import Unavailable
        from kpulse.kafka.committed_offsets import FIND_COORDINATOR_VERSION

        try:
            self.batched_client.manager(timeout, {FindCoordinatorRequest: FIND_COORDINATOR_VERSION})
        except Unavailable as reason:
            self.batched_client.fell_back(str(reason))
            return None
        return self.reader.describe(listings, timeout)

    def close(self) -> None:
        if self.batched_client is not None:
            self.batched_client.close()

    def evaluate(self, offsets: ClusterOffsets, context: CollectContext) -> CollectorResult:
        """Turn one reading of the cluster into the snapshot section and lake rows."""
        now = context.now
        self.lag.record(list(offsets.log_end), list(offsets.log_end.values()), now)
        keys = [(group, sorted(group.committed.items())) for group in offsets.groups]
        group_of = [group.group_id for group, items in keys for _ in items]
        partitions = [tp for _, items in keys for tp, _ in items]
        committed = [_NONE if c is None else c for _, items in keys for _, c in items]
        log_end_of = offsets.log_end.get
        log_ends = [log_end_of(tp, _NONE) for tp in partitions]
        members = [group.members > 0 for group, items in keys for _ in items]
        answer = self.lag.evaluate(group_of, partitions, committed, log_ends, members, now)

        lags = [None if lag < 0 else lag for lag in answer.lag.tolist()]
        seconds = [None if value != value else value for value in answer.lag_seconds.round(3).tolist()]
        statuses = [_STATUS_TEXT[code] for code in answer.status.tolist()]
        why_seconds = [REASONS[code] for code in answer.lag_seconds_reason.tolist()]
        committed_or_none = [None if c < 0 else c for c in committed]
        log_end_or_none = [None if end < 0 else end for end in log_ends]
        rows: list[GroupPartition] = []
        for (topic, partition), c, end, lag, lag_seconds, status, why in zip(
                partitions, committed_or_none, log_end_or_none, lags, seconds, statuses, why_seconds):
            row: GroupPartition = {"topic": topic, "partition": partition, "committed_offset": c,
                                   "log_end_offset": end, "lag": lag, "lag_seconds": lag_seconds, "status": status}
            if why is not None or end is None:
                row["reasons"] = _reasons(offsets, topic, partition, c, end, why)
            rows.append(row)
        lake_rows = Columns(len(rows), time=now, cluster=self._cluster.name, group_id=group_of,
                            topic=[topic for topic, _ in partitions], partition=[p for _, p in partitions],
                            committed_offset=committed_or_none, log_end_offset=log_end_or_none, lag=lags,
                            lag_seconds=seconds, status=statuses)

        groups, group_rows = self._groups(keys, rows, committed_or_none, answer.status.tolist(), now)
        self.lag.forget_groups_except({group.group_id for group in offsets.groups})
        self.lag.forget_partitions_except(self._still_consumed(offsets))  # not the partitions read: see the module
        return CollectorResult(sections={"consumer_groups": groups},
                               rows={"consumer_lag": lake_rows, "consumer_group": group_rows})

    def _still_consumed(self, offsets: ClusterOffsets) -> set[tuple[str, int]]:
        """The partitions some listed group consumes: read this cycle, or, for a group whose offsets
        could not be read, when it was last read."""
        previous, self._partitions_of = self._partitions_of, {}
        for group in offsets.groups:
            partitions = frozenset(group.committed)
            if group.error is not None:
                partitions |= previous.get(group.group_id, frozenset())
            self._partitions_of[group.group_id] = partitions
        return set().union(*self._partitions_of.values())

    def _groups(self, keys, rows: list[GroupPartition], committed: list, status_codes: list[int],
                now: float) -> tuple[list[ConsumerGroup], list[dict]]:
        """Each group's summary with its partitions (the snapshot) and its ``consumer_group`` row;
        ``keys`` are (group, its partitions) in the order of the per-partition lists."""
        groups_config = self._cluster.consumer_groups
        groups, group_rows = [], []
        start = 0
        for group, items in keys:
            end = start + len(items)
            partitions, offsets = rows[start:end], committed[start:end]
            total = sum_over_partitions([p["lag"] for p in partitions], offsets)
            worst = max_over_partitions([p["lag_seconds"] for p in partitions], offsets)
            status = STATUS_BY_CODE[max(status_codes[start:end], default=0)]
            summary: ConsumerGroup = {
                "group_id": group.group_id, "type": group.type, "protocol_type": group.protocol_type,
                "state": group.state, "members": group.members,
                "partition_count": len(items),
                "total_lag": total.value, "total_lag_partial": total.partial, "lag_unknown_partitions": total.unknown,
                "max_lag_seconds": worst.value, "max_lag_seconds_partial": worst.partial,
                "lag_seconds_unknown_partitions": worst.unknown,
                "status": status.value if status else None,
                "lag_seconds_threshold": groups_config.lag_seconds_threshold_for(group.group_id),
                "error": group.error,
            }
            reasons = {}
            if total.unknown:
                reasons["total_lag"] = _left_out(total, "lag", "log_end_offset", partitions, offsets)
            if worst.unknown:
                reasons["max_lag_seconds"] = _left_out(worst, "lag_seconds", "lag_seconds", partitions, offsets)
            if status is None and items:
                reasons["status"] = ("not enough readings yet: the status needs "
                                     f"{self.lag.min_observations} per partition")
            summary.update(_membership(group.description))
            if reasons:
                summary["reasons"] = reasons
            groups.append({**summary, "partitions": partitions})
            group_rows.append({"time": now, "cluster": self._cluster.name, "partitions": len(items),
                               **{k: summary[k] for k in _GROUP_ROW_FIELDS}})
            start = end
        return groups, group_rows


def _membership(description) -> dict:
    """A group's epochs and members as its describe call tells them (``kafka-consumer-groups
    --describe --state/--members --verbose``, ``kafka-streams-groups --describe --members``);
    nulls and no members for a group not described (listed Empty, or read through librdkafka)."""
    if description is None:
        return {"group_epoch": None, "assignment_epoch": None, "reconciling_members": None, "member_details": []}
    epochs = isinstance(description, (KIP848Group, StreamsGroup))
    details: list[GroupMember] = []
    for member in description.members:
        detail: GroupMember = {
            "member_id": member.member_id, "client_id": member.client_id, "client_host": member.client_host,
            "instance_id": getattr(member, "instance_id", None), "member_epoch": getattr(member, "member_epoch", None),
            "process_id": getattr(member, "process_id", None),
            "assignment": {t: list(p) for t, p in member_partitions(description, member).items()},
            "target_assignment": None, "reconciling": False}
        if isinstance(description, KIP848Group):
            detail["target_assignment"] = {t: list(p) for t, p in member.target_assignment.items()}
        if epochs:
            detail["reconciling"] = member.reconciling or member.member_epoch != description.assignment_epoch
        details.append(detail)
    return {"group_epoch": description.group_epoch if epochs else None,
            "assignment_epoch": description.assignment_epoch if epochs else None,
            "reconciling_members": sum(d["reconciling"] for d in details) if epochs else None,
            "member_details": details}


def _left_out(total: PartitionTotal, field: str, reason_key: str, partitions: list[dict], committed: list) -> str:
    """Why a group's sum is partial (or null): how many partitions were left out, and why (the first few)."""
    counted = sum(1 for offset in committed if offset is not None)
    missing = [p for p, offset in zip(partitions, committed) if offset is not None and p[field] is None]
    shown = "; ".join(f"{p['topic']}[{p['partition']}]: {p.get('reasons', {}).get(reason_key, 'unknown')}"
                      for p in missing[:_REASONS_SHOWN])
    more = f"; and {len(missing) - _REASONS_SHOWN} more" if len(missing) > _REASONS_SHOWN else ""
    what = "log end could not be read" if field == "lag" else "time lag is unknown"
    prefix = "partial: over the other partitions only; " if total.partial else ""
    return f"{prefix}the {what} for {total.unknown} of {counted} partitions ({shown}{more})"


def _reasons(offsets: ClusterOffsets, topic: str, partition: int, committed: int | None, log_end: int | None,
             why_seconds: str | None) -> dict[str, str]:
    reasons = {}
    if log_end is None:
        reasons["log_end_offset"] = offsets.log_end_errors.get((topic, partition), "not read")
    if committed is None:
        reasons["committed_offset"] = "no committed offset"
    if why_seconds is not None:
        reasons["lag_seconds"] = why_seconds
    return reasons


_GROUP_ROW_FIELDS = ("group_id", "type", "state", "members", "total_lag", "lag_unknown_partitions", "max_lag_seconds",
                     "lag_seconds_unknown_partitions", "status", "lag_seconds_threshold")
"""The summary's fields that a ``consumer_group`` lake row carries."""
_REASONS_SHOWN = 3
"""Partitions named in the reason of a partial sum (the partition table has them all)."""
_NONE = -1
"""An offset not known (no commit, log end not read), as :class:`LagArrays` takes it."""
_STATUS_TEXT = tuple(None if status is None else status.value for status in STATUS_BY_CODE)
"""Status code -> its text."""
