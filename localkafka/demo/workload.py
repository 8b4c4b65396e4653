"""Start and stop the demo workload on the local cluster. PIDs live under ``<state dir>/demo/``."""

from __future__ import annotations

import sys
import time
from dataclasses import asdict, dataclass

from kpulse import processes
from localkafka.demo.topology import (CONSUMERS, PRODUCERS, STREAMS_INSTANCES, TOPICS,
                                  TopicSpec)
from kpulse.kafka.clients import admin_client
from kpulse.progress import SILENT, Progress
from localkafka.cluster import ClusterError, LocalCluster, scrape_value
from localkafka.runtime import JAVA_DIR, ensure_runtime, java_command

STREAMS_RUNNING = 2  # client-state metric value of KafkaStreams.State.RUNNING


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
        producer = worker + ["producer", "--bootstrap", bootstrap]
        for spec in PRODUCERS:
            producer += ["--topic", f"{spec.topic}:{spec.messages_per_second:g}"]
        commands["producer"] = (producer, None)
        for spec in CONSUMERS:
            command = worker + ["consumer", "--bootstrap", bootstrap, "--group", spec.group, "--topic", spec.topic]
            if spec.max_messages_per_second:
                command += ["--max-rate", f"{spec.max_messages_per_second:g}"]
            if spec.stop_after:
                command += ["--stop-after", str(spec.stop_after)]
            commands[f"consumer-{spec.group}"] = (command, None)
        runtime = ensure_runtime(self.progress)
        for instance in STREAMS_INSTANCES:
            port = self.cluster.layout.streams_metrics_port(instance)
            directory = self.root / f"streams-{instance}"
            command = java_command(
                runtime, "kpulse.demo.StreamsDemo", [bootstrap, str(instance), str(directory / "state")],
                heap="256m", log_config="log4j2-server.properties",
                agent=(port, JAVA_DIR / "jmx-exporter-streams.yaml"), extra_classpath=[runtime.streams_demo_classes],
                system_properties={"kafka.logs.dir": str(directory)})
            commands[f"streams-{instance}"] = (command, f"http://127.0.0.1:{port}/metrics")
        return commands

    def streams_metrics_urls(self) -> list[str]:
        return [f"http://127.0.0.1:{self.cluster.layout.streams_metrics_port(i)}/metrics" for i in STREAMS_INSTANCES]

    # --- start / stop / status ----------------------------------------------------------------------
    def start(self, wait_seconds: float = 90) -> list[DemoProcess]:
        if not self.cluster.status().all_running:
            raise ClusterError("the local cluster is not running: start it with `kpulse cluster up`")
        with self.progress.step(f"creating {len(TOPICS)} demo topics"):
            create_topics(self.cluster.layout.bootstrap_servers, TOPICS)
        with self.progress.step("starting producers, consumer groups and two Kafka Streams instances"):
            for name, (command, _) in self._commands().items():
                pid_file = self.root / f"{name}.pid.json"
                if name == "consumer-demo-stopped" and pid_file.exists():
                    continue  # it ran once, committed and left: that is what a stopped group is
                if processes.running_pid(pid_file) is None:
                    processes.start(command, pid_file=pid_file, log_file=self.root / f"{name}.log")
        with self.progress.step("waiting for the Streams application to reach RUNNING"):
            if not processes.wait_until(self.streams_running, wait_seconds, interval=1.0):
                raise ClusterError(f"the demo Streams application is not RUNNING after {wait_seconds:.0f}s; "
                                   f"see {self.root}/streams-1.log")
        return self.status()

    def streams_running(self) -> bool:
        return all(scrape_value(url, "kafka_streams_stream_metrics_client_state") == STREAMS_RUNNING
                   for url in self.streams_metrics_urls())

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
