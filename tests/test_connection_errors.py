"""A cluster kpulse cannot talk to says why, and at once where the client knows: a closed port is
"connection refused", TLS against a plaintext listener is a TLS handshake failure, SASL against
it an authentication failure, each one line from the operations and from ``kpulse up``'s check,
never the bare ``Local: Timed out`` after ~16 s. (Real cluster: its PLAINTEXT listeners.)"""

from __future__ import annotations

import socket
import time

import pytest
import yaml

from operations.errors import OperationError
from operations.offset_plan import Scope, Strategy
from tests.conftest import one_error_line
from tests.support import cli

pytestmark = pytest.mark.cluster

NOT_THE_CLIENT_TIMEOUT = 10.0
"""Generous: the client's own timeout is 15 s (plus 5); failing fast takes well under a second."""


def closed_port() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{probe.getsockname()[1]}"  # nothing listens once the socket is closed


def config_path(tmp_path, bootstrap: str, security: dict | None = None):
    cluster = {"name": "test", "bootstrap_servers": bootstrap, "probe": {"enabled": False}}
    if security:
        cluster["security"] = security
    path = tmp_path / "kpulse.yaml"
    path.write_text(yaml.safe_dump({"clusters": [cluster], "lake": {"path": str(tmp_path / "lake")}}))
    return path


def operations_at(tmp_path, bootstrap: str, security: dict | None = None):
    from kpulse.config import load_config
    from operations.service import Operations

    return Operations(load_config(str(config_path(tmp_path, bootstrap, security))), state_dir=tmp_path / "state")


SASL = {"protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN", "sasl_username": "u", "sasl_password": "p"}
CASES = {
    "closed port": (None, "all brokers down: .*Connection refused"),
    "TLS to a plaintext listener": ({"protocol": "SSL"}, "TLS handshake failed: .*SSL"),
    "SASL to a plaintext listener": (SASL, "authentication failed: .*SASL PLAIN mechanism handshake failed"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_an_unusable_cluster_is_named_at_once_by_the_group_reads(case, bootstrap, tmp_path):
    security, expected = CASES[case]
    operations = operations_at(tmp_path, closed_port() if case == "closed port" else bootstrap, security)
    started = time.monotonic()
    with pytest.raises(OperationError, match=f"^cannot describe group 'g': {expected}") as caught:
        operations.plan_reset_offsets("test", "g", Scope.parse(True, None), Strategy("to-earliest"))
    elapsed = time.monotonic() - started
    print(f"{case}: {elapsed:.2f} s: {caught.value}")
    assert "\n" not in str(caught.value) and elapsed < NOT_THE_CLIENT_TIMEOUT


@pytest.mark.parametrize("case", list(CASES))
def test_an_unusable_cluster_is_named_at_once_by_the_metadata_read(case, bootstrap, tmp_path):
    security, expected = CASES[case]
    operations = operations_at(tmp_path, closed_port() if case == "closed port" else bootstrap, security)
    started = time.monotonic()
    with pytest.raises(OperationError, match=f"^cannot read the cluster metadata: {expected}") as caught:
        operations.plan_election("test")
    elapsed = time.monotonic() - started
    print(f"{case}: {elapsed:.2f} s: {caught.value}")
    assert elapsed < NOT_THE_CLIENT_TIMEOUT


def test_the_cli_says_connection_refused_in_one_line(tmp_path):
    config = config_path(tmp_path, closed_port())
    started = time.monotonic()
    line = one_error_line(cli(config, "reset-offsets", "--group", "g", "--all-topics", "--to-earliest"))
    print(f"{time.monotonic() - started:.2f} s: {line}")
    assert line.startswith("kpulse: error: cannot describe group 'g': all brokers down: ")
    assert "Connection refused" in line


def test_kpulse_up_names_why_a_configured_cluster_is_unreachable(bootstrap, tmp_path):
    from cli.main import _check_configured_clusters
    from kpulse.config import load_config
    from localkafka.cluster import ClusterError

    config = load_config(str(config_path(tmp_path, bootstrap, {"protocol": "SSL"})))
    started = time.monotonic()
    with pytest.raises(ClusterError, match=f"^cluster 'test' at {bootstrap} is unreachable: TLS handshake failed: "):
        _check_configured_clusters(config)
    assert time.monotonic() - started < NOT_THE_CLIENT_TIMEOUT


class Report:
    """A KafkaError as error_cb receives it."""

    def __init__(self, name: str, text: str):
        self._name, self._text = name, text

    def name(self) -> str:
        return self._name

    def str(self) -> str:
        return self._text


REFUSED = Report("_TRANSPORT", "127.0.0.1:1/bootstrap: Connect to ipv4#127.0.0.1:1 failed: Connection refused")


def test_only_reports_after_the_wait_began_decide_and_an_answer_clears_every_broker_down():
    from kpulse.kafka.clients import ConnectionErrors

    errors = ConnectionErrors()
    errors.record(Report("_ALL_BROKERS_DOWN", "3/3 brokers are down"))  # an outage before this call
    errors.record(REFUSED)
    mark = errors.mark()
    assert errors.verdict(mark) is None  # nothing since the call began: it may still be answered
    errors.record(REFUSED)
    assert errors.verdict(mark) == f"all brokers down: {REFUSED.str()}"

    errors.answered()  # a broker answered: one broker's refusals are no longer the whole cluster's
    mark = errors.mark()
    errors.record(REFUSED)
    assert errors.verdict(mark) is None and errors.last(mark) == REFUSED.str()

    errors.record(Report("_AUTHENTICATION", "SASL authentication error: Authentication failed"))
    assert errors.verdict(mark) == "authentication failed: SASL authentication error: Authentication failed"


class HangsOnce:
    """An Admin client whose first metadata request is lost (sent to a broker as it was killed:
    librdkafka then waits out the whole timeout, seen in 2 of 6 kills) and whose next one is answered."""

    def __init__(self):
        self.timeouts: list[float] = []

    def list_topics(self, topic=None, timeout=-1):
        from confluent_kafka import KafkaError, KafkaException

        self.timeouts.append(timeout)
        if len(self.timeouts) == 1:
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "Failed to get metadata: Local: Timed out"))
        return ("metadata of", topic)


def test_a_metadata_request_lost_with_a_killed_broker_is_asked_again_within_the_timeout():
    from kpulse.kafka.clients import list_topics

    admin = HangsOnce()
    assert list_topics(admin, 10.0, topic="t") == ("metadata of", "t")
    assert len(admin.timeouts) == 2 and admin.timeouts[0] <= 2.0 and sum(admin.timeouts) <= 10.0


def test_the_collectors_metadata_reads_go_through_the_asking_again():
    """Every collector's and the dashboard's metadata read: a lost request costs one step, not a cycle."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    direct = [f"{path.relative_to(root)}:{node.lineno}"
              for folder in ("collectors", "dashboard", "exporters", "alerting", "operations")
              for path in (root / folder).rglob("*.py")
              for node in ast.walk(ast.parse(path.read_text()))
              if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "list_topics"]
    assert direct == []
