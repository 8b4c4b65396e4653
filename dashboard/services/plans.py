"""The dashboard's side of operations: form values -> a plan from :class:`operations.service.Operations`,
plans and outcomes -> tables, execute-or-request-approval (each as its operation declares it in
:mod:`operations.registry`), audit rows -> a table. No Streamlit, no Kafka client here (the service
has them)."""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from typing import Any
from collections.abc import Callable

import pandas as pd

from dashboard.services.columns import Column, of_frame, table
from kpulse.printable import CONTROL
from operations.access import User
from operations.offset_plan import STRATEGIES, Scope, Strategy
from operations.reassign_plan import ReassignmentPlan
from operations.registry import REASSIGN, REASSIGN_CANCEL, REASSIGN_EXECUTE, REASSIGN_VERIFY, of_plan, operation
from operations.streams_reset_plan import STREAMS_STRATEGIES

VALUE_HINTS = {"to-offset": "offset, e.g. 100", "shift-by": "shift, e.g. -50",
               "to-datetime": "YYYY-MM-DDTHH:mm:SS.sss (UTC)", "by-duration": "ISO-8601 duration, e.g. PT30M"}
"""Strategies that take a value, and what to type."""
GROUP_STRATEGIES = STRATEGIES
"""Offset reset strategies, as the official tool names them."""
STREAMS_RESET_STRATEGIES = STREAMS_STRATEGIES


@dataclass(frozen=True)
class Done:
    """What executing (or requesting approval for) a plan gave: ``outcome`` or ``request``."""

    action: str
    outcome: Any = None
    request: Any = None

    @property
    def result(self) -> str:
        return "requested" if self.request is not None else self.outcome.result


def strategy(name: str, value: str | None, file_bytes: bytes | None = None) -> Strategy:
    """A strategy from the form; ``from-file`` content is written to a private temporary file."""
    if name == "from-file":
        if not file_bytes:
            from operations.errors import BadInput

            raise BadInput("from-file needs a CSV plan file (topic,partition,offset lines)")
        with tempfile.NamedTemporaryFile("wb", prefix="kpulse-reset-", suffix=".csv", delete=False) as file:
            file.write(file_bytes)
        return Strategy(name, file.name)
    return Strategy(name, (value or "").strip() or None if name in VALUE_HINTS else None)


def group_scope(scope: str, topic: str | None, partitions: list[int]) -> Scope:
    """``scope``: ``all topics``, ``one topic`` or ``chosen partitions``."""
    if scope == "all topics":
        return Scope(all_topics=True)
    from operations.errors import BadInput

    if not topic:
        raise BadInput("choose a topic")
    if scope == "chosen partitions":
        if not partitions:
            raise BadInput("choose at least one partition")
        return Scope(topics=((topic, tuple(sorted(partitions))),))
    return Scope(topics=((topic, None),))


# --- tables ----------------------------------------------------------------------------------------

def outcome_table(done: Done) -> pd.DataFrame:
    """Per partition: what the executor did and what it read back (the verification)."""
    if done.outcome is None:
        return pd.DataFrame()
    return operation(done.action).outcome_table(done.outcome)


def outcome_text(done: Done, name: Callable[[str], str] = str) -> str:
    """What executing gave, in a sentence; names and errors pass through ``name`` (as in ``Operation.summary``)."""
    if done.request is not None:
        return (f"approval request {done.request.id} created for {name(done.request.target)}: nothing changed yet; "
                "another operator approves it on the Operations page")
    outcome = done.outcome
    parts = [f"{done.action}: {outcome.result}"]
    if getattr(outcome, "error", None):
        parts.append(name(outcome.error))
    if getattr(outcome, "deleted", None):
        parts.append(f"deleted {', '.join(name(topic) for topic in outcome.deleted)}")
    if getattr(outcome, "throttles_removed", False):
        parts.append("replication throttles removed")
    return "; ".join(parts)


# --- acting --------------------------------------------------------------------------------------

def confirmed(typed: str, expected: str) -> bool:
    """Whether ``typed`` names ``expected``: exactly, or but for spaces around it when the name
    itself has none (a name that starts or ends with a space must be typed with it)."""
    return typed == expected or (expected == expected.strip() and typed.strip() == expected)


def name_note(expected: str) -> str:
    """What the name to type is made of, where the eye could miss it."""
    notes = [f"{len(expected)} character(s)"]
    if expected != expected.strip():
        notes.append("it starts or ends with a space")
    if CONTROL.search(expected):
        notes.append("control characters are shown as escapes (\\x1b): they cannot be typed here, "
                     "use the command line")
    return "; ".join(notes)


def execute(operations, user: User, plan, options: dict | None = None) -> Done:
    """Execute ``plan`` as ``user``, or file an approval request where the cluster requires one;
    ``options``: how it runs (:attr:`operations.registry.Operation.executor`), from its form."""
    entry = of_plan(plan)
    if operations.needs_approval(plan.cluster, entry.action):
        return Done(entry.action, request=operations.request_approval(user, entry.action, plan, options))
    return Done(entry.action, entry.executor(operations, user, plan, options, None))


# --- the Operations page -------------------------------------------------------------------------

AUDIT_COLUMNS = ["time", "cluster", "actor", "action", "target", "result", "approved_by", "error"]
AUDIT_TABLE = table(
    Column("time", "Time", "UTC", kind="datetime", format="YYYY-MM-DD HH:mm:ss", key=True),
    Column("actor", "Actor"), Column("action", "Action"), Column("target", "Target"), Column("result", "Result"),
    Column("approved_by", "Approved by"), Column("error", "Error"), Column("cluster", "Cluster"))
"""The audit log (:func:`audit_table`) as the Operations page shows it."""
APPROVAL_TABLE = table(
    Column("id", "Request", key=True),
    Column("requested", "Requested", "UTC", kind="datetime", format="YYYY-MM-DD HH:mm:ss"),
    Column("action", "Action"), Column("target", "Target"), Column("requested by", "Requested by"),
    Column("status", "Status"), Column("cluster", "Cluster"))
"""The approval requests (:func:`approvals_table`) as the Operations page shows them."""
_RECORDS = "records"
PLAN_COLUMNS: dict[str, Column] = {column.name: column for column in (
    Column("topic", "Topic", key=True), Column("partition", "Partition", key=True),
    Column("current offset", "Current offset"), Column("new offset", "New offset"),
    Column("lag before", "Lag before", _RECORDS), Column("lag after", "Lag after", _RECORDS),
    Column("replayed", "Replayed", _RECORDS, help="Records read again: the new offset is before the current one."),
    Column("skipped", "Skipped", _RECORDS, help="Records never read: the new offset is after the current one."),
    Column("log start", "Log start offset"), Column("log end", "Log end offset"),
    Column("start offset", "Start offset"), Column("new start offset", "New start offset"),
    Column("offset", "Offset"), Column("belongs to application", "Belongs to application"),
    Column("leader", "Leader"), Column("preferred", "Preferred leader"),
    Column("electable now", "Electable now", help="The preferred replica is in sync."),
    Column("current replicas", "Current replicas"), Column("target replicas", "Target replicas"),
    Column("adding", "Adding"), Column("removing", "Removing"),
    Column("before", "Before"), Column("new", "New"), Column("after", "After"),
    Column("after (read back)", "After (read back)", help="Read back from the cluster after the change."),
    Column("target", "Target replicas"), Column("replicas", "Replicas"), Column("done", "Done"),
    Column("moving", "Moving"), Column("error", "Error"),
    Column("record time", "Record time (UTC)", help="When the first skipped record was written (its timestamp)."))}
"""The columns of the operations' plan and outcome tables (``operations/registry.py``), by their names."""


def plan_columns(frame: pd.DataFrame) -> tuple[Column, ...]:
    """The columns of an operation's plan or outcome table (:data:`PLAN_COLUMNS`), key columns first."""
    return of_frame(frame.columns, PLAN_COLUMNS)


def audit_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Newest first, the columns a person reads."""
    if rows.empty:
        return pd.DataFrame(columns=AUDIT_COLUMNS + ["action_id"])
    return rows.sort_values("time", ascending=False)[AUDIT_COLUMNS + ["action_id"]].reset_index(drop=True)


def audit_details(rows: pd.DataFrame, action_id: str) -> dict[str, Any]:
    """The plan, before and after of one audit row, parsed."""
    row = rows[rows["action_id"] == action_id].iloc[0]
    return {name: json.loads(row[f"{name}_json"]) if row[f"{name}_json"] else None
            for name in ("plan", "before", "after")}


def open_reassignments(rows: pd.DataFrame) -> list[ReassignmentPlan]:
    """Plans started (``reassign:execute`` in progress) and not verified complete or cancelled since."""
    if rows.empty:
        return []
    plans: dict[str, ReassignmentPlan] = {}
    for row in rows.sort_values("time").itertuples():
        if not row.plan_json or not str(row.action).startswith(f"{REASSIGN}:"):
            continue
        key = row.plan_json
        if row.action == REASSIGN_EXECUTE and row.result in ("in-progress", "partial"):
            plans[key] = ReassignmentPlan.from_dict(json.loads(row.plan_json))
        elif row.action in (REASSIGN_VERIFY, REASSIGN_CANCEL) and row.result in ("ok", "cancelled"):
            plans.pop(key, None)
    return list(plans.values())


def approvals_table(requests) -> pd.DataFrame:
    return pd.DataFrame([{"id": r.id, "requested": pd.Timestamp(r.requested_at, unit="s", tz="UTC"),
                          "cluster": r.cluster, "action": r.action, "target": r.target,
                          "requested by": r.requested_by, "status": r.status} for r in requests],
                        columns=["id", "requested", "cluster", "action", "target", "requested by", "status"])
