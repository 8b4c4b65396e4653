"""The dashboard's side of operations: form values -> a plan from :class:`operations.service.Operations`,
plans and outcomes -> tables, execute-or-request-approval, audit rows -> a table. No Streamlit,
no Kafka client here (the service has them)."""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from typing import Any, Callable

import pandas as pd

from kpulse.printable import CONTROL
from operations.access import User
from operations.leaders import ElectionPlan
from operations.offset_plan import STRATEGIES, ResetPlan, Scope, Strategy
from operations.reassign_plan import ReassignmentPlan
from operations.streams_reset import STREAMS_STRATEGIES, StreamsResetPlan

ACTIONS = {"group": "reset-offsets", "streams": "reset-streams-app", "topic": "elect-leaders",
           "broker": "reassign:execute"}
"""Entity kind -> the action its Actions section offers."""
VALUE_HINTS = {"to-offset": "offset, e.g. 100", "shift-by": "shift, e.g. -50",
               "to-datetime": "YYYY-MM-DDTHH:mm:SS.sss (UTC)", "by-duration": "ISO-8601 duration, e.g. PT30M"}
"""Strategies that take a value, and what to type."""
GROUP_STRATEGIES = STRATEGIES
"""Offset reset strategies, as the official tool names them."""
STREAMS_RESET_STRATEGIES = STREAMS_STRATEGIES
DEFAULT_THROTTLE = 10_000_000
"""Bytes per second per broker while replicas move."""


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

def reset_rows(partitions) -> pd.DataFrame:
    rows = [{"topic": p.topic, "partition": p.partition, "current offset": p.current, "new offset": p.new,
             "lag before": p.lag_before, "lag after": p.lag_after, "replayed": p.replayed, "skipped": p.skipped,
             "log start": p.log_start, "log end": p.log_end} for p in partitions]
    frame = pd.DataFrame(rows, columns=["topic", "partition", "current offset", "new offset", "lag before",
                                        "lag after", "replayed", "skipped", "log start", "log end"])
    for column in ("current offset", "lag before"):
        frame[column] = pd.array(frame[column], dtype="Int64")
    return frame


def plan_tables(plan) -> dict[str, pd.DataFrame]:
    """Title -> table of what ``plan`` would change (the first one is the main table)."""
    if isinstance(plan, ResetPlan):
        return {"Offsets per partition": reset_rows(plan.partitions)}
    if isinstance(plan, StreamsResetPlan):
        return {"Input topics (reset)": reset_rows(plan.input),
                "Intermediate topics (to the end)": reset_rows(plan.intermediate),
                "Internal topics to delete": pd.DataFrame({"topic": list(plan.delete_topics)}, dtype="object"),
                "Untouched (output, or not named)": pd.DataFrame({"topic": list(plan.untouched)}, dtype="object"),
                "Another application's, left alone": pd.DataFrame(
                    {"topic": [t for t, _ in plan.foreign], "belongs to application": [g for _, g in plan.foreign]},
                    dtype="object")}
    if isinstance(plan, ElectionPlan):
        return {"Partitions not led by their preferred replica": pd.DataFrame(
            [{"topic": m.topic, "partition": m.partition, "leader": m.leader, "preferred": m.preferred,
              "electable now": m.preferred_in_sync} for m in plan.moves],
            columns=["topic", "partition", "leader", "preferred", "electable now"])}
    return {"Moves": pd.DataFrame(
        [{"topic": m.topic, "partition": m.partition, "current replicas": str(list(m.current)),
          "target replicas": str(list(m.target)), "adding": str(list(m.adding)), "removing": str(list(m.removing))}
         for m in plan.moves], columns=["topic", "partition", "current replicas", "target replicas", "adding",
                                        "removing"])}


def plan_summary(plan, name: Callable[[str], str] = str) -> str:
    """One sentence saying what ``plan`` changes; names, and anything else taken from the cluster or
    the user, pass through ``name`` (the dashboard's makes them literal Markdown)."""
    if isinstance(plan, ResetPlan):
        return (f"group {name(plan.group_id)} ({plan.group_state}): {name(plan.strategy.describe())}, scope "
                f"{name(plan.scope.describe()) or 'from file'}; {len(plan.partitions)} partition(s), "
                f"{plan.total_replayed} message(s) replayed, {plan.total_skipped} skipped")
    if isinstance(plan, StreamsResetPlan):
        return (f"Streams application {name(plan.application_id)} ({plan.group_state}): "
                f"{name(plan.strategy.describe())} on {len(plan.input)} input and {len(plan.intermediate)} "
                f"intermediate partition(s); {len(plan.delete_topics)} internal topic(s) deleted")
    if isinstance(plan, ElectionPlan):
        return (f"{len(plan.moves)} partition(s) of {name(plan.target)} not led by their preferred replica, "
                f"{len(plan.electable)} electable now")
    return f"{name(plan.goal)}: {len(plan.moves)} partition(s) change, {plan.replicas_moved} replica(s) move"


def outcome_table(done: Done) -> pd.DataFrame:
    """Per partition: what the executor did and what it read back (the verification)."""
    outcome = done.outcome
    if outcome is None:
        return pd.DataFrame()
    rows = [row if isinstance(row, dict) else {"topic": row.topic, "partition": row.partition, "before": row.before,
                                              "new": row.new, "after (read back)": row.after, "error": row.error}
            for row in outcome.partitions]
    frame = pd.DataFrame(rows)
    if "after" in frame:
        frame = frame.rename(columns={"after": "after (read back)"})
    for column in ("target", "replicas"):
        if column in frame:
            frame[column] = frame[column].map(str)
    return frame


def outcome_text(done: Done, name: Callable[[str], str] = str) -> str:
    """What executing gave, in a sentence; names and errors pass through ``name`` (as in :func:`plan_summary`)."""
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

def action_of(plan) -> str:
    if isinstance(plan, ResetPlan):
        return "reset-offsets"
    if isinstance(plan, StreamsResetPlan):
        return "reset-streams-app"
    if isinstance(plan, ElectionPlan):
        return "elect-leaders"
    return "reassign:execute"


def confirmation_name(plan) -> str:
    """What the user must type to confirm: the group, application, topic or broker acted on."""
    if isinstance(plan, ResetPlan):
        return plan.group_id
    if isinstance(plan, StreamsResetPlan):
        return plan.application_id
    if isinstance(plan, ElectionPlan):
        return plan.scope[0][0] if plan.scope else plan.cluster
    return plan.cluster


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


def execute(operations, user: User, plan, throttle_bytes: int = DEFAULT_THROTTLE) -> Done:
    """Execute ``plan`` as ``user``, or file an approval request where the cluster requires one."""
    action = action_of(plan)
    if operations.needs_approval(plan.cluster, action):
        options = {"throttle_bytes": throttle_bytes} if isinstance(plan, ReassignmentPlan) else None
        return Done(action, request=operations.request_approval(user, action, plan, options))
    if isinstance(plan, ResetPlan):
        return Done(action, operations.reset_offsets(user, plan))
    if isinstance(plan, StreamsResetPlan):
        return Done(action, operations.reset_streams_app(user, plan))
    if isinstance(plan, ElectionPlan):
        return Done(action, operations.elect_leaders(user, plan))
    return Done(action, operations.start_reassignment(user, plan, throttle_bytes))


# --- the Operations page -------------------------------------------------------------------------

AUDIT_COLUMNS = ["time", "cluster", "actor", "action", "target", "result", "approved_by", "error"]


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
        if not row.plan_json or not str(row.action).startswith("reassign:"):
            continue
        key = row.plan_json
        if row.action == "reassign:execute" and row.result in ("in-progress", "partial"):
            plans[key] = ReassignmentPlan.from_dict(json.loads(row.plan_json))
        elif row.action in ("reassign:verify", "reassign:cancel") and row.result in ("ok", "cancelled"):
            plans.pop(key, None)
    return list(plans.values())


def approvals_table(requests) -> pd.DataFrame:
    return pd.DataFrame([{"id": r.id, "requested": pd.Timestamp(r.requested_at, unit="s", tz="UTC"),
                          "cluster": r.cluster, "action": r.action, "target": r.target,
                          "requested by": r.requested_by, "status": r.status} for r in requests],
                        columns=["id", "requested", "cluster", "action", "target", "requested by", "status"])
