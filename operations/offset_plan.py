"""Consumer group offset reset plans: pure data and pure planning, no I/O.

Semantics are those of ``kafka-consumer-groups --reset-offsets`` (Kafka 4.x):

- scope ``--all-topics`` = the partitions the group has committed offsets for; ``--topic t`` =
  every partition of ``t``; ``--topic t:0,2`` = those partitions; ``--from-file`` ignores the
  scope and uses the file's partitions;
- to-earliest / to-latest = log start / log end; to-current = the committed offset, or the log
  end for a partition without one; to-offset, shift-by and from-file are clamped to
  [log start, log end]; shift-by needs a committed offset; to-datetime / by-duration = the first
  offset whose timestamp is at or after the time, or the log end when there is none.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict, dataclass, field
from typing import Any, TypedDict

from operations.errors import BadInput
from operations.numbers import PARTITION, parse_integer, parse_integers
from operations.plan_fields import PlanFields

STRATEGIES = ("to-earliest", "to-latest", "to-current", "to-offset", "shift-by", "to-datetime",
              "by-duration", "from-file")
"""Reset strategies, named as the official tool's flags."""
TIMESTAMP_STRATEGIES = ("to-datetime", "by-duration")
CLAMPED_STRATEGIES = ("to-offset", "shift-by", "from-file")

TopicPartition = tuple[str, int]
TopicChoice = tuple[str, tuple[int, ...] | None]
"""A topic and its chosen partitions, or None for all of them."""


@dataclass(frozen=True)
class Strategy:
    """How the new offsets are chosen."""

    name: str
    """One of :data:`STRATEGIES`."""
    value: str | None = None
    """The flag's argument as given: an offset, a shift, a datetime, a duration, a file name."""

    def __post_init__(self) -> None:
        if self.name not in STRATEGIES:
            raise BadInput(f"unknown reset strategy {self.name!r}; one of {', '.join(STRATEGIES)}")

    def describe(self) -> str:
        return f"--{self.name}" + (f" {self.value}" if self.value is not None else "")


@dataclass(frozen=True)
class Scope:
    """Which partitions: every partition the group has offsets for, or named topics."""

    all_topics: bool = False
    topics: tuple[TopicChoice, ...] = ()
    """(topic, chosen partitions or None for all of them)."""

    @classmethod
    def parse(cls, all_topics: bool, topic_args: list[str] | None) -> Scope:
        """From the official tool's flags: ``--all-topics`` or ``--topic t`` / ``--topic t:0,1``."""
        topics: list[TopicChoice] = []
        for arg in topic_args or []:
            name, colon, numbers = arg.partition(":")
            if not name:
                raise BadInput(f"invalid --topic {arg!r}: expected TOPIC or TOPIC:P1,P2")
            if not colon:
                topics.append((name, None))
                continue
            partitions = tuple(sorted(set(parse_integers(numbers, f"partitions in --topic {arg!r}"))))
            if not partitions:
                raise BadInput(f"invalid partitions in --topic {arg!r}: expected TOPIC:0,1,2")
            topics.append((name, partitions))
        return cls(all_topics=all_topics, topics=tuple(topics))

    def describe(self) -> str:
        if self.all_topics:
            return "all topics"
        return ", ".join(t if p is None else f"{t}:{','.join(map(str, p))}" for t, p in self.topics)


@dataclass(frozen=True)
class PartitionReset:
    """One partition of a plan."""

    topic: str
    partition: int
    current: int | None
    """Committed offset when planned; None when the group has none for this partition."""
    log_start: int
    log_end: int
    new: int
    """The offset the group will resume from."""
    requested: int | None = None
    """What the strategy asked for before clamping (to-offset, shift-by, from-file)."""

    @property
    def lag_before(self) -> int | None:
        return None if self.current is None else max(0, self.log_end - self.current)

    @property
    def lag_after(self) -> int:
        return max(0, self.log_end - self.new)

    @property
    def replayed(self) -> int:
        """Messages the group will read again (the offset moves back)."""
        return max(0, self.current - self.new) if self.current is not None else 0

    @property
    def skipped(self) -> int:
        """Messages the group will never read (the offset moves forward)."""
        return max(0, self.new - self.current) if self.current is not None else 0

    @property
    def clamped(self) -> bool:
        return self.requested is not None and self.requested != self.new


@dataclass(frozen=True)
class GroupPlan:
    """What every plan on one group starts with; the plans of :mod:`operations.group_plans` and
    :class:`ResetPlan` extend it."""

    cluster: str
    group_id: str

    @property
    def target(self) -> str:
        return f"group {self.group_id}"


@dataclass(frozen=True)
class GroupOffsetsPlan(GroupPlan):
    """A plan that moves a group's offsets: :class:`ResetPlan`,
    :class:`operations.group_plans.StreamsGroupResetPlan` and
    :class:`operations.group_plans.ShareResetPlan`; each adds ``planned_at`` and what is its own."""

    group_state: str
    strategy: Strategy
    scope: Scope
    partitions: tuple[PartitionReset, ...]

    def new_offsets(self) -> dict[TopicPartition, int]:
        return {(p.topic, p.partition): p.new for p in self.partitions}

    def to_csv(self) -> str:
        """The official tools' single-group export format: ``topic,partition,offset`` lines."""
        return "".join(f"{p.topic},{p.partition},{p.new}\n" for p in self.partitions)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "scope": scope_dict(self.scope)}


class GroupOffsetsFields(TypedDict):
    """The fields of :class:`GroupOffsetsPlan`, as a saved plan gives them."""

    cluster: str
    group_id: str
    group_state: str
    strategy: Strategy
    scope: Scope
    partitions: tuple[PartitionReset, ...]


def group_offsets_fields(fields: PlanFields) -> GroupOffsetsFields:
    """The :class:`GroupOffsetsPlan` fields of a saved plan, every one checked."""
    strategy = fields.section("strategy")
    return GroupOffsetsFields(cluster=fields.string("cluster"), group_id=non_empty_id(fields, "group_id"),
                              group_state=fields.string("group_state"), strategy=strategy_from(strategy),
                              scope=scope_from(fields.section("scope")), partitions=partition_rows(fields, "partitions"))


@dataclass(frozen=True)
class ResetPlan(GroupOffsetsPlan):
    """What a reset would do; changes nothing. Export with :meth:`to_json` / :meth:`to_csv`."""

    planned_at: float
    """Epoch seconds."""
    warnings: tuple[str, ...] = field(default=())

    @property
    def total_replayed(self) -> int:
        return sum(p.replayed for p in self.partitions)

    @property
    def total_skipped(self) -> int:
        return sum(p.skipped for p in self.partitions)

    def to_dict(self) -> dict[str, Any]:
        plain = super().to_dict()
        for row, partition in zip(plain["partitions"], self.partitions):
            row.update(lag_before=partition.lag_before, lag_after=partition.lag_after,
                       replayed=partition.replayed, skipped=partition.skipped)
        return plain

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_dict(cls, data: object) -> ResetPlan:
        """The plan ``to_dict`` wrote; every field's type checked (:mod:`operations.plan_fields`)."""
        fields = PlanFields(data, "a kpulse reset plan")
        return cls(**group_offsets_fields(fields), planned_at=fields.number("planned_at"),
                   warnings=tuple(fields.strings("warnings", optional=True)))


def scope_dict(scope: Scope) -> dict[str, Any]:
    """A :class:`Scope` as a plan's JSON keeps it (read back by :func:`scope_from`)."""
    return {"all_topics": scope.all_topics,
            "topics": [[t, list(p) if p is not None else None] for t, p in scope.topics]}


def scope_from(scope: PlanFields) -> Scope:
    """The :class:`Scope` a saved plan's ``scope`` section holds, every field checked."""
    topics: list[TopicChoice] = []
    for index, item in enumerate(scope.list("topics")):
        if (not isinstance(item, list) or len(item) != 2 or not isinstance(item[0], str)
                or not (item[1] is None or isinstance(item[1], list))):
            scope.fail(f"topics[{index}]", "expected [topic, [partitions] or null]")
        chosen = None if item[1] is None else tuple(
            scope.check_integer(f"topics[{index}][1][{i}]", p, PARTITION) for i, p in enumerate(item[1]))
        topics.append((item[0], chosen))
    return Scope(all_topics=scope.boolean("all_topics"), topics=tuple(topics))


def strategy_from(strategy: PlanFields) -> Strategy:
    """The :class:`Strategy` a saved plan's ``strategy`` section holds."""
    return Strategy(strategy.string("name"), strategy.string("value", optional=True))


def non_empty_id(fields: PlanFields, key: str) -> str:
    value = fields.string(key)
    if not value.strip():
        fields.fail(key, "empty")
    return value


def partition_rows(fields: PlanFields, key: str) -> tuple[PartitionReset, ...]:
    """The :class:`PartitionReset` rows of a saved plan, each field checked, no partition twice."""
    rows = []
    for row in fields.sections(key):
        rows.append(PartitionReset(
            topic=row.string("topic"), partition=row.integer("partition", bounds=PARTITION),
            current=row.integer("current", optional=True), log_start=row.integer("log_start"),
            log_end=row.integer("log_end"), new=row.integer("new"), requested=row.integer("requested", optional=True)))
    seen: set[TopicPartition] = set()
    for r in rows:
        if (r.topic, r.partition) in seen:
            fields.fail(key, f"{r.topic}-{r.partition} appears twice")
        seen.add((r.topic, r.partition))
    return tuple(rows)


def parse_expect_current(args: list[str] | None) -> dict[TopicPartition, int]:
    """``--expect-current TOPIC:PARTITION=OFFSET[,...]`` (repeatable): the committed offsets the
    executor must find, or it refuses."""
    expected: dict[TopicPartition, int] = {}
    for arg in args or []:
        for item in arg.split(","):
            where, equals, offset = item.strip().rpartition("=")
            topic, colon, partition = where.rpartition(":")
            if not (equals and colon and topic):
                raise BadInput(f"invalid --expect-current {item.strip()!r}: expected TOPIC:PARTITION=OFFSET")
            key = (topic, parse_integer(partition, f"partition in --expect-current {item.strip()!r}", PARTITION))
            if key in expected:
                raise BadInput(f"--expect-current names {topic}-{key[1]} twice")
            expected[key] = parse_integer(offset, f"offset in --expect-current {item.strip()!r}")
    return expected


def parse_reset_csv(text: str, group_id: str) -> dict[TopicPartition, int]:
    """A plan file of the official tool: ``topic,partition,offset`` lines, or
    ``group,topic,partition,offset`` lines (only this group's are kept)."""
    offsets: dict[TopicPartition, int] = {}
    try:
        rows = [row for row in csv.reader(io.StringIO(text)) if row and any(cell.strip() for cell in row)]
    except csv.Error as error:
        raise BadInput(f"the reset plan file is not a CSV file: {error}") from None
    if not rows:
        raise BadInput("the reset plan file is empty")
    for number, row in enumerate(rows, start=1):
        cells = [cell.strip() for cell in row]
        shown = ",".join(row) if len(",".join(row)) <= 80 else ",".join(row)[:77] + "..."
        group = cells.pop(0) if len(cells) == 4 else group_id
        if len(cells) != 3:
            raise BadInput(f"reset plan line {number}: expected TOPIC,PARTITION,OFFSET, got {shown!r}")
        try:  # every line, another group's too, as Kafka's tool reads them
            key = (cells[0], parse_integer(cells[1], "partition", PARTITION))
            offset = parse_integer(cells[2], "offset")
        except BadInput as error:
            raise BadInput(f"reset plan line {number}: {error}") from None
        if group == group_id:
            offsets[key] = offset
    if not offsets:
        raise BadInput(f"the reset plan file has no line for group {group_id!r}")
    return offsets


def choose_offsets(strategy: Strategy, partitions: list[TopicPartition],
                   committed: dict[TopicPartition, int], log_start: dict[TopicPartition, int],
                   log_end: dict[TopicPartition, int], *,
                   timestamp_offsets: dict[TopicPartition, int | None] | None = None,
                   file_offsets: dict[TopicPartition, int] | None = None) -> dict[TopicPartition, tuple[int, int | None]]:
    """(new offset, requested offset before clamping or None) per partition.

    ``timestamp_offsets`` (to-datetime, by-duration): the first offset at or after the time, None
    when no message is that recent. ``file_offsets`` (from-file): the file's offsets; the file's
    partitions replace ``partitions``.
    """
    name = strategy.name
    # read before any partition needs it: a malformed value is refused even when none does (the
    # other strategies use no amount)
    amount = _integer(strategy) if name in ("to-offset", "shift-by") else 0
    files = file_offsets or {}
    if name == "from-file":
        partitions = sorted(files.keys())
    chosen: dict[TopicPartition, tuple[int, int | None]] = {}
    for tp in partitions:
        start, end = log_start[tp], log_end[tp]
        if name == "to-earliest":
            chosen[tp] = (start, None)
        elif name == "to-latest":
            chosen[tp] = (end, None)
        elif name == "to-current":
            chosen[tp] = (committed.get(tp, end), None)
        elif name in TIMESTAMP_STRATEGIES:
            found = (timestamp_offsets or {}).get(tp)
            chosen[tp] = (end if found is None else found, None)
        else:
            if name == "to-offset":
                requested = amount
            elif name == "shift-by":
                if tp not in committed:
                    raise BadInput(f"cannot shift partition {tp[0]}-{tp[1]}: the group has no committed offset there")
                requested = committed[tp] + amount
            else:
                requested = files[tp]
            chosen[tp] = (min(max(requested, start), end), requested)
    return chosen


def _integer(strategy: Strategy) -> int:
    return parse_integer(strategy.value, f"--{strategy.name}")
