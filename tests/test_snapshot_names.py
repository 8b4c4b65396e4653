"""The names a status, state or type field of the snapshot takes (``Literal`` types in
``kpulse/snapshot.py`` and the contracts it reads them from) are the names the code that writes
them uses: the enums of the status contracts and the constants of the collectors. A name added on
one side only fails here, before a snapshot fails its schema."""

from __future__ import annotations

from typing import get_args


def names(literal: object) -> tuple[object, ...]:
    return get_args(literal)


def test_the_lag_and_share_statuses_are_the_values_of_their_enums_in_severity_order():
    from kpulse.lag_contract import STATUS_NAMES, PartitionStatus, PartitionStatusName
    from kpulse.share_contract import SHARE_STATUS_NAMES, ShareStatus, ShareStatusName

    assert names(PartitionStatusName) == tuple(status.value for status in PartitionStatus) == STATUS_NAMES
    assert names(ShareStatusName) == tuple(status.value for status in ShareStatus) == SHARE_STATUS_NAMES


def test_the_group_types_and_states_are_kafkas():
    from kpulse.kafka.group_model import (
        GROUP_TYPES, STATES, CommittingGroupTypeName, GroupStateName, GroupTypeName,
    )

    assert names(GroupTypeName) == GROUP_TYPES == ("classic", "consumer", "streams", "share")
    assert set(names(CommittingGroupTypeName)) == set(GROUP_TYPES) - {"share"}
    assert set(STATES) == set(GROUP_TYPES)
    assert set(names(GroupStateName)) == {state for states in STATES.values() for state in states} | {"Unknown"}


def test_the_streams_states_are_those_the_streams_collector_writes():
    from collectors.streams import streams_group, streams_state
    from kpulse.kafka.group_model import STATES
    from kpulse.snapshot import (
        StreamsAppStateName, StreamsClientStateName, StreamsInputScopeName, StreamsInstanceStateName,
        StreamsMemberStateName, StreamsThreadStateName, StreamsTransitionStateName,
    )

    clients = tuple(streams_state.CLIENT_STATES.values())
    assert names(StreamsClientStateName) == clients
    assert set(names(StreamsInstanceStateName)) == {*clients, "UNKNOWN", streams_state.UNREACHABLE}
    assert set(names(StreamsThreadStateName)) == {*streams_state.THREAD_STATES.values(), "UNKNOWN"}
    assert set(names(StreamsAppStateName)) == {*clients, streams_state.DEGRADED}
    members = {streams_group.MEMBER_STABLE, streams_group.MEMBER_RECONCILING, streams_group.MEMBER_LEFT}
    assert set(names(StreamsMemberStateName)) == members
    assert set(names(StreamsTransitionStateName)) == {*names(StreamsInstanceStateName), *STATES["streams"], *members}
    assert set(names(StreamsInputScopeName)) == {streams_group.ASSIGNED, streams_group.COMMITTED}


def test_the_alert_severities_are_the_alert_models():
    from alerting.model import SEVERITIES
    from kpulse.snapshot import AlertSeverityName

    assert set(names(AlertSeverityName)) == set(SEVERITIES)


def test_the_schema_lists_the_names_as_an_enum_with_null_where_the_field_may_be_null():
    from kpulse.snapshot import json_schema

    definitions = json_schema()["$defs"]
    status = definitions["GroupPartition"]["properties"]["status"]
    assert status["enum"] == ["OK", "WARN", "REWIND", "STALL", "STOP", "ERR", None] and "type" not in status
    assert definitions["ConsumerGroup"]["properties"]["type"]["enum"] == ["classic", "consumer", "streams"]
    assert definitions["FiringAlert"]["properties"]["severity"]["enum"] == ["warning", "critical"]
    share_state = definitions["ShareGroupState"]["properties"]["state"]["enum"]
    assert share_state == ["Empty", "Stable", "Dead", "Unknown", None]
