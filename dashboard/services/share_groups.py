"""The Share groups page: the share group list from the latest snapshot, one group's members,
assignments and per-partition start offset and lag, and its lag history from the lake's
``share_group`` table. Pure.

A share group's lag is the broker's count of records not yet acknowledged, not the log end minus
anything (``collectors/share/share_groups.py``); its ``total_lag`` may be partial (some partitions'
lag unknown), which :func:`partial_note` says in one line made of numbers only. A share group that
could not be described or whose offsets could not be read (its ``error``) keeps its row, its
numbers null, never 0, and ``problem`` saying why (``services/unread.py``)."""

from __future__ import annotations

import time
from collections.abc import Mapping

import pandas as pd

from dashboard.services.columns import EMPTY_WHY, EMPTY_WHY_NOT_READ, Column, table
from dashboard.services.records import RECORDS_COLUMN, records_link
from dashboard.services.unread import group_problem
from kpulse.share_contract import SHARE_STATUS_SEVERITY
from kpulse.snapshot import ShareGroups, ShareGroupState, Snapshot

GROUP_TABLE: dict[str, str] = {
    "group_id": "group_id", "status": "status", "state": "state", "members": "members",
    "partitions": "partition_count", "total_lag": "total_lag",
}
"""Column of the page's group table -> the :class:`kpulse.snapshot.ShareGroupState` field it shows
(``partitions`` is the name of the lake's ``share_group`` column)."""
GROUP_COLUMNS = [*GROUP_TABLE, "partial", "problem"]
SORTS = {"status": "status_rank", "lag (records not acknowledged)": "total_lag", "members": "members",
         "group id": "group_id"}
"""Sort choice -> column of :func:`groups_frame`."""
PARTITION_COLUMNS = ["topic", "partition", "start_offset", "lag", "status", "why_null", "records"]
MEMBER_COLUMNS = ["member_id", "client_id", "host", "rack_id", "member_epoch", "assignment"]
_NOT_ACKNOWLEDGED = "Records not yet acknowledged, as the broker counts them (kafka-share-groups --describe). "
LIST_TABLE = table(
    Column("group_id", "Share group", key=True),
    Column("status", "Status", help="Over the last readings: STALLED = members but nothing acknowledged, "
                                    "NOT_CONSUMING = no members while records wait."),
    Column("total_lag", "Lag", "records", help=_NOT_ACKNOWLEDGED + EMPTY_WHY_NOT_READ),
    Column("state", "State"), Column("members", "Members", help=EMPTY_WHY_NOT_READ),
    Column("partitions", "Partitions", help="Partitions the broker reports offsets for."),
    Column("partial", "Partial", help="The sum leaves partitions out (their lag unknown): a lower bound."),
    Column("problem", "Why not read", help="Why kpulse could not read the group: its values are empty."))
"""The share group list (:func:`groups_frame`) as the page shows it."""
MEMBER_TABLE = table(
    Column("member_id", "Member", key=True), Column("client_id", "Client"), Column("host", "Host"),
    Column("rack_id", "Rack", help="Empty: the member names no rack."), Column("member_epoch", "Member epoch"),
    Column("assignment", "Assignment", help="topic:partitions."))
PARTITION_TABLE = table(
    Column("topic", "Topic", key=True), Column("partition", "Partition", key=True), Column("status", "Status"),
    Column("lag", "Lag", "records", help=_NOT_ACKNOWLEDGED + EMPTY_WHY),
    Column("start_offset", "Start offset", help="The share-partition start offset. " + EMPTY_WHY),
    Column("why_null", "Why empty", help="Why this partition's empty values are unknown."), RECORDS_COLUMN)
ShownGroup = ShareGroupState | Mapping[str, None]
"""The share group a page shows: the snapshot's, or ``{}`` for one the snapshot does not hold (every
field then reads as None)."""


def _section(snapshot: Snapshot | None) -> ShareGroups | None:
    return snapshot.get("share_groups") if snapshot else None


def groups(snapshot: Snapshot | None) -> list[ShareGroupState]:
    section = _section(snapshot)
    return (section.get("groups") if section else None) or []


def unsupported(snapshot: Snapshot | None) -> str | None:
    """Why the cluster has no share groups to show (older brokers), or ``None``."""
    section = _section(snapshot)
    return section.get("unsupported") if section else None


def collected(snapshot: Snapshot | None) -> bool:
    """Whether the snapshot has the share groups section (null: the collector did not run or failed)."""
    return _section(snapshot) is not None


STALE_READING_SECONDS = 2.0
"""A reading this much older than its snapshot is said to be (the brokers were slow to answer)."""


def reading_note(snapshot: Snapshot | None) -> str | None:
    """When the share groups shown were read before this cycle (the brokers answer
    DescribeShareGroupOffsets late: the collector shows its last reading meanwhile), say when and how
    long the brokers took; else ``None``."""
    section = _section(snapshot)
    read_at, cycle = section.get("read_at") if section else None, snapshot.get("time") if snapshot else None
    if read_at is None or cycle is None or cycle - read_at < STALE_READING_SECONDS:
        return None
    took = section.get("read_seconds") if section else None
    at = time.strftime("%H:%M:%S UTC", time.gmtime(read_at))
    return (f"Shown: the reading of {at} ({cycle - read_at:.0f} s before this cycle); "
            + (f"the brokers took {took:g} s to answer it." if took is not None else "the brokers are slow to answer."))


def groups_frame(snapshot: Snapshot | None) -> pd.DataFrame:
    """One row per share group of the snapshot (:data:`GROUP_TABLE`), with ``status_rank`` for
    sorting; ``problem`` says why a group could not be read (its partition count is then unknown,
    not 0)."""
    frame = pd.DataFrame([{**{column: g.get(field) for column, field in GROUP_TABLE.items()},
                           "partitions": None if g.get("error") and not g.get("partitions") else g.get("partition_count"),
                           "partial": partial_note(g), "problem": group_problem(g.get("group_id"), g.get("error"))}
                          for g in groups(snapshot)], columns=GROUP_COLUMNS)
    for column in ("total_lag", "members", "partitions"):
        frame[column] = pd.array(frame[column], dtype="Int64")
    frame["status_rank"] = frame["status"].map(SHARE_STATUS_SEVERITY).astype("float64").fillna(-1)
    return frame


def partial_note(group: ShownGroup) -> str | None:
    """"total lag over 2 of 3 partitions" when the group's sum leaves partitions out; else ``None``."""
    unknown = group.get("lag_unknown_partitions") or 0
    if not unknown:
        return None
    counted = len(group.get("partitions") or [])
    if group.get("total_lag") is None:
        return f"total lag unknown for all {unknown} partitions"
    return f"total lag over {counted - unknown} of {counted} partitions"


def group(snapshot: Snapshot | None, group_id: str) -> ShareGroupState | None:
    return next((g for g in groups(snapshot) if g.get("group_id") == group_id), None)


def partitions_frame(share_group: ShownGroup) -> pd.DataFrame:
    """Start offset, lag and status per partition, why a value is null, and the link to its records
    (the view opens at the start offset: what the group delivers, and redelivers, next)."""
    group_id = str(share_group.get("group_id") or "")
    rows = [{"topic": p.get("topic"), "partition": p.get("partition"), "start_offset": p.get("start_offset"),
             "lag": p.get("lag"), "status": p.get("status"),
             "why_null": "; ".join(f"{k}: {v}" for k, v in (p.get("reasons") or {}).items()),
             "records": records_link("share", group_id, p.get("topic"), p.get("partition"))}
            for p in share_group.get("partitions") or []]
    frame = pd.DataFrame(rows, columns=PARTITION_COLUMNS)
    for column in ("partition", "start_offset", "lag"):
        frame[column] = pd.array(frame[column], dtype="Int64")
    return frame


def members_frame(share_group: ShownGroup) -> pd.DataFrame:
    """One row per member, its assignment as ``topic:0,1; other:2``."""
    rows = [{"member_id": m.get("member_id"), "client_id": m.get("client_id"), "host": m.get("host"),
             "rack_id": m.get("rack_id"), "member_epoch": m.get("member_epoch"),
             "assignment": "; ".join(f"{topic}:{','.join(str(p) for p in partitions)}"
                                     for topic, partitions in (m.get("assignment") or {}).items())}
            for m in share_group.get("member_list") or []]
    frame = pd.DataFrame(rows, columns=MEMBER_COLUMNS)
    frame["member_epoch"] = pd.array(frame["member_epoch"], dtype="Int64")
    return frame


def lag_history(group_rows: pd.DataFrame, group_id: str) -> pd.DataFrame:
    """(time, total_lag, lag_unknown_partitions) of one group over rows read from ``share_group``."""
    rows = group_rows[group_rows["group_id"] == group_id]
    return rows[["time", "total_lag", "lag_unknown_partitions"]].sort_values("time").reset_index(drop=True)


def partial_points(history: pd.DataFrame) -> int:
    """How many points of :func:`lag_history` are partial (some partition's lag unknown)."""
    return int((history["lag_unknown_partitions"].fillna(0) > 0).sum()) if len(history) else 0
