"""Streams groups (KIP-1071) on the Streams apps collector: input partitions and lag as
``kafka-streams-groups`` computes them, NotReady's missing topics, transitions from the group state
and the members' epochs, rebalance episodes; the collector with canned readers; and, on the real
cluster, a StreamsDemo on ``group.protocol=streams`` compared with the official tool."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from contextlib import ExitStack
from types import SimpleNamespace

import pytest

from collectors.protocol import CollectContext
from collectors.streams.streams_apps import StreamsAppsCollector, StreamsGroupReaders
from collectors.streams.streams_group import (ASSIGNED, COMMITTED, MEMBER_LEFT, MEMBER_RECONCILING, MEMBER_STABLE,
                                              group_observations, input_lag, input_partitions, member_instance,
                                              missing_topics)
from collectors.streams.streams_state import (GROUP_INSTANCE, REBALANCING, Episode, Transition, TransitionTracker,
                                              app_rebalance_episodes, rebalance_episodes, rebalance_summary)
from kpulse.config.model import ClusterConfig, StreamsAppConfig
from kpulse.kafka.group_model import (
    GroupListing, GroupReadError, StreamsGroup, StreamsGroupStateName, StreamsMember, Subtopology,
)
from kpulse.kafka.log_ends import LogEnds
from kpulse.lake.schema import SCHEMAS
from tests.support import free_port, official, start_streams_app

APP = "shop"
REPARTITION = f"{APP}-by-customer-repartition"
CHANGELOG = f"{APP}-order-counts-changelog"
TOPOLOGY = (Subtopology("0", ("orders-by-region",), (REPARTITION,), (), ()),
            Subtopology("1", (), (), (CHANGELOG,), (REPARTITION,)))
"""As a 4.3.1 broker describes the demo's topology: a subtopology reading only a repartition topic
has no source topics, the repartition topic is among its repartition source topics."""


def member(member_id: str, active: dict, target: dict | None = None, epoch: int = 5, process: str = "p-1",
           standby: dict | None = None) -> StreamsMember:
    target = active if target is None else target
    return StreamsMember(member_id=member_id, member_epoch=epoch, instance_id=None, rack_id=None,
                         client_id=f"{APP}-{member_id}", client_host="/127.0.0.1", topology_epoch=0, process_id=process,
                         user_endpoint=None, active_tasks=active, standby_tasks=standby or {}, warmup_tasks={},
                         target_active_tasks=target, target_standby_tasks=standby or {}, target_warmup_tasks={},
                         is_classic=False)


def group(state: StreamsGroupStateName = "Stable", members=(), group_epoch: int = 5, assignment_epoch: int = 5,
          subtopologies=TOPOLOGY, group_id: str = APP) -> StreamsGroup:
    return StreamsGroup(group_id=group_id, state=state, group_epoch=group_epoch, assignment_epoch=assignment_epoch,
                        topology_epoch=0 if subtopologies else None, subtopologies=tuple(subtopologies),
                        members=tuple(members))


# --- input partitions, as kafka-streams-groups picks them -------------------------------------------

def test_a_group_with_members_shows_the_partitions_of_their_active_tasks_on_every_topic_read():
    one = member("m1", {"0": (0, 1), "1": (0,)}, standby={"1": (1,)})
    two = member("m2", {"1": (1,)})
    scope, keys = input_partitions(group(members=[one, two]), committed=[("orders-by-region", 3)])
    assert scope == ASSIGNED
    # standby tasks and partitions only committed are not listed; the repartition topic is read by subtopology 1
    assert keys == [("orders-by-region", 0), ("orders-by-region", 1), (REPARTITION, 0), (REPARTITION, 1)]


def test_a_group_without_members_shows_its_committed_partitions_on_source_topics():
    committed = [("orders-by-region", 0), (REPARTITION, 1), ("elsewhere", 0)]
    scope, keys = input_partitions(group("Empty"), committed)
    assert scope == COMMITTED
    # the subtopologies' source topics only: --all-input-topics leaves the repartition topics out
    assert keys == [("orders-by-region", 0)]


@pytest.mark.parametrize("committed, ends, starts, errors, lag, reason", [
    ({("t", 0): 4}, {("t", 0): 10}, {}, {}, 6, None),
    ({("t", 0): 12}, {("t", 0): 10}, {}, {}, 0, None),  # clamped
    ({}, {("t", 0): 10}, {("t", 0): 3}, {}, 7, None),  # no commit: the whole log, as the tool counts it
    ({}, {("t", 0): 10}, {}, {("t", 0): "log start: ListOffsets: NOT_LEADER"}, None,
     "log start: ListOffsets: NOT_LEADER"),
    ({("t", 0): 4}, {}, {}, {("t", 0): "no leader"}, None, "no leader"),
    (None, {("t", 0): 10}, {}, {}, None, "OffsetFetch: GROUP_AUTHORIZATION_FAILED"),
])
def test_input_lag_per_partition(committed, ends, starts, errors, lag, reason):
    read = input_lag([("t", 0)], committed, ends, starts, errors, "OffsetFetch: GROUP_AUTHORIZATION_FAILED")
    [row] = read.partitions
    assert (row["lag"], row["error"]) == (lag, reason)
    assert read.total_lag == lag


# --- NotReady ------------------------------------------------------------------------------------

def test_a_not_ready_group_names_the_topology_topics_the_cluster_lacks():
    not_ready = group("NotReady")
    assert missing_topics(not_ready, ["orders-by-region"]) == [REPARTITION, CHANGELOG]
    assert missing_topics(not_ready, None) is None  # topic names unknown
    assert missing_topics(group("NotReady", subtopologies=()), ["x"]) is None  # the broker gave no topology
    assert missing_topics(group("Stable"), []) is None


# --- transitions from the group state and the members' epochs -------------------------------------

def cycles(tracker: TransitionTracker, groups: list[StreamsGroup | None], start: float = 100.0):
    seen = []
    for n, described in enumerate(groups):
        observations = group_observations(described, tracker.known(APP))
        new = tracker.observe(start + 10 * n, APP, observations)
        for instance, observation in observations.items():
            if observation.state == MEMBER_LEFT:
                tracker.forget(APP, instance)
        seen.append([(t.instance, t.from_state, t.to_state, t.inferred) for t in new])
    return seen


def test_a_member_joining_and_the_group_leaving_stable_until_stable_again():
    one = member("m1", {"0": (0, 1)})
    two_reconciling = member("m2", {}, target={"0": (1,)}, epoch=5)
    one_revoking = member("m1", {"0": (0, 1)}, target={"0": (0,)}, epoch=6)
    seen = cycles(TransitionTracker(), [
        group("Stable", [one]),
        group("Reconciling", [one_revoking, two_reconciling], group_epoch=6, assignment_epoch=6),
        group("Stable", [member("m1", {"0": (0,)}, epoch=6), member("m2", {"0": (1,)}, epoch=6)], 6, 6),
        group("Empty", [], 7, 7),
    ])
    g, m1, m2 = GROUP_INSTANCE, member_instance("m1"), member_instance("m2")
    assert seen == [
        [],
        [(g, "Stable", "Reconciling", False), (m1, MEMBER_STABLE, MEMBER_RECONCILING, False)],
        [(g, "Reconciling", "Stable", False), (m1, MEMBER_RECONCILING, MEMBER_STABLE, False),
         (m2, MEMBER_RECONCILING, MEMBER_STABLE, False)],
        [(g, "Stable", "Empty", False), (m1, MEMBER_STABLE, MEMBER_LEFT, False),
         (m2, MEMBER_STABLE, MEMBER_LEFT, False)],
    ]


def test_a_rebalance_between_two_cycles_is_inferred_from_the_target_assignment_epoch():
    tracker = TransitionTracker()
    seen = cycles(tracker, [group("Stable", [member("m1", {"0": (0,)})]),
                            group("Stable", [member("m1", {"0": (0,)}, epoch=7)], 7, 7),
                            None,  # not read: nothing observed, nothing forgotten
                            group("Stable", [member("m1", {"0": (0,)}, epoch=7)], 7, 7)])
    assert seen == [[], [(GROUP_INSTANCE, "Stable", REBALANCING, True), (GROUP_INSTANCE, REBALANCING, "Stable", True)],
                    [], []]
    assert tracker.known(APP) == [GROUP_INSTANCE, member_instance("m1")]


def test_an_epoch_moving_outside_stable_is_no_rebalance_between_cycles():
    # at start the group waits NotReady for its internal topics while its epochs move
    seen = cycles(TransitionTracker(), [group("NotReady", [], 2, 1), group("NotReady", [], 3, 3),
                                        group("Empty", [], 3, 3), group("Empty", [], 4, 4)])
    assert seen == [[], [], [(GROUP_INSTANCE, "NotReady", "Empty", False)], []]


def test_an_epoch_moving_while_the_group_rebalances_is_not_inferred_twice():
    seen = cycles(TransitionTracker(), [group("Assigning", [], 5, 4), group("Reconciling", [], 6, 6),
                                        group("Stable", [], 6, 6)])
    assert seen == [[], [(GROUP_INSTANCE, "Assigning", "Reconciling", False)],
                    [(GROUP_INSTANCE, "Reconciling", "Stable", False)]]


def g(time_, from_state, to_state, instance=GROUP_INSTANCE) -> Transition:
    return Transition(time_, APP, instance, from_state, to_state)


@pytest.mark.parametrize("transitions, episodes", [
    ([g(10, "Stable", "Assigning"), g(12, "Assigning", "Reconciling"), g(15, "Reconciling", "Stable")],
     [Episode(10, 15, GROUP_INSTANCE)]),
    ([g(10, "Empty", "Assigning"), g(11, "Assigning", "Stable"), g(20, "Stable", "Empty")],
     [Episode(10, 11, GROUP_INSTANCE)]),  # an application leaving is not a rebalance
    ([g(10, "Stable", "NotReady"), g(20, "NotReady", "Stable")], []),  # missing topics, not rebalancing
    ([g(10, "Stable", "Reconciling"), g(12, "Reconciling", "Empty")], [Episode(10, 12, GROUP_INSTANCE)]),
    # a member's Reconciling is its own, the group's episode counts
    ([g(10, "Stable", "Reconciling", member_instance("m1"))], []),
])
def test_group_rebalance_episodes(transitions, episodes):
    assert rebalance_episodes(transitions) == episodes


def test_group_and_client_episodes_overlapping_are_one_application_episode():
    transitions = [Transition(10, APP, "shop-1", "RUNNING", REBALANCING), g(11, "Stable", "Reconciling"),
                   g(14, "Reconciling", "Stable"), Transition(15, APP, "shop-1", REBALANCING, "RUNNING")]
    assert app_rebalance_episodes(transitions) == [Episode(10, 15)]
    assert rebalance_summary(transitions, now=20) == {"count": 1, "total_seconds": 5.0, "ongoing_seconds": None}


# --- the collector with canned readers -------------------------------------------------------------

class FakeGroupReader:
    def __init__(self, groups: dict[str, StreamsGroup | GroupReadError]):
        self.groups = groups
        self.types_asked: list[Sequence[str] | None] = []

    def list_groups(self, timeout, types=None):
        self.types_asked.append(types)
        return [GroupListing(gid, "streams", "streams", getattr(g, "state", "Stable"))
                for gid, g in self.groups.items()]

    def describe(self, listings, timeout):
        return {listing.group_id: self.groups[listing.group_id] for listing in listings}


class FakeOffsets:
    def __init__(self, committed):
        self.committed = committed

    def read(self, group_ids, timeout):
        return {gid: self.committed.get(gid, {}) for gid in group_ids}


class FakeLogOffsets:
    def __init__(self, offsets):
        self.offsets = offsets
        self.asked = []

    def read(self, partitions, timeout):
        self.asked.append(list(partitions))
        return LogEnds(log_end={k: self.offsets[k] for k in partitions if k in self.offsets},
                       errors={k: "no leader" for k in partitions if k not in self.offsets})


class NoClassicGroups:
    """The Admin client of the classic path: no classic group, the demo's topics."""

    def __init__(self, topics=()):
        self.topics = topics

    def list_consumer_groups(self, **_):
        from concurrent.futures import Future

        future = Future()
        future.set_result(SimpleNamespace(valid=[]))
        return future

    def list_topics(self, **_):
        return SimpleNamespace(topics={t: None for t in self.topics})

    def describe_consumer_groups(self, group_ids, **_):
        raise AssertionError(f"a Streams group was described as a consumer group: {group_ids}")


def readers(groups, committed, ends, starts=None) -> StreamsGroupReaders:
    return StreamsGroupReaders(FakeGroupReader(groups), FakeOffsets(committed), FakeLogOffsets(ends),
                               FakeLogOffsets(starts or {}))


def test_streams_groups_are_apps_with_protocol_streams_their_members_tasks_and_input_lag():
    one = member("m1", {"0": (0,), "1": (0,)}, process="p-1")
    two = member("m2", {"0": (1,)}, target={"0": (1,), "1": (1,)}, process="p-2")
    ends = {("orders-by-region", 0): 10, ("orders-by-region", 1): 20, (REPARTITION, 0): 5, (REPARTITION, 1): 8}
    fake = readers({APP: group("Reconciling", [one, two]), "broken": GroupReadError("broken", "GROUP_AUTH_FAILED")},
                   {APP: {("orders-by-region", 0): 7, (REPARTITION, 0): 5, ("orders-by-region", 1): 20}},
                   ends, starts={(REPARTITION, 1): 2})
    collector = StreamsAppsCollector(ClusterConfig(name="prod", bootstrap_servers="node-1:9092"),
                                     admin_factory=lambda _c: NoClassicGroups(), streams_readers=lambda: fake)
    result = collector.collect(CollectContext(cluster=None, now=1000.0))
    broken, app = result.sections["streams_apps"]
    assert fake.groups.types_asked == [["streams"]]
    assert (broken["protocol"], broken["group_state"], broken["group"]) == ("streams", None, None)
    assert broken["group_error"] == "GROUP_AUTH_FAILED"
    assert (app["protocol"], app["state"], app["group_state"], app["members"]) == ("streams", None, "Reconciling", 2)
    detail = app["group"]
    assert (detail["state"], detail["group_epoch"], detail["assignment_epoch"], detail["topology_epoch"]) == (
        "Reconciling", 5, 5, 0)
    assert [s["subtopology_id"] for s in detail["subtopologies"]] == ["0", "1"]
    assert detail["subtopologies"][1]["changelog_topics"] == [CHANGELOG]
    assert [(m["member_id"], m["process_id"], m["reconciling"]) for m in detail["members"]] == [
        ("m1", "p-1", False), ("m2", "p-2", True)]
    assert detail["members"][1]["target_active_tasks"] == {"0": [1], "1": [1]}
    assert detail["input_scope"] == ASSIGNED
    assert [(p["topic"], p["partition"], p["committed_offset"], p["lag"]) for p in detail["input_partitions"]] == [
        ("orders-by-region", 0, 7, 3), ("orders-by-region", 1, 20, 0), (REPARTITION, 0, 5, 0)]
    assert detail["total_lag"] == 3 and detail["lag_error"] is None
    assert fake.log_starts.asked == []  # every assigned partition has a commit


def test_discovered_streams_groups_obey_the_consumer_groups_filter_and_configured_apps_are_always_shown():
    from kpulse.config.model import ConsumerGroupsConfig

    ends = {("orders-by-region", 0): 4}
    fake = readers({gid: group("Stable", [member("m1", {"0": (0,)})], group_id=gid)
                    for gid in (APP, "staging-shop", "staging-kept")}, {}, ends)
    config = ClusterConfig(name="prod", bootstrap_servers="node-1:9092",
                           consumer_groups=ConsumerGroupsConfig(exclude=("staging-.*",)),
                           streams_apps=(StreamsAppConfig("staging-kept", (), 0),))
    collector = StreamsAppsCollector(config, admin_factory=lambda _c: NoClassicGroups(), streams_readers=lambda: fake)
    result = collector.collect(CollectContext(cluster=config, now=1000.0))
    assert [(a["application_id"], a["protocol"]) for a in result.sections["streams_apps"]] == [
        (APP, "streams"), ("staging-kept", "streams")]


def test_a_configured_app_that_is_a_streams_group_gets_its_instances_and_its_group():
    fake = readers({APP: group("Stable", [member("m1", {"0": (0,)})])}, {}, {("orders-by-region", 0): 4},
                   starts={("orders-by-region", 0): 1})
    config = ClusterConfig(name="prod", bootstrap_servers="node-1:9092",
                           streams_apps=(StreamsAppConfig(APP, ("http://streams-1:7071/metrics",), 1),))

    def unreachable(_url, _timeout):
        raise ConnectionRefusedError("connection refused")

    collector = StreamsAppsCollector(config, http_get=unreachable, admin_factory=lambda _c: NoClassicGroups(),
                                     streams_readers=lambda: fake)
    [app] = collector.collect(CollectContext(cluster=None, now=1.0)).sections["streams_apps"]
    assert (app["protocol"], app["state"], app["group_state"], app["expected_instances"]) == (
        "streams", "NOT_RUNNING", "Stable", 1)
    assert [i["state"] for i in app["instances"]] == ["UNREACHABLE"]
    [row] = app["group"]["input_partitions"]
    assert (row["committed_offset"], row["lag"]) == (None, 3)  # no commit: log end - log start


def test_stopping_a_streams_group_app_gives_group_and_member_transitions_as_lake_rows():
    stable = group("Stable", [member("m1", {"0": (0,)})])
    fake = readers({APP: stable}, {APP: {("orders-by-region", 0): 1}}, {("orders-by-region", 0): 1})
    collector = StreamsAppsCollector(ClusterConfig(name="prod", bootstrap_servers="node-1:9092"),
                                     admin_factory=lambda _c: NoClassicGroups(), streams_readers=lambda: fake)
    collector.collect(CollectContext(cluster=None, now=1.0))
    fake.groups.groups[APP] = group("Empty", [], 6, 6)
    second = collector.collect(CollectContext(cluster=None, now=11.0))
    [app] = second.sections["streams_apps"]
    assert [(t["instance"], t["from"], t["to"]) for t in app["transitions"]] == [
        (GROUP_INSTANCE, "Stable", "Empty"), (member_instance("m1"), MEMBER_STABLE, MEMBER_LEFT)]
    assert app["group"]["input_scope"] == COMMITTED
    assert [(p["topic"], p["partition"], p["lag"]) for p in app["group"]["input_partitions"]] == [
        ("orders-by-region", 0, 0)]
    rows = second.rows["streams_transition"]
    assert [(r["instance"], r["from_state"], r["to_state"]) for r in rows] == [
        (GROUP_INSTANCE, "Stable", "Empty"), (member_instance("m1"), MEMBER_STABLE, MEMBER_LEFT)]
    assert all(set(r) == set(SCHEMAS["streams_transition"].names) for r in rows)
    assert collector.tracker.known(APP) == [GROUP_INSTANCE]  # the member that left is forgotten


def test_without_streams_group_readers_classic_apps_are_still_reported():
    def broken():
        raise RuntimeError("no client")

    collector = StreamsAppsCollector(ClusterConfig(name="prod", bootstrap_servers="node-1:9092"),
                                     admin_factory=lambda _c: NoClassicGroups(), streams_readers=broken)
    assert collector.collect(CollectContext(cluster=None, now=1.0)).sections["streams_apps"] == []


# --- the real cluster: a StreamsDemo on group.protocol=streams against kafka-streams-groups ----------

REAL_APP = "kpulse-test-streams-group"
PREFIX = "sg."


def produce_orders(bootstrap: str, counts: dict[int, int], prefix: str = PREFIX) -> None:
    """``counts[p]`` orders ("region,customer,amount", what the demo's topology keeps) into partition p
    of ``<prefix>orders``."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for partition, count in counts.items():
        for j in range(count):
            producer.produce(f"{prefix}orders", value=f"eu,customer-{j % 5},{j}".encode(), partition=partition)
    assert producer.flush(30) == 0


def tool_table(*args: str) -> list[dict[str, str]]:
    """Rows of ``kafka-streams-groups`` output (header GROUP ...) as dicts; the ASSIGNMENTS column,
    whose cells hold spaces, as one string."""
    text = official("kafka-streams-groups", *args)
    assert not text.startswith("EXIT"), text
    lines = [line for line in text.splitlines() if line.strip()]
    header_at = next(i for i, line in enumerate(lines) if line.startswith("GROUP "))
    header = lines[header_at].split()
    rows = []
    for line in lines[header_at + 1:]:
        cells = line.split(None, len(header) - 1) if header[-1] == "ASSIGNMENTS" else line.split()
        if cells and cells[0] == REAL_APP:
            rows.append(dict(zip(header, cells)))
    return rows


def tool_tasks(assignments: str) -> dict[str, dict[str, list[int]]]:
    """``ACTIVE: 0:[0,1]; 1:[2]; TARGET-ACTIVE: ...`` -> {"ACTIVE": {"0": [0, 1], "1": [2]}, ...}."""
    found: dict[str, dict[str, list[int]]] = {}
    kind = None
    for token in re.findall(r"[A-Z-]+:|\w+:\[[\d,]*\]", assignments):
        if token.endswith(":") and not token[:-1].isdigit() and "[" not in token:
            kind = token[:-1]
            found[kind] = {}
        else:
            assert kind is not None, f"partitions before their kind in {assignments!r}"
            subtopology, partitions = token.split(":", 1)
            found[kind][subtopology] = [int(p) for p in partitions.strip("[]").split(",") if p]
    return found


def kpulse_members(app) -> dict[str, tuple]:
    return {m["member_id"]: (m["member_epoch"], m["process_id"], m["client_id"],
                             {k: v for k, v in (("ACTIVE", m["active_tasks"]), ("STANDBY", m["standby_tasks"]),
                                                ("WARMUP", m["warmup_tasks"]),
                                                ("TARGET-ACTIVE", m["target_active_tasks"]),
                                                ("TARGET-STANDBY", m["target_standby_tasks"]),
                                                ("TARGET-WARMUP", m["target_warmup_tasks"])) if v})
            for m in app["group"]["members"]}


def tool_members(bootstrap: str) -> dict[str, tuple]:
    rows = tool_table("--bootstrap-server", bootstrap, "--describe", "--group", REAL_APP, "--members", "--verbose")
    return {r["MEMBER"]: (int(r["MEMBER-EPOCH"]), r["PROCESS"], r["CLIENT-ID"], tool_tasks(r.get("ASSIGNMENTS", "")))
            for r in rows}


def tool_state(bootstrap: str) -> tuple:
    [row] = tool_table("--bootstrap-server", bootstrap, "--describe", "--group", REAL_APP, "--state", "--verbose")
    return row["STATE"], int(row["GROUP-EPOCH"]), int(row["TARGET-ASSIGNMENT-EPOCH"]), int(row["#MEMBERS"])


def tool_offsets(bootstrap: str) -> dict[tuple[str, int], tuple]:
    rows = tool_table("--bootstrap-server", bootstrap, "--describe", "--group", REAL_APP, "--offsets", "--verbose")
    return {(r["TOPIC"], int(r["PARTITION"])): (None if r["CURRENT-OFFSET"] == "-" else int(r["CURRENT-OFFSET"]),
                                                int(r["LOG-END-OFFSET"]), int(r["OFFSET-LAG"])) for r in rows}


def kpulse_offsets(app) -> dict[tuple[str, int], tuple]:
    return {(p["topic"], p["partition"]): (p["committed_offset"], p["log_end_offset"], p["lag"])
            for p in app["group"]["input_partitions"]}


def agreed(read_kpulse, read_tool, attempts: int = 10):
    """kpulse's and the tool's reading, once kpulse read the same before and after the tool (a
    running group's figures move between reads); the last pair when they never settle."""
    for _ in range(attempts):
        before = read_kpulse()
        tool = read_tool()
        if before == tool == read_kpulse():
            return before, tool
        time.sleep(1)
    return read_kpulse(), read_tool()


def exported_state(app) -> tuple:
    """(state, group epoch, assignment epoch, members) as the exporter serves them for ``app``."""
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    from exporters.prometheus import SnapshotExporter

    exporter = SnapshotExporter()
    exporter.update({"cluster_name": "local", "streams_apps": [app]})  # type: ignore[typeddict-item]  # partial on purpose
    registry = CollectorRegistry()
    registry.register(exporter)
    samples = {(s.name, s.labels.get("state")): s.value
               for family in text_string_to_metric_families(generate_latest(registry).decode())
               for s in family.samples if s.name.startswith("kpulse_streams_group_")}
    state = next(state for (name, state), value in samples.items() if name == "kpulse_streams_group_state" and value)
    return (state, int(samples[("kpulse_streams_group_epoch", None)]),
            int(samples[("kpulse_streams_group_assignment_epoch", None)]), int(samples[("kpulse_streams_group_members", None)]))


@pytest.mark.cluster
def test_a_streams_group_app_as_kafka_streams_groups_describes_it_and_its_transitions(bootstrap, tmp_path):
    config = ClusterConfig(name="local", bootstrap_servers=bootstrap)
    collector = StreamsAppsCollector(config)

    def app_now():
        result = collector.collect(CollectContext(cluster=config, now=time.time()))
        return next((a for a in result.sections["streams_apps"] if a["application_id"] == REAL_APP), None), result

    def until(done, timeout=90.0):
        deadline = time.monotonic() + timeout
        while True:
            app, _ = app_now()
            if (app is not None and done(app)) or time.monotonic() > deadline:
                return app
            time.sleep(1)

    with ExitStack() as running:
        instances = [running.enter_context(start_streams_app(bootstrap, REAL_APP, PREFIX, tmp_path, partitions=4))]
        produce_orders(bootstrap, {0: 12, 1: 9, 2: 6, 3: 3})
        app = until(lambda a: a["group_state"] == "Stable" and a["group"]["total_lag"] == 0
                    and a["group"]["input_partitions"])
        assert app is not None, "the Streams group was not seen"
        assert (app["protocol"], app["group_state"], app["members"]) == ("streams", "Stable", 1), app
        assert [s["subtopology_id"] for s in app["group"]["subtopologies"]] == ["0", "1", "2"]

        def kpulse_state():
            a, _ = app_now()
            return a["group"]["state"], a["group"]["group_epoch"], a["group"]["assignment_epoch"], a["members"]

        mine, theirs = agreed(kpulse_state, lambda: tool_state(bootstrap))
        assert mine == theirs
        mine, theirs = agreed(lambda: exported_state(app_now()[0]), lambda: tool_state(bootstrap))
        assert mine == theirs  # the exporter's series say what the tool says

        # a second instance joins: the group rebalances to share the tasks
        instances.append(running.enter_context(start_streams_app(bootstrap, REAL_APP, PREFIX, tmp_path,
                                                                 instance=2, partitions=4)))
        app = until(lambda a: a["members"] == 2 and a["group_state"] == "Stable"
                    and not any(m["reconciling"] for m in a["group"]["members"])
                    and len({m["process_id"] for m in a["group"]["members"] if m["active_tasks"]}) == 2)
        assert app["members"] == 2 and app["group_state"] == "Stable", app
        moves = [(t["instance"], t["from"], t["to"]) for t in app["transitions"] if t["instance"] == GROUP_INSTANCE]
        assert any(to in ("Assigning", "Reconciling", REBALANCING) for _, _, to in moves), moves
        assert app["rebalances"]["count"] >= 1

        mine, theirs = agreed(lambda: kpulse_members(app_now()[0]), lambda: tool_members(bootstrap))
        assert mine == theirs and len(mine) == 2
        produce_orders(bootstrap, {0: 5, 3: 5})
        mine, theirs = agreed(lambda: kpulse_offsets(app_now()[0]), lambda: tool_offsets(bootstrap))
        assert mine == theirs and len(mine) == 12  # 4 partitions of orders, orders-by-region, the repartition topic

        # both stop: the group goes Empty, its members leave
        for process in instances:
            process.terminate()  # KafkaStreams.close(): the member leaves the group
        for process in instances:
            process.wait(60)
        app = until(lambda a: a["group_state"] == "Empty")
        moves = [(t["instance"], t["from"], t["to"]) for t in app["transitions"]]
        assert (GROUP_INSTANCE, "Stable", "Empty") in moves or (GROUP_INSTANCE, "Reconciling", "Empty") in moves, moves
        assert sum(1 for instance, _, to in moves if instance.startswith("member ") and to == MEMBER_LEFT) >= 1
        _, result = app_now()
        rows = result.rows["streams_transition"]
        assert all(set(r) == set(SCHEMAS["streams_transition"].names) for r in rows)

        # without members the tool's describe prints nothing: committed offsets as --reset-offsets lists them
        produce_orders(bootstrap, {1: 7, 2: 4})
        app, _ = app_now()
        assert app["group"]["input_scope"] == COMMITTED and app["group"]["members"] == []
        dry_run = tool_table("--bootstrap-server", bootstrap, "--reset-offsets", "--to-current", "--dry-run",
                             "--all-input-topics", "--group", REAL_APP)
        committed = {(r["TOPIC"], int(r["PARTITION"])): int(r["NEW-OFFSET"]) for r in dry_run}
        assert {k: v[0] for k, v in kpulse_offsets(app).items()} == committed
        assert {topic for topic, _ in committed} == {f"{PREFIX}orders", f"{PREFIX}orders-by-region"}
        ends = {(topic, int(partition)): int(end) for name in (f"{PREFIX}orders", f"{PREFIX}orders-by-region")
                for topic, partition, end in (line.rsplit(":", 2) for line in official(
                    "kafka-get-offsets", "--bootstrap-server", bootstrap, "--topic", name).split())}
        expected = {k: ends[k] - c for k, c in committed.items()}
        assert {k: v[2] for k, v in kpulse_offsets(app).items()} == expected
        assert app["group"]["total_lag"] == sum(expected.values()) >= 11  # the 11 orders written after the stop


@pytest.mark.cluster
def test_a_configured_streams_group_app_gets_its_instance_state_and_its_group(bootstrap, tmp_path):
    """With a metrics endpoint the application's state is its instances' (RUNNING), the group's is
    beside it; stopping the instance shows in both: UNREACHABLE and Empty."""
    app_id, port = "kpulse-test-streams-group-metrics", free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    config = ClusterConfig(name="local", bootstrap_servers=bootstrap,
                           streams_apps=(StreamsAppConfig(app_id, (url,), 1),))
    collector = StreamsAppsCollector(config, discover=False)

    def until(done, timeout=90.0):
        deadline = time.monotonic() + timeout
        while True:
            result = collector.collect(CollectContext(cluster=config, now=time.time()))
            [app] = result.sections["streams_apps"]
            if done(app) or time.monotonic() > deadline:
                return app
            time.sleep(1)

    with start_streams_app(bootstrap, app_id, "sgm.", tmp_path, metrics_port=port) as process:
        app = until(lambda a: a["state"] == "RUNNING" and a["group_state"] == "Stable")
        assert (app["protocol"], app["state"], app["group_state"], app["members"]) == ("streams", "RUNNING",
                                                                                        "Stable", 1), app
        [instance] = app["instances"]
        assert (instance["id"], instance["state"]) == (f"{app_id}-1", "RUNNING")
        [member] = app["group"]["members"]
        assert member["client_id"].startswith(f"{app_id}-1")
        process.terminate()
        process.wait(60)
        app = until(lambda a: a["group_state"] == "Empty" and a["instances"][0]["state"] == "UNREACHABLE")
    moves = {(t["instance"], t["to"]) for t in app["transitions"]}
    assert (f"{app_id}-1", "UNREACHABLE") in moves and (GROUP_INSTANCE, "Empty") in moves, app["transitions"]
    assert app["state"] == "NOT_RUNNING" and app["group_state"] == "Empty"


# --- the lag collector's reading of the cycle, shared (collectors/streams/shared_readers.py) ---------

def lag_reading(groups, log_end, listed=None):
    """A ``GroupsReading`` as the lag collector publishes it: ``groups`` (group id -> (description
    or None, committed dict, error))."""
    from collectors.lag.groups_reading import GroupsReading
    from kpulse.kafka.group_listing import Listing, State
    from kpulse.kafka.group_offsets import ClusterOffsets, GroupOffsets

    listings = [Listing(gid, State("STABLE"), "streams", "streams", "Stable") for gid in (listed or groups)]
    offsets = ClusterOffsets(groups=[GroupOffsets(gid, "Stable", 1, ("m",), committed, error, "streams", "streams",
                                                  description)
                                     for gid, (description, committed, error) in groups.items()],
                             log_end=dict(log_end))
    return GroupsReading(listings, offsets)


class Asked:
    """A reader that records what it is asked for, then answers as ``inner``."""

    def __init__(self, inner, asked: list, name: str):
        self.inner, self.asked, self.name = inner, asked, name

    def list_groups(self, timeout, types=None):
        self.asked.append((self.name, "list", tuple(types or ())))
        return self.inner.list_groups(timeout, types)

    def describe(self, listings, timeout):
        listings = list(listings)
        self.asked.append((self.name, "describe", tuple(sorted(item.group_id for item in listings))))
        return self.inner.describe(listings, timeout)

    def read(self, keys, timeout):
        self.asked.append((self.name, "read", tuple(sorted(keys))))
        return self.inner.read(keys, timeout)

    @property
    def client(self):
        return getattr(self.inner, "client", None)


def test_the_shared_readers_take_what_the_lag_collector_read_and_read_only_the_rest():
    from collectors.streams.shared_readers import SharedGroups, SharedLogEnds, SharedOffsets

    a = group("Stable", [member("m1", {"0": (0, 1)})])
    b = group("Empty", [])
    asked: list = []
    own = readers({"a": a, "b": b, "c": b}, {"b": {("orders", 0): 4}, "c": {("orders", 1): 2}},
                  {("orders", 0): 10, ("orders", 1): 20, ("orders", 2): 30})
    reading = lag_reading({"a": (a, {("orders", 0): 7, ("orders", 1): None}, None),  # 1 assigned, never committed
                           "b": (None, {("orders", 0): 4}, None),                  # listed Empty: not described
                           "c": (None, {}, "OffsetFetch: NOT_COORDINATOR")},       # its offsets failed
                          {("orders", 0): 11}, listed=["a", "b", "c"])

    groups = SharedGroups(reading, Asked(own.groups, asked, "groups"))
    assert [g.group_id for g in groups.list_groups(10, types=["streams"])] == ["a", "b", "c"]
    described = groups.describe(groups.list_groups(10, types=["streams"]), 10)
    assert described == {"a": a, "b": b, "c": b}
    committed = SharedOffsets(reading, Asked(own.offsets, asked, "offsets")).read(["a", "b", "c"], 10)
    assert committed == {"a": {("orders", 0): 7}, "b": {("orders", 0): 4}, "c": {("orders", 1): 2}}
    ends = SharedLogEnds(reading, Asked(own.log_ends, asked, "ends")).read([("orders", 0), ("orders", 1)], 10)
    assert ends.log_end == {("orders", 0): 11, ("orders", 1): 20}  # 11: the reading's, not the own reader's 10
    assert asked == [("groups", "describe", ("b", "c")), ("offsets", "read", ("c",)),
                     ("ends", "read", (("orders", 1),))]


def test_a_group_the_lag_collector_could_not_read_is_read_here_and_says_why_when_that_fails_too():
    from collectors.streams.shared_readers import SharedLogEnds, SharedOffsets

    class Unusable:
        def read(self, keys, timeout):
            return None

    reading = lag_reading({"a": (None, {("orders", 0): 3}, None), "c": (None, {}, "OffsetFetch: NOT_COORDINATOR")},
                          {("orders", 0): 5})
    committed = SharedOffsets(reading, Unusable()).read(["a", "c"], 10)
    assert committed["a"] == {("orders", 0): 3}
    assert "not read" in str(committed["c"])
    assert SharedOffsets(reading, Unusable()).read(["c"], 10) is None  # nothing read at all
    ends = SharedLogEnds(reading, Unusable()).read([("orders", 0), ("orders", 9)], 10)
    assert ends.log_end == {("orders", 0): 5} and "not read" in ends.errors[("orders", 9)]


@pytest.mark.cluster
def test_beside_the_lag_collector_a_streams_group_is_read_once_a_cycle_with_the_same_answer(bootstrap, tmp_path):
    """Run as ``kpulse collect`` runs them, the Streams collector takes the Streams group from the
    lag collector's reading: it sends no ListGroups, StreamsGroupDescribe or OffsetFetch of its own
    for it, and shows what a Streams collector reading alone shows."""
    from collectors.lag.consumer_lag import ConsumerLagCollector
    from collectors.protocol import run_isolated
    from kpulse.kafka.batched_client import BatchedClient

    app_id = "kpulse-test-shared-reading"
    config = ClusterConfig(name="local", bootstrap_servers=bootstrap)
    asked: list = []

    def counted_readers():
        own = StreamsGroupReaders.over(BatchedClient(config, client_id="kpulse-test-streams"))
        return StreamsGroupReaders(Asked(own.groups, asked, "groups"), Asked(own.offsets, asked, "offsets"),
                                   Asked(own.log_ends, asked, "ends"), Asked(own.log_starts, asked, "starts"))

    shared_streams = StreamsAppsCollector(config, streams_readers=counted_readers)
    lag = ConsumerLagCollector(config)
    alone = StreamsAppsCollector(config)

    def app_of(result):
        return next((a for a in result["streams_apps"] if a["application_id"] == app_id), None)

    def cycle():
        sections, _, statuses = run_isolated([lag, shared_streams], CollectContext(cluster=config, now=time.time()))
        assert all(s.up for s in statuses), statuses
        return app_of(sections)

    try:
        with start_streams_app(bootstrap, app_id, "sr.", tmp_path, partitions=2):
            produce_orders(bootstrap, {0: 4, 1: 3}, prefix="sr.")
            deadline = time.monotonic() + 90
            app = cycle()
            while not (app and app["group_state"] == "Stable" and app["group"]["input_partitions"]
                       and app["group"]["total_lag"] == 0):
                assert time.monotonic() < deadline, app
                time.sleep(1)
                app = cycle()
            for _attempt in range(10):  # the app is idle: two readings agree unless a commit fell between them
                asked.clear()
                app = cycle()
                mine = app_of(alone.collect(CollectContext(cluster=config, now=time.time())).sections)
                if app["group"] == mine["group"]:
                    break
            assert app["group"] == mine["group"]
            assert (app["protocol"], app["group_state"], app["members"]) == ("streams", "Stable", 1)
            mentions = [entry for entry in asked if app_id in entry[2] or entry[1] == "list"]
            assert mentions == [], asked
            never_committed = {(p["topic"], p["partition"]) for p in app["group"]["input_partitions"]
                               if p["committed_offset"] is None}  # no group consumes them: not in the lag reading
            assert {key for name, _, keys in asked if name == "ends" for key in keys} <= never_committed, asked
    finally:
        for collector in (lag, shared_streams, alone):
            getattr(collector, "close", lambda: None)()

