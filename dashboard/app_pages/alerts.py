"""Alerts (triage): firing alerts grouped by rule, as Alertmanager groups them (one row for
"ConsumerGroupStatus, 2,000 groups"), critical first then oldest; a group opens its entities
(searched and paged on the server), an entity its context (the metric around it, the runbook, links
to its page); acknowledge or silence a whole group or one entity, with who and until when,
persisted in the lake (and as an Alertmanager silence when Alertmanager is configured), or end one
early. ``?rule=`` opens a group, ``&entity=`` one of its entities. With Alertmanager configured, a
line under the title says how the delivery of alerts to it goes."""

import pandas as pd
import streamlit as st

from alerting.grouping import counts
from alerting.runbooks import RUNBOOKS, runbook_text
from dashboard import components, frame, literal
from dashboard.services import alerts, records
from dashboard.services.acks import EVERY_ENTITY, KINDS, effective, end_acks, new_ack, save_ack
from dashboard.services.delivery import delivery_lines
from dashboard.services.health import human_age

CONTEXT_BEFORE_SECONDS = 1800
PAGE_FILES = {"overview": "app_pages/overview.py", "brokers": "app_pages/brokers.py", "groups": "app_pages/groups.py",
              "streams": "app_pages/streams.py", "topics": "app_pages/topics.py",
              "share_groups": "app_pages/share_groups.py"}
ENTITY_SORTS = {"age": "age_seconds", "severity": "severity_rank", "entity": "entity"}
# Session-state key of a line about Alertmanager to show after the rerun that follows a save or an end.
ALERTMANAGER_MESSAGE_KEY = "alerts-alertmanager-message"

st.title("Alerts")
if message := st.session_state.pop(ALERTMANAGER_MESSAGE_KEY, None):
    st.warning(literal.markdown(message), icon=":material/warning:")


def shown_alerts() -> tuple[dict, pd.DataFrame]:
    """(active acknowledgements, the firing rows shown: silenced ones only with the toggle on)."""
    acks = frame.alert_acks()
    firing = frame.firing(acks)
    if st.session_state.get("alerts-show-silenced") or firing.empty:
        return acks, firing
    return acks, firing[~firing["silenced"]].reset_index(drop=True)


@st.fragment(run_every=frame.refresh_seconds())
def firing_list() -> None:
    with frame.shown_errors("alert delivery"):
        for healthy, line in delivery_lines(frame.snapshot(), frame.now()):
            if healthy:
                st.caption(literal.markdown(line))
            else:
                st.warning(literal.markdown(line), icon=":material/notifications_off:")
    with frame.shown_errors():
        st.toggle("show silenced", key="alerts-show-silenced")
        acks, shown = shown_alerts()
        groups, table = frame.firing_groups(shown, acks)
        total = counts(groups)
        st.markdown(f"**{len(groups)} firing** · {total.critical} critical · {total.warning} warning · "
                    f"{total.entities:,} {'entity' if total.entities == 1 else 'entities'} affected")
        if not groups:
            st.success("Nothing firing.")
            return
        st.caption("One row per rule (grouped as Alertmanager does): open a group below for its entities.")
        table = table.assign(age=[human_age(s) for s in table["age_seconds"]])
        components.table(table, alerts.GROUP_TABLE, key="alerts-groups")


def ack_form(key: str, rule: str, entity: str, what: str) -> None:
    """Acknowledge or silence ``entity`` of ``rule`` (:data:`EVERY_ENTITY`: the whole group)."""
    with st.form(key, clear_on_submit=False):
        st.markdown(f"#### Acknowledge or silence {what}")
        who = st.text_input("Who", key=f"{key}-who")
        action = st.radio("Action", KINDS, horizontal=True, key=f"{key}-kind")
        hours = st.number_input("For how many hours", min_value=0.25, max_value=336.0, value=4.0, step=0.25,
                                key=f"{key}-hours")
        note = st.text_input("Note", key=f"{key}-note")
        submitted = st.form_submit_button("Save")
    if submitted:
        with frame.shown_errors():
            ack = new_ack(cluster=frame.cluster(), rule=rule, entity=entity, kind=action, by=who, hours=hours,
                          now=frame.now(), note=note)
            message = save_ack(frame.ack_store(), ack, frame.now(), frame.silencer())
            if message:
                st.session_state[ALERTMANAGER_MESSAGE_KEY] = message
            st.success(f"{action}d by {literal.markdown(ack.by)} for {hours:g} h")
            st.rerun()


def end_button(key: str, rule: str, entity: str) -> None:
    """End the acknowledgement or silence of ``entity`` of ``rule`` now (and its Alertmanager silence)."""
    if st.button("End it now", key=key):
        with frame.shown_errors():
            _, message = end_acks(frame.ack_store(), frame.cluster(), rule, entity, frame.now(), frame.silencer())
            if message:
                st.session_state[ALERTMANAGER_MESSAGE_KEY] = message
            st.rerun()


firing_list()

with frame.shown_errors():
    acks, shown = shown_alerts()
    groups, _ = frame.firing_groups(shown, acks)
    if groups:
        by_rule = {group.rule: group for group in groups}
        wanted = frame.entity_param("rule")
        rule = st.selectbox("Open an alert group", list(by_rule), key="alerts-group",
                            index=list(by_rule).index(wanted) if wanted in by_rule else 0,
                            format_func=lambda r: literal.visible(f"{by_rule[r].severity}: {by_rule[r].headline}"))
        group = by_rule[rule]
        members = alerts.group_members(shown, rule)
        listed_entities = members["entity"]
        wanted_entity = frame.entity_param("entity")
        if group.count > 1:
            st.subheader(f"{literal.markdown(rule)} · {group.affected}")
            st.markdown(f"{group.critical:,} critical · {group.warning:,} warning · the oldest firing since "
                        f"{pd.Timestamp(group.since, unit='s', tz='UTC'):%Y-%m-%d %H:%M:%S} UTC")
            group_ack = acks.get((rule, EVERY_ENTITY))
            if group_ack:
                st.info(f"the whole group is {group_ack.kind}d by {literal.markdown(group_ack.by)} until "
                        f"{pd.Timestamp(group_ack.until, unit='s', tz='UTC'):%Y-%m-%d %H:%M} UTC (its entities firing "
                        "now and later)")
                end_button("alerts-group-ack-end", rule, EVERY_ENTITY)
            listing = members.assign(age=[human_age(s) for s in members["age_seconds"]])
            listed = components.searched_list(f"alerts-entities-{rule}", listing, sorts=ENTITY_SORTS,
                                              search_column="entity", noun="entities",
                                              placeholder="part of an entity, e.g. a group id")
            components.table(listed.rows, alerts.ENTITY_TABLE, key="alerts-entities")
            ack_form("alerts-group-ack", rule, EVERY_ENTITY, f"all {group.affected}")
            listed_entities = listed.rows["entity"]
        keys = [alerts.alert_key({"rule": rule, "entity": entity}) for entity in listed_entities]
        wanted_key = f"{rule} · {wanted_entity}" if wanted_entity else None
        if wanted_key and wanted_key not in keys and wanted_entity in set(members["entity"]):
            keys.insert(0, wanted_key)
        chosen = st.selectbox("Open an alert", keys, index=keys.index(wanted_key) if wanted_key in keys else 0,
                              key="alerts-chosen", format_func=literal.visible)
        alert = members[members["entity"] == chosen.partition(" · ")[2]].iloc[0]
        st.subheader(f"{literal.markdown(alert['rule'])} · {literal.markdown(alert['entity'])}")
        colour = "red" if alert["severity"] == "critical" else "orange"
        st.markdown(f":{colour}[**{literal.markdown(alert['severity'].upper())}**] · firing since "
                    f"{alert['since']:%Y-%m-%d %H:%M:%S} UTC ({human_age(alert['age_seconds'])}) · "
                    f"{literal.markdown(alert['summary'])}")
        if alert["ack"]:
            st.info(f"{alert['ack']}d by {literal.markdown(alert['ack_by'])} until "
                    f"{alert['ack_until']:%Y-%m-%d %H:%M} UTC")
            running = effective(acks, alert["rule"], alert["entity"])
            if running is not None:
                end_button("alerts-ack-end", running.rule, running.entity)

        kind, name = alerts.parse_entity(alert["entity"])
        page, param = alerts.ENTITY_PAGES.get(kind, ("overview", None))
        st.page_link(PAGE_FILES[page], label=f"Open {literal.markdown(alert['entity'])} on the {page} page",
                     icon=":material/arrow_forward:",
                     query_params={param: name} if param else None)
        records_kind = records.alert_target(alert["rule"], kind, name)
        if records_kind is not None:
            st.page_link("app_pages/records.py", label=f"Open the records at its {records.OFFSET_WORDS[records_kind]}",
                         icon=":material/data_object:", query_params=records.query_of(records_kind, name))

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
            if records_kind is not None:
                st.page_link("app_pages/records.py", icon=":material/data_object:",
                             label="The record it is stuck on, and skipping it: the records view",
                             query_params=records.query_of(records_kind, name))
        else:
            st.markdown(f"No runbook for rule {literal.markdown(alert['rule'])}.")

        ack_form("alerts-ack", alert["rule"], alert["entity"], "this alert")
