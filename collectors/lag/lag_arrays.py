"""The rules of ``lag_math`` (offset lag, time lag) and ``lag_status`` (Burrow-style status) applied
to every group partition of a cycle at once, on numpy arrays. Pure: no I/O.

``lag_math`` (``OffsetHistory`` and ``estimate_lag_seconds``) and ``lag_status`` (``StatusTracker``
and ``evaluate_partition``, one function per rule) apply the rules one partition at a time and are
their statement; this module must give the same answers (``tests/test_lag_arrays.py`` replays random
cycles through both). It is for speed: the collector's cycle at 10,000 group partitions, where
Python objects per partition take tenths of a second and the arrays a few milliseconds.

Layout. Every (topic, partition) with a log end history owns a row of ``_offsets``/``_times``
(``max_points`` columns); every (group, topic, partition) with a status window owns a row of the
window arrays (``window_size`` columns). Rows are right-aligned: the newest point is in the last
column, ``_points`` says how many columns to its left are in use, and unused cells hold
``_UNUSED`` (an offset above any real one, so "points at or below c" counts used cells only).
Appending shifts a row left by one, dropping the oldest point when the row is full. Rows of
forgotten partitions and groups are reused. ``_dips`` counts, per history row, the consecutive
readings below its newest point (a failover dip, until ``dip_readings`` of them restart the row).
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Container, Sequence

import numpy as np

from collectors.lag.lag_math import (
    DEFAULT_DIP_READINGS, DEFAULT_MAX_POINTS, REASON_BEYOND_HISTORY, REASON_LOG_END_BELOW_HISTORY, REASON_NO_COMMIT,
    REASON_NO_HISTORY, REASON_NO_LOG_END, REASON_NO_RATE,
)
from collectors.lag.lag_status import DEFAULT_ERR_AFTER_SECONDS, DEFAULT_MIN_OBSERVATIONS, DEFAULT_WINDOW_SIZE
from kpulse.lag_contract import PartitionStatus

_UNUSED = np.iinfo(np.int64).max
_NONE = -1
"""An unknown offset (no commit, no log end) in the input arrays; Kafka's own "none" is -1 too."""

STATUS_BY_CODE: tuple[PartitionStatus | None, ...] = (None, *PartitionStatus)
"""Status code -> status: 0 is no status, then OK=1 ... ERR=6 in severity order (so the worst
status of a group is the largest code)."""
_OK, _WARN, _REWIND, _STALL, _STOP, _ERR = range(1, 7)

REASONS: tuple[str | None, ...] = (None, REASON_NO_COMMIT, REASON_NO_LOG_END, REASON_NO_HISTORY,
                                   REASON_LOG_END_BELOW_HISTORY, "not enough history (1 point)",
                                   REASON_BEYOND_HISTORY, REASON_NO_RATE)
"""Reason code -> why the time lag is unknown (0: it is known)."""
(_, _NO_COMMIT, _NO_LOG_END, _NO_HISTORY, _BELOW_HISTORY, _ONE_POINT, _BEYOND, _NO_RATE) = range(len(REASONS))


@dataclass(frozen=True)
class CycleLag:
    """The answers of one :meth:`LagArrays.evaluate`, one entry per group partition, in input order."""

    lag: np.ndarray
    """Offset lag (int64), ``-1`` where unknown."""
    lag_seconds: np.ndarray
    """Time lag (float64), NaN where unknown."""
    lag_seconds_reason: np.ndarray
    """Code into :data:`REASONS` (0 where the time lag is known)."""
    extrapolated: np.ndarray
    """True where the time lag was extrapolated back from the oldest point."""
    status: np.ndarray
    """Code into :data:`STATUS_BY_CODE` (0: no status)."""


class _Rows:
    """Numbered rows of 2-D arrays for a growing, shrinking set of keys."""

    def __init__(self) -> None:
        self.row_of: dict = {}
        self._free: list[int] = []

    def take(self, key) -> tuple[int, bool]:
        """The row of ``key``, and whether it is new (the caller must grow the arrays when it is)."""
        row = self.row_of.get(key)
        if row is not None:
            return row, False
        row = self._free.pop() if self._free else len(self.row_of)
        self.row_of[key] = row
        return row, True

    def release(self, key) -> int:
        row = self.row_of.pop(key)
        self._free.append(row)
        return row

    def needed(self) -> int:
        return len(self.row_of) + len(self._free)


class LagArrays:
    """Log end histories and status windows of every partition, between cycles. Not thread-safe;
    one collector owns one."""

    def __init__(self, max_points: int = DEFAULT_MAX_POINTS, window_size: int = DEFAULT_WINDOW_SIZE,
                 min_observations: int = DEFAULT_MIN_OBSERVATIONS,
                 err_after_seconds: float = DEFAULT_ERR_AFTER_SECONDS,
                 dip_readings: int = DEFAULT_DIP_READINGS) -> None:
        if max_points < 2:
            raise ValueError(f"max_points must be at least 2 (interpolation needs two points), got {max_points}")
        if dip_readings < 1:
            raise ValueError(f"dip_readings must be at least 1, got {dip_readings}")
        if window_size < 2:
            raise ValueError(f"window_size must be at least 2, got {window_size}")
        if not 2 <= min_observations <= window_size:
            raise ValueError(f"min_observations must be between 2 and window_size ({window_size}), "
                             f"got {min_observations}")
        self.max_points, self.window_size = max_points, window_size
        self.min_observations, self.err_after_seconds = min_observations, err_after_seconds
        self.dip_readings = dip_readings
        self._histories = _Rows()
        self._offsets = np.empty((0, max_points), np.int64)
        self._times = np.empty((0, max_points), np.float64)
        self._points = np.empty(0, np.int64)
        self._dips = np.empty(0, np.int64)
        self._windows: dict[str, dict[tuple[str, int], int]] = {}
        """Group -> (topic, partition) -> window row (rows numbered across groups by ``_window_rows``)."""
        self._window_rows = _Rows()
        self._committed = np.empty((0, window_size), np.int64)
        self._observed = np.empty((0, window_size), np.float64)
        self._lags = np.empty((0, window_size), np.int64)
        self._entries = np.empty(0, np.int64)
        self._stuck_since = np.empty(0, np.float64)
        self._recorded: tuple[list, np.ndarray] | None = None
        """The partitions of the last :meth:`record` and their rows: a cycle usually has the same."""
        self._evaluated: tuple[list, list, np.ndarray, np.ndarray] | None = None
        """The same for :meth:`evaluate`: groups, partitions, window rows, history rows."""

    # --- the history of log ends ---------------------------------------------------------------

    def record(self, partitions: Sequence[tuple[str, int]], log_ends: Sequence[int], now: float) -> None:
        """This cycle's log end of each partition (``lag_math.OffsetHistory.record`` for each)."""
        if self._recorded is not None and self._recorded[0] == partitions:  # the same partitions as last time
            rows = self._recorded[1]
        else:
            rows = np.fromiter((self._history_row(tp) for tp in partitions), np.int64, len(partitions))
            self._recorded = (list(partitions), rows)
            self._evaluated = None  # its history rows may have changed
        self._grow_histories()
        if not len(rows):
            return
        offsets = np.asarray(log_ends, np.int64)
        count = self._points[rows]
        newest_offset, newest_time = self._offsets[rows, -1], self._times[rows, -1]
        newer = (count > 0) & (now > newest_time)
        below = newer & (offsets < newest_offset)
        dipped = self._dips[rows]
        dips = dipped + below  # consecutive readings below the newest point, this one included
        fresh = (count == 0) | (below & (dips >= self.dip_readings))
        dip = below & ~fresh
        moving = newer & ~below
        plateau = moving & (offsets == newest_offset) & (count >= 2) & (self._offsets[rows, -2] == offsets)
        append = moving & ~plateau

        self._dips[rows[dip]] = dips[dip]
        self._dips[rows[(fresh | moving) & (dipped > 0)]] = 0  # a dip ended (rarely any row)
        restart = rows[fresh]
        self._offsets[restart] = _UNUSED
        self._offsets[restart, -1] = offsets[fresh]
        self._times[restart, -1] = now
        self._points[restart] = 1
        self._times[rows[plateau], -1] = now
        grow = rows[append]
        self._offsets[grow, :-1] = self._offsets[grow, 1:]
        self._times[grow, :-1] = self._times[grow, 1:]
        self._offsets[grow, -1] = offsets[append]
        self._times[grow, -1] = now
        self._points[grow] = np.minimum(self._points[grow] + 1, self.max_points)

    def forget_partitions_except(self, partitions: Container[tuple[str, int]]) -> None:
        """Drop the history of every partition not in ``partitions``."""
        for key in [key for key in self._histories.row_of if key not in partitions]:
            row = self._histories.release(key)
            self._points[row] = self._dips[row] = 0
            self._recorded = self._evaluated = None

    def known_partitions(self) -> list[tuple[str, int]]:
        return sorted(self._histories.row_of)

    def history_points(self, partition: tuple[str, int]) -> list[tuple[int, float]]:
        """One partition's (log end, time) points, oldest first (``OffsetHistory.points``)."""
        row = self._histories.row_of.get(partition)
        used = 0 if row is None or row >= len(self._points) else int(self._points[row])
        if not used:
            return []
        return list(zip(self._offsets[row, -used:].tolist(), self._times[row, -used:].tolist()))

    def _history_row(self, key: tuple[str, int]) -> int:
        row, new = self._histories.take(key)
        if new and row < len(self._points):
            self._points[row] = self._dips[row] = 0
        return row

    def _grow_histories(self) -> None:
        size = _grown_size(self._histories.needed(), len(self._points))
        if size:
            self._offsets = _grown(self._offsets, size, _UNUSED)
            self._times = _grown(self._times, size, 0.0)
            self._points = _grown(self._points, size, 0)
            self._dips = _grown(self._dips, size, 0)

    # --- one cycle -------------------------------------------------------------------------------

    def evaluate(self, groups: Sequence[str], partitions: Sequence[tuple[str, int]],
                 committed: Sequence[int] | np.ndarray, log_ends: Sequence[int] | np.ndarray,
                 has_members: Sequence[bool] | np.ndarray, now: float) -> CycleLag:
        """Observe and evaluate every group partition of this cycle: ``groups[i]`` consumes
        ``partitions[i]`` at ``committed[i]`` with log end ``log_ends[i]`` (``-1``: unknown);
        ``has_members[i]`` is its group's. Call :meth:`record` for the cycle first."""
        count = len(partitions)
        if self._evaluated is not None and self._evaluated[0] == groups and self._evaluated[1] == partitions:
            windows, histories = self._evaluated[2:]
        else:
            windows = np.fromiter((self._window_row(g, tp) for g, tp in zip(groups, partitions)), np.int64, count)
            histories = np.fromiter((self._histories.row_of.get(tp, -1) for tp in partitions), np.int64, count)
            self._evaluated = (list(groups), list(partitions), windows, histories)
        self._grow_windows()
        committed_ = np.asarray(committed, np.int64).reshape(count)
        log_end = np.asarray(log_ends, np.int64).reshape(count)
        members = np.asarray(has_members, bool).reshape(count)
        known = (committed_ >= 0) & (log_end >= 0)
        lag = np.where(known, np.maximum(log_end - committed_, 0), -1)
        self._observe(windows[known], committed_[known], log_end[known], now)
        seconds, reason, extrapolated = self._lag_seconds(histories, committed_, log_end, now)
        status = self._status(windows, members, now)
        return CycleLag(lag, seconds, reason, extrapolated, status)

    def forget_groups_except(self, groups: Container[str]) -> None:
        """Drop every window of the groups not in ``groups``."""
        for group in [g for g in self._windows if g not in groups]:
            for key in self._windows.pop(group):
                row = self._window_rows.release((group, key))
                self._entries[row] = 0
            self._evaluated = None

    def groups(self) -> list[str]:
        return sorted(self._windows)

    def _window_row(self, group: str, key: tuple[str, int]) -> int:
        rows = self._windows.get(group)
        if rows is None:
            rows = self._windows[group] = {}
        row = rows.get(key)
        if row is None:
            row, _ = self._window_rows.take((group, key))
            rows[key] = row
            if row < len(self._entries):
                self._entries[row] = 0
        return row

    def _grow_windows(self) -> None:
        size = _grown_size(self._window_rows.needed(), len(self._entries))
        if size:
            self._committed = _grown(self._committed, size, 0)
            self._observed = _grown(self._observed, size, 0.0)
            self._lags = _grown(self._lags, size, 0)
            self._entries = _grown(self._entries, size, 0)
            self._stuck_since = _grown(self._stuck_since, size, np.nan)

    def _observe(self, rows: np.ndarray, committed: np.ndarray, log_end: np.ndarray, now: float) -> None:
        """``lag_status.PartitionWindow.observe`` for each row (each row appears once)."""
        entries = self._entries[rows]
        newer = (entries == 0) | (now > self._observed[rows, -1])
        rows, committed, log_end, entries = rows[newer], committed[newer], log_end[newer], entries[newer]
        moved = (entries == 0) | (committed != self._committed[rows, -1])
        self._stuck_since[rows[moved]] = now
        for array, value in ((self._committed, committed), (self._observed, now),
                             (self._lags, np.maximum(log_end - committed, 0))):
            array[rows, :-1] = array[rows, 1:]
            array[rows, -1] = value
        self._entries[rows] = np.minimum(entries + 1, self.window_size)

    # --- the rules -------------------------------------------------------------------------------

    def _lag_seconds(self, rows: np.ndarray, committed: np.ndarray, log_end: np.ndarray,
                     now: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``lag_math.estimate_lag_seconds`` for each partition, its history already recorded."""
        count = len(rows)
        seconds = np.full(count, np.nan)
        reason = np.zeros(count, np.int8)
        extrapolated = np.zeros(count, bool)
        reason[committed < 0] = _NO_COMMIT
        reason[(reason == 0) & (log_end < 0)] = _NO_LOG_END
        safe = np.maximum(rows, 0)
        points = np.where(rows >= 0, self._points[safe] if len(self._points) else 0, 0)
        if len(self._points):
            newest = self._offsets[safe, -1]
            below = np.flatnonzero((points > 0) & (log_end < newest))  # rarely any
            if len(below):  # a dip within the history: its newest point stands for the log end
                oldest = self._offsets[safe[below], self.max_points - points[below]]
                within = below[log_end[below] >= oldest]
                log_end = log_end.copy()
                log_end[within] = newest[within]
        else:
            newest = np.zeros(count, np.int64)
        caught_up = (reason == 0) & (committed >= log_end)
        seconds[caught_up] = 0.0
        behind = (reason == 0) & ~caught_up
        reason[behind & (points == 0)] = _NO_HISTORY
        behind &= points > 0
        reason[behind & (log_end < newest)] = _BELOW_HISTORY
        behind &= log_end >= newest
        reason[behind & (points < 2)] = _ONE_POINT
        behind &= points >= 2

        index = np.flatnonzero(behind)
        used = points[index]
        width = int(used.max()) if len(used) else 1  # only the columns some history uses
        offsets, times = self._offsets[rows[index], -width:], self._times[rows[index], -width:]
        c = committed[index]
        at_or_below = (offsets <= c[:, None]).sum(axis=1)
        beyond, older = at_or_below == used, at_or_below == 0
        reason[index[beyond]] = _BEYOND

        inside = ~beyond & ~older
        left = (width - used + at_or_below - 1)[inside]
        picked = np.flatnonzero(inside)
        seconds[index[inside]] = _after(offsets[picked, left], times[picked, left], offsets[picked, left + 1],
                                        times[picked, left + 1], c[inside], now)

        picked = np.flatnonzero(older)
        if len(picked):
            o, t = offsets[picked], times[picked]
            first = width - used[picked]
            columns = np.arange(width - 1)
            rising = (o[:, 1:] > o[:, :-1]) & (columns >= first[:, None])
            has_rate = rising.any(axis=1)
            j = rising.argmax(axis=1)
            r = np.arange(len(picked))
            oldest_offset, oldest_time = o[r, first], t[r, first]
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # rows without a rate: dropped below
                rate = (o[r, j + 1] - o[r, j]) / (t[r, j + 1] - t[r, j])
                moment = oldest_time - (oldest_offset - c[older]) / rate
            value = np.maximum(0.0, now - moment)
            seconds[index[older][has_rate]] = value[has_rate]
            extrapolated[index[older][has_rate]] = True
            reason[index[older][~has_rate]] = _NO_RATE
        return seconds, reason, extrapolated

    def _status(self, rows: np.ndarray, has_members: np.ndarray, now: float) -> np.ndarray:
        """The rules of ``lag_status`` for each window row (``lag_status.evaluate_partition``); a
        partition is decided by the first rule that matches it, as ``undecided`` tracks."""
        entries = self._entries[rows]
        width = self.window_size
        used = np.arange(width)[None, :] >= (width - entries)[:, None]
        lags, committed = self._lags[rows], self._committed[rows]
        status = np.zeros(len(rows), np.int8)
        undecided = entries > 0  # Rule 0: no observation, no status
        highest = np.where(used, committed, np.iinfo(np.int64).min).max(axis=1)
        rewound = undecided & (lags[:, -1] > 0) & (committed[:, -1] < highest)  # Rule 1
        status[rewound] = _REWIND
        undecided &= ~rewound
        caught_up = undecided & ((lags == 0) & used).any(axis=1)  # Rule 2
        status[caught_up] = _OK
        undecided &= ~caught_up & (entries >= self.min_observations)  # Rule 3: too few, no status
        pairs = used[:, :-1]  # both cells of a pair are used when the left one is
        first = np.minimum(width - entries, width - 1)
        r = np.arange(len(rows))
        first_time = self._observed[rows, first]
        lowest = np.where(used, committed, _UNUSED).min(axis=1)
        stuck = undecided & (lowest == highest)  # never moved
        stuck_since = self._stuck_since[rows]
        since = np.where(np.isnan(stuck_since), first_time, np.minimum(stuck_since, first_time))
        err = stuck & (now - since > self.err_after_seconds)  # Rule 4
        status[err] = _ERR
        status[stuck & ~err] = np.where(has_members[stuck & ~err], _STALL, _STOP)  # Rules 5 and 6
        undecided &= ~stuck
        first_lag = lags[r, first]
        grew = (lags[:, -1] > first_lag) & ~((lags[:, 1:] < lags[:, :-1]) & pairs).any(axis=1)  # Rule 7
        status[undecided & grew] = _WARN
        status[undecided & ~grew] = _OK  # Rule 8
        return status


def _after(left_offset, left_time, right_offset, right_time, committed, now: float) -> np.ndarray:
    """Seconds since the log end was ``committed``, between two points (as ``lag_math``'s
    ``_interpolated_moment``)."""
    rate = (right_offset - left_offset) / (right_time - left_time)
    moment = left_time + (committed - left_offset) / rate
    return np.maximum(0.0, now - moment)


def _grown_size(needed: int, rows: int) -> int | None:
    """How many rows the arrays must have to hold ``needed`` (doubling), or None if ``rows`` do."""
    return max(needed, 2 * rows, 64) if needed > rows else None


def _grown(array: np.ndarray, rows: int, fill) -> np.ndarray:
    grown = np.full((rows, *array.shape[1:]), fill, array.dtype)
    grown[:len(array)] = array
    return grown
