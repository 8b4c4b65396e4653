"""Consumer lag in offsets and in seconds: the rules, their defaults and reasons, and a group's
sums over its partitions. Pure, no I/O.

:func:`partition_lag`, :class:`OffsetHistory` (the table of one partition, kept between cycles) and
:func:`estimate_lag_seconds` state the rules one partition at a time; ``collectors/lag/lag_arrays.py``
applies them to every group partition of a cycle at once, on arrays, for speed, and
``tests/test_lag_arrays.py`` replays random cycles through both and requires the same answers.

Offset lag (DOMAIN §2) is ``log end - committed``, clamped at 0; a partition without a committed
offset has no lag value (``None``, never 0).

Time lag ("how many seconds behind") follows kafka-lag-exporter's lookup table. For every
partition the collector keeps a short table of ``(log end offset, wall time)`` points,
one per collection cycle. The committed offset ``c`` is the next record the group will read, so
the group is exactly as far behind as the moment the log end offset was ``c``: the records
written after that moment are the ones it has not consumed. The time lag finds that moment by
linear interpolation between the two surrounding points and returns ``now - moment``.

Rules of the table (decided here, tested in ``tests/test_lag_logic.py`` and ``tests/test_lag_arrays.py``):

* **Plateaus keep both edges.** While the log end does not move, the table holds two points for
  the plateau: the first time the offset was seen and the most recent one (the second is moved
  forward on every cycle). A group at committed == X, when the log end sat at X from t1 to t2
  and then rose, is behind by ``now - t2`` (the record at X was written after t2), so the lookup
  uses the *latest* time the log end equalled ``c``. Compressing plateaus also keeps an idle
  topic from filling the table with identical points.
* **Bounded.** At most ``max_points`` (default 60) points per partition; the oldest goes first.
* **Out of order.** A point not newer than the newest point is ignored.
* **Log end below the newest point: a dip first, another log after** ``dip_readings`` (default 3)
  **readings.** A reading below the table's newest point is not recorded, nor does it restart the
  table, until ``dip_readings`` consecutive readings (newer than the newest point; a cycle without
  a log end neither counts nor breaks the run) have been below it; then the table restarts at the
  last one: the topic was deleted and recreated, or truncated (an unclean leader election), and
  the old points describe a different log. A reading at or above the newest point ends the dip.
  Why: right after a leader election the new leader's high watermark can be behind the old
  one's until its followers fetch again. Brokers since Kafka 2.2 (KIP-207) answer ListOffsets
  with ``OFFSET_NOT_AVAILABLE`` meanwhile (no log end that cycle), older ones with the lower
  value; restarting the table on such a dip made the time lag unknown, then wrong, just after a
  failover. While a reading is below the newest point:

  - *within the table* (not below its oldest point, as a failover dip is: the new leader was in
    sync, so it is behind by a fetch or two, and the table reaches further back), the time lag
    is told from the table as if the log end were its newest point (a group at or past the
    newest point is caught up); the offset lag stays ``log end - committed`` as read, clamped at 0;
  - *below the whole table* (a recreated topic, typically: it drops to a small offset and stays),
    the table cannot place the committed offset: a group at or past the log end read is caught up
    (0 s), any other time lag is ``None`` with :data:`REASON_LOG_END_BELOW_HISTORY`, until the
    table restarts. A recreated topic could be told at once by its new topic id (Metadata v10+),
    which the readers do not report; the leader epoch would not tell a failover dip from an
    unclean election's truncation (both raise it).
* **Older than the table.** When ``c`` is below the oldest point, the time is extrapolated
  backwards from the oldest point at the rate of the oldest segment in which the log end rose
  (the oldest rate is the best guess for what happened just before it). No rising segment at all
  (an idle topic) means no rate: the estimate is ``None``.
* **Cannot tell is None.** Every ``None`` carries a reason (one of the ``REASON_*`` texts);
  a time lag is never a default 0.
* **A cycle without a log end keeps the table.** A partition whose log end could not be read
  (its leader dead and not replaced yet) gets no point that cycle; its table is dropped only when
  no listed group consumes it any more (a group whose offsets could not be read this cycle, its
  coordinator down, still consumes the partitions it was last read with). Restarting it after a
  leader move would leave a short table made of the producer's burst of buffered records, and the
  time lag extrapolated at that rate was a fraction of the truth while the offset lag rose
  (``tests/test_lag_partial.py``).

A group's total lag and worst time lag are over its partitions (:func:`sum_over_partitions`,
:func:`max_over_partitions`). A partition without a committed offset has no lag and is left out;
one with a committed offset whose value is unknown (log end not read) is left out *and counted*:
the answer is partial, never a silently smaller number that looks complete.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

DEFAULT_MAX_POINTS = 60
DEFAULT_DIP_READINGS = 3
"""Consecutive readings below a table's newest point after which it restarts (see the rules)."""

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


# --- time lag: the table of one partition, and the estimate read from it ------------------------------

@dataclass(frozen=True, slots=True)
class HistoryPoint:
    """One row of a partition's lookup table."""

    log_end_offset: int
    """The partition's log end offset (high watermark) as read in one collection cycle."""
    time: float
    """Wall-clock time of that read, epoch seconds."""


class TimeLagEstimate(NamedTuple):
    """The answer of :func:`estimate_lag_seconds`: a value, or ``None`` with the reason."""

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

    Feed it with :meth:`record` once per collection cycle, before asking
    :func:`estimate_lag_seconds`. Not thread-safe.
    """

    def __init__(self, max_points: int = DEFAULT_MAX_POINTS, dip_readings: int = DEFAULT_DIP_READINGS) -> None:
        if max_points < 2:
            raise ValueError(f"max_points must be at least 2 (interpolation needs two points), got {max_points}")
        if dip_readings < 1:
            raise ValueError(f"dip_readings must be at least 1, got {dip_readings}")
        self.max_points = max_points
        self.dip_readings = dip_readings
        self._tables: dict[tuple[str, int], deque[HistoryPoint]] = {}
        self._dips: dict[tuple[str, int], int] = {}
        """(topic, partition) -> consecutive readings below its table's newest point, when > 0."""

    def record(self, topic: str, partition: int, log_end_offset: int, time: float) -> None:
        """Add this cycle's log end offset of one partition, by the rules of the table (module
        docstring): out of order ignored, a dip not recorded until it is another log, plateaus
        kept as their two edges, bounded."""
        key = (topic, partition)
        point = HistoryPoint(log_end_offset, time)
        table = self._tables.get(key)
        if table is None:
            self._tables[key] = deque([point], maxlen=self.max_points)
            return
        newest = table[-1]
        if time <= newest.time:  # out of order
            return
        if log_end_offset < newest.log_end_offset:  # below the newest point: a dip, or another log
            readings = self._dips.get(key, 0) + 1
            if readings < self.dip_readings:  # a dip (a leader failover): not a point of the log
                self._dips[key] = readings
                return
            self._dips.pop(key, None)  # below for dip_readings readings: another log (recreated, truncated)
            table.clear()
            table.append(point)
            return
        self._dips.pop(key, None)  # at or above the newest point: a dip, if any, is over
        if log_end_offset == newest.log_end_offset and len(table) >= 2 and table[-2].log_end_offset == log_end_offset:
            table[-1] = point  # plateau: move its right edge forward
            return
        table.append(point)

    def points(self, topic: str, partition: int) -> tuple[HistoryPoint, ...]:
        """The partition's table, oldest first (empty when never recorded)."""
        return tuple(self._tables.get((topic, partition), ()))

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
    points = history.points(topic, partition)
    if points and points[0].log_end_offset <= log_end < points[-1].log_end_offset:
        log_end = points[-1].log_end_offset  # a dip within the table
    if committed >= log_end:
        return TimeLagEstimate(0.0)  # caught up

    if not points:
        return TimeLagEstimate(None, REASON_NO_HISTORY)
    newest = points[-1]
    if log_end < newest.log_end_offset:  # below the whole table: it cannot place the committed offset
        return TimeLagEstimate(None, REASON_LOG_END_BELOW_HISTORY)
    if log_end > newest.log_end_offset and now > newest.time:
        points = (*points, HistoryPoint(log_end, now))  # the current log end, not recorded yet
    if len(points) < 2:
        return TimeLagEstimate(None, f"not enough history ({len(points)} point)")

    moment = _interpolated_moment(points, committed)
    if moment is not None:
        return TimeLagEstimate(max(0.0, now - moment))
    if committed >= points[-1].log_end_offset:
        return TimeLagEstimate(None, REASON_BEYOND_HISTORY)
    moment = _extrapolated_moment(points, committed)
    if moment is None:
        return TimeLagEstimate(None, REASON_NO_RATE)
    return TimeLagEstimate(max(0.0, now - moment), extrapolated=True)


def _interpolated_moment(points: Sequence[HistoryPoint], committed: int) -> float | None:
    """When the log end was at ``committed``, interpolated between the two points around it; ``None``
    when it is outside the table. Segments are half-open ``[left, right)``: an offset on a plateau
    falls in the segment leaving the plateau, so the latest time the log end sat there wins."""
    for left, right in zip(points, points[1:]):
        if left.log_end_offset <= committed < right.log_end_offset:
            rate = (right.log_end_offset - left.log_end_offset) / (right.time - left.time)
            return left.time + (committed - left.log_end_offset) / rate
    return None


def _extrapolated_moment(points: Sequence[HistoryPoint], committed: int) -> float | None:
    """When the log end was at ``committed``, below the table's oldest point: back from the oldest
    point at the rate of the oldest segment in which the log end rose; ``None`` when it never rose."""
    oldest = points[0]
    for left, right in zip(points, points[1:]):
        if right.log_end_offset > left.log_end_offset:
            rate = (right.log_end_offset - left.log_end_offset) / (right.time - left.time)
            return oldest.time - (oldest.log_end_offset - committed) / rate
    return None


# --- a group's sums over its partitions ---------------------------------------------------------------

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


def _over_partitions(values: Sequence[float | None], committed: Sequence[int | None],
                     combine: Callable[[list[float]], float]) -> PartitionTotal:
    known: list[float] = []
    unknown = 0
    for value, offset in zip(values, committed):
        if value is not None:
            known.append(value)
        elif offset is not None and offset >= 0:
            unknown += 1
    return PartitionTotal(combine(known) if known else None, unknown)
