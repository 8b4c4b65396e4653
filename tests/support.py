"""Helpers the test modules share (no tests here; fixtures stay in conftest.py): a free port,
topics with known contents and groups with known committed offsets on the test cluster, what the
official Kafka tools say, the CLI and an Operations service on a config of its own, a Prometheus
scrape, the dashboard's entry file, and SLO inputs on small Arrow tables.

Test modules import their helpers from here (or from the support modules beside it:
``dashboard_lake``, ``dashboard_ops``, ``dashboard_browser``, ``slo_spark``, ``fuzz_*``,
``prometheus_server``: a real Prometheus), never from another test module:
``tests/test_test_layout.py`` keeps it so."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta, UTC
from pathlib import Path

import yaml

from localkafka.tools import run_tool

APP_FILE = Path(__file__).resolve().parent.parent / "dashboard" / "app.py"
"""The dashboard's entry file, for ``AppTest.from_file`` and ``streamlit run``."""


def free_port() -> int:
    """A TCP port nothing listens on right now (the OS picked it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- Kafka: topics with known contents, groups with known offsets -------------------------------

def admin_for(bootstrap: str):
    from kpulse.kafka.clients import admin_client

    return admin_client({"bootstrap.servers": bootstrap})


def create_topic(admin, name: str, partitions: int, replication: int = 3, config: dict | None = None,
                 assignment: list[list[int]] | None = None) -> None:
    """Create ``name`` (``assignment``: the replicas of each partition) and wait until every
    partition has a leader."""
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


def fill_topic(bootstrap: str, name: str, counts: dict[int, int]) -> None:
    """Create ``name`` with one partition per key of ``counts`` and write that many records to each."""
    from confluent_kafka import Producer

    create_topic(admin_for(bootstrap), name, len(counts))
    producer = Producer({"bootstrap.servers": bootstrap})
    for partition, count in counts.items():
        for _ in range(count):
            producer.produce(name, value=b"x", partition=partition)
    producer.flush(30)


def commit(admin, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Commit ``offsets`` for ``group`` (a group without members), and wait until reading them back
    gives them (its other partitions keep their offsets). Through kafka-python, as the operations
    commit (librdkafka's AlterConsumerGroupOffsets aborts the process on a moving coordinator, as
    on the first commit of a fresh cluster, which creates __consumer_offsets); asked again while a
    topic just created is not known to the coordinator yet."""
    from operations.errors import OperationError

    errors: list = []
    with _group_requests(admin) as requests:
        for _ in range(20):
            try:  # a fresh cluster creates __consumer_offsets on the first commit: slow on a busy machine
                errors = [e for e in requests.commit(group, offsets).values() if e is not None]
            except OperationError as error:
                errors = [error]
            if not errors:
                now = requests.committed(group, require_stable=False)
                if all(now.get(tp) == offset for tp, offset in offsets.items()):
                    return
            time.sleep(0.3)
    raise AssertionError(f"cannot commit offsets of {group}: {errors}")


def committed(admin, group: str) -> dict[tuple[str, int], int]:
    """The group's committed offsets (only the partitions that have one), read as the operations
    and the official tools read them (kafka-python; a pending transactional commit unseen)."""
    with _group_requests(admin) as requests:
        return requests.committed(group, require_stable=False)


def _group_requests(admin):
    """:class:`operations.group_requests.GroupRequests` on the cluster ``admin`` (librdkafka's) is
    connected to, found from its metadata's brokers."""
    from kafka.admin import KafkaAdminClient

    from operations.group_requests import GroupRequests

    brokers = admin.list_topics(timeout=15).brokers.values()
    bootstrap = [f"{broker.host}:{broker.port}" for broker in brokers]
    return GroupRequests(lambda: KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kpulse-test"))


def read_log_ends(admin, partitions, timeout: float, result) -> None:
    """librdkafka's log end offsets of ``partitions`` into ``result`` (a ``ClusterOffsets``), one
    ListOffsets per chunk, with a reason per partition that cannot be read: the reference the
    collector's own reads are compared with."""
    from kpulse.kafka import group_offsets

    group_offsets.finish_log_ends(group_offsets.start_log_ends(admin, partitions, timeout), timeout, result)


# --- what the official Kafka tools say ---------------------------------------------------------------

def official(tool: str, *args: str) -> str:
    """The tool's output, or ``EXIT <code>: <output>`` when it failed."""
    result = run_tool(tool, list(args), timeout=120)
    return result.stdout + result.stderr if result.returncode == 0 else f"EXIT {result.returncode}: " + result.stdout + result.stderr


def official_rows(tool: str, *args: str, check: bool = True) -> list[dict[str, str]]:
    """The table rows the official ``tool`` prints (``kafka-consumer-groups --describe --state``,
    ``kafka-share-groups --describe --members --verbose``, ``kafka-groups --list``...), as dicts by
    column header; several tables (several groups) are concatenated. ``COORDINATOR (ID)`` is one
    column; an empty cell (a classic Empty group's ASSIGNMENT-STRATEGY) is ''. Without ``check``,
    a tool that failed (a group not found yet) gives the rows it printed, if any."""
    result = run_tool(tool, list(args), timeout=120)
    assert not check or result.returncode == 0 or "has no active members" in result.stdout + result.stderr, \
        result.stdout + result.stderr
    rows: list[dict[str, str]] = []
    header: list[tuple[str, int]] = []
    for line in result.stdout.splitlines():
        if line.startswith("GROUP "):
            header = [(m.group(0), m.start()) for m in re.finditer(r"COORDINATOR \(ID\)|\S+", line)]
            continue
        if not header or not line.strip() or line.startswith(("Error", "Consumer group", "Share group", "Streams group")):
            continue
        names = [name for name, _ in header]
        cells = re.sub(r"(\S+:\d+)\s+\((\d+)\)", r"\1(\2)", line).split()
        if len(cells) == len(names):
            rows.append(dict(zip(names, cells)))
        else:  # an empty cell: cut the line at the columns' starts
            starts = [start for _, start in header] + [len(line)]
            rows.append({name: line[starts[i]:starts[i + 1]].strip() for i, name in enumerate(names)})
    return rows


def group_rows(bootstrap: str, group: str) -> list[dict[str, str]]:
    """Rows of the official `kafka-consumer-groups --describe --group`."""
    result = run_tool("kafka-consumer-groups", ["--bootstrap-server", bootstrap, "--describe", "--group", group])
    assert result.returncode == 0, result.stderr
    lines = [line.split() for line in result.stdout.splitlines() if line.strip()]
    header_index = next(i for i, cells in enumerate(lines) if cells[:2] == ["GROUP", "TOPIC"])
    header = lines[header_index]
    return [dict(zip(header, cells)) for cells in lines[header_index + 1:] if cells[0] == group]


def described_partitions(bootstrap: str, flag: str, topic: str | None) -> list[dict[str, str]]:
    """Partition rows of `kafka-topics --describe [flag] [--topic topic]`, as dicts."""
    args = ["--bootstrap-server", bootstrap, "--describe"] + (["--topic", topic] if topic else [])
    args += [flag] if flag else []
    result = run_tool("kafka-topics", args)
    assert result.returncode == 0, result.stderr
    rows = []
    for line in result.stdout.splitlines():
        if "Partition:" in line:
            rows.append(dict(re.findall(r"(\w+): ([^\t]*)", line.strip())))
    return [{k: v.strip() for k, v in row.items()} for row in rows]


# --- the CLI and the operations on a config of their own --------------------------------------------

def cli(config, *args, env=None, timeout=120) -> subprocess.CompletedProcess:
    """``kpulse --config <config> <args>`` as a user would run it, the exit code not checked."""
    return subprocess.run([sys.executable, "-m", "cli.main", "--config", str(config), *args], capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})})


def config_file(path: Path, bootstrap: str, lake: Path, *, read_only: bool = False,
                users_file: Path | None = None, name: str = "test") -> Path:
    """A kpulse.yaml at ``path`` naming one cluster (probe off) and the lake."""
    text = (f"clusters:\n  - name: {name}\n    bootstrap_servers: \"{bootstrap}\"\n"
            f"    read_only: {'true' if read_only else 'false'}\n    probe:\n      enabled: false\n"
            f"lake:\n  path: {lake}\n")
    if users_file:
        text += f"dashboard:\n  users_file: {users_file}\n"
    path.write_text(text)
    return path


def collect_config(layout, directory: Path, **extra) -> Path:
    """A config file for ``kpulse collect`` on the test cluster: cluster ``test`` with its JMX
    exporters, the lake under ``directory``, 1 s cycles, and ``extra`` top-level sections."""
    data = {"clusters": [{"name": "test", "bootstrap_servers": layout.bootstrap_servers,
                          "metrics": {"source": "jmx_exporter", "timeout_seconds": 10,
                                      "broker_endpoints": {n.node_id: n.metrics_url for n in layout.nodes}}}],
            "lake": {"path": str(directory / "lake")},
            "intervals": {"collect_seconds": 1}, **extra}
    path = directory / "kpulse.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def operations_for(tmp_path: Path, bootstrap: str, **options):
    """An Operations service on a config of its own in ``tmp_path`` (``options``: of :func:`config_file`)."""
    from kpulse.config import load_config
    from operations.service import Operations

    config = load_config(config_file(tmp_path / "kpulse.yaml", bootstrap, tmp_path / "lake", **options))
    return Operations(config, state_dir=tmp_path / "state")


# --- Prometheus text -----------------------------------------------------------------------------------

def scrape(url: str) -> dict[str, float]:
    """Prometheus text -> {'name{labels}': value}."""
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, value = line.rsplit(" ", 1)
            samples[key] = float(value)
    return samples


def values(samples: dict[str, float], name: str) -> list[float]:
    """The values of every series of metric ``name``."""
    return [v for k, v in samples.items() if k == name or k.startswith(name + "{")]


# --- the dashboard under AppTest ----------------------------------------------------------------------

def open_page(app, page: str):
    """Switch the AppTest ``app`` to ``app_pages/<page>.py`` and run it: no exception."""
    app.switch_page(f"app_pages/{page}.py").run()
    assert not app.exception, [e.value for e in app.exception]
    return app


# --- SLO transforms on small Arrow tables --------------------------------------------------------------

M0 = 28_000_000
"""An epoch minute (2023-03-27 10:40 UTC): minute 0 of the transforms' tables."""
T0 = datetime.fromtimestamp(M0 * 60, UTC)


def at(minute: int, second: float = 0) -> datetime:
    """``minute`` minutes and ``second`` seconds after :data:`T0`."""
    return T0 + timedelta(minutes=minute, seconds=second)


def slo(indicator: str, scope: str, method: str = "Timeslices", target: float = 0.999, window: str = "30d",
        **extra) -> object:
    """Definitions of one SLO named ``s``."""
    from spark_jobs.definitions import parse_definitions

    item = {"name": "s", "scope": scope, "indicator": indicator, "budgetingMethod": method, "target": target,
            "timeWindow": window, **extra}
    return parse_definitions({"slos": [item]})


def minute_rows(table, rows, definitions, start=0, end=3, known=()):
    """``(entity, minute - M0, good, valid)`` of the first SLO of ``definitions`` over ``rows`` of
    lake table ``table``, minutes ``start`` to ``end``."""
    import pyarrow as pa

    from kpulse.lake.schema import SCHEMAS
    from spark_jobs import minutes

    frame = pa.Table.from_pylist(rows, schema=SCHEMAS[table])
    definition = definitions.slos[0]
    out = minutes.to_minutes(minutes.samples(frame, definition), definition, M0 + start, M0 + end, known)
    return sorted(((r["entity"], r["minute"] - M0, r["good"], r["valid"]) for r in out.to_pylist()),
                  key=lambda r: (r[0], r[1]))


# --- groups of every type: a classic or KIP-848 consumer, a share consumer, a Streams app -----------

def wait_for(predicate, timeout: float = 60, interval: float = 0.5, what: str = "the condition"):
    """``predicate()``'s first true value within ``timeout`` seconds, else AssertionError naming ``what``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout:g} s")
        time.sleep(interval)


@contextmanager
def polling_consumer(bootstrap: str, group: str, topics: list[str], *, protocol: str, settings: dict | None = None):
    """A confluent-kafka consumer of ``group`` on ``group.protocol`` ``protocol`` (``classic`` or
    ``consumer``), subscribed to ``topics`` from the earliest offset and polled by a thread of its
    own (it stays a live member) until the block ends; then closed (it leaves the group). Yields
    the number of records it has read so far, as ``counter[0]``."""
    import threading

    from confluent_kafka import Consumer

    from kpulse.kafka.clients import quiet_logger

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": protocol,
                         "auto.offset.reset": "earliest", "logger": quiet_logger(), **(settings or {})})
    consumer.subscribe(topics)
    stop, counter = threading.Event(), [0]

    def poll():
        while not stop.is_set():
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                counter[0] += 1

    thread = threading.Thread(target=poll, name=f"consumer-{group}", daemon=True)
    thread.start()
    try:
        yield counter
    finally:
        stop.set()
        thread.join(10)
        consumer.close()


def kip848_consumer(bootstrap: str, group: str, topics: list[str], settings: dict | None = None):
    """:func:`polling_consumer` on the KIP-848 protocol (``group.protocol=consumer``): a member of a
    ``consumer`` group."""
    return polling_consumer(bootstrap, group, topics, protocol="consumer", settings=settings)


def classic_consumer(bootstrap: str, group: str, topics: list[str], settings: dict | None = None):
    """:func:`polling_consumer` on the classic protocol: a member of a ``classic`` group."""
    return polling_consumer(bootstrap, group, topics, protocol="classic", settings=settings)


def set_share_auto_offset_reset(bootstrap: str, group: str, reset: str = "earliest", **configs: str) -> None:
    """``share.auto.offset.reset`` of share group ``group`` (a share group starts at the log end
    without it), and the group's other ``configs`` (``share_record_lock_duration_ms="15000"`` for
    ``share.record.lock.duration.ms``), through ``kafka-configs --entity-type groups``."""
    settings = {"share.auto.offset.reset": reset, **{key.replace("_", "."): value for key, value in configs.items()}}
    result = run_tool("kafka-configs", ["--bootstrap-server", bootstrap, "--alter", "--entity-type", "groups",
                                        "--entity-name", group, "--add-config",
                                        ",".join(f"{key}={value}" for key, value in settings.items())])
    assert result.returncode == 0, result.stdout + result.stderr


@contextmanager
def start_share_consumer(bootstrap: str, topic: str, group: str, *, earliest: bool = True,
                         extra_args: Sequence[str] = ()):
    """``kafka-console-share-consumer --topic topic --group group`` as a subprocess (a member of
    share group ``group``, acknowledging what it prints) until the block ends; stopped then. With
    ``earliest``, the group reads from the log start (:func:`set_share_auto_offset_reset` first).
    Yields the process."""
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


STREAMS_APP_TOPICS = ("orders", "orders-by-region", "order-counts")
"""The user topics of the demo's Streams topology, after the application's topic prefix."""


@contextmanager
def start_streams_app(bootstrap: str, application_id: str, topic_prefix: str, state_dir: Path, *,
                      protocol: str = "streams", instance: int = 1, partitions: int = 3,
                      metrics_port: int | None = None, create_topics: bool = True):
    """The demo's Streams topology (``kpulse.demo.StreamsDemo``) as application ``application_id``
    on ``group.protocol`` ``protocol`` (``streams``: a KIP-1071 Streams group; ``classic``), its
    user topics ``<topic_prefix>orders``, ``orders-by-region`` and ``order-counts`` created first
    (``partitions`` each) when missing; stopped when the block ends. Without ``create_topics``
    the topics are left as they are (missing ones: the group is NotReady, and the application stops
    after 10 s). Yields the process (its output: ``state_dir/streams-<instance>.log``).
    ``metrics_port``: its metrics served there by the JMX exporter agent
    (``http://127.0.0.1:<port>/metrics``), as the demo's instances are."""
    from localkafka.runtime import JAVA_DIR, ensure_runtime, java_command

    if create_topics:
        admin = admin_for(bootstrap)
        existing = admin.list_topics(timeout=15).topics
        for name in STREAMS_APP_TOPICS:
            if topic_prefix + name not in existing:
                create_topic(admin, topic_prefix + name, partitions)
    runtime = ensure_runtime()
    state_dir.mkdir(parents=True, exist_ok=True)
    command = java_command(runtime, "kpulse.demo.StreamsDemo",
                           [bootstrap, str(instance), str(state_dir / f"state-{instance}"), application_id, protocol,
                            topic_prefix], extra_classpath=[runtime.streams_demo_classes],
                           agent=None if metrics_port is None else (metrics_port, JAVA_DIR / "jmx-exporter-streams.yaml"))
    with open(state_dir / f"streams-{instance}.log", "ab") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        yield process
    finally:
        _stop(process, grace=30)


def _stop(process: subprocess.Popen, grace: float = 15) -> None:
    """SIGTERM, then SIGKILL after ``grace`` seconds."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def stop_process(process: subprocess.Popen, grace: float = 30) -> None:
    """Stop a process a test started (a dashboard, a collector, Prometheus, Alertmanager): SIGTERM,
    SIGKILL after ``grace`` seconds."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def answers_ok(url: str, timeout: float = 2) -> bool:
    """Whether a server a test started answers ``url`` with 200 (a health or readiness endpoint)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:
            return answer.status == 200
    except OSError:
        return False


class RecordedAudit:
    """An audit log that keeps its records in memory (the operations service's ``audit``)."""

    def __init__(self):
        self.records = []

    def record(self, record):
        self.records.append(record)
        return "id", True
