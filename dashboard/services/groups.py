"""The Consumer groups page: the group list from the latest snapshot, per-partition lag of one
group, and its lag history from the lake's ``consumer_group`` table. Pure."""

from __future__ import annotations

from typing import Any, Mapping

import pandas as pd

GROUP_COLUMNS = ["group_id", "status", "state", "members", "partitions", "total_lag", "max_lag_seconds",
                 "lag_seconds_threshold"]
STATUS_ORDER = {"OK": 0, "WARN": 1, "REWIND": 2, "STALL": 3, "STOP": 4, "ERR": 5}
"""Burrow's order (worst last); unknown status sorts before OK."""
SORTS = {"lag seconds": "max_lag_seconds", "status": "status_rank", "lag (offsets)": "total_lag",
         "group id": "group_id"}


def groups_frame(snapshot: Mapping[str, Any] | None) -> pd.DataFrame:
    """One row per group of the snapshot, with ``status_rank`` for sorting by status."""
    groups = (snapshot or {}).get("consumer_groups") or []
    frame = pd.DataFrame([{"group_id": g.get("group_id"), "status": g.get("status"), "state": g.get("state"),
                           "members": g.get("members"), "partitions": g.get("partition_count"),
                           "total_lag": g.get("total_lag"), "max_lag_seconds": g.get("max_lag_seconds"),
                           "lag_seconds_threshold": g.get("lag_seconds_threshold")} for g in groups],
                         columns=GROUP_COLUMNS)
    frame["total_lag"] = pd.array(frame["total_lag"], dtype="Int64")
    frame["members"] = pd.array(frame["members"], dtype="Int64")
    frame["partitions"] = pd.array(frame["partitions"], dtype="Int64")
    frame["max_lag_seconds"] = pd.to_numeric(frame["max_lag_seconds"], errors="coerce")
    frame["status_rank"] = frame["status"].map(STATUS_ORDER).astype("float64").fillna(-1)
    return frame


def group_partitions(snapshot: Mapping[str, Any] | None, group_id: str) -> pd.DataFrame | None:
    """Per-partition lag of ``group_id`` in the snapshot; ``None`` when the group is not there."""
    for group in (snapshot or {}).get("consumer_groups") or []:
        if group.get("group_id") == group_id:
            rows = [{"topic": p.get("topic"), "partition": p.get("partition"),
                     "committed_offset": p.get("committed_offset"), "log_end_offset": p.get("log_end_offset"),
                     "lag": p.get("lag"), "lag_seconds": p.get("lag_seconds"), "status": p.get("status"),
                     "why_null": "; ".join(f"{k}: {v}" for k, v in (p.get("reasons") or {}).items())}
                    for p in group.get("partitions") or []]
            frame = pd.DataFrame(rows, columns=["topic", "partition", "committed_offset", "log_end_offset", "lag",
                                                "lag_seconds", "status", "why_null"])
            for column in ("committed_offset", "log_end_offset", "lag"):
                frame[column] = pd.array(frame[column], dtype="Int64")
            return frame
    return None


def lag_history(group_rows: pd.DataFrame, group_id: str) -> pd.DataFrame:
    """(time, total_lag, max_lag_seconds) of one group over the rows read from ``consumer_group``."""
    rows = group_rows[group_rows["group_id"] == group_id]
    return rows[["time", "total_lag", "max_lag_seconds"]].sort_values("time").reset_index(drop=True)
