"""Alert delivery to Alertmanager without Kafka: the payloads (labels, annotations, times), when an
alert is due (state changes, resends, a failed Alertmanager), the HTTP client's retries against a real
http.server answering 500 then 200, and the collection loop with an Alertmanager that is unreachable
or hangs (the cycle completes, the failure is counted and logged on one line). The real Alertmanager:
``tests/test_alertmanager_live.py``."""

from __future__ import annotations

import logging

import pytest

from alerting.alertmanager import DeliveryBook, alert_labels, rfc3339, silence_payload
from alerting.am_client import AlertmanagerClient, AlertmanagerError
from alerting.delivery import AlertDelivery
from alerting.model import Alert, AlertEvent
from collectors.protocol import CollectorResult, Registry
from collectors.runner import CollectionService
from kpulse.config import parse_config
from kpulse.config.model import AlertmanagerConfig
from tests.alertmanager_support import Recorder
from tests.support import free_port, wait_for

T0 = 1_700_000_000.0
AM = "http://am:9093"


def offline(since: float = T0, value: float = 2.0) -> Alert:
    return Alert("OfflinePartitions", "critical", "cluster/prod", value, f"{value:g} offline partitions", since,
                 "OfflinePartitions")


def group_alert(severity: str = "warning") -> Alert:
    return Alert("ConsumerGroupStatus", severity, "group/orders", 10.0, "group orders is STOP", T0 - 30,
                 "ConsumerGroupStatus")


def book(urls=(AM,)) -> DeliveryBook:
    return DeliveryBook(urls, resend_interval=60, evaluation_interval=10, dashboard_url="https://kp.example.com/")


def payload_of(notice, now, the_book):
    return notice.payload(now, the_book.valid_for, the_book.dashboard_url)


def sent(notices, now, the_book):
    return [(n.labels["alertname"], n.labels["severity"], n.status, payload_of(n, now, the_book)["endsAt"])
            for n in notices]


# --- payloads ----------------------------------------------------------------------------------------

def test_a_firing_alert_carries_its_rule_cluster_entity_runbook_and_dashboard_link():
    the_book = book()
    the_book.observe("prod", [offline(since=T0 - 5)], [], T0, bootstrap="b1:9092")
    [notice] = the_book.due(AM, T0)
    payload = payload_of(notice, T0, the_book)

    assert payload["labels"] == {"alertname": "OfflinePartitions", "rule": "OfflinePartitions",
                                 "severity": "critical", "cluster": "prod", "entity": "cluster/prod"}
    assert payload["startsAt"] == rfc3339(T0 - 5) == "2023-11-14T22:13:15.000Z"
    assert payload["endsAt"] == rfc3339(T0 + 4 * 60)  # four resend intervals, as Prometheus
    annotations = payload["annotations"]
    assert annotations["summary"] == "2 offline partitions"
    assert "offline partitions > 0" in annotations["description"] and "value 2" in annotations["description"]
    assert "What to do:" in annotations["runbook"] and "--bootstrap-server b1:9092" in annotations["runbook"]
    assert annotations["dashboard"] == annotations["runbook_url"] == payload["generatorURL"] == (
        "https://kp.example.com/alerts?cluster=prod&rule=OfflinePartitions&entity=cluster%2Fprod")


@pytest.mark.parametrize("entity, extra", [("group/orders", {"consumergroup": "orders"}), ("broker/2", {"broker": "2"}),
                                           ("sharegroup/s", {"sharegroup": "s"}),
                                           ("streams/app", {"application_id": "app"}),
                                           ("collector/probe", {"collector": "probe"}), ("probe", {}),
                                           ("cluster/prod", {})])
def test_an_entity_also_gets_the_label_the_exporter_names_it_by(entity, extra):
    labels = alert_labels("prod", "R", "warning", entity)
    assert labels == {"alertname": "R", "rule": "R", "severity": "warning", "cluster": "prod", "entity": entity,
                      **extra}


def test_a_silence_matches_the_rule_and_cluster_and_the_entity_unless_it_covers_the_group():
    one = silence_payload(cluster="prod", rule="BrokerDown", entity="broker/2", kind="silence", by="amy",
                          note="disk swap", starts=T0, ends=T0 + 3600)
    assert one["matchers"] == [{"name": "alertname", "value": "BrokerDown", "isRegex": False, "isEqual": True},
                               {"name": "cluster", "value": "prod", "isRegex": False, "isEqual": True},
                               {"name": "entity", "value": "broker/2", "isRegex": False, "isEqual": True}]
    assert (one["createdBy"], one["comment"], one["endsAt"]) == ("amy", "kpulse silence: disk swap", rfc3339(T0 + 3600))
    group = silence_payload(cluster="prod", rule="ConsumerGroupStatus", entity="*", kind="acknowledge", by="bo",
                            note="", starts=T0, ends=T0 + 60)
    assert [m["name"] for m in group["matchers"]] == ["alertname", "cluster"]
    assert group["comment"] == "kpulse acknowledge"


# --- when an alert is due ------------------------------------------------------------------------------

def test_firing_is_sent_at_once_resent_every_interval_and_resolved_once_with_its_resolve_time():
    the_book = book()
    the_book.observe("prod", [offline()], [], T0)
    assert sent(the_book.due(AM, T0), T0, the_book) == [("OfflinePartitions", "critical", "firing",
                                                         rfc3339(T0 + 240))]
    the_book.accepted(AM, [n.key for n in the_book.due(AM, T0)], T0)

    for now in (T0 + 10, T0 + 50):  # evaluations in between: nothing changed, nothing due
        the_book.observe("prod", [offline()], [], now)
        assert the_book.due(AM, now) == []
    the_book.observe("prod", [offline()], [], T0 + 60)
    assert sent(the_book.due(AM, T0 + 60), T0 + 60, the_book) == [("OfflinePartitions", "critical", "firing",
                                                                   rfc3339(T0 + 300))]
    the_book.accepted(AM, [n.key for n in the_book.due(AM, T0 + 60)], T0 + 60)

    the_book.observe("prod", [], [], T0 + 70)  # gone from the firing list: resolved now
    assert sent(the_book.due(AM, T0 + 70), T0 + 70, the_book) == [("OfflinePartitions", "critical", "resolved",
                                                                   rfc3339(T0 + 70))]
    the_book.accepted(AM, [n.key for n in the_book.due(AM, T0 + 70)], T0 + 70)
    the_book.observe("prod", [], [], T0 + 200)
    assert the_book.due(AM, T0 + 200) == [] and the_book.pending(AM, "prod") == 0


def test_a_severity_change_resolves_the_old_severity_and_fires_the_new_one():
    the_book = book()
    the_book.observe("prod", [group_alert("warning")], [], T0)
    the_book.accepted(AM, [n.key for n in the_book.due(AM, T0)], T0)
    the_book.observe("prod", [group_alert("critical")], [], T0 + 10)
    assert sorted(sent(the_book.due(AM, T0 + 10), T0 + 10, the_book)) == [
        ("ConsumerGroupStatus", "critical", "firing", rfc3339(T0 + 250)),
        ("ConsumerGroupStatus", "warning", "resolved", rfc3339(T0 + 10))]


def test_a_failed_alertmanager_keeps_what_it_did_not_accept_and_is_tried_again_a_resend_interval_later():
    other = "http://am2:9093"
    the_book = book((AM, other))
    the_book.observe("prod", [offline()], [], T0)
    the_book.accepted(other, [n.key for n in the_book.due(other, T0)], T0)
    the_book.failed(AM, T0 + 1)
    the_book.observe("prod", [], [], T0 + 10)  # resolves while AM is down

    assert the_book.due(AM, T0 + 10) == [] and the_book.retry_at(AM) == T0 + 61
    assert the_book.pending(AM, "prod") == 1 and the_book.pending(other, "prod") == 1
    the_book.accepted(other, [n.key for n in the_book.due(other, T0 + 10)], T0 + 10)
    # kept for AM, which never heard of it: at its next attempt it gets the resolved alert
    assert sent(the_book.due(AM, T0 + 61), T0 + 61, the_book) == [("OfflinePartitions", "critical", "resolved",
                                                                   rfc3339(T0 + 10))]
    the_book.accepted(AM, [n.key for n in the_book.due(AM, T0 + 61)], T0 + 61)
    assert the_book.due(AM, T0 + 200) == [] and the_book.due(other, T0 + 200) == []


def test_a_resolution_the_book_never_saw_fire_is_sent_after_a_restart():
    the_book = book()
    event = AlertEvent(T0, "prod", "BrokerDown", "critical", "broker/2", "resolved", 1.0, T0 - 600,
                       "resolved: broker 2 is down")
    the_book.observe("prod", [], [event], T0)
    [notice] = the_book.due(AM, T0)
    payload = payload_of(notice, T0, the_book)
    assert (payload["labels"]["broker"], payload["startsAt"], payload["endsAt"]) == ("2", rfc3339(T0 - 600),
                                                                                     rfc3339(T0))


def test_a_resolved_alert_no_alertmanager_accepted_is_forgotten_after_the_retention():
    the_book = book()
    the_book.observe("prod", [offline()], [], T0)
    the_book.observe("prod", [], [], T0 + 10)
    the_book.observe("prod", [], [], T0 + 10 + 15 * 60 + 1)
    assert the_book.due(AM, T0 + 10 + 15 * 60 + 1) == []


# --- the HTTP client ---------------------------------------------------------------------------------

def test_a_500_is_retried_with_backoff_and_the_second_answer_200_is_success():
    server = Recorder((500, 200))
    try:
        client = AlertmanagerClient(server.url, timeout=5, retries=3, backoff_first=0.01, backoff_max=0.05)
        client.post_alerts([{"labels": {"alertname": "X"}}])
        assert [(m, p) for m, p, _ in server.requests] == [("POST", "/api/v2/alerts")] * 2
        assert server.requests[1][2] == [{"labels": {"alertname": "X"}}]
    finally:
        server.close()


def test_a_4xx_is_not_retried_and_every_failure_is_one_line_naming_the_alertmanager():
    server = Recorder((400,))
    try:
        client = AlertmanagerClient(server.url, timeout=5, retries=3, backoff_first=0.01, backoff_max=0.05)
        with pytest.raises(AlertmanagerError) as refused:
            client.post_alerts([])
        assert len(server.requests) == 1
        assert str(refused.value) == f'Alertmanager {server.url}: POST /api/v2/alerts answered 400 Bad Request: "boom"'
    finally:
        server.close()
    closed = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(AlertmanagerError) as unreachable:
        AlertmanagerClient(closed, timeout=2, retries=2, backoff_first=0.01, backoff_max=0.05).post_alerts([])
    message = str(unreachable.value)
    assert "\n" not in message and message.startswith(f"Alertmanager {closed}: POST /api/v2/alerts: ")
    assert message.endswith("(3 attempts)") and "refused" in message.lower()


# --- the collection loop -------------------------------------------------------------------------------

class OfflineCluster:
    """A collector whose cluster always has 2 offline partitions: OfflinePartitions fires at once."""

    name = "cluster_metadata"

    def collect(self, context):
        return CollectorResult(sections={"cluster": {"offline_partitions": 2, "brokers": []}})


def service_for(tmp_path, *urls: str, client_retries: int = 0, **options) -> CollectionService:
    config = parse_config({"clusters": [{"name": "prod", "bootstrap_servers": "b1:9092"}],
                           "lake": {"path": str(tmp_path / "lake")},
                           "alerting": {"alertmanager": {"urls": list(urls), "timeout_seconds": 2,
                                                         "retries": client_retries}}},
                          source="test", base_dir=tmp_path)
    registry = Registry()
    registry.register("cluster_metadata", lambda cluster: OfflineCluster())
    return CollectionService(config, registry=registry, flush_seconds=3600, **options)


def delivery_of(snapshot) -> dict:
    [delivery] = snapshot["alert_delivery"]
    return delivery


def test_an_unreachable_alertmanager_leaves_the_cycle_whole_counts_the_failure_and_logs_one_line(tmp_path, caplog):
    url = f"http://127.0.0.1:{free_port()}"
    service = service_for(tmp_path, url)
    caplog.set_level(logging.WARNING, logger="kpulse.alerting")
    try:
        first = service.cycle().snapshots["prod"]
        assert [a["rule"] for a in first["alerts"]] == ["OfflinePartitions"]
        assert delivery_of(first)["pending"] == 1 and delivery_of(first)["alertmanager"] == url
        wait_for(lambda: service.alert_delivery.status("prod")[0]["failed_total"] == 1, timeout=30,
                 what="the failed send counted")
        snapshot = service.cycle().snapshots["prod"]
    finally:
        service.close()
    delivery = delivery_of(snapshot)
    assert (delivery["up"], delivery["sent_total"], delivery["failed_total"], delivery["pending"]) == (False, 0, 1, 1)
    assert delivery["next_attempt_at"] is not None and "refused" in delivery["last_error"].lower()
    [record] = [r for r in caplog.records if r.name == "kpulse.alerting"]
    assert "\n" not in record.getMessage() and record.exc_info is None
    assert record.getMessage().startswith("alert delivery failed, 1 alert(s) kept for the next attempt in 60s: ")


def test_a_hanging_alertmanager_does_not_hold_the_cycle_and_its_alerts_are_sent_when_it_answers(tmp_path):
    server = Recorder((503, 200), hold=True)
    service = service_for(tmp_path, server.url, client_retries=1)
    try:
        service.cycle()
        assert server.arrived.wait(30)  # the worker is inside its request, held by the server...
        snapshot = service.cycle().snapshots["prod"]  # ...and the next cycle completes all the same
        assert delivery_of(snapshot)["pending"] == 1 and delivery_of(snapshot)["sent_total"] == 0
        server.release.set()  # 503, retried, then 200
        wait_for(lambda: service.alert_delivery.status("prod")[0]["sent_total"] == 1, timeout=30,
                 what="the alert accepted")
    finally:
        service.close()
        server.close()
    posted = [body for _, _, body in server.requests]
    assert len(posted) == 2 and posted[0] == posted[1]
    assert [a["labels"]["alertname"] for a in posted[1]] == ["OfflinePartitions"]
    status = service.alert_delivery.status("prod")[0]
    assert (status["up"], status["failed_total"], status["pending"]) == (True, 0, 0)


def test_an_alertmanager_that_hangs_does_not_hold_the_delivery_to_another(tmp_path):
    hanging, answering = Recorder((200,), hold=True), Recorder((200,))
    service = service_for(tmp_path, hanging.url, answering.url)
    try:
        service.cycle()
        assert hanging.arrived.wait(30)

        def by_url():
            return {s["alertmanager"]: s for s in service.alert_delivery.status("prod")}
        # the server records the request before its answer reaches the sender, which counts it then
        wait_for(lambda: by_url()[answering.url]["sent_total"] == 1, timeout=30,
                 what="the other Alertmanager's send, counted")
        assert len(answering.requests) == 1 and by_url()[hanging.url]["pending"] == 1
    finally:
        service.close()
        hanging.close()
        answering.close()


def test_collect_once_sends_nothing_to_alertmanager(tmp_path):
    """``kpulse collect --once`` is a look beside the running loop, not a second pager."""
    server = Recorder()
    try:
        service = service_for(tmp_path, server.url, deliver_alerts=False)
        snapshot = service.cycle().snapshots["prod"]
        service.close()
    finally:
        server.close()
    assert service.alert_delivery is None and "alert_delivery" not in snapshot and server.requests == []
    assert [a["rule"] for a in snapshot["alerts"]] == ["OfflinePartitions"]


def test_delivery_needs_an_alertmanager_url():
    with pytest.raises(ValueError, match="no Alertmanager URL"):
        AlertDelivery(AlertmanagerConfig(), dashboard_url="http://x", evaluation_interval=10)
