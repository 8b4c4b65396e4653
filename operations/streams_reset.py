"""Kafka Streams application reset (``kafka-streams-application-reset``): the planner (reads the
cluster, changes nothing) and the executor (re-checks, commits, deletes, reads back). The plan, its
semantics and the decision of whose an internal topic is are :mod:`operations.streams_reset_plan`.

The application id must exist as a group (listed, or with committed offsets). Refused while the
application, or any existing application whose id starts with ``<application.id>-`` and could own
one of its candidate topics, has active members, or is a streams- or share-protocol group (this
reset reads classic and consumer groups; a Streams group is reset by ``reset-streams-group``, which
``reset-streams-app`` picks by the group's type). The executor checks all of it again, so a stale,
saved or approved plan deletes nothing another application owns.

The group's offsets are read and committed through the group requests (kafka-python, as in
:mod:`operations.offset_reset`), never through librdkafka (#5040).

Unlike the official tool, a typo (unknown application id, unknown topic) is an error with a
did-you-mean, never a silent skip.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from kpulse.kafka.clients import error_text
from operations import kafka_reads
from operations.errors import BadInput, OperationError, Refused, unknown
from operations.group_requests import GroupRequests
from operations.internal_topics import is_internal_topic, refuse_internal_topics
from operations.offset_plan import PartitionReset, Strategy, TopicPartition, choose_offsets
from operations.offset_reset import (
    committed_offsets, kafka_errors_text, listed_groups, offsets_at_time, read_plan_file, refuse_empty_id,
    refuse_invalid_offsets, stopped_group, strategy_timestamp_ms,
)
from operations.streams_reset_plan import STREAMS_STRATEGIES, StreamsResetPlan, topic_owners


@dataclass(frozen=True)
class _Application:
    """What the planner and the executor check before a reset (:func:`_check_application`)."""

    state: str
    own: tuple[str, ...]
    """Internal topics of the application, by name and ownership."""
    foreign: dict[str, str]
    """Topics named like its internal topics that belong to a longer application id -> that id."""


@dataclass(frozen=True)
class StreamsResetOutcome:
    result: str
    partitions: tuple[dict[str, Any], ...]
    """{topic, partition, before, new, after, error}."""
    deleted: tuple[str, ...]
    error: str | None
    local_state_note: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def plan_streams_reset(admin, requests: GroupRequests, cluster: str, application_id: str, input_topics: list[str],
                       intermediate_topics: list[str], internal_topics: list[str] | None = None,
                       strategy: Strategy | None = None, *, clock: Callable[[], float] = time.time,
                       list_groups: Callable[[], dict[str, kafka_reads.GroupListing]] | None = None,
                       include_internal: bool = False) -> StreamsResetPlan:
    """``list_groups()`` lists every group of every type (default: librdkafka's listing, which
    leaves out streams- and share-protocol groups; see :func:`kafka_reads.all_groups`). Kafka's
    internal topics are refused unless ``include_internal``."""
    refuse_empty_id(application_id, "application id")
    strategy = strategy or Strategy("to-earliest")
    if strategy.name not in STREAMS_STRATEGIES:
        raise BadInput(f"--{strategy.name} is not a Streams reset strategy; one of --{', --'.join(STREAMS_STRATEGIES)}")
    both = set(input_topics) & set(intermediate_topics)
    if both:
        raise BadInput(f"topic(s) {', '.join(sorted(both))} named as both input and intermediate")
    refuse_internal_topics(input_topics + intermediate_topics, include_internal, "a Streams reset")
    timestamp_ms = strategy_timestamp_ms(strategy, clock)
    file_offsets = read_plan_file(strategy.value, application_id) if strategy.name == "from-file" else None
    topics = kafka_reads.all_topics(admin)
    committed = committed_offsets(requests, application_id)
    named = set(input_topics) | set(intermediate_topics)
    application = _check_application(admin, list_groups, application_id, topics, committed, named)
    inferred = list(application.own)
    for topic in input_topics + intermediate_topics:
        if topic not in topics:
            raise unknown("topic", topic, set(topics))
    if internal_topics:
        for topic in internal_topics:
            if topic in application.foreign:
                raise BadInput(f"--internal-topics {topic}: belongs to application {application.foreign[topic]!r}, "
                               f"not {application_id!r}")
        extra = sorted(set(internal_topics) - set(inferred))
        if extra:
            raise BadInput(f"--internal-topics {', '.join(extra)}: not internal topics of {application_id} "
                           f"(those are: {', '.join(inferred) or 'none'})")
    input_parts = sorted((t, p) for t in input_topics for p in topics[t])
    middle_parts = sorted((t, p) for t in intermediate_topics for p in topics[t])
    every = input_parts + middle_parts
    log_start = kafka_reads.log_offsets(admin, every, "earliest")
    log_end = kafka_reads.log_offsets(admin, every, "latest")
    at_time = offsets_at_time(admin, input_parts, timestamp_ms, log_start) if timestamp_ms is not None else None
    positions = {tp: committed.get(tp, log_end[tp]) for tp in input_parts}
    if file_offsets is not None:
        file_offsets = {tp: o for tp, o in file_offsets.items() if tp in positions}
    chosen = choose_offsets(strategy, input_parts, positions, log_start, log_end,
                            timestamp_offsets=at_time, file_offsets=file_offsets)

    def row(tp: TopicPartition, new: int, requested: int | None = None) -> PartitionReset:
        return PartitionReset(tp[0], tp[1], committed.get(tp), log_start[tp], log_end[tp], new, requested)

    delete = tuple(internal_topics) if internal_topics else tuple(inferred)
    refuse_internal_topics(delete, include_internal, "a Streams reset")
    untouched = sorted({t for t, _ in committed} - named - set(inferred) - set(application.foreign))
    return StreamsResetPlan(
        cluster=cluster, application_id=application_id, group_state=application.state, strategy=strategy,
        input=tuple(row(tp, *chosen[tp]) for tp in sorted(chosen)),
        intermediate=tuple(row(tp, log_end[tp]) for tp in middle_parts),
        delete_topics=delete, untouched=tuple(untouched), planned_at=clock(),
        foreign=tuple(sorted(application.foreign.items())))


def _check_application(admin: Any, list_groups: Callable[[], dict[str, kafka_reads.GroupListing]] | None,
                       application_id: str, topics: Iterable[str], committed: dict[TopicPartition, int],
                       named: set[str]) -> _Application:
    """The application exists and is stopped, and so is every existing application whose id
    starts with ``<application_id>-`` and could own one of the candidate internal topics
    (``topics`` named like internal topics of ``application_id``, except those in ``named``)."""
    listed = listed_groups(admin, list_groups)
    if application_id not in listed and not committed:
        raise unknown("application id", application_id, set(listed))
    candidates = sorted(t for t in topics if t not in named and is_internal_topic(application_id, t))
    owners = topic_owners(application_id, candidates, listed)
    longer = sorted(g for g in listed if g.startswith(application_id + "-")
                    and any(t.startswith(g + "-") for t in candidates))
    state = _stopped_group(admin, application_id, application_id, listed.get(application_id)).state
    for group_id in longer:
        _stopped_group(admin, application_id, group_id, listed.get(group_id))
    return _Application(state, tuple(t for t in candidates if owners[t] == application_id),
                        {t: g for t, g in owners.items() if g != application_id})


def _stopped_group(admin, application_id: str, group_id: str,
                   listing: kafka_reads.GroupListing | None) -> kafka_reads.GroupView:
    """:func:`stopped_group`, the refusal naming the application or the longer one."""
    who = ("it" if group_id == application_id
           else f"application {group_id!r} (whose internal topics start with {application_id}-)")
    return stopped_group(admin, group_id, listing, f"cannot reset the Streams application {application_id!r}: {who}")


def execute_streams_reset(admin, requests: GroupRequests, plan: StreamsResetPlan, *, settle_seconds: float = 30.0,
                          list_groups: Callable[[], dict[str, kafka_reads.GroupListing]] | None = None,
                          include_internal: bool = False) -> StreamsResetOutcome:
    """Re-check (no Kafka internal topic unless ``include_internal``; the application and every
    longer application that could own its topics exist as planned and have no active member, each
    topic to delete is still the application's own, offsets as planned), commit the offsets (one
    OffsetCommit, ``requests``), then, when the coordinator took every one of them (as the official
    resetter, whose failed commit stops it), delete the internal topics; read offsets and topics back."""
    rows = plan.input + plan.intermediate
    refuse_internal_topics([p.topic for p in rows] + list(plan.delete_topics), include_internal, "a Streams reset")
    named = {p.topic for p in rows}
    topics = {**kafka_reads.all_topics(admin), **dict.fromkeys(plan.delete_topics)}
    application = _check_application(admin, list_groups, plan.application_id, topics,
                                     committed_offsets(requests, plan.application_id), named)
    for topic in plan.delete_topics:
        if topic in application.foreign:
            raise Refused(f"{topic} belongs to application {application.foreign[topic]!r}, not "
                          f"{plan.application_id!r}: the plan is stale; plan again (nothing changed)")
        if topic not in application.own:
            raise Refused(f"{topic} is not an internal topic of {plan.application_id!r}; nothing changed")
    refuse_invalid_offsets(admin, rows, f"the Streams application {plan.application_id!r}")
    now = committed_offsets(requests, plan.application_id)
    moved = [f"{p.topic}-{p.partition}" for p in rows if now.get((p.topic, p.partition)) != p.current]
    if moved:
        raise Refused(f"the offsets of {plan.application_id!r} changed since the plan was made "
                      f"({', '.join(moved[:5])}); plan again")
    failure = None
    errors: dict[tuple[str, int], str | None] = {}
    try:  # a moving coordinator is asked again by the requests
        errors = requests.commit(plan.application_id, plan.new_offsets()) if rows else {}
    except OperationError as error:
        failure = str(error)
    committed_all = failure is None and not any(errors.values())
    delete_errors = delete_topics(admin, plan.delete_topics) if committed_all else {}
    after = committed_offsets(requests, plan.application_id)
    remaining = (wait_deleted(admin, [t for t in plan.delete_topics if t not in delete_errors], settle_seconds)
                 if committed_all else [])
    kept = () if committed_all else plan.delete_topics
    partitions = []
    for p in rows:
        got = after.get((p.topic, p.partition))
        problem = errors.get((p.topic, p.partition)) or (
            None if got == p.new else (failure or f"committed offset is {got}, expected {p.new}"))
        partitions.append({"topic": p.topic, "partition": p.partition, "before": p.current, "new": p.new,
                           "after": got, "error": problem})
    problems = ([f"{t}: {e}" for t, e in delete_errors.items()] + [f"{t}: still exists" for t in remaining]
                + [f"{t}: not deleted, the offsets were not all committed" for t in kept])
    failed_partitions = sum(r["error"] is not None for r in partitions)
    failed = failed_partitions + len(problems)
    total = len(partitions) + len(plan.delete_topics)
    result = "ok" if not failed else "failed" if failed == total else "partial"
    answered = kafka_errors_text(errors)
    summary = failure or "; ".join(([f"{failed_partitions} partition(s) failed"] if failed_partitions else [])
                                   + ([answered] if answered else []) + problems) or None
    deleted = tuple(t for t in plan.delete_topics if t not in delete_errors and t not in remaining and t not in kept)
    return StreamsResetOutcome(result, tuple(partitions), deleted, summary, plan.local_state_note)


def delete_topics(admin: Any, topics: Sequence[str]) -> dict[str, str]:
    """Delete ``topics``; the error of each that could not be deleted."""
    if not topics:
        return {}
    errors = {}
    for topic, future in admin.delete_topics(list(topics), operation_timeout=30, request_timeout=kafka_reads.TIMEOUT).items():
        try:
            future.result(timeout=kafka_reads.TIMEOUT + 30)
        except Exception as error:  # noqa: BLE001 - reported per topic
            errors[topic] = error_text(error)
    return errors


def wait_deleted(admin: Any, topics: list[str], settle_seconds: float) -> list[str]:
    """The ``topics`` metadata still lists after up to ``settle_seconds``."""
    deadline = time.monotonic() + settle_seconds
    while True:
        existing = kafka_reads.all_topics(admin)
        remaining = [t for t in topics if t in existing]
        if not remaining or time.monotonic() > deadline:
            return remaining
        time.sleep(0.3)
