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

from dataclasses import dataclass, field
from typing import TYPE_CHECKING
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
    """Log ends and log starts through librdkafka's ListOffsets, every chunk of both in flight at once."""
    from kpulse.kafka.group_offsets import PendingLogEnds, start_log_ends, take_log_ends

    asked: list[tuple[LogEnds, PendingLogEnds | Exception]] = []
    for earliest in (False, True):
        try:
            asked.append((LogEnds(), start_log_ends(admin, partitions, timeout, earliest=earliest)))
        except Exception as error:  # noqa: BLE001 - those partitions say why
            asked.append((LogEnds(), error))
    for found, pending in asked:
        if isinstance(pending, Exception):
            found.errors.update((key, _failed(pending)) for key in partitions)
        else:
            take_log_ends(pending, timeout, found.log_end, found.errors, failed=_failed,
                          refused=lambda error: f"ListOffsets: {error.str()}")
    (ends, _), (starts, _) = asked
    return ends, starts


def _failed(error: BaseException) -> str:
    return f"ListOffsets: {one_line(error)}"
