"""Error budget and burn-rate arithmetic (``../shared/DOMAIN.md`` §7) as Spark column expressions.

With B = 1 - target the error budget, and over a window w with good_w of valid_w events
(or minutes):

- SLI = good_T / valid_T over the SLO window T; null without valid data.
- error ratio e_w = (valid_w - good_w) / valid_w; burn rate BR_w = e_w / B (1 = spending the budget
  exactly over the window); null when the window has no valid data.
- error budget remaining = 1 - e_T / B (negative once overspent).
- time to exhaustion = remaining * T / BR_1h: how long the rest of the budget lasts at the last
  hour's burn; null when nothing burns or nothing is left.
- alerts: the SRE workbook's multiwindow, multi-burn-rate conditions below; both windows of a
  condition must burn faster than its factor.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column
from pyspark.sql import functions as F

BURN_WINDOWS: dict[str, int] = {"5m": 5, "30m": 30, "1h": 60, "2h": 120, "6h": 360, "1d": 1440, "3d": 4320}
"""Rolled-up windows, name -> minutes (the SLO's own window is added as ``window``)."""
CURRENT_BURN_WINDOW = "1h"


@dataclass(frozen=True)
class AlertCondition:
    name: str
    severity: str
    long_window: str
    short_window: str
    factor: float
    """Burn rate both windows must exceed; with a 30-day window, 14.4 spends 2 % of the budget in 1 h."""


ALERT_CONDITIONS = (
    AlertCondition("page_1h_5m", "page", "1h", "5m", 14.4),
    AlertCondition("page_6h_30m", "page", "6h", "30m", 6.0),
    AlertCondition("ticket_1d_2h", "ticket", "1d", "2h", 3.0),
    AlertCondition("ticket_3d_6h", "ticket", "3d", "6h", 1.0),
)


def error_ratio(good: Column, valid: Column) -> Column:
    return F.when(valid > 0, (valid - good) / valid)


def burn_rate(good: Column, valid: Column, budget: Column) -> Column:
    return error_ratio(good, valid) / budget


def sli(good: Column, valid: Column) -> Column:
    return F.when(valid > 0, good / valid)


def budget_remaining(good: Column, valid: Column, budget: Column) -> Column:
    return 1 - error_ratio(good, valid) / budget


def time_to_exhaustion_seconds(remaining: Column, current_burn: Column, window_minutes: int) -> Column:
    return F.when((current_burn > 0) & (remaining > 0), remaining * (window_minutes * 60.0) / current_burn)


def alert_columns(burn: dict[str, Column]) -> tuple[Column, Column]:
    """``(alert, alert_conditions)``: the most severe level met (``page``/``ticket``/null) and the
    comma-separated names of the conditions met (null when none)."""
    met = {c.name: F.coalesce((burn[c.long_window] > c.factor) & (burn[c.short_window] > c.factor), F.lit(False))
           for c in ALERT_CONDITIONS}
    names = F.concat_ws(",", *[F.when(met[c.name], F.lit(c.name)) for c in ALERT_CONDITIONS])
    conditions = F.when(names != "", names)
    level = F.lit(None).cast("string")
    for severity in ("ticket", "page"):  # the later, more severe level wins
        any_met = F.lit(False)
        for condition in ALERT_CONDITIONS:
            if condition.severity == severity:
                any_met = any_met | met[condition.name]
        level = F.when(any_met, F.lit(severity)).otherwise(level)
    return level, conditions
