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

from operations.errors import BadInput

STRATEGIES = ("to-earliest", "to-latest", "to-current", "to-offset", "shift-by", "to-datetime",
              "by-duration", "from-file")
"""Reset strategies, named as the official tool's flags."""
TIMESTAMP_STRATEGIES = ("to-datetime", "by-duration")
CLAMPED_STRATEGIES = ("to-offset", "shift-by", "from-file")

TopicPartition = tuple[str, int]


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
    topics: tuple[tuple[str, tuple[int, ...] | None], ...] = ()
    """(topic, chosen partitions or None for all of them)."""

    @classmethod
    def parse(cls, all_topics: bool, topic_args: list[str] | None) -> "Scope":
        """From the official tool's flags: ``--all-topics`` or ``--topic t`` / ``--topic t:0,1``."""
        topics = []
        for arg in topic_args or []:
            name, colon, numbers = arg.partition(":")
            if not name:
                raise BadInput(f"invalid --topic {arg!r}: expected TOPIC or TOPIC:P1,P2")
            if not colon:
                topics.append((name, None))
                continue
            try:
                partitions = tuple(sorted({int(p) for p in numbers.split(",")}))
            except ValueError:
                raise BadInput(f"invalid partitions in --topic {arg!r}: expected TOPIC:0,1,2") from None
            if any(p < 0 for p in partitions):
                raise BadInput(f"invalid partitions in --topic {arg!r}: partitions are >= 0")
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
class ResetPlan:
    """What a reset would do; changes nothing. Export with :meth:`to_json` / :meth:`to_csv`."""

    cluster: str
    group_id: str
    group_state: str
    strategy: Strategy
    scope: Scope
    partitions: tuple[PartitionReset, ...]
    planned_at: float
    """Epoch seconds."""
    warnings: tuple[str, ...] = field(default=())

    @property
    def target(self) -> str:
        return f"group {self.group_id}"

    @property
    def total_replayed(self) -> int:
        return sum(p.replayed for p in self.partitions)

    @property
    def total_skipped(self) -> int:
        return sum(p.skipped for p in self.partitions)

    def new_offsets(self) -> dict[TopicPartition, int]:
        return {(p.topic, p.partition): p.new for p in self.partitions}

    def to_csv(self) -> str:
        """The official tool's single-group export format: ``topic,partition,offset`` lines."""
        return "".join(f"{p.topic},{p.partition},{p.new}\n" for p in self.partitions)

    def to_dict(self) -> dict:
        plain = asdict(self)
        plain["scope"]["topics"] = [[t, list(p) if p is not None else None] for t, p in self.scope.topics]
        for row, partition in zip(plain["partitions"], self.partitions):
            row.update(lag_before=partition.lag_before, lag_after=partition.lag_after,
                       replayed=partition.replayed, skipped=partition.skipped)
        return plain

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_dict(cls, data: dict) -> "ResetPlan":
        try:
            keys = ("topic", "partition", "current", "log_start", "log_end", "new", "requested")
            return cls(
                cluster=data["cluster"], group_id=data["group_id"], group_state=data["group_state"],
                strategy=Strategy(**data["strategy"]),
                scope=Scope(all_topics=data["scope"]["all_topics"],
                            topics=tuple((t, tuple(p) if p is not None else None)
                                         for t, p in data["scope"]["topics"])),
                partitions=tuple(PartitionReset(**{k: row.get(k) for k in keys}) for row in data["partitions"]),
                planned_at=data["planned_at"], warnings=tuple(data.get("warnings", ())))
        except (KeyError, TypeError) as error:
            raise BadInput(f"not a kpulse reset plan: {error}") from None


def parse_reset_csv(text: str, group_id: str) -> dict[TopicPartition, int]:
    """A plan file of the official tool: ``topic,partition,offset`` lines, or
    ``group,topic,partition,offset`` lines (only this group's are kept)."""
    offsets: dict[TopicPartition, int] = {}
    rows = [row for row in csv.reader(io.StringIO(text)) if row and any(cell.strip() for cell in row)]
    if not rows:
        raise BadInput("the reset plan file is empty")
    for number, row in enumerate(rows, start=1):
        cells = [cell.strip() for cell in row]
        if len(cells) == 4:
            if cells[0] != group_id:
                continue
            cells = cells[1:]
        if len(cells) != 3:
            raise BadInput(f"reset plan line {number}: expected TOPIC,PARTITION,OFFSET, got {','.join(row)!r}")
        try:
            offsets[(cells[0], int(cells[1]))] = int(cells[2])
        except ValueError:
            raise BadInput(f"reset plan line {number}: partition and offset must be integers, "
                           f"got {','.join(row)!r}") from None
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
    if name == "from-file":
        partitions = sorted((file_offsets or {}).keys())
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
                requested = _integer(strategy)
            elif name == "shift-by":
                if tp not in committed:
                    raise BadInput(f"cannot shift partition {tp[0]}-{tp[1]}: the group has no committed offset there")
                requested = committed[tp] + _integer(strategy)
            else:
                requested = file_offsets[tp]
            chosen[tp] = (min(max(requested, start), end), requested)
    return chosen


def _integer(strategy: Strategy) -> int:
    try:
        return int(str(strategy.value))
    except ValueError:
        raise BadInput(f"--{strategy.name} needs an integer, got {strategy.value!r}") from None
