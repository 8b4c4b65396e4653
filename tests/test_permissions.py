"""The ACLs kpulse needs (``operations/permissions.py``): one table, per feature, that the
``kpulse acls`` commands, ``kpulse doctor``, the executors' pre-check and docs/operations.md all read.
Pure: tables of cases, no cluster (the rows are tried on a real StandardAuthorizer in
tests/test_acls_secured.py)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from operations import acl_commands, permissions
from operations.acl_commands import group_patterns
from operations.permissions import FEATURES, Granted, Need, permits, refusal, shortfalls

DOC = Path(__file__).resolve().parent.parent / "docs" / "operations.md"

VALID_OPERATIONS = {
    "cluster": {"Alter", "AlterConfigs", "ClusterAction", "Create", "Describe", "DescribeConfigs", "IdempotentWrite"},
    "topic": {"Alter", "AlterConfigs", "Create", "Delete", "Describe", "DescribeConfigs", "Read", "Write"},
    "group": {"AlterConfigs", "Delete", "Describe", "DescribeConfigs", "Read"},
}
"""The operations Kafka's ACLs know per resource type (``AclEntry.supportedOperations``)."""


def config(include=(".*",), probe_topic="kpulse-probe", probe=True, streams_apps=()):
    from kpulse.config import parse_config

    cluster = {"name": "prod", "bootstrap_servers": "k:9092", "consumer_groups": {"include": list(include)},
               "probe": {"enabled": probe, "topic": probe_topic},
               "streams_apps": [{"application_id": app, "metrics_endpoints": ["http://h:1/metrics"]}
                                for app in streams_apps]}
    return parse_config({"clusters": [cluster], "lake": {"path": "/tmp/lake"}}, source="test", base_dir=Path("/tmp"),
                        environ={}).cluster(None)


# --- the table -----------------------------------------------------------------------------------------

def test_every_operation_of_the_registry_and_monitoring_and_the_probe_has_its_row():
    from operations.access import MARK_EXPECTED_IDLE
    from operations.registry import OPERATIONS

    assert [f.name for f in FEATURES] == ["monitoring", "probe", "read-records", *[o.name for o in OPERATIONS],
                                          MARK_EXPECTED_IDLE]


@pytest.mark.parametrize("feature", FEATURES, ids=lambda f: f.name)
def test_each_need_is_an_operation_kafka_knows_for_its_resource_and_names_its_requests(feature):
    for need in feature.needs:
        assert need.operation in VALID_OPERATIONS[need.scope.resource_type], need
        assert need.requests and need.why


def test_the_operations_that_change_a_cluster_need_the_acls_kafkas_apis_check():
    """KafkaApis / ControllerApis of Kafka 4: OffsetCommit Read on group and topic, OffsetDelete
    Delete on group + Read on topic, DeleteGroups Delete on group, ElectLeaders and
    AlterPartitionReassignments Alter on the cluster, IncrementalAlterConfigs AlterConfigs."""
    def needs(name):
        return {(n.operation, n.scope.resource_type) for n in permissions.feature(name).needs if not n.optional}

    assert needs("reset-offsets") == {("Read", "group"), ("Read", "topic")}
    assert needs("delete-offsets") == {("Delete", "group"), ("Read", "topic")}
    assert needs("delete-group") == {("Delete", "group"), ("Delete", "topic")}
    assert needs("reset-share-group") == {("Read", "group"), ("Read", "topic")}
    assert needs("reset-streams-app") == needs("reset-streams-group") == {("Read", "group"), ("Read", "topic"),
                                                                          ("Delete", "topic")}
    assert needs("elect-leaders") == {("Alter", "cluster")}
    assert needs("reassign") == {("Alter", "cluster"), ("AlterConfigs", "cluster"), ("AlterConfigs", "topic")}
    assert needs("monitoring") == {("Describe", "cluster"), ("Describe", "topic"), ("DescribeConfigs", "topic"),
                                   ("Describe", "group")}
    assert needs("probe") == {("Create", "topic"), ("Write", "topic"), ("Read", "topic"), ("Describe", "group")}
    assert needs("mark-expected-idle") == set()
    assert needs("read-records") == {("Read", "topic"), ("Describe", "group")}  # Fetch; OffsetFetch with --group


@pytest.mark.parametrize("granted,operation,expected", [
    ({"Describe"}, "Describe", True),
    ({"Read"}, "Describe", True),            # Read, Write, Delete and Alter imply Describe
    ({"Delete"}, "Describe", True),
    ({"Describe"}, "Read", False),
    ({"AlterConfigs"}, "DescribeConfigs", True),
    ({"DescribeConfigs"}, "AlterConfigs", False),
    ({"ALTER"}, "Describe", True),            # librdkafka's spelling
    ({"DESCRIBE_CONFIGS"}, "DescribeConfigs", True),
])
def test_an_operation_is_permitted_when_granted_or_implied(granted, operation, expected):
    assert permits(Granted(frozenset(granted)), operation) is expected


def test_a_cluster_that_answers_no_operations_lacks_describe_and_what_implies_it_the_rest_is_unknown():
    without_describe = Granted.without_describe()
    assert [permits(without_describe, op) for op in ("Describe", "Alter", "AlterConfigs", "Create")] == [
        False, False, None, None]
    assert permits(Granted.unknown(), "Read") is None


# --- evaluating a feature on what the principal may do -------------------------------------------------

READER = {("group", "team-a-billing"): {"Describe"}, ("topic", "orders"): {"Describe"}}


def granted_from(table):
    return lambda resource_type, name: Granted(frozenset(table[(resource_type, name)])) \
        if (resource_type, name) in table else Granted.unknown()


@pytest.mark.parametrize("table,missing", [
    (READER, [("Read", "group", ["team-a-billing"]), ("Read", "topic", ["orders"])]),
    ({("group", "team-a-billing"): {"Read"}, ("topic", "orders"): {"Read", "Describe"}}, []),
    ({("group", "team-a-billing"): set(), ("topic", "orders"): {"Read"}}, [("Read", "group", ["team-a-billing"])]),
    ({}, []),  # nothing known: nothing refused (Kafka decides, the executor names its answer)
])
def test_shortfalls_of_an_offset_reset(table, missing):
    short, _ = shortfalls(permissions.feature("reset-offsets"),
                          {permissions.THE_GROUP: ["team-a-billing"], permissions.ITS_TOPICS: ["orders"]},
                          granted_from(table))
    assert [(s.need.operation, s.need.scope.resource_type, list(s.names)) for s in short] == missing


def test_a_need_whose_resources_are_not_in_the_plan_does_not_apply():
    short, unknown = shortfalls(permissions.feature("delete-group"), {permissions.THE_GROUP: ["g"]},
                                granted_from({("group", "g"): {"Delete"}}))
    assert short == [] and unknown == []


def test_the_refusal_names_the_permission_the_resource_and_what_the_principal_may_do():
    short, _ = shortfalls(permissions.feature("reset-offsets"),
                          {permissions.THE_GROUP: ["team-a-billing"], permissions.ITS_TOPICS: ["orders"]},
                          granted_from(READER))
    assert refusal(short) == ("not authorized: Read on group team-a-billing (kpulse's principal may: Describe); "
                              "Read on topic orders (kpulse's principal may: Describe)")
    cluster, _ = shortfalls(permissions.feature("elect-leaders"), {permissions.THE_CLUSTER: ["kafka-cluster"]},
                            lambda *_: Granted.without_describe())
    assert refusal(cluster) == "not authorized: Alter on cluster (kpulse's principal may: nothing)"


def test_many_refused_resources_are_counted_on_one_line():
    names = [f"t{i}" for i in range(12)]
    short, _ = shortfalls(permissions.feature("reset-offsets"), {permissions.ITS_TOPICS: names},
                          lambda *_: Granted(frozenset({"Describe"})))
    assert refusal(short) == ("not authorized: Read on 12 topics (t0, t1, t10, ...) "
                              "(kpulse's principal may: Describe)")


@pytest.mark.parametrize("error,expected", [
    ("GROUP_AUTHORIZATION_FAILED", "not authorized: Read on group g"),
    ("TOPIC_AUTHORIZATION_FAILED", "not authorized: Read on topic orders"),
    ("UNKNOWN_MEMBER_ID", None),
])
def test_an_authorization_error_kafka_answers_is_explained_by_the_need(error, expected):
    assert permissions.explain(error, "reset-offsets", group="g", topics=["orders"]) == expected


# --- kafka-acls commands ------------------------------------------------------------------------------

@pytest.mark.parametrize("include,expected", [
    ((".*",), [("*", "literal")]),
    (("team-a-.*",), [("team-a-", "prefixed")]),
    ((r"billing\.v2",), [("billing.v2", "literal")]),
    (("^orders$",), [("orders", "literal")]),
    (("a.*", "a-b.*"), [("a", "prefixed")]),             # the second is inside the first
    (("team-(a|b)",), [("*", "literal")]),               # no ACL pattern says that: every group, with a note
])
def test_consumer_group_regexes_become_acl_patterns(include, expected):
    patterns, notes = group_patterns(config(include))
    assert [(p.name, p.pattern_type) for p in patterns] == expected
    assert bool(notes) == (include == ("team-(a|b)",))


def test_a_streams_app_outside_the_group_patterns_gets_its_own_group_acl():
    patterns, _ = group_patterns(config(("team-a-.*",), streams_apps=("team-a-app", "orders-app")))
    assert [(p.name, p.pattern_type) for p in patterns] == [("team-a-", "prefixed"), ("orders-app", "literal")]


def commands(lines):
    return [shlex.split(line) for line in lines if line and not line.startswith("#")]


def test_acls_for_monitoring_and_the_probe_by_default():
    lines = acl_commands.acl_commands("User:kpulse", acl_commands.DEFAULT_FEATURES, config(("team-a-.*",),
                                                                                       probe_topic="canary"))
    prefix = ["kpulse", "kafka-cli", "kafka-acls", "--add", "--allow-principal", "User:kpulse"]
    assert commands(lines) == [
        prefix + ["--operation", "Describe", "--cluster"],
        prefix + ["--operation", "Describe", "--operation", "DescribeConfigs", "--topic", "*"],
        prefix + ["--operation", "Describe", "--resource-pattern-type", "prefixed", "--group", "team-a-"],
        prefix + ["--operation", "Create", "--operation", "Write", "--operation", "Read", "--topic", "canary"],
        prefix + ["--operation", "Describe", "--group", "kpulse-probe-prod"],
    ]
    optional = [line for line in lines if line.startswith("# optional: kpulse kafka-cli")]
    assert [shlex.split(line[len("# optional: "):])[-3:] for line in optional] == [
        ["Alter", "--topic", "canary"], ["--operation", "Alter", "--cluster"]]


def test_acls_for_the_operations_use_the_group_patterns_and_their_internal_topic_prefixes():
    lines = acl_commands.acl_commands("User:ops", [f.name for f in FEATURES if f.name not in ("monitoring", "probe")],
                                     config(("team-a-.*", "billing")))
    found = set()
    for command in commands(lines):
        operations = [command[i + 1] for i, word in enumerate(command) if word == "--operation"]
        kind = next(word for word in command if word in ("--cluster", "--topic", "--group"))
        name = command[command.index(kind) + 1] if kind != "--cluster" else ""
        prefixed = "--resource-pattern-type" in command
        found |= {(op, kind, name, prefixed) for op in operations}
    assert {("Read", "--group", "team-a-", True), ("Read", "--group", "billing", False),
            ("Delete", "--group", "team-a-", True), ("Read", "--topic", "*", False),
            ("Delete", "--topic", "team-a-", True), ("Delete", "--topic", "billing-", True),
            ("Alter", "--cluster", "", False), ("AlterConfigs", "--cluster", "", False),
            ("AlterConfigs", "--topic", "*", False)} <= found
    assert not any(op in ("Write", "Create") for op, *_ in found)


def test_a_disabled_probe_needs_nothing():
    lines = acl_commands.acl_commands("User:kpulse", ["probe"], config(probe=False))
    assert commands(lines) == [] and any("probe is disabled" in line for line in lines)


def test_a_principal_without_a_type_is_a_user():
    assert acl_commands.principal("kpulse") == "User:kpulse"
    assert acl_commands.principal("User:CN=kpulse,OU=ops") == "User:CN=kpulse,OU=ops"
    with pytest.raises(acl_commands.BadInput):
        acl_commands.principal(" ")


# --- the documentation ---------------------------------------------------------------------------------

def test_docs_operations_md_has_the_table_as_the_module_writes_it():
    section = re.search(r"^## ACLs kpulse needs\n(.*?)(?=^## )", DOC.read_text(), re.S | re.M)
    assert section, "docs/operations.md has no section '## ACLs kpulse needs'"
    assert permissions.markdown_table() in section.group(1)


def test_the_table_lists_each_need_with_its_role():
    table = permissions.markdown_table()
    assert "| reset-offsets (operator) | Read | group: the group | OffsetCommit |" in table
    assert "| monitoring (viewer) | DescribeConfigs | topic: every topic | DescribeConfigs |" in table


def test_a_need_is_frozen_data():
    need = permissions.feature("elect-leaders").needs[0]
    assert isinstance(need, Need)
    with pytest.raises(AttributeError):
        need.operation = "Read"


def test_the_probe_group_is_the_probe_consumer_s_group_id():
    from collectors.probe.probe import ProbeCollector

    settings = {}
    probe = ProbeCollector(config(), producer_factory=lambda s: None, admin_factory=lambda s: None,
                           consumer_factory=lambda s: settings.update(s))
    probe._clients()
    assert settings["group.id"] == permissions.probe_group("prod")
