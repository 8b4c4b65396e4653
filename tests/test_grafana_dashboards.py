"""kpulse's Grafana dashboards (docker/grafana/dashboards/, written by docker/grafana/dashboards.py) and
the peers' dashboards kpulse stands in for, against a real Prometheus (Debian's, as in
tests/test_prometheus_real.py: ``tests/prometheus_server.py``) scraping ``kpulse collect`` on the test
cluster with the demo workload running and the kafka-lag-exporter profile on:

- the files are well formed (every panel queries the provisioned Prometheus through ``$datasource``,
  states its unit, has a unique id and title; every query is scoped by ``$cluster``), and are what
  the generator writes;
- every query of every shipped dashboard returns data, as Grafana sends it (template variables
  resolved as Grafana resolves them: ``tests/grafana_queries.py``), and none does for a cluster
  nobody scrapes;
- so does every query of kafka_exporter's own overview dashboard and of kafka-lag-exporter's
  dashboard (their queries, source and commit: tests/data/grafana/), but the three panels of
  kafka-lag-exporter's own JVM.

The SLO panels read what the SLO job wrote. The collection loop first runs in this process, a cycle
a second and each flushed to the lake, until the demo shows everything the dashboards chart
(``kpulse collect`` flushes once a minute: the job would see its first cycle only); the job then runs
once on that lake (in-process Spark, the session's ``spark`` fixture), up to the end of the current
minute so that minute counts without waiting for it to close, while ``kpulse collect`` starts on the
same config; Prometheus scrapes it only after the job (its exporter reads the SLO status at the
first scrape, then once a minute)."""

from __future__ import annotations

import functools
import importlib.util
import json
import math
import re
import socket
import subprocess
import sys
import time
import urllib.parse
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from localkafka.demo.topology import CONSUMERS, KIP1071_APPLICATION_ID, SHARE_GROUP, STREAMS_APPLICATION_ID
from tests.alertmanager_support import Recorder
from tests.conftest import ARTIFACTS
from tests.grafana_queries import (PEER_DASHBOARDS, DashboardResult, all_panels, peer_dashboard,
                                   read_grafana_dashboard, run_queries)
from tests.prometheus_server import SCRAPE_SECONDS, running_prometheus, static_job
from tests.slo_spark import spark  # noqa: F401 - the shared session fixture
from tests.support import free_port, stop_process, wait_for

ROOT = Path(__file__).resolve().parent.parent
GRAFANA = ROOT / "docker" / "grafana"
DASHBOARD_DIR = GRAFANA / "dashboards"
DATASOURCES_FILE = GRAFANA / "provisioning" / "datasources" / "prometheus.yml"
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
TARGET_SERIES = frozenset({"up", "scrape_duration_seconds", "scrape_samples_scraped"})
"""Prometheus' own series of a scrape target: no ``cluster`` label (one kpulse serves every
cluster); selected by ``job="$job"``."""
CLUSTER = "grafana"
NAMESPACE = "kafka"
"""The ``namespace`` target label, as Kubernetes service discovery sets it (kafka-lag-exporter's
dashboard selects it)."""
NO_SUCH_CLUSTER = "kpulse-no-such-cluster"
SAVED = ARTIFACTS / "grafana"
GRAFANA_UNITS = frozenset({"none", "short", "s", "ms", "bytes", "Bps", "percentunit", "percent", "ops", "reqps", "cps"})
"""Grafana unit ids a dashboard may use (besides custom ``count:<unit>`` and ``suffix:<unit>``)."""


@functools.cache
def generator():
    """docker/grafana/dashboards.py as a module (docker/ is no package)."""
    spec = importlib.util.spec_from_file_location("kpulse_grafana_dashboards", GRAFANA / "dashboards.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def shipped() -> dict[str, dict]:
    return {path.name: json.loads(path.read_text()) for path in sorted(DASHBOARD_DIR.glob("*.json"))}


def provisioned_uids() -> set[str]:
    return {source["uid"] for source in yaml.safe_load(DATASOURCES_FILE.read_text())["datasources"]}


# --- the files' structure ---------------------------------------------------------------------------------

_SELECTOR = re.compile(r"([A-Za-z_:][\w:]*)\s*\{([^}]*)\}")
_VARIABLE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\[\[(\w+)\]\]|\$(\w+)")


def expr_problems(expr: str, variables: set[str]) -> list[str]:
    """A query's references to undefined variables, and its selectors without the cluster's (or, for
    a target's own series, the job's) matcher."""
    problems = []
    for match in _VARIABLE.finditer(expr):
        name = match.group(1) or match.group(2) or match.group(3)
        if not (name in variables or name.startswith("__") or name.isdigit()):
            problems.append(f"${name} is not a variable of the dashboard")
    for name, matchers in _SELECTOR.findall(expr):
        needed = 'job="$job"' if name in TARGET_SERIES else 'cluster="$cluster"'
        if needed not in matchers.replace(" ", ""):
            problems.append(f"{name}{{{matchers}}} does not select {needed}")
    return problems


def structure_problems(doc: dict, datasource_uids: set[str]) -> list[str]:
    """What is wrong with one dashboard document (empty when nothing)."""
    name = doc.get("uid") or "(no uid)"
    problems = [f"{name}: no {key}" for key in ("uid", "title") if not doc.get(key)]
    variables = doc.get("templating", {}).get("list", [])
    names = [v.get("name") for v in variables]
    problems += [f"{name}: variable ${n} defined {count} times" for n, count in Counter(names).items() if count > 1]
    by_name = {v.get("name"): v for v in variables}
    source = by_name.get("datasource") or {}
    if source.get("type") != "datasource" or source.get("query") != "prometheus":
        problems.append(f"{name}: no Prometheus data source variable $datasource")
    elif (source.get("current") or {}).get("value") not in datasource_uids:
        problems.append(f"{name}: $datasource defaults to {(source.get('current') or {}).get('value')!r}, "
                        f"not the provisioned {sorted(datasource_uids)}")
    cluster = by_name.get("cluster") or {}
    if cluster.get("type") != "query" or cluster.get("multi") or cluster.get("includeAll"):
        problems.append(f"{name}: no single-valued query variable $cluster")
    problems += [f"{name}: variable ${v.get('name')} does not query $datasource" for v in variables
                 if v.get("type") == "query" and v.get("datasource") != DATASOURCE]
    panels = all_panels(doc.get("panels", []))
    problems += [f"{name}: panel id {i} used {count} times" for i, count in
                 Counter(p.get("id") for p in panels).items() if count > 1 or not isinstance(i, int)]
    problems += [f"{name}: {count} panels titled {t!r}" for t, count in
                 Counter(p.get("title") for p in panels if p.get("type") != "row").items() if count > 1]
    for panel in panels:
        where = f"{name} panel {panel.get('id')} {panel.get('title')!r}"
        grid = panel.get("gridPos") or {}
        if not (grid.get("x", -1) >= 0 and grid.get("w", 0) > 0 and grid.get("h", 0) > 0
                and grid["x"] + grid["w"] <= 24 and grid.get("y", -1) >= 0):
            problems.append(f"{where}: gridPos {grid} outside the 24 columns")
        if panel.get("type") == "row":
            continue
        if panel.get("datasource") != DATASOURCE:
            problems.append(f"{where}: data source {panel.get('datasource')} is not $datasource")
        unit = (panel.get("fieldConfig") or {}).get("defaults", {}).get("unit")
        if not unit:
            problems.append(f"{where}: no unit")
        elif unit not in GRAFANA_UNITS and not re.fullmatch(r"(count|suffix):\S.*", unit):
            problems.append(f"{where}: unit {unit!r} is not a Grafana unit")
        targets = panel.get("targets") or []
        if not targets:
            problems.append(f"{where}: no query")
        problems += [f"{where}: refId {r} used {count} times" for r, count in
                     Counter(t.get("refId") for t in targets).items() if count > 1]
        for target in targets:
            if target.get("datasource") != DATASOURCE:
                problems.append(f"{where}: query {target.get('refId')} does not use $datasource")
            expr = (target.get("expr") or "").strip()
            if not expr:
                problems.append(f"{where}: query {target.get('refId')} has no expr")
            problems += [f"{where}: {problem}" for problem in expr_problems(expr, set(names))]
    return problems


def test_the_dashboard_files_are_what_the_generator_writes():
    """docker/grafana/dashboards/*.json are written by docker/grafana/dashboards.py; an edit of the
    JSON alone would be lost at the next run."""
    written = {name: generator().text(doc) for name, doc in generator().dashboards().items()}
    assert {path.name: path.read_text() for path in DASHBOARD_DIR.glob("*.json")} == written


def test_every_shipped_dashboard_is_well_formed():
    docs = shipped()
    assert set(docs) == {"kpulse-cluster.json", "kpulse-consumer-lag.json", "kpulse-streams.json",
                         "kpulse-share-groups.json", "kpulse-slo.json", "kpulse-health.json"}
    uids = provisioned_uids()
    assert [problem for doc in docs.values() for problem in structure_problems(doc, uids)] == []
    for key in ("uid", "title"):
        assert len({doc[key] for doc in docs.values()}) == len(docs), f"dashboards share a {key}"


def test_the_structure_check_finds_each_kind_of_problem():
    source = {"name": "datasource", "type": "datasource", "query": "prometheus", "current": {"value": "other"}}
    panel = {"id": 2, "type": "timeseries", "title": "Lag", "datasource": DATASOURCE,
             "gridPos": {"x": 0, "y": 0, "w": 12, "h": 8}, "fieldConfig": {"defaults": {"unit": "s"}},
             "targets": [{"refId": "A", "datasource": DATASOURCE, "expr": 'kpulse_lag{cluster="$cluster"}'}]}
    broken = {"uid": "b", "title": "Broken", "templating": {"list": [source, {"name": "cluster", "type": "custom"}]},
              "panels": [
                  panel,
                  {**panel, "gridPos": {"x": 20, "y": 0, "w": 12, "h": 8}},
                  {**panel, "id": 3, "title": "No unit", "fieldConfig": {"defaults": {}},
                   "datasource": {"type": "prometheus", "uid": "abc"}},
                  {**panel, "id": 4, "title": "Queries", "targets": [
                      {"refId": "A", "datasource": DATASOURCE, "expr": 'kpulse_lag{topic="$topic"}'},
                      {"refId": "A", "datasource": DATASOURCE, "expr": ""}]},
                  {**panel, "id": 5, "title": "No query", "targets": [], "fieldConfig": {"defaults": {"unit": "byts"}}},
                  {**panel, "id": 6, "title": "Scrape", "targets": [
                      {"refId": "A", "datasource": DATASOURCE, "expr": 'up{cluster="$cluster"}'}]}]}
    assert structure_problems(broken, {"kpulse-prometheus"}) == [
        "b: $datasource defaults to 'other', not the provisioned ['kpulse-prometheus']",
        "b: no single-valued query variable $cluster",
        "b: panel id 2 used 2 times",
        "b: 2 panels titled 'Lag'",
        "b panel 2 'Lag': gridPos {'x': 20, 'y': 0, 'w': 12, 'h': 8} outside the 24 columns",
        "b panel 3 'No unit': data source {'type': 'prometheus', 'uid': 'abc'} is not $datasource",
        "b panel 3 'No unit': no unit",
        "b panel 4 'Queries': refId A used 2 times",
        "b panel 4 'Queries': $topic is not a variable of the dashboard",
        'b panel 4 \'Queries\': kpulse_lag{topic="$topic"} does not select cluster="$cluster"',
        "b panel 4 'Queries': query A has no expr",
        "b panel 5 'No query': unit 'byts' is not a Grafana unit",
        "b panel 5 'No query': no query",
        'b panel 6 \'Scrape\': up{cluster="$cluster"} does not select job="$job"']
    assert structure_problems({}, set())[:3] == ["(no uid): no uid", "(no uid): no title",
                                                  "(no uid): no Prometheus data source variable $datasource"]


def test_the_peer_dashboards_are_kept_with_their_source_and_commit():
    for path in PEER_DASHBOARDS.values():
        doc = yaml.safe_load(path.read_text())
        assert re.fullmatch(r"[0-9a-f]{40}", doc["commit"]) and re.fullmatch(r"[0-9a-f]{40}",
                                                                             doc["file_last_changed_in"])
        assert doc["source"] == f"https://github.com/{doc['repository']}/blob/{doc['commit']}/{doc['path']}"
        dashboard = peer_dashboard(path)
        assert dashboard.panels and all(panel.queries for panel in dashboard.panels)
    skipped = {p.title for p in peer_dashboard(PEER_DASHBOARDS["kafka_lag_exporter"]).panels if p.not_applicable}
    assert skipped == {"JVM Memory Used", "JVM GC Time", "JVM GC Rate"}
    assert not [p for p in peer_dashboard(PEER_DASHBOARDS["kafka_exporter"]).panels if p.not_applicable]


# --- against a real Prometheus scraping kpulse on the demo ------------------------------------------------

DEMO_GROUPS = {consumer.group for consumer in CONSUMERS} | {STREAMS_APPLICATION_ID}


@pytest.fixture(scope="module")
def alertmanager():
    """Where kpulse sends its alerts (an HTTP server answering 200), so the delivery panels have data."""
    recorder = Recorder()
    yield recorder
    recorder.close()


def demo_config(layout, lake: Path, exporter_port: int, alertmanager_url: str) -> dict:
    """kpulse on the test cluster with the demo: every group, both Streams apps, the probe, broker
    metrics from the JMX exporters, alerts sent, kafka_exporter's and kafka-lag-exporter's series."""
    streams = [(STREAMS_APPLICATION_ID, (1, 2)), (KIP1071_APPLICATION_ID, (3,))]
    return {"clusters": [{"name": CLUSTER, "bootstrap_servers": layout.bootstrap_servers,
                          "metrics": {"source": "jmx_exporter", "timeout_seconds": 10,
                                      "broker_endpoints": {n.node_id: n.metrics_url for n in layout.nodes}},
                          "streams_apps": [{"application_id": app, "expected_instances": len(slots),
                                            "metrics_endpoints": [f"http://127.0.0.1:{layout.streams_metrics_port(j)}"
                                                                  "/metrics" for j in slots]}
                                           for app, slots in streams]}],
            "lake": {"path": str(lake)}, "intervals": {"collect_seconds": 2},
            "exporter": {"port": exporter_port, "host": "127.0.0.1",
                         "compatibility": ["kafka_exporter", "kafka_lag_exporter"]},
            "alerting": {"alertmanager": {"urls": [alertmanager_url]}}}


def charted(snapshot: Mapping[str, Any]) -> bool:
    """The snapshot holds every kind of thing the dashboards chart: the demo's groups with a time
    lag and one stopped (its SLO burns), the share group, both Streams apps, the probe, the brokers'
    idle ratios (two readings), a firing alert."""
    groups = {g["group_id"]: g for g in snapshot.get("consumer_groups") or []}
    shares = {g["group_id"] for g in (snapshot.get("share_groups") or {}).get("groups") or []}
    apps = [app for app in snapshot.get("streams_apps") or [] if app.get("state") is not None]
    return bool(DEMO_GROUPS <= set(groups) and SHARE_GROUP in shares and len(apps) == 2
                and all(b.get("request_handler_idle_ratio") is not None for b in snapshot.get("brokers") or [])
                and any(g.get("max_lag_seconds") is not None for g in groups.values())
                and any(g.get("status") == "STOP" for g in groups.values())
                and (snapshot.get("probe") or {}).get("produce_availability") is not None
                and snapshot.get("alerts"))


@pytest.fixture(scope="module")
def lake(local_cluster, demo_workload, alertmanager, tmp_path_factory) -> Path:
    """kpulse's config file, next to a lake of the demo's samples up to a snapshot where everything
    is :func:`charted`: written by the collection loop in this process, a cycle a second, each
    flushed (``kpulse collect`` flushes once a minute: the SLO job would see its first cycle only)."""
    from collectors.runner import CollectionService
    from kpulse.config import load_config

    directory = tmp_path_factory.mktemp("grafana")
    config = directory / "kpulse.yaml"
    config.write_text(yaml.safe_dump(demo_config(local_cluster.layout, directory / "lake", free_port(),
                                                 alertmanager.url)))
    service = CollectionService(load_config(config), flush_seconds=0, deliver_alerts=False)
    try:
        deadline = time.monotonic() + 180
        while not charted(service.cycle().snapshots[CLUSTER]):
            assert time.monotonic() < deadline, "the demo never showed everything the dashboards chart"
            time.sleep(1)
    finally:
        service.close()
    return config


@pytest.fixture(scope="module")
def slo_status(lake, spark):  # noqa: F811 - the shared session fixture
    """The SLO job's status rows on that lake (before ``kpulse collect`` serves them: its exporter
    reads them once a minute), up to the end of the current minute so that minute counts now."""
    from spark_jobs.definitions import load_definitions
    from spark_jobs.job import run

    result = run(spark, str(lake.parent / "lake"), load_definitions(None),
                 until=(math.floor(time.time() / 60) + 1) * 60)
    assert result.latest, "the SLO job evaluated nothing"
    return result.latest


@pytest.fixture(scope="module")
def collect_started(lake):
    """``kpulse collect`` on that config, started (it boots while the SLO job runs); (process, the
    exporter's URL)."""
    config = yaml.safe_load(lake.read_text())
    log = (lake.parent / "collect.log").open("w")
    process = subprocess.Popen([sys.executable, "-m", "cli.main", "--config", str(lake), "collect"], stdout=log,
                               stderr=subprocess.STDOUT)
    try:
        yield process, f"http://127.0.0.1:{config['exporter']['port']}/metrics"
    finally:
        stop_process(process, grace=60)
        log.close()


@pytest.fixture(scope="module")
def collecting(collect_started, slo_status, lake):
    """kpulse's exporter URL once it listens, not asked anything before the SLO job wrote its status
    (the exporter reads it at the first scrape, then once a minute)."""
    process, url = collect_started
    address = urllib.parse.urlsplit(url)

    def listening():
        assert process.poll() is None, (lake.parent / "collect.log").read_text()[-3000:]
        try:
            socket.create_connection((address.hostname, address.port), timeout=1).close()
        except OSError:
            return False
        return True
    wait_for(listening, 60, what="kpulse collect's exporter listening")
    return url


@pytest.fixture(scope="module")
def prometheus(collecting, tmp_path_factory):
    """Prometheus scraping kpulse (job ``kpulse``, target label ``namespace``) every 2 s, once it
    has scraped it."""
    exporter_url = collecting
    jobs = [static_job("kpulse", {exporter_url: {"namespace": NAMESPACE}})]
    with running_prometheus(tmp_path_factory.mktemp("grafana-prometheus"), jobs) as server:
        yield server


@pytest.fixture(scope="module")
def answered(prometheus) -> dict[str, DashboardResult]:
    """Every dashboard's queries, asked until all return data (at most two minutes: the collector's
    first cycles, a rate's two scrapes after them) or the time is up; the last answers."""
    dashboards = {**{name: read_grafana_dashboard(DASHBOARD_DIR / name) for name in shipped()},
                  **{name: peer_dashboard(path) for name, path in PEER_DASHBOARDS.items()}}
    results: dict[str, DashboardResult] = {}

    def all_answered():
        now = time.time()
        results.update({name: run_queries(d, prometheus, now, SCRAPE_SECONDS) for name, d in dashboards.items()})
        return not any(result.without_data() for result in results.values())
    try:
        prometheus.wait_for(all_answered, 120, "every query of every dashboard returning data")
    except AssertionError:
        pass  # each test names its queries without data
    SAVED.mkdir(parents=True, exist_ok=True)  # the counts, to read after the run
    (SAVED / "queries.txt").write_text("".join(
        "\n".join([result.summary(), *result.without_data()]) + "\n" for result in results.values()))
    return results


@pytest.mark.cluster
def test_every_query_of_every_shipped_dashboard_returns_data(answered):
    names = sorted(shipped())
    assert [line for name in names for line in answered[name].without_data()] == []
    panels = sum(len([p for p in all_panels(doc["panels"]) if p["type"] != "row"]) for doc in shipped().values())
    assert sum(answered[name].counts()["panels_with_data"] for name in names) == panels


@pytest.mark.cluster
def test_no_shipped_query_returns_data_for_a_cluster_nobody_scrapes(answered, prometheus):
    """Every query is scoped by $cluster: set to a cluster no series has, none returns anything (so
    a Prometheus scraping several clusters' kpulse never sums them)."""
    now = time.time()
    leaking = [f"{name}: {q.panel.title}: {q.expr}" for name in sorted(shipped())
               for result in [run_queries(read_grafana_dashboard(DASHBOARD_DIR / name), prometheus, now,
                                          SCRAPE_SECONDS, fixed={"cluster": NO_SUCH_CLUSTER})]
               for panel in result.panels for q in panel.queries if q.series or q.error]
    assert leaking == []


@pytest.mark.cluster
def test_every_query_of_kafka_exporters_overview_returns_data(answered):
    result = answered["kafka_exporter"]
    assert result.without_data() == []
    assert result.counts()["panels_with_data"] == len(result.dashboard.panels) == 5


@pytest.mark.cluster
def test_every_query_of_kafka_lag_exporters_dashboard_returns_data_with_the_profile_on(answered):
    """Its panels repeated per consumer group are asked for every group of the demo."""
    result = answered["kafka_lag_exporter"]
    assert result.without_data() == []
    assert result.counts()["panels_with_data"] == 6 and len(result.not_applicable) == 3
    repeated = {q.repeat_value for p in result.panels for q in p.queries if q.repeat_value is not None}
    assert DEMO_GROUPS <= repeated
