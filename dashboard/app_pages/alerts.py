"""Alerts (triage): firing alerts, critical first then oldest; each opens its context (the metric
around it, the runbook, links to the affected entities); acknowledge or silence, with who and
until when, persisted in the lake."""

import streamlit as st

from alerting.runbooks import RUNBOOKS, runbook_text
from dashboard import components, frame, literal
from dashboard.services import alerts
from dashboard.services.acks import KINDS, new_ack
from dashboard.services.health import human_age

CONTEXT_BEFORE_SECONDS = 1800
PAGE_FILES = {"overview": "app_pages/overview.py", "brokers": "app_pages/brokers.py", "groups": "app_pages/groups.py",
              "streams": "app_pages/streams.py", "topics": "app_pages/topics.py",
              "share_groups": "app_pages/share_groups.py"}

st.title("Alerts")


@st.fragment(run_every=frame.refresh_seconds())
def firing_list() -> None:
    with frame.shown_errors():
        firing = frame.firing()
        show_silenced = st.toggle("show silenced", key="alerts-show-silenced")
        shown = firing if show_silenced or firing.empty else firing[~firing["silenced"]]
        critical = int((shown["severity"] == "critical").sum()) if len(shown) else 0
        st.markdown(f"**{len(shown)} firing** · {critical} critical · {len(shown) - critical} warning")
        if shown.empty:
            st.success("Nothing firing.")
            return
        table = shown.assign(age=[human_age(s) for s in shown["age_seconds"]])
        st.dataframe(table[["severity", "rule", "entity", "age", "summary", "ack", "ack_by", "ack_until"]],
                     hide_index=True, width="stretch")


firing_list()

with frame.shown_errors():
    firing = frame.firing()
    if not firing.empty:
        keys = [alerts.alert_key(row) for row in firing.to_dict("records")]
        wanted = frame.entity_param("rule")
        first = next((i for i, key in enumerate(keys) if wanted and key.startswith(f"{wanted} · ")), 0)
        chosen = st.selectbox("Open an alert", keys, index=first, key="alerts-chosen", format_func=literal.visible)
        alert = firing.iloc[keys.index(chosen)]
        st.subheader(f"{literal.markdown(alert['rule'])} · {literal.markdown(alert['entity'])}")
        colour = "red" if alert["severity"] == "critical" else "orange"
        st.markdown(f":{colour}[**{literal.markdown(alert['severity'].upper())}**] · firing since "
                    f"{alert['since']:%Y-%m-%d %H:%M:%S} UTC ({human_age(alert['age_seconds'])}) · "
                    f"{literal.markdown(alert['summary'])}")
        if alert["ack"]:
            st.info(f"{alert['ack']}d by {literal.markdown(alert['ack_by'])} until "
                    f"{alert['ack_until']:%Y-%m-%d %H:%M} UTC")

        kind, name = alerts.parse_entity(alert["entity"])
        page, param = alerts.ENTITY_PAGES.get(kind, ("overview", None))
        st.page_link(PAGE_FILES[page], label=f"Open {literal.markdown(alert['entity'])} on the {page} page",
                     icon=":material/arrow_forward:",
                     query_params={param: name} if param else None)

        with frame.shown_errors("context chart"):
            query = alerts.context_query(alert["rule"], alert["entity"])
            if query is not None:
                window = frame.now() - alert["since"].timestamp() + CONTEXT_BEFORE_SECONDS
                rows = frame.read(query.table, window, alerts.lake_columns(query))
                series = alerts.with_snapshot_point(query, alerts.context_series(query, rows), frame.snapshot())
                components.line_chart(series, x="time", y="value", title=f"{query.title} around the alert",
                                      thresholds=[(query.threshold, f"{query.threshold}")] if query.threshold else (),
                                      key="alerts-context")

        st.markdown("#### Runbook")
        if alert["rule"] in RUNBOOKS:
            bootstrap = frame.sources().config.cluster(frame.cluster()).bootstrap_servers.split(",")[0]
            st.code(runbook_text(alert["rule"], bootstrap), language="text")
        else:
            st.markdown(f"No runbook for rule {literal.markdown(alert['rule'])}.")

        with st.form("alerts-ack", clear_on_submit=False):
            st.markdown("#### Acknowledge or silence")
            who = st.text_input("Who", key="alerts-ack-who")
            action = st.radio("Action", KINDS, horizontal=True, key="alerts-ack-kind")
            hours = st.number_input("For how many hours", min_value=0.25, max_value=336.0, value=4.0, step=0.25,
                                    key="alerts-ack-hours")
            note = st.text_input("Note", key="alerts-ack-note")
            submitted = st.form_submit_button("Save")
        if submitted:
            with frame.shown_errors():
                ack = new_ack(cluster=frame.cluster(), rule=alert["rule"], entity=alert["entity"], kind=action,
                              by=who, hours=hours, now=frame.now(), note=note)
                frame.ack_store().add(ack, frame.now())
                st.success(f"{action}d by {literal.markdown(ack.by)} for {hours:g} h")
                st.rerun()
