"""A real Prometheus (Debian's ``prometheus``) scraping the test cluster's three JMX exporters and
kpulse's own exporter (``kpulse collect``), with the rule files ``kpulse alerts export-rules`` and
``kpulse slo export-rules`` write: the broker-metrics collector reads the same values through it as
from the JMX endpoints, every generated rule evaluates without error over metrics that exist, and a
killed broker fires the exported alerts (and the restart resolves them).

The server: :mod:`tests.prometheus_server` (2 s scrapes, 1 s rule evaluations)."""

from __future__ import annotations

import threading
import time
from datetime import datetime, UTC

import pytest
import yaml

from collectors.brokers.broker_metrics import BrokerMetricsCollector
from collectors.brokers.broker_values import COUNT_FIELDS, VALUE_FIELDS
from collectors.protocol import CollectContext
from tests.conftest import start_broker_and_restore_leaders
from tests.prometheus_server import EVALUATION_SECONDS, SCRAPE_SECONDS, metric_names, running_prometheus, static_job
from tests.support import admin_for, cli, commit, create_topic, fill_topic, free_port, scrape, stop_process, wait_for

pytestmark = pytest.mark.cluster

CLUSTER = "test"
"""The kpulse cluster name, and the ``cluster`` label of the brokers' targets (as in docker/prometheus)."""
GROUP, IDLE_GROUP, TOPIC = "prom-real", "prom-real-idle", "prom.real"
WINDOW_SECONDS = 60
"""The rate window of both sources here: the JMX collector's two cycles, and the Prometheus source's
``metrics.prometheus_rate_window_seconds`` (the product's default is 120 s, for scrape intervals up to
a minute; this Prometheus scrapes every 2 s)."""

RATES = ("bytes_in_per_sec", "bytes_out_per_sec", "messages_in_per_sec", "request_handler_idle_ratio")
"""Counter rates: JMX = delta between two collector cycles, Prometheus = ``rate(...[1m])``."""
MOVING_GAUGES = ("network_processor_idle_ratio", "produce_p99_ms", "fetch_p99_ms")
"""Gauges the broker recomputes all the time (a one-minute rate; a decaying histogram's p99)."""
COUNTERS = ("bytes_in_total", "bytes_out_total", "messages_in_total")
"""The brokers' traffic counters themselves: Prometheus' sample was scraped while the JMX polls ran,
so it lies between the first and the last count they read."""
JUMPING_GAUGES = ("metadata_apply_lag_ms",)
"""Gauges that jump within a second (the time since the last applied metadata record: 0 to ~500 ms
as the controller writes a record every 500 ms): a Prometheus sample up to a scrape old need not
lie between two later JMX reads. Both sources must fill them on the same nodes, with a healthy value."""
HEALTHY_APPLY_LAG_MS = 10_000
OWN_MEASURE = ("scrape_seconds",)
"""Different measurements by design: our HTTP GET against Prometheus' scrape_duration_seconds."""
RATE_TOLERANCE = {"bytes_in_per_sec": (0.05, 100.0), "bytes_out_per_sec": (0.05, 100.0),
                  "messages_in_per_sec": (0.05, 1.0), "request_handler_idle_ratio": (0.0, 0.05)}
"""(relative, absolute) per rate field. Both sources measure the same counter over 60 s, whose
ends may differ by a scrape interval each (Prometheus' newest sample is up to 2 s old and it
extrapolates to the window's ends) plus the seconds a re-read takes after a failed scrape: with a
steady rate, windows of the same length shifted by a few seconds give the same average, and what
differs is the traffic's unevenness in those seconds (the producer paces its records evenly, ten
every 0.1 s): 5 % with the evenly paced producer dominating; the absolute part covers near-zero
rates (a probe record now and then). The idle ratio is a fraction of time (0..1): 0.05."""


def collect(collector: BrokerMetricsCollector) -> dict:
    # no cluster on purpose: the collector reads its own config, not the context's
    context = CollectContext(cluster=None, now=time.time())  # type: ignore[arg-type]
    section = collector.collect(context).sections["broker_metrics"]
    assert isinstance(section, dict)  # the collector's BrokerMetricsSection
    section["by_id"] = {b["broker_id"]: b for b in section["brokers"]}
    return section


def metrics_config(layout, directory, **metrics):
    from kpulse.config import parse_config

    endpoints = {node.node_id: node.metrics_url for node in layout.nodes}
    config = parse_config({"clusters": [{"name": CLUSTER, "bootstrap_servers": layout.bootstrap_servers,
                                         "metrics": {"broker_endpoints": endpoints, "timeout_seconds": 10,
                                                     **metrics}}],
                           "lake": {"path": str(directory / "lake")}}, source="test", base_dir=directory, environ={})
    return config.cluster(CLUSTER)


def both_sources(layout, directory, prometheus) -> tuple[BrokerMetricsCollector, BrokerMetricsCollector]:
    """The broker-metrics collector on the JMX endpoints, and on the Prometheus that scrapes them."""
    return (BrokerMetricsCollector(metrics_config(layout, directory, source="jmx_exporter")),
            BrokerMetricsCollector(metrics_config(layout, directory, source="prometheus", prometheus_url=prometheus.url,
                                                  prometheus_selector=f'cluster="{CLUSTER}",job="kafka"',
                                                  prometheus_rate_window_seconds=WINDOW_SECONDS)))


@pytest.fixture(scope="module")
def collecting(local_cluster, tmp_path_factory):
    """``kpulse collect`` on the test cluster (broker metrics from the JMX exporters, the probe on,
    two groups: one consumed to the end, one expected idle) with its exporter on a free port, until
    the exporter serves the broker and group metrics. Yields (config path, exporter URL)."""
    import subprocess
    import sys

    layout = local_cluster.layout
    directory = tmp_path_factory.mktemp("prometheus-collect")
    admin = admin_for(layout.bootstrap_servers)
    fill_topic(layout.bootstrap_servers, TOPIC, {0: 10})
    commit(admin, GROUP, {(TOPIC, 0): 10})
    commit(admin, IDLE_GROUP, {(TOPIC, 0): 10})
    port = free_port()
    config = directory / "kpulse.yaml"
    config.write_text(yaml.safe_dump({
        "clusters": [{"name": CLUSTER, "bootstrap_servers": layout.bootstrap_servers,
                      "metrics": {"source": "jmx_exporter", "timeout_seconds": 10,
                                  "broker_endpoints": {n.node_id: n.metrics_url for n in layout.nodes}},
                      "consumer_groups": {"include": [GROUP, IDLE_GROUP], "expected_idle": [IDLE_GROUP]}}],
        "lake": {"path": str(directory / "lake")}, "intervals": {"collect_seconds": 1},
        "exporter": {"port": port, "host": "127.0.0.1"}}))
    url = f"http://127.0.0.1:{port}/metrics"
    log = (directory / "collect.log").open("w")
    process = subprocess.Popen([sys.executable, "-m", "cli.main", "--config", str(config), "collect"], stdout=log,
                               stderr=subprocess.STDOUT)

    def serving():
        assert process.poll() is None, (directory / "collect.log").read_text()[-3000:]
        try:
            names = {key.split("{")[0] for key in scrape(url)}
        except OSError:
            return False
        return {"kpulse_broker_request_handler_idle_ratio", "kpulse_consumergroup_status",
                "kpulse_consumergroup_expected_idle", "kpulse_probe_produce_availability"} <= names
    try:
        wait_for(serving, 180, what="kpulse's exporter serving broker, group and probe metrics")
        yield config, url
    finally:
        stop_process(process, grace=60)
        log.close()


@pytest.fixture(scope="module")
def prometheus(local_cluster, collecting, tmp_path_factory):
    """Prometheus scraping the three brokers (job ``kafka``, labels ``cluster`` and ``broker_id``, as
    docker/prometheus/prometheus.yml labels them) and kpulse (job ``kpulse``), with both exported
    rule files loaded; every target up."""
    config, exporter_url = collecting
    directory = tmp_path_factory.mktemp("prometheus")
    alerts, slos = directory / "kpulse-alerts.yml", directory / "kpulse-slo.yml"
    for args in (("alerts", "export-rules", "--job", "kafka", "--kpulse-job", "kpulse", "-o", str(alerts)),
                 ("slo", "export-rules", "-o", str(slos))):
        result = cli(config, *args)
        assert result.returncode == 0, result.stderr
    jobs = [static_job("kafka", {node.metrics_url: {"cluster": CLUSTER, "broker_id": str(node.node_id)}
                                 for node in local_cluster.layout.nodes}),
            static_job("kpulse", {exporter_url: {}})]
    with running_prometheus(directory, jobs, [alerts, slos]) as server:
        yield server


# --- the collector through Prometheus gives what it reads from the JMX endpoints -------------------------

class SteadyProducer:
    """Produces ``rate`` records of 1 kB per second to ``topic`` from a thread, evenly paced."""

    def __init__(self, bootstrap: str, topic: str, rate: float = 100.0) -> None:
        from confluent_kafka import Producer

        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
        self.topic, self.rate = topic, rate
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        began, sent = time.monotonic(), 0
        while not self.stopped.is_set():
            due = int((time.monotonic() - began) * self.rate)
            for _ in range(due - sent):
                self.producer.produce(self.topic, value=b"x" * 1000)
            sent = max(sent, due)
            self.producer.poll(0.01)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stopped.set()
        self.thread.join(30)
        self.producer.flush(30)


MOVING_TOLERANCE = {"network_processor_idle_ratio": (0.0, 0.005), "produce_p99_ms": (0.02, 1.0),
                    "fetch_p99_ms": (0.02, 1.0), **{name: (0.0, 0.0) for name in COUNTERS}}
"""(relative, absolute) beyond the range the JMX polls saw: the broker recomputes these between two
polls, so the value at the instant Prometheus scraped can lie a little outside what the polls caught
(CI saw an idle ratio 0.0012 below a two-read range, and a fetch p99 of 501.7 ms beside 502.0 ms).
0.5 % of the time for a ratio, 2 % (1 ms at least) for a p99: far below any change a reader acts on."""


def poll_jmx(collector: BrokerMetricsCollector, seconds: float) -> list[dict]:
    """JMX readings taken back to back for ``seconds`` (at least two): with ``seconds`` longer than a
    scrape interval, the sample Prometheus holds when queried right after was scraped while they ran."""
    reads, began = [collect(collector)], time.monotonic()
    while time.monotonic() - began < seconds or len(reads) < 2:
        reads.append(collect(collector))
        time.sleep(0.1)
    return reads


def gauge_mismatches(reads: list[dict], through_prometheus: dict) -> list[str]:
    """Gauge fields where Prometheus' value is not one the endpoints served while ``reads`` (JMX
    readings polled over more than a scrape interval, just before the Prometheus query) were taken:
    counts equal in every read and in Prometheus; moving gauges within the reads' [min, max] widened
    by :data:`MOVING_TOLERANCE`, counters (:data:`COUNTERS`) within it; jumping gauges filled on the
    same nodes with a healthy value."""
    problems = []
    for broker_id in sorted(reads[0]["by_id"]):
        seen = [read["by_id"][broker_id] for read in reads if broker_id in read["by_id"]]
        prom = through_prometheus["by_id"][broker_id]
        for name in (*sorted(COUNT_FIELDS), *MOVING_GAUGES, *COUNTERS):
            values = [one[name] for one in seen]
            if name in COUNT_FIELDS:
                ok = len(set(values)) == 1 and prom[name] == values[0]
            elif None in values or prom[name] is None:
                ok = set(values) == {None} and prom[name] is None
            else:
                relative, absolute = MOVING_TOLERANCE[name]
                low, high = min(values), max(values)
                slack = relative * max(abs(low), abs(high)) + absolute
                ok = low - slack <= prom[name] <= high + slack
            if not ok:
                shown = sorted(set(values), key=lambda value: (value is None, value or 0))
                problems.append(f"broker {broker_id} {name}: JMX {shown[0]}..{shown[-1]} over {len(values)} reads, "
                                f"Prometheus {prom[name]}")
        for name in JUMPING_GAUGES:
            jmx_then_prometheus = (seen[0][name], prom[name], seen[-1][name])
            if len({value is None for value in jmx_then_prometheus}) != 1 or (prom[name] is not None and not (
                    0 <= prom[name] < HEALTHY_APPLY_LAG_MS and 0 <= seen[0][name] < HEALTHY_APPLY_LAG_MS)):
                problems.append(f"broker {broker_id} {name}: JMX {seen[0][name]} then {seen[-1][name]}, "
                                f"Prometheus {prom[name]}")
    for name in ("active_controller_count", "offline_partitions", "controller_id"):
        if len({read[name] for read in reads}) != 1 or reads[0][name] != through_prometheus[name]:
            problems.append(f"cluster {name}: JMX {[read[name] for read in reads]}, Prometheus "
                            f"{through_prometheus[name]}")
    return problems


def test_the_prometheus_source_gives_the_jmx_values_within_a_scrape_interval(prometheus, local_cluster, tmp_path):
    """Same collector, two sources: ``jmx_exporter`` (the brokers' endpoints) and ``prometheus``
    (the real server scraping those endpoints). Rates are compared over the same 60 s (the JMX
    collector's two cycles span the window of ``rate(...[1m])``), with a steady producer running;
    gauges within a scrape interval (see :func:`gauge_mismatches`); every field is one or the other."""
    layout = local_cluster.layout
    assert set(VALUE_FIELDS) == set(RATES) | set(COUNT_FIELDS) | set(MOVING_GAUGES) | set(COUNTERS) | set(
        JUMPING_GAUGES) | set(OWN_MEASURE)
    jmx, through_prometheus = both_sources(layout, tmp_path, prometheus)
    gauges_only = BrokerMetricsCollector(metrics_config(layout, tmp_path, source="jmx_exporter"))
    admin = admin_for(layout.bootstrap_servers)
    create_topic(admin, "prom.traffic", 3)

    with SteadyProducer(layout.bootstrap_servers, "prom.traffic"):
        collect(jmx)
        opened = time.monotonic()
        # the window: the JMX collector's next cycle is WINDOW_SECONDS after this one
        wait_for(lambda: time.monotonic() - opened >= WINDOW_SECONDS, WINDOW_SECONDS + 10, interval=0.2,
                 what="the end of the rate window")
        before = collect(jmx)
        # a scrape that missed its timeout on this loaded machine shows as up == 0: read again after the next
        first = wait_for(lambda: (section := collect(through_prometheus))["errors"] == {} and section,
                         5 * SCRAPE_SECONDS, interval=0.2, what="a Prometheus reading where every scrape succeeded")
    assert sorted(first["by_id"]) == sorted(before["by_id"]) == [n.node_id for n in layout.nodes]
    assert before["errors"] == {}, before["errors"]

    rate_problems = []
    for broker_id in sorted(before["by_id"]):
        ours, theirs = before["by_id"][broker_id], first["by_id"][broker_id]
        for name in RATES:
            relative, absolute = RATE_TOLERANCE[name]
            a, b = ours[name], theirs[name]
            if a is None or b is None or abs(a - b) > relative * max(abs(a), abs(b)) + absolute:
                rate_problems.append(f"broker {broker_id} {name}: JMX {a}, Prometheus {b}")
        assert 0 < ours["scrape_seconds"] < 10 and 0 < theirs["scrape_seconds"] < 10
    assert rate_problems == []
    assert sum(b["messages_in_per_sec"] for b in first["brokers"]) >= 50  # the producer's 100/s was seen

    attempts = []
    while not attempts or (attempts[-1] and len(attempts) < 10):  # a count changed during the polls: again
        reads = poll_jmx(gauges_only, 2 * SCRAPE_SECONDS + 1)
        section = collect(through_prometheus)
        attempts.append(gauge_mismatches(reads, section) if section["errors"] == {} else
                        [f"a Prometheus scrape failed: {section['errors']}"])
    assert attempts[-1] == [], attempts
    unfilled = {(source, b["broker_id"]): b["reasons"] for source, section in (("JMX", before), ("Prometheus", first))
                for b in section["brokers"] if b["reasons"]}
    assert unfilled == {}, "both sources fill every field (the combined nodes export all of them)"
    admin.delete_topics(["prom.traffic"])["prom.traffic"].result(30)


# --- the generated rules load, evaluate, and fire ---------------------------------------------------------

def _rfc3339(text: str) -> float:
    """Prometheus' ``lastEvaluation`` (nanoseconds, ``Z``) as epoch seconds."""
    head, _, fraction = text.rstrip("Z").partition(".")
    return datetime.fromisoformat(head).replace(tzinfo=UTC).timestamp() + float(f"0.{fraction or 0}")


def test_every_generated_rule_group_loads_and_evaluates_without_error(prometheus):
    expected = {group["name"] for path in prometheus.rule_files for group in yaml.safe_load(path.read_text())["groups"]}
    evaluations_from = time.time() + 3 * EVALUATION_SECONDS

    def evaluated_three_times():
        groups = prometheus.rule_groups()
        done = {g["name"] for g in groups if _rfc3339(g["lastEvaluation"]) > evaluations_from}
        return groups if done == expected else None
    groups = prometheus.wait_for(evaluated_three_times, 120, "every rule group evaluated three more times")
    rules = [(group["name"], rule) for group in groups for rule in group["rules"]]
    assert len(rules) == sum(len(g["rules"]) for p in prometheus.rule_files for g in yaml.safe_load(p.read_text())["groups"])
    problems = [(name, rule["name"], rule["health"], rule.get("lastError")) for name, rule in rules
                if rule["health"] != "ok" or rule.get("lastError")]
    assert problems == []


ABSENT_HERE = {
    "kafka_streams_stream_metrics_client_state": "the Streams apps' exporters are not scraped here "
                                                 "(test_alerts checks a real Streams app exports it)",
    "kpulse_streams_app_running": "no Streams app is configured here",
    "kpulse_sharegroup_status": "no share group here",
}
"""Metrics the rules read whose source this test does not run."""


def test_every_metric_the_rules_read_is_in_prometheus_and_every_slo_records_its_samples(prometheus):
    """A metric name that the exporters do not serve makes a rule that never fires without any
    error: ask the real server for every name the alert rules and the SLO rules read."""
    exprs = [rule["expr"] for path in prometheus.rule_files for group in yaml.safe_load(path.read_text())["groups"]
             for rule in group["rules"]]
    names = {name for expr in exprs for name in metric_names(expr)} - set(ABSENT_HERE)
    recorded = {name for name in names if name.startswith("kpulse_slo:")}
    assert recorded and len(names - recorded) > 10
    missing: list[str] = []

    def every_name_served():
        missing[:] = [n for n in sorted(names - recorded) if not prometheus.query(f'count({{__name__="{n}"}})')]
        return not missing
    try:
        prometheus.wait_for(every_name_served, 60, "a series of every metric the rules read")
    except AssertionError:
        pass
    assert missing == [], "the rules read metrics nobody exports here"

    from spark_jobs.definitions import load_definitions

    slos = {slo.name for slo in load_definitions(None).slos if slo.scope != "streams_app"}

    def every_slo_recorded():
        by_slo = {series["metric"]["slo"] for series in prometheus.query("count by (slo) (kpulse_slo:error_ratio_rate5m)")}
        return by_slo >= slos and by_slo
    prometheus.wait_for(every_slo_recorded, 60, f"kpulse_slo:error_ratio_rate5m of every SLO in {sorted(slos)}")


def _alerts(prometheus, name: str, **labels: str) -> list[dict]:
    return [a for a in prometheus.alerts()
            if a["labels"].get("alertname") == name and all(a["labels"].get(k) == v for k, v in labels.items())]


def test_killing_a_broker_fires_the_exported_alerts_and_the_restart_resolves_them(prometheus, local_cluster,
                                                                                 tmp_path):
    """Broker 3 killed with a replication-factor-1 partition on it: OfflinePartitions (``for: 0s``)
    fires; the partition-health SLO's page (its error ratio over the few minutes Prometheus has
    exceeds 14.4 x the budget at once) fires; BrokerDown (``for: 1m``) is pending for broker 3 (that it
    fires once its minute has passed, and not before, tests/test_alerts.py proves on the same rule
    file with promtool's rule unit tests, instead of a minute waited here with a broker down); every
    annotation template expands. Meanwhile the collector's two sources agree: broker 3 failed, the
    same offline count and controller. After the restart none of the alerts is left."""
    bootstrap = local_cluster.layout.bootstrap_servers
    admin = admin_for(bootstrap)
    create_topic(admin, "prom.rf1", 1, config={"min.insync.replicas": "1"}, assignment=[[3]])
    prometheus.wait_for(lambda: not _alerts(prometheus, "OfflinePartitions") and not _alerts(prometheus, "BrokerDown"),
                        60, "no OfflinePartitions or BrokerDown before the kill")
    local_cluster.kill_broker(3)
    try:
        offline = prometheus.wait_for(lambda: [a for a in _alerts(prometheus, "OfflinePartitions", cluster=CLUSTER)
                                               if a["state"] == "firing"], 120, "OfflinePartitions firing")
        assert float(offline[0]["value"]) >= 1 and offline[0]["labels"]["severity"] == "critical"
        assert "kafka-topics" in offline[0]["annotations"]["runbook"]
        # seen within seconds of the kill, well inside its minute
        broker_down = prometheus.wait_for(lambda: _alerts(prometheus, "BrokerDown", broker_id="3"), 30,
                                          "BrokerDown for broker 3")
        assert [alert["state"] for alert in broker_down] == ["pending"]
        assert broker_down[0]["labels"]["severity"] == "critical" and broker_down[0]["labels"]["cluster"] == CLUSTER
        jmx, through_prometheus = both_sources(local_cluster.layout, tmp_path, prometheus)
        disagreement: list = []

        def sources_agree():
            ours, theirs = collect(jmx), collect(through_prometheus)
            disagreement[:] = [(name, ours[name], theirs[name])
                               for name in ("offline_partitions", "active_controller_count", "controller_id")
                               if ours[name] != theirs[name]]
            return not disagreement and (ours, theirs)
        ours, theirs = prometheus.wait_for(sources_agree, 60, "both sources agreeing on offline partitions, active controllers and the controller")
        assert ours["offline_partitions"] >= 1 and ours["active_controller_count"] == 1
        assert theirs["by_id"][3]["error"] == "Prometheus could not scrape this broker (up == 0)"
        assert ours["by_id"][3]["error"] and "3" in ours["errors"] and "3" in theirs["errors"]
        prometheus.wait_for(lambda: [a for a in _alerts(prometheus, "KpulseSloBurnRatePage", slo="partition-health",
                                                        cluster=CLUSTER) if a["state"] == "firing"],
                            120, "the partition-health SLO paging")
        annotations = [text for alert in prometheus.alerts() for text in alert["annotations"].values()]
        assert annotations and not [text for text in annotations if "error expanding" in text or "<no value>" in text]
    finally:
        start_broker_and_restore_leaders(3, bootstrap)
    prometheus.wait_for(lambda: not _alerts(prometheus, "OfflinePartitions") and not _alerts(prometheus, "BrokerDown"),
                        120, "OfflinePartitions and BrokerDown resolved")
    admin.delete_topics(["prom.rf1"])["prom.rf1"].result(30)
