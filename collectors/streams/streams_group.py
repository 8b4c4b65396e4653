"""Kafka Streams groups (KIP-1071, ``group.protocol=streams``) as the Streams apps page shows them:
pure functions over the reader's :class:`~kpulse.kafka.group_model.StreamsGroup`, no I/O.

- :func:`input_partitions` picks the partitions whose lag is shown, as ``kafka-streams-groups``
  4.3.1 does (see the function);
- :func:`input_lag` turns committed offsets and log ends/starts into per-partition lag rows;
- :func:`missing_topics` tells which of the topology's topics a NotReady group lacks;
- :func:`group_view` is the snapshot's ``group`` entry of a Streams app;
- :func:`group_observations` turns the group state and the members' epochs into the observations
  the :class:`~collectors.streams.streams_state.TransitionTracker` records transitions from.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from collectors.streams.streams_state import GROUP_INSTANCE, Observation
from kpulse.kafka.group_model import StreamsGroup, StreamsMember, Tasks
from kpulse.snapshot import (StreamsGroupDetail, StreamsGroupMember, StreamsInputPartition, StreamsInputScopeName,
                             StreamsMemberStateName)

MEMBER_PREFIX = "member "
"""Transitions of one member are those of instance ``member <member id>``."""
MEMBER_STABLE: Final = "Stable"
MEMBER_RECONCILING: Final = "Reconciling"
MEMBER_LEFT: Final = "Left"
"""Member states: at its target assignment, still moving towards it, gone from the group."""
ASSIGNED: Final = "assigned"
COMMITTED: Final = "committed"
"""How the input partitions were chosen (:func:`input_partitions`)."""
NOT_READY: Final = "NotReady"


def member_instance(member_id: str) -> str:
    return MEMBER_PREFIX + member_id


def source_topics_by_subtopology(group: StreamsGroup) -> dict[str, tuple[str, ...]]:
    """Subtopology id -> the topics its tasks read (source topics and repartition source topics)."""
    return {s.subtopology_id: tuple(dict.fromkeys((*s.source_topics, *s.repartition_source_topics)))
            for s in group.subtopologies}


def input_partitions(group: StreamsGroup, committed: Iterable[tuple[str, int]] = ()
                     ) -> tuple[StreamsInputScopeName, list[tuple[str, int]]]:
    """The partitions whose lag kpulse shows, and how they were chosen, as the official tool does:

    - a group with members: every partition of every member's *current* active tasks, on every
      topic its subtopology reads (source and repartition source topics); ``kafka-streams-groups
      --describe --offsets`` lists exactly those (:data:`ASSIGNED`);
    - a group without members (Empty, Dead): the partitions with a committed offset on the
      subtopologies' source topics, as ``kafka-streams-groups --reset-offsets --to-current
      --all-input-topics --dry-run`` lists them (the describe prints nothing then) (:data:`COMMITTED`).

    Sorted by topic and partition."""
    if group.members:
        topics = source_topics_by_subtopology(group)
        chosen = {(topic, partition) for member in group.members
                  for subtopology, partitions in member.active_tasks.items()
                  for topic in topics.get(subtopology, ()) for partition in partitions}
        return ASSIGNED, sorted(chosen)
    sources = {t for s in group.subtopologies for t in s.source_topics}
    return COMMITTED, sorted(key for key in committed if key[0] in sources)


@dataclass(frozen=True)
class InputLag:
    """The input lag of one group."""

    partitions: list[StreamsInputPartition]
    total_lag: int | None
    """Sum over the partitions whose lag is known; None when none is."""


def input_lag(keys: Iterable[tuple[str, int]], committed: Mapping[tuple[str, int], int] | None,
              log_ends: Mapping[tuple[str, int], int], log_starts: Mapping[tuple[str, int], int],
              errors: Mapping[tuple[str, int], str], committed_error: str | None = None) -> InputLag:
    """Lag per partition as ``kafka-streams-groups --describe --offsets`` computes it: log end minus
    the committed offset; for a partition without a committed offset, log end minus log start (the
    whole log is ahead of the group). kpulse clamps at 0 where the tool would print a negative lag.

    ``committed`` None: the group's offsets could not be read (``committed_error`` says why): every
    lag is null. ``errors``: (topic, partition) -> why its log end (or start) could not be read."""
    rows: list[StreamsInputPartition] = []
    for key in keys:
        offset = None if committed is None else committed.get(key)
        end, start = log_ends.get(key), log_starts.get(key)
        reason = None
        if committed is None:
            lag, reason = None, committed_error or "committed offsets not read"
        elif end is None:
            lag, reason = None, errors.get(key, "log end not read")
        elif offset is not None:
            lag = max(end - offset, 0)
        elif start is None:
            lag, reason = None, errors.get(key, "log start not read")
        else:
            lag = max(end - start, 0)
        rows.append({"topic": key[0], "partition": key[1], "committed_offset": offset, "log_end_offset": end,
                     "lag": lag, "error": reason})
    known = [r["lag"] for r in rows if r["lag"] is not None]
    return InputLag(rows, sum(known) if known else None)


def missing_topics(group: StreamsGroup, topic_names: Iterable[str] | None) -> list[str] | None:
    """For a NotReady group, the topology's topics (source, repartition, changelog) the cluster
    does not have. StreamsGroupDescribe does not say why a group is NotReady (only the members'
    heartbeat answers carry that status), so it is read off the cluster's topic names. None when
    it cannot be told: the group is not NotReady, the topic names are unknown, or the broker sent
    no subtopologies (it does not while source topics are missing or wrongly partitioned)."""
    if group.state != NOT_READY or topic_names is None or not group.subtopologies:
        return None
    present = set(topic_names)
    wanted = {t for s in group.subtopologies
              for t in (*s.source_topics, *s.repartition_source_topics, *s.state_changelog_topics)}
    return sorted(wanted - present)


def _tasks(tasks: Tasks) -> dict[str, list[int]]:
    return {subtopology: list(partitions) for subtopology, partitions in sorted(tasks.items())}


def member_reconciling(member: StreamsMember, assignment_epoch: int) -> bool:
    """Still moving towards its target: tasks differ from the target's, or its epoch is behind the
    group's target assignment epoch."""
    return member.reconciling or member.member_epoch != assignment_epoch


def _member_view(member: StreamsMember, assignment_epoch: int) -> StreamsGroupMember:
    return {"member_id": member.member_id, "member_epoch": member.member_epoch, "process_id": member.process_id,
            "client_id": member.client_id, "client_host": member.client_host, "instance_id": member.instance_id,
            "user_endpoint": member.user_endpoint, "topology_epoch": member.topology_epoch,
            "is_classic": member.is_classic, "reconciling": member_reconciling(member, assignment_epoch),
            "active_tasks": _tasks(member.active_tasks), "standby_tasks": _tasks(member.standby_tasks),
            "warmup_tasks": _tasks(member.warmup_tasks), "target_active_tasks": _tasks(member.target_active_tasks),
            "target_standby_tasks": _tasks(member.target_standby_tasks),
            "target_warmup_tasks": _tasks(member.target_warmup_tasks)}


def group_view(group: StreamsGroup, topic_names: Iterable[str] | None, scope: StreamsInputScopeName, lag: InputLag,
               lag_error: str | None = None) -> StreamsGroupDetail:
    """The snapshot's ``group`` entry of a Streams app on the streams protocol."""
    return {
        "state": group.state, "group_epoch": group.group_epoch, "assignment_epoch": group.assignment_epoch,
        "topology_epoch": group.topology_epoch, "missing_topics": missing_topics(group, topic_names),
        "subtopologies": [{"subtopology_id": s.subtopology_id, "source_topics": list(s.source_topics),
                           "repartition_source_topics": list(s.repartition_source_topics),
                           "repartition_sink_topics": list(s.repartition_sink_topics),
                           "changelog_topics": list(s.state_changelog_topics)}
                          for s in sorted(group.subtopologies, key=lambda s: s.subtopology_id)],
        "members": [_member_view(m, group.assignment_epoch)
                    for m in sorted(group.members, key=lambda m: (m.process_id, m.client_id, m.member_id))],
        "input_scope": scope, "input_partitions": lag.partitions, "total_lag": lag.total_lag,
        "lag_error": lag_error,
    }


# --- transitions from the group ------------------------------------------------------------------

def group_observations(group: StreamsGroup | None, known_members: Iterable[str]) -> dict[str, Observation]:
    """What the transition tracker observes of a Streams group this cycle:

    - instance :data:`GROUP_INSTANCE`: the group's state, with its target assignment epoch as the
      counter of rebalances (a rebalance that started and ended between two cycles leaves the
      state Stable but advances that epoch: the tracker records an inferred pass through
      REBALANCING; only between two Stable cycles, as epochs move in NotReady and Empty too);
    - one instance per member (:func:`member_instance`): :data:`MEMBER_STABLE`, or
      :data:`MEMBER_RECONCILING` while its epoch is behind the target assignment epoch or its
      tasks are not its target's; :data:`MEMBER_LEFT` for a member of ``known_members`` that is no
      longer in the group.

    ``group`` None (not read this cycle): nothing is observed, the last states are kept."""
    if group is None:
        return {}
    seen: dict[str, Observation] = {
        GROUP_INSTANCE: Observation(group.state, process_id=group.group_id,
                                    rebalances_total=float(group.assignment_epoch))}
    present = set()
    for member in group.members:
        instance = member_instance(member.member_id)
        present.add(instance)
        state: StreamsMemberStateName = MEMBER_RECONCILING if member_reconciling(member, group.assignment_epoch) else MEMBER_STABLE
        seen[instance] = Observation(state, process_id=member.member_id)
    for instance in known_members:
        if instance.startswith(MEMBER_PREFIX) and instance not in present:
            seen[instance] = Observation(MEMBER_LEFT, process_id=None)
    return seen
