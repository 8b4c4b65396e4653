"""Preferred leader election plans (``kafka-leader-election --election-type PREFERRED``): pure data
and pure planning, no I/O.

An election moves each partition's leadership back to its first replica, which balances leaders
across brokers. The planner lists the partitions whose leader is not the preferred replica; those
whose preferred replica is out of the ISR (or offline) cannot be elected now and are listed apart.
The executor is :mod:`operations.election`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from operations.errors import BadInput, unknown
from operations.internal_topics import is_kafka_internal_topic, refuse_internal_topics

TopicPartition = tuple[str, int]
ElectionScope = tuple[tuple[str, tuple[int, ...] | None], ...]
"""(topic, partitions or None for all of them) pairs; empty = every topic."""


class PartitionMetadata(Protocol):
    """What the planner reads of a partition's metadata (confluent-kafka's ``PartitionMetadata``)."""

    @property
    def leader(self) -> int: ...
    @property
    def replicas(self) -> list[int]: ...
    @property
    def isrs(self) -> list[int]: ...


class TopicMetadata(Protocol):
    """What the planner reads of a topic's metadata (confluent-kafka's ``TopicMetadata``)."""

    @property
    def partitions(self) -> Mapping[int, PartitionMetadata]: ...


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
    scope: ElectionScope
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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def plan_election(metadata_topics: Mapping[str, TopicMetadata], cluster: str,
                  scope: Sequence[tuple[str, tuple[int, ...] | None]], *, clock: Callable[[], float] = time.time,
                  include_internal: bool = False) -> ElectionPlan:
    """``metadata_topics`` is ``admin.list_topics().topics`` (or the same shape). Kafka's internal
    topics: a named one is refused, and every topic (an empty ``scope``) leaves them out, unless
    ``include_internal``."""
    wanted = _wanted(metadata_topics, scope, include_internal)
    moves = []
    for topic, partition in wanted:
        meta = metadata_topics[topic].partitions[partition]
        if not meta.replicas or meta.leader == meta.replicas[0]:
            continue
        preferred = meta.replicas[0]
        moves.append(LeaderMove(topic, partition, meta.leader, preferred, preferred in meta.isrs))
    return ElectionPlan(cluster, tuple(scope), tuple(moves), clock())


def _wanted(topics: Mapping[str, TopicMetadata], scope: Sequence[tuple[str, tuple[int, ...] | None]],
            include_internal: bool) -> list[TopicPartition]:
    if not scope:
        return sorted((t, p) for t, meta in topics.items() if include_internal or not is_kafka_internal_topic(t)
                      for p in meta.partitions)
    refuse_internal_topics((t for t, _ in scope), include_internal, "leader election")
    wanted: list[TopicPartition] = []
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
