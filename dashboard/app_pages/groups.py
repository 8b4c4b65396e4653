"""Consumer groups: searchable, paged list (server side) sortable by lag seconds and status;
group detail with per-partition lag and the lag history in offsets and seconds."""

import streamlit as st

from dashboard import actions, components, frame, literal
from dashboard.services import groups
from dashboard.services.paging import DEFAULT_PAGE_SIZE, search_sort_page

WINDOWS = {"15 min": 900, "1 hour": 3600, "6 hours": 21600}

st.title("Consumer groups")
with frame.shown_errors():
    snap = frame.snapshot()
    table = groups.groups_frame(snap)
    search_col, sort_col, order_col = st.columns([3, 2, 1])
    search = search_col.text_input("Search groups", key="groups-search", placeholder="part of a group id")
    sort = sort_col.selectbox("Sort by", list(groups.SORTS), key="groups-sort")
    descending = order_col.toggle("worst first", value=True, key="groups-desc")
    kwargs = dict(search=search, search_column="group_id", sort_by=groups.SORTS[sort],
                  descending=descending and sort != "group id")
    number = components.pager("groups-page", search_sort_page(table, **kwargs).matching)
    page = search_sort_page(table, page=number, **kwargs)
    st.caption(f"{page.matching} of {len(table)} groups match · page {page.number} of {page.pages} · "
               f"{DEFAULT_PAGE_SIZE} per page")
    if partial := int(table["partial"].notna().sum()):
        st.caption(f"⚠ {partial} of {len(table)} groups have partial lag sums (see the partial column): some "
                   "partitions' lag is unknown (log end not read, e.g. a broker down), so their total lag and "
                   "lag seconds are a lower bound.")
    st.dataframe(page.rows.drop(columns=["status_rank"]), hide_index=True, width="stretch",
                 column_config={"max_lag_seconds": st.column_config.NumberColumn("lag seconds", format="%.0f")})

    names = list(page.rows["group_id"])
    wanted = frame.entity_param("group")
    if wanted and wanted not in set(table["group_id"]):
        st.warning(f"Consumer group '{literal.markdown(wanted)}' is not in the latest snapshot (unknown, deleted or "
                   "not monitored).")
    if wanted and wanted not in names and wanted in set(table["group_id"]):
        names.insert(0, wanted)
    if names:
        chosen = st.selectbox("Group detail", names, index=names.index(wanted) if wanted in names else 0,
                              key="groups-chosen", format_func=literal.visible)
        st.subheader(literal.markdown(chosen))
        group = next((g for g in (snap or {}).get("consumer_groups") or [] if g.get("group_id") == chosen), {})
        if note := groups.partial_note(group):
            st.caption(f"Partial: {note}. Each partition's why_null says why its value is unknown.")
        detail = groups.group_partitions(snap, chosen)
        if detail is not None:
            st.dataframe(detail, hide_index=True, width="stretch")
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
                                                 "lag_unknown_partitions", "lag_seconds_unknown_partitions"]),
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
        actions.slot("group", frame.cluster(), chosen)
