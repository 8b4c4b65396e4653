"""The fuzz harness's own corner of a cluster (:mod:`tests.fuzz_operations`): topics with known
records, inactive groups with known committed offsets, a Streams-like application and a longer one
that shares its prefix, a users file and configs; and the reads the harness checks kpulse with, made
by a client of its own (never by kpulse's code under test).

Record j of every harness partition is stamped ``FIRST_RECORD_MS + j`` minutes, so where a timestamp
reset must land is known (:func:`tests.fuzz_inputs.first_offset_at`).

For the operations on Kafka 4's group types (issue 15) the world also has: an Empty Streams group
(KIP-1071: the demo's topology run once on ``<prefix>g-orders``, then stopped), an Empty share group
with start offsets on ``<prefix>.sh`` (a share consumer that read and left), two more Empty classic
groups (``<prefix>-delete``, ``<prefix>-offsets``) and a classic group with an active member
(``<prefix>-live``, polled by a thread until :meth:`World.close`). Offsets of Streams and share groups
are read and restored through :class:`operations.group_requests.GroupRequests` (kafka-python), as
the group operations' own tests do (tests/group_ops_support.py): confluent-kafka's Admin has no
share-group offset calls, and its offset reads can crash on a moving coordinator.
"""

from __future__ import annotations

import contextlib
import getpass
import logging
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import TYPE_CHECKING

from tests.fuzz_inputs import FIRST_RECORD_MS, MINUTE_MS

if TYPE_CHECKING:
    from confluent_kafka.admin import AdminClient

    from tests.fuzz_operations import Harness

LIBRDKAFKA_LOG = logging.getLogger("tests.fuzz.librdkafka")
"""The harness's clients log here, not on stderr (a client outliving the cluster would complain)."""
SHARE_CONSUMER = textwrap.dedent("""\
    import sys
    from confluent_kafka import ShareConsumer
    consumer = ShareConsumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2]})
    consumer.subscribe([sys.argv[3]])
    for _ in range(120):
        if consumer.poll(1.0):
            break
    consumer.close()
    """)
"""Joins the share group, reads once (acknowledging), leaves: the group is Empty with start offsets."""
PASSWORD = "fuzz-password-1"
"""Of every user of the harness's users file (the OS user: admin; alice: operator; victor: viewer)."""


class World:
    """The harness's own topics and inactive groups on one cluster, its configs and users file."""

    def __init__(self, bootstrap: str, workdir: Path, prefix: str = "fz"):
        self.bootstrap, self.workdir, self.prefix = bootstrap, Path(workdir), prefix
        p = prefix
        self.topic_a, self.topic_b, self.topic_r = f"{p}.a", f"{p}.b", f"{p}.r"
        self.app, self.app_x, self.app_in, self.app_mid = f"{p}s-app", f"{p}s-app-x", f"{p}s.in", f"{p}s.mid"
        self.app_internal = (f"{p}s-app-store-changelog", f"{p}s-app-agg-repartition", f"{p}s-app-x-store-changelog")
        self.counts = {self.topic_a: {0: 20, 1: 12, 2: 25}, self.topic_b: {0: 6, 1: 6},
                       self.app_in: {0: 10, 1: 10}, self.app_mid: {0: 4}, self.topic_r: {0: 3, 1: 3, 2: 3}}
        self.log_start = {(self.topic_a, 0): 3}
        initial = {(self.topic_a, 0): 10, (self.topic_a, 1): 5, (self.topic_a, 2): 20, (self.topic_b, 0): 4}
        self.groups = {name: f"{p}-{name}" for name in ("reset", "plan", "file", "approve", "delete", "offsets")}
        self.baseline = {group: dict(initial) for group in self.groups.values()}
        self.share_topic, self.share_group = f"{p}.sh", f"{p}-share"
        self.streams_group, self.streams_in = f"{p}g-app", f"{p}g-orders"
        self.live = f"{p}-live"
        """A classic group with an active member (on ``topic_b``, committing nothing)."""
        self.counts[self.share_topic] = {0: 8, 1: 5}
        self.counts[self.streams_in] = {0: 9, 1: 7, 2: 8}
        self.share_baseline: dict[tuple[str, int], int | None] = {}
        self.streams_baseline: dict[tuple[str, int], int] = {}
        self.streams_topics: dict[str, int] = {}
        """The Streams group's own repartition and changelog topics -> partitions."""
        self._stack = contextlib.ExitStack()
        self._group_requests = None
        self.baseline[self.app] = {(self.app_in, 0): 5, (self.app_in, 1): 5, (self.app_mid, 0): 2}
        self.baseline[self.app_x] = {(self.app_in, 0): 7}
        self.state = self.workdir / "state"
        self.config = str(self.workdir / "kpulse.yaml")
        self.audit_config = str(self.workdir / "audit.yaml")
        self.users = self.workdir / "users.yaml"
        self.os_user = getpass.getuser()
        self._admin: AdminClient | None = None
        self.base_reset_plans: dict[str, list[dict]] = {}
        self.base_reassign_plan: dict = {}
        self.internal_move: list[int] = []
        """Replicas of ``__consumer_offsets-0`` in another order (a reassignment that moves leadership)."""

    @property
    def admin(self) -> AdminClient:
        """The harness's Admin client (made by :meth:`build`)."""
        assert self._admin is not None, "build() first"
        return self._admin

    def build(self, harness: Harness) -> None:
        from confluent_kafka import TopicPartition
        from confluent_kafka.admin import AdminClient, NewTopic

        from operations.access import UsersFile

        self.workdir.mkdir(parents=True, exist_ok=True)
        self._admin = AdminClient({"bootstrap.servers": self.bootstrap}, logger=LIBRDKAFKA_LOG)
        keep = {"retention.ms": "-1"}
        topics = [NewTopic(t, len(c), 3, config=keep) for t, c in self.counts.items() if t != self.topic_r]
        topics.append(NewTopic(self.topic_r, num_partitions=3, replica_assignment=[[1, 2], [1, 2], [1, 2]], config=keep))
        topics += [NewTopic(t, 1, 3, config=keep) for t in self.app_internal]
        for future in self.admin.create_topics(topics, request_timeout=60).values():
            future.result(timeout=90)
        self._wait_for_leaders([t.topic for t in topics])
        self._produce()
        for (topic, partition), start in self.log_start.items():
            tp = TopicPartition(topic, partition, start)
            self.admin.delete_records([tp], request_timeout=30)[tp].result(timeout=40)
        self._first_commits()
        self._wait_for_offsets_topic()
        replicas = list(self.admin.list_topics(timeout=15).topics["__consumer_offsets"].partitions[0].replicas)
        self.internal_move = replicas[1:] + replicas[:1]
        for group in self.baseline:
            self.restore(group)
        self._modern_groups()
        users = UsersFile(self.users)
        for name, role in ((self.os_user, "admin"), ("alice", "operator"), ("victor", "viewer")):
            users.add(name, role, PASSWORD)
        for path, lake in ((self.config, "lake"), (self.audit_config, "audit-lake")):
            Path(path).write_text(f"clusters:\n  - name: fuzz\n    bootstrap_servers: \"{self.bootstrap}\"\n"
                                  f"    probe:\n      enabled: false\nlake:\n  path: {self.workdir / lake}\n"
                                  f"dashboard:\n  users_file: {self.users}\n")
        with harness.patched():
            for group in (self.groups["plan"], self.groups["approve"]):
                self.base_reset_plans[group] = [
                    harness.plan_json(["--config", self.config, "reset-offsets", f"--group={group}", *args, "--json"])["plan"]
                    for args in ([f"--topic={self.topic_a}", "--to-earliest"], ["--all-topics", "--shift-by=-3"],
                                 [f"--topic={self.topic_a}:0,2", "--to-offset=7"], [f"--topic={self.topic_b}", "--to-latest"])]
            self.base_reassign_plan = harness.plan_json(["--config", self.config, "reassign", "generate",
                                                         f"--topics={self.topic_r}", "--json"])
        assert self.base_reassign_plan["moves"], "the reassignment base plan must move something"

    def _modern_groups(self) -> None:
        """The Streams group, the share group and the active classic group (module docstring)."""
        from tests.support import classic_consumer, set_share_auto_offset_reset, start_streams_app, wait_for

        set_share_auto_offset_reset(self.bootstrap, self.share_group)
        subprocess.run([sys.executable, "-c", SHARE_CONSUMER, self.bootstrap, self.share_group, self.share_topic],
                       check=True, timeout=180, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(lambda: self.share_offsets() or None, 60, what="the share group's start offsets")
        self.share_baseline = {(self.share_topic, p): n // 2 for p, n in self.counts[self.share_topic].items()}
        with self._requests() as requests:  # every partition initialised, inside the log, not at its ends
            requests.alter_share_offsets(self.share_group, self.share_baseline)
        wait_for(lambda: self.share_offsets() == self.share_baseline, 60, what="the share group's baseline")
        wanted = {(self.streams_in, p): n for p, n in self.counts[self.streams_in].items()}
        with start_streams_app(self.bootstrap, self.streams_group, f"{self.prefix}g-", self.workdir / "streams"):
            wait_for(lambda: self.streams_committed() == wanted, 240, 1, "the Streams group to commit every input record")
        wait_for(lambda: self._streams_state() == "Empty", 120, 1, "the Streams group Empty")
        self.streams_baseline = self.streams_committed()
        topics = self.admin.list_topics(timeout=15).topics
        self.streams_topics = {name: len(t.partitions) for name, t in topics.items()
                               if name.startswith(self.streams_group + "-")}
        self._stack.enter_context(classic_consumer(self.bootstrap, self.live, [self.topic_b],
                                                   {"enable.auto.commit": False}))
        wait_for(lambda: any(g.group_id == self.live and str(g.state).upper().endswith("STABLE")
                             for g in self.admin.list_consumer_groups(request_timeout=15).result(timeout=20).valid),
                 60, what="the active group Stable")

    def _streams_state(self) -> str | None:
        from tests.support import official

        text = official("kafka-streams-groups", "--bootstrap-server", self.bootstrap, "--describe", "--group",
                        self.streams_group, "--state")
        return next((state for state in ("Empty", "Stable", "NotReady", "Reconciling", "Assigning") if state in text), None)

    def close(self) -> None:
        """Stop the active group's member, close the group requests' client."""
        self._stack.close()
        if self._group_requests is not None:
            self._group_requests.close()

    @contextlib.contextmanager
    def _requests(self):
        """The world's one :class:`GroupRequests` (its client connects once; closed by :meth:`close`)."""
        from kafka.admin import KafkaAdminClient

        from operations.group_requests import GroupRequests

        if self._group_requests is None:
            self._group_requests = GroupRequests(lambda: KafkaAdminClient(bootstrap_servers=self.bootstrap,
                                                                          client_id="kpulse-fuzz"))
        yield self._group_requests

    def streams_committed(self) -> dict[tuple[str, int], int]:
        with self._requests() as requests:
            return dict(requests.committed(self.streams_group))

    def share_offsets(self) -> dict[tuple[str, int], int | None]:
        with self._requests() as requests:
            return dict(requests.share_start_offsets(self.share_group))

    def snapshot(self) -> dict:
        """What an operation on the groups may change: the harness's classic and consumer groups
        listed (confluent-kafka lists no other type: a Streams or share group deleted shows as its
        offsets gone), the harness's topics, the offsets of every group the group operations are run
        on. Only names with the harness's prefix: other tests' groups and topics come and go."""
        topics = self.admin.list_topics(timeout=15).topics
        with self._requests() as requests:
            return {"groups": frozenset(g for g in self.group_ids() if g.startswith(self.prefix)),
                    "topics": {n: len(t.partitions) for n, t in topics.items() if n.startswith(self.prefix)},
                    "offsets": {g: self.committed(g) for g in (self.groups["delete"], self.groups["offsets"], self.live)},
                    "streams": dict(requests.committed(self.streams_group)),
                    "share": dict(requests.share_start_offsets(self.share_group))}

    def restore_modern(self) -> None:
        """The Streams and share groups back to their baseline: offsets (a share group's state on
        other topics deleted), and internal topics created again."""
        from confluent_kafka.admin import NewTopic

        present = 0
        for _ in range(120):  # a topic being deleted cannot be created again yet, and may still be listed
            existing = self.admin.list_topics(timeout=15).topics
            missing = [NewTopic(t, n, 3) for t, n in self.streams_topics.items() if t not in existing]
            present = 0 if missing else present + 1
            if present == 3:
                break
            if not missing:
                time.sleep(0.5)
                continue
            for future in self.admin.create_topics(missing, request_timeout=60).values():
                with contextlib.suppress(Exception):
                    future.result(timeout=90)
            time.sleep(0.5)
        else:
            raise AssertionError("cannot create the Streams group's internal topics again")
        self._wait_for_leaders(list(self.streams_topics))
        with self._requests() as requests:
            if dict(requests.committed(self.streams_group)) != self.streams_baseline:
                requests.commit(self.streams_group, self.streams_baseline)
            now = dict(requests.share_start_offsets(self.share_group))
            extra = sorted({t for t, _ in now} - {t for t, _ in self.share_baseline})
            if extra:  # a reset of a topic the group had no state for adds it (as kafka-share-groups does)
                requests.delete_share_offsets(self.share_group, extra)
            if now != self.share_baseline:
                requests.alter_share_offsets(self.share_group, {tp: o for tp, o in self.share_baseline.items()
                                                                if o is not None})

    def _wait_for_leaders(self, names: list[str]) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            topics = self.admin.list_topics(timeout=10).topics
            if all(n in topics and all(p.leader >= 0 for p in topics[n].partitions.values()) for n in names):
                return
            time.sleep(0.2)
        raise AssertionError(f"topics {names} have no leaders")

    def _produce(self) -> None:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.bootstrap, "acks": "all", "linger.ms": 5, "logger": LIBRDKAFKA_LOG})
        for topic, counts in self.counts.items():
            for partition, count in counts.items():
                for j in range(count):
                    producer.produce(topic, value=f"{partition}-{j}".encode(), partition=partition,
                                     timestamp=FIRST_RECORD_MS + j * MINUTE_MS)
        assert producer.flush(60) == 0

    # --- reads, by the harness's own client (not kpulse's code under test) -----------------------

    def committed(self, group: str) -> dict[tuple[str, int], int] | None:
        """The group's committed offsets; None when they cannot be read (e.g. an empty group id)."""
        from confluent_kafka import ConsumerGroupTopicPartitions

        for attempt in range(10):
            try:
                answer = self.admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)],
                                                                request_timeout=15)[group].result(timeout=20)
                return {(tp.topic, tp.partition): tp.offset for tp in answer.topic_partitions if tp.offset >= 0}
            except Exception as error:  # noqa: BLE001 - the coordinator may be moving; bad ids never read
                if "COORDINATOR" not in str(error) or attempt == 9:
                    return None
                time.sleep(0.3 * (attempt + 1))
        return None

    def group_ids(self) -> set[str]:
        listed = self.admin.list_consumer_groups(request_timeout=15).result(timeout=20)
        return {g.group_id for g in listed.valid}

    def partitions(self) -> dict[str, set[int]]:
        return {name: set(t.partitions) for name, t in self.admin.list_topics(timeout=15).topics.items()}

    def log_ranges(self, tps: set[tuple[str, int]]) -> dict[tuple[str, int], tuple[int, int]]:
        from confluent_kafka import TopicPartition
        from confluent_kafka.admin import OffsetSpec

        if not tps:
            return {}
        ends: dict[tuple[str, int], list[int]] = {}
        for spec in (OffsetSpec.earliest(), OffsetSpec.latest()):
            futures = self.admin.list_offsets({TopicPartition(t, p): spec for t, p in tps}, request_timeout=15)
            for tp, future in futures.items():
                ends.setdefault((tp.topic, tp.partition), []).append(future.result(timeout=20).offset)
        return {tp: (start, end) for tp, (start, end) in ends.items()}

    def restore(self, group: str) -> None:
        """Put a harness group back to its baseline offsets (delete the group, commit again); delete
        any other group a case created."""
        wanted = self.baseline.get(group, {})
        now = self.committed(group)
        if now is None or now == wanted:
            return
        if now:
            with contextlib.suppress(Exception):
                self.admin.delete_consumer_groups([group], request_timeout=15)[group].result(timeout=20)
        if not wanted:
            return
        for _ in range(30):
            self._commit(group, wanted)
            if self.committed(group) == wanted:
                return
            time.sleep(0.5)
        raise AssertionError(f"cannot restore the offsets of {group}")

    def _commit(self, group: str, offsets: dict[tuple[str, int], int]) -> None:
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

        request = ConsumerGroupTopicPartitions(group, [TopicPartition(t, p, o) for (t, p), o in offsets.items()])
        for _ in range(60):  # a fresh cluster creates __consumer_offsets on the first commit
            with contextlib.suppress(Exception):
                answer = self.admin.alter_consumer_group_offsets([request], request_timeout=15)[group].result(timeout=20)
                if all(tp.error is None for tp in answer.topic_partitions):
                    return
            time.sleep(0.5)
        raise AssertionError(f"cannot commit the offsets of {group}")

    def _first_commits(self) -> None:
        """The baseline offsets, committed by consumers: on a fresh cluster the first group request
        creates ``__consumer_offsets``, and the Admin API's group requests meet librdkafka's
        assertion failures while the coordinators are not there yet; a consumer's commit waits."""
        from confluent_kafka import Consumer, KafkaException, TopicPartition

        for group, offsets in self.baseline.items():
            consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": group, "enable.auto.commit": False,
                                 "logger": LIBRDKAFKA_LOG})
            try:
                for attempt in range(60):
                    try:
                        consumer.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()],
                                        asynchronous=False)
                        break
                    except KafkaException:
                        if attempt == 59:
                            raise
                        time.sleep(1)
            finally:
                consumer.close()

    def _wait_for_offsets_topic(self, timeout: float = 90) -> None:
        """Until every ``__consumer_offsets`` partition is led by its preferred replica with all
        replicas in sync: librdkafka's OffsetFetch can crash the process when it is answered
        NOT_COORDINATOR while group coordinators still move (librdkafka #5040; see tests/conftest.py)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            topic = self.admin.list_topics(timeout=10).topics.get("__consumer_offsets")
            if topic and topic.partitions and all(p.leader == p.replicas[0] and len(p.isrs) == len(p.replicas)
                                                  for p in topic.partitions.values()):
                time.sleep(2)
                return
            time.sleep(0.5)
        raise AssertionError("__consumer_offsets did not settle")
