"""A share group's status over a sliding window of readings of its partitions: the rules, their
defaults, and the windows kept between cycles. Pure, no I/O. What the statuses mean for the rest of
kpulse is in ``kpulse/share_contract.py``.

A reading is one cycle's ``(start offset, lag)`` of one partition, as DescribeShareGroupOffsets
answers (``kafka-share-groups --describe``). A consumer that acknowledges records makes progress in
one of two ways: the start offset moves forward (the oldest records are done) or the lag goes down
(records further on are done while an older one is still in flight). A window where neither
happened is a window in which nothing was acknowledged.

Rules, evaluated top to bottom over the window of one partition (its last ``window_size``
readings, default 10); the first that matches wins. Each is a function below, named and numbered as
in the table, and :func:`partition_status` applies them in order:

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
from collections.abc import Hashable, Iterable, Sequence
from itertools import pairwise
from typing import NamedTuple

from kpulse.share_contract import SHARE_STATUS_SEVERITY, ShareStatus, ShareStatusName

DEFAULT_WINDOW_SIZE = 10
DEFAULT_MIN_OBSERVATIONS = 3


class Reading(NamedTuple):
    """One cycle's reading of one share partition."""

    start_offset: int
    """The share-partition start offset: every record before it is acknowledged."""
    lag: int
    """Records not yet acknowledged, as the broker counts them."""


Window = Sequence[Reading]
"""The readings of one share partition, oldest first."""


# --- the rules, one function each, in the order they are applied -----------------------------------

def no_reading(window: Window) -> bool:
    """Rule 0: no reading -> no status (``None``)."""
    return not window


def acknowledged_everything_once(window: Window) -> bool:
    """Rule 1: the lag is 0 in any reading of the window (everything acknowledged once) -> OK."""
    return any(reading.lag == 0 for reading in window)


def too_few_readings(window: Window, min_observations: int) -> bool:
    """Rule 2: fewer than ``min_observations`` readings -> no status (``None``)."""
    return len(window) < min_observations


def lag_never_fell(window: Window) -> bool:
    """The lag never went down between two consecutive readings (rules 3, 4 and 5)."""
    return all(later.lag >= earlier.lag for earlier, later in pairwise(window))


def no_progress(window: Window) -> bool:
    """Nothing acknowledged across the window: the start offset is the same in every reading and the
    lag never went down (rules 3 and 4)."""
    return all(reading.start_offset == window[0].start_offset for reading in window) and lag_never_fell(window)


def stalled(window: Window, has_members: bool) -> bool:
    """Rule 3: no progress, and the group has members now (a hung consumer, a poison record
    redelivered, a consumer that never acknowledges) -> STALLED."""
    return has_members and no_progress(window)


def not_consuming(window: Window, has_members: bool) -> bool:
    """Rule 4: no progress, and the group has no members now -> NOT_CONSUMING."""
    return not has_members and no_progress(window)


def falling_behind(window: Window) -> bool:
    """Rule 5: the lag never went down and grew overall (last > first): the start offset moves, so
    records are acknowledged, but slower than they arrive -> WARN."""
    return lag_never_fell(window) and window[-1].lag > window[0].lag


def partition_status(window: Window, has_members: bool,
                     min_observations: int = DEFAULT_MIN_OBSERVATIONS) -> ShareStatus | None:
    """The status of one partition: the rules applied in order to its window of readings (oldest
    first); the first that matches decides, rule 6 when none does."""
    if no_reading(window):  # Rule 0
        return None
    if acknowledged_everything_once(window):  # Rule 1
        return ShareStatus.OK
    if too_few_readings(window, min_observations):  # Rule 2
        return None
    if stalled(window, has_members):  # Rule 3
        return ShareStatus.STALLED
    if not_consuming(window, has_members):  # Rule 4
        return ShareStatus.NOT_CONSUMING
    if falling_behind(window):  # Rule 5
        return ShareStatus.WARN
    return ShareStatus.OK  # Rule 6: otherwise


def worst(statuses: Iterable[ShareStatus | ShareStatusName | None]) -> ShareStatusName | None:
    """The worst status of a group's partitions (``None`` ones skipped; ``None`` when none has one)."""
    names = [status.value if isinstance(status, ShareStatus) else status for status in statuses if status]
    return max(names, key=SHARE_STATUS_SEVERITY.__getitem__, default=None)


class ShareWindows:
    """The windows of readings of every share partition, kept from one cycle to the next; keys are
    whatever the caller uses for a partition (the collector: ``(group, topic, partition)``)."""

    def __init__(self, window_size: int = DEFAULT_WINDOW_SIZE,
                 min_observations: int = DEFAULT_MIN_OBSERVATIONS) -> None:
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
        """The readings of ``key``, oldest first (empty when it has no window)."""
        return tuple(self._windows.get(key, ()))

    def status(self, key: Hashable, has_members: bool) -> ShareStatus | None:
        """:func:`partition_status` of the window of ``key``."""
        return partition_status(self.window(key), has_members, self.min_observations)

    def forget_except(self, keys: Iterable[Hashable]) -> None:
        """Drop the windows of the partitions not in ``keys`` (not read for their group any more)."""
        kept = set(keys)
        for key in [key for key in self._windows if key not in kept]:
            del self._windows[key]

    def __len__(self) -> int:
        return len(self._windows)
