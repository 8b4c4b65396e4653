"""Broker metrics: rates from counters across cycles, failures isolated per broker, nothing silently
zero; the Prometheus path's query shapes and error handling against a tiny fake Prometheus (the
real server reading the real brokers: ``tests/test_prometheus_real.py``); and the real local cluster."""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from kpulse import prom_text
from collectors.brokers.broker_metrics import BrokerMetricsCollector, http_get_text
from collectors.brokers.prometheus_query import rate_window
from collectors.brokers.broker_values import (FIRST_SAMPLE, IDLE_NANOS, IDLE_ONE_MINUTE, NOT_CONFIGURED, READ,
                                      counter_rate)
from collectors.protocol import CollectContext, Collector
from kpulse.config.model import ClusterConfig, MetricsConfig
from tests.support import free_port

NOW = 1_700_000_000.0
URLS = {1: "http://node-1:7071/metrics", 2: "http://node-2:7071/metrics", 3: "http://node-3:7071/metrics"}


# --- canned exposition ----------------------------------------------------------------------------

def exposition(*, idle_nanos=5e11, idle_one_minute=0.9, network_idle=0.8, bytes_in=1000.0,
               bytes_out=2000.0, messages_in=10.0, urp=0, under_min_isr=0, partitions=12, leaders=4,
               offline=0, active=0, produce_p99=12.5, fetch_p99=501.0) -> str:
    """What the JMX exporter serves (names of localkafka/java/jmx-exporter-broker.yaml); a None
    argument leaves the metric out, a string is written as is (``"NaN"``)."""
    def line(name, value, kind="gauge", labels=""):
        if value is None:
            return ""
        return f"# TYPE {name} {kind}\n{name}{labels} {value}\n"

    def counter(name, value):
        # A topic's series first: the broker-wide one (no topic label) is the one to use.
        topic = "" if value is None else f'{name}{{topic="orders"}} 99999999.0\n'
        return f"# TYPE {name} counter\n{topic}" + ("" if value is None else f"{name} {value}\n")

    times = "kafka_network_requestmetrics_totaltimems"
    p99 = (f'{times}{{quantile="0.50",request="Produce"}} 1.0\n'
           f'{times}{{quantile="0.99",request="FetchFollower"}} 7777.0\n')
    if produce_p99 is not None:
        p99 += f'{times}{{quantile="0.99",request="Produce"}} {produce_p99}\n'
    if fetch_p99 is not None:
        p99 += f'{times}{{quantile="0.99",request="FetchConsumer"}} {fetch_p99}\n'
    return "".join([
        line(IDLE_ONE_MINUTE, idle_one_minute),
        line("kafka_server_kafkarequesthandlerpool_brokerrequesthandleravgidlepercent", 0.11),
        counter(IDLE_NANOS, idle_nanos),
        line("kafka_network_socketserver_networkprocessoravgidlepercent", network_idle),
        counter("kafka_server_brokertopicmetrics_bytesinpersec_total", bytes_in),
        counter("kafka_server_brokertopicmetrics_bytesoutpersec_total", bytes_out),
        counter("kafka_server_brokertopicmetrics_messagesinpersec_total", messages_in),
        counter("kafka_server_brokertopicmetrics_replicationbytesinpersec_total", 5e9),
        line("kafka_server_replicamanager_underreplicatedpartitions", urp),
        line("kafka_server_replicamanager_underminisrpartitioncount", under_min_isr),
        line("kafka_server_replicamanager_partitioncount", partitions),
        line("kafka_server_replicamanager_leadercount", leaders),
        line("kafka_controller_kafkacontroller_offlinepartitionscount", offline),
        line("kafka_controller_kafkacontroller_activecontrollercount", active),
        "# TYPE kafka_network_requestmetrics_totaltimems gauge\n" + p99,
        line("kafka_server_raft_metrics_commit_latency_avg", "NaN"),
    ])


class FakeClock:
    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class FakeEndpoints:
    """``http_get`` serving canned text per URL; an exception instance is raised instead."""

    def __init__(self, pages: dict[str, str | Exception]) -> None:
        self.pages = dict(pages)
        self.calls: list[tuple[str, float]] = []

    def __call__(self, url: str, timeout: float) -> str:
        self.calls.append((url, timeout))
        page = self.pages[url]
        if isinstance(page, Exception):
            raise page
        return page


def cluster(source="jmx_exporter", endpoints=None, **metrics) -> ClusterConfig:
    return ClusterConfig(name="prod", bootstrap_servers="node-1:9092", metrics=MetricsConfig(
        source=source, broker_endpoints=URLS if endpoints is None else endpoints, **metrics))


def collect(collector) -> dict:
    # no cluster on purpose: the collector reads its own config, not the context's
    result = collector.collect(CollectContext(cluster=None, now=NOW))  # type: ignore[arg-type]
    section = result.sections["broker_metrics"]
    section["by_id"] = {b["broker_id"]: b for b in section["brokers"]}
    section["rows"] = result.rows["broker_metrics"]
    return section


# --- prom_text ------------------------------------------------------------------------------------

def test_prom_text_reads_counters_labels_and_leaves_nan_out():
    samples = prom_text.parse(exposition(bytes_in=1234.0, network_idle="NaN"))
    name = "kafka_server_brokertopicmetrics_bytesinpersec_total"
    assert prom_text.first(samples, name, topic=None) == 1234.0
    assert prom_text.first(samples, name, topic="orders") == 99999999.0
    assert prom_text.first(samples, name) == 99999999.0  # any labels: the first in the text
    assert prom_text.total(samples, name) == 99999999.0 + 1234.0
    assert prom_text.first(samples, "kafka_network_socketserver_networkprocessoravgidlepercent") is None
    assert prom_text.first(samples, "kafka_server_raft_metrics_commit_latency_avg") is None
    assert prom_text.total(samples, "no_such_metric") is None
    assert prom_text.first(samples, "kafka_network_requestmetrics_totaltimems",
                           request="Produce", quantile="0.99") == 12.5
    assert all(s.value == s.value for s in samples)  # no NaN anywhere


def test_prom_text_refuses_a_page_that_is_not_exposition():
    with pytest.raises(ValueError):
        prom_text.parse("<html><body>502 Bad Gateway</body></html>")
    with pytest.raises(ValueError):  # also when asked for some names only
        prom_text.parse("<html><body>502 Bad Gateway</body></html>", READ)


def test_prom_text_asked_for_some_names_gives_exactly_their_samples():
    canned = exposition(bytes_in=1234.0) + "\n".join([
        "# HELP jvm_threads_state thread states", "# TYPE jvm_threads_state gauge",
        'jvm_threads_state{state="RUNNABLE"} 30.0', ""])
    every = prom_text.parse(canned)
    assert prom_text.parse(canned, READ) == [s for s in every if s.name in READ]
    assert {s.name for s in every} - READ >= {"jvm_threads_state"}
    # client_python's way: the TYPE line names a counter without its _total
    other = "\n".join(["# TYPE jvm_threads_state gauge", 'jvm_threads_state{state="RUNNABLE"} 30.0',
                       "# TYPE kafka_server_brokertopicmetrics_messagesinpersec counter",
                       "kafka_server_brokertopicmetrics_messagesinpersec_total 77.0", ""])
    assert prom_text.parse(other, READ) == [
        prom_text.Sample("kafka_server_brokertopicmetrics_messagesinpersec_total", {}, 77.0)]


# --- calculation ----------------------------------------------------------------------------------

@pytest.mark.parametrize("previous, current, rate, why", [
    (None, (10.0, 500.0), None, FIRST_SAMPLE),
    ((10.0, 500.0), (20.0, 1500.0), 100.0, None),
    ((10.0, 500.0), (20.0, 500.0), 0.0, None),
    ((10.0, 500.0), (20.0, 20.0), None, "counter reset"),
    ((10.0, 500.0), (10.0, 600.0), None, "no time elapsed"),
])
def test_counter_rate(previous, current, rate, why):
    got_rate, got_why = counter_rate(previous, current)
    assert got_rate == rate
    assert (got_why is None) if why is None else why in got_why


# --- jmx_exporter source --------------------------------------------------------------------------

def test_the_constructor_connects_to_nothing_and_follows_the_protocol():
    endpoints = FakeEndpoints({})
    collector = BrokerMetricsCollector(cluster(), http_get=endpoints)
    assert endpoints.calls == []
    assert collector.name == "broker_metrics"
    assert isinstance(collector, Collector)


def test_first_cycle_has_no_rates_and_takes_the_idle_ratio_from_the_one_minute_gauge():
    endpoints = FakeEndpoints({url: exposition(active=1 if b == 1 else 0) for b, url in URLS.items()})
    section = collect(BrokerMetricsCollector(cluster(timeout_seconds=2.5), endpoints, FakeClock()))
    assert sorted(url for url, _ in endpoints.calls) == sorted(URLS.values())
    assert {timeout for _, timeout in endpoints.calls} == {2.5}
    broker = section["by_id"][2]
    assert broker["error"] is None
    for rate in ("bytes_in_per_sec", "bytes_out_per_sec", "messages_in_per_sec"):
        assert broker[rate] is None
        assert broker["reasons"][rate] == FIRST_SAMPLE
    # the counters themselves (broker-wide, not a topic's) are there from the first read: Prometheus rates them
    assert (broker["bytes_in_total"], broker["bytes_out_total"], broker["messages_in_total"]) == (1000, 2000, 10)
    assert isinstance(broker["bytes_in_total"], int)
    assert broker["request_handler_idle_ratio"] == 0.9
    assert broker["network_processor_idle_ratio"] == 0.8
    assert (broker["partition_count"], broker["leader_count"]) == (12, 4)
    assert isinstance(broker["partition_count"], int)
    assert (broker["under_replicated_partitions"], broker["under_min_isr_partitions"]) == (0, 0)
    assert (broker["produce_p99_ms"], broker["fetch_p99_ms"]) == (12.5, 501.0)
    assert broker["scrape_seconds"] == 0.0
    assert section["active_controller_count"] == 1
    assert section["offline_partitions"] == 0
    assert section["errors"] == {}


def test_second_cycle_rates_are_counter_deltas_over_the_clock_and_the_idle_ratio_is_current():
    clock = FakeClock(100.0)
    endpoints = FakeEndpoints({url: exposition() for url in URLS.values()})
    collector = BrokerMetricsCollector(cluster(), endpoints, clock)
    collect(collector)
    clock.now = 110.0
    endpoints.pages[URLS[1]] = exposition(bytes_in=6000.0, bytes_out=2000.0, messages_in=60.0,
                                          idle_nanos=5e11 + 2e9, idle_one_minute=0.9)
    endpoints.pages[URLS[2]] = exposition(idle_nanos=5e11 + 10e9 + 1e8)  # jitter: slightly above 1
    second = collect(collector)
    broker = second["by_id"][1]
    assert broker["bytes_in_per_sec"] == pytest.approx(500.0)
    assert broker["bytes_out_per_sec"] == 0.0
    assert broker["messages_in_per_sec"] == pytest.approx(5.0)
    assert broker["request_handler_idle_ratio"] == pytest.approx(0.2)  # not the gauge's 0.9
    assert "bytes_in_per_sec" not in broker["reasons"]
    assert second["by_id"][2]["request_handler_idle_ratio"] == 1.0


def test_scrape_seconds_is_the_time_the_http_get_took():
    class TickingClock:
        now = 100.0

        def __call__(self):
            self.now += 0.25
            return self.now

    endpoints = FakeEndpoints({URLS[1]: exposition()})
    section = collect(BrokerMetricsCollector(cluster(endpoints={1: URLS[1]}), endpoints, TickingClock()))
    assert section["by_id"][1]["scrape_seconds"] == 0.25


def test_a_counter_reset_gives_no_rate_for_that_cycle_then_rates_resume():
    clock = FakeClock(100.0)
    endpoints = FakeEndpoints({url: exposition(bytes_in=1e6, idle_nanos=9e11) for url in URLS.values()})
    collector = BrokerMetricsCollector(cluster(), endpoints, clock)
    collect(collector)
    clock.now = 110.0
    endpoints.pages[URLS[3]] = exposition(bytes_in=300.0, idle_nanos=1e9, idle_one_minute=0.7)
    broker = collect(collector)["by_id"][3]
    assert broker["bytes_in_per_sec"] is None
    assert "counter reset" in broker["reasons"]["bytes_in_per_sec"]
    assert broker["request_handler_idle_ratio"] == 0.7  # back to the gauge, not a negative ratio
    clock.now = 120.0
    endpoints.pages[URLS[3]] = exposition(bytes_in=1300.0, idle_nanos=6e9)
    broker = collect(collector)["by_id"][3]
    assert broker["bytes_in_per_sec"] == pytest.approx(100.0)
    assert broker["request_handler_idle_ratio"] == pytest.approx(0.5)


def test_a_failing_endpoint_marks_only_that_broker_and_the_others_carry_on():
    endpoints = FakeEndpoints({
        URLS[1]: exposition(active=1, offline=2),
        URLS[2]: ConnectionError("connection refused\nsecond line of a long trace"),
        URLS[3]: "<html>502 Bad Gateway</html>",
    })
    section = collect(BrokerMetricsCollector(cluster(), endpoints, FakeClock()))
    failed = section["by_id"][2]
    assert failed["error"] == "ConnectionError: connection refused second line of a long trace"
    assert all(failed[field] is None for field in failed["reasons"])
    assert set(failed["reasons"]) >= {"bytes_in_per_sec", "under_replicated_partitions", "scrape_seconds"}
    assert section["by_id"][3]["error"].startswith("ValueError")
    assert section["by_id"][1]["error"] is None
    assert section["by_id"][1]["partition_count"] == 12
    assert set(section["errors"]) == {"2", "3"}
    assert section["active_controller_count"] == 1
    assert section["offline_partitions"] == 2


def test_nan_and_missing_metrics_are_none_with_a_reason_never_zero():
    endpoints = FakeEndpoints({
        URLS[1]: exposition(network_idle="NaN", produce_p99="NaN", urp=None, active=None, offline=None,
                            idle_one_minute=None),
    })
    section = collect(BrokerMetricsCollector(cluster(endpoints={1: URLS[1]}), endpoints, FakeClock()))
    broker = section["by_id"][1]
    for field in ("network_processor_idle_ratio", "produce_p99_ms", "under_replicated_partitions",
                  "active_controller", "offline_partitions", "request_handler_idle_ratio"):
        assert broker[field] is None, field
        assert broker["reasons"][field], field
    assert "controller-role" in broker["reasons"]["active_controller"]
    assert FIRST_SAMPLE in broker["reasons"]["request_handler_idle_ratio"]
    assert broker["fetch_p99_ms"] == 501.0
    assert section["active_controller_count"] is None
    assert section["reasons"]["active_controller_count"]


@pytest.mark.parametrize("actives, offline, expected_count, expected_offline", [
    ((1, 0, 0), (0, 0, 0), 1, 0),
    ((1, 1, 0), (0, 0, 0), 2, 0),  # split brain shows as 2
    ((0, 0, 0), (0, 0, 0), 0, 0),  # no controller shows as 0
    ((1, None, None), (4, None, None), 1, 4),  # broker-only nodes have neither metric
    ((0, 1, 0), (0, 5, 2), 1, 5),
])
def test_cluster_values_sum_active_controllers_and_take_the_worst_offline_count(
        actives, offline, expected_count, expected_offline):
    endpoints = FakeEndpoints({URLS[b]: exposition(active=a, offline=o)
                               for b, a, o in zip((1, 2, 3), actives, offline)})
    section = collect(BrokerMetricsCollector(cluster(), endpoints, FakeClock()))
    assert section["active_controller_count"] == expected_count
    assert section["offline_partitions"] == expected_offline


def test_when_no_broker_answers_the_cluster_values_are_none_not_zero():
    endpoints = FakeEndpoints({url: TimeoutError("timed out") for url in URLS.values()})
    section = collect(BrokerMetricsCollector(cluster(), endpoints, FakeClock()))
    assert section["active_controller_count"] is None
    assert section["offline_partitions"] is None
    assert section["reasons"]["active_controller_count"] == "no broker answered"
    assert len(section["rows"]) == 3


def test_brokers_are_scraped_concurrently():
    barrier = threading.Barrier(len(URLS), timeout=5)  # breaks unless all three are in flight at once

    def http_get(url, timeout):
        barrier.wait()
        return exposition()

    section = collect(BrokerMetricsCollector(cluster(), http_get, FakeClock()))
    assert section["errors"] == {}


def test_one_flat_lake_row_per_broker():
    endpoints = FakeEndpoints({url: exposition() for url in URLS.values()})
    rows = collect(BrokerMetricsCollector(cluster(), endpoints, FakeClock()))["rows"]
    assert [row["broker_id"] for row in rows] == [1, 2, 3]
    assert {row["time"] for row in rows} == {NOW}
    assert {row["cluster"] for row in rows} == {"prod"}
    assert all(not isinstance(value, (dict, list)) for row in rows for value in row.values())
    assert rows[0]["partition_count"] == 12 and rows[0]["bytes_in_per_sec"] is None
    try:
        from kpulse.lake.schema import SCHEMAS
    except ImportError:
        return
    assert set(rows[0]) == set(SCHEMAS["broker_metrics"].names)


def test_source_none_returns_an_empty_section_that_says_why():
    section = collect(BrokerMetricsCollector(cluster(source="none", endpoints={}), FakeEndpoints({})))
    assert section["brokers"] == [] and section["rows"] == []
    assert section["note"] == NOT_CONFIGURED
    assert section["active_controller_count"] is None


# --- prometheus source ----------------------------------------------------------------------------

class _RoomyHTTPServer(ThreadingHTTPServer):
    request_queue_size = 64  # the default backlog (5) drops concurrent SYNs: 1 s retries


class FakePrometheus:
    """A Prometheus that answers ``/api/v1/query`` by evaluating just the query shapes the
    collector sends: ``max by (broker_id) ([rate(]metric{matchers}[[window])])[ / 1e9]`` over
    canned series, honouring ``=`` and ``!=`` matchers like Prometheus does."""

    def __init__(self, series: list[tuple[str, dict, float]], rates: list[tuple[str, dict, float]],
                 failing: tuple[str, ...] = ()) -> None:
        self.series, self.rates, self.failing = series, rates, failing
        self.queries: list[str] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                parts = urlsplit(self.path)
                query = parse_qs(parts.query).get("query", [""])[0]
                fake.queries.append(query)
                status, body = fake.answer(parts.path, query)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = _RoomyHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True).start()

    def answer(self, path: str, query: str) -> tuple[int, dict]:
        match = re.fullmatch(r"max by \(broker_id\) \((rate\()?(\w+)\{(.*?)\}(\[\w+\]\))?\)( / 1e9)?", query)
        if path != "/api/v1/query" or match is None:
            return 400, {"status": "error", "errorType": "bad_data", "error": f"cannot parse {query!r}"}
        is_rate, metric, matchers, _, per_1e9 = match.groups()
        if metric in self.failing:
            return 422, {"status": "error", "errorType": "execution", "error": "query timed out"}
        matchers = re.findall(r'(\w+)(!=|=)"([^"]*)"', matchers)
        grouped: dict[str, float] = {}
        for name, labels, value in self.rates if is_rate else self.series:
            if name == metric and all((labels.get(k, "") == v) == (op == "=") for k, op, v in matchers):
                key = labels.get("broker_id", "")
                grouped[key] = max(grouped.get(key, value), value)
        result = [{"metric": {"broker_id": k} if k else {},
                   "value": [NOW, str(v / 1e9 if per_1e9 else v) if v == v else "NaN"]}
                  for k, v in grouped.items()]
        return 200, {"status": "success", "data": {"resultType": "vector", "result": result}}

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def prometheus_series(broker: str, cluster_label: str = "prod", **overrides) -> list[tuple[str, dict, float]]:
    labels = {"broker_id": broker, "cluster": cluster_label, "instance": f"kafka-{broker}:7071",
              "job": "kafka"}
    values = {
        "up": 1.0, "scrape_duration_seconds": 0.05, IDLE_ONE_MINUTE: 0.9,
        "kafka_network_socketserver_networkprocessoravgidlepercent": 0.7,
        "kafka_server_replicamanager_underreplicatedpartitions": 1.0,
        "kafka_server_replicamanager_underminisrpartitioncount": 0.0,
        "kafka_server_replicamanager_partitioncount": 30.0, "kafka_server_replicamanager_leadercount": 10.0,
        "kafka_controller_kafkacontroller_offlinepartitionscount": 0.0,
        "kafka_controller_kafkacontroller_activecontrollercount": 1.0 if broker == "1" else 0.0,
        "kafka_server_brokertopicmetrics_bytesinpersec_total": 123_456.0,
        "kafka_server_brokertopicmetrics_bytesoutpersec_total": 654_321.0,
        "kafka_server_brokertopicmetrics_messagesinpersec_total": 1_234.0,
        **overrides,
    }
    series = [(name, labels, value) for name, value in values.items() if value is not None]
    series.append(("kafka_server_brokertopicmetrics_bytesinpersec_total", {**labels, "topic": "orders"}, 9e12))
    for request, quantile, value in (("Produce", "0.99", 15.0), ("Produce", "0.50", 2.0),
                                     ("FetchConsumer", "0.99", 500.0)):
        series.append(("kafka_network_requestmetrics_totaltimems",
                       {**labels, "request": request, "quantile": quantile}, value))
    return series


def prometheus_rates(broker: str, cluster_label: str = "prod", bytes_in: float | None = 2048.0,
                     idle_nanos: float | None = 3e8) -> list[tuple[str, dict, float]]:
    """Canned ``rate()`` results; None = fewer than two samples in the window (no result)."""
    labels = {"broker_id": broker, "cluster": cluster_label, "instance": f"kafka-{broker}:7071"}
    rates = [("kafka_server_brokertopicmetrics_bytesinpersec_total", {**labels, "topic": "orders"}, 9e9),
             ("kafka_server_brokertopicmetrics_bytesinpersec_total", labels, bytes_in),
             ("kafka_server_brokertopicmetrics_bytesoutpersec_total", labels, 4096.0),
             ("kafka_server_brokertopicmetrics_messagesinpersec_total", labels, 20.0),
             (IDLE_NANOS, labels, idle_nanos)]
    return [(name, series_labels, value) for name, series_labels, value in rates if value is not None]


@pytest.fixture
def prometheus():
    servers = []

    def start(series, rates, failing=()):
        servers.append(FakePrometheus(series, rates, failing))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def prometheus_cluster(url: str, endpoints=None) -> ClusterConfig:
    return cluster(source="prometheus", endpoints=endpoints or {}, prometheus_url=url + "/",
                   prometheus_selector='cluster="prod"', timeout_seconds=2)


def test_prometheus_values_are_grouped_by_the_broker_id_label_and_narrowed_by_the_selector(prometheus):
    series = (prometheus_series("1") + prometheus_series("2") + prometheus_series("3", up=0.0)
              + prometheus_series("7", cluster_label="staging")  # another cluster: the selector drops it
              + [("kafka_server_replicamanager_partitioncount", {"instance": "unlabelled:7071"}, 5.0)])
    rates = (prometheus_rates("1") + prometheus_rates("2", bytes_in=None, idle_nanos=None)
             + prometheus_rates("7", cluster_label="staging"))
    server = prometheus(series, rates)
    section = collect(BrokerMetricsCollector(prometheus_cluster(server.url), http_get_text, FakeClock()))
    assert sorted(section["by_id"]) == [1, 2, 3]
    one = section["by_id"][1]
    assert one["bytes_in_per_sec"] == 2048.0  # the broker-wide series, not topic "orders"
    assert (one["bytes_out_per_sec"], one["messages_in_per_sec"]) == (4096.0, 20.0)
    assert (one["bytes_in_total"], one["bytes_out_total"], one["messages_in_total"]) == (123_456, 654_321, 1_234)
    assert one["request_handler_idle_ratio"] == pytest.approx(0.3)  # rate of idle ns / 1e9
    assert section["by_id"][2]["request_handler_idle_ratio"] == 0.9  # no rate yet: the gauge
    assert section["by_id"][2]["bytes_in_per_sec"] is None
    assert "fewer than two samples" in section["by_id"][2]["reasons"]["bytes_in_per_sec"]
    assert (one["under_replicated_partitions"], one["partition_count"], one["leader_count"]) == (1, 30, 10)
    assert (one["produce_p99_ms"], one["fetch_p99_ms"]) == (15.0, 500.0)
    assert one["scrape_seconds"] == 0.05
    assert section["by_id"][3]["error"] == "Prometheus could not scrape this broker (up == 0)"
    assert section["by_id"][3]["partition_count"] is None
    assert section["active_controller_count"] == 1
    assert section["errors"] == {"3": "Prometheus could not scrape this broker (up == 0)"}
    assert all('cluster="prod"' in q and 'broker_id!=""' in q for q in server.queries)


def test_the_rate_window_is_the_configured_one_in_every_rate_query_and_in_the_missing_rate_reason(prometheus):
    assert (rate_window(120), rate_window(60), rate_window(90)) == ("2m", "1m", "90s")
    for config, window in ((prometheus_cluster, "2m"), (lambda url: cluster(
            source="prometheus", endpoints={}, prometheus_url=url, prometheus_rate_window_seconds=45), "45s")):
        server = prometheus(prometheus_series("1"), [])
        section = collect(BrokerMetricsCollector(config(server.url), http_get_text, FakeClock()))
        rates = [q for q in server.queries if "rate(" in q]
        assert rates and all(f"[{window}])" in q for q in rates), rates
        assert f"in the last {window}" in section["by_id"][1]["reasons"]["bytes_in_per_sec"]


def test_prometheus_reports_a_configured_broker_it_has_no_series_for(prometheus):
    server = prometheus(prometheus_series("1"), prometheus_rates("1"))
    section = collect(BrokerMetricsCollector(prometheus_cluster(server.url, endpoints={1: "x", 4: "y"}),
                                             http_get_text, FakeClock()))
    assert section["by_id"][1]["error"] is None
    assert section["by_id"][4]["error"] == 'Prometheus has no series with broker_id="4"'


def test_prometheus_without_broker_id_labels_says_so_instead_of_showing_an_empty_cluster(prometheus):
    unlabelled = [(name, {k: v for k, v in labels.items() if k != "broker_id"}, value)
                  for name, labels, value in prometheus_series("1")]
    server = prometheus(unlabelled, [])
    section = collect(BrokerMetricsCollector(prometheus_cluster(server.url), http_get_text, FakeClock()))
    assert section["brokers"] == []
    assert 'broker_id="<node id>"' in section["errors"]["prometheus"]


def test_a_failing_prometheus_query_leaves_that_field_none_with_the_error(prometheus):
    server = prometheus(prometheus_series("1"), prometheus_rates("1"),
                        failing=("kafka_server_replicamanager_leadercount",))
    section = collect(BrokerMetricsCollector(prometheus_cluster(server.url), http_get_text, FakeClock()))
    one = section["by_id"][1]
    assert one["leader_count"] is None
    assert "query timed out" in one["reasons"]["leader_count"]
    assert one["partition_count"] == 30
    assert section["errors"]["prometheus"].startswith("1 of ")


def test_an_unreachable_prometheus_is_an_error_not_an_empty_healthy_cluster():
    port = free_port()
    config = prometheus_cluster(f"http://127.0.0.1:{port}", endpoints={1: "x"})
    section = collect(BrokerMetricsCollector(config, http_get_text, FakeClock()))
    assert "prometheus" in section["errors"]
    assert section["by_id"][1]["error"].startswith("every Prometheus query failed")
    assert section["active_controller_count"] is None


# --- the real local cluster -----------------------------------------------------------------------

@pytest.mark.cluster
def test_real_cluster_produce_between_two_cycles_shows_traffic_and_a_healthy_controller(
        local_cluster, tmp_path):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    from kpulse.config import parse_config

    layout = local_cluster.layout
    dead = f"http://127.0.0.1:{free_port()}/metrics"
    endpoints = {node.node_id: node.metrics_url for node in layout.nodes} | {9: dead}
    config = parse_config({"clusters": [{"name": "local-test", "bootstrap_servers": layout.bootstrap_servers,
                                         "metrics": {"source": "jmx_exporter", "broker_endpoints": endpoints,
                                                     "timeout_seconds": 10}}],
                           "lake": {"path": str(tmp_path / "lake")}}, source="test", base_dir=tmp_path,
                          environ={})
    collector = BrokerMetricsCollector(config.cluster("local-test"))

    topic = f"broker-metrics-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": layout.bootstrap_servers})
    admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=3)])[topic].result(timeout=20)

    first = collect(collector)
    live = [first["by_id"][node.node_id] for node in layout.nodes]
    assert all(b["error"] is None for b in live), first["errors"]
    assert all(b["bytes_in_per_sec"] is None for b in live)
    assert all(b["reasons"]["bytes_in_per_sec"] == FIRST_SAMPLE for b in live)

    producer = Producer({"bootstrap.servers": layout.bootstrap_servers, "acks": "all", "linger.ms": 5})
    for i in range(2000):
        producer.produce(topic, value=b"x" * 1000, key=str(i).encode())
    assert producer.flush(20) == 0
    time.sleep(0.5)

    second = collect(collector)
    live = [second["by_id"][node.node_id] for node in layout.nodes]
    assert all(b["error"] is None for b in live), second["errors"]
    assert max(b["bytes_in_per_sec"] for b in live) > 0
    assert max(b["messages_in_per_sec"] for b in live) > 0
    for broker in live:
        assert 0.0 <= broker["request_handler_idle_ratio"] <= 1.0
        assert 0.0 <= broker["network_processor_idle_ratio"] <= 1.0
        assert broker["under_replicated_partitions"] == 0
        assert broker["partition_count"] >= 3 and broker["produce_p99_ms"] is not None
        assert 0 < broker["scrape_seconds"] < 10
    assert second["active_controller_count"] == 1
    assert second["offline_partitions"] == 0
    assert second["by_id"][9]["error"].startswith("ConnectionError")
    assert list(second["errors"]) == ["9"]
    assert [row["broker_id"] for row in second["rows"]] == [1, 2, 3, 9]
