"""The Streams apps page: applications and instances from the snapshot, the Streams group of an
application on the streams protocol (epochs, subtopologies, members and their tasks, input lag),
the state timeline from ``streams_transition`` rows, rebalance figures. Pure."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from collectors.streams.streams_group import MEMBER_RECONCILING, MEMBER_STABLE, member_instance
from collectors.streams.streams_state import GROUP_INSTANCE, is_rebalancing
from dashboard.services.columns import EMPTY_WHY_NOT_READ, Column, table
from dashboard.services.unread import group_problem
from kpulse.snapshot import Rebalances, Snapshot, StreamsApp, StreamsGroupDetail

APP_COLUMNS = ["application_id", "protocol", "state", "group_state", "members", "instances", "expected_instances",
               "input_lag", "rebalances", "rebalancing_seconds", "problem"]
APP_TABLE = table(
    Column("application_id", "Application", key=True), Column("protocol", "Protocol"), Column("state", "State"),
    Column("group_state", "Group state"),
    Column("input_lag", "Input lag", "records", help="Lag of its input partitions, summed. " + EMPTY_WHY_NOT_READ),
    Column("members", "Members", help=EMPTY_WHY_NOT_READ), Column("instances", "Instances",
                                                                help="Instances seen on their metrics endpoints."),
    Column("expected_instances", "Expected instances", help="From the config; empty when it names none."),
    Column("rebalances", "Rebalances", help="Rebalances among the recent transitions."),
    Column("rebalancing_seconds", "Rebalancing", "s", kind="number", format="%.0f",
           help="Time spent rebalancing recently."),
    Column("problem", "Why not read", help="Why kpulse could not read the application's group: its values are "
                                           "empty."))
"""The application list (:func:`apps_frame`) as the page shows it."""
ShownApp = StreamsApp | Mapping[str, None]
"""The application a page shows: the snapshot's, or ``{}`` for one the snapshot does not hold (every
field then reads as None)."""


def apps_frame(snapshot: Snapshot | None) -> pd.DataFrame:
    """One row per application; ``problem`` says why its group could not be read (``group_error``,
    ``services/unread.py``), its group's values then null."""
    rows = []
    for app in (snapshot.get("streams_apps") if snapshot else None) or []:
        rebalances: Rebalances | Mapping[str, None] = app.get("rebalances") or {}
        group: StreamsGroupDetail | Mapping[str, None] = app.get("group") or {}
        rows.append({"application_id": app.get("application_id"), "protocol": app.get("protocol"),
                     "state": app.get("state"), "input_lag": group.get("total_lag"),
                     "group_state": app.get("group_state"), "members": app.get("members"),
                     "instances": len(app.get("instances") or []), "expected_instances": app.get("expected_instances"),
                     "rebalances": rebalances.get("count"), "rebalancing_seconds": rebalances.get("total_seconds"),
                     "problem": group_problem(app.get("application_id"), app.get("group_error"))})
    frame = pd.DataFrame(rows, columns=APP_COLUMNS)
    for column in ("members", "expected_instances", "input_lag", "rebalances"):
        frame[column] = pd.array(frame[column], dtype="Int64")
    return frame


def app(snapshot: Snapshot | None, application_id: str) -> StreamsApp | None:
    apps = (snapshot.get("streams_apps") if snapshot else None) or []
    return next((a for a in apps if a.get("application_id") == application_id), None)


INSTANCE_TABLE = table(
    Column("instance", "Instance", key=True), Column("state", "State"), Column("up", "Up"),
    Column("alive_threads", "Alive threads"), Column("failed_threads", "Failed threads"),
    Column("threads", "Thread states"), Column("endpoint", "Metrics endpoint"),
    Column("error", "Error", help="Why its metrics endpoint could not be read: its values are empty."))
"""An application's instances (:func:`instances_frame`) as the page shows them."""


def instances_frame(app_entry: ShownApp) -> pd.DataFrame:
    rows = [{"instance": i.get("id"), "state": i.get("state"), "up": i.get("up"), "alive_threads": i.get("alive_threads"),
             "failed_threads": i.get("failed_threads"),
             "threads": ", ".join(f"{t}: {s}" for t, s in sorted((i.get("thread_states") or {}).items())),
             "endpoint": i.get("endpoint"), "error": i.get("error")} for i in app_entry.get("instances") or []]
    return pd.DataFrame(rows, columns=["instance", "state", "up", "alive_threads", "failed_threads", "threads",
                                       "endpoint", "error"])


def timeline(transitions: pd.DataFrame, application_id: str, start: float, now: float,
             current: Mapping[str, str | None] | None = None,
             first_seen: Mapping[str, pd.Timestamp] | None = None) -> pd.DataFrame:
    """State periods per instance between ``start`` and ``now`` (epoch seconds): (instance, state,
    begin, end) with datetimes, built from the transitions (``from_state`` before the first one).
    An instance without a transition in the window stays in its ``current`` state throughout.
    An instance's first period begins when it was first seen (``first_seen``), if in the window."""
    rows = transitions[transitions["application_id"] == application_id].sort_values("time")
    begin_at = pd.Timestamp(start, unit="s", tz="UTC")
    end_at = pd.Timestamp(now, unit="s", tz="UTC")
    seen_at = {instance: max(begin_at, when) for instance, when in (first_seen or {}).items()}
    periods = []
    seen = set()
    for instance, changes in rows.groupby("instance", sort=True):
        seen.add(instance)
        state, since = changes["from_state"].iloc[0], min(seen_at.get(instance, begin_at), changes["time"].iloc[0])
        for when, to_state in zip(changes["time"], changes["to_state"]):
            if when > since:
                periods.append({"instance": instance, "state": state, "begin": since, "end": when})
            state, since = to_state, max(when, begin_at)
        periods.append({"instance": instance, "state": state, "begin": since, "end": end_at})
    for instance, state in (current or {}).items():
        if instance not in seen and state is not None:
            periods.append({"instance": instance, "state": state, "begin": seen_at.get(instance, begin_at),
                            "end": end_at})
    return pd.DataFrame(periods, columns=["instance", "state", "begin", "end"])


def rebalancing_seconds(periods: pd.DataFrame) -> float:
    """Time spent rebalancing in the timeline (instances in REBALANCING, a Streams group in
    Assigning or Reconciling), summed over instances."""
    rebalancing = periods[[is_rebalancing(i, s) for i, s in zip(periods["instance"], periods["state"])]]
    return float((rebalancing["end"] - rebalancing["begin"]).dt.total_seconds().sum()) if len(rebalancing) else 0.0


# --- the Streams group of an application on the streams protocol (KIP-1071) -------------------------

MEMBER_COLUMNS = ["reconciling", "member_id", "process_id", "client_id", "client_host", "user_endpoint", "member_epoch",
                  "active", "standby", "warmup", "target_active", "target_standby", "target_warmup", "protocol"]
_TASKS = "As subtopology:[partitions]."
MEMBER_TABLE = table(
    Column("member_id", "Member", key=True),
    Column("reconciling", "Reconciling", help="Not yet at its target tasks."),
    Column("active", "Active tasks", help=_TASKS), Column("target_active", "Target active tasks", help=_TASKS),
    Column("standby", "Standby tasks", help=_TASKS), Column("target_standby", "Target standby tasks", help=_TASKS),
    Column("warmup", "Warm-up tasks", help=_TASKS), Column("target_warmup", "Target warm-up tasks", help=_TASKS),
    Column("member_epoch", "Member epoch"), Column("process_id", "Process"), Column("client_id", "Client"),
    Column("client_host", "Host"),
    Column("user_endpoint", "Endpoint", help="Its interactive-queries endpoint (`application.server`). Empty: it sets "
                                             "none."),
    Column("protocol", "Protocol"))
"""A Streams group's members (:func:`members_frame`) as the page shows them."""


def tasks_text(tasks: Mapping[str, list[int]] | None) -> str:
    """Tasks as ``kafka-streams-groups --members`` prints them: ``0:[0,1]; 1:[2]`` (subtopology:[partitions])."""
    return "; ".join(f"{subtopology}:[{','.join(str(p) for p in partitions)}]"
                     for subtopology, partitions in sorted((tasks or {}).items()))


def members_frame(group: StreamsGroupDetail | None) -> pd.DataFrame:
    """One row per member, those still reconciling first."""
    rows = [{"reconciling": m.get("reconciling"), "member_id": m.get("member_id"), "process_id": m.get("process_id"),
             "client_id": m.get("client_id"), "client_host": m.get("client_host"),
             "user_endpoint": m.get("user_endpoint"), "member_epoch": m.get("member_epoch"),
             "active": tasks_text(m.get("active_tasks")), "standby": tasks_text(m.get("standby_tasks")),
             "warmup": tasks_text(m.get("warmup_tasks")), "target_active": tasks_text(m.get("target_active_tasks")),
             "target_standby": tasks_text(m.get("target_standby_tasks")),
             "target_warmup": tasks_text(m.get("target_warmup_tasks")),
             "protocol": "classic" if m.get("is_classic") else "streams"}
            for m in (group.get("members") if group else None) or []]
    frame = pd.DataFrame(rows, columns=MEMBER_COLUMNS)
    return frame.sort_values("reconciling", ascending=False, kind="stable").reset_index(drop=True)


def reconciling_style(row: pd.Series) -> list[str]:
    """Styler rule: a member still reconciling stands out."""
    return ["background-color: #fbd38d" if row.get("reconciling") else ""] * len(row)


SUBTOPOLOGY_TABLE = table(
    Column("subtopology", "Subtopology", key=True), Column("source_topics", "Source topics"),
    Column("repartition_source_topics", "Repartition source topics"),
    Column("repartition_sink_topics", "Repartition sink topics"), Column("changelog_topics", "Changelog topics"))


def subtopologies_frame(group: StreamsGroupDetail | None) -> pd.DataFrame:
    rows = [{"subtopology": s.get("subtopology_id"), "source_topics": ", ".join(s.get("source_topics") or []),
             "repartition_source_topics": ", ".join(s.get("repartition_source_topics") or []),
             "repartition_sink_topics": ", ".join(s.get("repartition_sink_topics") or []),
             "changelog_topics": ", ".join(s.get("changelog_topics") or [])}
            for s in (group.get("subtopologies") if group else None) or []]
    return pd.DataFrame(rows, columns=["subtopology", "source_topics", "repartition_source_topics",
                                       "repartition_sink_topics", "changelog_topics"])


INPUT_LAG_TABLE = table(
    Column("topic", "Topic", key=True), Column("partition", "Partition", key=True),
    Column("lag", "Lag", "records", help="Log end minus committed offset. Empty: not known; the **Error** column "
                                         "says why."),
    Column("committed_offset", "Committed offset"), Column("log_end_offset", "Log end offset"),
    Column("error", "Error", help="Why this partition's values are not known."))


def input_lag_frame(group: StreamsGroupDetail | None) -> pd.DataFrame:
    rows = [{"topic": p.get("topic"), "partition": p.get("partition"), "committed_offset": p.get("committed_offset"),
             "log_end_offset": p.get("log_end_offset"), "lag": p.get("lag"), "error": p.get("error")}
            for p in (group.get("input_partitions") if group else None) or []]
    return pd.DataFrame(rows, columns=["topic", "partition", "committed_offset", "log_end_offset", "lag", "error"])


TRANSITION_TABLE = table(
    Column("time", "Time", "UTC", kind="datetime", format="YYYY-MM-DD HH:mm:ss", key=True),
    Column("instance", "Instance", key=True), Column("from", "From"), Column("to", "To"),
    Column("inferred", "Inferred", help="Not seen but deduced: a rebalance between two readings (a rebalance count "
                                        "or a target assignment epoch moved), recorded with no duration."))


def transitions_frame(app_entry: ShownApp | None) -> pd.DataFrame:
    """The snapshot's recent transitions, newest first, with datetimes."""
    rows = [{"time": pd.Timestamp(t.get("time"), unit="s", tz="UTC"), "instance": t.get("instance"),
             "from": t.get("from"), "to": t.get("to"), "inferred": t.get("inferred")}
            for t in reversed((app_entry.get("transitions") if app_entry else None) or [])]
    return pd.DataFrame(rows, columns=["time", "instance", "from", "to", "inferred"])


def current_states(app_entry: ShownApp | None) -> dict[str, str | None]:
    """Instance -> its state now, for the timeline: the instances' client states, and for a Streams
    group its own state (``(group)``) and each member's."""
    entry: ShownApp = app_entry or {}
    current: dict[str, str | None] = {i.get("id"): i.get("state") for i in entry.get("instances") or []}
    group = entry.get("group")
    if group:
        current[GROUP_INSTANCE] = group.get("state")
        for m in group.get("members") or []:
            state = MEMBER_RECONCILING if m.get("reconciling") else MEMBER_STABLE
            current[member_instance(str(m.get("member_id")))] = state
    return current
