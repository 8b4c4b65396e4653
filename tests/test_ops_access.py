"""Revoked access stops at once, on the real cluster: a user's role is read from the users file
at every authorization, so an operator demoted to viewer (or deleted from the file) after
planning cannot execute, and an approval whose requester lost the role is refused. Failed
sign-ins never store the typed name when it names nobody; audit, approval and lock files are
private to the kpulse user."""

from __future__ import annotations

import json
import stat
import time
from pathlib import Path

import pytest
import yaml

from operations.access import User, UsersFile
from operations.errors import NotAuthorized
from operations.offset_plan import Scope, Strategy
from tests.conftest import one_error_line
from tests.support import admin_for, cli, commit, committed, config_file, create_topic, operations_for, produce

pytestmark = pytest.mark.cluster

TOPIC = "ops-access"
START = {(TOPIC, 0): 3, (TOPIC, 1): 2}


@pytest.fixture(scope="module")
def admin(bootstrap):
    admin = admin_for(bootstrap)
    create_topic(admin, TOPIC, 2)
    produce(bootstrap, TOPIC, {0: 8, 1: 8}, first_ms=int(time.time() * 1000) - 60_000, step_ms=10)
    return admin


@pytest.fixture
def group(admin, request):
    name = f"ops-access-{request.node.name[:40]}"
    commit(admin, name, START)
    return name


@pytest.fixture
def users(tmp_path) -> UsersFile:
    users = UsersFile(tmp_path / "users.yaml")
    for name, role in (("otto", "operator"), ("olga", "operator"), ("ada", "admin")):
        users.add(name, role, f"{name}-secret")
    return users


def set_role(users: UsersFile, name: str, role: str | None) -> None:
    """Edit the file by hand, as an administrator would (``role=None`` deletes the entry)."""
    data = yaml.safe_load(users.path.read_text())
    if role is None:
        del data["users"][name]
    else:
        data["users"][name]["role"] = role
    users.path.write_text(yaml.safe_dump(data))


def audit_rows(operations) -> list[tuple]:
    return [(r["actor"], r["action"], r["result"], r["error"]) for r in operations.audit.read().to_dict("records")]


def plan_to_earliest(operations, group):
    return operations.plan_reset_offsets("test", group, Scope.parse(True, None), Strategy("to-earliest"))


def test_an_operator_demoted_to_viewer_after_planning_cannot_execute(admin, group, users, tmp_path, bootstrap):
    operations = operations_for(tmp_path, bootstrap, users_file=users.path)
    otto = users.authenticate("otto", "otto-secret")
    plan = plan_to_earliest(operations, group)
    assert operations.may(otto, "reset-offsets", "test")

    set_role(users, "otto", "viewer")

    assert not operations.may(otto, "reset-offsets", "test")
    with pytest.raises(NotAuthorized, match=r"^otto \(viewer\) may not reset-offsets: it needs the operator role$"):
        operations.reset_offsets(otto, plan)
    assert committed(admin, group) == START
    assert audit_rows(operations) == [
        ("otto", "reset-offsets", "denied", "otto (viewer) may not reset-offsets: it needs the operator role")]


def test_an_operator_deleted_from_the_users_file_cannot_execute(admin, group, users, tmp_path, bootstrap):
    operations = operations_for(tmp_path, bootstrap, users_file=users.path)
    otto = users.authenticate("otto", "otto-secret")
    plan = plan_to_earliest(operations, group)

    set_role(users, "otto", None)

    with pytest.raises(NotAuthorized, match=f"^otto is no longer in the users file {users.path}$"):
        operations.reset_offsets(otto, plan)
    assert committed(admin, group) == START
    assert [row[:3] for row in audit_rows(operations)] == [("otto", "reset-offsets", "denied")]


def test_a_user_of_the_no_users_file_mode_is_refused_once_a_users_file_exists(admin, group, tmp_path, bootstrap):
    path = tmp_path / "users.yaml"
    operations = operations_for(tmp_path, bootstrap, users_file=path)
    local = User("dev", "admin")  # what the CLI acts as while there is no users file
    plan = plan_to_earliest(operations, group)
    assert operations.may(local, "reset-offsets", "test")

    UsersFile(path).add("ada", "admin", "ada-secret")

    with pytest.raises(NotAuthorized, match="no users file, but .*users.yaml now exists: sign in"):
        operations.reset_offsets(local, plan)
    assert committed(admin, group) == START


def test_an_approval_whose_requester_was_demoted_is_refused_and_marked_failed(admin, group, users, tmp_path, bootstrap):
    config = config_file(tmp_path / "kpulse.yaml", bootstrap, tmp_path / "lake", users_file=users.path)
    config.write_text(config.read_text().replace("    read_only: false\n", "    read_only: false\n    require_approval: true\n"))
    from kpulse.config import load_config
    from operations.service import Operations

    operations = Operations(load_config(config), state_dir=tmp_path / "state")
    otto, olga = users.get("otto"), users.get("olga")
    request = operations.request_approval(otto, "reset-offsets", plan_to_earliest(operations, group))

    set_role(users, "otto", "viewer")

    with pytest.raises(NotAuthorized, match=f"^approval request {request.id} refused: otto \\(viewer\\) may not "
                                            "reset-offsets: it needs the operator role$"):
        operations.approve(olga, request.id)
    assert committed(admin, group) == START
    assert operations.approvals.get(request.id).status == "failed"
    assert [row[:3] for row in audit_rows(operations)] == [
        ("otto", "reset-offsets", "requested"), ("otto", "reset-offsets", "denied")]


def test_an_approver_demoted_after_signing_in_cannot_approve(admin, group, users, tmp_path, bootstrap):
    config = config_file(tmp_path / "kpulse.yaml", bootstrap, tmp_path / "lake", users_file=users.path)
    config.write_text(config.read_text().replace("    read_only: false\n", "    read_only: false\n    require_approval: true\n"))
    from kpulse.config import load_config
    from operations.service import Operations

    operations = Operations(load_config(config), state_dir=tmp_path / "state")
    request = operations.request_approval(users.get("otto"), "reset-offsets", plan_to_earliest(operations, group))
    olga = users.get("olga")
    set_role(users, "olga", None)

    with pytest.raises(NotAuthorized, match="olga is no longer in the users file"):
        operations.approve(olga, request.id)
    with pytest.raises(NotAuthorized, match="olga is no longer in the users file"):
        operations.reject(olga, request.id)
    assert operations.approvals.get(request.id).status == "pending"
    assert committed(admin, group) == START


def test_the_cli_records_a_failed_sign_in_without_a_name_that_names_nobody(admin, group, users, tmp_path, bootstrap):
    config = config_file(tmp_path / "kpulse.yaml", bootstrap, tmp_path / "lake", users_file=users.path)
    reset = ["reset-offsets", "--group", group, "--all-topics", "--to-latest", "--execute"]

    typed_password = one_error_line(cli(config, *reset, "--as", "otto-secret", env={"KPULSE_PASSWORD": "x"}))
    wrong_password = one_error_line(cli(config, *reset, "--as", "otto", env={"KPULSE_PASSWORD": "guess"}))

    assert "wrong user name or password" in typed_password and "wrong user name or password" in wrong_password
    records = json.loads(cli(config, "audit", "show", "--json").stdout)["records"]
    assert [(r["actor"], r["action"], r["result"]) for r in records] == [
        ("(unknown user)", "login", "denied"), ("otto", "login", "denied")]
    assert "otto-secret" not in json.dumps(records)
    assert committed(admin, group) == START


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_audit_approval_and_lock_files_are_private(admin, group, users, tmp_path, bootstrap):
    lake = tmp_path / "lake"
    config = config_file(tmp_path / "kpulse.yaml", bootstrap, lake, users_file=users.path)
    config.write_text(config.read_text().replace("    read_only: false\n", "    read_only: false\n    require_approval: true\n"))
    from kpulse.config import load_config
    from operations.service import Operations

    state = tmp_path / "state"
    operations = Operations(load_config(config), state_dir=state)
    request = operations.request_approval(users.get("otto"), "reset-offsets", plan_to_earliest(operations, group))
    operations.approve(users.get("olga"), request.id)
    assert committed(admin, group) == {(TOPIC, 0): 0, (TOPIC, 1): 0}

    files = [p for p in (state, lake / "audit") for p in p.rglob("*") if p.is_file()]
    directories = [p for p in (state, lake / "audit") for p in [p, *p.rglob("*")] if p.is_dir()]
    assert {p.suffix for p in files} >= {".json", ".lock", ".parquet"}
    assert {str(p.relative_to(tmp_path)): oct(mode(p)) for p in files if mode(p) != 0o600} == {}
    assert {str(p.relative_to(tmp_path)): oct(mode(p)) for p in directories if mode(p) != 0o700} == {}


def test_the_audit_spool_is_private(tmp_path):
    from operations.audit import AuditLog, AuditRecord

    blocked = tmp_path / "lake-is-a-file"
    blocked.write_text("")
    audit = AuditLog(str(blocked), tmp_path / "state" / "audit-spool.jsonl")
    _, written = audit.record(AuditRecord(cluster="test", actor="ada", action="reset-offsets", target="group x",
                                          result="denied"))
    assert not written and len(audit.pending()) == 1
    assert oct(mode(audit.spool)) == oct(0o600) and oct(mode(audit.spool.parent)) == oct(0o700)
