"""``kpulse doctor``'s judgement (``operations/doctor.py``, pure): what Kafka says the principal may
do, in, one line per feature out. The real cluster's answers: tests/test_acls_secured.py."""

from __future__ import annotations

import pytest

from operations.doctor import Facts, findings, report
from operations.permissions import Granted

EVERYTHING = frozenset({"READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"})
PROBE_GROUP = "kpulse-probe-prod"


def facts(cluster=("DESCRIBE",), topics=None, groups=None, probe="kpulse-probe", creatable=None,
          probe_group=("DESCRIBE",)):
    def granted(table):
        return {name: Granted(frozenset(ops)) for name, ops in table.items()}

    topics = {"orders": ("DESCRIBE", "DESCRIBE_CONFIGS"), "kpulse-probe": ("WRITE", "READ")} if topics is None else topics
    groups = {"team-a": ("DESCRIBE",), "team-b": ("DESCRIBE",)} if groups is None else groups
    return Facts(Granted(frozenset(cluster)) if cluster is not None else Granted.without_describe(), granted(topics),
                 granted(groups), probe, creatable, (PROBE_GROUP, Granted(frozenset(probe_group))),
                 {"topics": len(topics), "groups": len(groups)}, (), 0.05)


def lines(found):
    return {f.feature: (f.allowed, f.missing) for f in found}


def test_a_monitoring_principal_may_monitor_and_probe_and_nothing_else():
    found = lines(findings(facts()))
    assert {k: v for k, v in found.items() if k.startswith(("monitoring", "probe", "connection"))} == {
        "connection": ("yes", ""), "monitoring: cluster": ("yes", ""), "monitoring: topics": ("yes", ""),
        "monitoring: topic configs": ("partly", "DescribeConfigs on topic kpulse-probe"),
        "monitoring: groups": ("yes", ""), "probe (kpulse-probe)": ("yes", "")}
    assert found["reset-offsets"] == ("no", "Read on 2 groups (team-a, team-b); Read on topic orders")
    assert found["elect-leaders"] == ("no", "Alter on cluster")
    assert found["mark-expected-idle"] == ("yes", "")
    assert found["read-records"] == ("partly", "Read on topic orders")  # the probe's own topic only


def test_some_groups_allowed_is_partly():
    found = lines(findings(facts(groups={"team-a": ("READ",), "team-b": ("DESCRIBE",)},
                                 topics={"orders": ("READ", "DESCRIBE_CONFIGS")})))
    assert found["reset-offsets"] == ("partly", "Read on group team-b")
    assert found["read-records"] == ("yes", "")


def test_without_describe_on_the_cluster_the_group_listing_is_limited_and_cluster_operations_unknown():
    result = report("prod", facts(cluster=None, groups={"team-a": ("DESCRIBE",)}))
    found = lines(result.findings)
    assert found["monitoring: cluster"] == ("no", "Describe on cluster")
    assert found["monitoring: groups"] == ("partly", "Describe on cluster")
    assert found["reassign"][1] == "Alter on cluster; AlterConfigs on 2 topics (kpulse-probe, orders)"  # AlterConfigs on the cluster: unknown
    assert result.exit_code == 2
    assert any("ListGroups shows only the groups kpulse may Describe (1 listed)" in line for line in result.lines())


@pytest.mark.parametrize("creatable,expected", [
    (True, ("unknown", "")), (False, ("no", "Create on topic kpulse-probe")), (None, ("unknown", ""))])
def test_a_probe_topic_not_created_yet_is_judged_by_a_validate_only_create(creatable, expected):
    found = lines(findings(facts(topics={"orders": ("DESCRIBE", "DESCRIBE_CONFIGS")}, creatable=creatable)))
    assert found["probe (kpulse-probe)"] == expected


def test_the_probe_needs_describe_on_its_consumer_s_group():
    found = lines(findings(facts(probe_group=())))
    assert found["probe (kpulse-probe)"] == ("no", f"Describe on group {PROBE_GROUP}")


def test_a_disabled_probe_is_off():
    assert lines(findings(facts(probe=None)))["probe"] == ("off", "")


def test_everything_allowed_exits_0_and_prints_a_table():
    result = report("prod", facts(cluster=EVERYTHING, topics={"orders": EVERYTHING, "kpulse-probe": EVERYTHING},
                                  groups={"team-a": EVERYTHING}))
    assert result.exit_code == 0
    assert all(f.allowed == "yes" for f in result.findings)
    header, *rows = result.lines()
    assert header.split() == ["FEATURE", "ALLOWED", "MISSING", "PERMISSION"]
    assert rows[0].split() == ["connection", "yes"]


def test_nothing_visible_is_unknown_not_allowed():
    found = lines(findings(facts(topics={}, groups={})))
    assert found["monitoring: groups"][0] == "unknown" and found["delete-group"][0] == "unknown"
