"""kpulse dashboard entry: `kpulse dashboard` runs `streamlit run` on this file.

Routes with ``st.navigation`` over the file-based pages in ``app_pages/`` (not ``pages/``: that name switches Streamlit to its legacy multipage mode) and draws the shared frame:
the sign-in gate (:mod:`dashboard.auth`), the cluster picker (first set from ``?cluster=``, as the
links in the alerts sent to Alertmanager carry it), who is signed in, and the freshness of the data
(stale = older than two collection intervals), or the one red line of a cluster that refuses kpulse."""

from __future__ import annotations

import time

import streamlit as st

from dashboard import auth, components, frame
from dashboard.services.health import freshness

started = time.perf_counter()
st.set_page_config(page_title="kpulse", page_icon="📈", layout="wide")  # a :material/ icon loads from Google

PAGES = [
    st.Page("app_pages/overview.py", title="Overview", icon=":material/monitor_heart:", default=True),  # at /
    st.Page("app_pages/brokers.py", title="Brokers", icon=":material/dns:", url_path="brokers"),
    st.Page("app_pages/topics.py", title="Topics", icon=":material/topic:", url_path="topics"),
    st.Page("app_pages/groups.py", title="Consumer groups", icon=":material/groups:", url_path="groups"),
    st.Page("app_pages/streams.py", title="Streams apps", icon=":material/waves:", url_path="streams"),
    st.Page("app_pages/share_groups.py", title="Share groups", icon=":material/queue:", url_path="share-groups"),
    st.Page("app_pages/slos.py", title="SLOs", icon=":material/target:", url_path="slos"),
    st.Page("app_pages/alerts.py", title="Alerts", icon=":material/notifications_active:", url_path="alerts"),
    st.Page("app_pages/operations.py", title="Operations", icon=":material/build:", url_path="operations"),
    # opened from a group's partition or an alert (?group=, ?sharegroup=), not listed in the sidebar
    st.Page("app_pages/records.py", title="Records", icon=":material/data_object:", url_path="records",
            visibility="hidden"),
]
who = auth.gate()  # draws the sign-in form when nobody is signed in
navigation = st.navigation(PAGES, position="sidebar" if who else "hidden")

if not who:
    st.stop()
with st.sidebar:
    st.markdown("### kpulse")
    with frame.shown_errors():
        names = frame.sources().config.cluster_names
        if frame.CLUSTER_KEY not in st.session_state and st.query_params.get("cluster") in names:
            st.session_state[frame.CLUSTER_KEY] = st.query_params["cluster"]  # a link from an alert
        st.selectbox("Cluster", names, key=frame.CLUSTER_KEY)
    auth.sidebar(who)


@st.fragment(run_every=frame.refresh_seconds())
def _freshness() -> None:
    with frame.shown_errors("freshness"):
        snap = frame.snapshot()
        components.freshness_banner(freshness(frame.newest_sample_time(snap), frame.now(),
                                              frame.sources().collect_seconds), frame.cannot_read(snap))


_freshness()
with frame.shown_errors("prewarming the snapshot"):
    frame.prewarm()
navigation.run()
frame.record_run_time(navigation.url_path, started)
