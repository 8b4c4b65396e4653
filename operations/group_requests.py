"""The group requests every operation sends (the classic offset and Streams application resets as
well as the group operations), through kafka-python's connections (thin I/O, no decisions):
committed offsets (OffsetFetch), commits (OffsetCommit), OffsetDelete, DeleteGroups,
and a share group's start offsets (DescribeShareGroupOffsets, AlterShareGroupOffsets,
DeleteShareGroupOffsets: :mod:`kpulse.kafka.messages`).

librdkafka has no call for Streams or share groups, and its offset reads and commits abort the
whole process on a moving coordinator (librdkafka #5040), so every request here goes to the group's
coordinator through kafka-python, found with FindCoordinator and looked up again while it moves
(NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE).

A commit is the one an admin client makes for an inactive group (generation or member epoch -1,
no member id), as ``Admin.alterConsumerGroupOffsets`` / ``alterStreamsGroupOffsets`` send it: the
coordinator accepts it only while the group has no member. Every failure is one line
(:class:`OperationError`); per-partition errors come back as Kafka's error names.
"""

from __future__ import annotations

import time
from typing import Any
from collections.abc import Callable, Iterable

from kpulse.kafka.batched_client import error_name, one_line
from operations.errors import OperationError

TopicPartition = tuple[str, int]

MOVED = frozenset({14, 15, 16})
"""COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR: ask the coordinator again."""
OFFSET_COMMIT_MAX_VERSION = 9
"""v10 names topics by id; kpulse names them."""
OFFSET_FETCH_VERSION = 8
ATTEMPTS = 8


class GroupRequests:
    """Requests about one cluster's groups. ``client_factory()`` builds kafka-python's admin client
    (on first use: the constructor connects to nothing); :meth:`close` closes it."""

    def __init__(self, client_factory: Callable[[], Any], timeout: float = 15.0):
        self._factory = client_factory
        self._client = None
        self.timeout = timeout

    def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.close()

    def __enter__(self) -> GroupRequests:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- the calls -------------------------------------------------------------------------------

    def committed(self, group_id: str, *, require_stable: bool = True) -> dict[TopicPartition, int]:
        """The group's committed offsets (partitions with none are left out). ``require_stable``:
        a partition with a pending transactional commit answers UNSTABLE_OFFSET_COMMIT (and is
        left out); without it the last committed offset, as the official tools' Admin reads it
        (``ListConsumerGroupOffsetsOptions.requireStable`` is false by default)."""
        from kafka.protocol.consumer import OffsetFetchRequest

        group = OffsetFetchRequest.OffsetFetchRequestGroup

        def request():
            return OffsetFetchRequest(groups=[group(group_id=group_id, topics=None)], require_stable=require_stable,
                                      min_version=OFFSET_FETCH_VERSION, max_version=OFFSET_FETCH_VERSION)

        def answer(response):
            [found] = response.groups
            return found.error_code, {(t.name, p.partition_index): p.committed_offset for t in found.topics
                                      for p in t.partitions if p.error_code == 0 and p.committed_offset >= 0}

        return self._call(group_id, request, answer, f"cannot read the committed offsets of group {group_id!r}")

    def commit(self, group_id: str, offsets: dict[TopicPartition, int]) -> dict[TopicPartition, str | None]:
        """Commit ``offsets`` as an admin client (no member): per partition None or Kafka's error name."""
        from kafka.protocol.consumer import OffsetCommitRequest

        topic_class = OffsetCommitRequest.OffsetCommitRequestTopic
        partition_class = topic_class.OffsetCommitRequestPartition

        def request():
            topics = [topic_class(name=topic, partitions=[
                partition_class(partition_index=p, committed_offset=o, committed_leader_epoch=-1, committed_metadata="")
                for (t, p), o in sorted(offsets.items()) if t == topic]) for topic in sorted({t for t, _ in offsets})]
            return OffsetCommitRequest(group_id=group_id, generation_id_or_member_epoch=-1, member_id="",
                                       group_instance_id=None, topics=topics, max_version=OFFSET_COMMIT_MAX_VERSION)

        def answer(response):
            errors = {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}
            moved = next((code for code in errors.values() if code in MOVED), 0)
            return moved, {tp: error_name(code) if code else None for tp, code in errors.items()}

        return self._call(group_id, request, answer, f"cannot commit the offsets of group {group_id!r}")

    def delete_offsets(self, group_id: str, partitions: Iterable[TopicPartition]
                       ) -> tuple[str | None, dict[TopicPartition, str | None]]:
        """OffsetDelete: (the group's error, per partition None or Kafka's error name)."""
        from kafka.protocol.consumer import OffsetDeleteRequest

        wanted = sorted(set(partitions))
        topic_class = OffsetDeleteRequest.OffsetDeleteRequestTopic

        def request():
            return OffsetDeleteRequest(group_id=group_id, topics=[
                topic_class(name=topic, partitions=[topic_class.OffsetDeleteRequestPartition(partition_index=p)
                                                    for t, p in wanted if t == topic])
                for topic in sorted({t for t, _ in wanted})])

        def answer(response):
            per_partition = {(t.name, p.partition_index): error_name(p.error_code) if p.error_code else None
                             for t in response.topics for p in t.partitions}
            return response.error_code, (error_name(response.error_code) if response.error_code else None,
                                         per_partition)

        return self._call(group_id, request, answer, f"cannot delete the offsets of group {group_id!r}",
                          top_level_errors=True)

    def delete_group(self, group_id: str) -> str | None:
        """DeleteGroups: None, or Kafka's error name (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP...)."""
        from kafka.protocol.admin import DeleteGroupsRequest

        def answer(response):
            [result] = [r for r in response.results if r.group_id == group_id]
            return result.error_code, error_name(result.error_code) if result.error_code else None

        return self._call(group_id, lambda: DeleteGroupsRequest(groups_names=[group_id]), answer,
                          f"cannot delete group {group_id!r}", top_level_errors=True)

    def share_start_offsets(self, group_id: str) -> dict[TopicPartition, int | None]:
        """Every partition the share group has state for -> its start offset (None: not initialised)."""
        from kpulse.kafka.messages import DescribeShareGroupOffsetsRequest

        group_class = DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup

        def answer(response):
            [found] = response.groups
            return found.error_code, {(t.topic_name, p.partition_index): (p.start_offset if p.start_offset >= 0 else None)
                                      for t in found.topics for p in t.partitions if p.error_code == 0}

        return self._call(group_id, lambda: DescribeShareGroupOffsetsRequest(
            groups=[group_class(group_id=group_id, topics=None)], min_version=1), answer,
            f"cannot read the start offsets of share group {group_id!r}")

    def alter_share_offsets(self, group_id: str, offsets: dict[TopicPartition, int]
                            ) -> tuple[str | None, dict[TopicPartition, str | None]]:
        """AlterShareGroupOffsets: (the group's error, per partition None or the error)."""
        from kpulse.kafka.messages import AlterShareGroupOffsetsRequest

        topic_class = AlterShareGroupOffsetsRequest.AlterShareGroupOffsetsRequestTopic

        def request():
            return AlterShareGroupOffsetsRequest(group_id=group_id, topics=[
                topic_class(topic_name=topic, partitions=[
                    topic_class.AlterShareGroupOffsetsRequestPartition(partition_index=p, start_offset=o)
                    for (t, p), o in sorted(offsets.items()) if t == topic])
                for topic in sorted({t for t, _ in offsets})])

        def answer(response):
            per_partition = {(t.topic_name, p.partition_index): _error(p.error_code, p.error_message)
                             for t in response.responses for p in t.partitions}
            return response.error_code, (_error(response.error_code, response.error_message), per_partition)

        return self._call(group_id, request, answer, f"cannot alter the start offsets of share group {group_id!r}",
                          top_level_errors=True)

    def delete_share_offsets(self, group_id: str, topics: Iterable[str]
                             ) -> tuple[str | None, dict[str, str | None]]:
        """DeleteShareGroupOffsets: (the group's error, per topic None or the error)."""
        from kpulse.kafka.messages import DeleteShareGroupOffsetsRequest

        topic_class = DeleteShareGroupOffsetsRequest.DeleteShareGroupOffsetsRequestTopic

        def answer(response):
            per_topic = {t.topic_name: _error(t.error_code, t.error_message) for t in response.responses}
            return response.error_code, (_error(response.error_code, response.error_message), per_topic)

        return self._call(group_id, lambda: DeleteShareGroupOffsetsRequest(
            group_id=group_id, topics=[topic_class(topic_name=t) for t in sorted(set(topics))]), answer,
            f"cannot delete the start offsets of share group {group_id!r}", top_level_errors=True)

    # --- the coordinator -------------------------------------------------------------------------

    def _manager(self):
        if self._client is None:
            try:
                self._client = self._factory()
            except OperationError:
                raise
            except Exception as error:  # noqa: BLE001 - one line for the user
                raise OperationError(f"cannot connect to the cluster: {one_line(error)}") from None
        return self._client._manager

    def _call(self, group_id: str, request: Callable[[], Any], answer: Callable[[Any], tuple[int, Any]], what: str,
              *, top_level_errors: bool = False):
        """Send ``request()`` to the group's coordinator; ``answer(response)`` -> (the group's error
        code, the result). A moved coordinator is looked up again; another group error is raised
        unless ``top_level_errors`` (the caller reports it with the result)."""
        manager = self._manager()
        code = 0
        for attempt in range(ATTEMPTS):
            try:
                node = manager.run(self._coordinator, manager, group_id)
                response = manager.run(_send, manager, request(), node, int(self.timeout * 1000))
            except Exception as error:  # noqa: BLE001
                if attempt + 1 < ATTEMPTS and getattr(error, "retriable", False):
                    time.sleep(0.3 * (attempt + 1))
                    continue
                if isinstance(error, OperationError):
                    raise
                raise OperationError(f"{what}: {one_line(error)}") from None
            code, result = answer(response)
            if code in MOVED and attempt + 1 < ATTEMPTS:
                time.sleep(0.3 * (attempt + 1))
                continue
            if code and not top_level_errors:
                raise OperationError(f"{what}: {error_name(code)}")
            return result
        raise OperationError(f"{what}: {error_name(code)}")

    async def _coordinator(self, manager, group_id: str) -> int:
        from kafka.protocol.metadata import CoordinatorType, FindCoordinatorRequest

        response = await manager.send(FindCoordinatorRequest(key_type=CoordinatorType.GROUP.value,
                                                             coordinator_keys=[group_id], min_version=4),
                                      request_timeout_ms=int(self.timeout * 1000))
        [entry] = response.coordinators
        if entry.error_code:
            error = OperationError(f"no coordinator for group {group_id!r}: {error_name(entry.error_code)}")
            error.retriable = entry.error_code in MOVED
            raise error
        return manager.cluster.add_coordinator(entry, CoordinatorType.GROUP, group_id, synthesize_node_id=False)


async def _send(manager, request, node: int, timeout_ms: int):
    return await manager.send(request, node_id=node, request_timeout_ms=timeout_ms)


def _error(code: int, message: str | None) -> str | None:
    if not code:
        return None
    return error_name(code) + (f" ({message})" if message else "")
