"""Partition health from metadata: table-driven cases of the pure summary."""

from __future__ import annotations

import pytest

from collectors.cluster.cluster_health import PartitionState, summarize


def p(topic, partition, leader, replicas, isr):
    return PartitionState(topic, partition, leader, tuple(replicas), tuple(isr))


CASES = [
    pytest.param([p("a", 0, 1, [1, 2, 3], [1, 2, 3])], {"a": 2}, (0, 0, 0, 0), id="healthy"),
    pytest.param([p("a", 0, 1, [1, 2, 3], [1, 2])], {"a": 2}, (1, 0, 0, 0), id="one-replica-out-of-isr-is-urp-only"),
    pytest.param([p("a", 0, 1, [1, 2, 3], [1])], {"a": 2}, (1, 0, 1, 0), id="isr-below-min-isr"),
    pytest.param([p("a", 0, 1, [1, 2, 3], [1])], {"a": None}, (1, 0, 0, 0), id="unknown-min-isr-is-not-under-min-isr"),
    pytest.param([p("a", 0, -1, [2], [2])], {"a": 1}, (0, 1, 1, 0), id="rf1-leaderless-is-offline-and-under-min-isr-as-kafka-topics-counts"),
    pytest.param([p("a", 0, -1, [1, 2, 3], [])], {"a": 2}, (1, 1, 1, 0), id="all-replicas-gone"),
    pytest.param([p("a", 0, 2, [1, 2, 3], [1, 2, 3])], {"a": 2}, (0, 0, 0, 1), id="leader-not-preferred"),
    pytest.param([p("a", 0, -1, [1, 2], [1, 2])], {"a": 1}, (0, 1, 1, 0), id="offline-is-not-counted-as-imbalance"),
]


@pytest.mark.parametrize("partitions,min_isr,expected", CASES)
def test_health_counts(partitions, min_isr, expected):
    summary = summarize(partitions, min_isr, {1, 2, 3})
    got = (len(summary.under_replicated), len(summary.offline), len(summary.under_min_isr),
           len(summary.not_preferred_leader))
    assert got == expected


def test_broker_load_counts_replicas_leaders_and_preferred_leaders_including_idle_and_unknown_brokers():
    partitions = [p("a", 0, 1, [1, 2], [1, 2]), p("a", 1, 1, [2, 1], [2, 1]), p("b", 0, 5, [5], [5])]
    summary = summarize(partitions, {}, {1, 2, 3})
    load = {b.broker_id: (b.partition_count, b.leader_count, b.preferred_leader_count) for b in summary.brokers}
    assert load == {1: (2, 2, 1), 2: (2, 0, 1), 3: (0, 0, 0), 5: (1, 1, 1)}
    assert (summary.topic_count, summary.partition_count) == (2, 3)
