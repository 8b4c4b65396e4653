"""The dashboard's operations UI under AppTest on the real cluster: sign-in against a users file,
a viewer sees no action controls, an operator's offset reset is a plan first (nothing changes),
a wrongly typed name refuses, the right name executes exactly the plan and leaves an audit row.
Identity rules without a users file are unit-tested at the end."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml
from streamlit.testing.v1 import AppTest

from dashboard import literal
from operations.access import User, UsersFile
from tests.dashboard_ops import (
    CLUSTER, COUNTS, START, TOPIC, group_key, labels, prepare_topic, sign_in, start, write_setup,
)
from tests.dashboard_tables import page_problems
from tests.support import APP_FILE, admin_for, commit, committed, create_topic, produce


@pytest.fixture(scope="module")
def setup(bootstrap, tmp_path_factory):
    admin = prepare_topic(bootstrap)
    group = "ui-ops-group"
    commit(admin, group, {(TOPIC, p): START for p in COUNTS})
    config = write_setup(tmp_path_factory.mktemp("dashboard-ops"), bootstrap, [group])
    return {"admin": admin, "group": group, "config": config}


@pytest.fixture
def app(setup, monkeypatch):
    return start(setup["config"], monkeypatch)


def table_with(app: AppTest, column: str):
    """The one table on the page with ``column``."""
    tables = [d.value for d in app.dataframe if column in d.value.columns]
    assert len(tables) == 1, f"{len(tables)} tables with a {column!r} column"
    return tables[0]


pytestmark = pytest.mark.cluster


def test_wrong_password_is_one_line_and_signs_nobody_in(app, setup):
    assert "Sign in" in labels(app) and not app.sidebar.selectbox  # nothing else is shown before sign-in
    sign_in(app, "olga", "not-her-password")
    assert [e.value for e in app.error] == ["wrong user name or password"]
    assert "Sign in" in labels(app) and not any("olga" in m.value for m in app.sidebar.markdown)
    from kpulse.config import load_config
    from operations.audit import AuditLog

    rows = AuditLog(load_config(str(setup["config"])).lake.path, Path("/nonexistent-spool")).read()
    assert ("olga", "login", "denied") in set(rows[["actor", "action", "result"]].itertuples(index=False, name=None))


def test_a_viewer_sees_no_action_controls(app, setup):
    sign_in(app, "vic", "vic-secret-1")
    assert any("vic" in m.value and "viewer" in m.value for m in app.sidebar.markdown)
    app.switch_page("app_pages/groups.py").run()
    assert not app.exception
    key = group_key(setup["group"])
    assert not [w for w in app.selectbox if w.key and w.key.startswith(key)]
    assert not {"Plan (changes nothing)", "Execute…", "Request approval…"} & labels(app)
    assert any("reset-offsets needs the operator role; you are a viewer" in c.value for c in app.caption)


def test_operator_plans_then_only_the_typed_name_executes_the_reset(app, setup):
    admin, group = setup["admin"], setup["group"]
    before = committed(admin, group)
    assert before == {(TOPIC, p): START for p in COUNTS}
    sign_in(app, "olga", "olga-secret-1")
    app.switch_page("app_pages/groups.py").run()
    key = group_key(group)
    app.selectbox(key=f"{key}-strategy").set_value("to-earliest")
    next(b for b in app.button if b.label == "Plan (changes nothing)").click().run()
    assert not app.exception and not app.error, [e.value for e in app.error]

    plan = table_with(app, "new offset")
    assert list(plan["partition"]) == sorted(COUNTS)
    assert list(plan["current offset"]) == [START] * len(COUNTS)
    assert list(plan["new offset"]) == [0] * len(COUNTS)
    assert list(plan["lag before"]) == [c - START for c in COUNTS.values()]
    assert list(plan["lag after"]) == list(COUNTS.values())
    assert list(plan["replayed"]) == [START] * len(COUNTS) and list(plan["skipped"]) == [0] * len(COUNTS)
    assert page_problems(app, "groups") == []  # the plan's headers read as words, with units (issue 28)
    assert committed(admin, group) == before  # planning changed nothing

    app.button(key=f"{key}-execute").click().run()
    assert app.text_input(key=f"{key}-typed")  # the confirmation dialog is open
    assert committed(admin, group) == before  # opening it changed nothing

    app.text_input(key=f"{key}-typed").input(group + "x")
    app.button(key=f"{key}-confirm").click().run()
    assert any(f"is not '{group}': nothing executed" in e.value for e in app.error)
    assert committed(admin, group) == before

    app.text_input(key=f"{key}-typed").input(group)
    app.button(key=f"{key}-confirm").click().run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    assert any("reset-offsets: ok" in s.value for s in app.success)
    expected = {(TOPIC, int(p)): int(n) for p, n in zip(plan["partition"], plan["new offset"])}
    assert committed(admin, group) == expected
    outcome = table_with(app, "after (read back)")
    assert list(outcome["after (read back)"]) == [0] * len(COUNTS)
    assert page_problems(app, "groups") == []

    from kpulse.config import load_config
    from operations.audit import AuditLog

    rows = AuditLog(load_config(str(setup["config"])).lake.path, Path("/nonexistent-spool")).read()
    done = rows[(rows["action"] == "reset-offsets") & (rows["target"] == f"group {group}")]
    assert list(done["actor"]) == ["olga"] and list(done["result"]) == ["ok"]
    assert json.loads(done.iloc[0]["after_json"]) == {f"{TOPIC}-{p}": 0 for p in COUNTS}

    app.switch_page("app_pages/operations.py").run()
    assert not app.exception
    audit = table_with(app, "actor")
    assert ("olga", "reset-offsets", f"group {group}", "ok") in set(
        audit[["actor", "action", "target", "result"]].itertuples(index=False, name=None))


def test_an_election_plan_on_a_topic_led_by_its_preferred_replicas_offers_nothing_to_execute(app, setup):
    sign_in(app, "olga", "olga-secret-1")
    app.switch_page("app_pages/topics.py").run()
    app.selectbox(key="topics-chosen").set_value(TOPIC).run()
    key = f"op-topic-{CLUSTER}-{TOPIC}"
    next(b for b in app.button if b.label == "Plan (changes nothing)").click().run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    assert any(f"0 partition(s) of leaders {TOPIC} not led by their preferred replica" in c.value for c in app.caption)
    assert app.button(key=f"{key}-execute").disabled


def test_a_read_only_cluster_shows_the_controls_disabled_with_the_reason(setup, bootstrap, tmp_path, monkeypatch):
    app = start(write_setup(tmp_path, bootstrap, [setup["group"]], read_only=True), monkeypatch)
    sign_in(app, "olga", "olga-secret-1")
    app.switch_page("app_pages/groups.py").run()
    key = group_key(setup["group"])
    assert app.selectbox(key=f"{key}-strategy").disabled
    assert next(b for b in app.button if b.label == "Plan (changes nothing)").disabled
    assert any(f"Cluster {CLUSTER} is read-only" in i.value for i in app.info)


def test_an_approval_cluster_files_a_request_that_another_operator_approves(bootstrap, tmp_path, monkeypatch):
    admin = prepare_topic(bootstrap)
    group = "ui-ops-approved"
    before = {(TOPIC, p): START for p in COUNTS}
    commit(admin, group, before)
    config = write_setup(tmp_path, bootstrap, [group], require_approval=True)
    app = sign_in(start(config, monkeypatch), "olga", "olga-secret-1")
    app.switch_page("app_pages/groups.py").run()
    key = group_key(group)
    app.selectbox(key=f"{key}-strategy").set_value("to-latest")
    next(b for b in app.button if b.label == "Plan (changes nothing)").click().run()
    assert "Execute…" not in labels(app)
    app.button(key=f"{key}-execute").click().run()
    app.text_input(key=f"{key}-typed").input(group)
    app.button(key=f"{key}-confirm").click().run()
    assert any("approval request" in s.value and "nothing changed yet" in s.value for s in app.success)
    assert committed(admin, group) == before

    app.switch_page("app_pages/operations.py").run()  # the requester cannot approve
    assert "Approve and run…" not in labels(app)
    assert any("another operator must approve it" in c.value for c in app.caption)

    other = sign_in(start(config, monkeypatch), "otto", "otto-secret-1")
    other.switch_page("app_pages/operations.py").run()
    assert list(table_with(other, "requested by")["target"]) == [f"group {group}"]
    assert page_problems(other, "operations") == []  # the request, its plan and the audit log
    next(b for b in other.button if b.label == "Approve and run…").click().run()
    assert committed(admin, group) == before  # the approval dialog is open: nothing ran yet
    other.text_input(key="ops-approving-typed").input(group)
    other.button(key="ops-approving-confirm").click().run()
    assert not other.exception and not other.error, [e.value for e in other.error]
    assert any("reset-offsets: ok" in s.value for s in other.success)
    assert committed(admin, group) == {(TOPIC, p): c for p, c in COUNTS.items()}  # to-latest: the log end
    audit = table_with(other, "actor")
    done = audit[(audit["target"] == f"group {group}") & (audit["result"] == "ok")]
    assert list(done["actor"]) == ["olga"] and list(done["approved_by"]) == ["otto"]


def test_an_admin_rebalances_a_topic_with_a_progress_bar_until_the_throttles_are_gone(bootstrap, tmp_path,
                                                                                     monkeypatch):
    from operations.reassign import throttle_configs

    admin = admin_for(bootstrap)
    topic = "ui-ops-moves"
    create_topic(admin, topic, 2, assignment=[[1, 2], [2, 1]])
    produce(bootstrap, topic, {0: 50, 1: 50}, first_ms=int(time.time() * 1000), step_ms=1)
    app = sign_in(start(write_setup(tmp_path, bootstrap, []), monkeypatch), "ada", "ada-secret-1")
    app.switch_page("app_pages/brokers.py").run()
    key = f"op-broker-{CLUSTER}-1"
    app.multiselect(key=f"{key}-topics").set_value([topic])
    assert app.number_input(key=f"{key}-throttle").value == 10 * 1024 * 1024  # the CLI's default too (docs/operations.md)
    next(b for b in app.button if b.label == "Plan (changes nothing)").click().run()
    assert not app.error, [e.value for e in app.error]
    moves = table_with(app, "target replicas")
    assert len(moves) >= 1 and all("3" in target for target in moves["target replicas"])
    assert page_problems(app, "brokers") == []
    assert {tuple(p.replicas) for p in admin.list_topics(topic, timeout=10).topics[topic].partitions.values()} == {
        (1, 2), (2, 1)}  # planning moved nothing

    app.button(key=f"{key}-execute").click().run()
    app.text_input(key=f"{key}-typed").input(CLUSTER)
    app.button(key=f"{key}-confirm").click().run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    deadline = time.monotonic() + 90
    while not any("throttles removed" in bar.proto.text for bar in app.get("progress")):
        assert time.monotonic() < deadline, [bar.proto.text for bar in app.get("progress")]
        time.sleep(1)
        app.run()
    bar = app.get("progress")[0].proto
    assert bar.value == 100 and f"{len(moves)}/{len(moves)} partition(s)" in bar.text
    replicas = admin.list_topics(topic, timeout=10).topics[topic].partitions
    assert any(3 in p.replicas for p in replicas.values())
    assert all(not values for values in throttle_configs(admin, [1, 2, 3], [topic]).values())


def test_an_admin_resets_a_streams_app_deleting_its_internal_topics(bootstrap, tmp_path, monkeypatch):
    admin = prepare_topic(bootstrap)
    app_id = "ui-ops-app"
    changelog = f"{app_id}-store-changelog"
    create_topic(admin, changelog, 1)
    create_topic(admin, "ui-ops-output", 1)
    commit(admin, app_id, {(TOPIC, p): START for p in COUNTS})
    snapshot_config = write_setup(tmp_path, bootstrap, [])
    snapshot = tmp_path / "lake" / "_snapshots" / f"{CLUSTER}.json"
    data = json.loads(snapshot.read_text())
    data["streams_apps"] = [{"application_id": app_id, "state": "NOT_RUNNING", "members": 0, "instances": []}]
    snapshot.write_text(json.dumps(data))
    app = sign_in(start(snapshot_config, monkeypatch), "ada", "ada-secret-1")
    app.switch_page("app_pages/streams.py").run()
    key = f"op-streams-{CLUSTER}-{app_id}"
    app.multiselect(key=f"{key}-input").set_value([TOPIC])
    next(b for b in app.button if b.label == "Plan (changes nothing)").click().run()
    assert not app.error, [e.value for e in app.error]
    assert list(table_with(app, "new offset")["new offset"]) == [0] * len(COUNTS)
    assert [d.value for d in app.dataframe if list(d.value.columns) == ["topic"]][0]["topic"].tolist() == [changelog]
    assert changelog in admin.list_topics(timeout=10).topics  # planning deleted nothing

    app.button(key=f"{key}-execute").click().run()
    app.text_input(key=f"{key}-typed").input(app_id)
    app.button(key=f"{key}-confirm").click().run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    assert any(f"deleted {changelog}" in s.value for s in app.success)
    assert any(literal.markdown("KafkaStreams#cleanUp()") in i.value for i in app.info)  # shown as text
    deadline = time.monotonic() + 15  # a broker's metadata may list a deleted topic for a moment
    while changelog in (topics := admin.list_topics(timeout=10).topics) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert changelog not in topics and "ui-ops-output" in topics
    assert committed(admin, app_id) == {(TOPIC, p): 0 for p in COUNTS}


AUTH_SECRETS = {"redirect_uri": "http://127.0.0.1:8501/oauth2callback", "cookie_secret": "x" * 32,
                "client_id": "kpulse", "client_secret": "s", "server_metadata_url":
                "https://idp.example/.well-known/openid-configuration"}


def test_oidc_signs_in_with_st_login_and_takes_the_role_from_the_users_file(setup, monkeypatch):
    monkeypatch.setenv("KPULSE_CONFIG", str(setup["config"]))
    monkeypatch.setenv("KPULSE_DASHBOARD_AUTH", "oidc")
    UsersFile(setup["config"].parent / "users.yaml").add("olga@example.com", "operator", "unused-password")
    app = AppTest.from_file(str(APP_FILE), default_timeout=90)
    app.run()  # no [auth] secrets: one line saying what is missing
    assert len(app.error) == 1 and not app.sidebar.selectbox
    assert literal.markdown("[auth] section") in app.error[0].value  # errors are shown as text

    app.secrets["auth"] = AUTH_SECRETS
    app.user = {"is_logged_in": False}
    app.run()
    assert not app.exception and app.button(key="oidc-sign-in") and not app.sidebar.selectbox

    app.user = {"is_logged_in": True, "email": "olga@example.com", "name": "Olga"}
    app.run()
    assert any(literal.markdown("olga@example.com") in m.value and "operator" in m.value for m in app.sidebar.markdown)
    app.switch_page("app_pages/groups.py").run()
    assert "Plan (changes nothing)" in labels(app)

    app.user = {"is_logged_in": True, "email": "stranger@example.com"}
    app.switch_page("app_pages/groups.py").run()
    assert any(literal.markdown("stranger@example.com") in m.value and "viewer" in m.value for m in app.sidebar.markdown)
    assert "Plan (changes nothing)" not in labels(app)


# --- identity rules (pure) ---------------------------------------------------------------------------

def _config(tmp_path: Path, host: str, bootstrap: str):
    from kpulse.config import load_config

    path = tmp_path / "kpulse.yaml"
    path.write_text(yaml.safe_dump({"clusters": [{"name": "c", "bootstrap_servers": bootstrap}],
                                    "lake": {"path": str(tmp_path / "lake")}, "dashboard": {"host": host}}))
    return load_config(str(path))


@pytest.mark.parametrize("host, bootstrap, role", [
    ("127.0.0.1", "127.0.0.1:9092,localhost:9093", "admin"),
    ("0.0.0.0", "127.0.0.1:9092", "viewer"),
    ("127.0.0.1", "kafka.prod.example:9092", "viewer"),
])
def test_without_a_users_file_only_a_local_setup_may_act(tmp_path, host, bootstrap, role):
    from dashboard.services.identity import without_users_file

    who = without_users_file(_config(tmp_path, host, bootstrap), "dev", tmp_path / "users.yaml")
    assert who.user == User("dev", role)
    assert ("local mode" if role == "admin" else "view only") in who.banner


def test_auth_mode_and_oidc_roles(tmp_path):
    from dashboard.services.identity import auth_mode, oidc_user
    from dashboard.services.sources import DashboardError

    assert auth_mode({}, has_auth_secrets=False) == "local"
    assert auth_mode({}, has_auth_secrets=True) == "oidc"
    assert auth_mode({"KPULSE_DASHBOARD_AUTH": "local"}, has_auth_secrets=True) == "local"
    with pytest.raises(DashboardError):
        auth_mode({"KPULSE_DASHBOARD_AUTH": "ldap"}, has_auth_secrets=False)
    users = UsersFile(tmp_path / "users.yaml")
    users.add("ann@example.com", "operator", "whatever-123")
    assert oidc_user({"email": "ann@example.com", "sub": "1"}, users) == User("ann@example.com", "operator", "oidc")
    assert oidc_user({"email": "bob@example.com"}, users) == User("bob@example.com", "viewer", "oidc")
    assert oidc_user({"sub": "x-1"}, UsersFile(tmp_path / "none.yaml")) == User("x-1", "viewer", "oidc")


# --- plans service (pure) ---------------------------------------------------------------------------

def test_form_values_become_the_official_scope_and_strategy():
    from dashboard.services.plans import group_scope, strategy
    from operations.errors import BadInput
    from operations.offset_plan import Scope, Strategy

    assert group_scope("all topics", "t", []) == Scope(all_topics=True)
    assert group_scope("one topic", "t", [1]) == Scope(topics=(("t", None),))
    assert group_scope("chosen partitions", "t", [2, 0]) == Scope(topics=(("t", (0, 2)),))
    for scope, topic, partitions in (("chosen partitions", "t", []), ("one topic", None, [])):
        with pytest.raises(BadInput):
            group_scope(scope, topic, partitions)
    assert strategy("to-earliest", "ignored") == Strategy("to-earliest")
    assert strategy("shift-by", " -5 ") == Strategy("shift-by", "-5")
    assert strategy("to-offset", "") == Strategy("to-offset", None)
    with pytest.raises(BadInput):
        strategy("from-file", None, None)
    made = strategy("from-file", None, b"t,0,5\n")
    assert Path(made.value).read_text() == "t,0,5\n"
    Path(made.value).unlink()


def test_open_reassignments_are_those_started_and_not_verified_or_cancelled():
    import pandas as pd

    from dashboard.services.plans import open_reassignments
    from operations.reassign_plan import PartitionMove, ReassignmentPlan

    plans = [json.dumps(ReassignmentPlan("c", f"goal {i}", (PartitionMove("t", i, (1,), (2,)),), float(i)).to_dict())
             for i in range(3)]
    rows = pd.DataFrame([
        {"time": 1, "action": "reassign:execute", "result": "in-progress", "plan_json": plans[0]},
        {"time": 2, "action": "reassign:execute", "result": "in-progress", "plan_json": plans[1]},
        {"time": 3, "action": "reassign:verify", "result": "ok", "plan_json": plans[0]},
        {"time": 4, "action": "reassign:execute", "result": "denied", "plan_json": plans[2]},
        {"time": 5, "action": "reset-offsets", "result": "ok", "plan_json": "{}"},
    ])
    assert [p.goal for p in open_reassignments(rows)] == ["goal 1"]
    assert open_reassignments(rows.iloc[0:0]) == []


def test_an_operator_demoted_while_signed_in_cannot_execute_through_the_open_dialog(bootstrap, tmp_path, monkeypatch):
    admin = prepare_topic(bootstrap)
    group = "ui-ops-demoted"
    before = {(TOPIC, p): START for p in COUNTS}
    commit(admin, group, before)
    config = write_setup(tmp_path, bootstrap, [group])
    app = sign_in(start(config, monkeypatch), "olga", "olga-secret-1")
    app.switch_page("app_pages/groups.py").run()
    key = group_key(group)
    app.selectbox(key=f"{key}-strategy").set_value("to-earliest")
    next(b for b in app.button if b.label == "Plan (changes nothing)").click().run()
    app.button(key=f"{key}-execute").click().run()
    app.text_input(key=f"{key}-typed").input(group)

    users = tmp_path / "users.yaml"
    data = yaml.safe_load(users.read_text())
    data["users"]["olga"]["role"] = "viewer"
    users.write_text(yaml.safe_dump(data))
    app.button(key=f"{key}-confirm").click().run()

    assert not app.exception
    assert committed(admin, group) == before
    assert not any("reset-offsets: ok" in s.value for s in app.success)
    assert any("olga" in m.value and "viewer" in m.value for m in app.sidebar.markdown)
    assert any("reset-offsets needs the operator role; you are a viewer" in c.value for c in app.caption)

    del data["users"]["olga"]
    users.write_text(yaml.safe_dump(data))
    app.run()
    assert "Sign in" in labels(app) and not any("olga" in m.value for m in app.sidebar.markdown)
    assert any("olga is no longer in the users file" in w.value for w in app.warning)
    assert committed(admin, group) == before

    sign_in(app, "vic-secret-1", "vic-secret-1")  # a password typed into the name field
    from kpulse.config import load_config
    from operations.audit import AuditLog

    rows = AuditLog(load_config(str(config)).lake.path, Path("/nonexistent-spool")).read()
    assert list(rows[["actor", "action", "result"]].itertuples(index=False, name=None)) == [
        ("(unknown user)", "login", "denied")]
    assert "vic-secret-1" not in rows.to_json()
