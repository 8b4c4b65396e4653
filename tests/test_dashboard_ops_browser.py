"""The offset reset flow in headless Chromium against `kpulse dashboard` on the real cluster: sign
in, open the group's actions, plan (the plan shows; nothing changes), open the confirmation
dialog (nothing changes), type the group's name, execute (offsets read back equal the plan).
The records view on the same dashboard: from a STALL alert to the record at the group's committed
offset (a hostile one), its key and values hidden from a viewer, revealed to an operator (audited),
every content shown literally and nothing requested from another host. One Chromium for the module.
Screenshots in test-artifacts/dashboard/."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.parse

import pytest
import yaml

from tests.conftest import ARTIFACTS, TEST_PORT_BASE
from tests.dashboard_browser import Browser, chromium_path, wait_for_dashboard
from tests.dashboard_ops import CLUSTER, COUNTS, PASSWORDS, START, TOPIC, prepare_topic, write_setup
from tests.support import commit, committed, create_topic

pytestmark = [pytest.mark.cluster,
              pytest.mark.skipif(chromium_path() is None, reason="chromium not installed: run `make test` "
                                                                  "(scripts/setup.sh with KPULSE_WITH_BROWSER=1)")]
DASHBOARD_PORT = TEST_PORT_BASE + 510
DEVTOOLS_PORT = TEST_PORT_BASE + 511
SCREENSHOTS = ARTIFACTS / "dashboard"
GROUP = "ui-ops-browser"
RECORDS_TOPIC = "ui-records"
RECORDS_GROUP = "ui-records-stuck"
STUCK_AT = 3
"""The records topic's offset the stuck group has committed: the hostile record."""
HOSTILE_KEY = "**[k](https://example.invalid/k)** <b>bold</b> :red[x] \u202eevil"
SHOWN_KEY = HOSTILE_KEY.replace("\u202e", "\\u202e")
"""What an operator reads of the key: the right-to-left override as an escape, the rest as it is."""
HOSTILE_HEADER = ("<img src=https://example.invalid/h.png>", b"# h :material/warning:")
HOSTILE_VALUE = ('{"order": "![v](https://example.invalid/v.png) <script>alert(1)</script>", '
                 '"password": "hunter2", "note": "' + "x" * 6000 + '"}')


def prepare_records(bootstrap: str, admin) -> None:
    """``RECORDS_TOPIC``: plain records, then at ``STUCK_AT`` the hostile one (key, headers, value),
    then plain ones; ``RECORDS_GROUP`` committed at ``STUCK_AT``. Created once per session."""
    from confluent_kafka import Producer

    if RECORDS_TOPIC not in admin.list_topics(timeout=10).topics:
        create_topic(admin, RECORDS_TOPIC, 1)
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "compression.type": "gzip"})
        for offset in range(STUCK_AT + 3):
            hostile = offset == STUCK_AT
            producer.produce(RECORDS_TOPIC, partition=0, key=HOSTILE_KEY.encode() if hostile else f"k-{offset}",
                             value=HOSTILE_VALUE.encode() if hostile else json.dumps({"n": offset}).encode(),
                             headers=[HOSTILE_HEADER, ("trace-id", b"t-3")] if hostile else [("trace-id", b"t")])
            producer.flush(30)  # one batch per record: the offsets are the loop's
    commit(admin, RECORDS_GROUP, {(RECORDS_TOPIC, 0): STUCK_AT})


def stuck_in_the_snapshot(config_path) -> None:
    """The config lets operators reveal ``RECORDS_TOPIC`` (password masked); the snapshot has
    ``RECORDS_GROUP`` in STALL at ``STUCK_AT`` with members, and its ConsumerGroupStatus alert firing."""
    config = yaml.safe_load(config_path.read_text())
    config["clusters"][0]["records"] = {"visible_topics": [RECORDS_TOPIC], "mask": {"fields": ["password"]}}
    config_path.write_text(yaml.safe_dump(config))
    path = config_path.parent / "lake" / "_snapshots" / f"{CLUSTER}.json"
    snapshot = json.loads(path.read_text())
    snapshot["consumer_groups"].append(
        {"group_id": RECORDS_GROUP, "type": "classic", "state": "Stable", "members": 1, "partition_count": 1,
         "status": "STALL", "total_lag": 3, "max_lag_seconds": 0.0, "lag_seconds_threshold": 60.0,
         "partitions": [{"topic": RECORDS_TOPIC, "partition": 0, "committed_offset": STUCK_AT,
                         "log_end_offset": STUCK_AT + 3, "lag": 3, "lag_seconds": 0.0, "status": "STALL"}]})
    snapshot["alerts"] = [{"rule": "ConsumerGroupStatus", "severity": "warning", "entity": f"group/{RECORDS_GROUP}",
                           "value": 3.0, "summary": f"consumer group {RECORDS_GROUP} is STALL: members present but "
                                                    "the committed offsets do not move, lag 3",
                           "since": snapshot["time"] - 60, "runbook": "ConsumerGroupStatus"}]
    path.write_text(json.dumps(snapshot))


class Operator(Browser):
    """Types and clicks like a person: focus + inserted text, real clicks on buttons and links."""

    def js(self, expression: str):
        return self._call("Runtime.evaluate", expression=expression, returnByValue=True)["result"].get("value")

    def scroll_to(self, selector: str) -> None:
        """Bring an element into view (Streamlit scrolls its own container: a screenshot shows the view)."""
        self.js(f"document.querySelector({json.dumps(selector)})?.scrollIntoView({{block: 'start'}})")
        time.sleep(0.5)

    def click(self, text: str, within: str = "body") -> None:
        """Click the button whose text (icon ligatures aside) ends with ``text``."""
        clicked = self.js(f"(() => {{ const b = [...document.querySelectorAll({json.dumps(within + ' button')})]"
                          f".find(b => b.innerText.trim().endsWith({json.dumps(text)}));"
                          " if (!b) return false; b.click(); return true; })()")
        assert clicked, f"no button {text!r} in {within}"


@pytest.fixture(scope="module")
def dashboard(bootstrap, tmp_path_factory):
    admin = prepare_topic(bootstrap)
    commit(admin, GROUP, {(TOPIC, p): START for p in COUNTS})
    prepare_records(bootstrap, admin)
    config = write_setup(tmp_path_factory.mktemp("dashboard-ops-browser"), bootstrap, [GROUP], port=DASHBOARD_PORT)
    stuck_in_the_snapshot(config)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen([sys.executable, "-m", "cli.main", "--config", str(config), "dashboard"],
                               stdout=open(SCREENSHOTS / "dashboard-ops.log", "w"), stderr=subprocess.STDOUT)
    try:
        wait_for_dashboard(DASHBOARD_PORT, process)
        yield admin, config
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture(scope="module")
def browser():
    """One Chromium for the module's tests (each opens its pages and signs in)."""
    chromium = Operator(DEVTOOLS_PORT)
    yield chromium
    chromium.close()


def sign_in(browser: Operator, address: str, who: str) -> None:
    """Open ``address`` (a new session) and sign in as ``who``."""
    browser.open(address)
    browser.wait_for(["Sign in", "User name", "Password"])
    browser.type_into("User name", who)
    browser.type_into("Password", PASSWORDS[who][1])
    browser.click("Sign in")
    browser.wait_for([f"{who} · {PASSWORDS[who][0]}"])



def execute_confirmed(browser: Operator, name: str, operation: str) -> str:
    """In the open confirmation dialog: the target's name typed, Execute clicked; the page's text once
    the operation's result and its read-back show."""
    browser.type_into("Name of the target", name)
    browser.press_enter()
    time.sleep(1.0)
    browser.click("Execute", within="[role=dialog]")
    return browser.wait_for([f"{operation}: ok", "Verification (read back from the cluster)"])

def test_sign_in_plan_confirm_and_nothing_runs_before_the_typed_name(dashboard, browser):
    admin, _ = dashboard
    before = {(TOPIC, p): START for p in COUNTS}
    assert committed(admin, GROUP) == before
    sign_in(browser, f"http://127.0.0.1:{DASHBOARD_PORT}/", "olga")
    browser.wait_for(["olga · operator", "Operations"])

    assert browser.js("(() => { const a = document.querySelector('a[href$=\"/groups\"]');"
                      " if (!a) return false; a.click(); return true; })()")
    browser.wait_for(["Consumer groups", "Actions", "Plan (changes nothing)"])
    browser.click("Plan (changes nothing)")
    replayed = START * len(COUNTS)
    text = browser.wait_for(["Plan · nothing has changed yet", f"{len(COUNTS)} partition(s), {replayed} message(s) "
                             "replayed, 0 skipped", "Offsets per partition", "Execute…"])
    browser.scroll_to(".st-key-actions-group")
    browser.screenshot(SCREENSHOTS / "ops-plan.png")
    assert "Traceback" not in text
    assert committed(admin, GROUP) == before  # the plan changed nothing

    browser.click("Execute…")
    browser.wait_for(["Confirm the change", "Type this name to confirm:", GROUP, "Name of the target"])
    time.sleep(1.0)  # the dialog's opening animation
    browser.screenshot(SCREENSHOTS / "ops-confirm-dialog.png")
    assert committed(admin, GROUP) == before  # the open dialog changed nothing
    assert (SCREENSHOTS / "ops-confirm-dialog.png").stat().st_size > 10_000

    text = execute_confirmed(browser, GROUP, "reset-offsets")
    browser.scroll_to(".st-key-actions-group")
    browser.screenshot(SCREENSHOTS / "ops-result.png")
    assert "Traceback" not in text
    assert committed(admin, GROUP) == {(TOPIC, p): 0 for p in COUNTS}  # to-earliest: the log start


LINKED = ("[...document.querySelectorAll('*')].flatMap(e => ['href', 'src', 'xlink:href', 'action']"
          ".map(a => e.getAttribute(a)).filter(Boolean)).map(v => new URL(v, location.href).href)")
"""Every address an element of the page links to or loads."""


def test_from_the_stall_alert_to_the_record_hidden_from_a_viewer_revealed_to_an_operator_audited(dashboard, browser):
    """The alert's link opens the view at the group's committed offset; a viewer sees the record's
    offset and header names, its key and value hidden; an operator reveals them (the audit log says
    who, which partition, which offsets) and reads them literally; the page requests nothing from
    another host and links to none."""
    from kpulse.config import load_config
    from operations.audit import AuditLog

    _, config = dashboard
    base = f"http://127.0.0.1:{DASHBOARD_PORT}"
    browser.record_requests()
    sign_in(browser, f"{base}/alerts?rule=ConsumerGroupStatus", "vic")
    browser.wait_for([f"ConsumerGroupStatus · group/{RECORDS_GROUP}", "Open the records at its committed offset",
                      "The record it is stuck on"])
    assert browser.js("(() => { const a = [...document.querySelectorAll('a')].find(a => a.innerText.includes("
                      "'Open the records at its committed offset')); if (!a) return false; a.click(); return true; })()")
    text = browser.wait_for([f"The record at offset {STUCK_AT}", f"committed offset of group {RECORDS_GROUP}",
                             HOSTILE_HEADER[0], "Keys, values and header values are hidden",
                             "shown to operators only (this user is a viewer)"])
    assert urllib.parse.urlsplit(browser.js("location.href")).path == "/records"
    browser.screenshot(SCREENSHOTS / "records-viewer.png")
    assert SHOWN_KEY not in text and "hunter2" not in text and "<script>" not in text
    assert "Traceback" not in text and "Reveal keys and values" not in text

    records_page = f"{base}/records?" + urllib.parse.urlencode({"group": RECORDS_GROUP, "topic": RECORDS_TOPIC,
                                                                 "partition": 0})
    sign_in(browser, records_page, "olga")
    browser.wait_for([f"The record at offset {STUCK_AT}", "Reveal keys and values (audited)"])
    browser.click("Reveal keys and values (audited)")
    text = browser.wait_for(["revealed to you (audited)", SHOWN_KEY, '"order": "![v](https://example.invalid/v.png) '
                             '<script>alert(1)</script>"', '"password": "***"', "# h :material/warning:",
                             "cut at 4,096 B"])
    browser.screenshot(SCREENSHOTS / "records-revealed.png")
    assert "hunter2" not in text and "Traceback" not in text and "\u202e" not in text
    linked = browser.evaluate(LINKED) or []
    assert not [u for u in linked if urllib.parse.urlsplit(u).hostname == "example.invalid"], linked
    browser.evaluate("1")  # the replies carry the last network events
    elsewhere = sorted({u for u in browser.requests if urllib.parse.urlsplit(u).scheme not in ("data", "blob")
                        and urllib.parse.urlsplit(u).netloc != f"127.0.0.1:{DASHBOARD_PORT}"})
    assert not elsewhere, f"requests to other hosts: {elsewhere}"

    audit = AuditLog(load_config(str(config)).lake.path, config.parent / "spool").read(cluster=CLUSTER)
    reveals = audit[audit["action"] == "reveal-records"]
    assert list(reveals["actor"]) == ["olga"] and list(reveals["result"]) == ["ok"]
    assert list(reveals["target"]) == [f"{RECORDS_TOPIC}-0"]
    assert json.loads(reveals["plan_json"].iloc[0])["offsets"] == [f"{STUCK_AT}-{STUCK_AT + 2}"]
    assert "hunter2" not in reveals.to_string() and "example.invalid" not in reveals.to_string()


def test_skip_this_record_from_the_view_plans_confirms_and_moves_only_that_offset(dashboard, browser):
    """"Skip this record" on the view: the skip-records plan at once (nothing changes), then the
    action flow's typed confirmation; the group's committed offset moves past the record, by one."""
    admin, _ = dashboard
    assert committed(admin, RECORDS_GROUP) == {(RECORDS_TOPIC, 0): STUCK_AT}
    sign_in(browser, f"http://127.0.0.1:{DASHBOARD_PORT}/records?" + urllib.parse.urlencode(
        {"group": RECORDS_GROUP, "topic": RECORDS_TOPIC, "partition": 0}), "olga")
    browser.wait_for([f"The record at offset {STUCK_AT}", f"Skip this record (offset {STUCK_AT})"])
    browser.click(f"Skip this record (offset {STUCK_AT})")
    browser.wait_for(["Plan · nothing has changed yet", f"skips 1 record(s) of {RECORDS_TOPIC}-0", "Execute…"])
    assert committed(admin, RECORDS_GROUP) == {(RECORDS_TOPIC, 0): STUCK_AT}  # the plan changed nothing
    browser.click("Execute…")
    browser.wait_for(["Confirm the change", "Name of the target"])
    time.sleep(1.0)  # the dialog's opening animation
    text = execute_confirmed(browser, RECORDS_GROUP, "skip-records")
    browser.scroll_to(".st-key-records-skip")
    browser.screenshot(SCREENSHOTS / "records-skipped.png")
    assert "Traceback" not in text
    assert committed(admin, RECORDS_GROUP) == {(RECORDS_TOPIC, 0): STUCK_AT + 1}
