"""Streams apps: instances and their state, a timeline of state transitions (REBALANCING in
orange), rebalance count and time spent rebalancing, internal topics."""

import streamlit as st

from dashboard import actions, components, frame, literal
from dashboard.services import streams, topics

WINDOWS = {"15 min": 900, "1 hour": 3600, "6 hours": 21600, "1 day": 86400}

st.title("Streams apps")
with frame.shown_errors():
    snap = frame.snapshot()
    apps = streams.apps_frame(snap)
    st.dataframe(apps, hide_index=True, width="stretch",
                 column_config={"rebalancing_seconds": st.column_config.NumberColumn("rebalancing s", format="%.0f")})
    names = list(apps["application_id"])
    if not names:
        st.info("No Kafka Streams application seen yet (configured apps, or groups with -repartition/-changelog topics).")
    else:
        wanted = frame.entity_param("app")
        chosen = st.selectbox("Application", names, index=names.index(wanted) if wanted in names else 0,
                              key="streams-chosen", format_func=literal.visible)
        entry = streams.app(snap, chosen) or {}
        st.subheader(literal.markdown(chosen))
        st.dataframe(streams.instances_frame(entry), hide_index=True, width="stretch")
        window = WINDOWS[st.segmented_control("Timeline", list(WINDOWS), default="1 hour", key="streams-window")
                         or "1 hour"]
        now = frame.now()
        transitions = frame.read("streams_transition", window)
        current = {i.get("id"): i.get("state") for i in entry.get("instances") or []}
        observed = frame.read("streams_instance", window, ["time", "application_id", "instance"])
        first_seen = observed[observed["application_id"] == chosen].groupby("instance")["time"].min().to_dict()
        periods = streams.timeline(transitions, chosen, now - window, now, current, first_seen)
        rebalances = entry.get("rebalances") or {}
        count, total, window_seconds = st.columns(3)
        count.metric("Rebalances (recent transitions)", rebalances.get("count", "—"))
        total.metric("Time rebalancing (recent)", f"{rebalances.get('total_seconds') or 0:.0f} s")
        window_seconds.metric("REBALANCING in this window", f"{streams.rebalancing_seconds(periods):.0f} s")
        components.timeline_chart(periods, title="State per instance", key="streams-timeline")
        with frame.shown_errors("internal topics"):
            internal = topics.internal_topics({p["topic"] for p in frame.topic_partitions()}, chosen)
            st.markdown("**Internal topics** (repartition and changelog: deleted by a reset)")
            st.markdown(", ".join(literal.markdown(topic) for topic in internal) if internal else "none found")
        actions.slot("streams", frame.cluster(), chosen)
