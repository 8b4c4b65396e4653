"""The probe's pure half: its topic plan and its accounting of sent and read records.

Semantics (what is lost, duplicated, late; how availability is computed) are described in
:mod:`collectors.probe.probe`, which does the I/O.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypedDict

LOSS_DEADLINE_CYCLES = 2
REMEMBER_CYCLES = 10
"""Records older than this many cycles are forgotten: a duplicate arriving later is not seen."""
RETENTION_MS = "3600000"


# --- topic plan (pure) -------------------------------------------------------------------------------

@dataclass(frozen=True)
class ProbeTopicPlan:
    """What to change so that every live broker leads a probe partition. Changes nothing itself."""

    create: bool
    """The topic does not exist: create it with ``new_assignments`` as its partitions."""
    new_assignments: tuple[tuple[int, ...], ...]
    """Replica lists of the partitions to create (or to add, appended after the existing ones)."""
    configs: dict[str, str] = field(default_factory=dict)
    """Topic configs, applied only on creation."""

    @property
    def empty(self) -> bool:
        return not self.new_assignments


def plan_probe_topic(broker_ids: Iterable[int], existing: Sequence[Sequence[int]] | None) -> ProbeTopicPlan:
    """``existing`` = replica lists of the topic's partitions in partition order, ``None`` when
    the topic does not exist."""
    brokers = sorted(set(broker_ids))
    if not brokers:
        return ProbeTopicPlan(False, ())
    factor = min(3, len(brokers))

    def ring(start: int) -> tuple[int, ...]:
        return tuple(brokers[(start + k) % len(brokers)] for k in range(factor))

    if existing is None:
        configs = {"retention.ms": RETENTION_MS}
        if factor >= 3:
            configs["min.insync.replicas"] = "2"
        return ProbeTopicPlan(True, tuple(ring(i) for i in range(len(brokers))), configs)
    leading = {replicas[0] for replicas in existing if replicas}
    return ProbeTopicPlan(False, tuple(ring(i) for i, b in enumerate(brokers) if b not in leading))


# --- accounting (pure) -------------------------------------------------------------------------------

def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (``q`` in 0..1): the smallest value with at least ``q`` of the
    values at or below it. ``None`` for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


@dataclass
class PartitionStats:
    """One partition's accounting for one cycle (see the module docstring)."""

    partition: int
    produced: int = 0
    produce_errors: int = 0
    consumed: int = 0
    lost: int = 0
    duplicated: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    acknowledged_this_cycle: int = 0
    """Records sent this cycle and acknowledged (the consume availability's denominator)."""
    read_back_this_cycle: int = 0
    """...of which read back this cycle (its numerator)."""
    error: str | None = None
    """The first produce error of the cycle."""

    @property
    def consume_availability(self) -> float | None:
        return _ratio(self.read_back_this_cycle, self.acknowledged_this_cycle)

    def latency(self, q: float) -> float | None:
        value = percentile(self.latencies_ms, q)
        return None if value is None else round(value, 3)


@dataclass
class _Record:
    partition: int
    cycle: int
    acknowledged: bool | None = None
    """None while the delivery report is pending."""
    reads: int = 0
    lost: bool = False


class ProbeLedger:
    """Sequence accounting over cycles: what was sent, acknowledged, read, read twice, never read."""

    def __init__(self, loss_deadline_cycles: int = LOSS_DEADLINE_CYCLES,
                 remember_cycles: int = REMEMBER_CYCLES) -> None:
        self.cycle = 0
        self._deadline = loss_deadline_cycles
        self._remember = max(remember_cycles, loss_deadline_cycles + 1)
        self._records: dict[int, _Record] = {}
        self._stats: dict[int, PartitionStats] = {}

    def start_cycle(self) -> int:
        self.cycle += 1
        self._stats = {}
        return self.cycle

    def _partition(self, partition: int) -> PartitionStats:
        return self._stats.setdefault(partition, PartitionStats(partition))

    def sent(self, sequence: int, partition: int) -> None:
        self._records[sequence] = _Record(partition, self.cycle)
        self._partition(partition)

    def acknowledged(self, sequence: int, error: str | None = None) -> None:
        record = self._records.get(sequence)
        if record is None:
            return
        stats = self._partition(record.partition)
        record.acknowledged = error is None
        if error is None:
            stats.produced += 1
        else:
            stats.produce_errors += 1
            stats.error = stats.error or error

    def read(self, sequence: int, sent_ns: int, received_ns: int) -> None:
        record = self._records.get(sequence)
        if record is None:
            return  # forgotten (older than remember_cycles) or never sent by this probe
        stats = self._partition(record.partition)
        record.reads += 1
        if record.reads > 1:
            stats.duplicated += 1
            return
        stats.consumed += 1
        stats.latencies_ms.append((received_ns - sent_ns) / 1e6)

    def unread_this_cycle(self) -> int:
        """Records sent this cycle, not failed, not read yet: what the read-back waits for."""
        return sum(1 for r in self._records.values()
                   if r.cycle == self.cycle and r.acknowledged is not False and r.reads == 0)

    def finish_cycle(self, partitions: Iterable[int] = ()) -> list[PartitionStats]:
        """Close the cycle: declare losses, forget old records; one entry per partition that had
        activity or is listed in ``partitions``, in partition order."""
        for partition in partitions:
            self._partition(partition)
        for sequence, record in list(self._records.items()):
            stats = self._partition(record.partition)
            if record.cycle == self.cycle and record.acknowledged:
                stats.acknowledged_this_cycle += 1
                stats.read_back_this_cycle += record.reads > 0
            if (record.acknowledged and record.reads == 0 and not record.lost
                    and record.cycle <= self.cycle - self._deadline):
                record.lost = True
                stats.lost += 1
            if record.cycle <= self.cycle - self._remember:
                del self._records[sequence]
        return [self._stats[p] for p in sorted(self._stats)]


def _ratio(numerator: int, denominator: int) -> float | None:
    return None if denominator == 0 else numerator / denominator


class ProbeTotals(TypedDict):
    """The probe section's totals over every partition of one cycle (the fields of
    ``kpulse.snapshot.Probe`` of the same names say what each is)."""

    produce_availability: float | None
    consume_availability: float | None
    latency_p50_ms: float | None
    latency_p99_ms: float | None
    latency_max_ms: float | None
    produced: int
    produce_errors: int
    consumed: int
    lost: int
    duplicated: int


def summarize(stats: Sequence[PartitionStats]) -> ProbeTotals:
    """The section's totals over every partition of one cycle."""
    latencies = [value for s in stats for value in s.latencies_ms]
    produced = sum(s.produced for s in stats)
    errors = sum(s.produce_errors for s in stats)

    def rounded(value: float | None) -> float | None:
        return None if value is None else round(value, 3)

    return {
        "produce_availability": _ratio(produced, produced + errors),
        "consume_availability": _ratio(sum(s.read_back_this_cycle for s in stats),
                                       sum(s.acknowledged_this_cycle for s in stats)),
        "latency_p50_ms": rounded(percentile(latencies, 0.5)),
        "latency_p99_ms": rounded(percentile(latencies, 0.99)),
        "latency_max_ms": rounded(max(latencies, default=None)),
        "produced": produced, "produce_errors": errors,
        "consumed": sum(s.consumed for s in stats),
        "lost": sum(s.lost for s in stats), "duplicated": sum(s.duplicated for s in stats),
    }
