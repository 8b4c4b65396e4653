"""Error budget and burn-rate arithmetic (``../shared/DOMAIN.md`` §7) on NumPy arrays. Pure.

With B = 1 - target the error budget, and over a window w with good_w of valid_w events
(or minutes):

- SLI = good_T / valid_T over the SLO window T; null (NaN) without valid data.
- error ratio e_w = (valid_w - good_w) / valid_w; burn rate BR_w = e_w / B (1 = spending the budget
  exactly over the window); null when the window has no valid data.
- error budget remaining depends on the budgeting method:

  - Timeslices (minutes): the budget is a number of bad minutes over the whole window, as Google
    Cloud's windows-based SLOs count it: allowed = B x T (30 days at 99 % = 432 minutes), and
    remaining = 1 - bad / allowed, where ``bad`` is the bad minutes observed in the window. One
    bad minute spends 1/432 of it, on the first day as on the last. Minutes without data are
    neither good nor bad: they are reported as coverage (observed minutes / T), never as budget.
  - Occurrences (events): remaining = 1 - e_T / B, the ratio over the events observed in the
    window (there is no count of the window's events until they happen). Until the window holds
    ``min_events`` valid events a few bad ones would read as an exhausted budget, so below that
    nothing pages and the status is ``too_few_events`` (default: one bad event may spend at most
    a tenth of the budget, ``min_events = 10 / B``).

  Remaining is 0 exactly at the objective (SLI = target: the budget is spent, the SLO is still
  met) and negative once overspent (not clamped: -0.5 = half a budget too much); only a negative
  one is ``exhausted``.
- time to exhaustion = remaining * T / BR_1h: how long the rest of the budget lasts at the last
  hour's burn; null when nothing burns or nothing is left.
- alerts: the SRE workbook's multiwindow, multi-burn-rate conditions below; both windows of a
  condition must burn faster than its factor. A condition is a share of the SLO window's budget
  spent within its long window (2 % in 1h, 5 % in 6h, 10 % in 1d, 10 % in 3d), so its factor
  scales with the window as Sloth scales it: factor = share x T / long window
  (:func:`burn_rate_factor`; 30 days: 14.4, 6, 3, 1; 28 days: 13.44, 5.6, 2.8, 0.933). The
  exported Prometheus rules (``rules.py``) use the same factors.

  Difference from Sloth, on purpose: Sloth ships these shares for 28 and 30 days only and refuses
  any other window unless given a catalog of its own; kpulse applies them to every window it
  accepts (1h and up). Below 30 days the factors fall, and under 1 a condition is met while the
  budget burns slower than the window allows: the 3d ticket's at 28 days already (as in Sloth),
  the 6h page's below 5 days, the 1h page's below about 2. Page on SLOs of 28 days or more.

NaN stands for null throughout; a comparison with NaN is false, so no data never raises an alert.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kpulse.lake.slo_status import BUDGET_STATUSES

_EXHAUSTED, _TOO_FEW_EVENTS, _NO_DATA = (BUDGET_STATUSES.index(name) for name in
                                         ("exhausted", "too_few_events", "no_data"))

BURN_WINDOWS: dict[str, int] = {"5m": 5, "30m": 30, "1h": 60, "2h": 120, "6h": 360, "1d": 1440, "3d": 4320}
"""Rolled-up windows, name -> minutes (the SLO's own window is added as ``window``)."""
CURRENT_BURN_WINDOW = "1h"


def burn_rate_factor(budget_percent: float, window_minutes: np.ndarray | float,
                     long_window_minutes: float) -> np.ndarray | float:
    """The burn rate that spends ``budget_percent`` % of an SLO window's error budget within
    ``long_window_minutes``: the share of the window's hours to spend, over the long window's hours.
    Sloth's ``getBurnRateFactor`` (``internal/alert/window.go``), in the same order of operations,
    so the floats are Sloth's (28 days, 5 % over 6h: 5.6000000000000005)."""
    hours_to_spend = budget_percent * (window_minutes / 60) / 100
    return hours_to_spend / (long_window_minutes / 60)


@dataclass(frozen=True)
class AlertCondition:
    name: str
    severity: str
    long_window: str
    short_window: str
    budget_percent: float
    """Share of the SLO window's error budget, in %, that burning at :meth:`factor` spends within the
    long window."""

    def factor(self, window_minutes: np.ndarray | float) -> np.ndarray | float:
        """Burn rate both windows must exceed for an SLO window of ``window_minutes`` (30 days: the
        workbook's 14.4, 6, 3, 1)."""
        return burn_rate_factor(self.budget_percent, window_minutes, BURN_WINDOWS[self.long_window])


ALERT_CONDITIONS = (
    AlertCondition("page_1h_5m", "page", "1h", "5m", 2),
    AlertCondition("page_6h_30m", "page", "6h", "30m", 5),
    AlertCondition("ticket_1d_2h", "ticket", "1d", "2h", 10),
    AlertCondition("ticket_3d_6h", "ticket", "3d", "6h", 10),
)
"""The SRE workbook's conditions, as Sloth's default windows (``google-28d.yaml``, ``google-30d.yaml``)."""
SEVERITIES = ("ticket", "page")
"""Alert levels, least severe first."""


def error_ratio(good: np.ndarray, valid: np.ndarray) -> np.ndarray:
    return _ratio(valid - good, valid)


def burn_rate(good: np.ndarray, valid: np.ndarray, budget: np.ndarray | float) -> np.ndarray:
    return error_ratio(good, valid) / budget


def sli(good: np.ndarray, valid: np.ndarray) -> np.ndarray:
    return _ratio(good, valid)


def budget_remaining(good: np.ndarray, valid: np.ndarray, budget: np.ndarray | float) -> np.ndarray:
    return 1 - error_ratio(good, valid) / budget


MIN_EVENTS_BUDGET_SHARE = 0.1
"""The default minimum of events: as many as make one bad event spend this share of the budget."""
_DECIMALS = 9
"""Budgets are rounded to this many decimals, so that (1 - 0.99) x 43,200 is 432, not 432.0000000000004."""


def error_budget(objective: np.ndarray | float) -> np.ndarray:
    """B = 1 - objective (0.99 -> 0.01 exactly)."""
    return np.round(1 - np.asarray(objective, dtype=np.float64), _DECIMALS + 3)


def allowed_bad_slices(objective: np.ndarray | float, window_minutes: np.ndarray | float) -> np.ndarray:
    """Timeslices: the bad minutes the whole window may hold, B x T (a fraction of a minute kept: 43.2)."""
    return np.round(error_budget(objective) * window_minutes, _DECIMALS)


def slice_budget_remaining(bad: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """Timeslices: 1 - bad / allowed (0 when bad = allowed, negative beyond)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return (allowed - bad) / allowed


def coverage(observed_minutes: np.ndarray, window_minutes: np.ndarray) -> np.ndarray:
    """The share of the window's minutes that have data."""
    return np.asarray(observed_minutes, dtype=np.float64) / window_minutes


def default_min_events(objective: np.ndarray | float) -> np.ndarray:
    """Occurrences: the valid events a window needs before its budget can page or be exhausted,
    by default: ``MIN_EVENTS_BUDGET_SHARE`` / B events (0.999 -> 10,000; 0.99 -> 1,000)."""
    return np.ceil(np.round(1 / (MIN_EVENTS_BUDGET_SHARE * error_budget(objective)), 6)).astype(np.int64)


def budget_status(timeslices: np.ndarray, remaining: np.ndarray, valid: np.ndarray,
                  min_events: np.ndarray) -> np.ndarray:
    """Per row, the index in ``BUDGET_STATUSES`` (``kpulse/lake/slo_status.py``) of its budget's
    state. ``valid``: valid events (or observed minutes) in the window; ``min_events`` matters only
    where ``timeslices`` is false."""
    codes = np.where(remaining < 0, _EXHAUSTED, BUDGET_STATUSES.index("ok"))
    codes = np.where(~timeslices & (valid < min_events), _TOO_FEW_EVENTS, codes)
    return np.where(valid <= 0, _NO_DATA, codes)


def _ratio(part: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """``part / valid``, NaN where ``valid`` is 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.true_divide(part, valid)
    ratio[valid <= 0] = np.nan
    return ratio


def time_to_exhaustion_seconds(remaining: np.ndarray, current_burn: np.ndarray, window_minutes: int) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        lasts = remaining * (window_minutes * 60.0) / current_burn
    return np.where((current_burn > 0) & (remaining > 0), lasts, np.nan)


def conditions_met(burn: dict[str, np.ndarray], window_minutes: np.ndarray) -> np.ndarray:
    """A bit mask per row: bit i set when ``ALERT_CONDITIONS[i]`` is met, at the factors of the row's
    SLO window (``window_minutes``)."""
    mask = np.zeros(len(next(iter(burn.values()))), dtype=np.int64)
    for bit, condition in enumerate(ALERT_CONDITIONS):
        factor = condition.factor(window_minutes)
        met = (burn[condition.long_window] > factor) & (burn[condition.short_window] > factor)
        mask |= met.astype(np.int64) << bit
    return mask


def alert_labels() -> tuple[list[str | None], list[str | None]]:
    """For every bit mask of :func:`conditions_met` (the list index): the alert level (the most
    severe condition met, ``page`` or ``ticket``; None when none is) and the comma-separated names
    of the conditions met (None when none is)."""
    levels: list[str | None] = []
    names: list[str | None] = []
    for mask in range(1 << len(ALERT_CONDITIONS)):
        met = [c for bit, c in enumerate(ALERT_CONDITIONS) if mask >> bit & 1]
        severities = {c.severity for c in met}
        levels.append(next((s for s in reversed(SEVERITIES) if s in severities), None))
        names.append(",".join(c.name for c in met) or None)
    return levels, names
