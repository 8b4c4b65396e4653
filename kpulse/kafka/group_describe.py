"""The groups of a cluster with their type, described by the call of their type: the one reader
of groups for the collectors, the dashboard, the operations and the CLI.

- :meth:`GroupReader.list_groups`: ListGroups v5 to every broker at once (the listing of
  ``kpulse/kafka/group_listing.py``, shared with the lag collector): each group with its type and
  Kafka's state name, as ``kafka-groups --list`` prints them;
- :meth:`GroupReader.describe`: one FindCoordinator for the groups whose coordinator is not known
  yet (kept between calls, ``committed_offsets.Coordinators``), then ONE request per coordinator
  and type, all in flight at once: DescribeGroups (classic), ConsumerGroupDescribe (KIP-848),
  StreamsGroupDescribe (KIP-1071), ShareGroupDescribe (KIP-932);
- :meth:`GroupReader.share_offsets`: DescribeShareGroupOffsets per coordinator, every topic of
  each group: the start offset and lag per partition the broker keeps (``kafka-share-groups
  --describe``).

A group whose coordinator moved (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
COORDINATOR_LOAD_IN_PROGRESS) has its coordinator looked up again and is asked once more within the
same deadline; any other failure is that group's :class:`GroupReadError` (Kafka's error name
first), and the other groups are not held up by it. A type whose describe call the brokers do not
speak (an older Kafka, where such groups do not exist) is a :class:`TypeUnsupported` in
:attr:`GroupReader.unsupported`, not an error.

The answer parsing (``*_from`` functions) is pure; :class:`GroupReader` does the I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from types import ModuleType
from typing import TYPE_CHECKING, Any
from collections.abc import Callable, Iterable, Mapping, Sequence

from kpulse.errors import KpulseError
from kpulse.kafka.batched_client import (
    BatchedClient, ConnectionManager, Unavailable, answer, error_name, one_line, remaining_ms, send,
)
from kpulse.kafka.committed_offsets import FIND_COORDINATOR_VERSION, MOVED_COORDINATOR, Coordinators
from kpulse.kafka.group_listing import TYPED_LIST_GROUPS_VERSION, GroupListing as Listing, api_version
from kpulse.kafka.group_model import (
    GROUP_TYPES, Assignment, ClassicGroup, ClassicMember, ConsumerGroup, ConsumerMember, GroupDescription,
    GroupListing, GroupReadError, GroupTypeName, ShareGroup, ShareMember, SharePartitionOffset, StreamsGroup,
    StreamsMember, Subtopology, Tasks, TypeUnsupported)

if TYPE_CHECKING:
    from kpulse.config.model import ClusterConfig

CONSUMER_PROTOCOL = "consumer"
"""The classic protocol type whose assignment bytes are the consumer protocol's (decoded)."""


class GroupNotFound(KpulseError):
    """The cluster has no group of that name."""


class GroupUnreadable(KpulseError):
    """The cluster could not be read, or the group not described (one line saying why)."""


# -- the pure half: one answer's entry -> the typed model ----------------------------------------------

def _assignment(topic_partitions: Iterable[Any]) -> Assignment:
    """ConsumerGroupDescribe / ShareGroupDescribe ``TopicPartitions`` -> topic -> sorted partitions."""
    assignment: dict[str, set[int]] = {}
    for entry in topic_partitions or ():
        assignment.setdefault(entry.topic_name, set()).update(entry.partitions)
    return {topic: tuple(sorted(parts)) for topic, parts in sorted(assignment.items())}


def _tasks(task_ids: Iterable[Any]) -> Tasks:
    """StreamsGroupDescribe ``TaskIds`` -> subtopology -> sorted partitions."""
    tasks: dict[str, set[int]] = {}
    for entry in task_ids or ():
        tasks.setdefault(entry.subtopology_id, set()).update(entry.partitions)
    return {subtopology: tuple(sorted(parts)) for subtopology, parts in sorted(tasks.items())}


def consumer_protocol_assignment(data: bytes | None) -> Assignment:
    """The consumer protocol's assignment bytes (a classic consumer group member's) -> topic ->
    sorted partitions; empty bytes (a member between JoinGroup and SyncGroup) -> {}."""
    if not data:
        return {}
    from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment

    decoded = ConsumerProtocolAssignment.decode(data) if isinstance(data, (bytes, bytearray)) else data
    assignment: dict[str, set[int]] = {}
    for entry in decoded.assigned_partitions:
        assignment.setdefault(entry.topic, set()).update(entry.partitions)
    return {topic: tuple(sorted(parts)) for topic, parts in sorted(assignment.items())}


def classic_group_from(group: Any) -> ClassicGroup:
    """A DescribeGroups answer's group (without error) -> :class:`ClassicGroup`. The members'
    assignments are decoded when the protocol type is ``consumer``."""
    decode = group.protocol_type == CONSUMER_PROTOCOL
    members = tuple(ClassicMember(
        member_id=m.member_id, instance_id=getattr(m, "group_instance_id", None), client_id=m.client_id,
        client_host=m.client_host, assignment=consumer_protocol_assignment(m.member_assignment) if decode else {})
        for m in group.members)
    return ClassicGroup(group_id=group.group_id, state=group.group_state, protocol_type=group.protocol_type,
                        protocol=group.protocol_data, members=members)


MEMBER_TYPES = {0: False, 1: True}
"""ConsumerGroupDescribe v1 ``MemberType`` -> upgraded (0: classic member, 1: consumer member; -1: not said)."""


def consumer_group_from(group: Any) -> ConsumerGroup:
    """A ConsumerGroupDescribe answer's group (without error) -> :class:`ConsumerGroup`."""
    members = tuple(ConsumerMember(
        member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id, member_epoch=m.member_epoch,
        client_id=m.client_id, client_host=m.client_host, subscribed_topics=tuple(sorted(m.subscribed_topic_names)),
        subscribed_regex=m.subscribed_topic_regex or None, assignment=_assignment(m.assignment.topic_partitions),
        target_assignment=_assignment(m.target_assignment.topic_partitions),
        upgraded=MEMBER_TYPES.get(getattr(m, "member_type", -1)))
        for m in group.members)
    return ConsumerGroup(group_id=group.group_id, state=group.group_state, group_epoch=group.group_epoch,
                         assignment_epoch=group.assignment_epoch, assignor=group.assignor_name, members=members)


def streams_group_from(group: Any) -> StreamsGroup:
    """A StreamsGroupDescribe answer's group (without error) -> :class:`StreamsGroup`."""
    topology = group.topology
    subtopologies = tuple(Subtopology(
        subtopology_id=s.subtopology_id, source_topics=tuple(s.source_topics),
        repartition_sink_topics=tuple(s.repartition_sink_topics),
        state_changelog_topics=tuple(t.name for t in s.state_changelog_topics),
        repartition_source_topics=tuple(t.name for t in s.repartition_source_topics))
        for s in ((topology.subtopologies or ()) if topology is not None else ()))
    members = []
    for m in group.members:
        endpoint = m.user_endpoint
        members.append(StreamsMember(
            member_id=m.member_id, member_epoch=m.member_epoch, instance_id=m.instance_id, rack_id=m.rack_id,
            client_id=m.client_id, client_host=m.client_host, topology_epoch=m.topology_epoch,
            process_id=m.process_id, user_endpoint=f"{endpoint.host}:{endpoint.port}" if endpoint is not None else None,
            active_tasks=_tasks(m.assignment.active_tasks), standby_tasks=_tasks(m.assignment.standby_tasks),
            warmup_tasks=_tasks(m.assignment.warmup_tasks),
            target_active_tasks=_tasks(m.target_assignment.active_tasks),
            target_standby_tasks=_tasks(m.target_assignment.standby_tasks),
            target_warmup_tasks=_tasks(m.target_assignment.warmup_tasks), is_classic=bool(m.is_classic)))
    return StreamsGroup(group_id=group.group_id, state=group.group_state, group_epoch=group.group_epoch,
                        assignment_epoch=group.assignment_epoch,
                        topology_epoch=topology.epoch if topology is not None else None,
                        subtopologies=subtopologies, members=tuple(members))


def share_group_from(group: Any) -> ShareGroup:
    """A ShareGroupDescribe answer's group (without error) -> :class:`ShareGroup`."""
    members = tuple(ShareMember(
        member_id=m.member_id, rack_id=m.rack_id, member_epoch=m.member_epoch, client_id=m.client_id,
        client_host=m.client_host, subscribed_topics=tuple(sorted(m.subscribed_topic_names)),
        assignment=_assignment(m.assignment.topic_partitions)) for m in group.members)
    return ShareGroup(group_id=group.group_id, state=group.group_state, group_epoch=group.group_epoch,
                      assignment_epoch=group.assignment_epoch, assignor=group.assignor_name, members=members)


def share_offsets_from(group: Any) -> tuple[SharePartitionOffset, ...]:
    """A DescribeShareGroupOffsets answer's group (without error) -> its partitions, sorted by
    topic and partition. -1 (start offset not initialised, lag unknown, v0 without lag, no leader
    epoch) -> None; a partition's own error is named in ``error``."""
    rows = []
    for topic in group.topics or ():
        for p in topic.partitions:
            lag = getattr(p, "lag", -1)
            rows.append(SharePartitionOffset(
                topic=topic.topic_name, partition=p.partition_index,
                start_offset=p.start_offset if p.start_offset >= 0 else None, lag=lag if lag >= 0 else None,
                leader_epoch=p.leader_epoch if p.leader_epoch >= 0 else None,
                error=_error_text(p.error_code, getattr(p, "error_message", None)) if p.error_code else None))
    return tuple(sorted(rows, key=lambda row: (row.topic, row.partition)))


NOT_READY = "NotReady"
UNKNOWN_TOPIC_OR_PARTITION = 3


def missing_topics_from(topics: Iterable[Any]) -> set[str]:
    """A Metadata answer's ``topics`` -> the names the cluster does not know."""
    return {topic.name for topic in topics if topic.error_code == UNKNOWN_TOPIC_OR_PARTITION}


def with_missing_topics(group: StreamsGroup, missing: set[str]) -> StreamsGroup:
    """``group`` with ``missing_topics``: those of its source topics in ``missing``."""
    return replace(group, missing_topics=tuple(t for t in group.source_topics if t in missing))


def _error_text(code: int, message: str | None, call: str | None = None) -> str:
    """Kafka's error name first: 'GROUP_ID_NOT_FOUND: Group g is not a streams group. (StreamsGroupDescribe)'."""
    text = error_name(code)
    if message:
        text += f": {' '.join(str(message).split())}"
    return f"{text} ({call})" if call else text


@dataclass(frozen=True)
class GroupCall:
    """One batched request kind: a describe call of a group type, or the share-group offsets."""

    name: str
    """Kafka's API name (``StreamsGroupDescribe``)."""
    request_class: Callable[[], type]
    """The kafka-python request class (imported on use)."""
    min_version: int
    build: Callable[[list[str]], Any]
    """Group ids -> the request."""
    parse: Callable[[Any], Any]
    """An answer's group entry without error -> what the reader returns for it."""
    missing: str
    """What it means that the brokers do not speak this call."""


def answers_from(call: GroupCall, groups: Iterable[Any]) -> tuple[dict[str, Any], dict[str, GroupReadError], set[str]]:
    """An answer's ``groups`` -> (group -> parsed, group -> why it could not be read, groups whose
    coordinator moved: asked again after a new FindCoordinator)."""
    read: dict[str, Any] = {}
    failed: dict[str, GroupReadError] = {}
    moved: set[str] = set()
    for group in groups:
        group_id = group.group_id
        code = group.error_code
        if code:
            failed[group_id] = GroupReadError(group_id, _error_text(code, getattr(group, "error_message", None), call.name))
            if code in MOVED_COORDINATOR:
                moved.add(group_id)
            continue
        try:
            read[group_id] = call.parse(group)
        except Exception as error:  # noqa: BLE001 - an answer kpulse cannot read is that group's error
            failed[group_id] = GroupReadError(group_id, f"cannot read the {call.name} answer: {one_line(error)}")
    return read, failed, moved


def _messages() -> ModuleType:
    from kpulse.kafka import messages

    return messages


def _describe_groups_request(group_ids: list[str]) -> Any:
    from kafka.protocol.admin import DescribeGroupsRequest

    return DescribeGroupsRequest(groups=group_ids)


def _describe_request(name: str) -> Callable[[list[str]], Any]:
    def build(group_ids: list[str]) -> Any:
        return getattr(_messages(), f"{name}Request")(group_ids=group_ids, include_authorized_operations=False)
    return build


def _share_offsets_request(group_ids: list[str]) -> Any:
    messages = _messages()
    group = messages.DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup
    # no topics (null): every topic the group has offsets for, as ListShareGroupOffsetsSpec() asks
    return messages.DescribeShareGroupOffsetsRequest(groups=[group(group_id=g, topics=None) for g in group_ids])


def _describe_groups_class() -> Any:
    from kafka.protocol.admin import DescribeGroupsRequest

    return DescribeGroupsRequest


DESCRIBE_CALLS: dict[GroupTypeName, GroupCall] = {
    "classic": GroupCall("DescribeGroups", _describe_groups_class, 0, _describe_groups_request, classic_group_from,
                         "classic groups cannot be described"),
    "consumer": GroupCall("ConsumerGroupDescribe", lambda: _messages().ConsumerGroupDescribeRequest, 0,
                          _describe_request("ConsumerGroupDescribe"), consumer_group_from,
                          "KIP-848 consumer groups do not exist on this cluster"),
    "streams": GroupCall("StreamsGroupDescribe", lambda: _messages().StreamsGroupDescribeRequest, 0,
                         _describe_request("StreamsGroupDescribe"), streams_group_from,
                         "Streams groups do not exist on this cluster"),
    "share": GroupCall("ShareGroupDescribe", lambda: _messages().ShareGroupDescribeRequest, 1,
                       _describe_request("ShareGroupDescribe"), share_group_from,
                       "share groups do not exist on this cluster"),
}
"""Group type -> the call that describes it."""
SHARE_OFFSETS = GroupCall("DescribeShareGroupOffsets", lambda: _messages().DescribeShareGroupOffsetsRequest, 0,
                          _share_offsets_request, share_offsets_from, "share groups do not exist on this cluster")


def unsupported_types(versions: Callable[[GroupCall], int], typed_listing: bool | None) -> dict[str, TypeUnsupported]:
    """Group type -> why the brokers cannot describe it, from ``versions(call)`` (the version of a
    call both sides speak, -1: none) and whether ListGroups names types (v5+; None: not known yet)."""
    unsupported: dict[str, TypeUnsupported] = {}
    for group_type, call in DESCRIBE_CALLS.items():
        if versions(call) < call.min_version:
            unsupported[group_type] = TypeUnsupported(group_type, f"the brokers do not speak {call.name}: {call.missing}")
        elif group_type != "classic" and typed_listing is False:
            unsupported[group_type] = TypeUnsupported(
                group_type, f"the brokers answer ListGroups below v{TYPED_LIST_GROUPS_VERSION}, which names no group "
                            f"types: only classic groups exist on this cluster")
    return unsupported


# -- the I/O half ---------------------------------------------------------------------------------------

class GroupReader:
    """Lists and describes the groups of one cluster (see the module). The constructor connects
    to nothing. ``coordinators`` may be shared with another batched reader of the same client."""

    def __init__(self, client: BatchedClient, coordinators: Coordinators | None = None) -> None:
        self.client = client
        self.listing = Listing(client)
        self._coordinators = coordinators if coordinators is not None else Coordinators()
        self.unsupported: dict[str, TypeUnsupported] = {}
        """Group type -> why the brokers cannot describe it (filled by every call that reached them)."""

    def list_groups(self, timeout: float, types: Sequence[str] | None = None) -> list[GroupListing] | None:
        """Every group of ``types`` (every type when None) with its type, protocol type and state,
        from every broker that answers; None when no broker answered (``client.unavailable_reason``
        says why)."""
        unknown = [t for t in types or () if t not in GROUP_TYPES]
        if unknown:
            raise ValueError(f"unknown group types {unknown}; known: {', '.join(GROUP_TYPES)}")
        listed = self.listing.read_typed(timeout, types)
        if listed is not None:
            self._note_support(timeout)
        return listed

    def describe(self, listings: Iterable[GroupListing], timeout: float) -> dict[str, GroupDescription | GroupReadError]:
        """Group id -> its description by the call of its type, or why it could not be described."""
        by_type: dict[GroupTypeName, list[str]] = {}
        answers: dict[str, GroupDescription | GroupReadError] = {}
        for listing in listings:
            if listing.type in DESCRIBE_CALLS:
                by_type.setdefault(listing.type, []).append(listing.group_id)
            else:
                answers[listing.group_id] = GroupReadError(listing.group_id, f"unknown group type {listing.type!r}")
        self._drop_unsupported(timeout, by_type, answers)
        answers.update(self._run({DESCRIBE_CALLS[t]: ids for t, ids in by_type.items()}, timeout))
        not_ready = {g: d for g, d in answers.items() if isinstance(d, StreamsGroup) and d.state == NOT_READY}
        if not_ready:
            missing = self._missing_topics(sorted({t for d in not_ready.values() for t in d.source_topics}), timeout)
            answers.update((g, with_missing_topics(d, missing)) for g, d in not_ready.items())
        return answers

    def share_offsets(self, group_ids: Sequence[str], timeout: float) -> dict[str, tuple[SharePartitionOffset, ...] | GroupReadError]:
        """Share group -> the start offset and lag of each of its partitions (every topic it has
        offsets for), or why they could not be read."""
        if not group_ids:
            return {}
        try:
            manager = self._manager(timeout)
        except Unavailable as reason:
            return {g: GroupReadError(g, str(reason)) for g in group_ids}
        if api_version(manager, SHARE_OFFSETS.request_class()) < SHARE_OFFSETS.min_version:
            why = f"the brokers do not speak {SHARE_OFFSETS.name}: {SHARE_OFFSETS.missing}"
            self.unsupported.setdefault("share", TypeUnsupported("share", why))
            return {g: GroupReadError(g, why) for g in group_ids}
        return self._run({SHARE_OFFSETS: list(group_ids)}, timeout)

    # -- internals ------------------------------------------------------------------------------------

    def _missing_topics(self, topics: list[str], timeout: float) -> set[str]:
        """Which of ``topics`` do not exist (one Metadata request; none known when it fails)."""
        from kafka.protocol.metadata import MetadataRequest

        if not topics:
            return set()
        request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
                                  allow_auto_topic_creation=False)

        async def ask(manager: ConnectionManager, deadline: float) -> Any:
            return await answer(send(manager, request, None, remaining_ms(deadline, self.client.clock)))

        try:
            manager = self._manager(timeout)
            response = manager.run(ask, manager, self.client.clock() + timeout)
        except Exception:  # noqa: BLE001 - the group is shown NotReady without the topics it waits for
            return set()
        return missing_topics_from(response.topics)

    def _manager(self, timeout: float) -> ConnectionManager:
        from kafka.protocol.metadata import FindCoordinatorRequest

        return self.client.manager(timeout, {FindCoordinatorRequest: FIND_COORDINATOR_VERSION})

    def _note_support(self, timeout: float) -> None:
        try:
            manager = self._manager(timeout)
        except Unavailable:
            return
        self.unsupported = unsupported_types(lambda call: api_version(manager, call.request_class()),
                                             self.listing.typed)

    def _drop_unsupported(self, timeout: float, by_type: dict[GroupTypeName, list[str]],
                          answers: dict[str, GroupDescription | GroupReadError]) -> None:
        """Drops from ``by_type`` the types the brokers cannot describe; their groups get the reason
        in ``answers``."""
        self._note_support(timeout)
        for group_type in [t for t in by_type if t in self.unsupported]:
            for group_id in by_type.pop(group_type):
                answers[group_id] = GroupReadError(group_id, self.unsupported[group_type].reason)

    def _run(self, work: dict[GroupCall, list[str]], timeout: float) -> dict[str, Any]:
        work = {call: ids for call, ids in work.items() if ids}
        if not work:
            return {}
        try:
            manager = self._manager(timeout)
            return manager.run(self._ask, manager, work, self.client.clock() + timeout)
        except Unavailable as reason:
            return {g: GroupReadError(g, str(reason)) for ids in work.values() for g in ids}

    async def _ask(self, manager: ConnectionManager, work: dict[GroupCall, list[str]], deadline: float) -> dict[str, Any]:
        clock = self.client.clock
        answers: dict[str, Any] = {}
        pending = dict(work)
        for attempt in range(2):  # a second time only for groups whose coordinator moved
            unknown = sorted({g for ids in pending.values() for g in ids if g not in self._coordinators})
            if unknown:
                unlocated: Mapping[str, Exception]
                try:
                    unlocated = await self._coordinators.locate(manager, unknown, deadline, clock)
                except Unavailable as reason:
                    unlocated = {g: reason for g in unknown}
                answers.update((g, GroupReadError(g, str(why))) for g, why in unlocated.items())
            sent = []
            for call, ids in pending.items():
                for node, groups in self._coordinators.by_node(ids).items():
                    request = call.build(groups)
                    sent.append((call, node, groups, send(manager, request, node, remaining_ms(deadline, clock))))
            pending = {}
            for call, node, groups, future in sent:
                try:
                    response = await answer(future)
                except Exception as error:  # noqa: BLE001 - that coordinator's groups say why
                    for group in groups:
                        self._coordinators.pop(group, None)
                        answers[group] = GroupReadError(group, f"{one_line(error)} ({call.name} to broker {node})")
                    continue
                read, failed, moved = answers_from(call, response.groups)
                answers.update(read)
                answers.update(failed)
                for group in moved:
                    self._coordinators.pop(group, None)
                if attempt == 0 and moved and clock() < deadline:
                    pending.setdefault(call, []).extend(sorted(moved))
                for group in set(groups) - read.keys() - failed.keys():
                    answers[group] = GroupReadError(group, f"the coordinator's {call.name} answer left the group out")
            if not pending:
                break
        return answers


def read_group(cluster_config: ClusterConfig, group_id: str, timeout: float = 10.0) -> tuple[GroupListing, GroupDescription]:
    """One group of ``cluster_config``, listed and described (for the operations and the CLI).

    Raises :class:`GroupNotFound` when the cluster has no such group, :class:`GroupUnreadable`
    (one line naming the bootstrap servers) when the cluster cannot be listed or the group not
    described."""
    client = BatchedClient(cluster_config, client_id="kpulse-group-reader", fallback_note=None)
    where = f"cluster {cluster_config.name!r} ({cluster_config.bootstrap_servers})"
    try:
        reader = GroupReader(client)
        listed = reader.list_groups(timeout)
        if listed is None:
            raise GroupUnreadable(f"cannot list the groups of {where}: {client.unavailable_reason}")
        listing = next((g for g in listed if g.group_id == group_id), None)
        if listing is None:
            raise GroupNotFound(f"group {group_id!r} does not exist on cluster {cluster_config.name!r}")
        described = reader.describe([listing], timeout)[group_id]
        if isinstance(described, GroupReadError):
            raise GroupUnreadable(f"cannot describe {listing.type} group {group_id!r} of {where}: {described.reason}")
        return listing, described
    finally:
        client.close()
