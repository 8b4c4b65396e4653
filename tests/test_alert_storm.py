"""An alert storm, as an on-call engineer meets it: 2,000 idle consumer groups each firing
ConsumerGroupStatus. The Overview says one line ("warning: ConsumerGroupStatus, 2,000 groups"), the
Alerts page one row per rule with the 2,000 entities searched and paged inside (AppTest, and headless
Chromium against `kpulse dashboard` on a lake with that snapshot, tests/dashboard_lake.py); a group is
marked expected-idle from the Consumer groups page by an operator (audited), not by a viewer; and on
the real cluster an expected-idle group (config or mark) fires nothing while an idle one does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
import yaml
from streamlit.testing.v1 import AppTest

from dashboard.services.acks import EVERY_ENTITY, AckStore
from kpulse.expected_idle import FILE_NAME, ExpectedIdleFile
from operations.audit import AuditLog
from tests.conftest import ARTIFACTS, TEST_PORT_BASE
from tests.dashboard_browser import Browser, chromium_path, wait_for_dashboard
from tests.dashboard_lake import CLUSTER, write_lake
from tests.dashboard_ops import PASSWORDS, sign_in, write_setup
from tests.support import APP_FILE, open_page, stop_process

IDLE_GROUPS = 2000
DASHBOARD_PORT = TEST_PORT_BASE + 520
DEVTOOLS_PORT = TEST_PORT_BASE + 521


def write_storm(directory):
    """A lake whose snapshot has 2,000 STOP groups firing, beside the usual four alerts, and its config."""
    expected = write_lake(str(directory / "lake"), time.time(), idle_groups=IDLE_GROUPS)
    config = {"clusters": [{"name": CLUSTER, "bootstrap_servers": "127.0.0.1:9"}],
              "lake": {"path": str(directory / "lake")}, "intervals": {"collect_seconds": 600},
              "dashboard": {"port": DASHBOARD_PORT, "host": "127.0.0.1"}}
    (directory / "kpulse.yaml").write_text(yaml.safe_dump(config))
    return directory, expected


@pytest.fixture(scope="module")
def storm(tmp_path_factory):
    return write_storm(tmp_path_factory.mktemp("storm"))


@pytest.fixture
def app(storm, monkeypatch):
    directory, _ = storm
    monkeypatch.setenv("KPULSE_CONFIG", str(directory / "kpulse.yaml"))
    test = AppTest.from_file(str(APP_FILE), default_timeout=90)
    test.run()
    assert not test.exception, [e.value for e in test.exception]
    return test


def test_the_overview_says_one_line_for_2000_firing_groups(app):
    lines = [m.value for m in app.markdown if "ConsumerGroupStatus" in m.value]
    assert lines == [":orange[**warning**]: ConsumerGroupStatus, 2,000 groups"]
    tile = next(m.value for m in app.markdown if "Firing alerts" in m.value)
    assert "2 critical · 3 warning" in tile and "2,004 entities affected" in tile  # groups, and what they hold
    assert not [m.value for m in app.markdown if "idle-0" in m.value]


def test_the_alerts_page_lists_one_row_per_rule_and_pages_the_2000_entities(app, storm):
    directory, expected = storm
    open_page(app, "alerts")
    table = app.dataframe[0].value
    assert len(table) == 5
    row = table.set_index("rule").loc["ConsumerGroupStatus"]
    assert (row["affected"], row["entities"], row["severity"]) == ("2,000 groups", IDLE_GROUPS, "warning")
    app.selectbox(key="alerts-group").set_value("ConsumerGroupStatus").run()
    assert not app.exception
    entities = app.dataframe[1].value
    assert len(entities) == 50 and set(entities["entity"]) <= {f"group/{g}" for g in expected.idle_groups}
    assert any(f"{IDLE_GROUPS} of {IDLE_GROUPS} entities match · page 1 of 40" in c.value for c in app.caption)
    app.text_input(key="alerts-entities-ConsumerGroupStatus-search").input("idle-01999").run()
    assert list(app.dataframe[1].value["entity"]) == ["group/idle-01999"]
    assert app.selectbox(key="alerts-chosen").value == "ConsumerGroupStatus · group/idle-01999"
    assert any("ConsumerGroupStatus · group/idle-01999" in h.value for h in app.subheader)
    assert "What it means" in app.get("code")[0].value

    app.text_input(key="alerts-group-ack-who").input("alice")
    app.radio(key="alerts-group-ack-kind").set_value("silence")
    next(b for b in app.button if b.label == "Save" and "group-ack" in str(b.form_id)).click().run()
    assert not app.exception
    saved = AckStore(str(directory / "lake")).load()
    assert [(a.rule, a.entity, a.kind, a.by) for a in saved] == [("ConsumerGroupStatus", EVERY_ENTITY, "silence",
                                                                  "alice")]
    assert "ConsumerGroupStatus" not in set(app.dataframe[0].value["rule"])  # every entity silenced: row hidden
    app.toggle(key="alerts-show-silenced").set_value(True).run()
    shown = app.dataframe[0].value.set_index("rule").loc["ConsumerGroupStatus"]
    assert (shown["ack"], shown["ack_by"], shown["silenced"]) == ("silence", "alice", IDLE_GROUPS)


# --- marking from the Consumer groups page -----------------------------------------------------------------

@pytest.fixture
def ops_setup(tmp_path, monkeypatch):
    state = tmp_path / "state"
    monkeypatch.setenv("KPULSE_STATE_DIR", str(state))
    config = write_setup(tmp_path, "127.0.0.1:9", ["orders-retired", "orders-live"])
    monkeypatch.setenv("KPULSE_CONFIG", str(config))
    monkeypatch.delenv("KPULSE_DASHBOARD_AUTH", raising=False)
    return tmp_path, state


def groups_page(user: str):
    app = AppTest.from_file(str(APP_FILE), default_timeout=90).run()
    sign_in(app, user, PASSWORDS[user][1])
    open_page(app, "groups")
    app.selectbox(key="groups-chosen").set_value("orders-retired").run()
    assert not app.exception
    return app


def test_the_page_shows_the_expected_idle_label_the_collection_loop_put_in_the_snapshot(ops_setup):
    """The loop decided (its config named the group), the snapshot says so, and the page reads it
    rather than deciding again from the dashboard's own config and marks (which name no group here)."""
    directory, _ = ops_setup
    path = directory / "lake" / "_snapshots" / "live.json"
    snapshot = json.loads(path.read_text())
    snapshot["consumer_groups"][0]["expected_idle"] = True
    path.write_text(json.dumps(snapshot))
    app = groups_page("vic")
    listed = app.dataframe[0].value.set_index("group_id")["expected_idle"]
    assert listed.to_dict() == {"orders-retired": True, "orders-live": False}
    assert any("expected idle: shown, but it fires no group alert" in i.value for i in app.info)


def test_a_viewer_is_offered_no_mark(ops_setup):
    app = groups_page("vic")
    assert not [b for b in app.button if "expected idle" in b.label]


def test_an_operator_marks_and_unmarks_a_group_expected_idle_and_the_audit_says_who(ops_setup):
    directory, state = ops_setup
    app = groups_page("olga")
    app.text_input(key="groups-idle-note").input("retired with orders-v1")
    next(b for b in app.button if b.label == "Mark expected idle").click().run()
    assert not app.exception, [e.value for e in app.exception]
    marks = ExpectedIdleFile(state / FILE_NAME).marks("live")
    assert list(marks) == ["orders-retired"] and marks["orders-retired"].by == "olga"
    assert marks["orders-retired"].note == "retired with orders-v1"
    assert any("expected idle (marked by olga: retired with orders-v1)" in i.value for i in app.info)
    listed = app.dataframe[0].value.set_index("group_id")["expected_idle"]
    assert listed.to_dict() == {"orders-retired": True, "orders-live": False}

    next(b for b in app.button if b.label == "Unmark expected idle").click().run()
    assert not app.exception
    assert ExpectedIdleFile(state / FILE_NAME).marks("live") == {}
    assert not [i for i in app.info if "expected idle" in i.value]
    audit = AuditLog(str(directory / "lake"), state / "audit-spool.jsonl").read()
    assert list(zip(audit["actor"], audit["action"], audit["target"], audit["result"])) == [
        ("olga", "mark-expected-idle", "orders-retired", "ok"), ("olga", "unmark-expected-idle", "orders-retired", "ok")]


# --- the same storm in a real browser ------------------------------------------------------------------------

@pytest.mark.skipif(chromium_path() is None, reason="chromium not installed: run `make test` "
                                                    "(scripts/setup.sh with KPULSE_WITH_BROWSER=1)")
def test_overview_and_alerts_pages_stay_readable_in_chromium_with_2000_firing_groups(tmp_path):
    directory, _ = write_storm(tmp_path)  # a lake of its own: nothing silenced
    shots = ARTIFACTS / "alert-storm"
    shots.mkdir(parents=True, exist_ok=True)
    dashboard = subprocess.Popen([sys.executable, "-m", "cli.main", "--config", str(directory / "kpulse.yaml"),
                                  "dashboard"], stdout=open(shots / "dashboard.log", "w"), stderr=subprocess.STDOUT,
                                 env={**os.environ, "KPULSE_STATE_DIR": str(tmp_path / "state")})
    browser = None
    try:
        wait_for_dashboard(DASHBOARD_PORT, dashboard)
        browser = Browser(DEVTOOLS_PORT)
        browser.open(f"http://127.0.0.1:{DASHBOARD_PORT}/")
        text = browser.wait_for(["Overview", "Firing alerts", "2 critical · 3 warning",
                                 "ConsumerGroupStatus, 2,000 groups", "2,004 entities affected"], timeout=90)
        browser.screenshot(shots / "overview.png")
        assert text.count("ConsumerGroupStatus") == 1 and "idle-0" not in text  # one line, not 2,000
        assert "Traceback" not in text

        browser.open(f"http://127.0.0.1:{DASHBOARD_PORT}/alerts?rule=ConsumerGroupStatus")
        text = browser.wait_for(["Alerts", "5 firing", "2,004 entities affected", "ConsumerGroupStatus · 2,000 groups",
                                 f"{IDLE_GROUPS} of {IDLE_GROUPS} entities match · page 1 of 40",
                                 "ConsumerGroupStatus · group/idle-00000", "What it means"], timeout=90)
        browser.screenshot(shots / "alerts.png")
        assert "Traceback" not in text
        assert text.count("idle-0") < 10  # the entity list is one paged table (drawn on a canvas), not 2,000 lines
    finally:
        if browser is not None:
            browser.close()
        stop_process(dashboard)


# --- on the real cluster ---------------------------------------------------------------------------------------

@pytest.mark.cluster
def test_on_the_real_cluster_an_expected_idle_group_fires_nothing_while_an_idle_one_does(local_cluster, tmp_path):
    """Three groups with committed offsets and no members (the official tool says Empty): ``storm-idle``
    fires ConsumerGroupStatus; ``storm-retired`` (named by the config) and ``storm-marked`` (marked by an
    operator) fire nothing, and are labelled in the snapshot; unmarked, ``storm-marked`` fires too."""
    from collectors.runner import CollectionService
    from kpulse.config import load_config
    from kpulse.lake.store import LakeWriter
    from operations.access import User
    from operations.service import Operations
    from tests.support import admin_for, commit, create_topic, official_rows, produce

    bootstrap = local_cluster.layout.bootstrap_servers
    admin = admin_for(bootstrap)
    create_topic(admin, "storm.orders", 1)
    produce(bootstrap, "storm.orders", {0: 20}, first_ms=int(time.time() * 1000) - 60_000, step_ms=100)
    groups = ("storm-idle", "storm-retired", "storm-marked")
    for group in groups:
        commit(admin, group, {("storm.orders", 0): 5})  # no members, offset still: STOP
    described = official_rows("kafka-consumer-groups", "--bootstrap-server", bootstrap, "--describe", "--state",
                              *[arg for group in groups for arg in ("--group", group)])
    assert {(r["GROUP"], r["STATE"]) for r in described} == {(g, "Empty") for g in groups}

    (tmp_path / "kpulse.yaml").write_text(yaml.safe_dump({
        "clusters": [{"name": "test", "bootstrap_servers": bootstrap, "probe": {"enabled": False},
                      "consumer_groups": {"include": ["storm-.*"], "expected_idle": ["storm-retired"]}}],
        "lake": {"path": str(tmp_path / "lake")}, "intervals": {"collect_seconds": 1}}))
    config = load_config(tmp_path / "kpulse.yaml")
    operations = Operations(config, state_dir=tmp_path / "state")
    operations.set_expected_idle(User("oncall", "operator"), "test", "storm-marked", True, "retired by hand")
    service = CollectionService(config, lake=LakeWriter(config.lake.path), flush_seconds=3600,
                                expected_idle=operations.expected_idle)

    def status_alerts(snapshot) -> set[str]:
        return {a["entity"] for a in snapshot["alerts"] if a["rule"] == "ConsumerGroupStatus"}

    try:
        deadline = time.monotonic() + 90
        while True:
            snapshot = service.cycle().snapshots["test"]
            if status_alerts(snapshot):
                break
            assert time.monotonic() < deadline, "storm-idle never fired"
            time.sleep(1)
        assert status_alerts(snapshot) == {"group/storm-idle"}
        statuses = {g["group_id"]: (g["status"], g.get("expected_idle", False)) for g in snapshot["consumer_groups"]}
        assert statuses == {"storm-idle": ("STOP", False), "storm-retired": ("STOP", True),
                            "storm-marked": ("STOP", True)}

        operations.set_expected_idle(User("oncall", "operator"), "test", "storm-marked", False)
        snapshot = service.cycle().snapshots["test"]
        assert status_alerts(snapshot) == {"group/storm-idle", "group/storm-marked"}
    finally:
        service.close()
    audit = operations.audit.read()
    assert list(zip(audit["actor"], audit["action"], audit["target"])) == [
        ("oncall", "mark-expected-idle", "storm-marked"), ("oncall", "unmark-expected-idle", "storm-marked")]
