"""The alert rules of :mod:`alerting.state` as a Prometheus rule file (PromQL); pure, no I/O but
:func:`write_rules`.

For deployments that alert from Prometheus rather than from kpulse itself (the compose stack:
this file supersedes the draft ``docker/prometheus/alerts.yml``). Broker rules read the brokers' JMX
exporter metrics (``localkafka/java/jmx-exporter-broker.yaml``), selected by ``job="<job_label>"``;
the Streams ERROR rule reads the Streams JMX exporter (``jmx-exporter-streams.yaml``); the rest read
kpulse's own exporter (``kpulse_*``, ``kafka_consumergroup_*``), whose series carry a ``cluster``
label.

Mapping: every Prometheus rule's ``alert`` is the name of a kpulse rule, and every kpulse rule has
at least one Prometheus rule. A kpulse rule whose findings escalate has one Prometheus rule per
severity (same ``alert`` name, different ``labels.severity``); ``for`` is the kpulse hold. Where
PromQL cannot say the same thing, the difference is on purpose:

=========================  ========  ==========================================================
alert                      severity  expression (differences from the kpulse rule)
=========================  ========  ==========================================================
UnderReplicatedPartitions  warning   ``sum by (cluster) (…underreplicatedpartitions) > 0``
OfflinePartitions          critical  ``max by (cluster) (…offlinepartitionscount) > 0``
UnderMinIsrPartitions      critical  ``sum by (cluster) (…underminisrpartitioncount) > 0``
ActiveControllerCount      critical  ``sum by (cluster) (…activecontrollercount) != 1``; absent
                                     when no controller exports it (BrokerDown covers that)
RequestHandlerIdleLow      warning   idle (counter rate) ``< 0.2 and >= 0.1``: Prometheus has no
                                     inhibition, so a band instead
RequestHandlerIdleCritical critical  idle ``< 0.1``
BrokerDown                 critical  ``up{job} == 0``: the metrics endpoint, not the metadata
ConsumerGroupStatus        warning   ``kpulse_consumergroup_status{status=~"STOP|STALL"} == 1``
ConsumerGroupStatus        critical  ``…{status="ERR"} == 1``
ConsumerGroupLagSeconds    warning   ``kpulse_consumergroup_lag_seconds > threshold``: thresholds
                                     are parameters (default + per-group overrides, one rule each,
                                     label ``lag_seconds_threshold``)
(both group rules)                   ``… unless on (cluster, consumergroup)
                                     kpulse_consumergroup_expected_idle == 1``: an expected-idle
                                     group fires neither
ShareGroupNotAcknowledging warning   ``kpulse_sharegroup_status{status=~"STALLED|NOT_CONSUMING"} == 1``
StreamsAppNotRunning       warning   ``kpulse_streams_app_running == 0``
StreamsAppNotRunning       critical  Streams JMX ``client_state >= 5`` (PENDING_ERROR, ERROR) on
                                     any instance
ProbeFailing               critical  ``kpulse_probe_produce_availability < 1`` (produce only)
CollectorDown              warning   ``kpulse_collector_up == 0``
KpulseNotAuthorized        warning   ``kpulse_not_authorized_values > 0`` (per area)
CollectorDown              warning   ``up{job=<kpulse_job>} == 0``: kpulse's exporter itself
                                     (label ``collector: exporter``)
MetadataErrors             critical  ``…metadataerrorcount{job} > 0``, per node
FencedBrokers              critical  ``max by (cluster) (…fencedbrokercount{job}) > 0``: every
                                     controller's view, not only the active one's
VoterLagging               warning   from the nodes' own raft metrics (no per-voter series):
                                     ``max by (cluster) (raft log_end_offset) - on (cluster)
                                     group_right raft log_end_offset > records``, or the node's
                                     ``lastappliedrecordlagms > seconds × 1000``; observers
                                     (broker-only nodes) count too, a stopped voter has no
                                     series (BrokerDown covers it)
=========================  ========  ==========================================================
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from collections.abc import Mapping

import yaml

from alerting import rules as alert_rules
from alerting.runbooks import runbook_text
from alerting.state import CRITICAL, WARNING, rule_by_name
from kpulse.config.model import DEFAULT_VOTER_LAG_RECORDS, DEFAULT_VOTER_LAG_SECONDS
from kpulse.lag_contract import DEFAULT_LAG_SECONDS_THRESHOLD
from kpulse.share_contract import NOT_ACKNOWLEDGING

GROUP_NAME = "kpulse"
DEFAULT_JOB_LABEL = "kafka"
DEFAULT_KPULSE_JOB_LABEL = "kpulse"
RATE_WINDOW = "2m"
"""Range of ``rate()``: at least two scrapes at intervals up to 1 min."""
HEADER = ("# Prometheus alert rules generated by `kpulse alerts export-rules` from alerting/rules.py.\n"
          "# Do not edit: regenerate. Runbooks are in the `runbook` annotation.\n")

URP = "kafka_server_replicamanager_underreplicatedpartitions"
UNDER_MIN_ISR = "kafka_server_replicamanager_underminisrpartitioncount"
OFFLINE = "kafka_controller_kafkacontroller_offlinepartitionscount"
ACTIVE_CONTROLLER = "kafka_controller_kafkacontroller_activecontrollercount"
IDLE_NANOS = "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_idle_nanoseconds_total"
STREAMS_CLIENT_STATE = "kafka_streams_stream_metrics_client_state"
GROUP_STATUS = "kpulse_consumergroup_status"
GROUP_LAG_SECONDS = "kpulse_consumergroup_lag_seconds"
GROUP_EXPECTED_IDLE = "kpulse_consumergroup_expected_idle"
NOT_EXPECTED_IDLE = f" unless on (cluster, consumergroup) {GROUP_EXPECTED_IDLE} == 1"
"""Appended to the group rules: a group expected to be idle fires neither, as in ``alerting/rules.py``."""
STREAMS_RUNNING = "kpulse_streams_app_running"
SHARE_GROUP_STATUS = "kpulse_sharegroup_status"
PROBE_PRODUCE = "kpulse_probe_produce_availability"
COLLECTOR_UP = "kpulse_collector_up"
NOT_AUTHORIZED = "kpulse_not_authorized_values"
METADATA_ERRORS = "kafka_controller_kafkacontroller_metadataerrorcount"
FENCED_BROKERS = "kafka_controller_kafkacontroller_fencedbrokercount"
APPLY_LAG_MS = "kafka_controller_kafkacontroller_lastappliedrecordlagms"
RAFT_LOG_END = "kafka_server_raft_metrics_log_end_offset"


@dataclass(frozen=True)
class PrometheusAlert:
    """One Prometheus alerting rule."""

    alert: str
    """A kpulse rule name."""
    expr: str
    severity: str
    for_seconds: float
    summary: str
    """Go template: ``{{ $labels.x }}``, ``{{ $value }}``."""
    labels: tuple[tuple[str, str], ...] = ()
    """Labels besides ``severity``: they tell apart rules with the same alert name and severity."""

    def to_dict(self) -> dict[str, Any]:
        return {"alert": self.alert, "expr": self.expr, "for": duration(self.for_seconds),
                "labels": {"severity": self.severity, **dict(self.labels)},
                "annotations": {"summary": self.summary, "runbook": runbook_text(self.alert)}}


def duration(seconds: float) -> str:
    """A Prometheus duration: ``0s``, ``90s``, ``1m``, ``2h``."""
    whole = int(seconds)
    if whole != seconds or whole < 0:
        raise ValueError(f"hold must be whole, non-negative seconds, got {seconds}")
    for unit, size in (("h", 3600), ("m", 60)):
        if whole and whole % size == 0:
            return f"{whole // size}{unit}"
    return f"{whole}s"


def promql_string(value: str) -> str:
    """A double-quoted PromQL string literal (Go escapes)."""
    return json.dumps(value, ensure_ascii=False)


def _hold(rule_name: str) -> float:
    return rule_by_name(rule_name).for_seconds


def prometheus_alerts(job_label: str = DEFAULT_JOB_LABEL, *, kpulse_job_label: str = DEFAULT_KPULSE_JOB_LABEL,
                      lag_seconds_threshold: float = DEFAULT_LAG_SECONDS_THRESHOLD,
                      lag_seconds_overrides: Mapping[str, float] | None = None,
                      voter_lag_records: int = DEFAULT_VOTER_LAG_RECORDS,
                      voter_lag_seconds: float = DEFAULT_VOTER_LAG_SECONDS) -> list[PrometheusAlert]:
    """The rules in the order of :data:`alerting.rules.RULES` (see the module doc)."""
    if not job_label or not kpulse_job_label:
        raise ValueError("job labels must not be empty")
    job = "{job=" + promql_string(job_label) + "}"
    idle = f"rate({IDLE_NANOS}{job}[{RATE_WINDOW}]) / 1e9"
    broker = "{{ $labels.broker_id }} ({{ $labels.instance }})"
    in_cluster = "in cluster {{ $labels.cluster }}"
    overrides = dict(lag_seconds_overrides or {})

    rules = [
        PrometheusAlert("UnderReplicatedPartitions", f"sum by (cluster) ({URP}{job}) > 0", WARNING,
                        _hold("UnderReplicatedPartitions"),
                        "{{ $value }} under-replicated partitions " + in_cluster),
        PrometheusAlert("OfflinePartitions", f"max by (cluster) ({OFFLINE}{job}) > 0", CRITICAL,
                        _hold("OfflinePartitions"),
                        "{{ $value }} offline partitions (no leader) " + in_cluster + ": clients fail now"),
        PrometheusAlert("UnderMinIsrPartitions", f"sum by (cluster) ({UNDER_MIN_ISR}{job}) > 0", CRITICAL,
                        _hold("UnderMinIsrPartitions"),
                        "{{ $value }} partitions below min.insync.replicas " + in_cluster
                        + ": acks=all producers fail"),
        PrometheusAlert("ActiveControllerCount",
                        f"sum by (cluster) ({ACTIVE_CONTROLLER}{job}) != {alert_rules.EXPECTED_ACTIVE_CONTROLLERS}",
                        CRITICAL, _hold("ActiveControllerCount"),
                        "{{ $value }} active controllers " + in_cluster + " (must be 1)"),
        PrometheusAlert("RequestHandlerIdleLow",
                        f"{idle} < {alert_rules.IDLE_WARNING_BELOW} and {idle} >= {alert_rules.IDLE_CRITICAL_BELOW}",
                        WARNING, _hold("RequestHandlerIdleLow"),
                        "broker " + broker + " request handlers are only {{ $value | humanizePercentage }} idle"),
        PrometheusAlert("RequestHandlerIdleCritical", f"{idle} < {alert_rules.IDLE_CRITICAL_BELOW}", CRITICAL,
                        _hold("RequestHandlerIdleCritical"),
                        "broker " + broker + " request handlers are only {{ $value | humanizePercentage }} idle:"
                        " requests are queueing"),
        PrometheusAlert("BrokerDown", f"up{job} == 0", CRITICAL, _hold("BrokerDown"),
                        "Kafka node " + broker + " is not serving metrics (down, or its exporter is)"),
        PrometheusAlert("ConsumerGroupStatus",
                        GROUP_STATUS + "{status=~" + promql_string("|".join(alert_rules.CONSUMER_WARNING_STATUSES))
                        + "} == 1" + NOT_EXPECTED_IDLE, WARNING, _hold("ConsumerGroupStatus"),
                        "consumer group {{ $labels.consumergroup }} is {{ $labels.status }} " + in_cluster),
        PrometheusAlert("ConsumerGroupStatus",
                        GROUP_STATUS + "{status=~" + promql_string("|".join(alert_rules.CONSUMER_CRITICAL_STATUSES))
                        + "} == 1" + NOT_EXPECTED_IDLE, CRITICAL, _hold("ConsumerGroupStatus"),
                        "consumer group {{ $labels.consumergroup }} is {{ $labels.status }} " + in_cluster
                        + ": offsets stuck for a long time"),
    ]
    excluded = ",".join(f"consumergroup!={promql_string(group)}" for group in sorted(overrides))
    thresholds = [("{" + excluded + "}" if excluded else "", lag_seconds_threshold)]
    thresholds += [("{consumergroup=" + promql_string(group) + "}", overrides[group]) for group in sorted(overrides)]
    for selector, threshold in thresholds:
        rules.append(PrometheusAlert(
            "ConsumerGroupLagSeconds", f"{GROUP_LAG_SECONDS}{selector} > {threshold:g}{NOT_EXPECTED_IDLE}", WARNING,
            _hold("ConsumerGroupLagSeconds"),
            "consumer group {{ $labels.consumergroup }} is {{ $value | humanizeDuration }} behind"
            f" (threshold {threshold:g} s) " + in_cluster, labels=(("lag_seconds_threshold", f"{threshold:g}"),)))
    error_code = min(alert_rules.STREAMS_CLIENT_STATE_CODES[state] for state in alert_rules.STREAMS_ERROR_STATES)
    rules += [
        PrometheusAlert("ShareGroupNotAcknowledging",
                        SHARE_GROUP_STATUS + "{status=~" + promql_string("|".join(NOT_ACKNOWLEDGING)) + "} == 1",
                        WARNING, _hold("ShareGroupNotAcknowledging"),
                        "share group {{ $labels.sharegroup }} is {{ $labels.status }} " + in_cluster
                        + ": records wait and nothing is acknowledged"),
        PrometheusAlert("StreamsAppNotRunning", f"{STREAMS_RUNNING} == 0", WARNING, _hold("StreamsAppNotRunning"),
                        "Streams app {{ $labels.application_id }} " + in_cluster + " is not RUNNING"),
        PrometheusAlert("StreamsAppNotRunning",
                        f"max by (application_id) ({STREAMS_CLIENT_STATE}) >= {error_code}", CRITICAL, 0.0,
                        "Streams app {{ $labels.application_id }} has an instance in ERROR: its threads died"),
        PrometheusAlert("ProbeFailing", f"{PROBE_PRODUCE} < 1", CRITICAL, _hold("ProbeFailing"),
                        "end-to-end probe " + in_cluster + ": produce availability {{ $value | humanizePercentage }}"),
        PrometheusAlert("KpulseNotAuthorized", f"{NOT_AUTHORIZED} > 0", WARNING, _hold("KpulseNotAuthorized"),
                        "kpulse's principal " + in_cluster + " may not read {{ $value }} value(s) in "
                        "{{ $labels.area }}: see the dashboard for each ACL missing"),
        PrometheusAlert("CollectorDown", f"{COLLECTOR_UP} == 0", WARNING, _hold("CollectorDown"),
                        "kpulse collector {{ $labels.collector }} " + in_cluster + " is down: its data is missing"),
        PrometheusAlert("CollectorDown", "up{job=" + promql_string(kpulse_job_label) + "} == 0", WARNING,
                        _hold("CollectorDown"),
                        "kpulse's exporter ({{ $labels.instance }}) is not answering: every kpulse metric is missing",
                        labels=(("collector", "exporter"),)),
        PrometheusAlert("MetadataErrors", f"{METADATA_ERRORS}{job} > 0", CRITICAL, _hold("MetadataErrors"),
                        "KRaft node " + broker + " met {{ $value }} errors loading or applying the metadata log"),
        PrometheusAlert("FencedBrokers", f"max by (cluster) ({FENCED_BROKERS}{job}) > 0", CRITICAL,
                        _hold("FencedBrokers"), "{{ $value }} fenced brokers " + in_cluster),
        PrometheusAlert("VoterLagging",
                        f"(max by (cluster) ({RAFT_LOG_END}{job}) - on (cluster) group_right {RAFT_LOG_END}{job})"
                        f" > {voter_lag_records} or {APPLY_LAG_MS}{job} > {voter_lag_seconds * 1000:g}", WARNING,
                        _hold("VoterLagging"),
                        "KRaft node " + broker + " is behind the metadata quorum leader ({{ $value }} records, or"
                        " ms since its last applied record)"),
    ]
    return rules


def prometheus_rules(job_label: str = DEFAULT_JOB_LABEL, **options: Any) -> dict[str, Any]:
    """A Prometheus rule file: ``{"groups": [{"name": "kpulse", "rules": [...]}]}``. ``options`` are
    the keyword arguments of :func:`prometheus_alerts`."""
    return {"groups": [{"name": GROUP_NAME,
                        "rules": [rule.to_dict() for rule in prometheus_alerts(job_label, **options)]}]}


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (the runbooks) as literal blocks, so the file reads like the runbook."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def export_rules_yaml(job_label: str = DEFAULT_JOB_LABEL, **options: Any) -> str:
    """The rule file as YAML text (what ``kpulse alerts export-rules`` prints)."""
    body = yaml.dump(prometheus_rules(job_label, **options), Dumper=_Dumper, sort_keys=False,
                     allow_unicode=True, width=120)
    return HEADER + body


def write_rules(path: str | Path, job_label: str = DEFAULT_JOB_LABEL, **options: Any) -> Path:
    """Write the rule file to ``path``; returns the path."""
    path = Path(path)
    path.write_text(export_rules_yaml(job_label, **options), encoding="utf-8")
    return path
