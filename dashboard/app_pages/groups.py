"""Consumer groups: searchable, paged list (server side) sortable by lag seconds and status;
group detail with per-partition lag and the lag history in offsets and seconds; a group marked (or
unmarked) expected-idle: shown, labelled, but firing no group alert (``kpulse/expected_idle.py``).
The label is the snapshot's; a mark made here shows at once, until the next snapshot carries it."""

import time

import streamlit as st

from dashboard import actions, auth, components, frame, literal
from dashboard.services import groups
from dashboard.services.unread import group_problem, listing_limit, unread_caption
from kpulse.config.model import ConsumerGroupsConfig
from kpulse.expected_idle import CONFIG, Mark, reason
from operations.access import MARK_EXPECTED_IDLE, allowed

WINDOWS = {"15 min": 900, "1 hour": 3600, "6 hours": 21600}


def expected_idle_slot(cluster: str, group_id: str, why: str | None) -> None:
    """Mark or unmark ``group_id`` expected-idle (operators and admins; audited, no typed confirmation:
    it changes who is paged, not the cluster)."""
    user = auth.user()
    if why == CONFIG:
        st.caption("Named by the config (consumer_groups.expected_idle): change the config to unmark it.")
        return
    if user is None or not allowed(user, MARK_EXPECTED_IDLE):
        return
    with st.form("groups-idle", border=False):
        note = "" if why else st.text_input("Why it is expected idle (optional)", key="groups-idle-note",
                                            placeholder="e.g. retired with orders-v1")
        marked = why is not None
        submitted = st.form_submit_button("Unmark expected idle" if marked else "Mark expected idle",
                                          icon=":material/notifications_off:" if not marked else None)
    if submitted:
        with frame.shown_errors("expected idle"):
            frame.operations().set_expected_idle(user, cluster, group_id, not marked, note)
            made = st.session_state.setdefault(MARKS_MADE_KEY, {}).setdefault(cluster, {})
            made[group_id] = (not marked, time.time())
            st.success("unmarked: its alerts fire again" if marked else
                       "marked expected idle: it fires no group alert from the next collection cycle")
            st.rerun()


# (comments, not attribute docstrings: Streamlit's magic would write a bare string to the page)
# The list's widgets: when one changes in a fragment rerun, the detail below must follow (full rerun).
LIST_KEYS = ("groups-search", "groups-sort", "groups-desc", "groups-page")
FULL_RUN_KEY = "groups-full-run"
# Session state: the list's widget values and the group ids of its page, as the last full run drew them.
SHOWN_KEY = "groups-shown"
# Session state: cluster -> group id -> (marked expected idle, when), the marks made in this session.
MARKS_MADE_KEY = "groups-idle-made"


def idle_settings() -> tuple[ConsumerGroupsConfig, dict[str, Mark]]:
    """The cluster's ``consumer_groups`` config and its expected-idle marks as they are now: who marked
    a group and why, and whether the page can unmark it."""
    return (frame.sources().config.cluster(frame.cluster()).consumer_groups,
            frame.operations().expected_idle_marks(frame.cluster()))


def unapplied_marks() -> dict[str, bool]:
    """Group id -> expected idle, for the marks made in this session that the snapshot does not carry
    yet (``services.groups.unapplied_marks``); the others are forgotten."""
    made = st.session_state.get(MARKS_MADE_KEY, {})
    cluster = frame.cluster()
    if cluster not in made:
        return {}
    unapplied = groups.unapplied_marks(made[cluster], frame.snapshot())
    made[cluster] = {group_id: made[cluster][group_id] for group_id in unapplied}
    return unapplied


def idle_notice(why: str | None, mark: Mark | None) -> str:
    """What the detail says of a group shown expected idle: why (:func:`kpulse.expected_idle.reason`)
    and the mark's note, when the config and the marks still say so."""
    if why is None:
        return "expected idle: shown, but it fires no group alert"
    note = f": {literal.markdown(mark.note)}" if mark and mark.note and why != CONFIG else ""
    return f"expected idle ({literal.markdown(why)}{note}): shown, but it fires no group alert"


st.title("Consumer groups")


@st.fragment(run_every=frame.refresh_seconds())
def group_list() -> None:
    """The searched, sorted, paged list: redrawn from each new snapshot every collection interval
    without rerunning the page (as the Overview's tiles); a change of search, sort or page reruns
    the page so the group detail below follows it."""
    full_run = st.session_state.pop(FULL_RUN_KEY, False)
    with frame.shown_errors():
        if limit := listing_limit(frame.connection_limits()):
            st.warning(literal.markdown(limit), icon=":material/lock:")
        table = groups.with_unapplied_marks(frame.groups_table(), unapplied_marks())
        page = components.searched_list("groups", table, sorts=groups.SORTS, search_column="group_id",
                                        noun="groups", placeholder="part of a group id")
        options = tuple(st.session_state.get(key) for key in LIST_KEYS)
        if full_run:
            st.session_state[SHOWN_KEY] = (options, list(page.rows["group_id"]))
        elif options != st.session_state.get(SHOWN_KEY, (None, []))[0]:
            st.rerun(scope="app")
        if note := groups.partial_caption(table):
            st.caption(note)
        if note := unread_caption(int(table["problem"].notna().sum()), len(table), "groups"):
            st.caption(note)
        components.table(page.rows, groups.LIST_COLUMNS, key="groups-list")


st.session_state[FULL_RUN_KEY] = True
group_list()
with frame.shown_errors():
    names = list(st.session_state.get(SHOWN_KEY, (None, []))[1])
    wanted = frame.entity_param("group")
    known = bool(wanted and frame.consumer_group(wanted))
    if wanted and not known:
        st.warning(f"Consumer group '{literal.markdown(wanted)}' is not in the latest snapshot (unknown, deleted or "
                   "not monitored).")
    if wanted and known and wanted not in names:
        names.insert(0, wanted)
    if names:
        chosen = st.selectbox("Group detail", names, index=names.index(wanted) if wanted in names else 0,
                              key="groups-chosen", format_func=literal.visible)
        st.subheader(literal.markdown(chosen))
        group = frame.consumer_group(chosen)
        if problem := group_problem(chosen, group.get("error")):
            st.warning(f"kpulse may not read this group: {literal.markdown(problem)}", icon=":material/warning:")
        consumer_groups, marks = idle_settings()
        why = reason(chosen, consumer_groups, marks)
        if groups.expected_idle(group, unapplied_marks()):
            st.info(idle_notice(why, marks.get(chosen)), icon=":material/notifications_off:")
        expected_idle_slot(frame.cluster(), chosen, why)
        if note := groups.partial_note(group):
            st.caption(f"Partial: {note}. Each partition's Why empty column says why its value is unknown.")
        if group.get("partitions") or (group and not problem):
            components.table(groups.partitions_of(group), groups.PARTITION_TABLE, key="groups-partitions")
        if caption := groups.membership_caption(group):
            st.caption(caption)
        members = groups.members_frame(group)
        if members is not None:
            components.table(members, groups.MEMBER_TABLE, key="groups-members")
        window = WINDOWS[st.segmented_control("History", list(WINDOWS), default="1 hour", key="groups-window")
                         or "1 hour"]
        history = groups.lag_history(frame.read("consumer_group", window,
                                                ["time", "group_id", "total_lag", "max_lag_seconds",
                                                 "lag_unknown_partitions", "lag_seconds_unknown_partitions"],
                                                where={"group_id": chosen}),
                                     chosen)
        if partial_points := groups.partial_points(history):
            st.caption(f"{partial_points} of the {len(history)} points below are partial (some partitions' lag "
                       "unknown): lower bounds, not dips.")
        left, right = st.columns(2)
        with left:
            components.line_chart(history, x="time", y="total_lag", title="Lag (offsets)", key="groups-lag")
        with right:
            components.line_chart(history, x="time", y="max_lag_seconds", title="Lag (seconds, worst partition)",
                                  key="groups-lag-seconds")
        actions.slot("group", frame.cluster(), chosen, group.get("type"))
