"""Two-person approval for destructive operations on clusters with ``require_approval: true``.

One operator's execute becomes a *request* (the plan, who, when); another operator approves it,
and the plan runs then, as the requester, with the approver recorded in the audit log (the
executor still re-checks every precondition at that moment). Nobody approves their own request.
Which operations wait for approval is declared with each one (:data:`operations.registry.APPROVABLE`).
Requests are JSON files under ``<state dir>/approvals/``, shared by the CLI and the dashboard of
one installation (private to the kpulse user: files 0600, directory 0700); deciding takes a lock
so a request is approved (or rejected) once.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import time
import uuid
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any
from collections.abc import Callable

from operations.errors import BadInput, NotAuthorized, Refused, unknown
from operations.private_files import open_private, write_private
from operations.registry import APPROVABLE

REQUEST_ID = re.compile(r"[0-9a-f]{12}\Z")
"""A request id: 12 hex digits (anything else is unknown, never a file name to look up)."""


@dataclass(frozen=True)
class ApprovalRequest:
    id: str
    cluster: str
    action: str
    target: str
    plan: dict
    requested_by: str
    requested_role: str
    requested_at: float
    options: dict = field(default_factory=dict)
    """Execution options kept with the plan (e.g. the reassignment throttle)."""
    requested_source: str = "no-users-file"
    """How the requester was established (:attr:`operations.access.User.source`): approving
    reads the requester's role again the same way."""
    status: str = "pending"
    """pending, approved, rejected, or failed (approved, but the executor refused or failed: plan
    and request again)."""
    decided_by: str | None = None
    decided_at: float | None = None
    error: str | None = None


class ApprovalStore:
    def __init__(self, directory: Path, clock: Callable[[], float] = time.time):
        self.directory = directory
        self._clock = clock

    def create(self, cluster: str, action: str, target: str, plan: dict, requested_by: str, requested_role: str,
               options: dict[str, Any] | None = None, *, requested_source: str = "no-users-file") -> ApprovalRequest:
        if action not in APPROVABLE:
            raise ValueError(f"{action} does not take approval")
        request = ApprovalRequest(uuid.uuid4().hex[:12], cluster, action, target, plan, requested_by, requested_role,
                                  self._clock(), options or {}, requested_source)
        self._write(request)
        return request

    def get(self, request_id: str) -> ApprovalRequest:
        path = self.directory / f"{request_id}.json"
        if not REQUEST_ID.match(request_id) or not path.exists():
            raise unknown("approval request", request_id, {r.id for r in self.all()})
        return ApprovalRequest(**json.loads(path.read_text()))

    def all(self) -> list[ApprovalRequest]:
        if not self.directory.exists():
            return []
        requests = [ApprovalRequest(**json.loads(p.read_text())) for p in self.directory.glob("*.json")]
        return sorted(requests, key=lambda r: r.requested_at)

    def pending(self, cluster: str | None = None) -> list[ApprovalRequest]:
        return [r for r in self.all() if r.status == "pending" and cluster in (None, r.cluster)]

    def decide(self, request_id: str, user: str, status: str) -> ApprovalRequest:
        """Mark a pending request ``approved`` or ``rejected`` by ``user`` (not its requester)."""
        if status not in ("approved", "rejected"):
            raise BadInput(f"unknown decision {status!r}")
        with os.fdopen(open_private(self.directory / ".lock", os.O_WRONLY | os.O_CREAT | os.O_APPEND), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            request = self.get(request_id)
            if request.status != "pending":
                raise Refused(f"approval request {request_id} is already {request.status} (by {request.decided_by})")
            if request.requested_by == user:
                raise NotAuthorized(f"{user} requested {request_id}: another operator must approve it")
            decided = replace(request, status=status, decided_by=user, decided_at=self._clock())
            self._write(decided)
            return decided

    def mark_failed(self, request_id: str, error: str) -> ApprovalRequest:
        failed = replace(self.get(request_id), status="failed", error=error)
        self._write(failed)
        return failed

    def _write(self, request: ApprovalRequest) -> None:
        write_private(self.directory / f"{request.id}.json", json.dumps(asdict(request), indent=2))
