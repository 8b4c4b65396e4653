"""Prometheus recording and alerting rules for the same SLOs (as Sloth and Pyrra generate them),
over the metrics kpulse's exporter serves, for users who evaluate SLOs in Prometheus instead.

Per SLO: ``kpulse_slo:bad_sample`` (1 for a bad sample, 0 for a good one), its average over each
burn window (``kpulse_slo:error_ratio_rate5m`` ... ``_rate3d``, long windows averaged from the 5m
series), and the SRE workbook's page and ticket alerts. Differences from the Spark job, by
construction: samples are Prometheus scrapes rather than minutes, a Streams rebalance is not
tolerated, and probe availability averages per-scrape ratios.
"""

from __future__ import annotations

import yaml

from spark_jobs import burn
from spark_jobs.definitions import SloDefinition, SloDefinitions

ENTITY_LABEL = {"cluster": "cluster", "consumer_group": "consumergroup", "streams_app": "application_id",
                "broker": "broker"}
DEFAULT_LAG_SECONDS_THRESHOLD = 60.0
"""The collectors' default ``consumer_groups.lag_seconds_threshold``, used when the SLO sets none."""


def bad_sample(slo: SloDefinition, selector: str, params: dict) -> str:
    """PromQL: 1 when a sample is bad, 0 when good, for the series matching ``selector``."""
    s = f"{{{selector}}}" if selector else ""
    if slo.indicator == "partition_health_minutes":
        return f"clamp_max(kpulse_cluster_offline_partitions{s} + kpulse_cluster_under_min_isr_partitions{s}, 1)"
    if slo.indicator == "broker_saturation_minutes":
        return f"kpulse_broker_request_handler_idle_ratio{s} < bool {params['min_request_handler_idle_ratio']:g}"
    if slo.indicator == "consumer_freshness_minutes":
        threshold = params.get("lag_seconds_threshold") or DEFAULT_LAG_SECONDS_THRESHOLD
        return f"kpulse_consumergroup_lag_seconds{s} > bool {threshold:g}"
    if slo.indicator == "consumer_progress_minutes":
        matchers = ",".join(filter(None, [selector, 'status=~"STOP|STALL|ERR"']))
        return f"sum by (cluster, consumergroup) (kpulse_consumergroup_status{{{matchers}}})"
    if slo.indicator == "streams_availability_minutes":
        return f"1 - kpulse_streams_app_running{s}"
    if slo.indicator == "probe_produce_availability":
        return f"1 - kpulse_probe_produce_availability{s}"
    if slo.indicator == "probe_latency":
        return f"kpulse_probe_latency_p99_ms{s} > bool {params['latency_p99_ms_threshold']:g}"
    raise AssertionError(slo.indicator)


def _variants(slo: SloDefinition) -> list[tuple[str, dict, float]]:
    """(selector, params, target): one per overridden entity, and one for every other entity."""
    label = ENTITY_LABEL[slo.scope]
    variants = [(f'{label}="{o.entity}"', {**slo.params, **o.params}, o.target or slo.target) for o in slo.overrides]
    others = "|".join(o.entity for o in slo.overrides)
    variants.append((f'{label}!~"{others}"' if others else "", dict(slo.params), slo.target))
    return variants


def rule_groups(definitions: SloDefinitions) -> list[dict]:
    groups = []
    for slo in definitions.slos:
        labels = {"slo": slo.name}
        recording = [{"record": "kpulse_slo:bad_sample", "expr": bad_sample(slo, selector, params), "labels": dict(labels)}
                     for selector, params, _ in _variants(slo)]
        series = f'kpulse_slo:bad_sample{{slo="{slo.name}"}}'
        short = f'kpulse_slo:error_ratio_rate5m{{slo="{slo.name}"}}'
        for name, minutes in burn.BURN_WINDOWS.items():
            source = series if minutes <= 360 else short  # long windows from the 5m series (cheaper)
            recording.append({"record": f"kpulse_slo:error_ratio_rate{name}", "labels": dict(labels),
                              "expr": f"avg_over_time({source}[{name}])"})
        alerts = []
        for selector, _, target in _variants(slo):
            for severity in ("page", "ticket"):
                clauses = []
                for c in (c for c in burn.ALERT_CONDITIONS if c.severity == severity):
                    matchers = ",".join(filter(None, [f'slo="{slo.name}"', selector]))
                    limit = f"({c.factor:g} * {1 - target:.6g})"
                    clauses.append(f"(kpulse_slo:error_ratio_rate{c.long_window}{{{matchers}}} > {limit} and "
                                   f"kpulse_slo:error_ratio_rate{c.short_window}{{{matchers}}} > {limit})")
                alerts.append({
                    "alert": f"KpulseSloBurnRate{severity.title()}", "expr": " or ".join(clauses),
                    "labels": {"severity": severity, "slo": slo.name},
                    "annotations": {"summary": f"SLO {slo.name} ({slo.target:g} over {slo.window}) burns its error "
                                               f"budget too fast for {{{{ $labels.{ENTITY_LABEL[slo.scope]} }}}}",
                                    "description": slo.description}})
        groups.append({"name": f"kpulse-slo-{slo.name}-recording", "rules": recording})
        groups.append({"name": f"kpulse-slo-{slo.name}-alerts", "rules": alerts})
    return groups


def rules_yaml(definitions: SloDefinitions) -> str:
    header = (f"# Prometheus rules for the SLOs of {definitions.source}, generated by `kpulse slo export-rules`.\n"
              "# Load with rule_files: in prometheus.yml; check with `promtool check rules FILE`.\n")
    return header + yaml.safe_dump({"groups": rule_groups(definitions)}, sort_keys=False, width=200)
