"""The Alerts page with Alertmanager configured, under AppTest: the delivery's health under the title
(from the snapshot's ``alert_delivery``); a silence saved on the page becomes a silence of the real
Alertmanager, its id kept beside kpulse's record, and "End it now" expires it; an Alertmanager that
cannot be reached gives one warning line and kpulse's own silence is recorded all the same; the
store's bookkeeping around the silence when the lake cannot be written or Alertmanager is no longer
configured."""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import replace

import pytest
import yaml
from streamlit.testing.v1 import AppTest

from alerting.am_client import AlertmanagerClient
from dashboard.services.acks import AckStore, end_acks, new_ack, save_ack
from dashboard.services.delivery import delivery_lines
from dashboard.services.sources import DashboardError
from kpulse.lake.store import SNAPSHOT_DIR
from tests.alertmanager_support import Webhook, alertmanager_installed, running_alertmanager
from tests.dashboard_lake import CLUSTER, write_lake
from tests.support import APP_FILE, free_port, open_page

pytestmark = pytest.mark.skipif(not alertmanager_installed(), reason="prometheus-alertmanager is not installed")


def lake_with(directory, alertmanager_url: str, delivery: list[dict]) -> None:
    lake = directory / "lake"
    write_lake(str(lake), time.time(), groups=3, history_cycles=5)
    path = os.path.join(lake, SNAPSHOT_DIR, f"{CLUSTER}.json")
    with open(path) as file:
        snapshot = json.load(file)
    snapshot["alert_delivery"] = delivery
    with open(path, "w") as file:
        json.dump(snapshot, file)
    config = {"clusters": [{"name": CLUSTER, "bootstrap_servers": "127.0.0.1:9"}], "lake": {"path": str(lake)},
              "intervals": {"collect_seconds": 600},
              "alerting": {"alertmanager": {"urls": [alertmanager_url], "timeout_seconds": 3, "retries": 0}}}
    (directory / "kpulse.yaml").write_text(yaml.safe_dump(config))


def plain(shown: str) -> str:
    """Text as the page shows it, without the escapes and word joiners of ``dashboard/literal.py``."""
    return re.sub(r"\\(.)", r"\1", shown.replace("\u2060", ""))


def alertmanager_warnings(app: AppTest) -> list[str]:
    """The page's warning lines about Alertmanager (the sign-in frame may add one of its own)."""
    return [plain(w.value) for w in app.warning if "Alertmanager" in plain(w.value)]


def alerts_page(directory, monkeypatch) -> AppTest:
    monkeypatch.setenv("KPULSE_CONFIG", str(directory / "kpulse.yaml"))
    app = AppTest.from_file(str(APP_FILE), default_timeout=60)
    app.run()
    return open_page(app, "alerts")


def save_silence(app: AppTest, who: str) -> None:
    app.text_input(key="alerts-ack-who").input(who)
    app.radio(key="alerts-ack-kind").set_value("silence")
    app.text_input(key="alerts-ack-note").input("disk swap")
    [b for b in app.button if b.label == "Save"][0].click().run()
    assert not app.exception, [e.value for e in app.exception]


def test_a_silence_saved_on_the_page_is_made_in_alertmanager_and_ending_it_expires_it(tmp_path, monkeypatch):
    webhook = Webhook()
    try:
        with running_alertmanager(tmp_path / "alertmanager", f"{webhook.url}/hook") as url:
            now = time.time()
            lake_with(tmp_path, url, [{"alertmanager": url, "up": True, "sent_total": 7, "failed_total": 0,
                                       "pending": 0, "last_sent_at": now - 5, "last_error": None,
                                       "last_error_at": None, "next_attempt_at": None}])
            app = alerts_page(tmp_path, monkeypatch)
            assert any(plain(c.value).startswith(f"Alertmanager {url}: delivering") for c in app.caption)
            save_silence(app, "alice")
            assert alertmanager_warnings(app) == []
            [saved] = AckStore(str(tmp_path / "lake")).load()
            assert (saved.rule, saved.entity, saved.kind, saved.silence_url) == (
                "OfflinePartitions", f"cluster/{CLUSTER}", "silence", url)
            client = AlertmanagerClient(url)
            [silence] = [s for s in client.silences() if s["id"] == saved.silence_id]
            assert (silence["status"]["state"], silence["createdBy"]) == ("active", "alice")
            assert {(m["name"], m["value"]) for m in silence["matchers"]} == {
                ("alertname", "OfflinePartitions"), ("cluster", CLUSTER), ("entity", f"cluster/{CLUSTER}")}

            app.toggle(key="alerts-show-silenced").set_value(True).run()
            app.selectbox(key="alerts-group").set_value("OfflinePartitions").run()
            assert app.selectbox(key="alerts-chosen").value == f"OfflinePartitions · cluster/{CLUSTER}"
            app.button(key="alerts-ack-end").click().run()
            assert not app.exception and alertmanager_warnings(app) == []
            [ended] = AckStore(str(tmp_path / "lake")).load()
            assert ended.until <= time.time()
            [expired] = [s for s in client.silences() if s["id"] == saved.silence_id]
            assert expired["status"]["state"] == "expired"
    finally:
        webhook.close()


def test_an_unreachable_alertmanager_is_one_warning_line_and_kpulse_records_the_silence(tmp_path, monkeypatch):
    url = f"http://127.0.0.1:{free_port()}"
    now = time.time()
    delivery = [{"alertmanager": url, "up": False, "sent_total": 0, "failed_total": 4, "pending": 2,
                 "last_sent_at": None, "last_error": f"Alertmanager {url}: POST /api/v2/alerts: Connection refused",
                 "last_error_at": now - 30, "next_attempt_at": now + 30}]
    lake_with(tmp_path, url, delivery)
    app = alerts_page(tmp_path, monkeypatch)
    [failing] = alertmanager_warnings(app)
    assert failing.startswith(f"Alertmanager {url} is failing") and "2 alerts not delivered yet" in failing

    save_silence(app, "bob")
    [saved] = AckStore(str(tmp_path / "lake")).load()
    assert (saved.by, saved.kind, saved.silence_id) == ("bob", "silence", None)
    messages = [line for line in alertmanager_warnings(app) if "silence" in line]
    assert len(messages) == 1 and "\n" not in messages[0]
    assert messages[0].startswith(f"could not make the Alertmanager silence: Alertmanager {url}:")
    assert messages[0].endswith("kpulse's own silence is recorded")


def test_the_delivery_lines_say_nothing_without_alertmanager_and_count_what_waits():
    assert delivery_lines({"alerts": []}, 100.0) == []
    [(healthy, line)] = delivery_lines({"alert_delivery": [
        {"alertmanager": "http://am:9093", "up": None, "sent_total": 0, "failed_total": 0, "pending": 1,
         "last_sent_at": None, "last_error": None, "last_error_at": None, "next_attempt_at": None}]}, 100.0)
    assert healthy and line == "Alertmanager http://am:9093: nothing sent yet · 1 alert not delivered yet"


class RecordingSilencer:
    """Stands for Alertmanager in the store's bookkeeping tests: makes silence ``s1``, records expiries."""

    def __init__(self) -> None:
        self.expired: list[str] = []

    def silence(self, ack):
        return replace(ack, silence_id="s1", silence_url="http://am:9093")

    def expire(self, ack) -> None:
        self.expired.append(ack.silence_id)


def test_a_silence_kpulse_could_not_record_is_expired_again_and_the_error_shown(tmp_path):
    (tmp_path / "lake").write_text("a file where the lake's directory should be")
    silencer = RecordingSilencer()
    ack = new_ack(cluster=CLUSTER, rule="BrokerDown", entity="broker/2", kind="silence", by="amy", hours=1,
                  now=1000.0)
    with pytest.raises(DashboardError, match="acknowledgement"):
        save_ack(AckStore(str(tmp_path / "lake")), ack, 1000.0, silencer)
    assert silencer.expired == ["s1"]


def test_ending_a_silence_once_alertmanager_is_no_longer_configured_says_it_was_left_to_end(tmp_path):
    store = AckStore(str(tmp_path / "lake"))
    ack = new_ack(cluster=CLUSTER, rule="BrokerDown", entity="broker/2", kind="acknowledge", by="amy", hours=1,
                  now=1000.0)
    assert save_ack(store, ack, 1000.0, RecordingSilencer()) is None
    ended, message = end_acks(store, CLUSTER, "BrokerDown", "broker/2", 1100.0, None)
    assert [a.silence_id for a in ended] == ["s1"] and [a.until for a in store.load()] == [1100.0]
    assert message == ("the Alertmanager silence s1 at http://am:9093 was left to end by itself: no Alertmanager "
                       "is configured now")
