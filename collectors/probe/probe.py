"""End-to-end probe: can a client write to every broker and read it back, and how fast?

Like LinkedIn's Xinfra Monitor and the Strimzi canary, the probe owns a topic (``kpulse-probe``)
with one partition led by each broker, writes to every partition each cycle and reads back.

Topic (:func:`collectors.probe.probe_ledger.plan_probe_topic`, applied on the first cycle and re-checked every cycle):
    one partition per live broker, partition ``i`` -> replicas ``[b_i, b_i+1, b_i+2]`` over the
    sorted broker ids (so ``b_i`` is its preferred leader), replication factor ``min(3, brokers)``,
    ``min.insync.replicas=2`` when the replication factor is 3, ``retention.ms`` one hour. When a
    broker appears that is the preferred leader of no probe partition (a broker added later, or
    down when the topic was created), a partition led by it is added. Partitions are never removed
    or reassigned: after a broker is decommissioned its partition is led by another replica.
    Leadership comes back to a restarted broker only by preferred leader election
    (``auto.leader.rebalance.enable``, every 5 minutes by default).

Each cycle:
    1. read what arrived late since the previous cycle;
    2. write ``messages_per_cycle`` records to every partition: ``acks=all``, key = this probe's id
       (records of other probes are ignored), value ``"<sequence>:<send time ns>"``, delivery
       timeout ``delivery_timeout_seconds`` (3 s) so a dead leader shows as produce errors at once;
    3. wait for the delivery reports, then read back (a long-lived consumer assigned to every
       probe partition from the end of the log, no group membership, no commits) until every
       record acknowledged this cycle is seen or ``consume_wait_seconds`` pass.

Accounting (:class:`collectors.probe.probe_ledger.ProbeLedger`, per partition and cycle):
    ``produced`` records acknowledged, ``produce_errors`` records whose delivery failed (both
    counted in the cycle the delivery report arrives in: after a leader dies it can be the next),
    ``consumed`` records read for the first time (this cycle's or late ones), ``duplicated`` reads
    of a record already read, ``lost`` records acknowledged but still unread at the end of the
    ``LOSS_DEADLINE_CYCLES``-th cycle after the one they were sent in, latency = read time - send
    time (ms; nearest-rank percentiles, :func:`collectors.probe.probe_ledger.percentile`).
    ``produce_availability`` = produced / (produced + produce_errors); ``consume_availability`` =
    of the records sent and acknowledged this cycle, the fraction read back this cycle. Both are
    ``None`` when there was nothing to measure.

Snapshot section ``probe``::

    {"topic", "produce_availability", "consume_availability", "latency_p50_ms", "latency_p99_ms",
     "latency_max_ms", "produced", "produce_errors", "consumed", "lost", "duplicated",
     "produced_total", "consumed_total", "lost_total", "duplicated_total",   # since the loop started
     "per_partition": [{"partition", "broker_id", "produced", "produce_errors", "consumed", "lost",
                        "duplicated", "latency_p50_ms", "latency_p99_ms", "latency_max_ms",
                        "consume_availability", "error"}],
     "error"}     # why the probe could not run, or a summary of the produce errors; else None

Lake rows: table ``probe``, one per partition per cycle (``broker_id`` = its leader this cycle,
null when it has none).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, TypedDict

from collectors.probe.probe_ledger import PartitionStats, ProbeLedger, plan_probe_topic, summarize
from collectors.protocol import BuiltinSections, CollectContext, CollectorResult
from kpulse.kafka.authorization import not_authorized, refused_resource
from kpulse.kafka.clients import list_topics
from kpulse.lake.schema import SCHEMAS
from kpulse.config import ClusterConfig
from kpulse.snapshot import Probe, ProbePartition

if TYPE_CHECKING:
    from confluent_kafka import Consumer, KafkaError, Message, Producer
    from confluent_kafka.admin import AdminClient

SECTION = TABLE = "probe"
DEFAULT_TOPIC = "kpulse-probe"
ADMIN_TIMEOUT_SECONDS = 10.0
PREFERRED_ELECTION_SECONDS = 5.0
REFUSED_RETRY_SECONDS = 60.0
"""After a refusal the probe asks again this much later: granting an ACL shows within a minute, and
a refused probe does not spend seconds of every cycle (and broker requests) on being refused."""


# --- the collector (I/O) -----------------------------------------------------------------------------

class ProbeCounts(TypedDict):
    """Probe records since the collector was built (the ``kpulse.snapshot.Probe`` fields of the same
    names): counters, for Prometheus' ``increase()``."""

    produced_total: int
    consumed_total: int
    lost_total: int
    duplicated_total: int


class ProbeCollector:
    """See the module docstring. Factories take a librdkafka config dict (defaults: confluent-kafka
    ``Producer``, ``Consumer`` and :func:`kpulse.kafka.clients.admin_client`); nothing connects
    before the first :meth:`collect`. ``clock`` (epoch seconds) times sends and reads.
    ``messages_per_cycle`` is records per partition per cycle. Call :meth:`close` when done."""

    name = "probe"
    sections = {SECTION: Probe}
    tables = {TABLE: SCHEMAS[TABLE]}

    def __init__(self, cluster_config: ClusterConfig, topic: str = DEFAULT_TOPIC, messages_per_cycle: int = 1,
                 producer_factory: Callable[[dict[str, object]], Producer] | None = None,
                 consumer_factory: Callable[[dict[str, object]], Consumer] | None = None,
                 admin_factory: Callable[[dict[str, str]], AdminClient] | None = None,
                 clock: Callable[[], float] = time.time,
                 delivery_timeout_seconds: float = 3.0, consume_wait_seconds: float = 2.0) -> None:
        self._cluster = cluster_config
        self.topic = topic
        self._per_partition = messages_per_cycle
        self._producer_factory = producer_factory
        self._consumer_factory = consumer_factory
        self._admin_factory = admin_factory
        self._clock = clock
        self._delivery_timeout = delivery_timeout_seconds
        self._consume_wait = consume_wait_seconds
        self.probe_id = f"kpulse-probe-{uuid.uuid4().hex[:12]}"
        self.group_id = f"kpulse-probe-{self._cluster.name}"
        """Its consumer's group id: it only assigns partitions and commits nothing, but librdkafka
        looks up the group's coordinator (Describe on the group)."""
        self.ledger = ProbeLedger()
        self.counts: ProbeCounts = {"produced_total": 0, "consumed_total": 0, "lost_total": 0, "duplicated_total": 0}
        """Records since this collector was built (the collection loop started): the exporter's counters."""
        self._sequence = 0
        self._admin: AdminClient | None = None
        self._producer: Producer | None = None
        self._consumer: Consumer | None = None
        self._assigned: set[int] = set()
        self._last_election = float("-inf")
        self._read_refused: str | None = None
        """This cycle's refusal of the probe's reads (``not authorized: Read on topic T``)."""
        self._refused: tuple[float, str] | None = None
        """(monotonic time to ask again, the refusal) after the principal was refused."""

    # --- clients -------------------------------------------------------------------------------------
    def _clients(self) -> tuple[AdminClient, Producer, Consumer]:
        """The probe's clients, made when missing."""
        from kpulse.kafka.clients import admin_client

        base = self._cluster.client_config()
        log = logging.getLogger("kpulse.librdkafka")
        if self._admin is None:
            self._admin = (self._admin_factory or admin_client)(base)
        if self._producer is None:
            ms = str(int(self._delivery_timeout * 1000))
            settings = {**base, "acks": "all", "linger.ms": "0", "message.timeout.ms": ms,
                        "request.timeout.ms": ms, "client.id": f"{self.probe_id}-producer"}
            self._producer = (self._producer_factory or _default_producer)({**settings, "logger": log})
        if self._consumer is None:
            settings = {**base, "group.id": self.group_id, "enable.auto.commit": "false",
                        "auto.offset.reset": "latest", "fetch.wait.max.ms": "50",
                        "client.id": f"{self.probe_id}-consumer"}
            self._consumer = (self._consumer_factory or _default_consumer)({**settings, "logger": log})
        return self._admin, self._producer, self._consumer

    def close(self) -> None:
        """Flush the producer briefly and close the consumer. The collector can be used again: it
        then starts afresh (records still unread now are not reported lost)."""
        if self._producer is not None:
            self._producer.flush(1.0)
        if self._consumer is not None:
            self._consumer.close()
        self._producer = self._consumer = None
        self._assigned = set()
        self.ledger = ProbeLedger()

    # --- topic ---------------------------------------------------------------------------------------
    def _topic_metadata(self, admin: AdminClient) -> tuple[set[int], dict[int, tuple[int, tuple[int, ...]]] | None]:
        """(live broker ids, {partition: (leader, replicas)} or None when the topic does not exist)."""
        metadata = list_topics(admin, ADMIN_TIMEOUT_SECONDS, topic=self.topic)
        topic = metadata.topics.get(self.topic)
        partitions = None
        if topic is not None and topic.error is None and topic.partitions:
            partitions = {p.id: (p.leader, tuple(p.replicas)) for p in topic.partitions.values()}
        return set(metadata.brokers), partitions

    def _ensure_topic(self, admin: AdminClient) -> dict[int, tuple[int, tuple[int, ...]]]:
        """Apply the topic plan when it is not empty; returns the partitions (leader, replicas)."""
        from confluent_kafka.admin import NewPartitions, NewTopic

        brokers, partitions = self._topic_metadata(admin)
        existing = None if partitions is None else [partitions[p][1] for p in sorted(partitions)]
        plan = plan_probe_topic(brokers, existing)
        if plan.empty:
            self._restore_preferred_leaders(admin, brokers, partitions or {})
            return partitions or {}
        if plan.create:
            new_topic = NewTopic(self.topic, num_partitions=len(plan.new_assignments), replication_factor=-1,
                                 replica_assignment=[list(r) for r in plan.new_assignments], config=plan.configs)
            futures = admin.create_topics([new_topic], request_timeout=ADMIN_TIMEOUT_SECONDS)
        else:  # the topic exists: existing is its partitions
            total = len(existing or ()) + len(plan.new_assignments)
            futures = admin.create_partitions(
                [NewPartitions(self.topic, total, [list(r) for r in plan.new_assignments])],
                request_timeout=ADMIN_TIMEOUT_SECONDS)
        for future in futures.values():
            try:
                future.result(timeout=ADMIN_TIMEOUT_SECONDS)
            except Exception as error:  # noqa: BLE001 - a refusal is named as the ACL it needs
                if refused_resource(error) is None:
                    raise
                action = "Create" if plan.create else "Alter"
                raise ProbeRefused(not_authorized(action, "topic", self.topic)
                                   + (" (or Create on the cluster)" if plan.create else "")) from None
        wanted = len(existing or ()) + len(plan.new_assignments)
        deadline = time.monotonic() + ADMIN_TIMEOUT_SECONDS
        while True:
            _, partitions = self._topic_metadata(admin)
            if partitions and len(partitions) >= wanted and all(leader >= 0 for leader, _ in partitions.values()):
                return partitions
            if time.monotonic() > deadline:
                raise TimeoutError(f"probe topic {self.topic}: partitions without a leader after creation")
            time.sleep(0.2)

    def _restore_preferred_leaders(self, admin: AdminClient, brokers: set[int],
                                   partitions: dict[int, tuple[int, tuple[int, ...]]]) -> None:
        """The probe needs a partition *led* by every broker. After a broker comes back, Kafka moves
        leadership back only at its next automatic rebalance (up to 5 min by default), so the probe
        elects the preferred leaders of its own topic, and of nothing else, at most every
        PREFERRED_ELECTION_SECONDS."""
        from confluent_kafka import ElectionType, KafkaException, TopicPartition

        misplaced = [p for p, (leader, replicas) in partitions.items()
                     if replicas and leader != replicas[0] and replicas[0] in brokers]
        if not misplaced or time.monotonic() - self._last_election < PREFERRED_ELECTION_SECONDS:
            return
        self._last_election = time.monotonic()
        # No request_timeout here: confluent-kafka 2.16.1's elect_leaders raises SystemError with it.
        future = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(self.topic, p) for p in misplaced])
        try:
            future.result(timeout=ADMIN_TIMEOUT_SECONDS)
        except (KafkaException, TimeoutError):  # e.g. the preferred replica is not in sync yet: next time
            pass

    def _assign(self, consumer: Consumer, partitions: Iterable[int]) -> None:
        """Read new partitions from their current end (only this probe's new records matter)."""
        from confluent_kafka import OFFSET_END, TopicPartition

        new = []
        for partition in sorted(set(partitions) - self._assigned):
            try:
                _, high = consumer.get_watermark_offsets(TopicPartition(self.topic, partition),
                                                               timeout=ADMIN_TIMEOUT_SECONDS)
            except Exception:  # noqa: BLE001 - leader unavailable: the end of the log, resolved later
                high = OFFSET_END
            new.append(TopicPartition(self.topic, partition, high))
        if new:
            consumer.incremental_assign(new)
            self._assigned.update(tp.partition for tp in new)

    # --- one cycle -----------------------------------------------------------------------------------
    def collect(self, context: CollectContext) -> CollectorResult:
        if self._refused is not None and time.monotonic() < self._refused[0]:
            return self._refused_result(self._refused[1])  # asked again after REFUSED_RETRY_SECONDS
        try:
            admin, producer, consumer = self._clients()
            partitions = self._ensure_topic(admin)
            self._assign(consumer, partitions)
        except Exception as error:  # noqa: BLE001 - the probe reports that it could not probe
            refusal = _setup_refusal(error, self.topic)
            if refusal is not None:
                return self._refused_result(refusal, remember=True)
            section: Probe = {"topic": self.topic, **summarize([]), **self._counted(), "per_partition": [],
                              "error": _one_line(error), "not_authorized": None}
            return CollectorResult(sections=BuiltinSections(probe=section), rows={TABLE: []})
        self.ledger.start_cycle()
        self._read_refused = None
        self._read(consumer, 0.0)
        self._produce(producer, sorted(partitions))
        self._read(consumer, self._consume_wait, until_all_read=self._read_refused is None)
        stats = self.ledger.finish_cycle(partitions)
        refusal = _write_refusal(stats, self.topic) or self._read_refused
        if refusal is not None:  # not a measurement of the cluster: no availability, no lake rows
            self.close()  # what was sent or read this cycle says nothing; start afresh once allowed
            return self._refused_result(refusal, remember=True)
        leaders = {p: (leader if leader >= 0 else None) for p, (leader, _) in partitions.items()}
        per_partition = [_partition_view(s, leaders.get(s.partition)) for s in stats]
        totals = summarize(stats)
        self.counts["produced_total"] += totals["produced"]
        self.counts["consumed_total"] += totals["consumed"]
        self.counts["lost_total"] += totals["lost"]
        self.counts["duplicated_total"] += totals["duplicated"]
        failed = [p for p in per_partition if p["error"]]
        summary = None
        if failed:
            first = failed[0]
            summary = (f"{totals['produce_errors']} produce error(s) on {len(failed)} partition(s); first: partition "
                       f"{first['partition']} (leader {first['broker_id']}): {first['error']}")
        section = {"topic": self.topic, **totals, **self._counted(), "per_partition": per_partition,
                   "error": summary, "not_authorized": None}
        rows = [{"time": context.now, "cluster": self._cluster.name,
                 **{k: v for k, v in p.items() if k not in ("error", "consume_availability")}}
                for p in per_partition]
        return CollectorResult(sections=BuiltinSections(probe=section), rows={TABLE: rows})

    def _counted(self) -> ProbeCounts:
        return self.counts.copy()

    def _refused_result(self, refusal: str, remember: bool = False) -> CollectorResult:
        """The cycle's section when the principal may not probe: null availabilities and the ACL it
        lacks, no lake rows (a permission problem, not an outage). ``remember``: the next cycles
        within :data:`REFUSED_RETRY_SECONDS` say the same without asking the cluster again."""
        if remember:
            self._refused = (time.monotonic() + REFUSED_RETRY_SECONDS, refusal)
        section: Probe = {"topic": self.topic, **summarize([]), **self._counted(), "per_partition": [],
                          "error": refusal, "not_authorized": refusal}
        return CollectorResult(sections=BuiltinSections(probe=section), rows={TABLE: []})

    def _produce(self, producer: Producer, partitions: list[int]) -> None:
        for partition in partitions:
            for _ in range(self._per_partition):
                self._sequence += 1
                sequence = self._sequence
                self.ledger.sent(sequence, partition)
                value = f"{sequence}:{int(self._clock() * 1e9)}"
                try:
                    producer.produce(self.topic, key=self.probe_id.encode(), value=value.encode(),
                                           partition=partition, on_delivery=self._delivered(sequence))
                except Exception as error:  # noqa: BLE001 - e.g. the local queue is full
                    self.ledger.acknowledged(sequence, _one_line(error))
        # A delivery report that comes later (the leader just died) counts in the cycle it arrives in.
        producer.flush(self._delivery_timeout + 1.0)

    def _delivered(self, sequence: int) -> Callable[[KafkaError | None, Message], None]:
        def report(error: KafkaError | None, _message: Message) -> None:
            self.ledger.acknowledged(sequence, None if error is None else error.str())
        return report

    def _read(self, consumer: Consumer, wait_seconds: float, until_all_read: bool = False) -> None:
        deadline = time.monotonic() + wait_seconds
        key = self.probe_id.encode()
        while True:
            for message in consumer.consume(num_messages=500, timeout=0.05):
                if message.error() is not None:
                    kind = refused_resource(message.error())
                    if kind is not None:  # its consumer also looks up the coordinator of its group id
                        self._read_refused = (not_authorized("Describe", "group", self.group_id) if kind == "GROUP"
                                              else not_authorized("Read", "topic", self.topic))
                        return
                    continue
                if message.key() != key:
                    continue
                received_ns = int(self._clock() * 1e9)
                value = message.value()
                if value is None:  # not a probe record: each has a value
                    continue
                try:
                    sequence, sent_ns = (int(part) for part in value.split(b":"))
                except ValueError:
                    continue
                self.ledger.read(sequence, sent_ns, received_ns)
            if until_all_read and self.ledger.unread_this_cycle() == 0:
                return
            if time.monotonic() >= deadline:
                return


class ProbeRefused(Exception):
    """The probe may not prepare its topic: the ACL it lacks (one line)."""


def _setup_refusal(error: BaseException, topic: str) -> str | None:
    """The ACL the probe lacks when preparing its topic failed for want of one: Create (or Alter) to
    make it or add partitions (:class:`ProbeRefused`), else Describe to see it."""
    if isinstance(error, ProbeRefused):
        return str(error)
    if refused_resource(error) is None:
        return None
    return not_authorized("Describe", "topic", topic)


def _write_refusal(stats: list[PartitionStats], topic: str) -> str | None:
    """``not authorized: Write on topic T`` when the cycle's produce errors are all refusals."""
    errors = [s.error for s in stats if s.error]
    if errors and all(refused_resource(error) is not None for error in errors):
        return not_authorized("Write", "topic", topic)
    return None


def _partition_view(stats: PartitionStats, leader: int | None) -> ProbePartition:
    return {"partition": stats.partition, "broker_id": leader, "produced": stats.produced,
            "produce_errors": stats.produce_errors, "consumed": stats.consumed, "lost": stats.lost,
            "duplicated": stats.duplicated, "latency_p50_ms": stats.latency(0.5),
            "latency_p99_ms": stats.latency(0.99), "latency_max_ms": stats.latency(1.0),
            "consume_availability": stats.consume_availability, "error": stats.error}


def _default_producer(settings: dict[str, object]) -> Producer:
    from confluent_kafka import Producer

    return Producer(settings)


def _default_consumer(settings: dict[str, object]) -> Consumer:
    from confluent_kafka import Consumer

    return Consumer(settings)


def _one_line(error: BaseException) -> str:
    first = error.args[0] if error.args else None
    text = first.str() if first is not None and hasattr(first, "str") else f"{type(error).__name__}: {error}"
    text = " ".join(text.split())
    return text if len(text) <= 300 else text[:297] + "..."
