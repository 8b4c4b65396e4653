"""What a share group's status means, defined once for every part that reads it: the share-groups
collector computes it (``collectors/share/share_status.py``, the rules), the Prometheus exporter
emits one series per status, the alert rule ``ShareGroupNotAcknowledging`` fires on it and the
dashboard sorts share groups by it.

A share group (KIP-932) has no committed offset: per partition the broker keeps a **start
offset** (every record before it is acknowledged, released for good or archived) and a **lag**,
its count of records not yet acknowledged (``kafka-share-groups --describe`` prints both). So the
question "does anybody make progress?" is asked of those two numbers: progress is the start offset
moving forward or the lag going down.

**Statuses** (per partition; a group has the worst of its partitions), from healthy to worst;
the order is the severity order (:data:`SHARE_STATUS_SEVERITY`):

=============  ================================================================================
OK             the group keeps up: lag 0 at least once in the window, or it made progress
WARN           records are acknowledged (the start offset moves) yet the lag never went down and
               grew overall: the consumers fall behind the producers
STALLED        members present, lag > 0, and across the window the start offset never moved
               forward and the lag never went down: nothing is being acknowledged
NOT_CONSUMING  no members and lag > 0: nobody consumes
=============  ================================================================================
"""

from __future__ import annotations

from enum import Enum
from typing import Literal

ShareStatusName = Literal["OK", "WARN", "STALLED", "NOT_CONSUMING"]
"""A :class:`ShareStatus` as the snapshot and the lake write it: its value, a plain string."""


class ShareStatus(str, Enum):
    """Status of one partition of a share group, also used for the group (its worst partition).
    Members are in severity order; compare with :data:`SHARE_STATUS_SEVERITY`, never with ``<``."""

    OK = "OK"
    WARN = "WARN"
    STALLED = "STALLED"
    NOT_CONSUMING = "NOT_CONSUMING"


SHARE_STATUS_NAMES: tuple[str, ...] = tuple(status.value for status in ShareStatus)
"""Every status name, healthy first: ``OK, WARN, STALLED, NOT_CONSUMING``."""
SHARE_STATUS_SEVERITY: dict[str, int] = {name: rank for rank, name in enumerate(SHARE_STATUS_NAMES)}
"""Status name -> severity, 0 (OK) to 3 (NOT_CONSUMING)."""
NOT_ACKNOWLEDGING: tuple[str, ...] = (ShareStatus.STALLED.value, ShareStatus.NOT_CONSUMING.value)
"""The statuses of a share group that acknowledges nothing while records wait: the alert's."""
