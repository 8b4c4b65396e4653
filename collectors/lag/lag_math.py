"""Consumer lag in offsets and in seconds: the rules, their defaults and reasons, and a group's
sums over its partitions. Pure, no I/O.

``collectors/lag/lag_arrays.py`` applies these rules to every group partition of a cycle at once;
``tests/lag_oracle.py`` states them one partition at a time, as the reference it is tested against.

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

from typing import NamedTuple
from collections.abc import Callable, Sequence

DEFAULT_MAX_POINTS = 60
DEFAULT_DIP_READINGS = 3
"""Consecutive readings below a table's newest point after which it restarts (see the rules)."""

REASON_NO_COMMIT = "no committed offset"
REASON_NO_LOG_END = "no log end offset"
REASON_NO_HISTORY = "no log end history for this partition"
REASON_LOG_END_BELOW_HISTORY = "log end offset is below the recorded history (topic recreated or truncated?)"
REASON_BEYOND_HISTORY = "committed offset is beyond the recorded history"
REASON_NO_RATE = "log end offset did not move in the recorded history, so there is no rate to extrapolate"


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
