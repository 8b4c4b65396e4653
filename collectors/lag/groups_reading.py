"""The lag collector's reading of the groups in one cycle, as it publishes it for the other
collectors of the cycle (``collectors.protocol.CycleReadings``).

The lag collector lists every group (ListGroups to every broker), describes each by the call of
its type, reads the committed offsets of all of them (one OffsetFetch per coordinator) and the log
ends of every consumed partition. The Streams collector needs the same for the Streams groups
(``collectors/streams/shared_readers.py``): taking them from here, it does not send those
requests a second time in the same cycle.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any
from collections.abc import Sequence

from kpulse.kafka.group_offsets import ClusterOffsets, GroupOffsets

PUBLISHER = "consumer_lag"
"""The name of the collector that publishes the reading."""


@dataclass(frozen=True)
class GroupsReading:
    """One cycle's reading of the groups."""

    listings: Sequence[Any]
    """Every group listed, of every type, before the ``consumer_groups`` filter
    (``kpulse.kafka.group_listing.Listing``: ``group_id``, ``type``, ``state``...)."""
    offsets: ClusterOffsets
    """The groups the filter keeps (share groups left out), described, with their committed
    offsets, and the log ends of the partitions they consume."""

    @cached_property
    def by_id(self) -> dict[str, GroupOffsets]:
        """Group id -> its entry in ``offsets.groups``, made on first use: a reader asks about a few
        groups (the Streams ones) of what may be 10,000."""
        return {group.group_id: group for group in self.offsets.groups}
