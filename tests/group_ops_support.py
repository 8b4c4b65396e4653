"""Helpers of the group operations' tests (test_ops_groups, test_ops_streams_groups,
test_ops_share_groups, test_dashboard_group_ops): a group's offsets read and committed through
kafka-python (librdkafka's offset reads can crash on a moving coordinator, librdkafka #5040), and
waiting for a condition.

TEMPORARY below them: a Streams application on group.protocol=streams and a share consumer, with
the signatures of the helpers the group reader's part adds to tests/support.py
(``start_streams_app``, ``start_share_consumer``, ``set_share_auto_offset_reset``); once those are
on main, import them from tests.support and delete them here."""

from __future__ import annotations

import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

from localkafka.tools import run_tool
from tests.support import admin_for, create_topic

STREAMS_APP_TOPICS = ("orders", "orders-by-region", "order-counts")


def group_requests(bootstrap: str):
    """:class:`operations.group_requests.GroupRequests` on the test cluster (close it, or use ``with``)."""
    from kafka.admin import KafkaAdminClient

    from operations.group_requests import GroupRequests

    return GroupRequests(lambda: KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kpulse-test"))


def committed(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    """The group's committed offsets (any group type but share)."""
    with group_requests(bootstrap) as requests:
        return requests.committed(group)


def commit(bootstrap: str, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Commit ``offsets`` for a group without members; again while the coordinator does not know a
    topic just created yet."""
    with group_requests(bootstrap) as requests:
        for _ in range(20):
            errors = set(requests.commit(group, offsets).values())
            if errors == {None}:
                break
            time.sleep(0.5)
        assert errors == {None} and requests.committed(group) == offsets


def wait_until(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(1)


def set_share_auto_offset_reset(bootstrap: str, group: str, reset: str = "earliest") -> None:
    result = run_tool("kafka-configs", ["--bootstrap-server", bootstrap, "--alter", "--entity-type", "groups",
                                        "--entity-name", group, "--add-config", f"share.auto.offset.reset={reset}"])
    assert result.returncode == 0, result.stdout + result.stderr


@contextmanager
def start_share_consumer(bootstrap: str, topic: str, group: str, *, earliest: bool = True, extra_args: list[str] = ()):
    from localkafka.tools import tool_command

    if earliest:
        set_share_auto_offset_reset(bootstrap, group)
    command = tool_command("kafka-console-share-consumer",
                           ["--bootstrap-server", bootstrap, "--topic", topic, "--group", group, *extra_args])
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield process
    finally:
        _stop(process)


@contextmanager
def start_streams_app(bootstrap: str, application_id: str, topic_prefix: str, state_dir: Path, *,
                      protocol: str = "streams", instance: int = 1, partitions: int = 3):
    from localkafka.runtime import ensure_runtime, java_command

    admin = admin_for(bootstrap)
    existing = admin.list_topics(timeout=15).topics
    for name in STREAMS_APP_TOPICS:
        if topic_prefix + name not in existing:
            create_topic(admin, topic_prefix + name, partitions)
    runtime = ensure_runtime()
    state_dir.mkdir(parents=True, exist_ok=True)
    command = java_command(runtime, "kpulse.demo.StreamsDemo",
                           [bootstrap, str(instance), str(state_dir / f"state-{instance}"), application_id, protocol,
                            topic_prefix], extra_classpath=[runtime.streams_demo_classes])
    with open(state_dir / f"streams-{instance}.log", "ab") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        yield process
    finally:
        _stop(process, grace=30)


def _stop(process: subprocess.Popen, grace: float = 15) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
