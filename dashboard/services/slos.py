"""The SLOs page: the newest status of every SLO and entity from ``slo_status`` (written by the
SLO job, see docs/lake.md; "newest" as ``kpulse/lake/slo_status.py`` defines it, the same as the
Prometheus exporter's) and the error-budget burn-down of one of them. Pure."""

from __future__ import annotations

import pandas as pd

from dashboard.services.columns import Column, table
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
_EMPTY = " Empty: no valid data in the window."
_SHARE = 0.00001
"""Percentages of an SLI or objective to three decimals (99.987 %)."""
STATUS_TABLE = table(
    Column("slo", "SLO", key=True), Column("entity", "Entity", key=True),
    Column("alert", "Alert", help="The most severe burn-rate condition met: page or ticket. Empty: none."),
    Column("error_budget_remaining", "Budget left", "%", kind="number", format="percent",
           help="Share of the error budget left; below 0 once overspent." + _EMPTY),
    Column("budget", "Budget", help="The budget in minutes or events."),
    Column("budget_status", "Budget status", help="`ok`, `exhausted`, `too_few_events` (an Occurrences SLO below "
                                                  "its minimum of events: never pages) or `no_data`."),
    Column("sli", "SLI", "%", kind="number", format="percent", step=_SHARE,
           help="Good over valid, over the window." + _EMPTY),
    Column("objective", "Objective", "%", kind="number", format="percent", step=_SHARE),
    Column("window", "Window"),
    *(Column(name, "Burn rate " + ("over the window" if name == "burn_rate_window"
                                   else name.removeprefix("burn_rate_")), "×", kind="number", format="%.2f",
             help="Error ratio over that time divided by the error budget: 1 spends the budget exactly in the "
                  "window." + _EMPTY)
      for name in BURN_RATE_COLUMNS),
    Column("time_to_exhaustion_seconds", "Time to exhaustion", "s", kind="number", format="%.0f",
           help="The budget left at the 1-hour burn rate. Empty: not burning, or no budget left."),
    Column("alert_conditions", "Alert conditions", help="The burn-rate conditions met (`page_1h_5m`: the 1-hour and "
                                                        "5-minute burn rates both over the page factor). Empty: none."),
    Column("coverage", "Coverage", "%", kind="number", format="percent", step=0.000001,
           help="Share of the window's minutes with data."),
    Column("observed_minutes", "Observed", "min", help="Minutes of the window with data."),
    Column("bad_slices", "Bad", "min", help="Timeslices: bad minutes in the window. Empty for Occurrences."),
    Column("allowed_bad_slices", "Allowed bad", "min", kind="number", format="%.1f",
           help="Timeslices: bad minutes the window may hold. Empty for Occurrences."),
    Column("good_events", "Good events", help="Good events (or minutes) over the window."),
    Column("valid_events", "Valid events", help="Valid events (or minutes) over the window."),
    Column("min_events", "Min events", help="Occurrences: valid events the window needs before the SLO can page."),
    Column("scope", "Scope"), Column("indicator", "Indicator"), Column("budgeting_method", "Budgeting method"),
    Column("time", "Evaluated", "UTC", kind="datetime", format="YYYY-MM-DD HH:mm"))
"""The SLO list (:func:`status_table`) as the page shows it: what pages first, the details after."""
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
