"""What a read of one partition's records returns: the typed contract between the reader
(:mod:`kpulse.kafka.record_fetch`), the CLI (``kpulse records``) and the dashboard's records view.

The contents (key, value, header values) are the bytes Kafka holds, exactly; how they are shown,
and to whom, is :mod:`kpulse.records.display` and :mod:`kpulse.records.access`. Nothing here is
ever written to a log, the lake or the snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal, get_args

TimestampType = Literal["CreateTime", "LogAppendTime"]
"""Who set a record's timestamp: the producer (``CreateTime``) or the broker on append."""
CompressionName = Literal["none", "gzip", "snappy", "lz4", "zstd"]
"""The compression codec of the batch a record came in."""
COMPRESSIONS: tuple[CompressionName, ...] = get_args(CompressionName)
"""In the order of Kafka's codec ids (0-4)."""
ControlName = Literal["commit", "abort"]
"""A control record's marker: the end of a transaction, committed or aborted."""
BoundName = Literal["count", "bytes", "time", "end of log"]
"""What ended a read: the record count reached, the byte budget spent, the time budget spent, or
the partition's end (the high watermark, or the last stable offset for read-committed) reached."""
BOUNDS: tuple[BoundName, ...] = get_args(BoundName)
Header = tuple[str, bytes | None]
"""A record header: its name (text) and its value (bytes, or None for a null value)."""


@dataclass(frozen=True)
class RecordView:
    """One record of a partition, with what its batch says about it."""

    offset: int
    """The record's offset in the partition."""
    timestamp: datetime | None
    """Its timestamp (UTC); None when it has none (-1, a record from before timestamps)."""
    timestamp_type: TimestampType | None
    """Who set :attr:`timestamp`; None when there is no timestamp."""
    key: bytes | None
    """The key, exactly; None for a null key."""
    value: bytes | None
    """The value, exactly; None for a null value (a tombstone)."""
    headers: tuple[Header, ...]
    """The headers in the order the producer wrote them (a name may repeat)."""
    size: int
    """The record's size in the log in bytes (its encoded size inside the batch, uncompressed)."""
    compression: CompressionName
    """The codec of its batch."""
    producer_id: int | None
    """The idempotent or transactional producer's id; None when the batch has none (-1)."""
    producer_epoch: int | None
    """That producer's epoch; None without a producer id."""
    sequence: int | None
    """The record's sequence number (the batch's base sequence + its offset delta); None without one."""
    transactional: bool
    """Written inside a transaction."""
    control: ControlName | None
    """For a control record (a transaction marker, which no consumer application sees): which
    marker; None for a data record."""
    aborted: bool
    """Inside a transaction that was aborted: a read-committed consumer skips it."""

    @property
    def is_control(self) -> bool:
        return self.control is not None


@dataclass(frozen=True)
class RecordsRead:
    """One bounded read of a partition from a start offset. Built once by the reader; a value the
    reader could not learn is None, with a note saying why."""

    cluster: str
    """The configured cluster's name."""
    topic: str
    partition: int
    start_from: str
    """Where the start offset came from, in words: "committed offset of group G", "start offset of
    share group G", "offset given", "log start", "log start (group G has no committed offset on T-P)"."""
    requested_start: int | None
    """The offset the read was asked to start at (the group's, or the one given); None when it could
    not be learned (the read then has an :attr:`error`)."""
    log_start: int | None
    """The partition's log start offset (the oldest record kept); None when unread."""
    high_watermark: int | None
    """The partition's high watermark (the offset the next record will get); None when unread."""
    last_stable_offset: int | None
    """The last stable offset: below it no transaction is open; None when unread."""
    read_from: int | None
    """The offset the read actually started at: :attr:`requested_start`, or the log start when that
    is before it (deleted by retention or by DeleteRecords); None when nothing was read."""
    next_offset: int | None
    """The offset after the last record returned (where a following read would start); None when
    nothing was read."""
    records: tuple[RecordView, ...]
    """The records read, control records included, in offset order."""
    notes: tuple[str, ...]
    """Facts about the read a person should know, one line each: e.g. "offset 5 is before the log
    start 12: records 5 to 11 were deleted (retention or DeleteRecords); reading from 12"."""
    bound: BoundName | None
    """What ended the read; None when it failed before reading."""
    error: str | None
    """Why the read failed, one line (e.g. "not authorized: Read on topic orders"); None when it
    did not. Records read before a failure are kept."""

    @property
    def before_log_start(self) -> bool:
        """Whether the requested start is older than the oldest record kept."""
        return (self.requested_start is not None and self.log_start is not None
                and self.requested_start < self.log_start)
