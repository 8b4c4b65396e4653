"""Preferred leader election (``kafka-leader-election --election-type PREFERRED``): move each
partition's leadership back to its first replica, which balances leaders across brokers.

The planner lists the partitions whose leader is not the preferred replica; those whose preferred
replica is out of the ISR (or offline) cannot be elected now and are listed apart. The executor
elects the rest, then reads the leaders back.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from collections.abc import Callable

from kpulse.kafka.clients import error_text
from operations import kafka_reads
from operations.errors import BadInput, OperationError, unknown
from operations.internal_topics import is_kafka_internal_topic, refuse_internal_topics

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class LeaderMove:
    topic: str
    partition: int
    leader: int
    """Current leader; -1 when offline."""
    preferred: int
    preferred_in_sync: bool


@dataclass(frozen=True)
class ElectionPlan:
    cluster: str
    scope: tuple[tuple[str, tuple[int, ...] | None], ...]
    """(topic, partitions or None) pairs; empty = every topic."""
    moves: tuple[LeaderMove, ...]
    """Partitions led by a replica other than the preferred one."""
    planned_at: float

    @property
    def electable(self) -> tuple[LeaderMove, ...]:
        return tuple(m for m in self.moves if m.preferred_in_sync)

    @property
    def target(self) -> str:
        return "leaders " + (", ".join(t for t, _ in self.scope) if self.scope else "all topics")

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class ElectionOutcome:
    result: str
    """ok, partial or failed."""
    partitions: tuple[dict, ...]
    """{topic, partition, before, preferred, after, error} per elected partition."""
    error: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def plan_election(metadata_topics: dict, cluster: str, scope, *, clock: Callable[[], float] = time.time,
                  include_internal: bool = False) -> ElectionPlan:
    """Pure: ``metadata_topics`` is ``admin.list_topics().topics`` (or the same shape). Kafka's
    internal topics: a named one is refused, and every topic (an empty ``scope``) leaves them out,
    unless ``include_internal``."""
    wanted = _wanted(metadata_topics, scope, include_internal)
    moves = []
    for topic, partition in wanted:
        meta = metadata_topics[topic].partitions[partition]
        if not meta.replicas or meta.leader == meta.replicas[0]:
            continue
        preferred = meta.replicas[0]
        moves.append(LeaderMove(topic, partition, meta.leader, preferred, preferred in meta.isrs))
    return ElectionPlan(cluster, tuple(scope), tuple(moves), clock())


def _wanted(topics: dict, scope, include_internal: bool) -> list[TopicPartition]:
    if not scope:
        return sorted((t, p) for t, meta in topics.items() if include_internal or not is_kafka_internal_topic(t)
                      for p in meta.partitions)
    refuse_internal_topics((t for t, _ in scope), include_internal, "leader election")
    wanted = []
    for topic, partitions in scope:
        if topic not in topics:
            raise unknown("topic", topic, set(topics))
        existing = set(topics[topic].partitions)
        chosen = sorted(existing) if partitions is None else list(partitions)
        missing = [p for p in chosen if p not in existing]
        if missing:
            raise BadInput(f"partition(s) {', '.join(f'{topic}-{p}' for p in missing)} do not exist")
        wanted += [(topic, p) for p in chosen]
    return wanted


def execute_election(admin, plan: ElectionPlan, *, settle_seconds: float = 15.0,
                     include_internal: bool = False) -> ElectionOutcome:
    """Elect the preferred leader of every electable partition still not led by it (refused on an
    internal topic unless ``include_internal``), then read the leaders back (waiting up to
    ``settle_seconds`` for metadata to show them)."""
    from confluent_kafka import TopicPartition as KafkaTP
    from confluent_kafka import ElectionType

    refuse_internal_topics((m.topic for m in plan.moves), include_internal, "leader election")
    topics = kafka_reads.metadata(admin).topics
    todo = [m for m in plan.electable
            if topics.get(m.topic) and topics[m.topic].partitions[m.partition].leader != m.preferred]
    errors: dict[TopicPartition, str] = {}
    if todo:
        # No request_timeout: confluent-kafka 2.16.1's elect_leaders raises SystemError with it.
        future = admin.elect_leaders(ElectionType.PREFERRED, [KafkaTP(m.topic, m.partition) for m in todo])
        try:
            for tp, error in future.result(timeout=kafka_reads.TIMEOUT + 15).items():
                if error is not None and error.args and error.args[0].name() != "ELECTION_NOT_NEEDED":
                    errors[(tp.topic, tp.partition)] = error_text(error)
        except Exception as error:  # noqa: BLE001 - reported per partition
            raise OperationError(f"preferred leader election failed: {error_text(error)}") from None
    leaders = _settled_leaders(admin, todo, settle_seconds)
    rows = []
    for m in todo:
        after = leaders.get((m.topic, m.partition))
        error = errors.get((m.topic, m.partition))
        if error is None and after != m.preferred:
            error = f"leader is {after} after the election, preferred {m.preferred}"
        rows.append({"topic": m.topic, "partition": m.partition, "before": m.leader, "preferred": m.preferred,
                     "after": after, "error": error})
    failed = sum(r["error"] is not None for r in rows)
    result = "ok" if not failed else "failed" if failed == len(rows) else "partial"
    return ElectionOutcome(result, tuple(rows), f"{failed} of {len(rows)} partition(s) failed" if failed else None)


def _settled_leaders(admin, moves, settle_seconds: float) -> dict[TopicPartition, int]:
    deadline = time.monotonic() + settle_seconds
    while True:
        topics = kafka_reads.metadata(admin).topics
        leaders = {(m.topic, m.partition): topics[m.topic].partitions[m.partition].leader for m in moves}
        if all(leaders[(m.topic, m.partition)] == m.preferred for m in moves) or time.monotonic() > deadline:
            return leaders
        time.sleep(0.3)
