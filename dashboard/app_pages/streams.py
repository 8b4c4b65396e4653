"""Streams apps: classic-protocol applications and Streams groups (KIP-1071) side by side, with the
protocol named; per application its instances and their state, for a Streams group its state,
epochs, subtopologies, members with their tasks (those still reconciling highlighted) and input
lag per partition; a timeline of state transitions (REBALANCING, Assigning and Reconciling in
orange), rebalance count and time spent rebalancing, internal topics."""

from collections.abc import Mapping

import streamlit as st

from dashboard import actions, components, frame, literal
from dashboard.services import streams, topics
from dashboard.services.unread import group_problem, listing_limit, unread_caption
from kpulse.snapshot import Rebalances, StreamsGroupDetail

WINDOWS = {"15 min": 900, "1 hour": 3600, "6 hours": 21600, "1 day": 86400}


def streams_group(application_id: str, group: StreamsGroupDetail) -> None:
    """The Streams group of an application on the streams protocol."""
    state, epochs, topology, members, lag = st.columns(5)
    state.metric("Group state", group.get("state") or "—")
    epochs.metric("Group / target assignment epoch", f"{group.get('group_epoch')} / {group.get('assignment_epoch')}")
    topology.metric("Topology epoch", "—" if group.get("topology_epoch") is None else group["topology_epoch"])
    members_frame = streams.members_frame(group)
    reconciling = int(members_frame["reconciling"].fillna(False).astype(bool).sum())
    members.metric("Members (reconciling)", f"{len(members_frame)} ({reconciling})")
    lag.metric("Input lag", "—" if group.get("total_lag") is None else f"{group['total_lag']:,}")
    if missing := group.get("missing_topics"):
        st.warning("NotReady: the cluster lacks " + ", ".join(literal.markdown(t) for t in missing))
    if lag_error := group_problem(application_id, group.get("lag_error")):
        st.error("Input lag not read: " + literal.markdown(lag_error))
    st.markdown("**Members** (tasks as subtopology:[partitions]; still reconciling first, highlighted)")
    components.table(members_frame, streams.MEMBER_TABLE, key="streams-members", row_style=streams.reconciling_style)
    st.markdown("**Subtopologies**")
    components.table(streams.subtopologies_frame(group), streams.SUBTOPOLOGY_TABLE, key="streams-subtopologies")
    scope = ("partitions of the members' active tasks, as kafka-streams-groups --describe --offsets"
             if group.get("input_scope") == "assigned" else
             "no members: partitions with a committed offset on the source topics, as "
             "kafka-streams-groups --reset-offsets --to-current --all-input-topics")
    st.markdown(f"**Input lag per partition** ({literal.markdown(scope)})")
    components.table(streams.input_lag_frame(group), streams.INPUT_LAG_TABLE, key="streams-input-lag")


st.title("Streams apps")
with frame.shown_errors():
    snap = frame.snapshot()
    if limit := listing_limit(frame.connection_limits()):
        st.warning(literal.markdown(limit), icon=":material/lock:")
    apps = streams.apps_frame(snap)
    if note := unread_caption(int(apps["problem"].notna().sum()), len(apps), "Streams applications"):
        st.caption(note)
    components.table(apps, streams.APP_TABLE, key="streams-apps")
    names = list(apps["application_id"])
    if not names:
        st.info("No Kafka Streams application seen yet (configured apps, Streams groups, or groups with "
                "-repartition/-changelog topics).")
    else:
        wanted = frame.entity_param("app")
        chosen = st.selectbox("Application", names, index=names.index(wanted) if wanted in names else 0,
                              key="streams-chosen", format_func=literal.visible)
        entry: streams.ShownApp = streams.app(snap, chosen) or {}
        st.subheader(literal.markdown(chosen))
        st.caption(f"protocol {literal.markdown(entry.get('protocol') or '—')}")
        if problem := group_problem(chosen, entry.get("group_error")):
            st.warning(f"kpulse may not read this application's group: {literal.markdown(problem)}",
                       icon=":material/warning:")
        if group := entry.get("group"):
            streams_group(chosen, group)
        if entry.get("instances") or entry.get("protocol") != "streams":
            st.markdown("**Instances** (from their metrics endpoints)")
            components.table(streams.instances_frame(entry), streams.INSTANCE_TABLE, key="streams-instances")
        window = WINDOWS[st.segmented_control("Timeline", list(WINDOWS), default="1 hour", key="streams-window")
                         or "1 hour"]
        now = frame.now()
        transitions = frame.read("streams_transition", window)
        current = streams.current_states(entry)
        observed = frame.read("streams_instance", window, ["time", "application_id", "instance"])
        first_seen = observed[observed["application_id"] == chosen].groupby("instance")["time"].min().to_dict()
        periods = streams.timeline(transitions, chosen, now - window, now, current, first_seen)
        rebalances: Rebalances | Mapping[str, None] = entry.get("rebalances") or {}
        count, total, window_seconds = st.columns(3)
        count.metric("Rebalances (recent transitions)", rebalances.get("count", "—"))
        total.metric("Time rebalancing (recent)", f"{rebalances.get('total_seconds') or 0:.0f} s")
        window_seconds.metric("REBALANCING in this window", f"{streams.rebalancing_seconds(periods):.0f} s")
        components.timeline_chart(periods, title="State per instance", key="streams-timeline")
        with st.expander("Recent transitions"):
            components.table(streams.transitions_frame(entry), streams.TRANSITION_TABLE, key="streams-transitions")
        with frame.shown_errors("internal topics"):
            internal = topics.internal_topics(set(frame.topic_names()), chosen)
            st.markdown("**Internal topics** (repartition and changelog: deleted by a reset)")
            st.markdown(", ".join(literal.markdown(topic) for topic in internal) if internal else "none found")
        actions.slot("streams", frame.cluster(), chosen, entry.get("protocol"))
