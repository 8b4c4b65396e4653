"""The demo workload gives every page something real: steady traffic, a healthy, a slow and a
stopped group, and a Kafka Streams application in two instances."""

from __future__ import annotations

import re
import time

import pytest

from localkafka.demo.topology import STREAMS_APPLICATION_ID
from localkafka.tools import run_tool
from tests.support import group_rows, scrape, values

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
