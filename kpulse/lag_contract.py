"""What a consumer group's lag status and time-lag threshold mean, defined once for every part that
reads them: the lag collector computes the statuses (``collectors/lag/lag_status.py``), the
Prometheus exporter emits one series per status, the alert rules and the SLO job judge groups by
status and threshold, and the dashboard sorts groups by status.

**Statuses** (Burrow's, per partition; a group has the worst of its partitions), from healthy to
worst; the order is the severity order (:attr:`PartitionStatus.severity`):

=======  ==================================================================================
OK       the consumer keeps up: caught up at least once in the window, or its lag does not grow
WARN     the lag never went down across the window and grew overall
REWIND   the committed offset went back and is not yet back where it was (usually a reset)
STALL    members present, but the committed offset does not move
STOP     no members, and the committed offset does not move: nobody consumes
ERR      STALL or STOP that has lasted (``lag.err_after_seconds``, default 15 min)
=======  ==================================================================================

**Time-lag threshold.** A group is behind when its worst time lag (``max_lag_seconds``) is over
its threshold (``lag_seconds_threshold``); a lag equal to the threshold is not behind
(:func:`within_lag_threshold`). A partial worst lag (some partitions unknown) is a lower bound:
over the threshold it is behind, at or under it it tells nothing.
"""

from __future__ import annotations

from enum import Enum
from typing import Literal, Protocol, TypeVar

PartitionStatusName = Literal["OK", "WARN", "REWIND", "STALL", "STOP", "ERR"]
"""A :class:`PartitionStatus` as the snapshot and the lake write it: its value, a plain string."""


class PartitionStatus(str, Enum):
    """Status of one partition of a group, also used for the group (its worst partition).

    Members are declared in severity order; compare with :attr:`severity`, never with ``<``
    (the ``str`` mixin would compare names alphabetically).
    """

    OK = "OK"
    WARN = "WARN"
    REWIND = "REWIND"
    STALL = "STALL"
    STOP = "STOP"
    ERR = "ERR"

    @property
    def severity(self) -> int:
        """0 for OK up to 5 for ERR."""
        return STATUS_SEVERITY[self.value]


STATUS_NAMES: tuple[str, ...] = tuple(status.value for status in PartitionStatus)
"""Every status name, healthy first: ``OK, WARN, REWIND, STALL, STOP, ERR``."""
STATUS_SEVERITY: dict[str, int] = {name: rank for rank, name in enumerate(STATUS_NAMES)}
"""Status name -> severity, 0 (OK) to 5 (ERR)."""
DEFAULT_LAG_SECONDS_THRESHOLD = 60.0
"""A group's time-lag threshold unless its config sets one (``consumer_groups.lag_seconds_threshold``)."""
NOT_CONSUMING: tuple[str, ...] = (PartitionStatus.STOP.value, PartitionStatus.STALL.value, PartitionStatus.ERR.value)
"""The statuses of a group whose committed offsets do not move."""


_Other = TypeVar("_Other", contravariant=True)
_Result = TypeVar("_Result", covariant=True)


class SupportsAtMost(Protocol[_Other, _Result]):
    """A value that compares with ``<=`` (a number gives a bool, a NumPy array an array of them)."""

    def __le__(self, other: _Other, /) -> _Result: ...


def within_lag_threshold(lag_seconds: SupportsAtMost[_Other, _Result], threshold_seconds: _Other) -> _Result:
    """Whether a time lag is at most its threshold (not behind): ``lag_seconds <= threshold_seconds``.
    Numbers give a bool, NumPy arrays an array of them (NaN, unknown, is never within)."""
    return lag_seconds <= threshold_seconds
