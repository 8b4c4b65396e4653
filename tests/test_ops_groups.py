"""Delete offsets and delete a group, on every group type, compared with the official tools on a
twin group (real cluster); the bad inputs of the group operations (unknown group, wrong type,
malformed datetime, active members) are one line and change nothing; the audit log records what
changed. The Streams and share group resets are in test_ops_streams_groups.py and
test_ops_share_groups.py."""

from __future__ import annotations

import json

import pytest

from operations.access import User
from operations.errors import BadInput, Refused
from operations.offset_plan import Scope, Strategy
from tests.conftest import one_error_line
from tests.group_ops_support import commit_offsets, read_committed
from tests.support import admin_for, cli, create_topic, official, operations_for

pytestmark = pytest.mark.cluster
ADMIN = User("tester", "admin")


@pytest.fixture
def twins(bootstrap, request):
    """Two classic groups (``<name>-kpulse`` acted on by kpulse, ``<name>-official`` by the official
    tool) with the same committed offsets on two topics."""
    name = "ogc-" + request.node.name.replace("_", "")[:30].lower()
    admin = admin_for(bootstrap)
    topics = (f"{name}-a", f"{name}-b")
    for topic in topics:
        create_topic(admin, topic, 2)
    offsets = {(t, p): 0 for t in topics for p in range(2)}
    groups = (f"{name}-kpulse", f"{name}-official")
    for group in groups:
        commit_offsets(bootstrap, group, offsets)
    return admin, topics, groups


def listed_groups(bootstrap: str) -> set[str]:
    return set(official("kafka-groups", "--bootstrap-server", bootstrap, "--list").split())


def test_delete_offsets_of_a_classic_group_equals_kafka_consumer_groups_delete_offsets(bootstrap, tmp_path, twins):
    admin, (kept, dropped), (mine, theirs) = twins
    operations = operations_for(tmp_path, bootstrap)
    plan = operations.plan_delete_offsets("test", mine, [dropped])

    assert (plan.group_type, plan.group_state, plan.topics) == ("classic", "Empty", (dropped,))
    assert [(r.topic, r.partition, r.offset) for r in plan.partitions] == [(dropped, 0, 0), (dropped, 1, 0)]
    outcome = operations.delete_offsets(ADMIN, plan)
    answer = official("kafka-consumer-groups", "--bootstrap-server", bootstrap, "--delete-offsets", "--group", theirs,
                      "--topic", dropped)

    assert "EXIT" not in answer and outcome.result == "ok", (answer, outcome)
    assert read_committed(bootstrap, mine) == read_committed(bootstrap, theirs) == {(kept, 0): 0, (kept, 1): 0}
    [row] = operations.audit.read().query("action == 'delete-offsets'").to_dict("records")
    assert (row["target"], row["result"], row["actor"]) == (f"group {mine}", "ok", "tester")
    assert json.loads(row["before_json"]) == {f"{dropped}-0": 0, f"{dropped}-1": 0}
    assert json.loads(row["after_json"]) == {f"{dropped}-0": None, f"{dropped}-1": None}


def test_delete_a_classic_group_equals_kafka_consumer_groups_delete(bootstrap, tmp_path, twins):
    admin, _, (mine, theirs) = twins
    operations = operations_for(tmp_path, bootstrap)
    plan = operations.plan_delete_group("test", mine)

    assert len(plan.offsets) == 4 and plan.delete_topics == ()
    assert operations.delete_group(ADMIN, plan).result == "ok"
    answer = official("kafka-consumer-groups", "--bootstrap-server", bootstrap, "--delete", "--group", theirs)

    assert "EXIT" not in answer and "successful" in answer
    assert {mine, theirs} & listed_groups(bootstrap) == set()
    assert read_committed(bootstrap, mine) == read_committed(bootstrap, theirs) == {}


def test_a_kip848_consumer_group_is_deleted_as_kafka_consumer_groups_deletes_it(bootstrap, tmp_path):
    from confluent_kafka import Consumer

    topic = "ogc-kip848"
    create_topic(admin_for(bootstrap), topic, 2)
    groups = ("ogc-kip848-kpulse", "ogc-kip848-official")
    for group in groups:  # a member on the consumer protocol makes a `consumer` group; it stays when it leaves
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                             "enable.auto.commit": False})
        consumer.subscribe([topic])
        consumer.poll(5)
        consumer.close()
    operations = operations_for(tmp_path, bootstrap)

    assert operations.group_type("test", groups[0]) == "consumer"
    plan = operations.plan_delete_group("test", groups[0])
    assert plan.group_type == "consumer"
    assert operations.delete_group(ADMIN, plan).result == "ok"
    answer = official("kafka-consumer-groups", "--bootstrap-server", bootstrap, "--delete", "--group", groups[1])

    assert "EXIT" not in answer and set(groups) & listed_groups(bootstrap) == set()


def test_an_active_group_is_refused_by_kpulse_and_by_the_official_tool_and_nothing_changes(bootstrap, tmp_path):
    from confluent_kafka import Consumer, TopicPartition

    topic, group = "ogc-active", "ogc-active-group"
    admin = admin_for(bootstrap)
    create_topic(admin, topic, 1)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                         "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        for _ in range(20):
            consumer.poll(0.5)
            if consumer.assignment():
                break
        consumer.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
        operations = operations_for(tmp_path, bootstrap)
        for plan in (lambda: operations.plan_delete_group("test", group),
                     lambda: operations.plan_delete_offsets("test", group, [topic])):
            with pytest.raises(Refused, match=r"the consumer group is Stable with 1 active member\(s\) .*; stop them"):
                plan()
        answer = official("kafka-consumer-groups", "--bootstrap-server", bootstrap, "--delete", "--group", group)
        assert "NON_EMPTY_GROUP" in answer or "not empty" in answer.lower()
        assert group in listed_groups(bootstrap) and read_committed(bootstrap, group) == {(topic, 0): 0}
    finally:
        consumer.close()


def test_bad_input_is_one_line_and_changes_nothing(bootstrap, tmp_path, twins):
    admin, (topic, _), (mine, _) = twins
    operations = operations_for(tmp_path, bootstrap)
    config = tmp_path / "kpulse.yaml"
    before = read_committed(bootstrap, mine)

    with pytest.raises(BadInput, match="^unknown group 'ogc-no-such-group': the cluster lists no group"):
        operations.plan_delete_group("test", "ogc-no-such-group")
    with pytest.raises(BadInput, match=f"^group '{mine}' is a classic group, not a share group"):
        operations.plan_share_reset("test", mine, Scope(all_topics=True), Strategy("to-earliest"))
    with pytest.raises(BadInput, match=f"^group '{mine}' is a classic group, not a streams group"):
        operations.plan_streams_group_reset("test", mine, Scope(all_topics=True), Strategy("to-earliest"))
    with pytest.raises(BadInput, match="^--delete-all-internal-topics applies to a streams group"):
        operations.plan_delete_group("test", mine, delete_internal_topics=True)
    with pytest.raises(BadInput, match="^unknown topic 'ogc-no-such-topic'"):
        operations.plan_delete_offsets("test", mine, ["ogc-no-such-topic"])
    assert one_error_line(cli(config, "reset-share-group", "--group", mine, "--all-topics", "--to-datetime",
                              "2024-02-30T00:00:00.000", "--execute")) == \
        "kpulse: error: malformed datetime '2024-02-30T00:00:00.000': day is out of range for month"
    assert one_error_line(cli(config, "delete-group", "--group", "", "--execute")) == \
        "kpulse: error: the group id is empty"
    assert one_error_line(cli(config, "reset-streams-group", "--group", mine, "--all-input-topics", "--to-earliest",
                              "--execute")).startswith(f"kpulse: error: group '{mine}' is a classic group, not a")
    assert read_committed(bootstrap, mine) == before and mine in listed_groups(bootstrap)
    assert topic in admin.list_topics(timeout=10).topics
