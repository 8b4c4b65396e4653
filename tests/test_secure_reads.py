"""What a least-privilege principal reads on a secured cluster (``localkafka/secure.py``): every
value it may not read is null with ``not authorized: <Operation> on <resource>``, never a zero or an
absence; the probe without its ACLs is a warning about kpulse, not an outage; lag agrees with the
official tool run with the same identity; without broker metrics the KRaft figures come from the
Admin API."""

from __future__ import annotations

import json
import re

import pytest

from tests.secure_support import COMMITTED, RECORDS, TOPIC, config_for
from tests.support import cli

pytestmark = pytest.mark.cluster


def snapshot_as(cluster, tmp_path, identity: str, **overrides) -> dict:
    result = cli(config_for(cluster, tmp_path, identity, **overrides), "collect", "--once", "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def probed(secure_cluster, tmp_path_factory):
    """The probe topic, made by the super user's probe (the others may not create it)."""
    return snapshot_as(secure_cluster, tmp_path_factory.mktemp("admin"), "admin")


def groups_of(snapshot) -> dict[str, dict]:
    return {group["group_id"]: group for group in snapshot["consumer_groups"]}


def alerts_of(snapshot) -> dict[tuple[str, str], str]:
    return {(alert["rule"], alert["entity"]): alert["summary"] for alert in snapshot["alerts"]}


def lake_rows(tmp_path, table: str) -> list[dict]:
    import pyarrow.dataset as ds

    return ds.dataset(tmp_path / "lake" / table, format="parquet", partitioning="hive").to_table().to_pylist()


def test_under_min_isr_without_describe_configs_is_unknown_with_the_refusal_not_zero(probed, secure_cluster,
                                                                                     tmp_path):
    assert probed["cluster"]["under_min_isr_partitions"] == 2  # the super user reads topic strict's configs
    cluster = snapshot_as(secure_cluster, tmp_path, "reader")["cluster"]
    assert cluster["under_min_isr_partitions"] is None
    assert re.match(r"not authorized: DescribeConfigs on \d+ topics \(", cluster["reasons"]["under_min_isr_partitions"])
    rows = lake_rows(tmp_path, "cluster_health")
    assert rows and all(row["under_min_isr_partitions"] is None for row in rows)
    assert all(row["unknown_reasons"].startswith("under_min_isr_partitions: not authorized: DescribeConfigs")
               for row in rows)


def test_a_group_the_principal_may_not_describe_is_listed_with_the_refusal(secure_cluster, tmp_path):
    snapshot = snapshot_as(secure_cluster, tmp_path, "lister")
    groups = groups_of(snapshot)
    refused = groups["team-b-audit"]
    assert refused["error"] == "not authorized: Describe on group team-b-audit"
    assert refused["total_lag"] is None and refused["status"] is None
    assert refused["reasons"]["total_lag"] == refused["error"]
    assert groups["team-a-billing"]["total_lag"] == RECORDS - 3 * COMMITTED and groups["team-a-billing"]["error"] is None
    assert "not authorized: Describe on group team-b-audit" in alerts_of(snapshot)[("KpulseNotAuthorized", "cluster/secure")]
    lake = {(row["group_id"], row["total_lag"], row["error"]) for row in lake_rows(tmp_path, "consumer_group")}
    assert lake == {("team-a-billing", RECORDS - 3 * COMMITTED, None),
                    ("team-b-audit", None, "not authorized: Describe on group team-b-audit")}


def test_without_describe_on_the_cluster_the_group_list_says_it_is_limited(secure_cluster, tmp_path):
    snapshot = snapshot_as(secure_cluster, tmp_path, "partial")
    assert set(groups_of(snapshot)) == {"team-a-billing"}  # ListGroups leaves team-b-audit out: said, not hidden
    limit, = snapshot["connection"]["limits"]
    assert limit.startswith("not authorized: Describe on cluster: consumer groups are listed only where")
    assert snapshot["cluster"]["quorum"] is None
    assert snapshot["cluster"]["reasons"]["quorum"] == "not authorized: Describe on cluster (DescribeQuorum)"


@pytest.mark.parametrize("identity, refusal", [("reader", "not authorized: Write on topic kpulse-probe"),
                                               ("writer", "not authorized: Read on topic kpulse-probe")])
def test_a_probe_without_its_acls_is_a_warning_about_kpulse_not_an_outage(identity, refusal, probed, secure_cluster,
                                                                          tmp_path):
    assert probed["probe"]["produce_availability"] == 1.0
    snapshot = snapshot_as(secure_cluster, tmp_path, identity)
    probe = snapshot["probe"]
    assert probe["not_authorized"] == refusal and probe["error"] == refusal
    assert probe["produce_availability"] is None and probe["consume_availability"] is None
    alerts = alerts_of(snapshot)
    assert alerts[("KpulseNotAuthorized", "probe")] == f"kpulse may not run the probe: {refusal}"
    assert not [key for key in alerts if key[0] == "ProbeFailing"]


def test_without_broker_metrics_the_controller_and_brokers_come_from_the_admin_api(probed):
    cluster = probed["cluster"]
    assert cluster["quorum"]["leader_id"] == cluster["controller_id"] == 1
    assert (cluster["active_controller_count"], cluster["active_broker_count"], cluster["fenced_broker_count"]) == (1, 1, 0)
    assert cluster["metadata_error_count"] is None
    assert cluster["reasons"]["metadata_error_count"] == "broker metrics are not configured (metrics.source: none)"


@pytest.mark.parametrize("identity", ["reader", "plain", "kpulse-mtls"])
def test_lag_agrees_with_the_official_tool_run_with_the_same_identity(identity, secure_cluster, tmp_path):
    config = config_for(secure_cluster, tmp_path, identity)
    tool = cli(config, "kafka-cli", "kafka-consumer-groups", "--describe", "--group", "team-a-billing")
    assert tool.returncode == 0, tool.stderr
    official = {int(cells[2]): int(cells[5]) for cells in (line.split() for line in tool.stdout.splitlines())
                if cells[:2] == ["team-a-billing", TOPIC]}
    result = cli(config, "collect", "--once", "--json")
    assert result.returncode == 0, result.stderr
    group = groups_of(json.loads(result.stdout))["team-a-billing"]
    assert {p["partition"]: p["lag"] for p in group["partitions"]} == official
    assert sum(official.values()) == group["total_lag"]
