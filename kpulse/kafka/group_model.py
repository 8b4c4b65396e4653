"""The four kinds of group Kafka 4 has, as kpulse reads them: the typed contract between the
readers (``kpulse/kafka/group_describe.py``) and everything that shows, alerts on or changes a
group (collectors, dashboard, operations). Pure data, no I/O.

| type | joined with | described by | offsets |
|---|---|---|---|
| ``classic`` | JoinGroup/SyncGroup (any ``protocol_type``: ``consumer``, ``connect``, a classic Streams app) | DescribeGroups | committed (OffsetFetch) |
| ``consumer`` | ConsumerGroupHeartbeat (KIP-848, ``group.protocol=consumer``) | ConsumerGroupDescribe | committed (OffsetFetch) |
| ``streams`` | StreamsGroupHeartbeat (KIP-1071, ``group.protocol=streams``) | StreamsGroupDescribe | committed (OffsetFetch) |
| ``share`` | ShareGroupHeartbeat (KIP-932) | ShareGroupDescribe | start offset and lag kept by the broker (DescribeShareGroupOffsets) |

States are Kafka's own names, as ``kafka-groups --list`` and the describe tools print them:
classic ``Empty, PreparingRebalance, CompletingRebalance, Stable, Dead``; consumer ``Empty,
Assigning, Reconciling, Stable, Dead``; streams ``Empty, NotReady, Assigning, Reconciling,
Stable, Dead``; share ``Empty, Stable, Dead``. ``Unknown`` when the broker sent a state this
release does not know.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, get_args

GroupTypeName = Literal["classic", "consumer", "streams", "share"]
"""Kafka's group types (ListGroups v5 ``GroupType``, lower case as ``kafka-groups --list`` prints them)."""
CommittingGroupTypeName = Literal["classic", "consumer", "streams"]
"""The types of group whose offsets are committed (OffsetFetch reads them): the snapshot's
``consumer_groups``. A share group's offsets are kept by the broker."""
ClassicGroupStateName = Literal["Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"]
ConsumerGroupStateName = Literal["Empty", "Assigning", "Reconciling", "Stable", "Dead"]
"""The states of a KIP-848 consumer group (:class:`ConsumerGroup`)."""
StreamsGroupStateName = Literal["Empty", "NotReady", "Assigning", "Reconciling", "Stable", "Dead"]
ShareGroupStateName = Literal["Empty", "Stable", "Dead"]
GroupStateName = Literal[ClassicGroupStateName, ConsumerGroupStateName, StreamsGroupStateName, ShareGroupStateName,
                         "Unknown"]
"""The state of a group of any type; ``Unknown`` when it is not known (the group could not be
described, or librdkafka named a state this release does not know)."""

GROUP_TYPES: tuple[GroupTypeName, ...] = get_args(GroupTypeName)
"""Every :data:`GroupTypeName`: ``classic, consumer, streams, share``."""

STATES: dict[str, tuple[str, ...]] = {
    "classic": get_args(ClassicGroupStateName),
    "consumer": get_args(ConsumerGroupStateName),
    "streams": get_args(StreamsGroupStateName),
    "share": get_args(ShareGroupStateName),
}
"""The states each type of group can be in, in Kafka's spelling."""

Assignment = dict[str, tuple[int, ...]]
"""Topic name -> its partitions, sorted."""
Tasks = dict[str, tuple[int, ...]]
"""Subtopology id -> its partitions (task ids ``<subtopology>_<partition>``), sorted."""


@dataclass(frozen=True)
class GroupListing:
    """One group as ListGroups (v5) lists it."""

    group_id: str
    type: GroupTypeName
    protocol_type: str
    """The classic protocol type (``consumer``, ``connect``...); ``consumer`` for a KIP-848 group,
    ``streams`` / ``share`` for those; empty when the broker gives none."""
    state: GroupStateName
    """Kafka's state name (see the module)."""


@dataclass(frozen=True)
class ClassicMember:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    assignment: Assignment
    """Decoded from the consumer protocol's assignment bytes; empty for a non-consumer protocol."""


@dataclass(frozen=True)
class ClassicGroup:
    """DescribeGroups' answer for a classic group."""

    group_id: str
    state: ClassicGroupStateName
    protocol_type: str
    protocol: str
    """The assignor (``range``, ``cooperative-sticky``...) or, for other protocol types, their protocol."""
    members: tuple[ClassicMember, ...]
    type: Literal["classic"] = field(default="classic", init=False)


@dataclass(frozen=True)
class ConsumerMember:
    """A KIP-848 member, as ``kafka-consumer-groups --describe --members --verbose`` shows it."""

    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topics: tuple[str, ...]
    subscribed_regex: str | None
    assignment: Assignment
    """What the member owns now."""
    target_assignment: Assignment
    """What the coordinator wants it to own; differs from ``assignment`` while it reconciles."""
    upgraded: bool | None
    """True for a member on the consumer protocol, False for a classic member in a consumer group
    (``MemberType``, ConsumerGroupDescribe v1); None when the broker does not say."""

    @property
    def reconciling(self) -> bool:
        """The member still moves towards its target assignment."""
        return self.assignment != self.target_assignment


@dataclass(frozen=True)
class ConsumerGroup:
    """ConsumerGroupDescribe's answer: a KIP-848 consumer group."""

    group_id: str
    state: ConsumerGroupStateName
    group_epoch: int
    """Bumped by every change of the group's members or subscriptions."""
    assignment_epoch: int
    """The epoch of the target assignment; behind ``group_epoch`` while the group is Assigning."""
    assignor: str
    members: tuple[ConsumerMember, ...]
    type: Literal["consumer"] = field(default="consumer", init=False)

    @property
    def reconciling_members(self) -> tuple[ConsumerMember, ...]:
        """Members whose epoch or assignment is not yet the target's."""
        return tuple(m for m in self.members if m.reconciling or m.member_epoch != self.assignment_epoch)


@dataclass(frozen=True)
class Subtopology:
    subtopology_id: str
    source_topics: tuple[str, ...]
    """The topics it reads that are not repartition topics of the group (StreamsGroupDescribe
    names those in ``repartition_source_topics``); :attr:`StreamsGroup.input_topics` leaves out
    any internal topic all the same."""
    repartition_sink_topics: tuple[str, ...]
    state_changelog_topics: tuple[str, ...]
    repartition_source_topics: tuple[str, ...]


@dataclass(frozen=True)
class StreamsMember:
    member_id: str
    member_epoch: int
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    topology_epoch: int
    process_id: str
    user_endpoint: str | None
    """``host:port`` of the instance's interactive queries, if it has one."""
    active_tasks: Tasks
    standby_tasks: Tasks
    warmup_tasks: Tasks
    target_active_tasks: Tasks
    target_standby_tasks: Tasks
    target_warmup_tasks: Tasks
    is_classic: bool

    @property
    def reconciling(self) -> bool:
        return (self.active_tasks, self.standby_tasks, self.warmup_tasks) != (
            self.target_active_tasks, self.target_standby_tasks, self.target_warmup_tasks)


@dataclass(frozen=True)
class StreamsGroup:
    """StreamsGroupDescribe's answer: a KIP-1071 Streams group."""

    group_id: str
    state: StreamsGroupStateName
    group_epoch: int
    assignment_epoch: int
    topology_epoch: int | None
    """None before a member has sent the topology."""
    subtopologies: tuple[Subtopology, ...]
    members: tuple[StreamsMember, ...]
    missing_topics: tuple[str, ...] = ()
    """Source topics of the topology that do not exist on the cluster, sorted: what a NotReady group
    waits for (its members are told "Source topics ... are missing"). Looked up only while the
    group is NotReady; () otherwise."""
    type: Literal["streams"] = field(default="streams", init=False)

    @property
    def internal_topics(self) -> tuple[str, ...]:
        """Repartition and changelog topics of the topology, sorted."""
        names = {t for s in self.subtopologies for t in (*s.repartition_source_topics, *s.repartition_sink_topics,
                                                          *s.state_changelog_topics)}
        return tuple(sorted(names))

    @property
    def input_topics(self) -> tuple[str, ...]:
        """Source topics that are not internal, sorted."""
        internal = set(self.internal_topics)
        return tuple(sorted({t for s in self.subtopologies for t in s.source_topics if t not in internal}))

    @property
    def source_topics(self) -> tuple[str, ...]:
        """Every source topic of the topology (input and intermediate, no repartition topic), sorted."""
        return tuple(sorted({t for s in self.subtopologies for t in s.source_topics}))


@dataclass(frozen=True)
class ShareMember:
    member_id: str
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topics: tuple[str, ...]
    assignment: Assignment


@dataclass(frozen=True)
class ShareGroup:
    """ShareGroupDescribe's answer: a share group (KIP-932)."""

    group_id: str
    state: ShareGroupStateName
    group_epoch: int
    assignment_epoch: int
    assignor: str
    members: tuple[ShareMember, ...]
    type: Literal["share"] = field(default="share", init=False)


@dataclass(frozen=True)
class SharePartitionOffset:
    """One partition of a share group, as DescribeShareGroupOffsets answers (and
    ``kafka-share-groups --describe`` prints)."""

    topic: str
    partition: int
    start_offset: int | None
    """The share-partition start offset: records before it are all acknowledged; None: not
    initialised (the group has not consumed the partition yet)."""
    lag: int | None
    """Records not yet acknowledged, as the broker counts them (not derivable from the log);
    None when the broker does not know it."""
    leader_epoch: int | None
    error: str | None = None


GroupDescription = ClassicGroup | ConsumerGroup | StreamsGroup | ShareGroup
MemberDescription = ClassicMember | ConsumerMember | StreamsMember | ShareMember
"""A member of a :data:`GroupDescription`."""


def member_partitions(group: GroupDescription, member: MemberDescription) -> Assignment:
    """The partitions ``member`` of ``group`` reads now: its assignment; for a Streams member, the
    partitions of its active tasks' source topics (task ``<subtopology>_<p>`` reads partition ``p``
    of each source topic of the subtopology)."""
    if isinstance(member, StreamsMember):
        subtopologies = group.subtopologies if isinstance(group, StreamsGroup) else ()
        sources = {s.subtopology_id: s.source_topics for s in subtopologies}
        reads: dict[str, set[int]] = {}
        for subtopology, partitions in member.active_tasks.items():
            for topic in sources.get(subtopology, ()):
                reads.setdefault(topic, set()).update(partitions)
        return {topic: tuple(sorted(parts)) for topic, parts in sorted(reads.items())}
    return member.assignment


@dataclass(frozen=True)
class GroupReadError:
    """A group that could not be described or read, and why (one line, Kafka's error name first)."""

    group_id: str
    reason: str


@dataclass(frozen=True)
class TypeUnsupported:
    """The brokers do not speak the describe call of this type (an older Kafka, where such groups
    do not exist): not an error."""

    type: GroupTypeName
    reason: str
