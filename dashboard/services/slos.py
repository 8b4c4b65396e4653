"""The SLOs page: the newest status of every SLO and entity from ``slo_status`` (written by the
SLO job, see docs/lake.md; "newest" as ``kpulse/lake/slo_status.py`` defines it, the same as the
Prometheus exporter's) and the error-budget burn-down of one of them. Pure."""

from __future__ import annotations

import pandas as pd

from kpulse.lake.slo_status import BURN_RATE_COLUMNS, MAX_AGE_SECONDS, newest_status

ALERT_ORDER = {"page": 0, "ticket": 1}
STATUS_COLUMNS = ["slo", "entity", "scope", "indicator", "budgeting_method", "objective", "window", "sli",
                  "good_events", "valid_events", "error_budget_remaining", *BURN_RATE_COLUMNS,
                  "time_to_exhaustion_seconds", "alert", "alert_conditions", "time"]
READ_BACK_SECONDS = MAX_AGE_SECONDS
"""How far before the freshness limit the page reads ``slo_status``: a key's newest row counts
while it is at most ``MAX_AGE_SECONDS`` older than its cluster's newest evaluation."""


def latest_status(status_rows: pd.DataFrame, fresh_since: float | None = None) -> pd.DataFrame:
    """The newest status per SLO and entity (:func:`kpulse.lake.slo_status.newest_status`), paging
    first, then ticket, then the least budget left. With ``fresh_since`` (epoch seconds), nothing
    when the newest evaluation is older than that: the SLO job is not running.

    ``status_rows`` must reach :data:`READ_BACK_SECONDS` before ``fresh_since`` so that every key
    the rule counts is in it."""
    newest = newest_status(status_rows)
    stale = (fresh_since is not None and not newest.empty
             and newest["time"].max() < pd.Timestamp(fresh_since, unit="s", tz="UTC"))
    if stale or newest.empty:
        return pd.DataFrame(columns=STATUS_COLUMNS)
    newest = newest.assign(_alert=newest["alert"].map(ALERT_ORDER).astype("float64").fillna(9))
    newest = newest.sort_values(["_alert", "error_budget_remaining", "slo", "entity"], na_position="last")
    return newest[STATUS_COLUMNS].reset_index(drop=True)


SORTS = {"triage": "triage_rank", "budget left": "budget_used", "name": "name"}
"""The SLO list's sorts ("worst first" = descending): triage is :func:`latest_status`'s order."""
RANK_COLUMNS = ["name", "triage_rank", "budget_used"]
"""Columns :func:`status_table` adds for searching and sorting (not shown)."""


def status_table(latest: pd.DataFrame) -> pd.DataFrame:
    """:func:`latest_status` with ``name`` (:func:`label`, searched), ``triage_rank`` (its order,
    worst highest) and ``budget_used`` (minus the budget left) for the paged list."""
    return latest.assign(name=[f"{slo} · {entity}" for slo, entity in zip(latest["slo"], latest["entity"])],
                         triage_rank=range(len(latest), 0, -1), budget_used=-latest["error_budget_remaining"])


def burn_down(status_rows: pd.DataFrame, slo: str, entity: str) -> pd.DataFrame:
    """(time, error_budget_remaining, sli) of one SLO and entity, oldest first."""
    rows = status_rows[(status_rows["slo"] == slo) & (status_rows["entity"] == entity)]
    return rows[["time", "error_budget_remaining", "sli"]].sort_values("time").reset_index(drop=True)


def label(row) -> str:
    return f"{row['slo']} · {row['entity']}"
