"""Firing alerts grouped as Alertmanager groups notifications (``group_by: [alertname, cluster]``): one
group per rule and cluster, the affected entities listed and counted inside it. Pure, no I/O.

At thousands of consumer groups one cause (a retired application, a stopped pipeline) makes one rule
fire for thousands of entities; the on-call engineer needs "ConsumerGroupStatus, 2,000 groups" as one
line, with the entities one click away, not 2,000 lines. Grouping is a view: the snapshot's ``alerts``
list, the exporter's ``kpulse_alerts_firing``, the Prometheus rule export and the lake's ``alert_event``
stay one per entity.

A group's severity is its worst entity's (a STOP group is a warning, an ERR one critical: one
ConsumerGroupStatus group with one ERR entity is critical), its ``since`` its oldest entity's. Groups
are in triage order: critical first, then the oldest first, then by rule name; the entities inside in
the same order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from collections.abc import Iterable, Mapping

from alerting.model import CRITICAL, WARNING

SEVERITY_RANK = {CRITICAL: 0, WARNING: 1}
ENTITY_NOUNS = {"group": ("group", "groups"), "sharegroup": ("share group", "share groups"),
                "broker": ("broker", "brokers"), "streams": ("Streams app", "Streams apps"),
                "collector": ("collector", "collectors"), "cluster": ("cluster", "clusters")}
"""Entity kind (``kind/name``) -> how one and many are called."""


@dataclass(frozen=True)
class AlertGroup:
    """The firing alerts of one rule on one cluster."""

    cluster: str
    rule: str
    severity: str
    """The worst severity among its entities."""
    entities: tuple[str, ...]
    """Every affected entity, in triage order."""
    critical: int
    """How many entities fire at ``critical`` (the others at ``warning``)."""
    since: float
    """The oldest entity's ``since`` (epoch seconds)."""

    @property
    def count(self) -> int:
        return len(self.entities)

    @property
    def warning(self) -> int:
        return self.count - self.critical

    @property
    def affected(self) -> str:
        """The entity itself when it is the only one, else ``"2,000 groups"``."""
        return self.entities[0] if self.count == 1 else count_text(self.entities, self.count)

    @property
    def headline(self) -> str:
        """``"ConsumerGroupStatus, 2,000 groups"``; ``"OfflinePartitions, cluster/prod"`` for one entity."""
        return f"{self.rule}, {self.affected}"


def entity_kind(entity: str) -> str:
    """``group/orders`` -> ``group``; ``probe`` -> ``probe``."""
    return entity.partition("/")[0]


def count_text(entities: Iterable[str], count: int) -> str:
    """``"2,000 groups"``, ``"1 broker"``; entities of several kinds (never one rule's today) are
    ``"3 entities"``."""
    kinds = {entity_kind(entity) for entity in entities}
    if len(kinds) == 1:
        kind = kinds.pop()
        one, many = ENTITY_NOUNS.get(kind, (kind, kind))
        return f"{count:,} {one if count == 1 else many}"
    return f"{count:,} {'entity' if count == 1 else 'entities'}"


def _seconds(since: Any) -> float:
    """Epoch seconds of a ``since`` given as seconds or as a timestamp (``datetime``, ``pd.Timestamp``)."""
    return since.timestamp() if hasattr(since, "timestamp") else float(since)


def _triage_key(alert: Mapping[str, Any]) -> tuple:
    return SEVERITY_RANK.get(alert["severity"], len(SEVERITY_RANK)), _seconds(alert["since"]), alert["entity"]


def group_alerts(alerts: Iterable[Mapping[str, Any]], cluster: str = "") -> list[AlertGroup]:
    """Firing alerts (each with ``rule``, ``severity``, ``entity``, ``since`` and optionally ``cluster``,
    as the snapshot's ``alerts`` list or the dashboard's firing table has them) grouped by rule and
    cluster (``cluster`` for alerts that do not say theirs), in triage order."""
    members: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for alert in alerts:
        members.setdefault((str(alert.get("cluster") or cluster), str(alert["rule"])), []).append(alert)
    groups = []
    for (group_cluster, rule), items in members.items():
        items.sort(key=_triage_key)
        critical = sum(1 for item in items if item["severity"] == CRITICAL)
        groups.append(AlertGroup(cluster=group_cluster, rule=rule, severity=items[0]["severity"],
                                 entities=tuple(str(item["entity"]) for item in items), critical=critical,
                                 since=min(_seconds(item["since"]) for item in items)))
    return sorted(groups, key=lambda g: (SEVERITY_RANK.get(g.severity, len(SEVERITY_RANK)), g.since, g.rule,
                                         g.cluster))


@dataclass(frozen=True)
class GroupCounts:
    """What a one-line summary of the firing alerts says."""

    critical: int
    """Groups whose severity is critical."""
    warning: int
    """Groups whose severity is warning."""
    entities: int
    """Affected entities over every group."""


def counts(groups: Iterable[AlertGroup]) -> GroupCounts:
    groups = list(groups)
    critical = sum(1 for g in groups if g.severity == CRITICAL)
    return GroupCounts(critical, len(groups) - critical, sum(g.count for g in groups))
