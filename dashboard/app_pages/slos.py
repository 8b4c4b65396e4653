"""SLOs: every SLO and entity with SLI, objective, budget remaining (and in minutes: "431 of 432
bad minutes left"), coverage, burn rates and alert state (from the SLO job's ``slo_status``), and
the error-budget burn-down of one of them."""

import streamlit as st

from dashboard import components, frame
from dashboard.services import slos

WINDOWS = {"1 hour": 3600, "6 hours": 21600, "1 day": 86400}

st.title("SLOs")
with frame.shown_errors():
    latest = frame.slo_latest()
    if latest.empty:
        st.info("No SLO evaluations in the last 15 minutes: is the SLO job running?")
    else:
        paging, ticket = int((latest["alert"] == "page").sum()), int((latest["alert"] == "ticket").sum())
        a, b, c = st.columns(3)
        a.metric("SLOs evaluated", len(latest))
        b.metric("Paging", paging)
        c.metric("Ticket", ticket)
        page = components.searched_list("slos", frame.slo_table(), sorts=slos.SORTS, search_column="name",
                                        noun="SLOs", placeholder="part of an SLO or entity name")
        components.table(page.rows, slos.STATUS_TABLE, key="slos-list")
        labels = list(page.rows["name"])
    if not latest.empty and labels:
        chosen = st.selectbox("Burn-down", labels, key="slos-chosen")
        row = page.rows.iloc[labels.index(chosen)]
        window = WINDOWS[st.segmented_control("Window", list(WINDOWS), default="1 hour", key="slos-window")
                         or "1 hour"]
        st.caption(f"{chosen}: {slos.budget_caption(row)}")
        history = frame.read("slo_status", window, slos.BURN_DOWN_COLUMNS,
                             where={"slo": row["slo"], "entity": row["entity"]})
        components.burn_down_chart(slos.burn_down(history, row["slo"], row["entity"]),
                                   title=f"Error budget remaining: {chosen}", key="slos-burn-down")
