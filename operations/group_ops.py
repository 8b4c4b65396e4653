"""Planners (read the cluster, change nothing) and executors (re-check, apply, read back) of the
operations on Kafka 4's group types; the plans and the decisions are :mod:`operations.group_plans`.

Each takes ``read(group_id) -> (GroupListing, GroupDescription)`` (the group reader's
``read_group`` on the cluster), ``requests`` (:class:`operations.group_requests.GroupRequests`:
offsets, commits, deletions through the group's coordinator) and ``admin`` (confluent-kafka's
Admin: metadata, log offsets, topic deletion). Every executor reads the group again right before
it applies: a group that gained a member, changed type or offsets since the plan is refused, and
nothing changes.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from collections.abc import Callable

from kpulse.errors import KpulseError
from operations import kafka_reads
from operations.errors import BadInput, OperationError, Refused
from operations.group_plans import (
    SHARE_STRATEGIES, STREAMS_GROUP_STRATEGIES, DeleteGroupPlan, DeleteOffsetsPlan, GroupOffset, ShareResetPlan,
    StreamsGroupResetPlan, check_strategy, input_partitions, refuse_unless_inactive, refuse_wrong_type,
    streams_foreign_topics, streams_internal_topics,
)
from kpulse.kafka.group_describe import GroupNotFound
from operations.group_requests import GroupRequests
from operations.internal_topics import refuse_internal_topics
from operations.offset_plan import PartitionReset, Scope, Strategy, TopicPartition, choose_offsets
from operations.offset_reset import (
    PartitionOutcome, ResetOutcome, kafka_errors_text, offsets_at_time, read_plan_file, refuse_empty_id,
    refuse_invalid_offsets, strategy_timestamp_ms,
)
from operations.streams_reset import StreamsResetOutcome, delete_topics, wait_deleted
from operations.streams_reset_plan import LOCAL_STATE_NOTE

Read = Callable[[str], tuple]


@dataclass(frozen=True)
class GroupChangeOutcome:
    """What a delete-offsets or delete-group executor did: ``result`` ``ok``, ``partial`` or ``failed``."""

    result: str
    partitions: tuple[dict, ...]
    """{topic, partition, before, after, error}: ``after`` read back (None: no offset any more)."""
    deleted: tuple[str, ...]
    """Topics deleted (a Streams group's internal topics)."""
    error: str | None

    def to_dict(self) -> dict:
        return asdict(self)


def read_group_now(read: Read, group_id: str) -> tuple:
    """``read(group_id)``; an unknown group is :class:`BadInput`, a group that cannot be read an
    :class:`OperationError` (both one line)."""
    refuse_empty_id(group_id, "group id")
    try:
        return read(group_id)
    except GroupNotFound:
        raise BadInput(f"unknown group {group_id!r}: the cluster lists no group of that name; nothing changed") from None
    except OperationError:
        raise
    except KpulseError as error:
        raise OperationError(str(error)) from None


def _offsets_now(requests: GroupRequests, group_type: str, group_id: str) -> dict[TopicPartition, int | None]:
    """Committed offsets, or a share group's start offsets."""
    if group_type == "share":
        return requests.share_start_offsets(group_id)
    return dict(requests.committed(group_id))


def _rows(admin, partitions: list[TopicPartition], strategy: Strategy, positions: dict[TopicPartition, int],
          current: dict, timestamp_ms: int | None, file_offsets=None) -> tuple[tuple[PartitionReset, ...], tuple[str, ...]]:
    log_start = kafka_reads.log_offsets(admin, partitions, "earliest")
    log_end = kafka_reads.log_offsets(admin, partitions, "latest")
    at_time = offsets_at_time(admin, partitions, timestamp_ms, log_start) if timestamp_ms is not None else None
    chosen = choose_offsets(strategy, partitions, positions, log_start, log_end, timestamp_offsets=at_time,
                            file_offsets=file_offsets)
    rows = tuple(PartitionReset(t, p, current.get((t, p)), log_start[(t, p)], log_end[(t, p)], new, requested)
                 for (t, p), (new, requested) in sorted(chosen.items()))
    warnings = tuple(f"{r.topic}-{r.partition}: requested {r.requested}, clamped to {r.new} "
                     f"(log {r.log_start}..{r.log_end})" for r in rows if r.clamped)
    return rows, warnings


def _scoped_partitions(admin, scope: Scope) -> dict[str, list[int]]:
    return kafka_reads.topic_partitions(admin, [t for t, _ in scope.topics])


# --- Streams group reset --------------------------------------------------------------------------

def plan_streams_group_reset(admin, requests: GroupRequests, read: Read, cluster: str, group_id: str, scope: Scope,
                             strategy: Strategy, *, delete_internal_topics: bool = False,
                             clock: Callable[[], float] = time.time,
                             include_internal: bool = False) -> StreamsGroupResetPlan:
    refuse_empty_id(group_id, "group id")
    check_strategy(strategy, STREAMS_GROUP_STRATEGIES, "kafka-streams-groups --reset-offsets")
    timestamp_ms = strategy_timestamp_ms(strategy, clock)
    file_offsets = read_plan_file(strategy.value, group_id) if strategy.name == "from-file" else None
    if file_offsets is None and not scope.all_topics and not scope.topics:
        raise BadInput("one of the reset scopes is needed: --all-input-topics or --input-topic")
    listing, group = read_group_now(read, group_id)
    refuse_wrong_type(group_id, listing.type, ("streams",), "a Streams group reset")
    refuse_unless_inactive(group, f"cannot reset the offsets of group {group_id!r}")
    committed = requests.committed(group_id)
    if file_offsets is not None:
        existing = kafka_reads.topic_partitions(admin, sorted({t for t, _ in file_offsets}))
        missing = [f"{t}-{p}" for t, p in sorted(file_offsets) if p not in existing[t]]
        if missing:
            raise BadInput(f"partition(s) {', '.join(missing)} do not exist")
        partitions = sorted(file_offsets)
    else:
        existing = _scoped_partitions(admin, scope) if not scope.all_topics else {}
        partitions = input_partitions(group_id, scope, committed, {t for s in group.subtopologies
                                                                  for t in s.source_topics}, existing)
    refuse_internal_topics((t for t, _ in partitions), include_internal, "resetting offsets")
    rows, warnings = _rows(admin, partitions, strategy, committed, committed, timestamp_ms, file_offsets)
    delete = streams_internal_topics(group) if delete_internal_topics else ()
    refuse_internal_topics(delete, include_internal, "a Streams group reset")
    topics = kafka_reads.all_topics(admin)
    absent = [t for t in delete if t not in topics]
    warnings += tuple(f"internal topic {t} does not exist (nothing to delete)" for t in absent)
    return StreamsGroupResetPlan(cluster=cluster, group_id=group_id, group_state=group.state, strategy=strategy,
                                 scope=scope, partitions=rows, delete_topics=tuple(t for t in delete if t in topics),
                                 planned_at=clock(), kept_topics=streams_foreign_topics(group), warnings=warnings)


def execute_streams_group_reset(admin, requests: GroupRequests, read: Read, plan: StreamsGroupResetPlan, *,
                                include_internal: bool = False, settle_seconds: float = 30.0) -> StreamsResetOutcome:
    """Re-check (a Streams group without members; each topic to delete still one of its internal
    topics; offsets inside the log and as planned), commit the new offsets (one OffsetCommit),
    then delete the internal topics, read both back."""
    rows = plan.partitions
    refuse_internal_topics([p.topic for p in rows] + list(plan.delete_topics), include_internal, "a Streams group reset")
    listing, group = read_group_now(read, plan.group_id)
    refuse_wrong_type(plan.group_id, listing.type, ("streams",), "a Streams group reset")
    refuse_unless_inactive(group, f"cannot reset the offsets of group {plan.group_id!r}")
    stale = sorted(set(plan.delete_topics) - set(streams_internal_topics(group)))
    if stale:
        raise Refused(f"{', '.join(stale)}: no longer internal topics of group {plan.group_id!r}; the plan is stale, "
                      "plan again (nothing changed)")
    refuse_invalid_offsets(admin, rows, f"group {plan.group_id!r}")
    now = requests.committed(plan.group_id)
    _refuse_moved(plan.group_id, rows, now)
    note = LOCAL_STATE_NOTE.format(app=plan.group_id)
    errors = requests.commit(plan.group_id, plan.new_offsets()) if rows else {}
    failed_commit = any(errors.values())
    delete_errors = delete_topics(admin, plan.delete_topics) if not failed_commit else {}
    remaining = wait_deleted(admin, [t for t in plan.delete_topics if t not in delete_errors], settle_seconds) \
        if not failed_commit else list(plan.delete_topics)
    after = requests.committed(plan.group_id)
    partitions = []
    for p in rows:
        got = after.get((p.topic, p.partition))
        error = errors.get((p.topic, p.partition)) or (None if got == p.new else f"committed offset is {got}, "
                                                                                 f"expected {p.new}")
        partitions.append({"topic": p.topic, "partition": p.partition, "before": p.current, "new": p.new,
                           "after": got, "error": error})
    problems = [f"{t}: {e}" for t, e in delete_errors.items()] + [f"{t}: still exists" for t in remaining
                                                                  if t not in delete_errors]
    failed = sum(r["error"] is not None for r in partitions) + len(problems)
    total = len(partitions) + len(plan.delete_topics)
    result = "ok" if not failed else "failed" if failed == total else "partial"
    answered = kafka_errors_text(errors)
    error = "; ".join(([f"{failed - len(problems)} partition(s) not as planned"] if failed > len(problems) else [])
                      + ([answered] if answered else []) + problems) or None
    deleted = tuple(t for t in plan.delete_topics if t not in delete_errors and t not in remaining)
    return StreamsResetOutcome(result, tuple(partitions), deleted, error, note)


def _refuse_moved(group_id: str, rows, now: dict) -> None:
    moved = [f"{p.topic}-{p.partition}: {p.current} -> {now.get((p.topic, p.partition))}"
             for p in rows if now.get((p.topic, p.partition)) != p.current]
    if moved:
        raise Refused(f"the offsets of group {group_id!r} changed since the plan was made "
                      f"({'; '.join(moved[:5])}); plan again (nothing changed)")


# --- share group reset ----------------------------------------------------------------------------

def plan_share_reset(admin, requests: GroupRequests, read: Read, cluster: str, group_id: str, scope: Scope,
                     strategy: Strategy, *, clock: Callable[[], float] = time.time,
                     include_internal: bool = False) -> ShareResetPlan:
    refuse_empty_id(group_id, "group id")
    check_strategy(strategy, SHARE_STRATEGIES, "kafka-share-groups --reset-offsets")
    timestamp_ms = strategy_timestamp_ms(strategy, clock)
    if not scope.all_topics and not scope.topics:
        raise BadInput("one of the reset scopes is needed: --all-topics or --topic")
    listing, group = read_group_now(read, group_id)
    refuse_wrong_type(group_id, listing.type, ("share",), "a share group reset")
    refuse_unless_inactive(group, f"cannot reset the start offsets of share group {group_id!r}")
    current = requests.share_start_offsets(group_id)
    if scope.all_topics:
        partitions = sorted(current)
    else:
        existing = _scoped_partitions(admin, scope)
        partitions = sorted({(t, p) for t, chosen in scope.topics for p in (chosen if chosen is not None else existing[t])})
        missing = [f"{t}-{p}" for t, p in partitions if p not in existing[t]]
        if missing:
            raise BadInput(f"partition(s) {', '.join(missing)} do not exist")
    refuse_internal_topics((t for t, _ in partitions), include_internal, "resetting offsets")
    known = {tp: o for tp, o in current.items() if o is not None}
    rows, warnings = _rows(admin, partitions, strategy, known, current, timestamp_ms)
    return ShareResetPlan(cluster=cluster, group_id=group_id, group_state=group.state, strategy=strategy, scope=scope,
                          partitions=rows, planned_at=clock(), warnings=warnings)


def execute_share_reset(admin, requests: GroupRequests, read: Read, plan: ShareResetPlan, *,
                        include_internal: bool = False) -> ResetOutcome:
    """Re-check (a share group without members, offsets inside the log, start offsets as planned),
    alter the start offsets (one AlterShareGroupOffsets), read them back."""
    refuse_internal_topics([p.topic for p in plan.partitions], include_internal, "resetting offsets")
    listing, group = read_group_now(read, plan.group_id)
    refuse_wrong_type(plan.group_id, listing.type, ("share",), "a share group reset")
    refuse_unless_inactive(group, f"cannot reset the start offsets of share group {plan.group_id!r}")
    refuse_invalid_offsets(admin, plan.partitions, f"share group {plan.group_id!r}")
    _refuse_moved(plan.group_id, plan.partitions, requests.share_start_offsets(plan.group_id))
    top, errors = requests.alter_share_offsets(plan.group_id, plan.new_offsets()) if plan.partitions else (None, {})
    after = requests.share_start_offsets(plan.group_id)
    rows = []
    for p in plan.partitions:
        key = (p.topic, p.partition)
        error = errors.get(key) or (top if top else None)
        if error is None and after.get(key) != p.new:
            error = f"start offset is {after.get(key)} after the reset, expected {p.new}"
        rows.append(PartitionOutcome(p.topic, p.partition, p.current, p.new, after.get(key), error))
    failed = [r for r in rows if r.error is not None]
    result = "ok" if not failed else "failed" if len(failed) == len(rows) else "partial"
    summary = (f"{len(failed)} of {len(rows)} partition(s) not as planned: "
               + ", ".join(f"{r.topic}-{r.partition} ({r.error})" for r in failed[:5])) if failed else None
    return ResetOutcome(result, tuple(rows), summary)


# --- delete offsets ---------------------------------------------------------------------------------

def plan_delete_offsets(admin, requests: GroupRequests, read: Read, cluster: str, group_id: str, topics: list[str], *,
                        clock: Callable[[], float] = time.time, include_internal: bool = False) -> DeleteOffsetsPlan:
    refuse_empty_id(group_id, "group id")
    if not topics:
        raise BadInput("--topic is needed: the topics whose offsets the group forgets")
    refuse_internal_topics(topics, include_internal, "deleting offsets")
    listing, group = read_group_now(read, group_id)
    refuse_unless_inactive(group, f"cannot delete the offsets of group {group_id!r}")
    kafka_reads.topic_partitions(admin, list(topics))  # an unknown topic: did you mean
    offsets = _offsets_now(requests, listing.type, group_id)
    rows = tuple(GroupOffset(t, p, o) for (t, p), o in sorted(offsets.items()) if t in topics)
    without = sorted(set(topics) - {r.topic for r in rows})
    if without:
        raise BadInput(f"group {group_id!r} has no offsets on topic(s) {', '.join(without)}: nothing to delete")
    return DeleteOffsetsPlan(cluster=cluster, group_id=group_id, group_type=listing.type, group_state=group.state,
                             topics=tuple(sorted(set(topics))), partitions=rows, planned_at=clock())


def execute_delete_offsets(admin, requests: GroupRequests, read: Read, plan: DeleteOffsetsPlan, *,
                           include_internal: bool = False) -> GroupChangeOutcome:
    refuse_internal_topics(plan.topics, include_internal, "deleting offsets")
    listing, group = read_group_now(read, plan.group_id)
    if listing.type != plan.group_type:
        raise Refused(f"group {plan.group_id!r} is a {listing.type} group now, planned as {plan.group_type}; "
                      "plan again (nothing changed)")
    refuse_unless_inactive(group, f"cannot delete the offsets of group {plan.group_id!r}")
    keys = [(r.topic, r.partition) for r in plan.partitions]
    if plan.group_type == "share":
        top, per_topic = requests.delete_share_offsets(plan.group_id, plan.topics)
        errors = {tp: per_topic.get(tp[0]) for tp in keys}
    else:
        top, errors = requests.delete_offsets(plan.group_id, keys)
    after = _offsets_now(requests, plan.group_type, plan.group_id)
    rows = []
    for r in plan.partitions:
        key = (r.topic, r.partition)
        error = errors.get(key) or top
        if error is None and key in after and (plan.group_type != "share" or after[key] is not None):
            error = f"still has offset {after[key]}"
        rows.append({"topic": r.topic, "partition": r.partition, "before": r.offset, "after": after.get(key),
                     "error": error})
    return _outcome(rows, (), [])


def _outcome(rows: list[dict], deleted: tuple[str, ...], problems: list[str]) -> GroupChangeOutcome:
    failed = sum(r["error"] is not None for r in rows) + len(problems)
    total = len(rows) + len(deleted) + len(problems)
    result = "ok" if not failed else "failed" if failed >= total else "partial"
    errors = sorted({r["error"] for r in rows if r["error"]}) + problems
    return GroupChangeOutcome(result, tuple(rows), deleted, "; ".join(errors[:5]) or None)


# --- delete group -----------------------------------------------------------------------------------

def plan_delete_group(admin, requests: GroupRequests, read: Read, cluster: str, group_id: str, *,
                      delete_internal_topics: bool = False, clock: Callable[[], float] = time.time) -> DeleteGroupPlan:
    listing, group = read_group_now(read, group_id)
    if delete_internal_topics and listing.type != "streams":
        raise BadInput(f"--delete-all-internal-topics applies to a streams group; {group_id!r} is a {listing.type} "
                       "group (a classic Streams app's topics go with kpulse reset-streams-app)")
    refuse_unless_inactive(group, f"cannot delete group {group_id!r}")
    offsets = _offsets_now(requests, listing.type, group_id)
    delete: tuple[str, ...] = ()
    if delete_internal_topics:
        topics = kafka_reads.all_topics(admin)
        delete = tuple(t for t in streams_internal_topics(group) if t in topics)
    return DeleteGroupPlan(cluster=cluster, group_id=group_id, group_type=listing.type, group_state=group.state,
                           offsets=tuple(GroupOffset(t, p, o) for (t, p), o in sorted(offsets.items())),
                           delete_topics=delete, planned_at=clock())


def execute_delete_group(admin, requests: GroupRequests, read: Read, plan: DeleteGroupPlan, *,
                         include_internal: bool = False, settle_seconds: float = 30.0) -> GroupChangeOutcome:
    """Re-check (same type, no member; topics to delete still its internal topics), DeleteGroups,
    then (only once the group is gone, as the official tool) delete the internal topics; read back
    that the group is no longer listed and the topics are gone."""
    refuse_internal_topics(plan.delete_topics, include_internal, "deleting a group's internal topics")
    listing, group = read_group_now(read, plan.group_id)
    if listing.type != plan.group_type:
        raise Refused(f"group {plan.group_id!r} is a {listing.type} group now, planned as {plan.group_type}; "
                      "plan again (nothing changed)")
    refuse_unless_inactive(group, f"cannot delete group {plan.group_id!r}")
    if plan.delete_topics:
        stale = sorted(set(plan.delete_topics) - set(streams_internal_topics(group)))
        if stale:
            raise Refused(f"{', '.join(stale)}: no longer internal topics of group {plan.group_id!r}; plan again "
                          "(nothing changed)")
    error = requests.delete_group(plan.group_id)
    problems = [f"DeleteGroups: {error}"] if error else []
    delete_errors, remaining = {}, []
    if not error:
        try:
            read(plan.group_id)
            problems.append(f"group {plan.group_id!r} is still listed after DeleteGroups")
        except GroupNotFound:
            pass
        delete_errors = delete_topics(admin, plan.delete_topics)
        remaining = wait_deleted(admin, [t for t in plan.delete_topics if t not in delete_errors], settle_seconds)
        problems += [f"{t}: {e}" for t, e in delete_errors.items()] + [f"{t}: still exists" for t in remaining]
    deleted = tuple(t for t in plan.delete_topics if t not in delete_errors and t not in remaining) if not error else ()
    rows = [{"topic": o.topic, "partition": o.partition, "before": o.offset, "after": None if not error else o.offset,
             "error": None} for o in plan.offsets]
    failed = len(problems)
    result = "ok" if not failed else "failed" if error else "partial"
    return GroupChangeOutcome(result, tuple(rows), deleted, "; ".join(problems) or None)
