"""The form of each operation (:mod:`operations.registry`), on the page of what it acts on: offset
reset (group), Streams reset (app), preferred leader election (topic), reassignment (broker). A
form draws its widgets and returns their values; its ``plan`` turns them into a plan through the
operation's planner (changes nothing), its ``options`` say how the plan is to run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import streamlit as st

from dashboard import frame
from dashboard.services import plans
from dashboard.services.sources import DashboardError
from operations.internal_topics import is_kafka_internal_topic
from operations.numbers import PARTITION, parse_integer
from operations.reassign_plan import DEFAULT_THROTTLE_BYTES
from operations.registry import ELECT_LEADERS, REASSIGN, RESET_OFFSETS, RESET_STREAMS_APP, operation


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
                                  value=DEFAULT_THROTTLE_BYTES, step=1_000_000, key=f"{key}-throttle",
                                  disabled=disabled)
    return {"drain": goal.startswith("drain"), "brokers": chosen, "topics": topics, "throttle": int(throttle)}


def plan_reset(operations, cluster: str, name: str, values: dict[str, Any]):
    strategy = plans.strategy(values["strategy"], values["value"], values["file"])
    try:
        scope = plans.group_scope(values["scope"], values["topic"], _partitions(values["partitions"]))
        return operation(RESET_OFFSETS).planner(operations, cluster, name, scope, strategy)
    finally:
        if strategy.name == "from-file":
            Path(strategy.value).unlink(missing_ok=True)


def plan_streams_reset(operations, cluster: str, name: str, values: dict[str, Any]):
    strategy = plans.strategy(values["strategy"], values["value"])
    return operation(RESET_STREAMS_APP).planner(operations, cluster, name, values["input"], values["intermediate"],
                                                None, strategy)


def plan_election(operations, cluster: str, name: str, values: dict[str, Any]):
    chosen = _partitions(values["partitions"])
    return operation(ELECT_LEADERS).planner(operations, cluster, ((name, tuple(chosen) if chosen else None),))


def plan_reassignment(operations, cluster: str, name: str, values: dict[str, Any]):
    return operation(REASSIGN).planner(operations, cluster, values["topics"],
                                       [int(b) for b in values["brokers"]] or None,
                                       int(name) if values["drain"] else None)


@dataclass(frozen=True)
class Form:
    """An operation's form on the page of what it acts on."""

    draw: Callable[[str, str, bool], dict[str, Any]]
    """``(key, name, disabled)`` -> the values: draws the widgets (keys start with ``key``) for the
    entity called ``name``."""
    plan: Callable[..., Any]
    """``(operations, cluster, name, values)`` -> the plan (raises one-line errors, changes nothing)."""
    options: Callable[[dict[str, Any]], dict | None] = lambda values: None
    """Values -> how the plan is to run (:attr:`operations.registry.Operation.executor`)."""


FORMS = {RESET_OFFSETS: Form(group_form, plan_reset),
         RESET_STREAMS_APP: Form(streams_form, plan_streams_reset),
         ELECT_LEADERS: Form(topic_form, plan_election),
         REASSIGN: Form(broker_form, plan_reassignment, lambda values: {"throttle_bytes": values["throttle"]})}
"""Operation name -> its form."""
