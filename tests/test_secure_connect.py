"""Connecting to a secured cluster (``localkafka/secure.py``: SASL_SSL and mTLS listeners, ACLs):
every identity kpulse is given either reads the cluster or is told, within seconds and in one line,
why it cannot: a wrong password or SCRAM mechanism, a CA that does not verify the broker, a client
certificate missing or not trusted, a client key that does not decrypt. ``kpulse collect --once``
then exits non-zero, and no collector says it is up with nothing read."""

from __future__ import annotations

import json
import re
import time

import pytest

from tests.conftest import one_error_line
from tests.secure_support import config_for, misconfigurations
from tests.support import cli

pytestmark = pytest.mark.cluster

NAMED_WITHIN_SECONDS = 10.0
"""Each is named in about a second here; the collectors' own timeouts took 73-83 s."""
CASES = ("wrong password", "no CA file", "wrong SCRAM mechanism", "no client certificate",
         "untrusted client certificate", "wrong key password")


@pytest.mark.parametrize("case", CASES)
def test_collect_once_names_a_misconfiguration_at_once_and_fails(case, secure_cluster, tmp_path):
    identity, overrides, expected = misconfigurations(secure_cluster)[case]
    config = config_for(secure_cluster, tmp_path, identity, **overrides)
    started = time.monotonic()
    result = cli(config, "collect", "--once", "--json")
    elapsed = time.monotonic() - started
    line = one_error_line(result)
    assert re.match(f"kpulse: error: cluster 'secure' cannot be read: {expected}", line), line
    assert elapsed < NAMED_WITHIN_SECONDS, f"took {elapsed:.1f}s"
    snapshot = json.loads(result.stdout)
    assert snapshot["connection"]["ok"] is False and re.match(expected, snapshot["connection"]["error"])
    kafka_collectors = [c for c in snapshot["collectors"] if c["name"] != "broker_metrics"]
    why = "cluster not readable: " + snapshot["connection"]["error"]
    assert kafka_collectors and all(not c["up"] and c["error"] == why for c in kafka_collectors)


OPERATIONS = {"reset-offsets": ("--to-earliest",),  # librdkafka
              "delete-offsets": ()}  # kafka-python: it waited 15 s and said "Unable to bootstrap"


@pytest.mark.parametrize("operation", OPERATIONS)
@pytest.mark.parametrize("case", CASES)
def test_an_operation_names_the_misconfiguration_at_once_in_one_line(case, operation, secure_cluster, tmp_path):
    identity, overrides, expected = misconfigurations(secure_cluster)[case]
    config = config_for(secure_cluster, tmp_path, identity, **overrides)
    started = time.monotonic()
    result = cli(config, operation, "--group", "team-a-billing", "--topic", "orders", *OPERATIONS[operation])
    assert re.search(expected, one_error_line(result))
    assert time.monotonic() - started < NAMED_WITHIN_SECONDS


@pytest.mark.parametrize("identity", ["admin", "reader", "partial", "plain", "kpulse-mtls"])
def test_every_identity_connects(identity, secure_cluster, tmp_path):
    result = cli(config_for(secure_cluster, tmp_path, identity), "collect", "--once", "--json")
    assert result.returncode == 0, result.stderr
    snapshot = json.loads(result.stdout)
    assert snapshot["connection"]["ok"] is True
    assert snapshot["cluster"]["brokers_up"] == 1
    operations = snapshot["connection"]["cluster_operations"]
    if identity in ("admin",):
        assert "ALTER" in operations
    elif identity == "partial":
        assert operations == []
    else:
        assert "DESCRIBE" in operations and "ALTER" not in operations


@pytest.mark.parametrize("case", ["wrong password", "untrusted client certificate", "wrong key password"])
def test_the_dashboards_own_reads_name_a_misconfiguration_at_once(case, secure_cluster, tmp_path):
    from dashboard.services.kafka_admin import ClusterAdmin
    from dashboard.services.sources import DashboardError
    from kpulse.config import load_config

    identity, overrides, expected = misconfigurations(secure_cluster)[case]
    cluster = load_config(str(config_for(secure_cluster, tmp_path, identity, **overrides))).clusters[0]
    started = time.monotonic()
    with pytest.raises(DashboardError) as refused:
        ClusterAdmin(cluster).partitions()
    assert time.monotonic() - started < NAMED_WITHIN_SECONDS
    assert re.search(expected, str(refused.value)), refused.value
