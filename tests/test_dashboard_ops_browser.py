"""The offset reset flow in headless Chromium against `kpulse dashboard` on the real cluster: sign
in, open the group's actions, plan (the plan shows; nothing changes), open the confirmation
dialog (nothing changes), type the group's name, execute (offsets read back equal the plan).
Screenshots in test-artifacts/dashboard/."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import ARTIFACTS, TEST_PORT_BASE
from tests.dashboard_browser import Browser, chromium_path, wait_for_dashboard
from tests.dashboard_ops import COUNTS, START, TOPIC, prepare_topic, write_setup
from tests.support import commit, committed

pytestmark = [pytest.mark.cluster,
              pytest.mark.skipif(chromium_path() is None, reason="chromium not installed: run `make test` "
                                                                  "(scripts/setup.sh with KPULSE_WITH_BROWSER=1)")]
DASHBOARD_PORT = TEST_PORT_BASE + 510
DEVTOOLS_PORT = TEST_PORT_BASE + 511
SCREENSHOTS = ARTIFACTS / "dashboard"
GROUP = "ui-ops-browser"


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
    config = write_setup(tmp_path_factory.mktemp("dashboard-ops-browser"), bootstrap, [GROUP], port=DASHBOARD_PORT)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen([sys.executable, "-m", "cli.main", "--config", str(config), "dashboard"],
                               stdout=open(SCREENSHOTS / "dashboard-ops.log", "w"), stderr=subprocess.STDOUT)
    try:
        wait_for_dashboard(DASHBOARD_PORT, process)
        yield admin
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture
def browser():
    chromium = Operator(DEVTOOLS_PORT)
    yield chromium
    chromium.close()


def test_sign_in_plan_confirm_and_nothing_runs_before_the_typed_name(dashboard, browser):
    admin = dashboard
    before = {(TOPIC, p): START for p in COUNTS}
    assert committed(admin, GROUP) == before
    browser.open(f"http://127.0.0.1:{DASHBOARD_PORT}/")
    browser.wait_for(["Sign in", "User name", "Password"])
    browser.type_into("User name", "olga")
    browser.type_into("Password", "olga-secret-1")
    browser.click("Sign in")
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

    browser.type_into("Name of the target", GROUP)
    browser.press_enter()
    time.sleep(1.0)
    browser.click("Execute", within="[role=dialog]")
    text = browser.wait_for(["reset-offsets: ok", "Verification (read back from the cluster)"])
    browser.scroll_to(".st-key-actions-group")
    browser.screenshot(SCREENSHOTS / "ops-result.png")
    assert "Traceback" not in text
    assert committed(admin, GROUP) == {(TOPIC, p): 0 for p in COUNTS}  # to-earliest: the log start
