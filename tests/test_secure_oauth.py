"""SASL/OAUTHBEARER against a real OpenID Connect issuer (``localkafka/oidc_issuer.py``, started by
the secured cluster): the broker validates the issuer's JWTs against its JWKS, and the read-only
identity ``kpulse-oauth`` (a client of the issuer; its token's ``sub``) reads the cluster on every
client stack kpulse uses: librdkafka (``sasl.oauthbearer.method=oidc``: the connection check, the
metadata), kafka-python (a token provider: the batched lag reads, share groups, the KRaft quorum,
the operations) and the official Java tools (``kafka-cli``). A client secret the issuer refuses is
named in one line within seconds."""

from __future__ import annotations

import json
import re
import time

import pytest

from tests.conftest import one_error_line
from tests.secure_support import COMMITTED, GROUPS, TOPIC, config_for
from tests.support import cli

pytestmark = pytest.mark.cluster

IDENTITY = "kpulse-oauth"
NAMED_WITHIN_SECONDS = 10.0
LOG_END = {0: 34, 1: 33, 2: 33}
"""100 records over 3 partitions (``tests/secure_support.py``)."""


def test_the_issuer_gives_the_identity_a_token_whose_subject_is_its_client_id(secure_cluster):
    import base64

    import requests

    from localkafka.secure import IDENTITIES

    identity = IDENTITIES[IDENTITY]
    assert secure_cluster.issuer.token_endpoint.startswith("https://")
    answer = requests.post(secure_cluster.issuer.token_endpoint, auth=(identity.name, identity.password),
                           data={"grant_type": "client_credentials", "scope": "kafka"}, timeout=10,
                           verify=str(secure_cluster.ca_file))
    assert answer.status_code == 200, answer.text
    payload = answer.json()["access_token"].split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    assert claims["sub"] == IDENTITY and claims["iss"] == secure_cluster.issuer.url
    refused = requests.post(secure_cluster.issuer.token_endpoint, auth=(identity.name, "not-the-secret"),
                            data={"grant_type": "client_credentials"}, timeout=10, verify=str(secure_cluster.ca_file))
    assert refused.status_code == 401


def test_collect_once_reads_groups_lag_share_groups_and_the_quorum(secure_cluster, tmp_path):
    result = cli(config_for(secure_cluster, tmp_path, IDENTITY), "collect", "--once", "--json")
    assert result.returncode == 0, result.stderr
    snapshot = json.loads(result.stdout)
    connection = snapshot["connection"]
    assert connection["ok"] is True, connection
    assert "DESCRIBE" in connection["cluster_operations"] and "ALTER" not in connection["cluster_operations"]
    collectors = {c["name"]: c for c in snapshot["collectors"]}
    for name in ("cluster_metadata", "consumer_lag", "share_groups"):
        assert collectors[name]["up"], collectors[name]
    groups = {g["group_id"]: g for g in snapshot["consumer_groups"]}
    assert set(GROUPS) <= set(groups)
    for group in GROUPS:
        partitions = {p["partition"]: p for p in groups[group]["partitions"] if p["topic"] == TOPIC}
        assert {n: (p["committed_offset"], p["log_end_offset"], p["lag"]) for n, p in partitions.items()} == {
            n: (COMMITTED, end, end - COMMITTED) for n, end in LOG_END.items()}
        assert groups[group]["total_lag"] == sum(LOG_END.values()) - 3 * COMMITTED
    cluster = snapshot["cluster"]
    assert cluster["brokers_up"] == 1
    if cluster["quorum"] is None:  # DescribeQuorum may be refused to a read-only principal: never a transport failure
        reason = cluster["reasons"]["quorum"]
        assert re.search("authoriz", reason, re.IGNORECASE) and "not available" not in reason, reason
    else:
        assert cluster["quorum"]["leader_id"] == 1
    assert "kafka-python client could not be built" not in result.stderr


def test_kafka_python_reads_the_groups_offsets_with_the_token(secure_cluster):
    from kpulse.config import parse_config
    from kpulse.kafka.clients import kafka_python_admin

    config = parse_config(secure_cluster.config(_identity()), source="test", base_dir=secure_cluster.root,
                          environ={})
    admin = kafka_python_admin(config.clusters[0], client_id="kpulse-test", timeout=10)
    try:
        offsets = admin.list_group_offsets("team-a-billing")["team-a-billing"]
        assert {(tp.topic, tp.partition): meta.offset for tp, meta in offsets.items()} == {
            (TOPIC, n): COMMITTED for n in range(3)}
    finally:
        admin.close()


def test_an_operation_through_kafka_python_plans_with_the_token(secure_cluster, tmp_path):
    result = cli(config_for(secure_cluster, tmp_path, IDENTITY), "delete-offsets", "--group", "team-b-audit",
                 "--topic", TOPIC, "--dry-run", "--json")
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert "team-b-audit" in json.dumps(plan) and "OAUTHBEARER" not in result.stderr


def test_the_official_tool_describes_a_group_through_the_issuer(secure_cluster, tmp_path):
    result = cli(config_for(secure_cluster, tmp_path, IDENTITY), "kafka-cli", "kafka-consumer-groups",
                 "--describe", "--group", "team-a-billing", timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    rows = [line.split() for line in result.stdout.splitlines() if line.startswith("team-a-billing")]
    assert sorted((row[1], row[2], row[3], row[4]) for row in rows) == [
        (TOPIC, str(n), str(COMMITTED), str(LOG_END[n])) for n in range(3)]


def test_a_refused_client_secret_is_named_in_one_line_within_seconds(secure_cluster, tmp_path):
    config = config_for(secure_cluster, tmp_path, IDENTITY, sasl_oauthbearer_client_secret="not-the-secret")
    started = time.monotonic()
    result = cli(config, "collect", "--once", "--json")
    elapsed = time.monotonic() - started
    line = one_error_line(result)
    assert re.match("kpulse: error: cluster 'secure' cannot be read: OAUTHBEARER token request failed: .*"
                    + re.escape(secure_cluster.issuer.token_endpoint) + ".*401", line), line
    assert elapsed < NAMED_WITHIN_SECONDS, f"took {elapsed:.1f}s"
    snapshot = json.loads(result.stdout)
    assert snapshot["connection"]["ok"] is False


def test_an_operation_names_a_refused_client_secret_in_one_line(secure_cluster, tmp_path):
    config = config_for(secure_cluster, tmp_path, IDENTITY, sasl_oauthbearer_client_secret="not-the-secret")
    result = cli(config, "delete-offsets", "--group", "team-b-audit", "--topic", TOPIC)
    line = one_error_line(result)
    assert re.search("OAUTHBEARER token request failed: .*answered HTTP 401: invalid_client", line), line


def _identity():
    from localkafka.secure import IDENTITIES

    return IDENTITIES[IDENTITY]
