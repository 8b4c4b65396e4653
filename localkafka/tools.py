"""The official Kafka command-line tools, run from the same Maven artifacts as the local cluster.

``kpulse kafka-cli kafka-topics --bootstrap-server ... --list`` is exactly ``kafka-topics.sh`` of
the pinned release: same main class, same arguments, same output. Given a configured cluster
(``kpulse --config F kafka-cli ...``), :func:`kafka_cli` also points the tool at it: it adds the
cluster's bootstrap servers and a client config file with its security settings
(:mod:`localkafka.client_properties`), unless the user passed them, and deletes the file when the
tool exits.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kpulse.config.model import ClusterConfig
from kpulse.errors import KpulseError
from kpulse.progress import SILENT, Progress
from localkafka.client_properties import jvm_system_properties, write_client_config
from localkafka.runtime import ensure_runtime, java_command


@dataclass(frozen=True)
class KafkaTool:
    """One official tool: its main class, and the options that point it at a cluster (Kafka 4.3)."""

    main_class: str
    """The class Kafka's ``bin/`` script runs."""
    client_config_options: tuple[str, ...] = ("--command-config",)
    """Options naming a client config file: kpulse adds the first when none is given; the others
    are the tool's deprecated spellings. Empty: the tool is no Kafka client (kafka-storage)."""
    bootstrap_options: tuple[str, ...] = ("--bootstrap-server",)
    """Options naming what to connect to: kpulse adds the first (the cluster's bootstrap servers)
    when none is given."""
    options_after_subcommand: bool = False
    """The options belong to the tool's subcommand (the first argument), not before it."""


_CONTROLLERS = ("--bootstrap-server", "--bootstrap-controller")

# Script name (as in Kafka's bin/) -> the tool, as the scripts and the tools' --help of Kafka 4.3 say.
KAFKA_TOOLS: dict[str, KafkaTool] = {
    "kafka-topics": KafkaTool("org.apache.kafka.tools.TopicCommand"),
    "kafka-consumer-groups": KafkaTool("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"),
    "kafka-streams-application-reset": KafkaTool("org.apache.kafka.tools.StreamsResetter",
                                                 ("--command-config", "--config-file")),
    "kafka-reassign-partitions": KafkaTool("org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
                                           bootstrap_options=_CONTROLLERS),
    "kafka-leader-election": KafkaTool("org.apache.kafka.tools.LeaderElectionCommand",
                                       ("--command-config", "--admin.config")),
    "kafka-metadata-quorum": KafkaTool("org.apache.kafka.tools.MetadataQuorumCommand", bootstrap_options=_CONTROLLERS),
    "kafka-configs": KafkaTool("kafka.admin.ConfigCommand", bootstrap_options=_CONTROLLERS),
    "kafka-console-producer": KafkaTool("org.apache.kafka.tools.ConsoleProducer",
                                        ("--command-config", "--producer.config")),
    "kafka-console-consumer": KafkaTool("org.apache.kafka.tools.consumer.ConsoleConsumer",
                                        ("--command-config", "--consumer.config")),
    "kafka-get-offsets": KafkaTool("org.apache.kafka.tools.GetOffsetShell"),
    "kafka-delete-records": KafkaTool("org.apache.kafka.tools.DeleteRecordsCommand"),
    "kafka-log-dirs": KafkaTool("org.apache.kafka.tools.LogDirsCommand"),
    "kafka-broker-api-versions": KafkaTool("org.apache.kafka.tools.BrokerApiVersionsCommand"),
    "kafka-acls": KafkaTool("org.apache.kafka.tools.AclCommand", bootstrap_options=_CONTROLLERS),
    "kafka-features": KafkaTool("org.apache.kafka.tools.FeatureCommand", bootstrap_options=_CONTROLLERS),
    "kafka-cluster": KafkaTool("org.apache.kafka.tools.ClusterTool", ("--command-config", "-c", "--config"),
                               ("--bootstrap-server", "-b", "--bootstrap-controller", "-C"),
                               options_after_subcommand=True),
    "kafka-producer-perf-test": KafkaTool("org.apache.kafka.tools.ProducerPerformance",
                                          ("--command-config", "--producer.config")),
    "kafka-consumer-perf-test": KafkaTool("org.apache.kafka.tools.ConsumerPerformance",
                                          ("--command-config", "--consumer.config")),
    "kafka-dump-log": KafkaTool("org.apache.kafka.tools.DumpLogSegments", (), ()),
    "kafka-storage": KafkaTool("kafka.tools.StorageTool", (), ()),
    "kafka-groups": KafkaTool("org.apache.kafka.tools.GroupsCommand"),
    "kafka-streams-groups": KafkaTool("org.apache.kafka.tools.streams.StreamsGroupCommand"),
    "kafka-share-groups": KafkaTool("org.apache.kafka.tools.consumer.group.ShareGroupCommand"),
    "kafka-console-share-consumer": KafkaTool("org.apache.kafka.tools.consumer.ConsoleShareConsumer",
                                              ("--command-config", "--consumer-config")),
    "kafka-client-metrics": KafkaTool("org.apache.kafka.tools.ClientMetricsCommand"),
}
TOOLS: dict[str, str] = {name: tool.main_class for name, tool in KAFKA_TOOLS.items()}
"""Script name -> main class."""
BOOTSTRAP_PROPERTIES = ("bootstrap.servers=", "bootstrap.controllers=")
"""A property argument (``--command-property bootstrap.servers=...``) that names what to connect to."""
WITHOUT_A_CLUSTER = ("--help", "-h", "--version")
"""Arguments that make a tool print and exit without connecting anywhere."""
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class UnknownToolError(KpulseError):
    """A tool name kpulse kafka-cli does not know."""


def kafka_tool(tool: str) -> KafkaTool:
    """The tool called ``tool`` (``kafka-topics`` or ``kafka-topics.sh``)."""
    name = tool.removesuffix(".sh")
    if name not in KAFKA_TOOLS:
        raise UnknownToolError(f"unknown Kafka tool {tool!r}; known: {', '.join(sorted(KAFKA_TOOLS))}")
    return KAFKA_TOOLS[name]


def tool_command(tool: str, args: list[str], progress: Progress = SILENT,
                 system_properties: dict[str, str] | None = None) -> list[str]:
    return java_command(ensure_runtime(progress), kafka_tool(tool).main_class, list(args), heap="256m",
                        system_properties=system_properties)


def run_tool(tool: str, args: list[str], *, timeout: float | None = 120,
             input_text: str | None = None) -> subprocess.CompletedProcess:
    """Run a tool and capture its output (for tests and for kpulse's own comparisons)."""
    return subprocess.run(tool_command(tool, args), capture_output=True, text=True, timeout=timeout,
                          input=input_text)


def _given(args: Sequence[str], options: Sequence[str]) -> bool:
    return any(arg == option or arg.startswith(option + "=") for arg in args for option in options)


def needs_client_config(tool: str, args: Sequence[str]) -> bool:
    """Whether the tool, run with ``args``, is a client that was given no client config file."""
    spec = kafka_tool(tool)
    return (bool(spec.client_config_options) and not _given(args, WITHOUT_A_CLUSTER)
            and not _given(args, spec.client_config_options))


def with_cluster_options(tool: str, args: Sequence[str], *, bootstrap_servers: str | None,
                         client_config: str | None) -> list[str]:
    """``args`` with ``--bootstrap-server bootstrap_servers`` and the tool's client config option
    naming ``client_config`` added where the tool reads them, each unless given (or ``None``)."""
    spec = kafka_tool(tool)
    args = list(args)
    if not spec.client_config_options or _given(args, WITHOUT_A_CLUSTER):
        return args
    added = []
    if (bootstrap_servers is not None and not _given(args, spec.bootstrap_options)
            and not any(arg.startswith(BOOTSTRAP_PROPERTIES) for arg in args)):
        added += [spec.bootstrap_options[0], bootstrap_servers]
    if client_config is not None and not _given(args, spec.client_config_options):
        added += [spec.client_config_options[0], client_config]
    at = 1 if spec.options_after_subcommand and args else 0
    return args[:at] + added + args[at:]


def kafka_cli(tool: str, args: Sequence[str], cluster: ClusterConfig | None, progress: Progress = SILENT) -> int:
    """Run the tool in the foreground, pointed at ``cluster`` when one is given; its exit status.

    Without a client config file to write, the tool replaces this process. Otherwise the file (and
    the keystore of mutual TLS) goes into a fresh ``0700`` directory that is deleted when the tool
    exits, also when kpulse is interrupted or terminated (the signal is passed on to the tool)."""
    spec = kafka_tool(tool)
    if cluster is None or not needs_client_config(tool, args):
        arguments = list(args) if cluster is None else with_cluster_options(
            tool, args, bootstrap_servers=cluster.bootstrap_servers, client_config=None)
        system_properties = None if cluster is None else jvm_system_properties(cluster.security)
        command = tool_command(tool, arguments, progress, system_properties)
        os.execvp(command[0], command)
    runtime = ensure_runtime(progress)
    forwarder = _SignalForwarder()
    previous = {number: signal.signal(number, forwarder) for number in FORWARDED_SIGNALS}
    directory = Path(tempfile.mkdtemp(prefix="kpulse-kafka-cli-"))  # 0700
    try:
        properties = write_client_config(cluster.security, directory)
        arguments = with_cluster_options(tool, args, bootstrap_servers=cluster.bootstrap_servers,
                                         client_config=str(properties))
        command = java_command(runtime, spec.main_class, arguments, heap="256m",
                               system_properties=jvm_system_properties(cluster.security))
        return forwarder.run(command)
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        shutil.rmtree(directory, ignore_errors=True)


class _SignalForwarder:
    """A signal handler that passes SIGINT, SIGTERM and SIGHUP on to the tool (a terminal's Ctrl-C
    reaches both already), so that kpulse outlives the tool and can clean up after it."""

    def __init__(self) -> None:
        self.process: subprocess.Popen | None = None
        self.pending: int | None = None

    def __call__(self, number: int, frame) -> None:
        if self.process is None:
            self.pending = self.pending or number
        elif self.process.poll() is None:
            self.process.send_signal(number)

    def run(self, command: list[str]) -> int:
        """The tool's exit status (128 + N when a signal N ended it)."""
        if self.pending:
            return 128 + self.pending
        self.process = subprocess.Popen(command)
        if self.pending:
            self.process.send_signal(self.pending)
        status = self.process.wait()
        return 128 - status if status < 0 else status
