"""What alerting is made of: findings, rules, alerts and their lake events; pure data.

The rules themselves are in :mod:`alerting.rules`, the tracker that turns findings into
alerts in :mod:`alerting.state`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from collections.abc import Callable, Iterable

from kpulse.snapshot import Snapshot

WARNING = "warning"
CRITICAL = "critical"
SEVERITIES = (WARNING, CRITICAL)
FIRING = "firing"
RESOLVED = "resolved"


@dataclass(frozen=True)
class Finding:
    """One entity for which a rule's condition holds in this snapshot."""

    entity: str
    """What is wrong: ``cluster/<name>``, ``broker/<id>``, ``group/<id>``, ``sharegroup/<id>``,
    ``streams/<app id>``, ``probe`` or ``collector/<name>``."""
    value: float | None
    """The number the condition looked at (see each rule); the ``value`` column of ``alert_event``."""
    summary: str
    """One line for a human, with the numbers."""
    severity: str | None = None
    """Overrides the rule's severity for this finding (escalation); ``None`` = the rule's."""
    for_seconds: float | None = None
    """Overrides the rule's hold for this finding; ``None`` = the rule's."""


@dataclass(frozen=True)
class Unknown:
    """The rule cannot judge ``entity`` in this snapshot (a value is ``None``): keep its state."""

    entity: str | None = None
    """``None`` = every entity of the rule (e.g. the whole section was not collected)."""
    reason: str = ""


Check = Callable[[Snapshot], list[Finding | Unknown]]
"""snapshot (``kpulse/snapshot.py``) -> list of :class:`Finding` and :class:`Unknown`."""


@dataclass(frozen=True)
class Rule:
    """One alert rule."""

    name: str
    """Unique, CamelCase; also the Prometheus ``alert`` name and the runbook key."""
    severity: str
    """``warning`` or ``critical``: the severity of a finding that does not set its own."""
    for_seconds: float
    """Hold: the condition must hold continuously this long before the alert fires."""
    check: Check
    runbook: str
    """Key of :data:`alerting.runbooks.RUNBOOKS`."""
    condition: str
    """The condition in words, for listings and docs."""
    inhibited_by: tuple[str, ...] = ()
    """Rules whose firing alert on the same entity hides this rule's alert (see the module doc)."""


@dataclass(frozen=True)
class Alert:
    """A firing alert, as the snapshot's ``alerts`` list carries it (plus ``runbook``)."""

    rule: str
    severity: str
    entity: str
    value: float | None
    summary: str
    since: float
    """Epoch seconds of the first snapshot that showed the condition (start of pending)."""
    runbook: str


@dataclass(frozen=True)
class AlertEvent:
    """One ``alert_event`` lake row: an alert started firing (or changed severity) or resolved.

    Fields are exactly the table's columns in its order; ``time`` and ``since`` are epoch
    seconds (the lake writer converts them to timestamps)."""

    time: float
    """Time of the snapshot that caused the change."""
    cluster: str
    rule: str
    severity: str
    entity: str
    state: str
    """``firing`` or ``resolved``."""
    value: float | None
    """For ``resolved``: the last value seen while the condition held."""
    since: float
    summary: str

    def row(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class EvaluationResult:
    firing: list[Alert]
    """Every firing (not inhibited) alert after this snapshot: critical first, then rule order."""
    events: list[AlertEvent]
    """State changes caused by this snapshot: resolutions first, then firings."""
    errors: list[str] = field(default_factory=list)
    """``"<rule>: <error>"`` for every rule that raised (treated as unknown)."""


def to_dicts(items: Iterable[Alert | AlertEvent]) -> list[dict[str, Any]]:
    """Alerts or events as plain JSON-ready dicts (their fields are plain values: a shallow copy
    is all ``dataclasses.asdict`` would make, at a tenth of its cost)."""
    return [dict(item.__dict__) for item in items]
