"""Kafka's internal topics (``__consumer_offsets`` and every ``__`` name) on the real cluster: every
operation refuses them in one line and changes nothing, in its planner and again in its executor
(a saved or approved plan), unless ``--include-internal`` is given; the "all topics" scopes of
election and reassignment leave them out."""

from __future__ import annotations

import itertools
import json
import time
from types import SimpleNamespace

import pytest

from operations import kafka_reads
from operations.access import User
from operations.errors import Refused
from operations.internal_topics import is_kafka_internal_topic
from operations.election_plan import ElectionPlan, LeaderMove, plan_election
from operations.offset_plan import ResetPlan, Scope, Strategy
from operations.reassign_plan import ReassignmentPlan
from operations.streams_reset_plan import StreamsResetPlan
from tests.conftest import kpulse, one_error_line
from tests.support import admin_for, commit, committed, config_file, create_topic, operations_for, produce

pytestmark = pytest.mark.cluster

TOPIC = "ops-internal"
OFFSETS = "__consumer_offsets"
START = {(TOPIC, 0): 3}
ADMIN = User("ada", "admin")
REFUSED = "internal topic"
_counter = itertools.count()


@pytest.fixture(scope="module")
def admin(bootstrap):
    admin = admin_for(bootstrap)
    create_topic(admin, TOPIC, 1)
    produce(bootstrap, TOPIC, {0: 5}, first_ms=int(time.time() * 1000) - 60_000, step_ms=10)
    return admin


@pytest.fixture
def group(admin):
    name = f"ops-internal-{next(_counter)}"
    commit(admin, name, START)
    return name


@pytest.fixture
def config(tmp_path, bootstrap):
    return str(config_file(tmp_path / "kpulse.yaml", bootstrap, tmp_path / "lake"))


@pytest.fixture
def operations(tmp_path, bootstrap):
    (tmp_path / "service").mkdir()
    return operations_for(tmp_path / "service", bootstrap)


def internal_partition_row(admin) -> dict:
    """A plan row for __consumer_offsets-0 that is right in every other way (log start and end)."""
    start = kafka_reads.log_offsets(admin, [(OFFSETS, 0)], "earliest")[(OFFSETS, 0)]
    end = kafka_reads.log_offsets(admin, [(OFFSETS, 0)], "latest")[(OFFSETS, 0)]
    return {"topic": OFFSETS, "partition": 0, "current": None, "log_start": start, "log_end": end, "new": start}


def test_every_topic_kafka_flags_internal_is_internal_for_kpulse(admin, group):
    from confluent_kafka import TopicCollection

    names = list(admin.list_topics(timeout=10).topics)
    described = admin.describe_topics(TopicCollection(names), request_timeout=15)
    flagged = {name for name, future in described.items() if future.result(timeout=20).is_internal}
    assert OFFSETS in flagged
    assert all(is_kafka_internal_topic(name) for name in flagged)
    assert not is_kafka_internal_topic(TOPIC) and not is_kafka_internal_topic("_schemas")


@pytest.mark.parametrize("scope", [["--topic", OFFSETS], ["--topic", f"{OFFSETS}:0,1"], ["--from-file", "CSV"]])
def test_reset_offsets_on_an_internal_topic_is_refused_in_one_line_and_commits_nothing(
        admin, group, config, tmp_path, scope):
    if scope[0] == "--from-file":
        (tmp_path / "plan.csv").write_text(f"{TOPIC},0,1\n{OFFSETS},0,0\n")
        scope = ["--from-file", str(tmp_path / "plan.csv")]
        strategy = []
    else:
        strategy = ["--to-earliest"]
    line = one_error_line(kpulse("--config", config, "reset-offsets", "--group", group, *scope, *strategy,
                                 "--execute", check=False))
    assert REFUSED in line and OFFSETS in line and "--include-internal" in line
    assert committed(admin, group) == START

    planned = kpulse("--config", config, "reset-offsets", "--group", group, *scope, *strategy, "--include-internal")
    assert f"{OFFSETS} " in planned.stdout and "dry run: nothing changed" in planned.stdout
    assert committed(admin, group) == START


def test_all_topics_of_a_group_with_offsets_on_an_internal_topic_is_refused(admin, group, operations):
    commit(admin, group, {**START, (OFFSETS, 1): 0})
    with pytest.raises(Refused, match=f"{OFFSETS}: .*{REFUSED}"):
        operations.plan_reset_offsets("test", group, Scope(all_topics=True), Strategy("to-latest"))
    plan = operations.plan_reset_offsets("test", group, Scope(all_topics=True), Strategy("to-latest"),
                                         include_internal=True)
    assert (OFFSETS, 1) in plan.new_offsets()


def test_a_saved_reset_plan_naming_an_internal_topic_is_refused_at_execute(admin, group, config, tmp_path, operations):
    exported = kpulse("--config", config, "reset-offsets", "--group", group, "--topic", TOPIC, "--to-earliest", "--json")
    saved = json.loads(exported.stdout)["plan"]
    saved["partitions"] = [internal_partition_row(admin)]
    saved["scope"]["topics"] = [[OFFSETS, None]]
    (tmp_path / "plan.json").write_text(json.dumps(saved))

    line = one_error_line(kpulse("--config", config, "reset-offsets", "--group", group, "--plan",
                                 str(tmp_path / "plan.json"), "--execute", check=False))
    assert REFUSED in line and OFFSETS in line
    with pytest.raises(Refused, match=REFUSED):
        operations.reset_offsets(ADMIN, ResetPlan.from_dict(saved))
    assert committed(admin, group) == START
    assert operations.audit.read().to_dict("records")[-1]["result"] == "refused"


def test_a_streams_reset_naming_an_internal_topic_is_refused_when_planned_and_when_executed(
        admin, group, config, operations):
    line = one_error_line(kpulse("--config", config, "reset-streams-app", "--application-id", group,
                                 "--input-topics", f"{TOPIC},{OFFSETS}", "--execute", check=False))
    assert REFUSED in line and OFFSETS in line
    with pytest.raises(Refused, match=REFUSED):
        operations.plan_streams_reset("test", group, [TOPIC], [OFFSETS])

    plan = operations.plan_streams_reset("test", group, [TOPIC], [])
    edited = plan.to_dict()
    edited["intermediate"] = [internal_partition_row(admin)]
    with pytest.raises(Refused, match=REFUSED):
        operations.reset_streams_app(ADMIN, StreamsResetPlan.from_dict(edited))
    assert committed(admin, group) == START


def test_election_refuses_a_named_internal_topic_and_leaves_internal_topics_out_of_all(admin, config, tmp_path, operations):
    line = one_error_line(kpulse("--config", config, "elect-leaders", "--topic", OFFSETS, "--execute", check=False))
    assert REFUSED in line and OFFSETS in line
    (tmp_path / "election.json").write_text(json.dumps({"partitions": [{"topic": OFFSETS, "partition": 0}]}))
    line = one_error_line(kpulse("--config", config, "elect-leaders", "--path-to-json-file",
                                 str(tmp_path / "election.json"), check=False))
    assert REFUSED in line and OFFSETS in line
    assert kpulse("--config", config, "elect-leaders", "--topic", OFFSETS, "--include-internal").returncode == 0

    leader = admin.list_topics(timeout=10).topics[OFFSETS].partitions[0].leader
    stale = ElectionPlan("test", (), (LeaderMove(OFFSETS, 0, leader, leader, True),), time.time())
    with pytest.raises(Refused, match=REFUSED):
        operations.elect_leaders(ADMIN, stale)


def test_all_topic_partitions_leave_internal_topics_out_unless_included():
    def partition(leader):
        return SimpleNamespace(leader=leader, replicas=[1, 2, 3], isrs=[1, 2, 3])

    topics = {OFFSETS: SimpleNamespace(partitions={0: partition(2)}), TOPIC: SimpleNamespace(partitions={0: partition(3)})}
    assert [m.topic for m in plan_election(topics, "test", ()).moves] == [TOPIC]
    assert [m.topic for m in plan_election(topics, "test", (), include_internal=True).moves] == [OFFSETS, TOPIC]


def test_reassignment_refuses_internal_topics_when_generated_from_official_json_and_from_a_saved_plan(
        admin, config, tmp_path, operations):
    line = one_error_line(kpulse("--config", config, "reassign", "generate", "--topics", OFFSETS, check=False))
    assert REFUSED in line and OFFSETS in line
    everything = json.loads(kpulse("--config", config, "reassign", "generate", "--json").stdout)
    assert not any(m["topic"].startswith("__") for m in everything["moves"])

    replicas = list(admin.list_topics(timeout=10).topics[OFFSETS].partitions[0].replicas)
    official = {"version": 1, "partitions": [{"topic": OFFSETS, "partition": 0, "replicas": replicas[::-1]}]}
    (tmp_path / "official.json").write_text(json.dumps(official))
    line = one_error_line(kpulse("--config", config, "reassign", "execute", "--plan", str(tmp_path / "official.json"),
                                 check=False))
    assert REFUSED in line and OFFSETS in line

    saved = {"cluster": "test", "goal": "from file", "planned_at": time.time(),
             "moves": [{"topic": OFFSETS, "partition": 0, "current": replicas, "target": replicas[::-1]}]}
    (tmp_path / "saved.json").write_text(json.dumps(saved))
    line = one_error_line(kpulse("--config", config, "reassign", "execute", "--plan", str(tmp_path / "saved.json"),
                                 check=False))
    assert REFUSED in line and OFFSETS in line
    with pytest.raises(Refused, match=REFUSED):
        operations.start_reassignment(ADMIN, ReassignmentPlan.from_dict(saved), 1_000_000)
    assert list(admin.list_topics(timeout=10).topics[OFFSETS].partitions[0].replicas) == replicas


def test_an_approval_request_keeps_include_internal_and_one_without_it_is_refused_when_approved(
        admin, group, tmp_path, bootstrap, monkeypatch):
    from kpulse.config import load_config
    from operations.access import UsersFile
    from operations.service import Operations

    users = tmp_path / "users.yaml"
    config = config_file(tmp_path / "kpulse.yaml", bootstrap, tmp_path / "lake", users_file=users)
    config.write_text(config.read_text().replace("    read_only: false\n", "    read_only: false\n    require_approval: true\n"))
    for name, role in (("otto", "operator"), ("olga", "operator")):
        UsersFile(users).add(name, role, f"{name}-secret")
    operations = Operations(load_config(config))  # the state directory of the CLI runs below (approvals)
    monkeypatch.setenv("KPULSE_PASSWORD", "otto-secret")

    requested = kpulse("--config", str(config), "reset-offsets", "--group", group, "--topic", f"{OFFSETS}:0",
                       "--to-earliest", "--execute", "--include-internal", "--as", "otto")
    request = operations.approvals.get(requested.stdout.split("approval request ")[1].split()[0])
    assert request.options == {"include_internal": True}
    outcome = operations.approve(User("olga", "operator", "users-file"), request.id)
    assert outcome.result == "ok" and committed(admin, group)[(OFFSETS, 0)] == outcome.partitions[0].new

    plan = operations.plan_reset_offsets("test", group, Scope.parse(False, [f"{OFFSETS}:1"]), Strategy("to-earliest"),
                                         include_internal=True)
    unflagged = operations.request_approval(User("otto", "operator", "users-file"), "reset-offsets", plan)
    with pytest.raises(Refused, match=REFUSED):
        operations.approve(User("olga", "operator", "users-file"), unflagged.id)
    assert operations.approvals.get(unflagged.id).status == "failed"
    assert (OFFSETS, 1) not in committed(admin, group)
