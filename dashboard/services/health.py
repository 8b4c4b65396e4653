"""The Overview: health tiles of one cluster, each judged by the thresholds of DOMAIN.md §1 (a value
not known says why, from the snapshot's reasons), the freshness of the data, and the frame's line
for a cluster that refuses kpulse. Pure: snapshot dicts and frames in, plain values out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd

from alerting.grouping import AlertGroup, counts
from dashboard.services.alerts import alert_groups
from kpulse.lake.slo_status import EXHAUSTED
from kpulse.snapshot import Broker, ClusterHealth, CollectorState, Probe, Snapshot

OK, WARN, CRIT, UNKNOWN, INFO = "ok", "warning", "critical", "unknown", "info"
IDLE_WARNING_BELOW = 0.2
"""Request handler idle ratio below this is a potential problem (DOMAIN.md §1)."""
IDLE_CRITICAL_BELOW = 0.1
"""Below this requests are queueing now."""
STALE_AFTER_INTERVALS = 2
"""Data older than this many collection intervals is stale."""


@dataclass(frozen=True)
class Tile:
    label: str
    value: str
    level: str
    """ok, warning, critical, unknown (not collected) or info (no threshold)."""
    detail: str = ""


@dataclass(frozen=True)
class Freshness:
    age_seconds: float | None
    """Age of the newest sample; ``None`` when there is none."""
    stale: bool
    text: str


def freshness(newest_sample_time: float | None, now: float, collect_seconds: float) -> Freshness:
    """Stale when there is no sample or the newest is older than two collection intervals."""
    limit = STALE_AFTER_INTERVALS * collect_seconds
    if newest_sample_time is None:
        return Freshness(None, True, "no samples yet: is `kpulse collect` running?")
    age = max(0.0, now - newest_sample_time)
    if age > limit:
        return Freshness(age, True, f"STALE: the newest sample is {human_age(age)} old "
                                    f"(collection every {collect_seconds:g} s): is `kpulse collect` running?")
    return Freshness(age, False, f"data {human_age(age)} old")


def human_age(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    if seconds < 172800:
        return f"{seconds // 3600} h {seconds % 3600 // 60} min"
    return f"{seconds // 86400} d"


def human_rate(value: float | None) -> str:
    if value is None or pd.isna(value):
        return "—"
    for unit, size in (("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3)):
        if value >= size:
            return f"{value / size:.1f} {unit}"
    return f"{value:.0f} B/s"


NOT_COLLECTED = "not collected"
"""A tile's reason when the snapshot gives none."""
CLUSTER_NOT_READABLE = "cluster not readable"
"""How the collectors say the connection check refused them (``cluster not readable: <error>``): the
frame's red line already names the error, so a tile says only this."""


def cannot_read(snapshot: Snapshot | None, cluster_name: str) -> str | None:
    """"kpulse cannot read cluster prod: authentication failed: ..." when the newest snapshot's
    connection check failed (the cluster refused kpulse's identity, or did not answer); else None.
    Holds the error's text as the client library wrote it: show it as text."""
    connection = snapshot.get("connection") if snapshot else None
    if not connection or connection.get("ok", True):
        return None
    return f"kpulse cannot read cluster {cluster_name}: {connection.get('error') or 'no reason given'}"


def refused_age(fresh: Freshness) -> str:
    """The age beside :func:`cannot_read`'s line: the collector is running and being refused, so not
    the STALE banner, unless it stopped asking (then the question is whether it still runs)."""
    if fresh.age_seconds is None:
        return "the cluster has not been asked yet"
    text = f"the cluster was last asked {human_age(fresh.age_seconds)} ago"
    return text + (": is `kpulse collect` still running?" if fresh.stale else "")


def why(reasons: Mapping[str, str] | None, *fields: str) -> str:
    """Why a value is null: the first of ``fields``' reasons (``cluster.reasons``, a broker's
    ``reasons``), else "not collected". A cluster kpulse could not read is the cause of every value
    it holds, whatever else one of the fields says: then only "cluster not readable" (the frame's
    red line names the error)."""
    given = [reason for reason in ((reasons or {}).get(field) for field in fields) if reason]
    if any(reason.startswith(CLUSTER_NOT_READABLE + ":") for reason in given):
        return CLUSTER_NOT_READABLE
    return given[0] if given else NOT_COLLECTED


def _count_tile(label: str, value: Any, level_if_positive: str, detail: str = "", reason: str = NOT_COLLECTED) -> Tile:
    if value is None:
        return Tile(label, "—", UNKNOWN, reason)
    return Tile(label, f"{int(value)}", level_if_positive if value > 0 else OK, detail)


def _broker_reason(brokers: Sequence[Broker], field: str, fallback: str) -> str:
    """Why no broker has ``field``: the first broker's reason for it, else ``fallback``."""
    for broker in brokers:
        reason = why(broker.get("reasons"), field)
        if reason != NOT_COLLECTED:
            return reason
    return fallback


PROBE = "End-to-end probe"
RATE_TILES: tuple[tuple[str, Literal["bytes_in_per_sec", "bytes_out_per_sec"]], ...] = (
    ("Bytes in", "bytes_in_per_sec"), ("Bytes out", "bytes_out_per_sec"))
"""Tile label -> the :class:`kpulse.snapshot.Broker` rate it sums over the brokers."""


def probe_tile(probe: Probe | None, collectors: Sequence[CollectorState]) -> Tile:
    """The probe's cycle: OK, failing (an availability below 1 or records lost: ProbeFailing's
    condition), or, when kpulse's principal may not run it (``not_authorized``), a warning about
    kpulse's permissions, not a failing probe; unknown, with why, when it did not run."""
    if probe is None:
        state = next((c for c in collectors if c.get("name") == "probe"), None)
        if state is None:
            return Tile(PROBE, "—", UNKNOWN, "turned off (probe.enabled: false)")
        return Tile(PROBE, "—", UNKNOWN, why({"probe": state.get("error") or "not run this cycle"}, "probe"))
    if probe.get("not_authorized"):
        return Tile(PROBE, "not authorized", WARN, f"kpulse's permissions, not an outage: {probe['not_authorized']}")
    produce, consume = probe.get("produce_availability"), probe.get("consume_availability")
    if produce is None and consume is None:
        return Tile(PROBE, "—", UNKNOWN, probe.get("error") or "nothing sent this cycle")
    lost = probe.get("lost") or 0
    failing = (produce is not None and produce < 1) or (consume is not None and consume < 1) or lost > 0
    parts = [f"produced {_percent(produce)}", f"read back {_percent(consume)}"]
    if probe.get("latency_p99_ms") is not None:
        parts.append(f"p99 {probe['latency_p99_ms']:g} ms")
    if lost:
        parts.append(f"{lost:,} lost")
    return Tile(PROBE, "failing" if failing else "OK", CRIT if failing else OK, " · ".join(parts))


def _percent(ratio: float | None) -> str:
    return "—" if ratio is None else f"{ratio:.0%}"


def overview_tiles(snapshot: Snapshot | None, alerts: pd.DataFrame, slo_status: pd.DataFrame) -> list[Tile]:
    """The Overview's tiles. ``alerts`` is :func:`services.alerts.firing_alerts`' frame (``severity``),
    ``slo_status`` the latest status per SLO and entity (``services.slos.latest_status``: ``alert``,
    ``budget_status``, ``budget``, in triage order)."""
    cluster: ClusterHealth | Mapping[str, None] = (snapshot.get("cluster") if snapshot else None) or {}
    brokers = (snapshot.get("brokers") if snapshot else None) or []
    reasons = cluster.get("reasons") or {}
    tiles = []
    up, total = cluster.get("brokers_up"), cluster.get("brokers_total")
    if up is None or total is None:
        tiles.append(Tile("Brokers up", "—", UNKNOWN, why(reasons, "brokers_up", "brokers_total")))
    else:
        tiles.append(Tile("Brokers up", f"{up} / {total}", OK if up >= total else CRIT))
    active, controller = cluster.get("active_controller_count"), cluster.get("controller_id")
    if active is None:
        tiles.append(Tile("Controller", "—", UNKNOWN, why(reasons, "active_controller_count", "controller_id")))
    elif active == 1:
        tiles.append(Tile("Controller", f"OK (node {controller})" if controller is not None else "OK", OK))
    else:
        tiles.append(Tile("Controller", f"{active} active", CRIT,
                          "no active controller" if active < 1 else "split brain: more than one active controller"))
    for label, field, level, detail in (
            ("Under-replicated", "under_replicated_partitions", WARN, "partitions"),
            ("Offline", "offline_partitions", CRIT, "partitions without a leader"),
            ("Under min ISR", "under_min_isr_partitions", CRIT, "partitions below min.insync.replicas")):
        tiles.append(_count_tile(label, cluster.get(field), level, detail, why(reasons, field)))
    no_metrics = why(reasons, "brokers_up") if not brokers and reasons.get("brokers_up") else "no broker metrics"
    idles = [(idle, b.get("id")) for b in brokers if (idle := b.get("request_handler_idle_ratio")) is not None]
    if not idles:
        tiles.append(Tile("Lowest handler idle", "—", UNKNOWN,
                          _broker_reason(brokers, "request_handler_idle_ratio", no_metrics)))
    else:
        idle, broker = min(idles, key=lambda pair: pair[0])
        level = CRIT if idle < IDLE_CRITICAL_BELOW else WARN if idle < IDLE_WARNING_BELOW else OK
        tiles.append(Tile("Lowest handler idle", f"{idle:.0%}", level, f"broker {broker}"))
    for label, key in RATE_TILES:
        values = [rate for b in brokers if (rate := b.get(key)) is not None]
        tiles.append(Tile(label, human_rate(sum(values)) if values else "—", INFO if values else UNKNOWN,
                          "all brokers" if values else _broker_reason(brokers, key, no_metrics)))
    firing = counts(alert_groups(alerts))
    tiles.append(Tile("Firing alerts", f"{firing.critical} critical · {firing.warning} warning",
                      CRIT if firing.critical else WARN if firing.warning else OK,
                      f"{firing.entities:,} {'entity' if firing.entities == 1 else 'entities'} affected"
                      if firing.entities else ""))
    tiles.append(slo_tile(slo_status))
    tiles.append(probe_tile(snapshot.get("probe") if snapshot else None,
                            (snapshot.get("collectors") if snapshot else None) or []))
    return tiles


def alert_lines(groups: list[AlertGroup]) -> list[tuple[str, str]]:
    """(severity, "ConsumerGroupStatus, 2,000 groups") per alert group, in triage order: the
    Overview's alert summary, one line per rule however many entities fire."""
    return [(group.severity, group.headline) for group in groups]


def slo_tile(slo_status: pd.DataFrame) -> Tile:
    if slo_status is None or slo_status.empty:
        return Tile("SLOs at risk", "—", UNKNOWN, "no SLO evaluations yet (SLO job)")
    paging = int((slo_status["alert"] == "page").sum())
    ticket = int((slo_status["alert"] == "ticket").sum())
    spent = slo_status.get("budget_status", pd.Series(index=slo_status.index, dtype=object)) == EXHAUSTED
    exhausted = int(spent.sum())
    at_risk = int((slo_status["alert"].notna() | spent).sum())
    level = CRIT if paging or exhausted else WARN if ticket else OK
    detail = f"{paging} page · {ticket} ticket · {exhausted} budget exhausted"
    if "budget" in slo_status and at_risk:  # the worst, as the SLOs page words it ("431 of 432 bad minutes left")
        worst = slo_status[slo_status["alert"].notna() | spent].iloc[0]
        detail += f" · worst: {worst['slo']} · {worst['entity']}, {worst['budget']}"
    return Tile("SLOs at risk", f"{at_risk} of {len(slo_status)}", level, detail)
