"""Preferred leader election (``kafka-leader-election --election-type PREFERRED``): the executor
elects the electable partitions of a plan (:mod:`operations.election_plan`), then reads the leaders
back.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

from kpulse.kafka.clients import error_text
from operations import kafka_reads
from operations.election_plan import ElectionPlan, LeaderMove, TopicPartition
from operations.errors import OperationError
from operations.internal_topics import refuse_internal_topics


@dataclass(frozen=True)
class ElectionOutcome:
    result: str
    """ok, partial or failed."""
    partitions: tuple[dict[str, Any], ...]
    """{topic, partition, before, preferred, after, error} per elected partition."""
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def execute_election(admin: Any, plan: ElectionPlan, *, settle_seconds: float = 15.0,
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
        problem = errors.get((m.topic, m.partition))
        if problem is None and after != m.preferred:
            problem = f"leader is {after} after the election, preferred {m.preferred}"
        rows.append({"topic": m.topic, "partition": m.partition, "before": m.leader, "preferred": m.preferred,
                     "after": after, "error": problem})
    failed = sum(r["error"] is not None for r in rows)
    result = "ok" if not failed else "failed" if failed == len(rows) else "partial"
    return ElectionOutcome(result, tuple(rows), f"{failed} of {len(rows)} partition(s) failed" if failed else None)


def _settled_leaders(admin: Any, moves: list[LeaderMove], settle_seconds: float) -> dict[TopicPartition, int]:
    deadline = time.monotonic() + settle_seconds
    while True:
        topics = kafka_reads.metadata(admin).topics
        leaders = {(m.topic, m.partition): topics[m.topic].partitions[m.partition].leader for m in moves}
        if all(leaders[(m.topic, m.partition)] == m.preferred for m in moves) or time.monotonic() > deadline:
            return leaders
        time.sleep(0.3)
