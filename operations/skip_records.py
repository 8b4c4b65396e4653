"""Skipping records (:mod:`operations.skip_plan`): the planner (reads the cluster, changes nothing)
and the executor (re-checks, then applies through the group type's reset executor, which commits,
reads back and re-checks again).

The group is read with the group reader (every type, with its members); its committed offset with
the group requests (kafka-python, to the coordinator; never librdkafka's offset calls, #5040); the
log bounds with the Admin API. The skipped record's timestamp (for the plan and the audit record;
never its key, headers or value) is read with the records reader, which joins nothing and commits
nothing (:func:`record_stamp`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from kpulse.config.model import ClusterConfig
from kpulse.kafka.record_fetch import read_records
from kpulse.records.model import RecordsRead
from operations import kafka_reads
from operations.errors import BadInput, Refused
from operations.group_ops import Read, execute_streams_group_reset, read_group_now
from operations.group_plans import INACTIVE_STATES
from operations.group_requests import GroupRequests
from operations.internal_topics import refuse_internal_topics
from operations.offset_reset import PartitionOutcome, ResetOutcome, execute_offset_reset, refuse_empty_id
from operations.skip_plan import SKIP_GROUP_TYPES, SkipRecordsPlan, share_group_refusal, skip_target, stop_then_skip

SHARE_DELIVERY_SETTINGS = ("share.delivery.count.limit", "share.record.lock.duration.ms")
"""The share group configs (Kafka 4.3) that decide how often, and how long apart, a record is delivered."""


@dataclass(frozen=True)
class RecordStamp:
    """Where a record is and when it was written: no key, header or value."""

    offset: int
    """The offset asked for."""
    timestamp_ms: int | None
    timestamp_type: str | None
    """``CreateTime`` or ``LogAppendTime``."""
    note: str | None = None
    """Why there is no timestamp, or what the offset holds instead of a data record."""


def record_stamp(cluster: ClusterConfig, topic: str, partition: int, offset: int,
                 reader: Callable[..., RecordsRead] = read_records) -> RecordStamp:
    """The timestamp of the record at ``offset``, through the records reader
    (:func:`kpulse.kafka.record_fetch.read_records`: no group joined, nothing committed, bounded by
    the cluster's ``records:`` config). Only the first record read is looked at, and only its
    offset, kind and timestamp."""
    read = reader(cluster, topic, partition, offset=offset, count=1)
    if read.error is not None:
        return RecordStamp(offset, None, None, f"not readable: {read.error}")
    if not read.records:
        return RecordStamp(offset, None, None, "; ".join((f"no record read at offset {offset}", *read.notes)))
    record = read.records[0]
    if record.offset != offset:
        return RecordStamp(offset, None, None, f"offset {offset} holds no data record (compacted away, or a "
                                               f"transaction marker); the next record is at {record.offset}")
    if record.is_control:
        return RecordStamp(offset, None, None, f"offset {offset} holds no data record: it is a transaction "
                                               f"marker ({record.control})")
    stamp = None if record.timestamp is None else round(record.timestamp.timestamp() * 1000)
    return RecordStamp(offset, stamp, record.timestamp_type)


def plan_skip_records(admin, requests: GroupRequests, read: Read, cluster: str, group_id: str, topic: str,
                      partition: int, to_offset: int | None = None, *, expect_from: int | None = None,
                      stamp: Callable[[str, int, int], RecordStamp],
                      share_settings: Callable[[str], dict[str, tuple[str | None, str]]],
                      clock: Callable[[], float] = time.time, include_internal: bool = False) -> SkipRecordsPlan:
    """What skipping from the committed offset of ``topic``-``partition`` to the next offset (or to
    ``to_offset``) would do. ``expect_from``: the committed offset the person saw (the records
    view's); refused when it is no longer the committed offset. ``stamp(topic, partition,
    offset)`` reads the skipped record's timestamp; ``share_settings(group)`` a share group's
    delivery settings (for the refusal that says why it needs no skip).

    :class:`BadInput`: unknown group, topic or partition, a share group, nothing to skip, an offset
    outside the records; :class:`Refused`: the group has members (:func:`stop_then_skip`, checked
    before the offsets, as every other operation on a group)."""
    refuse_empty_id(group_id, "group id")
    listing, group = read_group_now(read, group_id)
    if listing.type == "share":
        raise share_group_refusal(group_id, share_settings(group_id))
    if listing.type not in SKIP_GROUP_TYPES:
        raise BadInput(f"group {group_id!r} is a {listing.type or 'group of unknown type'}: kpulse skips records "
                       f"of {', '.join(SKIP_GROUP_TYPES)} groups")
    refuse_internal_topics([topic], include_internal, "skipping records")
    where = _partition_name(admin, topic, partition)
    _refuse_members(group, listing.type, topic, partition, to_offset)
    committed = requests.committed(group_id, require_stable=False).get((topic, partition))
    if expect_from is not None and committed != expect_from:
        raise Refused(f"{where}: the committed offset of group {group_id!r} is {committed} now, not {expect_from} as "
                      "read; read the records again (nothing changed)")
    log_start = kafka_reads.log_offsets(admin, [(topic, partition)], "earliest")[(topic, partition)]
    log_end = kafka_reads.log_offsets(admin, [(topic, partition)], "latest")[(topic, partition)]
    new = skip_target(where, committed, log_start, log_end, to_offset)
    assert committed is not None  # skip_target refuses a partition without one
    record = stamp(topic, partition, committed)
    warnings = () if record.note is None else (f"{where} offset {committed}: {record.note}",)
    return SkipRecordsPlan(cluster=cluster, group_id=group_id, group_type=listing.type, group_state=group.state,
                           topic=topic, partition=partition, from_offset=committed, to_offset=new,
                           log_start=log_start, log_end=log_end, record_timestamp=record.timestamp_ms,
                           planned_at=clock(), record_timestamp_type=record.timestamp_type, record_note=record.note,
                           warnings=warnings)


def execute_skip_records(admin, requests: GroupRequests, read: Read, plan: SkipRecordsPlan, *,
                         include_internal: bool = False,
                         list_groups: Callable[[], dict[str, kafka_reads.GroupListing]] | None = None) -> ResetOutcome:
    """Re-check (same group type, no member), then apply ``plan`` through the reset executor of its
    group type, which checks again (group stopped, offset inside the log and still the planned
    one), commits the one offset and reads it back."""
    listing, group = read_group_now(read, plan.group_id)
    if listing.type != plan.group_type:
        raise Refused(f"group {plan.group_id!r} is a {listing.type} group now, planned as {plan.group_type}; "
                      "plan again (nothing changed)")
    _refuse_members(group, listing.type, plan.topic, plan.partition, plan.to_offset if plan.skipped != 1 else None)
    if plan.group_type == "streams":
        outcome = execute_streams_group_reset(admin, requests, read, plan.as_streams_group_plan(),
                                              include_internal=include_internal)
        rows = tuple(PartitionOutcome(r["topic"], r["partition"], r["before"], r["new"], r["after"], r["error"])
                     for r in outcome.partitions)
        return ResetOutcome(outcome.result, rows, outcome.error)
    return execute_offset_reset(admin, requests, plan.as_reset_plan(), include_internal=include_internal,
                                list_groups=list_groups)


def share_delivery_settings(admin, group_id: str) -> dict[str, tuple[str | None, str]]:
    """A share group's delivery settings (:data:`SHARE_DELIVERY_SETTINGS`) as DescribeConfigs on the
    group answers them: ``name -> (value, where from)``; ``(None, reason)`` when not readable."""
    from confluent_kafka.admin import ConfigResource, ResourceType

    try:
        resource = ConfigResource(ResourceType.GROUP, group_id)
        entries = admin.describe_configs([resource], request_timeout=kafka_reads.TIMEOUT)[resource].result(
            timeout=kafka_reads.TIMEOUT)
    except Exception as error:  # noqa: BLE001 - the refusal says what could not be read
        from kpulse.kafka.clients import error_text

        return {name: (None, f"not readable: {error_text(error)}") for name in SHARE_DELIVERY_SETTINGS}
    found: dict[str, tuple[str | None, str]] = {}
    for name in SHARE_DELIVERY_SETTINGS:
        entry = entries.get(name)
        if entry is None:
            found[name] = (None, "not in the group's configs")
        else:
            found[name] = (entry.value, "the broker's default" if entry.is_default else "the group's config")
    return found


def _partition_name(admin, topic: str, partition: int) -> str:
    """``topic-partition``, once the topic (did-you-mean) and the partition are known to exist."""
    partitions = kafka_reads.topic_partitions(admin, [topic])[topic]
    if partition not in partitions:
        raise BadInput(f"partition {topic}-{partition} does not exist (topic {topic!r} has partitions "
                       f"0..{max(partitions)})" if partitions else f"topic {topic!r} has no partitions")
    return f"{topic}-{partition}"


def _refuse_members(group, group_type: str, topic: str, partition: int, to_offset: int | None) -> None:
    if group.state in INACTIVE_STATES and not group.members:
        return
    members = [f"{m.client_id}@{m.client_host.lstrip('/')}" for m in group.members]
    raise stop_then_skip(group.group_id, group_type, group.state, members, topic, partition, to_offset)
