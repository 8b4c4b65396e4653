"""Least privilege on the secured cluster (``localkafka/secure.py``: StandardAuthorizer, no
allow-everyone): the ACLs of ``operations/permissions.py`` are exactly what kpulse needs, ``kpulse
acls`` prints them, ``kpulse doctor`` says what an identity may do, and an operation the principal
may not run is refused before it changes anything (finding 10: the reader's reset used to pass its
plan and fail at the commit with GROUP_AUTHORIZATION_FAILED, audited without Kafka's error)."""

from __future__ import annotations

import json
import shlex
import time
import uuid

import pytest

from tests.conftest import one_error_line
from tests.secure_support import COMMITTED, GROUPS, TOPIC, config_for, forget
from tests.support import cli

pytestmark = pytest.mark.cluster

READER_REFUSED = "not authorized: Read on group team-a-billing (kpulse's principal may: Describe)"


def committed_as_admin(cluster, group: str) -> list[int]:
    """The group's committed offsets of ``orders``, read as the super user."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({**cluster.admin_settings(), "group.id": group, "enable.auto.commit": False})
    try:
        return [tp.offset for tp in consumer.committed([TopicPartition(TOPIC, p) for p in range(3)], timeout=20)]
    finally:
        consumer.close()


def commit_as_admin(cluster, group: str, offset: int) -> None:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({**cluster.admin_settings(), "group.id": group, "enable.auto.commit": False})
    consumer.commit(offsets=[TopicPartition(TOPIC, p, offset) for p in range(3)], asynchronous=False)
    consumer.close()


def scram_user(cluster, tmp_path, *, consumer_groups: list[str], probe_topic: str):
    """A fresh SCRAM user with no ACL yet, and a kpulse config for it (its own probe topic)."""
    import yaml
    from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism,
                                       UserScramCredentialUpsertion)

    name, password = f"least-{uuid.uuid4().hex[:8]}", "least-secret"
    admin = AdminClient(cluster.admin_settings())
    upsert = UserScramCredentialUpsertion(name, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096),
                                          password.encode())
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(timeout=20)
    path = config_for(cluster, tmp_path, "reader", sasl_username=name, sasl_password=password)
    data = yaml.safe_load(path.read_text())
    data["clusters"][0].update(consumer_groups={"include": consumer_groups}, probe={"topic": probe_topic})
    path.write_text(yaml.safe_dump(data))
    return name, path


def audit_rows(config) -> list[dict]:
    return json.loads(cli(config, "audit", "show", "--json").stdout)["records"]


# --- kpulse acls: exactly what monitoring and the probe need ---------------------------------------------

@pytest.fixture
def canary_topic(secure_cluster):
    """A probe topic of the test's own, deleted afterwards."""
    topic = f"canary-{uuid.uuid4().hex[:6]}"
    yield topic
    forget(secure_cluster, topics=(topic,))


def test_the_acls_kpulse_prints_let_a_fresh_principal_monitor_and_probe_everything(secure_cluster, tmp_path,
                                                                                   canary_topic):
    probe_topic = canary_topic
    name, config = scram_user(secure_cluster, tmp_path, consumer_groups=["team-.*"], probe_topic=probe_topic)
    (tmp_path / "admin").mkdir()
    admin = config_for(secure_cluster, tmp_path / "admin", "admin")

    before = cli(config, "collect", "--once", "--json")
    assert json.loads(before.stdout)["consumer_groups"] == []   # nothing granted: nothing seen

    printed = cli(config, "acls", "--principal", name)
    assert printed.returncode == 0, printed.stderr
    commands = [shlex.split(line) for line in printed.stdout.splitlines() if line and not line.startswith("#")]
    assert [c[-2:] for c in commands] == [["Describe", "--cluster"], ["--topic", "*"], ["--group", "team-"],
                                          ["--topic", probe_topic], ["--group", "kpulse-probe-secure"]]
    for command in commands:
        assert command[:2] == ["kpulse", "kafka-cli"]
        result = cli(admin, *command[1:], timeout=180)
        assert result.returncode == 0, result.stdout + result.stderr

    result = cli(config, "collect", "--once", "--json")
    assert result.returncode == 0, result.stderr
    snapshot = json.loads(result.stdout)
    assert snapshot["cluster"]["under_min_isr_partitions"] == 2          # DescribeConfigs on every topic
    assert snapshot["cluster"]["quorum"]["leader_id"] == 1                # Describe on the cluster
    lags = {g["group_id"]: (g["total_lag"], g.get("error")) for g in snapshot["consumer_groups"]}
    assert {g: lags[g] for g in GROUPS} == {g: (100 - 3 * COMMITTED, None) for g in GROUPS}
    probe = snapshot["probe"]
    assert probe["error"] is None and probe["produced"] > 0 and probe["consumed"] == probe["produced"]
    assert [c["name"] for c in snapshot["collectors"] if not c["up"]] == []

    doctor = cli(config, "doctor", "--json")
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    found = {f["feature"]: (f["allowed"], f["missing"]) for f in json.loads(doctor.stdout)["findings"]}
    assert {f: v for f, v in found.items() if f.startswith(("monitoring", "probe"))} == {
        "monitoring: cluster": ("yes", ""), "monitoring: topics": ("yes", ""),
        "monitoring: topic configs": ("yes", ""), "monitoring: groups": ("yes", ""),
        f"probe ({probe_topic})": ("yes", "")}
    assert found["reset-offsets"][0] == "no"   # monitoring and the probe grant no operation
    assert found["read-records"][0] == "partly" and found["read-records"][1].startswith("Read on ")  # the probe's topic

    # reading records: refused in one line naming the ACL, until `kpulse acls --feature read-records`'s grants
    read = ("records", "--group", GROUPS[0], "--topic", TOPIC, "--partition", "0", "--json")
    refused = cli(config, *read)
    assert refused.returncode == 1 and f"not authorized: Read on topic {TOPIC}" in refused.stderr, refused.stderr
    printed = cli(config, "acls", "--principal", name, "--feature", "read-records")
    commands = [shlex.split(line) for line in printed.stdout.splitlines() if line and not line.startswith("#")]
    assert [(c[c.index("--operation") + 1], *c[-2:]) for c in commands] == [
        ("Read", "--topic", "*"), ("Describe", "--group", "team-")], printed.stdout  # the groups' again: harmless
    for command in commands:
        result = cli(admin, *command[1:], timeout=180)
        assert result.returncode == 0, result.stdout + result.stderr
    records = cli(config, *read)
    assert records.returncode == 0, records.stderr
    assert json.loads(records.stdout)["records"][0]["offset"] == COMMITTED   # from the group's committed offset
    doctor = cli(config, "doctor", "--json")
    found = {f["feature"]: (f["allowed"], f["missing"]) for f in json.loads(doctor.stdout)["findings"]}
    assert found["read-records"] == ("yes", "")


# --- kpulse doctor ----------------------------------------------------------------------------------------

def doctor(cluster, tmp_path, identity, **overrides):
    result = cli(config_for(cluster, tmp_path, identity, **overrides), "doctor")
    return result, doctor_rows(result)


def with_probe_topic(config, topic: str):
    import yaml

    data = yaml.safe_load(config.read_text())
    data["clusters"][0]["probe"] = {"topic": topic}
    config.write_text(yaml.safe_dump(data))
    return config


def doctor_rows(result) -> dict[str, tuple[str, str]]:
    rows = {}
    for line in result.stdout.splitlines()[2:]:
        if not line.startswith("note: "):
            feature, allowed, *missing = [part.strip() for part in line.split("  ") if part.strip()]
            rows[feature] = (allowed, missing[0] if missing else "")
    return rows


def test_doctor_as_the_super_user_finds_everything_allowed(secure_cluster, tmp_path):
    config = with_probe_topic(config_for(secure_cluster, tmp_path, "admin"), TOPIC)   # a topic that exists
    result = cli(config, "doctor")
    assert result.returncode == 0, result.stdout + result.stderr
    rows = doctor_rows(result)
    assert len(rows) == 17 and all(allowed == "yes" for allowed, _ in rows.values()), result.stdout


@pytest.mark.parametrize("identity,expected", [("admin", ("unknown", "")), ("reader", ("no", "Create on topic {}"))])
def test_doctor_on_a_probe_topic_not_created_yet_asks_a_validate_only_create(secure_cluster, tmp_path, identity,
                                                                           expected):
    from confluent_kafka.admin import AdminClient

    topic = f"not-yet-{uuid.uuid4().hex[:6]}"
    result = cli(with_probe_topic(config_for(secure_cluster, tmp_path, identity), topic), "doctor")
    assert doctor_rows(result)[f"probe ({topic})"] == (expected[0], expected[1].format(topic))
    assert topic not in AdminClient(secure_cluster.admin_settings()).list_topics(timeout=10).topics


def test_doctor_as_the_reader_names_what_monitoring_and_each_operation_lack(secure_cluster, tmp_path):
    result, rows = doctor(secure_cluster, tmp_path, "reader")
    assert result.returncode == 2, result.stdout + result.stderr   # connected; monitoring lacks a permission
    assert rows["connection"] == ("yes", "")
    assert rows["monitoring: cluster"] == rows["monitoring: groups"] == ("yes", "")
    assert rows["monitoring: topic configs"][0] == "no"
    assert rows["monitoring: topic configs"][1].startswith("DescribeConfigs on ")
    assert rows["reset-offsets"][0] == "no"
    assert rows["reset-offsets"][1].startswith("Read on 2 groups (team-a-billing, team-b-audit); Read on ")
    assert rows["delete-group"] == ("no", "Delete on 2 groups (team-a-billing, team-b-audit)")
    assert rows["elect-leaders"] == ("no", "Alter on cluster")
    assert rows["mark-expected-idle"] == ("yes", "")


def test_doctor_as_the_partial_identity_says_its_group_listing_is_limited(secure_cluster, tmp_path):
    result, rows = doctor(secure_cluster, tmp_path, "partial")
    assert result.returncode == 2, result.stdout + result.stderr
    assert rows["monitoring: cluster"] == ("no", "Describe on cluster")
    assert rows["monitoring: groups"] == ("partly", "Describe on cluster")
    assert ("note: monitoring: groups: without Describe on the cluster, ListGroups shows only the groups kpulse may "
            "Describe (1 listed): other groups are not seen") in result.stdout
    assert rows["delete-group"] == ("no", "Delete on group team-a-billing")   # team-b-audit is not even seen


def test_doctor_with_a_wrong_password_says_why_it_cannot_connect_in_one_line(secure_cluster, tmp_path):
    started = time.monotonic()
    result = cli(config_for(secure_cluster, tmp_path, "reader", sasl_password="wrong"), "doctor")
    line = one_error_line(result)
    assert line.startswith("kpulse: error: cluster 'secure' cannot be read: authentication failed"), line
    assert time.monotonic() - started < 15


# --- an operation the principal may not run is refused before it changes anything --------------------

@pytest.mark.parametrize("command,refused", [
    (("reset-offsets", "--group", "team-a-billing", "--topic", TOPIC, "--to-earliest"),
     READER_REFUSED + "; Read on topic orders (kpulse's principal may: Describe); nothing changed"),
    (("delete-offsets", "--group", "team-a-billing", "--topic", TOPIC),
     "not authorized: Delete on group team-a-billing (kpulse's principal may: Describe); Read on topic orders "
     "(kpulse's principal may: Describe); nothing changed"),
    (("delete-group", "--group", "team-a-billing"),
     "not authorized: Delete on group team-a-billing (kpulse's principal may: Describe); nothing changed"),
    (("skip-records", "--group", "team-a-billing", "--topic", TOPIC, "--partition", "0"),
     READER_REFUSED + "; Read on topic orders (kpulse's principal may: Describe); nothing changed"),
], ids=lambda value: value[0] if isinstance(value, tuple) else "")
def test_the_reader_is_refused_before_execution_naming_the_permission(secure_cluster, tmp_path, command, refused):
    config = config_for(secure_cluster, tmp_path, "reader")

    result = cli(config, *command, "--execute")

    assert one_error_line(result) == f"kpulse: error: {refused}"
    assert committed_as_admin(secure_cluster, "team-a-billing") == [COMMITTED] * 3
    [row] = audit_rows(config)
    assert (row["action"], row["result"], row["error"]) == (command[0], "refused", refused)


def test_an_election_and_a_reassignment_need_alter_on_the_cluster(secure_cluster, tmp_path):
    from kpulse.config import load_config
    from operations.access import User
    from operations.errors import Refused
    from operations.election_plan import ElectionPlan, LeaderMove
    from operations.service import Operations

    plan = ElectionPlan("secure", ((TOPIC, (0,)),), (LeaderMove(TOPIC, 0, 1, 1, True),), time.time())
    reader = Operations(load_config(config_for(secure_cluster, tmp_path, "reader")), state_dir=tmp_path / "r")
    with pytest.raises(Refused, match=r"^not authorized: Alter on cluster \(kpulse's principal may: Describe, "
                                      r"DescribeConfigs\); nothing changed$"):
        reader.elect_leaders(User("ann", "admin"), plan)
    assert reader.audit.read()["result"].tolist() == ["refused"]

    (tmp_path / "a").mkdir()
    admin = Operations(load_config(config_for(secure_cluster, tmp_path / "a", "admin")), state_dir=tmp_path / "a")
    assert admin.elect_leaders(User("ann", "admin"), plan).result == "ok"   # allowed (nothing to move here)

    moves = {"cluster": "secure", "goal": "test", "planned_at": 0,
             "moves": [{"topic": TOPIC, "partition": 0, "current": [1], "target": [2]}]}
    (tmp_path / "plan.json").write_text(json.dumps(moves))
    result = cli(config_for(secure_cluster, tmp_path, "reader"), "reassign", "execute", "--plan",
                 str(tmp_path / "plan.json"))
    assert one_error_line(result).startswith(
        "kpulse: error: not authorized: Alter on cluster (kpulse's principal may: Describe, DescribeConfigs); "
        "AlterConfigs on cluster (kpulse's principal may: Describe, DescribeConfigs); AlterConfigs on topic orders")


def test_the_super_user_may_reset_what_the_reader_may_not(secure_cluster, tmp_path):
    group = f"team-a-ops-{uuid.uuid4().hex[:6]}"
    commit_as_admin(secure_cluster, group, COMMITTED)
    config = config_for(secure_cluster, tmp_path, "admin")
    try:
        result = cli(config, "reset-offsets", "--group", group, "--topic", TOPIC, "--to-earliest", "--execute")

        assert result.returncode == 0, result.stdout + result.stderr
        assert committed_as_admin(secure_cluster, group) == [0, 0, 0]
        assert [(r["action"], r["result"]) for r in audit_rows(config)] == [("reset-offsets", "ok")]
    finally:
        forget(secure_cluster, groups=(group,))
