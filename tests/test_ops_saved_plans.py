"""Saved and edited plans, odd numbers and times on the real cluster, as a hostile user or an
unlucky on-call engineer would try them: an edited plan is re-validated against the cluster
(topics, partitions, brokers exist; offsets inside the log now) and refused in one line with
nothing changed; a time before the epoch means the log start; every malformed input is one
stderr line, exit 1, no traceback; ``--expect-current`` stops a relative reset applied twice."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from operations.access import User
from operations.errors import Refused
from operations.offset_plan import PartitionReset, Strategy
from tests.conftest import one_error_line
from tests.support import admin_for, commit, committed, config_file, create_topic, official, operations_for, produce

pytestmark = pytest.mark.cluster

TOPIC = "ops-plans"
COUNTS = {0: 10, 1: 12, 2: 8}
START = {(TOPIC, 0): 5, (TOPIC, 1): 6, (TOPIC, 2): 4}
ADMIN = User("ada", "admin")


@pytest.fixture(scope="module")
def admin(bootstrap):
    admin = admin_for(bootstrap)
    create_topic(admin, TOPIC, len(COUNTS))
    produce(bootstrap, TOPIC, COUNTS, first_ms=int(time.time() * 1000) - 600_000, step_ms=1000)
    return admin


@pytest.fixture
def group(admin, request):
    name = f"ops-plans-{request.node.name[:40]}".replace("[", "-").replace("]", "")
    commit(admin, name, START)
    return name


@pytest.fixture
def config(tmp_path, bootstrap):
    return config_file(tmp_path / "kpulse.yaml", bootstrap, tmp_path / "lake")


def cli(config, *args, env=None):
    return subprocess.run([sys.executable, "-m", "cli.main", "--config", str(config), *args], capture_output=True,
                          text=True, timeout=120, env={**os.environ, **(env or {})})


def exported_plan(config, group: str, *strategy: str) -> dict:
    shown = cli(config, "reset-offsets", "--group", group, "--topic", TOPIC, *(strategy or ("--to-earliest",)), "--json")
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)["plan"]


def run_plan(config, tmp_path, group: str, plan: dict, *extra: str):
    path = tmp_path / "edited-plan.json"
    path.write_text(json.dumps(plan))
    return cli(config, "reset-offsets", "--group", group, "--plan", str(path), "--execute", *extra)


def audit_rows(config) -> list[dict]:
    return json.loads(cli(config, "audit", "show", "--json").stdout)["records"]


# --- item 3: a saved plan is re-validated against the cluster, all or nothing ---------------------

def test_an_edited_plan_with_an_offset_past_the_log_end_is_refused_and_nothing_is_committed(admin, group, config, tmp_path):
    plan = exported_plan(config, group)
    plan["partitions"][1]["new"] = COUNTS[1] + 1_000_000

    line = one_error_line(run_plan(config, tmp_path, group, plan))

    assert f"{TOPIC}-1: new offset {COUNTS[1] + 1_000_000} is outside the log (0..{COUNTS[1]})" in line, line
    assert "nothing changed" in line
    assert committed(admin, group) == START
    assert [(r["result"], r["target"]) for r in audit_rows(config)] == [("refused", f"group {group}")]


def test_an_edited_plan_naming_a_topic_that_does_not_exist_is_refused_whole(admin, group, config, tmp_path, bootstrap):
    plan = exported_plan(config, group)
    plan["partitions"].append({**plan["partitions"][0], "topic": "ops-plans-nowhere", "current": None})
    plan["partitions"].append({**plan["partitions"][0], "partition": 7, "current": None})

    line = one_error_line(run_plan(config, tmp_path, group, plan))

    assert "ops-plans-nowhere-0" in line and f"{TOPIC}-7" in line and "do not exist" in line, line
    assert committed(admin, group) == START, "not half-applied: nothing committed"
    described = official("kafka-consumer-groups", "--bootstrap-server", bootstrap, "--describe", "--group", group)
    rows = {tuple(line.split()[1:4]) for line in described.splitlines() if line.startswith(group)}
    assert rows == {(TOPIC, str(p), str(o)) for (_, p), o in START.items()}, described


@pytest.mark.parametrize("edit, message", [
    (lambda plan: plan["partitions"][1].update(new=COUNTS[1] + 1_000_000), f"new offset {COUNTS[1] + 1_000_000} is outside"),
    (lambda plan: plan["partitions"].append({**plan["partitions"][0], "topic": "ops-plans-nowhere"}),
     "ops-plans-nowhere-0 do not exist"),
    (lambda plan: plan["partitions"].append({**plan["partitions"][0], "topic": "__consumer_offsets"}),
     "__consumer_offsets: resetting offsets refused"),
])
def test_a_dry_run_of_an_edited_plan_is_refused_as_its_execution_would_be(admin, group, config, tmp_path, edit, message):
    """`--plan FILE` without --execute shows what would run: a plan that would be refused is
    refused now, not printed as if it could run."""
    plan = exported_plan(config, group)
    edit(plan)
    path = tmp_path / "edited-plan.json"
    path.write_text(json.dumps(plan))

    line = one_error_line(cli(config, "reset-offsets", "--group", group, "--plan", str(path)))

    assert message in line, line
    assert committed(admin, group) == START


@pytest.mark.parametrize("separator, shown", [("\n", "\\n"), ("\u2028", "\\u2028"), ("\x85", "\\x85")])
def test_an_error_quoting_a_name_with_a_newline_is_still_one_line(admin, config, separator, shown):
    line = one_error_line(cli(config, "reset-offsets", "--group", f"ops-plans-no{separator}such", "--all-topics",
                              "--to-earliest"))

    assert f"ops-plans-no{shown}such" in line, line


def test_an_edited_plan_whose_current_offsets_are_not_the_groups_is_refused(admin, group, config, tmp_path):
    plan = exported_plan(config, group)
    plan["partitions"][0]["current"] = 0  # hides a replay: the group is at 5

    line = one_error_line(run_plan(config, tmp_path, group, plan))

    assert "changed since the plan was made" in line and f"{TOPIC}-0: 0 -> 5" in line
    assert committed(admin, group) == START


def test_a_saved_plan_still_valid_is_applied_and_read_back(admin, group, config, tmp_path):
    plan = exported_plan(config, group, "--to-offset", "7")

    done = run_plan(config, tmp_path, group, plan)

    assert done.returncode == 0, done.stderr
    assert committed(admin, group) == {(TOPIC, 0): 7, (TOPIC, 1): 7, (TOPIC, 2): 7}


def test_a_streams_plan_with_offsets_outside_the_log_is_refused_and_nothing_changes(admin, group, tmp_path, bootstrap):
    from operations.streams_reset_plan import StreamsResetPlan

    operations = operations_for(tmp_path, bootstrap)
    rows = (PartitionReset(TOPIC, 0, 5, 0, 10, 3), PartitionReset(TOPIC, 1, 6, 0, 12, 12 + 1_000_000),
            PartitionReset("ops-plans-nowhere", 0, None, 0, 5, 1))
    plan = StreamsResetPlan(cluster="test", application_id=group, group_state="Empty", strategy=Strategy("to-earliest"),
                            input=rows, intermediate=(), delete_topics=(), untouched=(), planned_at=time.time())

    with pytest.raises(Refused) as refused:
        operations.reset_streams_app(ADMIN, plan)

    assert f"{TOPIC}-1: new offset 1000012 is outside the log (0..12)" in str(refused.value)
    assert "ops-plans-nowhere-0 do not exist" in str(refused.value) and f"{TOPIC}-0" not in str(refused.value)
    assert committed(admin, group) == START


REASSIGN = "ops-plans-reassign"


@pytest.mark.parametrize("edit, message", [
    (lambda p: p["partitions"][0].update(replicas=[1, 99]), "broker(s) 99 do not exist"),
    (lambda p: p["partitions"].append({"topic": REASSIGN, "partition": 9, "replicas": [1]}), f"{REASSIGN}-9 do not exist"),
    (lambda p: p["partitions"][0].update(replicas=[1, 1]), "broker 1 appears twice"),
    (lambda p: p["partitions"][0].update(replicas="1,2"), "replicas: expected a list"),
])
def test_an_edited_reassignment_file_is_refused_in_one_line_and_nothing_moves(admin, config, tmp_path, edit, message):
    if REASSIGN not in admin.list_topics(timeout=10).topics:
        create_topic(admin, REASSIGN, 1, assignment=[[1]], config={"min.insync.replicas": "1"})
    plan = {"version": 1, "partitions": [{"topic": REASSIGN, "partition": 0, "replicas": [2]}]}
    edit(plan)
    path = tmp_path / "reassign.json"
    path.write_text(json.dumps(plan))

    line = one_error_line(cli(config, "reassign", "execute", "--plan", str(path)))

    assert message in line, line
    assert list(admin.list_topics(REASSIGN, timeout=10).topics[REASSIGN].partitions[0].replicas) == [1]


def test_a_kpulse_reassignment_plan_naming_a_missing_partition_or_broker_is_refused(admin, config, tmp_path):
    if REASSIGN not in admin.list_topics(timeout=10).topics:
        create_topic(admin, REASSIGN, 1, assignment=[[1]], config={"min.insync.replicas": "1"})
    plan = {"cluster": "test", "goal": "balance over brokers 1,2,3", "planned_at": time.time(),
            "moves": [{"topic": REASSIGN, "partition": 3, "current": [1], "target": [2]},
                      {"topic": REASSIGN, "partition": 0, "current": [1], "target": [42]}]}
    path = tmp_path / "kpulse-reassign.json"
    path.write_text(json.dumps(plan))

    for action in ("execute", "verify", "cancel"):
        line = one_error_line(cli(config, "reassign", action, "--plan", str(path)))
        assert f"{REASSIGN}-3 do not exist" in line, (action, line)
    assert list(admin.list_topics(REASSIGN, timeout=10).topics[REASSIGN].partitions[0].replicas) == [1]


# --- item 4: times before the epoch mean the log start; strict numbers ----------------------------

@pytest.mark.parametrize("strategy", [("--to-datetime", "1969-12-31T23:59:59.999"),
                                      ("--to-datetime", "1969-12-31T23:59:59.997"),
                                      ("--to-datetime", "1900-01-01T00:00:00.000"),
                                      ("--by-duration", "P99999999999D")])
def test_a_time_before_the_epoch_plans_the_log_start_not_the_log_end(admin, group, config, strategy):
    plan = exported_plan(config, group, *strategy)

    assert {(p["topic"], p["partition"]): p["new"] for p in plan["partitions"]} == {(TOPIC, p): 0 for p in COUNTS}
    assert sum(p["skipped"] for p in plan["partitions"]) == 0 and committed(admin, group) == START


@pytest.mark.parametrize("args, message", [
    (["--all-topics", "--shift-by", "1_000"], "--shift-by needs an integer, got '1_000'"),
    (["--all-topics", "--to-offset", "1_000"], "--to-offset needs an integer, got '1_000'"),
    (["--all-topics", "--to-offset", "\u0661"], "--to-offset needs an integer"),
    (["--all-topics", "--to-offset", "99999999999999999999"], "--to-offset: 99999999999999999999 is out of range"),
    (["--topic", f"{TOPIC}:1_0", "--to-earliest"], "partitions in --topic"),
    (["--all-topics", "--to-datetime", "\u0662\u0660\u0662\u0664-01-01T00:00:00.000"], "malformed datetime"),
    (["--all-topics", "--by-duration", "P99999999999999999999D"], "out of range"),
])
def test_malformed_numbers_and_times_are_one_line_and_change_nothing(admin, group, config, args, message):
    line = one_error_line(cli(config, "reset-offsets", "--group", group, *args, "--execute"))

    assert message in line, line
    assert committed(admin, group) == START


@pytest.mark.parametrize("args, message", [
    (["elect-leaders", "--topic", TOPIC, "--partition", "1_0"], "--partition needs an integer, got '1_0'"),
    (["reassign", "generate", "--broker-list", "1_0,2"], "--broker-list needs an integer, got '1_0'"),
    (["reassign", "generate", "--drain", "\u0661"], "--drain needs an integer"),
    (["audit", "show", "--since", "P99999999999999999999D"], "out of range"),
])
def test_other_numbers_use_the_same_strict_parser(admin, config, args, message):
    line = one_error_line(cli(config, *args))

    assert message in line, line


def test_audit_show_since_before_the_epoch_means_from_the_beginning(admin, group, config):
    assert cli(config, "reset-offsets", "--group", group, "--all-topics", "--to-latest", "--execute").returncode == 0

    shown = cli(config, "audit", "show", "--since", "P99999999999D", "--json")

    assert shown.returncode == 0, shown.stderr
    assert [r["target"] for r in json.loads(shown.stdout)["records"]] == [f"group {group}"]


# --- item 6: no traceback, one line ---------------------------------------------------------------

def test_unreadable_or_oversized_csv_plan_files_are_one_line(admin, group, config, tmp_path):
    latin = tmp_path / "latin1.csv"
    latin.write_bytes(f"{TOPIC},0,1\n# caf\xe9\n".encode("latin-1"))
    huge = tmp_path / "huge.csv"
    huge.write_text(f"{TOPIC},0," + "1" * 140_000 + "\n")

    for path, message in ((latin, "not UTF-8"), (huge, "not a CSV file")):
        line = one_error_line(cli(config, "reset-offsets", "--group", group, "--from-file", str(path), "--execute"))
        assert message in line, line
    assert committed(admin, group) == START


@pytest.mark.parametrize("edit, message", [
    (lambda p: p.pop("partitions"), "partitions: missing"),
    (lambda p: p["partitions"][0].update(new="3"), r"partitions[0].new: expected an integer, got '3'"),
    (lambda p: p["partitions"][0].update(partition=None), r"partitions[0].partition: expected an integer, got null"),
    (lambda p: p.update(strategy=["to-earliest"]), "strategy: expected an object"),
    (lambda p: p["scope"].update(topics="ops-plans"), "scope.topics: expected a list"),
])
def test_edited_plan_files_are_one_line_naming_the_field(admin, group, config, tmp_path, edit, message):
    plan = exported_plan(config, group)
    edit(plan)

    line = one_error_line(run_plan(config, tmp_path, group, plan))

    assert f"not a kpulse reset plan: {message}" in line, line
    assert committed(admin, group) == START


def test_a_plan_file_that_is_not_json_or_not_an_object_is_one_line(admin, group, config, tmp_path):
    for text in ("[1, 2]", "\xff\xfe", "[" * 100_000):
        path = tmp_path / "bad.json"
        path.write_bytes(text.encode("latin-1"))
        line = one_error_line(cli(config, "reset-offsets", "--group", group, "--plan", str(path), "--execute"))
        assert "plan" in line, line
    assert committed(admin, group) == START


def test_reassign_generate_output_to_a_directory_or_a_missing_one_is_one_line(admin, config, tmp_path):
    for target in (tmp_path, tmp_path / "missing" / "plan.json"):
        line = one_error_line(cli(config, "reassign", "generate", "-o", str(target)))
        assert f"cannot write the plan to {target}" in line, line


@pytest.mark.parametrize("args", [
    ["reset-offsets", "--group", "", "--all-topics", "--to-earliest"],
    ["reset-offsets", "--group", "  ", "--all-topics", "--to-earliest"],
    ["reset-streams-app", "--application-id", "", "--input-topics", TOPIC],
    ["reset-streams-app", "--application-id", " \t", "--input-topics", TOPIC],
])
def test_an_empty_group_or_application_id_is_refused_up_front(admin, config, args):
    line = one_error_line(cli(config, *args))

    assert "empty" in line and "id" in line, line


# --- item 11: --expect-current --------------------------------------------------------------------

def test_expect_current_stops_a_relative_reset_from_applying_twice(admin, group, config):
    reset = ["reset-offsets", "--group", group, "--topic", f"{TOPIC}:0,1", "--shift-by", "-1",
             "--expect-current", f"{TOPIC}:0=5,{TOPIC}:1=6", "--execute"]

    first = cli(config, *reset)
    second = cli(config, *reset)

    assert first.returncode == 0, first.stderr
    line = one_error_line(second)
    assert f"{TOPIC}-0: expected 5, committed 4" in line and f"{TOPIC}-1: expected 6, committed 5" in line, line
    assert committed(admin, group) == {(TOPIC, 0): 4, (TOPIC, 1): 5, (TOPIC, 2): 4}
    assert [r["result"] for r in audit_rows(config)] == ["ok", "refused"]


def test_expect_current_names_partitions_without_a_commit_too(admin, group, config):
    line = one_error_line(cli(config, "reset-offsets", "--group", group, "--all-topics", "--to-earliest",
                              "--expect-current", f"{TOPIC}:2=4,{TOPIC}:1=9", "--execute"))

    assert f"{TOPIC}-1: expected 9, committed 6" in line and f"{TOPIC}-2" not in line, line
    assert committed(admin, group) == START


def test_expect_current_is_kept_with_an_approval_request_and_checked_when_approved(admin, group, tmp_path, bootstrap):
    from operations.access import UsersFile

    users = tmp_path / "users.yaml"
    config = config_file(tmp_path / "kpulse.yaml", bootstrap, tmp_path / "lake", users_file=users)
    config.write_text(config.read_text().replace("    read_only: false\n", "    read_only: false\n    require_approval: true\n"))
    for name in ("otto", "olga"):
        UsersFile(users).add(name, "operator", f"{name}-secret")
    requested = cli(config, "reset-offsets", "--group", group, "--topic", f"{TOPIC}:0", "--to-earliest",
                    "--expect-current", f"{TOPIC}:0=5,{TOPIC}:1=6", "--execute", "--as", "otto",
                    env={"KPULSE_PASSWORD": "otto-secret"})
    assert requested.returncode == 0, requested.stderr
    request_id = requested.stdout.split("approval request ")[1].split()[0]
    commit(admin, group, {**START, (TOPIC, 1): 2})  # a partition outside the plan, named by --expect-current

    line = one_error_line(cli(config, "approvals", "approve", request_id, "--as", "olga",
                              env={"KPULSE_PASSWORD": "olga-secret"}))

    assert f"{TOPIC}-1: expected 6, committed 2" in line, line
    assert committed(admin, group) == {**START, (TOPIC, 1): 2}
    listed = json.loads(cli(config, "approvals", "list", "--all", "--json").stdout)
    assert [r["status"] for r in listed if r["id"] == request_id] == ["failed"]
