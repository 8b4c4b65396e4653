"""What the demo creates and runs: pure data, no I/O."""

from __future__ import annotations

from dataclasses import dataclass, field

STREAMS_APPLICATION_ID = "kpulse-demo-streams"
STREAMS_INSTANCES = (1, 2)


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int
    replication_factor: int
    configs: dict[str, str] = field(default_factory=dict)
    # partition -> broker ids; set for the replication-factor-1 topic so each broker leads one partition
    replica_assignment: tuple[tuple[int, ...], ...] | None = None
    role: str = "input"


_RF3 = {"min.insync.replicas": "2"}

TOPICS = (
    TopicSpec("demo.orders", 6, 3, _RF3, role="input of the Streams app"),
    TopicSpec("demo.payments", 3, 3, _RF3, role="consumed by demo-healthy and demo-stopped"),
    TopicSpec("demo.clicks", 3, 3, _RF3, role="consumed by demo-slow"),
    TopicSpec("demo.audit-rf1", 3, 1, {"min.insync.replicas": "1"}, replica_assignment=((1,), (2,), (3,)),
              role="replication factor 1: goes offline with its broker"),
    TopicSpec("demo.orders-by-region", 3, 3, _RF3, role="intermediate topic of the Streams app"),
    TopicSpec("demo.order-counts", 3, 3, _RF3, role="output topic of the Streams app"),
)


@dataclass(frozen=True)
class ProducerSpec:
    topic: str
    messages_per_second: float


PRODUCERS = (
    ProducerSpec("demo.orders", 20),
    ProducerSpec("demo.payments", 20),
    ProducerSpec("demo.clicks", 20),
    ProducerSpec("demo.audit-rf1", 5),
)


@dataclass(frozen=True)
class ConsumerSpec:
    group: str
    topic: str
    # None: as fast as messages come; a number: at most this many per second
    max_messages_per_second: float | None
    # stop after this many messages (commits, leaves the group, exits): the "stopped group"
    stop_after: int | None = None


CONSUMERS = (
    ConsumerSpec("demo-healthy", "demo.payments", None),
    ConsumerSpec("demo-slow", "demo.clicks", 8),  # the producer writes 20/s: lag grows ~12/s
    ConsumerSpec("demo-stopped", "demo.payments", None, stop_after=100),
)
