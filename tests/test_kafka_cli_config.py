"""``kpulse --config F kafka-cli TOOL ...`` runs the official tool against the configured cluster
with the configured identity: kpulse adds ``--bootstrap-server`` and a client config file of its
own (0600, in a 0700 directory, deleted when the tool exits), unless the user passed them.

Most tests run the CLI with a stand-in for ``java`` (``$KPULSE_JAVA``) that records the command
line and the client config file the tool would have read; the last one runs the real tool against
the local test cluster."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from localkafka.tools import KAFKA_TOOLS, TOOLS, run_tool, with_cluster_options
from tests.conftest import kpulse, one_error_line
from tests.support import admin_for, create_topic, wait_for
from tests.tls_support import client_pki

RECORDING_JAVA = """#!/bin/sh
printf '%s\\n' "$@" > "$RECORD/argv"
previous=
for argument in "$@"; do
  if [ "$previous" = --command-config ]; then
    echo "$argument" > "$RECORD/path"
    stat -c %a "$argument" > "$RECORD/file-mode"
    stat -c %a "$(dirname "$argument")" > "$RECORD/dir-mode"
    cp "$argument" "$RECORD/properties"
  fi
  previous=$argument
done
touch "$RECORD/started"
if [ -n "$REAL_JAVA" ]; then exec "$REAL_JAVA" "$@"; fi
if [ -n "$FAKE_JAVA_SLEEP" ]; then exec sleep "$FAKE_JAVA_SLEEP"; fi
exit "${FAKE_JAVA_EXIT:-0}"
"""
"""A ``java`` that writes what it was given to ``$RECORD``, then runs the real one or exits."""


class Recording:
    """What the recording ``java`` saw."""

    def __init__(self, directory: Path):
        self.directory = directory

    def read(self, name: str) -> str:
        return (self.directory / name).read_text()

    @property
    def argv(self) -> list[str]:
        return self.read("argv").splitlines()

    def tool_args(self, main_class: str) -> list[str]:
        argv = self.argv
        return argv[argv.index(main_class) + 1:]

    @property
    def config_path(self) -> Path:
        return Path(self.read("path").strip())


@pytest.fixture
def recording(tmp_path, monkeypatch) -> Recording:
    java = tmp_path / "java"
    java.write_text(RECORDING_JAVA)
    java.chmod(0o755)
    record = tmp_path / "record"
    record.mkdir()
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setenv("KPULSE_JAVA", str(java))
    monkeypatch.setenv("RECORD", str(record))
    monkeypatch.setenv("TMPDIR", str(temporary))
    monkeypatch.delenv("KPULSE_CONFIG", raising=False)
    return Recording(record)


def two_clusters(directory: Path, security: str = "") -> Path:
    path = directory / "kpulse.yaml"
    path.write_text("clusters:\n"
                    f"  - name: first\n    bootstrap_servers: 127.0.0.1:1\n{security}"
                    "  - name: second\n    bootstrap_servers: 127.0.0.1:2\n")
    return path


def temporary_leftovers() -> list[str]:
    return sorted(os.listdir(os.environ["TMPDIR"]))


TOPICS = TOOLS["kafka-topics"]


# --- which options each tool gets -----------------------------------------------------------------

@pytest.mark.parametrize("tool,args,expected", [
    ("kafka-topics", ["--list"], ["--bootstrap-server", "B", "--command-config", "P", "--list"]),
    ("kafka-topics", ["--bootstrap-server", "X", "--list"], ["--command-config", "P", "--bootstrap-server", "X", "--list"]),
    ("kafka-topics", ["--bootstrap-server=X", "--list"], ["--command-config", "P", "--bootstrap-server=X", "--list"]),
    ("kafka-topics", ["--list", "--command-config", "mine"], ["--bootstrap-server", "B", "--list", "--command-config", "mine"]),
    ("kafka-configs", ["--bootstrap-controller", "C", "--describe"], ["--command-config", "P", "--bootstrap-controller", "C", "--describe"]),
    ("kafka-console-consumer", ["--consumer.config", "mine", "--topic", "t"], ["--bootstrap-server", "B", "--consumer.config", "mine", "--topic", "t"]),
    ("kafka-console-producer", ["--producer.config=mine", "--topic", "t"], ["--bootstrap-server", "B", "--producer.config=mine", "--topic", "t"]),
    ("kafka-console-share-consumer", ["--consumer-config", "mine"], ["--bootstrap-server", "B", "--consumer-config", "mine"]),
    ("kafka-streams-application-reset", ["--config-file", "mine"], ["--bootstrap-server", "B", "--config-file", "mine"]),
    ("kafka-leader-election", ["--admin.config", "mine"], ["--bootstrap-server", "B", "--admin.config", "mine"]),
    ("kafka-producer-perf-test", ["--producer-props", "bootstrap.servers=X", "acks=1"],
     ["--command-config", "P", "--producer-props", "bootstrap.servers=X", "acks=1"]),
    ("kafka-metadata-quorum", ["describe", "--status"], ["--bootstrap-server", "B", "--command-config", "P", "describe", "--status"]),
    ("kafka-cluster", ["cluster-id"], ["cluster-id", "--bootstrap-server", "B", "--command-config", "P"]),
    ("kafka-cluster", ["unregister", "-b", "X", "--id", "1"], ["unregister", "--command-config", "P", "-b", "X", "--id", "1"]),
    ("kafka-topics", ["--help"], ["--help"]),
    ("kafka-topics", ["--version"], ["--version"]),
    ("kafka-storage", ["info", "-c", "server.properties"], ["info", "-c", "server.properties"]),
    ("kafka-dump-log", ["--files", "x.log"], ["--files", "x.log"]),
])
def test_the_cluster_options_are_added_where_the_tool_reads_them_unless_already_given(tool, args, expected):
    assert with_cluster_options(tool, args, bootstrap_servers="B", client_config="P") == expected


HELP_ARGS = {"kafka-cluster": ["cluster-id", "--help"]}


@pytest.mark.parametrize("tool", sorted(KAFKA_TOOLS))
def test_every_option_kpulse_adds_or_looks_for_is_in_the_tools_own_help(tool):
    spec = KAFKA_TOOLS[tool]
    result = run_tool(tool, HELP_ARGS.get(tool, ["--help"]))
    text = result.stdout + result.stderr
    for option in (*spec.client_config_options, *spec.bootstrap_options):
        assert option in text, f"{tool} has no {option}: {text[-2000:]}"
    if not spec.client_config_options:
        assert "--command-config" not in text and "--bootstrap-server" not in text


# --- the CLI ----------------------------------------------------------------------------------------

def test_the_first_configured_cluster_is_the_default_and_its_files_are_private_and_gone_afterwards(tmp_path, recording):
    result = kpulse("--config", str(two_clusters(tmp_path)), "kafka-cli", "kafka-topics", "--list")
    assert result.returncode == 0, result.stderr
    assert recording.tool_args(TOPICS) == ["--bootstrap-server", "127.0.0.1:1", "--command-config",
                                           str(recording.config_path), "--list"]
    assert recording.read("properties") == "security.protocol=PLAINTEXT\n"
    assert (recording.read("file-mode").strip(), recording.read("dir-mode").strip()) == ("600", "700")
    assert not recording.config_path.exists() and temporary_leftovers() == []


def test_cluster_before_the_tool_picks_another_configured_cluster(tmp_path, recording):
    kpulse("--config", str(two_clusters(tmp_path)), "kafka-cli", "--cluster", "second", "kafka-topics", "--list")
    assert recording.tool_args(TOPICS)[:2] == ["--bootstrap-server", "127.0.0.1:2"]


def test_config_after_kafka_cli_and_from_the_environment_count_too(tmp_path, recording, monkeypatch):
    config = str(two_clusters(tmp_path))
    kpulse("kafka-cli", "--config", config, "kafka-topics", "--list")
    assert recording.tool_args(TOPICS)[:2] == ["--bootstrap-server", "127.0.0.1:1"]
    monkeypatch.setenv("KPULSE_CONFIG", config)
    kpulse("kafka-cli", "kafka-get-offsets", "--topic", "t")
    assert recording.tool_args(TOOLS["kafka-get-offsets"])[:2] == ["--bootstrap-server", "127.0.0.1:1"]


def test_an_unknown_cluster_is_one_line_and_runs_nothing(tmp_path, recording):
    config = two_clusters(tmp_path)
    line = one_error_line(kpulse("--config", str(config), "kafka-cli", "--cluster", "third", "kafka-topics", "--list",
                                 check=False))
    assert line == f"kpulse: error: {config}: unknown cluster 'third' (known: first, second)"
    assert not (recording.directory / "argv").exists()


def test_without_a_config_the_tool_runs_exactly_as_given(recording):
    kpulse("kafka-cli", "kafka-topics", "--bootstrap-server", "127.0.0.1:9", "--list")
    assert recording.tool_args(TOPICS) == ["--bootstrap-server", "127.0.0.1:9", "--list"]


def test_the_tools_exit_status_is_kpulses_and_the_files_go_anyway(tmp_path, recording, monkeypatch):
    monkeypatch.setenv("FAKE_JAVA_EXIT", "3")
    result = kpulse("--config", str(two_clusters(tmp_path)), "kafka-cli", "kafka-topics", "--list", check=False)
    assert result.returncode == 3 and result.stderr == ""
    assert temporary_leftovers() == []


@pytest.mark.parametrize("signal_number,to_group", [(signal.SIGINT, True), (signal.SIGTERM, False)])
def test_ctrl_c_or_a_kill_of_kpulse_ends_the_tool_and_deletes_its_files(tmp_path, recording, monkeypatch,
                                                                        signal_number, to_group):
    monkeypatch.setenv("FAKE_JAVA_SLEEP", "60")
    process = subprocess.Popen([sys.executable, "-m", "cli.main", "--config", str(two_clusters(tmp_path)),
                                "kafka-cli", "kafka-console-consumer", "--topic", "t"],
                               start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: (recording.directory / "started").exists(), timeout=60, what="the tool to start")
        assert temporary_leftovers() != []
        if to_group:  # what a terminal does on Ctrl-C
            os.killpg(process.pid, signal_number)
        else:
            process.send_signal(signal_number)
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 128 + signal_number and "Traceback" not in stderr
    assert temporary_leftovers() == []


def test_sasl_secrets_stay_off_the_command_line_and_oauth_allows_its_token_endpoint(tmp_path, recording):
    security = ("    security: {protocol: SASL_PLAINTEXT, sasl_mechanism: OAUTHBEARER,\n"
                "               sasl_oauthbearer_token_endpoint_url: 'https://idp.example/token',\n"
                "               sasl_oauthbearer_client_id: kpulse, sasl_oauthbearer_client_secret: t0p-s3cret}\n")
    kpulse("--config", str(two_clusters(tmp_path, security)), "kafka-cli", "kafka-consumer-groups", "--list")
    argv = recording.argv
    assert not any("t0p-s3cret" in argument for argument in argv)
    assert "-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=https://idp.example/token" in argv
    assert "sasl.oauthbearer.client.credentials.client.secret=t0p-s3cret" in recording.read("properties")


def test_a_wrong_client_key_password_is_one_line_and_leaves_no_file(tmp_path, recording):
    pki = client_pki(tmp_path / "pki")
    key = pki.key_file("pkcs8", "right")
    security = (f"    security: {{protocol: SSL, ssl_ca_location: {pki.ca_path},\n"
                f"               ssl_certificate_location: {pki.certificate_path},\n"
                f"               ssl_key_location: {key}, ssl_key_password: wrong}}\n")
    line = one_error_line(kpulse("--config", str(two_clusters(tmp_path, security)), "kafka-cli", "kafka-topics",
                                 "--list", check=False))
    assert line == f"kpulse: error: cannot read the client key {key}: wrong ssl_key_password?"
    assert temporary_leftovers() == [] and not (recording.directory / "argv").exists()


# --- the real tool on the local test cluster ----------------------------------------------------------

@pytest.mark.cluster
def test_kafka_topics_lists_the_configured_clusters_topics_without_a_bootstrap_server(tmp_path, recording, monkeypatch,
                                                                                      bootstrap):
    admin = admin_for(bootstrap)
    create_topic(admin, "kafka-cli.configured", partitions=1)
    monkeypatch.setenv("REAL_JAVA", "java")
    config = tmp_path / "kpulse.yaml"
    config.write_text(f"clusters:\n  - name: test\n    bootstrap_servers: \"{bootstrap}\"\n")
    started = time.monotonic()
    result = kpulse("--config", str(config), "kafka-cli", "kafka-topics", "--list")
    assert "kafka-cli.configured" in result.stdout.split(), result.stderr
    assert recording.tool_args(TOPICS)[:2] == ["--bootstrap-server", bootstrap]
    assert recording.read("file-mode").strip() == "600" and not recording.config_path.exists()
    assert temporary_leftovers() == [] and time.monotonic() - started < 120
