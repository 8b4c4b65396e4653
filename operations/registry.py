"""The operations kpulse runs, each declared once: its name, the least role it needs, whether it
waits for a second operator, its plan type, how a plan is summed up and shown, and how it is planned
and executed through :class:`operations.service.Operations`.

Access checks (:mod:`operations.access`), approvals (:mod:`operations.approvals` and
:meth:`Operations.approve`), the CLI (:mod:`cli.operation_args`, :mod:`cli.operation_commands`) and the
dashboard's action flow (``dashboard/actions.py``, ``dashboard/services/plans.py``, the Operations
page) read :data:`OPERATIONS` instead of branching on plan types or operation names.

Adding an operation: a plan module (a frozen plan type with ``cluster``, ``target``, ``to_dict``
and ``from_dict``), an executor (applied through :meth:`Operations.run`: authorized, locked,
audited), one :class:`Operation` here, its form in ``dashboard/action_forms.py`` and its
subcommand (``cli/operation_args.py`` for the flags, ``cli/operation_commands.py`` for the printing).
``tests/test_ops_registry.py`` checks that every part is there.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable
from collections.abc import Callable

from operations.group_plans import DeleteGroupPlan, DeleteOffsetsPlan, ShareResetPlan, StreamsGroupResetPlan
from operations.election_plan import ElectionPlan
from operations.offset_plan import ResetPlan
from operations.reassign_plan import ReassignmentPlan
from operations.roles import ADMIN, OPERATOR
from operations.skip_plan import SKIP_GROUP_TYPES, SkipRecordsPlan
from operations.streams_reset_plan import LOCAL_STATE_NOTE, StreamsResetPlan

if TYPE_CHECKING:
    import pandas as pd

RESET_OFFSETS = "reset-offsets"
RESET_STREAMS_APP = "reset-streams-app"
RESET_STREAMS_GROUP = "reset-streams-group"
RESET_SHARE_GROUP = "reset-share-group"
DELETE_OFFSETS = "delete-offsets"
DELETE_GROUP = "delete-group"
SKIP_RECORDS = "skip-records"
ELECT_LEADERS = "elect-leaders"
REASSIGN = "reassign"
REASSIGN_EXECUTE = "reassign:execute"
"""The audited action that starts a reassignment."""
REASSIGN_VERIFY = "reassign:verify"
"""The audited action that finds a reassignment complete and removes its throttles."""
REASSIGN_CANCEL = "reassign:cancel"
"""The audited action that cancels the moves still in progress."""

@runtime_checkable
class SavedPlanType(Protocol):
    """A plan type whose plans an approval request keeps: ``from_dict`` reads back what the plan's
    ``to_dict`` wrote (every approvable operation's plan type)."""

    def from_dict(self, data: object) -> Any: ...


Name = Callable[[str], str]
"""How a summary quotes a name taken from the cluster or the user (the dashboard's makes it literal
Markdown; ``str`` elsewhere)."""


@dataclass(frozen=True)
class Export:
    """A download of a plan in another tool's format, offered beside the plan's JSON."""

    label: str
    """The button's text."""
    content: Callable[[Any], str]
    """Plan -> the file's text."""
    file_suffix: str
    """The end of the file name (after the action's key)."""
    mime: str
    key: str
    """The end of the button's widget key (after the action's key)."""


@dataclass(frozen=True)
class Operation:
    """One operation, as every caller sees it."""

    name: str
    """What it is called: its CLI subcommand, and the action roles are checked against."""
    role: str
    """The least role that may run it (:mod:`operations.roles`)."""
    approvable: bool
    """Whether, on a cluster with ``require_approval: true``, executing it files a request that
    another operator approves (:mod:`operations.approvals`)."""
    plan_type: type
    """The plan its planner returns and its executor takes (an approvable one's ``from_dict`` reads
    back what ``to_dict`` wrote into the request)."""
    entity: str
    """What it acts on, the dashboard page whose Actions section offers it: ``group``, ``streams``,
    ``topic`` or ``broker`` (a page offering several lets the person choose)."""
    summary: Callable[[Any, Name], str]
    """``(plan, name)`` -> one sentence saying what the plan changes (the plan's caption and the
    confirmation dialog's text)."""
    tables: Callable[[Any], dict[str, pd.DataFrame]]
    """Plan -> title -> table of what it would change (the first is the main table, always shown;
    the others when not empty)."""
    outcome_table: Callable[[Any], pd.DataFrame]
    """Outcome -> per partition: what the executor did and read back (the verification)."""
    confirmation_name: Callable[[Any], str]
    """Plan -> the name a person types to confirm it: the group, application, topic or cluster."""
    has_changes: Callable[[Any], bool]
    """Plan -> whether executing it would change anything (the dashboard offers execution only then)."""
    planner: Callable[..., Any]
    """``(operations, cluster, ...)`` -> a plan: the planner, through :class:`Operations` (changes
    nothing); the arguments after the cluster are the operation's own."""
    executor: Callable[..., Any]
    """``(operations, actor, plan, options, approved_by)`` -> the outcome (with ``result`` and
    ``error``): the executor, through :class:`Operations`. ``options`` are how it runs, as an
    approval request keeps them: ``include_internal`` and the operation's own (``expect_current``,
    ``throttle_bytes``)."""
    command_line: str
    """The same action from the command line, a dry run (``{cluster}`` and ``{name}`` are filled in)."""
    action: str = ""
    """What the audit log and approvals call its execution; the name unless it has several steps
    (``reassign:execute``)."""
    exports: tuple[Export, ...] = ()
    notes: Callable[[Any], tuple[str, ...]] = lambda plan: ()
    """Plan -> what to tell the person about it beyond its warnings (e.g. a Streams app's local state)."""
    polled: bool = False
    """Its execution can return while the change still runs (``in-progress``): the dashboard then
    shows the progress until verified, with a cancel button."""
    group_types: tuple[str, ...] = ()
    """The group types it applies to (``classic``, ``consumer``, ``streams``, ``share``); empty: any
    (or not a group). A page that knows the group's type offers only those that apply."""

    def __post_init__(self) -> None:
        if not self.action:
            object.__setattr__(self, "action", self.name)


# --- consumer group offsets ----------------------------------------------------------------------

def reset_rows(partitions) -> pd.DataFrame:
    """Per partition of an offset reset: the offsets, the lag and the messages replayed or skipped."""
    import pandas as pd

    rows = [{"topic": p.topic, "partition": p.partition, "current offset": p.current, "new offset": p.new,
             "lag before": p.lag_before, "lag after": p.lag_after, "replayed": p.replayed, "skipped": p.skipped,
             "log start": p.log_start, "log end": p.log_end} for p in partitions]
    frame = pd.DataFrame(rows, columns=["topic", "partition", "current offset", "new offset", "lag before",
                                        "lag after", "replayed", "skipped", "log start", "log end"])
    for column in ("current offset", "lag before"):
        frame[column] = pd.array(frame[column], dtype="Int64")
    return frame


def _reset_summary(plan: ResetPlan, name: Name) -> str:
    return (f"group {name(plan.group_id)} ({plan.group_state}): {name(plan.strategy.describe())}, scope "
            f"{name(plan.scope.describe()) or 'from file'}; {len(plan.partitions)} partition(s), "
            f"{plan.total_replayed} message(s) replayed, {plan.total_skipped} skipped")


def _reset_outcome_table(outcome) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame([{"topic": p.topic, "partition": p.partition, "before": p.before, "new": p.new,
                          "after (read back)": p.after, "error": p.error} for p in outcome.partitions])


def _include_internal(options: dict | None) -> bool:
    return (options or {}).get("include_internal") is True


def _reset_offsets(operations, actor, plan: ResetPlan, options: dict | None, approved_by: str | None):
    expected = {(t, p): o for t, p, o in (options or {}).get("expect_current", [])}
    return operations.reset_offsets(actor, plan, approved_by=approved_by, expect_current=expected,
                                    include_internal=_include_internal(options))


# --- Streams application reset ------------------------------------------------------------------

def _streams_summary(plan: StreamsResetPlan, name: Name) -> str:
    return (f"Streams application {name(plan.application_id)} ({plan.group_state}): "
            f"{name(plan.strategy.describe())} on {len(plan.input)} input and {len(plan.intermediate)} "
            f"intermediate partition(s); {len(plan.delete_topics)} internal topic(s) deleted")


def _streams_tables(plan: StreamsResetPlan) -> dict[str, pd.DataFrame]:
    import pandas as pd

    return {"Input topics (reset)": reset_rows(plan.input),
            "Intermediate topics (to the end)": reset_rows(plan.intermediate),
            "Internal topics to delete": pd.DataFrame({"topic": list(plan.delete_topics)}, dtype="object"),
            "Untouched (output, or not named)": pd.DataFrame({"topic": list(plan.untouched)}, dtype="object"),
            "Another application's, left alone": pd.DataFrame(
                {"topic": [t for t, _ in plan.foreign], "belongs to application": [g for _, g in plan.foreign]},
                dtype="object")}


def _reset_streams_app(operations, actor, plan: StreamsResetPlan, options: dict | None, approved_by: str | None):
    return operations.reset_streams_app(actor, plan, approved_by=approved_by,
                                        include_internal=_include_internal(options))


# --- Kafka 4's group types -----------------------------------------------------------------------

def _streams_group_summary(plan: StreamsGroupResetPlan, name: Name) -> str:
    scope = "all input topics" if plan.scope.all_topics else plan.scope.describe() or "from file"
    return (f"Streams group {name(plan.group_id)} ({plan.group_state}): {name(plan.strategy.describe())}, scope "
            f"{name(scope)}; {len(plan.partitions)} partition(s), {sum(p.replayed for p in plan.partitions)} "
            f"message(s) replayed, {sum(p.skipped for p in plan.partitions)} skipped; "
            f"{len(plan.delete_topics)} internal topic(s) deleted")


def _streams_group_tables(plan: StreamsGroupResetPlan) -> dict[str, pd.DataFrame]:
    import pandas as pd

    return {"Offsets per input partition": reset_rows(plan.partitions),
            "Internal topics to delete": pd.DataFrame({"topic": list(plan.delete_topics)}, dtype="object"),
            "Internal topics kept (not named as the group's)": pd.DataFrame({"topic": list(plan.kept_topics)},
                                                                             dtype="object")}


def _reset_streams_group(operations, actor, plan, options: dict | None, approved_by: str | None):
    return operations.reset_streams_group(actor, plan, approved_by=approved_by,
                                          include_internal=_include_internal(options))


def _share_summary(plan: ShareResetPlan, name: Name) -> str:
    return (f"share group {name(plan.group_id)} ({plan.group_state}): {name(plan.strategy.describe())}, scope "
            f"{name(plan.scope.describe())}; {len(plan.partitions)} partition(s) get a new start offset")


def _share_tables(plan: ShareResetPlan) -> dict[str, pd.DataFrame]:
    import pandas as pd

    frame = pd.DataFrame([{"topic": p.topic, "partition": p.partition, "start offset": p.current,
                           "new start offset": p.new, "log start": p.log_start, "log end": p.log_end}
                          for p in plan.partitions],
                         columns=["topic", "partition", "start offset", "new start offset", "log start", "log end"])
    frame["start offset"] = pd.array(frame["start offset"], dtype="Int64")
    return {"Start offsets per partition": frame}


def _reset_share_group(operations, actor, plan, options: dict | None, approved_by: str | None):
    return operations.reset_share_group(actor, plan, approved_by=approved_by, include_internal=_include_internal(options))


def _offset_table(rows, title: str) -> dict[str, pd.DataFrame]:
    import pandas as pd

    frame = pd.DataFrame([{"topic": r.topic, "partition": r.partition, "offset": r.offset} for r in rows],
                         columns=["topic", "partition", "offset"])
    frame["offset"] = pd.array(frame["offset"], dtype="Int64")
    return {title: frame}


def _delete_offsets_summary(plan: DeleteOffsetsPlan, name: Name) -> str:
    return (f"{plan.group_type} group {name(plan.group_id)} ({plan.group_state}) forgets its offsets of "
            f"{len(plan.partitions)} partition(s) of {name(', '.join(plan.topics))}")


def _delete_offsets(operations, actor, plan, options: dict | None, approved_by: str | None):
    return operations.delete_offsets(actor, plan, approved_by=approved_by, include_internal=_include_internal(options))


def _delete_group_summary(plan: DeleteGroupPlan, name: Name) -> str:
    return (f"{plan.group_type} group {name(plan.group_id)} ({plan.group_state}) is deleted with its offsets of "
            f"{len(plan.offsets)} partition(s); {len(plan.delete_topics)} internal topic(s) deleted")


def _delete_group_tables(plan: DeleteGroupPlan) -> dict[str, pd.DataFrame]:
    import pandas as pd

    return {**_offset_table(plan.offsets, "Offsets deleted with the group"),
            "Internal topics to delete": pd.DataFrame({"topic": list(plan.delete_topics)}, dtype="object")}


def _delete_group(operations, actor, plan, options: dict | None, approved_by: str | None):
    return operations.delete_group(actor, plan, approved_by=approved_by, include_internal=_include_internal(options))


# --- skipping records -----------------------------------------------------------------------------

def _record_time(plan: SkipRecordsPlan) -> str | None:
    """The skipped record's timestamp as UTC text (None: not read)."""
    if plan.record_timestamp is None:
        return None
    return (time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(plan.record_timestamp // 1000))
            + f".{plan.record_timestamp % 1000:03d}Z")


def _skip_summary(plan: SkipRecordsPlan, name: Name) -> str:
    when = _record_time(plan) or "time unknown"
    return (f"{plan.group_type} group {name(plan.group_id)} ({plan.group_state}) skips {plan.skipped} record(s) of "
            f"{name(plan.topic)}-{plan.partition}: committed offset {plan.from_offset} -> {plan.to_offset} "
            f"(the record at {plan.from_offset} written {when}); no other partition changes")


def _skip_tables(plan: SkipRecordsPlan) -> dict[str, pd.DataFrame]:
    import pandas as pd

    frame = pd.DataFrame([{"topic": plan.topic, "partition": plan.partition, "current offset": plan.from_offset,
                           "new offset": plan.to_offset, "skipped": plan.skipped,
                           "record time": _record_time(plan), "lag before": plan.lag_before,
                           "lag after": plan.lag_after, "log start": plan.log_start, "log end": plan.log_end}])
    return {"The partition (nothing else changes)": frame}


def _skip_records(operations, actor, plan: SkipRecordsPlan, options: dict | None, approved_by: str | None):
    return operations.skip_records(actor, plan, approved_by=approved_by, include_internal=_include_internal(options))


# --- preferred leader election ------------------------------------------------------------------

def _election_summary(plan: ElectionPlan, name: Name) -> str:
    return (f"{len(plan.moves)} partition(s) of {name(plan.target)} not led by their preferred replica, "
            f"{len(plan.electable)} electable now")


def _election_tables(plan: ElectionPlan) -> dict[str, pd.DataFrame]:
    import pandas as pd

    return {"Partitions not led by their preferred replica": pd.DataFrame(
        [{"topic": m.topic, "partition": m.partition, "leader": m.leader, "preferred": m.preferred,
          "electable now": m.preferred_in_sync} for m in plan.moves],
        columns=["topic", "partition", "leader", "preferred", "electable now"])}


def _elect_leaders(operations, actor, plan: ElectionPlan, options: dict | None, approved_by: str | None):
    return operations.elect_leaders(actor, plan, include_internal=_include_internal(options))


# --- partition reassignment ---------------------------------------------------------------------

def _reassignment_summary(plan: ReassignmentPlan, name: Name) -> str:
    return f"{name(plan.goal)}: {len(plan.moves)} partition(s) change, {plan.replicas_moved} replica(s) move"


def _reassignment_tables(plan: ReassignmentPlan) -> dict[str, pd.DataFrame]:
    import pandas as pd

    return {"Moves": pd.DataFrame(
        [{"topic": m.topic, "partition": m.partition, "current replicas": str(list(m.current)),
          "target replicas": str(list(m.target)), "adding": str(list(m.adding)), "removing": str(list(m.removing))}
         for m in plan.moves], columns=["topic", "partition", "current replicas", "target replicas", "adding",
                                        "removing"])}


def _start_reassignment(operations, actor, plan: ReassignmentPlan, options: dict[str, Any], approved_by: str | None):
    return operations.start_reassignment(actor, plan, int(options["throttle_bytes"]), approved_by=approved_by,
                                         include_internal=_include_internal(options))


# --- shared --------------------------------------------------------------------------------------

def _read_back_table(outcome) -> pd.DataFrame:
    """Outcome rows that are already dicts (``after``: the state read back)."""
    import pandas as pd

    frame = pd.DataFrame(list(outcome.partitions))
    if "after" in frame:
        frame = frame.rename(columns={"after": "after (read back)"})
    for column in ("target", "replicas"):
        if column in frame:
            frame[column] = frame[column].map(str)
    return frame


def _changes_partitions(plan) -> bool:
    return bool(getattr(plan, "partitions", None) or getattr(plan, "moves", None))


OPERATIONS: tuple[Operation, ...] = (
    Operation(
        name=RESET_OFFSETS, role=OPERATOR, approvable=True, plan_type=ResetPlan, entity="group",
        group_types=("classic", "consumer"),
        summary=_reset_summary, tables=lambda plan: {"Offsets per partition": reset_rows(plan.partitions)},
        outcome_table=_reset_outcome_table, confirmation_name=lambda plan: plan.group_id,
        has_changes=_changes_partitions,
        planner=lambda operations, *args, **kwargs: operations.plan_reset_offsets(*args, **kwargs),
        executor=_reset_offsets,
        command_line="kpulse reset-offsets --cluster {cluster} --group {name} --all-topics --to-latest",
        exports=(Export("Plan as CSV (kafka-consumer-groups)", lambda plan: plan.to_csv(), "plan.csv", "text/csv",
                        "csv"),)),
    Operation(
        name=RESET_STREAMS_APP, role=ADMIN, approvable=True, plan_type=StreamsResetPlan, entity="streams",
        group_types=("classic",),
        summary=_streams_summary, tables=_streams_tables, outcome_table=_read_back_table,
        confirmation_name=lambda plan: plan.application_id,
        has_changes=lambda plan: bool(plan.input or plan.intermediate or plan.delete_topics),
        planner=lambda operations, *args, **kwargs: operations.plan_streams_reset(*args, **kwargs),
        executor=_reset_streams_app,
        command_line="kpulse reset-streams-app --cluster {cluster} --application-id {name} --input-topics <topics>",
        notes=lambda plan: (plan.local_state_note,)),
    Operation(
        name=RESET_STREAMS_GROUP, role=ADMIN, approvable=True, plan_type=StreamsGroupResetPlan, entity="streams",
        group_types=("streams",),
        summary=_streams_group_summary, tables=_streams_group_tables, outcome_table=_read_back_table,
        confirmation_name=lambda plan: plan.group_id,
        has_changes=lambda plan: bool(plan.partitions or plan.delete_topics),
        planner=lambda operations, *args, **kwargs: operations.plan_streams_group_reset(*args, **kwargs),
        executor=_reset_streams_group,
        command_line="kpulse reset-streams-group --cluster {cluster} --group {name} --all-input-topics --to-earliest",
        exports=(Export("Plan as CSV (kafka-streams-groups)", lambda plan: plan.to_csv(), "plan.csv", "text/csv",
                        "csv"),),
        notes=lambda plan: (LOCAL_STATE_NOTE.format(app=plan.group_id),)),
    Operation(
        name=RESET_SHARE_GROUP, role=OPERATOR, approvable=True, plan_type=ShareResetPlan, entity="group",
        group_types=("share",),
        summary=_share_summary, tables=_share_tables, outcome_table=_reset_outcome_table,
        confirmation_name=lambda plan: plan.group_id, has_changes=_changes_partitions,
        planner=lambda operations, *args, **kwargs: operations.plan_share_reset(*args, **kwargs),
        executor=_reset_share_group,
        command_line="kpulse reset-share-group --cluster {cluster} --group {name} --all-topics --to-earliest"),
    Operation(
        name=DELETE_OFFSETS, role=OPERATOR, approvable=True, plan_type=DeleteOffsetsPlan, entity="group",
        summary=_delete_offsets_summary,
        tables=lambda plan: _offset_table(plan.partitions, "Offsets the group forgets"),
        outcome_table=_read_back_table, confirmation_name=lambda plan: plan.group_id, has_changes=_changes_partitions,
        planner=lambda operations, *args, **kwargs: operations.plan_delete_offsets(*args, **kwargs),
        executor=_delete_offsets,
        command_line="kpulse delete-offsets --cluster {cluster} --group {name} --topic <topic>"),
    Operation(
        name=DELETE_GROUP, role=ADMIN, approvable=True, plan_type=DeleteGroupPlan, entity="group",
        summary=_delete_group_summary, tables=_delete_group_tables, outcome_table=_read_back_table,
        confirmation_name=lambda plan: plan.group_id, has_changes=lambda plan: True,
        planner=lambda operations, *args, **kwargs: operations.plan_delete_group(*args, **kwargs),
        executor=_delete_group,
        command_line="kpulse delete-group --cluster {cluster} --group {name}"),
    Operation(
        name=SKIP_RECORDS, role=OPERATOR, approvable=True, plan_type=SkipRecordsPlan, entity="group",
        group_types=SKIP_GROUP_TYPES,
        summary=_skip_summary, tables=_skip_tables, outcome_table=_reset_outcome_table,
        confirmation_name=lambda plan: plan.group_id, has_changes=lambda plan: plan.skipped > 0,
        planner=lambda operations, *args, **kwargs: operations.plan_skip_records(*args, **kwargs),
        executor=_skip_records,
        command_line="kpulse skip-records --cluster {cluster} --group {name} --topic <topic> --partition <partition>",
        notes=lambda plan: (f"Same offset as: {plan.official_command()}",)),
    Operation(
        name=ELECT_LEADERS, role=OPERATOR, approvable=False, plan_type=ElectionPlan, entity="topic",
        summary=_election_summary, tables=_election_tables, outcome_table=_read_back_table,
        confirmation_name=lambda plan: plan.scope[0][0] if plan.scope else plan.cluster,
        has_changes=_changes_partitions,
        planner=lambda operations, *args, **kwargs: operations.plan_election(*args, **kwargs),
        executor=_elect_leaders,
        command_line="kpulse elect-leaders --cluster {cluster} --topic {name}"),
    Operation(
        name=REASSIGN, action=REASSIGN_EXECUTE, role=ADMIN, approvable=True, plan_type=ReassignmentPlan,
        entity="broker", summary=_reassignment_summary, tables=_reassignment_tables, outcome_table=_read_back_table,
        confirmation_name=lambda plan: plan.cluster, has_changes=_changes_partitions,
        planner=lambda operations, *args, **kwargs: operations.plan_reassignment(*args, **kwargs),
        executor=_start_reassignment,
        command_line="kpulse reassign generate --cluster {cluster} --help",
        exports=(Export("Plan as reassignment JSON", lambda plan: plan.official_json(), "reassign.json",
                        "application/json", "official"),),
        polled=True),
)
"""Every operation, in the order the CLI's help lists them."""

APPROVABLE = tuple(operation.action for operation in OPERATIONS if operation.approvable)
"""Actions that wait for approval on a cluster that requires it."""


def operation(name: str) -> Operation:
    """The operation called ``name``, or of the audited action ``name`` (``reassign:verify``)."""
    for candidate in OPERATIONS:
        if candidate.name == name.split(":")[0]:
            return candidate
    raise KeyError(f"unknown operation {name!r}")


def of_plan(plan) -> Operation:
    """The operation whose plan ``plan`` is."""
    for candidate in OPERATIONS:
        if type(plan) is candidate.plan_type:
            return candidate
    raise KeyError(f"no operation plans a {type(plan).__name__}")


def of_entity(entity: str) -> Operation:
    """The first operation the dashboard page of ``entity`` (group, streams, topic, broker) offers."""
    return for_entity(entity)[0]


def for_entity(entity: str, group_type: str | None = None) -> tuple[Operation, ...]:
    """Every operation the dashboard page of ``entity`` offers, in the registry's order; with
    ``group_type``, those that apply to a group of that type."""
    found = tuple(candidate for candidate in OPERATIONS if candidate.entity == entity)
    if not found:
        raise KeyError(f"no operation acts on a {entity!r}")
    return tuple(candidate for candidate in found
                 if group_type is None or not candidate.group_types or group_type in candidate.group_types)
