"""Alert rules over one snapshot, and the tracker that turns findings into alerts; pure, no I/O.

A :class:`Rule` looks at one snapshot and returns a :class:`Finding` for every entity whose
condition holds now (and an :class:`Unknown` for every entity it cannot judge because a value is
``None``). :class:`AlertState` remembers findings across snapshots: a condition is *pending* from
the first snapshot that shows it (``since``) and *firing* once it has held ``for_seconds``; it
is *resolved* at the first snapshot that shows it gone. Firing and resolved are recorded as
``alert_event`` rows (:data:`kpulse.lake.schema.SCHEMAS`); pending is internal.

The rules are in :mod:`alerting.rules`, the data types in :mod:`alerting.model`;
both are re-exported here, the public face of alerting.

Semantics that callers must know:

* **No data is not good and not bad.** A ``None`` value never fires. It does not resolve either:
  an alert (pending or firing) whose value is unknown in a snapshot keeps its state and its
  ``since``; a pending one is promoted only by a snapshot that shows the condition again.
  ``CollectorDown`` is what says data is missing. An entity that disappears from the snapshot
  (a deleted group, a removed broker) resolves.
* **Escalation inside a rule.** A finding may carry its own severity (and hold): consumer status
  ERR and Streams ERROR are critical. A firing alert whose severity changes records a new
  ``firing`` event with the new severity and the same ``since``.
* **Inhibition.** ``RequestHandlerIdleLow`` holds for any idle ratio < 0.2 (so its ``since`` is
  the start of the whole episode) but is ``inhibited_by`` ``RequestHandlerIdleCritical``: while
  the critical alert fires for a broker, the warning is left out of ``firing`` and records no
  event. It is not resolved by the critical one: when the broker recovers to 0.1..0.2 the
  warning is simply shown again (announced then if it never was); when it recovers fully, both
  resolve. So a broker shows at most one of the two, and there is never a false "resolved".
* One :class:`AlertState` per cluster; feed it that cluster's snapshots in time order (a snapshot
  older than the previous one is ignored). A rule that raises is reported in
  ``EvaluationResult.errors`` and treated as unknown for that snapshot; the others carry on.
* **Restarts.** :meth:`AlertState.saved` is the tracker as plain JSON-ready data and
  :meth:`AlertState.restore` takes it back, so a restarted collection loop does not hold a firing
  alert again (same ``since``, no second ``firing`` event). A ``firing`` event recorded after
  ``events_written_until`` (lost with the unflushed rows of a crashed process) is recorded again.
* ``Alert.runbook`` and ``Rule.runbook`` are keys of :data:`alerting.runbooks.RUNBOOKS`
  (the rule name); :func:`alerting.runbooks.runbook_text` renders one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from collections.abc import Mapping, Sequence

from alerting.model import (
    CRITICAL, FIRING, RESOLVED, SEVERITIES, WARNING, Alert, AlertEvent, Check, EvaluationResult, Finding, Rule,
    Unknown, to_dicts,
)
from alerting.rules import RULES, cluster_entity, rule_by_name
from kpulse.snapshot import Snapshot

__all__ = [
    "CRITICAL", "FIRING", "RESOLVED", "RULES", "SEVERITIES", "WARNING", "Alert", "AlertEvent", "AlertState", "Check",
    "EvaluationResult", "Finding", "Rule", "Unknown", "cluster_entity", "rule_by_name", "to_dicts",
]


# --- the state tracker ------------------------------------------------------------------------------

@dataclass
class _Tracked:
    rule: Rule
    entity: str
    since: float
    finding: Finding
    firing: bool = False
    announced: str | None = None
    """Severity of the last ``firing`` event recorded; ``None`` = never announced."""
    announced_at: float | None = None
    """Snapshot time of that ``firing`` event."""

    @property
    def severity(self) -> str:
        return self.finding.severity or self.rule.severity


class AlertState:
    """Pending and firing alerts of one cluster across snapshots (see the module doc)."""

    def __init__(self, rules: Sequence[Rule] = RULES, cluster: str | None = None) -> None:
        names = [rule.name for rule in rules]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate rule names in {names}")
        for rule in rules:
            if rule.severity not in SEVERITIES:
                raise ValueError(f"rule {rule.name}: severity {rule.severity!r} is not one of {SEVERITIES}")
            missing = [name for name in rule.inhibited_by if name not in names]
            if missing:
                raise ValueError(f"rule {rule.name}: inhibited_by names unknown rules {missing}")
        self._rules = tuple(rules)
        self._order = {name: index for index, name in enumerate(names)}
        self._cluster = cluster
        self._tracked: dict[tuple[str, str], _Tracked] = {}
        self._last_time: float | None = None

    def evaluate(self, snapshot: Snapshot) -> EvaluationResult:
        now = float(snapshot["time"])
        if self._last_time is not None and now < self._last_time:
            return EvaluationResult(self._firing(), [])
        self._last_time = now
        cluster = self._cluster if self._cluster is not None else str(snapshot.get("cluster_name"))
        resolved: list[AlertEvent] = []
        errors: list[str] = []
        for rule in self._rules:
            try:
                results = list(rule.check(snapshot))
            except Exception as error:  # noqa: BLE001 - one broken rule must not silence the others
                errors.append(f"{rule.name}: {type(error).__name__}: {error}")
                results = [Unknown(None, "rule raised")]
            self._apply(rule, results, now, cluster, resolved)
        return EvaluationResult(self._firing(), resolved + self._announce(now, cluster), errors)

    def saved(self) -> dict[str, Any]:
        """The tracked alerts (pending and firing) as JSON-ready data, for :meth:`restore`."""
        return {"cluster": self._cluster, "time": self._last_time, "alerts": [
            {"rule": t.rule.name, "entity": t.entity, "since": t.since, "firing": t.firing,
             "announced": t.announced, "announced_at": t.announced_at, "value": t.finding.value,
             "summary": t.finding.summary, "severity": t.finding.severity, "for_seconds": t.finding.for_seconds}
            for t in self._tracked.values()]}

    def restore(self, saved: Mapping[str, Any], *, events_written_until: float | None = None) -> int:
        """Take back what :meth:`saved` returned (of this cluster; alerts of rules this tracker does
        not have are left out); the number of alerts restored. A ``firing`` event announced after
        ``events_written_until`` is announced again by the next evaluation. Replaces the current state."""
        if saved.get("cluster") != self._cluster:
            return 0
        rules = {rule.name: rule for rule in self._rules}
        self._tracked = {}
        for item in saved.get("alerts", ()):
            rule = rules.get(item["rule"])
            if rule is None:
                continue
            finding = Finding(item["entity"], item["value"], item["summary"], item["severity"], item["for_seconds"])
            announced, announced_at = item["announced"], item["announced_at"]
            if announced_at is not None and events_written_until is not None and announced_at > events_written_until:
                announced = announced_at = None
            self._tracked[(rule.name, item["entity"])] = _Tracked(rule, item["entity"], float(item["since"]), finding,
                                                                   bool(item["firing"]), announced, announced_at)
        self._last_time = saved.get("time")
        return len(self._tracked)

    def _apply(self, rule: Rule, results: list[Finding | Unknown], now: float, cluster: str,
               resolved: list[AlertEvent]) -> None:
        findings = {r.entity: r for r in results if isinstance(r, Finding)}
        unknown = {r.entity for r in results if isinstance(r, Unknown)}
        for key in [key for key in self._tracked if key[0] == rule.name]:
            if key[1] in findings or None in unknown or key[1] in unknown:
                continue
            gone = self._tracked.pop(key)
            if gone.announced is not None:
                resolved.append(_event(gone, now, cluster, RESOLVED, gone.announced,
                                       f"resolved: {gone.finding.summary}"))
        for entity, finding in findings.items():
            tracked = self._tracked.get((rule.name, entity))
            if tracked is None:
                tracked = self._tracked[(rule.name, entity)] = _Tracked(rule, entity, now, finding)
            tracked.finding = finding
            hold = rule.for_seconds if finding.for_seconds is None else finding.for_seconds
            if not tracked.firing and now - tracked.since >= hold:
                tracked.firing = True

    def _inhibited(self, tracked: _Tracked) -> bool:
        return any((name, tracked.entity) in self._tracked and self._tracked[(name, tracked.entity)].firing
                   for name in tracked.rule.inhibited_by)

    def _visible(self) -> list[_Tracked]:
        shown = [t for t in self._tracked.values() if t.firing and not self._inhibited(t)]
        return sorted(shown, key=lambda t: (t.severity != CRITICAL, self._order[t.rule.name], t.entity))

    def _announce(self, now: float, cluster: str) -> list[AlertEvent]:
        events = []
        for tracked in self._visible():
            if tracked.announced != tracked.severity:
                tracked.announced, tracked.announced_at = tracked.severity, now
                events.append(_event(tracked, now, cluster, FIRING, tracked.severity, tracked.finding.summary))
        return events

    def _firing(self) -> list[Alert]:
        return [Alert(t.rule.name, t.severity, t.entity, t.finding.value, t.finding.summary, t.since,
                      t.rule.runbook) for t in self._visible()]


def _event(tracked: _Tracked, now: float, cluster: str, state: str, severity: str, summary: str) -> AlertEvent:
    value = tracked.finding.value
    return AlertEvent(time=now, cluster=cluster, rule=tracked.rule.name, severity=severity, entity=tracked.entity,
                      state=state, value=None if value is None else float(value), since=tracked.since,
                      summary=summary)
