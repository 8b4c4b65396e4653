"""TEMPORARY helpers for tests/test_ops_groups.py: a Streams application on group.protocol=streams
and a share consumer, with the signatures of the helpers the group reader's part adds to
tests/support.py (``start_streams_app``, ``start_share_consumer``, ``set_share_auto_offset_reset``).
Once those are on main, import them from tests.support and delete this file."""

from __future__ import annotations

import subprocess
from contextlib import contextmanager
from pathlib import Path

from localkafka.tools import run_tool
from tests.support import admin_for, create_topic

STREAMS_APP_TOPICS = ("orders", "orders-by-region", "order-counts")


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
