"""The exporter's ``/metrics`` at scale: one snapshot of ``--groups`` consumer groups of
``--partitions-per-group`` partitions (default 10,000 x 10 = 100,000 group partitions) on 1,000
topics of 10 partitions (10,000 partitions: kafka_exporter's topic series), served by the same HTTP
server ``kpulse collect`` starts (``exporters/prometheus.py``), scraped over HTTP; kafka_exporter's
series on (the default), and with ``--lag-exporter`` kafka-lag-exporter's too.

For each granularity (``partition``: every per-partition series; ``group``: the group-level ones
only, as kminion's ``granularity: group``) it prints how long rendering one snapshot's page takes
(done once per snapshot, in the background), the median of ``--scrapes`` scrapes, the median of
scrapes made while the next snapshot is being rendered (they are served the previous page), the
page's size and its series count. Goal: a scrape in 1 s or less.

    .venv/bin/python bench/exporter.py [--groups 10000] [--partitions-per-group 10] [--scrapes 5] [--lag-exporter]

No Kafka cluster is needed: the snapshot has the shape ``kpulse collect`` publishes
(``kpulse/snapshot.py``). About 30 s at the default scale.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import urllib.request
from pathlib import Path
from typing import cast

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from exporters.prometheus import GRANULARITIES, SnapshotExporter, serve  # noqa: E402
from kpulse.snapshot import Snapshot  # noqa: E402

CLUSTER = "bench"


def scale_snapshot(groups: int, partitions_per_group: int, taken: float) -> Snapshot:
    """A snapshot of ``groups`` classic groups, each over ``partitions_per_group`` partitions of one
    topic of ten partitions (many groups reading the same topics, as in real clusters). Partial: the
    sections and fields the exporter's series are rendered from, so the cast."""
    consumer_groups = []
    for g in range(groups):
        topic = f"topic-{(g // 10) % 1000:04d}"
        parts = [{"topic": topic, "partition": p % 10 if partitions_per_group <= 10 else p, "committed_offset": 1000 + g,
                  "log_end_offset": 1100 + g, "lag": 100, "lag_seconds": 12.5, "status": "OK", "reasons": {}}
                 for p in range(partitions_per_group)]
        stable = g % 5 == 0
        members = [{"member_id": f"bench-member-{g:05d}", "client_id": "bench", "client_host": "/10.0.0.1",
                    "assignment": {topic: sorted({p % 10 if partitions_per_group <= 10 else p
                                                  for p in range(partitions_per_group)})}}] if stable else []
        consumer_groups.append({
            "group_id": f"bench-group-{g:05d}", "type": "classic", "protocol_type": "consumer",
            "member_details": members,
            "state": "Stable" if stable else "Empty", "members": 1 if stable else 0,
            "partition_count": partitions_per_group, "total_lag": 100 * partitions_per_group,
            "lag_unknown_partitions": 0, "max_lag_seconds": 12.5, "lag_seconds_unknown_partitions": 0,
            "status": "OK", "lag_seconds_threshold": 60.0, "error": None, "partitions": parts})
    topics = [{"name": f"topic-{t:04d}", "partitions": [
        {"partition": p, "leader": 1 + (t + p) % 3, "replicas": [1 + (t + p + r) % 3 for r in range(3)],
         "isr": [1 + (t + p + r) % 3 for r in range(3)], "log_start_offset": 0, "log_end_offset": 1100 + t}
        for p in range(10)]} for t in range(1000)]
    snapshot = {"time": taken, "cluster_name": CLUSTER,
            "cluster": {"brokers_up": 3, "brokers_total": 3, "under_replicated_partitions": 0, "offline_partitions": 0,
                        "under_min_isr_partitions": 0, "active_controller_count": 1, "preferred_leader_imbalance": 0,
                        "brokers": [{"id": b, "up": True, "address": f"kafka-{b}:9092"} for b in (1, 2, 3)],
                        "topics": topics},
            "brokers": [{"id": b, "up": True, "partition_count": 10_000, "leader_count": 3_333} for b in (1, 2, 3)],
            "consumer_groups": consumer_groups, "streams_apps": [], "share_groups": None, "probe": {}, "alerts": [],
            "collectors": [{"name": "consumer_lag", "up": True, "duration_seconds": 1.0, "error": None}]}
    return cast(Snapshot, snapshot)


def scrape(url: str) -> tuple[float, bytes]:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as answer:
        body = answer.read()
    return time.perf_counter() - started, body


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=10_000)
    parser.add_argument("--partitions-per-group", type=int, default=10)
    parser.add_argument("--scrapes", type=int, default=5)
    parser.add_argument("--lag-exporter", action="store_true", help="serve kafka-lag-exporter's series too")
    args = parser.parse_args()
    print(f"snapshot: {args.groups} groups x {args.partitions_per_group} partitions = "
          f"{args.groups * args.partitions_per_group} group partitions", flush=True)
    print(f"\n{'granularity':<12} {'render (s)':>11} {'scrape, median (s)':>19} {'during a render (s)':>20} "
          f"{'bytes':>12} {'series':>9}")
    snapshots = [scale_snapshot(args.groups, args.partitions_per_group, time.time() + i) for i in range(2)]
    for granularity in GRANULARITIES:
        exporter = SnapshotExporter(granularity=granularity, compatibility=(
            "kafka_exporter", "kafka_lag_exporter") if args.lag_exporter else ("kafka_exporter",))
        started = time.perf_counter()
        exporter.update(snapshots[0])
        exporter.text()
        render = time.perf_counter() - started
        server, thread = serve(exporter, port=0, host="127.0.0.1")
        try:
            url = f"http://127.0.0.1:{server.server_port}/metrics"
            _, body = scrape(url)
            times = [scrape(url)[0] for _ in range(args.scrapes)]
            during = []
            for i in range(args.scrapes):
                exporter.update(snapshots[i % 2])  # the background render starts
                during.append(scrape(url)[0])
                exporter.text()
            series = sum(1 for line in body.splitlines() if line and not line.startswith(b"#"))
            print(f"{granularity:<12} {render:>11.3f} {statistics.median(times):>19.3f} "
                  f"{statistics.median(during):>20.3f} {len(body):>12,} {series:>9,}", flush=True)
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=10)


if __name__ == "__main__":
    main()
