"""Consumer groups: searchable, paged list (server side) sortable by lag seconds and status;
group detail with per-partition lag and the lag history in offsets and seconds."""

import streamlit as st

from dashboard import actions, components, frame, literal
from dashboard.services import groups

WINDOWS = {"15 min": 900, "1 hour": 3600, "6 hours": 21600}

LIST_KEYS = ("groups-search", "groups-sort", "groups-desc", "groups-page")
"""The list's widgets: when one changes in a fragment rerun, the detail below must follow (full rerun)."""
FULL_RUN_KEY = "groups-full-run"
SHOWN_KEY = "groups-shown"
"""Session state: the list's widget values and the group ids of its page, as the last full run drew them."""

st.title("Consumer groups")


@st.fragment(run_every=frame.refresh_seconds())
def group_list() -> None:
    """The searched, sorted, paged list: redrawn from each new snapshot every collection interval
    without rerunning the page (as the Overview's tiles); a change of search, sort or page reruns
    the page so the group detail below follows it."""
    full_run = st.session_state.pop(FULL_RUN_KEY, False)
    with frame.shown_errors():
        table = frame.groups_table()
        page = components.searched_list("groups", table, sorts=groups.SORTS, search_column="group_id",
                                        noun="groups", placeholder="part of a group id")
        options = tuple(st.session_state.get(key) for key in LIST_KEYS)
        if full_run:
            st.session_state[SHOWN_KEY] = (options, list(page.rows["group_id"]))
        elif options != st.session_state.get(SHOWN_KEY, (None, []))[0]:
            st.rerun(scope="app")
        if partial := int(table["partial"].notna().sum()):
            st.caption(f"⚠ {partial} of {len(table)} groups have partial lag sums (see the partial column): some "
                       "partitions' lag is unknown (log end not read, e.g. a broker down), so their total lag and "
                       "lag seconds are a lower bound.")
        st.dataframe(page.rows.drop(columns=["status_rank"]), hide_index=True, width="stretch",
                     column_config={"max_lag_seconds": st.column_config.NumberColumn("lag seconds", format="%.0f")})


st.session_state[FULL_RUN_KEY] = True
group_list()
with frame.shown_errors():
    names = list(st.session_state.get(SHOWN_KEY, (None, []))[1])
    wanted = frame.entity_param("group")
    known = bool(wanted) and bool(frame.consumer_group(wanted))
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
        if note := groups.partial_note(group):
            st.caption(f"Partial: {note}. Each partition's why_null says why its value is unknown.")
        if group:
            st.dataframe(groups.partitions_of(group), hide_index=True, width="stretch")
        if caption := groups.membership_caption(group):
            st.caption(caption)
        members = groups.members_frame(group)
        if members is not None:
            st.dataframe(members, hide_index=True, width="stretch",
                         column_config={"reconciling": st.column_config.CheckboxColumn("reconciling")})
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
