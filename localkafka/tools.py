"""The official Kafka command-line tools, run from the same Maven artifacts as the local cluster.

``kpulse kafka-cli kafka-topics --bootstrap-server ... --list`` is exactly ``kafka-topics.sh`` of
the pinned Kafka release: same main class, same arguments, same output.
"""

from __future__ import annotations

import subprocess

from kpulse.errors import KpulseError
from kpulse.progress import SILENT, Progress
from localkafka.runtime import ensure_runtime, java_command

# Script name (as in Kafka's bin/) -> main class, as the scripts of Kafka 4.3 call them.
TOOLS: dict[str, str] = {
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-streams-application-reset": "org.apache.kafka.tools.StreamsResetter",
    "kafka-reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "kafka-leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    "kafka-metadata-quorum": "org.apache.kafka.tools.MetadataQuorumCommand",
    "kafka-configs": "kafka.admin.ConfigCommand",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "kafka-delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "kafka-log-dirs": "org.apache.kafka.tools.LogDirsCommand",
    "kafka-broker-api-versions": "org.apache.kafka.tools.BrokerApiVersionsCommand",
    "kafka-acls": "org.apache.kafka.tools.AclCommand",
    "kafka-features": "org.apache.kafka.tools.FeatureCommand",
    "kafka-cluster": "org.apache.kafka.tools.ClusterTool",
    "kafka-producer-perf-test": "org.apache.kafka.tools.ProducerPerformance",
    "kafka-consumer-perf-test": "org.apache.kafka.tools.ConsumerPerformance",
    "kafka-dump-log": "org.apache.kafka.tools.DumpLogSegments",
    "kafka-storage": "kafka.tools.StorageTool",
    "kafka-groups": "org.apache.kafka.tools.GroupsCommand",
    "kafka-streams-groups": "org.apache.kafka.tools.streams.StreamsGroupCommand",
    "kafka-share-groups": "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
    "kafka-console-share-consumer": "org.apache.kafka.tools.consumer.ConsoleShareConsumer",
    "kafka-client-metrics": "org.apache.kafka.tools.ClientMetricsCommand",
}


class UnknownToolError(KpulseError):
    """A tool name kpulse kafka-cli does not know."""


def tool_command(tool: str, args: list[str], progress: Progress = SILENT) -> list[str]:
    name = tool.removesuffix(".sh")
    if name not in TOOLS:
        raise UnknownToolError(f"unknown Kafka tool {tool!r}; known: {', '.join(sorted(TOOLS))}")
    return java_command(ensure_runtime(progress), TOOLS[name], list(args), heap="256m")


def run_tool(tool: str, args: list[str], *, timeout: float | None = 120,
             input_text: str | None = None) -> subprocess.CompletedProcess:
    """Run a tool and capture its output (for tests and for kpulse's own comparisons)."""
    return subprocess.run(tool_command(tool, args), capture_output=True, text=True, timeout=timeout,
                          input=input_text)
