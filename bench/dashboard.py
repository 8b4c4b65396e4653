"""Server-side render time of every dashboard page at scale: 2,000 topics, 20,000 partitions,
2,000 consumer groups (10 partitions each), one hour of history at a 10 s interval.

Run: ``.venv/bin/python bench/dashboard.py [--runs 5]``. It writes the lake with the real
``LakeWriter`` (tests/dashboard_lake.py: 720,000 consumer_group rows for the lag history, SLO
evaluations for every group) in a temporary directory, then times each page with Streamlit's
AppTest (the script run on the server, without the browser): the first render with every cache
cleared (snapshot parsed, lake read, metadata fetched) and the median of ``--runs`` reruns. Topic metadata comes from a recorded-shape
Admin client serving 20,000 partitions, so the Topics figure excludes the Admin API round trip.
Goal: 1 s or less per page.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import statistics
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
    args = parser.parse_args()
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


if __name__ == "__main__":
    main()
