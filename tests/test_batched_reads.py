"""The lag collector's batched reads: committed offsets of many groups at once
(``kpulse/kafka/committed_offsets.py``) and log ends one ListOffsets per leader
(``kpulse/kafka/log_ends.py``). The answer parsing from tables of cases; then on the real cluster:
the same values as librdkafka's reading, a coordinator or leader that moved, a broker that cannot
be reached, and the fall back to librdkafka when the batched client cannot be built."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace as NS

import pytest
from confluent_kafka.admin import AdminClient

from kpulse.kafka.batched_client import BatchedClient
from kpulse.kafka.committed_offsets import BatchedOffsetFetch, GroupReadError, coordinators_from, offsets_from
from kpulse.kafka.group_listing import GroupListing, listings_from
from kpulse.kafka.log_ends import LeaderLogEnds, ends_from, leaders_from
from kpulse.kafka.group_offsets import _committed_offsets
from kpulse.config import parse_config
from tests.support import admin_for, commit, create_topic, fill_topic, read_log_ends


def partition(index, offset, error=0):
    return NS(partition_index=index, committed_offset=offset, error_code=error)


def group(group_id, error=0, **topics):
    return NS(group_id=group_id, error_code=error,
              topics=[NS(name=name, partitions=parts) for name, parts in topics.items()])


def test_offsets_from_reads_groups_and_names_what_failed():
    read, failed, moved = offsets_from([
        group("ok", orders=[partition(0, 10), partition(1, -1), partition(2, 7, error=3)], audit=[partition(0, 0)]),
        group("empty"),
        group("moved", error=16),
        group("loading", error=14),
        group("refused", error=30),
    ])
    # no commit (-1) and a partition error are left out; offset 0 is a commit
    assert read == {"ok": {("orders", 0): 10, ("audit", 0): 0}, "empty": {}}
    assert moved == {"moved", "loading"}
    assert set(failed) == {"moved", "loading", "refused"}
    assert str(failed["moved"]) == "OffsetFetch: NOT_COORDINATOR"
    assert str(failed["loading"]) == "OffsetFetch: COORDINATOR_LOAD_IN_PROGRESS"
    assert str(failed["refused"]) == "OffsetFetch: GROUP_AUTHORIZATION_FAILED"


def test_coordinators_from_splits_found_and_failed():
    found, failed = coordinators_from([
        NS(key="a", node_id=2, error_code=0, error_message=None),
        NS(key="b", node_id=-1, error_code=15, error_message="The coordinator is not available."),
    ])
    assert list(found) == ["a"] and found["a"].node_id == 2
    assert isinstance(failed["b"], GroupReadError)
    assert str(failed["b"]) == "no coordinator: COORDINATOR_NOT_AVAILABLE (The coordinator is not available.)"


def test_a_client_that_cannot_be_built_falls_back_and_is_not_rebuilt_every_cycle():
    attempts, now = [], [1000.0]

    def refuse(cluster, **settings):
        attempts.append(settings)
        raise RuntimeError("kafka-python is not given OAUTHBEARER credentials\nsecond line")

    client = BatchedClient(object(), refuse, clock=lambda: now[0])
    reader, ends = BatchedOffsetFetch(client), LeaderLogEnds(client)
    assert attempts == []  # constructors connect to nothing
    assert reader.read(["g"], 5.0) is None
    assert client.unavailable_reason == ("the kafka-python client could not be built: "
                                         "RuntimeError: kafka-python is not given OAUTHBEARER credentials")
    now[0] += 60
    assert reader.read(["g"], 5.0) is None and ends.read([("t", 0)], 5.0) is None and len(attempts) == 1
    now[0] += 300
    assert reader.read(["g"], 5.0) is None and len(attempts) == 2


# -- on the real cluster ------------------------------------------------------------------------

GROUPS = [f"cotest-{i}" for i in range(6)]


@pytest.fixture(scope="module")
def cluster_config(local_cluster, tmp_path_factory):
    data = {"clusters": [{"name": "test", "bootstrap_servers": local_cluster.layout.bootstrap_servers}]}
    return parse_config(data, source="test", base_dir=tmp_path_factory.mktemp("cfg")).cluster(None)


@pytest.fixture(scope="module")
def committed_groups(bootstrap):
    admin = admin_for(bootstrap)
    create_topic(admin, "cotest.orders", 3)
    for i, group_id in enumerate(GROUPS):
        commit(admin, group_id, {("cotest.orders", p): i * 10 + p for p in range(i % 3 + 1)})
    return GROUPS


@pytest.fixture
def reader(cluster_config):
    client = BatchedClient(cluster_config)
    yield BatchedOffsetFetch(client)
    client.close()


def coordinator_ids(bootstrap, groups):
    admin = AdminClient({"bootstrap.servers": bootstrap})  # held: its futures die with it
    described = admin.describe_consumer_groups(groups)
    return {g: future.result(15).coordinator.id for g, future in described.items()}


@pytest.mark.cluster
def test_the_same_offsets_as_reading_group_by_group(reader, bootstrap, committed_groups):
    wanted = [*committed_groups, "cotest-never-committed"]
    ours = reader.read(wanted, 15.0)
    theirs = _committed_offsets(AdminClient({"bootstrap.servers": bootstrap}), wanted, 4, 15.0)
    assert reader.client.unavailable_reason is None
    assert ours == theirs
    assert ours["cotest-5"] == {("cotest.orders", 0): 50, ("cotest.orders", 1): 51, ("cotest.orders", 2): 52}
    assert ours["cotest-never-committed"] == {}
    assert {g: reader._coordinators[g] for g in committed_groups} == coordinator_ids(bootstrap, committed_groups)


@pytest.mark.cluster
def test_the_coordinators_answers_are_read_by_the_narrow_decoder(reader, committed_groups, monkeypatch):
    import kpulse.kafka.offset_fetch_decoder as decoder

    decoded = []
    original = decoder.decode_offset_fetch_v8
    monkeypatch.setattr(decoder, "decode_offset_fetch_v8", lambda data: decoded.append(original(data)) or decoded[-1])

    answers = reader.read(committed_groups, 15.0)

    assert decoded and all(isinstance(answer, decoder.OffsetFetchAnswer) for answer in decoded)
    assert {group: offsets for answer in decoded for group, offsets in answer.read.items()} == answers


@pytest.mark.cluster
def test_a_group_whose_coordinator_moved_is_looked_up_again_and_read(reader, bootstrap, committed_groups):
    truth = coordinator_ids(bootstrap, committed_groups)
    wrong = {g: next(b for b in (1, 2, 3) if b != node) for g, node in truth.items()}
    reader._coordinators.update(wrong)  # as if every coordinator had moved since the last call

    answers = reader.read(committed_groups, 15.0)

    assert all(isinstance(answers[g], dict) for g in committed_groups), answers
    assert answers["cotest-2"] == {("cotest.orders", 0): 20, ("cotest.orders", 1): 21, ("cotest.orders", 2): 22}
    assert reader._coordinators == truth


@pytest.mark.cluster
def test_a_coordinator_that_cannot_be_reached_fails_its_groups_only(reader, committed_groups):
    assert all(isinstance(a, dict) for a in reader.read(committed_groups, 15.0).values())
    reader._coordinators["cotest-1"] = 99  # no such broker

    answers = reader.read(committed_groups, 5.0)

    assert isinstance(answers["cotest-1"], GroupReadError)
    assert str(answers["cotest-1"]).startswith("OffsetFetch to broker 99: ")
    assert all(isinstance(answers[g], dict) for g in committed_groups if g != "cotest-1")
    assert "cotest-1" not in reader._coordinators  # looked up again next time
    assert reader.read(["cotest-1"], 15.0) == {"cotest-1": {("cotest.orders", 0): 10, ("cotest.orders", 1): 11}}


# -- log ends, one ListOffsets per leader ---------------------------------------------------------

def metadata_topic(name, error=0, **leaders):
    return NS(name=name, error_code=error,
              partitions=[NS(partition_index=int(p[1:]), leader_id=leader, error_code=5 if leader < 0 else 0)
                          for p, leader in leaders.items()])


def test_leaders_from_names_topics_and_partitions_without_a_leader():
    leaders, topic_errors, partition_errors = leaders_from([
        metadata_topic("orders", p0=1, p1=-1, p2=3),
        metadata_topic("gone", error=3),
        metadata_topic("not-asked", p0=2),
    ], {"orders", "gone"})
    assert leaders == {("orders", 0): 1, ("orders", 2): 3}
    assert topic_errors == {"gone": "Metadata: UNKNOWN_TOPIC_OR_PARTITION"}
    assert partition_errors == {("orders", 1): "no leader: LEADER_NOT_AVAILABLE"}


def test_ends_from_reads_offsets_and_names_moved_leaders():
    ends, errors, moved = ends_from([NS(name="orders", partitions=[
        NS(partition_index=0, offset=42, error_code=0), NS(partition_index=1, offset=-1, error_code=6),
        NS(partition_index=2, offset=-1, error_code=3), NS(partition_index=3, offset=0, error_code=0)])])
    assert ends == {("orders", 0): 42, ("orders", 3): 0}
    assert moved == {("orders", 1)}
    assert errors == {("orders", 1): "ListOffsets: NOT_LEADER_OR_FOLLOWER",
                      ("orders", 2): "ListOffsets: UNKNOWN_TOPIC_OR_PARTITION"}


@pytest.fixture
def log_ends(cluster_config):
    client = BatchedClient(cluster_config)
    yield LeaderLogEnds(client)
    client.close()


@pytest.fixture(scope="module")
def filled_topic(bootstrap):
    fill_topic(bootstrap, "cotest.ends", {0: 5, 1: 0, 2: 9})
    return "cotest.ends"


def partition_leaders(bootstrap, topic):
    metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=15)
    return {(topic, p): meta.leader for p, meta in metadata.topics[topic].partitions.items()}


@pytest.mark.cluster
def test_log_ends_by_leader_equal_librdkafkas_and_unreadable_partitions_say_why(log_ends, bootstrap, filled_topic):
    from kpulse.kafka.group_offsets import ClusterOffsets

    wanted = [("cotest.ends", 0), ("cotest.ends", 1), ("cotest.ends", 2), ("cotest.ends", 7),
              ("cotest.no-such-topic", 0)]
    ours = log_ends.read(wanted, 15.0)
    theirs = ClusterOffsets()
    read_log_ends(AdminClient({"bootstrap.servers": bootstrap}), wanted, 15.0, theirs)
    assert ours.log_end == theirs.log_end == {("cotest.ends", 0): 5, ("cotest.ends", 1): 0, ("cotest.ends", 2): 9}
    assert set(ours.errors) == set(theirs.log_end_errors) == {("cotest.ends", 7), ("cotest.no-such-topic", 0)}
    assert ours.errors[("cotest.ends", 7)] == "Metadata: UNKNOWN_TOPIC_OR_PARTITION (the topic has no partition 7)"
    assert ours.errors[("cotest.no-such-topic", 0)] == "Metadata: UNKNOWN_TOPIC_OR_PARTITION"
    assert log_ends.client.fallbacks == 0


@pytest.mark.cluster
def test_partition_offsets_through_librdkafka_equal_those_by_leader_when_kafka_python_cannot_be_used(
        cluster_config, bootstrap, filled_topic):
    """The metadata collector's log starts and ends (kafka_exporter's topic series): by leader through
    kafka-python, and the same through librdkafka's ListOffsets when the client cannot be built."""
    from kpulse.kafka.partition_offsets import PartitionOffsets

    def unbuildable(*_args, **_kwargs):
        raise RuntimeError("NoBrokersAvailable")

    wanted = [("cotest.ends", 0), ("cotest.ends", 1), ("cotest.ends", 2)]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    by_leader, fallback = BatchedClient(cluster_config), BatchedClient(cluster_config, client_factory=unbuildable)
    try:
        ours = PartitionOffsets(by_leader).read(admin, wanted, 15.0)
        theirs = PartitionOffsets(fallback).read(admin, wanted, 15.0)
    finally:
        by_leader.close()
    assert ours.log_end == theirs.log_end == {("cotest.ends", 0): 5, ("cotest.ends", 1): 0, ("cotest.ends", 2): 9}
    assert ours.log_start == theirs.log_start == {key: 0 for key in wanted}
    assert ours.log_end_errors == theirs.log_end_errors == ours.log_start_errors == theirs.log_start_errors == {}
    assert (by_leader.fallbacks, fallback.fallbacks) == (0, 1)  # the log ends fell back: the starts are not tried


@pytest.mark.cluster
def test_a_partition_whose_leader_moved_is_looked_up_again_and_read(log_ends, bootstrap, filled_topic):
    wanted = [("cotest.ends", p) for p in range(3)]
    truth = partition_leaders(bootstrap, "cotest.ends")
    log_ends._leaders.update({key: next(b for b in (1, 2, 3) if b != leader) for key, leader in truth.items()})

    ours = log_ends.read(wanted, 15.0)

    assert ours.log_end == {("cotest.ends", 0): 5, ("cotest.ends", 1): 0, ("cotest.ends", 2): 9}
    assert ours.errors == {}
    assert {key: log_ends._leaders[key] for key in wanted} == truth


@pytest.mark.cluster
def test_a_leader_the_client_never_heard_of_is_looked_up_again(log_ends, bootstrap, filled_topic):
    wanted = [("cotest.ends", p) for p in range(3)]
    log_ends._leaders.update({key: 99 for key in wanted})  # a broker removed since the last look-up

    ours = log_ends.read(wanted, 15.0)

    assert ours.log_end == {("cotest.ends", 0): 5, ("cotest.ends", 1): 0, ("cotest.ends", 2): 9}
    assert {key: log_ends._leaders[key] for key in wanted} == partition_leaders(bootstrap, "cotest.ends")


# -- the lag collector across a broker's death and return --------------------------------------

@pytest.mark.cluster
def test_lag_through_a_killed_and_restarted_broker_agrees_with_kafka_consumer_groups(cluster_config, bootstrap):
    """Coordinators and leaders move while broker 1 is down and again when it is back: the batched
    reads follow them. Down: the partition that lives only on broker 1 has no log end, with the reason;
    every other lag equals the official tool's. Back: all of them do again."""
    import time

    from confluent_kafka import Producer
    from confluent_kafka.admin import NewTopic

    from collectors.lag.consumer_lag import ConsumerLagCollector
    from collectors.protocol import CollectContext
    from tests.conftest import kpulse, start_broker_and_restore_leaders
    from tests.support import group_rows

    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [NewTopic("lagkill.rf3", num_partitions=3, replication_factor=3, config={"min.insync.replicas": "1"}),
              NewTopic("lagkill.rf1", num_partitions=1, replica_assignment=[[1]], config={"min.insync.replicas": "1"})]
    for future in admin.create_topics(topics).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(60):
        producer.produce("lagkill.rf3", value=b"x", partition=i % 3)
        producer.produce("lagkill.rf1", value=b"x", partition=0)
    producer.flush(30)
    groups = [f"lagkill-{i}" for i in range(4)]
    for i, group_id in enumerate(groups):
        commit(admin, group_id, {("lagkill.rf3", 0): i, ("lagkill.rf3", 1): 2 * i, ("lagkill.rf3", 2): 3 * i,
                                 ("lagkill.rf1", 0): 4 * i})
    config = parse_config({"clusters": [{"name": "test", "bootstrap_servers": bootstrap,
                                         "consumer_groups": {"include": ["lagkill-.*"]}}]},
                          source="test", base_dir=Path(".")).cluster(None)
    collector = ConsumerLagCollector(config)

    def reading() -> dict[str, dict]:
        section = collector.collect(CollectContext(config, time.time())).sections["consumer_groups"]
        return {g["group_id"]: g for g in section}

    def official(group_id: str) -> dict[tuple[str, int], tuple[int, int, int]]:
        for _attempt in range(30):  # while coordinators move, the tool may print no table yet
            try:
                rows = group_rows(bootstrap, group_id)
                break
            except StopIteration:
                time.sleep(1)
        return {(row["TOPIC"], int(row["PARTITION"])): (int(row["CURRENT-OFFSET"]), int(row["LOG-END-OFFSET"]),
                                                        int(row["LAG"]))
                for row in rows if row["TOPIC"] == "lagkill.rf3"}

    def ours(group: dict, topic: str) -> dict[tuple[str, int], tuple]:
        return {(p["topic"], p["partition"]): (p["committed_offset"], p["log_end_offset"], p["lag"])
                for p in group["partitions"] if p["topic"] == topic}

    def settle(check, what: str, timeout: float = 60.0) -> dict[str, dict]:
        deadline = time.monotonic() + timeout
        while True:
            began = time.monotonic()
            groups_read = reading()  # never a timeout: librdkafka's ListGroups took 15 s with a broker down
            assert time.monotonic() - began < 10, f"a cycle took {time.monotonic() - began:.0f} s"
            if check(groups_read):
                return groups_read
            assert time.monotonic() < deadline, f"not {what} after {timeout:.0f} s: {groups_read}"
            time.sleep(1)

    try:
        before = reading()
        assert all(before[g]["error"] is None for g in groups)
        kpulse("cluster", "kill-broker", "1")

        def down_and_read(groups_read):
            def ends(group_id, topic):
                return [p["log_end_offset"] for p in groups_read[group_id]["partitions"] if p["topic"] == topic]

            return all(g in groups_read and groups_read[g]["error"] is None and ends(g, "lagkill.rf1") == [None]
                       and None not in ends(g, "lagkill.rf3") for g in groups)

        down = settle(down_and_read, "every group read and the broker-1-only partition without a log end")
        for group_id in groups:
            [offline] = [p for p in down[group_id]["partitions"] if p["topic"] == "lagkill.rf1"]
            assert offline["reasons"]["log_end_offset"]  # says why, not a silent zero
            assert ours(down[group_id], "lagkill.rf3") == official(group_id)
    finally:
        start_broker_and_restore_leaders(1, bootstrap)

    def back(groups_read):
        return all(g in groups_read and groups_read[g]["error"] is None
                   and all(p["log_end_offset"] is not None for p in groups_read[g]["partitions"]) for g in groups)

    settle(back, "every log end read again")
    fallbacks = collector.batched_client.fallbacks
    again = reading()
    collector.close()
    assert collector.batched_client.fallbacks == fallbacks  # the batched reads are in use again
    for i, group_id in enumerate(groups):
        assert ours(again[group_id], "lagkill.rf3") == official(group_id)
        assert ours(again[group_id], "lagkill.rf1") == {("lagkill.rf1", 0): (4 * i, 60, 60 - 4 * i)}


# -- group listing ---------------------------------------------------------------------------

def test_listings_from_names_states_as_librdkafka_does():
    listed = listings_from([NS(group_id="a", group_state="Empty", protocol_type="consumer"),
                            NS(group_id="b", group_state="PreparingRebalance", protocol_type="consumer"),
                            NS(group_id="c", group_state="Reconciling", protocol_type="consumer")])
    assert {g: listing.state.name for g, listing in listed.items()} == {
        "a": "EMPTY", "b": "PREPARING_REBALANCING", "c": "UNKNOWN"}


class ListGroupsBrokers:
    """A connection manager whose brokers answer ListGroups from a table (None: unreachable)."""

    def __init__(self):
        self.answers: dict[int, list[str] | None] = {}
        self.loading: dict[int, int] = {}
        """Broker -> how many more ListGroups it answers COORDINATOR_LOAD_IN_PROGRESS (14) to."""
        self.asked: dict[int, int] = {}
        self.cluster = self

    def brokers(self):
        return [NS(node_id=b) for b in self.answers]

    async def refresh_metadata(self):  # the broker list is the table's
        return None

    def send(self, request, node_id, request_timeout_ms):
        groups = self.answers[node_id]
        self.asked[node_id] = self.asked.get(node_id, 0) + 1
        if groups is None:
            raise ConnectionRefusedError(f"broker {node_id} refused the connection")
        loading = self.loading.get(node_id, 0) > 0
        self.loading[node_id] = self.loading.get(node_id, 0) - 1

        async def answer():
            if loading:
                return NS(error_code=14, groups=[])
            return NS(error_code=0, groups=[NS(group_id=g, group_state="Empty", protocol_type="consumer")
                                            for g in groups])
        return answer()

    def run(self, function, *args):
        import asyncio

        return asyncio.run(function(*args))


def test_groups_of_a_broker_that_does_not_answer_are_kept_until_listed_elsewhere():
    from kpulse.kafka.group_listing import MISSING_BROKER_SECONDS

    brokers = ListGroupsBrokers()
    now = [1000.0]
    client = BatchedClient(object(), lambda *_a, **_k: NS(_manager=NS()), clock=lambda: now[0])
    client.manager = lambda timeout, needs: brokers
    listing = GroupListing(client)

    brokers.answers = {1: ["a", "b"], 2: ["c"]}
    assert sorted(g.group_id for g in listing.read(5.0)) == ["a", "b", "c"]
    brokers.answers = {1: None, 2: ["c"]}  # broker 1 died: its groups' coordinators have not moved yet
    assert sorted(g.group_id for g in listing.read(5.0)) == ["a", "b", "c"]
    assert list(listing.unanswered) == [1] and "refused" in listing.unanswered[1]
    brokers.answers = {1: None, 2: ["a", "c"]}  # a moved to broker 2; b was deleted meanwhile
    assert sorted(g.group_id for g in listing.read(5.0)) == ["a", "b", "c"]
    brokers.answers = {2: ["a", "c"]}  # broker 1 gone from the metadata (fenced), every broker answered:
    # b may be deleted or still loading on its new coordinator, which a listing cannot tell apart
    assert sorted(g.group_id for g in listing.read(5.0)) == ["a", "b", "c"]
    assert listing.unanswered == {1: "no longer in the cluster's broker list"}
    now[0] += MISSING_BROKER_SECONDS  # no broker listed b for a minute: it is gone
    assert sorted(g.group_id for g in listing.read(5.0)) == ["a", "c"]
    assert listing.unanswered == {}
    brokers.answers = {1: None, 2: None}
    assert listing.read(5.0) is None  # nobody answered: librdkafka lists
    assert client.unavailable_reason.startswith("no broker answered ListGroups")


def _listing_on_a_clock(brokers: ListGroupsBrokers) -> tuple[GroupListing, list[float]]:
    now = [1000.0]
    # on purpose: no cluster config, the fake brokers are the connection manager
    client = BatchedClient(object(), lambda *_a, **_k: NS(_manager=NS()), clock=lambda: now[0])  # type: ignore[arg-type]
    client.manager = lambda timeout, needs: brokers  # type: ignore[method-assign]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    return GroupListing(client, sleep=sleep), now


def test_a_broker_loading_its_coordinators_is_asked_again_as_the_java_admin_client_does():
    """After a broker dies, the others answer ListGroups with COORDINATOR_LOAD_IN_PROGRESS while they
    load its group coordinators (seconds): that broker is asked again after a backoff, not taken as
    unable to answer (which sent the listing to librdkafka, whose call then ran into its 15 s
    timeout and failed the lag collector's cycle in CI)."""
    brokers = ListGroupsBrokers()
    listing, now = _listing_on_a_clock(brokers)
    brokers.answers = {1: ["a", "b"], 2: ["c"], 3: ["d"]}
    assert sorted(g.group_id for g in listing.read(15.0)) == ["a", "b", "c", "d"]
    brokers.answers, brokers.asked = {1: None, 2: ["a", "c"], 3: ["b", "d"]}, {}
    brokers.loading = {2: 2, 3: 1}
    began = now[0]
    assert sorted(g.group_id for g in listing.read(15.0)) == ["a", "b", "c", "d"]
    assert brokers.asked == {1: 1, 2: 3, 3: 2}  # the loading brokers again; the refusing one not
    assert listing.unanswered == {1: listing.unanswered[1]} and "refused" in listing.unanswered[1]
    assert 0 < now[0] - began <= 1.0  # short backoffs
    assert listing.client.fallbacks == 0


def test_brokers_still_loading_after_the_retries_leave_the_last_listing_in_place_not_librdkafka():
    """Every reachable broker still loading when the retries end: the groups of the last listing
    are kept (as for a broker that does not answer), and the listing says which brokers did not
    answer and why; librdkafka would wait for the same brokers."""
    from kpulse.kafka.group_listing import LOADING_RETRY_SECONDS

    brokers = ListGroupsBrokers()
    listing, now = _listing_on_a_clock(brokers)
    brokers.answers = {1: ["a"], 2: ["b"]}
    listing.read(15.0)
    brokers.answers, brokers.loading = {1: None, 2: ["a", "b"]}, {2: 1000}
    began = now[0]
    assert sorted(g.group_id for g in listing.read(15.0)) == ["a", "b"]
    assert now[0] - began <= LOADING_RETRY_SECONDS
    assert listing.unanswered[2] == "ListGroups: COORDINATOR_LOAD_IN_PROGRESS"
    assert listing.client.fallbacks == 0
    fresh, _ = _listing_on_a_clock(brokers)  # nothing listed before: nothing to keep
    assert fresh.read(15.0) is None
    assert fresh.client.unavailable_reason.startswith("no broker answered ListGroups")
