"""The demo workload gives every page something real: steady traffic, a healthy, a slow and a
stopped group, a Kafka Streams application in two instances, and the three modern kinds of group
(a KIP-848 consumer group, a Streams-protocol app, a share group with a slow member), all as the
official tools see them; `kpulse demo stop` leaves none of its processes behind."""

from __future__ import annotations

import re
import time

import psutil
import pytest

from localkafka.demo.topology import (KIP848_GROUP, KIP1071_APPLICATION_ID, POISON_AFTER, POISON_GROUP, POISON_TOPIC,
                                      SHARE_GROUP, STREAMS_APPLICATION_ID, TOPICS)
from localkafka.demo.workers import MALFORMED_VALUE
from localkafka.tools import run_tool
from tests.support import group_rows, official_rows, scrape, values

pytestmark = pytest.mark.cluster

CLIENT_STATE_RUNNING = 2
THREAD_STATE_RUNNING = 4


def wait_until(check, timeout: float = 90.0, interval: float = 1.0):
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not true after {timeout:.0f}s: {check.__doc__ or check}")
        time.sleep(interval)


def test_both_streams_instances_reach_running_seen_from_their_metrics_endpoints(demo_workload):
    def both_running():
        """client-state RUNNING and every stream thread RUNNING on both instances"""
        for url in demo_workload.streams_metrics_urls():
            samples = scrape(url)
            if values(samples, "kafka_streams_stream_metrics_client_state") != [CLIENT_STATE_RUNNING]:
                return False
            threads = values(samples, "kafka_streams_stream_thread_metrics_thread_state")
            if not threads or any(state != THREAD_STATE_RUNNING for state in threads):
                return False
        return True

    wait_until(both_running)
    for url in demo_workload.streams_metrics_urls():
        samples = scrape(url)
        assert values(samples, "kafka_streams_stream_metrics_alive_stream_threads") == [1]
        assert values(samples, "kafka_streams_stream_metrics_failed_stream_threads") == [0]


def test_the_streams_app_owns_repartition_and_changelog_topics_and_writes_its_output(demo_workload, bootstrap):
    listed = run_tool("kafka-topics", ["--bootstrap-server", bootstrap, "--list"]).stdout.split()
    assert f"{STREAMS_APPLICATION_ID}-by-customer-repartition" in listed
    assert f"{STREAMS_APPLICATION_ID}-order-counts-changelog" in listed

    def output_written():
        """demo.order-counts has records"""
        result = run_tool("kafka-get-offsets", ["--bootstrap-server", bootstrap, "--topic", "demo.order-counts"])
        return sum(int(line.rsplit(":", 1)[1]) for line in result.stdout.split()) > 0

    wait_until(output_written)


def test_the_healthy_group_keeps_up_the_slow_one_falls_behind_and_the_stopped_one_has_offsets(demo_workload,
                                                                                             bootstrap):
    def groups_formed():
        """demo-healthy and demo-slow have members on every partition, demo-stopped has committed"""
        return (all(row["CONSUMER-ID"] != "-" for row in group_rows(bootstrap, "demo-healthy"))
                and all(row["CONSUMER-ID"] != "-" for row in group_rows(bootstrap, "demo-slow"))
                and any(row["CURRENT-OFFSET"] != "-" for row in group_rows(bootstrap, "demo-stopped")))

    wait_until(groups_formed)
    first_slow = sum(int(row["LAG"]) for row in group_rows(bootstrap, "demo-slow") if row["LAG"] != "-")
    time.sleep(5)
    slow = group_rows(bootstrap, "demo-slow")
    healthy = group_rows(bootstrap, "demo-healthy")
    stopped = group_rows(bootstrap, "demo-stopped")
    assert sum(int(row["LAG"]) for row in slow) > first_slow, "demo-slow's lag does not grow"
    assert sum(int(row["LAG"]) for row in healthy) < 100, f"demo-healthy falls behind: {healthy}"
    assert all(row["CONSUMER-ID"] == "-" for row in stopped), "demo-stopped still has members"
    committed = sum(int(row["CURRENT-OFFSET"]) for row in stopped if row["CURRENT-OFFSET"] != "-")
    assert committed == 100, f"demo-stopped should have committed exactly 100 records, has {committed}"


def test_demo_topics_have_the_replication_the_scenarios_need(demo_workload, bootstrap):
    described = run_tool("kafka-topics", ["--bootstrap-server", bootstrap, "--describe", "--topic", "demo.orders"])
    assert re.search(r"ReplicationFactor: 3", described.stdout)
    assert "min.insync.replicas=2" in described.stdout
    rf1 = run_tool("kafka-topics", ["--bootstrap-server", bootstrap, "--describe", "--topic", "demo.audit-rf1"])
    leaders = sorted(re.findall(r"Leader: (\d+)", rf1.stdout))
    assert leaders == ["1", "2", "3"], "each broker should lead one partition of the replication-factor-1 topic"


def tool_rows(tool: str, bootstrap: str, *args: str) -> list[dict[str, str]]:
    """The rows of an official tool's table (``tests.support.official_rows``: empty cells kept)."""
    return official_rows(tool, "--bootstrap-server", bootstrap, *args)


def test_the_demo_shows_a_group_of_each_of_the_four_types_as_kafka_groups_lists_them(demo_workload, bootstrap):
    expected = {STREAMS_APPLICATION_ID: ("Classic", "consumer"), "demo-healthy": ("Classic", "consumer"),
                "demo-slow": ("Classic", "consumer"), "demo-stopped": ("Classic", "consumer"),
                KIP848_GROUP: ("Consumer", "consumer"), KIP1071_APPLICATION_ID: ("Streams", "streams"),
                SHARE_GROUP: ("Share", "share")}
    listed: dict[str, tuple[str, str]] = {}

    def all_listed():
        """kafka-groups --list shows every demo group with its type and protocol"""
        listed.clear()
        listed.update({row["GROUP"]: (row["TYPE"], row["PROTOCOL"])
                       for row in tool_rows("kafka-groups", bootstrap, "--list")})
        return all(group in listed for group in expected)

    wait_until(all_listed)
    assert {group: listed[group] for group in expected} == expected
    assert {kind for kind, _ in listed.values()} >= {"Classic", "Consumer", "Streams", "Share"}


def test_the_kip848_group_is_stable_with_its_member_on_every_partition(demo_workload, bootstrap):
    partitions = next(spec.partitions for spec in TOPICS if spec.name == "demo.orders")

    def assigned():
        """demo-kip848 has a member on every partition of demo.orders"""
        rows = [row for row in group_rows(bootstrap, KIP848_GROUP) if row["TOPIC"] == "demo.orders"]
        return len(rows) == partitions and all(row["CONSUMER-ID"] != "-" for row in rows)

    wait_until(assigned)
    state = tool_rows("kafka-consumer-groups", bootstrap, "--describe", "--state", "--group", KIP848_GROUP)
    assert [(row["STATE"], row["#MEMBERS"]) for row in state] == [("Stable", "1")]


def test_the_share_group_has_a_fast_and_a_slow_member_and_the_slow_one_leaves_lag_while_it_moves(
        demo_workload, bootstrap):
    def both_members():
        """kafka-share-groups --describe --members shows the fast and the slow member with partitions"""
        rows = tool_rows("kafka-share-groups", bootstrap, "--describe", "--members", "--group", SHARE_GROUP)
        return (sorted(row["CLIENT-ID"] for row in rows) == ["kpulse-demo-share-fast", "kpulse-demo-share-slow"]
                and all(int(row["#PARTITIONS"]) > 0 for row in rows))

    wait_until(both_members)
    offsets: list[dict[str, int]] = []

    def lag_above_zero_and_acknowledging():
        """kafka-share-groups --describe: LAG > 0 and the start offsets moved since the first read"""
        rows = tool_rows("kafka-share-groups", bootstrap, "--describe", "--group", SHARE_GROUP)
        if not rows or any(row["START-OFFSET"] == "-" for row in rows):
            return False
        offsets.append({"start": sum(int(row["START-OFFSET"]) for row in rows),
                        "lag": sum(int(row["LAG"]) for row in rows)})
        return offsets[-1]["lag"] > 0 and offsets[-1]["start"] > offsets[0]["start"]

    wait_until(lag_above_zero_and_acknowledging)


def test_the_streams_protocol_app_reaches_running_and_its_streams_group_is_stable(demo_workload, bootstrap):
    def running():
        """the kpulse-demo-kip1071 instance reports client state RUNNING"""
        return all(values(scrape(url), "kafka_streams_stream_metrics_client_state") == [CLIENT_STATE_RUNNING]
                   for url in demo_workload.streams_metrics_urls(KIP1071_APPLICATION_ID))

    def stable():
        """kafka-streams-groups --describe --state says Stable with one member"""
        rows = tool_rows("kafka-streams-groups", bootstrap, "--describe", "--state", "--group",
                         KIP1071_APPLICATION_ID)
        return [(row["STATE"], row["#MEMBERS"]) for row in rows] == [("Stable", "1")]

    wait_until(running)
    wait_until(stable)
    listed = run_tool("kafka-topics", ["--bootstrap-server", bootstrap, "--list"]).stdout.split()
    assert f"{KIP1071_APPLICATION_ID}-by-customer-repartition" in listed
    assert f"{KIP1071_APPLICATION_ID}-order-counts-changelog" in listed


def test_demo_stop_leaves_no_demo_process_and_start_brings_every_one_back(demo_workload, bootstrap):
    """Last in this module: the session's demo runs again afterwards, for the modules that follow."""
    started = {item.name: item.pid for item in demo_workload.status() if item.running}
    assert {"share-fast", "share-slow", "streams-kip1071-1", f"consumer-{KIP848_GROUP}"} <= set(started)

    stopped = demo_workload.stop()

    assert sorted(stopped) == sorted(started.values())
    left = [pid for pid in started.values()
            if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]
    assert not left, f"still running after demo stop: {left}"
    assert not [process.info for process in psutil.process_iter(["pid", "cmdline"]) if _is_demo_process(
        process.info["cmdline"] or [], bootstrap)], "a demo process on this cluster outlived demo stop"
    assert not [item.name for item in demo_workload.status() if item.running]

    demo_workload.start()
    assert {item.name for item in demo_workload.status() if item.running} == set(started)


def _is_demo_process(cmdline: list[str], bootstrap: str) -> bool:
    demo = any(part in ("localkafka.demo.workers", "kpulse.demo.StreamsDemo", "kpulse.demo.ShareDemo")
               for part in cmdline)
    return demo and bootstrap in cmdline


def test_the_poison_group_sits_on_the_malformed_record_with_its_member_while_its_lag_grows(demo_workload, bootstrap):
    """The demo producer sends one malformed record to demo.poison; demo-poison's consumer fails on
    it and retries, so the group keeps its member and its committed offset while records pile up:
    the STALL a new user meets on first start."""
    rows: list[dict[str, str]] = []

    def stuck():
        """demo-poison has a member and has committed up to the malformed record, with lag behind it"""
        rows[:] = group_rows(bootstrap, POISON_GROUP)
        return (len(rows) == 1 and rows[0]["CONSUMER-ID"] != "-" and rows[0]["CURRENT-OFFSET"] == str(POISON_AFTER)
                and rows[0]["LAG"] not in ("-", "0"))

    wait_until(stuck)
    lag = int(rows[0]["LAG"])
    wait_until(lambda: stuck() and int(rows[0]["LAG"]) > lag)
    assert rows[0]["CURRENT-OFFSET"] == str(POISON_AFTER)
    value = run_tool("kafka-console-consumer", ["--bootstrap-server", bootstrap, "--topic", POISON_TOPIC,
                                                "--partition", "0", "--offset", str(POISON_AFTER),
                                                "--max-messages", "1", "--timeout-ms", "20000"]).stdout.strip()
    assert value == MALFORMED_VALUE
