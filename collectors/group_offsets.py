"""Reading consumer groups and offsets from a cluster: the I/O half of lag collection.

Cost per cycle does not grow with one request per partition:

- one ListGroups and one DescribeGroups round (librdkafka batches by coordinator);
- committed offsets: one OffsetFetch per group (the Admin API takes one group per call), at most
  ``concurrency`` (default 32) in flight at once;
- log end offsets: one ListOffsets call for every partition of every consumed topic, which
  librdkafka splits into one request per partition leader.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class GroupOffsets:
    """What the cluster says about one consumer group at one moment."""

    group_id: str
    state: str
    """Stable, PreparingRebalance, CompletingRebalance, Empty, Dead or Unknown."""
    members: int
    member_ids: tuple[str, ...]
    committed: dict[tuple[str, int], int | None]
    """(topic, partition) -> committed offset; None for a partition assigned to a member but
    never committed (the official tool prints '-')."""
    error: str | None = None
    """Why this group could not be read, when it could not."""


@dataclass
class ClusterOffsets:
    groups: list[GroupOffsets] = field(default_factory=list)
    log_end: dict[tuple[str, int], int] = field(default_factory=dict)
    """(topic, partition) -> log end offset (high watermark)."""
    log_end_errors: dict[tuple[str, int], str] = field(default_factory=dict)


def read_cluster_offsets(admin, monitors, *, concurrency: int = 32, timeout: float = 15.0) -> ClusterOffsets:
    """Groups accepted by ``monitors(group_id)``, their members, committed offsets and the log ends."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import OffsetSpec

    from kpulse.kafka_clients import error_text

    listed = admin.list_consumer_groups(request_timeout=timeout).result(timeout=timeout)
    group_ids = sorted(g.group_id for g in listed.valid if monitors(g.group_id))
    result = ClusterOffsets()
    if not group_ids:
        return result

    descriptions = {}
    for group_id, future in admin.describe_consumer_groups(group_ids, request_timeout=timeout).items():
        try:
            descriptions[group_id] = future.result(timeout=timeout)
        except Exception as error:  # noqa: BLE001 - one group failing must not hide the others
            descriptions[group_id] = error

    committed_by_group: dict[str, dict | Exception] = {}
    for start in range(0, len(group_ids), concurrency):
        batch = group_ids[start:start + concurrency]
        futures = {}
        for group_id in batch:
            futures.update(admin.list_consumer_group_offsets([_group_request(group_id)], request_timeout=timeout))
        for group_id, future in futures.items():
            try:
                answer = future.result(timeout=timeout)
                committed_by_group[group_id] = {
                    (tp.topic, tp.partition): tp.offset for tp in answer.topic_partitions if tp.offset >= 0}
            except Exception as error:  # noqa: BLE001
                committed_by_group[group_id] = error

    for group_id in group_ids:
        description = descriptions.get(group_id)
        committed = committed_by_group.get(group_id)
        errors = [error_text(e) for e in (description, committed) if isinstance(e, Exception)]
        if isinstance(description, Exception) or description is None:
            state, member_ids, assigned = "Unknown", (), set()
        else:
            state = _state_name(description.state)
            member_ids = tuple(m.member_id for m in description.members)
            assigned = {(tp.topic, tp.partition) for m in description.members
                        for tp in (m.assignment.topic_partitions if m.assignment else [])}
        offsets: dict[tuple[str, int], int | None] = {tp: None for tp in assigned}
        if isinstance(committed, dict):
            offsets.update(committed)
        result.groups.append(GroupOffsets(group_id=group_id, state=state, members=len(member_ids),
                                          member_ids=member_ids, committed=offsets,
                                          error="; ".join(errors) or None))

    partitions = sorted({tp for group in result.groups for tp in group.committed})
    if partitions:
        request = {TopicPartition(topic, partition): OffsetSpec.latest() for topic, partition in partitions}
        for tp, future in admin.list_offsets(request, request_timeout=timeout).items():
            try:
                result.log_end[(tp.topic, tp.partition)] = future.result(timeout=timeout).offset
            except Exception as error:  # noqa: BLE001 - e.g. a deleted topic with offsets left behind
                result.log_end_errors[(tp.topic, tp.partition)] = error_text(error)
    return result


def _group_request(group_id: str):
    from confluent_kafka import ConsumerGroupTopicPartitions

    return ConsumerGroupTopicPartitions(group_id)


_STATE_NAMES = {"STABLE": "Stable", "PREPARING_REBALANCING": "PreparingRebalance",
                "COMPLETING_REBALANCING": "CompletingRebalance", "EMPTY": "Empty", "DEAD": "Dead"}


def _state_name(state) -> str:
    """ConsumerGroupState.STABLE -> 'Stable', as the official tool spells it."""
    return _STATE_NAMES.get(getattr(state, "name", ""), "Unknown")
