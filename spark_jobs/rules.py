"""Prometheus recording and alerting rules for the same SLOs (as Sloth and Pyrra generate them),
over the metrics kpulse's exporter serves, for users who evaluate SLOs in Prometheus instead.

Per SLO: ``kpulse_slo:bad_sample`` (1 for a bad sample, 0 for a good one), its average over each
burn window (``kpulse_slo:error_ratio_rate5m`` ... ``_rate3d``, long windows averaged from the 5m
series), and the SRE workbook's page and ticket alerts at the factors of the SLO's window (the
job's, ``burn.AlertCondition.factor``). Differences from the Spark job, by
construction: samples are Prometheus scrapes rather than minutes, a Streams rebalance is not
tolerated, and probe availability averages per-scrape ratios.
"""

from __future__ import annotations

import json
import re

import numpy as np
import yaml

from spark_jobs import burn
from spark_jobs.definitions import SloDefinition, SloDefinitions
from spark_jobs.indicators import INDICATORS

ENTITY_LABEL = {"cluster": "cluster", "consumer_group": "consumergroup", "streams_app": "application_id",
                "broker": "broker"}


def bad_sample(slo: SloDefinition, selector: str, params: dict) -> str:
    """PromQL: 1 when a sample is bad, 0 when good, for the series matching ``selector``."""
    return INDICATORS[slo.indicator].bad_sample(f"{{{selector}}}" if selector else "", params)


OVERRIDE_LABEL = "slo_override"
"""Label of the rules of an overridden entity (its id): without it, the override's rules and the
other entities' rules would share name and labels (promtool's duplicate-rules lint)."""
_RE2_SPECIAL = re.compile(r"([\\.+*?()|\[\]{}^$])")


def promql_string(value: str) -> str:
    """A double-quoted PromQL string literal (Go escapes)."""
    return json.dumps(value, ensure_ascii=False)


def literal_regex(value: str) -> str:
    """An RE2 regex matching exactly ``value`` (Prometheus anchors it)."""
    return _RE2_SPECIAL.sub(r"\\\1", value)


def factor_text(factor: float) -> str:
    """A burn-rate factor as Sloth writes it in its rules (Go's shortest form: 14.4, 6,
    0.9333333333333333), so that the rules compare with the SLO job's factor exactly."""
    return np.format_float_positional(factor, trim="-")


def _variants(slo: SloDefinition) -> list[tuple[str, dict, float, dict]]:
    """(selector, params, target, extra labels): one per overridden entity, and one for every other
    entity."""
    label = ENTITY_LABEL[slo.scope]
    variants = [(f"{label}={promql_string(o.entity)}", {**slo.params, **o.params}, o.target or slo.target,
                 {OVERRIDE_LABEL: o.entity}) for o in slo.overrides]
    others = "|".join(literal_regex(o.entity) for o in slo.overrides)
    variants.append((f"{label}!~{promql_string(others)}" if others else "", dict(slo.params), slo.target, {}))
    return variants


def rule_groups(definitions: SloDefinitions) -> list[dict]:
    groups = []
    for slo in definitions.slos:
        labels = {"slo": slo.name}
        recording = [{"record": "kpulse_slo:bad_sample", "expr": bad_sample(slo, selector, params),
                      "labels": {**labels, **extra}} for selector, params, _, extra in _variants(slo)]
        series = f'kpulse_slo:bad_sample{{slo="{slo.name}"}}'
        short = f'kpulse_slo:error_ratio_rate5m{{slo="{slo.name}"}}'
        for name, minutes in burn.BURN_WINDOWS.items():
            source = series if minutes <= 360 else short  # long windows from the 5m series (cheaper)
            recording.append({"record": f"kpulse_slo:error_ratio_rate{name}", "labels": dict(labels),
                              "expr": f"avg_over_time({source}[{name}])"})
        alerts = []
        for selector, _, target, extra in _variants(slo):
            for severity in ("page", "ticket"):
                clauses = []
                for c in (c for c in burn.ALERT_CONDITIONS if c.severity == severity):
                    matchers = ",".join(filter(None, [f'slo="{slo.name}"', selector]))
                    limit = f"({factor_text(float(c.factor(slo.window_minutes)))} * {1 - target:.6g})"
                    clauses.append(f"(kpulse_slo:error_ratio_rate{c.long_window}{{{matchers}}} > {limit} and "
                                   f"kpulse_slo:error_ratio_rate{c.short_window}{{{matchers}}} > {limit})")
                alerts.append({
                    "alert": f"KpulseSloBurnRate{severity.title()}", "expr": " or ".join(clauses),
                    "labels": {"severity": severity, "slo": slo.name, **extra},
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
