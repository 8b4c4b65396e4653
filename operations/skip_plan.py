"""Skipping records: pure data and pure decisions, no I/O (the planner and executor that read the
cluster are :mod:`operations.skip_records`).

A skip moves one partition's committed offset of one group forward: from the committed offset (the
record the consumer is stuck on) to the next offset, as ``kafka-consumer-groups --reset-offsets
--group G --topic T:P --shift-by 1`` does, or to an offset N after it, as ``--to-offset N``, and
nothing else. It applies to groups that commit offsets (classic and consumer groups, a classic
Streams application's group, a Streams group's input partitions) and is executed by their reset
executors (:func:`operations.offset_reset.execute_offset_reset`,
:func:`operations.group_ops.execute_streams_group_reset`) from the plan they take
(:meth:`SkipRecordsPlan.as_reset_plan`, :meth:`SkipRecordsPlan.as_streams_group_plan`).

A share group (KIP-932) has no skip: a record its consumers fail on is delivered again until the
group's delivery count limit, then archived (:func:`share_group_refusal`).
"""

from __future__ import annotations

import json
import shlex
from dataclasses import asdict, dataclass, field
from typing import Any

from operations.errors import BadInput, Refused
from operations.group_plans import StreamsGroupResetPlan
from operations.numbers import PARTITION
from operations.offset_plan import GroupPlan, PartitionReset, ResetPlan, Scope, Strategy, non_empty_id
from operations.plan_fields import PlanFields

SKIP_GROUP_TYPES = ("classic", "consumer", "streams")
"""The group types whose committed offset a skip moves."""


@dataclass(frozen=True)
class SkipRecordsPlan(GroupPlan):
    """What a skip would do (module docstring); changes nothing. The audit record keeps it: the
    offsets and the skipped record's timestamp, never its contents."""

    group_type: str
    """``classic``, ``consumer`` or ``streams`` (:data:`SKIP_GROUP_TYPES`)."""
    group_state: str
    topic: str
    partition: int
    from_offset: int
    """The committed offset when planned: the first record skipped (where the consumer is stuck)."""
    to_offset: int
    """The new committed offset: the consumer resumes at this record."""
    log_start: int
    log_end: int
    record_timestamp: int | None
    """Epoch milliseconds of the record at ``from_offset``; None when it could not be read
    (``record_note`` says why)."""
    planned_at: float
    """Epoch seconds."""
    record_timestamp_type: str | None = None
    """``CreateTime`` or ``LogAppendTime`` (the topic's ``message.timestamp.type``)."""
    record_note: str | None = None
    """Why ``record_timestamp`` is None, or what the offset holds instead of a data record."""
    warnings: tuple[str, ...] = field(default=())

    @property
    def skipped(self) -> int:
        """Offsets the group will never read: ``to_offset - from_offset``."""
        return self.to_offset - self.from_offset

    @property
    def lag_before(self) -> int:
        return max(0, self.log_end - self.from_offset)

    @property
    def lag_after(self) -> int:
        return max(0, self.log_end - self.to_offset)

    def partition_reset(self) -> PartitionReset:
        """The one partition as the reset plans have it."""
        return PartitionReset(topic=self.topic, partition=self.partition, current=self.from_offset,
                              log_start=self.log_start, log_end=self.log_end, new=self.to_offset,
                              requested=self.to_offset)

    def strategy(self) -> Strategy:
        return Strategy("to-offset", str(self.to_offset))

    def scope(self) -> Scope:
        return Scope(topics=((self.topic, (self.partition,)),))

    def as_reset_plan(self) -> ResetPlan:
        """The consumer group reset that applies it (classic and consumer groups)."""
        return ResetPlan(cluster=self.cluster, group_id=self.group_id, group_state=self.group_state,
                         strategy=self.strategy(), scope=self.scope(), partitions=(self.partition_reset(),),
                         planned_at=self.planned_at)

    def as_streams_group_plan(self) -> StreamsGroupResetPlan:
        """The Streams group reset that applies it (no internal topic deleted)."""
        return StreamsGroupResetPlan(cluster=self.cluster, group_id=self.group_id, group_state=self.group_state,
                                     strategy=self.strategy(), scope=self.scope(),
                                     partitions=(self.partition_reset(),), delete_topics=(),
                                     planned_at=self.planned_at)

    def official_command(self) -> str:
        """The official tool's dry run that plans the same offset."""
        how = "--shift-by 1" if self.skipped == 1 else f"--to-offset {self.to_offset}"
        tool = "kafka-streams-groups" if self.group_type == "streams" else "kafka-consumer-groups"
        topic_flag = "--input-topic" if self.group_type == "streams" else "--topic"
        return (f"{tool} --reset-offsets --group {self.group_id} {topic_flag} {self.topic}:{self.partition} "
                f"{how} --dry-run")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "skipped": self.skipped}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_dict(cls, data: object) -> SkipRecordsPlan:
        """The plan ``to_dict`` wrote; every field's type checked (:mod:`operations.plan_fields`)."""
        fields = PlanFields(data, "a kpulse skip-records plan")
        group_type = fields.string("group_type")
        if group_type not in SKIP_GROUP_TYPES:
            fields.fail("group_type", f"expected one of {', '.join(SKIP_GROUP_TYPES)}")
        plan = cls(cluster=fields.string("cluster"), group_id=non_empty_id(fields, "group_id"), group_type=group_type,
                   group_state=fields.string("group_state"), topic=fields.string("topic"),
                   partition=fields.integer("partition", bounds=PARTITION),
                   from_offset=fields.integer("from_offset"), to_offset=fields.integer("to_offset"),
                   log_start=fields.integer("log_start"), log_end=fields.integer("log_end"),
                   record_timestamp=fields.integer("record_timestamp", optional=True),
                   planned_at=fields.number("planned_at"),
                   record_timestamp_type=fields.string("record_timestamp_type", optional=True),
                   record_note=fields.string("record_note", optional=True),
                   warnings=tuple(fields.strings("warnings", optional=True)))
        if plan.to_offset <= plan.from_offset:
            fields.fail("to_offset", f"{plan.to_offset} is not after from_offset {plan.from_offset}")
        return plan


# --- pure decisions --------------------------------------------------------------------------------

def skip_target(where: str, committed: int | None, log_start: int, log_end: int, to_offset: int | None) -> int:
    """The new committed offset of a skip on partition ``where`` (``orders-0``): ``committed + 1``
    (``--shift-by 1``) or ``to_offset``, which must lie after the committed offset and at most at
    the log end (the records the consumer has not read). :class:`BadInput` when there is nothing to
    skip or the offset is outside those records."""
    if committed is None:
        raise BadInput(f"{where}: the group has no committed offset there, so no record it is stuck on; "
                       "nothing to skip (kpulse reset-offsets sets an offset)")
    if committed < log_start:
        raise BadInput(f"{where}: the committed offset {committed} is before the log start {log_start} (deleted by "
                       "retention): the consumer's next fetch is out of range and auto.offset.reset decides; "
                       "nothing to skip (kpulse reset-offsets --to-earliest moves it)")
    if committed >= log_end:
        raise BadInput(f"{where}: the committed offset {committed} is the log end: no record to skip")
    if to_offset is None:
        return committed + 1
    if not committed < to_offset <= log_end:
        raise BadInput(f"{where}: offset {to_offset} is outside the records after the committed offset "
                       f"({committed + 1}..{log_end}); a skip moves forward within them")
    return to_offset


def stop_then_skip(group_id: str, group_type: str, state: str, members: list[str], topic: str, partition: int,
                   to_offset: int | None) -> Refused:
    """The refusal of a skip while the group has members: one line naming them and the sequence
    (stop the consumers, skip, start them again)."""
    shown = ", ".join(members[:3]) + (f" and {len(members) - 3} more" if len(members) > 3 else "")
    command = (f"kpulse skip-records --group {shlex.quote(group_id)} --topic {shlex.quote(topic)} "
               f"--partition {partition}" + (f" --to-offset {to_offset}" if to_offset is not None else "")
               + " --execute")
    return Refused(f"cannot skip records of group {group_id!r} on {topic}-{partition}: the {group_type} group is "
                   f"{state} with {len(members)} active member(s)" + (f" ({shown})" if shown else "")
                   + f"; nothing changed. Stop its consumers (the group must be Empty), run {command}, then start "
                   "them again: they resume after the skipped record(s)")


def share_group_refusal(group_id: str, settings: dict[str, tuple[str | None, str]]) -> BadInput:
    """Why a share group has no skip, with its delivery settings (``name -> (value or None, where
    from)``): a record its consumers fail on is delivered again until the delivery count limit, then
    archived, while the other records go on being delivered."""
    def shown(name: str) -> str:
        value, source = settings.get(name, (None, "not readable"))
        return f"{name}={value if value is not None else 'unknown'} ({source})"

    return BadInput(f"group {group_id!r} is a share group: it needs no skip. A record its consumers fail on (released, "
                    f"or its acquisition lock expires) is delivered again at most {shown('share.delivery.count.limit')} "
                    f"times, each lock {shown('share.record.lock.duration.ms')}, then archived and never delivered "
                    "again, while other records keep flowing; a consumer archives one at once by acknowledging it "
                    "REJECT. To move the start offset itself: kpulse reset-share-group (the group must be Empty)")
