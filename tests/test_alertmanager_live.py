"""Alert delivery with the real Alertmanager (the Debian package's binary, on loopback) routing to a
webhook receiver the test runs: a killed broker's offline partition reaches the webhook as a firing
OfflinePartitions with its runbook, and resolved after the restart; a silence made through the
Alerts page's acknowledgement service is an Alertmanager silence that keeps the notification from
the webhook, and ending it expires the silence and lets the notification through."""

from __future__ import annotations

import time

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from alerting.am_client import AlertmanagerClient
from alerting.delivery import AlertDelivery
from alerting.model import Alert, EvaluationResult
from collectors.protocol import Registry
from collectors.registry import BUILTINS
from collectors.runner import CollectionService
from dashboard.services.acks import AckStore, Silencer, end_acks, new_ack, save_ack
from kpulse.config import parse_config
from kpulse.config.model import AlertmanagerConfig
from tests.alertmanager_support import Webhook, alertmanager_installed, running_alertmanager
from tests.conftest import kpulse, start_broker_and_restore_leaders
from tests.support import wait_for

pytestmark = pytest.mark.skipif(not alertmanager_installed(), reason="prometheus-alertmanager is not installed "
                                                                     "(make test installs it)")
TOPIC = "amdeliver.rf1"


@pytest.fixture
def webhook():
    receiver = Webhook()
    yield receiver
    receiver.close()


@pytest.fixture
def alertmanager(tmp_path, webhook):
    with running_alertmanager(tmp_path / "alertmanager", f"{webhook.url}/hook") as url:
        yield url


def cycle_until(service: CollectionService, predicate, what: str, timeout: float = 180):
    """Run collection cycles until ``predicate()`` holds (the deliveries happen in the service's worker)."""
    def one_cycle():
        try:
            service.cycle()
        except Exception:  # noqa: BLE001 - a cycle may fail while the cluster notices the loss
            pass
        return predicate()
    return wait_for(one_cycle, timeout=timeout, interval=1, what=what)


def test_a_killed_broker_reaches_the_webhook_as_offline_partitions_with_its_runbook_and_resolves_after_restart(
        tmp_path, bootstrap, alertmanager, webhook):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(TOPIC, num_partitions=1, replica_assignment=[[1]],
                                                config={"min.insync.replicas": "1"})]).values():
        try:
            future.result(30)
        except Exception:  # noqa: BLE001 - already there from a rerun
            pass
    config = parse_config({"clusters": [{"name": "test", "bootstrap_servers": bootstrap, "probe": {"enabled": False}}],
                           "lake": {"path": str(tmp_path / "lake")}, "intervals": {"collect_seconds": 1},
                           "dashboard": {"url": "http://kpulse.test:8501"},
                           "alerting": {"alertmanager": {"urls": [alertmanager], "resend_interval_seconds": 5,
                                                         "timeout_seconds": 5, "retries": 1}}},
                          source="test", base_dir=tmp_path)
    registry = Registry()
    registry.register("cluster_metadata", BUILTINS["cluster_metadata"])  # the rule reads only its section
    service = CollectionService(config, registry=registry, flush_seconds=3600)
    try:
        service.cycle()
        assert webhook.alerts(alertname="OfflinePartitions") == []
        kpulse("cluster", "kill-broker", "1")
        try:
            cycle_until(service, lambda: webhook.alerts("firing", "OfflinePartitions"),
                        "OfflinePartitions firing at the webhook")
        finally:
            start_broker_and_restore_leaders(1, bootstrap)
        cycle_until(service, lambda: webhook.alerts("resolved", "OfflinePartitions"),
                    "OfflinePartitions resolved at the webhook")
    finally:
        service.close()

    [firing] = webhook.alerts("firing", "OfflinePartitions")[:1]
    assert {key: firing["labels"][key] for key in ("alertname", "rule", "severity", "cluster", "entity")} == {
        "alertname": "OfflinePartitions", "rule": "OfflinePartitions", "severity": "critical", "cluster": "test",
        "entity": "cluster/test"}
    runbook = firing["annotations"]["runbook"]
    assert runbook.startswith("What it means:") and f"--bootstrap-server {bootstrap.split(',')[0]}" in runbook
    assert "offline partitions" in firing["annotations"]["summary"]
    assert firing["annotations"]["dashboard"] == firing["generatorURL"] == (
        "http://kpulse.test:8501/alerts?cluster=test&rule=OfflinePartitions&entity=cluster%2Ftest")
    resolved = webhook.alerts("resolved", "OfflinePartitions")[0]
    assert resolved["startsAt"] == firing["startsAt"] and resolved["endsAt"] > firing["startsAt"]
    status = service.alert_delivery.status("test")[0]
    assert status["up"] is True and status["failed_total"] == 0 and status["sent_total"] >= 2


def firing_now(rule: str, entity: str) -> Alert:
    return Alert(rule, "warning", entity, 1.0, f"{rule} on {entity}", time.time() - 5, rule)


def test_a_silence_made_on_the_alerts_page_is_an_alertmanager_silence_that_keeps_the_alert_from_the_webhook(
        tmp_path, alertmanager, webhook):
    settings = AlertmanagerConfig(urls=(alertmanager,), timeout_seconds=5, resend_interval_seconds=5, retries=1)
    store = AckStore(str(tmp_path / "lake"))
    silencer = Silencer(settings, dashboard_url="http://kpulse.test:8501")
    now = time.time()
    ack = new_ack(cluster="test", rule="ConsumerGroupStatus", entity="group/orders", kind="silence", by="amy",
                  hours=1, now=now, note="deploy in progress")
    assert save_ack(store, ack, now, silencer) is None
    [saved] = store.load()
    assert saved.silence_id and saved.silence_url == alertmanager

    client = AlertmanagerClient(alertmanager)
    [silence] = [s for s in client.silences() if s["id"] == saved.silence_id]
    assert silence["status"]["state"] == "active" and silence["createdBy"] == "amy"
    assert silence["comment"].startswith("kpulse silence: deploy in progress")
    assert {(m["name"], m["value"]) for m in silence["matchers"]} == {
        ("alertname", "ConsumerGroupStatus"), ("cluster", "test"), ("entity", "group/orders")}

    delivery = AlertDelivery(settings, dashboard_url="http://kpulse.test:8501", evaluation_interval=1)
    silenced = firing_now("ConsumerGroupStatus", "group/orders")
    other = firing_now("StreamsAppNotRunning", "streams/app")
    delivery.observe("test", EvaluationResult([silenced, other], []), time.time())
    delivery.deliver()
    wait_for(lambda: webhook.alerts("firing", "StreamsAppNotRunning"), what="the other alert at the webhook")

    def state_of(rule: str) -> dict:
        return next(a["status"] for a in client.alerts() if a["labels"]["alertname"] == rule)
    status = wait_for(lambda: state_of("ConsumerGroupStatus")["state"] == "suppressed" and
                      state_of("ConsumerGroupStatus"), what="the silenced alert suppressed")
    assert status["silencedBy"] == [saved.silence_id]
    assert webhook.alerts(alertname="ConsumerGroupStatus") == []

    ended, message = end_acks(store, "test", "ConsumerGroupStatus", "group/orders", time.time(), silencer)
    assert message is None and [a.silence_id for a in ended] == [saved.silence_id]
    assert wait_for(lambda: [s for s in client.silences() if s["id"] == saved.silence_id][0]["status"]["state"]
                    == "expired", what="the silence expired")
    delivery.observe("test", EvaluationResult([silenced, other], []), time.time())
    delivery.deliver()
    notified = wait_for(lambda: webhook.alerts("firing", "ConsumerGroupStatus"),
                        what="the alert at the webhook once the silence ended")
    assert notified[0]["labels"]["entity"] == "group/orders"
