"""The Consumer groups page: the group list from the latest snapshot, per-partition lag of one
group, and its lag history from the lake's ``consumer_group`` table. Pure.

A group's ``total_lag`` and ``max_lag_seconds`` may be partial (some partitions' values unknown,
e.g. a broker down: ``collectors/lag/lag_math.py``); :func:`partial_note` says so in one line made of
numbers only (no Kafka-supplied name: it is safe to show as a caption). A group whose offsets
could not be read at all (its ``error``: kpulse may not read it) keeps its row, its numbers null,
never 0, and ``problem`` saying why (``services/unread.py``).

Whether a group is expected idle is the snapshot's ``expected_idle``, decided by the collection loop
(``kpulse/expected_idle.py``); a mark or unmark made on the page shows at once, until the next
snapshot carries it (:func:`unapplied_marks`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeAlias

import pandas as pd

from dashboard.services.columns import EMPTY_WHY, EMPTY_WHY_NOT_READ, Column, table
from dashboard.services.records import RECORDS_COLUMN, records_link
from dashboard.services.unread import group_problem
from kpulse.lag_contract import STATUS_SEVERITY
from kpulse.snapshot import ConsumerGroup, Snapshot

GROUP_TABLE: dict[str, str] = {
    "group_id": "group_id", "type": "type", "status": "status", "state": "state", "members": "members",
    "partitions": "partition_count", "total_lag": "total_lag", "max_lag_seconds": "max_lag_seconds",
    "lag_seconds_threshold": "lag_seconds_threshold",
}
"""Column of the page's group table -> the :class:`kpulse.snapshot.ConsumerGroup` field it shows.
The one renamed: ``partitions`` (``partition_count``), the name of the lake's ``consumer_group``
column the group's history beside it is read from."""
GROUP_COLUMNS = [*GROUP_TABLE, "expected_idle", "partial", "problem"]
GroupEntry: TypeAlias = ConsumerGroup | Mapping[str, None]
"""A group's entry in the snapshot, or ``{}`` for a group the snapshot does not hold."""
HIDDEN_COLUMNS = ["status_rank", "lag_unknown_partitions", "lag_seconds_unknown_partitions"]
"""Columns of :func:`groups_frame` for sorting and captions, not shown in the table."""
STATUS_ORDER = STATUS_SEVERITY
"""Burrow's order (worst last, ``kpulse/lag_contract.py``); unknown status sorts before OK."""
SORTS = {"lag seconds": "max_lag_seconds", "status": "status_rank", "lag (offsets)": "total_lag",
         "group id": "group_id"}
LIST_COLUMNS = table(
    Column("group_id", "Group", key=True),
    Column("status", "Status", help="The worst of its partitions' statuses over the last readings, as Burrow "
                                    "evaluates them: OK, WARN, REWIND, STALL, STOP, ERR."),
    Column("max_lag_seconds", "Lag", "s", kind="number", format="%.0f",
           help="How far behind the worst partition is, in time. " + EMPTY_WHY_NOT_READ),
    Column("lag_seconds_threshold", "Threshold", "s", kind="number", format="%.0f",
           help="The group is behind when its lag in seconds is over this (the config's "
                "`consumer_groups.lag_seconds_threshold`)."),
    Column("total_lag", "Total lag", "records", kind="number",
           help="Log end minus committed offset, summed over the group's partitions. " + EMPTY_WHY_NOT_READ),
    Column("type", "Type"), Column("state", "State"), Column("members", "Members"),
    Column("partitions", "Partitions", help="Partitions the group has offsets for."),
    Column("expected_idle", "Expected idle", help="Shown, but fires no group alert."),
    Column("partial", "Partial", help="Which sums leave partitions out (their lag unknown): those sums are lower "
                                      "bounds."),
    Column("problem", "Why not read", help="Why kpulse could not read the group: its values are empty."))
"""The group list as the page shows it (:func:`groups_frame`; :data:`HIDDEN_COLUMNS` are not shown)."""


def groups_frame(snapshot: Snapshot | None) -> pd.DataFrame:
    """One row per group of the snapshot (:data:`GROUP_TABLE`), and :data:`HIDDEN_COLUMNS`
    (``status_rank`` for sorting by status, the counts of partitions left out of the sums); the
    ``expected_idle`` column says whether the snapshot labels the group so; ``problem`` why the
    group could not be read (its partition count is then unknown, not 0)."""
    groups = _groups_of(snapshot)
    frame = pd.DataFrame([{**{column: g.get(field) for column, field in GROUP_TABLE.items()},
                           "partitions": None if g.get("error") and not g.get("partitions") else g.get("partition_count"),
                           "expected_idle": bool(g.get("expected_idle")),
                           "partial": partial_note(g), "problem": group_problem(g.get("group_id"), g.get("error")),
                           "lag_unknown_partitions": g.get("lag_unknown_partitions") or 0,
                           "lag_seconds_unknown_partitions": g.get("lag_seconds_unknown_partitions") or 0}
                          for g in groups],
                         columns=[*GROUP_COLUMNS, *HIDDEN_COLUMNS[1:]])
    for column in ("total_lag", "members", "partitions", "lag_unknown_partitions", "lag_seconds_unknown_partitions"):
        frame[column] = pd.array(frame[column], dtype="Int64")
    frame["max_lag_seconds"] = pd.to_numeric(frame["max_lag_seconds"], errors="coerce")
    frame["status_rank"] = frame["status"].map(STATUS_ORDER).astype("float64").fillna(-1)
    return frame


def _groups_of(snapshot: Snapshot | None) -> list[ConsumerGroup]:
    return (snapshot.get("consumer_groups") or []) if snapshot is not None else []


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


def partial_caption(table: pd.DataFrame) -> str | None:
    """One line on the groups of :func:`groups_frame` whose sums leave partitions out, telling the
    two causes apart: offset lag unknown (the log end was not read: the total lag, and the lag in
    seconds, leave those partitions out) and only the lag in seconds unknown (every offset lag known,
    but no log-end timestamp to interpolate a time from). Numbers only; ``None`` when no sum is partial."""
    partial = int(table["partial"].notna().sum())
    if not partial:
        return None
    offsets = table["lag_unknown_partitions"].fillna(0)
    seconds_only = (table["lag_seconds_unknown_partitions"].fillna(0) - offsets).clip(lower=0)
    causes = []
    if groups := int((offsets > 0).sum()):
        causes.append(f"offset lag unknown on {_count(int(offsets.sum()), 'partition')} of {_count(groups, 'group')} "
                      f"(log end not read, e.g. a broker down): {'its' if groups == 1 else 'their'} total lag and lag "
                      "seconds are lower bounds")
    if groups := int((seconds_only > 0).sum()):
        causes.append(f"only lag in seconds unknown on {_count(int(seconds_only.sum()), 'partition')} of "
                      f"{_count(groups, 'group')} (no timestamp to interpolate from): {'its' if groups == 1 else 'their'} "
                      "lag seconds are a lower bound, the offset lag is whole")
    return f"⚠ {partial:,} of {len(table):,} groups have partial lag sums (see the partial column): " + "; ".join(
        causes) + "."


def partial_note(group: GroupEntry) -> str | None:
    """"total lag over 2 of 3 partitions · lag seconds ..." for the group's sums that leave partitions
    out; ``None`` when both are complete (or the snapshot predates the counts)."""
    counted = sum(1 for p in group.get("partitions") or [] if p.get("committed_offset") is not None)
    notes = []
    sums = (("total lag", group.get("total_lag"), group.get("total_lag_partial"), group.get("lag_unknown_partitions")),
            ("lag seconds", group.get("max_lag_seconds"), group.get("max_lag_seconds_partial"),
             group.get("lag_seconds_unknown_partitions")))
    for label, value, partial, unknown_count in sums:
        unknown = unknown_count or 0
        if not unknown:
            continue
        if partial:
            notes.append(f"{label} over {counted - unknown} of {counted} partitions" if counted > unknown
                         else f"{label} over some partitions ({unknown} unknown)")
        elif value is None:
            notes.append(f"{label} unknown for all {unknown} partitions")
    return " · ".join(notes) or None


def unapplied_marks(made: Mapping[str, tuple[bool, float]], snapshot: Snapshot | None) -> dict[str, bool]:
    """Group id -> expected idle, for the marks and unmarks made on the page (``made``: group id ->
    (marked, when), epoch seconds) that the snapshot does not carry yet: those made after it was taken
    (the collection loop reads the marks every cycle; its next snapshot carries them)."""
    if snapshot is None:
        return {}
    return {group_id: marked for group_id, (marked, at) in made.items() if at >= snapshot["time"]}


def with_unapplied_marks(table: pd.DataFrame, unapplied: Mapping[str, bool]) -> pd.DataFrame:
    """``table`` (:func:`groups_frame`, read-only) with the page's :func:`unapplied_marks` shown in its
    ``expected_idle`` column; the table itself when there are none."""
    if not unapplied:
        return table
    return table.assign(expected_idle=[unapplied.get(group_id, labelled) for group_id, labelled
                                       in zip(table["group_id"], table["expected_idle"], strict=True)])


def expected_idle(group: GroupEntry, unapplied: Mapping[str, bool]) -> bool:
    """Whether ``group`` (its snapshot entry) is shown expected idle: the snapshot's label, or the
    page's mark not yet applied (:func:`unapplied_marks`)."""
    group_id = group.get("group_id")
    if group_id is not None and group_id in unapplied:
        return unapplied[group_id]
    return bool(group.get("expected_idle"))


def partial_groups(snapshot: Snapshot | None) -> int:
    """How many groups of the snapshot have a partial (or wholly unknown) sum."""
    return sum(1 for g in _groups_of(snapshot) if partial_note(g))


def group_partitions(snapshot: Snapshot | None, group_id: str) -> pd.DataFrame | None:
    """Per-partition lag of ``group_id`` in the snapshot; ``None`` when the group is not there."""
    for group in _groups_of(snapshot):
        if group.get("group_id") == group_id:
            return partitions_of(group)
    return None


PARTITION_TABLE = table(
    Column("topic", "Topic", key=True), Column("partition", "Partition", key=True),
    Column("status", "Status"),
    Column("lag", "Lag", "records", help="Log end minus committed offset. " + EMPTY_WHY),
    Column("lag_seconds", "Lag", "s", kind="number", format="%.1f",
           help="How far behind the partition is, in time (interpolated from the log end's timestamps). " + EMPTY_WHY),
    Column("committed_offset", "Committed offset", help=EMPTY_WHY),
    Column("log_end_offset", "Log end offset", help=EMPTY_WHY),
    Column("why_null", "Why empty", help="Why this partition's empty values are unknown."), RECORDS_COLUMN)
"""Per-partition lag of one group (:func:`partitions_of`) as the page shows it."""


def partitions_of(group: GroupEntry) -> pd.DataFrame:
    """Per-partition lag of one group (its snapshot entry), each row with the link to its records
    (the view opens at the partition's committed offset)."""
    group_id = str(group.get("group_id") or "")
    rows = [{"topic": p.get("topic"), "partition": p.get("partition"),
             "committed_offset": p.get("committed_offset"), "log_end_offset": p.get("log_end_offset"),
             "lag": p.get("lag"), "lag_seconds": p.get("lag_seconds"), "status": p.get("status"),
             "why_null": "; ".join(f"{k}: {v}" for k, v in (p.get("reasons") or {}).items()),
             "records": records_link("consumer", group_id, p.get("topic"), p.get("partition"))}
            for p in group.get("partitions") or []]
    frame = pd.DataFrame(rows, columns=["topic", "partition", "committed_offset", "log_end_offset", "lag",
                                        "lag_seconds", "status", "why_null", "records"])
    for column in ("committed_offset", "log_end_offset", "lag"):
        frame[column] = pd.array(frame[column], dtype="Int64")
    return frame


TYPE_NAMES = {"classic": "classic group", "consumer": "KIP-848 consumer group", "streams": "Streams group (KIP-1071)"}
MEMBER_COLUMNS = ["member_id", "client_id", "client_host", "member_epoch", "assignment", "target_assignment",
                  "reconciling"]
MEMBER_TABLE = table(
    Column("member_id", "Member", key=True), Column("reconciling", "Reconciling",
                                                    help="Not yet at its target assignment."),
    Column("client_id", "Client"), Column("client_host", "Host"), Column("member_epoch", "Member epoch"),
    Column("assignment", "Assignment",
           help="topic:partitions, as kafka-consumer-groups --members --verbose prints it."),
    Column("target_assignment", "Target assignment", help="Empty for a classic group's member."))
"""A group's members (:func:`members_frame`) as the page shows them."""


def membership_caption(group: GroupEntry) -> str | None:
    """"KIP-848 consumer group · group epoch 7 · target assignment epoch 7 · 1 of 2 members
    reconciling" (type names and numbers only: safe as a caption); None for a group without a type."""
    kind = group.get("type")
    if not kind:
        return None
    parts = [TYPE_NAMES.get(kind, f"{kind} group")]
    if group.get("group_epoch") is not None:
        parts.append(f"group epoch {group['group_epoch']}")
    if group.get("assignment_epoch") is not None:
        parts.append(f"target assignment epoch {group['assignment_epoch']}")
    if group.get("reconciling_members") is not None:
        count = len(group.get("member_details") or [])
        parts.append(f"{group['reconciling_members']} of {count} members reconciling" if group["reconciling_members"]
                     else "every member at its target assignment")
    return " · ".join(parts)


def assignment_text(assignment: dict | None) -> str | None:
    """``{"t": [0, 1]}`` -> ``t:0,1`` (as ``kafka-consumer-groups --members --verbose`` prints it);
    None for no target (a classic member)."""
    if assignment is None:
        return None
    return "; ".join(f"{topic}:{','.join(map(str, parts))}" for topic, parts in assignment.items()) or "-"


def members_frame(group: GroupEntry) -> pd.DataFrame | None:
    """One row per member (:data:`MEMBER_COLUMNS`), members still reconciling first; None when the
    group has no member details (listed Empty, or an older snapshot)."""
    details = group.get("member_details") or []
    if not details:
        return None
    rows = [{"member_id": m.get("member_id"), "client_id": m.get("client_id"), "client_host": m.get("client_host"),
             "member_epoch": m.get("member_epoch"), "assignment": assignment_text(m.get("assignment") or {}),
             "target_assignment": assignment_text(m.get("target_assignment")), "reconciling": bool(m.get("reconciling"))}
            for m in details]
    frame = pd.DataFrame(rows, columns=MEMBER_COLUMNS)
    frame["member_epoch"] = pd.array(frame["member_epoch"], dtype="Int64")
    return frame.sort_values(["reconciling", "member_id"], ascending=[False, True]).reset_index(drop=True)


def lag_history(group_rows: pd.DataFrame, group_id: str) -> pd.DataFrame:
    """(time, total_lag, max_lag_seconds, and the counts of partitions they left out where the rows
    have them) of one group over the rows read from ``consumer_group``."""
    rows = group_rows[group_rows["group_id"] == group_id]
    columns = ["time", "total_lag", "max_lag_seconds"] + [c for c in _HISTORY_COUNTS if c in rows.columns]
    return rows[columns].sort_values("time").reset_index(drop=True)


_HISTORY_COUNTS = ("lag_unknown_partitions", "lag_seconds_unknown_partitions")


def partial_points(history: pd.DataFrame) -> int:
    """How many points of :func:`lag_history` are partial (some partition left out of a sum); points
    from before the counts were recorded are not known to be, and are not counted."""
    counts = [history[c].fillna(0) > 0 for c in _HISTORY_COUNTS if c in history.columns]
    return int(pd.concat(counts, axis=1).any(axis=1).sum()) if counts and len(history) else 0
