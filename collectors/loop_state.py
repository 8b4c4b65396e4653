"""What the collection loop leaves on disk so that a crash of its process says what it lost and
its next process carries on: in ``<state dir>/collect/<key>/`` (``key``: the lake and the clusters
collected), two small JSON files, each written whole (temporary name, then rename; mode 0600).

``loop.json`` (:class:`LoopMark`), rewritten every cycle: the process, its last completed cycle
and, per cluster and table, the rows appended since the last successful flush. When the process
dies, its supervisor (``cli/collect.py``) turns the mark into ``lake_gap`` rows
(:func:`crash_gap_rows`): those rows were in memory only.

``alerts.json``, rewritten when an alert's state changes: :meth:`alerting.state.AlertState.saved`
of every cluster. The next process restores it (:func:`restorable_alerts`) unless the loop last
vouched for it more than :data:`ALERT_STATE_MAX_AGE_SECONDS` ago.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

ALERT_STATE_MAX_AGE_SECONDS = 300.0
"""Saved alert state older than this (since the loop's last cycle) is ignored: the supervisor
restarts a crashed loop within seconds, and a condition is not known to have held through a
longer outage, so after a longer stop every alert is held again from the start."""


class UnflushedRows(TypedDict):
    """One table's rows appended since its last successful write (``loop.json``)."""

    rows: int
    """How many."""
    since: float
    """The time of the first of them (epoch seconds)."""


@dataclass
class LoopMark:
    """The contents of ``loop.json``."""

    pid: int
    """The collection loop's process id (the supervisor checks it is its own child's mark)."""
    started: float
    """When the process started (epoch seconds)."""
    cycle_time: float | None = None
    """Time of the last completed cycle; ``None`` before the first."""
    flushed_at: float | None = None
    """When the last flush in which every table was written ended; ``None`` before the first."""
    unflushed: dict[str, dict[str, UnflushedRows]] = field(default_factory=dict)
    """Cluster -> table -> the rows appended since that table's last successful write."""

    def appended(self, cluster: str, table: str, rows: int, now: float) -> None:
        if not rows:  # nothing buffered (an empty alert_event list every cycle): no "since" to start
            return
        entry = self.unflushed.setdefault(cluster, {}).setdefault(table, {"rows": 0, "since": now})
        entry["rows"] += rows

    def written(self, tables: set[str], taken: dict[str, dict[str, int]] | None = None,
                taken_at: float | None = None) -> None:
        """Forget the rows of ``tables``, written by a flush: all of them, or, for a flush that ran
        while the loop went on (``collectors/lake_thread.py``), the rows :meth:`counted` when it took
        them at ``taken_at``; rows appended since stay, as unflushed from then."""
        for cluster, by_table in self.unflushed.items():
            for table in tables & by_table.keys():
                if taken is None:
                    del by_table[table]
                    continue
                left = by_table[table]["rows"] - taken.get(cluster, {}).get(table, 0)
                if left > 0:
                    by_table[table] = {"rows": left, "since": max(by_table[table]["since"], taken_at or 0.0)}
                else:
                    del by_table[table]

    def counted(self) -> dict[str, dict[str, int]]:
        """Cluster -> table -> the unflushed rows now (what a flush that takes the buffers now writes)."""
        return {cluster: {table: rows["rows"] for table, rows in by_table.items()}
                for cluster, by_table in self.unflushed.items()}


class LoopState:
    """The directory of one collection loop's state. The constructor does no I/O."""

    def __init__(self, state_dir: Path, lake_path: str, clusters: list[str]) -> None:
        key = hashlib.sha256(f"{lake_path}\n{','.join(sorted(clusters))}".encode()).hexdigest()[:12]
        self.directory = Path(state_dir) / "collect" / key

    @property
    def mark_path(self) -> Path:
        return self.directory / "loop.json"

    @property
    def alerts_path(self) -> Path:
        return self.directory / "alerts.json"

    def write_mark(self, mark: LoopMark) -> None:
        _write_json(self.mark_path, mark.__dict__)

    def read_mark(self) -> LoopMark | None:
        data = _read_json(self.mark_path)
        try:
            return LoopMark(**data) if isinstance(data, dict) else None
        except TypeError:  # a file of another version
            return None

    def write_alerts(self, pid: int, saved: Mapping[str, Mapping[str, object]]) -> None:
        """``saved``: cluster -> its :meth:`alerting.state.AlertState.saved`."""
        _write_json(self.alerts_path, {"pid": pid, "clusters": saved})

    def read_alerts(self) -> dict[str, object] | None:
        """What :meth:`write_alerts` wrote, as read (``{"pid": ..., "clusters": ...}``, unchecked);
        None when there is no readable file."""
        data = _read_json(self.alerts_path)
        return data if isinstance(data, dict) else None


def restorable_alerts(saved: Mapping[str, object] | None, mark: LoopMark | None, now: float,
                      max_age: float = ALERT_STATE_MAX_AGE_SECONDS
                      ) -> tuple[dict[str, Mapping[str, object]], float | None]:
    """Pure. The saved alert states (cluster -> :meth:`AlertState.saved`) still fit to restore at
    ``now``, and the time up to which the dead process's events were written (its last flush).
    The loop vouched for the alerts until its last cycle (``mark.cycle_time`` when the mark is
    the same process's, else the alerts' own time)."""
    clusters = saved.get("clusters") if saved else None
    if not saved or not isinstance(clusters, dict):
        return {}, None
    same = mark is not None and mark.pid == saved.get("pid")
    vouched_by_mark = mark.cycle_time if mark is not None and same else None
    restorable: dict[str, Mapping[str, object]] = {}
    for cluster, state in clusters.items():
        vouched = vouched_by_mark if vouched_by_mark is not None else state.get("time")
        if vouched is not None and 0 <= now - vouched <= max_age:
            restorable[cluster] = state
    return restorable, (mark.flushed_at if mark is not None and same else None)


def crash_gap_rows(mark: LoopMark | None, *, pid: int, died: float, why: str) -> list[dict[str, object]]:
    """Pure. The ``lake_gap`` rows for a collection process ``pid`` that died at ``died``: one per
    cluster and table with rows appended since their last write (the count is of the last
    completed cycle's mark: the cycle in progress adds to it). None when the process left no mark
    of its own: it died before its first cycle, so it had buffered nothing."""
    reason = f"collector process died ({why}); rows buffered since the last flush were lost"
    if mark is None or mark.pid != pid:
        return []
    return [{"time": died, "cluster": cluster, "table_name": table, "first_time": entry["since"], "last_time": died,
             "rows_dropped": int(entry["rows"]), "reason": reason + " (counted at its last completed cycle)"}
            for cluster, by_table in sorted(mark.unflushed.items())
            for table, entry in sorted(by_table.items()) if entry["rows"]]


def _write_json(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as out:
        json.dump(data, out, separators=(",", ":"))
    os.replace(temporary, path)


def _read_json(path: Path) -> object:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None
