"""Broker metrics from a Prometheus server: the PromQL asked and how its answers become one
broker's values; pure, no I/O (the collector in :mod:`collectors.brokers.broker_metrics` sends the queries).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from collectors.brokers.broker_values import (
    CONTROLLER_GAUGES, CONTROLLER_ONLY, COUNT_GAUGES, IDLE_NANOS, IDLE_ONE_MINUTE, KRAFT_GAUGES, LATENCY_P99,
    NETWORK_IDLE, REQUEST_TIME, TRAFFIC_COUNTERS, TRAFFIC_TOTALS, BrokerMetrics, failed_broker, ratio, set_value,
)

PROMETHEUS_BROKER_LABEL = "broker_id"
PROMETHEUS_RATE_WINDOW = "2m"
"""Range of ``rate()`` in the prometheus path by default (``metrics.prometheus_rate_window_seconds``,
:func:`rate_window`): at least two scrapes at intervals up to 1 min."""


def rate_window(seconds: int) -> str:
    """A PromQL range of ``seconds`` whole seconds: ``2m`` for 120, else ``90s``."""
    return f"{seconds // 60}m" if seconds % 60 == 0 else f"{seconds}s"


class MetricsHTTPError(RuntimeError):
    """An endpoint answered with an HTTP error status."""


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
    for name, metric in TRAFFIC_TOTALS.items():
        queries[name] = by_broker(f"{metric}{sel(no_topic)}")
    for name, metric in {**COUNT_GAUGES, **KRAFT_GAUGES}.items():
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
    for name in ("scrape_seconds", "network_processor_idle_ratio", *TRAFFIC_COUNTERS, *TRAFFIC_TOTALS, *COUNT_GAUGES,
                 *KRAFT_GAUGES, *LATENCY_P99):
        value, failure = lookup(name)
        if name in TRAFFIC_COUNTERS:
            missing = f"no rate: fewer than two samples of {TRAFFIC_COUNTERS[name]} in the last {window}"
        elif name in CONTROLLER_GAUGES:
            missing = CONTROLLER_ONLY
        else:
            missing = f"no series in Prometheus for {name}"
        if name == "network_processor_idle_ratio" and value is not None:
            value = ratio(value)
        set_value(broker, name, value, failure or missing)
    idle, failure = lookup("request_handler_idle_ratio")
    one_minute, failure_one_minute = lookup("idle_one_minute")
    if idle is None:
        idle = one_minute
    set_value(broker, "request_handler_idle_ratio", None if idle is None else ratio(idle),
         failure or failure_one_minute or f"no series in Prometheus for {IDLE_NANOS} or {IDLE_ONE_MINUTE}")
    return broker


def vector_by_broker(response: Mapping[str, Any]) -> dict[int, float]:
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
