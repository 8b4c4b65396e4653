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
rates and statuses (and the garbage collector is settled after the first, as ``kpulse collect``
settles it: ``collectors.runner.settle_gc``); and before anything is measured the collectors run
for ``--warm-up`` seconds (default 90), so that freshly started brokers have compiled the code paths
these requests take, as a broker that has been up for days has. Goals: <= 0.5 s per cycle, <= 300 MB.

Modern groups: ``--streams-groups N --share-groups M`` (default 0: the classic-only bench above,
whose figures stay comparable) add, on the same topics, N Kafka Streams applications on
``group.protocol=streams`` (KIP-1071, groups ``bench-streams-NNN``, app i reading topic i) and M
share groups (KIP-932, ``bench-share-NNN``, group i reading topic i, ``share.auto.offset.reset=
earliest``), each with one member, all in one JVM (``kpulse.demo.GroupsBench``). The bench then
measures four times on the same cluster: first classic-only (the modern groups do not exist yet),
then with them live (after ``kafka-groups --list`` shows each with its type, and another
``--warm-up``), then the same with the groups' JVM stopped (SIGSTOP) during each measured cycle and
continued between cycles (``clients_paused``: the groups keep their members and states, and the
cycle, timed from half a second after the stop, runs on cores neither their 100 clients nor the
brokers' work for them hold, as kpulse would beside applications and brokers on other machines), then, with them live, kpulse told to see the classic groups only (its ``consumer_groups``
filter takes ``bench-gNNN`` alone, which every collector obeys). It prints the whole cycles, kpulse's
own CPU per whole cycle in each, and three ratios: with the modern groups against classic-only (the
modern groups' clients running on the same 2 cores included), the same with their clients paused
during the cycles (the figure the goal is judged on: kpulse's cost of seeing the modern groups), and
against the classic-only view under the same load. Goal: with 200 classic, 50 Streams and 50 share
groups, the whole cycle within 20 % of the classic-only figure. The group JVM's CPU time during the
second measurement is printed too: on 2 cores it competes with the collector and the brokers.

``--topics`` and ``--partitions`` (default 200 x 50) make a smaller cluster for trying the bench
(``--topics 20 --partitions 5 --streams-groups 5 --share-groups 5 --cycles 3 --warm-up 5``);
``--port-base`` moves the bench's own cluster off 49090.

Scale: ``--groups [N] --partitions-per-group M`` (``--groups`` alone: 10,000 x 10) builds, instead,
many groups reading the same topics, as on real clusters (``bench/scale_state.py``, which checks
every delivery, commit and committed offset): by default 1,000 topics x 10 partitions (``--topics``,
``--partitions``), group i committed on the 10 partitions of topic i mod 1,000, 100,000 committed
group partitions; ``--stable-groups`` (default 300) of them Stable with a live classic member (one
niced JVM), the rest Empty. Goals at 10,000 groups: lag cycle <= 1.5 s, whole cycle <= 2 s, peak RSS
<= 500 MB.

Peer: ``--kminion PATH`` (a kminion binary, ``bench/kminion/build.sh``) then times kminion's
lag-only scrape interleaved with kpulse's lag cycle for ``--rounds`` rounds (``bench/lag_peer.py``):
both medians, the paired ratio and the brokers' CPU per cycle (goal at scale: <= 1/3 of kminion's).
On a cluster given by ``--bootstrap`` the brokers' PIDs come from ``--broker-pid`` (three times).

Secured: ``--secure`` gives the bench's own cluster a SASL_SSL listener beside each node's PLAINTEXT
one (SCRAM-SHA-512, TLS from a CA made on the fly; the brokers talk to each other over PLAINTEXT,
no authorizer: ``LocalCluster(sasl_ssl_user=...)``), builds the usual state through PLAINTEXT, and
measures the lag cycles, then the whole cycles, through both listeners of the same brokers, cycle
after cycle in alternating order (``bench/lag_secure.py``; the two kpulse configs differ only in
bootstrap and security): both medians and quartiles, the ratio (goal for the lag cycle: <= 1.3,
issue 26), the paired ratios' median and quartiles, kpulse's CPU and the brokers' CPU per cycle each
way. ``--profile PY_SPY`` then runs the lag cycles through each listener alone under ``py-spy
record`` and says where the busy samples go (connecting, TLS record reads and writes, decoding, the
rest). Not with ``--bootstrap``, ``--groups``, modern groups, ``--kminion`` or ``--sustain``.

Sustained: ``--sustain SECONDS`` runs the loop as ``kpulse collect`` does, 10 s cycles, for that
long, and reports cycle overruns, lake gaps and peak RSS (``bench/lag_sustain.py``; goal: 600 s
with no overrun and no gap).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
if str(BENCH_DIR.parent) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR.parent))  # bench.scale_state, bench.lag_peer, bench.lag_sustain, ...

TOPICS, PARTITIONS, RECORDS_PER_PARTITION = 200, 50, 10
SCALE_GROUPS = 10_000
PORT_BASE = 49090


def topic_names(topics: int) -> list[str]:
    """The bench topics; classic group ``bench-gNNN`` commits on all partitions of the NNN-th."""
    return [f"bench.t{i:03d}" for i in range(topics)]


def modern_group_topics(count: int, topics: int) -> list[str]:
    """The topic of each of ``count`` Streams (or share) groups: group i reads topic i, so the modern
    groups share their topics with the classic groups."""
    if count < 0:
        raise ValueError(f"{count}: a number of groups is 0 or more")
    if count > topics:
        raise ValueError(f"{count} groups need as many bench topics, and there are {topics}")
    return topic_names(topics)[:count]


def build(bootstrap: str, topics: int = TOPICS, partitions: int = PARTITIONS) -> None:
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    names = topic_names(topics)
    for start in range(0, topics, 20):
        futures = admin.create_topics([NewTopic(n, num_partitions=partitions, replication_factor=1,
                                                config={"min.insync.replicas": "1"})
                                       for n in names[start:start + 20]], request_timeout=120)
        for future in futures.values():
            future.result(180)
        print(f"  topics {min(start + 20, topics)}/{topics}", flush=True)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.num.messages": 10000})
    for name in names:
        for partition in range(partitions):
            for _ in range(RECORDS_PER_PARTITION):
                producer.produce(name, value=b"x", partition=partition)
        producer.poll(0)
    producer.flush(300)
    print(f"  produced {topics * partitions * RECORDS_PER_PARTITION} records", flush=True)
    for i, name in enumerate(names):
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-g{i:03d}"})
        offsets = [TopicPartition(name, p, RECORDS_PER_PARTITION // 2) for p in range(partitions)]
        for attempt in range(20):  # the group coordinator may still be moving right after start
            try:
                consumer.commit(offsets=offsets, asynchronous=False)
                break
            except KafkaException:
                if attempt == 19:
                    raise
                time.sleep(1)
        consumer.close()
    print(f"  committed offsets for {topics} groups", flush=True)


WARM_UP_CYCLES = 3
CYCLES_PER_FLUSH = 6
"""``kpulse collect`` writes the lake's files once a minute: every 6 cycles at the default 10 s."""


ALL_BENCH_GROUPS = "bench-.*"
"""The classic groups (bench-gNNN) and the modern ones (bench-streams-NNN, bench-share-NNN) alike;
not the collector's own groups."""
CLASSIC_BENCH_GROUPS = "bench-g[0-9]+"


PAUSE_SETTLE_SECONDS = 0.5
"""After stopping the groups' JVM, how long the brokers are given to finish what its 100 clients
had just asked (fetches, heartbeats, acknowledgements) before the cycle is timed."""


@contextlib.contextmanager
def clients_paused(pid: int | None, settle: float = PAUSE_SETTLE_SECONDS):
    """The groups' JVM stopped (SIGSTOP) for the ``with`` body and continued after it, whatever the
    body does; the body starts ``settle`` seconds after the stop. The measured cycle then runs on
    cores neither the bench's clients nor the brokers' work for them hold, as kpulse's would beside
    applications (and brokers) on other machines; the brokers' work for kpulse's own requests about
    the modern groups is still in it. A pause of under two seconds is far inside the members'
    session timeouts (45 s), so every group keeps its members and its state. ``None``: nothing is
    paused."""
    if pid is None:
        yield
        return
    os.kill(pid, signal.SIGSTOP)
    try:
        time.sleep(settle)
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def process_cpu_s() -> float:
    """This process's CPU time (every thread: the collectors run side by side in threads)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def bench_config(bootstrap: str, metrics_urls: list[str], include: str = ALL_BENCH_GROUPS,
                 security: dict | None = None):
    """The kpulse config the bench measures; ``security``: its cluster's ``security`` section
    (``--secure``: the SASL_SSL side), else PLAINTEXT."""
    from kpulse.config import parse_config

    cluster = {"name": "bench", "bootstrap_servers": bootstrap,
               "consumer_groups": {"include": [include]},
               "metrics": {"source": "jmx_exporter", "timeout_seconds": 10,
                           "broker_endpoints": {i + 1: u for i, u in enumerate(metrics_urls)}}}
    if security is not None:
        cluster["security"] = security
    data = {"clusters": [cluster], "lake": {"path": tempfile.mkdtemp(prefix="kpulse-bench-lake-")}}
    return parse_config(data, source="bench", base_dir=Path.cwd())


def warm_up(bootstrap: str, metrics_urls: list[str], seconds: float, spacing: float,
            include: str = ALL_BENCH_GROUPS) -> None:
    """Collect for ``seconds`` (in a process of its own: it must not count in the measured RSS)."""
    from collectors.runner import CollectionService

    service = CollectionService(bench_config(bootstrap, metrics_urls, include), flush_seconds=60)
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        service.cycle()
        time.sleep(spacing)
    service.close()


def measure(bootstrap: str, metrics_urls: list[str], cycles: int, spacing: float,
            include: str = ALL_BENCH_GROUPS, part: str = "whole", pause_pid: int | None = None) -> dict:
    """``part`` ``lag``: the lag collector's cycles alone; ``whole``: the whole collection's, as
    ``kpulse collect`` runs it. Each in a process of its own, so the peak RSS of the whole collection
    is the loop's alone (memory the lag-only cycles freed is not always given back to the system).
    ``pause_pid``: a process stopped during each cycle (``clients_paused``)."""
    from collectors.lag.consumer_lag import ConsumerLagCollector
    from collectors.protocol import CollectContext
    from collectors.runner import settle_gc

    config = bench_config(bootstrap, metrics_urls, include)
    cluster = config.cluster(None)
    if part == "whole":
        return measure_whole(config, cycles, spacing, pause_pid)
    lag = ConsumerLagCollector(cluster)
    lag_times, partitions = [], 0
    groups: list[dict[str, Any]] = []
    for cycle in range(WARM_UP_CYCLES + cycles):
        if cycle == 1:
            settle_gc()  # as `kpulse collect` does after its first cycle (unsettled: +0.46 s a cycle at 10,000 groups)
        with clients_paused(pause_pid):
            began = time.perf_counter()
            result = lag.collect(CollectContext(cluster, time.time()))
            elapsed = time.perf_counter() - began
        if cycle >= WARM_UP_CYCLES:
            lag_times.append(elapsed)
        section = result.sections["consumer_groups"]
        assert isinstance(section, list)  # the lag collector's section: its groups
        groups = section
        partitions = sum(len(g["partitions"]) for g in groups)
        time.sleep(spacing)
    return {"partitions": partitions, "groups": len(groups),
            "lag_groups_by_type": count_types(groups),
            "lag_cycle_median_s": statistics.median(lag_times),
            "lag_peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def measure_whole(config, cycles: int, spacing: float, pause_pid: int | None = None) -> dict:
    from collectors.runner import GC_SETTLE_CYCLES, CollectionService

    # as `kpulse collect` runs it (the garbage collector settled after the first cycle)
    service = CollectionService(config, flush_seconds=3600, gc_settle_cycles=GC_SETTLE_CYCLES)
    full_times: list[float] = []
    cpu_times: list[float] = []
    collector_times: dict[str, list[float]] = {}
    for cycle in range(WARM_UP_CYCLES + cycles):
        with clients_paused(pause_pid):
            began, cpu_began = time.perf_counter(), process_cpu_s()
            snapshot = service.cycle().snapshots["bench"]
            elapsed, cpu = time.perf_counter() - began, process_cpu_s() - cpu_began
        if cycle >= WARM_UP_CYCLES:
            full_times.append(elapsed)
            cpu_times.append(cpu)
            for state in snapshot["collectors"]:
                collector_times.setdefault(state["name"], []).append(state["duration_seconds"])
        if cycle % CYCLES_PER_FLUSH == CYCLES_PER_FLUSH - 1:
            service.flush()  # as the loop does once a minute: the buffer holds what it would
        time.sleep(spacing)
    service.close()
    return {"snapshot_sections": section_sizes(snapshot),
            "collectors": {c["name"]: c["error"] for c in snapshot["collectors"]},
            "collector_median_s": {name: statistics.median(times) for name, times in collector_times.items()},
            "full_cycle_median_s": statistics.median(full_times),
            "full_cycle_quartiles_s": statistics.quantiles(full_times, n=4)[::2],
            "full_cycle_cpu_median_s": statistics.median(cpu_times),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def count_types(groups: list[dict]) -> dict[str, int]:
    """Groups per type (``classic``, ``consumer``, ``streams``, ``share``; ``?`` when not known)."""
    counts: dict[str, int] = {}
    for group in groups:
        kind = group.get("type") or "?"
        counts[kind] = counts.get(kind, 0) + 1
    return dict(sorted(counts.items()))


def section_sizes(snapshot: Mapping[str, object]) -> dict[str, int]:
    """Entries of each list section of a whole cycle's snapshot (``consumer_groups``, ``streams_apps``,
    and the share groups collector's section once it is registered), to show what the cycle saw."""
    return {name: len(section) for name, section in snapshot.items()
            if isinstance(section, list) and name not in ("alerts", "alert_errors", "brokers", "collectors")}


class ModernGroups:
    """The JVM that runs the bench's Streams and share groups (``kpulse.demo.GroupsBench``)."""

    READY_SECONDS = 600.0

    def __init__(self, bootstrap: str, streams_topics: list[str], share_topics: list[str]):
        self.bootstrap = bootstrap
        self.streams_topics, self.share_topics = streams_topics, share_topics
        self.directory = Path(tempfile.mkdtemp(prefix="kpulse-bench-groups-"))
        self.log = self.directory / "groups.log"
        self.process: subprocess.Popen | None = None

    def expected(self) -> dict[str, str]:
        """Group id -> its type as ``kafka-groups --list`` names it."""
        return {**{f"bench-streams-{i:03d}": "Streams" for i in range(len(self.streams_topics))},
                **{f"bench-share-{i:03d}": "Share" for i in range(len(self.share_topics))}}

    def start(self) -> None:
        from localkafka.runtime import ensure_runtime, java_command

        runtime = ensure_runtime()
        members = len(self.streams_topics) + len(self.share_topics)
        command = java_command(runtime, "kpulse.demo.GroupsBench",
                               [self.bootstrap, str(self.directory / "state"), ",".join(self.streams_topics),
                                ",".join(self.share_topics)],
                               heap=f"{GROUPS_JVM_HEAP_MB + GROUPS_JVM_HEAP_MB_PER_MEMBER * members}m",
                               extra_classpath=[runtime.streams_demo_classes])
        with self.log.open("w") as log:  # niced: it stands in for applications on other machines
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                            preexec_fn=lambda: os.nice(GROUPS_JVM_NICE))
        deadline = time.monotonic() + self.READY_SECONDS
        while not any(line.startswith("READY") for line in self.log.read_text().splitlines()):
            if self.process.poll() is not None or time.monotonic() > deadline:
                tail = "\n".join(self.log.read_text().splitlines()[-20:])
                raise SystemExit(f"the bench's Streams and share groups did not start (see {self.log}):\n{tail}")
            time.sleep(1)

    def check_listed(self) -> None:
        """``kafka-groups --list`` shows every group with its type, or the bench stops."""
        from localkafka.tools import run_tool

        listing = run_tool("kafka-groups", ["--bootstrap-server", self.bootstrap, "--list"]).stdout
        wrong = listing_mismatches(listing, self.expected())
        if wrong:
            raise SystemExit("kafka-groups --list does not show the bench groups as expected: " + "; ".join(wrong[:10]))

    def cpu_seconds(self) -> float:
        """User + system CPU time of the JVM so far."""
        from bench.scale_state import process_cpu_seconds

        assert self.process is not None, "start() first"
        return process_cpu_seconds(self.process.pid)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()  # the JVM closes every member, which leaves its group
            try:
                self.process.wait(90)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


GROUPS_JVM_NICE = 19
"""The groups JVM stands in for applications that run on other machines: the two cores go first to
the brokers and the collector (its CPU use is printed)."""
GROUPS_JVM_HEAP_MB, GROUPS_JVM_HEAP_MB_PER_MEMBER = 128, 12
"""Heap of the groups JVM: a base and a share per Streams app or share consumer."""


def listing_mismatches(listing: str, expected: dict[str, str]) -> list[str]:
    """What ``kafka-groups --list`` output (``GROUP TYPE PROTOCOL`` lines) gets wrong about the
    expected groups (id -> type): each group missing or listed with another type."""
    listed = {}
    for line in listing.splitlines():
        fields = line.split()
        if len(fields) >= 2 and fields[0] != "GROUP":
            listed[fields[0]] = fields[1]
    wrong = []
    for group, kind in sorted(expected.items()):
        if group not in listed:
            wrong.append(f"{group} not listed")
        elif listed[group].lower() != kind.lower():
            wrong.append(f"{group} listed as {listed[group]}, not {kind}")
    return wrong


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", help="measure this cluster (already built) instead of starting one")
    parser.add_argument("--metrics-url", action="append", default=[])
    parser.add_argument("--cycles", type=int, default=20, help=f"measured cycles (after {WARM_UP_CYCLES} of warm-up)")
    parser.add_argument("--spacing", type=float, default=1.0, help="seconds between cycles")
    parser.add_argument("--demo-jvm", action="store_true", help="run the brokers as the demo cluster does")
    parser.add_argument("--warm-up", type=float, default=90.0, help="seconds of collection before measuring")
    parser.add_argument("--topics", type=int, help=f"bench topics (default {TOPICS}, one classic group each; "
                        "with --groups 1000)")
    parser.add_argument("--partitions", type=int, help=f"partitions of each bench topic (default {PARTITIONS}; "
                        "with --groups 10)")
    parser.add_argument("--groups", type=int, nargs="?", const=SCALE_GROUPS,
                        help=f"scale mode: this many groups (alone: {SCALE_GROUPS}) on shared topics")
    parser.add_argument("--partitions-per-group", type=int, default=10, help="scale mode: partitions each group commits on")
    parser.add_argument("--stable-groups", type=int, default=300, help="scale mode: groups with a live member")
    parser.add_argument("--kminion", help="a kminion binary: time its lag-only scrape beside kpulse's lag cycle")
    parser.add_argument("--rounds", type=int, default=12, help="interleaved rounds of the kminion comparison")
    parser.add_argument("--broker-pid", type=int, action="append", default=[],
                        help="with --bootstrap and --kminion: a broker JVM's PID (for the brokers' CPU)")
    parser.add_argument("--sustain", type=float, help="then run 10 s cycles for this many seconds")
    parser.add_argument("--streams-groups", type=int, default=0,
                        help="live Streams groups (KIP-1071) on the bench topics, measured against classic-only")
    parser.add_argument("--share-groups", type=int, default=0,
                        help="live share groups (KIP-932) on the bench topics, measured against classic-only")
    parser.add_argument("--port-base", type=int, default=PORT_BASE, help="ports of the bench's own cluster")
    parser.add_argument("--secure", action="store_true",
                        help="give the bench's cluster SASL_SSL/SCRAM listeners too and measure through both, "
                             "interleaved (bench/lag_secure.py)")
    parser.add_argument("--profile", metavar="PY_SPY",
                        help="with --secure: then profile the lag cycles through each listener with this "
                             "py-spy binary (every Python thread)")
    parser.add_argument("--secure-bootstrap", help=argparse.SUPPRESS)
    parser.add_argument("--security-json", help=argparse.SUPPRESS)
    parser.add_argument("--measure-pair", choices=("lag", "whole"), help=argparse.SUPPRESS)
    parser.add_argument("--warm-up-pair", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--profile-side", help=argparse.SUPPRESS)
    parser.add_argument("--include", default=ALL_BENCH_GROUPS, help=argparse.SUPPRESS)
    parser.add_argument("--pause-pid", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--measure-only", choices=("lag", "whole"), help=argparse.SUPPRESS)
    parser.add_argument("--warm-up-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--peer-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--kminion-url", help=argparse.SUPPRESS)
    parser.add_argument("--kminion-pid", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--sustain-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    scale = args.groups is not None
    if args.topics is None:
        args.topics = scale_plan_defaults().topics if scale else TOPICS
    if args.partitions is None:
        args.partitions = scale_plan_defaults().partitions if scale else PARTITIONS
    if args.cycles < 2:
        parser.error("--cycles must be at least 2 (the figures are medians and quartiles)")
    if args.rounds < 2:
        parser.error("--rounds must be at least 2")
    if args.topics < 1 or args.partitions < 1:
        parser.error("--topics and --partitions must be at least 1")
    if scale:
        if args.streams_groups or args.share_groups:
            parser.error("--streams-groups and --share-groups go with the classic bench, not with --groups")
        try:
            args.plan = scale_plan(args)
        except ValueError as error:
            parser.error(f"--groups: {error}")
    else:
        args.plan = None
    if args.kminion and args.bootstrap and not args.broker_pid and not args.peer_only:
        parser.error("--kminion on a cluster given by --bootstrap needs its brokers' PIDs (--broker-pid, each)")
    if args.sustain is not None and args.sustain <= 0:
        parser.error("--sustain: a number of seconds above 0")
    if args.secure:
        refused = [option for option, given in (("--bootstrap", args.bootstrap), ("--groups", scale),
                                                ("--streams-groups", args.streams_groups),
                                                ("--share-groups", args.share_groups), ("--kminion", args.kminion),
                                                ("--sustain", args.sustain is not None)) if given]
        if refused:
            parser.error(f"--secure measures the bench's own classic cluster: not with {', '.join(refused)}")
    elif args.profile:
        parser.error("--profile goes with --secure")
    for option, count in (("--streams-groups", args.streams_groups), ("--share-groups", args.share_groups)):
        try:
            modern_group_topics(count, args.topics)
        except ValueError as error:
            parser.error(f"{option}: {error}")
    return args


def scale_plan_defaults():
    from bench.scale_state import ScalePlan

    return ScalePlan()


def scale_plan(args: argparse.Namespace):
    from bench.scale_state import ScalePlan

    return ScalePlan(groups=args.groups, partitions_per_group=args.partitions_per_group, topics=args.topics,
                     partitions=args.partitions, records=RECORDS_PER_PARTITION, stable_groups=args.stable_groups)


def subprocess_command(args: argparse.Namespace) -> list[str]:
    return [sys.executable, __file__, "--bootstrap", args.bootstrap, "--cycles", str(args.cycles),
            "--spacing", str(args.spacing), "--warm-up", str(args.warm_up), "--rounds", str(args.rounds),
            "--include", args.include] + [
               a for u in args.metrics_url for a in ("--metrics-url", u)] + (
               ["--pause-pid", str(args.pause_pid)] if args.pause_pid is not None else []) + (
               ["--secure-bootstrap", args.secure_bootstrap, "--security-json", args.security_json]
               if args.secure_bootstrap else [])


def peer_figures(args: argparse.Namespace, broker_pids: list[int]) -> dict:
    """kminion started, then the interleaved rounds in a process of their own."""
    from bench.lag_peer import Kminion

    kminion = Kminion(args.kminion, args.bootstrap)
    print("starting kminion (lag-only) ...", flush=True)
    try:
        series = kminion.start()
        assert kminion.process is not None  # started
        print(f"  its first scrape reports {series} group partitions; {args.rounds} interleaved rounds ...",
              flush=True)
        command = subprocess_command(args) + ["--peer-only", "--kminion-url", kminion.url,
                                              "--kminion-pid", str(kminion.process.pid)] + [
                      a for pid in broker_pids for a in ("--broker-pid", str(pid))]
        return run_json(command)
    finally:
        kminion.stop()


def sustain_figures(args: argparse.Namespace) -> dict:
    print(f"collecting every 10 s for {args.sustain:g} s, as `kpulse collect` does ...", flush=True)
    return run_json(subprocess_command(args) + ["--sustain", str(args.sustain), "--sustain-only"])


def run_json(command: list[str]) -> dict:
    """Run a step of the bench in a process of its own (as the loop runs); its JSON answer, or stop
    with the end of what it printed on stderr."""
    from cli.collect import LOOP_ENVIRONMENT

    done = subprocess.run(command, capture_output=True, text=True, env={**LOOP_ENVIRONMENT, **os.environ})
    if done.returncode != 0:
        tail = "\n".join(done.stderr.splitlines()[-15:])
        raise SystemExit(f"a step of the bench failed ({' '.join(command[2:])}):\n{tail}")
    return json.loads(done.stdout)


def collect_figures(args: argparse.Namespace) -> dict:
    """Warm up, then measure, each in a process of its own (as ``kpulse collect`` runs its loop)."""
    from cli.collect import LOOP_ENVIRONMENT

    command = subprocess_command(args)
    print(f"  collecting for {args.warm_up:g} s before measuring ...", flush=True)
    environment = {**LOOP_ENVIRONMENT, **os.environ}
    subprocess.run(command + ["--warm-up-only"], check=True, capture_output=True, env=environment)
    print(f"  measuring {WARM_UP_CYCLES} + {args.cycles} cycles of the lag collector, then of the whole "
          "collection ...", flush=True)
    began = time.monotonic()
    figures = {}
    for part in ("lag", "whole"):  # each in a process of its own (see measure)
        figures.update(json.loads(subprocess.run(command + ["--measure-only", part], check=True, capture_output=True,
                                                 text=True, env=environment).stdout))
    figures["measure_wall_s"] = time.monotonic() - began
    return figures


CLASSIC_GOALS = (0.5, 0.5, 300)
SCALE_GOALS = (1.5, 2.0, 500)
"""Lag cycle (s), whole cycle (s), peak RSS (MB): the classic bench's, and at 10,000 groups (issue 16)."""


def print_figures(title: str, figures: dict, scale: bool = False) -> None:
    types = ", ".join(f"{n} {kind}" for kind, n in figures["lag_groups_by_type"].items())
    print(f"\n{title}: {figures['groups']} groups in the lag collector ({types}), "
          f"{figures['partitions']} group partitions")
    goals = SCALE_GOALS if scale else CLASSIC_GOALS
    print(f"  consumer lag collector cycle:            {figures['lag_cycle_median_s']:.3f} s  (goal <= {goals[0]:g} s)")
    low, high = figures["full_cycle_quartiles_s"]
    print(f"  whole collection cycle (every collector, alerts, lake buffer, snapshot): "
          f"{figures['full_cycle_median_s']:.3f} s (quartiles {low:.3f}-{high:.3f}; goal <= {goals[1]:g} s); "
          f"kpulse's CPU in it {figures['full_cycle_cpu_median_s']:.3f} s")
    print(f"  peak resident memory of the collection:  {figures['peak_rss_mb']:.0f} MB (goal <= {goals[2]} MB; "
          f"the lag collector alone, in a process of its own: {figures['lag_peak_rss_mb']:.0f} MB)")
    print(f"  collectors: {', '.join(sorted(figures['collectors']))}; snapshot sections: "
          + ", ".join(f"{name} {n}" for name, n in sorted(figures["snapshot_sections"].items())))
    print("  each collector's median (they run side by side): " + ", ".join(
        f"{name} {seconds:.3f} s" for name, seconds in sorted(figures["collector_median_s"].items(),
                                                              key=lambda item: -item[1])))
    for name, error in sorted(figures["collectors"].items()):
        if error is not None:
            print(f"  COLLECTOR DOWN {name}: {error}")


def main() -> None:
    args = parse_args()
    if args.warm_up_only:
        warm_up(args.bootstrap, args.metrics_url, args.warm_up, args.spacing, args.include)
        return
    if args.measure_only:
        print(json.dumps(measure(args.bootstrap, args.metrics_url, args.cycles, args.spacing, args.include,
                                 args.measure_only, args.pause_pid)))
        return
    if args.warm_up_pair or args.measure_pair or args.profile_side:
        from bench.lag_secure import measure_pair, profile_side, secure_configs, warm_up_pair

        configs = secure_configs(bench_config, args.bootstrap, args.secure_bootstrap, json.loads(args.security_json),
                                 args.metrics_url, args.include)
        if args.warm_up_pair:
            warm_up_pair(configs, args.warm_up, args.spacing)
        elif args.profile_side:
            print(json.dumps(profile_side(configs[args.profile_side], args.cycles, args.spacing)))
        else:
            print(json.dumps(measure_pair(configs, args.measure_pair, args.cycles, args.spacing, args.broker_pid,
                                          WARM_UP_CYCLES, CYCLES_PER_FLUSH)))
        return
    if args.peer_only:
        from bench.lag_peer import interleaved

        print(json.dumps(interleaved(bench_config(args.bootstrap, args.metrics_url), args.kminion_url,
                                     args.broker_pid, args.kminion_pid, args.rounds, args.spacing)))
        return
    if args.sustain_only:
        import shutil

        from bench.lag_sustain import sustain

        config = bench_config(args.bootstrap, args.metrics_url)
        try:
            print(json.dumps(sustain(config, args.sustain)))
        finally:
            shutil.rmtree(config.lake.path, ignore_errors=True)
        return

    cluster = groups = members = peer = sustained = secured = None
    if args.bootstrap is None:
        from localkafka.cluster import STEADY_JVM, LocalCluster, NodeJvm, ScramUser
        from kpulse.local_layout import ClusterLayout
        from kpulse.progress import Progress

        state = tempfile.mkdtemp(prefix="kpulse-bench-state-")
        cluster = LocalCluster(Path(state), ClusterLayout.from_base(args.port_base), Progress(),
                               jvm=NodeJvm() if args.demo_jvm else STEADY_JVM,
                               sasl_ssl_user=ScramUser() if args.secure else None)
    modern = args.streams_groups + args.share_groups > 0
    try:
        if cluster is not None:
            cluster.up()
            args.bootstrap = cluster.layout.bootstrap_servers
            args.metrics_url = [n.metrics_url for n in cluster.layout.nodes]
            began = time.monotonic()
            if args.plan is None:
                print(f"building {args.topics} topics x {args.partitions} partitions and {args.topics} groups ...",
                      flush=True)
                build(args.bootstrap, args.topics, args.partitions)
            else:
                members = build_scale_state(args)
            print(f"  built in {time.monotonic() - began:.0f} s", flush=True)
        broker_pids = args.broker_pid or ([n.pid for n in cluster.status().nodes] if cluster is not None else [])
        if args.secure:
            secured = secure_figures(args, cluster, broker_pids)
            return
        if modern:
            print("classic groups only:", flush=True)
        classic = collect_figures(args)
        if modern:
            groups = ModernGroups(args.bootstrap, modern_group_topics(args.streams_groups, args.topics),
                                  modern_group_topics(args.share_groups, args.topics))
            print(f"starting {args.streams_groups} Streams groups and {args.share_groups} share groups "
                  "(one JVM) ...", flush=True)
            began = time.monotonic()
            groups.start()
            groups.check_listed()
            print(f"  all running and listed by kafka-groups with their types after "
                  f"{time.monotonic() - began:.0f} s", flush=True)
            before = groups.cpu_seconds()
            with_modern = collect_figures(args)
            groups_cpu = (groups.cpu_seconds() - before) / with_modern["measure_wall_s"]
            print("the same groups, their clients paused during each measured cycle:", flush=True)
            assert groups.process is not None  # started above
            paused = collect_figures(argparse.Namespace(**{**vars(args), "pause_pid": groups.process.pid}))
            print("the same load, kpulse seeing the classic groups only:", flush=True)
            classic_view = collect_figures(argparse.Namespace(**{**vars(args), "include": CLASSIC_BENCH_GROUPS}))
        if args.kminion:
            peer = peer_figures(args, broker_pids)
        if args.sustain:
            sustained = sustain_figures(args)
    finally:
        if groups is not None:
            groups.stop()
        if members is not None:
            members.stop()
        if cluster is not None:
            cluster.down(wipe=True)
        if secured is not None:
            print_secure(args, secured)
    brokers = "external" if cluster is None else ("demo" if args.demo_jvm else "steady") + " JVM"
    print(f"\n{os.cpu_count()} cores, brokers: {brokers}, median of {args.cycles} cycles {args.spacing:g} s apart")
    if args.plan is not None:
        plan = args.plan
        print_figures(f"{plan.groups} groups x {plan.partitions_per_group} partitions ({plan.stable_groups} Stable) "
                      f"on {plan.topics} topics x {plan.partitions} partitions", classic, scale=True)
    else:
        print_figures(f"{args.topics} classic groups" if modern else "figures", classic)
    if modern:
        print_figures(f"{args.topics} classic + {args.streams_groups} Streams + {args.share_groups} share groups",
                      with_modern)
        print(f"  the groups JVM used {groups_cpu:.2f} cores during this measurement (on the same cores)")
        ratio = with_modern["full_cycle_median_s"] / classic["full_cycle_median_s"]
        print_figures("the same groups, their clients paused during each measured cycle", paused)
        print_figures("the same load, kpulse seeing the classic groups only", classic_view)
        same_load = with_modern["full_cycle_median_s"] / classic_view["full_cycle_median_s"]
        print(f"\n{args.topics} classic + {args.streams_groups} Streams + {args.share_groups} share: whole cycle "
              f"{with_modern['full_cycle_median_s']:.3f} s vs classic-only {classic['full_cycle_median_s']:.3f} s "
              f"({ratio:.2f}x; goal <= 1.20x)")
        print(f"  under the same load, vs kpulse seeing the classic groups only "
              f"{classic_view['full_cycle_median_s']:.3f} s: {same_load:.2f}x")
        print(f"  the groups' clients paused during each measured cycle (their CPU off the collector's cores, "
              f"as on other machines): {paused['full_cycle_median_s']:.3f} s, "
              f"{paused['full_cycle_median_s'] / classic['full_cycle_median_s']:.2f}x (goal <= 1.20x)")
        print("  kpulse's own CPU per whole cycle: classic-only {:.3f} s, with them {:.3f} s, paused {:.3f} s".format(
            classic["full_cycle_cpu_median_s"], with_modern["full_cycle_cpu_median_s"],
            paused["full_cycle_cpu_median_s"]))
    if peer is not None:
        from bench.lag_peer import print_peer

        print_peer(peer)
    if sustained is not None:
        from bench.lag_sustain import print_sustain

        print_sustain(sustained)


def secure_figures(args: argparse.Namespace, cluster, broker_pids: list[int]) -> dict:
    """``--secure``: warm up through both listeners, then the lag cycles and the whole cycles through
    both, interleaved (``bench/lag_secure.py``), each part in a process of its own; then, with
    ``--profile``, each side's lag cycles profiled."""
    from cli.collect import LOOP_ENVIRONMENT

    args.secure_bootstrap = cluster.sasl_ssl_bootstrap_servers
    args.security_json = json.dumps(cluster.sasl_ssl_security())
    command = subprocess_command(args) + [a for pid in broker_pids for a in ("--broker-pid", str(pid))]
    print(f"  PLAINTEXT {args.bootstrap}, SASL_SSL/SCRAM-SHA-512 {args.secure_bootstrap} (same brokers); "
          f"collecting through both for {args.warm_up:g} s before measuring ...", flush=True)
    environment = {**LOOP_ENVIRONMENT, **os.environ}
    subprocess.run(command + ["--warm-up-pair"], check=True, capture_output=True, env=environment)
    figures: dict[str, Any] = {}
    for part in ("lag", "whole"):
        print(f"  measuring {WARM_UP_CYCLES} + {args.cycles} {part} cycles through each listener, interleaved ...",
              flush=True)
        figures[part] = run_json(command + ["--measure-pair", part])
    if args.profile:
        from bench.lag_secure import SIDES, profiled

        for side in SIDES:
            print(f"  profiling {args.cycles} lag cycles through {side} ({args.profile}) ...", flush=True)
            try:
                figures.setdefault("profiles", {})[side] = profiled(args.profile, command + ["--profile-side", side])
            except SystemExit as failure:  # the measured figures are still printed
                figures["profile_error"] = str(failure)
                break
    return figures


def print_secure(args: argparse.Namespace, figures: dict) -> None:
    from bench.lag_secure import print_pair, print_profile

    print(f"\n{os.cpu_count()} cores, brokers: {'demo' if args.demo_jvm else 'steady'} JVM, "
          f"{args.topics} topics x {args.partitions} partitions, {args.topics} groups; median of {args.cycles} "
          f"cycles through each listener, interleaved, {args.spacing:g} s apart")
    print_pair("consumer lag collector cycle", figures["lag"])
    print_pair("whole collection cycle (every collector, alerts, lake buffer, snapshot)", figures["whole"])
    for side, profile in figures.get("profiles", {}).items():
        print_profile(side, profile)
    if "profile_error" in figures:
        print(f"\nthe profile could not be taken: {figures['profile_error']}")


def build_scale_state(args: argparse.Namespace):
    """The scale state on the bench's cluster (checked); returns the Stable groups' members (running)."""
    from bench.scale_state import BuildFailed, build_and_start

    plan = args.plan
    print(f"building {plan.topics} topics x {plan.partitions} partitions and {plan.groups} groups x "
          f"{plan.partitions_per_group} partitions ({plan.group_partitions} group partitions, "
          f"{plan.stable_groups} Stable) ...", flush=True)
    try:
        return build_and_start(args.bootstrap, plan, say=lambda line: print(line, flush=True))
    except BuildFailed as error:
        raise SystemExit(f"the scale state could not be built: {error}") from error


if __name__ == "__main__":
    main()
