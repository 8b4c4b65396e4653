"""A share group's status over a sliding window of readings of its partitions: the rules, their
defaults, and the windows kept between cycles. Pure, no I/O. What the statuses mean for the rest of
kpulse is in ``kpulse/share_contract.py``.

A reading is one cycle's ``(start offset, lag)`` of one partition, as DescribeShareGroupOffsets
answers (``kafka-share-groups --describe``). A consumer that acknowledges records makes progress in
one of two ways: the start offset moves forward (the oldest records are done) or the lag goes down
(records further on are done while an older one is still in flight). A window where neither
happened is a window in which nothing was acknowledged.

Rules, evaluated top to bottom over the window of one partition (its last ``window_size``
readings, default 10); the first that matches wins:

====  ==========================================================================  =============
rule  condition                                                                   status
====  ==========================================================================  =============
0     no reading (or this cycle's start offset or lag is unknown)                 ``None``
1     the lag is 0 in any reading of the window (everything acknowledged once)    OK
2     fewer than ``min_observations`` (default 3) readings                        ``None``
3     no progress: the start offset is the same in every reading and the lag
      never went down between two consecutive readings (lag > 0 by rule 1),
      and the group has members now                                               STALLED
4     no progress (as in 3), and the group has no members now                     NOT_CONSUMING
5     the lag never went down and grew overall (last > first): the start offset
      moves, so records are acknowledged, but slower than they arrive             WARN
6     otherwise                                                                   OK
====  ==========================================================================  =============

The window of a partition restarts (keeps only the new reading) when its start offset goes
backwards: an operator reset the group's start offsets (``kafka-share-groups --reset-offsets``),
and the readings before describe another position. A cycle where a partition's offsets could not be
read adds no reading and keeps its window. A partition no longer read for the group (the group
deleted, the partition's offsets deleted) loses its window.

Like Burrow (``core/internal/evaluator/caching.go``) and the consumer-group status
(``collectors/lag/lag_status.py``), the status is about a window of readings, not about time: with
a 10 s cycle, STALLED needs at least 30 s of readings; a consumer that acknowledged everything once
in the last ``window_size`` readings is OK whatever happened since, until that reading leaves the
window. Membership splits "stuck" as Burrow's STALL and STOP do: members present but nothing
acknowledged (a hung consumer, a poison record redelivered until it is archived, a consumer that
never acknowledges) is STALLED; no member at all is NOT_CONSUMING.
"""

from __future__ import annotations

from collections import deque
from typing import NamedTuple
from collections.abc import Hashable, Iterable, Sequence

from kpulse.share_contract import SHARE_STATUS_SEVERITY, ShareStatus

DEFAULT_WINDOW_SIZE = 10
DEFAULT_MIN_OBSERVATIONS = 3


class Reading(NamedTuple):
    """One cycle's reading of one share partition."""

    start_offset: int
    lag: int


def partition_status(window: Sequence[Reading], has_members: bool,
                     min_observations: int = DEFAULT_MIN_OBSERVATIONS) -> ShareStatus | None:
    """The status of one partition from its window of readings (oldest first), by the module's rules."""
    if not window:
        return None
    if any(reading.lag == 0 for reading in window):
        return ShareStatus.OK
    if len(window) < min_observations:
        return None
    lag_never_fell = all(later.lag >= earlier.lag for earlier, later in zip(window, window[1:]))
    start_never_moved = all(reading.start_offset == window[0].start_offset for reading in window)
    if lag_never_fell and start_never_moved:
        return ShareStatus.STALLED if has_members else ShareStatus.NOT_CONSUMING
    if lag_never_fell and window[-1].lag > window[0].lag:
        return ShareStatus.WARN
    return ShareStatus.OK


def worst(statuses: Iterable[ShareStatus | str | None]) -> str | None:
    """The worst status of a group's partitions (``None`` ones skipped; ``None`` when none has one)."""
    names = [status.value if isinstance(status, ShareStatus) else status for status in statuses if status]
    return max(names, key=SHARE_STATUS_SEVERITY.__getitem__, default=None)


class ShareWindows:
    """The windows of readings of every share partition, kept from one cycle to the next; keys are
    whatever the caller uses for a partition (the collector: ``(group, topic, partition)``)."""

    def __init__(self, window_size: int = DEFAULT_WINDOW_SIZE, min_observations: int = DEFAULT_MIN_OBSERVATIONS):
        if not 1 <= min_observations <= window_size:
            raise ValueError(f"need 1 <= min_observations ({min_observations}) <= window_size ({window_size})")
        self.window_size = window_size
        self.min_observations = min_observations
        self._windows: dict[Hashable, deque[Reading]] = {}

    def record(self, key: Hashable, start_offset: int | None, lag: int | None) -> None:
        """Add this cycle's reading of ``key``; an unknown value adds nothing (the window is kept)."""
        if start_offset is None or lag is None:
            return
        window = self._windows.get(key)
        if window is None or (window and start_offset < window[-1].start_offset):
            window = self._windows[key] = deque(maxlen=self.window_size)
        window.append(Reading(start_offset, lag))

    def keys(self) -> list[Hashable]:
        """The partitions that have a window."""
        return list(self._windows)

    def window(self, key: Hashable) -> tuple[Reading, ...]:
        return tuple(self._windows.get(key, ()))

    def status(self, key: Hashable, has_members: bool) -> ShareStatus | None:
        return partition_status(self.window(key), has_members, self.min_observations)

    def forget_except(self, keys: Iterable[Hashable]) -> None:
        """Drop the windows of the partitions not in ``keys`` (not read for their group any more)."""
        kept = set(keys)
        for key in [key for key in self._windows if key not in kept]:
            del self._windows[key]

    def __len__(self) -> int:
        return len(self._windows)
