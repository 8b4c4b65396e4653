"""Share groups (KIP-932, queues for Kafka): searchable, paged list (server side) sortable by status
and lag; group detail with members and their assignments, start offset and lag per partition as the
broker reports them, and the lag history."""

import streamlit as st

from dashboard import actions, components, frame, literal
from dashboard.services import share_groups
from dashboard.services.unread import group_problem, listing_limit, unread_caption

WINDOWS = {"15 min": 900, "1 hour": 3600, "6 hours": 21600}

st.title("Share groups")
with frame.shown_errors():
    snap = frame.snapshot()
    if why := share_groups.unsupported(snap):
        st.info(f"No share groups on this cluster: {literal.markdown(why)}")
    elif snap is not None and not share_groups.collected(snap):
        st.warning("Share groups were not collected in the latest cycle (see the share_groups collector's status "
                   "on the Overview page).")
    if note := share_groups.reading_note(snap):
        st.caption(note)
    if limit := listing_limit(frame.connection_limits()):
        st.warning(literal.markdown(limit), icon=":material/lock:")
    table = share_groups.groups_frame(snap)
    page = components.searched_list("share", table, sorts=share_groups.SORTS, search_column="group_id",
                                    noun="share groups", placeholder="part of a share group id")
    st.caption("Lag: records not yet acknowledged, as the broker counts them (kafka-share-groups --describe). "
               "Status over the last readings: STALLED = members but nothing acknowledged, NOT_CONSUMING = no "
               "members while records wait (docs/monitoring.md).")
    if partial := int(table["partial"].notna().sum()):
        st.caption(f"⚠ {partial} of {len(table)} share groups have partial lag sums (see the partial column).")
    if note := unread_caption(int(table["problem"].notna().sum()), len(table), "share groups"):
        st.caption(note)
    components.table(page.rows, share_groups.LIST_TABLE, key="share-list")

    names = list(page.rows["group_id"])
    wanted = frame.entity_param("sharegroup")
    known = set(table["group_id"])
    if wanted and wanted not in known:
        st.warning(f"Share group '{literal.markdown(wanted)}' is not in the latest snapshot (unknown or deleted).")
    if wanted and wanted not in names and wanted in known:
        names.insert(0, wanted)
    if names:
        chosen = st.selectbox("Share group detail", names, index=names.index(wanted) if wanted in names else 0,
                              key="share-chosen", format_func=literal.visible)
        st.subheader(literal.markdown(chosen))
        group: share_groups.ShownGroup = share_groups.group(snap, chosen) or {}
        facts = st.columns(4)
        facts[0].metric("State", group.get("state") or "unknown")
        facts[1].metric("Members", "unknown" if group.get("members") is None else str(group["members"]))
        facts[2].metric("Lag (records)", "unknown" if group.get("total_lag") is None else f"{group['total_lag']:,}")
        facts[3].metric("Status", group.get("status") or "not yet")
        if problem := group_problem(chosen, group.get("error")):
            st.warning(f"kpulse may not read this group: {literal.markdown(problem)}", icon=":material/warning:")
        if note := share_groups.partial_note(group):
            st.caption(f"Partial: {note}. Each partition's Why empty column says why its value is unknown.")
        st.markdown("**Members and assignments**")
        components.table(share_groups.members_frame(group), share_groups.MEMBER_TABLE, key="share-members")
        st.markdown("**Partitions: start offset and lag**")
        components.table(share_groups.partitions_frame(group), share_groups.PARTITION_TABLE, key="share-partitions")
        window = WINDOWS[st.segmented_control("History", list(WINDOWS), default="1 hour", key="share-window")
                         or "1 hour"]
        history = share_groups.lag_history(frame.read("share_group", window,
                                                      ["time", "group_id", "total_lag", "lag_unknown_partitions"]),
                                           chosen)
        if partial_points := share_groups.partial_points(history):
            st.caption(f"{partial_points} of the {len(history)} points below are partial (some partitions' lag "
                       "unknown): lower bounds, not dips.")
        components.line_chart(history, x="time", y="total_lag", title="Lag (records not acknowledged)",
                              key="share-lag")
        actions.slot("group", frame.cluster(), chosen, "share")
