"""The dashboard on the real local cluster, as an operator sees it: `kpulse collect` and
`kpulse dashboard` run as processes, a headless Chromium (Debian's package) opens every page and
checks its key text, screenshots go to test-artifacts/dashboard/, and the Overview's also to
test-artifacts/overview.png (the README's picture, docs/images/overview.png, is one such PNG). The
triage flow: kill a broker, and its alert shows up on the Alerts page with the runbook. The Topics
page's numbers are checked against the Admin API through AppTest on the same cluster."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from streamlit.testing.v1 import AppTest

from localkafka.demo.topology import KIP848_GROUP, POISON_GROUP, POISON_TOPIC, STREAMS_APPLICATION_ID
from tests.conftest import ARTIFACTS, TEST_PORT_BASE, kpulse
from tests.dashboard_browser import Browser, chromium_path, is_png, wait_for_dashboard
from tests.support import APP_FILE, free_port, stop_process

pytestmark = [pytest.mark.cluster,
              pytest.mark.skipif(chromium_path() is None, reason="chromium not installed: run `make test` "
                                                                  "(scripts/setup.sh with KPULSE_WITH_BROWSER=1)")]
DASHBOARD_PORT = TEST_PORT_BASE + 500
DEVTOOLS_PORT = TEST_PORT_BASE + 501
SCREENSHOTS = ARTIFACTS / "dashboard"
OVERVIEW_SHOT = ARTIFACTS / "overview.png"
PAGES = {  # st.dataframe draws on a canvas: its cells are not page text, so these are headings, tiles, pickers
    "": ["Overview", "Brokers up", "3 / 3", "Controller", "Firing alerts"],  # the default page, at /
    "brokers": ["Brokers", "Partition skew", "Request handler idle ratio", "Actions"],
    "topics?topic=demo.orders": ["Topics", "topics match", "Partitions of demo.orders", "Configs",
                                 "kpulse elect-leaders --cluster live --topic demo.orders"],
    "groups?group=demo-slow": ["Consumer groups", "groups match", "Lag (offsets)", "Lag (seconds, worst partition)",
                               "kpulse reset-offsets --cluster live --group demo-slow"],
    "streams?app=kpulse-demo-streams": ["Streams apps", "kpulse-demo-streams", "Rebalances", "Internal topics",
                "kpulse-demo-streams-order-counts-changelog"],
    "share-groups": ["Share groups", "share groups match", "records not yet acknowledged"],
    "slos": ["SLOs"],
    "alerts": ["Alerts", "firing"],
    # the demo's poison record (demo-poison stuck on it; contents hidden: the config names no visible topic)
    f"records?group={POISON_GROUP}&topic={POISON_TOPIC}&partition=0": [
        "Records", POISON_GROUP, "The record at offset", "Keys, values and header values are hidden",
        f"records.visible_topics of cluster live does not match topic '{POISON_TOPIC}'"],
}


def wait_until(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def config_file(local_cluster, demo_workload, tmp_path_factory):
    directory = tmp_path_factory.mktemp("dashboard-live")
    layout = local_cluster.layout
    data = {"clusters": [{"name": "live", "bootstrap_servers": layout.bootstrap_servers,
                          "metrics": {"source": "jmx_exporter", "timeout_seconds": 10,
                                      "broker_endpoints": {n.node_id: n.metrics_url for n in layout.nodes}},
                          "streams_apps": [{"application_id": "kpulse-demo-streams", "expected_instances": 2,
                                            "metrics_endpoints": [f"http://127.0.0.1:{layout.streams_metrics_port(j)}"
                                                                  "/metrics" for j in (1, 2)]}]}],
            "lake": {"path": str(directory / "lake")},
            "intervals": {"collect_seconds": 2},
            "exporter": {"port": free_port(), "host": "127.0.0.1"},
            "dashboard": {"port": DASHBOARD_PORT, "host": "127.0.0.1"}}
    path = directory / "kpulse.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture(scope="module")
def running(config_file):
    """`kpulse collect` and `kpulse dashboard` on the test cluster, until the first snapshot is in."""
    logs = ARTIFACTS / "dashboard"
    logs.mkdir(parents=True, exist_ok=True)
    base = [sys.executable, "-m", "cli.main", "--config", str(config_file)]
    collect = subprocess.Popen([*base, "collect"], stdout=open(logs / "collect.log", "w"), stderr=subprocess.STDOUT)
    dashboard = subprocess.Popen([*base, "dashboard"], stdout=open(logs / "dashboard.log", "w"),
                                 stderr=subprocess.STDOUT)
    try:
        snapshot = Path(yaml.safe_load(config_file.read_text())["lake"]["path"]) / "_snapshots" / "live.json"

        wait_for_dashboard(DASHBOARD_PORT, dashboard)

        def groups_seen():
            if not snapshot.exists():
                return False
            data = json.loads(snapshot.read_text())
            names = {g["group_id"] for g in data.get("consumer_groups") or []}
            return {"demo-slow", "demo-healthy"} <= names and data["cluster"]["brokers_up"] == 3
        wait_until(groups_seen, 120, "a snapshot with the demo groups")
        yield config_file
    finally:
        stop_process(dashboard)
        stop_process(collect)


@pytest.fixture(scope="module")
def browser():
    """One Chromium for the module's tests (each opens the pages it reads)."""
    chromium = Browser(DEVTOOLS_PORT)
    yield chromium
    chromium.close()


def test_every_page_renders_its_key_text_in_chromium(running, browser):
    OVERVIEW_SHOT.unlink(missing_ok=True)  # a picture left by an earlier run proves nothing
    for page, texts in PAGES.items():
        browser.open(f"http://127.0.0.1:{DASHBOARD_PORT}/{page}")
        text = browser.wait_for(texts, timeout=90)
        shot = SCREENSHOTS / f"{page.split('?')[0] or 'overview'}.png"
        browser.screenshot(shot)
        if page == "":
            browser.screenshot(OVERVIEW_SHOT)
        assert "Traceback" not in text and "Page not found" not in text, page
        assert shot.stat().st_size > 10_000
    assert is_png(OVERVIEW_SHOT) and OVERVIEW_SHOT.stat().st_size > 10_000, f"{OVERVIEW_SHOT} is not a PNG image"


def test_topics_page_numbers_equal_the_admin_api(running, monkeypatch):
    monkeypatch.setenv("KPULSE_CONFIG", str(running))
    app = AppTest.from_file(str(APP_FILE), default_timeout=60).run()
    app.switch_page("app_pages/topics.py").run()
    app.text_input(key="topics-search").input("demo.orders").run()
    assert not app.exception and not [e.value for e in app.error if "STALE" not in e.value]
    listed = app.dataframe[0].value.set_index("topic")
    assert listed.loc["demo.orders", "partitions"] == 6
    assert listed.loc["demo.orders", "replication_factor"] == 3
    assert listed.loc["demo.orders", "min_isr"] == 2
    assert listed.loc["demo.orders-by-region", "partitions"] == 3
    assert listed.loc["demo.orders", "size_bytes"] > 0  # the demo producer has written to it
    app.selectbox(key="topics-chosen").set_value("demo.orders").run()
    detail = app.dataframe[1].value
    assert list(detail["partition"]) == list(range(6))
    bootstrap = yaml.safe_load(running.read_text())["clusters"][0]["bootstrap_servers"].split(",")[0]
    described = kpulse("kafka-cli", "kafka-get-offsets", "--bootstrap-server", bootstrap, "--topic",
                       "demo.orders").stdout
    tool = {int(line.split(":")[1]): int(line.split(":")[2]) for line in described.split() if line.count(":") == 2}
    # the demo producer keeps writing: the page read its offsets just before the tool did
    for partition, latest in zip(detail["partition"], detail["latest_offset"]):
        assert 0 < latest <= tool[partition]

    # the groups consuming it: the classic and KIP-848 ones are those kafka-consumer-groups describes on it
    consumers = app.dataframe[2].value  # the group first, then what decides: its status and lag (issue 28)
    assert list(consumers.columns[:3]) == ["group_id", "status", "lag"] and {"type", "state"} <= set(consumers.columns)
    described = kpulse("kafka-cli", "kafka-consumer-groups", "--bootstrap-server", bootstrap, "--describe",
                       "--all-groups").stdout
    rows = [line.split() for line in described.splitlines()]
    header = next(row for row in rows if row[:2] == ["GROUP", "TOPIC"])
    on_topic = {row[0] for row in rows if len(row) >= len(header) - 3 and row[1] == "demo.orders"
                and row[header.index("CURRENT-OFFSET")] != "-"}
    mine = set(consumers.loc[consumers["type"].isin(["classic", "consumer"]), "group_id"])
    assert on_topic and mine == on_topic, (mine, on_topic)
    assert {STREAMS_APPLICATION_ID, KIP848_GROUP} <= mine  # the classic-protocol Streams app and the KIP-848 group
    assert (consumers["lag"].dropna() >= 0).all()

# Every element of text a page shows (st.markdown and st.write, what Streamlit's magic renders from a
# bare string at module level, captions, headings, plain text), in the sidebar and the main area, as
# (its kind, its text). Widgets, tables and charts are left out (their labels come from the page's own
# calls), and so are callouts (st.info, st.warning, st.error: called by the page, never magic).
TEXT_ELEMENTS_JS = r"""
Array.from(document.querySelectorAll('[data-testid="stElementContainer"]'))
  .filter(c => c.offsetParent !== null && c.firstElementChild)
  .map(c => [c.firstElementChild.dataset.testid || c.firstElementChild.className, c.innerText.trim()])
  .filter(([kind, text]) => /^st(Markdown|Caption|Heading|Text|Exception|Code|Json)$/.test(kind))
"""
SHOWN_EVERYWHERE = [
    r"kpulse", r"account_circle \S+ · (admin|operator|viewer)", r"", r"Actions",
    r"\w+ (data .+ old|STALE: the newest sample is .+)",  # the data's age (an icon's name first)
    r"From the command line \(a dry run until --execute\):", r"kpulse [a-z-]+ .+",
    r"\d+ of the \d+ points below are partial .+", r"Partial: .+",
    r"\d+ of \d+ [\w -]+ match · page \d+ of \d+ · \d+ per page"]  # components.searched_list's caption
TILE = r"[A-Z][\w /-]*\n.+\n(OK|INFO|WARNING|CRITICAL|UNKNOWN)( · .+)?"  # components.tile: name, value, status
OWN_TEXT = {  # what each page means to show, in any state of the shared cluster: full matches
    "": [r"Overview", TILE, r"(critical|warning|info): .+",
         r"\d+ topics · \d+ partitions · \d+ consumer groups( \(.+\))? · \d+ Streams apps"],
    "brokers": [r"Brokers", r"KRaft quorum", r"Problem partitions", r"ELR: replicas out of the ISR .+",
                r"[A-Z][a-z ]+(, [a-z ]+)*: .+", r"ELR not read: .+",  # why a KRaft figure is empty
                r"[a-z /0-9]+(, [a-z /0-9]+)* unknown for brokers? \d+(, \d+)*: .+",  # why a broker metric is
                r"No offline, under-min-ISR or under-replicated partition in the latest collection\."],
    "topics?topic=demo.orders": [
        r"Topics", r"\d+ of \d+ topics match · .+", r"Partitions of demo\.orders",
        r"Problem partitions of demo\.orders", r"From the latest collection\. ELR: .+",
        r"Groups consuming demo\.orders", r"Lag on this topic's partitions .+",
        r"No group has committed offsets on this topic, .+", r"Configs", r"Preferred leader election: .+"],
    "groups?group=demo-slow": [r"Consumer groups", r"\d+ of \d+ groups match · .+", r"⚠ \d+ of \d+ groups have .+",
                               r"demo-slow", r"(classic|consumer) group.*"],
    "streams?app=kpulse-demo-streams": [
        r"Streams apps", r"kpulse-demo-streams", r"protocol \S+( · group error: .+)?",
        r"Instances \(from their metrics endpoints\)", r"Members \(tasks as .+\)", r"Subtopologies",
        r"Input lag per partition \(.+\)", r"Internal topics \(repartition and changelog: deleted by a reset\)",
        r"kpulse-demo-streams-[\w-]+(, kpulse-demo-streams-[\w-]+)*",
        r"Internal topics \(changelog, repartition\) are found and deleted; output topics are untouched\."],
    "share-groups": [r"Share groups", r"\d+ of \d+ share groups match · .+", r"⚠ \d+ of \d+ share groups have .+",
                     r"Shown: the reading of .+", r"Lag: records not yet acknowledged, .+", r"demo-share",
                     r"Members and assignments", r"Partitions: start offset and lag"],
    "slos": [r"SLOs", r".+: .+ (left|spent|exhausted).*"],
    "alerts": [r"Alerts", r"\d+ firing · \d+ critical · \d+ warning · [\d,]+ entit(y|ies) affected",
               r"One row per rule \(grouped as Alertmanager does\): open a group below for its entities\.",
               r"\w+ · .+", r"[\d,]+ critical · [\d,]+ warning · the oldest firing since .+",
               r"(CRITICAL|WARNING|INFO) · firing since .+", r"Runbook", r"What it means:.+",
               r"No runbook for rule .+", r"Acknowledge or silence .+"],
    "operations": [r"Operations", r"Approval requests", r"No request waits for approval on cluster \S+\.",
                   r"Reassignments in progress", r"None started from kpulse in this window\.", r"Audit log",
                   r"\d+ record\(s\) on cluster \S+ · newest first"],
}


HEADERS = {  # headers each page's tables must show as drawn, units included (issue 28)
    "brokers": ["Broker", "Up", "Under-replicated partitions", "Request handler idle (%)", "Bytes in (B/s)",
                "Produce p99 (ms)", "Node", "Lag (records)"],
    "topics?topic=demo.orders": ["Topic", "Partitions", "Under-replicated partitions", "Min ISR", "Size (bytes)",
                                 "Partition", "Latest offset", "Group", "Lag (records)", "Max lag (s)", "Config"],
    "groups?group=demo-slow": ["Group", "Status", "Lag (s)", "Threshold (s)", "Total lag (records)", "Topic",
                               "Committed offset"],
    "streams?app=kpulse-demo-streams": ["Application", "Input lag (records)", "Instance"],
    "share-groups": ["Share group", "Lag (records)"],
}  # the Alerts and Operations pages may have no table in some states of the shared cluster
CODE_NAME = re.compile(r"_|^[^A-Z0-9]")
"""A header that is not one a person reads: a code name (``total_lag``, ``why_null``, ``lag``)."""


def drawn_headers(browser: Browser, expected: list[str], timeout: float = 30) -> list[str]:
    """Every header of the page's tables as the grid draws them (in view), once ``expected`` are
    among them (the grid draws after the page's text is in)."""
    deadline = time.monotonic() + timeout
    while True:
        headers = [header for rows in browser.tables() if rows for header in rows[0]]
        if set(expected) <= set(headers) or time.monotonic() > deadline:
            return headers
        time.sleep(0.5)


def test_no_page_shows_text_it_does_not_mean_to(running, browser):
    """No stray text (issue 17: the Operations page began with a module docstring that Streamlit's magic
    rendered): every text element of every page is on that page's allow-list of its own headings and
    texts. Checked to fail with that docstring put back. And no table heads a column with a code name
    (issue 28: ``lag_seconds_threshold``, ``why_null``): every header drawn starts with a capital and has
    no ``_``, and the headers with units named in :data:`HEADERS` are drawn."""
    strays, code_names, missing = {}, {}, {}
    browser.viewport(2200, 1200)  # the wide tables' columns in view
    try:
        for page, allowed in OWN_TEXT.items():
            browser.open(f"http://127.0.0.1:{DASHBOARD_PORT}/{page}")
            browser.wait_for(PAGES.get(page, allowed[:1]), timeout=90)
            shown = browser.evaluate(TEXT_ELEMENTS_JS)
            assert any(kind == "stHeading" for kind, _ in shown), f"{page}: no heading found in {shown}"
            patterns = [re.compile(p, re.DOTALL) for p in SHOWN_EVERYWHERE + allowed]
            stray = [(kind, text) for kind, text in shown
                     if kind == "stException" or not any(p.fullmatch(text) for p in patterns)]
            if stray:
                strays[page or "/"] = stray
            headers = drawn_headers(browser, HEADERS.get(page, []))
            if bad := [header for header in headers if CODE_NAME.search(header)]:
                code_names[page or "/"] = bad
            if absent := [header for header in HEADERS.get(page, []) if header not in headers]:
                missing[page or "/"] = (absent, headers)
    finally:
        browser.viewport(1400, 1000)
    assert (strays, code_names, missing) == ({}, {}, {})


def test_a_killed_broker_shows_up_on_the_alerts_page_with_its_runbook(running, browser, local_cluster):
    kpulse("cluster", "kill-broker", "3")
    try:
        deadline = time.monotonic() + 150
        while True:  # the open alert's detail is chosen when the page loads: reload until it fires
            browser.open(f"http://127.0.0.1:{DASHBOARD_PORT}/alerts?rule=OfflinePartitions")
            try:
                text = browser.wait_for(["OfflinePartitions · cluster/live", "CRITICAL", "firing since",
                                         "What it means", "What to do", "kafka-topics --bootstrap-server"], timeout=15)
                break
            except AssertionError:
                if time.monotonic() > deadline:
                    raise
        browser.screenshot(SCREENSHOTS / "alerts-broker-killed.png")
        assert "Traceback" not in text and "Page not found" not in text
        browser.open(f"http://127.0.0.1:{DASHBOARD_PORT}/")
        browser.wait_for(["Brokers up", "2 / 3"], timeout=60)
        browser.screenshot(SCREENSHOTS / "overview-broker-killed.png")
    finally:
        kpulse("cluster", "start-broker", "3", timeout=240)
