"""Log end offsets (high watermarks) of many partitions: one ListOffsets per partition leader.

:class:`LeaderLogEnds` sends one ListOffsets request per partition leader through the lag
collector's kafka-python client (``kpulse/kafka/batched_client.py``), where librdkafka's Admin API
(whose cost grows with the square of a call's partition count) needed many calls and ~4x the
requests (figures in docs/performance.md, "Why the code is shaped so").

- Leaders come from a Metadata request for the topics whose partitions it does not know yet, and
  are kept between calls. A partition whose leader moved (NOT_LEADER_OR_FOLLOWER and the other
  errors of :data:`STALE_LEADER`), or whose leader could not be reached, has its topic's leaders
  looked up again and is read once more in the same call; what still fails gets its reason.
- The request for a leader is kept while it asks for the same partitions (it is not rebuilt
  every cycle).
- A leader the client has never heard of (a broker added since it connected) makes the call return
  None: the caller reads through librdkafka, which knows it.

Isolation is read-uncommitted, as ``kafka-consumer-groups --describe`` shows LOG-END-OFFSET.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from collections.abc import Iterable, Sequence

from kpulse.kafka.batched_client import (
    BatchedClient, ConnectionManager, Unavailable, answer, error_name, one_line, remaining_ms, send,
)

STALE_LEADER = {5: "LEADER_NOT_AVAILABLE", 6: "NOT_LEADER_OR_FOLLOWER", 74: "FENCED_LEADER_EPOCH",
                75: "UNKNOWN_LEADER_EPOCH", 13: "NETWORK_EXCEPTION"}
"""Partition error codes after which the partition's leader is looked up again."""
LATEST = -1
"""ListOffsets timestamp meaning the log end."""
EARLIEST = -2
"""ListOffsets timestamp meaning the log start (what a Streams group's lag counts from on a
partition it has no committed offset for)."""


@dataclass
class LogEnds:
    log_end: dict[tuple[str, int], int] = field(default_factory=dict)
    errors: dict[tuple[str, int], str] = field(default_factory=dict)
    """(topic, partition) -> why its log end could not be read."""


def leaders_from(topics: Iterable[Any], wanted: set[str]) -> tuple[dict[tuple[str, int], int],
                                                                  dict[str, str], dict[tuple[str, int], str]]:
    """A Metadata answer's ``topics`` -> ((topic, partition) -> leader id, topic -> why it has no
    partitions, (topic, partition) -> why it has no leader). Only ``wanted`` topics are taken."""
    leaders: dict[tuple[str, int], int] = {}
    topic_errors: dict[str, str] = {}
    partition_errors: dict[tuple[str, int], str] = {}
    for topic in topics:
        if topic.name not in wanted:
            continue
        if topic.error_code:
            topic_errors[topic.name] = f"Metadata: {error_name(topic.error_code)}"
            continue
        for partition in topic.partitions:
            key = (topic.name, partition.partition_index)
            if partition.error_code and partition.leader_id < 0:
                partition_errors[key] = f"no leader: {error_name(partition.error_code)}"
            elif partition.leader_id < 0:
                partition_errors[key] = "no leader"
            else:
                leaders[key] = partition.leader_id
    return leaders, topic_errors, partition_errors


def ends_from(topics: Iterable[Any]) -> tuple[dict[tuple[str, int], int], dict[tuple[str, int], str],
                                              set[tuple[str, int]]]:
    """A ListOffsets answer's ``topics`` -> (log ends, (topic, partition) -> why not read,
    partitions whose leader moved)."""
    ends: dict[tuple[str, int], int] = {}
    errors: dict[tuple[str, int], str] = {}
    moved: set[tuple[str, int]] = set()
    for topic in topics:
        for partition in topic.partitions:
            key = (topic.name, partition.partition_index)
            code = partition.error_code
            if code in STALE_LEADER:
                moved.add(key)
                errors[key] = f"ListOffsets: {STALE_LEADER[code]}"
            elif code:
                errors[key] = f"ListOffsets: {error_name(code)}"
            else:
                ends[key] = partition.offset
    return ends, errors, moved


class LeaderLogEnds:
    """Log ends of many partitions, one ListOffsets per leader (see the module)."""

    def __init__(self, client: BatchedClient, timestamp: int = LATEST) -> None:
        self.client = client
        self.timestamp = timestamp
        """:data:`LATEST` (log ends, the default) or :data:`EARLIEST` (log starts, in ``LogEnds.log_end``)."""
        self._leaders: dict[tuple[str, int], int] = {}
        self._no_leader: dict[str | tuple[str, int], str] = {}
        """Why the last look-up found no leader: by topic (no such topic, ...) or by partition."""
        self._requests: dict[int, tuple[tuple[tuple[str, int], ...], Any]] = {}
        """leader -> (the partitions asked of it last, sorted; that request)."""

    def read(self, partitions: Sequence[tuple[str, int]], timeout: float) -> LogEnds | None:
        """The log ends of ``partitions`` (and why any could not be read); None when the batched
        requests cannot be used (the caller reads through librdkafka)."""
        from kafka.protocol.consumer import ListOffsetsRequest
        from kafka.protocol.metadata import MetadataRequest

        try:
            manager = self.client.manager(timeout, {ListOffsetsRequest: 1, MetadataRequest: 1})
            ends = manager.run(self._read, manager, list(partitions), self.client.clock() + timeout)
        except Unavailable as reason:
            self.client.fell_back(str(reason))
            return None
        self.client.succeeded()
        return ends

    async def _read(self, manager: ConnectionManager, partitions: list[tuple[str, int]], deadline: float) -> LogEnds:
        result = LogEnds()
        pending = partitions
        for attempt in range(2):  # a second time only for partitions whose leader moved
            gone = {leader for leader in set(self._leaders.values()) if manager.cluster.broker_metadata(leader) is None}
            if gone:  # leaders the client has not heard of: maybe they moved since
                self._leaders = {key: leader for key, leader in self._leaders.items() if leader not in gone}
            unknown = {topic for topic, partition in pending if (topic, partition) not in self._leaders}
            if unknown:
                await self._look_up(manager, unknown, deadline)
            by_leader: dict[int, list[tuple[str, int]]] = {}
            for key in pending:
                leader = self._leaders.get(key)
                if leader is None:
                    result.errors.setdefault(key, self._why_no_leader(key))
                else:
                    by_leader.setdefault(leader, []).append(key)
            if any(manager.cluster.broker_metadata(leader) is None for leader in by_leader):
                try:  # a broker that joined or came back since the client last read the broker list
                    await manager.cluster.refresh_metadata()
                except Exception as error:  # noqa: BLE001 - librdkafka knows its brokers
                    raise Unavailable(f"the broker list could not be read: {one_line(error)}") from error
                if any(manager.cluster.broker_metadata(leader) is None for leader in by_leader):
                    raise Unavailable("a partition leader is a broker the kafka-python client does not know")
            sent = [(leader, keys, send(manager, self._request(leader, keys), leader,
                                        remaining_ms(deadline, self.client.clock)))
                    for leader, keys in by_leader.items()]
            again: list[tuple[str, int]] = []
            for leader, keys, future in sent:
                try:
                    response = await answer(future)
                except Exception as error:  # noqa: BLE001 - that leader's partitions say why
                    reason = f"ListOffsets to broker {leader}: {one_line(error)}"
                    result.errors.update((key, reason) for key in keys)
                    again.extend(keys)
                    continue
                ends, errors, moved = ends_from(response.topics)
                result.log_end.update(ends)
                result.errors.update(errors)
                again.extend(moved)
            if attempt == 0 and again:
                for key in again:
                    self._leaders.pop(key, None)
                pending = again
            else:
                break
        for key in result.log_end:
            result.errors.pop(key, None)  # read at the second attempt
        return result

    async def _look_up(self, manager: ConnectionManager, topics: set[str], deadline: float) -> None:
        from kafka.protocol.metadata import MetadataRequest

        request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=t) for t in sorted(topics)],
                                  allow_auto_topic_creation=False)
        try:
            response = await answer(send(manager, request, None, remaining_ms(deadline, self.client.clock)))
        except Exception as error:  # noqa: BLE001 - librdkafka looks leaders up itself
            raise Unavailable(f"Metadata failed: {one_line(error)}") from error
        leaders, topic_errors, partition_errors = leaders_from(response.topics, topics)
        for key in [key for key in self._leaders if key[0] in topics]:
            del self._leaders[key]
        self._leaders.update(leaders)
        for why in [why for why in self._no_leader if (why if isinstance(why, str) else why[0]) in topics]:
            del self._no_leader[why]
        self._no_leader.update(topic_errors.items())
        self._no_leader.update(partition_errors.items())

    def _why_no_leader(self, key: tuple[str, int]) -> str:
        topic, partition = key
        return (self._no_leader.get(key) or self._no_leader.get(topic)
                or f"Metadata: UNKNOWN_TOPIC_OR_PARTITION (the topic has no partition {partition})")

    def _request(self, leader: int, keys: list[tuple[str, int]]) -> Any:
        keys_tuple = tuple(sorted(keys))
        kept = self._requests.get(leader)
        if kept is not None and kept[0] == keys_tuple:
            return kept[1]
        request = list_offsets_request(keys_tuple, self.timestamp)
        self._requests[leader] = (keys_tuple, request)
        return request


def list_offsets_request(keys: Sequence[tuple[str, int]], timestamp: int = LATEST) -> Any:
    """A ListOffsets request (read-uncommitted, as a consumer that is not a replica) for ``keys``
    (topic, partition) at ``timestamp`` (:data:`LATEST`, :data:`EARLIEST` or epoch ms); also the
    records reader's (``kpulse/kafka/record_fetch.py``)."""
    from kafka.protocol.consumer import ListOffsetsRequest

    topic_entry, partition_entry = ListOffsetsRequest.ListOffsetsTopic, ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition
    by_topic: dict[str, list[Any]] = {}
    for topic, partition in keys:
        by_topic.setdefault(topic, []).append(partition_entry(partition_index=partition, timestamp=timestamp))
    return ListOffsetsRequest(replica_id=-1, isolation_level=0,
                              topics=[topic_entry(name=name, partitions=entries) for name, entries in by_topic.items()])
