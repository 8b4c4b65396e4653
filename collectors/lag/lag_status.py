"""Burrow-style consumer status over a sliding window of offset observations: the rules, their
defaults and the statuses. Pure, no I/O.

Each rule is a function below, named and numbered as in the table; :func:`evaluate_partition`
applies them in order to the window of one partition, :class:`PartitionWindow` keeps that window
between polls and :class:`StatusTracker` the windows of every group. ``collectors/lag/lag_arrays.py``
applies the same rules to every group partition of a cycle at once, on arrays, for speed;
``tests/test_lag_arrays.py`` replays random cycles through both and requires the same answers.

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
1     the lag is > 0 in the newest observation and the committed offset is
      below the highest it reached in the window: it went back and has not yet
      returned to the offset it went back from                                   REWIND
2     the lag is 0 in any observation of the window (caught up at least once)    OK
3     fewer than ``min_observations`` (default 3) observations                   ``None``
4     committed offset unchanged across the window (lag > 0 by rule 2) and it
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
* REWIND (rule 1) is Burrow's current rule (``checkIfOffsetsRewind`` and ``checkIfRewindRecovered``):
  a rewind counts only until the consumer is back at (or past) the offset it rewound from; it counts
  even when the lag was 0 earlier in the window (a consumer at the log end reset to the earliest
  offset), and only while there is lag now. One difference: Burrow looks at the *first* decrease in
  the window only, so a second rewind after the consumer recovered from a first one goes unreported
  until the first leaves the window; kpulse counts any rewind not yet recovered, which comes down to
  "the committed offset is below the highest of the window". ``tests/test_lag_status_burrow.py``
  runs Burrow's own table of cases through these rules: REWIND agrees on every case, and each
  other answer that differs is one of the differences named here.
* Rule 3: a partition seen fewer than ``min_observations`` times has no status (``None``), not OK
  (no data is not good), unless rule 1 or 2 already decides (two observations show a rewind; one
  shows a caught-up consumer). Burrow has no minimum of commits.

Group status is the worst status of its partitions by this severity ranking (``None`` partitions
are skipped; ``None`` when no partition has a status; names and order: ``kpulse/lag_contract.py``):

    OK < WARN < REWIND < STALL < STOP < ERR

REWIND is usually an operator's offset reset, and the consumer is moving; STALL is a live consumer
that makes no progress; STOP means nobody consumes at all (it may be a retired group, yet lag
grows for everyone downstream); ERR is STALL or STOP that has lasted.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from kpulse.lag_contract import PartitionStatus

DEFAULT_WINDOW_SIZE = 10
DEFAULT_MIN_OBSERVATIONS = 3
DEFAULT_ERR_AFTER_SECONDS = 900.0


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
    """Offset lag, ``log_end - committed`` clamped at 0."""

    def __post_init__(self) -> None:
        if self.committed < 0:
            raise ValueError(f"committed offset must be >= 0, got {self.committed} (no commit: do not observe)")
        object.__setattr__(self, "lag", self.log_end - self.committed if self.log_end > self.committed else 0)


Window = Sequence[OffsetObservation]
"""The observations of one partition, oldest first."""


# --- the rules, one function each, in the order they are applied -----------------------------------

def no_observation(window: Window) -> bool:
    """Rule 0: no observation -> no status (``None``)."""
    return not window


def rewind_not_recovered(window: Window) -> bool:
    """Rule 1: the lag is > 0 in the newest observation and its committed offset is below the highest
    of the window: the consumer went back and has not yet returned to the offset it went back from
    -> REWIND. Once it is back there (or past it), the rewind no longer counts and the later rules
    judge the window."""
    newest = window[-1]
    return newest.lag > 0 and newest.committed < max(observation.committed for observation in window)


def caught_up_once(window: Window) -> bool:
    """Rule 2: the lag is 0 in any observation of the window (caught up at least once) -> OK."""
    return any(observation.lag == 0 for observation in window)


def too_few_observations(window: Window, min_observations: int) -> bool:
    """Rule 3: fewer than ``min_observations`` observations -> no status (``None``): no data is not
    good data."""
    return len(window) < min_observations


def offset_unchanged(window: Window) -> bool:
    """The committed offset is the same in every observation of the window: the condition that rules
    4, 5 and 6 share (the lag is > 0 throughout, or rule 2 would have matched)."""
    return all(observation.committed == window[0].committed for observation in window)


def seconds_stuck(window: Window, now: float, stuck_since: float | None) -> float:
    """How long the committed offset has been unchanged at ``now``: since the earlier of
    ``stuck_since`` (the first poll that saw it, which may be older than the window) and the
    window's first observation (the only time known when ``stuck_since`` is ``None``)."""
    first = window[0].time
    since = first if stuck_since is None else min(stuck_since, first)
    return now - since


def stuck_too_long(window: Window, now: float, stuck_since: float | None, err_after_seconds: float) -> bool:
    """Rule 4: the committed offset is unchanged across the window and has been for longer than
    ``err_after_seconds`` -> ERR."""
    return offset_unchanged(window) and seconds_stuck(window, now, stuck_since) > err_after_seconds


def stalled(window: Window, has_members: bool) -> bool:
    """Rule 5: the committed offset is unchanged across the window and the group has active members
    (a poison record, a hung poll loop) -> STALL."""
    return has_members and offset_unchanged(window)


def stopped(window: Window, has_members: bool) -> bool:
    """Rule 6: the committed offset is unchanged across the window and the group has no members
    (nobody consumes) -> STOP."""
    return not has_members and offset_unchanged(window)


def lag_growing(window: Window) -> bool:
    """Rule 7: the lag never decreased between consecutive observations and grew overall (last lag >
    first lag) -> WARN."""
    return window[-1].lag > window[0].lag and all(later.lag >= earlier.lag for earlier, later in pairwise(window))


def evaluate_partition(observations: Window, now: float, has_members: bool, *,
                       stuck_since: float | None = None,
                       min_observations: int = DEFAULT_MIN_OBSERVATIONS,
                       err_after_seconds: float = DEFAULT_ERR_AFTER_SECONDS) -> PartitionStatus | None:
    """The status of one partition: the rules applied in order to its window (``observations``,
    oldest first); the first that matches decides, rule 8 when none does.

    ``stuck_since`` is the time the current committed offset was first seen (from before the
    window if known); defaults to the window's first observation.
    """
    window = observations
    if no_observation(window):  # Rule 0
        return None
    if rewind_not_recovered(window):  # Rule 1
        return PartitionStatus.REWIND
    if caught_up_once(window):  # Rule 2
        return PartitionStatus.OK
    if too_few_observations(window, min_observations):  # Rule 3
        return None
    if stuck_too_long(window, now, stuck_since, err_after_seconds):  # Rule 4
        return PartitionStatus.ERR
    if stalled(window, has_members):  # Rule 5
        return PartitionStatus.STALL
    if stopped(window, has_members):  # Rule 6
        return PartitionStatus.STOP
    if lag_growing(window):  # Rule 7
        return PartitionStatus.WARN
    return PartitionStatus.OK  # Rule 8: otherwise


def worst_status(statuses: Iterable[PartitionStatus | None]) -> PartitionStatus | None:
    """The most severe status (the group's status from its partitions'), skipping ``None``; ``None``
    when there is none."""
    known = [status for status in statuses if status is not None]
    return max(known, key=lambda status: status.severity) if known else None


# --- the windows between polls ----------------------------------------------------------------------

class PartitionWindow:
    """The last ``size`` observations of one partition of one group, and since when its committed
    offset has not moved."""

    __slots__ = ("_observations", "stuck_since")

    def __init__(self, size: int = DEFAULT_WINDOW_SIZE) -> None:
        self._observations: deque[OffsetObservation] = deque(maxlen=size)
        self.stuck_since: float | None = None
        """Time of the first observation carrying the current committed offset (it may have been
        unchanged before kpulse started watching); ``None`` before the first observation."""

    def observe(self, observation: OffsetObservation) -> None:
        """Append a poll result; one not newer than the newest observation is ignored (out of order)."""
        window = self._observations
        if window and observation.time <= window[-1].time:
            return
        if not window or observation.committed != window[-1].committed:
            self.stuck_since = observation.time
        window.append(observation)

    @property
    def observations(self) -> tuple[OffsetObservation, ...]:
        """The window, oldest first."""
        return tuple(self._observations)

    def status(self, now: float, has_members: bool, min_observations: int = DEFAULT_MIN_OBSERVATIONS,
               err_after_seconds: float = DEFAULT_ERR_AFTER_SECONDS) -> PartitionStatus | None:
        """:func:`evaluate_partition` of this window, stuck since :attr:`stuck_since`."""
        return evaluate_partition(self._observations, now, has_members, stuck_since=self.stuck_since,
                                  min_observations=min_observations, err_after_seconds=err_after_seconds)


class StatusTracker:
    """Windows per (group, topic, partition) and their statuses.

    Feed it one observation per partition of a group per poll (only partitions with a committed
    offset). Not thread-safe.
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
        partitions = self._windows.setdefault(group, {})
        window = partitions.get((topic, partition))
        if window is None:
            window = partitions[(topic, partition)] = PartitionWindow(self.window_size)
        window.observe(observation)

    def observe_and_status(self, group: str, topic: str, partition: int, now: float, committed: int | None,
                           log_end: int | None, has_members: bool) -> PartitionStatus | None:
        """One poll of one partition as the collector reads it: observed at ``now`` when both offsets
        are known (``committed`` >= 0), then its :meth:`partition_status`."""
        if committed is not None and log_end is not None:
            self.observe(group, topic, partition, OffsetObservation(now, committed, log_end))
        return self.partition_status(group, topic, partition, now, has_members)

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
        return window.status(now, has_members, self.min_observations, self.err_after_seconds)

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
