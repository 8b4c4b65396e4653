"""Start and stop the demo workload on the local cluster. PIDs live under ``<state dir>/demo/``.

Processes (``kpulse demo status`` lists them): ``producer``; ``consumer-<group>`` per consumer
group (classic and KIP-848; ``consumer-demo-poison`` stuck on the malformed record the producer
sends once, ``<state dir>/demo/poison-sent`` saying it was sent); ``streams-<i>`` (the classic-protocol Streams app) and
``streams-kip1071-<i>`` (the Streams-protocol app); ``share-fast`` and ``share-slow``, the two
members of the share group."""

from __future__ import annotations

import sys
import time
from dataclasses import asdict, dataclass

from kpulse import processes
from localkafka.demo.topology import (CONSUMERS, PRODUCERS, SHARE_CONSUMERS, SHARE_GROUP_CONFIGS,
                                      STREAMS_APPLICATION_ID, STREAMS_APPS, TOPICS, StreamsAppSpec,
                                      TopicSpec)
from kpulse.kafka.clients import admin_client
from kpulse.progress import SILENT, Progress
from localkafka.cluster import ClusterError, LocalCluster, scrape_value
from localkafka.runtime import JAVA_DIR, ensure_runtime, java_command

STREAMS_RUNNING = 2  # client-state metric value of KafkaStreams.State.RUNNING
POISON_MARKER = "poison-sent"
"""The file (in the demo's directory) that says the malformed record was sent: once per demo."""


@dataclass(frozen=True)
class DemoProcess:
    name: str
    running: bool
    pid: int | None
    log: str
    metrics_url: str | None = None


class DemoWorkload:
    def __init__(self, cluster: LocalCluster, progress: Progress = SILENT):
        self.cluster = cluster
        self.root = cluster.root.parent / "demo"
        self.progress = progress

    # --- what runs ----------------------------------------------------------------------------------
    def _commands(self) -> dict[str, tuple[list[str], str | None]]:
        """Process name -> (command, metrics URL)."""
        bootstrap = self.cluster.layout.bootstrap_servers
        worker = [sys.executable, "-m", "localkafka.demo.workers"]
        commands: dict[str, tuple[list[str], str | None]] = {}
        producer = worker + ["producer", "--bootstrap", bootstrap, "--poison-marker", str(self.root / POISON_MARKER)]
        for spec in PRODUCERS:
            producer += ["--topic", f"{spec.topic}:{spec.messages_per_second:g}"]
        commands["producer"] = (producer, None)
        for consumer in CONSUMERS:
            command = worker + ["poison-consumer" if consumer.strict else "consumer", "--bootstrap", bootstrap,
                                "--group", consumer.group, "--topic", consumer.topic]
            if consumer.max_messages_per_second:
                command += ["--max-rate", f"{consumer.max_messages_per_second:g}"]
            if consumer.stop_after:
                command += ["--stop-after", str(consumer.stop_after)]
            if consumer.protocol != "classic":
                command += ["--protocol", consumer.protocol]
            commands[f"consumer-{consumer.group}"] = (command, None)
        runtime = ensure_runtime(self.progress)
        for app in STREAMS_APPS:
            for instance, slot in enumerate(app.metrics_slots, start=1):
                port = self.cluster.layout.streams_metrics_port(slot)
                directory = self.root / f"{app.process_prefix}-{instance}"
                args = [bootstrap, str(instance), str(directory / "state"), app.application_id, app.group_protocol,
                        app.topic_prefix]
                command = java_command(
                    runtime, "kpulse.demo.StreamsDemo", args, heap="256m", log_config="log4j2-server.properties",
                    agent=(port, JAVA_DIR / "jmx-exporter-streams.yaml"),
                    extra_classpath=[runtime.streams_demo_classes], system_properties={"kafka.logs.dir": str(directory)})
                commands[f"{app.process_prefix}-{instance}"] = (command, f"http://127.0.0.1:{port}/metrics")
        for share_consumer in SHARE_CONSUMERS:
            command = java_command(
                runtime, "kpulse.demo.ShareDemo",
                [bootstrap, share_consumer.group, share_consumer.topic, str(share_consumer.ack_delay_ms),
                 f"kpulse-demo-share-{share_consumer.name}"],
                heap="128m", extra_classpath=[runtime.streams_demo_classes])
            commands[f"share-{share_consumer.name}"] = (command, None)
        return commands

    def streams_metrics_urls(self, application_id: str = STREAMS_APPLICATION_ID) -> list[str]:
        """The metrics endpoints of one demo Streams app's instances (by default the classic-protocol app's)."""
        app = next(app for app in STREAMS_APPS if app.application_id == application_id)
        return self._metrics_urls(app)

    def _metrics_urls(self, app: StreamsAppSpec) -> list[str]:
        return [f"http://127.0.0.1:{self.cluster.layout.streams_metrics_port(slot)}/metrics"
                for slot in app.metrics_slots]

    # --- start / stop / status ----------------------------------------------------------------------
    def start(self, wait_seconds: float = 90) -> list[DemoProcess]:
        if not self.cluster.status().all_running:
            raise ClusterError("the local cluster is not running: start it with `kpulse cluster up`")
        with self.progress.step(f"creating {len(TOPICS)} demo topics"):
            create_topics(self.cluster.layout.bootstrap_servers, TOPICS)
            set_group_configs(self.cluster.layout.bootstrap_servers, SHARE_GROUP_CONFIGS)
        with self.progress.step("starting producers, consumer groups, share consumers and two Kafka Streams apps"):
            for name, (command, _) in self._commands().items():
                pid_file = self.root / f"{name}.pid.json"
                if name == "consumer-demo-stopped" and pid_file.exists():
                    continue  # it ran once, committed and left: that is what a stopped group is
                if processes.running_pid(pid_file) is None:
                    processes.start(command, pid_file=pid_file, log_file=self.root / f"{name}.log")
        with self.progress.step("waiting for the Streams applications to reach RUNNING"):
            if not processes.wait_until(self.streams_running, wait_seconds, interval=1.0):
                raise ClusterError(f"the demo Streams applications are not RUNNING after {wait_seconds:.0f}s; "
                                   f"see the streams-*.log files in {self.root}")
        return self.status()

    def streams_running(self) -> bool:
        """Every instance of every demo Streams app reports client state RUNNING."""
        return all(scrape_value(url, "kafka_streams_stream_metrics_client_state") == STREAMS_RUNNING
                   for app in STREAMS_APPS for url in self._metrics_urls(app))

    def stop(self) -> list[int]:
        stopped = processes.stop_all(sorted(self.root.glob("*.pid.json")))
        for pid_file in self.root.glob("*.pid.json"):
            if not pid_file.name.startswith("consumer-demo-stopped"):
                pid_file.unlink(missing_ok=True)
        return stopped

    def status(self) -> list[DemoProcess]:
        result = []
        for name, (_, metrics_url) in self._commands().items():
            pid = processes.running_pid(self.root / f"{name}.pid.json")
            result.append(DemoProcess(name=name, running=pid is not None, pid=pid,
                                      log=str(self.root / f"{name}.log"), metrics_url=metrics_url))
        return result

    @staticmethod
    def as_dicts(items: list[DemoProcess]) -> list[dict]:
        return [asdict(item) for item in items]


def set_group_configs(bootstrap: str, configs: dict[str, dict[str, str]], timeout: float = 30) -> None:
    """Set group configs (``kafka-configs --entity-type groups --alter``), other keys left as they are."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    admin = admin_client({"bootstrap.servers": bootstrap})
    resources = [ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET) for key, value in entries.items()])
        for group, entries in configs.items()]
    if not resources:
        return
    for resource, future in admin.incremental_alter_configs(resources, request_timeout=timeout).items():
        try:
            future.result(timeout=timeout)
        except KafkaException as error:
            raise ClusterError(f"setting the configs of group {resource.name} failed: {error.args[0].str()}") from None


def create_topics(bootstrap: str, topics: tuple[TopicSpec, ...], timeout: float = 30) -> None:
    """Create the topics that do not exist yet; existing ones are left as they are."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import NewTopic

    admin = admin_client({"bootstrap.servers": bootstrap})
    new = []
    for spec in topics:
        if spec.replica_assignment:
            new.append(NewTopic(spec.name, num_partitions=len(spec.replica_assignment), replication_factor=-1,
                                replica_assignment=[list(r) for r in spec.replica_assignment],
                                config=spec.configs))
        else:
            new.append(NewTopic(spec.name, num_partitions=spec.partitions,
                                replication_factor=spec.replication_factor, config=spec.configs))
    for name, future in admin.create_topics(new, request_timeout=timeout).items():
        try:
            future.result(timeout=timeout)
        except KafkaException as error:
            if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise ClusterError(f"creating topic {name} failed: {error.args[0].str()}") from None
    deadline = time.monotonic() + timeout
    wanted = {spec.name for spec in topics}
    while time.monotonic() < deadline:
        metadata = admin.list_topics(timeout=5)
        ready = {name for name, topic in metadata.topics.items()
                 if topic.error is None and all(p.leader >= 0 for p in topic.partitions.values())}
        if wanted <= ready:
            return
        time.sleep(0.5)
    raise ClusterError(f"demo topics have no leaders after {timeout:.0f}s")
