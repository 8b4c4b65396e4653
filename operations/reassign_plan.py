"""Partition reassignment plans: pure, from a replica assignment to a new one with few moves.

- :func:`balance` spreads replicas evenly over the chosen brokers (counts within one of each
  other), moving one replica at a time from the most to the least loaded broker, so the number
  of replicas moved stays small; replicas on brokers outside the chosen set always move. Then it
  balances preferred leaders (first replicas) by reordering replica lists, which moves no data.
- :func:`drain` moves every replica off one broker (decommissioning), each to the least loaded
  eligible broker.

Rack-aware when racks are known: a replica never moves to a broker whose rack already holds
another replica of the same partition, unless no broker qualifies.

Plans read and write the official tool's JSON: ``{"version": 1, "partitions": [{"topic": ...,
"partition": ..., "replicas": [...]}]}``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from operations.errors import BadInput
from operations.numbers import PARTITION
from operations.plan_fields import PlanFields

TopicPartition = tuple[str, int]
Assignment = dict[TopicPartition, list[int]]

DEFAULT_THROTTLE_BYTES = 10 * 1024 * 1024
"""The replication throttle of a reassignment unless one is given (10 MiB/s), in the CLI and the
dashboard alike."""


@dataclass(frozen=True)
class PartitionMove:
    topic: str
    partition: int
    current: tuple[int, ...]
    target: tuple[int, ...]

    @property
    def adding(self) -> tuple[int, ...]:
        return tuple(b for b in self.target if b not in self.current)

    @property
    def removing(self) -> tuple[int, ...]:
        return tuple(b for b in self.current if b not in self.target)


@dataclass(frozen=True)
class ReassignmentPlan:
    cluster: str
    goal: str
    """``balance over brokers 1,2,3``, ``drain broker 4`` or ``from file``."""
    moves: tuple[PartitionMove, ...]
    """Only partitions whose replica list changes."""
    planned_at: float

    @property
    def target(self) -> str:
        return "reassignment"

    @property
    def replicas_moved(self) -> int:
        return sum(len(m.adding) for m in self.moves)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def official_json(self, which: str = "target") -> str:
        """The plan (or, with ``which="current"``, the rollback) in the official tool's format."""
        return json.dumps({"version": 1, "partitions": [
            {"topic": m.topic, "partition": m.partition, "replicas": list(getattr(m, which))} for m in self.moves]})

    @classmethod
    def from_dict(cls, data: object) -> ReassignmentPlan:
        """The plan ``to_dict`` wrote; every field's type checked, replica lists sane."""
        fields = PlanFields(data, "a kpulse reassignment plan")
        moves = []
        for move in fields.sections("moves"):
            moves.append(PartitionMove(move.string("topic"), move.integer("partition", bounds=PARTITION),
                                       tuple(replica_list(move, "current")), tuple(replica_list(move, "target"))))
        _no_partition_twice(fields, "moves", [(m.topic, m.partition) for m in moves])
        return cls(fields.string("cluster"), fields.string("goal"), tuple(moves), fields.number("planned_at"))


def replica_list(fields: PlanFields, key: str) -> list[int]:
    """Broker ids: at least one, none twice (whether they exist is the executor's check)."""
    replicas = fields.integers(key, PARTITION)
    if not replicas:
        fields.fail(key, "no replicas")
    twice = sorted({b for b in replicas if replicas.count(b) > 1})
    if twice:
        fields.fail(key, f"broker {twice[0]} appears twice")
    return replicas


def _no_partition_twice(fields: PlanFields, key: str, partitions: list[TopicPartition]) -> None:
    seen: set[TopicPartition] = set()
    for topic, partition in partitions:
        if (topic, partition) in seen:
            fields.fail(key, f"{topic}-{partition} appears twice")
        seen.add((topic, partition))


def parse_official_json(text: str) -> Assignment:
    """Target replicas from the official tool's reassignment JSON."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise BadInput(f"not a reassignment JSON ({{\"partitions\": [{{\"topic\", \"partition\", \"replicas\"}}]}}): "
                       f"{error}") from None
    fields = PlanFields(data, "a reassignment JSON")
    target: Assignment = {}
    for item in fields.sections("partitions"):
        key = (item.string("topic"), item.integer("partition", bounds=PARTITION))
        if key in target:
            fields.fail("partitions", f"{key[0]}-{key[1]} appears twice")
        target[key] = replica_list(item, "replicas")
    return target


def moves_between(current: Assignment, target: Assignment) -> tuple[PartitionMove, ...]:
    return tuple(PartitionMove(t, p, tuple(current[(t, p)]), tuple(target[(t, p)]))
                 for (t, p) in sorted(target) if list(target[(t, p)]) != list(current[(t, p)]))


def _counts(assignment: Assignment, brokers: list[int]) -> dict[int, int]:
    counts = {b: 0 for b in brokers}
    for replicas in assignment.values():
        for b in replicas:
            if b in counts:
                counts[b] += 1
    return counts


def _rack_ok(replicas: list[int], leaving: int | None, arriving: int, racks: dict[int, str | None]) -> bool:
    rack = racks.get(arriving)
    if rack is None:
        return True
    return all(racks.get(b) != rack for b in replicas if b != leaving)


def _place(assignment: Assignment, tp: TopicPartition, leaving: int, brokers: list[int],
           racks: dict[int, str | None]) -> None:
    """Replace ``leaving`` in ``tp``'s replicas by the least loaded eligible broker."""
    replicas = assignment[tp]
    counts = _counts(assignment, brokers)
    candidates = [b for b in brokers if b not in replicas]
    if not candidates:
        raise BadInput(f"{tp[0]}-{tp[1]} has {len(replicas)} replicas: not enough brokers to move one off {leaving}")
    rack_safe = [b for b in candidates if _rack_ok(replicas, leaving, b, racks)] or candidates
    chosen = min(rack_safe, key=lambda b: (counts[b], b))
    replicas[replicas.index(leaving)] = chosen


def balance(current: Assignment, brokers: list[int], racks: dict[int, str | None] | None = None) -> Assignment:
    """A balanced assignment over ``brokers`` reached with few replica moves."""
    racks = racks or {}
    brokers = sorted(set(brokers))
    if not brokers:
        raise BadInput("no brokers to balance over")
    target = {tp: list(replicas) for tp, replicas in current.items()}
    for tp in sorted(target):
        for broker in [b for b in target[tp] if b not in brokers]:
            _place(target, tp, broker, brokers, racks)
    while True:
        counts = _counts(target, brokers)
        high = max(brokers, key=lambda b: (counts[b], -b))
        low = min(brokers, key=lambda b: (counts[b], b))
        if counts[high] - counts[low] <= 1:
            break
        movable = [tp for tp in sorted(target) if high in target[tp] and low not in target[tp]
                   and _rack_ok(target[tp], high, low, racks)]
        if not movable:
            break
        replicas = target[movable[0]]
        replicas[replicas.index(high)] = low
    return _balance_leaders(target, brokers)


def _balance_leaders(target: Assignment, brokers: list[int]) -> Assignment:
    for _ in range(len(target) * len(brokers)):
        leaders = {b: 0 for b in brokers}
        for replicas in target.values():
            leaders[replicas[0]] = leaders.get(replicas[0], 0) + 1
        high = max(brokers, key=lambda b: (leaders[b], -b))
        swap = next(((tp, b) for tp in sorted(target) if target[tp][0] == high
                     for b in target[tp][1:] if leaders.get(b, 0) < leaders[high] - 1), None)
        if swap is None:
            break
        tp, new_leader = swap
        replicas = target[tp]
        replicas.remove(new_leader)
        replicas.insert(0, new_leader)
    return target


def drain(current: Assignment, broker: int, brokers: list[int], racks: dict[int, str | None] | None = None) -> Assignment:
    """Every replica moved off ``broker`` to the other ``brokers``; nothing else moves."""
    others = sorted(set(brokers) - {broker})
    target = {tp: list(replicas) for tp, replicas in current.items()}
    for tp in sorted(target):
        if broker in target[tp]:
            _place(target, tp, broker, others, racks or {})
    return target
