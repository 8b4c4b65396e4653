"""Helpers shared by the operations tests (no tests here): topics with known contents, twin
groups with identical committed offsets, and an Operations service on the test cluster."""

from __future__ import annotations

import time
from pathlib import Path

from localkafka.tools import run_tool


def admin_for(bootstrap: str):
    from kpulse.kafka.clients import admin_client

    return admin_client({"bootstrap.servers": bootstrap})


def create_topic(admin, name: str, partitions: int, replication: int = 3, config: dict | None = None,
                 assignment: list[list[int]] | None = None) -> None:
    from confluent_kafka.admin import NewTopic

    topic = (NewTopic(name, num_partitions=len(assignment), replica_assignment=assignment, config=config or {}) if assignment
             else NewTopic(name, partitions, replication, config=config or {}))
    admin.create_topics([topic], request_timeout=20)[name].result(timeout=30)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        topics = admin.list_topics(timeout=10).topics
        if name in topics and all(p.leader >= 0 for p in topics[name].partitions.values()):
            return
        time.sleep(0.2)
    raise AssertionError(f"topic {name} has no leaders")


def produce(bootstrap: str, topic: str, counts: dict[int, int], *, first_ms: int, step_ms: int) -> None:
    """``counts[p]`` messages into partition p; message j has timestamp first_ms + j * step_ms."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for partition, count in counts.items():
        for j in range(count):
            producer.produce(topic, value=f"{partition}-{j}".encode(), partition=partition,
                             timestamp=first_ms + j * step_ms)
    assert producer.flush(30) == 0


def commit(admin, group: str, offsets: dict[tuple[str, int], int]) -> None:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    from operations.errors import OperationError
    from operations.kafka_reads import group_call

    request = ConsumerGroupTopicPartitions(group, [TopicPartition(t, p, o) for (t, p), o in offsets.items()])
    errors: list = []
    for _ in range(20):
        try:  # a fresh cluster creates __consumer_offsets on the first commit: slow on a busy machine
            answer = group_call(lambda: admin.alter_consumer_group_offsets([request], request_timeout=15)[group],
                                f"commit {group}")
        except OperationError as error:
            errors = [error]
            continue
        errors = [tp.error for tp in answer.topic_partitions if tp.error is not None]
        if not errors and committed(admin, group) == offsets:
            return
        time.sleep(0.3)
    raise AssertionError(f"cannot commit offsets of {group}: {errors}")


def committed(admin, group: str) -> dict[tuple[str, int], int]:
    from operations.kafka_reads import committed_offsets

    return committed_offsets(admin, group)


def official(tool: str, *args: str) -> str:
    result = run_tool(tool, list(args), timeout=120)
    return result.stdout + result.stderr if result.returncode == 0 else f"EXIT {result.returncode}: " + result.stdout + result.stderr


def config_file(path: Path, bootstrap: str, lake: Path, *, read_only: bool = False,
                users_file: Path | None = None, name: str = "test") -> Path:
    text = (f"clusters:\n  - name: {name}\n    bootstrap_servers: \"{bootstrap}\"\n"
            f"    read_only: {'true' if read_only else 'false'}\n    probe:\n      enabled: false\n"
            f"lake:\n  path: {lake}\n")
    if users_file:
        text += f"dashboard:\n  users_file: {users_file}\n"
    path.write_text(text)
    return path


def operations_for(tmp_path: Path, bootstrap: str, **options):
    from kpulse.config import load_config
    from operations.service import Operations

    config = load_config(config_file(tmp_path / "kpulse.yaml", bootstrap, tmp_path / "lake", **options))
    return Operations(config, state_dir=tmp_path / "state")
