"""CPU of the consumer lag collector per cycle, split into reading the cluster and evaluating it.

Run: ``.venv/bin/python bench/lag_cpu.py --bootstrap HOST:PORT [--cycles 10] [--settle-gc]
[--profile] [--tracemalloc]`` on a cluster that holds a scale state (``bench/scale_state.py
--no-members``; groups ``bench-*``).
Wall time on a shared machine is noisy, so this prints process CPU (``time.process_time``, every
thread): per cycle, the part spent in ``read_cluster_offsets`` (the requests and the decoding of
their answers), within it the decoding of every answer (kafka-python's
``KafkaProtocol._process_response``, on its I/O thread), and the part spent in
``ConsumerLagCollector.evaluate`` (the rules, the snapshot section and the lake rows), and the
garbage collections within all of these; their medians over the cycles after ``--warm-up``, and
the peak RSS. ``--settle-gc`` settles the garbage collector after the first cycle, as ``kpulse
collect`` does (without it, full collections are most of a cycle's CPU at 10,000 groups). ``--profile``: a cProfile top 20
(by own time) of the collector's thread over the measured cycles (the I/O thread's decoding is
not in it); ``--tracemalloc``: the top allocations alive after the last cycle (both slow the
cycles down: the figures printed with them are not the ones to quote).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import resource
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from collectors.lag.consumer_lag import ConsumerLagCollector  # noqa: E402
from collectors.protocol import CollectContext, CollectorResult  # noqa: E402
from kpulse.config import parse_config  # noqa: E402
from kpulse.kafka.group_offsets import ClusterOffsets, read_cluster_offsets  # noqa: E402


class _Timed:
    """Wraps a callable and adds the process CPU it takes to ``seconds``."""

    def __init__(self, function):
        self.function, self.seconds = function, 0.0

    def __call__(self, *args, **kwargs):
        began = time.process_time()
        try:
            return self.function(*args, **kwargs)
        finally:
            self.seconds += time.process_time() - began


class _TimedLagCollector(ConsumerLagCollector):
    """The lag collector, the process CPU its ``evaluate`` takes added to ``evaluate_seconds``."""

    evaluate_seconds = 0.0

    def evaluate(self, offsets: ClusterOffsets, context: CollectContext) -> CollectorResult:
        began = time.process_time()
        try:
            return super().evaluate(offsets, context)
        finally:
            self.evaluate_seconds += time.process_time() - began


class _DecodeTime:
    """Adds the CPU of every answer decoded by kafka-python's connections (on whichever thread)."""

    def __init__(self):
        from kafka.protocol.parser import KafkaProtocol

        self.seconds = 0.0
        self.by_answer: dict[str, float] = {}
        """Answer class -> CPU decoding it, over every cycle (the warm-up's too)."""
        original = KafkaProtocol._process_response

        def timed(protocol, buffer):
            began = time.thread_time()
            kind = protocol.in_flight_requests[0].get_response_class().__name__ if protocol.in_flight_requests else "?"
            try:
                return original(protocol, buffer)
            finally:
                spent = time.thread_time() - began
                self.seconds += spent
                self.by_answer[kind] = self.by_answer.get(kind, 0.0) + spent

        KafkaProtocol._process_response = timed


class _GcTime:
    """Adds the CPU of every garbage collection (``gc.callbacks``)."""

    def __init__(self):
        self.seconds, self._began = 0.0, None
        gc.callbacks.append(self._callback)

    def _callback(self, phase, info):
        if phase == "start":
            self._began = time.thread_time()
        elif self._began is not None:
            self.seconds += time.thread_time() - self._began
            self._began = None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--cycles", type=int, default=10, help="measured cycles (default 10)")
    parser.add_argument("--warm-up", type=int, default=3, help="cycles not counted (default 3)")
    parser.add_argument("--spacing", type=float, default=1.0, help="seconds between cycles (default 1)")
    parser.add_argument("--settle-gc", action="store_true",
                        help="settle the garbage collector after the first cycle, as `kpulse collect` does "
                             "(collectors.runner.settle_gc)")
    parser.add_argument("--profile", action="store_true", help="print a cProfile top 20 of the measured cycles")
    parser.add_argument("--tracemalloc", action="store_true", help="print the top allocations alive at the end")
    args = parser.parse_args()

    config = parse_config({"clusters": [{"name": "bench", "bootstrap_servers": args.bootstrap,
                                         "consumer_groups": {"include": ["bench-.*"]}}],
                           "lake": {"path": tempfile.mkdtemp(prefix="kpulse-lagcpu-lake-")}},
                          source="bench", base_dir=Path.cwd())
    cluster = config.cluster(None)
    read = _Timed(read_cluster_offsets)
    collector = _TimedLagCollector(cluster, read_offsets=read)
    if args.tracemalloc:
        tracemalloc.start(8)
    profile = cProfile.Profile() if args.profile else None
    decoding, collecting = _DecodeTime(), _GcTime()
    reading, decoded, evaluating, collected, total = [], [], [], [], []
    result = None
    for cycle in range(args.warm_up + args.cycles):
        if cycle == 1 and args.settle_gc:
            from collectors.runner import settle_gc

            settle_gc()
        read.seconds = collector.evaluate_seconds = decoding.seconds = collecting.seconds = 0.0
        measured = cycle >= args.warm_up
        if profile is not None and measured:
            profile.enable()
        began = time.process_time()
        result = collector.collect(CollectContext(cluster, time.time()))
        spent = time.process_time() - began
        if profile is not None and measured:
            profile.disable()
        if measured:
            reading.append(read.seconds)
            decoded.append(decoding.seconds)
            collected.append(collecting.seconds)
            evaluating.append(collector.evaluate_seconds)
            total.append(spent)
        time.sleep(args.spacing)
    assert result is not None, "no cycle ran"
    groups = result.sections["consumer_groups"]
    assert isinstance(groups, list)  # the lag collector's section: its groups
    print(f"{len(groups)} groups, {sum(len(g['partitions']) for g in groups)} group partitions, "
          f"{args.cycles} cycles measured")
    print(f"process CPU per cycle (median): whole collect {statistics.median(total):.3f} s "
          f"(mean {statistics.mean(total):.3f} s), "
          f"reading {statistics.median(reading):.3f} s (decoding the answers {statistics.median(decoded):.3f} s), "
          f"evaluate {statistics.median(evaluating):.3f} s; garbage collection {statistics.median(collected):.3f} s "
          f"(mean {statistics.mean(collected):.3f} s)")
    print("decoding by answer, all cycles: " + ", ".join(
        f"{kind} {seconds:.3f} s" for kind, seconds in sorted(decoding.by_answer.items(), key=lambda kv: -kv[1])))
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    if args.tracemalloc:
        snapshot = tracemalloc.take_snapshot()
        print("top allocations alive (by line):")
        for stat in snapshot.statistics("lineno")[:15]:
            print(f"  {stat.size / 2**20:7.1f} MB {stat.count:9d} blocks  {stat.traceback[0]}")
    if profile is not None:
        pstats.Stats(profile).sort_stats("tottime").print_stats(20)
    collector.close()


if __name__ == "__main__":
    main()
