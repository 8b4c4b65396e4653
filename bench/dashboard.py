"""Render time of every dashboard page at scale, two ways.

**AppTest** (the default): 2,000 topics, 20,000 partitions, 2,000 consumer groups (``--groups``; 10
partitions each), one hour of history at a 10 s interval (``--history-cycles``).

Run: ``.venv/bin/python bench/dashboard.py [--runs 5] [--groups 10000]``. It writes the lake with the real
``LakeWriter`` (tests/dashboard_lake.py: 720,000 consumer_group rows for the lag history, SLO
evaluations for every group) in a temporary directory, then times each page with Streamlit's
AppTest (the script run on the server, without the browser): the first render with every cache
cleared (snapshot parsed, lake read, metadata fetched) and the median of ``--runs`` reruns. Topic metadata comes from a recorded-shape
Admin client serving 20,000 partitions, so the Topics figure excludes the Admin API round trip.
Goal: 1 s or less per page.

**In a browser** (``--browser --bootstrap HOST:PORT``): the real thing on a real cluster, already
built (e.g. by part of the lag bench: ``bench/scale_state.py --bootstrap B --groups 10000``; or
``--build-topics 200 --build-groups 1000`` here builds a small state of empty groups with a few
lines; topics at replication factor 1 unless ``--build-replication-factor``). At the issue's scale
(2,000 topics, 20,000 partitions, 10,000 groups): the lag bench's state (1,000 topics), then
``--build-topics 1000`` adds 1,000 more (``bench-topic-NNNN``). It starts ``kpulse collect`` (10 s cycles) and ``kpulse dashboard`` on a config of its own
(lake in a temporary directory), waits for a snapshot with the cluster's groups, then opens each
page in headless Chromium (``tests/dashboard_browser.py``) ``1 + --runs`` times, each a fresh
session, and times from navigation until the page's key text (its last section) is shown and Streamlit no
longer says "Running...": the Overview, Brokers, Topics (its Admin API calls included: metadata,
configs, log dirs, offsets), a topic detail, Consumer groups, a group detail, a search in the
group list, its last page, Streams apps, Share groups, SLOs, Alerts, Operations. Beside each: the
server time, the script runs' duration the dashboard logs (``KPULSE_DASHBOARD_TIMING_FILE``).
"first" is the first load, the medians are of the ``--runs`` after it. Each page of the sidebar is
also timed "in-app": from another page of the loaded app, by a click on its sidebar link (how a
user moves between pages: no new document, scripts or session). Goal: 1.5 s or less to key text, 1
s or less on the server, at 10,000 groups.

    .venv/bin/python bench/dashboard.py --browser --bootstrap 127.0.0.1:34592 [--runs 3] [--port 37600]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import Future
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from tests.dashboard_lake import CLUSTER, write_lake  # noqa: E402

TOPICS, PARTITIONS_PER_TOPIC, GROUPS, PARTITIONS_PER_GROUP = 2000, 10, 2000, 10
HISTORY_CYCLES = 360
PAGES = ["overview", "brokers", "topics", "groups", "streams", "slos", "alerts"]


class RecordedAdmin:
    """Answers like confluent-kafka's AdminClient for a cluster of ``TOPICS`` x ``PARTITIONS_PER_TOPIC``."""

    def __init__(self) -> None:
        topics = {}
        for t in range(TOPICS):
            partitions = {p: SimpleNamespace(leader=1 + (t + p) % 3, replicas=[1 + (t + p + r) % 3 for r in range(3)],
                                             isrs=[1 + (t + p + r) % 3 for r in range(3)]) for p in range(PARTITIONS_PER_TOPIC)}
            topics[f"topic-{t:04d}"] = SimpleNamespace(partitions=partitions, error=None)
        self._metadata = SimpleNamespace(topics=topics)

    def list_topics(self, timeout=None):
        return self._metadata

    def describe_configs(self, resources, request_timeout=None):
        entry = lambda value: SimpleNamespace(value=value, source=SimpleNamespace(name="DYNAMIC_TOPIC_CONFIG"),  # noqa: E731
                                              is_default=False)
        result = {}
        for resource in resources:
            future = Future()
            future.set_result({"min.insync.replicas": entry("2"), "retention.ms": entry("604800000")})
            result[resource] = future
        return result

    def describe_log_dirs(self, topics):
        return [{"broker": b, "log_dirs": [{"error_code": 0, "topics": [
            {"name": t, "partitions": [{"partition_index": p, "partition_size": 1_000_000} for p in
                                       range(PARTITIONS_PER_TOPIC)]} for t in topics]}]} for b in (1, 2, 3)]

    def list_offsets(self, request, request_timeout=None):
        result = {}
        for tp in request:
            future = Future()
            future.set_result(SimpleNamespace(offset=1000))
            result[tp] = future
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--groups", type=int, default=GROUPS)
    parser.add_argument("--history-cycles", type=int, default=HISTORY_CYCLES,
                        help="cycles of 10 s of group history in the lake (default: one hour)")
    parser.add_argument("--browser", action="store_true", help="time the pages in Chromium on a real cluster")
    parser.add_argument("--bootstrap", help="with --browser: the cluster's bootstrap servers")
    parser.add_argument("--port", type=int, default=37600,
                        help="with --browser: the dashboard's port (DevTools +1, exporter +2)")
    parser.add_argument("--build-topics", type=int, default=0, help="with --browser: first create this many topics")
    parser.add_argument("--build-groups", type=int, default=0,
                        help="with --browser: first commit offsets for this many groups (10 partitions each)")
    parser.add_argument("--build-replication-factor", type=int, default=1,
                        help="with --build-topics: of the topics created (default 1: at 3, 1,000 more topics "
                             "overloaded the bench's three 1 GB brokers; the pages read the same either way)")
    parser.add_argument("--collect-seconds", type=float, default=10.0)
    args = parser.parse_args()
    if args.browser:
        if not args.bootstrap:
            parser.error("--browser needs --bootstrap")
        browser_bench(args)
        return
    logging.getLogger("streamlit").setLevel(logging.ERROR)
    directory = Path(tempfile.mkdtemp(prefix="kpulse-bench-dashboard-"))
    try:
        began = time.monotonic()
        print(f"writing the lake: {args.groups} groups x {PARTITIONS_PER_GROUP} partitions, {args.history_cycles} "
              "cycles ...", flush=True)
        write_lake(str(directory / "lake"), time.time(), groups=args.groups, partitions_per_group=PARTITIONS_PER_GROUP,
                   topics=TOPICS, history_cycles=args.history_cycles, slo_for_every_group=True)
        print(f"  done in {time.monotonic() - began:.1f} s", flush=True)
        config = {"clusters": [{"name": CLUSTER, "bootstrap_servers": "recorded:9092"}],
                  "lake": {"path": str(directory / "lake")}, "intervals": {"collect_seconds": 3600}}
        (directory / "kpulse.yaml").write_text(yaml.safe_dump(config))
        os.environ["KPULSE_CONFIG"] = str(directory / "kpulse.yaml")
        import streamlit as st
        from streamlit.testing.v1 import AppTest

        from dashboard.frame import SOURCES_KEY
        from dashboard.services.sources import load_sources

        admin = RecordedAdmin()
        sources = load_sources()
        sources = type(sources)(sources.config, admin_factory=lambda settings: admin,
                                log_dirs_factory=lambda cluster: admin)
        print(f"\n{'page':<10} {'first render (s)':>17} {'median of ' + str(args.runs) + ' (s)':>16}   errors")
        for page in PAGES:
            app = AppTest.from_file(str(ROOT / "dashboard" / "app.py"), default_timeout=120)
            app.session_state[SOURCES_KEY] = sources
            app.run()
            app.switch_page(f"app_pages/{page}.py")
            st.cache_data.clear()  # the first render pays for every read: snapshot, lake, Admin API
            st.cache_resource.clear()
            started = time.perf_counter()
            app.run()
            first = time.perf_counter() - started
            times = []
            for _ in range(args.runs):
                started = time.perf_counter()
                app.run()
                times.append(time.perf_counter() - started)
            problems = [e.value for e in app.exception] + [e.value for e in app.error]
            print(f"{page:<10} {first:>17.3f} {statistics.median(times):>16.3f}   {'; '.join(problems) or '-'}",
                  flush=True)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


# --- in a browser, on a real cluster ------------------------------------------------------------------

BENCH_CLUSTER = "bench"


def build_state(bootstrap: str, topics: int, groups: int, replication_factor: int = 1) -> None:
    """``topics`` topics of 10 partitions with 10 records each, and ``groups`` groups without members,
    each committed at offset 5 on the 10 partitions of one topic (group i on topic i mod topics).
    Every delivery and every commit is checked."""
    from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, Message, Producer, TopicPartition
    from confluent_kafka.admin import NewTopic

    from kpulse.kafka.clients import admin_client

    admin = admin_client({"bootstrap.servers": bootstrap})
    names = [f"bench-topic-{t:04d}" for t in range(topics)]
    existing = set(admin.list_topics(timeout=30).topics)
    new = [NewTopic(n, 10, replication_factor, config={"min.insync.replicas": str(min(2, replication_factor))})
           for n in names if n not in existing]
    for start in range(0, len(new), 100):
        for _name, future in admin.create_topics(new[start:start + 100], request_timeout=60).items():
            future.result(timeout=120)
    _wait(lambda: all(p.leader >= 0 for t, m in admin.list_topics(timeout=30).topics.items() if t in set(names)
                      for p in m.partitions.values()), 300, "a leader for every partition")
    print(f"  {len(new)} topics created, every partition led", flush=True)
    failed: list[KafkaError] = []

    def on_delivery(error: KafkaError | None, _message: Message) -> None:
        if error:
            failed.append(error)

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 50, "enable.idempotence": True,
                         "delivery.timeout.ms": 600_000, "request.timeout.ms": 120_000})
    for name in names:
        for p in range(10):
            for _ in range(10):
                producer.produce(name, b"x", partition=p, on_delivery=on_delivery)
        producer.poll(0)
    deadline = time.monotonic() + 600
    while producer.flush(10) and time.monotonic() < deadline:
        pass
    if len(producer) or failed:
        raise SystemExit(f"records not delivered: {len(producer)} in flight, {failed[:3]}")
    print(f"  {topics * 100} records delivered", flush=True)
    requests = [ConsumerGroupTopicPartitions(f"bench-group-{g:05d}", [TopicPartition(names[g % topics], p, 5)
                                                                      for p in range(10)]) for g in range(groups)]
    for _attempt in range(30):  # the first commits wait for __consumer_offsets' coordinators: retried
        failed_groups = []
        for start in range(0, len(requests), 100):  # 100 commits in flight at a time
            batch = requests[start:start + 100]
            futures = {r.group_id: admin.alter_consumer_group_offsets([r], request_timeout=60)[r.group_id]
                       for r in batch}
            for request in batch:
                try:
                    answer = futures[request.group_id].result(timeout=120)
                    errors = [tp.error for tp in answer.topic_partitions if tp.error is not None]
                except Exception as error:  # noqa: BLE001 - NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS
                    errors = [error]
                if errors:
                    failed_groups.append((request, errors[0]))
        print(f"  {len(requests) - len(failed_groups)} groups committed", flush=True)
        if not failed_groups:
            return
        requests = [request for request, _ in failed_groups]
        time.sleep(2)
    raise SystemExit(f"commits failed: {failed_groups[0][0].group_id}: {failed_groups[0][1]}")


def _wait(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.5)
    raise SystemExit(f"timed out waiting for {what}")


def _server_seconds(timing: Path, page: str, since: float) -> float | None:
    """The full script runs of ``page`` logged since ``since``, summed (None: none logged)."""
    if not timing.exists():
        return None
    runs = [json.loads(line) for line in timing.read_text().splitlines() if line.strip()]
    seconds = [r["seconds"] for r in runs if r["page"] == page and r["time"] >= since]
    return sum(seconds) if seconds else None


def _shows(text: str, wanted) -> bool:
    """Every item of ``wanted`` is in ``text`` (an item may be a tuple of alternatives)."""
    return all(any(w in text for w in (item if isinstance(item, tuple) else (item,))) for item in wanted)


def timed_load(browser, url: str, texts, *, action=None, before=(), timeout: float = 120) -> tuple[float, float]:
    """Seconds from navigating to ``url`` (or, with ``action``, from calling it once ``before`` is
    shown) until every text of ``texts`` is shown and Streamlit is not "Running...", and the epoch
    time the clock started."""
    if action is not None:
        browser.open(url)
        browser.wait_for(list(before), timeout=timeout, settle=0.5)
    began = time.time()
    started = time.perf_counter()
    action() if action is not None else browser.open(url)
    while True:
        text = browser.text()
        if _shows(text, texts) and "Running..." not in text:
            return time.perf_counter() - started, began
        if time.perf_counter() - started > timeout:
            raise SystemExit(f"{url}: never showed {texts}; it shows:\n{text[:2000]}")
        time.sleep(0.05)


def sidebar_click(browser, href: str) -> None:
    """Click the sidebar's link to ``href``: Streamlit switches the page in the loaded app (a
    script run over the open connection), as a user moving between pages does, without loading
    the document, its scripts and a new session again."""
    found = browser.evaluate("(() => { const a = [...document.querySelectorAll('a[data-testid=stSidebarNavLink]')]"
                             f".find(a => a.href === {json.dumps(href)}); if (!a) return false; a.click(); return true; }})()")
    if not found:
        raise SystemExit(f"no sidebar link to {href}")


def browser_bench(args) -> None:
    logging.getLogger("streamlit").setLevel(logging.ERROR)
    from dashboard.frame import TIMING_FILE_ENV
    from tests.dashboard_browser import Browser, dashboard_healthy
    from tests.support import stop_process

    if args.build_topics or args.build_groups:
        print(f"building: {args.build_topics} topics, {args.build_groups} groups on {args.bootstrap} ...", flush=True)
        build_state(args.bootstrap, max(1, args.build_topics), args.build_groups, args.build_replication_factor)
    directory = Path(tempfile.mkdtemp(prefix="kpulse-bench-browser-"))
    config = {"clusters": [{"name": BENCH_CLUSTER, "bootstrap_servers": args.bootstrap}],
              "lake": {"path": str(directory / "lake")}, "intervals": {"collect_seconds": args.collect_seconds},
              "exporter": {"port": args.port + 2, "host": "127.0.0.1"},
              "dashboard": {"port": args.port, "host": "127.0.0.1"}}
    config_path = directory / "kpulse.yaml"
    config_path.write_text(yaml.safe_dump(config))
    timing = directory / "timing.jsonl"
    base = [sys.executable, "-m", "cli.main", "--config", str(config_path)]
    environ = {**os.environ, "PYTHONPATH": str(ROOT), TIMING_FILE_ENV: str(timing)}
    processes, browser = [], None
    try:
        processes.append(subprocess.Popen([*base, "collect"], cwd=ROOT, env=environ, stdout=open(directory / "collect.log", "w"),
                                          stderr=subprocess.STDOUT))
        processes.append(subprocess.Popen([*base, "dashboard"], cwd=ROOT, env=environ,
                                          stdout=open(directory / "dashboard.log", "w"), stderr=subprocess.STDOUT))
        snapshot_file = directory / "lake" / "_snapshots" / f"{BENCH_CLUSTER}.json"
        _wait(lambda: dashboard_healthy(args.port), 120, "the dashboard")
        print("waiting for the first snapshot with the cluster's groups ...", flush=True)

        def groups_in():
            try:
                snap = json.loads(snapshot_file.read_text())
            except (OSError, ValueError):
                return None
            return snap if snap.get("consumer_groups") else None
        snap = _wait(groups_in, 600, "a snapshot with consumer groups")
        groups = sorted(g["group_id"] for g in snap["consumer_groups"])
        group = groups[-1]  # not on the list's first page
        topic = next((p["topic"] for g in snap["consumer_groups"] if g["group_id"] == group for p in g["partitions"]),
                     None)
        if topic is None:
            raise SystemExit(f"group {group} has no committed partition: no topic to show")
        pages = -(-len(groups) // 50)
        needle = group[-4:]
        found = sum(1 for g in groups if needle in g)
        print(f"snapshot: {len(groups)} groups, {snap['cluster'].get('topic_count')} topics, "
              f"{snap['cluster'].get('partition_count')} partitions; detail of group {group}, topic {topic}", flush=True)
        browser = Browser(args.port + 1)
        url = f"http://127.0.0.1:{args.port}"

        def search_groups() -> None:
            browser.type_into("Search groups", needle)
            browser.press_enter()

        def go_to_last_page() -> None:
            browser.type_into(f"page (of {pages})", str(pages))
            browser.press_enter()
        reset = f"kpulse reset-offsets --cluster {BENCH_CLUSTER} --group"
        group_list = ["groups match", "Lag (seconds, worst partition)", reset]
        cases = [  # (name, url path, page's url_path in the timing log, key texts, action)
            ("overview", "/", "", ["Brokers up", "Firing alerts", "Problem partitions, last hour"], None),
            ("brokers", "/brokers", "brokers", ["Partition skew", "Actions"], None),
            ("topics", "/topics", "topics", ["topics match", "Partitions of", "Configs", "kpulse elect-leaders"], None),
            ("topic detail", f"/topics?topic={topic}", "topics",
             [f"Partitions of {topic}", "Configs", f"--topic {topic}"], None),
            ("groups", "/groups", "groups", group_list, None),
            ("group detail", f"/groups?group={group}", "groups", [*group_list, f"--group {group}"], None),
            ("group search", "/groups", "groups", [f"{found} of {len(groups)} groups match", reset],
             search_groups),
            ("groups last page", "/groups", "groups", [f"page {pages} of {pages}", reset],
             go_to_last_page),
            ("streams", "/streams", "streams", ["Streams apps", ("No Kafka Streams application", "Internal topics")],
             None),
            ("share groups", "/share-groups", "share-groups", ["Share groups", ("share groups match", "No share groups")],
             None),
            ("slos", "/slos", "slos", [("No SLO evaluations", "Burn-down")], None),  # "SLOs" is in the sidebar
            ("alerts", "/alerts", "alerts", ["Alerts", "firing"], None),
            ("operations", "/operations", "operations", ["Operations", "Audit log"], None),
        ]
        print(f"\n{'page':<18} {'first (s)':>10} {'median of ' + str(args.runs) + ' (s)':>17} "
              f"{'server, median (s)':>19} {'in-app, median (s)':>19}", flush=True)
        operations_texts, brokers_texts = ["Operations", "Audit log"], ["Partition skew", "Actions"]
        for name, path, page, texts, action in cases:
            shown, server, in_app = [], [], []
            for _ in range(1 + args.runs):
                seconds, since = timed_load(browser, url + path, texts, action=action, before=group_list)
                shown.append(seconds)
                time.sleep(0.3)  # the run's timing line is written as the script ends
                server_seconds = _server_seconds(timing, page, since)
                if server_seconds is not None:
                    server.append(server_seconds)
            if action is None and "?" not in path:  # a page of the sidebar: also reached as users do, by its link
                start, before = (("/brokers", brokers_texts) if path == "/operations" else
                                 ("/operations", operations_texts))
                for _ in range(args.runs):
                    seconds, _ = timed_load(browser, url + start, texts, before=before,
                                            action=lambda: sidebar_click(browser, url + path))  # noqa: B023 - called in this iteration
                    in_app.append(seconds)
            again = shown[1:] or shown
            print(f"{name:<18} {shown[0]:>10.3f} {statistics.median(again):>17.3f} "
                  f"{statistics.median(server) if server else float('nan'):>19.3f} "
                  f"{statistics.median(in_app) if in_app else float('nan'):>19.3f}", flush=True)
    finally:
        if browser is not None:
            browser.close()
        for process in processes:
            stop_process(process)
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
