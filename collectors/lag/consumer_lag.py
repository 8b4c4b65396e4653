"""The consumer lag collector: per group and partition, committed offset, log end, lag in
offsets and in seconds, and a Burrow-style status (rules in ``collectors/lag/lag_status.py``).

It keeps, between cycles, the (log end, time) history of every consumed partition (for time lag)
and the last observations of every group's partitions (for status); a partition's history is kept
through cycles where its log end could not be read (a leader moving) or its group's offsets could
not be read (the group's coordinator moving), and dropped only when no listed group consumes it
any more. A group's ``total_lag`` and ``max_lag_seconds`` are over the partitions whose value is
known and say how many were left out (``lag_math.sum_over_partitions``).

Reading the cluster is in ``kpulse/kafka/group_offsets.py``; the rules are stated in ``lag_math`` and
``lag_status`` and applied to all group partitions at once by ``lag_arrays``, and the group sums
to all groups at once by ``group_sums``. A cycle lays its group partitions out group after group
(each group's sorted by topic and partition) and builds each snapshot row and lake column from
those arrays in one pass.
"""

from __future__ import annotations

from itertools import chain, repeat
from typing import Any, TypedDict
from collections.abc import Callable, Collection

import numpy as np

from collectors.lag.group_sums import GroupSums, sums_over_runs
from collectors.lag.groups_reading import GroupsReading
from collectors.lag.lag_arrays import REASONS, STATUS_BY_CODE, LagArrays
from collectors.protocol import CollectContext, CollectorResult
from kpulse.kafka.batched_client import BatchedClient
from kpulse.kafka.clients import LazyAdmin
from kpulse.kafka.committed_offsets import BatchedOffsetFetch, Coordinators
from kpulse.kafka.group_describe import GroupReader
from kpulse.kafka.group_listing import GroupListing, Listing
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
        self._consumed_set: frozenset[tuple[str, int]] = frozenset()
        self._partitions_of: dict[str, Collection[tuple[str, int]]] = {}
        """Group -> the partitions it consumed when last read: a group that could not be read this
        cycle (its coordinator down) still consumes them, so their histories are kept."""
        self._requests = RequestCache()
        client = BatchedClient(cluster_config, batched_client_factory) if batched else None
        self.batched_client = client
        """The client of the batched reads below (None: everything is read through librdkafka)."""
        coordinators = Coordinators()  # shared: the describe calls go to the coordinators OffsetFetch found
        self.committed = BatchedOffsetFetch(client, coordinators) if client is not None else None
        self.log_ends = LeaderLogEnds(client) if client is not None else None
        self.listing = GroupListing(client) if client is not None else None
        self.reader = GroupReader(client, coordinators) if client is not None else None
        """Describes each group by the call of its type (None: librdkafka's DescribeConsumerGroups)."""

    def collect(self, context: CollectContext) -> CollectorResult:
        groups_config = self._cluster.consumer_groups
        listed: list[list[Listing] | None] = []

        def list_groups(timeout: float) -> list[Listing] | None:
            found = None if self.listing is None else self.listing.read(timeout)  # None: librdkafka lists
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
        consumed = offsets.consumed
        if consumed != self._consumed_set:
            self._consumed, self._consumed_set = sorted(consumed), consumed
        return self.evaluate(offsets, context)

    def _describe(self, listings: list, timeout: float) -> dict | None:
        """``GroupReader.describe``; None when its client cannot be used now (librdkafka describes)."""
        from kafka.protocol.metadata import FindCoordinatorRequest

        from kpulse.kafka.batched_client import Unavailable
        from kpulse.kafka.committed_offsets import FIND_COORDINATOR_VERSION

        client, reader = self.batched_client, self.reader
        if client is None or reader is None:  # not batched: librdkafka describes
            return None
        try:
            client.manager(timeout, {FindCoordinatorRequest: FIND_COORDINATOR_VERSION})
        except Unavailable as reason:
            client.fell_back(str(reason))
            return None
        return reader.describe(listings, timeout)

    def close(self) -> None:
        if self.batched_client is not None:
            self.batched_client.close()

    def evaluate(self, offsets: ClusterOffsets, context: CollectContext) -> CollectorResult:
        """Turn one reading of the cluster into the snapshot section and lake rows."""
        now = context.now
        self.lag.record(list(offsets.log_end), list(offsets.log_end.values()), now)
        groups_read = offsets.groups
        consumed = [sorted(group.committed) for group in groups_read]  # each group's partitions, in order
        sizes = list(map(len, consumed))
        partitions = list(chain.from_iterable(consumed))
        group_of = list(chain.from_iterable(map(repeat, [group.group_id for group in groups_read], sizes)))
        committed = np.array([_NONE if c is None else c for c in chain.from_iterable(
            map(map, [group.committed.__getitem__ for group in groups_read], consumed))], np.int64)
        log_ends = np.array(list(map(offsets.log_end.get, partitions, repeat(_NONE))), np.int64)
        members = np.repeat([group.members > 0 for group in groups_read], sizes).astype(bool)
        answer = self.lag.evaluate(group_of, partitions, committed, log_ends, members, now)

        seconds_rounded = answer.lag_seconds.round(3)
        committed_or_none, log_end_or_none = _or_none(committed, committed < 0), _or_none(log_ends, log_ends < 0)
        lags = _or_none(answer.lag, answer.lag < 0)
        seconds = _or_none(seconds_rounded, np.isnan(seconds_rounded))
        statuses = _STATUS_TEXTS[answer.status].tolist()
        why = _REASON_TEXTS[answer.lag_seconds_reason].tolist()
        reasons = _REASON_DICTS[answer.lag_seconds_reason].tolist()  # shared dicts, one per text: never mutated
        for i in np.flatnonzero((log_ends < 0) | (committed < 0)).tolist():  # rarely any
            reasons[i] = _reasons(offsets, partitions[i], committed_or_none[i], log_end_or_none[i], why[i])
        topics = [topic for topic, _ in partitions]
        numbers = [partition for _, partition in partitions]
        rows: list[GroupPartition] = [
            {"topic": topic, "partition": partition, "committed_offset": c, "log_end_offset": end, "lag": lag,
             "lag_seconds": lag_seconds, "status": status} if unknown is None else
            {"topic": topic, "partition": partition, "committed_offset": c, "log_end_offset": end, "lag": lag,
             "lag_seconds": lag_seconds, "status": status, "reasons": unknown}
            for topic, partition, c, end, lag, lag_seconds, status, unknown
            in zip(topics, numbers, committed_or_none, log_end_or_none, lags, seconds, statuses, reasons)]
        lake_rows = Columns(len(rows), time=now, cluster=self._cluster.name, group_id=group_of,
                            topic=topics, partition=numbers, committed_offset=committed_or_none,
                            log_end_offset=log_end_or_none, lag=lags, lag_seconds=seconds, status=statuses)

        sums = sums_over_runs(sizes, committed, answer.lag, seconds_rounded, answer.status)
        ends = np.cumsum(sizes)
        left_out = {"lag": _named(_first_rows((answer.lag < 0) & (committed >= 0), ends), partitions, reasons,
                                  "log_end_offset"),
                    "lag_seconds": _named(_first_rows(np.isnan(seconds_rounded) & (committed >= 0), ends), partitions,
                                          reasons, "lag_seconds")}
        groups, group_rows = self._groups(groups_read, sizes, rows, sums, now, left_out)
        self.lag.forget_groups_except({group.group_id for group in groups_read})
        self.lag.forget_partitions_except(self._still_consumed(groups_read, consumed, offsets.consumed))
        return CollectorResult(sections={"consumer_groups": groups},
                               rows={"consumer_lag": lake_rows, "consumer_group": group_rows})

    def _still_consumed(self, groups: list, consumed: list[list[tuple[str, int]]],
                        read: frozenset[tuple[str, int]]) -> frozenset[tuple[str, int]]:
        """The partitions some listed group consumes: read this cycle (``read``; ``consumed[i]`` are
        ``groups[i]``'s), or, for a group whose offsets could not be read, when it was last read."""
        previous, self._partitions_of = self._partitions_of, {}
        kept: set[tuple[str, int]] = set()
        for group, partitions in zip(groups, consumed):
            if group.error is not None:
                known = frozenset(partitions).union(previous.get(group.group_id, ()))
                kept.update(known)
                self._partitions_of[group.group_id] = known
            else:
                self._partitions_of[group.group_id] = partitions
        return read.union(kept) if kept else read

    def _groups(self, groups_read: list, sizes: list[int], rows: list[GroupPartition], sums: GroupSums,
                now: float, left_out: dict[str, dict[int, list[str]]]) -> tuple[list[ConsumerGroup], list[dict]]:
        """Each group's summary with its partitions (the snapshot) and its ``consumer_group`` row:
        ``groups_read[i]`` has the next ``sizes[i]`` of ``rows``, and ``sums`` entry ``i``;
        ``left_out[field][i]`` names the first partitions of group ``i`` whose ``field`` is unknown."""
        groups_config = self._cluster.consumer_groups
        cluster = self._cluster.name
        no_status = f"not enough readings yet: the status needs {self.lag.min_observations} per partition"
        groups, group_rows = [], []
        start = 0
        for index, (group, size, total, lag_unknown, worst, seconds_unknown, counted, code) in enumerate(zip(
                groups_read, sizes, sums.total_lag, sums.lag_unknown, sums.max_lag_seconds, sums.lag_seconds_unknown,
                sums.committed, sums.status)):
            end = start + size
            partitions = rows[start:end]
            status = _STATUS_TEXT[code]
            threshold = groups_config.lag_seconds_threshold_for(group.group_id)
            lag_partial, seconds_partial = total is not None and lag_unknown > 0, worst is not None and seconds_unknown > 0
            count = size
            unread = sorted(self._partitions_of.get(group.group_id, ())) if group.error is not None and not size else []
            if unread and group.error is not None:  # consumed when last read: still consumed, each unknown now
                partitions = _unread_rows(unread, group.error)
                count = lag_unknown = seconds_unknown = len(unread)
            why: _Why = {}
            if group.error is not None and not size:  # nothing of it was read this cycle: every figure says why
                why = {"reasons": {key: group.error for key in ("total_lag", "max_lag_seconds", "status")}}
            elif lag_unknown or seconds_unknown or (status is None and size):
                reasons: dict[str, str] = {}
                if lag_unknown:
                    reasons["total_lag"] = _left_out(total, lag_unknown, counted, "lag", left_out["lag"].get(index, []))
                if seconds_unknown:
                    reasons["max_lag_seconds"] = _left_out(worst, seconds_unknown, counted, "lag_seconds",
                                                           left_out["lag_seconds"].get(index, []))
                if status is None and size:
                    reasons["status"] = no_status
                why = {"reasons": reasons}
            summary: ConsumerGroup = {
                "group_id": group.group_id, "type": group.type, "protocol_type": group.protocol_type,
                "state": group.state, "members": group.members,
                "partition_count": count,
                "total_lag": total, "total_lag_partial": lag_partial,
                "lag_unknown_partitions": lag_unknown,
                "max_lag_seconds": worst, "max_lag_seconds_partial": seconds_partial,
                "lag_seconds_unknown_partitions": seconds_unknown,
                "status": status, "lag_seconds_threshold": threshold, "error": group.error,
                **_membership(group.description), **why, "partitions": partitions,
            }
            groups.append(summary)
            group_rows.append({"time": now, "cluster": cluster, "partitions": summary["partition_count"],
                               "group_id": group.group_id, "type": group.type, "state": group.state,
                               "members": group.members, "total_lag": total, "lag_unknown_partitions": lag_unknown,
                               "max_lag_seconds": worst, "lag_seconds_unknown_partitions": seconds_unknown,
                               "status": status, "lag_seconds_threshold": threshold, "error": group.error})
            start = end
        return groups, group_rows


def _unread_rows(partitions: list[tuple[str, int]], error: str) -> list[GroupPartition]:
    """The rows of a group's partitions when the group could not be read: every value unknown."""
    why = {"committed_offset": f"not read this cycle: {error}"}
    return [{"topic": topic, "partition": number, "committed_offset": None, "log_end_offset": None, "lag": None,
             "lag_seconds": None, "status": None, "reasons": why} for topic, number in partitions]


class _Membership(TypedDict):
    """The membership fields of a :class:`ConsumerGroup`."""

    group_epoch: int | None
    assignment_epoch: int | None
    reconciling_members: int | None
    member_details: list[GroupMember]


class _Why(TypedDict, total=False):
    """The ``reasons`` of a :class:`ConsumerGroup`, when it has them."""

    reasons: dict[str, str]


def _membership(description: Any) -> _Membership:
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


def _first_rows(unknown: np.ndarray, ends: np.ndarray, limit: int | None = None) -> dict[int, list[int]]:
    """Group index -> the first ``limit`` (``_REASONS_SHOWN``) of its rows where ``unknown``; group
    ``i`` has the rows ``ends[i-1]`` to ``ends[i] - 1``. Found with NumPy: at 10,000 groups whose time
    lag is unknown, walking every group's rows took a seventh of the cycle."""
    limit = _REASONS_SHOWN if limit is None else limit
    rows = np.flatnonzero(unknown)
    if not rows.size:
        return {}
    groups = np.searchsorted(ends, rows, side="right")
    rank = np.arange(rows.size) - np.searchsorted(groups, groups, side="left")  # among its group's unknown rows
    kept = rank < limit
    first: dict[int, list[int]] = {}
    for group, row in zip(groups[kept].tolist(), rows[kept].tolist()):
        first.setdefault(group, []).append(row)
    return first


def _named(first: dict[int, list[int]], partitions: list[tuple[str, int]], reasons: list, reason_key: str
           ) -> dict[int, list[str]]:
    """:func:`_first_rows`' rows as a partial sum's reason names them: ``topic[partition]: why``."""
    return {group: [f"{partitions[row][0]}[{partitions[row][1]}]: "
                    f"{(reasons[row] or _NO_REASONS).get(reason_key, 'unknown')}" for row in rows]
            for group, rows in first.items()}


def _left_out(value, unknown: int, counted: int, field: str, missing: list[str]) -> str:
    """Why a group's sum is partial (or null): how many of its ``counted`` partitions with a
    committed offset were left out, and why (``missing``: the first few, named)."""
    more = f"; and {unknown - _REASONS_SHOWN} more" if unknown > _REASONS_SHOWN else ""
    what = "log end could not be read" if field == "lag" else "time lag is unknown"
    prefix = "partial: over the other partitions only; " if value is not None else ""
    return f"{prefix}the {what} for {unknown} of {counted} partitions ({'; '.join(missing)}{more})"


def _reasons(offsets: ClusterOffsets, partition: tuple[str, int], committed: int | None, log_end: int | None,
             why_seconds: str | None) -> dict[str, str] | None:
    """Why a partition's values are unknown (None: they are all known)."""
    reasons = {}
    if log_end is None:
        reasons["log_end_offset"] = offsets.log_end_errors.get(partition, "not read")
    if committed is None:
        reasons["committed_offset"] = "no committed offset"
    if why_seconds is not None:
        reasons["lag_seconds"] = why_seconds
    return reasons or None


_REASONS_SHOWN = 3
"""Partitions named in the reason of a partial sum (the partition table has them all)."""
_NONE = -1
"""An offset not known (no commit, log end not read), as :class:`LagArrays` takes it."""
_STATUS_TEXT = tuple(None if status is None else status.value for status in STATUS_BY_CODE)
"""Status code -> its text."""
_STATUS_TEXTS = np.array(_STATUS_TEXT, dtype=object)
"""The same, indexed by an array of codes."""
_REASON_TEXTS = np.array(REASONS, dtype=object)
"""Reason code -> why the time lag is unknown (None: it is known), indexed by an array of codes."""
_REASON_DICTS = np.array([None if text is None else {"lag_seconds": text} for text in REASONS], dtype=object)
"""The same as a partition's ``reasons``: one dict per text, shared by every partition it is the
reason of (100,000 partitions a cycle at scale, most with the same reason), so never mutated: a
partition with another reason gets a dict of its own (``_reasons``)."""
_NO_REASONS: dict[str, str] = {}


def _or_none(values: np.ndarray, unknown: np.ndarray) -> list:
    """``values`` as Python numbers, None where ``unknown``."""
    out = values.astype(object)
    out[unknown] = None
    return out.tolist()
