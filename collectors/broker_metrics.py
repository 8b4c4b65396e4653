"""Broker metrics: the per-broker saturation, traffic, partition-health and latency signals of
DOMAIN.md §1, read from JMX exporter endpoints or from a Prometheus server.

Sources (``ClusterConfig.metrics.source``):

``jmx_exporter``
    Every ``broker_endpoints`` URL is scraped each cycle, concurrently (at most
    :data:`MAX_SCRAPE_THREADS` at once). Metric names are those of
    ``kpulse/java/jmx-exporter-broker.yaml``. Rates are deltas of the exporter's counters between
    this cycle and the previous one *of this collector object*, over the time measured by its
    ``clock`` (the midpoint of each scrape), so the first cycle has no traffic rates. A broker whose
    scrape fails gets every value ``None`` and ``error`` set; the others are unaffected.
``prometheus``
    Instant queries to ``<prometheus_url>/api/v1/query``, every selector narrowed by
    ``prometheus_selector``. Series are grouped by the target label **``broker_id``** (the node
    id, as ``docker/prometheus/prometheus.yml`` sets it on every Kafka target): ``instance`` is a
    host:port and cannot be mapped to a broker id reliably, so targets without a ``broker_id``
    label are ignored. Rates are PromQL ``rate(...[PROMETHEUS_RATE_WINDOW])``, so they exist from
    the first cycle; ``up == 0`` marks a broker as failed; ``scrape_seconds`` is Prometheus'
    ``scrape_duration_seconds``. Brokers listed in ``broker_endpoints`` (optional here) are
    reported even when Prometheus has no series for them.
``none``
    An empty section with a note.

A value that cannot be had is ``None`` and ``reasons[field]`` says why; there is no silent zero.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import requests

from collectors import prom_text
from collectors.protocol import CollectContext, CollectorResult

SECTION = TABLE = "broker_metrics"
MAX_SCRAPE_THREADS = 8
PROMETHEUS_BROKER_LABEL = "broker_id"
PROMETHEUS_RATE_WINDOW = "2m"
"""Range of ``rate()`` in the prometheus path: at least two scrapes at intervals up to 1 min."""
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
COUNT_GAUGES = {
    "under_replicated_partitions": "kafka_server_replicamanager_underreplicatedpartitions",
    "under_min_isr_partitions": "kafka_server_replicamanager_underminisrpartitioncount",
    "partition_count": "kafka_server_replicamanager_partitioncount",
    "leader_count": "kafka_server_replicamanager_leadercount",
    "offline_partitions": "kafka_controller_kafkacontroller_offlinepartitionscount",
    "active_controller": "kafka_controller_kafkacontroller_activecontrollercount",
    "controller_id": "kafka_server_metadataloader_currentcontrollerid",
}
CONTROLLER_GAUGES = ("offline_partitions", "active_controller")
REQUEST_TIME = "kafka_network_requestmetrics_totaltimems"
LATENCY_P99 = {"produce_p99_ms": "Produce", "fetch_p99_ms": "FetchConsumer"}


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
VALUE_FIELDS = tuple(f.name for f in dataclasses.fields(BrokerMetrics)
                     if f.name not in ("broker_id", "error", "reasons"))


def failed_broker(broker_id: int, error: str) -> BrokerMetrics:
    """A broker nothing could be read from: every value None, the error as every reason."""
    return BrokerMetrics(broker_id, error=error, reasons={name: error for name in VALUE_FIELDS})


def to_row(broker: BrokerMetrics, *, now: float, cluster: str) -> dict[str, Any]:
    """The flat lake row of one broker: time (= ``now``), cluster, broker_id, error and every value."""
    row = {"time": now, "cluster": cluster, "broker_id": broker.broker_id, "error": broker.error}
    row.update({name: getattr(broker, name) for name in VALUE_FIELDS})
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


def _ratio(value: float) -> float:
    # Scrape timing jitter can push a measured idle fraction a hair outside 0..1.
    return min(1.0, max(0.0, value))


def _value(value: float | None, name: str) -> float | int | None:
    if value is None or math.isnan(value):
        return None
    return int(round(value)) if name in COUNT_FIELDS else value


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
        broker.request_handler_idle_ratio = _ratio(idle_rate / 1e9)
    elif (one_minute := prom_text.first(samples, IDLE_ONE_MINUTE)) is not None:
        broker.request_handler_idle_ratio = _ratio(one_minute)
    else:
        broker.reasons["request_handler_idle_ratio"] = f"{why}; and not exported ({IDLE_ONE_MINUTE})"
    for name, metric in TRAFFIC_COUNTERS.items():
        value, why = rate(metric)
        _set(broker, name, value, why)
    network_idle = prom_text.first(samples, NETWORK_IDLE)
    _set(broker, "network_processor_idle_ratio", None if network_idle is None else _ratio(network_idle),
         f"not exported by this broker ({NETWORK_IDLE})")
    for name, metric in COUNT_GAUGES.items():
        missing = CONTROLLER_ONLY if name in CONTROLLER_GAUGES else f"not exported by this broker ({metric})"
        _set(broker, name, prom_text.first(samples, metric), missing)
    for name, request in LATENCY_P99.items():
        _set(broker, name, prom_text.first(samples, REQUEST_TIME, request=request, quantile="0.99"),
             f'not exported by this broker ({REQUEST_TIME}{{request="{request}",quantile="0.99"}})')
    return broker, readings


def _set(broker: BrokerMetrics, name: str, value: float | None, why_missing: str) -> None:
    value = _value(value, name)
    setattr(broker, name, value)
    if value is None:
        broker.reasons[name] = why_missing


def cluster_level(brokers: list[BrokerMetrics]) -> dict[str, Any]:
    """``active_controller_count`` (sum over answering nodes that export it; must be 1) and
    ``offline_partitions`` (max over controllers), with ``reasons`` for those that are None."""
    answered = [b for b in brokers if b.error is None]
    controllers = [b.active_controller for b in answered if b.active_controller is not None]
    offline = [b.offline_partitions for b in answered if b.offline_partitions is not None]
    reasons = {}
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
    return {"active_controller_count": sum(controllers) if controllers else None,
            "offline_partitions": max(offline) if offline else None, "controller_id": controller_id,
            "reasons": reasons}


def prometheus_queries(selector: str, window: str = PROMETHEUS_RATE_WINDOW) -> dict[str, str]:
    """Query key -> PromQL returning one series per ``broker_id``. Keys are :class:`BrokerMetrics`
    fields plus ``up`` and ``idle_one_minute`` (the fallback of the idle ratio)."""
    def sel(*extra: str) -> str:
        matchers = [f'{PROMETHEUS_BROKER_LABEL}!=""', selector.strip().rstrip(","), *extra]
        return "{" + ",".join(m for m in matchers if m) + "}"

    def by_broker(expression: str) -> str:
        return f"max by ({PROMETHEUS_BROKER_LABEL}) ({expression})"

    queries = {
        "up": by_broker(f"up{sel()}"),
        "scrape_seconds": by_broker(f"scrape_duration_seconds{sel()}"),
        "request_handler_idle_ratio": by_broker(f"rate({IDLE_NANOS}{sel()}[{window}])") + " / 1e9",
        "idle_one_minute": by_broker(f"{IDLE_ONE_MINUTE}{sel()}"),
        "network_processor_idle_ratio": by_broker(f"{NETWORK_IDLE}{sel()}"),
    }
    no_topic = 'topic=""'  # the broker-wide series, not one topic's
    for name, metric in TRAFFIC_COUNTERS.items():
        queries[name] = by_broker(f"rate({metric}{sel(no_topic)}[{window}])")
    for name, metric in COUNT_GAUGES.items():
        queries[name] = by_broker(f"{metric}{sel()}")
    for name, request in LATENCY_P99.items():
        p99 = sel(f'request="{request}"', 'quantile="0.99"')
        queries[name] = by_broker(f"{REQUEST_TIME}{p99}")
    return queries


def values_from_prometheus(broker_id: int, results: Mapping[str, dict[int, float] | str],
                           window: str = PROMETHEUS_RATE_WINDOW) -> BrokerMetrics:
    """One broker's values from the query results (key -> {broker id: value}, or the error text
    of a failed query)."""
    broker = BrokerMetrics(broker_id)

    def lookup(key: str) -> tuple[float | None, str]:
        result = results[key]
        if isinstance(result, str):
            return None, f"Prometheus query failed: {result}"
        return result.get(broker_id), ""

    up, failure = lookup("up")
    if up is not None and up < 1:
        return failed_broker(broker_id, "Prometheus could not scrape this broker (up == 0)")
    if all(isinstance(r, str) for r in results.values()):
        return failed_broker(broker_id, f"every Prometheus query failed; first: {failure}")
    if up is None and not failure and not any(
            isinstance(r, dict) and broker_id in r for r in results.values()):
        return failed_broker(broker_id,
                             f'Prometheus has no series with {PROMETHEUS_BROKER_LABEL}="{broker_id}"')
    for name in ("scrape_seconds", "network_processor_idle_ratio", *TRAFFIC_COUNTERS, *COUNT_GAUGES,
                 *LATENCY_P99):
        value, failure = lookup(name)
        if name in TRAFFIC_COUNTERS:
            missing = f"no rate: fewer than two samples of {TRAFFIC_COUNTERS[name]} in the last {window}"
        elif name in CONTROLLER_GAUGES:
            missing = CONTROLLER_ONLY
        else:
            missing = f"no series in Prometheus for {name}"
        if name == "network_processor_idle_ratio" and value is not None:
            value = _ratio(value)
        _set(broker, name, value, failure or missing)
    idle, failure = lookup("request_handler_idle_ratio")
    one_minute, failure_one_minute = lookup("idle_one_minute")
    if idle is None:
        idle = one_minute
    _set(broker, "request_handler_idle_ratio", None if idle is None else _ratio(idle),
         failure or failure_one_minute or f"no series in Prometheus for {IDLE_NANOS} or {IDLE_ONE_MINUTE}")
    return broker


# --- I/O -------------------------------------------------------------------------------------------

class MetricsHTTPError(RuntimeError):
    """An endpoint answered with an HTTP error status."""


def http_get_text(url: str, timeout: float) -> str:
    """The default ``http_get``: the body of a GET, or an exception naming the status and the
    start of the body (Prometheus explains bad queries there)."""
    response = requests.get(url, timeout=timeout)
    if response.status_code >= 400:
        raise MetricsHTTPError(f"HTTP {response.status_code}: {' '.join(response.text.split())[:200]}")
    return response.text


def _one_line(error: BaseException) -> str:
    text = " ".join(f"{type(error).__name__}: {error}".split())
    return text if len(text) <= 300 else text[:297] + "..."


def _concurrently(function: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
    items = list(items)
    if not items:
        return []
    with ThreadPoolExecutor(max_workers=min(MAX_SCRAPE_THREADS, len(items)),
                            thread_name_prefix="kpulse-broker-metrics") as pool:
        return list(pool.map(function, items))


@dataclass
class _Scrape:
    broker_id: int
    samples: list[prom_text.Sample] | None = None
    at: float = 0.0
    seconds: float | None = None
    error: str | None = None


class BrokerMetricsCollector:
    """Collects :class:`BrokerMetrics` of every broker each cycle (see the module docstring).

    ``http_get(url, timeout) -> str`` does every HTTP request (default :func:`http_get_text`);
    ``clock`` measures the time between counter readings. The constructor connects to nothing.
    Keep one object per cluster across cycles: it holds the previous counter readings."""

    name = "broker_metrics"

    def __init__(self, cluster_config: Any, http_get: Callable[[str, float], str] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._cluster = cluster_config
        self._http_get = http_get or http_get_text
        self._clock = clock
        self._counters: dict[int, dict[str, tuple[float, float]]] = {}

    def collect(self, context: CollectContext) -> CollectorResult:
        metrics = self._cluster.metrics
        errors: dict[str, str] = {}
        note = None
        if metrics.source == "jmx_exporter":
            brokers = self._from_exporters(metrics)
        elif metrics.source == "prometheus":
            brokers = self._from_prometheus(metrics, errors)
        elif metrics.source == "none":
            brokers, note = [], NOT_CONFIGURED
        else:
            raise ValueError(f"unknown metrics source {metrics.source!r}")
        errors.update({str(b.broker_id): b.error for b in brokers if b.error})
        section = {"source": metrics.source, "brokers": [dataclasses.asdict(b) for b in brokers],
                   **cluster_level(brokers), "errors": errors, "note": note}
        rows = [to_row(b, now=context.now, cluster=self._cluster.name) for b in brokers]
        return CollectorResult(sections={SECTION: section}, rows={TABLE: rows})

    def _from_exporters(self, metrics: Any) -> list[BrokerMetrics]:
        timeout = metrics.timeout_seconds

        def scrape(endpoint: tuple[int, str]) -> _Scrape:
            broker_id, url = endpoint
            began = self._clock()
            try:
                text = self._http_get(url, timeout)
                ended = self._clock()
                return _Scrape(broker_id, prom_text.parse(text), (began + ended) / 2, ended - began)
            except Exception as error:  # noqa: BLE001 - one broker's failure is reported, not raised
                return _Scrape(broker_id, error=_one_line(error))

        brokers = []
        for result in _concurrently(scrape, sorted(metrics.broker_endpoints.items())):
            if result.error is not None:
                brokers.append(failed_broker(result.broker_id, result.error))
                continue
            previous = self._counters.setdefault(result.broker_id, {})
            broker, readings = values_from_samples(result.broker_id, result.samples, result.at, previous)
            broker.scrape_seconds = result.seconds
            previous.update(readings)
            brokers.append(broker)
        return brokers

    def _from_prometheus(self, metrics: Any, errors: dict[str, str]) -> list[BrokerMetrics]:
        base = metrics.prometheus_url.rstrip("/")
        queries = prometheus_queries(metrics.prometheus_selector)

        def query(promql: str) -> dict[int, float] | str:
            try:
                body = self._http_get(f"{base}/api/v1/query?{urlencode({'query': promql})}",
                                      metrics.timeout_seconds)
                return _vector_by_broker(json.loads(body))
            except Exception as error:  # noqa: BLE001 - reported per field
                return _one_line(error)

        results = dict(zip(queries, _concurrently(query, queries.values())))
        failed = [r for r in results.values() if isinstance(r, str)]
        if failed:
            errors["prometheus"] = (f"{len(failed)} of {len(results)} queries failed; first: {failed[0]}")
        broker_ids = set(metrics.broker_endpoints)
        for result in results.values():
            if isinstance(result, dict):
                broker_ids.update(result)
        if not broker_ids and not failed:
            errors["prometheus"] = (f"no series with a {PROMETHEUS_BROKER_LABEL} label matched: label each "
                                    f'Kafka scrape target with {PROMETHEUS_BROKER_LABEL}="<node id>"')
        return [values_from_prometheus(broker_id, results) for broker_id in sorted(broker_ids)]


def _vector_by_broker(response: Mapping[str, Any]) -> dict[int, float]:
    """An ``/api/v1/query`` response (instant vector) -> {broker id: value}; NaN left out."""
    if response.get("status") != "success":
        raise MetricsHTTPError(f"Prometheus: {response.get('errorType')}: {response.get('error')}")
    data = response["data"]
    if data.get("resultType") != "vector":
        raise MetricsHTTPError(f"Prometheus returned a {data.get('resultType')}, not a vector")
    values = {}
    for series in data["result"]:
        label = series["metric"].get(PROMETHEUS_BROKER_LABEL, "")
        value = float(series["value"][1])
        if label.isdigit() and not math.isnan(value):
            values[int(label)] = value
    return values
