"""The form of each operation (:mod:`operations.registry`), on the page of what it acts on: offset
reset, share group reset, delete offsets, delete group, skip records (group), Streams reset and Streams group
reset (app), preferred leader election (topic), reassignment (broker). A
form draws its widgets and returns their values; its ``plan`` turns them into a plan through the
operation's planner (changes nothing), its ``options`` say how the plan is to run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any
from collections.abc import Callable

import streamlit as st

from dashboard import frame
from dashboard.services import plans
from dashboard.services.sources import DashboardError
from operations.internal_topics import is_kafka_internal_topic
from operations.numbers import PARTITION, parse_integer
from operations.reassign_plan import DEFAULT_THROTTLE_BYTES
from operations.group_plans import SHARE_STRATEGIES, STREAMS_GROUP_STRATEGIES
from operations.offset_plan import Scope
from operations.registry import (
    DELETE_GROUP, DELETE_OFFSETS, ELECT_LEADERS, REASSIGN, RESET_OFFSETS, RESET_SHARE_GROUP, RESET_STREAMS_APP,
    RESET_STREAMS_GROUP, SKIP_RECORDS, operation,
)


def _topics() -> list[str]:
    """Topic names to pick from; none when the cluster does not answer (the page already says so,
    and the pickers accept typed names)."""
    try:
        return [topic for topic in frame.topic_names() if not is_kafka_internal_topic(topic)]
    except DashboardError:
        return []


def _partitions(text: str) -> list[int]:
    """``0, 2,5`` -> [0, 2, 5]; each number read as Kafka's tools read it (no ``1_0``, no ``١``)."""
    return sorted({parse_integer(p.strip(), f"partitions {text!r}", PARTITION) for p in text.split(",") if p.strip()})


def _group_topics(name: str) -> list[str]:
    group = frame.consumer_group(name)
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


def streams_group_form(key: str, name: str, disabled: bool) -> dict[str, Any]:
    left, right = st.columns(2)
    inputs = left.multiselect("Input topics (empty: every input topic of the topology)", _topics(),
                              key=f"{key}-input", disabled=disabled, accept_new_options=True)
    delete = left.checkbox("Delete the internal topics (--delete-all-internal-topics)", value=True,
                           key=f"{key}-delete", disabled=disabled)
    strategy = right.selectbox("Strategy", STREAMS_GROUP_STRATEGIES[:-1], key=f"{key}-strategy", disabled=disabled)
    value = right.text_input("Value", key=f"{key}-value", disabled=disabled,
                             help="; ".join(f"{s}: {h}" for s, h in plans.VALUE_HINTS.items()))
    st.caption("For an application on group.protocol=streams (a Streams group, KIP-1071), as "
               "kafka-streams-groups --reset-offsets does.")
    return {"input": inputs, "delete": delete, "strategy": strategy, "value": value}


def share_form(key: str, name: str, disabled: bool) -> dict[str, Any]:
    left, right = st.columns(2)
    topics = left.multiselect("Topics (empty: every partition the group has a start offset for)", _topics(),
                              key=f"{key}-share-topics", disabled=disabled, accept_new_options=True)
    strategy = right.selectbox("Strategy", SHARE_STRATEGIES, key=f"{key}-share-strategy", disabled=disabled)
    value = right.text_input("Datetime (to-datetime)", key=f"{key}-share-value", disabled=disabled,
                             placeholder="YYYY-MM-DDTHH:mm:SS.sss")
    return {"topics": topics, "strategy": strategy, "value": value}


def delete_offsets_form(key: str, name: str, disabled: bool) -> dict[str, Any]:
    own = _group_topics(name)
    topics = st.multiselect("Topics whose offsets the group forgets", own + [t for t in _topics() if t not in own],
                            key=f"{key}-delete-topics", disabled=disabled, accept_new_options=True)
    return {"topics": topics}


def delete_group_form(key: str, name: str, disabled: bool) -> dict[str, Any]:
    delete = st.checkbox("A Streams group: also delete its internal topics (--delete-all-internal-topics)",
                         key=f"{key}-delete-internal", disabled=disabled)
    st.caption("The group and all its offsets are deleted; it must have no member.")
    return {"delete": delete}


SKIP_FIELDS = ("topic", "partition", "to_offset", "from_offset")
"""The skip form's values; its widget keys are ``<key>-skip-<field>`` (:func:`skip_prefill`)."""


def skip_prefill(key: str, topic: str, partition: int, from_offset: int | None = None,
                 to_offset: int | None = None) -> dict[str, str]:
    """Session-state values that prefill the skip form drawn under ``key`` (a records view's "Skip this
    record": ``from_offset`` the committed offset it showed; "Skip to offset N": ``to_offset``)."""
    values = {"topic": topic, "partition": str(partition), "to_offset": "" if to_offset is None else str(to_offset),
              "from_offset": "" if from_offset is None else str(from_offset)}
    return {f"{key}-skip-{field}": values[field] for field in SKIP_FIELDS}


def skip_form(key: str, name: str, disabled: bool) -> dict[str, Any]:
    left, right = st.columns(2)
    topic = left.text_input("Topic", key=f"{key}-skip-topic", disabled=disabled,
                            placeholder=", ".join(_group_topics(name)[:3]))
    partition = left.text_input("Partition", key=f"{key}-skip-partition", disabled=disabled, placeholder="0")
    to_offset = right.text_input("Skip to offset (empty: the next one)", key=f"{key}-skip-to_offset",
                                 disabled=disabled, help="the consumer resumes at this offset; after the committed "
                                                         "offset, at most the log end")
    from_offset = right.text_input("Committed offset seen (optional)", key=f"{key}-skip-from_offset",
                                   disabled=disabled, help="refused if the group's committed offset is no longer this")
    st.caption("Skips the record at the committed offset of one partition (and up to the offset given): "
               "nothing else changes. The group must have no member: stop its consumers first.")
    return {"topic": topic, "partition": partition, "to_offset": to_offset, "from_offset": from_offset}


def plan_skip(operations, cluster: str, name: str, values: dict[str, Any]):
    partition = parse_integer(str(values["partition"]).strip(), "partition", PARTITION)
    to_offset = str(values.get("to_offset") or "").strip()
    from_offset = str(values.get("from_offset") or "").strip()
    return operation(SKIP_RECORDS).planner(
        operations, cluster, name, str(values["topic"]).strip(), partition,
        parse_integer(to_offset, "offset to skip to") if to_offset else None,
        expect_from=parse_integer(from_offset, "committed offset seen") if from_offset else None)


def topic_form(key: str, name: str, disabled: bool) -> dict[str, Any]:
    partitions = st.text_input("Partitions (empty: every partition of the topic)", key=f"{key}-partitions",
                               disabled=disabled, placeholder="0,2")
    st.caption("Preferred leader election: each partition's leadership goes back to its first replica.")
    return {"partitions": partitions}


def broker_form(key: str, name: str, disabled: bool) -> dict[str, Any]:
    snap = frame.snapshot()
    known = {b["id"] for b in (snap.get("brokers") if snap else None) or []}
    brokers = sorted(known | ({int(name)} if name.isascii() and name.isdigit() else set()))
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
        if strategy.name == "from-file" and strategy.value is not None:  # the plan file written for it
            Path(strategy.value).unlink(missing_ok=True)


def plan_streams_reset(operations, cluster: str, name: str, values: dict[str, Any]):
    strategy = plans.strategy(values["strategy"], values["value"])
    return operation(RESET_STREAMS_APP).planner(operations, cluster, name, values["input"], values["intermediate"],
                                                None, strategy)


def plan_streams_group_reset(operations, cluster: str, name: str, values: dict[str, Any]):
    scope = Scope(all_topics=not values["input"], topics=tuple((t, None) for t in values["input"]))
    return operation(RESET_STREAMS_GROUP).planner(operations, cluster, name, scope,
                                                  plans.strategy(values["strategy"], values["value"]),
                                                  delete_internal_topics=values["delete"])


def plan_share_reset(operations, cluster: str, name: str, values: dict[str, Any]):
    scope = Scope(all_topics=not values["topics"], topics=tuple((t, None) for t in values["topics"]))
    return operation(RESET_SHARE_GROUP).planner(operations, cluster, name, scope,
                                                plans.strategy(values["strategy"], values["value"]))


def plan_delete_offsets(operations, cluster: str, name: str, values: dict[str, Any]):
    return operation(DELETE_OFFSETS).planner(operations, cluster, name, list(values["topics"]))


def plan_delete_group(operations, cluster: str, name: str, values: dict[str, Any]):
    return operation(DELETE_GROUP).planner(operations, cluster, name, delete_internal_topics=values["delete"])


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
         RESET_STREAMS_GROUP: Form(streams_group_form, plan_streams_group_reset),
         RESET_SHARE_GROUP: Form(share_form, plan_share_reset),
         DELETE_OFFSETS: Form(delete_offsets_form, plan_delete_offsets),
         DELETE_GROUP: Form(delete_group_form, plan_delete_group),
         SKIP_RECORDS: Form(skip_form, plan_skip),
         ELECT_LEADERS: Form(topic_form, plan_election),
         REASSIGN: Form(broker_form, plan_reassignment, lambda values: {"throttle_bytes": values["throttle"]})}
"""Operation name -> its form."""
