"""Consumer lag on the real cluster: kpulse's per-partition lag equals the official
kafka-consumer-groups, and time lag is within 20 % of the truth for a producer at a known rate."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from collectors.lag.consumer_lag import ConsumerLagCollector
from collectors.protocol import CollectContext
from kpulse.config import parse_config
from tests.support import admin_for, commit, create_topic, fill_topic, group_rows, read_log_ends

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def cluster_config(local_cluster, tmp_path_factory):
    data = {"clusters": [{"name": "test", "bootstrap_servers": local_cluster.layout.bootstrap_servers,
                          "consumer_groups": {"include": ["lagtest-.*"]}}]}
    return parse_config(data, source="test", base_dir=tmp_path_factory.mktemp("cfg")).cluster(None)


def group_section(result, group_id):
    return next(g for g in result.sections["consumer_groups"] if g["group_id"] == group_id)


@pytest.fixture(scope="module")
def orders_group(bootstrap):
    create_topic(admin_for(bootstrap), "lagtest.orders", 4)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(400):
        producer.produce("lagtest.orders", key=str(i), value=b"x")
    producer.flush(30)
    commit(admin_for(bootstrap), "lagtest-equal", {("lagtest.orders", 0): 10, ("lagtest.orders", 1): 0, ("lagtest.orders", 2): 77})
    # partition 3 is never committed: both must show no lag for it, not zero
    return "lagtest-equal"


@pytest.mark.parametrize("batched", [True, False], ids=["offsets-of-all-groups-at-once", "group-by-group"])
def test_per_partition_lag_equals_kafka_consumer_groups_describe(cluster_config, bootstrap, orders_group, batched):
    collector = ConsumerLagCollector(cluster_config, batched=batched)
    try:
        result = collector.collect(CollectContext(cluster_config, time.time()))
    finally:
        collector.close()
    assert (collector.batched_client is not None) == batched
    if batched:
        assert collector.batched_client.fallbacks == 0  # the batched reads were used
    ours = {(p["topic"], p["partition"]): (p["committed_offset"], p["log_end_offset"], p["lag"])
            for p in group_section(result, "lagtest-equal")["partitions"]}
    official = {(row["TOPIC"], int(row["PARTITION"])): (int(row["CURRENT-OFFSET"]), int(row["LOG-END-OFFSET"]),
                                                        int(row["LAG"]))
                for row in group_rows(bootstrap, "lagtest-equal")}
    assert ours == official
    assert ("lagtest.orders", 3) not in ours
    group = group_section(result, "lagtest-equal")
    assert group["state"] == "Empty" and group["members"] == 0
    assert group["total_lag"] == sum(lag for _, _, lag in official.values())


def test_groups_outside_the_include_filter_are_not_collected(cluster_config, bootstrap, orders_group):
    commit(admin_for(bootstrap), "other-group", {("lagtest.orders", 0): 1})
    result = ConsumerLagCollector(cluster_config).collect(CollectContext(cluster_config, time.time()))
    ids = {g["group_id"] for g in result.sections["consumer_groups"]}
    assert "other-group" not in ids and "lagtest-equal" in ids


def test_time_lag_is_within_20_percent_for_a_producer_at_a_known_rate(cluster_config, bootstrap):
    admin = admin_for(bootstrap)
    create_topic(admin, "lagtest.rate", 1)
    collector = ConsumerLagCollector(cluster_config)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    rate, produced, started = 40.0, 0, time.time()
    committed_at = None
    next_cycle = started
    while time.time() - started < 14:
        now = time.time()
        due = int((now - started) * rate)
        while produced < due:
            producer.produce("lagtest.rate", value=b"x")
            produced += 1
        producer.flush(5)
        if committed_at is None and now - started >= 3:
            commit(admin, "lagtest-rate", {("lagtest.rate", 0): produced})
            committed_at = time.time()  # the log end was `produced` at about this moment
        if now >= next_cycle:
            result = collector.collect(CollectContext(cluster_config, time.time()))
            next_cycle += 1.0
        time.sleep(0.02)
    truth = time.time() - committed_at
    result = collector.collect(CollectContext(cluster_config, time.time()))
    partition = group_section(result, "lagtest-rate")["partitions"][0]
    assert partition["lag"] > 0
    assert partition["lag_seconds"] == pytest.approx(truth, rel=0.2)


def test_log_ends_are_read_in_chunks_and_an_unreadable_partition_says_why(cluster_config, bootstrap, monkeypatch):
    from kpulse.kafka import group_offsets

    fill_topic(bootstrap, "lagtest.ends", {0: 5, 1: 0, 2: 9})
    monkeypatch.setattr(group_offsets, "LIST_OFFSETS_CHUNK", 2)  # three requests for five partitions
    result = group_offsets.ClusterOffsets()
    wanted = [("lagtest.ends", 0), ("lagtest.ends", 1), ("lagtest.ends", 2), ("lagtest.ends", 7),
              ("lagtest.no-such-topic", 0)]
    read_log_ends(AdminClient({"bootstrap.servers": bootstrap}), wanted, 15.0, result)
    assert result.log_end == {("lagtest.ends", 0): 5, ("lagtest.ends", 1): 0, ("lagtest.ends", 2): 9}
    # partition 7 fails inside a request that reads partition 2; the last request fails whole
    assert set(result.log_end_errors) == {("lagtest.ends", 7), ("lagtest.no-such-topic", 0)}
    assert "Unknown partition" in result.log_end_errors[("lagtest.ends", 7)]
    assert "leader" in result.log_end_errors[("lagtest.no-such-topic", 0)]


def test_a_group_listed_as_empty_is_not_described_and_a_group_with_members_is(bootstrap):
    """Describing a group costs four requests (an Empty one has nothing to describe)."""
    from kpulse.kafka.group_offsets import read_cluster_offsets

    create_topic(admin_for(bootstrap), "lagtest.live", 2)
    commit(admin_for(bootstrap), "lagtest-idle", {("lagtest.live", 0): 0})
    member = Consumer({"bootstrap.servers": bootstrap, "group.id": "lagtest-live", "enable.auto.commit": False})
    try:
        member.subscribe(["lagtest.live"])
        deadline = time.monotonic() + 30
        while not member.assignment() and time.monotonic() < deadline:
            member.poll(0.2)
        assert len(member.assignment()) == 2
        admin = AdminClient({"bootstrap.servers": bootstrap})
        described, describe = [], admin.describe_consumer_groups
        admin.describe_consumer_groups = lambda ids, **kw: (described.extend(ids), describe(ids, **kw))[1]
        offsets = read_cluster_offsets(admin, lambda group: group in ("lagtest-idle", "lagtest-live"))
    finally:
        member.close()
    assert described == ["lagtest-live"]
    groups = {g.group_id: g for g in offsets.groups}
    assert (groups["lagtest-idle"].state, groups["lagtest-idle"].members) == ("Empty", 0)
    assert groups["lagtest-idle"].committed == {("lagtest.live", 0): 0}
    assert (groups["lagtest-live"].state, groups["lagtest-live"].members) == ("Stable", 1)
    # assigned, never committed: known from the description only
    assert groups["lagtest-live"].committed == {("lagtest.live", 0): None, ("lagtest.live", 1): None}
