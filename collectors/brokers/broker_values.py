"""One broker's metric values (the ``broker_metrics`` section and lake row) and how they are
computed from samples of the JMX exporter's metrics; pure, no I/O. The collector is
:mod:`collectors.brokers.broker_metrics`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypedDict

from kpulse import prom_text

NOT_CONFIGURED = "broker metrics are not configured (metrics.source: none)"
FIRST_SAMPLE = "first sample: rate needs two"
CONTROLLER_ONLY = "not exported: only controller-role nodes have it"

IDLE_NANOS = "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_idle_nanoseconds_total"
"""Idle nanoseconds per request handler thread: delta / 1e9 / elapsed seconds = idle fraction."""
IDLE_ONE_MINUTE = "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent"
"""The meter's OneMinuteRate: the idle fraction, smoothed; used until two counter readings exist."""
NETWORK_IDLE = "kafka_network_socketserver_networkprocessoravgidlepercent"
TRAFFIC_COUNTERS = {
    "bytes_in_per_sec": "kafka_server_brokertopicmetrics_bytesinpersec_total",
    "bytes_out_per_sec": "kafka_server_brokertopicmetrics_bytesoutpersec_total",
    "messages_in_per_sec": "kafka_server_brokertopicmetrics_messagesinpersec_total",
}
TRAFFIC_TOTALS = {
    "bytes_in_total": TRAFFIC_COUNTERS["bytes_in_per_sec"],
    "bytes_out_total": TRAFFIC_COUNTERS["bytes_out_per_sec"],
    "messages_in_total": TRAFFIC_COUNTERS["messages_in_per_sec"],
}
"""The same counters' counts since the broker started: exported as counters, for Prometheus' ``rate()``."""
COUNT_GAUGES = {
    "under_replicated_partitions": "kafka_server_replicamanager_underreplicatedpartitions",
    "under_min_isr_partitions": "kafka_server_replicamanager_underminisrpartitioncount",
    "partition_count": "kafka_server_replicamanager_partitioncount",
    "leader_count": "kafka_server_replicamanager_leadercount",
    "offline_partitions": "kafka_controller_kafkacontroller_offlinepartitionscount",
    "active_controller": "kafka_controller_kafkacontroller_activecontrollercount",
    "controller_id": "kafka_server_metadataloader_currentcontrollerid",
    "metadata_error_count": "kafka_controller_kafkacontroller_metadataerrorcount",
    "fenced_broker_count": "kafka_controller_kafkacontroller_fencedbrokercount",
    "active_broker_count": "kafka_controller_kafkacontroller_activebrokercount",
}
KRAFT_GAUGES = {
    "metadata_apply_lag_ms": "kafka_controller_kafkacontroller_lastappliedrecordlagms",
}
"""KRaft controller gauges that are not counts (milliseconds)."""
CONTROLLER_GAUGES = ("offline_partitions", "active_controller", "metadata_error_count", "fenced_broker_count",
                     "active_broker_count", "metadata_apply_lag_ms")
"""Exported by controller-role nodes only (``kafka.controller:type=KafkaController``)."""
LAKE_EXCLUDED = ("metadata_error_count", "fenced_broker_count", "active_broker_count", "metadata_apply_lag_ms",
                 *TRAFFIC_TOTALS)
"""Fields in the snapshot and the exporter but not (yet) in the ``broker_metrics`` lake table, whose
contract is unchanged: their history is Prometheus' (the exporter's ``kpulse_kraft_*`` series)."""
REQUEST_TIME = "kafka_network_requestmetrics_totaltimems"
LATENCY_P99 = {"produce_p99_ms": "Produce", "fetch_p99_ms": "FetchConsumer"}
READ = frozenset({IDLE_NANOS, IDLE_ONE_MINUTE, NETWORK_IDLE, REQUEST_TIME, *TRAFFIC_COUNTERS.values(),
                  *COUNT_GAUGES.values(), *KRAFT_GAUGES.values()})
"""Every metric :func:`values_from_samples` reads (what a scrape is parsed for)."""


@dataclass
class BrokerMetrics:
    """One broker's values for one cycle. Also the lake row (minus ``reasons``, plus time and
    cluster): see :func:`to_row`."""

    broker_id: int
    error: str | None = None
    """Why nothing could be read from this broker (one line); ``None`` when it answered."""
    request_handler_idle_ratio: float | None = None
    """0..1, current: from the idle-nanoseconds counter over the last cycle, else the one-minute
    rate. < 0.2 warn, < 0.1 critical."""
    network_processor_idle_ratio: float | None = None
    """0..1 (gauge). Low = network threads saturated."""
    bytes_in_per_sec: float | None = None
    """Produced bytes per second (all topics; replication not included)."""
    bytes_out_per_sec: float | None = None
    """Fetched bytes per second by consumers (replication not included)."""
    messages_in_per_sec: float | None = None
    bytes_in_total: int | None = None
    """The BytesInPerSec counter itself: produced bytes since the broker started (the exporter's
    counter ``kpulse_broker_produced_bytes_total``)."""
    bytes_out_total: int | None = None
    """The BytesOutPerSec counter: bytes fetched by consumers since the broker started."""
    messages_in_total: int | None = None
    """The MessagesInPerSec counter: produced messages since the broker started."""
    under_replicated_partitions: int | None = None
    under_min_isr_partitions: int | None = None
    partition_count: int | None = None
    """Replicas hosted by this broker."""
    leader_count: int | None = None
    offline_partitions: int | None = None
    """Controller-role nodes only (the active controller's view; others may report it too)."""
    active_controller: int | None = None
    """1 on the active controller, 0 on other controller-role nodes, None on broker-only nodes."""
    controller_id: int | None = None
    """The active controller's id as this node's metadata says (-1: unknown). In KRaft this, not
    the Admin API's DescribeCluster (which names a random broker), tells who the controller is."""
    metadata_error_count: int | None = None
    """KRaft ``MetadataErrorCount``: errors this controller-role node met loading or applying the
    metadata log since it started (a count that only a restart resets); > 0 means its metadata may
    be wrong. None on broker-only nodes."""
    fenced_broker_count: int | None = None
    """KRaft ``FencedBrokerCount`` as this controller-role node's metadata says: registered brokers
    that are fenced (not heartbeating, or still catching up at startup). None on broker-only nodes."""
    active_broker_count: int | None = None
    """KRaft ``ActiveBrokerCount``: registered brokers that are not fenced, as this node says."""
    metadata_apply_lag_ms: float | None = None
    """KRaft ``LastAppliedRecordLagMs``: now minus the append time of the last metadata record this
    node applied, ms. On a quiet cluster it stays under ~1 s (the leader appends a no-op record
    every ``metadata.max.idle.interval.ms``, 500 ms by default); it grows while a node falls behind."""
    produce_p99_ms: float | None = None
    """99th percentile of Produce request total time (the broker's recent-sample histogram)."""
    fetch_p99_ms: float | None = None
    """99th percentile of FetchConsumer request total time."""
    scrape_seconds: float | None = None
    """How long reading this broker's metrics took (jmx_exporter: our HTTP GET; prometheus:
    Prometheus' own scrape_duration_seconds)."""
    reasons: dict[str, str] = field(default_factory=dict)
    """Field -> why it is ``None``."""


COUNT_FIELDS = frozenset(COUNT_GAUGES)
INTEGER_FIELDS = COUNT_FIELDS | frozenset(TRAFFIC_TOTALS)
"""Fields read as whole numbers: the gauges that count, and the counters' counts."""
VALUE_FIELDS = tuple(f.name for f in dataclasses.fields(BrokerMetrics)
                     if f.name not in ("broker_id", "error", "reasons"))
LAKE_FIELDS = tuple(name for name in VALUE_FIELDS if name not in LAKE_EXCLUDED)


def failed_broker(broker_id: int, error: str) -> BrokerMetrics:
    """A broker nothing could be read from: every value None, the error as every reason."""
    return BrokerMetrics(broker_id, error=error, reasons={name: error for name in VALUE_FIELDS})


def to_row(broker: BrokerMetrics, *, now: float, cluster: str) -> dict[str, object]:
    """The flat lake row of one broker: time (= ``now``), cluster, broker_id, error and every value
    but :data:`LAKE_EXCLUDED`."""
    row: dict[str, object] = {"time": now, "cluster": cluster, "broker_id": broker.broker_id, "error": broker.error}
    row.update({name: getattr(broker, name) for name in LAKE_FIELDS})
    return row


# --- calculation (pure) ----------------------------------------------------------------------------

def counter_rate(previous: tuple[float, float] | None,
                 current: tuple[float, float]) -> tuple[float | None, str | None]:
    """Per-second rate of a counter between two ``(time, value)`` readings: ``(rate, None)``, or
    ``(None, why)`` when there is no rate this cycle."""
    if previous is None:
        return None, FIRST_SAMPLE
    (then, before), (now, after) = previous, current
    if after < before:
        return None, (f"counter reset (went from {before:g} to {after:g}: broker restarted?); "
                      "rate resumes next cycle")
    if now <= then:
        return None, "no time elapsed since the previous sample"
    return (after - before) / (now - then), None


def ratio(value: float) -> float:
    # Scrape timing jitter can push a measured idle fraction a hair outside 0..1.
    return min(1.0, max(0.0, value))


def _value(value: float | None, name: str) -> float | int | None:
    if value is None or math.isnan(value):
        return None
    return int(round(value)) if name in INTEGER_FIELDS else value


def values_from_samples(broker_id: int, samples: list[prom_text.Sample], at: float,
                        previous: Mapping[str, tuple[float, float]]
                        ) -> tuple[BrokerMetrics, dict[str, tuple[float, float]]]:
    """One broker's values from its exposition read at ``at`` (clock seconds), given the counter
    readings of earlier cycles (metric -> (time, value)). Returns the values and this cycle's
    counter readings."""
    broker = BrokerMetrics(broker_id)
    readings: dict[str, tuple[float, float]] = {}

    def rate(metric: str) -> tuple[float | None, str]:
        value = prom_text.first(samples, metric, topic=None)
        if value is None:
            return None, f"not exported by this broker ({metric})"
        readings[metric] = (at, value)
        result, why = counter_rate(previous.get(metric), (at, value))
        return result, why or ""

    idle_rate, why = rate(IDLE_NANOS)
    if idle_rate is not None:
        broker.request_handler_idle_ratio = ratio(idle_rate / 1e9)
    elif (one_minute := prom_text.first(samples, IDLE_ONE_MINUTE)) is not None:
        broker.request_handler_idle_ratio = ratio(one_minute)
    else:
        broker.reasons["request_handler_idle_ratio"] = f"{why}; and not exported ({IDLE_ONE_MINUTE})"
    for name, metric in TRAFFIC_COUNTERS.items():
        value, why = rate(metric)
        set_value(broker, name, value, why)
    for name, metric in TRAFFIC_TOTALS.items():
        set_value(broker, name, prom_text.first(samples, metric, topic=None), f"not exported by this broker ({metric})")
    network_idle = prom_text.first(samples, NETWORK_IDLE)
    set_value(broker, "network_processor_idle_ratio", None if network_idle is None else ratio(network_idle),
         f"not exported by this broker ({NETWORK_IDLE})")
    for name, metric in COUNT_GAUGES.items():
        missing = CONTROLLER_ONLY if name in CONTROLLER_GAUGES else f"not exported by this broker ({metric})"
        set_value(broker, name, prom_text.first(samples, metric), missing)
    for name, metric in KRAFT_GAUGES.items():
        set_value(broker, name, prom_text.first(samples, metric), CONTROLLER_ONLY)
    for name, request in LATENCY_P99.items():
        set_value(broker, name, prom_text.first(samples, REQUEST_TIME, request=request, quantile="0.99"),
             f'not exported by this broker ({REQUEST_TIME}{{request="{request}",quantile="0.99"}})')
    return broker, readings


def set_value(broker: BrokerMetrics, name: str, value: float | None, why_missing: str) -> None:
    value = _value(value, name)
    setattr(broker, name, value)
    if value is None:
        broker.reasons[name] = why_missing


class KraftClusterLevel(TypedDict):
    """The cluster's KRaft controller figures from its nodes' metrics (:func:`kraft_cluster_level`)."""

    fenced_broker_count: int | None
    """Fenced brokers as the active controller says (else the largest count of the nodes)."""
    active_broker_count: int | None
    """Unfenced brokers as the active controller says (else the smallest count of the nodes)."""
    metadata_error_count: int | None
    """Metadata errors summed over the nodes exporting them."""


class ClusterLevel(KraftClusterLevel):
    """The cluster's figures from its nodes' metrics (:func:`cluster_level`): the
    ``broker_metrics`` section's besides its brokers."""

    active_controller_count: int | None
    """Sum over the answering nodes that export it (must be 1)."""
    offline_partitions: int | None
    """Largest over the controllers."""
    controller_id: int | None
    """The controller most answering nodes name."""
    reasons: dict[str, str]
    """Why a figure above is None."""


def cluster_level(brokers: list[BrokerMetrics]) -> ClusterLevel:
    """``active_controller_count`` (sum over answering nodes that export it; must be 1) and
    ``offline_partitions`` (max over controllers), with ``reasons`` for those that are None."""
    answered = [b for b in brokers if b.error is None]
    controllers = [b.active_controller for b in answered if b.active_controller is not None]
    offline = [b.offline_partitions for b in answered if b.offline_partitions is not None]
    reasons: dict[str, str] = {}
    if not answered:
        reasons["active_controller_count"] = reasons["offline_partitions"] = "no broker answered"
    else:
        if not controllers:
            reasons["active_controller_count"] = f"no answering node exports it ({CONTROLLER_ONLY})"
        if not offline:
            reasons["offline_partitions"] = f"no answering node exports it ({CONTROLLER_ONLY})"
    views = [b.controller_id for b in answered if b.controller_id is not None and b.controller_id >= 0]
    controller_id = max(set(views), key=views.count) if views else None
    if controller_id is None:
        reasons["controller_id"] = "no answering node knows the controller" if answered else "no broker answered"
    kraft = kraft_cluster_level(answered, controller_id, reasons)
    return {"active_controller_count": sum(controllers) if controllers else None,
            "offline_partitions": max(offline) if offline else None, "controller_id": controller_id,
            **kraft, "reasons": reasons}


def kraft_cluster_level(answered: list[BrokerMetrics], controller_id: int | None,
                        reasons: dict[str, str]) -> KraftClusterLevel:
    """The KRaft controller figures of the cluster, from the answering nodes:
    ``fenced_broker_count`` and ``active_broker_count`` as the active controller says (it decides
    fencing; a standby controller's view can be a moment behind), else the node reporting itself
    active, else the largest fenced count and the smallest active count over the nodes (the worst
    view); ``metadata_error_count``, the sum over the nodes (each counts its own errors).
    ``reasons`` gets why a figure is None."""
    active = [b for b in answered if b.broker_id == controller_id] or [b for b in answered if b.active_controller]

    def leader_view_else(worst: Callable[[list[int]], int], value_of: Callable[[BrokerMetrics], int | None]
                         ) -> int | None:
        leader_view = [value for value in map(value_of, active) if value is not None]
        values = [value for value in map(value_of, answered) if value is not None]
        return leader_view[0] if leader_view else worst(values) if values else None

    errors = [b.metadata_error_count for b in answered if b.metadata_error_count is not None]
    result: KraftClusterLevel = {
        "fenced_broker_count": leader_view_else(max, lambda b: b.fenced_broker_count),
        "active_broker_count": leader_view_else(min, lambda b: b.active_broker_count),
        "metadata_error_count": sum(errors) if errors else None,
    }
    for name, value in result.items():
        if value is None:
            reasons[name] = (f"no answering node exports it ({CONTROLLER_ONLY})" if answered
                             else "no broker answered")
    return result
