"""Reading consumer groups and offsets from a cluster: the I/O half of lag collection.

Cost per cycle does not grow with one request per partition:

- one ListGroups, and DescribeGroups of the groups it does not list as Empty (an Empty group has
  no members or assignments to describe);
- committed offsets: one OffsetFetch per group (the Admin API takes one group per call), at most
  ``concurrency`` (default 32) in flight at once;
- log end offsets: ListOffsets for every partition of every consumed topic, which librdkafka
  splits into one request per partition leader. The partitions go in chunks of
  ``LIST_OFFSETS_CHUNK``, all in flight at once: librdkafka's cost for one call grows with the
  square of its partition count (10,000 partitions in one call: 0.41 s; in ten: 0.10 s). Each
  chunk is one future, not one per partition (see :func:`list_log_ends`).

DescribeGroups and the OffsetFetch batches are in flight together.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

LIST_OFFSETS_CHUNK = 1000


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
    listed = admin.list_consumer_groups(request_timeout=timeout).result(timeout=timeout)
    listings = {g.group_id: g for g in listed.valid if monitors(g.group_id)}
    group_ids = sorted(listings)
    result = ClusterOffsets()
    if not group_ids:
        return result
    empty = {g for g in group_ids if _listed_empty(listings[g])}
    to_describe = [g for g in group_ids if g not in empty]
    described = admin.describe_consumer_groups(to_describe, request_timeout=timeout) if to_describe else {}
    committed_by_group = _committed_offsets(admin, group_ids, concurrency, timeout)
    descriptions = _answers(described, timeout)
    for group_id in group_ids:
        description = _NO_MEMBERS if group_id in empty else descriptions.get(group_id)
        result.groups.append(_group(group_id, description, committed_by_group.get(group_id)))
    partitions = sorted({tp for group in result.groups for tp in group.committed})
    read_log_ends(admin, partitions, timeout, result)
    return result


def _listed_empty(listing) -> bool:
    """ListGroups already says the group is Empty: no members, so nothing to describe. Describing a
    group costs four requests here (two FindCoordinator, a ConsumerGroupDescribe that a classic group
    refuses, then DescribeGroups), 800 for 200 groups and ~0.3 s of the brokers' CPU a cycle."""
    return getattr(getattr(listing, "state", None), "name", None) == "EMPTY"


_NO_MEMBERS = SimpleNamespace(state=SimpleNamespace(name="EMPTY"), members=())
"""What describing a group listed as Empty would say."""


def _committed_offsets(admin, group_ids: list[str], concurrency: int, timeout: float) -> dict[str, dict | Exception]:
    """One OffsetFetch per group, ``concurrency`` at a time."""
    committed: dict[str, dict | Exception] = {}
    for start in range(0, len(group_ids), concurrency):
        futures = {}
        for group_id in group_ids[start:start + concurrency]:
            futures.update(admin.list_consumer_group_offsets([_group_request(group_id)], request_timeout=timeout))
        for group_id, answer in _answers(futures, timeout).items():
            committed[group_id] = answer if isinstance(answer, Exception) else {
                (tp.topic, tp.partition): tp.offset for tp in answer.topic_partitions if tp.offset >= 0}
    return committed


def _group(group_id: str, description, committed) -> GroupOffsets:
    from kpulse.kafka_clients import error_text, group_state_name

    errors = [error_text(e) for e in (description, committed) if isinstance(e, Exception)]
    if isinstance(description, Exception) or description is None:
        state, member_ids, assigned = "Unknown", (), set()
    else:
        state = group_state_name(description.state)
        member_ids = tuple(m.member_id for m in description.members)
        assigned = {(tp.topic, tp.partition) for m in description.members
                    for tp in (m.assignment.topic_partitions if m.assignment else [])}
    offsets: dict[tuple[str, int], int | None] = {tp: None for tp in assigned}
    if isinstance(committed, dict):
        offsets.update(committed)
    return GroupOffsets(group_id=group_id, state=state, members=len(member_ids), member_ids=member_ids,
                        committed=offsets, error="; ".join(errors) or None)


def read_log_ends(admin, partitions: list[tuple[str, int]], timeout: float, result: ClusterOffsets) -> None:
    """Log end offsets of ``partitions`` into ``result``; a partition that cannot be read (deleted
    topic, unknown partition, failed request) gets its reason in ``result.log_end_errors``."""
    from kpulse.kafka_clients import error_text

    chunks = [partitions[start:start + LIST_OFFSETS_CHUNK] for start in range(0, len(partitions), LIST_OFFSETS_CHUNK)]
    futures = [(chunk, list_log_ends(admin, chunk, timeout)) for chunk in chunks]
    for chunk, future in futures:
        try:
            answers = future.result(timeout=timeout)
        except Exception as error:  # noqa: BLE001 - the whole request failed: every partition says why
            for key in chunk:
                result.log_end_errors[key] = error_text(error)
            continue
        for tp, answer in answers.items():
            if hasattr(answer, "offset"):
                result.log_end[(tp.topic, tp.partition)] = answer.offset
            else:  # a KafkaError, e.g. a deleted topic with offsets left behind
                result.log_end_errors[(tp.topic, tp.partition)] = answer.str()


def list_log_ends(admin, partitions: list[tuple[str, int]], timeout: float):
    """One ListOffsets (latest, read uncommitted: the high watermark) for ``partitions``, as ONE
    future of ``{TopicPartition: ListOffsetsResultInfo | KafkaError}``.

    ``AdminClient.list_offsets`` makes a ``concurrent.futures.Future`` per partition and resolves
    each from librdkafka's thread: at 10,000 partitions that bookkeeping cost more than the
    requests (~0.25 s of a cycle, all of it holding the GIL). The request-level call underneath
    (``_AdminClientImpl.list_offsets``, which confluent-kafka's wrapper calls with one future) is
    used directly: ``admin`` must be a real ``AdminClient``."""
    from concurrent.futures import Future

    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import OffsetSpec
    from confluent_kafka.cimpl import _AdminClientImpl

    latest = OffsetSpec.latest()
    future = Future()
    future.set_running_or_notify_cancel()
    _AdminClientImpl.list_offsets(admin, [TopicPartition(t, p, latest._value) for t, p in partitions], future,
                                  request_timeout=timeout)
    return future


def _answers(futures: dict, timeout: float) -> dict:
    """Each future's result, or the exception it raised: one failing key must not hide the others."""
    answers = {}
    for key, future in futures.items():
        try:
            answers[key] = future.result(timeout=timeout)
        except Exception as error:  # noqa: BLE001
            answers[key] = error
    return answers


def _group_request(group_id: str):
    from confluent_kafka import ConsumerGroupTopicPartitions

    return ConsumerGroupTopicPartitions(group_id)

