"""The form of each entity page's action and its planner call: offset reset (group), Streams
reset (app), preferred leader election (topic), reassignment (broker). A form returns its values;
``plan(kind, ...)`` turns them into a plan through the operations service (changes nothing)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import streamlit as st

from dashboard import frame
from dashboard.services import plans
from dashboard.services.sources import DashboardError
from operations.internal_topics import is_kafka_internal_topic
from operations.numbers import PARTITION, parse_integer


def _topics() -> list[str]:
    """Topic names to pick from; none when the cluster does not answer (the page already says so,
    and the pickers accept typed names)."""
    try:
        return sorted({p["topic"] for p in frame.topic_partitions() if not is_kafka_internal_topic(p["topic"])})
    except DashboardError:
        return []


def _partitions(text: str) -> list[int]:
    """``0, 2,5`` -> [0, 2, 5]; each number read as Kafka's tools read it (no ``1_0``, no ``١``)."""
    return sorted({parse_integer(p.strip(), f"partitions {text!r}", PARTITION) for p in text.split(",") if p.strip()})


def _group_topics(name: str) -> list[str]:
    snap = frame.snapshot() or {}
    group = next((g for g in snap.get("consumer_groups") or [] if g.get("group_id") == name), {})
    return sorted({p.get("topic") for p in group.get("partitions") or [] if p.get("topic")})


def group_form(key: str, name: str, disabled: bool) -> dict[str, Any]:
    own = _group_topics(name)
    topics = own + [t for t in _topics() if t not in own]
    left, right = st.columns(2)
    scope = left.radio("Scope", ["all topics", "one topic", "chosen partitions"], key=f"{key}-scope",
                       disabled=disabled, horizontal=True)
    topic = left.selectbox("Topic", topics, key=f"{key}-topic", disabled=disabled, accept_new_options=True,
                           help="for the scopes 'one topic' and 'chosen partitions'")
    partitions = left.text_input("Partitions", key=f"{key}-partitions", disabled=disabled, placeholder="0,2",
                                 help="for the scope 'chosen partitions'")
    strategy = right.selectbox("Strategy", plans.GROUP_STRATEGIES, key=f"{key}-strategy", disabled=disabled)
    value = right.text_input("Value", key=f"{key}-value", disabled=disabled,
                             help="; ".join(f"{s}: {h}" for s, h in plans.VALUE_HINTS.items()))
    upload = right.file_uploader("Plan file (from-file): topic,partition,offset", type=["csv", "txt"],
                                 key=f"{key}-file", disabled=disabled)
    return {"scope": scope, "topic": topic, "partitions": partitions, "strategy": strategy, "value": value,
            "file": upload.getvalue() if upload is not None else None}


def streams_form(key: str, name: str, disabled: bool) -> dict[str, Any]:
    topics = [t for t in _topics() if not t.startswith(name + "-")]
    left, right = st.columns(2)
    inputs = left.multiselect("Input topics (reset)", topics, key=f"{key}-input", disabled=disabled,
                              accept_new_options=True)
    intermediate = left.multiselect("Intermediate topics (to the end)", topics, key=f"{key}-intermediate",
                                    disabled=disabled, accept_new_options=True)
    strategy = right.selectbox("Strategy for the input topics", plans.STREAMS_RESET_STRATEGIES,
                               key=f"{key}-strategy", disabled=disabled)
    value = right.text_input("Value", key=f"{key}-value", disabled=disabled,
                             help="; ".join(f"{s}: {h}" for s, h in plans.VALUE_HINTS.items()))
    st.caption("Internal topics (changelog, repartition) are found and deleted; output topics are untouched.")
    return {"input": inputs, "intermediate": intermediate, "strategy": strategy, "value": value}


def topic_form(key: str, name: str, disabled: bool) -> dict[str, Any]:
    partitions = st.text_input("Partitions (empty: every partition of the topic)", key=f"{key}-partitions",
                               disabled=disabled, placeholder="0,2")
    st.caption("Preferred leader election: each partition's leadership goes back to its first replica.")
    return {"partitions": partitions}


def broker_form(key: str, name: str, disabled: bool) -> dict[str, Any]:
    snap = frame.snapshot() or {}
    brokers = sorted({b["id"] for b in snap.get("brokers") or []} | ({int(name)} if name.isascii() and name.isdigit() else set()))
    left, right = st.columns(2)
    goal = left.radio("Goal", ["balance over the chosen brokers", f"drain broker {name}"], key=f"{key}-goal",
                      disabled=disabled)
    chosen = left.multiselect("Brokers (empty: all)", brokers, key=f"{key}-brokers", disabled=disabled)
    topics = right.multiselect("Topics (empty: all but internal)", _topics(), key=f"{key}-topics", disabled=disabled,
                               accept_new_options=True)
    throttle = right.number_input("Replication throttle (bytes/s per broker)", min_value=1,
                                  value=plans.DEFAULT_THROTTLE, step=1_000_000, key=f"{key}-throttle",
                                  disabled=disabled)
    return {"drain": goal.startswith("drain"), "brokers": chosen, "topics": topics, "throttle": int(throttle)}


FORMS = {"group": group_form, "streams": streams_form, "topic": topic_form, "broker": broker_form}


def plan(kind: str, operations, cluster: str, name: str, values: dict[str, Any]):
    """The plan of ``kind`` from the form's ``values`` (raises one-line errors, changes nothing)."""
    if kind == "group":
        strategy = plans.strategy(values["strategy"], values["value"], values["file"])
        try:
            scope = plans.group_scope(values["scope"], values["topic"], _partitions(values["partitions"]))
            return operations.plan_reset_offsets(cluster, name, scope, strategy)
        finally:
            if strategy.name == "from-file":
                Path(strategy.value).unlink(missing_ok=True)
    if kind == "streams":
        strategy = plans.strategy(values["strategy"], values["value"])
        return operations.plan_streams_reset(cluster, name, values["input"], values["intermediate"], None, strategy)
    if kind == "topic":
        chosen = _partitions(values["partitions"])
        return operations.plan_election(cluster, ((name, tuple(chosen) if chosen else None),))
    return operations.plan_reassignment(cluster, values["topics"], [int(b) for b in values["brokers"]] or None,
                                        int(name) if values["drain"] else None)
