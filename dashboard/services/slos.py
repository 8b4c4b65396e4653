"""The SLOs page: the newest status of every SLO and entity from ``slo_status`` (written by the
SLO job, see docs/lake.md; "newest" as ``kpulse/lake/slo_status.py`` defines it, the same as the
Prometheus exporter's) and the error-budget burn-down of one of them. Pure."""

from __future__ import annotations

import pandas as pd

from kpulse.lake.slo_status import (BURN_RATE_COLUMNS, EXHAUSTED, MAX_AGE_SECONDS, TOO_FEW_EVENTS, budget_text,
                                    coverage_text, newest_status)

ALERT_ORDER = {"page": 0, "ticket": 1}
BUDGET_COLUMNS = ["error_budget_remaining", "budget", "budget_status", "coverage", "bad_slices",
                  "allowed_bad_slices", "observed_minutes", "min_events"]
"""The budget as the page shows it: the share left, ``budget`` (:func:`kpulse.lake.slo_status.budget_text`,
"431 of 432 bad minutes left"), its status, coverage, and the figures the exporter serves too."""
STATUS_COLUMNS = ["slo", "entity", "scope", "indicator", "budgeting_method", "objective", "window", "sli",
                  *BUDGET_COLUMNS, "good_events", "valid_events", *BURN_RATE_COLUMNS,
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
    newest = newest.reindex(columns=[c for c in dict.fromkeys([*newest.columns, *STATUS_COLUMNS]) if c != "budget"])
    newest = newest.assign(_alert=newest["alert"].map(ALERT_ORDER).astype("float64").fillna(9),
                           _exhausted=(newest["budget_status"] != EXHAUSTED).astype("int64"),
                           _left=counted_budget(newest),
                           budget=[budget_text(row) for row in newest.to_dict("records")])
    newest = newest.sort_values(["_alert", "_exhausted", "_left", "slo", "entity"], na_position="last")
    return newest[STATUS_COLUMNS].reset_index(drop=True)


def counted_budget(rows: pd.DataFrame) -> pd.Series:
    """``error_budget_remaining``, but null below an Occurrences SLO's minimum of events: such a
    budget is not ranked as spent, plotted or counted (its status is ``too_few_events``)."""
    return rows["error_budget_remaining"].astype("float64").where(rows["budget_status"] != TOO_FEW_EVENTS)


SORTS = {"triage": "triage_rank", "budget left": "budget_used", "name": "name"}
"""The SLO list's sorts ("worst first" = descending): triage is :func:`latest_status`'s order."""
RANK_COLUMNS = ["name", "triage_rank", "budget_used"]
"""Columns :func:`status_table` adds for searching and sorting (not shown)."""


def status_table(latest: pd.DataFrame) -> pd.DataFrame:
    """:func:`latest_status` with ``name`` (:func:`label`, searched), ``triage_rank`` (its order,
    worst highest) and ``budget_used`` (minus the budget left) for the paged list."""
    return latest.assign(name=[f"{slo} · {entity}" for slo, entity in zip(latest["slo"], latest["entity"])],
                         triage_rank=range(len(latest), 0, -1), budget_used=-counted_budget(latest))


def budget_caption(row) -> str:
    """The budget of one status row in words, with its coverage: ``431 of 432 bad minutes left,
    data in 0.0046% of the 30d window``."""
    if pd.isna(row["coverage"]):
        return row["budget"]
    return f"{row['budget']}, data in {coverage_text(row['coverage'])} of the {row['window']} window"


BURN_DOWN_COLUMNS = ["time", "slo", "entity", "error_budget_remaining", "budget_status", "sli"]
"""What the burn-down reads of ``slo_status``."""


def burn_down(status_rows: pd.DataFrame, slo: str, entity: str) -> pd.DataFrame:
    """(time, error_budget_remaining, sli) of one SLO and entity, oldest first; the budget is null
    (a gap in the chart) while an Occurrences SLO is below its minimum of events. A Timeslices
    budget starts at 100 % and goes below 0 only once overspent."""
    rows = status_rows[(status_rows["slo"] == slo) & (status_rows["entity"] == entity)]
    rows = rows.reindex(columns=list(dict.fromkeys([*rows.columns, *BURN_DOWN_COLUMNS])))
    rows = rows.assign(error_budget_remaining=counted_budget(rows))
    return rows[["time", "error_budget_remaining", "sli"]].sort_values("time").reset_index(drop=True)


def label(row) -> str:
    return f"{row['slo']} · {row['entity']}"
