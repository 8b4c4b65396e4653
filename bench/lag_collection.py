"""One full collection cycle on a cluster with 10,000 partitions and 200 consumer groups.

Run: ``.venv/bin/python bench/lag_collection.py`` (starts a cluster of its own on ports 49090+
in a temporary state directory, builds the state, measures, stops it). ``--bootstrap`` measures
an existing cluster instead (the state must already be there; see ``build``).

The bench's brokers run as production brokers do (``STEADY_JVM``: both JIT tiers, a 1 GB heap for
the 10,000 partitions); ``--demo-jvm`` runs them as the demo cluster does (quick JIT tier only,
384 MB), which makes the brokers' share of the two cores larger. Either way the three brokers run
on the same two cores as the collector.

State: 200 topics x 50 partitions (replication factor 1, so three small nodes hold them, and
``min.insync.replicas=1``, so that they are healthy: the local cluster's default of 2 would put all
10,000 under min ISR), 10 records in each partition, and 200 groups, group i committed on all 50 partitions of topic i:
every one of the 10,000 partitions has a committed offset.

Measured in a separate process, so its peak RSS is the collectors' alone: the median of 20 cycles
of the consumer lag collector, and of 20 whole collection cycles as ``kpulse collect`` runs them
(every collector: cluster metadata, broker metrics, consumer lag, Streams, probe; then alerts, the
lake buffer and the published snapshot; the lake's once-a-minute file writes are not in a cycle).
The first cycles of each are warm-up and not counted: connections, metadata caches, the first
rates and statuses; and before anything is measured the collectors run for ``--warm-up`` seconds
(default 90), so that freshly started brokers have compiled the code paths these requests take, as
a broker that has been up for days has. Goals: <= 0.5 s per cycle, <= 300 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TOPICS, PARTITIONS, RECORDS_PER_PARTITION = 200, 50, 10


def build(bootstrap: str) -> None:
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    names = [f"bench.t{i:03d}" for i in range(TOPICS)]
    for start in range(0, TOPICS, 20):
        futures = admin.create_topics([NewTopic(n, num_partitions=PARTITIONS, replication_factor=1,
                                                config={"min.insync.replicas": "1"})
                                       for n in names[start:start + 20]], request_timeout=120)
        for future in futures.values():
            future.result(180)
        print(f"  topics {start + 20}/{TOPICS}", flush=True)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.num.messages": 10000})
    for name in names:
        for partition in range(PARTITIONS):
            for _ in range(RECORDS_PER_PARTITION):
                producer.produce(name, value=b"x", partition=partition)
        producer.poll(0)
    producer.flush(300)
    print(f"  produced {TOPICS * PARTITIONS * RECORDS_PER_PARTITION} records", flush=True)
    for i, name in enumerate(names):
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-g{i:03d}"})
        offsets = [TopicPartition(name, p, RECORDS_PER_PARTITION // 2) for p in range(PARTITIONS)]
        for attempt in range(20):  # the group coordinator may still be moving right after start
            try:
                consumer.commit(offsets=offsets, asynchronous=False)
                break
            except KafkaException:
                if attempt == 19:
                    raise
                time.sleep(1)
        consumer.close()
    print(f"  committed offsets for {TOPICS} groups", flush=True)


WARM_UP_CYCLES = 3
CYCLES_PER_FLUSH = 6
"""``kpulse collect`` writes the lake's files once a minute: every 6 cycles at the default 10 s."""


def bench_config(bootstrap: str, metrics_urls: list[str]):
    from kpulse.config import parse_config

    data = {"clusters": [{"name": "bench", "bootstrap_servers": bootstrap,
                          "consumer_groups": {"include": ["bench-.*"]},
                          "metrics": {"source": "jmx_exporter", "timeout_seconds": 10,
                                      "broker_endpoints": {i + 1: u for i, u in enumerate(metrics_urls)}}}],
            "lake": {"path": tempfile.mkdtemp(prefix="kpulse-bench-lake-")}}
    return parse_config(data, source="bench", base_dir=os.getcwd())


def warm_up(bootstrap: str, metrics_urls: list[str], seconds: float, spacing: float) -> None:
    """Collect for ``seconds`` (in a process of its own: it must not count in the measured RSS)."""
    from collectors.runner import CollectionService

    service = CollectionService(bench_config(bootstrap, metrics_urls), flush_seconds=60)
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        service.cycle()
        time.sleep(spacing)
    service.close()


def measure(bootstrap: str, metrics_urls: list[str], cycles: int, spacing: float) -> dict:
    from collectors.lag.consumer_lag import ConsumerLagCollector
    from collectors.protocol import CollectContext
    from collectors.runner import GC_SETTLE_CYCLES, CollectionService

    config = bench_config(bootstrap, metrics_urls)
    cluster = config.cluster(None)
    lag = ConsumerLagCollector(cluster)
    lag_times, partitions = [], 0
    for cycle in range(WARM_UP_CYCLES + cycles):
        began = time.perf_counter()
        result = lag.collect(CollectContext(cluster, time.time()))
        if cycle >= WARM_UP_CYCLES:
            lag_times.append(time.perf_counter() - began)
        partitions = sum(len(g["partitions"]) for g in result.sections["consumer_groups"])
        time.sleep(spacing)
    groups = len(result.sections["consumer_groups"])
    del lag, result  # the service below has collectors of its own: do not count two histories
    # as `kpulse collect` runs it (the garbage collector settled after the first cycle)
    service = CollectionService(config, flush_seconds=3600, gc_settle_cycles=GC_SETTLE_CYCLES)
    full_times = []
    for cycle in range(WARM_UP_CYCLES + cycles):
        began = time.perf_counter()
        service.cycle()
        if cycle >= WARM_UP_CYCLES:
            full_times.append(time.perf_counter() - began)
        if cycle % CYCLES_PER_FLUSH == CYCLES_PER_FLUSH - 1:
            service.flush()  # as the loop does once a minute: the buffer holds what it would
        time.sleep(spacing)
    service.close()
    return {"partitions": partitions, "groups": groups,
            "lag_cycle_median_s": statistics.median(lag_times), "full_cycle_median_s": statistics.median(full_times),
            "full_cycle_quartiles_s": statistics.quantiles(full_times, n=4)[::2],
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", help="measure this cluster (already built) instead of starting one")
    parser.add_argument("--metrics-url", action="append", default=[])
    parser.add_argument("--cycles", type=int, default=20, help="measured cycles (after %d of warm-up)" % WARM_UP_CYCLES)
    parser.add_argument("--spacing", type=float, default=1.0, help="seconds between cycles")
    parser.add_argument("--demo-jvm", action="store_true", help="run the brokers as the demo cluster does")
    parser.add_argument("--warm-up", type=float, default=90.0, help="seconds of collection before measuring")
    parser.add_argument("--measure-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--warm-up-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.warm_up_only:
        warm_up(args.bootstrap, args.metrics_url, args.warm_up, args.spacing)
        return
    if args.measure_only:
        print(json.dumps(measure(args.bootstrap, args.metrics_url, args.cycles, args.spacing)))
        return

    from cli.collect import LOOP_ENVIRONMENT

    cluster = None
    if args.bootstrap is None:
        from localkafka.cluster import STEADY_JVM, LocalCluster, NodeJvm
        from kpulse.local_layout import ClusterLayout
        from kpulse.progress import Progress

        state = tempfile.mkdtemp(prefix="kpulse-bench-state-")
        cluster = LocalCluster(Path(state), ClusterLayout.from_base(49090), Progress(),
                               jvm=NodeJvm() if args.demo_jvm else STEADY_JVM)
    try:
        if cluster is not None:
            cluster.up()
            args.bootstrap = cluster.layout.bootstrap_servers
            args.metrics_url = [n.metrics_url for n in cluster.layout.nodes]
            print(f"building {TOPICS} topics x {PARTITIONS} partitions and {TOPICS} groups ...", flush=True)
            began = time.monotonic()
            build(args.bootstrap)
            print(f"  built in {time.monotonic() - began:.0f} s", flush=True)
        command = [sys.executable, __file__, "--bootstrap", args.bootstrap, "--cycles", str(args.cycles),
                   "--spacing", str(args.spacing), "--warm-up", str(args.warm_up)] + [
                      a for u in args.metrics_url for a in ("--metrics-url", u)]
        print(f"collecting for {args.warm_up:g} s before measuring ...", flush=True)
        environment = {**LOOP_ENVIRONMENT, **os.environ}  # as `kpulse collect` runs its loop
        subprocess.run(command + ["--warm-up-only"], check=True, capture_output=True, env=environment)
        figures = json.loads(subprocess.run(command + ["--measure-only"], check=True, capture_output=True,
                                            text=True, env=environment).stdout)
    finally:
        if cluster is not None:
            cluster.down(wipe=True)
    brokers = "external" if cluster is None else ("demo" if args.demo_jvm else "steady") + " JVM"
    print(f"\n{figures['groups']} groups, {figures['partitions']} partitions with committed offsets, "
          f"{os.cpu_count()} cores, brokers: {brokers}, median of {args.cycles} cycles {args.spacing:g} s apart")
    print(f"  consumer lag collector cycle:            {figures['lag_cycle_median_s']:.3f} s  (goal <= 0.5 s)")
    low, high = figures["full_cycle_quartiles_s"]
    print(f"  whole collection cycle (every collector, alerts, lake buffer, snapshot): "
          f"{figures['full_cycle_median_s']:.3f} s (quartiles {low:.3f}-{high:.3f}; goal <= 0.5 s)")
    print(f"  peak resident memory of the collector:   {figures['peak_rss_mb']:.0f} MB (goal <= 300 MB)")


if __name__ == "__main__":
    main()
