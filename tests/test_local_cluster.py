"""The local cluster is a real three-node KRaft cluster, and the official tools agree on it."""

from __future__ import annotations

import json
import re
import time

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from localkafka.tools import run_tool
from tests.conftest import kpulse
from tests.support import described_partitions, scrape, values

pytestmark = pytest.mark.cluster


def test_all_three_nodes_are_voters_and_the_quorum_has_a_leader(bootstrap):
    result = run_tool("kafka-metadata-quorum", ["--bootstrap-server", bootstrap, "describe", "--status"])
    assert result.returncode == 0, result.stderr
    leader = int(re.search(r"LeaderId:\s+(-?\d+)", result.stdout).group(1))
    voters = json.loads(re.search(r"CurrentVoters:\s+(\[.*\])", result.stdout).group(1))
    assert sorted(v["id"] for v in voters) == [1, 2, 3]
    assert leader in (1, 2, 3)


def test_status_json_names_every_node_with_its_metrics_endpoint(local_cluster):
    status = json.loads(kpulse("cluster", "status", "--json").stdout)
    assert status["bootstrap_servers"] == local_cluster.layout.bootstrap_servers
    assert [node["id"] for node in status["nodes"]] == [1, 2, 3]
    for node in status["nodes"]:
        assert node["running"] is True
        assert node["port"] == local_cluster.layout.node(node["id"]).client_port
        assert node["metrics_url"].startswith("http://127.0.0.1:")


def test_up_is_a_no_op_when_the_cluster_is_already_up(local_cluster):
    before = [node.pid for node in local_cluster.status().nodes]
    result = kpulse("cluster", "up")
    assert "already up" in result.stderr
    assert [node.pid for node in local_cluster.status().nodes] == before


BROKER_METRICS = {
    "kafka_server_replicamanager_underreplicatedpartitions": (0, 0),
    "kafka_server_replicamanager_underminisrpartitioncount": (0, 0),
    "kafka_server_replicamanager_partitioncount": (0, 10_000),
    "kafka_server_replicamanager_leadercount": (0, 10_000),
    "kafka_controller_kafkacontroller_offlinepartitionscount": (0, 0),
    "kafka_controller_kafkacontroller_activecontrollercount": (0, 1),
    "kafka_server_metadataloader_currentcontrollerid": (1, 3),
    "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent": (0, 1.0001),
    "kafka_network_socketserver_networkprocessoravgidlepercent": (0, 1.0001),
    "kafka_server_brokertopicmetrics_bytesinpersec_total": (0, 1e12),
    "kafka_server_brokertopicmetrics_bytesoutpersec_total": (0, 1e12),
    "kafka_server_brokertopicmetrics_messagesinpersec_total": (0, 1e12),
}


def test_every_metrics_endpoint_serves_the_health_metrics_with_plausible_values(local_cluster, bootstrap):
    _produce(bootstrap, "metrics.check", 50)
    per_node = {node.node_id: scrape(node.metrics_url) for node in local_cluster.layout.nodes}
    for node_id, samples in per_node.items():
        for name, (low, high) in BROKER_METRICS.items():
            found = values(samples, name)
            assert found, f"node {node_id} does not export {name}"
            assert all(low <= v <= high for v in found), f"node {node_id} {name}={found} not in [{low}, {high}]"
        for request in ("Produce", "FetchConsumer"):
            key = f'kafka_network_requestmetrics_totaltimems{{quantile="0.99",request="{request}"}}'
            assert key in samples, f"node {node_id} has no p99 TotalTimeMs for {request}"
    active = sum(values(samples, "kafka_controller_kafkacontroller_activecontrollercount")[0]
                 for samples in per_node.values())
    assert active == 1
    messages_in = sum(values(s, "kafka_server_brokertopicmetrics_messagesinpersec_total")[0] for s in per_node.values())
    assert messages_in >= 50, "the 50 records just produced are not counted by MessagesInPerSec"


def test_killing_a_broker_shows_in_the_official_tools_and_starting_it_heals(local_cluster, bootstrap):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [NewTopic("kill.rf3", num_partitions=3, replication_factor=3, config={"min.insync.replicas": "2"}),
              NewTopic("kill.rf1", num_partitions=3, replica_assignment=[[1], [2], [3]],
                       config={"min.insync.replicas": "1"})]
    for future in admin.create_topics(topics).values():
        future.result(30)
    _produce(bootstrap, "kill.rf3", 30)

    kpulse("cluster", "kill-broker", "2")
    try:
        urp = _wait_for(lambda: described_partitions(bootstrap, "--under-replicated-partitions", "kill.rf3"),
                        lambda rows: len(rows) == 3)
        assert all("2" not in row["Isr"].split(",") for row in urp)
        unavailable = _wait_for(lambda: described_partitions(bootstrap, "--unavailable-partitions", "kill.rf1"),
                                lambda rows: len(rows) == 1)
        assert unavailable[0]["Partition"] == "1" and unavailable[0]["Replicas"] == "2"
        assert not local_cluster.status().nodes[1].running
    finally:
        kpulse("cluster", "start-broker", "2")
    _wait_for(lambda: described_partitions(bootstrap, "--under-replicated-partitions", "kill.rf3"), lambda rows: rows == [])
    _wait_for(lambda: described_partitions(bootstrap, "--unavailable-partitions", "kill.rf1"), lambda rows: rows == [])


def test_stop_broker_is_a_controlled_shutdown_that_moves_leadership_away(local_cluster, bootstrap):
    kpulse("cluster", "stop-broker", "3")
    try:
        assert not local_cluster.status().nodes[2].running
        rows = described_partitions(bootstrap, "", "kill.rf3") if _topic_exists(bootstrap, "kill.rf3") else []
        assert all(row["Leader"] != "3" for row in rows)
    finally:
        kpulse("cluster", "start-broker", "3")
    assert local_cluster.status().all_running


def test_an_unknown_node_is_one_line_and_changes_nothing(local_cluster):
    before = local_cluster.status()
    result = kpulse("cluster", "kill-broker", "7", check=False)
    assert result.returncode == 1
    assert result.stderr.strip() == "kpulse: error: no node 7 in the local cluster (nodes: 1, 2, 3)"
    assert local_cluster.status() == before


def _produce(bootstrap: str, topic: str, count: int) -> None:
    from confluent_kafka import Producer

    admin = AdminClient({"bootstrap.servers": bootstrap})
    if not _topic_exists(bootstrap, topic):
        admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=3)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(count):
        producer.produce(topic, value=f"record-{i}")
    assert producer.flush(30) == 0


def _topic_exists(bootstrap: str, topic: str) -> bool:
    return topic in AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics


def _wait_for(read, done, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if done(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met after {timeout:.0f}s; last value: {value}")
        time.sleep(1)
