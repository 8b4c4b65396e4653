"""The oldest and newest offset of every partition of the cluster (what kafka_exporter serves as
``kafka_topic_partition_oldest_offset`` and ``..._current_offset`` for every topic).

:class:`PartitionOffsets` asks one ListOffsets per partition leader for the log ends and one for the
log starts (:class:`kpulse.kafka.log_ends.LeaderLogEnds`, twice: a ListOffsets request takes one
timestamp per partition); at 10,000 partitions on three brokers that is six requests a cycle, each
kept while the leader's partitions stay the same. When the kafka-python
client cannot be used (:class:`kpulse.kafka.batched_client.Unavailable`) it asks librdkafka's
ListOffsets instead, in chunks of :data:`kpulse.kafka.group_offsets.LIST_OFFSETS_CHUNK`, all in
flight at once. A partition whose offset could not be read has its reason, one line.
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from collections.abc import Sequence

from kpulse.kafka.batched_client import BatchedClient, one_line
from kpulse.kafka.log_ends import EARLIEST, LATEST, LeaderLogEnds, LogEnds

if TYPE_CHECKING:
    from confluent_kafka.admin import AdminClient

Partition = tuple[str, int]


@dataclass
class OffsetsRead:
    """One reading of the partitions' log starts and log ends."""

    log_start: dict[Partition, int] = field(default_factory=dict)
    log_end: dict[Partition, int] = field(default_factory=dict)
    log_start_errors: dict[Partition, str] = field(default_factory=dict)
    """(topic, partition) -> why its log start could not be read."""
    log_end_errors: dict[Partition, str] = field(default_factory=dict)
    """(topic, partition) -> why its log end could not be read."""


class PartitionOffsets:
    """Log starts and log ends of many partitions (see the module). Not thread-safe; one collector
    owns one."""

    def __init__(self, client: BatchedClient) -> None:
        self.client = client
        self._ends = LeaderLogEnds(client, LATEST)
        self._starts = LeaderLogEnds(client, EARLIEST)

    def read(self, admin: AdminClient, partitions: Sequence[Partition], timeout: float) -> OffsetsRead:
        """The log start and log end of each of ``partitions``, or why not."""
        result = OffsetsRead()
        if not partitions:
            return result
        ends = self._ends.read(partitions, timeout)
        started = self._starts.read(partitions, timeout) if ends is not None else None
        if ends is None or started is None:  # the kafka-python client cannot be used now: librdkafka asks
            ends, started = _librdkafka(admin, partitions, timeout)
        result.log_end, result.log_end_errors = ends.log_end, ends.errors
        result.log_start, result.log_start_errors = started.log_end, started.errors
        return result


def _librdkafka(admin: AdminClient, partitions: Sequence[Partition], timeout: float) -> tuple[LogEnds, LogEnds]:
    """Log ends and log starts through librdkafka's ListOffsets, every chunk in flight at once."""
    from confluent_kafka.admin import OffsetSpec

    from kpulse.kafka.group_offsets import LIST_OFFSETS_CHUNK, list_log_ends

    chunks = [partitions[start:start + LIST_OFFSETS_CHUNK] for start in range(0, len(partitions), LIST_OFFSETS_CHUNK)]
    asked: list[tuple[LogEnds, Sequence[Partition], Future[dict[Any, Any]] | Exception]] = []
    ends, starts = LogEnds(), LogEnds()
    for found, spec in ((ends, OffsetSpec.latest()), (starts, OffsetSpec.earliest())):  # type: ignore[no-untyped-call]
        for chunk in chunks:
            try:
                asked.append((found, chunk, list_log_ends(admin, _requests(chunk, spec), timeout)))
            except Exception as error:  # noqa: BLE001 - that chunk's partitions say why
                asked.append((found, chunk, error))
    for found, chunk, future in asked:
        try:
            if isinstance(future, Exception):
                raise future
            answers = future.result(timeout=timeout)
        except Exception as error:  # noqa: BLE001 - the whole request failed: every partition says why
            found.errors.update((key, f"ListOffsets: {one_line(error)}") for key in chunk)
            continue
        for tp, answer in answers.items():
            if hasattr(answer, "offset"):
                found.log_end[(tp.topic, tp.partition)] = answer.offset
            else:  # a KafkaError
                found.errors[(tp.topic, tp.partition)] = f"ListOffsets: {answer.str()}"
    return ends, starts


def _requests(partitions: Sequence[Partition], spec: Any) -> list[Any]:
    from confluent_kafka import TopicPartition

    value = spec._value  # what confluent-kafka's own list_offsets puts in each TopicPartition's offset
    return [TopicPartition(topic, partition, value) for topic, partition in partitions]
