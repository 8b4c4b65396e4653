"""Reading the records of one partition from a start offset, for a person: ``kpulse records`` and
the dashboard's records view (the record a consumer group is stuck on). The pure halves are
``kpulse/records/`` (the model, the batch parsing, the display and access rules).

The read joins no group and commits nothing: it is a Fetch to the partition's leader, sent through
kafka-python's connections (``kpulse/kafka/batched_client.py``) as the batched reads are, and its
record batches are parsed here (``kpulse/records/batches.py``), so each record comes with what
its batch says (compression, producer id, epoch and sequence, transactional, control marker). What
it costs the brokers, per read:

- where the start comes from a group: one ListGroups per broker (which group, of which type), then
  one FindCoordinator and one OffsetFetch (a classic, consumer or streams group's committed offset)
  or one DescribeShareGroupOffsets (a share group's start offset);
- one Metadata request (the partition's leader);
- one ListOffsets for the log start and one for the high watermark, to the leader;
- Fetch requests to the leader, read-committed (so the answer lists the aborted transactions), with
  ``max_wait_ms`` 0 (the broker answers at once with what it has), until ``count`` records, the
  byte budget (each Fetch asks for at most what is left of it; Kafka returns a first batch larger
  than that whole) or the time budget is spent, or the last stable offset is reached. Usually one.

Every failure is an :attr:`RecordsRead.error` of one line, in ACL words where the brokers refused
(``not authorized: Read on topic orders``); this module raises nothing for Kafka's answers.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kpulse.config.model import ClusterConfig
from kpulse.kafka.authorization import refusal_text
from kpulse.kafka.batched_client import (
    BatchedClient, ConnectionManager, Unavailable, answer, error_name, one_line, remaining_ms, send,
)
from kpulse.kafka.committed_offsets import BatchedOffsetFetch
from kpulse.kafka.group_describe import GroupReader
from kpulse.kafka.group_model import GroupReadError
from kpulse.kafka.log_ends import EARLIEST, LATEST, STALE_LEADER, leaders_from, list_offsets_request
from kpulse.records.batches import AbortTracker, CorruptBatch, records_from
from kpulse.records.model import BoundName, RecordView, RecordsRead

FETCH_MAX_VERSION = 12
"""The last Fetch version that names topics (13 on name them by id)."""
READ_COMMITTED = 1
OFFSET_OUT_OF_RANGE = 1
UNKNOWN_TOPIC_OR_PARTITION = 3


class ReadFailed(Exception):
    """The read cannot go on: the one-line reason of :attr:`RecordsRead.error`."""


@dataclass
class _Read:
    """What the read has learnt so far (becomes the :class:`RecordsRead`)."""

    start_from: str
    requested_start: int | None = None
    log_start: int | None = None
    high_watermark: int | None = None
    last_stable_offset: int | None = None
    read_from: int | None = None
    records: list[RecordView] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    bound: BoundName | None = None
    error: str | None = None


def read_records(cluster: ClusterConfig, topic: str, partition: int, *, group: str | None = None,
                 offset: int | None = None, count: int | None = None, max_bytes: int | None = None,
                 timeout: float | None = None, client: BatchedClient | None = None,
                 clock: Callable[[], float] = time.monotonic) -> RecordsRead:
    """The records of ``topic``-``partition`` from ``offset`` (when given), else from ``group``'s
    committed offset (a share group's start offset), else from the log start. ``count``,
    ``max_bytes`` and ``timeout`` default to, and may not exceed, the cluster's ``records:`` bounds.
    Never raises for what Kafka answers (see the module). ``client``: a client to reuse (the
    caller closes it); else one is built and closed here."""
    bounds = cluster.records
    count = max(1, min(count or bounds.max_records, bounds.max_records))
    max_bytes = max(1, min(max_bytes or bounds.max_bytes, bounds.max_bytes))
    timeout = min(timeout or bounds.timeout_seconds, bounds.timeout_seconds)
    own_client = client is None
    batched = client or BatchedClient(cluster, client_id="kpulse-records", fallback_note=None, clock=clock)
    deadline = batched.clock() + timeout
    read = _Read("offset given" if offset is not None else f"committed offset of group {group}" if group
                 else "log start")
    try:
        if offset is not None:
            if offset < 0:
                raise ReadFailed(f"offset {offset} is negative: offsets start at 0")
            read.requested_start = offset
        elif group is not None:
            _group_start(batched, read, group, topic, partition, deadline)
        manager = _manager(batched, deadline)
        manager.run(_fetch, manager, batched, read, topic, partition, count, max_bytes, deadline)
    except ReadFailed as failure:
        read.error = str(failure)
    except Unavailable as reason:
        read.error = f"cannot reach cluster {cluster.name!r} ({cluster.bootstrap_servers}): {reason}"
    except Exception as error:  # noqa: BLE001 - a person reads this: one line, never a traceback
        read.error = f"the read of {topic}-{partition} failed: {one_line(error)}"
    finally:
        if own_client:
            batched.close()
    records = tuple(read.records)
    return RecordsRead(
        cluster=cluster.name, topic=topic, partition=partition, start_from=read.start_from,
        requested_start=read.requested_start, log_start=read.log_start, high_watermark=read.high_watermark,
        last_stable_offset=read.last_stable_offset, read_from=read.read_from,
        next_offset=records[-1].offset + 1 if records else read.read_from,
        records=records, notes=tuple(read.notes), bound=read.bound, error=read.error)


def _manager(client: BatchedClient, deadline: float) -> ConnectionManager:
    from kafka.protocol.consumer import FetchRequest, ListOffsetsRequest
    from kafka.protocol.metadata import MetadataRequest

    return client.manager(max(0.001, deadline - client.clock()),
                          {FetchRequest: 4, ListOffsetsRequest: 1, MetadataRequest: 1})


def _group_start(client: BatchedClient, read: _Read, group: str, topic: str, partition: int,
                 deadline: float) -> None:
    """``read.requested_start`` from ``group``: its committed offset on the partition (classic,
    consumer, streams) or its share-partition start offset (share); the log start, with a note,
    when it has none there."""
    reader = GroupReader(client)
    listed = reader.list_groups(_left(client, deadline))
    if listed is None:
        raise Unavailable(client.unavailable_reason or "no broker answered ListGroups")
    listing = next((g for g in listed if g.group_id == group), None)
    if listing is not None and listing.type == "share":
        read.start_from = f"start offset of share group {group}"
        answers = reader.share_offsets([group], _left(client, deadline))
        shared = answers.get(group)
        if isinstance(shared, GroupReadError) or shared is None:
            raise ReadFailed(_group_error(group, str(shared or "no answer")))
        start = next((o for o in shared if (o.topic, o.partition) == (topic, partition)), None)
        if start is None or start.start_offset is None:
            read.start_from = f"log start (share group {group} has no start offset on {topic}-{partition})"
            return
        read.requested_start = start.start_offset
        return
    committed = BatchedOffsetFetch(client).read([group], _left(client, deadline))
    if committed is None:
        raise Unavailable(client.unavailable_reason or "OffsetFetch could not be sent")
    offsets = committed.get(group)
    if isinstance(offsets, Exception) or offsets is None:
        raise ReadFailed(_group_error(group, str(offsets or "no answer")))
    if listing is None:  # listed nowhere, yet readable: it has no offsets either, so no group at all
        if not offsets:
            raise ReadFailed(f"group {group!r} does not exist on this cluster")
    position = offsets.get((topic, partition))
    if position is None or position < 0:
        read.start_from = f"log start (group {group} has no committed offset on {topic}-{partition})"
        return
    read.requested_start = position


def _group_error(group: str, error: str) -> str:
    return refusal_text(error, "Describe", "group", group) or f"group {group!r}: {error}"


def _left(client: BatchedClient, deadline: float) -> float:
    left = deadline - client.clock()
    if left <= 0:
        raise ReadFailed("the time budget of the read was spent before any record was fetched")
    return left


async def _fetch(manager: ConnectionManager, client: BatchedClient, read: _Read, topic: str, partition: int,
                 count: int, max_bytes: int, deadline: float) -> None:
    leader = await _leader(manager, client, topic, partition, deadline)
    await _log_bounds(manager, client, read, leader, topic, partition, deadline)
    assert read.log_start is not None and read.high_watermark is not None  # else _log_bounds raised
    start = read.requested_start
    if start is None:
        start = read.requested_start = read.log_start
    elif start < read.log_start:
        read.notes.append(f"offset {start} is before the log start {read.log_start}: records {start} to "
                          f"{read.log_start - 1} were deleted (retention or DeleteRecords); reading from "
                          f"{read.log_start}")
        start = read.log_start
    elif start > read.high_watermark:
        read.notes.append(f"offset {start} is past the log end {read.high_watermark}: no record there")
        read.bound = "end of log"
        return
    read.read_from = start
    tracker = AbortTracker()
    position, budget = start, max_bytes
    while True:
        if len(read.records) >= count:
            read.bound = "count"
            return
        if budget <= 0:
            read.bound = "bytes"
            return
        if read.last_stable_offset is not None and position >= read.last_stable_offset:
            read.bound = "end of log"
            _note_open_transaction(read, position)
            return
        if client.clock() >= deadline:
            read.bound = "time"
            return
        data = await _fetch_once(manager, client, leader, topic, partition, position, budget, deadline)
        read.high_watermark = data.high_watermark
        read.last_stable_offset = data.last_stable_offset if data.last_stable_offset >= 0 else data.high_watermark
        if data.log_start_offset >= 0:
            read.log_start = data.log_start_offset
        tracker.add((t.producer_id, t.first_offset) for t in data.aborted_transactions or ())
        raw = bytes(data.records or b"")
        budget -= len(raw)
        try:
            fetched = records_from(_batches(raw), position, tracker)
        except CorruptBatch as corrupt:
            read.records.extend(corrupt.args[1][:count - len(read.records)])
            raise ReadFailed(str(corrupt.args[0])) from corrupt
        read.records.extend(fetched[:count - len(read.records)])
        if not fetched:
            if raw:  # only batches before the position, or markers of no record: cannot advance
                raise ReadFailed(f"the Fetch at offset {position} returned no record at or after it")
            read.bound = "end of log"
            _note_open_transaction(read, position)
            return
        position = fetched[-1].offset + 1


def _note_open_transaction(read: _Read, position: int) -> None:
    lso, hw = read.last_stable_offset, read.high_watermark
    if lso is not None and hw is not None and lso < hw and position >= lso:
        read.notes.append(f"offsets {lso} to {hw - 1} are after the last stable offset {lso}: a transaction "
                          "there is still open, so a read-committed consumer sees them only when it ends; not read")


def _batches(raw: bytes) -> Any:
    from kafka.record.memory_records import MemoryRecords

    return MemoryRecords(raw)


async def _leader(manager: ConnectionManager, client: BatchedClient, topic: str, partition: int,
                  deadline: float) -> int:
    from kafka.protocol.metadata import MetadataRequest

    request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)],
                              allow_auto_topic_creation=False)
    try:
        response = await answer(send(manager, request, None, remaining_ms(deadline, client.clock)))
    except Exception as error:  # noqa: BLE001 - one line
        raise ReadFailed(f"Metadata failed: {one_line(error)}") from error
    for entry in response.topics:
        if entry.name == topic and entry.error_code:
            if entry.error_code == UNKNOWN_TOPIC_OR_PARTITION:
                raise ReadFailed(f"topic {topic!r} does not exist on this cluster")
            raise ReadFailed(refusal_text(entry.error_code, "Describe", "topic", topic)
                             or f"topic {topic!r}: Metadata: {error_name(entry.error_code)}")
    leaders, topic_errors, partition_errors = leaders_from(response.topics, {topic})
    if (topic, partition) in leaders:
        leader = leaders[(topic, partition)]
        if manager.cluster.broker_metadata(leader) is None:  # a broker that joined since the client connected
            try:
                await manager.cluster.refresh_metadata()
            except Exception as error:  # noqa: BLE001 - one line
                raise ReadFailed(f"the broker list could not be read: {one_line(error)}") from error
        return leader
    if (topic, partition) in partition_errors:
        raise ReadFailed(f"partition {topic}-{partition} has {partition_errors[(topic, partition)]}")
    count = sum(1 for key in leaders if key[0] == topic) + sum(1 for key in partition_errors if key[0] == topic)
    if not count:
        raise ReadFailed(f"topic {topic!r} does not exist on this cluster")
    raise ReadFailed(f"topic {topic!r} has no partition {partition} (it has {count}: 0 to {count - 1})")


async def _log_bounds(manager: ConnectionManager, client: BatchedClient, read: _Read, leader: int, topic: str,
                      partition: int, deadline: float) -> None:
    """The log start and high watermark, one ListOffsets each, sent together."""
    key = [(topic, partition)]
    sent = [send(manager, list_offsets_request(key, which), leader, remaining_ms(deadline, client.clock))
            for which in (EARLIEST, LATEST)]
    found: list[int] = []
    for which, future in zip(("log start", "log end"), sent):
        try:
            response = await answer(future)
        except Exception as error:  # noqa: BLE001 - one line
            raise ReadFailed(f"ListOffsets ({which}) to broker {leader}: {one_line(error)}") from error
        entry = response.topics[0].partitions[0]
        if entry.error_code:
            raise ReadFailed(_partition_error(entry.error_code, "Describe", topic, partition, "ListOffsets"))
        found.append(entry.offset)
    read.log_start, read.high_watermark = found


async def _fetch_once(manager: ConnectionManager, client: BatchedClient, leader: int, topic: str, partition: int,
                      position: int, budget: int, deadline: float) -> Any:
    from kafka.protocol.consumer import FetchRequest

    request = FetchRequest(
        replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=budget, isolation_level=READ_COMMITTED,
        session_id=0, session_epoch=-1, rack_id="",
        topics=[FetchRequest.FetchTopic(topic=topic, partitions=[FetchRequest.FetchTopic.FetchPartition(
            partition=partition, current_leader_epoch=-1, fetch_offset=position, last_fetched_epoch=-1,
            log_start_offset=-1, partition_max_bytes=budget)])],
        forgotten_topics_data=[], min_version=4, max_version=FETCH_MAX_VERSION)
    try:
        response = await answer(send(manager, request, leader, remaining_ms(deadline, client.clock)))
    except Exception as error:  # noqa: BLE001 - one line
        raise ReadFailed(f"Fetch to broker {leader}: {one_line(error)}") from error
    if getattr(response, "error_code", 0):
        raise ReadFailed(_partition_error(response.error_code, "Read", topic, partition, "Fetch"))
    data = response.responses[0].partitions[0]
    if data.error_code:
        raise ReadFailed(_partition_error(data.error_code, "Read", topic, partition, "Fetch"))
    return data


def _partition_error(code: int, operation: str, topic: str, partition: int, call: str) -> str:
    refused = refusal_text(code, operation, "topic", topic)
    if refused:
        return refused
    if code in STALE_LEADER:
        return f"{call}: the leader of {topic}-{partition} moved ({STALE_LEADER[code]}); read again"
    if code == OFFSET_OUT_OF_RANGE:
        return f"{call}: the offset is out of range of {topic}-{partition} (retention deleted records meanwhile); read again"
    return f"{call} of {topic}-{partition}: {error_name(code)}"
