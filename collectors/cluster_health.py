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


@dataclass(frozen=True)
class PartitionState:
    """One partition as the cluster metadata describes it."""

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
    brokers only named in replica lists (down or decommissioned) appear too."""
    summary = HealthSummary(topic_count=len({p.topic for p in partitions}), partition_count=len(partitions))
    replicas: dict[int, int] = {b: 0 for b in broker_ids}
    leaders: dict[int, int] = {b: 0 for b in broker_ids}
    preferred: dict[int, int] = {b: 0 for b in broker_ids}
    for state in partitions:
        if state.under_replicated:
            summary.under_replicated.append(state)
        if state.offline:
            summary.offline.append(state)
        if state.under_min_isr(min_isr_by_topic.get(state.topic)):
            summary.under_min_isr.append(state)
        if not state.offline and not state.preferred_leader_elected:
            summary.not_preferred_leader.append(state)
        for broker in state.replicas:
            replicas[broker] = replicas.get(broker, 0) + 1
            leaders.setdefault(broker, 0)
            preferred.setdefault(broker, 0)
        if state.leader >= 0:
            leaders[state.leader] = leaders.get(state.leader, 0) + 1
        if state.replicas:
            preferred[state.replicas[0]] = preferred.get(state.replicas[0], 0) + 1
    summary.brokers.extend(BrokerLoad(b, replicas.get(b, 0), leaders.get(b, 0), preferred.get(b, 0))
                           for b in sorted(set(replicas) | set(leaders)))
    return summary
