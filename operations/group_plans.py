"""Plans of the operations on Kafka 4's group types, and the pure decisions behind them (no I/O):

- :class:`StreamsGroupResetPlan`: ``kafka-streams-groups --reset-offsets`` (Kafka 4.3.1) on a
  Streams group (KIP-1071). Scope ``--all-input-topics`` = the partitions of the topology's
  source topics the group has committed offsets for; ``--input-topic t`` / ``t:0,1`` = those
  partitions, each of which must have a committed offset in the group (the official tool prints
  "One or more topics are not part of the group" and resets nothing; kpulse refuses with the
  partitions named); ``--from-file`` = the file's partitions. Strategies and clamping are those of
  ``kafka-consumer-groups`` (:func:`operations.offset_plan.choose_offsets`). With
  ``--delete-all-internal-topics`` the executor then deletes the group's internal topics as the
  official tool does (:func:`streams_internal_topics`).
- :class:`ShareResetPlan`: ``kafka-share-groups --reset-offsets`` on a share group (KIP-932):
  ``--to-earliest``, ``--to-latest``, ``--to-datetime`` (no record at or after the time: the log
  end), on ``--all-topics`` (every partition the group has a start offset for) or ``--topic``.
- :class:`DeleteOffsetsPlan`: forget a group's offsets of some topics (``--delete-offsets``;
  OffsetDelete, or DeleteShareGroupOffsets for a share group).
- :class:`DeleteGroupPlan`: delete a group (``--delete``; DeleteGroups), a Streams group's
  internal topics with it when asked (``kafka-streams-groups --delete --delete-all-internal-topics``).

Every one of them is refused while the group has members (:func:`refuse_unless_inactive`): the
official tools refuse a reset or a group deletion then, and members would overwrite what changed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, TypedDict

from kpulse.kafka.group_model import GroupDescription, StreamsGroup
from operations.errors import BadInput, Refused
from operations.internal_topics import is_internal_topic
from operations.numbers import PARTITION
from operations.offset_plan import (
    STRATEGIES, GroupOffsetsPlan, GroupPlan, Scope, Strategy, TopicPartition, group_offsets_fields, non_empty_id,
)
from operations.plan_fields import PlanFields

STREAMS_GROUP_STRATEGIES = STRATEGIES
"""``kafka-streams-groups --reset-offsets`` has every strategy of ``kafka-consumer-groups``."""
SHARE_STRATEGIES = ("to-earliest", "to-latest", "to-datetime")
"""``kafka-share-groups --reset-offsets`` (4.3.1) has these three."""
INACTIVE_STATES = ("Empty", "Dead")


# --- pure decisions --------------------------------------------------------------------------------

def refuse_unless_inactive(group: GroupDescription, refusal: str) -> None:
    """:class:`Refused` (one line naming up to three members) unless the group is Empty or Dead
    with no member. ``refusal``: the sentence's start (``cannot reset the offsets of group 'g'``)."""
    if group.state in INACTIVE_STATES and not group.members:
        return
    shown = ", ".join(f"{m.client_id}@{m.client_host.lstrip('/')}" for m in group.members[:3])
    more = f" and {len(group.members) - 3} more" if len(group.members) > 3 else ""
    raise Refused(f"{refusal}: the {group.type} group is {group.state} with {len(group.members)} active member(s)"
                  + (f" ({shown}{more})" if shown else "") + "; stop them first (it must be Empty); nothing changed")


def refuse_wrong_type(group_id: str, group_type: str, wanted: tuple[str, ...], what: str) -> None:
    """:class:`BadInput` when the group is not of one of the ``wanted`` types."""
    if group_type not in wanted:
        tool = {"streams": "reset-streams-group", "share": "reset-share-group"}.get(group_type, "reset-offsets")
        raise BadInput(f"group {group_id!r} is a {group_type} group, not a {' or '.join(wanted)} group: {what} does "
                       f"not apply (kpulse {tool} resets a {group_type} group)")


def streams_source_topics(group: StreamsGroup) -> set[str]:
    """The topics the topology's subtopologies read, repartition topics excluded (StreamsGroupDescribe
    lists those apart)."""
    return {t for s in group.subtopologies for t in s.source_topics}


def streams_internal_topics(group: StreamsGroup) -> tuple[str, ...]:
    """The internal topics ``kafka-streams-groups --delete-all-internal-topics`` deletes (4.3.1): the
    repartition source topics and state changelog topics of the topology, except those a
    subtopology also reads as a source topic, and only those named as an internal topic of the
    group (``<group>-...-repartition`` / ``-changelog`` / the foreign-key join topics); the tool
    names and keeps the others. Sorted, no duplicate."""
    sources = streams_source_topics(group)
    named = {t for s in group.subtopologies for t in (*s.repartition_source_topics, *s.state_changelog_topics)}
    return tuple(sorted(t for t in named if t not in sources and is_internal_topic(group.group_id, t)))


def streams_foreign_topics(group: StreamsGroup) -> tuple[str, ...]:
    """Internal topics of the topology that are not named as the group's: kept (the official tool
    prints that it will not delete them)."""
    named = {t for s in group.subtopologies for t in (*s.repartition_source_topics, *s.state_changelog_topics)}
    return tuple(sorted(named - streams_source_topics(group) - set(streams_internal_topics(group))))


def input_partitions(group_id: str, scope: Scope, committed: dict[TopicPartition, int], sources: set[str],
                     existing: dict[str, list[int]]) -> list[TopicPartition]:
    """The partitions a Streams group reset acts on (module docstring). ``existing``: the
    partitions of the topics ``scope`` names."""
    if scope.all_topics:
        return sorted(tp for tp in committed if tp[0] in sources)
    wanted = sorted({(t, p) for t, chosen in scope.topics for p in (chosen if chosen is not None else existing[t])})
    missing = [f"{t}-{p}" for t, p in wanted if p not in existing[t]]
    if missing:
        raise BadInput(f"partition(s) {', '.join(missing)} do not exist")
    outside = [f"{t}-{p}" for t, p in wanted if (t, p) not in committed]
    if outside:
        shown = ", ".join(outside[:10]) + (f" and {len(outside) - 10} more" if len(outside) > 10 else "")
        raise BadInput(f"{shown}: not part of group {group_id!r} (no committed offset; kafka-streams-groups resets "
                       "nothing then); nothing changed")
    return wanted


def check_strategy(strategy: Strategy, allowed: tuple[str, ...], tool: str) -> None:
    if strategy.name not in allowed:
        raise BadInput(f"--{strategy.name} is not a strategy of {tool}; one of --{', --'.join(allowed)}")


# --- plans ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class StreamsGroupResetPlan(GroupOffsetsPlan):
    """A Streams group reset (module docstring); changes nothing. ``scope.all_topics``:
    ``--all-input-topics``; else the ``--input-topic`` arguments (empty with ``--from-file``)."""

    delete_topics: tuple[str, ...]
    """Internal topics the executor deletes after the reset (``--delete-all-internal-topics``)."""
    planned_at: float
    kept_topics: tuple[str, ...] = ()
    """Internal topics of the topology not named as the group's: never deleted."""
    warnings: tuple[str, ...] = field(default=())

    @classmethod
    def from_dict(cls, data: object) -> StreamsGroupResetPlan:
        fields = PlanFields(data, "a kpulse Streams group reset plan")
        return cls(**group_offsets_fields(fields), delete_topics=tuple(fields.strings("delete_topics")),
                   planned_at=fields.number("planned_at"),
                   kept_topics=tuple(fields.strings("kept_topics", optional=True)),
                   warnings=tuple(fields.strings("warnings", optional=True)))


@dataclass(frozen=True)
class ShareResetPlan(GroupOffsetsPlan):
    """A share group's new start offsets; ``partitions[i].current`` is the start offset now (None:
    not initialised). Changes nothing."""

    planned_at: float
    warnings: tuple[str, ...] = field(default=())

    @classmethod
    def from_dict(cls, data: object) -> ShareResetPlan:
        fields = PlanFields(data, "a kpulse share group reset plan")
        return cls(**group_offsets_fields(fields), planned_at=fields.number("planned_at"),
                   warnings=tuple(fields.strings("warnings", optional=True)))


@dataclass(frozen=True)
class GroupOffset:
    """One partition's offset as the group has it now: committed (classic, consumer, streams) or the
    share-partition start offset (share; None: not initialised)."""

    topic: str
    partition: int
    offset: int | None


def _offset_rows(fields: PlanFields, key: str) -> tuple[GroupOffset, ...]:
    return tuple(GroupOffset(row.string("topic"), row.integer("partition", bounds=PARTITION),
                             row.integer("offset", optional=True)) for row in fields.sections(key))


@dataclass(frozen=True)
class GroupChangePlan(GroupPlan):
    """A plan that deletes a group or some of its offsets, on a group of any type: each adds what
    it deletes and ``planned_at``."""

    group_type: str
    group_state: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class GroupChangeFields(TypedDict):
    """The fields of :class:`GroupChangePlan`, as a saved plan gives them."""

    cluster: str
    group_id: str
    group_type: str
    group_state: str


def group_change_fields(fields: PlanFields) -> GroupChangeFields:
    """The :class:`GroupChangePlan` fields of a saved plan, every one checked."""
    return GroupChangeFields(cluster=fields.string("cluster"), group_id=non_empty_id(fields, "group_id"),
                             group_type=fields.string("group_type"), group_state=fields.string("group_state"))


@dataclass(frozen=True)
class DeleteOffsetsPlan(GroupChangePlan):
    """Forget the group's offsets of ``topics`` (every partition of them the group has one for)."""

    topics: tuple[str, ...]
    partitions: tuple[GroupOffset, ...]
    planned_at: float

    @classmethod
    def from_dict(cls, data: object) -> DeleteOffsetsPlan:
        fields = PlanFields(data, "a kpulse delete-offsets plan")
        return cls(**group_change_fields(fields), topics=tuple(fields.strings("topics")),
                   partitions=_offset_rows(fields, "partitions"), planned_at=fields.number("planned_at"))


@dataclass(frozen=True)
class DeleteGroupPlan(GroupChangePlan):
    """Delete the group (its offsets with it) and, for a Streams group when asked, its internal topics."""

    offsets: tuple[GroupOffset, ...]
    """What the group has now (gone with it)."""
    delete_topics: tuple[str, ...]
    planned_at: float

    @classmethod
    def from_dict(cls, data: object) -> DeleteGroupPlan:
        fields = PlanFields(data, "a kpulse delete-group plan")
        return cls(**group_change_fields(fields), offsets=_offset_rows(fields, "offsets"),
                   delete_topics=tuple(fields.strings("delete_topics")), planned_at=fields.number("planned_at"))
