"""The audit log: one ``audit`` lake row per attempt to change a cluster, refused ones included.

Nothing is lost. Each record is appended to the lake and flushed at once; when the lake cannot be
written (disk full, object store down) the row goes to a local spool file (JSON lines) and every
later :meth:`AuditLog.record` or :meth:`AuditLog.retry_spool` writes the spooled rows first.

Audit rows name people and what they did, so only the kpulse user reads them: the spool and its
lock are ``0600`` files in ``0700`` directories; on a local lake the ``audit`` table's directory is
made ``0700`` before each write (it keeps others out meanwhile) and the files this log wrote, and
their date directories, are narrowed to ``0600``/``0700`` right after it. Object stores keep their
own access rules.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from collections.abc import Callable

from kpulse.errors import KpulseError
from kpulse.lake.reader import read_table
from kpulse.lake.store import LakeWriter, one_line, resolve
from operations.private_files import DIRECTORY_MODE, FILE_MODE, open_private, private_dir, write_private

TABLE = "audit"
RESULTS = ("ok", "partial", "failed", "refused", "denied", "in-progress", "not-started", "cancelled", "requested",
           "rejected")


class AuditReadError(KpulseError):
    """The audit log could not be read: the lake is unreachable or refuses kpulse. One line."""


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
        """Audit rows of the lake (pandas DataFrame, oldest first); :class:`AuditReadError` (one
        line) when the lake cannot be listed (unreachable, a missing bucket, refused credentials)."""
        try:
            return read_table(self.lake_path, TABLE, since=since, cluster=cluster)
        except OSError as error:
            raise AuditReadError(f"cannot read the audit log in the lake at {self.lake_path}: {one_line(error)}") from None

    def _write(self, rows: list[dict[str, Any]]) -> bool:
        lock_path = self.spool.with_suffix(".lock")
        with os.fdopen(open_private(lock_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            waiting = self.pending() + rows
            if not waiting:
                return True
            table_dir = self._local_table_dir()
            writer = self._writer_factory(self.lake_path)
            writer.append(TABLE, waiting)
            result = writer.flush()
            if table_dir is not None:
                _narrow(table_dir, result.files)
            if result.ok:
                self.spool.unlink(missing_ok=True)
                return True
            write_private(self.spool, "".join(json.dumps(r) + "\n" for r in waiting))
            return False

    def _local_table_dir(self) -> Path | None:
        """The ``audit`` table's directory when the lake is a local directory, else ``None``."""
        try:
            filesystem, base = resolve(self.lake_path)
        except Exception:  # noqa: BLE001 - the writer reports a lake it cannot reach
            return None
        if filesystem.type_name != "local":
            return None
        table_dir = Path(base) / TABLE
        try:
            private_dir(table_dir)
            table_dir.chmod(DIRECTORY_MODE)
        except OSError:  # the writer reports a lake it cannot write
            return None
        return table_dir


def _narrow(table_dir: Path, files: list[str]) -> None:
    """The files just written ``0600`` and their directories under ``table_dir`` ``0700``."""
    for name in files:
        path = Path(name)
        try:
            path.chmod(FILE_MODE)
            if path.parent != table_dir and table_dir in path.parents:
                path.parent.chmod(DIRECTORY_MODE)
        except OSError:  # written but not ours to narrow (e.g. a shared lake): the row is what matters
            continue
