"""The Overview: health tiles of one cluster, each judged by the thresholds of DOMAIN.md §1, and
the freshness of the data. Pure: snapshot dicts and frames in, plain values out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from alerting.grouping import AlertGroup, counts
from dashboard.services.alerts import alert_groups
from kpulse.lake.slo_status import EXHAUSTED
from kpulse.snapshot import Snapshot

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


def _count_tile(label: str, value: Any, level_if_positive: str, detail: str = "") -> Tile:
    if value is None:
        return Tile(label, "—", UNKNOWN, "not collected")
    return Tile(label, f"{int(value)}", level_if_positive if value > 0 else OK, detail)


def overview_tiles(snapshot: Snapshot | None, alerts: pd.DataFrame, slo_status: pd.DataFrame) -> list[Tile]:
    """The Overview's tiles. ``alerts`` is :func:`services.alerts.firing_alerts`' frame (``severity``),
    ``slo_status`` the latest status per SLO and entity (``services.slos.latest_status``: ``alert``,
    ``budget_status``, ``budget``, in triage order)."""
    cluster = (snapshot or {}).get("cluster") or {}
    brokers = (snapshot or {}).get("brokers") or []
    tiles = []
    up, total = cluster.get("brokers_up"), cluster.get("brokers_total")
    if up is None or total is None:
        tiles.append(Tile("Brokers up", "—", UNKNOWN, "not collected"))
    else:
        tiles.append(Tile("Brokers up", f"{up} / {total}", OK if up >= total else CRIT))
    active, controller = cluster.get("active_controller_count"), cluster.get("controller_id")
    if active is None:
        tiles.append(Tile("Controller", "—", UNKNOWN, (cluster.get("reasons") or {}).get("active_controller_count", "")))
    elif active == 1:
        tiles.append(Tile("Controller", f"OK (node {controller})" if controller is not None else "OK", OK))
    else:
        tiles.append(Tile("Controller", f"{active} active", CRIT,
                          "no active controller" if active < 1 else "split brain: more than one active controller"))
    tiles.append(_count_tile("Under-replicated", cluster.get("under_replicated_partitions"), WARN, "partitions"))
    tiles.append(_count_tile("Offline", cluster.get("offline_partitions"), CRIT, "partitions without a leader"))
    tiles.append(_count_tile("Under min ISR", cluster.get("under_min_isr_partitions"), CRIT,
                             "partitions below min.insync.replicas"))
    idles = [(b.get("request_handler_idle_ratio"), b.get("id")) for b in brokers
             if b.get("request_handler_idle_ratio") is not None]
    if not idles:
        tiles.append(Tile("Lowest handler idle", "—", UNKNOWN, "no broker metrics"))
    else:
        idle, broker = min(idles, key=lambda pair: pair[0])
        level = CRIT if idle < IDLE_CRITICAL_BELOW else WARN if idle < IDLE_WARNING_BELOW else OK
        tiles.append(Tile("Lowest handler idle", f"{idle:.0%}", level, f"broker {broker}"))
    for label, key in (("Bytes in", "bytes_in_per_sec"), ("Bytes out", "bytes_out_per_sec")):
        values = [b.get(key) for b in brokers if b.get(key) is not None]
        tiles.append(Tile(label, human_rate(sum(values)) if values else "—", INFO if values else UNKNOWN,
                          "all brokers" if values else "no broker metrics"))
    firing = counts(alert_groups(alerts))
    tiles.append(Tile("Firing alerts", f"{firing.critical} critical · {firing.warning} warning",
                      CRIT if firing.critical else WARN if firing.warning else OK,
                      f"{firing.entities:,} {'entity' if firing.entities == 1 else 'entities'} affected"
                      if firing.entities else ""))
    tiles.append(slo_tile(slo_status))
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
