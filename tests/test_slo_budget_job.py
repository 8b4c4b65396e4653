"""Error budgets through the real SLO job (local Spark) on a small lake, computed by hand: the first
bad minute of a 30-day 99 % Timeslices SLO leaves 431 of 432 bad minutes, a gap in the samples is
coverage only, an Occurrences SLO below its minimum of events does not page; and the SLOs page's
services, the Overview's tile and the Prometheus exporter show the same figures from that lake."""

from __future__ import annotations

import pandas as pd
import pytest

from dashboard.services.health import slo_tile
from dashboard.services.slos import latest_status
from exporters.slo_status import families, latest_rows
from kpulse.lake.reader import read_table
from kpulse.lake.store import LakeWriter
from spark_jobs.definitions import parse_definitions
from spark_jobs.job import run
from tests.slo_spark import at, spark, write_samples  # noqa: F401 - spark: the shared session fixture

MONTH = 30 * 1440


def definitions(min_events=None):
    probe = {"name": "produce-availability", "scope": "cluster", "indicator": "probe_produce_availability",
             "budgetingMethod": "Occurrences", "target": 0.999, "timeWindow": "30d"}
    if min_events is not None:
        probe["minEvents"] = min_events
    return parse_definitions({"lateness": "10m", "slos": [
        {"name": "partition-health", "scope": "cluster", "indicator": "partition_health_minutes",
         "budgetingMethod": "Timeslices", "target": 0.99, "timeWindow": "30d"},
        {"name": "consumer-progress", "scope": "consumer_group", "indicator": "consumer_progress_minutes",
         "budgetingMethod": "Timeslices", "target": 0.99, "timeWindow": "30d"},
        probe]})


def write_probe(lake, minutes, produced=5, errors=5):
    writer = LakeWriter(str(lake))
    for minute in minutes:
        writer.append("probe", [{"time": at(minute, 10), "cluster": "prod", "broker_id": 1, "partition": 0,
                                 "produced": produced, "produce_errors": errors}])
    assert writer.flush().ok


def latest(result):
    return {row["slo"]: row for row in result.latest}


def test_the_first_bad_minute_of_a_30_day_99_percent_slo_leaves_431_of_432_bad_minutes(spark, tmp_path):
    write_samples(tmp_path, [0, 1], offline_at={0})  # the group stopped and a partition offline in minute 0
    write_probe(tmp_path, [0, 1])
    rows = latest(run(spark, str(tmp_path), definitions(), until=at(2).timestamp()))
    health = rows["partition-health"]
    assert (health["bad_slices"], health["allowed_bad_slices"], health["observed_minutes"]) == (1, 432.0, 2)
    assert health["error_budget_remaining"] == pytest.approx(431 / 432)  # 99.77 %, was 1 - 0.5/0.01 = -49
    assert health["coverage"] == pytest.approx(2 / MONTH) and health["budget_status"] == "ok"
    assert health["burn_rate_window"] == pytest.approx(0.5 / 0.01)  # burn rates: still ratios over their windows
    probe = rows["produce-availability"]  # 10 of 20 events bad: burns at 500, but 20 events of 10,000 needed
    assert (probe["valid_events"], probe["min_events"], probe["budget_status"]) == (20, 10_000, "too_few_events")
    assert probe["alert"] is None and probe["burn_rate_5m"] == pytest.approx(500)
    assert probe["error_budget_remaining"] == pytest.approx(1 - 0.5 / 0.001)  # the ratio, kept but not paged on


def test_no_data_minutes_are_coverage_and_the_minimum_of_events_comes_from_the_definitions(spark, tmp_path):
    write_samples(tmp_path, range(0, 20), offline_at={3}, skip=set(range(5, 15)))  # minutes 5..14 without samples
    write_probe(tmp_path, range(0, 20))
    rows = latest(run(spark, str(tmp_path), definitions(min_events=100), until=at(20).timestamp()))
    health = rows["partition-health"]
    assert (health["bad_slices"], health["observed_minutes"]) == (1, 10)
    assert health["error_budget_remaining"] == pytest.approx(431 / 432)  # the 10 no-data minutes spend nothing
    assert health["coverage"] == pytest.approx(10 / MONTH)
    probe = rows["produce-availability"]  # 100 of 200 events bad, the minimum is 100: it pages and is exhausted
    assert (probe["valid_events"], probe["min_events"]) == (200, 100)
    assert probe["alert"] == "page" and probe["budget_status"] == "exhausted"


def test_the_slos_page_the_overview_and_the_exporter_show_the_same_budget(spark, tmp_path):
    write_samples(tmp_path, range(0, 30), offline_at={0, 1, 2})
    write_probe(tmp_path, range(0, 30), produced=10, errors=0)
    run(spark, str(tmp_path), definitions(), until=at(30).timestamp())

    page = latest_status(read_table(str(tmp_path), "slo_status")).set_index(["slo", "entity"])
    served = {}
    for family in families(latest_rows(str(tmp_path))):
        for sample in family.samples:
            key = (sample.labels["slo"], sample.labels["entity"])
            served[(family.name, key, sample.labels.get("status"))] = sample.value
    gauges = {"error_budget_remaining": "kpulse_slo_error_budget_remaining", "bad_slices": "kpulse_slo_bad_timeslices",
              "allowed_bad_slices": "kpulse_slo_allowed_bad_timeslices", "coverage": "kpulse_slo_coverage",
              "min_events": "kpulse_slo_min_events", "valid_events": "kpulse_slo_events"}
    assert len(page) == 3
    for key, row in page.iterrows():
        for column, gauge in gauges.items():
            if pd.isna(row[column]):
                assert (gauge, key, None) not in served, (gauge, key)
            else:
                assert served[(gauge, key, None)] == pytest.approx(float(row[column])), (gauge, key)
        assert served[("kpulse_slo_budget_status", key, row["budget_status"])] == 1.0
    health = page.loc[("partition-health", "prod")]
    assert health["budget"] == "429 of 432 bad minutes left"
    assert served[("kpulse_slo_error_budget_remaining", ("partition-health", "prod"), None)] == pytest.approx(
        429 / 432)
    probe = page.loc[("produce-availability", "prod")]
    assert probe["budget"] == "too few events to page: 300 of 10,000"
    tile = slo_tile(page.reset_index())
    # 3 bad minutes of 30 burn at 10 over the 1h window: no page (14.4), a ticket-free day, nothing exhausted
    assert tile.value == f"{int(page['alert'].notna().sum())} of 3" and "0 budget exhausted" in tile.detail
