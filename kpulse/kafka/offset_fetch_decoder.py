"""A narrow decoder of the OffsetFetch v8 answer: bytes straight into committed offsets.

At 10,000 groups x 10 partitions one OffsetFetch answer holds 100,000 partitions. kafka-python's
generic decoder builds a Python object per partition, per topic and per group (then
``committed_offsets.offsets_from`` reads them once and drops them): most of the CPU of reading the
committed offsets went there. :func:`decode_offset_fetch_v8` reads the same bytes with ``struct``
and gives what ``offsets_from`` gives, with no object per partition.

How it is plugged in: :func:`offset_fetch_request` builds an ``OffsetFetchRequest`` whose header
names :class:`NarrowOffsetFetchResponse` as its answer's class, so that kafka-python's connection
(``KafkaProtocol._process_response``: ``header.get_response_class()``, then its ``parse_header``
and ``decode``) hands the bytes to this decoder; the future then holds an :class:`OffsetFetchAnswer`.
A request sent at another version than 8 keeps kafka-python's own answer class (the caller reads
its ``groups`` with ``offsets_from``).

The v8 answer (Kafka's ``OffsetFetchResponse.json``; flexible: compact strings and arrays, an
unsigned varint of length + 1, and tagged fields after every struct)::

    ThrottleTimeMs int32
    Groups []: GroupId string
               Topics []: Name string
                          Partitions []: PartitionIndex int32, CommittedOffset int64,
                                         CommittedLeaderEpoch int32, Metadata nullable string,
                                         ErrorCode int16
               ErrorCode int16

Tagged fields are skipped (v8 defines none in this answer). A partition record with an empty or
null ``Metadata`` and no tagged field is 20 bytes: runs of such records are read with one
``struct`` call each, any other record one at a time.
"""

from __future__ import annotations

import struct
from itertools import repeat
from typing import Any, NamedTuple

from kpulse.kafka.batched_client import error_name
from kpulse.kafka.committed_offsets import MOVED_COORDINATOR, OFFSET_FETCH_VERSION, CommittedOffsets, GroupReadError

VERSION = 8
"""The OffsetFetch version this module decodes (``committed_offsets.OFFSET_FETCH_VERSION`` is sent)."""


class OffsetFetchAnswer(NamedTuple):
    """One decoded OffsetFetch v8 answer, as ``committed_offsets.offsets_from`` reads a generic one."""

    throttle_time_ms: int
    """Read by kafka-python's connection (client-side throttling)."""
    read: dict[str, CommittedOffsets]
    """group -> {(topic, partition): committed offset}; partitions with an error of their own or no
    committed offset (-1) are left out."""
    failed: dict[str, GroupReadError]
    """group -> why it could not be read."""
    moved: set[str]
    """The groups whose coordinator moved (a subset of ``failed``)."""


def decode_offset_fetch_v8(data: bytes | bytearray | memoryview) -> OffsetFetchAnswer:
    """The body of an OffsetFetch v8 answer (after the response header) -> its
    :class:`OffsetFetchAnswer`. Raises ValueError on bytes that are not one."""
    view = memoryview(data)
    try:
        answer, end = _decode(view)
    except (IndexError, struct.error) as error:
        raise ValueError(f"not an OffsetFetch v8 answer: {error}") from error
    if end != len(view):
        raise ValueError(f"not an OffsetFetch v8 answer: {len(view) - end} bytes left over")
    return answer


def _decode(view: memoryview) -> tuple[OffsetFetchAnswer, int]:
    read: dict[str, CommittedOffsets] = {}
    failed: dict[str, GroupReadError] = {}
    moved: set[str] = set()
    (throttle,) = _INT32.unpack_from(view, 0)
    groups, pos = _uvarint(view, 4)
    for _ in range(groups - 1):  # a compact array: length + 1 (0 would be null)
        group, pos = _string(view, pos)
        offsets: CommittedOffsets = {}
        topics, pos = _uvarint(view, pos)
        for _ in range(topics - 1):
            topic, pos = _string(view, pos)
            pos = _partitions(view, pos, topic, offsets)
            pos = _skip_tags(view, pos)
        (code,), pos = _INT16.unpack_from(view, pos), pos + 2
        pos = _skip_tags(view, pos)
        if code in MOVED_COORDINATOR:
            moved.add(group)
            failed[group] = GroupReadError(f"OffsetFetch: {MOVED_COORDINATOR[code]}")
        elif code:
            failed[group] = GroupReadError(f"OffsetFetch: {error_name(code)}")
        else:
            read[group] = offsets
    pos = _skip_tags(view, pos)
    return OffsetFetchAnswer(throttle, read, failed, moved), pos


def _partitions(view: memoryview, pos: int, topic: str, offsets: CommittedOffsets) -> int:
    """Reads one topic's partitions into ``offsets``; returns the position after them."""
    count, pos = _uvarint(view, pos)
    count -= 1  # a compact array: length + 1
    while count > 0:  # runs of up to _RUN records of 20 bytes, each with one struct call
        layout = _layout(min(count, _RUN))
        if pos + layout.size > len(view):
            break
        values = layout.unpack_from(view, pos)
        if max(values[3::6]) > 1 or any(values[5::6]):  # a Metadata or a tagged field: not 20 bytes
            break
        partitions, committed, codes = values[0::6], values[1::6], values[4::6]
        if not any(codes) and min(committed) >= 0:  # the usual answer: every partition committed
            offsets.update(zip(zip(repeat(topic), partitions), committed))
        else:
            offsets.update(((topic, partition), offset) for partition, offset, code
                           in zip(partitions, committed, codes) if code == 0 and offset >= 0)
        pos += layout.size
        count -= len(partitions)
    for _ in range(count):  # the records left, one at a time
        partition, offset = _PARTITION_HEAD.unpack_from(view, pos)
        length, pos = _uvarint(view, pos + 16)  # after the leader epoch
        pos += max(length - 1, 0)  # the metadata (0: null)
        (code,) = _INT16.unpack_from(view, pos)
        pos = _skip_tags(view, pos + 2)
        if code == 0 and offset >= 0:
            offsets[(topic, partition)] = offset
    return pos


def _layout(records: int) -> struct.Struct:
    """The layout of ``records`` 20-byte partition records (empty or null Metadata, no tagged field)."""
    layout = _RECORDS.get(records)
    if layout is None:
        layout = _RECORDS[records] = struct.Struct(">" + "iqiBhB" * records)
    return layout


def _uvarint(view: memoryview, pos: int) -> tuple[int, int]:
    byte = view[pos]
    if byte < 0x80:
        return byte, pos + 1
    value, shift = byte & 0x7F, 7
    while True:
        pos += 1
        byte = view[pos]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos + 1
        shift += 7
        if shift > 28:
            raise ValueError("a varint longer than 5 bytes")


def _string(view: memoryview, pos: int) -> tuple[str, int]:
    length, pos = _uvarint(view, pos)
    if length == 0:
        raise ValueError("a null string where the answer has none")
    end = pos + length - 1
    if end > len(view):
        raise ValueError("a string past the end of the answer")
    return str(view[pos:end], "utf-8"), end


def _skip_tags(view: memoryview, pos: int) -> int:
    count, pos = _uvarint(view, pos)
    for _ in range(count):
        _, pos = _uvarint(view, pos)
        size, pos = _uvarint(view, pos)
        pos += size
    if pos > len(view):
        raise ValueError("a tagged field past the end of the answer")
    return pos


_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_PARTITION_HEAD = struct.Struct(">iq")
_RUN = 64
"""The most partition records read with one struct call (so at most 64 layouts are kept)."""
_RECORDS: dict[int, struct.Struct] = {}
"""Record count -> the layout of that many 20-byte partition records."""


class NarrowOffsetFetchResponse:
    """Stands for ``OffsetFetchResponse[8]`` where kafka-python's connection decodes an answer:
    the header as kafka-python reads it, the body by :func:`decode_offset_fetch_v8`."""

    @staticmethod
    def parse_header(buffer: Any) -> Any:
        from kafka.protocol.consumer import OffsetFetchResponse

        return OffsetFetchResponse[VERSION].parse_header(buffer)

    @staticmethod
    def decode(buffer: Any) -> OffsetFetchAnswer:
        return decode_offset_fetch_v8(buffer.read())


def offset_fetch_request(group_ids: list[str]) -> Any:
    """An OffsetFetch request (``OFFSET_FETCH_VERSION``) for ``group_ids``, every topic of each;
    answered as an :class:`OffsetFetchAnswer` when sent at :data:`VERSION`."""
    request_class = _classes()[0]
    group = request_class.OffsetFetchRequestGroup
    return request_class(groups=[group(group_id=g, topics=None) for g in group_ids], require_stable=False,
                         min_version=OFFSET_FETCH_VERSION, max_version=OFFSET_FETCH_VERSION)


_CLASSES: tuple[Any, Any] | None = None


def _classes() -> tuple[Any, Any]:
    """The request and header classes (built once, on first use: kafka-python is imported late)."""
    global _CLASSES
    if _CLASSES is None:
        from kafka.protocol.api_header import RequestHeader
        from kafka.protocol.consumer import OffsetFetchRequest

        # kafka-python has no type information: its classes are Any to the checker, which knows
        # neither their class keywords (init) nor their slots (_header)
        class NarrowHeader(RequestHeader, init=False):  # type: ignore[misc, call-arg]
            __slots__ = ()

            def get_response_class(self) -> Any:
                if self.request_api_version == VERSION:
                    return NarrowOffsetFetchResponse
                return super().get_response_class()

        class NarrowOffsetFetchRequest(OffsetFetchRequest, init=False):  # type: ignore[misc, call-arg]
            __slots__ = ()

            def with_header(self, correlation_id: int = 0, client_id: str = "kafka-python") -> None:
                self._header = NarrowHeader(  # type: ignore[misc]
                    request_api_key=self.API_KEY, request_api_version=self.API_VERSION, correlation_id=correlation_id,
                    client_id=client_id)

        _CLASSES = (NarrowOffsetFetchRequest, NarrowHeader)
    return _CLASSES
