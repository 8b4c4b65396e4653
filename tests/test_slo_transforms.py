"""The SLO transforms (pure Arrow/NumPy functions the job's Spark tasks run) on small tables, against
values computed by hand: per-minute good/valid per indicator, then windows, budget, burn rates and
alerts at an evaluation time. One case per edge: no data, all bad, exactly at the objective, budget
exhausted, window boundaries, alerts (the budget's own cases: tests/test_slo_budget.py). The job itself runs them in Spark: tests/test_slo_job.py."""

from __future__ import annotations

import pyarrow as pa
import pytest

from spark_jobs import windows
from spark_jobs.definitions import parse_definitions
from tests.support import M0, at, minute_rows, slo


def health(minute, second, offline=0, under_min_isr=0, cluster="prod"):
    return {"time": at(minute, second), "cluster": cluster, "offline_partitions": offline,
            "under_min_isr_partitions": under_min_isr}


# --- minutes ---------------------------------------------------------------------------------------

def test_partition_health_minute_is_bad_when_one_sample_has_an_offline_partition_and_null_without_samples():
    rows = [health(0, 0), health(0, 30), health(1, 0), health(1, 30, offline=2), health(2, 10, under_min_isr=None)]
    got = minute_rows("cluster_health", rows, slo("partition_health_minutes", "cluster"), end=4)
    # minute 2: its only sample cannot be judged (null) -> no data; minute 3: no sample at all -> no data
    assert got == [("prod", 0, 1, 1), ("prod", 1, 0, 1), ("prod", 2, None, None), ("prod", 3, None, None)]


def test_time_slice_target_lets_a_minute_with_half_good_samples_pass_a_half_target():
    rows = [{"time": at(0, s), "cluster": "prod", "broker_id": 1, "request_handler_idle_ratio": r}
            for s, r in ((0, 0.5), (20, 0.1), (40, 0.3), (50, 0.05))]
    rows += [{"time": at(1, s), "cluster": "prod", "broker_id": 1, "request_handler_idle_ratio": r}
             for s, r in ((0, 0.1), (20, 0.1), (40, 0.3))]
    definitions = slo("broker_saturation_minutes", "broker", timeSliceTarget=0.5)
    assert minute_rows("broker_metrics", rows, definitions, end=2) == [("1", 0, 1, 1), ("1", 1, 0, 1)]


def test_occurrences_count_probe_records_and_a_minute_without_records_is_no_data():
    rows = [{"time": at(0, 5), "cluster": "prod", "broker_id": b, "produced": 10, "produce_errors": e}
            for b, e in ((1, 0), (2, 3), (3, 0))]
    rows.append({"time": at(1, 5), "cluster": "prod", "broker_id": 1, "produced": None, "produce_errors": None})
    got = minute_rows("probe", rows, slo("probe_produce_availability", "cluster", "Occurrences"), end=2)
    assert got == [("prod", 0, 30, 33), ("prod", 1, None, None)]


def test_freshness_uses_the_override_then_the_param_then_the_groups_own_threshold():
    def group(gid, lag, threshold=50.0):
        return {"time": at(0, 1), "cluster": "prod", "group_id": gid, "max_lag_seconds": lag,
                "lag_seconds_threshold": threshold}

    rows = [group("billing", 40.0), group("search", 40.0), group("audit", 40.0, threshold=30.0), group("lost", None)]
    definitions = slo("consumer_freshness_minutes", "consumer_group", target=0.99,
                      overrides=[{"entity": "billing", "params": {"lag_seconds_threshold": 30}}])
    got = minute_rows("consumer_group", rows, definitions, end=1)
    assert got == [("audit", 0, 0, 1), ("billing", 0, 0, 1), ("lost", 0, None, None), ("search", 0, 1, 1)]
    with_param = slo("consumer_freshness_minutes", "consumer_group", params={"lag_seconds_threshold": 45})
    assert [g[2] for g in minute_rows("consumer_group", rows, with_param, end=1)] == [1, 1, None, 1]


def test_consumer_progress_counts_stop_stall_err_as_bad_and_a_null_status_as_no_data():
    rows = [{"time": at(i, 0), "cluster": "prod", "group_id": "g", "status": s}
            for i, s in enumerate(["OK", "WARN", "STALL", "STOP", "ERR", None, "REWIND"])]
    got = minute_rows("consumer_group", rows, slo("consumer_progress_minutes", "consumer_group"), end=7)
    assert [(m, g) for _, m, g, _ in got] == [(0, 1), (1, 1), (2, 0), (3, 0), (4, 0), (5, None), (6, 1)]


def test_streams_rebalancing_is_tolerated_for_the_configured_time_then_bad():
    def cycle(minute, second, states, expected=2):
        return [{"time": at(minute, second), "cluster": "prod", "application_id": "app", "instance": f"i{n}",
                 "up": state != "DOWN", "client_state": None if state == "DOWN" else state,
                 "expected_instances": expected} for n, state in enumerate(states)]

    rows = (cycle(0, 0, ["RUNNING", "RUNNING"]) + cycle(0, 30, ["REBALANCING", "RUNNING"])  # short rebalance
            + cycle(1, 0, ["RUNNING", "RUNNING"])
            + [r for s in range(0, 60, 10) for r in cycle(2, s, ["REBALANCING", "REBALANCING"])]  # 50 s, tolerated
            + [r for s in range(0, 60, 20) for r in cycle(3, s, ["REBALANCING", "RUNNING"])]  # 110..150 s: too long
            + cycle(4, 0, ["RUNNING", "DOWN"]) + cycle(5, 0, ["RUNNING"]))  # an instance down; one missing
    definitions = slo("streams_availability_minutes", "streams_app", params={"rebalancing_tolerance_seconds": 60})
    got = minute_rows("streams_instance", rows, definitions, end=6)
    assert [(m, g) for _, m, g, _ in got] == [(0, 1), (1, 1), (2, 1), (3, 0), (4, 0), (5, 0)]


def test_a_known_entity_without_samples_gets_no_data_minutes_and_a_new_one_starts_at_its_first_sample():
    known = [("prod", "quiet")]
    rows = [{"time": at(0, 0), "cluster": "prod", "group_id": "busy", "status": "OK"},
            {"time": at(1, 0), "cluster": "prod", "group_id": "new", "status": "OK"}]
    got = minute_rows("consumer_group", rows, slo("consumer_progress_minutes", "consumer_group"), end=2,
                      known=known)
    # "new" has no rows before its first sample: it did not exist, which is not "no data"
    assert got == [("busy", 0, 1, 1), ("busy", 1, None, None), ("new", 1, 1, 1),
                   ("quiet", 0, None, None), ("quiet", 1, None, None)]


# --- windows, budget, burn, alerts -----------------------------------------------------------------

def status_at(definitions, series, eval_minutes, entity="prod"):
    """``series``: list of (minute offset, good, valid); status rows at the given minute ends."""
    frame = pa.table({"cluster": ["prod"] * len(series), "slo": ["s"] * len(series), "entity": [entity] * len(series),
                      "minute": pa.array([M0 + m for m, _, _ in series], pa.int64()),
                      "good": pa.array([g for _, g, _ in series], pa.int64()),
                      "valid": pa.array([v for _, _, v in series], pa.int64())})
    out = windows.status(frame, definitions, M0 + min(eval_minutes), M0 + max(eval_minutes))
    found = {int(r["time"].timestamp() // 60) - M0: r for r in out.to_pylist()}
    return {m: found[m] for m in eval_minutes}


def test_no_data_gives_null_sli_budget_and_burn_never_good():
    definitions = slo("partition_health_minutes", "cluster", window="1h")
    row = status_at(definitions, [(m, None, None) for m in range(60)], [60])[60]
    assert (row["sli"], row["error_budget_remaining"], row["burn_rate_5m"], row["burn_rate_window"]) == (
        None, None, None, None)
    assert (row["good_events"], row["valid_events"], row["alert"], row["time_to_exhaustion_seconds"]) == (
        0, 0, None, None)


def test_all_bad_burns_at_one_over_the_budget_and_pages():
    definitions = slo("partition_health_minutes", "cluster", target=0.999)
    row = status_at(definitions, [(m, 0, 1) for m in range(60)], [60])[60]
    assert row["sli"] == 0.0 and row["burn_rate_1h"] == pytest.approx(1000) and row["burn_rate_5m"] == pytest.approx(1000)
    assert row["error_budget_remaining"] == pytest.approx(1 - 60 / 43.2)  # 60 bad of the window's 43.2 allowed
    assert row["time_to_exhaustion_seconds"] is None  # nothing left to exhaust
    assert row["alert"] == "page"
    assert row["alert_conditions"] == "page_1h_5m,page_6h_30m,ticket_1d_2h,ticket_3d_6h"


def test_at_the_objective_over_the_observed_minutes_burns_at_one_but_spends_one_of_the_windows_bad_minutes():
    definitions = slo("partition_health_minutes", "cluster", target=0.99, window="1d")
    series = [(m, 0 if m == 50 else 1, 1) for m in range(100)]  # 1 bad minute of 100
    row = status_at(definitions, series, [100])[100]
    assert (row["good_events"], row["valid_events"]) == (99, 100)
    assert row["sli"] == pytest.approx(0.99)
    assert row["burn_rate_window"] == pytest.approx(1.0)
    assert row["error_budget_remaining"] == pytest.approx(1 - 1 / 14.4)  # a day at 0.99 allows 14.4 bad minutes
    assert row["burn_rate_1h"] == pytest.approx((1 / 60) / 0.01)  # the bad minute is in the last hour
    assert row["burn_rate_30m"] == pytest.approx(0.0)  # ... but not in the last 30 minutes: no page
    # a 1-day window's tickets are 10 % of its budget within 1d or 3d (factors 0.1 and 0.033, as Sloth
    # scales them): burning at 1 meets both
    assert row["alert"] == "ticket" and row["alert_conditions"] == "ticket_1d_2h,ticket_3d_6h"


def test_budget_partly_spent_gives_time_to_exhaustion_at_the_last_hours_burn():
    definitions = slo("partition_health_minutes", "cluster", target=0.9, window="1d")
    series = [(m, 1, 1) for m in range(540)] + [(m, 0 if m % 10 == 0 else 1, 1) for m in range(540, 600)]
    row = status_at(definitions, series, [600])[600]
    # window: 6 bad of the 144 minutes a day at 0.9 allows -> remaining 1 - 6/144; last hour: e = 0.1 -> burn 1.0
    assert row["error_budget_remaining"] == pytest.approx(1 - 6 / 144) and row["burn_rate_1h"] == pytest.approx(1.0)
    assert row["time_to_exhaustion_seconds"] == pytest.approx((1 - 6 / 144) * 86400 / 1.0)


def test_window_boundaries_a_bad_minute_leaves_the_5m_window_exactly_five_minutes_later():
    definitions = slo("partition_health_minutes", "cluster", target=0.9, window="1h")
    series = [(m, 0 if m == 10 else 1, 1) for m in range(30)]
    rows = status_at(definitions, series, [10, 11, 15, 16])
    assert rows[10]["burn_rate_5m"] == pytest.approx(0.0)  # evaluated at the start of the bad minute
    assert rows[11]["burn_rate_5m"] == pytest.approx((1 / 5) / 0.1)
    assert rows[15]["burn_rate_5m"] == pytest.approx((1 / 5) / 0.1)  # minutes 10..14
    assert rows[16]["burn_rate_5m"] == pytest.approx(0.0)  # minutes 11..15
    assert rows[16]["burn_rate_30m"] == pytest.approx((1 / 16) / 0.1)  # only 16 minutes exist


def test_page_needs_both_the_long_and_the_short_window():
    definitions = slo("partition_health_minutes", "cluster", target=0.999, window="30d")
    # 60 good hours then a bad 10 minutes that recovered 6 minutes ago: 1h burns 1000*4/60 > 14.4, 5m does not
    series = [(m, 1, 1) for m in range(3600)] + [(m, 0 if m < 3604 else 1, 1) for m in range(3600, 3610)]
    row = status_at(definitions, series, [3610])[3610]
    assert row["burn_rate_1h"] == pytest.approx(4 / 60 * 1000) and row["burn_rate_5m"] == 0.0
    # 6h: 4/360 -> 11.1 > 6 and 30m: 4/30 -> 133 (page); 1d: 4/1440 -> 2.8 < 3 (no ticket_1d_2h);
    # 3d: 4/3610 (all there is) -> 1.1 > 1 and 6h > 1 (ticket_3d_6h)
    assert row["burn_rate_1d"] == pytest.approx(4 / 1440 * 1000)
    assert row["alert_conditions"] == "page_6h_30m,ticket_3d_6h" and row["alert"] == "page"


def test_occurrences_weigh_by_events_and_overrides_change_the_objective_per_entity():
    definitions = parse_definitions({"slos": [{
        "name": "s", "scope": "cluster", "indicator": "probe_produce_availability", "budgetingMethod": "Occurrences",
        "target": 0.99, "timeWindow": "1h", "overrides": [{"entity": "edge", "target": 0.9}]}]})
    series = [(0, 90, 100), (1, 1000, 1000)]
    for entity, objective, burn in (("prod", 0.99, (10 / 1100) / 0.01), ("edge", 0.9, (10 / 1100) / 0.1)):
        row = status_at(definitions, series, [2], entity=entity)[2]
        assert (row["objective"], row["good_events"], row["valid_events"]) == (objective, 1090, 1100)
        assert row["burn_rate_window"] == pytest.approx(burn)
        assert (row["scope"], row["indicator"], row["budgeting_method"], row["window"]) == (
            "cluster", "probe_produce_availability", "Occurrences", "1h")


def test_a_30_day_window_over_8_days_counts_old_minutes_once_and_leaves_them_out_of_the_3_day_window():
    definitions = slo("partition_health_minutes", "cluster", target=0.99, window="30d")
    day = 1440
    bad = {day + 7, 2 * day + 100, 5 * day + 3, 8 * day - 2}  # days 1, 2 (far back), 5 (inside 3d), the last hour
    series = [(m, 0 if m in bad else 1, 1) for m in range(8 * day)]
    row = status_at(definitions, series, [8 * day])[8 * day]
    assert (row["good_events"], row["valid_events"]) == (8 * day - 4, 8 * day)
    assert row["burn_rate_3d"] == pytest.approx((2 / (3 * day)) / 0.01)
    assert row["burn_rate_1d"] == pytest.approx((1 / day) / 0.01)
    assert row["burn_rate_window"] == pytest.approx((4 / (8 * day)) / 0.01)
