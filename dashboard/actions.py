"""The Actions section of the group, Streams app, topic and broker pages (:func:`slot`).

One flow for every operation (:mod:`operations.registry`: those acting on the page's entity, the
person choosing one when there are several, with its form from :mod:`dashboard.action_forms`):
the form -> **Plan** (the service plans;
nothing changes) -> the plan as tables, exportable -> **Execute…** (or **Request approval…** on a
cluster with the two-person rule) opens a confirmation dialog that requires typing the target's
name -> the service executes (authorizes, locks, re-checks, applies, reads back, audits) -> the
result and its verification.
The dialog opens from a ``st.session_state`` flag, so a rerun (or AppTest) reopens it faithfully.

Viewers get no controls; on a read-only cluster the controls are drawn disabled with the reason.
Names (and errors, which quote them) are shown as text (:mod:`dashboard.literal`); the command line
quotes them as shell words.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import streamlit as st

from dashboard import action_forms, auth, components, frame, literal
from dashboard.services import plans
from dashboard.services.sources import one_line
from kpulse.errors import KpulseError
from operations.access import User, allowed
from operations.reassign_plan import ReassignmentPlan
from operations.registry import for_entity, of_entity, of_plan

if TYPE_CHECKING:
    from operations.reassign import ReassignmentStatus
    from operations.service import Operations

CONFIRM_KEY = "kpulse-confirm"
"""Session-state flag: the action key whose confirmation dialog is open."""
POLL_SECONDS = 2.0


def command_line(kind: str, cluster: str, name: str, operation: str | None = None) -> str:
    """The same action (``operation``, default the page's first) from the command line (a dry run
    unless ``--execute``), ``cluster`` and ``name`` quoted as shell words."""
    entry = next((e for e in for_entity(kind) if e.name == operation), of_entity(kind))
    return entry.command_line.format(cluster=literal.shell(cluster), name=literal.shell(name))


def slot(kind: str, cluster: str, name: str, group_type: str | None = None) -> None:
    """The Actions section of an entity page (``kind``: group, streams, topic or broker); a group's
    ``group_type``, when the page knows it, leaves out the operations that do not apply to it."""
    with st.container(border=True, key=f"actions-{kind}"):
        st.markdown("**Actions**")
        chosen = None
        with frame.shown_errors("actions"):
            chosen = _slot(kind, cluster, name, group_type or None)
        st.caption("From the command line (a dry run until --execute):")
        # st.text, not st.code: exactly the characters to paste, and on a fresh page load st.code
        # fetched and compiled Streamlit's 1.5 MB syntax highlighter (0.3-0.7 s on 2 busy cores)
        st.text(command_line(kind, cluster, name, chosen))


def _slot(kind: str, cluster: str, name: str, group_type: str | None) -> str | None:
    """Draws the chosen operation's form and plan; returns its name (None: none offered)."""
    user = auth.user()
    applying = for_entity(kind, group_type)
    if not applying:
        st.caption(f"No operation applies to a {literal.markdown(group_type or '')} group here.")
        return None
    entries = [entry for entry in applying if user is not None and allowed(user, entry.name)]
    if not entries:
        entry = applying[0]
        st.caption(f"{entry.action} needs the {entry.role} role" + (f"; you are a {user.role}" if user else ""))
        return None
    entry = entries[0]
    first = of_entity(kind)
    if len(entries) > 1:
        chosen = st.radio("Operation", [e.name for e in entries], key=f"op-{kind}-{cluster}-{name}-choice",
                          horizontal=True)
        entry = next(e for e in entries if e.name == chosen)
    operations = frame.operations()
    read_only = operations.config.cluster(cluster).read_only
    if read_only:
        st.info(f"Cluster {literal.markdown(cluster)} is read-only (read_only: true in the config): actions are "
                "disabled.",
                icon=":material/lock:")
    key = f"op-{kind}-{cluster}-{name}" + ("" if entry is first else f"-{entry.name}")
    form = action_forms.FORMS[entry.name]
    with st.form(f"{key}-form", border=False):
        values = form.draw(key, name, read_only)
        submitted = st.form_submit_button("Plan (changes nothing)", disabled=read_only, icon=":material/list_alt:")
    if submitted:
        st.session_state.pop(key, None)
        with frame.shown_errors("plan"):
            st.session_state[key] = {"plan": form.plan(operations, cluster, name, values),
                                     "options": form.options(values)}
    state = st.session_state.get(key)
    if state:
        show(key, state, operations, read_only)
    return entry.name


def show(key: str, state: dict, operations, read_only: bool) -> None:
    """A plan, its execute button and dialog, then the result."""
    plan = state["plan"]
    entry = of_plan(plan)
    st.markdown("**Plan** · nothing has changed yet")
    st.caption(entry.summary(plan, literal.markdown))
    for number, (title, table) in enumerate(entry.tables(plan).items()):
        if number == 0 or not table.empty:
            st.markdown(title)
            components.table(table, plans.plan_columns(table), key=f"{key}-plan-{number}")
    for warning in getattr(plan, "warnings", ()):
        st.warning(literal.markdown(warning))
    for note in entry.notes(plan):
        st.info(literal.markdown(note))
    export = st.columns(4)
    export[0].download_button("Plan as JSON", json.dumps(plan.to_dict(), indent=2), file_name=f"{key}-plan.json",
                              mime="application/json", key=f"{key}-json")
    for column, other in zip(export[1:], entry.exports):
        column.download_button(other.label, other.content(plan), file_name=f"{key}-{other.file_suffix}",
                               mime=other.mime, key=f"{key}-{other.key}")
    approval = operations.needs_approval(plan.cluster, entry.action)
    label = "Request approval…" if approval else "Execute…"
    if state.get("done") is None and st.button(label, key=f"{key}-execute", type="primary",
                                               disabled=read_only or not entry.has_changes(plan)):
        st.session_state[CONFIRM_KEY] = key
    if approval:
        st.caption(f"Cluster {literal.markdown(plan.cluster)} requires a second operator's approval: the request "
                   "waits on the Operations page.")
    if st.session_state.get(CONFIRM_KEY) == key:
        confirm(key)
    if state.get("error"):
        st.error(literal.markdown(state["error"]), icon=":material/error:")
    if state.get("done") is not None:
        result(key, state["done"], plan, operations)


def _close() -> None:
    st.session_state.pop(CONFIRM_KEY, None)


@st.dialog("Confirm the change", on_dismiss=_close)
def confirm(key: str) -> None:
    """Type the target's name, then execute ``st.session_state[key]["plan"]`` (or, when the state
    holds a ``request_id``, approve that request and run it). Opened while ``CONFIRM_KEY == key``.
    The name to type is shown exactly, in a code block (a trailing ``#``, spaces, backticks)."""
    state = st.session_state[key]
    plan = state["plan"]
    entry = of_plan(plan)
    expected = entry.confirmation_name(plan)
    request_id = state.get("request_id")
    approval = request_id is None and frame.operations().needs_approval(plan.cluster, entry.action)
    st.markdown(entry.summary(plan, literal.markdown) + f" on cluster **{literal.markdown(plan.cluster)}**.")
    st.markdown("Type this name to confirm:")
    st.code(literal.visible(expected), language=None)
    st.caption(plans.name_note(expected))
    typed = st.text_input("Name of the target", key=f"{key}-typed")
    go, cancel = st.columns(2)
    label = "Approve and run" if request_id else "Request approval" if approval else "Execute"
    if go.button(label, key=f"{key}-confirm", type="primary"):
        if not plans.confirmed(typed, expected):
            st.error(f"'{literal.markdown(typed)}' is not '{literal.markdown(expected)}': nothing executed",
                     icon=":material/error:")
            return
        user = auth.user()
        try:
            if user is None:
                raise KpulseError("nobody is signed in")
            operations = frame.operations()
            state["done"] = (plans.Done(entry.action, operations.approve(user, request_id)) if request_id
                             else plans.execute(operations, user, plan, state.get("options")))
            state["error"] = None
        except KpulseError as error:
            state["error"] = f"{entry.action} not executed: {one_line(error)}"
        except Exception as error:  # noqa: BLE001 - one line, never a traceback
            frame.LOG.exception("operation failed")
            state["error"] = f"{entry.action} failed: {one_line(error)}"
        _close()
        st.rerun()
    if cancel.button("Cancel", key=f"{key}-cancel"):
        _close()
        st.rerun()


def result(key: str, done: plans.Done, plan, operations) -> None:
    text = plans.outcome_text(done, literal.markdown)
    if done.result in ("ok", "requested", "in-progress", "not-started"):
        st.success(text, icon=":material/check_circle:")
    else:
        st.error(text, icon=":material/error:")
    table = plans.outcome_table(done)
    if not table.empty:
        st.markdown("Verification (read back from the cluster)")
        components.table(table, plans.plan_columns(table), key=f"{key}-outcome")
    if getattr(done.outcome, "local_state_note", None):
        st.info(literal.markdown(done.outcome.local_state_note))
    if of_plan(plan).polled and done.outcome is not None and done.result in POLLED_RESULTS:
        if done.result == "ok":  # complete at the read-back (small partitions): nothing to poll
            st.session_state[key].setdefault("finished", done.outcome)
        reassignment_progress(plan, key)
    if st.button("New plan", key=f"{key}-clear"):
        st.session_state.pop(key, None)
        st.rerun()


POLLED_RESULTS = ("not-started", "in-progress", "partial", "ok")
"""Results of a started reassignment shown with its progress bar: not yet seen moving (the
controller has not published it yet), moving, some partitions refused, or complete already."""


def reassignment_progress(plan: ReassignmentPlan, key: str) -> None:
    """A progress bar polling verify every few seconds until the moves complete (verify then
    removes the throttles); a cancel button. The final status is kept in the action's state
    (``st.session_state[key]["finished"]``), so that "New plan" starts polling afresh."""

    @st.fragment(run_every=POLL_SECONDS)
    def poll() -> None:
        with frame.shown_errors("reassignment"):
            state = st.session_state.get(key) or {}
            finished = state.get("finished")
            user = auth.user()
            operations = frame.operations()
            status = finished or _verified(operations, user, plan)
            if status.result in ("ok", "cancelled"):
                state["finished"] = status  # verified once: stop polling the cluster
            total = max(1, len(status.partitions))
            st.progress(status.done / total, text=f"{status.done}/{len(status.partitions)} partition(s) at their "
                                                  f"target · {status.result}"
                                                  + (" · throttles removed" if status.throttles_removed else ""))
            if status.result == "in-progress" and st.button("Cancel the reassignment", key=f"{key}-cancel-moves"):
                if user is None:
                    raise KpulseError("nobody is signed in")
                cancelled = operations.cancel_reassignment(user, plan)
                state["finished"] = cancelled
                st.warning(f"reassignment {cancelled.result}: original replicas kept where moves were pending; "
                           "throttles removed")

    poll()


def _verified(operations: Operations, user: User | None, plan: ReassignmentPlan) -> ReassignmentStatus:
    """The reassignment's status, verified by a signed-in user (which removes the throttles once the
    moves are complete); read only for a visitor, for whom the complete moves' throttles wait."""
    if user is not None:
        return operations.verify_reassignment(user, plan)
    status = operations.reassigner(plan.cluster).status(plan)
    if status.result == "ok":
        raise KpulseError("the moves are complete; nobody is signed in to remove their throttles")
    return status
