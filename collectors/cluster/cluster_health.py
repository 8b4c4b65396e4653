"""Partition health from metadata alone: pure functions over plain data, no I/O.

These work with nothing but the Admin API, so they hold on managed clusters without JMX access:

- under-replicated: the ISR is smaller than the replica set;
- offline: no leader (leader id -1);
- under-min-ISR: the ISR is smaller than the topic's ``min.insync.replicas``, or the partition has
  no leader (as ``kafka-topics --under-min-isr-partitions`` counts: an offline partition takes no
  write at all);
- preferred-leader imbalance: the leader is not the first replica.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple


class PartitionState(NamedTuple):
    """One partition as the cluster metadata describes it (a named tuple: a cycle makes one per
    partition of the cluster, 10,000s of them, and a frozen dataclass costs several times more)."""

    topic: str
    partition: int
    leader: int
    """Broker id of the leader; -1 when the partition has none (offline)."""
    replicas: tuple[int, ...]
    isr: tuple[int, ...]

    @property
    def offline(self) -> bool:
        return self.leader < 0

    @property
    def under_replicated(self) -> bool:
        return len(self.isr) < len(self.replicas)

    def under_min_isr(self, min_isr: int | None) -> bool:
        return self.offline or (min_isr is not None and len(self.isr) < min_isr)

    @property
    def preferred_leader_elected(self) -> bool:
        return bool(self.replicas) and self.leader == self.replicas[0]


@dataclass(frozen=True)
class BrokerLoad:
    """Replica and leader counts of one broker."""

    broker_id: int
    partition_count: int
    leader_count: int
    preferred_leader_count: int
    """Partitions whose first replica is this broker (what a preferred election would give it)."""


@dataclass(frozen=True)
class HealthSummary:
    under_replicated: list[PartitionState] = field(default_factory=list)
    offline: list[PartitionState] = field(default_factory=list)
    under_min_isr: list[PartitionState] = field(default_factory=list)
    not_preferred_leader: list[PartitionState] = field(default_factory=list)
    brokers: list[BrokerLoad] = field(default_factory=list)
    topic_count: int = 0
    partition_count: int = 0


def summarize(partitions: list[PartitionState], min_isr_by_topic: dict[str, int | None],
              broker_ids: set[int]) -> HealthSummary:
    """Health counts and per-broker load. Brokers in ``broker_ids`` appear even with no replicas;
    brokers only named in replica lists (down or decommissioned) appear too.

    The rules are :class:`PartitionState`'s properties, written out in the loop (it runs once per
    partition of the cluster every cycle)."""
    summary = HealthSummary(topic_count=len({p.topic for p in partitions}), partition_count=len(partitions))
    replicas: dict[int, int] = dict.fromkeys(broker_ids, 0)
    leaders: dict[int, int] = dict.fromkeys(broker_ids, 0)
    preferred: dict[int, int] = dict.fromkeys(broker_ids, 0)
    under_replicated, offline = summary.under_replicated.append, summary.offline.append
    under_min_isr, not_preferred = summary.under_min_isr.append, summary.not_preferred_leader.append
    min_isr_of = min_isr_by_topic.get
    for state in partitions:
        _, _, leader, state_replicas, isr = state
        in_sync = len(isr)
        if in_sync < len(state_replicas):
            under_replicated(state)
        if leader < 0:
            offline(state)
            under_min_isr(state)
        else:
            min_isr = min_isr_of(state[0])
            if min_isr is not None and in_sync < min_isr:
                under_min_isr(state)
            if not state_replicas or leader != state_replicas[0]:
                not_preferred(state)
            leaders[leader] = leaders.get(leader, 0) + 1
        for broker in state_replicas:
            replicas[broker] = replicas.get(broker, 0) + 1
        if state_replicas:
            first = state_replicas[0]
            preferred[first] = preferred.get(first, 0) + 1
    summary.brokers.extend(BrokerLoad(b, replicas.get(b, 0), leaders.get(b, 0), preferred.get(b, 0))
                           for b in sorted(set(replicas) | set(leaders)))
    return summary
