"""Pure parts of the local cluster: port layout, node settings, PID records."""

from __future__ import annotations

import json
import os

import psutil
import pytest

from kpulse import processes
from kpulse.local_layout import ClusterLayout, UnknownNodeError
from localkafka.layout import FAST_FAILURE_SETTINGS, server_properties


def test_every_port_of_the_layout_is_distinct_and_derives_from_the_base():
    layout = ClusterLayout.from_base(20000)
    ports = [p for n in layout.nodes for p in (n.client_port, n.controller_port, n.metrics_port)]
    ports += [layout.streams_metrics_port(1), layout.streams_metrics_port(2), layout.streams_metrics_port(3)]
    assert len(set(ports)) == len(ports)
    assert layout.bootstrap_servers == "127.0.0.1:20001,127.0.0.1:20002,127.0.0.1:20003"
    assert layout.quorum_voters == "1@127.0.0.1:20101,2@127.0.0.1:20102,3@127.0.0.1:20103"


def test_node_properties_make_a_combined_kraft_node_with_fast_failure_detection():
    layout = ClusterLayout.from_base(20000)
    text = server_properties(layout, layout.node(2), "/data/2")
    settings = dict(line.split("=", 1) for line in text.splitlines())
    assert settings["process.roles"] == "broker,controller"
    assert settings["node.id"] == "2"
    assert settings["listeners"] == "PLAINTEXT://127.0.0.1:20002,CONTROLLER://127.0.0.1:20102"
    assert settings["log.dirs"] == "/data/2"
    for key, value in FAST_FAILURE_SETTINGS.items():
        assert settings[key] == value


def test_asking_for_a_node_the_cluster_does_not_have_names_the_known_ones():
    with pytest.raises(UnknownNodeError, match=r"no node 4 in the local cluster \(nodes: 1, 2, 3\)"):
        ClusterLayout.from_base(20000).node(4)


def test_a_pid_file_whose_process_started_at_another_time_is_not_ours(tmp_path):
    me = psutil.Process(os.getpid())
    ours = tmp_path / "ours.json"
    ours.write_text(json.dumps({"pid": me.pid, "create_time": me.create_time(), "command": ["x"]}))
    reused = tmp_path / "reused.json"
    reused.write_text(json.dumps({"pid": me.pid, "create_time": me.create_time() - 3600, "command": ["x"]}))
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text("{not json")
    assert processes.running_pid(ours) == me.pid
    assert processes.running_pid(reused) is None
    assert processes.running_pid(corrupt) is None
    assert processes.stop(reused) is False  # never signals a stranger
    assert not reused.exists()


def test_start_and_stop_a_background_process_by_its_pid_file(tmp_path):
    pid_file, log = tmp_path / "sleep.json", tmp_path / "sleep.log"
    pid = processes.start(["sleep", "60"], pid_file=pid_file, log_file=log)
    assert processes.running_pid(pid_file) == pid
    assert processes.stop(pid_file, timeout=5) is True
    assert processes.running_pid(pid_file) is None
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_node_jvm_fast_start_is_the_default_and_the_steady_jvm_runs_both_jit_tiers(tmp_path):
    from pathlib import Path

    from localkafka.cluster import STEADY_JVM, LocalCluster
    from localkafka.runtime import JavaRuntime, java_command

    runtime = JavaRuntime(Path("/opt/kafka"))
    demo = java_command(runtime, "kafka.Kafka", ["server.properties"], heap="384m")
    steady = java_command(runtime, "kafka.Kafka", ["server.properties"], heap=STEADY_JVM.heap,
                          fast_start=STEADY_JVM.fast_start)
    assert "-XX:TieredStopAtLevel=1" in demo and "-Xmx384m" in demo
    assert "-XX:TieredStopAtLevel=1" not in steady and "-Xmx1g" in steady
    assert LocalCluster(tmp_path).jvm.fast_start and LocalCluster(tmp_path, jvm=STEADY_JVM).jvm.heap == "1g"


def test_every_topic_the_demo_produces_to_or_consumes_from_is_one_it_creates():
    from localkafka.demo.topology import (CONSUMERS, ORDER_TOPICS, PRODUCERS, SHARE_CONSUMERS, SHARE_GROUP_CONFIGS,
                                          STREAMS_APPS, TOPICS)

    created = {spec.name for spec in TOPICS}
    produced = {spec.topic for spec in PRODUCERS}
    streams_topics = {app.topic_prefix + name for app in STREAMS_APPS
                      for name in ("orders", "orders-by-region", "order-counts")}
    assert {spec.topic for spec in CONSUMERS} | {spec.topic for spec in SHARE_CONSUMERS} <= produced <= created
    assert streams_topics <= created and ORDER_TOPICS <= produced
    assert {spec.group for spec in SHARE_CONSUMERS} == set(SHARE_GROUP_CONFIGS)
    ids = [app.application_id for app in STREAMS_APPS]
    assert not [(a, b) for a in ids for b in ids if a != b and b.startswith(a)], \
        "one demo app's internal topics would start with another's application id"


def test_a_kip848_demo_consumer_leaves_the_broker_owned_settings_out_and_librdkafka_accepts_it():
    from confluent_kafka import Consumer

    from localkafka.demo.workers import consumer_config

    classic = consumer_config("127.0.0.1:1", "g", "classic")
    modern = consumer_config("127.0.0.1:1", "g", "consumer")
    assert classic["group.protocol"] == "classic" and "session.timeout.ms" in classic
    assert modern["group.protocol"] == "consumer"
    assert not {"session.timeout.ms", "heartbeat.interval.ms", "partition.assignment.strategy"} & set(modern)
    Consumer(modern).close()  # librdkafka refuses the classic-only settings when it is built
