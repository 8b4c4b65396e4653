"""The dashboard on the secured cluster (``localkafka/secure.py``), as an operator sees it in
Chromium: what kpulse's principal may not read is said where the value would be, never a blank, a
zero or a lost page, and a cluster that refuses kpulse's identity is one red line on every page.

One ``kpulse collect --once`` per identity writes into one lake, and one ``kpulse dashboard`` serves
a config naming the secured cluster once per identity (a cluster each: ``reader``, ``lister``,
``partial``, ``wrong-password``); each page is opened with ``?cluster=``. The identities' ACLs:
``reader`` may describe everything but no topic's configs and write nothing (the probe needs Write
on its topic); ``lister`` may describe the cluster and groups ``team-a-*`` only; ``partial`` lacks
Describe on the cluster (groups are listed only where it may describe them, no KRaft quorum)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import ARTIFACTS, SECURE_PORT_BASE
from tests.dashboard_browser import Browser, chromium_path, wait_for_dashboard
from tests.secure_support import UNDER_MIN_ISR_TOPIC, config_for, misconfigurations
from tests.support import stop_process

pytestmark = [pytest.mark.cluster,
              pytest.mark.skipif(chromium_path() is None, reason="chromium not installed: run `make test` "
                                                                  "(scripts/setup.sh with KPULSE_WITH_BROWSER=1)")]
DASHBOARD_PORT = SECURE_PORT_BASE + 500
DEVTOOLS_PORT = SECURE_PORT_BASE + 501
SCREENSHOTS = ARTIFACTS / "dashboard-secure"
PROBE_TOPIC = "kpulse-probe"
READABLE = {"reader": "reader", "lister": "lister", "partial": "partial"}
"""Cluster name in the dashboard's config -> the identity it is read as."""
REFUSED = "wrong-password"
TIMINGS: dict[str, float] = {}
"""Seconds per step, printed at the end of the module (``pytest -s``) and written beside the screenshots."""


def make_probe_topic(cluster) -> None:
    """The probe topic as kpulse's probe makes it, made by the super user: the identities here may not
    create it, and without it a probe is refused Create, not Write."""
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import AdminClient, NewTopic

    from collectors.probe.probe_ledger import plan_probe_topic

    plan = plan_probe_topic([1], None)
    topic = NewTopic(PROBE_TOPIC, num_partitions=len(plan.new_assignments), replication_factor=-1,
                     replica_assignment=[list(r) for r in plan.new_assignments], config=plan.configs)
    admin = AdminClient(cluster.admin_settings())  # kept until the answer: a dropped client cancels it
    try:
        admin.create_topics([topic])[PROBE_TOPIC].result(timeout=30)
    except Exception as error:  # noqa: BLE001 - made by an earlier module of the session: fine
        if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise


def cluster_entry(config: Path, name: str) -> dict:
    """The one cluster of an identity's config, renamed."""
    return {**yaml.safe_load(config.read_text())["clusters"][0], "name": name}


def write_config(path: Path, clusters: list[dict], lake: Path, **extra) -> Path:
    data = {"clusters": clusters, "lake": {"path": str(lake)}, "intervals": {"collect_seconds": 600}, **extra}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    path.chmod(0o600)
    return path


def collect_once(config: Path, log: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "cli.main", "--config", str(config), "collect", "--once"],
                            stdout=open(log, "w"), stderr=subprocess.STDOUT)


@pytest.fixture(scope="module")
def dashboard(secure_cluster, tmp_path_factory):
    """The lake written by one collection of each identity, and the dashboard on it."""
    directory = tmp_path_factory.mktemp("dashboard-secure")
    lake = directory / "lake"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    make_probe_topic(secure_cluster)
    identity, overrides, _ = misconfigurations(secure_cluster)["wrong password"]
    entries = {}
    for name, (who, extra) in {**{n: (i, {}) for n, i in READABLE.items()},
                                  REFUSED: (identity, overrides)}.items():
        (directory / name).mkdir()
        entries[name] = cluster_entry(config_for(secure_cluster, directory / name, who, **extra), name)
    # one run per identity, side by side (a run collects its clusters in turn; each takes 10-15 s here)
    runs = {name: collect_once(write_config(directory / f"{name}.yaml", [entry], lake), SCREENSHOTS / f"collect-{name}.log")
            for name, entry in entries.items()}
    codes = {name: run.wait(timeout=120) for name, run in runs.items()}
    assert codes == {**{name: 0 for name in READABLE}, REFUSED: 1}, codes
    TIMINGS["collect --once (the probe topic, then the four identities side by side)"] = time.monotonic() - began
    config = write_config(directory / "kpulse.yaml", list(entries.values()), lake,
                          dashboard={"port": DASHBOARD_PORT, "host": "127.0.0.1"})
    started = time.monotonic()
    process = subprocess.Popen([sys.executable, "-m", "cli.main", "--config", str(config), "dashboard"],
                               stdout=open(SCREENSHOTS / "dashboard.log", "w"), stderr=subprocess.STDOUT)
    try:
        wait_for_dashboard(DASHBOARD_PORT, process)
        TIMINGS["dashboard started"] = time.monotonic() - started
        yield f"http://127.0.0.1:{DASHBOARD_PORT}"
    finally:
        stop_process(process)
        lines = [f"{step}: {seconds:.1f} s" for step, seconds in TIMINGS.items()]
        (SCREENSHOTS / "timings.txt").write_text("\n".join(lines) + "\n")
        print("\n" + "\n".join(lines))


@pytest.fixture(scope="module")
def browser():
    chromium = Browser(DEVTOOLS_PORT)
    chromium.viewport(2200, 1200)  # every column of the group list in view, its "Why not read" last
    yield chromium
    chromium.close()


def shown(browser: Browser, url: str, page: str, texts: list[str]) -> str:
    """Open ``page`` and wait for ``texts``: the page's text, no traceback; a screenshot saved."""
    started = time.monotonic()
    browser.open(f"{url}/{page}")
    text = browser.wait_for(texts, timeout=60)
    TIMINGS[f"page {page}"] = time.monotonic() - started
    assert "Traceback" not in text and "Page not found" not in text, page
    browser.screenshot(SCREENSHOTS / (page.replace("?", "_").replace("&", "_").replace("=", "-") + ".png"))
    return text


def table_with(browser: Browser, header: str, timeout: float = 30) -> list[dict[str, str]]:
    """The rows of the one table on the page with column ``header``, as the grid's accessible cells
    show them, once it has rows (the grid draws after the page's text is in)."""
    deadline = time.monotonic() + timeout
    while True:
        shown = browser.tables()
        tables = [rows for rows in shown if len(rows) > 1 and header in rows[0]]
        if tables or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert len(tables) == 1, f"{len(tables)} tables with a {header!r} column and rows: {[rows[:1] for rows in shown]}"
    head, *rows = tables[0]
    return [dict(zip(head, row)) for row in rows]


def test_reader_overview_says_why_under_min_isr_is_unknown_and_that_the_probe_lacks_a_permission(dashboard,
                                                                                                   browser):
    text = shown(browser, dashboard, "?cluster=reader",
                 ["Under min ISR", "not authorized: DescribeConfigs on", "End-to-end probe",
                  "not authorized: Write on topic kpulse-probe"])
    assert "kpulse's permissions, not an outage" in text
    assert "ProbeFailing" not in text and "kpulse cannot read" not in text


def test_reader_topics_keep_their_rows_with_the_describe_configs_reason(dashboard, browser):
    text = shown(browser, dashboard, f"topics?cluster=reader&topic={UNDER_MIN_ISR_TOPIC}",
                 ["Topics", "topics match", f"Partitions of {UNDER_MIN_ISR_TOPIC}",
                  f"Configs not read: not authorized: DescribeConfigs on topic {UNDER_MIN_ISR_TOPIC}"])
    assert "min ISR unknown for 3 of 3 topics on this page" in text
    rows = {row["Topic"]: row for row in table_with(browser, "Why configs not read")}
    assert set(rows) == {"orders", UNDER_MIN_ISR_TOPIC, PROBE_TOPIC}
    for topic, row in rows.items():
        assert row["Why configs not read"] == f"not authorized: DescribeConfigs on topic {topic}"
        assert row["Min ISR"] == "" and int(row["Partitions"]) > 0, row


def test_reader_brokers_page_says_why_broker_metrics_are_missing(dashboard, browser):
    text = shown(browser, dashboard, "brokers?cluster=reader",
                 ["KRaft quorum", "Metadata errors: broker metrics are not configured (metrics.source: none)"])
    assert "unknown for broker 1: broker metrics are not configured" in text


def test_lister_groups_page_shows_the_group_it_may_not_describe_with_why(dashboard, browser):
    text = shown(browser, dashboard, "groups?cluster=lister&group=team-b-audit",
                 ["Consumer groups", "groups match",
                  "kpulse may not read this group: not authorized: Describe on group team-b-audit"])
    assert "1 of 2 groups kpulse may not read" in text
    rows = {row["Group"]: row for row in table_with(browser, "Why not read")}
    assert rows["team-b-audit"]["Why not read"] == "not authorized: Describe on group team-b-audit"
    assert rows["team-b-audit"]["Total lag (records)"] == ""  # unknown, not 0
    assert rows["team-a-billing"]["Why not read"] == "" and int(rows["team-a-billing"]["Total lag (records)"]) > 0


def test_partial_sees_its_group_list_and_quorum_limits_said(dashboard, browser):
    shown(browser, dashboard, "groups?cluster=partial",
          ["Consumer groups", "Groups are listed only where kpulse may describe them: not authorized: Describe on "
                              "cluster"])
    shown(browser, dashboard, "brokers?cluster=partial",
          ["The KRaft quorum is not readable: not authorized: Describe on cluster",
           "Quorum leader, leader epoch, high watermark: not authorized: Describe on cluster (DescribeQuorum)"])
    shown(browser, dashboard, "?cluster=partial",
          ["Controller", "not authorized: Describe on cluster (DescribeQuorum)",
           "kpulse's view of cluster partial is limited: not authorized: Describe on cluster"])


@pytest.mark.parametrize("page, said", [("", 1), ("groups", 1),
                                        ("topics", 2)])  # the Topics page asks the cluster itself: its own answer too
def test_a_wrong_password_is_one_red_line_naming_the_authentication_failure(dashboard, browser, page, said):
    text = shown(browser, dashboard, f"{page}?cluster={REFUSED}",
                 [f"kpulse cannot read cluster {REFUSED}: authentication failed:",
                  "invalid credentials with SASL mechanism SCRAM-SHA-512"])
    assert "STALE" not in text and "is `kpulse collect` running?" not in text
    assert text.count("invalid credentials") == said, text  # not again per collector or tile
