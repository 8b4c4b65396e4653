"""The SLOs page: the newest evaluation of every SLO and entity from ``slo_status`` (written by
the SLO job, see docs/lake.md) and the error-budget burn-down of one of them. Pure."""

from __future__ import annotations

import pandas as pd

BURN_RATE_COLUMNS = ["burn_rate_5m", "burn_rate_30m", "burn_rate_1h", "burn_rate_2h", "burn_rate_6h", "burn_rate_1d",
                     "burn_rate_3d", "burn_rate_window"]
ALERT_ORDER = {"page": 0, "ticket": 1}
STATUS_COLUMNS = ["slo", "entity", "scope", "indicator", "budgeting_method", "objective", "window", "sli",
                  "good_events", "valid_events", "error_budget_remaining", *BURN_RATE_COLUMNS,
                  "time_to_exhaustion_seconds", "alert", "alert_conditions", "time"]


def latest_status(status_rows: pd.DataFrame) -> pd.DataFrame:
    """The newest row per (slo, entity): paging first, then ticket, then the least budget left."""
    if status_rows.empty:
        return pd.DataFrame(columns=STATUS_COLUMNS)
    newest = status_rows.sort_values("time").groupby(["slo", "entity"], sort=False).tail(1)
    newest = newest.assign(_alert=newest["alert"].map(ALERT_ORDER).astype("float64").fillna(9))
    newest = newest.sort_values(["_alert", "error_budget_remaining", "slo", "entity"], na_position="last")
    return newest[STATUS_COLUMNS].reset_index(drop=True)


def burn_down(status_rows: pd.DataFrame, slo: str, entity: str) -> pd.DataFrame:
    """(time, error_budget_remaining, sli) of one SLO and entity, oldest first."""
    rows = status_rows[(status_rows["slo"] == slo) & (status_rows["entity"] == entity)]
    return rows[["time", "error_budget_remaining", "sli"]].sort_values("time").reset_index(drop=True)


def label(row) -> str:
    return f"{row['slo']} · {row['entity']}"
