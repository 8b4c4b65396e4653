"""Overview: the chosen cluster's health at a glance, tiles coloured by DOMAIN.md's thresholds (an
empty one says why), what kpulse's principal may not see on this cluster, and one line per firing
alert group ("warning: ConsumerGroupStatus, 2,000 groups"), however many entities."""

import pandas as pd
import streamlit as st

from dashboard import components, frame, literal
from dashboard.services.groups import partial_groups
from dashboard.services.health import CLUSTER_NOT_READABLE, alert_lines, overview_tiles
from dashboard.services.sources import DashboardError

TILES_PER_ROW = 6
st.title("Overview")


@st.fragment(run_every=frame.refresh_seconds())
def live_tiles() -> None:
    with frame.shown_errors():
        snap = frame.snapshot()
        if snap is None:
            st.warning(f"No snapshot of cluster {literal.markdown(frame.cluster())} yet: start the collectors "
                       "(`kpulse collect`).")
        try:
            slo = frame.slo_latest()
        except DashboardError:
            slo = pd.DataFrame()
        acks = frame.alert_acks()
        alerts = frame.firing(acks)
        components.tiles(overview_tiles(snap, alerts, slo), per_row=TILES_PER_ROW)
        for limit in frame.connection_limits():
            st.warning(literal.markdown(f"kpulse's view of cluster {frame.cluster()} is limited: {limit}"),
                       icon=":material/lock:")
        groups, _ = frame.firing_groups(alerts, acks)
        for severity, line in alert_lines(groups):
            colour = "red" if severity == "critical" else "orange"
            st.markdown(f":{colour}[**{severity}**]: {literal.markdown(line)}")
        if groups:
            st.page_link("app_pages/alerts.py", label="Open the alerts", icon=":material/arrow_forward:")
        if snap is not None:
            refused = frame.cannot_read(snap) is not None
            cluster = snap.get("cluster") or {}
            partial = partial_groups(snap)
            topics, partitions = (("—" if cluster.get(key) is None else cluster[key])
                                  for key in ("topic_count", "partition_count"))
            st.caption(f"{topics} topics · {partitions} partitions · "
                       f"{len(snap.get('consumer_groups') or [])} consumer groups"
                       + (f" ({partial} with partial lag sums: some partitions' lag unknown)" if partial else "")
                       + f" · {len(snap.get('streams_apps') or [])} Streams apps")
            down = [c for c in snap.get("collectors") or [] if not c.get("up")
                    and not (refused and str(c.get("error")).startswith(CLUSTER_NOT_READABLE))]  # the frame said it
            for collector in down:
                st.warning(f"collector {literal.markdown(collector['name'])} is down: "
                           f"{literal.markdown(collector.get('error'))}")


live_tiles()
with frame.shown_errors("cluster history"):
    health = frame.read("cluster_health", 3600, ["time", "under_replicated_partitions", "offline_partitions",
                                                   "under_min_isr_partitions"])
    long = health.melt(id_vars=["time"], var_name="count", value_name="partitions")
    components.line_chart(long, x="time", y="partitions", color="count", title="Problem partitions, last hour",
                          key="overview-health")
