"""Record batches, as a Fetch answer carries them, -> :class:`RecordView` s: each record with what
its batch says (compression, producer id and epoch, sequence, transactional, control marker) and
whether it lies inside an aborted transaction. Pure: the bytes come from
:mod:`kpulse.kafka.record_fetch`; kafka-python's record classes parse them.

Which records are aborted is decided as Kafka's consumers decide it under read-committed: a Fetch
answer lists the aborted transactions overlapping the range it returns (producer id and first
offset); going through the batches in offset order, a producer id becomes "aborted" at its
transaction's first offset, every transactional batch of that producer from there on is aborted,
and the producer's ABORT marker (a control batch) ends it.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kpulse.records.model import COMPRESSIONS, CompressionName, ControlName, RecordView, TimestampType

MAX_SEQUENCE = 2**31 - 1
"""Sequences wrap to 0 after this (Kafka's ``Integer.MAX_VALUE``)."""


class CorruptBatch(Exception):
    """A batch could not be decoded (corrupt, or compressed with a codec this machine lacks);
    one line, naming the offset."""


@dataclass
class AbortTracker:
    """The aborted transactions seen so far and the producers inside one, across the answers of
    one read (an answer lists the aborted transactions of the range it returns)."""

    pending: list[tuple[int, int]] = field(default_factory=list)
    """(first offset, producer id) of aborted transactions not reached yet: a heap."""
    seen: set[tuple[int, int]] = field(default_factory=set)
    aborting: set[int] = field(default_factory=set)
    """Producers whose current transaction is an aborted one."""

    def add(self, transactions: Iterable[tuple[int, int]]) -> None:
        """``(producer id, first offset)`` of aborted transactions from an answer."""
        for producer_id, first_offset in transactions:
            if (first_offset, producer_id) not in self.seen:
                self.seen.add((first_offset, producer_id))
                heapq.heappush(self.pending, (first_offset, producer_id))

    def reach(self, last_offset: int) -> None:
        """The transactions that began at or before ``last_offset`` are now under way."""
        while self.pending and self.pending[0][0] <= last_offset:
            self.aborting.add(heapq.heappop(self.pending)[1])


def records_from(batches: Iterable[Any], start: int, tracker: AbortTracker) -> list[RecordView]:
    """The records at ``start`` or later of ``batches`` (kafka-python ``DefaultRecordBatch`` or
    ``LegacyRecordBatch`` objects, in offset order), flagged with ``tracker``'s aborted transactions.
    Raises :class:`CorruptBatch` with the records decoded before it in ``args[1]``."""
    records: list[RecordView] = []
    for batch in batches:
        try:
            records.extend(_batch_records(batch, start, tracker))
        except Exception as error:  # noqa: BLE001 - kafka-python raises several kinds for a bad batch
            raise CorruptBatch(f"the batch at offset {batch.base_offset} could not be decoded: "
                               f"{_one_line(error)}", records) from error
    return records


def _batch_records(batch: Any, start: int, tracker: AbortTracker) -> list[RecordView]:
    magic = batch.magic
    producer_id = batch.producer_id if magic >= 2 and batch.producer_id >= 0 else None
    transactional = magic >= 2 and batch.is_transactional
    control_batch = magic >= 2 and batch.is_control_batch
    if magic >= 2:
        tracker.reach(batch.last_offset)
    aborted = transactional and not control_batch and producer_id in tracker.aborting
    compression = _compression(batch.compression_type)
    out: list[RecordView] = []
    for record in batch:
        control: ControlName | None = None
        if control_batch:
            control = "abort" if record.abort else "commit"
            if control == "abort" and producer_id is not None:
                tracker.aborting.discard(producer_id)
        if record.offset < start:
            continue
        out.append(RecordView(
            offset=record.offset, timestamp=_time(record.timestamp),
            timestamp_type=_timestamp_type(record.timestamp_type, record.timestamp),
            key=record.key, value=record.value,
            headers=tuple((name, value) for name, value in getattr(record, "headers", None) or ()),
            size=_size(record), compression=compression, producer_id=producer_id,
            producer_epoch=batch.producer_epoch if producer_id is not None else None,
            sequence=_sequence(batch, record.offset) if magic >= 2 else None,
            transactional=transactional, control=control, aborted=aborted))
    return out


def _compression(code: int) -> CompressionName:
    if 0 <= code < len(COMPRESSIONS):
        return COMPRESSIONS[code]
    raise ValueError(f"unknown compression codec {code}")


def _time(timestamp: int | None) -> datetime | None:
    if timestamp is None or timestamp < 0:
        return None
    return datetime.fromtimestamp(timestamp / 1000, UTC)


def _timestamp_type(code: int | None, timestamp: int | None) -> TimestampType | None:
    if code is None or timestamp is None or timestamp < 0:
        return None
    return "LogAppendTime" if code == 1 else "CreateTime"


def _sequence(batch: Any, offset: int) -> int | None:
    base = int(batch.base_sequence)
    if base < 0:
        return None
    return (base + offset - int(batch.base_offset)) % (MAX_SEQUENCE + 1)


def _size(record: Any) -> int:
    size = getattr(record, "size_in_bytes", None)
    if isinstance(size, int):
        return size
    return len(record.key or b"") + len(record.value or b"")


def _one_line(error: BaseException) -> str:
    return (f"{type(error).__name__}: {error}".splitlines() or [type(error).__name__])[0]
