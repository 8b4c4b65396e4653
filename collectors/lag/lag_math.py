"""Consumer lag in offsets and in seconds: pure functions on plain data, no I/O.

Offset lag (DOMAIN §2) is ``log end - committed``, clamped at 0; a partition without a committed
offset has no lag value (``None``, never 0).

Time lag ("how many seconds behind") follows kafka-lag-exporter's lookup table. For every
partition :class:`OffsetHistory` keeps a short table of ``(log end offset, wall time)`` points,
one per collection cycle. The committed offset ``c`` is the next record the group will read, so
the group is exactly as far behind as the moment the log end offset was ``c``: the records
written after that moment are the ones it has not consumed. :func:`lag_seconds` finds that moment
by linear interpolation between the two surrounding points and returns ``now - moment``.

Rules of the table (decided here, tested in ``tests/test_lag_logic.py``):

* **Plateaus keep both edges.** While the log end does not move, the table holds two points for
  the plateau: the first time the offset was seen and the most recent one (the second is moved
  forward on every cycle). A group at committed == X, when the log end sat at X from t1 to t2
  and then rose, is behind by ``now - t2`` (the record at X was written after t2), so the lookup
  uses the *latest* time the log end equalled ``c``. Compressing plateaus also keeps an idle
  topic from filling the table with identical points.
* **Bounded.** At most ``max_points`` (default 60) points per partition; the oldest goes first.
* **Out of order.** A point not newer than the newest point is ignored.
* **Log end going backwards** (topic deleted and recreated, or truncated) resets the partition's
  table to the new point: the old points describe a different log.
* **Older than the table.** When ``c`` is below the oldest point, the time is extrapolated
  backwards from the oldest point at the rate of the oldest segment in which the log end rose
  (the oldest rate is the best guess for what happened just before it). No rising segment at all
  (an idle topic) means no rate: the estimate is ``None``.
* **Cannot tell is None.** Every ``None`` carries a reason (:func:`lag_seconds_with_reason`);
  a time lag is never a default 0.
* **A cycle without a log end keeps the table.** A partition whose log end could not be read
  (its leader dead and not replaced yet) gets no point that cycle; its table is dropped only when
  no group consumes it any more. Restarting it after a leader move would leave a short table
  made of the producer's burst of buffered records, and the time lag extrapolated at that rate
  was a fraction of the truth while the offset lag rose (``tests/test_lag_partial.py``).

A group's total lag and worst time lag are over its partitions (:func:`sum_over_partitions`,
:func:`max_over_partitions`). A partition without a committed offset has no lag and is left out;
one with a committed offset whose value is unknown (log end not read) is left out *and counted*:
the answer is partial, never a silently smaller number that looks complete.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Callable, NamedTuple, Sequence

DEFAULT_MAX_POINTS = 60

REASON_NO_COMMIT = "no committed offset"
REASON_NO_LOG_END = "no log end offset"
REASON_NO_HISTORY = "no log end history for this partition"
REASON_LOG_END_BELOW_HISTORY = "log end offset is below the recorded history (topic recreated or truncated?)"
REASON_BEYOND_HISTORY = "committed offset is beyond the recorded history"
REASON_NO_RATE = "log end offset did not move in the recorded history, so there is no rate to extrapolate"


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

    def __init__(self, max_points: int = DEFAULT_MAX_POINTS) -> None:
        if max_points < 2:
            raise ValueError(f"max_points must be at least 2 (interpolation needs two points), got {max_points}")
        self.max_points = max_points
        # Points are kept as plain (log end offset, time) tuples, which the garbage collector stops
        # tracking; HistoryPoint objects (two per partition) would be walked at every full collection.
        self._tables: dict[tuple[str, int], deque[tuple[int, float]]] = {}

    def record(self, topic: str, partition: int, log_end_offset: int, time: float) -> None:
        """Add this cycle's log end offset of one partition (rules in the module docstring)."""
        point = (log_end_offset, time)
        table = self._tables.get((topic, partition))
        if table is None:
            self._tables[(topic, partition)] = deque([point], maxlen=self.max_points)
            return
        newest_offset, newest_time = table[-1]
        if time <= newest_time:
            return
        if log_end_offset < newest_offset:
            table.clear()
            table.append(point)
            return
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

    def known_partitions(self) -> list[tuple[str, int]]:
        """Every (topic, partition) that has a table, sorted."""
        return sorted(self._tables)


def estimate_lag_seconds(history: OffsetHistory, topic: str, partition: int, committed: int | None,
                         log_end: int | None, now: float) -> TimeLagEstimate:
    """Seconds the group at ``committed`` is behind, with the reason when it cannot be told.

    ``log_end`` is the partition's current log end and ``now`` the current wall time. If the
    caller has not recorded ``(log_end, now)`` in ``history`` yet, that point is used as the
    newest point without being stored.
    """
    if committed is None or committed < 0:
        return TimeLagEstimate(None, REASON_NO_COMMIT)
    if log_end is None or log_end < 0:
        return TimeLagEstimate(None, REASON_NO_LOG_END)
    if committed >= log_end:
        return TimeLagEstimate(0.0)

    points = list(history._tables.get((topic, partition), ()))  # (log end offset, time), oldest first
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


class PartitionTotal(NamedTuple):
    """A group's sum (or worst value) over its partitions, some of which may be unknown."""

    value: float | None
    """Over the partitions whose value is known; ``None`` when none of them is."""
    unknown: int = 0
    """Partitions with a committed offset whose value is unknown, left out of ``value``."""

    @property
    def partial(self) -> bool:
        """``value`` is over some partitions but not all: a lower bound, not the group's value."""
        return self.value is not None and self.unknown > 0


def sum_over_partitions(values: Sequence[float | None], committed: Sequence[int | None]) -> PartitionTotal:
    """The sum of ``values[i]`` (partition i's lag, ``None`` unknown), ``committed[i]`` its committed
    offset (``None`` or negative: no commit, so no lag to miss)."""
    return _over_partitions(values, committed, sum)


def max_over_partitions(values: Sequence[float | None], committed: Sequence[int | None]) -> PartitionTotal:
    """The largest of ``values`` (e.g. time lags), by the rules of :func:`sum_over_partitions`."""
    return _over_partitions(values, committed, max)


def _over_partitions(values, committed, combine: Callable) -> PartitionTotal:
    known, unknown = [], 0
    for value, offset in zip(values, committed):
        if value is not None:
            known.append(value)
        elif offset is not None and offset >= 0:
            unknown += 1
    return PartitionTotal(combine(known) if known else None, unknown)


def lag_seconds(history: OffsetHistory, topic: str, partition: int, committed: int | None,
                log_end: int | None, now: float) -> float | None:
    """Seconds behind (>= 0), 0.0 when caught up, ``None`` when it cannot be estimated."""
    return estimate_lag_seconds(history, topic, partition, committed, log_end, now).seconds
