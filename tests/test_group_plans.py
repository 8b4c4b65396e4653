"""The pure decisions of the operations on Kafka 4's group types (operations/group_plans.py), from
tables of cases on group_model data: which internal topics kafka-streams-groups 4.3.1 deletes,
which partitions a Streams group reset acts on, when a group is active or of the wrong type."""

from __future__ import annotations

import pytest

from kpulse.kafka.group_model import (
    ClassicGroup, ClassicMember, ShareGroup, StreamsGroup, StreamsGroupStateName, Subtopology,
)
from operations.errors import BadInput, Refused
from operations.group_plans import (
    DeleteGroupPlan, GroupOffset, StreamsGroupResetPlan, input_partitions, refuse_unless_inactive, refuse_wrong_type,
    streams_foreign_topics, streams_internal_topics,
)
from operations.offset_plan import PartitionReset, Scope, Strategy


def streams_group(group_id: str, *subtopologies: Subtopology, state: StreamsGroupStateName = "Empty") -> StreamsGroup:
    return StreamsGroup(group_id, state, 3, 3, 0, subtopologies, ())


DEMO = streams_group(
    "app",
    Subtopology("0", ("orders",), (), (), ()),
    Subtopology("1", ("orders-by-region",), ("app-by-customer-repartition",), (), ()),
    Subtopology("2", (), (), ("app-order-counts-changelog",), ("app-by-customer-repartition",)))
"""The demo topology as StreamsGroupDescribe gives it (repartition topics are not source topics)."""


@pytest.mark.parametrize("group, deleted, kept", [
    (DEMO, ("app-by-customer-repartition", "app-order-counts-changelog"), ()),
    # a changelog another subtopology reads as a source topic (a source-topic changelog) is kept out
    (streams_group("app", Subtopology("0", ("app-store-changelog",), (), ("app-store-changelog",), ())), (), ()),
    # not named as the group's internal topic: kept, and listed as kept
    (streams_group("app", Subtopology("0", ("in",), (), ("other-store-changelog",), ("app-x-repartition",))),
     ("app-x-repartition",), ("other-store-changelog",)),
    # a foreign-key join topic is named as internal too
    (streams_group("app", Subtopology("0", ("in",), (), ("app-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-7-topic",), ())),
     ("app-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-7-topic",), ()),
    (streams_group("app"), (), ()),  # no topology yet
])
def test_the_internal_topics_deleted_are_those_kafka_streams_groups_deletes(group, deleted, kept):
    assert streams_internal_topics(group) == deleted
    assert streams_foreign_topics(group) == kept


COMMITTED = {("orders", 0): 20, ("orders", 1): 20, ("orders-by-region", 0): 3, ("app-by-customer-repartition", 0): 9}


@pytest.mark.parametrize("scope, existing, expected", [
    (Scope(all_topics=True), {}, [("orders", 0), ("orders", 1), ("orders-by-region", 0)]),  # source topics only
    (Scope.parse(False, ["orders"]), {"orders": [0, 1]}, [("orders", 0), ("orders", 1)]),
    (Scope.parse(False, ["orders:1"]), {"orders": [0, 1]}, [("orders", 1)]),
])
def test_the_partitions_of_a_streams_group_reset(scope, existing, expected):
    assert input_partitions("app", scope, COMMITTED, {"orders", "orders-by-region"}, existing) == expected


@pytest.mark.parametrize("scope, existing, message", [
    (Scope.parse(False, ["orders-by-region"]), {"orders-by-region": [0, 1]},
     "orders-by-region-1: not part of group 'app' \\(no committed offset; kafka-streams-groups resets nothing"),
    (Scope.parse(False, ["orders:5"]), {"orders": [0, 1]}, "partition\\(s\\) orders-5 do not exist"),
])
def test_a_streams_group_reset_refuses_partitions_outside_the_group(scope, existing, message):
    with pytest.raises(BadInput, match=message):
        input_partitions("app", scope, COMMITTED, {"orders", "orders-by-region"}, existing)


MEMBER = ClassicMember("m-1", None, "billing-1", "/10.0.0.7", {})


@pytest.mark.parametrize("group, refused", [
    (ClassicGroup("g", "Empty", "consumer", "", ()), False),
    (ClassicGroup("g", "Dead", "consumer", "", ()), False),
    (ClassicGroup("g", "Stable", "consumer", "range", (MEMBER,)), True),
    (ClassicGroup("g", "Empty", "consumer", "", (MEMBER,)), True),  # a member counts whatever the state
    (streams_group("app", state="NotReady"), True),  # not Empty: the official tool refuses it too
    (ShareGroup("q", "Stable", 2, 2, "simple", ()), True),
])
def test_a_group_with_members_or_not_empty_is_refused_in_one_line(group, refused):
    if not refused:
        refuse_unless_inactive(group, "cannot delete group 'g'")
        return
    with pytest.raises(Refused) as caught:
        refuse_unless_inactive(group, "cannot delete group 'g'")
    assert "\n" not in str(caught.value) and str(caught.value).endswith("nothing changed")
    if group.members:
        assert "billing-1@10.0.0.7" in str(caught.value)


def test_a_group_of_the_wrong_type_names_its_type_and_the_command_for_it():
    with pytest.raises(BadInput, match="^group 'app' is a streams group, not a share group: a share group reset does "
                                       "not apply \\(kpulse reset-streams-group resets a streams group\\)$"):
        refuse_wrong_type("app", "streams", ("share",), "a share group reset")
    refuse_wrong_type("q", "share", ("share",), "a share group reset")


def test_plans_read_back_what_they_wrote_and_refuse_a_field_of_the_wrong_type():
    row = PartitionReset("orders", 0, 20, 0, 20, 0)
    plan = StreamsGroupResetPlan("c", "app", "Empty", Strategy("to-earliest"), Scope.parse(False, ["orders:0"]),
                                 (row,), ("app-x-changelog",), 1.0, ("other-changelog",))
    assert StreamsGroupResetPlan.from_dict(plan.to_dict()) == plan
    delete = DeleteGroupPlan("c", "g", "classic", "Empty", (GroupOffset("orders", 0, None),), (), 1.0)
    assert DeleteGroupPlan.from_dict(delete.to_dict()) == delete
    with pytest.raises(BadInput, match="delete_topics"):
        StreamsGroupResetPlan.from_dict({**plan.to_dict(), "delete_topics": "app-x-changelog"})
