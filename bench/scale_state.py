"""Build, and check, the state of the scale benches on a cluster: many consumer groups reading the
same topics, as on real clusters.

Run: ``.venv/bin/python bench/scale_state.py --bootstrap HOST:PORT [--groups 10000]
[--partitions-per-group 10] [--topics 1000] [--partitions 10] [--stable-groups 300]``. It builds the
state, starts the Stable groups' members and keeps them until Ctrl-C (``--no-members``: build and
check only). ``bench/lag_collection.py --groups`` and the dashboard bench call :func:`build` and
:class:`StableMembers` themselves.

The state (:class:`ScalePlan`; the defaults: 10,000 groups x 10 partitions on 1,000 topics x 10
partitions, 100,000 committed group partitions):

- topics ``bench.tNNN``, replication factor 1 and ``min.insync.replicas=1`` (three small nodes hold
  them, healthy), each partition holding ``records`` records;
- group ``bench-gNNNNN`` (i) has a committed offset on ``partitions_per_group`` partitions, the
  i-th run of that many in the list of every (topic, partition): with 10 partitions per topic and
  per group, group i reads topic i mod 1,000, so every topic is read by 10 groups; its offsets
  (:meth:`ScalePlan.offset`) spread from 0 to ``records``, so lags differ and none is negative;
- ``stable_groups`` of them, spread evenly, have a live classic member (all in one JVM,
  ``kpulse.demo.GroupsBench``, niced: it stands in for applications on other machines) that never
  commits: Stable groups cost the collector a DescribeGroups; the others are Empty.

The build checks its own work, and stops with a one-line reason when something does not hold:

- topics: created (an existing one must have the planned partition count);
- records: each partition is topped up to ``records`` (what it already holds is read first, so a
  second build adds nothing); the producer is idempotent, every delivery report is counted, the
  failed ones are produced again (up to :data:`PRODUCE_ATTEMPTS` times); then the log end of every
  partition is read back and must equal ``records``;
- commits: one AlterConsumerGroupOffsets per group, :data:`COMMITS_IN_FLIGHT` at once; each
  partition's error is read, failed groups are committed again (up to :data:`COMMIT_ATTEMPTS`);
- read back: every group's committed offsets (ListConsumerGroupOffsets, librdkafka's own reading,
  not kpulse's) must equal the plan, after the Stable groups' members joined.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

PRODUCE_ATTEMPTS = 5
COMMIT_ATTEMPTS = 10
COMMITS_IN_FLIGHT = 200
"""AlterConsumerGroupOffsets (and ListConsumerGroupOffsets) calls in flight at once."""
LIST_OFFSETS_CHUNK = 1000
TOPICS_PER_CREATE = 100
MEMBERS_JVM_NICE = 19
MEMBERS_JVM_HEAP_MB, MEMBERS_JVM_HEAP_MB_PER_MEMBER = 192, 4
MEMBERS_READY_SECONDS = 900.0


class BuildFailed(Exception):
    """The state could not be built as planned (one line saying what and how much)."""


@dataclass(frozen=True)
class ScalePlan:
    groups: int = 10_000
    partitions_per_group: int = 10
    topics: int = 1_000
    partitions: int = 10
    """Partitions of each topic."""
    records: int = 10
    """Records in each partition."""
    stable_groups: int = 300
    """Groups with a live member (the rest are Empty)."""

    def __post_init__(self):
        for name in ("groups", "partitions_per_group", "topics", "partitions", "records"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.partitions_per_group > self.topics * self.partitions:
            raise ValueError(f"{self.partitions_per_group} partitions per group, and there are "
                             f"{self.topics * self.partitions} partitions")
        if not 0 <= self.stable_groups <= self.groups:
            raise ValueError(f"stable groups: 0 to {self.groups}")

    @property
    def topic_names(self) -> list[str]:
        return [f"bench.t{i:03d}" for i in range(self.topics)]

    @property
    def all_partitions(self) -> list[tuple[str, int]]:
        return [(topic, p) for topic in self.topic_names for p in range(self.partitions)]

    @property
    def group_partitions(self) -> int:
        return self.groups * self.partitions_per_group

    @staticmethod
    def group_id(index: int) -> str:
        return f"bench-g{index:05d}"

    def partitions_of(self, index: int, every: list[tuple[str, int]] | None = None) -> list[tuple[str, int]]:
        """The partitions group ``index`` commits on: the index-th run of ``partitions_per_group``."""
        every = every if every is not None else self.all_partitions
        start = index * self.partitions_per_group
        return [every[(start + k) % len(every)] for k in range(self.partitions_per_group)]

    def offset(self, index: int, k: int) -> int:
        """The offset group ``index`` commits on its k-th partition: from 0 to ``records``."""
        return (index * 7 + k * 3) % (self.records + 1)

    def commits(self) -> dict[str, dict[tuple[str, int], int]]:
        """group -> (topic, partition) -> planned committed offset."""
        every = self.all_partitions
        return {self.group_id(i): {tp: self.offset(i, k) for k, tp in enumerate(self.partitions_of(i, every))}
                for i in range(self.groups)}

    def stable_group_indexes(self) -> list[int]:
        """The groups given a live member, spread evenly over the groups."""
        if self.stable_groups == 0:
            return []
        step = self.groups / self.stable_groups
        return [int(i * step) for i in range(self.stable_groups)]


def build(bootstrap: str, plan: ScalePlan, say=print) -> None:
    """Topics, records and committed offsets as planned, each checked (raises :class:`BuildFailed`)."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    began = time.monotonic()
    create_topics(admin, plan, say)
    say(f"  topics ready ({time.monotonic() - began:.0f} s)")
    produce(bootstrap, admin, plan, say)
    say(f"  records checked: every partition's log end is {plan.records} ({time.monotonic() - began:.0f} s)")
    commit(admin, plan.commits(), say)
    say(f"  committed {plan.group_partitions} group partitions in {plan.groups} groups "
        f"({time.monotonic() - began:.0f} s)")


def create_topics(admin, plan: ScalePlan, say=print) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import NewTopic

    names = plan.topic_names
    for start in range(0, len(names), TOPICS_PER_CREATE):
        batch = names[start:start + TOPICS_PER_CREATE]
        futures = admin.create_topics([NewTopic(n, num_partitions=plan.partitions, replication_factor=1,
                                                config={"min.insync.replicas": "1"}) for n in batch],
                                      request_timeout=120)
        for name, future in futures.items():
            try:
                future.result(180)
            except KafkaException as error:
                if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise BuildFailed(f"topic {name} could not be created: {error.args[0].str()}") from error
        say(f"  topics {min(start + TOPICS_PER_CREATE, len(names))}/{len(names)}")
    # the brokers learn of new topics from the controller a moment later; with the machine busy
    # (a test run beside it, 2026-11-28) 300 of 1,000 were still unknown after a minute
    deadline = time.monotonic() + 180
    while True:
        metadata = admin.list_topics(timeout=60).topics
        wrong = [n for n in names if n not in metadata or len(metadata[n].partitions) != plan.partitions]
        if not wrong or time.monotonic() > deadline:
            break
        time.sleep(1)
    if wrong:
        raise BuildFailed(f"{len(wrong)} topics missing or without {plan.partitions} partitions (e.g. {wrong[0]})")


def log_ends(admin, partitions: list[tuple[str, int]], bootstrap: str) -> dict[tuple[str, int], int]:
    """The log end of every partition (ListOffsets latest, in chunks). A round with failures is
    asked again through a new client: right after 1,000 topics were created, librdkafka's client
    kept answering "No leaders found" for 5,000-7,000 of their partitions for two minutes (twice,
    2026-11-27), while the brokers' metadata had every leader."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    ends: dict[tuple[str, int], int] = {}
    pending, why = list(partitions), ""
    deadline = time.monotonic() + 120  # new topics' leaders are being elected
    while pending:
        failed = []
        for start in range(0, len(pending), LIST_OFFSETS_CHUNK):
            chunk = pending[start:start + LIST_OFFSETS_CHUNK]
            futures = admin.list_offsets({TopicPartition(t, p): OffsetSpec.latest() for t, p in chunk},
                                         request_timeout=60)
            for tp, future in futures.items():
                try:
                    ends[(tp.topic, tp.partition)] = future.result(120).offset
                except Exception as error:  # noqa: BLE001 - asked again, then named
                    failed.append((tp.topic, tp.partition))
                    why = str(error)
        if failed and time.monotonic() > deadline:
            raise BuildFailed(f"the log ends of {len(failed)} partitions could not be read (e.g. {failed[0]}: {why})")
        pending = failed
        if pending:
            time.sleep(1)
            admin = AdminClient({"bootstrap.servers": bootstrap})
    return ends


def produce(bootstrap: str, admin, plan: ScalePlan, say=print) -> None:
    """Top every partition up to ``plan.records`` records, counting delivery reports."""
    from confluent_kafka import Producer

    every = plan.all_partitions
    ends = log_ends(admin, every, bootstrap)
    missing = {tp: plan.records - end for tp, end in ends.items() if end < plan.records}
    over = [tp for tp, end in ends.items() if end > plan.records]
    if over:
        raise BuildFailed(f"{len(over)} partitions hold more than {plan.records} records (e.g. {over[0]}): "
                          "a cluster built for another plan")
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 20,
                         "message.timeout.ms": 120_000, "batch.num.messages": 10_000})
    for attempt in range(1, PRODUCE_ATTEMPTS + 1):
        if not missing:
            break
        wanted = sum(missing.values())
        delivered = [0]
        failed: dict[tuple[str, int], int] = {}
        reasons: list[str] = []  # the first failure's

        def report(error, message, failed=failed, delivered=delivered, reasons=reasons):
            if error is None:
                delivered[0] += 1
            else:
                key = (message.topic(), message.partition())
                failed[key] = failed.get(key, 0) + 1
                if not reasons:
                    reasons.append(error.str())

        for n, ((topic, partition), count) in enumerate(sorted(missing.items())):
            for _ in range(count):
                while True:
                    try:
                        producer.produce(topic, value=b"x", partition=partition, on_delivery=report)
                        break
                    except BufferError:
                        producer.poll(0.1)
            producer.poll(0)
            if n % 2000 == 1999:
                say(f"  producing: {n + 1}/{len(missing)} partitions queued, {delivered[0]} records delivered")
        left = producer.flush(180)
        why = reasons[0] if reasons else None
        lost = sum(failed.values())
        say(f"  produce attempt {attempt}: {delivered[0]}/{wanted} delivered, {lost} failed"
            + (f" ({why})" if why else "") + (f", {left} not reported" if left else ""))
        if left:
            raise BuildFailed(f"{left} records had no delivery report after 180 s")
        missing = {tp: plan.records - end for tp, end in log_ends(admin, every, bootstrap).items() if end < plan.records}
        if lost and not missing:
            say("  (the failed ones had reached the log: the idempotent producer counted them failed)")
    ends = log_ends(admin, every, bootstrap)
    wrong = {tp: end for tp, end in ends.items() if end != plan.records}
    if wrong:
        (topic, partition), end = next(iter(sorted(wrong.items())))
        raise BuildFailed(f"after {PRODUCE_ATTEMPTS} produce attempts {len(wrong)} partitions do not hold "
                          f"{plan.records} records (e.g. {topic}[{partition}]: log end {end})")


def commit(admin, commits: dict[str, dict[tuple[str, int], int]], say=print) -> None:
    """One AlterConsumerGroupOffsets per group; every partition's error is read; failures retried."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    pending = sorted(commits)
    why: dict[str, str] = {}
    for attempt in range(1, COMMIT_ATTEMPTS + 1):
        failed = []
        for start in range(0, len(pending), COMMITS_IN_FLIGHT):
            batch = pending[start:start + COMMITS_IN_FLIGHT]
            futures = []
            for group in batch:
                request = ConsumerGroupTopicPartitions(
                    group, [TopicPartition(t, p, o) for (t, p), o in sorted(commits[group].items())])
                futures.append((group, admin.alter_consumer_group_offsets([request], request_timeout=60)[group]))
            for group, future in futures:
                try:
                    errors = [tp.error for tp in future.result(120).topic_partitions if tp.error is not None]
                except Exception as error:  # noqa: BLE001 - counted, retried, then named
                    errors = [error]
                if errors:
                    failed.append(group)
                    why[group] = str(errors[0])
            done = start + len(batch)
            if done % 2000 < COMMITS_IN_FLIGHT or done == len(pending):
                say(f"  commit attempt {attempt}: {done}/{len(pending)} groups sent, {len(failed)} failed so far")
        if not failed:
            return
        pending = failed
        time.sleep(2)
    raise BuildFailed(f"{len(pending)} groups could not commit after {COMMIT_ATTEMPTS} attempts "
                      f"(e.g. {pending[0]}: {why[pending[0]]})")


def read_back(bootstrap: str, commits: dict[str, dict[tuple[str, int], int]], say=print) -> None:
    """Every group's committed offsets, read through librdkafka, equal the plan (else BuildFailed)."""
    from confluent_kafka import ConsumerGroupTopicPartitions
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    groups = sorted(commits)
    wrong: list[str] = []
    for start in range(0, len(groups), COMMITS_IN_FLIGHT):
        batch = groups[start:start + COMMITS_IN_FLIGHT]
        futures = [(g, admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(g)], request_timeout=60)[g])
                   for g in batch]
        for group, future in futures:
            try:
                read = {(tp.topic, tp.partition): tp.offset for tp in future.result(120).topic_partitions
                        if tp.error is None and tp.offset >= 0}
            except Exception as error:  # noqa: BLE001 - named below
                wrong.append(f"{group}: {error}")
                continue
            if read != commits[group]:
                differ = sorted(set(read.items()) ^ set(commits[group].items()))
                wrong.append(f"{group}: read {len(read)} committed partitions, planned {len(commits[group])}; "
                             f"first difference {differ[0] if differ else '?'}")
        done = start + len(batch)
        if done % 2000 < COMMITS_IN_FLIGHT or done == len(groups):
            say(f"  read back {done}/{len(groups)} groups, {len(wrong)} differ from the plan")
    if wrong:
        raise BuildFailed(f"{len(wrong)} groups' committed offsets differ from the plan (e.g. {wrong[0]})")


class StableMembers:
    """The JVM of the Stable groups' members (``kpulse.demo.GroupsBench``, classic consumers)."""

    def __init__(self, bootstrap: str, plan: ScalePlan):
        self.bootstrap, self.plan = bootstrap, plan
        self.directory = Path(tempfile.mkdtemp(prefix="kpulse-bench-members-"))
        self.log = self.directory / "members.log"
        self.process: subprocess.Popen | None = None

    def groups(self) -> dict[str, list[str]]:
        """Stable group -> the topics its member subscribes to."""
        every = self.plan.all_partitions
        return {self.plan.group_id(i): sorted({t for t, _ in self.plan.partitions_of(i, every)})
                for i in self.plan.stable_group_indexes()}

    def start(self) -> None:
        from localkafka.runtime import ensure_runtime, java_command

        groups = self.groups()
        if not groups:
            return
        runtime = ensure_runtime()
        argument = ",".join(f"{group}:{'+'.join(topics)}" for group, topics in groups.items())
        command = java_command(runtime, "kpulse.demo.GroupsBench",
                               [self.bootstrap, str(self.directory / "state"), "", "", argument],
                               heap=f"{MEMBERS_JVM_HEAP_MB + MEMBERS_JVM_HEAP_MB_PER_MEMBER * len(groups)}m",
                               extra_classpath=[runtime.streams_demo_classes])
        with self.log.open("w") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                            preexec_fn=lambda: os.nice(MEMBERS_JVM_NICE))
        deadline = time.monotonic() + MEMBERS_READY_SECONDS
        while not any(line.startswith("READY") for line in self.log.read_text().splitlines()):
            if self.process.poll() is not None or time.monotonic() > deadline:
                tail = "\n".join(self.log.read_text().splitlines()[-20:])
                self.stop()
                raise BuildFailed(f"the Stable groups' members did not all join (see {self.log}): {tail}")
            time.sleep(1)

    def cpu_seconds(self) -> float:
        if self.process is None:
            return 0.0
        return process_cpu_seconds(self.process.pid)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()  # the JVM closes every member: each leaves its group
            try:
                self.process.wait(90)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (``/proc/<pid>/stat`` utime + stime)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def build_and_start(bootstrap: str, plan: ScalePlan, say=print, members: bool = True) -> StableMembers | None:
    """:func:`build`, then the Stable groups' members, then the read-back of every commit; returns the
    running members (stop them) or None."""
    build(bootstrap, plan, say)
    running = None
    if members and plan.stable_groups:
        running = StableMembers(bootstrap, plan)
        began = time.monotonic()
        say(f"  starting {plan.stable_groups} classic members (one JVM) ...")
        running.start()
        say(f"  {plan.stable_groups} groups Stable with their member after {time.monotonic() - began:.0f} s")
    try:
        read_back(bootstrap, plan.commits(), say)
    except BaseException:
        if running is not None:
            running.stop()
        raise
    return running


def plan_arguments(parser: argparse.ArgumentParser) -> None:
    """The plan's options."""
    defaults = ScalePlan()
    parser.add_argument("--groups", type=int, default=ScalePlan.groups, help=f"consumer groups (default {defaults.groups})")
    parser.add_argument("--partitions-per-group", type=int, default=defaults.partitions_per_group)
    parser.add_argument("--topics", type=int, default=defaults.topics, help="topics")
    parser.add_argument("--partitions", type=int, default=defaults.partitions, help="partitions of each topic")
    parser.add_argument("--records", type=int, default=defaults.records, help="records in each partition")
    parser.add_argument("--stable-groups", type=int, default=defaults.stable_groups,
                        help="groups with a live classic member (the rest are Empty)")


def plan_from(args: argparse.Namespace) -> ScalePlan:
    return ScalePlan(groups=args.groups, partitions_per_group=args.partitions_per_group, topics=args.topics,
                     partitions=args.partitions, records=args.records, stable_groups=args.stable_groups)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--no-members", action="store_true", help="build and check; start no members")
    plan_arguments(parser)
    args = parser.parse_args()
    try:
        plan = plan_from(args)
    except ValueError as error:
        parser.error(str(error))
    say = lambda line: print(line, flush=True)  # noqa: E731
    say(f"building {plan.topics} topics x {plan.partitions} partitions, {plan.groups} groups x "
        f"{plan.partitions_per_group} partitions ({plan.stable_groups} Stable) on {args.bootstrap} ...")
    try:
        members = build_and_start(args.bootstrap, plan, say, members=not args.no_members)
    except BuildFailed as error:
        sys.exit(f"scale state: {error}")
    if members is None:
        return
    process = members.process
    assert process is not None  # build_and_start started them
    say(f"READY: the members run (pid {process.pid}); Ctrl-C stops them")
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    try:
        while not stop and process.poll() is None:
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        members.stop()


if __name__ == "__main__":
    main()
