"""`kpulse kafka-cli` runs the official tools of the pinned release."""

from __future__ import annotations

import zipfile

import pytest

from localkafka.tools import TOOLS, run_tool
from localkafka.runtime import ensure_runtime, kafka_version
from tests.conftest import kpulse

REQUIRED = ("kafka-topics", "kafka-consumer-groups", "kafka-streams-application-reset", "kafka-reassign-partitions",
            "kafka-leader-election", "kafka-metadata-quorum", "kafka-configs", "kafka-console-producer",
            "kafka-console-consumer", "kafka-groups", "kafka-streams-groups", "kafka-share-groups",
            "kafka-console-share-consumer", "kafka-client-metrics")


def test_every_required_tool_is_mapped_to_a_main_class_present_in_the_fetched_jars():
    classes = set()
    for jar in ensure_runtime().jars():
        classes.update(zipfile.ZipFile(jar).namelist())
    assert set(REQUIRED) <= set(TOOLS)
    missing = [tool for tool, main in TOOLS.items() if main.replace(".", "/") + ".class" not in classes]
    assert missing == []


def test_a_tool_reports_the_pinned_kafka_version():
    result = run_tool("kafka-topics", ["--version"])
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[0] == kafka_version()


@pytest.mark.parametrize("tool", ["kafka-streams-groups", "kafka-share-groups", "kafka-console-share-consumer",
                                  "kafka-client-metrics"])
def test_the_modern_group_tools_start_and_print_their_usage(tool):
    result = run_tool(tool, ["--help"])
    assert "--bootstrap-server" in result.stdout + result.stderr, (result.stdout, result.stderr)


def test_an_unknown_tool_is_one_clear_line():
    result = kpulse("kafka-cli", "kafka-topix", "--list", check=False)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kpulse: error: unknown Kafka tool 'kafka-topix'")


@pytest.mark.cluster
def test_console_producer_and_consumer_round_trip_through_kafka_cli(bootstrap):
    produced = kpulse_tool("kafka-console-producer", "--bootstrap-server", bootstrap, "--topic", "cli.roundtrip",
                           input_text="alpha\nbeta\n", create_topic=bootstrap)
    assert produced.returncode == 0, produced.stderr
    consumed = run_tool("kafka-console-consumer", ["--bootstrap-server", bootstrap, "--topic", "cli.roundtrip",
                                                   "--from-beginning", "--max-messages", "2", "--timeout-ms", "30000"])
    assert sorted(consumed.stdout.split()) == ["alpha", "beta"]


def kpulse_tool(tool, *args, input_text, create_topic):
    run_tool("kafka-topics", ["--bootstrap-server", create_topic, "--create", "--if-not-exists", "--topic",
                              "cli.roundtrip", "--partitions", "1", "--replication-factor", "3"])
    return run_tool(tool, list(args), input_text=input_text)
