"""Brokers: table, idle ratios with the 0.2 and 0.1 lines, bytes in/out, URP, and balance; the KRaft
quorum (leader, epoch, voters' lag and last caught-up age) with the controller's figures, and the
problem partitions with their eligible leader replicas. A figure or metric left empty says why (the
snapshot's reasons), and so does a quorum kpulse's principal may not read."""

import streamlit as st

from dashboard import actions, components, frame, literal
from dashboard.services import brokers
from dashboard.services.health import IDLE_CRITICAL_BELOW, IDLE_WARNING_BELOW
from dashboard.services.unread import quorum_limit

WINDOWS = {"15 min": 900, "1 hour": 3600, "6 hours": 21600}

st.title("Brokers")
window = WINDOWS[st.segmented_control("Window", list(WINDOWS), default="1 hour", key="brokers-window") or "1 hour"]

with frame.shown_errors():
    snap = frame.snapshot()
    metrics = frame.read("broker_metrics", window)
    table = brokers.broker_table(snap, metrics)
    components.table(table, brokers.BROKER_TABLE_COLUMNS, key="brokers-table")
    for line in brokers.metric_reasons(snap):
        st.caption(literal.markdown(line))
    skew = brokers.balance(table)
    left, right = st.columns(2)
    left.metric("Partition skew (busiest vs mean)", "—" if skew["partitions"] is None else f"{skew['partitions']:.0%}")
    right.metric("Leader skew (busiest vs mean)", "—" if skew["leaders"] is None else f"{skew['leaders']:.0%}")
    components.bar_chart(brokers.balance_frame(table), x="broker", y="count", color="kind",
                         title="Partitions and leaders per broker", key="brokers-balance")
    components.line_chart(brokers.series(metrics, "request_handler_idle_ratio"), x="time", y="value", color="broker",
                          title="Request handler idle ratio", y_title="idle",
                          thresholds=[(IDLE_WARNING_BELOW, "0.2 warning"), (IDLE_CRITICAL_BELOW, "0.1 critical")],
                          key="brokers-idle")
    left, right = st.columns(2)
    with left:
        components.line_chart(brokers.series(metrics, "bytes_in_per_sec"), x="time", y="value", color="broker",
                              title="Bytes in per second", key="brokers-in", y_unit="B/s")
    with right:
        components.line_chart(brokers.series(metrics, "bytes_out_per_sec"), x="time", y="value", color="broker",
                              title="Bytes out per second", key="brokers-out", y_unit="B/s")
    components.line_chart(brokers.series(metrics, "under_replicated_partitions"), x="time", y="value", color="broker",
                          title="Under-replicated partitions led by each broker", key="brokers-urp")
    st.subheader("KRaft quorum")
    if limit := quorum_limit(frame.connection_limits()):
        st.warning(literal.markdown(limit), icon=":material/lock:")
    figures = brokers.controller_figures(snap)
    for column, (label, figure) in zip(st.columns(6), (
            ("Quorum leader", figures["leader"]), ("Leader epoch", figures["epoch"]),
            ("High watermark", figures["high_watermark"]), ("Fenced brokers", figures["fenced_brokers"]),
            ("Active brokers", figures["active_brokers"]), ("Metadata errors", figures["metadata_errors"]))):
        column.metric(label, "—" if figure is None else f"{figure:,}")
    for line in brokers.figure_reasons(figures):
        st.caption(literal.markdown(line))
    quorum = brokers.quorum_table(snap)
    if len(quorum):
        components.table(quorum, brokers.QUORUM_TABLE, key="brokers-quorum")
        components.bar_chart(quorum.assign(node=quorum["node"].map(lambda n: f"node {n}")), x="node", y="lag",
                             color="role", title="Metadata log lag behind the quorum leader (records)",
                             key="brokers-quorum-lag")
    st.subheader("Problem partitions")
    problems = brokers.problem_partition_table(snap)
    if why_elr := figures["reasons"].get("elr"):
        st.caption(literal.markdown(f"ELR not read: {why_elr}"))
    if len(problems):
        st.caption("ELR: replicas out of the ISR that can still be elected leader without losing committed data; "
                   "LastKnownElr: the candidates of an unclean recovery once a partition is offline "
                   "(kafka-topics --describe prints both). The first 200, by topic and partition.")
        components.table(problems, brokers.PROBLEM_TABLE, key="brokers-problems")
    else:
        st.caption("No offline, under-min-ISR or under-replicated partition in the latest collection.")
    if len(table):
        ids = [str(b) for b in table["broker"]]
        wanted = frame.entity_param("broker")
        chosen = st.selectbox("Broker", ids, index=ids.index(wanted) if wanted in ids else 0, key="brokers-chosen")
        actions.slot("broker", frame.cluster(), chosen)
