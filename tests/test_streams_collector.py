"""Kafka Streams applications: instance states from metrics endpoints, the application's state,
transitions between cycles and rebalancing episodes; and, on the real demo app, stopping one
instance shows up as transitions."""

from __future__ import annotations

import time
from concurrent.futures import Future
from enum import Enum
from types import SimpleNamespace
from typing import Any

import pytest

from kpulse import prom_text
from kpulse.lake.schema import SCHEMAS
from collectors.protocol import CollectContext, Collector
from collectors.streams.streams_apps import StreamsAppsCollector
from collectors.streams.streams_state import (DEGRADED, UNREACHABLE, Episode, Observation, Transition, TransitionTracker,
                                      app_rebalance_episodes, app_state, instances_from_samples,
                                      rebalance_episodes, rebalance_summary, streams_app_ids)
from kpulse.config.model import ClusterConfig, StreamsAppConfig

APP = "orders-app"
URL_1 = "http://streams-1:7071/metrics"
URL_2 = "http://streams-2:7071/metrics"


def exposition(client_id: str, client_state: int, thread_states=(4,), alive=1, failed=0, rebalances=1.0,
               process_id="p-1") -> str:
    lines = [
        "# TYPE kafka_streams_stream_metrics_client_state untyped",
        f'kafka_streams_stream_metrics_client_state{{application_id="{APP}",client_id="{client_id}",'
        f'process_id="{process_id}"}} {client_state}.0',
        "# TYPE kafka_streams_stream_metrics_alive_stream_threads untyped",
        f'kafka_streams_stream_metrics_alive_stream_threads{{client_id="{client_id}"}} {alive}.0',
        "# TYPE kafka_streams_stream_metrics_failed_stream_threads untyped",
        f'kafka_streams_stream_metrics_failed_stream_threads{{client_id="{client_id}"}} {failed}.0',
        "# TYPE kafka_streams_stream_thread_metrics_thread_state untyped",
    ]
    lines += [f'kafka_streams_stream_thread_metrics_thread_state{{process_id="{process_id}",'
              f'thread_id="{client_id}-StreamThread-{n}"}} {state}.0' for n, state in enumerate(thread_states, 1)]
    lines += ["# TYPE kafka_consumer_coordinator_rebalance gauge"]
    lines += [f'kafka_consumer_coordinator_rebalance{{client_id="{client_id}-StreamThread-{n}-consumer"}} '
              f'{rebalances}' for n in range(1, len(thread_states) + 1)]
    return "\n".join(lines) + "\n"


# --- reading an endpoint ---------------------------------------------------------------------------

def test_an_endpoint_gives_its_client_state_threads_and_rebalance_count():
    text = exposition("orders-app-1", 1, thread_states=(3, 4), alive=2, failed=1, rebalances=3.0,
                      process_id="9e0d")
    [instance] = instances_from_samples(URL_1, prom_text.parse(text))
    assert instance.id == "orders-app-1"
    assert instance.state == "REBALANCING"
    assert instance.thread_states == {"orders-app-1-StreamThread-1": "PARTITIONS_ASSIGNED",
                                      "orders-app-1-StreamThread-2": "RUNNING"}
    assert (instance.alive_threads, instance.failed_threads) == (2, 1)
    assert instance.rebalances_total == 6.0  # two stream-thread consumers, 3 each
    assert instance.process_id == "9e0d"
    assert instance.up is True and instance.error is None


def test_an_endpoint_without_client_state_is_up_with_an_unknown_state_and_says_why():
    [instance] = instances_from_samples(URL_1, prom_text.parse("# TYPE jvm_heap_used_bytes gauge\n"
                                                               "jvm_heap_used_bytes 1.0\n"))
    assert (instance.id, instance.up, instance.state) == (URL_1, True, None)
    assert "kafka_streams_stream_metrics_client_state" in instance.error


# --- application state -----------------------------------------------------------------------------

@pytest.mark.parametrize("states, expected, app", [
    (["RUNNING", "RUNNING"], 2, "RUNNING"),
    (["RUNNING", "RUNNING", UNREACHABLE], 2, "RUNNING"),  # a spare instance down: still as expected
    (["RUNNING", "REBALANCING"], 2, "REBALANCING"),
    (["REBALANCING", UNREACHABLE], 2, "REBALANCING"),
    (["RUNNING", "ERROR"], 2, "ERROR"),
    (["REBALANCING", "PENDING_ERROR"], 2, "ERROR"),
    (["RUNNING", UNREACHABLE], 2, DEGRADED),
    (["RUNNING"], 2, DEGRADED),  # the second endpoint is not configured
    (["RUNNING", "PENDING_SHUTDOWN"], 2, DEGRADED),
    ([UNREACHABLE, UNREACHABLE], 2, "NOT_RUNNING"),
    (["PENDING_SHUTDOWN", UNREACHABLE], 2, "NOT_RUNNING"),
    (["PENDING_SHUTDOWN", "CREATED"], 2, "PENDING_SHUTDOWN"),
    (["CREATED", "CREATED"], 2, "CREATED"),
    ([None, "CREATED"], 2, "NOT_RUNNING"),  # unknown counts as not running
    (["RUNNING", "RUNNING"], None, "RUNNING"),
    ([], 2, None),  # no endpoints: only the group tells
])
def test_app_state_precedence(states, expected, app):
    assert app_state(states, expected) == app


# --- transitions -----------------------------------------------------------------------------------

def run_cycles(cycles: list[dict[str, Observation]]) -> tuple[TransitionTracker, list[list[tuple]]]:
    tracker = TransitionTracker()
    seen = []
    for n, observations in enumerate(cycles):
        new = tracker.observe(100.0 + n, APP, observations)
        seen.append([(t.time, t.instance, t.from_state, t.to_state, t.inferred) for t in new])
    return tracker, seen


def obs(state, process="p-1", rebalances=None) -> Observation:
    return Observation(state, process, rebalances)


@pytest.mark.parametrize("cycles, expected", [
    pytest.param([{"a": obs("RUNNING")}, {"a": obs("RUNNING")}], [[], []], id="first sighting and no change"),
    pytest.param([{"a": obs("RUNNING")}, {"a": obs(UNREACHABLE, None)}, {"a": obs("REBALANCING", "p-2")},
                  {"a": obs("RUNNING", "p-2")}],
                 [[], [(101.0, "a", "RUNNING", UNREACHABLE, False)],
                  [(102.0, "a", UNREACHABLE, "REBALANCING", False)],
                  [(103.0, "a", "REBALANCING", "RUNNING", False)]], id="endpoint gone and back"),
    pytest.param([{"a": obs("RUNNING")}, {"a": obs(None)}, {"a": obs("PENDING_SHUTDOWN")}],
                 [[], [], [(102.0, "a", "RUNNING", "PENDING_SHUTDOWN", False)]], id="unknown keeps the last state"),
    pytest.param([{"a": obs("RUNNING", rebalances=1.0)}, {"a": obs("RUNNING", rebalances=2.0)}],
                 [[], [(101.0, "a", "RUNNING", "REBALANCING", True), (101.0, "a", "REBALANCING", "RUNNING", True)]],
                 id="a rebalance between two scrapes is inferred from the counter"),
    pytest.param([{"a": obs("RUNNING", rebalances=5.0)}, {"a": obs("RUNNING", "p-2", rebalances=6.0)}],
                 [[], []], id="a restarted process restarts its counter: nothing inferred"),
    pytest.param([{"a": obs("RUNNING", rebalances=1.0)}, {"a": obs("REBALANCING", rebalances=2.0)},
                  {"a": obs("RUNNING", rebalances=2.0)}],
                 [[], [(101.0, "a", "RUNNING", "REBALANCING", False)],
                  [(102.0, "a", "REBALANCING", "RUNNING", False)]], id="a seen rebalance is not inferred twice"),
    pytest.param([{"a": obs("RUNNING"), "b": obs("RUNNING")}, {"a": obs("RUNNING"), "b": obs("REBALANCING")}],
                 [[], [(101.0, "b", "RUNNING", "REBALANCING", False)]], id="instances are independent"),
])
def test_transitions_between_cycles(cycles, expected):
    _, seen = run_cycles(cycles)
    assert seen == expected


def test_only_the_last_transitions_of_an_application_are_kept():
    tracker = TransitionTracker(kept=3)
    for n in range(6):
        tracker.observe(float(n), APP, {"a": obs("RUNNING" if n % 2 else "REBALANCING")})
    kept = tracker.transitions(APP)
    assert [t.time for t in kept] == [3.0, 4.0, 5.0]
    assert tracker.transitions("other-app") == []


# --- rebalancing episodes --------------------------------------------------------------------------

def t(time_, instance, from_state, to_state) -> Transition:
    return Transition(time_, APP, instance, from_state, to_state)


@pytest.mark.parametrize("transitions, episodes", [
    ([], []),
    ([t(10, "a", "RUNNING", "REBALANCING"), t(14, "a", "REBALANCING", "RUNNING")], [Episode(10, 14, "a")]),
    ([t(10, "a", "RUNNING", "REBALANCING")], [Episode(10, None, "a")]),
    ([t(14, "a", "REBALANCING", "RUNNING")], []),  # its start is unknown
    ([t(10, "a", "RUNNING", "REBALANCING"), t(12, "a", "REBALANCING", UNREACHABLE),
      t(20, "a", UNREACHABLE, "REBALANCING"), t(21, "a", "REBALANCING", "RUNNING")],
     [Episode(10, 12, "a"), Episode(20, 21, "a")]),
    ([t(11, "b", "RUNNING", "REBALANCING"), t(10, "a", "RUNNING", "REBALANCING"),
      t(13, "a", "REBALANCING", "RUNNING")], [Episode(10, 13, "a"), Episode(11, None, "b")]),
])
def test_rebalance_episodes_per_instance(transitions, episodes):
    assert rebalance_episodes(transitions) == episodes


def test_overlapping_instance_episodes_are_one_application_episode():
    transitions = [t(10, "a", "RUNNING", "REBALANCING"), t(12, "b", "RUNNING", "REBALANCING"),
                   t(15, "a", "REBALANCING", "RUNNING"), t(16, "b", "REBALANCING", "RUNNING"),
                   t(30, "a", "RUNNING", "REBALANCING"), t(31, "a", "REBALANCING", "RUNNING"),
                   t(40, "b", "RUNNING", "REBALANCING")]
    assert app_rebalance_episodes(transitions) == [Episode(10, 16), Episode(30, 31), Episode(40, None)]
    # 6 s + 1 s done, 5 s ongoing at t=45
    assert rebalance_summary(transitions, now=45) == {"count": 3, "total_seconds": 12.0, "ongoing_seconds": 5.0}
    assert rebalance_summary(transitions[:6], now=45) == {"count": 2, "total_seconds": 7.0,
                                                          "ongoing_seconds": None}


# --- discovery -------------------------------------------------------------------------------------

@pytest.mark.parametrize("groups, topics, apps", [
    (["wordcount", "plain-group"], ["wordcount-counts-store-changelog", "orders"], {"wordcount"}),
    (["a", "a-b"], ["a-b-store-changelog"], {"a", "a-b"}),  # both could own it: both are listed
    (["shop"], ["shop-by-region-repartition", "shop-changelog"], {"shop"}),
    (["shop"], ["shop-changelog"], set()),  # no internal topic name between the id and the suffix
    (["billing"], ["billing.events", "other-x-changelog"], set()),
])
def test_streams_apps_are_recognised_by_their_internal_topics(groups, topics, apps):
    assert streams_app_ids(groups, topics) == apps


# --- the collector with canned endpoints and a canned Admin client ---------------------------------

class FakeAdmin:
    def __init__(self, groups: dict[str, tuple[str, int]], topics=(), fail: Exception | None = None):
        self.groups, self.topics, self.fail = groups, topics, fail

    @staticmethod
    def _done(value) -> Future[Any]:
        future: Future[Any] = Future()
        future.set_result(value)
        return future

    def list_consumer_groups(self, **_):
        if self.fail:
            raise self.fail
        return self._done(SimpleNamespace(valid=[SimpleNamespace(group_id=g) for g in self.groups]))

    metadata_reads = 0

    def list_topics(self, **_):
        self.metadata_reads += 1
        return SimpleNamespace(topics={name: None for name in self.topics})

    def describe_consumer_groups(self, group_ids, **_):
        state = Enum("ConsumerGroupState", ["STABLE", "PREPARING_REBALANCING", "EMPTY"])
        return {g: self._done(SimpleNamespace(state=state[self.groups[g][0]], members=[None] * self.groups[g][1]))
                for g in group_ids}


class NoStreamsGroups:
    """The Streams group reader of a cluster without Streams groups (they are in test_streams_groups.py)."""

    def list_groups(self, timeout, types=None):
        return []


def no_streams_groups():
    from collectors.streams.streams_apps import StreamsGroupReaders

    return StreamsGroupReaders(NoStreamsGroups(), None, None, None)


class Pages:
    def __init__(self, pages):
        self.pages = pages

    def __call__(self, url, timeout):
        page = self.pages[url]
        if isinstance(page, Exception):
            raise page
        return page


def configured(endpoints=(URL_1, URL_2), expected=2) -> ClusterConfig:
    return ClusterConfig(name="prod", bootstrap_servers="node-1:9092",
                         streams_apps=(StreamsAppConfig(APP, tuple(endpoints), expected),))


def test_the_constructor_connects_to_nothing_and_follows_the_protocol():
    def no_admin(_config):
        raise AssertionError("connected in the constructor")

    collector = StreamsAppsCollector(configured(), http_get=Pages({}), admin_factory=no_admin,
                                     streams_readers=no_streams_groups)
    assert collector.name == "streams_apps"
    assert isinstance(collector, Collector)


def test_one_instance_stops_answering_its_app_degrades_and_the_transition_is_a_row():
    pages = Pages({URL_1: exposition("orders-app-1", 2), URL_2: exposition("orders-app-2", 2)})
    admin = FakeAdmin({APP: ("STABLE", 2), "wordcount": ("EMPTY", 0), "plain": ("STABLE", 1)},
                      topics=["wordcount-store-changelog"])
    after_reads = [1000.5]  # the clock: half a second after the cycle began
    collector = StreamsAppsCollector(configured(), http_get=pages, admin_factory=lambda _c: admin,
                                     streams_readers=no_streams_groups,
                                     clock=lambda: after_reads[0])
    first = collector.collect(CollectContext(cluster=None, now=1000.0))
    [app, discovered] = first.sections["streams_apps"]
    assert (app["application_id"], app["state"], app["group_state"], app["members"]) == (APP, "RUNNING", "Stable", 2)
    assert [i["id"] for i in app["instances"]] == ["orders-app-1", "orders-app-2"]
    assert app["instances"][0]["thread_states"] == {"orders-app-1-StreamThread-1": "RUNNING"}
    assert app["transitions"] == [] and first.rows["streams_transition"] == []
    assert app["rebalances"] == {"count": 0, "total_seconds": 0, "ongoing_seconds": None}
    assert discovered == {"application_id": "wordcount", "protocol": "classic", "group": None, "state": None, "group_state": "Empty", "members": 0,
                          "group_error": None, "expected_instances": None, "instances": [], "transitions": [],
                          "rebalances": {"count": 0, "total_seconds": 0, "ongoing_seconds": None}}

    pages.pages[URL_2] = ConnectionRefusedError("connection refused")
    pages.pages[URL_1] = exposition("orders-app-1", 1, thread_states=(3,))
    admin.groups[APP] = ("PREPARING_REBALANCING", 1)
    after_reads[0] = 1010.5
    second = collector.collect(CollectContext(cluster=None, now=1010.0))
    app = second.sections["streams_apps"][0]
    assert app["state"] == "REBALANCING"
    assert app["group_state"] == "PreparingRebalance"
    down = app["instances"][1]
    assert (down["id"], down["up"], down["state"]) == ("orders-app-2", False, UNREACHABLE)
    assert "connection refused" in down["error"]
    assert [(x["instance"], x["from"], x["to"]) for x in app["transitions"]] == [
        ("orders-app-1", "RUNNING", "REBALANCING"), ("orders-app-2", "RUNNING", UNREACHABLE)]
    assert app["rebalances"] == {"count": 1, "total_seconds": 0.5, "ongoing_seconds": 0.5}
    assert sorted((r["instance"], r["from_state"], r["to_state"]) for r in second.rows["streams_transition"]) == [
        ("orders-app-1", "RUNNING", "REBALANCING"), ("orders-app-2", "RUNNING", UNREACHABLE)]
    rows = {r["instance"]: r for r in second.rows["streams_instance"]}
    assert rows["orders-app-2"]["up"] is False and rows["orders-app-2"]["client_state"] is None
    assert rows["orders-app-1"]["client_state"] == "REBALANCING"
    assert rows["orders-app-1"]["group_state"] == "PreparingRebalance"
    for table in ("streams_instance", "streams_transition"):
        for row in second.rows[table]:
            assert set(row) == set(SCHEMAS[table].names), table
            assert (row["time"], row["cluster"]) == (1010.0, "prod")

    pages.pages[URL_1] = exposition("orders-app-1", 2)
    after_reads[0] = 1020.5
    third = collector.collect(CollectContext(cluster=None, now=1020.0))
    app = third.sections["streams_apps"][0]
    assert app["state"] == DEGRADED
    assert app["rebalances"] == {"count": 1, "total_seconds": 10.0, "ongoing_seconds": None}


def test_discovered_classic_apps_obey_the_consumer_groups_filter():
    from kpulse.config.model import ConsumerGroupsConfig

    admin = FakeAdmin({"wordcount": ("EMPTY", 0), "staging-wordcount": ("STABLE", 1)},
                      topics=["wordcount-store-changelog", "staging-wordcount-store-changelog"])
    config = ClusterConfig(name="prod", bootstrap_servers="node-1:9092",
                           consumer_groups=ConsumerGroupsConfig(exclude=("staging-.*",)))
    collector = StreamsAppsCollector(config, http_get=Pages({}), admin_factory=lambda _c: admin,
                                     streams_readers=no_streams_groups)
    result = collector.collect(CollectContext(cluster=config, now=1000.0))
    assert [a["application_id"] for a in result.sections["streams_apps"]] == ["wordcount"]


def test_without_the_admin_api_instances_are_still_reported_with_the_group_error():
    pages = Pages({URL_1: exposition("orders-app-1", 2)})
    admin = FakeAdmin({}, fail=RuntimeError("all brokers down"))
    collector = StreamsAppsCollector(configured([URL_1], 1), http_get=pages, admin_factory=lambda _c: admin,
                                     streams_readers=no_streams_groups)
    [app] = collector.collect(CollectContext(cluster=None, now=1.0)).sections["streams_apps"]
    assert app["state"] == "RUNNING"
    assert app["group_state"] is None and "all brokers down" in app["group_error"]


def test_an_endpoint_that_never_answered_is_named_by_its_url():
    pages = Pages({URL_1: TimeoutError("timed out")})
    collector = StreamsAppsCollector(configured([URL_1], 1), http_get=pages,
                                     admin_factory=lambda _c: FakeAdmin({APP: ("EMPTY", 0)}),
                                     streams_readers=no_streams_groups)
    [app] = collector.collect(CollectContext(cluster=None, now=1.0)).sections["streams_apps"]
    assert [(i["id"], i["state"]) for i in app["instances"]] == [(URL_1, UNREACHABLE)]
    assert app["state"] == "NOT_RUNNING"


def test_topic_names_are_reread_only_when_they_may_change_what_is_discovered():
    """A Metadata request lists every partition of the cluster: discovery re-reads the topic names
    every 60 s, and each cycle while a group that appeared less than 30 s ago is not recognised."""
    admin = FakeAdmin({"plain": ("STABLE", 1), "wordcount": ("EMPTY", 0)}, topics=["wordcount-store-changelog"])
    collector = StreamsAppsCollector(ClusterConfig(name="prod", bootstrap_servers="node-1:9092"),
                                     http_get=Pages({}), admin_factory=lambda _c: admin,
                                     streams_readers=no_streams_groups)

    def apps_at(now):
        return [a["application_id"] for a in collector.collect(CollectContext(None, now)).sections["streams_apps"]]

    assert apps_at(1000.0) == ["wordcount"] and admin.metadata_reads == 1
    assert apps_at(1010.0) == ["wordcount"] and admin.metadata_reads == 1  # nothing new: names kept
    admin.groups["shop"] = ("PREPARING_REBALANCING", 1)  # a new group, its internal topics not created yet
    assert apps_at(1020.0) == ["wordcount"] and admin.metadata_reads == 2
    admin.topics = ["wordcount-store-changelog", "shop-by-region-repartition"]
    assert apps_at(1030.0) == ["shop", "wordcount"] and admin.metadata_reads == 3
    assert apps_at(1040.0) == ["shop", "wordcount"] and admin.metadata_reads == 3  # recognised: no more reads
    admin.groups["late"] = ("STABLE", 1)  # a plain group: watched for 30 s after it appeared, then left alone
    for now, reads in ((1045.0, 4), (1070.0, 5), (1075.0, 5)):
        apps_at(now)
        assert admin.metadata_reads == reads, now
    admin.topics = ["shop-by-region-repartition"]  # wordcount's internal topic deleted
    assert apps_at(1080.0) == ["shop", "wordcount"] and admin.metadata_reads == 5
    assert apps_at(1130.0) == ["shop"] and admin.metadata_reads == 6  # 60 s after the last read


# --- the real demo application ---------------------------------------------------------------------

def collect_until(collector, config, done, timeout: float, interval: float = 1.0):
    """Collect every ``interval`` seconds until ``done(app, result)``; returns every result."""
    results = []
    deadline = time.monotonic() + timeout
    while True:
        result = collector.collect(CollectContext(cluster=config, now=time.time()))
        results.append(result)
        app = next(a for a in result.sections["streams_apps"] if a["application_id"] == "kpulse-demo-streams")
        if done(app, result) or time.monotonic() > deadline:
            return app, results
        time.sleep(interval)


@pytest.mark.cluster
def test_stopping_streams_instance_2_is_seen_as_transitions_and_a_rebalance_of_instance_1(demo_workload,
                                                                                          bootstrap):
    from kpulse import processes
    from localkafka.demo.topology import KIP1071_APPLICATION_ID, STREAMS_APPLICATION_ID

    urls = tuple(demo_workload.streams_metrics_urls())
    config = ClusterConfig(name="local", bootstrap_servers=bootstrap,
                           streams_apps=(StreamsAppConfig(STREAMS_APPLICATION_ID, urls, 2),))
    collector = StreamsAppsCollector(config)
    one, two = f"{STREAMS_APPLICATION_ID}-1", f"{STREAMS_APPLICATION_ID}-2"

    def both_running(a, result):
        apps = {x["application_id"]: x for x in result.sections["streams_apps"]}
        return (a["state"] == "RUNNING" and a["members"] == 2
                and (apps.get(KIP1071_APPLICATION_ID) or {}).get("group_state") == "Stable")

    app, results = collect_until(collector, config, both_running, 90)
    # the demo's other Streams app is a Streams group (KIP-1071): listed beside, with its protocol
    apps = {a["application_id"]: a for a in results[-1].sections["streams_apps"]}
    assert apps[STREAMS_APPLICATION_ID]["protocol"] == "classic" and apps[STREAMS_APPLICATION_ID]["group"] is None
    kip1071 = apps[KIP1071_APPLICATION_ID]
    assert (kip1071["protocol"], kip1071["group_state"], kip1071["members"]) == ("streams", "Stable", 1), kip1071
    assert kip1071["group"]["input_partitions"] and kip1071["group"]["lag_error"] is None
    assert app["state"] == "RUNNING", app
    assert [(i["id"], i["state"], i["up"]) for i in app["instances"]] == [(one, "RUNNING", True),
                                                                          (two, "RUNNING", True)]
    assert all(i["thread_states"] and set(i["thread_states"].values()) == {"RUNNING"} for i in app["instances"])
    assert [(i["alive_threads"], i["failed_threads"]) for i in app["instances"]] == [(1, 0), (1, 0)]
    assert (app["group_state"], app["members"]) == ("Stable", 2)

    def moves(app_view):
        return {(x["instance"], x["from"], x["to"]) for x in app_view["transitions"]}

    def instance_2_left_and_instance_1_rebalanced(app_view, _result):
        seen = moves(app_view)
        left = any(i == two and a == "RUNNING" and b in ("PENDING_SHUTDOWN", "NOT_RUNNING", UNREACHABLE)
                   for i, a, b in seen)
        return left and (one, "RUNNING", "REBALANCING") in seen and app_view["state"] in ("RUNNING", DEGRADED)

    stopped_at = time.time()
    try:
        assert processes.stop(demo_workload.root / "streams-2.pid.json"), "instance 2 was not running"
        app, results = collect_until(collector, config, instance_2_left_and_instance_1_rebalanced, 60)
        print("transitions after stopping instance 2:", app["transitions"])
        assert instance_2_left_and_instance_1_rebalanced(app, None), app["transitions"]
        down = next(i for i in app["instances"] if i["id"] == two)
        assert (down["up"], down["state"]) == (False, UNREACHABLE) and down["error"]
        assert app["state"] == DEGRADED, app  # instance 1 alone is processing
        assert app["rebalances"]["count"] >= 1
        rows = [row for result in results for row in result.rows["streams_transition"]]
        assert any(r["instance"] == two and r["from_state"] == "RUNNING" and r["time"] >= stopped_at for r in rows)
        assert any(r["instance"] == one and r["to_state"] == "REBALANCING" for r in rows)
        instance_rows = results[-1].rows["streams_instance"]
        assert {(r["instance"], r["up"], r["client_state"]) for r in instance_rows} == {
            (one, True, "RUNNING"), (two, False, None)}
    finally:
        demo_workload.start()  # starts only what is not running: instance 2

    def both_running(a, result):
        apps = {x["application_id"]: x for x in result.sections["streams_apps"]}
        return (a["state"] == "RUNNING" and a["members"] == 2
                and (apps.get(KIP1071_APPLICATION_ID) or {}).get("group_state") == "Stable")

    app, results = collect_until(collector, config, both_running, 90)
    # the demo's other Streams app is a Streams group (KIP-1071): listed beside, with its protocol
    apps = {a["application_id"]: a for a in results[-1].sections["streams_apps"]}
    assert apps[STREAMS_APPLICATION_ID]["protocol"] == "classic" and apps[STREAMS_APPLICATION_ID]["group"] is None
    kip1071 = apps[KIP1071_APPLICATION_ID]
    assert (kip1071["protocol"], kip1071["group_state"], kip1071["members"]) == ("streams", "Stable", 1), kip1071
    assert kip1071["group"]["input_partitions"] and kip1071["group"]["lag_error"] is None
    assert app["state"] == "RUNNING", app
    assert any(i == two and a == UNREACHABLE for i, a, _ in moves(app)), app["transitions"]
