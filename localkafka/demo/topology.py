"""What the demo creates and runs: pure data, no I/O."""

from __future__ import annotations

from dataclasses import dataclass, field

STREAMS_APPLICATION_ID = "kpulse-demo-streams"
"""The classic-protocol Streams application (the consumer group protocol, two instances)."""
STREAMS_INSTANCES = (1, 2)
KIP1071_APPLICATION_ID = "kpulse-demo-kip1071"
"""The same topology as a Streams group (``group.protocol=streams``, KIP-1071), one instance, on
topics of its own (``demo.kip1071.*``). Not an extension of ``kpulse-demo-streams``: an internal
topic of one application never starts with the other's id."""
KIP848_GROUP = "demo-kip848"
"""A consumer group on the KIP-848 protocol (``group.protocol=consumer``)."""
SHARE_GROUP = "demo-share"
"""A share group (KIP-932) with a fast and a slow member."""
POISON_TOPIC = "demo.poison"
"""JSON events, one of them malformed (:data:`POISON_AFTER`)."""
POISON_GROUP = "demo-poison"
"""A consumer group whose consumer cannot parse the malformed record and retries it: STALL with a member."""
POISON_AFTER = 10
"""The demo producer sends the malformed record once, after this many good ones: its offset on the
one partition of :data:`POISON_TOPIC` (on a fresh demo)."""


@dataclass(frozen=True)
class StreamsAppSpec:
    application_id: str
    group_protocol: str  # classic or streams
    topic_prefix: str  # the app reads <prefix>orders, writes <prefix>orders-by-region and <prefix>order-counts
    process_prefix: str  # demo processes <process_prefix>-<instance>
    metrics_slots: tuple[int, ...]  # per instance: j of the layout's Streams metrics port base + 300 + j


STREAMS_APPS = (
    StreamsAppSpec(STREAMS_APPLICATION_ID, "classic", "demo.", "streams", STREAMS_INSTANCES),
    StreamsAppSpec(KIP1071_APPLICATION_ID, "streams", "demo.kip1071.", "streams-kip1071", (3,)),
)


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
    TopicSpec("demo.kip1071.orders", 4, 3, _RF3, role="input of the Streams-protocol app"),
    TopicSpec("demo.kip1071.orders-by-region", 3, 3, _RF3, role="intermediate topic of the Streams-protocol app"),
    TopicSpec("demo.kip1071.order-counts", 3, 3, _RF3, role="output topic of the Streams-protocol app"),
    TopicSpec("demo.tasks", 3, 3, _RF3, role="consumed by the share group demo-share"),
    TopicSpec(POISON_TOPIC, 1, 3, _RF3, role="JSON events with one malformed record, consumed by demo-poison"),
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
    ProducerSpec("demo.kip1071.orders", 10),
    ProducerSpec("demo.tasks", 10),
    ProducerSpec(POISON_TOPIC, 2),
)
ORDER_TOPICS = frozenset(app.topic_prefix + "orders" for app in STREAMS_APPS)
"""Topics whose records are orders (``region,customer,amount``), the Streams apps' input."""


@dataclass(frozen=True)
class ConsumerSpec:
    group: str
    topic: str
    # None: as fast as messages come; a number: at most this many per second
    max_messages_per_second: float | None
    # stop after this many messages (commits, leaves the group, exits): the "stopped group"
    stop_after: int | None = None
    # the group protocol: classic, or consumer (KIP-848: the broker assigns the partitions)
    protocol: str = "classic"
    # parses each record as JSON and retries one it cannot parse (the poison consumer)
    strict: bool = False


CONSUMERS = (
    ConsumerSpec("demo-healthy", "demo.payments", None),
    ConsumerSpec("demo-slow", "demo.clicks", 8),  # the producer writes 20/s: lag grows ~12/s
    ConsumerSpec("demo-stopped", "demo.payments", None, stop_after=100),
    ConsumerSpec(KIP848_GROUP, "demo.orders", None, protocol="consumer"),
    ConsumerSpec(POISON_GROUP, POISON_TOPIC, None, strict=True),
)


@dataclass(frozen=True)
class ShareConsumerSpec:
    name: str  # the demo process share-<name>
    group: str
    topic: str
    # each record is acknowledged this long after it was received (0: at once)
    ack_delay_ms: int


SHARE_GROUP_CONFIGS = {SHARE_GROUP: {"share.auto.offset.reset": "earliest"}}
"""Group configs set before the members start: without ``earliest`` a share group starts at the
log end and skips what was produced before its first member joined."""

SHARE_CONSUMERS = (
    ShareConsumerSpec("fast", SHARE_GROUP, "demo.tasks", 0),
    # 1 record/s against 10/s produced: the records it holds keep the group's lag above zero
    ShareConsumerSpec("slow", SHARE_GROUP, "demo.tasks", 1000),
)
