"""Error budgets computed by hand (issue 17, item 3), on the pure functions (``spark_jobs/burn.py``)
and through the window roll-up (``spark_jobs/windows.py``).

Timeslices: the budget is a number of bad minutes over the whole window, (1 - objective) x window
minutes (Google Cloud's windows-based SLOs), so one bad minute of a 30-day 99 % SLO spends 1 of
432 whatever else has been observed; minutes without data are neither good nor bad, only coverage.
Occurrences: the ratio over observed events, but no page and no "exhausted" before a minimum
number of events. The Spark job itself: tests/test_slo_budget_job.py."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from spark_jobs import burn, windows
from spark_jobs.definitions import SloDefinitionError, parse_definitions
from tests.support import M0, slo

DAY = 1440
MONTH = 30 * DAY


def status_at(definitions, series, eval_minute, entity="prod"):
    """``series``: (minute offset, good, valid) rows; the status row at the minute end ``eval_minute``."""
    frame = pa.table({"cluster": ["prod"] * len(series), "slo": ["s"] * len(series), "entity": [entity] * len(series),
                      "minute": pa.array([M0 + m for m, _, _ in series], pa.int64()),
                      "good": pa.array([g for _, g, _ in series], pa.int64()),
                      "valid": pa.array([v for _, _, v in series], pa.int64())})
    [row] = windows.status(frame, definitions, M0 + eval_minute, M0 + eval_minute).to_pylist()
    return row


# --- the pure arithmetic ---------------------------------------------------------------------------

def test_allowed_bad_minutes_are_the_budget_share_of_every_minute_of_the_window():
    allowed = burn.allowed_bad_slices(np.array([0.99, 0.999, 0.99]), np.array([MONTH, MONTH, DAY]))
    assert allowed.tolist() == [432.0, 43.2, 14.4]  # exact: no 432.00000000000034


def test_one_bad_minute_spends_one_of_432_and_432_spend_it_all_and_433_overspend():
    remaining = burn.slice_budget_remaining(np.array([1, 432, 433, 0]), np.full(4, 432.0))
    assert remaining[0] == pytest.approx(431 / 432) and round(remaining[0] * 100, 2) == 99.77
    assert remaining[1] == 0.0  # exactly at the objective: nothing left, not overspent
    assert remaining[2] == pytest.approx(-1 / 432)  # overspent: negative, not clamped
    assert remaining[3] == 1.0


def test_coverage_is_observed_minutes_over_window_minutes():
    assert burn.coverage(np.array([2, MONTH, 0]), np.array([MONTH, MONTH, DAY])).tolist() == [2 / MONTH, 1.0, 0.0]


def test_default_minimum_events_let_one_bad_event_spend_a_tenth_of_the_budget_at_most():
    assert burn.default_min_events(np.array([0.999, 0.99, 0.9])).tolist() == [10_000, 1_000, 100]


def test_budget_status_says_no_data_too_few_events_exhausted_or_ok():
    states = burn.budget_status(
        timeslices=np.array([True, True, True, True, False, False, False]),
        remaining=np.array([np.nan, 0.0, -0.01, 0.5, -499.0, -1.0, 0.2]),
        valid=np.array([0, 10, 10, 10, 100, 20_000, 20_000]),
        min_events=np.array([0, 0, 0, 0, 10_000, 10_000, 10_000]))
    assert [burn.BUDGET_STATUSES[s] for s in states] == [
        "no_data", "ok", "exhausted", "ok", "too_few_events", "exhausted", "ok"]


# --- through the window roll-up: Timeslices ---------------------------------------------------------

def test_first_minute_bad_of_a_30_day_99_percent_slo_leaves_431_of_432_bad_minutes():
    row = status_at(slo("partition_health_minutes", "cluster", target=0.99, window="30d"), [(0, 0, 1)], 1)
    assert (row["bad_slices"], row["allowed_bad_slices"]) == (1, 432.0)
    assert row["error_budget_remaining"] == pytest.approx(431 / 432)  # 99.77 %, not -9,900 %
    assert (row["observed_minutes"], row["coverage"]) == (1, pytest.approx(1 / MONTH))
    assert row["budget_status"] == "ok"
    assert row["sli"] == 0.0 and row["burn_rate_1h"] == pytest.approx(100.0)  # burn rates: ratios, unchanged
    assert row["alert"] == "page"  # every window burns at 100 > 14.4: a bad minute pages, as before


def test_one_bad_minute_in_a_full_30_day_window():
    series = [(m, 0 if m == 1000 else 1, 1) for m in range(MONTH)]
    row = status_at(slo("partition_health_minutes", "cluster", target=0.99, window="30d"), series, MONTH)
    assert (row["bad_slices"], row["allowed_bad_slices"], row["observed_minutes"]) == (1, 432.0, MONTH)
    assert row["error_budget_remaining"] == pytest.approx(431 / 432) and row["coverage"] == 1.0
    assert row["budget_status"] == "ok"


def test_exactly_at_the_objective_nothing_is_left_and_it_is_not_exhausted():
    definitions = slo("partition_health_minutes", "cluster", target=0.99, window="30d")
    series = [(m, 0 if m < 432 else 1, 1) for m in range(MONTH)]  # 432 bad minutes of 43,200: SLI 0.99
    row = status_at(definitions, series, MONTH)
    assert (row["bad_slices"], row["allowed_bad_slices"]) == (432, 432.0)
    assert row["sli"] == pytest.approx(0.99) and row["burn_rate_window"] == pytest.approx(1.0)
    assert row["error_budget_remaining"] == 0.0 and row["budget_status"] == "ok"


def test_overspent_is_negative_and_exhausted_and_has_no_time_to_exhaustion():
    definitions = slo("partition_health_minutes", "cluster", target=0.99, window="1d")
    series = [(m, 0 if m >= 45 else 1, 1) for m in range(60)]  # the last 15 minutes bad: 15 of 14.4 allowed
    row = status_at(definitions, series, 60)
    assert row["error_budget_remaining"] == pytest.approx(1 - 15 / 14.4)
    assert row["budget_status"] == "exhausted" and row["time_to_exhaustion_seconds"] is None


def test_minutes_without_data_are_coverage_only_and_leave_the_budget_as_it_was():
    definitions = slo("partition_health_minutes", "cluster", target=0.99, window="1d")
    observed = [(m, 0 if m == 10 else 1, 1) for m in range(100)]
    with_gaps = observed + [(m, None, None) for m in range(100, 150)]
    full = status_at(definitions, observed + [(m, 1, 1) for m in range(100, 150)], 150)
    gapped = status_at(definitions, with_gaps, 150)
    assert gapped["error_budget_remaining"] == full["error_budget_remaining"] == pytest.approx(1 - 1 / 14.4)
    assert (gapped["observed_minutes"], full["observed_minutes"]) == (100, 150)
    assert gapped["coverage"] == pytest.approx(100 / DAY) and gapped["coverage"] < full["coverage"]


def test_nothing_observed_in_the_window_gives_no_budget_figure_and_no_data():
    row = status_at(slo("partition_health_minutes", "cluster", window="1h"), [(m, None, None) for m in range(60)], 60)
    assert (row["error_budget_remaining"], row["bad_slices"], row["observed_minutes"], row["coverage"]) == (
        None, 0, 0, 0.0)
    assert row["budget_status"] == "no_data"


# --- Occurrences: a ratio over observed events, and no page before the minimum ----------------------

def occurrences(**extra):
    return parse_definitions({"slos": [{"name": "s", "scope": "cluster", "indicator": "probe_produce_availability",
                                        "budgetingMethod": "Occurrences", "target": 0.999, "timeWindow": "30d",
                                        **extra}]})


def test_occurrences_below_the_minimum_events_burn_but_do_not_page_and_are_not_exhausted():
    series = [(m, 5, 10) for m in range(10)]  # 50 of 100 events bad, every window burns at 500
    row = status_at(occurrences(), series, 10)
    assert row["burn_rate_5m"] == pytest.approx(500) and row["burn_rate_1h"] == pytest.approx(500)
    assert row["error_budget_remaining"] == pytest.approx(1 - 0.5 / 0.001)  # still the ratio over observed events
    assert (row["valid_events"], row["min_events"]) == (100, 10_000)
    assert row["budget_status"] == "too_few_events"
    assert (row["alert"], row["alert_conditions"], row["time_to_exhaustion_seconds"]) == (None, None, None)
    assert (row["bad_slices"], row["allowed_bad_slices"]) == (None, None)  # minutes are not the budget here
    assert (row["observed_minutes"], row["coverage"]) == (10, pytest.approx(10 / MONTH))


def test_occurrences_page_once_the_minimum_is_reached_and_the_minimum_can_be_set_per_slo_or_for_all():
    series = [(m, 5, 10) for m in range(10)]
    for definitions in (occurrences(minEvents=100),
                        parse_definitions({"minEvents": 100, "slos": [
                            {"name": "s", "scope": "cluster", "indicator": "probe_produce_availability",
                             "budgetingMethod": "Occurrences", "target": 0.999, "timeWindow": "30d"}]})):
        row = status_at(definitions, series, 10)
        assert row["min_events"] == 100 and row["alert"] == "page" and row["budget_status"] == "exhausted"


def test_min_events_is_refused_on_timeslices_and_must_be_a_positive_integer():
    with pytest.raises(SloDefinitionError, match=r"slos\[0\]\.minEvents: only for budgetingMethod Occurrences"):
        slo("partition_health_minutes", "cluster", minEvents=10)
    with pytest.raises(SloDefinitionError, match=r"slos\[0\]\.minEvents: must be a whole number >= 1"):
        occurrences(minEvents=0.5)
    with pytest.raises(SloDefinitionError, match=r"^minEvents: must be a whole number >= 1"):
        parse_definitions({"minEvents": -3, "slos": [{"name": "s", "scope": "cluster", "indicator": "probe_latency",
                                                      "budgetingMethod": "Occurrences", "target": 0.99,
                                                      "timeWindow": "1d"}]})


def test_timeslices_rows_have_no_minimum_events():
    row = status_at(slo("partition_health_minutes", "cluster", target=0.99, window="1d"), [(0, 1, 1)], 1)
    assert row["min_events"] is None


# --- the budget in words, as the page, the Overview and `kpulse slo run` show it ----------------------

def test_the_budget_in_words():
    from kpulse.lake.slo_status import budget_text, coverage_text

    minutes = {"budget_status": "ok", "error_budget_remaining": 431 / 432, "bad_slices": 1, "allowed_bad_slices": 432.0}
    assert budget_text(minutes) == "431 of 432 bad minutes left"
    assert budget_text({**minutes, "bad_slices": 1, "allowed_bad_slices": 43.2}) == "42.2 of 43.2 bad minutes left"
    assert budget_text({**minutes, "budget_status": "exhausted", "bad_slices": 54, "allowed_bad_slices": 43.2}) == (
        "10.8 bad minutes over the 43.2 allowed")
    events = {"budget_status": "too_few_events", "error_budget_remaining": -499.0, "bad_slices": None,
              "allowed_bad_slices": float("nan"), "valid_events": 100, "min_events": 10_000}
    assert budget_text(events) == "too few events to page: 100 of 10,000"
    assert budget_text({**events, "budget_status": "ok", "valid_events": 12_345}) == "12,345 events"
    assert budget_text({"budget_status": "no_data", "error_budget_remaining": None}) == "no data in the window"
    assert (coverage_text(2 / MONTH), coverage_text(10 / DAY), coverage_text(1.0), coverage_text(0.0)) == (
        "0.0046%", "0.69%", "100.0%", "0.0%")
