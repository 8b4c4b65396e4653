"""Refusals and safety of operations on the real cluster: an active group, a viewer, a read-only
cluster, unknown names, malformed values, two resets at once; every attempt lands in the audit
log; the CLI reports each refusal as one line and changes nothing."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import pytest

from operations import locks
from operations.access import User
from operations.errors import BadInput, NotAuthorized, Refused
from operations.offset_plan import Scope, Strategy
from tests.conftest import one_error_line
from tests.support import admin_for, cli, commit, committed, config_file, create_topic, operations_for, produce

pytestmark = pytest.mark.cluster

TOPIC = "ops-safety"
START = {(TOPIC, 0): 7, (TOPIC, 1): 4}
ADMIN, OPERATOR, VIEWER = User("ada", "admin"), User("otto", "operator"), User("vera", "viewer")


@pytest.fixture(scope="module")
def admin(bootstrap):
    admin = admin_for(bootstrap)
    create_topic(admin, TOPIC, 2)
    produce(bootstrap, TOPIC, {0: 10, 1: 10}, first_ms=int(time.time() * 1000) - 60_000, step_ms=10)
    return admin


@pytest.fixture
def group(admin, request):
    name = f"ops-safety-{request.node.name[:40]}".replace("[", "-").replace("]", "")
    commit(admin, name, START)
    return name


@pytest.fixture
def operations(tmp_path, bootstrap):
    return operations_for(tmp_path, bootstrap)


def audit_rows(operations) -> list[dict]:
    return operations.audit.read().to_dict("records")


def test_an_active_group_is_refused_naming_its_members_even_when_it_joined_after_the_plan(admin, group, operations, bootstrap):
    from confluent_kafka import Consumer

    plan = operations.plan_reset_offsets("test", group, Scope.parse(True, None), Strategy("to-earliest"))
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": "still-running",
                         "enable.auto.commit": False})
    consumer.subscribe([TOPIC])
    try:
        deadline = time.monotonic() + 30
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
        assert consumer.assignment()
        with pytest.raises(Refused, match=r"Stable with active members still-running@"):
            operations.reset_offsets(OPERATOR, plan)
        with pytest.raises(Refused, match="still-running"):
            operations.plan_reset_offsets("test", group, Scope.parse(True, None), Strategy("to-earliest"))
    finally:
        consumer.close()
    assert committed(admin, group) == START
    assert [(r["actor"], r["result"]) for r in audit_rows(operations)] == [("otto", "refused")]


def test_a_viewer_is_denied_and_the_denial_is_audited(admin, group, operations):
    plan = operations.plan_reset_offsets("test", group, Scope.parse(True, None), Strategy("to-latest"))

    with pytest.raises(NotAuthorized, match=r"vera \(viewer\) may not reset-offsets: it needs the operator role"):
        operations.reset_offsets(VIEWER, plan)

    assert committed(admin, group) == START
    row = audit_rows(operations)[0]
    assert (row["actor"], row["action"], row["target"], row["result"]) == ("vera", "reset-offsets", f"group {group}", "denied")


def test_a_read_only_cluster_refuses_even_an_admin(admin, group, tmp_path, bootstrap):
    operations = operations_for(tmp_path, bootstrap, read_only=True)
    plan = operations.plan_reset_offsets("test", group, Scope.parse(True, None), Strategy("to-latest"))

    with pytest.raises(Refused, match="cluster 'test' is read-only"):
        operations.reset_offsets(ADMIN, plan)
    assert committed(admin, group) == START


def test_unknown_group_and_topic_get_a_did_you_mean(admin, group, operations):
    with pytest.raises(BadInput, match=f"unknown consumer group '{group}x' \\(did you mean '{group}'\\?\\)"):
        operations.plan_reset_offsets("test", group + "x", Scope.parse(True, None), Strategy("to-earliest"))
    with pytest.raises(BadInput, match=r"unknown topic 'ops-safty' \(did you mean 'ops-safety'\?\)"):
        operations.plan_reset_offsets("test", group, Scope.parse(False, ["ops-safty"]), Strategy("to-earliest"))
    with pytest.raises(BadInput, match=r"partition\(s\) ops-safety-5 do not exist"):
        operations.plan_reset_offsets("test", group, Scope.parse(False, [f"{TOPIC}:0,5"]), Strategy("to-earliest"))


def test_two_executions_of_the_same_plan_at_once_exactly_one_applies(admin, group, operations):
    plans = [operations.plan_reset_offsets("test", group, Scope.parse(True, None), Strategy("shift-by", "-3"))
             for _ in range(2)]
    results: list = [None, None]
    barrier = threading.Barrier(2)

    def execute(i: int) -> None:
        barrier.wait()
        try:
            results[i] = operations.reset_offsets(OPERATOR, plans[i]).result
        except Refused as error:
            results[i] = str(error)

    threads = [threading.Thread(target=execute, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(r == "ok" for r in results) == [False, True], results
    assert committed(admin, group) == {(TOPIC, 0): 4, (TOPIC, 1): 1}, "shifted once, not twice"


def test_a_held_lock_refuses_a_second_executor(admin, group, operations):
    plan = operations.plan_reset_offsets("test", group, Scope.parse(True, None), Strategy("to-earliest"))

    with locks.exclusive(operations.state_dir, "test", f"group {group}"):
        with pytest.raises(Refused, match="is in progress"):
            operations.reset_offsets(OPERATOR, plan)
    assert committed(admin, group) == START
    assert operations.reset_offsets(OPERATOR, plan).result == "ok"
    assert committed(admin, group) == {(TOPIC, 0): 0, (TOPIC, 1): 0}


def test_two_cli_processes_executing_one_exported_plan_exactly_one_succeeds(admin, group, tmp_path, bootstrap):
    config = config_file(tmp_path / "kpulse.yaml", bootstrap, tmp_path / "lake")
    exported = cli(config, "reset-offsets", "--group", group, "--all-topics", "--shift-by", "2", "--json")
    assert exported.returncode == 0, exported.stderr
    (tmp_path / "plan.json").write_text(json.dumps(json.loads(exported.stdout)["plan"]))

    command = [sys.executable, "-m", "cli.main", "--config", str(config), "reset-offsets", "--group", group,
               "--plan", str(tmp_path / "plan.json"), "--execute"]
    processes = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [p.communicate(timeout=120) for p in processes]

    assert sorted(p.returncode for p in processes) == [0, 1], outputs
    refusal = next(err for p, (_, err) in zip(processes, outputs) if p.returncode == 1)
    assert "in progress" in refusal or "changed since the plan was made" in refusal
    assert committed(admin, group) == {(TOPIC, 0): 9, (TOPIC, 1): 6}


def test_cli_dry_run_changes_nothing_and_execute_applies_and_verifies(admin, group, tmp_path, bootstrap):
    config = config_file(tmp_path / "kpulse.yaml", bootstrap, tmp_path / "lake")

    dry = cli(config, "reset-offsets", "--group", group, "--topic", f"{TOPIC}:1", "--to-offset", "2")
    assert dry.returncode == 0, dry.stderr
    rows = [line.split() for line in dry.stdout.splitlines() if line.startswith(TOPIC)]
    assert rows == [[TOPIC, "1", "4", "2", "6", "8", "2", "0"]]  # partition current new lag-before/after replayed skipped
    assert "dry run: nothing changed" in dry.stdout and committed(admin, group) == START

    done = cli(config, "reset-offsets", "--group", group, "--topic", f"{TOPIC}:1", "--to-offset", "2", "--execute", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)["result"]
    assert result["result"] == "ok" and result["partitions"][0]["after"] == 2
    assert committed(admin, group) == {(TOPIC, 0): 7, (TOPIC, 1): 2}

    shown = cli(config, "audit", "show", "--json")
    records = json.loads(shown.stdout)["records"]
    assert [(r["action"], r["target"], r["result"]) for r in records] == [("reset-offsets", f"group {group}", "ok")]
    assert json.loads(records[0]["before_json"]) == {f"{TOPIC}-1": 4}
    assert json.loads(records[0]["after_json"]) == {f"{TOPIC}-1": 2}


@pytest.mark.parametrize("args, message", [
    (["--to-datetime", "2024-13-01T00:00:00.000"], "malformed datetime '2024-13-01T00:00:00.000': month must be in 1..12"),
    (["--to-datetime", "yesterday"], "malformed datetime 'yesterday': expected YYYY-MM-DDTHH:mm:SS.sss"),
    (["--by-duration", "PT5X"], "malformed duration 'PT5X': expected ISO-8601 PnDTnHnMnS"),
    (["--to-offset", "ten"], "--to-offset needs an integer, got 'ten'"),
])
def test_cli_malformed_values_are_one_line_and_change_nothing(admin, group, tmp_path, bootstrap, args, message):
    config = config_file(tmp_path / "kpulse.yaml", bootstrap, tmp_path / "lake")

    line = one_error_line(cli(config, "reset-offsets", "--group", group, "--all-topics", *args, "--execute"))

    assert line.startswith(f"kpulse: error: {message}")
    assert committed(admin, group) == START


def test_cli_roles_come_from_the_users_file(admin, group, tmp_path, bootstrap):
    users = tmp_path / "users.yaml"
    config = config_file(tmp_path / "kpulse.yaml", bootstrap, tmp_path / "lake", users_file=users)
    assert cli(config, "users", "add", "boss", "--role", "admin", env={"KPULSE_NEW_PASSWORD": "boss-secret"}).returncode == 0
    added = cli(config, "users", "add", "vera", "--role", "viewer", "--as", "boss",
                env={"KPULSE_NEW_PASSWORD": "vera-secret", "KPULSE_PASSWORD": "boss-secret"})
    assert added.returncode == 0, added.stderr
    assert "password: scrypt$16384$8$1$" in users.read_text() and "vera-secret" not in users.read_text()
    reset = ["reset-offsets", "--group", group, "--all-topics", "--to-latest", "--execute"]

    denied = one_error_line(cli(config, *reset, "--as", "vera", env={"KPULSE_PASSWORD": "vera-secret"}))
    wrong = one_error_line(cli(config, *reset, "--as", "boss", env={"KPULSE_PASSWORD": "guess"}))
    assert committed(admin, group) == START
    allowed = cli(config, *reset, "--as", "boss", env={"KPULSE_PASSWORD": "boss-secret"})

    assert denied == "kpulse: error: vera (viewer) may not reset-offsets: it needs the operator role"
    assert wrong == "kpulse: error: wrong user name or password"  # never the typed name: it may be a password
    assert allowed.returncode == 0, allowed.stderr
    assert committed(admin, group) == {(TOPIC, 0): 10, (TOPIC, 1): 10}
    records = json.loads(cli(config, "audit", "show", "--json").stdout)["records"]
    assert [(r["actor"], r["action"], r["result"]) for r in records] == [
        ("vera", "reset-offsets", "denied"), ("boss", "login", "denied"), ("boss", "reset-offsets", "ok")]


def test_two_person_rule_one_operator_requests_another_approves_and_the_plan_runs_then(admin, group, tmp_path, bootstrap):
    from kpulse.config import load_config
    from operations.service import Operations

    config = config_file(tmp_path / "kpulse.yaml", bootstrap, tmp_path / "lake")
    config.write_text(config.read_text().replace("    read_only: false\n", "    read_only: false\n    require_approval: true\n"))
    operations = Operations(load_config(config), state_dir=tmp_path / "state")
    plan = operations.plan_reset_offsets("test", group, Scope.parse(True, None), Strategy("to-earliest"))

    with pytest.raises(Refused, match="requires a second operator's approval"):
        operations.reset_offsets(OPERATOR, plan)
    request = operations.request_approval(OPERATOR, "reset-offsets", plan)
    assert committed(admin, group) == START, "a request changes nothing"
    with pytest.raises(NotAuthorized, match="another operator must approve it"):
        operations.approve(OPERATOR, request.id)
    with pytest.raises(NotAuthorized, match="vera \\(viewer\\) may not approve"):
        operations.approve(VIEWER, request.id)

    outcome = operations.approve(User("olga", "operator"), request.id)

    assert outcome.result == "ok" and committed(admin, group) == {(TOPIC, 0): 0, (TOPIC, 1): 0}
    with pytest.raises(Refused, match="already approved \\(by olga\\)"):
        operations.approve(ADMIN, request.id)
    rows = [(r["actor"], r["result"], r["approved_by"]) for r in audit_rows(operations)]
    assert rows == [("otto", "denied", None), ("otto", "requested", None), ("otto", "ok", "olga")]

    stale = operations.request_approval(OPERATOR, "reset-offsets", plan)  # the offsets moved since
    with pytest.raises(Refused, match="changed since the plan was made"):
        operations.approve(User("olga", "operator"), stale.id)
    assert operations.approvals.get(stale.id).status == "failed"


def test_cli_two_person_rule_request_list_approve(admin, group, tmp_path, bootstrap):
    users = tmp_path / "users.yaml"
    config = config_file(tmp_path / "kpulse.yaml", bootstrap, tmp_path / "lake", users_file=users)
    config.write_text(config.read_text().replace("    read_only: false\n", "    read_only: false\n    require_approval: true\n"))
    from operations.access import UsersFile

    for name, role in (("boss", "admin"), ("otto", "operator"), ("olga", "operator")):
        UsersFile(users).add(name, role, f"{name}-secret")

    requested = cli(config, "reset-offsets", "--group", group, "--all-topics", "--to-earliest", "--execute",
                    "--as", "otto", env={"KPULSE_PASSWORD": "otto-secret"})
    assert requested.returncode == 0, requested.stderr
    request_id = requested.stdout.split("approval request ")[1].split()[0]
    assert committed(admin, group) == START
    listed = cli(config, "approvals", "list")
    assert f"{request_id}" in listed.stdout and "by otto  pending" in listed.stdout

    own = one_error_line(cli(config, "approvals", "approve", request_id, "--as", "otto", env={"KPULSE_PASSWORD": "otto-secret"}))
    approved = cli(config, "approvals", "approve", request_id, "--as", "olga", env={"KPULSE_PASSWORD": "olga-secret"})

    assert own == f"kpulse: error: otto requested {request_id}: another operator must approve it"
    assert approved.returncode == 0 and f"request {request_id} approved by olga and run: ok" in approved.stdout
    assert committed(admin, group) == {(TOPIC, 0): 0, (TOPIC, 1): 0}
