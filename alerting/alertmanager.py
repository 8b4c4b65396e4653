"""What kpulse tells Alertmanager, and when; pure, no I/O (the sending is :mod:`alerting.delivery`).

**What is sent.** Alertmanager receives what the Alerts page's firing list shows: one Alertmanager
alert per firing kpulse alert, that is per rule and entity (``alerting/state.py``). A rule firing for
2,000 groups is 2,000 Alertmanager alerts with the same ``alertname`` and ``cluster``: Alertmanager's
own ``group_by: [alertname, cluster]`` makes them one notification listing the groups (as
``alerting/grouping.py`` makes them one row on the page), while a silence or an inhibition can
still name one entity. Labels (:func:`alert_labels`):

* ``alertname`` and ``rule``: the rule; ``severity``: ``warning`` or ``critical``;
* ``cluster``: the configured cluster name; ``entity``: kpulse's entity (``group/orders``,
  ``broker/2``, ``cluster/prod``, ``probe``);
* the entity's own label, named as in kpulse's exporter and the exported Prometheus rules
  (:data:`ENTITY_LABELS`): ``consumergroup``, ``broker``, ``sharegroup``, ``application_id``,
  ``collector``.

Annotations (:func:`alert_annotations`): ``summary`` (the finding's line, with the numbers),
``description`` (the rule's condition and the value), ``runbook`` (the rule's runbook text, the
cluster's bootstrap server filled in, as the exported Prometheus rules carry it) and ``dashboard``
(the alert on kpulse's Alerts page, where the context chart and the runbook are; also
``runbook_url``, the name Alertmanager templates look for, and the ``generatorURL``,
Alertmanager's "Source" link). The link's base is ``dashboard.url``.

A severity change (a group going from STOP to ERR) changes the labels, so it is a new Alertmanager
alert: the old severity's is sent resolved and the new one firing. An inhibited warning
(``RequestHandlerIdleLow`` under ``RequestHandlerIdleCritical``) is not shown, so it is sent
resolved while the critical alert fires.

**When, as Prometheus does** (``rules/alerting.go``: ``needsSending``, ``sendAlerts``): an alert is
sent to an Alertmanager when it started firing or resolved since that Alertmanager last accepted it,
and a firing alert again every ``resend_interval_seconds``. A firing alert's ``endsAt`` is the send
time plus :data:`RESOLVE_AFTER_RESENDS` times the larger of the resend and the evaluation interval,
so Alertmanager resolves it by itself if kpulse stops; a resolved alert's ``endsAt`` is the time it
resolved. Unlike Prometheus, which forgets a batch it could not send, the book remembers per
Alertmanager what was accepted: an alert not accepted stays due and is sent at the next attempt
(an Alertmanager that failed is tried again after ``resend_interval_seconds``). A resolved alert is
kept until every Alertmanager accepted it, or for :data:`RESOLVED_RETENTION_SECONDS` (by then
Alertmanager resolved it by its ``endsAt`` anyway).

Silences: :func:`silence_payload` turns an acknowledgement or silence of the Alerts page into an
Alertmanager silence (``dashboard/services/acks.py``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from datetime import datetime, UTC
from typing import Any
from collections.abc import Iterable, Sequence
from urllib.parse import urlencode

from alerting.model import FIRING, RESOLVED, Alert, AlertEvent
from alerting.rules import rule_by_name
from alerting.runbooks import RUNBOOKS, runbook_text

RESOLVE_AFTER_RESENDS = 4
"""Prometheus's ``ValidUntil``: ``4 * max(resend delay, evaluation interval)`` after the send, which
allows two missed evaluations or failed sends before Alertmanager resolves a firing alert itself."""
RESOLVED_RETENTION_SECONDS = 15 * 60
"""Prometheus's ``resolvedRetention``: how long a resolved alert is kept for an Alertmanager that has
not accepted it yet."""
ENTITY_LABELS = {"broker": "broker", "group": "consumergroup", "sharegroup": "sharegroup",
                 "streams": "application_id", "collector": "collector"}
"""Entity kind (``kind/name``) -> the label carrying its name, as kpulse's exporter names it. A
``cluster/<name>`` entity needs none (``cluster`` is a label already); ``probe`` has no name."""

Key = tuple[str, str, str, str]
"""(cluster, rule, entity, severity): the labels that tell one Alertmanager alert from another."""


def rfc3339(seconds: float) -> str:
    """Epoch seconds as Alertmanager's ``date-time`` (UTC, milliseconds)."""
    return datetime.fromtimestamp(seconds, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def alert_labels(cluster: str, rule: str, severity: str, entity: str) -> dict[str, str]:
    """The labels of one alert (see the module doc)."""
    labels = {"alertname": rule, "rule": rule, "severity": severity, "cluster": cluster, "entity": entity}
    kind, _, name = entity.partition("/")
    if kind in ENTITY_LABELS and name:
        labels[ENTITY_LABELS[kind]] = name
    return labels


def alert_link(dashboard_url: str, cluster: str, rule: str, entity: str) -> str:
    """The alert on kpulse's Alerts page: ``<dashboard>/alerts?cluster=..&rule=..&entity=..``."""
    return f"{dashboard_url.rstrip('/')}/alerts?{urlencode({'cluster': cluster, 'rule': rule, 'entity': entity})}"


def alert_annotations(rule: str, entity: str, summary: str, value: float | None, *, link: str,
                      bootstrap: str | None = None) -> dict[str, str]:
    """summary, description, runbook, runbook_url and dashboard (see the module doc)."""
    try:
        condition = rule_by_name(rule).condition
    except KeyError:  # a rule this release does not have (an older state restored): say what is known
        condition = rule
    shown = "unknown" if value is None else f"{value:g}"
    annotations = {"summary": summary, "description": f"{rule} on {entity}: {condition} (value {shown})",
                   "dashboard": link}
    if rule in RUNBOOKS:
        annotations["runbook"] = _runbook(rule, bootstrap)
        annotations["runbook_url"] = link
    return annotations


@functools.lru_cache(maxsize=256)
def _runbook(rule: str, bootstrap: str | None) -> str:
    """The runbook text, rendered once per rule and cluster rather than for each alert every cycle."""
    return runbook_text(rule, bootstrap)


@dataclass
class Notice:
    """One Alertmanager alert as the book knows it. Its labels and annotations are built when it is
    sent (:meth:`payload`, in the sending thread), not every cycle."""

    key: Key
    summary: str
    """The newest finding's line; for a resolved one, the line of its ``resolved`` event."""
    value: float | None
    starts_at: float
    """The kpulse alert's ``since`` (the start of pending, as Prometheus's ``ActiveAt``)."""
    changed_at: float
    """When it started firing or resolved: an Alertmanager that accepted it before must hear again."""
    bootstrap: str | None = None
    """The cluster's bootstrap server, for the runbook's commands."""
    resolved_at: float | None = None
    """``None`` while firing."""
    accepted: dict[str, float] = field(default_factory=dict)
    """Alertmanager URL -> when it last accepted this notice."""

    @property
    def status(self) -> str:
        return FIRING if self.resolved_at is None else RESOLVED

    @property
    def labels(self) -> dict[str, str]:
        cluster, rule, entity, severity = self.key
        return alert_labels(cluster, rule, severity, entity)

    def payload(self, now: float, valid_for: float, dashboard_url: str) -> dict[str, Any]:
        """The ``postableAlert`` of Alertmanager's API v2 (``POST /api/v2/alerts``)."""
        cluster, rule, entity, _ = self.key
        link = alert_link(dashboard_url, cluster, rule, entity)
        ends = now + valid_for if self.resolved_at is None else self.resolved_at
        return {"labels": self.labels, "annotations": alert_annotations(rule, entity, self.summary, self.value,
                                                                        link=link, bootstrap=self.bootstrap),
                "startsAt": rfc3339(self.starts_at), "endsAt": rfc3339(ends), "generatorURL": link}


class DeliveryBook:
    """What each Alertmanager was told and what it is due (see the module doc). Not thread-safe:
    :class:`alerting.delivery.AlertDelivery` holds a lock around it."""

    def __init__(self, urls: Sequence[str], *, resend_interval: float, evaluation_interval: float,
                 dashboard_url: str, retention: float = RESOLVED_RETENTION_SECONDS) -> None:
        self.urls = tuple(urls)
        self.resend_interval = resend_interval
        self.valid_for = RESOLVE_AFTER_RESENDS * max(resend_interval, evaluation_interval)
        """How long after a send a firing alert stays valid in Alertmanager (its ``endsAt``)."""
        self.dashboard_url = dashboard_url
        self.retention = retention
        self._notices: dict[Key, Notice] = {}
        self._retry_at: dict[str, float] = {}
        """Alertmanager URL -> no attempt before this time (it failed)."""

    def observe(self, cluster: str, firing: Iterable[Alert], events: Iterable[AlertEvent], now: float, *,
                bootstrap: str | None = None) -> None:
        """Take in one evaluation of ``cluster``: its firing list and its events (only resolutions are
        read: they tell about alerts the book may not know, after a restart)."""
        shown: set[Key] = set()
        for alert in firing:
            key = (cluster, alert.rule, alert.entity, alert.severity)
            shown.add(key)
            notice = self._notices.get(key)
            if notice is None:
                self._notices[key] = Notice(key, alert.summary, alert.value, alert.since, now, bootstrap)
                continue
            notice.summary, notice.value = alert.summary, alert.value
            if notice.resolved_at is not None:  # firing again (shown again after an inhibition)
                notice.resolved_at, notice.changed_at, notice.starts_at = None, now, alert.since
        for notice in self._notices.values():
            if notice.key[0] == cluster and notice.resolved_at is None and notice.key not in shown:
                notice.resolved_at = notice.changed_at = now
        for event in events:
            key = (cluster, event.rule, event.entity, event.severity)
            if event.state == RESOLVED and key not in self._notices:
                self._notices[key] = Notice(key, event.summary, event.value, event.since, event.time, bootstrap,
                                            resolved_at=event.time)
        self._forget(now)

    def due(self, url: str, now: float) -> list[Notice]:
        """The notices to send to ``url`` now (none while it waits after a failure)."""
        if now < self._retry_at.get(url, float("-inf")):
            return []
        return [notice for notice in self._notices.values() if self._needs_sending(notice, url, now)]

    def pending(self, url: str, cluster: str) -> int:
        """Notices of ``cluster`` that ``url`` has not accepted since they changed."""
        return sum(1 for n in self._notices.values()
                   if n.key[0] == cluster and n.accepted.get(url, float("-inf")) < n.changed_at)

    def accepted(self, url: str, keys: Iterable[Key], at: float) -> None:
        """``url`` accepted the notices of ``keys`` sent at ``at``."""
        self._retry_at.pop(url, None)
        for key in keys:
            notice = self._notices.get(key)
            if notice is not None:
                notice.accepted[url] = at
        self._forget(at)

    def failed(self, url: str, at: float) -> None:
        """Sending to ``url`` failed at ``at`` (after its retries): try it again a resend interval later."""
        self._retry_at[url] = at + self.resend_interval

    def retry_at(self, url: str) -> float | None:
        return self._retry_at.get(url)

    def _needs_sending(self, notice: Notice, url: str, now: float) -> bool:
        last = notice.accepted.get(url)
        if last is None or last < notice.changed_at:
            return True
        return notice.resolved_at is None and now - last >= self.resend_interval

    def _forget(self, now: float) -> None:
        """Drop resolved notices every Alertmanager accepted, or kept past the retention."""
        for key in [key for key, n in self._notices.items() if n.resolved_at is not None and (
                now - n.resolved_at > self.retention
                or all(n.accepted.get(url, float("-inf")) >= n.changed_at for url in self.urls))]:
            del self._notices[key]


EVERY_ENTITY = "*"
"""The entity of an acknowledgement of a whole alert group (``dashboard/services/acks.py``)."""


def silence_payload(*, cluster: str, rule: str, entity: str, kind: str, by: str, note: str, starts: float,
                    ends: float, dashboard_url: str | None = None) -> dict[str, Any]:
    """The ``postableSilence`` of an acknowledgement or silence made on kpulse's Alerts page: matchers
    on ``alertname`` and ``cluster``, and on ``entity`` unless it covers the whole group
    (:data:`EVERY_ENTITY`); ``createdBy`` who made it; the comment says which kind it is (an
    acknowledgement also stops Alertmanager's repeated notifications: someone is on it) and the note."""
    matchers = [{"name": "alertname", "value": rule, "isRegex": False, "isEqual": True},
                {"name": "cluster", "value": cluster, "isRegex": False, "isEqual": True}]
    if entity != EVERY_ENTITY:
        matchers.append({"name": "entity", "value": entity, "isRegex": False, "isEqual": True})
    comment = f"kpulse {kind}" + (f": {note}" if note else "")
    if dashboard_url:
        comment += f" ({alert_link(dashboard_url, cluster, rule, entity)})"
    return {"matchers": matchers, "startsAt": rfc3339(starts), "endsAt": rfc3339(ends), "createdBy": by,
            "comment": comment}
