"""The lag collector sees every kind of group Kafka 4 has, as the official tools do: a KIP-848
consumer group with its epochs and members' current and target assignments
(``kafka-consumer-groups --describe --state/--members --verbose``), a Streams group with its state
and members (``kafka-streams-groups --describe --state``), and a share group left to the share
groups collector (it has no committed offsets to take a lag from)."""

from __future__ import annotations

import contextlib
import time

import pytest

from collectors.lag.consumer_lag import ConsumerLagCollector
from collectors.protocol import CollectContext
from kpulse.config import parse_config
from tests.support import (admin_for, create_topic, fill_topic, kip848_consumer, official_rows, start_share_consumer,
                           start_streams_app, wait_for)

pytestmark = pytest.mark.cluster

TOPIC = "gtl.in"


@pytest.fixture(scope="module")
def cluster_config(local_cluster, tmp_path_factory):
    data = {"clusters": [{"name": "test", "bootstrap_servers": local_cluster.layout.bootstrap_servers,
                          "consumer_groups": {"include": ["gtl-.*"]}}]}
    return parse_config(data, source="test", base_dir=tmp_path_factory.mktemp("cfg")).cluster(None)


@pytest.fixture(scope="module")
def collector(cluster_config):
    collector = ConsumerLagCollector(cluster_config)
    yield collector
    collector.close()


def sections(collector, cluster_config) -> dict[str, dict]:
    result = collector.collect(CollectContext(cluster_config, time.time()))
    return {g["group_id"]: g for g in result.sections["consumer_groups"]}


@pytest.fixture(scope="module")
def live_groups(bootstrap, collector, cluster_config, tmp_path_factory):
    """A KIP-848 group, a Streams group and a share group, each with one live member."""
    fill_topic(bootstrap, TOPIC, {0: 20, 1: 20, 2: 20})
    with contextlib.ExitStack() as running:
        running.enter_context(kip848_consumer(bootstrap, "gtl-848", [TOPIC]))
        running.enter_context(start_streams_app(bootstrap, "gtl-streams", "gtl.", tmp_path_factory.mktemp("streams")))
        running.enter_context(start_share_consumer(bootstrap, TOPIC, "gtl-share"))
        wait_for(lambda: official_state("kafka-streams-groups", bootstrap, "gtl-streams")[0] == "Stable"
                 and official_state("kafka-consumer-groups", bootstrap, "gtl-848")[0] == "Stable", 180,
                 what="the KIP-848 and the Streams group Stable")
        yield
        running.close()


def official_state(tool: str, bootstrap: str, group: str) -> tuple[str, int]:
    rows = official_rows(tool, "--bootstrap-server", bootstrap, "--describe", "--group", group, "--state")
    return (rows[0]["STATE"], int(rows[0]["#MEMBERS"])) if rows else ("", 0)


def agree(ours, theirs, attempts: int = 5):
    for _ in range(attempts):
        mine, official = ours(), theirs()
        if mine == official:
            break
        time.sleep(1)
    return mine, official


@pytest.mark.parametrize("group_id, tool, kind", [("gtl-848", "kafka-consumer-groups", "consumer"),
                                                  ("gtl-streams", "kafka-streams-groups", "streams")])
def test_each_group_has_its_type_and_the_state_and_members_of_its_official_tool(
        live_groups, collector, cluster_config, bootstrap, group_id, tool, kind):
    def ours():
        group = sections(collector, cluster_config)[group_id]
        return group["type"], group["state"], group["members"]

    mine, official = agree(ours, lambda: (kind, *official_state(tool, bootstrap, group_id)))
    assert mine == official == (kind, "Stable", 1)


def test_a_share_group_is_left_to_the_share_groups_collector(live_groups, collector, cluster_config, bootstrap):
    wait_for(lambda: official_state("kafka-share-groups", bootstrap, "gtl-share")[0] == "Stable", 60,
             what="the share group Stable")
    assert "gtl-share" not in sections(collector, cluster_config)


def assignment_text(assignment: dict) -> str:
    """As ``kafka-consumer-groups --members --verbose`` prints an assignment: ``t:0,1,2`` ('-': none)."""
    return ",".join(f"{topic}:{','.join(map(str, parts))}" for topic, parts in assignment.items()) or "-"


def test_a_kip848_groups_epochs_and_members_equal_kafka_consumer_groups_verbose(
        live_groups, collector, cluster_config, bootstrap):
    def ours():
        group = sections(collector, cluster_config)["gtl-848"]
        return ((group["state"], group["group_epoch"], group["assignment_epoch"], group["members"]),
                sorted((m["member_id"], m["member_epoch"], assignment_text(m["assignment"]), group["assignment_epoch"],
                        assignment_text(m["target_assignment"])) for m in group["member_details"]))

    def theirs():
        [state] = official_rows("kafka-consumer-groups", "--bootstrap-server", bootstrap, "--describe", "--group",
                                "gtl-848", "--state", "--verbose")
        members = official_rows("kafka-consumer-groups", "--bootstrap-server", bootstrap, "--describe", "--group",
                                "gtl-848", "--members", "--verbose")
        return ((state["STATE"], int(state["GROUP-EPOCH"]), int(state["TARGET-ASSIGNMENT-EPOCH"]),
                 int(state["#MEMBERS"])),
                sorted((m["CONSUMER-ID"], int(m["CURRENT-EPOCH"]), m["CURRENT-ASSIGNMENT"], int(m["TARGET-EPOCH"]),
                        m["TARGET-ASSIGNMENT"]) for m in members))

    mine, official = agree(ours, theirs)
    assert mine == official
    assert mine[1][0][2] == f"{TOPIC}:0,1,2"


def test_the_exporter_serves_a_kip848_groups_type_state_and_epochs_as_the_official_tool_shows_them(
        live_groups, collector, cluster_config, bootstrap):
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    from exporters.prometheus import SnapshotExporter

    def ours():
        exporter = SnapshotExporter()
        exporter.update({"cluster_name": "test", "consumer_groups": list(sections(collector, cluster_config).values())})
        registry = CollectorRegistry()
        registry.register(exporter)
        samples = {(s.name, s.labels.get("state"), s.labels.get("type")): s.value
                   for family in text_string_to_metric_families(generate_latest(registry).decode())
                   for s in family.samples if s.labels.get("consumergroup") == "gtl-848"}
        state = next(state for (name, state, _), value in samples.items()
                     if name == "kpulse_consumergroup_state" and value == 1)
        kind = next(kind for (name, _, kind) in samples if name == "kpulse_consumergroup_info")
        return (kind, state, int(samples[("kpulse_consumergroup_group_epoch", None, None)]),
                int(samples[("kpulse_consumergroup_assignment_epoch", None, None)]))

    def theirs():
        [state] = official_rows("kafka-consumer-groups", "--bootstrap-server", bootstrap, "--describe", "--group",
                                "gtl-848", "--state", "--verbose")
        return "consumer", state["STATE"], int(state["GROUP-EPOCH"]), int(state["TARGET-ASSIGNMENT-EPOCH"])

    mine, official = agree(ours, theirs)
    assert mine == official and mine[1] == "Stable"


def test_a_streams_groups_members_have_their_process_and_the_partitions_of_their_active_tasks(
        live_groups, collector, cluster_config, bootstrap):
    group = sections(collector, cluster_config)["gtl-streams"]
    [member] = group["member_details"]
    [official] = official_rows("kafka-streams-groups", "--bootstrap-server", bootstrap, "--describe", "--group",
                               "gtl-streams", "--members", "--verbose")
    assert (member["member_id"], member["member_epoch"], member["process_id"]) == (
        official["MEMBER"], int(official["MEMBER-EPOCH"]), official["PROCESS"])
    assert member["assignment"]["gtl.orders"] == [0, 1, 2]  # subtopology 0 reads gtl.orders, three tasks


def test_a_kip848_member_caught_reconciling_is_shown_with_its_target(live_groups, collector, cluster_config,
                                                                     bootstrap):
    create_topic(admin_for(bootstrap), "gtl.wide", 6)
    with kip848_consumer(bootstrap, "gtl-reconcile", ["gtl.wide"]):
        wait_for(lambda: (g := sections(collector, cluster_config).get("gtl-reconcile")) and g["state"] == "Stable"
                 and g["members"] == 1, 120, what="one member owning the six partitions")
        with kip848_consumer(bootstrap, "gtl-reconcile", ["gtl.wide"]):
            caught = wait_for(lambda: (g := sections(collector, cluster_config).get("gtl-reconcile"))
                              and g["reconciling_members"] and g, 60, interval=0.05,
                              what="a member whose assignment is not its target")
    reconciling = [m for m in caught["member_details"] if m["reconciling"]]
    assert reconciling and len(caught["member_details"]) == 2
    assert all(m["assignment"] != m["target_assignment"] for m in reconciling)
    targets = [set(m["target_assignment"].get("gtl.wide", ())) for m in caught["member_details"]]
    assert targets[0] | targets[1] == set(range(6)) and not targets[0] & targets[1]
