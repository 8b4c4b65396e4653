"""Broker metrics: the per-broker saturation, traffic, partition-health and latency signals of
DOMAIN.md §1, read from JMX exporter endpoints or from a Prometheus server.

Sources (``ClusterConfig.metrics.source``):

``jmx_exporter``
    Every ``broker_endpoints`` URL is scraped each cycle, concurrently (at most
    :data:`MAX_SCRAPE_THREADS` at once). Metric names are those of
    ``localkafka/java/jmx-exporter-broker.yaml``. Rates are deltas of the exporter's counters between
    this cycle and the previous one *of this collector object*, over the time measured by its
    ``clock`` (the midpoint of each scrape), so the first cycle has no traffic rates. A broker whose
    scrape fails gets every value ``None`` and ``error`` set; the others are unaffected.
``prometheus``
    Instant queries to ``<prometheus_url>/api/v1/query``, every selector narrowed by
    ``prometheus_selector``. Series are grouped by the target label **``broker_id``** (the node
    id, as ``docker/prometheus/prometheus.yml`` sets it on every Kafka target): ``instance`` is a
    host:port and cannot be mapped to a broker id reliably, so targets without a ``broker_id``
    label are ignored. Rates are PromQL ``rate(...[2m])`` (:mod:`collectors.brokers.prometheus_query`), so they exist from
    the first cycle (and read low while Prometheus has scraped a series for less than the 2 minutes:
    ``rate`` divides by the whole window); ``up == 0`` marks a broker as failed; ``scrape_seconds`` is Prometheus'
    ``scrape_duration_seconds``. Brokers listed in ``broker_endpoints`` (optional here) are
    reported even when Prometheus has no series for them.
``none``
    An empty section with a note.

A value that cannot be had is ``None`` and ``reasons[field]`` says why; there is no silent zero.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar
from urllib.parse import urlencode

import requests

from kpulse import prom_text
from collectors.brokers.broker_values import (
    NOT_CONFIGURED, READ, BrokerMetrics, cluster_level, failed_broker, to_row, values_from_samples,
)
from collectors.brokers.prometheus_query import (
    PROMETHEUS_BROKER_LABEL, MetricsHTTPError, prometheus_queries, rate_window, values_from_prometheus,
    vector_by_broker,
)
from collectors.protocol import BuiltinSections, CollectContext, CollectorResult
from kpulse.config import ClusterConfig, MetricsConfig
from kpulse.lake.schema import SCHEMAS
from kpulse.snapshot import BrokerMetricsSection

SECTION = TABLE = "broker_metrics"
MAX_SCRAPE_THREADS = 8

Item = TypeVar("Item")
Result = TypeVar("Result")


# --- I/O -------------------------------------------------------------------------------------------

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


def _concurrently(function: Callable[[Item], Result], items: Iterable[Item]) -> list[Result]:
    listed = list(items)
    if not listed:
        return []
    with ThreadPoolExecutor(max_workers=min(MAX_SCRAPE_THREADS, len(listed)),
                            thread_name_prefix="kpulse-broker-metrics") as pool:
        return list(pool.map(function, listed))


@dataclass
class _Scrape:
    """One broker's exposition, read."""

    broker_id: int
    samples: list[prom_text.Sample]
    at: float
    """The middle of the read (clock seconds)."""
    seconds: float
    """How long the read took."""


@dataclass
class _ScrapeFailed:
    broker_id: int
    error: str
    """Why nothing was read (one line)."""


class BrokerMetricsCollector:
    """Collects :class:`BrokerMetrics` of every broker each cycle (see the module docstring).

    ``http_get(url, timeout) -> str`` does every HTTP request (default :func:`http_get_text`);
    ``clock`` measures the time between counter readings. The constructor connects to nothing.
    Keep one object per cluster across cycles: it holds the previous counter readings."""

    name = "broker_metrics"
    uses_kafka = False
    """It reads the brokers' metrics endpoints or Prometheus, not Kafka: it runs even when the cluster
    refuses kpulse's identity (``collectors/connection_gate.py``)."""
    sections = {SECTION: BrokerMetricsSection}
    tables = {TABLE: SCHEMAS[TABLE]}

    def __init__(self, cluster_config: ClusterConfig, http_get: Callable[[str, float], str] | None = None,
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
        section: BrokerMetricsSection = {"source": metrics.source,
                                         "brokers": [dataclasses.asdict(b) for b in brokers],
                                         **cluster_level(brokers), "errors": errors, "note": note}
        if note is not None:  # nothing was asked: "no broker answered" would say otherwise
            section["reasons"] = dict.fromkeys(section["reasons"], note)
        rows = [to_row(b, now=context.now, cluster=self._cluster.name) for b in brokers]
        return CollectorResult(sections=BuiltinSections(broker_metrics=section), rows={TABLE: rows})

    def _from_exporters(self, metrics: MetricsConfig) -> list[BrokerMetrics]:
        timeout = metrics.timeout_seconds

        def scrape(endpoint: tuple[int, str]) -> _Scrape | _ScrapeFailed:
            broker_id, url = endpoint
            began = self._clock()
            try:
                text = self._http_get(url, timeout)
                ended = self._clock()
                return _Scrape(broker_id, prom_text.parse(text, READ), (began + ended) / 2, ended - began)
            except Exception as error:  # noqa: BLE001 - one broker's failure is reported, not raised
                return _ScrapeFailed(broker_id, _one_line(error))

        brokers = []
        for result in _concurrently(scrape, sorted(metrics.broker_endpoints.items())):
            if isinstance(result, _ScrapeFailed):
                brokers.append(failed_broker(result.broker_id, result.error))
                continue
            previous = self._counters.setdefault(result.broker_id, {})
            broker, readings = values_from_samples(result.broker_id, result.samples, result.at, previous)
            broker.scrape_seconds = result.seconds
            previous.update(readings)
            brokers.append(broker)
        return brokers

    def _from_prometheus(self, metrics: MetricsConfig, errors: dict[str, str]) -> list[BrokerMetrics]:
        if metrics.prometheus_url is None:  # the configuration requires it with this source
            raise ValueError("metrics.prometheus_url: required when source is prometheus")
        base = metrics.prometheus_url.rstrip("/")
        window = rate_window(metrics.prometheus_rate_window_seconds)
        queries = prometheus_queries(metrics.prometheus_selector, window)

        def query(promql: str) -> dict[int, float] | str:
            try:
                body = self._http_get(f"{base}/api/v1/query?{urlencode({'query': promql})}",
                                      metrics.timeout_seconds)
                return vector_by_broker(json.loads(body))
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
        return [values_from_prometheus(broker_id, results, window) for broker_id in sorted(broker_ids)]
