"""The audit log: one ``audit`` lake row per attempt to change a cluster, refused ones included.

Nothing is lost. Each record is appended to the lake and flushed at once; when the lake cannot be
written (disk full, object store down) the row goes to a local spool file (JSON lines) and every
later :meth:`AuditLog.record` or :meth:`AuditLog.retry_spool` writes the spooled rows first.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from collectors.lake import LakeWriter, read_table

TABLE = "audit"
RESULTS = ("ok", "partial", "failed", "refused", "denied", "in-progress", "not-started", "cancelled", "requested",
           "rejected")


@dataclass(frozen=True)
class AuditRecord:
    """One attempt. ``plan``, ``before`` and ``after`` are JSON-able plain data."""

    cluster: str
    actor: str
    action: str
    target: str
    result: str
    """One of :data:`RESULTS`."""
    plan: Any = None
    before: Any = None
    after: Any = None
    error: str | None = None
    approved_by: str | None = None

    def row(self, now: float, action_id: str | None = None) -> dict[str, Any]:
        def dump(value: Any) -> str | None:
            return None if value is None else json.dumps(value, sort_keys=True, default=str)

        return {"time": now, "cluster": self.cluster, "action_id": action_id or str(uuid.uuid4()),
                "actor": self.actor, "action": self.action, "target": self.target, "result": self.result,
                "plan_json": dump(self.plan), "before_json": dump(self.before), "after_json": dump(self.after),
                "error": self.error, "approved_by": self.approved_by}


class AuditLog:
    """Appends audit rows to the lake at ``lake_path``; spools them to ``spool`` when it cannot."""

    def __init__(self, lake_path: str, spool: Path, *, clock: Callable[[], float] = time.time,
                 writer_factory: Callable[[str], LakeWriter] | None = None) -> None:
        self.lake_path = lake_path
        self.spool = spool
        self._clock = clock
        self._writer_factory = writer_factory or (lambda path: LakeWriter(path, clock=clock))

    def record(self, record: AuditRecord) -> tuple[str, bool]:
        """Write the record (and any spooled rows). Returns (action id, written to the lake);
        when not written it is in the spool file, never lost."""
        row = record.row(self._clock())
        return row["action_id"], self._write([row])

    def retry_spool(self) -> int:
        """Write spooled rows to the lake; returns how many are still waiting."""
        self._write([])
        return len(self.pending())

    def pending(self) -> list[dict[str, Any]]:
        """Rows waiting in the spool file."""
        if not self.spool.exists():
            return []
        return [json.loads(line) for line in self.spool.read_text().splitlines() if line.strip()]

    def read(self, *, since: float | None = None, cluster: str | None = None):
        """Audit rows of the lake (pandas DataFrame, oldest first)."""
        return read_table(self.lake_path, TABLE, since=since, cluster=cluster)

    def _write(self, rows: list[dict[str, Any]]) -> bool:
        self.spool.parent.mkdir(parents=True, exist_ok=True)
        with open(self.spool.with_suffix(".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            waiting = self.pending() + rows
            if not waiting:
                return True
            writer = self._writer_factory(self.lake_path)
            writer.append(TABLE, waiting)
            result = writer.flush()
            if result.ok:
                self.spool.unlink(missing_ok=True)
                return True
            temporary = self.spool.with_suffix(".tmp")
            temporary.write_text("".join(json.dumps(r) + "\n" for r in waiting))
            os.replace(temporary, self.spool)
            return False
