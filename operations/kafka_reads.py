"""What planners and executors read from a cluster (confluent-kafka Admin API): thin I/O, no
decisions. Every client failure becomes a one-line :class:`OperationError`.

A group's committed offsets are not read here: librdkafka's ListConsumerGroupOffsets and
AlterConsumerGroupOffsets abort the process on a moving coordinator (librdkafka #5040), so every
operation reads and commits them through :class:`operations.group_requests.GroupRequests`."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal, overload

from kpulse.kafka.clients import error_text, group_state_name, list_topics, wait
from operations.errors import OperationError, unknown

TIMEOUT = 15.0
INACTIVE_STATES = ("Empty", "Dead")

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class Member:
    member_id: str
    client_id: str
    host: str

    def describe(self) -> str:
        return f"{self.client_id}@{self.host.lstrip('/')} ({self.member_id})"


@dataclass(frozen=True)
class GroupView:
    group_id: str
    state: str
    """Stable, PreparingRebalance, CompletingRebalance, Empty, Dead, Unknown."""
    members: tuple[Member, ...]

    @property
    def inactive(self) -> bool:
        return self.state in INACTIVE_STATES and not self.members

    def members_text(self) -> str:
        return ", ".join(m.describe() for m in self.members) or "none"


RETRIABLE = frozenset({"NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE"})
"""Group errors a fresh client meets while it finds the group coordinator: asked again."""


def await_result(future, what: str, admin=None):
    """The answer of ``future``; with the ``admin`` that made it, a cluster that cannot answer
    (connection refused, TLS, authentication) is named at once (:func:`kpulse.kafka.clients.wait`)."""
    try:
        return wait(admin, future, TIMEOUT + 5)
    except Exception as error:  # noqa: BLE001 - any client failure is one line for the user
        raise OperationError(f"{what}: {error_text(error)}") from None


def group_call(call, what: str, attempts: int = 8, admin=None):
    """``call()`` returns one future; asked again while the coordinator is being found. ``admin``
    as in :func:`await_result`."""
    for attempt in range(attempts):
        try:
            return wait(admin, call(), TIMEOUT + 5)
        except Exception as error:  # noqa: BLE001
            first = error.args[0] if error.args else None
            if attempt + 1 < attempts and getattr(first, "name", lambda: "")() in RETRIABLE:
                time.sleep(0.25 * (attempt + 1))
                continue
            raise OperationError(f"{what}: {error_text(error)}") from None


def describe_group(admin, group_id: str) -> GroupView:
    described = group_call(lambda: admin.describe_consumer_groups([group_id], request_timeout=TIMEOUT)[group_id],
                            f"cannot describe group {group_id!r}", admin=admin)
    members = tuple(Member(m.member_id, m.client_id, m.host) for m in described.members)
    return GroupView(group_id, group_state_name(described.state), members)


@dataclass(frozen=True)
class GroupListing:
    """One group as the cluster lists it."""

    group_id: str
    group_type: str
    """``classic``, ``consumer`` (KIP-848), ``streams`` (KIP-1071), ``share`` (KIP-932); ``""`` when
    not known."""
    state: str
    """As the broker spells it for the group's type (Empty, Stable, NotReady, ...)."""

    @property
    def describable(self) -> bool:
        """Whether :func:`describe_group` reads its state and members: classic and consumer groups
        only (librdkafka shows a streams or share group as Dead, with no members, even while it runs)."""
        return self.group_type in ("classic", "consumer", "")


def all_groups(admin, legacy_admin_factory=None) -> dict[str, GroupListing]:
    """Every group of every type. librdkafka 2.16 lists only classic and consumer groups (a
    running streams-protocol application is not listed at all), so the listing goes through
    kafka-python's ListGroups (v5, every type) when ``legacy_admin_factory`` builds its client;
    without it (or with security settings kafka-python is not given) librdkafka's listing."""
    from kpulse.kafka.clients import KafkaPythonUnsupported

    if legacy_admin_factory is not None:
        try:
            legacy = legacy_admin_factory()
        except KafkaPythonUnsupported:
            legacy = None
        except Exception as error:  # noqa: BLE001
            raise OperationError(f"cannot list the groups: {error_text(error)}") from None
        if legacy is not None:
            try:
                listed = _retried(legacy.list_groups)
                return {g["group_id"]: GroupListing(g["group_id"], g.get("group_type") or "", g.get("group_state") or "")
                        for g in listed}
            except Exception as error:  # noqa: BLE001
                raise OperationError(f"cannot list the groups: {error_text(error)}") from None
            finally:
                legacy.close()
    listed = await_result(admin.list_consumer_groups(request_timeout=TIMEOUT), "cannot list consumer groups")
    types = {"CLASSIC": "classic", "CONSUMER": "consumer"}
    return {g.group_id: GroupListing(g.group_id, types.get(getattr(g.type, "name", ""), ""), group_state_name(g.state))
            for g in listed.valid}


def _retried(call, attempts: int = 8):
    """``call()`` asked again while kafka-python says the error is retriable (a coordinator
    loading, as on a fresh cluster)."""
    for attempt in range(attempts):
        try:
            return call()
        except Exception as error:  # noqa: BLE001
            if attempt + 1 == attempts or not getattr(error, "retriable", False):
                raise
            time.sleep(0.25 * (attempt + 1))


def topic_partitions(admin, topics: list[str]) -> dict[str, list[int]]:
    """Partition numbers of each topic; an unknown topic is an error with a did-you-mean."""
    described = metadata(admin)
    known = {name: sorted(t.partitions) for name, t in described.topics.items()}
    for topic in topics:
        if topic not in known:
            raise unknown("topic", topic, set(known))
    return {topic: known[topic] for topic in topics}


def all_topics(admin) -> dict[str, list[int]]:
    return {name: sorted(t.partitions) for name, t in metadata(admin).topics.items()}


def metadata(admin):
    try:
        return list_topics(admin, TIMEOUT)
    except Exception as error:  # noqa: BLE001
        raise OperationError(f"cannot read the cluster metadata: {error_text(error)}") from None


@overload
def log_offsets(admin: Any, partitions: list[TopicPartition], spec: Literal["earliest", "latest"]) -> dict[TopicPartition, int]: ...
@overload
def log_offsets(admin: Any, partitions: list[TopicPartition], spec: int) -> dict[TopicPartition, int | None]: ...


def log_offsets(admin: Any, partitions: list[TopicPartition],
                spec: Literal["earliest", "latest"] | int) -> dict[TopicPartition, int] | dict[TopicPartition, int | None]:
    """``spec``: ``"earliest"``, ``"latest"`` or a timestamp in epoch ms (>= 0). None for a
    timestamp later than every message of the partition."""
    from confluent_kafka import TopicPartition as KafkaTP
    from confluent_kafka.admin import OffsetSpec

    if isinstance(spec, int) and spec < 0:  # Kafka reads -1 as latest, -2 earliest, -3 max timestamp
        raise ValueError(f"negative timestamp {spec} for ListOffsets (a caller must read a time before "
                         "the epoch as the log start)")
    if not partitions:
        return {}
    offset_spec = (OffsetSpec.earliest() if spec == "earliest" else OffsetSpec.latest() if spec == "latest"
                   else OffsetSpec.for_timestamp(int(spec)))
    futures = admin.list_offsets({KafkaTP(t, p): offset_spec for t, p in partitions}, request_timeout=TIMEOUT)
    offsets: dict[TopicPartition, int | None] = {}
    for tp, future in futures.items():
        answer = await_result(future, f"cannot list offsets of {tp.topic}-{tp.partition}")
        offsets[(tp.topic, tp.partition)] = answer.offset if answer.offset >= 0 else None
    return offsets
