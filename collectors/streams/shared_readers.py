"""The Streams collector's readers over the lag collector's reading of the same cycle
(``collectors/lag/groups_reading.py``): what that reading holds is taken from it, the rest is read
with the collector's own readers.

Taken from the reading: the listing of the Streams groups, the description of each Streams group
the lag collector described (it does not describe groups listed as Empty), the committed offsets
of each group it read without error, and the log ends it read. Read here: the descriptions and
offsets it lacks (a group listed Empty, left out by the ``consumer_groups`` filter, or whose
reading failed), the log ends of partitions no group has committed on (a Streams member's assigned
partitions before its first commit) and every log start. So a cycle sends ListGroups,
StreamsGroupDescribe, OffsetFetch and ListOffsets for the Streams groups once, not twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from collections.abc import Iterable, Sequence

from collectors.lag.groups_reading import GroupsReading
from kpulse.kafka.group_model import StreamsGroup
from kpulse.kafka.log_ends import LogEnds


class NotReadHere(Exception):
    """Why a group's committed offsets are missing from a merged answer (one line)."""


@dataclass
class SharedGroups:
    """``list_groups`` and ``describe`` (as ``GroupReader``) over the reading, then ``own``."""

    reading: GroupsReading
    own: Any

    @property
    def client(self):
        return getattr(self.own, "client", None)

    def list_groups(self, timeout: float, types: Sequence[str] | None = None) -> list:
        return [listing for listing in self.reading.listings if types is None or listing.type in types]

    def describe(self, listings: Iterable[Any], timeout: float) -> dict:
        answers, rest = {}, []
        for listing in listings:
            group = self.reading.by_id.get(listing.group_id)
            if group is not None and isinstance(group.description, StreamsGroup):
                answers[listing.group_id] = group.description
            else:
                rest.append(listing)
        if rest:
            answers.update(self.own.describe(rest, timeout))
        return answers


@dataclass
class SharedOffsets:
    """``read(group_ids, timeout)`` (as ``BatchedOffsetFetch``) over the reading, then ``own``."""

    reading: GroupsReading
    own: Any

    @property
    def client(self):
        return getattr(self.own, "client", None)

    def read(self, group_ids: Sequence[str], timeout: float) -> dict | None:
        answers, rest = {}, []
        for group_id in group_ids:
            group = self.reading.by_id.get(group_id)
            if group is not None and group.error is None:
                answers[group_id] = {key: offset for key, offset in group.committed.items() if offset is not None}
            else:
                rest.append(group_id)
        if not rest:
            return answers
        own = self.own.read(rest, timeout)
        if own is None:
            if not answers:
                return None  # nothing read at all: the caller says why
            own = {group_id: NotReadHere("committed offsets not read: the batched client cannot be used")
                   for group_id in rest}
        return {**answers, **own}


@dataclass
class SharedLogEnds:
    """``read(partitions, timeout)`` (as ``LeaderLogEnds``) over the reading's log ends, then ``own``."""

    reading: GroupsReading
    own: Any

    @property
    def client(self):
        return getattr(self.own, "client", None)

    def read(self, partitions: Sequence[tuple[str, int]], timeout: float) -> LogEnds | None:
        known = self.reading.offsets.log_end
        ends = LogEnds(log_end={key: known[key] for key in partitions if key in known})
        rest = [key for key in partitions if key not in known]
        if not rest:
            return ends
        own = self.own.read(rest, timeout)
        if own is None:
            if not ends.log_end:
                return None
            reason = "log end not read: the batched client cannot be used"
            own = LogEnds(errors={key: reason for key in rest})
        return LogEnds(log_end={**ends.log_end, **own.log_end}, errors=dict(own.errors))
