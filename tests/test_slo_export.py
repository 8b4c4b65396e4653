"""SLO status reaches Prometheus: the job's newest slo_status rows served over HTTP as gauges; and
the Prometheus recording/alerting rules generated for the same SLOs."""

from __future__ import annotations

import urllib.request

import pytest
import yaml
from prometheus_client import CollectorRegistry, start_http_server

from spark_jobs.definitions import load_definitions, parse_definitions
from exporters.slo_status import SloStatusExporter
from spark_jobs.job import run
from spark_jobs.rules import rule_groups
from tests.slo_spark import DEFINITIONS, at, spark, write_samples  # noqa: F401 - spark: the shared session fixture
from tests.support import free_port


def test_the_newest_status_is_served_as_gauges_and_no_data_is_left_out(spark, tmp_path):
    write_samples(tmp_path, range(0, 30), offline_at={25, 26, 27, 28, 29})
    run(spark, str(tmp_path), DEFINITIONS, until=at(20).timestamp())
    run(spark, str(tmp_path), DEFINITIONS, until=at(30).timestamp())  # newer rows: only these are served
    clock = [at(30).timestamp() + 5]
    registry = CollectorRegistry()
    registry.register(SloStatusExporter(str(tmp_path), clock=lambda: clock[0]))
    port = free_port()
    server, thread = start_http_server(port, addr="127.0.0.1", registry=registry)
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    finally:
        server.shutdown()
    health = 'cluster="prod",entity="prod",slo="partition-health"'
    lines = {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
             if line.startswith("kpulse_slo_")}
    assert lines[f"kpulse_slo_sli{{{health}}}"] == pytest.approx(25 / 30)
    assert lines[f'kpulse_slo_burn_rate{{{health},window="5m"}}'] == pytest.approx(100.0)  # 5 of 5 bad / 0.01
    alert = 'kpulse_slo_alert{{cluster="prod",entity="prod",severity="{}",slo="partition-health"}}'
    assert (lines[alert.format("page")], lines[alert.format("ticket")]) == (1.0, 0.0)
    assert lines[f"kpulse_slo_evaluation_timestamp_seconds{{{health}}}"] == at(30).timestamp()
    assert lines[f"kpulse_slo_objective{{{health}}}"] == 0.99
    # 5 bad minutes of the 14.4 a day at 0.99 allows; at the last hour's burn (5 of 30 minutes bad) the rest lasts
    assert lines[f"kpulse_slo_bad_timeslices{{{health}}}"] == 5
    assert lines[f"kpulse_slo_allowed_bad_timeslices{{{health}}}"] == 14.4
    assert lines[f"kpulse_slo_error_budget_remaining{{{health}}}"] == pytest.approx(1 - 5 / 14.4)
    assert lines[f"kpulse_slo_time_to_exhaustion_seconds{{{health}}}"] == pytest.approx(
        (1 - 5 / 14.4) * 86400 / ((5 / 30) / 0.01))
    assert lines[f"kpulse_slo_coverage{{{health}}}"] == pytest.approx(30 / 1440)
    assert lines[f'kpulse_slo_budget_status{{{health},status="ok"}}'] == 1.0
    # no data is left out, never exported as zero: a Timeslices SLO has no minimum of events
    assert f"kpulse_slo_min_events{{{health}}}" not in lines


def test_generated_rules_cover_every_slo_with_recording_and_both_alert_levels_and_honour_overrides():
    definitions = load_definitions()
    groups = rule_groups(definitions)
    assert len(groups) == 2 * len(definitions.slos)
    health = next(g for g in groups if g["name"] == "kpulse-slo-partition-health-alerts")["rules"]
    page = next(r for r in health if r["labels"]["severity"] == "page")
    assert "kpulse_slo:error_ratio_rate1h{slo=\"partition-health\"} > (14.4 * 0.001)" in page["expr"]
    assert "kpulse_slo:error_ratio_rate30m{slo=\"partition-health\"} > (6 * 0.001)" in page["expr"]
    overridden = parse_definitions({"slos": [{
        "name": "freshness", "scope": "consumer_group", "indicator": "consumer_freshness_minutes",
        "budgetingMethod": "Timeslices", "target": 0.99, "timeWindow": "30d", "params": {"lag_seconds_threshold": 120},
        "overrides": [{"entity": "billing", "target": 0.999, "params": {"lag_seconds_threshold": 30}}]}]})
    recording, alerts = (g["rules"] for g in rule_groups(overridden))
    samples = [r["expr"] for r in recording if r["record"] == "kpulse_slo:bad_sample"]
    assert samples == ['kpulse_consumergroup_lag_seconds{consumergroup="billing"} > bool 30',
                       'kpulse_consumergroup_lag_seconds{consumergroup!~"billing"} > bool 120']
    billing_page = alerts[0]["expr"]
    assert 'consumergroup="billing"' in billing_page and "(14.4 * 0.001)" in billing_page
    assert "(14.4 * 0.01)" in alerts[2]["expr"] and 'consumergroup!~"billing"' in alerts[2]["expr"]
    yaml.safe_load(yaml.safe_dump({"groups": rule_groups(overridden)}))


def test_an_unreadable_status_file_is_skipped_and_the_others_are_served(tmp_path):
    from kpulse.lake.store import LakeWriter
    from exporters.slo_status import latest_rows

    writer = LakeWriter(str(tmp_path))
    writer.append("slo_status", [{"time": at(10), "cluster": "prod", "slo": "partition-health", "entity": "prod",
                                  "sli": 0.9}])
    assert writer.flush().ok
    [good] = (tmp_path / "slo_status").rglob("*.parquet")
    (good.parent / "part-zzz-0badf11e.parquet").write_bytes(b"PAR1 truncated")
    assert [(r["slo"], r["sli"]) for r in latest_rows(str(tmp_path))] == [("partition-health", 0.9)]


def _freshness_with_overrides(*entities: str):
    return parse_definitions({"slos": [{
        "name": "freshness", "scope": "consumer_group", "indicator": "consumer_freshness_minutes",
        "budgetingMethod": "Timeslices", "target": 0.99, "timeWindow": "30d",
        "overrides": [{"entity": entity, "target": 0.999} for entity in entities]}]})


def test_override_rules_are_told_apart_by_a_label_so_no_two_rules_record_the_same_series():
    """promtool's duplicate-rules lint (``--lint-fatal``): two rules of one name with the same
    labels may write the same series; the override's rules carry ``slo_override``."""
    recording, alerts = (g["rules"] for g in rule_groups(_freshness_with_overrides("billing")))
    keys = [(r.get("record") or r.get("alert"), tuple(sorted(r["labels"].items()))) for r in recording + alerts]
    assert len(keys) == len(set(keys))
    billing = [r for r in recording + alerts if 'consumergroup="billing"' in r["expr"]]
    assert billing and all(r["labels"]["slo_override"] == "billing" for r in billing)


def test_override_entities_are_quoted_and_matched_literally_in_the_other_entities_regex():
    """A group id with regex or PromQL metacharacters: its own rule selects exactly it, and the rule
    of every other entity leaves exactly it out (Prometheus anchors ``=~``/``!~`` regexes)."""
    import json
    import re

    odd = ['team+x.v1', 'a"b\\c', "(x|y)"]
    recording, _ = (g["rules"] for g in rule_groups(_freshness_with_overrides(*odd)))
    samples = [r["expr"] for r in recording if r["record"] == "kpulse_slo:bad_sample"]
    for entity, expr in zip(odd, samples):
        assert f"{{consumergroup={json.dumps(entity)}}}" in expr
    others = re.search(r'consumergroup!~("(?:\\.|[^"\\])*")', samples[-1]).group(1)
    pattern = re.compile(f"^(?:{json.loads(others)})$")
    assert all(pattern.match(entity) for entity in odd)
    assert not any(pattern.match(other) for other in ("teamx.v1", "teamxx.v1", "team+xav1", "x", "ab\\c"))
