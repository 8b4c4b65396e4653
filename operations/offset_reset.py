"""Consumer group offset reset: the planner (reads the cluster, changes nothing) and the executor
(re-checks, applies, reads back). The choice of offsets is :mod:`operations.offset_plan`.

The group's committed offsets are read and committed through ``requests``
(:class:`operations.group_requests.GroupRequests`: kafka-python, to the group's coordinator, found
again while it moves), never through librdkafka, whose ListConsumerGroupOffsets and
AlterConsumerGroupOffsets abort the whole process on a moving coordinator (librdkafka #5040); the
confluent-kafka ``admin`` reads the group's description, metadata and log offsets.

Both refuse a group that is not stopped, or that is a streams or share group
(:func:`refuse_unless_stopped`, shared with the Streams reset; those have resets of their own):
the cluster's listing of every group type says whether it is one, which librdkafka shows as Dead
while it runs."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path
from collections.abc import Callable, Mapping

from operations import kafka_reads
from operations.errors import BadInput, OperationError, Refused, unknown
from operations.group_requests import GroupRequests
from operations.internal_topics import refuse_internal_topics
from operations.offset_plan import (
    TIMESTAMP_STRATEGIES, PartitionReset, ResetPlan, Scope, Strategy, TopicPartition, choose_offsets,
    parse_reset_csv,
)
from operations.time_specs import parse_datetime_ms, parse_duration_ms


@dataclass(frozen=True)
class PartitionOutcome:
    topic: str
    partition: int
    before: int | None
    new: int
    after: int | None
    """Committed offset read back after the change."""
    error: str | None = None


@dataclass(frozen=True)
class ResetOutcome:
    """What the executor did: ``result`` is ``ok``, ``partial`` or ``failed``."""

    result: str
    partitions: tuple[PartitionOutcome, ...]
    error: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def refuse_unless_stopped(view: kafka_reads.GroupView, listing: kafka_reads.GroupListing | None,
                          refusal: str) -> None:
    """Pure: :class:`Refused` unless the group has no active member and kpulse can read its
    members. ``view``: the group as librdkafka describes it; ``listing``: as
    :func:`kafka_reads.all_groups` lists it (None: not listed); ``refusal``: the message's start
    (``cannot reset ... 'G': it``). A streams or share group is refused whatever ``view`` says
    (librdkafka shows it as Dead, with no members, while it runs), and so is a listed group that
    librdkafka describes as Dead."""
    if listing is not None and not listing.describable:
        kind = listing.group_type
        own = {"streams": "reset-streams-group", "share": "reset-share-group"}.get(kind)
        where = (f"kpulse {own} resets {kind} groups, as kafka-{kind}-groups does" if own
                 else f"kpulse does not reset {kind or 'unknown'} groups")
        raise Refused(f"{refusal} is a {kind} group ({listing.state or 'state unknown'}), not a classic or consumer "
                      f"group; nothing changed ({where})")
    if listing is not None and view.state == "Dead":
        raise Refused(f"{refusal} is listed by the cluster ({listing.group_type or 'group'}, "
                      f"{listing.state or 'state unknown'}) but described as Dead: its members cannot be read; "
                      "nothing changed, plan again")
    if not view.inactive:
        raise Refused(f"{refusal} is {view.state} with active members {view.members_text()}; stop them first "
                      "(the group must be Empty or Dead)")


def stopped_group(admin, group_id: str, listing: kafka_reads.GroupListing | None,
                  refusal: str) -> kafka_reads.GroupView:
    """The group's view, described now, when :func:`refuse_unless_stopped` lets it pass."""
    view = kafka_reads.describe_group(admin, group_id)
    refuse_unless_stopped(view, listing, refusal)
    return view


def listed_groups(admin, list_groups: Callable[[], dict[str, kafka_reads.GroupListing]] | None):
    """``list_groups()``: every group of every type (the service's, through kafka-python); without
    it librdkafka's listing, which leaves out streams and share groups (:func:`kafka_reads.all_groups`)."""
    return list_groups() if list_groups is not None else kafka_reads.all_groups(admin)


def committed_offsets(requests: GroupRequests, group_id: str) -> dict[TopicPartition, int]:
    """The group's committed offsets (only partitions that have one), as the official
    ``kafka-consumer-groups`` and ``kafka-streams-application-reset`` read them: the last committed
    offset, a pending transactional commit unseen."""
    return requests.committed(group_id, require_stable=False)


def refuse_empty_id(value: str, what: str) -> None:
    """An empty or blank group / application id is a typo, refused before Kafka is asked (which
    answers an empty id with a bare ``ConsumerGroupDescribe:``)."""
    if not value.strip():
        raise BadInput(f"the {what} is empty" + (f" ({value!r})" if value else ""))


def plan_offset_reset(admin, requests: GroupRequests, cluster: str, group_id: str, scope: Scope, strategy: Strategy, *,
                      clock: Callable[[], float] = time.time, include_internal: bool = False,
                      list_groups: Callable[[], dict[str, kafka_reads.GroupListing]] | None = None) -> ResetPlan:
    """The reset ``strategy`` would do on ``scope``; raises :class:`BadInput` (unknown group,
    topic or partition, malformed value) or :class:`Refused` (group active or unreadable, see
    :func:`refuse_unless_stopped`; an internal topic without ``include_internal``).
    ``list_groups`` as in :func:`listed_groups`."""
    refuse_empty_id(group_id, "group id")
    timestamp_ms = strategy_timestamp_ms(strategy, clock)
    file_offsets = read_plan_file(strategy.value, group_id) if strategy.name == "from-file" else None
    if file_offsets is None and not scope.all_topics and not scope.topics:
        raise BadInput("one of the reset scopes is needed: --all-topics or --topic")
    group = kafka_reads.describe_group(admin, group_id)  # first: librdkafka names an unusable cluster at once
    listed = listed_groups(admin, list_groups)
    refuse_unless_stopped(group, listed.get(group_id), f"cannot reset the offsets of group {group_id!r}: it")
    committed = committed_offsets(requests, group_id)
    if group_id not in listed and not committed:
        raise unknown("consumer group", group_id, set(listed))
    partitions = _scope_partitions(admin, scope, committed, file_offsets)
    refuse_internal_topics((t for t, _ in partitions), include_internal, "resetting offsets")
    log_start = kafka_reads.log_offsets(admin, partitions, "earliest")
    log_end = kafka_reads.log_offsets(admin, partitions, "latest")
    at_time = offsets_at_time(admin, partitions, timestamp_ms, log_start) if timestamp_ms is not None else None
    chosen = choose_offsets(strategy, partitions, committed, log_start, log_end,
                            timestamp_offsets=at_time, file_offsets=file_offsets)
    rows = tuple(PartitionReset(topic=t, partition=p, current=committed.get((t, p)), log_start=log_start[(t, p)],
                                log_end=log_end[(t, p)], new=new, requested=requested)
                 for (t, p), (new, requested) in sorted(chosen.items()))
    warnings = tuple(f"{r.topic}-{r.partition}: requested {r.requested}, clamped to {r.new} "
                     f"(log {r.log_start}..{r.log_end})" for r in rows if r.clamped)
    return ResetPlan(cluster=cluster, group_id=group_id, group_state=group.state, strategy=strategy, scope=scope,
                     partitions=rows, planned_at=clock(), warnings=warnings)


def strategy_timestamp_ms(strategy: Strategy, clock: Callable[[], float]) -> int | None:
    """Epoch milliseconds of a to-datetime / by-duration strategy; negative before the epoch
    (:func:`offsets_at_time` reads that as the log start)."""
    if strategy.name not in TIMESTAMP_STRATEGIES:
        return None
    if strategy.value is None:
        raise BadInput(f"--{strategy.name} needs a value")
    if strategy.name == "to-datetime":
        return parse_datetime_ms(strategy.value)
    return int(clock() * 1000) - parse_duration_ms(strategy.value)


def offsets_at_time(admin, partitions: list[TopicPartition], timestamp_ms: int,
                    log_start: dict[TopicPartition, int]) -> dict[TopicPartition, int | None]:
    """The first offset at or after ``timestamp_ms`` per partition. A time before the epoch means
    the log start, as a time before the first record would: it is never sent to ListOffsets,
    which reads -1 as the log end and -3 as the record with the largest timestamp."""
    if timestamp_ms < 0:
        return {tp: log_start[tp] for tp in partitions}
    return kafka_reads.log_offsets(admin, partitions, timestamp_ms)


def read_plan_file(path, group_id: str) -> dict[TopicPartition, int]:
    if not path:
        raise BadInput("--from-file needs a CSV file")
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise BadInput(f"cannot read the reset plan file {path}: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise BadInput(f"cannot read the reset plan file {path}: not UTF-8 text "
                       f"(byte {error.object[error.start]:#04x} at position {error.start})") from None
    return parse_reset_csv(text, group_id)


def _scope_partitions(admin, scope: Scope, committed: dict[TopicPartition, int],
                      file_offsets: dict[TopicPartition, int] | None) -> list[TopicPartition]:
    if file_offsets is not None:
        wanted = sorted(file_offsets)
        topics = sorted({t for t, _ in wanted})
    elif scope.all_topics:
        return sorted(committed)
    else:
        topics = [t for t, _ in scope.topics]
        wanted = None
    existing = kafka_reads.topic_partitions(admin, topics)
    if wanted is None:
        wanted = sorted({(t, p) for t, chosen in scope.topics for p in (chosen if chosen is not None else existing[t])})
    missing = [f"{t}-{p}" for t, p in wanted if p not in existing[t]]
    if missing:
        raise BadInput(f"partition(s) {', '.join(missing)} do not exist")
    return wanted


def refuse_invalid_offsets(admin, rows, what: str) -> None:
    """Re-validate a plan's partitions as a fresh plan would be: each topic and partition exists
    and each new offset lies inside [log start, log end] read now. Raises :class:`Refused` naming
    every partition that does not qualify (nothing is changed)."""
    existing = kafka_reads.all_topics(admin)
    keys = [(p.topic, p.partition) for p in rows]
    missing = [f"{t}-{p}" for t, p in keys if p not in existing.get(t, ())]
    present = [tp for tp in keys if tp[1] in existing.get(tp[0], ())]
    log_start = kafka_reads.log_offsets(admin, present, "earliest")
    log_end = kafka_reads.log_offsets(admin, present, "latest")
    problems = [f"partition(s) {', '.join(missing)} do not exist"] if missing else []
    for p in rows:
        start, end = log_start.get((p.topic, p.partition)), log_end.get((p.topic, p.partition))
        if (p.topic, p.partition) in log_start and (start is None or end is None or not start <= p.new <= end):
            problems.append(f"{p.topic}-{p.partition}: new offset {p.new} is outside the log ({start}..{end})")
    if problems:
        more = f"; and {len(problems) - 10} more" if len(problems) > 10 else ""
        raise Refused(f"the plan for {what} is refused, nothing changed: {'; '.join(problems[:10])}{more}; plan again")


def refuse_unexpected_offsets(committed: dict[TopicPartition, int], expected: dict[TopicPartition, int],
                              what: str) -> None:
    """``--expect-current``: every named partition's committed offset must be the expected one."""
    differ = [f"{t}-{p}: expected {offset}, committed {committed.get((t, p), 'none')}"
              for (t, p), offset in sorted(expected.items()) if committed.get((t, p)) != offset]
    if differ:
        raise Refused(f"the committed offsets of {what} are not those of --expect-current "
                      f"({'; '.join(differ[:10])}); nothing changed")


def check_saved_plan(admin, plan: ResetPlan, *, include_internal: bool = False) -> None:
    """What a plan made earlier (a ``--plan`` file, an approval request, the dashboard's) must still
    be to run, or even to be shown as a dry run: no internal topic (unless ``include_internal``),
    every partition there and every new offset inside the log now (:func:`refuse_invalid_offsets`)."""
    refuse_internal_topics((p.topic for p in plan.partitions), include_internal, "resetting offsets")
    refuse_invalid_offsets(admin, plan.partitions, f"group {plan.group_id!r}")


def execute_offset_reset(admin, requests: GroupRequests, plan: ResetPlan,
                         expect_current: dict[TopicPartition, int] | None = None, *, include_internal: bool = False,
                         list_groups: Callable[[], dict[str, kafka_reads.GroupListing]] | None = None) -> ResetOutcome:
    """Apply ``plan``: re-check that the group is inactive and readable
    (:func:`refuse_unless_stopped`, ``list_groups`` as in :func:`listed_groups`), that the plan
    still fits the cluster (:func:`check_saved_plan`), that its offsets are those the plan saw and those of
    ``expect_current``; commit every new offset in one OffsetCommit (``requests``), read them back.
    Raises :class:`Refused` when a re-check fails (nothing changed); the partitions the coordinator
    refused or whose read-back differs are named in the outcome."""
    group = kafka_reads.describe_group(admin, plan.group_id)
    refuse_unless_stopped(group, listed_groups(admin, list_groups).get(plan.group_id),
                          f"cannot reset the offsets of group {plan.group_id!r}: it")
    check_saved_plan(admin, plan, include_internal=include_internal)
    now = committed_offsets(requests, plan.group_id)
    refuse_unexpected_offsets(now, expect_current or {}, f"group {plan.group_id!r}")
    moved = [f"{p.topic}-{p.partition}: {p.current} -> {now.get((p.topic, p.partition))}"
             for p in plan.partitions if now.get((p.topic, p.partition)) != p.current]
    if moved:
        raise Refused(f"the offsets of group {plan.group_id!r} changed since the plan was made "
                      f"({'; '.join(moved[:5])}); plan again")
    errors: dict[TopicPartition, str] = {}
    failure = None
    try:  # a moving coordinator is asked again by the requests
        answer = requests.commit(plan.group_id, plan.new_offsets()) if plan.partitions else {}
        errors = {tp: error for tp, error in answer.items() if error is not None}
    except OperationError as error:  # reported per partition, in the outcome and the audit log
        failure = str(error)
    after = committed_offsets(requests, plan.group_id)
    rows = []
    for p in plan.partitions:
        key = (p.topic, p.partition)
        problem = errors.get(key)
        if problem is None and after.get(key) != p.new:
            problem = failure or f"committed offset is {after.get(key)} after the reset, expected {p.new}"
        rows.append(PartitionOutcome(p.topic, p.partition, p.current, p.new, after.get(key), problem))
    failed = [r for r in rows if r.error is not None]
    result = "ok" if not failed else "failed" if len(failed) == len(rows) else "partial"
    named = ", ".join(f"{r.topic}-{r.partition} (committed {'none' if r.after is None else r.after}, planned {r.new})"
                      for r in failed[:10]) + (f" and {len(failed) - 10} more" if len(failed) > 10 else "")
    answered = kafka_errors_text(errors)
    summary = (f"{len(failed)} of {len(rows)} partition(s) not as planned after the commit: {named}"
               + (f"; {answered}" if answered else "")) if failed else None
    return ResetOutcome(result, tuple(rows), f"{failure}; {summary}" if failure and summary else failure or summary)


def kafka_errors_text(errors: Mapping[TopicPartition, str | None], shown: int = 10) -> str:
    """Kafka's answers per partition, grouped by error: ``GROUP_AUTHORIZATION_FAILED on orders-0,
    orders-1`` (empty when every partition was accepted)."""
    by_error: dict[str, list[str]] = {}
    for (topic, partition), error in sorted(errors.items()):
        if error:
            by_error.setdefault(error, []).append(f"{topic}-{partition}")
    return "; ".join(f"{error} on {', '.join(names[:shown])}" + (f" and {len(names) - shown} more"
                                                                  if len(names) > shown else "")
                     for error, names in by_error.items())
