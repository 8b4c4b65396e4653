"""Cost of the KRaft reads of the cluster metadata collector at scale: DescribeQuorum, and ELR /
LastKnownElr (DescribeTopicPartitions) for the problem partitions only against every partition.

Run on a cluster of your own (it creates ``--topics`` topics of ``--partitions`` partitions each at
replication factor 1, named ``kraft-bench-<n>``, unless they exist; ``--delete`` removes them at the
end)::

    .venv/bin/python bench/kraft_reads.py --bootstrap 127.0.0.1:24591 --topics 5 --partitions 2000

For each arm it prints the median wall time and this process's CPU time of ``--rounds`` reads:

- ``quorum``: one DescribeQuorum (every cycle pays it);
- ``elr problems=N``: the collector's read for N problem partitions spread evenly over the topics
  (one page per topic, from its first problem partition to its last: the costly spread; N = 0
  sends nothing);
- ``elr every partition``: what reading ELR for all partitions would cost each cycle;
- ``cycle healthy``: a whole ``ClusterMetadataCollector.collect`` (metadata, min ISR, quorum) on
  the healthy cluster, and the same with the KRaft reads replaced by nothing, for the difference.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from collectors.cluster.cluster_metadata import ClusterMetadataCollector  # noqa: E402
from collectors.protocol import CollectContext  # noqa: E402
from kpulse.config import parse_config  # noqa: E402
from kpulse.kafka.batched_client import BatchedClient  # noqa: E402
from kpulse.kafka.kraft_reads import KraftReader  # noqa: E402


def timed(function, rounds: int) -> tuple[float, float]:
    """Median wall seconds and median process CPU seconds of ``rounds`` calls."""
    walls, cpus = [], []
    for _ in range(rounds):
        wall, cpu = time.perf_counter(), time.process_time()
        function()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


class NoKraft(KraftReader):
    """A reader that reads nothing: the collector's cycle without the KRaft reads."""

    def quorum(self, timeout: float, now: float, nodes: Sequence[int] = ()) -> dict[str, Any]:
        return {}

    def registrations(self, timeout: float, nodes: Sequence[int] = ()) -> dict[str, list[int]]:
        return {"fenced": [], "unfenced": []}

    def elr(self, partitions: Mapping[str, Iterable[int]], timeout: float, nodes: Sequence[int] = ()
            ) -> dict[tuple[str, int], tuple[list[int] | None, list[int] | None]]:
        return {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topics", type=int, default=5)
    parser.add_argument("--partitions", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--delete", action="store_true")
    args = parser.parse_args()

    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    names = [f"kraft-bench-{n}" for n in range(args.topics)]
    missing = [n for n in names if n not in admin.list_topics(timeout=30).topics]
    if missing:
        began = time.monotonic()
        for name in missing:  # one topic a request: the controller refuses too large a batch
            # min.insync.replicas 1: healthy at replication factor 1 (the local cluster's default is 2)
            admin.create_topics([NewTopic(name, args.partitions, 1, config={"min.insync.replicas": "1"})],
                                request_timeout=600)[name].result(600)
        print(f"created {len(missing)} topics of {args.partitions} partitions in {time.monotonic() - began:.1f} s")
    time.sleep(5)  # the metadata of new topics reaches every broker
    total = sum(len(t.partitions) for t in admin.list_topics(timeout=60).topics.values())
    print(f"cluster: {total} partitions")

    config = parse_config({"clusters": [{"name": "bench", "bootstrap_servers": args.bootstrap}]},
                          source="bench", base_dir=Path.cwd()).cluster(None)
    reader = KraftReader(BatchedClient(config, client_id="kpulse-bench", fallback_note=None))
    reader.quorum(30, time.time())  # connect first
    every = {n: range(args.partitions) for n in names}
    print(f"{'arm':<28} {'wall s':>8} {'cpu s':>8}")
    arms: list[tuple[str, Callable[[], object]]] = [("quorum", lambda: reader.quorum(30, time.time()))]
    for problems in (0, 10, 200):
        per_topic = problems // args.topics
        # spread evenly over each topic (a dead broker's partitions are): the collector's page per
        # topic then runs from near its first partition to near its last, the costly case
        spread = {n: [i * (args.partitions // per_topic) for i in range(per_topic)] for n in names} if per_topic else {}
        arms.append((f"elr problems={problems}", partial(reader.elr, spread, 60)))
    arms.append((f"elr every partition ({args.topics * args.partitions})", lambda: reader.elr(every, 60)))
    for name, function in arms:
        wall, cpu = timed(function, args.rounds)
        print(f"{name:<28} {wall:>8.4f} {cpu:>8.4f}")
    for name, kraft in (("cycle healthy", reader), ("cycle healthy, no KRaft read", NoKraft(reader.client))):
        collector = ClusterMetadataCollector(config, kraft_reader=kraft)
        collector.collect(CollectContext(config, time.time()))  # min ISR read once, as a running collector has
        wall, cpu = timed(lambda c=collector: c.collect(CollectContext(config, time.time())), args.rounds)
        print(f"{name:<28} {wall:>8.4f} {cpu:>8.4f}")
    reader.client.close()
    if args.delete:
        for future in admin.delete_topics(names).values():
            future.result(120)


if __name__ == "__main__":
    main()
