"""The group reader (``kpulse/kafka/group_describe.py``): the answer parsing from tables of cases
and fakes (a broker too old for a type, a coordinator that moved); then on the real cluster, one
group of each type (classic, KIP-848 consumer, Streams, share) read as the official tools read
them: ``kafka-groups --list``, ``kafka-consumer-groups``, ``kafka-streams-groups`` and
``kafka-share-groups --describe``; a KIP-848 group caught while it reconciles; one group for the
CLI and the operations (``read_group``)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path
from types import SimpleNamespace as NS

import pytest

from kpulse.kafka.batched_client import BatchedClient
from kpulse.kafka.group_describe import (
    DESCRIBE_CALLS, GroupNotFound, GroupReader, GroupUnreadable, answers_from, classic_group_from,
    consumer_group_from, consumer_protocol_assignment, missing_topics_from, read_group, share_group_from,
    share_offsets_from, streams_group_from, unsupported_types, with_missing_topics)
from kpulse.kafka.group_listing import typed_listings_from
from kpulse.kafka.group_model import (
    ClassicGroup, ConsumerGroup, GroupListing, GroupReadError, ShareGroup, StreamsGroup, TypeUnsupported)
from tests.support import (
    admin_for, create_topic, fill_topic, free_port, kip848_consumer, classic_consumer, official_rows, produce,
    start_share_consumer, start_streams_app, wait_for)


# -- the answers parsed (pure) ----------------------------------------------------------------------

def assigned(*topics):
    """ConsumerGroupDescribe / ShareGroupDescribe ``Assignment``: (topic, partitions)..."""
    return NS(topic_partitions=[NS(topic_id=None, topic_name=t, partitions=list(p)) for t, p in topics])


def encoded_assignment(**topics) -> bytes:
    from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment as Assignment

    return Assignment(assigned_partitions=[Assignment.TopicPartition(topic=t, partitions=list(p))
                                           for t, p in topics.items()], user_data=None, version=0).encode(version=0)


def test_a_classic_consumer_groups_assignment_bytes_are_decoded_and_other_protocols_are_not():
    member = NS(member_id="m1", group_instance_id=None, client_id="c", client_host="/10.0.0.1",
                member_assignment=encoded_assignment(orders=[2, 0], audit=[1]))
    joining = NS(member_id="m2", group_instance_id="static-1", client_id="c", client_host="/10.0.0.2",
                 member_assignment=b"")
    group = classic_group_from(NS(group_id="g", group_state="Stable", protocol_type="consumer",
                                  protocol_data="range", members=[member, joining]))
    assert group == ClassicGroup("g", "Stable", "consumer", "range", group.members)
    assert [(m.member_id, m.instance_id, m.assignment) for m in group.members] == [
        ("m1", None, {"audit": (1,), "orders": (0, 2)}), ("m2", "static-1", {})]
    connect = classic_group_from(NS(group_id="w", group_state="Stable", protocol_type="connect",
                                    protocol_data="sessioned", members=[NS(**{**vars(member), "member_assignment": b"\x01"})]))
    assert connect.members[0].assignment == {} and connect.type == "classic"
    assert consumer_protocol_assignment(None) == {}


def consumer_member(member_id, epoch, current, target, member_type=1, regex=None):
    return NS(member_id=member_id, instance_id=None, rack_id=None, member_epoch=epoch, client_id="rdkafka",
              client_host="/127.0.0.1", subscribed_topic_names=["t"], subscribed_topic_regex=regex,
              assignment=assigned(*current), target_assignment=assigned(*target), member_type=member_type)


def test_a_kip848_group_keeps_its_epochs_and_each_members_current_and_target_assignment():
    group = consumer_group_from(NS(
        group_id="g", group_state="Reconciling", group_epoch=7, assignment_epoch=7, assignor_name="uniform",
        members=[consumer_member("a", 6, [("t", [0, 1, 2])], [("t", [0, 1])]),
                 consumer_member("b", 7, [], [("t", [2])], member_type=0, regex="")]))
    assert isinstance(group, ConsumerGroup) and (group.group_epoch, group.assignment_epoch) == (7, 7)
    a, b = group.members
    assert (a.assignment, a.target_assignment, a.reconciling, a.upgraded) == ({"t": (0, 1, 2)}, {"t": (0, 1)}, True, True)
    assert (b.assignment, b.target_assignment, b.upgraded, b.subscribed_regex) == ({}, {"t": (2,)}, False, None)
    assert [m.member_id for m in group.reconciling_members] == ["a", "b"]
    # ConsumerGroupDescribe v0 has no MemberType
    v0 = consumer_group_from(NS(group_id="g", group_state="Stable", group_epoch=1, assignment_epoch=1, assignor_name="range",
                                members=[NS(**{k: v for k, v in vars(consumer_member("a", 1, [], [])).items()
                                               if k != "member_type"})]))
    assert v0.members[0].upgraded is None


def tasks(**subtopologies):
    return [NS(subtopology_id=s, partitions=list(p)) for s, p in subtopologies.items()]


def test_a_streams_group_has_its_topology_and_each_members_tasks_and_targets():
    topology = NS(epoch=2, subtopologies=[
        NS(subtopology_id="0", source_topics=["app.orders"], repartition_sink_topics=["app-rep"],
           state_changelog_topics=[], repartition_source_topics=[]),
        NS(subtopology_id="1", source_topics=[], repartition_sink_topics=[],
           state_changelog_topics=[NS(name="app-store-changelog", partitions=3)],
           repartition_source_topics=[NS(name="app-rep", partitions=3)])])
    member = NS(member_id="m", member_epoch=5, instance_id=None, rack_id="r1", client_id="app-1", client_host="/h",
                topology_epoch=2, process_id="p-1", user_endpoint=NS(host="h1", port=8080), client_tags=[],
                task_offsets=[], task_end_offsets=[], is_classic=False,
                assignment=NS(active_tasks=tasks(**{"0": [1, 0]}), standby_tasks=tasks(**{"1": [2]}), warmup_tasks=[]),
                target_assignment=NS(active_tasks=tasks(**{"0": [0, 1], "1": [0]}), standby_tasks=[], warmup_tasks=[]))
    group = streams_group_from(NS(group_id="app", group_state="Reconciling", group_epoch=5, assignment_epoch=5,
                                  topology=topology, members=[member]))
    assert isinstance(group, StreamsGroup) and group.topology_epoch == 2
    assert group.input_topics == ("app.orders",)
    assert group.internal_topics == ("app-rep", "app-store-changelog")
    [m] = group.members
    assert (m.active_tasks, m.standby_tasks, m.target_active_tasks, m.user_endpoint, m.process_id) == (
        {"0": (0, 1)}, {"1": (2,)}, {"0": (0, 1), "1": (0,)}, "h1:8080", "p-1")
    assert m.reconciling
    # a group whose members have not sent the topology yet (NotReady, or a fresh group)
    bare = streams_group_from(NS(group_id="app", group_state="NotReady", group_epoch=1, assignment_epoch=0,
                                 topology=None, members=[]))
    assert (bare.topology_epoch, bare.subtopologies, bare.internal_topics) == (None, (), ())


def test_a_not_ready_streams_group_names_the_source_topics_that_do_not_exist():
    subtopology = lambda sid, sources, repartition=(): NS(  # noqa: E731
        subtopology_id=sid, source_topics=list(sources), repartition_sink_topics=[], state_changelog_topics=[],
        repartition_source_topics=[NS(name=t, partitions=3) for t in repartition])
    group = streams_group_from(NS(group_id="app", group_state="NotReady", group_epoch=2, assignment_epoch=0,
                                  topology=NS(epoch=0, subtopologies=[subtopology("0", ["in", "side"]),
                                                                      subtopology("1", ["mid"], ["app-rep"])]),
                                  members=[]))
    assert group.source_topics == ("in", "mid", "side") and group.missing_topics == ()
    missing = missing_topics_from([NS(name="in", error_code=0), NS(name="mid", error_code=3),
                                   NS(name="side", error_code=3), NS(name="x", error_code=29)])
    assert missing == {"mid", "side"}
    assert with_missing_topics(group, missing).missing_topics == ("mid", "side")


def test_a_share_group_has_its_members_and_assignments():
    group = share_group_from(NS(group_id="s", group_state="Stable", group_epoch=3, assignment_epoch=3,
                                assignor_name="simple",
                                members=[NS(member_id="m", rack_id=None, member_epoch=3, client_id="c",
                                            client_host="/h", subscribed_topic_names=["t"],
                                            assignment=assigned(("t", [1, 0])))]))
    assert isinstance(group, ShareGroup) and group.members[0].assignment == {"t": (0, 1)}


def test_share_offsets_read_minus_one_as_unknown_and_keep_a_partitions_error():
    partition = lambda index, start, lag, epoch=0, error=0, message=None: NS(  # noqa: E731
        partition_index=index, start_offset=start, leader_epoch=epoch, lag=lag, error_code=error, error_message=message)
    rows = share_offsets_from(NS(group_id="s", error_code=0, topics=[
        NS(topic_name="t", topic_id=None, partitions=[partition(1, 40, 2), partition(0, -1, -1, epoch=-1)]),
        NS(topic_name="a", topic_id=None, partitions=[partition(0, 0, 0, error=3, message="gone")])]))
    assert [(r.topic, r.partition, r.start_offset, r.lag, r.leader_epoch, r.error) for r in rows] == [
        ("a", 0, 0, 0, 0, "UNKNOWN_TOPIC_OR_PARTITION: gone"),
        ("t", 0, None, None, None, None), ("t", 1, 40, 2, 0, None)]
    # DescribeShareGroupOffsets v0 has no lag
    [v0] = share_offsets_from(NS(group_id="s", topics=[NS(topic_name="t", partitions=[
        NS(partition_index=0, start_offset=5, leader_epoch=1, error_code=0, error_message=None)])]))
    assert (v0.start_offset, v0.lag) == (5, None)


def test_answers_name_kafkas_error_first_and_say_which_coordinators_moved():
    call = DESCRIBE_CALLS["streams"]
    read, failed, moved = answers_from(call, [
        NS(group_id="moved", error_code=16, error_message=None),
        NS(group_id="loading", error_code=14, error_message="The coordinator is loading."),
        NS(group_id="wrong-type", error_code=69, error_message="Group wrong-type is not a streams group."),
        NS(group_id="garbled", error_code=0, error_message=None),  # no fields: cannot be parsed
    ])
    assert read == {} and moved == {"moved", "loading"}
    assert failed["moved"] == GroupReadError("moved", "NOT_COORDINATOR (StreamsGroupDescribe)")
    assert failed["loading"].reason == "COORDINATOR_LOAD_IN_PROGRESS: The coordinator is loading. (StreamsGroupDescribe)"
    assert failed["wrong-type"].reason == ("GROUP_ID_NOT_FOUND: Group wrong-type is not a streams group. "
                                           "(StreamsGroupDescribe)")
    assert failed["garbled"].reason.startswith("cannot read the StreamsGroupDescribe answer: AttributeError")


def test_a_listing_below_v5_is_classic_as_kafka_groups_shows_it():
    groups = [NS(group_id="a", group_state="Stable", protocol_type="consumer", group_type="consumer"),
              NS(group_id="b", group_state="Empty", protocol_type="connect", group_type="")]
    assert typed_listings_from(groups, typed=True) == {
        "a": GroupListing("a", "consumer", "consumer", "Stable"), "b": GroupListing("b", "classic", "connect", "Empty")}
    assert {g.type for g in typed_listings_from(groups, typed=False).values()} == {"classic"}


def test_unsupported_types_name_the_call_the_brokers_do_not_speak():
    spoken = {"DescribeGroups": 5, "ConsumerGroupDescribe": 1, "StreamsGroupDescribe": -1, "ShareGroupDescribe": 0}
    found = unsupported_types(lambda call: spoken[call.name], typed_listing=True)
    assert found == {
        "streams": TypeUnsupported("streams", "the brokers do not speak StreamsGroupDescribe: Streams groups do not "
                                              "exist on this cluster"),
        "share": TypeUnsupported("share", "the brokers do not speak ShareGroupDescribe: share groups do not exist "
                                          "on this cluster")}
    assert set(unsupported_types(lambda call: 5, typed_listing=False)) == {"consumer", "streams", "share"}
    assert unsupported_types(lambda call: 5, typed_listing=True) == {}


class FakeBrokers:
    """A connection manager answering from tables: ``versions`` (API name -> version, absent: the
    brokers do not speak it), ListGroups per broker, the coordinator of each group (looked up by
    FindCoordinator) and, per (API, node), a list of answers consumed in order."""

    def __init__(self, versions, listed, coordinators, answers):
        self.versions, self.listed, self.coordinators, self.answers = versions, listed, coordinators, answers
        self.sent: list[tuple[str, int | None, list[str]]] = []
        self.cluster = self
        self.broker_version_data = self

    def api_version(self, request):
        import kafka.errors as errors

        name = request.__name__.removesuffix("Request")
        if name not in self.versions:
            raise errors.IncompatibleBrokerVersion(f"Kafka broker does not support the '{name}' Kafka protocol.")
        return self.versions[name]

    def brokers(self):
        return [NS(node_id=node) for node in self.listed]

    async def refresh_metadata(self):
        return None

    def add_coordinator(self, entry, _type, group, synthesize_node_id=False):
        return entry.node_id

    def send(self, request, node_id, request_timeout_ms):
        name = type(request).__name__.removesuffix("Request")
        groups = list(getattr(request, "group_ids", None) or getattr(request, "groups", None)
                      or getattr(request, "coordinator_keys", None) or [])
        groups = [getattr(g, "group_id", g) for g in groups]
        self.sent.append((name, node_id, groups))

        async def respond():
            if name == "ListGroups":
                return NS(error_code=0, groups=[NS(group_id=g, group_state=s, protocol_type=p, group_type=t)
                                                for g, t, p, s in self.listed[node_id]])
            if name == "FindCoordinator":
                return NS(coordinators=[NS(key=g, node_id=self.coordinators[g].pop(0), error_code=0,
                                           error_message=None) for g in groups])
            return self.answers[(name, node_id)].pop(0)
        return respond()

    def run(self, function, *args):
        return asyncio.run(function(*args))


def fake_reader(brokers: FakeBrokers) -> GroupReader:
    # on purpose: no cluster config, the fake brokers are the connection manager
    client = BatchedClient(object(), lambda *_a, **_k: NS(_manager=brokers))  # type: ignore[arg-type]
    client.manager = lambda timeout, needs: brokers  # type: ignore[method-assign]
    return GroupReader(client)


def test_an_old_broker_lists_classic_groups_only_and_says_why_the_other_types_are_missing():
    brokers = FakeBrokers(versions={"ListGroups": 4, "DescribeGroups": 5, "FindCoordinator": 4},
                          listed={1: [("app", "", "consumer", "Stable")]}, coordinators={"app": [1]},
                          answers={("DescribeGroups", 1): [NS(groups=[NS(
                              group_id="app", error_code=0, group_state="Stable", protocol_type="consumer",
                              protocol_data="range", members=[])])]})
    reader = fake_reader(brokers)
    assert reader.list_groups(5.0) == [GroupListing("app", "classic", "consumer", "Stable")]
    assert reader.unsupported["streams"].reason == ("the brokers do not speak StreamsGroupDescribe: Streams groups "
                                                    "do not exist on this cluster")
    assert set(reader.unsupported) == {"consumer", "streams", "share"}
    described = reader.describe([GroupListing("app", "classic", "consumer", "Stable"),
                                 GroupListing("ghost", "streams", "streams", "Stable")], 5.0)
    assert isinstance(described["app"], ClassicGroup)
    assert described["ghost"] == GroupReadError("ghost", reader.unsupported["streams"].reason)
    assert [name for name, _, _ in brokers.sent] == ["ListGroups", "FindCoordinator", "DescribeGroups"]
    assert reader.share_offsets(["ghost"], 5.0)["ghost"].reason == (
        "the brokers do not speak DescribeShareGroupOffsets: share groups do not exist on this cluster")


def test_a_listing_of_some_types_asks_the_brokers_for_those_and_keeps_a_dead_brokers_groups_of_those_types():
    brokers = FakeBrokers(versions={"ListGroups": 5, "DescribeGroups": 5, "FindCoordinator": 4}, coordinators={},
                          answers={}, listed={1: [("c1", "classic", "consumer", "Stable"), ("s1", "share", "share", "Empty")],
                                              2: [("s2", "share", "share", "Stable")]})
    requests = []
    send = brokers.send
    brokers.send = lambda request, node_id, request_timeout_ms: requests.append(request) or send(request, node_id,
                                                                                                  request_timeout_ms)
    reader = fake_reader(brokers)
    assert sorted(g.group_id for g in reader.list_groups(5.0)) == ["c1", "s1", "s2"]
    assert {tuple(r.types_filter or ()) for r in requests} == {()}
    requests.clear()
    listed = reader.list_groups(5.0, ["share"])
    assert sorted(g.group_id for g in listed) == ["s1", "s2"]
    assert [list(r.types_filter) for r in requests] == [["share"], ["share"]]  # one request to each broker
    brokers.listed[1] = None  # broker 1 died: its groups are kept until their coordinators move
    original = brokers.send
    brokers.send = lambda request, node_id, request_timeout_ms: (
        ConnectionRefusedError("refused") if brokers.listed[node_id] is None else original(request, node_id,
                                                                                              request_timeout_ms))
    assert sorted(g.group_id for g in reader.list_groups(5.0, ["share"])) == ["s1", "s2"]
    assert sorted(g.group_id for g in reader.list_groups(5.0)) == ["c1", "s1", "s2"]
    assert list(reader.listing.unanswered) == [1]


def killed(brokers: FakeBrokers, node: int) -> None:
    """Broker ``node`` refuses connections (killed), still in the broker list until it is fenced."""
    brokers.listed[node] = None
    original = brokers.send
    brokers.send = lambda request, node_id, request_timeout_ms: (  # type: ignore[method-assign]  # the fake's, wrapped
        ConnectionRefusedError("refused") if brokers.listed.get(node_id, ()) is None else original(
            request, node_id, request_timeout_ms))


def test_a_killed_broker_keeps_its_groups_after_it_is_fenced_until_another_broker_lists_them():
    """A killed broker is refused at once and leaves the broker list when the controller fences it;
    then every broker asked answers and none lists its groups until their new coordinator has loaded
    them, which took longer than three listings on a loaded machine (CI: the lag collector's section
    came out empty). Its groups are kept until another broker lists them."""
    brokers = FakeBrokers(versions={"ListGroups": 5, "FindCoordinator": 4}, coordinators={}, answers={},
                          listed={1: [("g1", "classic", "consumer", "Empty")], 2: [("g2", "consumer", "consumer",
                                                                                   "Stable")]})
    reader = fake_reader(brokers)
    assert sorted(g.group_id for g in reader.list_groups(5.0)) == ["g1", "g2"]
    killed(brokers, 1)
    assert sorted(g.group_id for g in reader.list_groups(5.0)) == ["g1", "g2"]
    assert list(reader.listing.unanswered) == [1]
    del brokers.listed[1]  # fenced: no longer in the cluster's broker list
    for _ in range(10):  # the new coordinator is still loading g1
        assert sorted(g.group_id for g in reader.list_groups(5.0)) == ["g1", "g2"]
        assert reader.listing.unanswered == {1: "no longer in the cluster's broker list"}
    brokers.listed[2].append(("g1", "classic", "consumer", "Empty"))  # loaded by broker 2
    assert sorted(g.group_id for g in reader.list_groups(5.0)) == ["g1", "g2"]
    assert reader.listing.unanswered == {}  # every group of broker 1 is listed elsewhere: it is gone for good
    brokers.listed[2].pop()  # g1 deleted: nothing keeps it now
    assert sorted(g.group_id for g in reader.list_groups(5.0)) == ["g2"]


def test_a_broker_gone_from_the_broker_list_keeps_its_groups_for_a_minute_at_most():
    from kpulse.kafka.group_listing import MISSING_BROKER_SECONDS

    brokers = FakeBrokers(versions={"ListGroups": 5, "FindCoordinator": 4}, coordinators={}, answers={},
                          listed={1: [("g1", "classic", "consumer", "Stable")], 2: [("g2", "consumer", "consumer",
                                                                                    "Stable")]})
    reader = fake_reader(brokers)
    now = [1000.0]
    reader.listing.client.clock = lambda: now[0]
    assert sorted(g.group_id for g in reader.list_groups(5.0)) == ["g1", "g2"]
    del brokers.listed[1]  # broker 1 is no longer in the cluster's broker list, and g1 was deleted meanwhile
    assert sorted(g.group_id for g in reader.list_groups(5.0)) == ["g1", "g2"]  # noticed gone: its minute starts
    now[0] += MISSING_BROKER_SECONDS - 1
    assert sorted(g.group_id for g in reader.list_groups(5.0)) == ["g1", "g2"]
    assert reader.listing.unanswered == {1: "no longer in the cluster's broker list"}
    now[0] += 1
    assert sorted(g.group_id for g in reader.list_groups(5.0)) == ["g2"]  # gone for good: g1 no longer kept
    assert reader.listing.unanswered == {}
    brokers.listed[1] = [("g1", "classic", "consumer", "Stable")]  # back
    assert sorted(g.group_id for g in reader.list_groups(5.0)) == ["g1", "g2"]


def test_a_coordinator_that_moved_is_looked_up_again_and_asked_once_more_within_the_call():
    stable = NS(group_id="s", error_code=0, group_state="Stable", group_epoch=1, assignment_epoch=1,
                assignor_name="simple", members=[])
    brokers = FakeBrokers(
        versions={"ListGroups": 5, "DescribeGroups": 5, "FindCoordinator": 4, "ConsumerGroupDescribe": 1,
                  "StreamsGroupDescribe": 0, "ShareGroupDescribe": 1, "DescribeShareGroupOffsets": 1},
        listed={1: [], 2: []}, coordinators={"s": [1, 2], "t": [1, 1]},
        answers={("ShareGroupDescribe", 1): [NS(groups=[NS(group_id="s", error_code=16, error_message=None),
                                                        NS(group_id="t", error_code=14, error_message=None)]),
                                             NS(groups=[NS(group_id="t", error_code=14, error_message=None)])],
                 ("ShareGroupDescribe", 2): [NS(groups=[stable])]})
    reader = fake_reader(brokers)
    described = reader.describe([GroupListing("s", "share", "share", "Stable"),
                                 GroupListing("t", "share", "share", "Stable")], 5.0)
    assert isinstance(described["s"], ShareGroup) and described["s"].state == "Stable"
    assert described["t"] == GroupReadError("t", "COORDINATOR_LOAD_IN_PROGRESS (ShareGroupDescribe)")  # asked twice
    assert brokers.sent == [("FindCoordinator", None, ["s", "t"]), ("ShareGroupDescribe", 1, ["s", "t"]),
                            ("FindCoordinator", None, ["s", "t"]), ("ShareGroupDescribe", 2, ["s"]),
                            ("ShareGroupDescribe", 1, ["t"])]
    assert reader._coordinators == {"s": 2}  # t's coordinator is looked up again next time


def test_a_cluster_that_cannot_be_reached_gives_every_group_the_reason():
    def refuse(cluster, **settings):
        raise RuntimeError("NoBrokersAvailable")

    reader = GroupReader(BatchedClient(object(), refuse, fallback_note=None))
    assert reader.list_groups(1.0) is None
    assert reader.client.unavailable_reason == "the kafka-python client could not be built: RuntimeError: NoBrokersAvailable"
    assert reader.describe([GroupListing("g", "classic", "consumer", "Stable")], 1.0) == {
        "g": GroupReadError("g", "the kafka-python client could not be built: RuntimeError: NoBrokersAvailable")}
    assert reader.share_offsets(["s"], 1.0)["s"].reason.startswith("the kafka-python client could not be built")
    with pytest.raises(ValueError, match="unknown group types"):
        reader.list_groups(1.0, ["queue"])


# -- on the real cluster: one group of each type ------------------------------------------------------

TOPIC = "gd.in"
COUNTS = {0: 30, 1: 20, 2: 10}
GROUPS = {"gd-classic": "classic", "gd-848": "consumer", "gd-streams": "streams", "gd-share": "share"}


@pytest.fixture(scope="module")
def cluster_config(bootstrap):
    from kpulse.config import parse_config

    return parse_config({"clusters": [{"name": "test", "bootstrap_servers": bootstrap}]}, source="test",
                        base_dir=Path(".")).clusters[0]


@pytest.fixture(scope="module")
def reader(cluster_config):
    client = BatchedClient(cluster_config, client_id="kpulse-test-group-reader")
    yield GroupReader(client)
    client.close()


@pytest.fixture(scope="module")
def four_groups(bootstrap, reader, tmp_path_factory):
    """A classic consumer group, a KIP-848 group, a Streams group and a share group, each with one
    live member, until the module ends."""
    fill_topic(bootstrap, TOPIC, COUNTS)
    with contextlib.ExitStack() as running:
        running.enter_context(classic_consumer(bootstrap, "gd-classic", [TOPIC]))
        running.enter_context(kip848_consumer(bootstrap, "gd-848", [TOPIC]))
        running.enter_context(start_share_consumer(bootstrap, TOPIC, "gd-share"))
        running.enter_context(start_streams_app(bootstrap, "gd-streams", "gd.", tmp_path_factory.mktemp("streams")))
        wait_for(lambda: all_stable(reader), 180, what="the four groups Stable with one member each")
        yield GROUPS
        running.close()


def all_stable(reader) -> bool:
    listed = {g.group_id: g for g in reader.list_groups(10) or () if g.group_id in GROUPS}
    if len(listed) < len(GROUPS) or any(g.state != "Stable" for g in listed.values()):
        return False
    described = reader.describe(listed.values(), 10)
    return all(not isinstance(d, GroupReadError) and len(d.members) == 1 for d in described.values())


def agree(ours, theirs, attempts: int = 5):
    """``ours()`` and ``theirs()`` read until they agree (a live group may move between the two
    readings); the last pair when they never do."""
    for _ in range(attempts):
        mine, official = ours(), theirs()
        if mine == official:
            break
        time.sleep(1)
    return mine, official


@pytest.mark.cluster
def test_list_groups_equals_kafka_groups_list_with_type_and_protocol(four_groups, reader, bootstrap):
    def ours(types=None):
        return {g.group_id: (g.type, g.protocol_type) for g in reader.list_groups(10, types) if g.group_id in GROUPS}

    def theirs(*flags):
        return {row["GROUP"]: (row["TYPE"].lower(), row["PROTOCOL"])
                for row in official_rows("kafka-groups", "--bootstrap-server", bootstrap, "--list", *flags)
                if row["GROUP"] in GROUPS}

    mine, official = agree(ours, theirs)
    assert mine == official == {"gd-classic": ("classic", "consumer"), "gd-848": ("consumer", "consumer"),
                                "gd-streams": ("streams", "streams"), "gd-share": ("share", "share")}
    assert ours(["share", "streams"]) == theirs("--share") | theirs("--streams")
    assert reader.unsupported == {}  # Kafka 4.3.1 describes every type


def describe_one(reader, group_id):
    """The group's description, or its GroupReadError; None while it is not listed."""
    listed = [g for g in reader.list_groups(10) or () if g.group_id == group_id]
    return reader.describe(listed, 10)[group_id] if listed else None


@pytest.mark.cluster
@pytest.mark.parametrize("group_id, tool", [("gd-classic", "kafka-consumer-groups"), ("gd-848", "kafka-consumer-groups"),
                                            ("gd-streams", "kafka-streams-groups"), ("gd-share", "kafka-share-groups")])
def test_state_and_member_count_equal_the_official_tools(four_groups, reader, bootstrap, group_id, tool):
    def ours():
        described = describe_one(reader, group_id)
        assert described.type == GROUPS[group_id], described
        return described.state, len(described.members)

    def theirs():
        [row] = official_rows(tool, "--bootstrap-server", bootstrap, "--describe", "--group", group_id, "--state")
        return row["STATE"], int(row["#MEMBERS"])

    mine, official = agree(ours, theirs)
    assert mine == official == ("Stable", 1)


def assignment_text(assignment) -> str:
    """As ``kafka-consumer-groups --members --verbose`` prints an assignment: ``t:0,1,2`` ('-': none)."""
    return ",".join(f"{topic}:{','.join(map(str, parts))}" for topic, parts in assignment.items()) or "-"


@pytest.mark.cluster
def test_a_kip848_groups_epochs_and_assignments_equal_kafka_consumer_groups_verbose(four_groups, reader, bootstrap):
    def ours():
        group = describe_one(reader, "gd-848")
        return ((group.state, group.group_epoch, group.assignment_epoch, len(group.members)),
                sorted((m.member_id, m.member_epoch, assignment_text(m.assignment), group.assignment_epoch,
                        assignment_text(m.target_assignment)) for m in group.members))

    def theirs():
        [state] = official_rows("kafka-consumer-groups", "--bootstrap-server", bootstrap, "--describe", "--group",
                                "gd-848", "--state", "--verbose")
        members = official_rows("kafka-consumer-groups", "--bootstrap-server", bootstrap, "--describe", "--group",
                                "gd-848", "--members", "--verbose")
        return ((state["STATE"], int(state["GROUP-EPOCH"]), int(state["TARGET-ASSIGNMENT-EPOCH"]), int(state["#MEMBERS"])),
                sorted((m["CONSUMER-ID"], int(m["CURRENT-EPOCH"]), m["CURRENT-ASSIGNMENT"], int(m["TARGET-EPOCH"]),
                        m["TARGET-ASSIGNMENT"]) for m in members))

    mine, official = agree(ours, theirs)
    assert mine == official
    assert mine[1][0][2] == f"{TOPIC}:0,1,2"


@pytest.mark.cluster
def test_streams_and_share_members_equal_the_official_tools_verbose(four_groups, reader, bootstrap):
    def ours():
        streams, share = describe_one(reader, "gd-streams"), describe_one(reader, "gd-share")
        return ([(streams.assignment_epoch, streams.topology_epoch, m.member_id, m.member_epoch, m.process_id,
                  m.client_id) for m in streams.members],
                [(m.member_id, m.client_id, m.member_epoch, assignment_text(m.assignment)) for m in share.members])

    def theirs():
        streams = official_rows("kafka-streams-groups", "--bootstrap-server", bootstrap, "--describe", "--group",
                                "gd-streams", "--members", "--verbose")
        share = official_rows("kafka-share-groups", "--bootstrap-server", bootstrap, "--describe", "--group",
                              "gd-share", "--members", "--verbose")
        return ([(int(m["TARGET-ASSIGNMENT-EPOCH"]), int(m["TOPOLOGY-EPOCH"]), m["MEMBER"], int(m["MEMBER-EPOCH"]),
                  m["PROCESS"], m["CLIENT-ID"]) for m in streams],
                [(m["CONSUMER-ID"], m["CLIENT-ID"], int(m["MEMBER-EPOCH"]), m["ASSIGNMENT"]) for m in share])

    mine, official = agree(ours, theirs)
    assert mine == official
    streams = describe_one(reader, "gd-streams")
    assert streams.input_topics == ("gd.orders", "gd.orders-by-region")
    assert streams.internal_topics == ("gd-streams-by-customer-repartition", "gd-streams-order-counts-changelog")
    [member] = streams.members
    assert member.active_tasks == {"0": (0, 1, 2), "1": (0, 1, 2), "2": (0, 1, 2)}


@pytest.mark.cluster
def test_share_start_offsets_and_lag_equal_kafka_share_groups_describe(four_groups, reader, bootstrap):
    """A share group that read everything, stopped, and then more records were written: the
    broker's lag counts them; the live group acknowledges as it reads."""
    with start_share_consumer(bootstrap, TOPIC, "gd-share-idle"):
        wait_for(lambda: read_everything(reader, "gd-share-idle"), 120, what="gd-share-idle read everything")
    produce(bootstrap, TOPIC, {0: 4, 2: 7}, first_ms=int(time.time() * 1000), step_ms=1)

    def ours():
        answer = reader.share_offsets(["gd-share", "gd-share-idle"], 10)
        return {(group, r.topic, r.partition): (r.start_offset, r.lag) for group, rows in answer.items()
                for r in rows}

    def theirs():
        rows = official_rows("kafka-share-groups", "--bootstrap-server", bootstrap, "--describe", "--group", "gd-share",
                             "--group", "gd-share-idle")
        number = lambda cell: None if cell == "-" else int(cell)  # noqa: E731
        return {(r["GROUP"], r["TOPIC"], int(r["PARTITION"])): (number(r["START-OFFSET"]), number(r["LAG"]))
                for r in rows}

    mine, official = agree(ours, theirs)
    assert mine == official
    idle_lag = {partition: lag for (group, _, partition), (_, lag) in mine.items() if group == "gd-share-idle"}
    assert idle_lag == {0: 4, 1: 0, 2: 7}


def read_everything(reader, group) -> bool:
    """Every partition of the topic has a start offset and no lag left."""
    rows = reader.share_offsets([group], 10)[group]
    return not isinstance(rows, GroupReadError) and [(r.partition, r.lag) for r in rows] == [(p, 0) for p in COUNTS]


@pytest.mark.cluster
def test_a_kip848_group_caught_reconciling_shows_its_target_assignment(four_groups, reader, bootstrap):
    create_topic(admin_for(bootstrap), "gd.wide", 6)
    with kip848_consumer(bootstrap, "gd-reconcile", ["gd.wide"]):
        wait_for(lambda: isinstance(g := describe_one(reader, "gd-reconcile"), ConsumerGroup) and g.state == "Stable" and len(g.members) == 1 and g.members[0].assignment == {"gd.wide": tuple(range(6))},
                 120, what="one member owning the six partitions")
        [listing] = [g for g in reader.list_groups(10) if g.group_id == "gd-reconcile"]
        with kip848_consumer(bootstrap, "gd-reconcile", ["gd.wide"]):
            caught = wait_for(lambda: caught_reconciling(reader, listing), 60, interval=0.05,
                              what="a member whose assignment is not its target")
    assert caught.state in ("Assigning", "Reconciling")
    assert len(caught.members) == 2
    targets = [set(m.target_assignment.get("gd.wide", ())) for m in caught.members]
    assert targets[0] | targets[1] == set(range(6)) and not targets[0] & targets[1] and all(targets)
    reconciling = [m for m in caught.members if m.reconciling]
    assert reconciling and all(m.assignment != m.target_assignment for m in reconciling)
    assert {m.member_id for m in reconciling} <= {m.member_id for m in caught.reconciling_members}


def caught_reconciling(reader, listing):
    group = reader.describe([listing], 10)[listing.group_id]
    return group if isinstance(group, ConsumerGroup) and any(m.reconciling for m in group.members) \
        and len(group.members) == 2 else None


@pytest.mark.cluster
def test_a_streams_group_waiting_for_its_source_topics_is_not_ready_and_names_them(reader, bootstrap,
                                                                                    tmp_path):
    """Each instance gives up 10 s after it found its topics missing (and leaves the group): two
    instances started 6 s apart keep the group NotReady longer, while the official tool is asked
    over and over from two threads of its own (it takes seconds to start)."""
    import threading

    official_states: set[str] = set()
    done = threading.Event()

    def ask_the_official_tool():
        while not done.is_set():
            official_states.update(row["STATE"] for row in official_rows(
                "kafka-streams-groups", "--bootstrap-server", bootstrap, "--describe", "--group", "gd-notready",
                "--state", check=False) if row.get("GROUP") == "gd-notready")

    asking = [threading.Thread(target=ask_the_official_tool, daemon=True) for _ in range(2)]
    with contextlib.ExitStack() as running:
        running.callback(lambda: [done.set(), *(thread.join(60) for thread in asking)])
        for thread in asking:
            thread.start()
            time.sleep(2)
        for instance in (1, 2):
            running.enter_context(start_streams_app(bootstrap, "gd-notready", "gd-absent.", tmp_path,
                                                    instance=instance, create_topics=False))
            time.sleep(6)
        caught = wait_for(lambda: getattr(g := describe_one(reader, "gd-notready"), "state", None) == "NotReady" and g,
                          120, interval=0.2, what="gd-notready NotReady")
        wait_for(lambda: "NotReady" in official_states
                 or getattr(describe_one(reader, "gd-notready"), "state", None) not in ("NotReady", None),
                 90, interval=1, what="the official tool's answer")
    assert caught.missing_topics == ("gd-absent.orders", "gd-absent.orders-by-region")
    assert "NotReady" in official_states


@pytest.mark.cluster
def test_a_coordinator_that_moved_on_the_real_cluster_is_found_again(four_groups, reader, bootstrap):
    listed = [g for g in reader.list_groups(10) if g.group_id in GROUPS]
    reader.describe(listed, 10)
    truth = {g: reader._coordinators[g] for g in GROUPS}
    reader._coordinators.update({g: 1 + node % 3 for g, node in truth.items()})  # every coordinator wrong
    described = reader.describe(listed, 10)
    assert {g: d.type for g, d in described.items()} == GROUPS
    assert {g: reader._coordinators[g] for g in GROUPS} == truth


@pytest.mark.cluster
def test_read_group_reads_one_group_and_names_an_unknown_group_or_an_unreachable_cluster(four_groups, cluster_config):
    listing, described = read_group(cluster_config, "gd-streams")
    assert (listing.type, described.type, described.group_id) == ("streams", "streams", "gd-streams")
    with pytest.raises(GroupNotFound) as missing:
        read_group(cluster_config, "gd-no-such-group")
    assert str(missing.value) == "group 'gd-no-such-group' does not exist on cluster 'test'"
    from dataclasses import replace

    nowhere = replace(cluster_config, name="gone", bootstrap_servers=f"127.0.0.1:{free_port()}")
    with pytest.raises(GroupUnreadable) as unreachable:
        read_group(nowhere, "gd-streams", timeout=3)
    text = str(unreachable.value)
    assert text.startswith(f"cannot list the groups of cluster 'gone' ({nowhere.bootstrap_servers}): ")
    assert "\n" not in text
