"""The share-groups collector: every share group (KIP-932) with its state, members and
assignments, and per partition the start offset and the lag the broker reports, with a status over
a window of readings (rules in ``collectors/share/share_status.py``).

Share lag is not derived from the log: it is the broker's count of records not yet acknowledged
(``kafka-share-groups --describe``'s LAG), read with DescribeShareGroupOffsets. Everything is read
through ``kpulse.kafka.group_describe.GroupReader``: one ListGroups (type ``share``) per broker,
one ShareGroupDescribe and one DescribeShareGroupOffsets per coordinator. Brokers that do not speak
share groups (an older Kafka) give an empty section with the reason, not an error. The cluster's
``consumer_groups`` include/exclude filter applies to share groups as to every other type.

Between cycles the collector keeps each partition's window of readings; a group whose offsets could
not be read this cycle keeps its windows, a partition no longer reported for its group (or a group
no longer listed) loses its own. A group's ``total_lag`` is over the partitions whose lag is known and
says how many were left out (``lag_math.sum_over_partitions``).
"""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor, TimeoutError as FuturesTimeout
from typing import Any, Literal, NamedTuple
from collections.abc import Callable, Hashable, Mapping, Sequence

from collectors.lag.lag_math import sum_over_partitions
from collectors.protocol import BuiltinSections, CollectContext, CollectorResult
from collectors.share.share_status import ShareWindows, worst
from kpulse.config import ClusterConfig
from kpulse.errors import KpulseError
from kpulse.kafka.batched_client import BatchedClient
from kpulse.kafka.group_model import (GroupListing, GroupReadError, GroupStateName, ShareGroup, ShareGroupStateName,
                                     SharePartitionOffset)
from kpulse.lake.schema import SCHEMAS
from kpulse.snapshot import Reasons, ShareGroups, ShareGroupState, ShareMemberState, SharePartition
from kpulse.share_contract import ShareStatusName

SHARE = "share"
DEFAULT_TIMEOUT_SECONDS = 10.0
DEFAULT_READ_BUDGET_SECONDS = 1.0
"""A 4.3.1 broker answers DescribeShareGroupOffsets only after asking its share coordinator and the
partitions' leaders, which can take seconds. A cycle waits at most this long (and no longer than its
other collectors run), then shows the last reading."""
DEFAULT_READ_PACING = 3.0
"""After a reading that took d seconds, the next is asked no sooner than ``DEFAULT_READ_PACING`` x d
after it ended: the brokers spend at most a quarter of the time answering kpulse's share reads.
DescribeShareGroupOffsets is the most expensive read kpulse makes (its cost on the brokers:
docs/performance.md); asked again as soon as answered it would keep them busy all the time and slow
every other read of the cycle. A reading answered in 0.3 s is asked again every cycle (at the
default 10 s); one that takes 5 s, every 20 s, and the cycles between show the last reading with its
time."""
OTHERS_POLL_SECONDS = 0.02
"""How often a cycle waiting for the share groups' answer looks whether its other collectors are done."""

REASON_NOT_INITIALISED = "not initialised: the group has not fetched from this partition yet"
REASON_LAG_UNKNOWN = "the broker did not report a lag"
REASON_NO_MEMBERS_KNOWN = "the group's members are not known (it could not be described)"


class ShareGroupsUnreadable(KpulseError):
    """The share groups could not be listed at all (one line): the collector is down this cycle."""


class _Reading(NamedTuple):
    """One reading of the share groups: the collector's result, and the cycle time it was asked at
    (its section's ``read_at``)."""

    result: CollectorResult
    read_at: float


class ShareGroupsCollector:
    name = "share_groups"
    sections = {"share_groups": ShareGroups}
    tables = {table: SCHEMAS[table] for table in ("share_group", "share_partition")}

    def __init__(self, cluster_config: ClusterConfig, reader: Any = None, timeout: float = DEFAULT_TIMEOUT_SECONDS,
                 windows: ShareWindows | None = None, batched_client_factory: Callable[..., Any] | None = None,
                 read_budget: float = DEFAULT_READ_BUDGET_SECONDS, read_pacing: float = DEFAULT_READ_PACING,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._cluster = cluster_config
        self._timeout = timeout
        self.read_budget = read_budget
        """Seconds a cycle waits for the brokers' answer once a first reading is shown."""
        self.read_pacing = read_pacing
        """A reading that took d seconds is followed by none for ``read_pacing`` x d (``DEFAULT_READ_PACING``)."""
        self._clock = clock
        self._next_read = float("-inf")
        """``clock()`` time before which no reading is asked (set by each reading as it ends)."""
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="share-groups")
        self._pending: Future[_Reading] | None = None
        self._last: _Reading | None = None
        self.batched_client = None if reader is not None else BatchedClient(cluster_config, batched_client_factory)
        self._reader = reader
        self.windows = windows or ShareWindows()
        """Each partition's last readings, between cycles (the rules: ``share_status``)."""

    @property
    def reader(self):
        """The ``GroupReader`` (built on first use: the constructor connects to nothing)."""
        if self._reader is None:
            from kpulse.kafka.group_describe import GroupReader

            self._reader = GroupReader(self.batched_client)
        return self._reader

    def close(self) -> None:
        self._worker.shutdown(wait=False, cancel_futures=True)
        if self.batched_client is not None:
            self.batched_client.close()

    @property
    def reading_in_flight(self) -> bool:
        """Whether a reading has been asked for and not taken yet."""
        return self._pending is not None and not self._pending.done()

    def collect(self, context: CollectContext) -> CollectorResult:
        """This cycle's reading when the brokers answer while the cycle's other collectors are still
        running, and within ``read_budget`` (the first reading is always waited for); else the last
        reading shown again, without lake rows, and the answer is taken, with the time it was asked
        at, by the first cycle after it comes. So waiting for the share groups never makes a cycle
        longer than its other collectors make it, nor longer than the budget. A reading is asked
        only once the last one is paced out (``read_pacing``); until then the last is shown again."""
        pending = self._pending
        if pending is None:
            if self._last is not None and self._clock() < self._next_read:
                return self._shown_again(self._last)
            pending = self._pending = self._worker.submit(self._read, context)
        try:
            reading = self._answer(pending, context)
        except FuturesTimeout:
            if self._last is None:  # the first reading is waited for without a timeout
                raise
            return self._shown_again(self._last)
        finally:
            if self._pending is not None and self._pending.done():
                self._pending = None
        self._last = reading
        late = reading.read_at != context.now
        if late and self._clock() >= self._next_read:  # ask again now
            self._pending = self._worker.submit(self._read, context)
        return reading.result

    def _shown_again(self, last: _Reading) -> CollectorResult:
        """The last reading, shown again without lake rows (they were written when it was read)."""
        return CollectorResult(sections=last.result.sections, rows={table: [] for table in self.tables})

    def _answer(self, pending: Future[_Reading], context: CollectContext) -> _Reading:
        """The pending reading's answer, waited for as :meth:`collect` says (``FuturesTimeout``: not yet)."""
        if self._last is None:
            return pending.result()
        shared = context.shared
        if shared is None:  # run alone: only the budget bounds the wait
            return pending.result(timeout=self.read_budget)
        until = time.monotonic() + self.read_budget
        while True:
            try:
                return pending.result(timeout=max(0.0, min(OTHERS_POLL_SECONDS, until - time.monotonic())))
            except FuturesTimeout:
                if time.monotonic() >= until or not shared.others_running(self.name):
                    raise

    def _read(self, context: CollectContext) -> _Reading:
        """One reading of the cluster (in the worker thread), evaluated with the time it was asked
        at; it sets when the next may be asked (``read_pacing``), whether it succeeds or fails."""
        began = self._clock()
        try:
            return _Reading(self._read_now(context, began), context.now)
        finally:
            ended = self._clock()
            self._next_read = ended + self.read_pacing * (ended - began)

    def _read_now(self, context: CollectContext, began: float) -> CollectorResult:
        reader = self.reader
        listings = reader.list_groups(self._timeout, types=[SHARE])
        if SHARE in reader.unsupported:
            return self.evaluate([], {}, {}, context, unsupported=reader.unsupported[SHARE].reason,
                                 read_seconds=self._clock() - began)
        if listings is None:
            why = getattr(self.batched_client, "unavailable_reason", None) or "no broker answered ListGroups"
            raise ShareGroupsUnreadable(f"cannot list share groups: {why}")
        monitors = self._cluster.consumer_groups.monitors  # one filter for every type of group
        listings = [listing for listing in listings if listing.type == SHARE and monitors(listing.group_id)]
        descriptions = reader.describe(listings, self._timeout) if listings else {}
        offsets = reader.share_offsets([listing.group_id for listing in listings], self._timeout) if listings else {}
        unsupported = reader.unsupported.get(SHARE)
        return self.evaluate(listings, descriptions, offsets, context,
                             unsupported=unsupported.reason if unsupported else None,
                             read_seconds=self._clock() - began)

    def evaluate(self, listings: Sequence[GroupListing], descriptions: Mapping[str, Any],
                 offsets: Mapping[str, Sequence[SharePartitionOffset] | GroupReadError], context: CollectContext,
                 unsupported: str | None = None, read_seconds: float | None = None) -> CollectorResult:
        """Turn one reading of the cluster into the snapshot section and the lake rows."""
        now, cluster = context.now, self._cluster.name
        groups: list[ShareGroupState] = []
        group_rows: list[dict[str, object]] = []
        partition_rows: list[dict[str, object]] = []
        read: list[Hashable] = []
        for listing in sorted(listings, key=lambda item: item.group_id):
            group_id = listing.group_id
            description = descriptions.get(group_id)
            answer = offsets.get(group_id)
            errors = [f"describe: {description.reason}" if isinstance(description, GroupReadError) else None,
                      f"offsets: {answer.reason}" if isinstance(answer, GroupReadError) else None]
            described = description if isinstance(description, ShareGroup) else None
            members = None if described is None else len(described.members)
            share_offsets = [] if isinstance(answer, GroupReadError) or answer is None else answer
            if isinstance(answer, GroupReadError):  # not read this cycle: its windows are kept
                read += [key for key in self.windows.keys() if isinstance(key, tuple) and key[0] == group_id]
            partitions = []
            for offset in sorted(share_offsets, key=lambda item: (item.topic, item.partition)):
                key = (group_id, offset.topic, offset.partition)
                read.append(key)
                self.windows.record(key, _known(offset.start_offset), _known(offset.lag))
                partitions.append(self._partition(offset, members, key))
            total = sum_over_partitions([p["lag"] for p in partitions], [p["start_offset"] for p in partitions])
            total_lag = None if total.value is None else int(total.value)  # a sum of record counts
            status = worst(p["status"] for p in partitions)
            reasons: Reasons = {}
            if total.unknown:
                reasons["total_lag"] = (f"{'partial: ' if total.partial else ''}the lag of {total.unknown} of "
                                        f"{len(partitions)} partitions is not known")
            if status is None and partitions:
                reasons["status"] = ("not enough readings yet: the status needs "
                                     f"{self.windows.min_observations} per partition")
            group: ShareGroupState = {
                "group_id": group_id,
                "state": described.state if described else _listed_state(listing.state),
                "members": members,
                "group_epoch": described.group_epoch if described else None,
                "assignment_epoch": described.assignment_epoch if described else None,
                "partition_count": len(partitions),
                "total_lag": total_lag, "total_lag_partial": total.partial,
                "lag_unknown_partitions": total.unknown,
                "status": status,
                "error": "; ".join(error for error in errors if error) or None,
                "reasons": reasons,
                "member_list": _members(described),
                "partitions": partitions,
            }
            if not reasons:  # present only when a value is partial or null
                del group["reasons"]
            groups.append(group)
            group_rows.append({"time": now, "cluster": cluster, "group_id": group_id, "state": group["state"],
                               "members": members, "group_epoch": group["group_epoch"],
                               "assignment_epoch": group["assignment_epoch"], "partitions": len(partitions),
                               "total_lag": total_lag, "lag_unknown_partitions": total.unknown,
                               "status": status, "error": group["error"]})
            partition_rows += [{"time": now, "cluster": cluster, "group_id": group_id, "topic": p["topic"],
                                "partition": p["partition"], "start_offset": p["start_offset"], "lag": p["lag"],
                                "status": p["status"]} for p in partitions]
        self.windows.forget_except(read)
        section: ShareGroups = {"groups": groups, "unsupported": unsupported, "read_at": now,
                                "read_seconds": None if read_seconds is None else round(read_seconds, 3)}
        return CollectorResult(sections=BuiltinSections(share_groups=section),
                               rows={"share_group": group_rows, "share_partition": partition_rows})

    def _partition(self, offset: SharePartitionOffset, members: int | None,
                   key: tuple[str, str, int]) -> SharePartition:
        start = _known(offset.start_offset)
        lag = _known(offset.lag)
        reasons: Reasons = {}
        if offset.error:
            reasons.update(start_offset=offset.error, lag=offset.error)
        if start is None:
            reasons.setdefault("start_offset", REASON_NOT_INITIALISED)
        if lag is None:
            reasons.setdefault("lag", REASON_NOT_INITIALISED if start is None else REASON_LAG_UNKNOWN)
        status: ShareStatusName | None = None
        if start is None or lag is None:
            reasons["status"] = "this cycle's start offset or lag is unknown"
        elif members is None:
            reasons["status"] = REASON_NO_MEMBERS_KNOWN
        else:
            found = self.windows.status(key, members > 0)
            status = found.value if found else None
            if status is None:
                reasons["status"] = (f"not enough readings yet ({len(self.windows.window(key))} of "
                                     f"{self.windows.min_observations})")
        row: SharePartition = {"topic": offset.topic, "partition": offset.partition, "start_offset": start,
                               "lag": lag, "status": status}
        if reasons:
            row["reasons"] = reasons
        return row


def _listed_state(state: GroupStateName) -> ShareGroupStateName | Literal["Unknown"]:
    """A share group's state as ListGroups names it: one of a share group's states, else Unknown."""
    if state == "Empty" or state == "Stable" or state == "Dead":
        return state
    return "Unknown"


def _known(value: int | None) -> int | None:
    """The broker's -1 (not known) as ``None``."""
    return None if value is None or value < 0 else value


def _members(group: ShareGroup | None) -> list[ShareMemberState]:
    if group is None:
        return []
    return [{"member_id": m.member_id, "client_id": m.client_id, "host": m.client_host, "rack_id": m.rack_id,
             "member_epoch": m.member_epoch, "subscribed_topics": sorted(m.subscribed_topics),
             "assignment": {topic: sorted(partitions) for topic, partitions in sorted(m.assignment.items())}}
            for m in sorted(group.members, key=lambda member: member.member_id)]
