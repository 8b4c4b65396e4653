"""Burn-rate factors scaled by the SLO's window as Sloth scales them, so that each alert condition
spends the same share of the window's error budget (the SRE workbook's 2 %, 5 %, 10 %, 10 % over
1h, 6h, 1d, 3d): one function (``burn.burn_rate_factor``) that the SLO job's alerts and the
exported Prometheus rules both use.

Sloth's cases: slok/sloth ``internal/alert/alert_test.go`` (``TestGenerateMWMBAlerts``) at commit
0e395d81513ff701f5d27b7aa47d794cb764fd5e (2026-04-04), with its default windows
``internal/alert/windows/google-28d.yaml`` and ``google-30d.yaml`` and the 7-day custom catalog of
the same test; the formula is ``getBurnRateFactor`` in ``internal/alert/window.go``. The values are
compared exactly: the arithmetic is done in the same order as Sloth's, so the floats are the same.
"""

from __future__ import annotations

import argparse

import pyarrow as pa
import pytest

from spark_jobs import burn, windows
from spark_jobs.command import run_command
from spark_jobs.definitions import parse_definitions
from spark_jobs.rules import rule_groups
from tests.support import M0

DAY = 1440
LONG_WINDOWS = [60, 360, DAY, 3 * DAY]
"""Sloth's long windows, page quick to ticket slow: 1h, 6h, 1d, 3d (minutes)."""


@pytest.mark.parametrize("window_minutes, budget_percents, factors", [
    pytest.param(30 * DAY, [2, 5, 10, 10], [14.4, 6, 3, 1], id="30 day window, default windows"),
    pytest.param(28 * DAY, [2, 5, 10, 10], [13.44, 5.6000000000000005, 2.8000000000000003, 0.9333333333333333],
                 id="28 day window, default windows"),
    pytest.param(7 * DAY, [8, 12.5, 20, 42], [13.44, 3.5, 1.4000000000000001, 0.98],
                 id="7 day custom window, custom catalog"),
])
def test_burn_rate_factor_is_sloths(window_minutes, budget_percents, factors):
    got = [burn.burn_rate_factor(percent, window_minutes, long)
           for percent, long in zip(budget_percents, LONG_WINDOWS, strict=True)]
    assert got == factors


def test_the_alert_conditions_are_sloths_default_windows():
    """google-28d.yaml and google-30d.yaml: the same windows and budget shares for both periods; only
    the factors change with the period."""
    sloth = [("page", "5m", "1h", 2), ("page", "30m", "6h", 5), ("ticket", "2h", "1d", 10), ("ticket", "6h", "3d", 10)]
    assert [(c.severity, c.short_window, c.long_window, c.budget_percent) for c in burn.ALERT_CONDITIONS] == sloth
    assert [burn.BURN_WINDOWS[c.long_window] for c in burn.ALERT_CONDITIONS] == LONG_WINDOWS
    assert [c.factor(28 * DAY) for c in burn.ALERT_CONDITIONS] == [
        13.44, 5.6000000000000005, 2.8000000000000003, 0.9333333333333333]
    assert [c.factor(30 * DAY) for c in burn.ALERT_CONDITIONS] == [14.4, 6, 3, 1]


def occurrences(window: str):
    return parse_definitions({"slos": [{"name": "s", "scope": "cluster", "indicator": "probe_produce_availability",
                                        "budgetingMethod": "Occurrences", "target": 0.999, "timeWindow": window}]})


@pytest.mark.parametrize("long_minutes, burning, at_28_days", [
    # 13.44 < 14 < 14.4; the longer windows see 14 x 1/6, 1/24, 1/72: under their factors
    pytest.param(60, 14.0, "page_1h_5m", id="page 1h&5m at 14"),
    # 5.6 < 5.8 < 6; the 1d and 3d windows see 1.45 and 0.48
    pytest.param(360, 5.8, "page_6h_30m", id="page 6h&30m at 5.8"),
    # 2.8 < 2.9 < 3; the 3d window sees 0.967: over 28 days' 0.933, under 30 days' 1
    pytest.param(DAY, 2.9, "ticket_1d_2h,ticket_3d_6h", id="ticket 1d&2h at 2.9"),
    pytest.param(3 * DAY, 0.95, "ticket_3d_6h", id="ticket 3d&6h at 0.95"),
])
def test_the_job_alerts_at_the_factors_of_the_slos_window(long_minutes, burning, at_28_days):
    """Three days of probe records, the last ``long_minutes`` of them burning the budget at
    ``burning``: a condition between its 28-day and its 30-day factor is met for a 28-day SLO and
    not for a 30-day one."""
    valid = 100_000  # per minute; budget 0.001, so `burning` x 100 bad records a minute burn at `burning`
    minutes = 3 * DAY
    bad = [round(burning * 100) if m >= minutes - long_minutes else 0 for m in range(minutes)]
    frame = pa.table({"cluster": ["prod"] * minutes, "slo": ["s"] * minutes, "entity": ["prod"] * minutes,
                      "minute": pa.array([M0 + m for m in range(minutes)], pa.int64()),
                      "good": pa.array([valid - b for b in bad], pa.int64()),
                      "valid": pa.array([valid] * minutes, pa.int64())})
    severity = at_28_days.split("_")[0]
    for window, conditions, alert in (("28d", at_28_days, severity), ("30d", None, None)):
        [row] = windows.status(frame, occurrences(window), M0 + minutes, M0 + minutes).to_pylist()
        assert row[f"burn_rate_{burn.ALERT_CONDITIONS[LONG_WINDOWS.index(long_minutes)].long_window}"] == (
            pytest.approx(burning))
        assert (row["window"], row["alert_conditions"], row["alert"]) == (window, conditions, alert)


@pytest.mark.parametrize("window, page, ticket", [
    # Sloth prints the same numbers: test/integration/prometheus/testdata/out-base-28d.yaml.tpl at the same commit
    pytest.param("28d", ["13.44", "5.6000000000000005"], ["2.8000000000000003", "0.9333333333333333"], id="28d"),
    pytest.param("30d", ["14.4", "6"], ["3", "1"], id="30d"),
])
def test_the_exported_rules_use_the_factors_of_the_slos_window(window, page, ticket):
    _, alerts = rule_groups(occurrences(window))
    by_severity = {rule["labels"]["severity"]: rule["expr"] for rule in alerts["rules"]}
    for severity, factors in (("page", page), ("ticket", ticket)):
        conditions = [c for c in burn.ALERT_CONDITIONS if c.severity == severity]
        for condition, factor in zip(conditions, factors, strict=True):
            for rate in (condition.long_window, condition.short_window):
                assert f'kpulse_slo:error_ratio_rate{rate}{{slo="s"}} > ({factor} * 0.001)' in by_severity[severity]


def test_slo_check_prints_each_slos_factors(tmp_path, capsys):
    path = tmp_path / "slos.yaml"
    path.write_text("slos:\n"
                    "  - {name: monthly, scope: cluster, indicator: partition_health_minutes,"
                    " budgetingMethod: Timeslices, target: 0.99, timeWindow: 30d}\n"
                    "  - {name: four-weeks, scope: cluster, indicator: partition_health_minutes,"
                    " budgetingMethod: Timeslices, target: 0.99, timeWindow: 28d}\n")
    assert run_command(argparse.Namespace(action="check", definitions=str(path)), None) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[0] == "monthly" and lines[1].endswith("burn-rate alerts at 14.4/6/3/1")
    assert lines[2].split()[0] == "four-weeks" and lines[2].endswith("burn-rate alerts at 13.44/5.6/2.8/0.93")
