"""Hostile names on the real cluster, as an attacker who may only name a topic or a consumer group
would choose them: Markdown (a link, an image, bold, a heading ``#``, a trailing ``#``), HTML
(``<a href>``, ``<img>``, ``<script>``), Streamlit's own ``:material/...:`` and ``:red[...]``, ``$``
math, shell (``; touch``, ``$(...)``, backticks) and control characters. Every page shows them as
text: under AppTest no Markdown body or label holds a name raw (unescaped), the "From the command
line" box parses back, in bash, to exactly the name (and runs nothing), the confirmation dialog
shows the exact name to type; in headless Chromium each name reads literally and the browser
requests nothing from any host but the dashboard's own. ``kpulse audit show`` prints the names
with their control characters escaped, one record per line."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Sequence
from pathlib import Path

import pytest
import yaml
from streamlit.testing.v1 import AppTest

from tests.conftest import ARTIFACTS, TEST_PORT_BASE, kpulse
from tests.dashboard_browser import Browser, chromium_path, wait_for_dashboard
from tests.support import APP_FILE, admin_for, committed, create_topic, produce, stop_process

pytestmark = pytest.mark.cluster
CLUSTER = "hostile"
DASHBOARD_PORT = TEST_PORT_BASE + 510
DEVTOOLS_PORT = TEST_PORT_BASE + 511
TOPIC = "_kp-hostile.__strong__._em_-"
"""Kafka allows only [a-zA-Z0-9._-] in topic names: underscores still make Markdown emphasis."""
GROUPS = {
    "link": "**[Click here to re-authenticate](https://example.invalid/login)**",
    "html": '<a href="https://example.invalid/a">here</a> <img src=https://example.invalid/x.png> '
            "![x](https://example.invalid/y.png) <script>alert(1)</script>",
    "shell": "x; touch pwned; $(touch pwned2) `touch pwned3` :material/warning: :red[x] :smile: $x^2$ a -- b "
             "www.example.invalid me@example.invalid #",
    "control": "# ctl\x1b[31mred\x07\r\nnext\x9b\u202eevil #",
}
SHOWN = {**GROUPS, "control": r"# ctl\x1b[31mred\x07\r\nnext\x9b\u202eevil #"}
"""What an operator reads for each group: the name itself, control characters as escapes."""
UNKNOWN = "[unknown](https://example.invalid/u) ![u](https://example.invalid/u.png) #"
"""A ``?group=`` / ``?topic=`` naming nothing: the warning that says so must not render it."""
HOSTILE = [*GROUPS.values(), TOPIC, UNKNOWN]
ALERTS = {"html": ("ConsumerGroupLagSeconds", 3000), "link": ("ConsumerGroupStatus", 3000),
          "shell": ("ConsumerGroupLagSeconds", 2000), "control": ("ConsumerGroupStatus", 2000)}
"""Group -> (rule, firing for so many seconds): ``?rule=`` opens the oldest of a rule."""
PLAIN_TEXT = {"code", "text", "json", "arrow_data_frame", "dataframe", "plotly_chart", "selectbox", "multiselect",
              "text_input", "number_input", "html", "download_button"}
"""Elements whose strings are not Markdown (their labels are checked; their values are text)."""
MARKDOWN_FIELDS = {"body", "label", "help", "title", "text"}


def write_config(directory: Path, bootstrap: str) -> Path:
    config = {"clusters": [{"name": CLUSTER, "bootstrap_servers": bootstrap, "probe": {"enabled": False}}],
              "lake": {"path": str(directory / "lake")}, "intervals": {"collect_seconds": 600},
              "dashboard": {"port": DASHBOARD_PORT, "host": "127.0.0.1"}}
    path = directory / "kpulse.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def write_alerts(lake: Path) -> None:
    """Firing alerts naming the hostile groups (newer than the snapshot, so they stand)."""
    from kpulse.lake.store import LakeWriter

    now = time.time()
    writer = LakeWriter(str(lake))
    writer.append("alert_event", [
        {"time": now, "cluster": CLUSTER, "rule": rule, "severity": "warning", "entity": f"group/{GROUPS[which]}",
         "state": "firing", "value": 99.0, "since": now - age, "summary": f"consumer group {GROUPS[which]} is behind"}
        for which, (rule, age) in ALERTS.items()])
    assert writer.flush().ok


def commit_in_a_child(bootstrap: str, group: str, offsets: dict[tuple[str, int], int], attempts: int = 6) -> None:
    """``commit``, in a child process, again until it works: while a fresh cluster elects its group
    coordinators, librdkafka can abort the process (librdkafka #5040, see tests/conftest.py)."""
    script = ("import sys, json; from tests.support import admin_for, commit; "
              "commit(admin_for(sys.argv[1]), sys.argv[2], {(t, p): o for t, p, o in json.loads(sys.argv[3])})")
    for _attempt in range(attempts):
        done = subprocess.run([sys.executable, "-c", script, bootstrap, group,
                               json.dumps([[t, p, o] for (t, p), o in offsets.items()])],
                              capture_output=True, text=True, timeout=300)
        if done.returncode == 0:
            return
        time.sleep(3)
    raise AssertionError(f"cannot commit offsets of {group!r}: {done.stderr[-2000:]}")


@pytest.fixture(scope="module")
def setup(bootstrap, tmp_path_factory):
    """The topic and the groups on the cluster, one collection into the lake, alerts, and audit rows
    from CLI resets of every group (and a failed sign-in with a hostile user name)."""
    directory = tmp_path_factory.mktemp("hostile")
    admin = admin_for(bootstrap)
    if TOPIC not in admin.list_topics(timeout=10).topics:
        create_topic(admin, TOPIC, 2)
        produce(bootstrap, TOPIC, {0: 5, 1: 5}, first_ms=int(time.time() * 1000) - 3_600_000, step_ms=1000)
    for name in GROUPS.values():
        commit_in_a_child(bootstrap, name, {(TOPIC, 0): 0, (TOPIC, 1): 0})
    config = write_config(directory, bootstrap)
    kpulse("--config", str(config), "collect", "--once")
    write_alerts(directory / "lake")
    resets = [kpulse("--config", str(config), "reset-offsets", "--cluster", CLUSTER, "--group", name, "--all-topics",
                     "--shift-by", "1", "--execute") for name in GROUPS.values()]
    from kpulse.config import load_config
    from operations.audit import AuditLog, AuditRecord

    AuditLog(load_config(str(config)).lake.path, directory / "spool").record(AuditRecord(
        cluster=CLUSTER, actor=GROUPS["link"], action="login", target="dashboard", result="denied",
        error=f"wrong user name or password for '{GROUPS['control']}'"))
    return {"admin": admin, "config": config, "directory": directory, "resets": resets}


def markdown_strings(node) -> list[str]:
    """Every string on the page that Streamlit renders as Markdown: bodies of markdown, captions,
    headings, alerts and toasts; labels and help of every element and block (tabs, expanders,
    dialogs); radio options."""
    found: list[str] = []
    proto = getattr(node, "proto", None)
    kind = getattr(node, "type", None)
    if proto is not None and hasattr(proto, "ListFields"):
        found += _markdown_fields(proto, kind)
    for child in (getattr(node, "children", None) or {}).values():
        found += markdown_strings(child)
    return found


def _markdown_fields(proto, kind) -> list[str]:
    found = []
    for field, value in proto.ListFields():
        if field.message_type is not None:
            for message in (value if isinstance(value, Sequence) else [value]):
                found += _markdown_fields(message, kind)
        elif field.name in MARKDOWN_FIELDS and isinstance(value, str):
            if not (kind in PLAIN_TEXT and field.name in ("body", "text")):
                found.append(value)
        elif field.name == "options" and kind == "radio":
            found += list(value)
    return found


def raw_names(app: AppTest) -> list[str]:
    """The hostile names some Markdown string of the page holds raw (as Markdown, not as text)."""
    texts = markdown_strings(app._tree)
    return [name for name in HOSTILE if any(name in text for text in texts)]


def start(config: Path, monkeypatch, **query) -> AppTest:
    monkeypatch.setenv("KPULSE_CONFIG", str(config))
    monkeypatch.delenv("KPULSE_DASHBOARD_AUTH", raising=False)
    app = AppTest.from_file(str(APP_FILE), default_timeout=90)
    for key, value in query.items():
        app.query_params[key] = value
    return app.run()


def open_page(app: AppTest, page: str, **query) -> AppTest:
    for key, value in query.items():
        app.query_params[key] = value
    app.switch_page(f"app_pages/{page}.py").run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def command_words(command: str, cwd: Path) -> list[str]:
    """The words bash makes of a shown ``kpulse ...`` command line (run as ``printf``, in ``cwd``)."""
    assert command.startswith("kpulse ")
    shown = subprocess.run(["bash", "-c", "printf '%s\\0' " + command.removeprefix("kpulse ")], cwd=cwd,
                           capture_output=True, timeout=30)
    return shown.stdout.decode().split("\0")[:-1]


def test_every_page_shows_the_hostile_names_only_as_text(setup, monkeypatch, tmp_path):
    def visit(page: str, **query) -> AppTest:  # a new session per link, as a browser opens one
        return open_page(start(setup["config"], monkeypatch), page, **query)

    raw: dict[str, list[str]] = {"overview": raw_names(start(setup["config"], monkeypatch))}
    for which, name in GROUPS.items():
        app = visit("groups", group=name)
        assert app.selectbox(key="groups-chosen").value == name, which
        raw[f"groups?group={which}"] = raw_names(app)
        command = next(c.value for c in app.text if c.value.startswith("kpulse reset-offsets"))
        assert command_words(command, tmp_path) == ["reset-offsets", "--cluster", CLUSTER, "--group", name,
                                                    "--all-topics", "--to-latest"], command
        assert not list(tmp_path.iterdir()), f"the command box of {which} ran something: {command}"
    app = visit("groups", group=UNKNOWN)
    assert app.warning, "an unknown ?group= is said"
    raw["groups?group=unknown"] = raw_names(app)
    app = visit("topics", topic=TOPIC)
    assert app.selectbox(key="topics-chosen").value == TOPIC
    raw["topics?topic=hostile"] = raw_names(app)
    raw["topics?topic=unknown"] = raw_names(visit("topics", topic=UNKNOWN))
    app = visit("alerts")
    for which, (rule, _) in ALERTS.items():
        key = f"{rule} · group/{GROUPS[which]}"
        app.selectbox(key="alerts-group").set_value(rule).run()  # alerts are grouped by rule
        app.selectbox(key="alerts-chosen").set_value(key).run()
        assert not app.exception
        raw[f"alerts {which}"] = raw_names(app)
        for chart in app.get("plotly_chart"):
            assert "<a href" not in chart.proto.spec and "<img" not in chart.proto.spec, key
    raw["operations"] = raw_names(visit("operations"))
    raw["streams"] = raw_names(visit("streams"))
    assert {page: names for page, names in raw.items() if names} == {}


def test_the_confirmation_shows_the_exact_name_and_only_it_executes(setup, monkeypatch):
    name = GROUPS["shell"]
    admin = setup["admin"]
    app = start(setup["config"], monkeypatch)
    open_page(app, "groups", group=name)
    key = f"op-group-{CLUSTER}-{name}"
    app.selectbox(key=f"{key}-strategy").set_value("to-latest")
    next(b for b in app.button if b.label == "Plan (changes nothing)").click().run()
    assert not app.exception and not raw_names(app), raw_names(app)
    app.button(key=f"{key}-execute").click().run()
    assert app.text_input(key=f"{key}-typed")  # the dialog is open
    assert name in [c.value for c in app.get("code")], "the dialog shows the name to type, exactly"
    assert not raw_names(app), raw_names(app)
    app.text_input(key=f"{key}-typed").input(name.removesuffix(" #"))  # what the old dialog showed
    app.button(key=f"{key}-confirm").click().run()
    assert any("nothing executed" in e.value for e in app.error)
    assert not raw_names(app), raw_names(app)
    assert committed(admin, name) == {(TOPIC, 0): 1, (TOPIC, 1): 1}
    app.text_input(key=f"{key}-typed").input(name)
    app.button(key=f"{key}-confirm").click().run()
    assert not app.exception and any("reset-offsets: ok" in s.value for s in app.success)
    assert not raw_names(app), raw_names(app)
    assert committed(admin, name) == {(TOPIC, 0): 5, (TOPIC, 1): 5}


CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def test_the_cli_prints_control_characters_escaped_one_audit_record_per_line(setup):
    for reset in setup["resets"]:
        assert not CONTROL.search(reset.stdout + reset.stderr), reset.stdout
    shown = kpulse("--config", str(setup["config"]), "audit", "show", "--cluster", CLUSTER)
    assert not CONTROL.search(shown.stdout), shown.stdout
    lines = shown.stdout.splitlines()
    count = int(lines[-1].split()[0])
    assert len(lines) == count + 1, shown.stdout  # each record on its own line
    assert any(SHOWN["control"] in line and " reset-offsets " in line for line in lines), shown.stdout
    assert any(line.count(r"\r\n") == 1 and " login " in line for line in lines), shown.stdout


# --- in Chromium ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def dashboard(setup):
    logs = ARTIFACTS / "dashboard"
    logs.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen([sys.executable, "-m", "cli.main", "--config", str(setup["config"]), "dashboard"],
                               stdout=open(logs / "hostile-dashboard.log", "w"), stderr=subprocess.STDOUT)
    try:
        wait_for_dashboard(DASHBOARD_PORT, process)
        yield f"http://127.0.0.1:{DASHBOARD_PORT}"
    finally:
        stop_process(process)


def shown_text(browser: Browser, texts: list[str], timeout: float = 90) -> str:
    """The page's text once it shows every one of ``texts`` literally (word joiners, which only
    keep Streamlit from turning ``:name:``, ``--`` and web addresses into icons, dashes and links,
    are invisible and left out)."""
    deadline = time.monotonic() + timeout
    while True:
        text = browser.text().replace("\u2060", "")
        missing = [t for t in texts if t not in text]
        if not missing and "Running..." not in text:
            time.sleep(1.0)
            return browser.text().replace("\u2060", "")
        if time.monotonic() > deadline:
            raise AssertionError(f"page never showed {missing}; it shows:\n{text[:3000]}")
        time.sleep(0.5)


LINKED = ("[...document.querySelectorAll('*')].flatMap(e => ['href', 'src', 'xlink:href', 'action']"
          ".map(a => e.getAttribute(a)).filter(Boolean)).map(v => new URL(v, location.href).href)")
"""Every address an element of the page links to or loads (links to the dashboard's own pages carry
names in their query string: the host is what counts)."""


@pytest.mark.skipif(chromium_path() is None, reason="chromium not installed: run `make test` "
                                                     "(scripts/setup.sh with KPULSE_WITH_BROWSER=1)")
def test_chromium_shows_each_name_literally_and_requests_nothing_elsewhere(setup, dashboard):
    def url(page: str, **query) -> str:
        return f"{dashboard}/{page}" + ("?" + urllib.parse.urlencode(query) if query else "")

    visits = [(url(""), ["Overview", "Brokers up"])]
    visits += [(url("groups", group=name), ["Consumer groups", SHOWN[which], "kpulse reset-offsets"])
               for which, name in GROUPS.items()]
    visits += [(url("groups", group=UNKNOWN), [f"Consumer group '{UNKNOWN}' is not in the latest snapshot"]),
               (url("topics", topic=TOPIC), [f"Partitions of {TOPIC}"]),
               (url("topics", topic=UNKNOWN), [f"Topic '{UNKNOWN}' does not exist"]),
               (url("alerts", rule="ConsumerGroupLagSeconds"),
                [f"ConsumerGroupLagSeconds · group/{GROUPS['html']}", f"consumer group {GROUPS['html']} is behind",
                 f"Open group/{GROUPS['html']} on the groups page"]),
               (url("alerts", rule="ConsumerGroupStatus"), [f"ConsumerGroupStatus · group/{GROUPS['link']}"]),
               (url("operations"), ["Audit log", "record(s) on cluster"])]
    browser = Browser(DEVTOOLS_PORT)
    failures = []
    try:
        browser.record_requests()
        for number, (address, texts) in enumerate(visits):
            browser.open(address)
            try:
                shown_text(browser, texts)
            except AssertionError as error:
                failures.append(f"{address}: {str(error)[:1500]}")
            linked = browser.evaluate(LINKED) or []
            hostile = [u for u in linked if urllib.parse.urlsplit(u).hostname == "example.invalid"]
            if hostile:
                failures.append(f"{address}: the page links to or loads {hostile}")
            page = urllib.parse.urlsplit(address).path.strip("/") or "overview"
            browser.screenshot(ARTIFACTS / "dashboard" / f"hostile-{number:02d}-{page}.png")
        browser.evaluate("1")  # the replies carry the last network events
    finally:
        browser.close()
    elsewhere = sorted({u for u in browser.requests if urllib.parse.urlsplit(u).scheme not in ("data", "blob")
                        and urllib.parse.urlsplit(u).netloc != f"127.0.0.1:{DASHBOARD_PORT}"})
    assert not elsewhere, f"requests to other hosts: {elsewhere}"
    assert not failures, "\n".join(failures)
