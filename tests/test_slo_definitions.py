"""SLO definitions YAML: the shipped defaults load, every wrong or missing field is refused with its
path, overrides apply per entity; and the run planner picks the minutes to recompute."""

from __future__ import annotations

import copy

import pytest

from spark_jobs.definitions import (DEFAULT_DEFINITIONS, SloDefinitionError, duration_minutes, load_definitions,
                                    parse_definitions)
from spark_jobs.job import plan_run

FRESHNESS = {"name": "freshness", "scope": "consumer_group", "indicator": "consumer_freshness_minutes",
             "budgetingMethod": "Timeslices", "timeSliceTarget": 1.0, "target": 0.99, "timeWindow": "30d",
             "params": {"lag_seconds_threshold": 120},
             "overrides": [{"entity": "billing", "target": 0.999, "params": {"lag_seconds_threshold": 30}}]}


def document(**changes) -> dict:
    slo = copy.deepcopy(FRESHNESS)
    for key, value in changes.items():
        if value is None:
            slo.pop(key)
        else:
            slo[key] = value
    return {"lateness": "5m", "slos": [slo]}


def test_the_shipped_defaults_cover_the_issue_list_with_the_tables_the_collectors_write():
    definitions = load_definitions(DEFAULT_DEFINITIONS)
    indicators = {slo.indicator for slo in definitions.slos}
    assert indicators == {"probe_produce_availability", "probe_latency", "partition_health_minutes",
                          "consumer_freshness_minutes", "consumer_progress_minutes",
                          "streams_availability_minutes", "broker_saturation_minutes"}
    assert set(definitions.tables) == {"probe", "cluster_health", "consumer_group", "streams_instance",
                                       "broker_metrics"}
    assert definitions.lateness_minutes == 10 and definitions.longest_window_minutes == 30 * 1440


def test_overrides_change_target_and_params_for_one_entity_only():
    slo = parse_definitions(document()).slos[0]
    assert slo.params == {"lag_seconds_threshold": 120.0}
    billing = slo.override("billing")
    assert (billing.target, billing.params["lag_seconds_threshold"]) == (0.999, 30.0)
    assert slo.override("payments") is None
    assert (slo.window, slo.window_minutes, slo.target) == ("30d", 43200, 0.99)


@pytest.mark.parametrize("changes,message", [
    pytest.param({"target": None}, r"^slos\[0\]\.target: required field is missing", id="missing-target"),
    pytest.param({"timeWindow": None}, r"^slos\[0\]\.timeWindow: required", id="missing-window"),
    pytest.param({"target": 1.0}, r"^slos\[0\]\.target: must be a number above 0 and below 1", id="target-1"),
    pytest.param({"target": "99%"}, r"^slos\[0\]\.target: must be a number", id="target-text"),
    pytest.param({"timeWindow": "30 days"}, r"^slos\[0\]\.timeWindow: must be a duration", id="bad-duration"),
    pytest.param({"timeWindow": "30m"}, r"^slos\[0\]\.timeWindow: must be at least 1h", id="window-too-short"),
    pytest.param({"budgetingMethod": "Occurences"}, r"^slos\[0\]\.budgetingMethod: .*did you mean 'Occurrences'",
                 id="typo-method"),
    pytest.param({"budgetingMethod": "RatioTimeslices"}, r"^slos\[0\]\.budgetingMethod: RatioTimeslices is not",
                 id="ratio-timeslices"),
    pytest.param({"budgetingMethod": "Occurrences"}, r"^slos\[0\]\.timeSliceTarget: only for budgetingMethod",
                 id="slice-target-without-timeslices"),
    pytest.param({"indicator": "consumer_freshness"}, r"^slos\[0\]\.indicator: .*did you mean "
                 r"'consumer_freshness_minutes'", id="unknown-indicator"),
    pytest.param({"scope": "broker"}, r"^slos\[0\]\.scope: indicator consumer_freshness_minutes is about a "
                 r"consumer_group", id="scope-mismatch"),
    pytest.param({"objective": 0.9}, r"^slos\[0\]\.objective: unknown field", id="unknown-field"),
    pytest.param({"params": {"lag_threshold": 3}}, r"^slos\[0\]\.params\.lag_threshold: unknown field.*did you mean",
                 id="unknown-param"),
    pytest.param({"params": {"lag_seconds_threshold": -1}}, r"^slos\[0\]\.params\.lag_seconds_threshold: must be",
                 id="negative-param"),
    pytest.param({"name": "Consumer Freshness"}, r"^slos\[0\]\.name: must be lowercase", id="bad-name"),
    pytest.param({"overrides": [{"entity": "billing"}]}, r"^slos\[0\]\.overrides\[0\]: overrides nothing",
                 id="empty-override"),
    pytest.param({"overrides": [{"entity": "a", "target": 0.9}, {"entity": "a", "target": 0.8}]},
                 r"^slos\[0\]\.overrides\[1\]\.entity: 'a' is overridden twice", id="override-twice"),
    pytest.param({"overrides": [{"entity": "a", "objective": 0.9}]},
                 r"^slos\[0\]\.overrides\[0\]\.objective: unknown field", id="override-unknown-field"),
    pytest.param({"overrides": [{"target": 0.9}]}, r"^slos\[0\]\.overrides\[0\]\.entity: required",
                 id="override-without-entity"),
])
def test_a_wrong_or_missing_field_is_refused_naming_the_field(changes, message):
    with pytest.raises(SloDefinitionError, match=message):
        parse_definitions(document(**changes))


def test_top_level_problems_name_their_field():
    with pytest.raises(SloDefinitionError, match=r"^slos: must be a non-empty list"):
        parse_definitions({"slos": []})
    with pytest.raises(SloDefinitionError, match=r"^lateness: must be a duration"):
        parse_definitions({**document(), "lateness": 10})
    with pytest.raises(SloDefinitionError, match=r"^slo: unknown field; did you mean 'slos'"):
        parse_definitions({"slo": []})
    with pytest.raises(SloDefinitionError, match=r"^slos\[1\]\.name: duplicate SLO name 'freshness'"):
        parse_definitions({"slos": [FRESHNESS, FRESHNESS]})


def test_a_file_that_is_not_yaml_or_missing_is_one_line_naming_the_file(tmp_path):
    broken = tmp_path / "slos.yaml"
    broken.write_text("slos: [\n  - name: x\n  bad")
    with pytest.raises(SloDefinitionError, match="not valid YAML") as caught:
        load_definitions(broken)
    assert caught.value.source == str(broken) and "\n" not in str(caught.value)
    with pytest.raises(SloDefinitionError, match="cannot read SLO definitions"):
        load_definitions(tmp_path / "absent.yaml")


@pytest.mark.parametrize("text,minutes", [("5m", 5), ("6h", 360), ("30d", 43200), ("1w", 10080)])
def test_durations(text, minutes):
    assert duration_minutes(text, "x") == minutes


DAY = 1440


@pytest.mark.parametrize("until,previous,earliest,whole_day,expected", [
    pytest.param(20 * DAY + 90, None, 3 * DAY + 500, False, (3 * DAY, 20 * DAY + 90),
                 id="first-run-from-the-first-day"),
    pytest.param(20 * DAY + 150, 20 * DAY + 130, 3 * DAY, False, (20 * DAY + 120, 20 * DAY + 150),
                 id="update-from-its-hour"),
    pytest.param(20 * DAY + 130, 20 * DAY + 125, 3 * DAY, False, (20 * DAY + 60, 20 * DAY + 130),
                 id="lateness-reaches-back-over-the-hour"),
    pytest.param(20 * DAY + 5, 20 * DAY + 3, 3 * DAY, False, (20 * DAY - 60, 20 * DAY + 5),
                 id="lateness-reaches-back-over-midnight"),
    pytest.param(20 * DAY + 90, 20 * DAY + 90, 3 * DAY, False, (20 * DAY + 60, 20 * DAY + 90),
                 id="rerun-recomputes-the-same"),
    pytest.param(20 * DAY + 150, 20 * DAY + 130, 3 * DAY, True, (20 * DAY, 20 * DAY + 150),
                 id="a-day-written-whole-from-its-midnight"),
])
def test_plan_recomputes_from_the_hour_before_the_previous_run_minus_lateness(until, previous, earliest, whole_day,
                                                                              expected):
    plan = plan_run(until, previous, earliest, lateness_minutes=10, longest_window_minutes=30 * DAY,
                    whole_day=whole_day)
    assert (plan.start, plan.end) == expected
    assert plan.lookback_start == plan.start - 30 * DAY - 1
    assert plan.first == (earliest if previous is None else plan.start)


def test_plan_is_none_when_no_complete_minute_is_newer():
    assert plan_run(3 * DAY, None, 3 * DAY, lateness_minutes=10, longest_window_minutes=DAY) is None


def test_every_indicator_reads_columns_its_lake_table_has_and_judges_an_empty_table():
    """An indicator is one entry of ``spark_jobs.indicators.INDICATORS``: its table and columns are
    the lake's (``kpulse.lake.schema``), and its sampler turns no rows into no samples."""
    import pyarrow as pa

    from kpulse.lake.schema import SCHEMAS
    from spark_jobs.definitions import parse_definitions
    from spark_jobs.indicators import INDICATORS
    from spark_jobs.sampling import SAMPLE_SCHEMA

    for name, indicator in INDICATORS.items():
        schema = SCHEMAS[indicator.table]
        assert set(indicator.columns) | {"time", "cluster"} <= set(schema.names), name
        slo = parse_definitions({"slos": [{"name": "x", "scope": indicator.scope, "indicator": name,
                                           "budgetingMethod": "Timeslices", "target": 0.99, "timeWindow": "1d"}]}).slos[0]
        empty = pa.table({c: pa.array([], schema.field(c).type) for c in ("time", "cluster", *indicator.columns)})
        sampled = indicator.sampler(empty, slo)
        assert sampled.num_rows == 0 and sampled.schema.names == SAMPLE_SCHEMA.names, name
        assert "kpulse_" in indicator.bad_sample("", dict(slo.params)), name
