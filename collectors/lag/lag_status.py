"""Burrow-style consumer status over a sliding window of offset observations; pure, no I/O.

Burrow (``core/internal/evaluator/caching.go``) looks at the last N (default 10) offsets a group
*committed* for a partition. kpulse does not see commits: it polls committed offsets and log ends
once per collection cycle, so here an observation is one poll result, and "the consumer commits
but does not move" cannot be told from "the consumer stopped committing" by timestamps. The
group's membership tells them apart instead (``has_members``, from DescribeGroups).

Rules, evaluated top to bottom over the window of one partition; the first that matches wins:

====  =========================================================================  ==========
rule  condition                                                                  status
====  =========================================================================  ==========
0     no observation                                                             ``None``
1     the lag is 0 in any observation of the window (caught up at least once)    OK
2     fewer than ``min_observations`` (default 3) observations                   ``None``
3     the committed offset decreased between two consecutive observations        REWIND
4     committed offset unchanged across the window (lag > 0 by rule 1) and it
      has been unchanged for longer than ``err_after_seconds`` (default 900 s)   ERR
5     committed offset unchanged across the window, group has active members     STALL
6     committed offset unchanged across the window, group has no members         STOP
7     lag never decreased between consecutive observations and grew overall
      (last lag > first lag)                                                     WARN
8     otherwise                                                                  OK
====  =========================================================================  ==========

Differences from Burrow, on purpose:

* STOP/STALL: Burrow's STOP is "now - last commit time > last - first commit time" and its STALL
  is "commits that repeat the same offset". Without commit timestamps both become "the offset did
  not move across the window", split by ``has_members`` (no members = nobody is consuming = STOP;
  members present but no progress = STALL, e.g. a poison record or a hung poll loop).
* ERR: Burrow uses ERR only for groups (any partition in STOP/STALL/REWIND). kpulse keeps the
  partition statuses apart and uses ERR for escalation: a partition stuck (rule 5 or 6) for
  longer than ``err_after_seconds``. "Stuck since" is the first poll that saw the current
  committed offset, tracked beyond the window; if kpulse started while the group was already
  stuck, it is a lower bound.
* WARN: Burrow warns when the lag never decreased, which also flags a perfectly flat non-zero lag
  of a consumer that keeps pace; kpulse also requires that the lag grew (DOMAIN: "lag keeps
  growing"). With polling, a healthy consumer's lag is rarely exactly 0 but goes up and down.
* Rule 2: a partition seen fewer than ``min_observations`` times has no status (``None``), not OK
  (no data is not good), unless rule 1 already shows it caught up.

Group status is the worst status of its partitions by this severity ranking (``None`` partitions
are skipped; ``None`` when no partition has a status; names and order: ``kpulse/lag_contract.py``):

    OK < WARN < REWIND < STALL < STOP < ERR

REWIND is usually an operator's offset reset, and the consumer is moving; STALL is a live consumer
that makes no progress; STOP means nobody consumes at all (it may be a retired group, yet lag
grows for everyone downstream); ERR is STALL or STOP that has lasted.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from kpulse.lag_contract import PartitionStatus

DEFAULT_WINDOW_SIZE = 10
DEFAULT_MIN_OBSERVATIONS = 3
DEFAULT_ERR_AFTER_SECONDS = 900.0


def worst_status(statuses: Iterable[PartitionStatus | None]) -> PartitionStatus | None:
    """The most severe status, skipping ``None``; ``None`` when there is none."""
    known = [status for status in statuses if status is not None]
    return max(known, key=lambda status: status.severity) if known else None


@dataclass(frozen=True, slots=True)
class OffsetObservation:
    """One poll of one partition of one group."""

    time: float
    """Wall-clock time of the poll, epoch seconds."""
    committed: int
    """The group's committed offset (next record it will read); >= 0. A partition without a
    committed offset has no lag and must not be observed."""
    log_end: int
    """The partition's log end offset (high watermark) read in the same poll."""
    lag: int = field(init=False, compare=False)
    """Offset lag, ``log_end - committed`` clamped at 0 (computed once: the rules read it often)."""

    def __post_init__(self) -> None:
        if self.committed < 0:
            raise ValueError(f"committed offset must be >= 0, got {self.committed} (no commit: do not observe)")
        object.__setattr__(self, "lag", self.log_end - self.committed if self.log_end > self.committed else 0)


def evaluate_partition(observations: Sequence[OffsetObservation], now: float, has_members: bool, *,
                       stuck_since: float | None = None,
                       min_observations: int = DEFAULT_MIN_OBSERVATIONS,
                       err_after_seconds: float = DEFAULT_ERR_AFTER_SECONDS) -> PartitionStatus | None:
    """Apply the rules of the module docstring to one window (oldest observation first).

    ``stuck_since`` is the time the current committed offset was first seen (from before the
    window if known); defaults to the window's first observation.
    """
    entries = [(o.time, o.committed, o.log_end, o.lag) for o in observations]
    return _evaluate(entries, now, has_members, stuck_since, min_observations, err_after_seconds)


def _evaluate(entries: Sequence[tuple[float, int, int, int]], now: float, has_members: bool,
              stuck_since: float | None, min_observations: int, err_after_seconds: float) -> PartitionStatus | None:
    """:func:`evaluate_partition` over ``(time, committed, log_end, lag)`` tuples."""
    if not entries:
        return None
    lags = [entry[3] for entry in entries]
    if 0 in lags:
        return PartitionStatus.OK
    if len(entries) < min_observations:
        return None
    committed = [entry[1] for entry in entries]
    # "never decreases" is "equals its sorted self": one C-level sort of <= 10 numbers, where a
    # generator over pairs cost most of this function (it runs for every group partition)
    if committed != sorted(committed):
        return PartitionStatus.REWIND
    if committed[0] == committed[-1]:  # never decreasing, so: never moved
        first = entries[0][0]
        since = first if stuck_since is None else min(stuck_since, first)
        if now - since > err_after_seconds:
            return PartitionStatus.ERR
        return PartitionStatus.STALL if has_members else PartitionStatus.STOP
    if lags[-1] > lags[0] and lags == sorted(lags):
        return PartitionStatus.WARN
    return PartitionStatus.OK


class PartitionWindow:
    """The last ``size`` observations of one partition of one group, plus when it got stuck.

    Observations are kept as plain ``(time, committed, log_end, lag)`` tuples: the garbage
    collector stops tracking a tuple of numbers, where it would walk 100,000 observation objects
    (10,000 partitions x 10) at every full collection, several times a cycle."""

    __slots__ = ("_entries", "stuck_since")  # one per group partition: 10,000s of them

    def __init__(self, size: int = DEFAULT_WINDOW_SIZE) -> None:
        self._entries: deque[tuple[float, int, int, int]] = deque(maxlen=size)
        self.stuck_since: float | None = None
        """Time of the first observation carrying the current committed offset (it may have been
        unchanged before kpulse started watching); ``None`` before the first observation."""

    def observe(self, observation: OffsetObservation) -> None:
        """Append a poll result; one not newer than the newest observation is ignored."""
        self.add(observation.time, observation.committed, observation.log_end)

    def add(self, time: float, committed: int, log_end: int) -> None:
        """:meth:`observe` without an :class:`OffsetObservation` (``committed`` >= 0)."""
        entries = self._entries
        if entries:
            newest = entries[-1]
            if time <= newest[0]:
                return
            if committed != newest[1]:
                self.stuck_since = time
        else:
            self.stuck_since = time
        entries.append((time, committed, log_end, log_end - committed if log_end > committed else 0))

    @property
    def observations(self) -> tuple[OffsetObservation, ...]:
        """The window, oldest first."""
        return tuple(OffsetObservation(time, committed, log_end) for time, committed, log_end, _ in self._entries)


class StatusTracker:
    """Windows per (group, topic, partition) and their Burrow-style statuses.

    Feed it one :meth:`observe` per partition of a group per collection cycle (only partitions
    with a committed offset). Not thread-safe; one collector owns one tracker.
    """

    def __init__(self, window_size: int = DEFAULT_WINDOW_SIZE, min_observations: int = DEFAULT_MIN_OBSERVATIONS,
                 err_after_seconds: float = DEFAULT_ERR_AFTER_SECONDS) -> None:
        if window_size < 2:
            raise ValueError(f"window_size must be at least 2, got {window_size}")
        if not 2 <= min_observations <= window_size:
            raise ValueError(f"min_observations must be between 2 and window_size ({window_size}), "
                             f"got {min_observations}")
        if err_after_seconds <= 0:
            raise ValueError(f"err_after_seconds must be positive, got {err_after_seconds}")
        self.window_size = window_size
        self.min_observations = min_observations
        self.err_after_seconds = err_after_seconds
        self._windows: dict[str, dict[tuple[str, int], PartitionWindow]] = {}

    def observe(self, group: str, topic: str, partition: int, observation: OffsetObservation) -> None:
        """Add one poll result of one partition of a group."""
        self.observe_offsets(group, topic, partition, observation.time, observation.committed, observation.log_end)

    def observe_offsets(self, group: str, topic: str, partition: int, time: float, committed: int,
                        log_end: int) -> None:
        """:meth:`observe` from the numbers (the collector's path: no object per observation)."""
        if committed < 0:
            raise ValueError(f"committed offset must be >= 0, got {committed} (no commit: do not observe)")
        partitions = self._windows.get(group)
        if partitions is None:
            partitions = self._windows[group] = {}
        window = partitions.get((topic, partition))
        if window is None:
            window = partitions[(topic, partition)] = PartitionWindow(self.window_size)
        window.add(time, committed, log_end)

    def observe_and_status(self, group: str, topic: str, partition: int, now: float, committed: int | None,
                           log_end: int | None, has_members: bool) -> PartitionStatus | None:
        """:meth:`observe_offsets` at ``now`` when both offsets are known, then
        :meth:`partition_status`: the collector's path, one window lookup per partition and cycle."""
        partitions = self._windows.get(group)
        window = None if partitions is None else partitions.get((topic, partition))
        if committed is not None and log_end is not None:
            if committed < 0:
                raise ValueError(f"committed offset must be >= 0, got {committed} (no commit: do not observe)")
            if window is None:
                if partitions is None:
                    partitions = self._windows[group] = {}
                window = partitions[(topic, partition)] = PartitionWindow(self.window_size)
            window.add(now, committed, log_end)
        if window is None:
            return None
        return _evaluate(window._entries, now, has_members, window.stuck_since, self.min_observations,
                         self.err_after_seconds)

    def observations(self, group: str, topic: str, partition: int) -> tuple[OffsetObservation, ...]:
        """The partition's window, oldest first (empty when never observed)."""
        window = self._windows.get(group, {}).get((topic, partition))
        return window.observations if window else ()

    def partition_status(self, group: str, topic: str, partition: int, now: float,
                         has_members: bool) -> PartitionStatus | None:
        """Status of one partition; ``None`` when never observed or too few observations."""
        window = self._windows.get(group, {}).get((topic, partition))
        if window is None:
            return None
        return _evaluate(window._entries, now, has_members, window.stuck_since, self.min_observations,
                         self.err_after_seconds)

    def partition_statuses(self, group: str, now: float,
                           has_members: bool) -> dict[tuple[str, int], PartitionStatus | None]:
        """Status of every observed partition of the group, keyed by (topic, partition), sorted."""
        return {key: self.partition_status(group, key[0], key[1], now, has_members)
                for key in sorted(self._windows.get(group, {}))}

    def group_status(self, group: str, now: float, has_members: bool) -> PartitionStatus | None:
        """The worst partition status of the group (see the ranking in the module docstring)."""
        return worst_status(self.partition_statuses(group, now, has_members).values())

    def groups(self) -> list[str]:
        """Every group with at least one window, sorted."""
        return sorted(self._windows)

    def forget_group(self, group: str) -> None:
        """Drop every window of the group (group deleted or no longer monitored)."""
        self._windows.pop(group, None)

    def forget_partition(self, group: str, topic: str, partition: int) -> None:
        """Drop one window (partition unassigned and its offset deleted, topic deleted)."""
        partitions = self._windows.get(group)
        if partitions is not None:
            partitions.pop((topic, partition), None)
            if not partitions:
                del self._windows[group]
