"""The lag rules one partition at a time: the reference the collector's arrays are tested against.

``collectors/lag/lag_math.py`` (offset lag, time lag from a lookup table of log end points) and
``collectors/lag/lag_status.py`` (Burrow-style status over a window of polls) state the rules;
``collectors/lag/lag_arrays.py`` applies them to every group partition of a cycle at once, for
speed. This module applies them the plain way, one object per partition (:class:`OffsetHistory`
and :func:`estimate_lag_seconds`, :class:`PartitionWindow` and :class:`StatusTracker`), so that
``tests/test_lag_logic.py`` can check the rules on tables of hand-computed cases and
``tests/test_lag_arrays.py`` can replay random cycles through both and require the same answers.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import NamedTuple
from collections.abc import Iterable, Sequence

from collectors.lag.lag_math import (
    DEFAULT_DIP_READINGS, DEFAULT_MAX_POINTS, REASON_BEYOND_HISTORY, REASON_LOG_END_BELOW_HISTORY, REASON_NO_COMMIT,
    REASON_NO_HISTORY, REASON_NO_LOG_END, REASON_NO_RATE,
)
from collectors.lag.lag_status import DEFAULT_ERR_AFTER_SECONDS, DEFAULT_MIN_OBSERVATIONS, DEFAULT_WINDOW_SIZE
from kpulse.lag_contract import PartitionStatus


# --- offset lag and time lag (collectors/lag/lag_math.py) -----------------------------------------

def partition_lag(committed: int | None, log_end: int | None) -> int | None:
    """Offset lag of one partition: ``log_end - committed`` clamped at 0.

    ``None`` when the group has no committed offset (``None`` or negative: Kafka answers -1 for
    "no commit") or the log end is unknown (``None`` or negative).
    """
    if committed is None or committed < 0 or log_end is None or log_end < 0:
        return None
    return max(0, log_end - committed)


@dataclass(frozen=True, slots=True)
class HistoryPoint:
    """One row of a partition's lookup table."""

    log_end_offset: int
    """The partition's log end offset (high watermark) as read in one collection cycle."""
    time: float
    """Wall-clock time of that read, epoch seconds."""


class TimeLagEstimate(NamedTuple):
    """The answer of :func:`estimate_lag_seconds`: a value, or ``None`` with the reason (a named
    tuple: one is made per group partition and cycle)."""

    seconds: float | None
    """Seconds the group is behind (>= 0); 0.0 when caught up; ``None`` when it cannot be told."""
    reason: str | None = None
    """Why ``seconds`` is ``None`` (one of the ``REASON_*`` texts or "not enough history (n point)");
    ``None`` whenever ``seconds`` has a value."""
    extrapolated: bool = False
    """True when the committed offset was older than the table and the time was extrapolated
    (less trustworthy than an interpolated value)."""


class OffsetHistory:
    """Per (topic, partition) bounded tables of recent ``(log end offset, wall time)`` points.

    Feed it with :meth:`record` once per collection cycle, before asking :func:`lag_seconds`.
    Not thread-safe; one collector owns one history.
    """

    def __init__(self, max_points: int = DEFAULT_MAX_POINTS, dip_readings: int = DEFAULT_DIP_READINGS) -> None:
        if max_points < 2:
            raise ValueError(f"max_points must be at least 2 (interpolation needs two points), got {max_points}")
        if dip_readings < 1:
            raise ValueError(f"dip_readings must be at least 1, got {dip_readings}")
        self.max_points = max_points
        self.dip_readings = dip_readings
        # Points are kept as plain (log end offset, time) tuples, which the garbage collector stops
        # tracking; HistoryPoint objects (two per partition) would be walked at every full collection.
        self._tables: dict[tuple[str, int], deque[tuple[int, float]]] = {}
        self._dips: dict[tuple[str, int], int] = {}
        """(topic, partition) -> consecutive readings below its table's newest point, when > 0."""

    def record(self, topic: str, partition: int, log_end_offset: int, time: float) -> None:
        """Add this cycle's log end offset of one partition (rules in ``lag_math``'s docstring)."""
        key = (topic, partition)
        point = (log_end_offset, time)
        table = self._tables.get(key)
        if table is None:
            self._tables[key] = deque([point], maxlen=self.max_points)
            return
        newest_offset, newest_time = table[-1]
        if time <= newest_time:
            return
        if log_end_offset < newest_offset:
            readings = self._dips.get(key, 0) + 1
            if readings < self.dip_readings:  # a dip (a leader failover): not a point of the log
                self._dips[key] = readings
                return
            self._dips.pop(key, None)  # below for dip_readings readings: another log (recreated, truncated)
            table.clear()
            table.append(point)
            return
        self._dips.pop(key, None)
        if log_end_offset == newest_offset and len(table) >= 2 and table[-2][0] == log_end_offset:
            table[-1] = point  # plateau: move its right edge forward
            return
        table.append(point)

    def points(self, topic: str, partition: int) -> tuple[HistoryPoint, ...]:
        """The partition's table, oldest first (empty when never recorded)."""
        return tuple(HistoryPoint(offset, time) for offset, time in self._tables.get((topic, partition), ()))

    def forget(self, topic: str, partition: int) -> None:
        """Drop one partition's table (topic deleted, partition no longer monitored)."""
        self._tables.pop((topic, partition), None)
        self._dips.pop((topic, partition), None)

    def known_partitions(self) -> list[tuple[str, int]]:
        """Every (topic, partition) that has a table, sorted."""
        return sorted(self._tables)


def estimate_lag_seconds(history: OffsetHistory, topic: str, partition: int, committed: int | None,
                         log_end: int | None, now: float) -> TimeLagEstimate:
    """Seconds the group at ``committed`` is behind, with the reason when it cannot be told.

    ``log_end`` is the partition's current log end and ``now`` the current wall time. If the
    caller has not recorded ``(log_end, now)`` in ``history`` yet, that point is used as the
    newest point without being stored. A ``log_end`` below the newest point but not below the
    oldest is a dip: the table's newest point stands for it (the offset lag stays as read).
    """
    if committed is None or committed < 0:
        return TimeLagEstimate(None, REASON_NO_COMMIT)
    if log_end is None or log_end < 0:
        return TimeLagEstimate(None, REASON_NO_LOG_END)
    points = list(history._tables.get((topic, partition), ()))  # (log end offset, time), oldest first
    if points and points[0][0] <= log_end < points[-1][0]:
        log_end = points[-1][0]
    if committed >= log_end:
        return TimeLagEstimate(0.0)

    if not points:
        return TimeLagEstimate(None, REASON_NO_HISTORY)
    newest_offset, newest_time = points[-1]
    if log_end < newest_offset:
        return TimeLagEstimate(None, REASON_LOG_END_BELOW_HISTORY)
    if log_end > newest_offset and now > newest_time:
        points.append((log_end, now))
    if len(points) < 2:
        return TimeLagEstimate(None, f"not enough history ({len(points)} point)")

    # Half-open [left, right): an offset on a plateau falls in the segment leaving the plateau,
    # so the latest time the log end sat there wins.
    for (left_offset, left_time), (right_offset, right_time) in zip(points, points[1:]):
        if left_offset <= committed < right_offset:
            rate = (right_offset - left_offset) / (right_time - left_time)
            moment = left_time + (committed - left_offset) / rate
            return TimeLagEstimate(max(0.0, now - moment))

    oldest_offset, oldest_time = points[0]
    if committed >= points[-1][0]:
        return TimeLagEstimate(None, REASON_BEYOND_HISTORY)
    for (left_offset, left_time), (right_offset, right_time) in zip(points, points[1:]):
        if right_offset > left_offset:
            rate = (right_offset - left_offset) / (right_time - left_time)
            moment = oldest_time - (oldest_offset - committed) / rate
            return TimeLagEstimate(max(0.0, now - moment), extrapolated=True)
    return TimeLagEstimate(None, REASON_NO_RATE)


def lag_seconds_with_reason(history: OffsetHistory, topic: str, partition: int, committed: int | None,
                            log_end: int | None, now: float) -> tuple[float | None, str | None]:
    """``(seconds, None)`` or ``(None, reason)``; see :func:`estimate_lag_seconds`."""
    estimate = estimate_lag_seconds(history, topic, partition, committed, log_end, now)
    return estimate.seconds, estimate.reason


def lag_seconds(history: OffsetHistory, topic: str, partition: int, committed: int | None,
                log_end: int | None, now: float) -> float | None:
    """Seconds behind (>= 0), 0.0 when caught up, ``None`` when it cannot be estimated."""
    return estimate_lag_seconds(history, topic, partition, committed, log_end, now).seconds


# --- status (collectors/lag/lag_status.py) ----------------------------------------------------------

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
