"""An alert storm made readable: firing alerts grouped by rule and cluster as Alertmanager groups them
(``alerting/grouping.py``), acknowledgements of a whole group (``dashboard/services/acks.py``), and
expected-idle groups that fire no group alert (``kpulse/expected_idle.py``, ``alerting/rules.py``).
Pure logic from tables of cases; the pages, the browser and the real cluster are in
test_alert_storm.py."""

from __future__ import annotations

import copy
import json

import pandas as pd
import pytest

from alerting.grouping import AlertGroup, GroupCounts, count_text, counts, group_alerts
from alerting.state import AlertState, rule_by_name
from dashboard.services.acks import EVERY_ENTITY, Ack, active, effective
from dashboard.services.alerts import firing_alerts, group_members, grouped
from kpulse.config import parse_config
from kpulse.config.errors import ConfigError
from kpulse.config.model import ConsumerGroupsConfig
from kpulse.expected_idle import CONFIG, ExpectedIdleError, ExpectedIdleFile, Mark, labelled, reason

T0 = 1_800_000_000.0


def alert(rule: str, entity: str, severity: str = "warning", since: float = T0, **extra) -> dict:
    return {"rule": rule, "severity": severity, "entity": entity, "since": since, "value": None,
            "summary": f"{rule} on {entity}", "runbook": rule, **extra}


def shape(groups: list[AlertGroup]) -> list[tuple]:
    return [(g.rule, g.severity, g.count, g.critical, g.since) for g in groups]


@pytest.mark.parametrize("alerts, expected", [
    pytest.param([], [], id="nothing firing -> no group"),
    pytest.param([alert("ConsumerGroupStatus", f"group/g{i}", since=T0 + i) for i in range(2000)],
                 [("ConsumerGroupStatus", "warning", 2000, 0, T0)], id="2,000 idle groups -> one group"),
    pytest.param([alert("ConsumerGroupStatus", "group/a"), alert("ConsumerGroupStatus", "group/b", "critical", T0 + 9)],
                 [("ConsumerGroupStatus", "critical", 2, 1, T0)], id="one ERR among STOPs -> the group is critical"),
    pytest.param([alert("UnderReplicatedPartitions", "cluster/p", since=T0 - 100), alert("BrokerDown", "broker/3",
                                                                                          "critical", T0),
                  alert("ConsumerGroupStatus", "group/a", since=T0 - 50), alert("BrokerDown", "broker/1", "critical",
                                                                                 T0 + 5)],
                 [("BrokerDown", "critical", 2, 2, T0), ("UnderReplicatedPartitions", "warning", 1, 0, T0 - 100),
                  ("ConsumerGroupStatus", "warning", 1, 0, T0 - 50)],
                 id="critical first, then the oldest first"),
])
def test_grouping_by_rule(alerts, expected):
    assert shape(group_alerts(alerts, cluster="prod")) == expected


def test_groups_are_per_cluster_and_rule_and_list_their_entities_in_triage_order():
    alerts = [alert("BrokerDown", "broker/2", "critical", T0 + 5, cluster="a"),
              alert("BrokerDown", "broker/1", "critical", T0, cluster="a"),
              alert("BrokerDown", "broker/1", "critical", T0, cluster="b")]
    groups = group_alerts(alerts)
    assert [(g.cluster, g.entities) for g in groups] == [("a", ("broker/1", "broker/2")), ("b", ("broker/1",))]


def test_an_escalated_entity_is_listed_before_the_older_warnings():
    alerts = [alert("ConsumerGroupStatus", "group/old", since=T0), alert("ConsumerGroupStatus", "group/err",
                                                                        "critical", T0 + 60)]
    [group] = group_alerts(alerts)
    assert group.entities == ("group/err", "group/old") and group.since == T0


@pytest.mark.parametrize("entities, text", [
    (["group/a"] * 2000, "2,000 groups"), (["group/a"], "1 group"), (["broker/1", "broker/2"], "2 brokers"),
    (["sharegroup/s"] * 3, "3 share groups"), (["streams/app"] * 2, "2 Streams apps"),
    (["collector/lag", "probe"], "2 entities"),
])
def test_count_text(entities, text):
    assert count_text(entities, len(entities)) == text


def test_headline_and_counts_say_groups_and_entities():
    alerts = [alert("ConsumerGroupStatus", f"group/g{i}") for i in range(2000)] + [
        alert("OfflinePartitions", "cluster/prod", "critical")]
    groups = group_alerts(alerts)
    assert [g.headline for g in groups] == ["OfflinePartitions, cluster/prod", "ConsumerGroupStatus, 2,000 groups"]
    assert counts(groups) == GroupCounts(critical=1, warning=1, entities=2001)


def test_since_may_be_a_timestamp_as_the_dashboard_frame_has_it():
    stamped = [alert("BrokerDown", "broker/1", since=pd.Timestamp(T0 + 7, unit="s", tz="UTC")),
               alert("BrokerDown", "broker/2", since=pd.Timestamp(T0, unit="s", tz="UTC"))]
    [group] = group_alerts(stamped)
    assert group.since == T0 and group.entities == ("broker/2", "broker/1")


# --- acknowledgements of a whole group -------------------------------------------------------------------

def ack(entity: str, kind: str, at: float, until: float = T0 + 3600, rule: str = "ConsumerGroupStatus") -> Ack:
    return Ack("prod", rule, entity, kind, "alice", until, at)


@pytest.mark.parametrize("acks, entity, expected", [
    pytest.param([], "group/a", None, id="none"),
    pytest.param([ack(EVERY_ENTITY, "silence", T0)], "group/a", "silence", id="the group's covers each entity"),
    pytest.param([ack(EVERY_ENTITY, "silence", T0), ack("group/a", "acknowledge", T0 + 1)], "group/a", "acknowledge",
                 id="an entity's own, newer, wins"),
    pytest.param([ack("group/a", "acknowledge", T0), ack(EVERY_ENTITY, "silence", T0 + 1)], "group/a", "silence",
                 id="the group's, newer, wins"),
    pytest.param([ack(EVERY_ENTITY, "silence", T0, until=T0 + 10)], "group/a", None, id="ended"),
    pytest.param([ack(EVERY_ENTITY, "silence", T0, rule="BrokerDown")], "group/a", None, id="another rule's"),
])
def test_effective_acknowledgement(acks, entity, expected):
    found = effective(active(acks, "prod", T0 + 60), "ConsumerGroupStatus", entity)
    assert (found.kind if found else None) == expected


def test_a_group_silence_hides_every_entity_firing_now_and_the_table_counts_them():
    snapshot = {"time": T0 + 60, "alerts": [alert("ConsumerGroupStatus", f"group/g{i}", since=T0 + i)
                                            for i in range(300)] + [alert("BrokerDown", "broker/3", "critical")]}
    acks = active([ack(EVERY_ENTITY, "silence", T0 + 30), ack("group/g7", "acknowledge", T0 + 40)], "prod", T0 + 60)
    firing = firing_alerts(pd.DataFrame(), snapshot, acks, T0 + 60)
    assert int(firing["silenced"].sum()) == 299  # g7's own acknowledgement is newer than the group's silence
    groups, table = grouped(firing, acks, T0 + 60)
    assert [g.headline for g in groups] == ["BrokerDown, broker/3", "ConsumerGroupStatus, 300 groups"]
    row = table.set_index("rule").loc["ConsumerGroupStatus"]
    assert (row["affected"], row["entities"], row["ack"], row["silenced"], row["acknowledged"]) == (
        "300 groups", 300, "silence", 299, 300)
    assert row["summary"] == "ConsumerGroupStatus on group/g0 (and 299 more)" and row["age_seconds"] == 60
    single = table.set_index("rule").loc["BrokerDown"]
    assert (single["affected"], single["summary"], single["ack"]) == ("broker/3", "BrokerDown on broker/3", None)
    members = group_members(firing, "ConsumerGroupStatus")
    assert len(members) == 300 and list(members["entity"][:2]) == ["group/g0", "group/g1"]


# --- expected-idle groups -------------------------------------------------------------------------------

def groups_config(*expected_idle: str) -> ConsumerGroupsConfig:
    return ConsumerGroupsConfig(expected_idle=expected_idle)


@pytest.mark.parametrize("patterns, group_id, marked, expected", [
    pytest.param(("retired-.*",), "retired-orders", {}, CONFIG, id="a regex names it"),
    pytest.param(("orders.v1",), "orders.v1", {}, CONFIG, id="an exact id names it"),
    pytest.param(("orders(v1",), "orders(v1", {}, CONFIG, id="an exact id that is no regex"),
    pytest.param(("retired-.*",), "live-retired-orders", {}, None, id="a regex matches the whole id only"),
    pytest.param((), "orders", {"orders": Mark("alice", T0)}, "marked by alice", id="marked on the page"),
    pytest.param((), "orders", {"other": Mark("alice", T0)}, None, id="another group marked"),
])
def test_expected_idle_reason(patterns, group_id, marked, expected):
    assert reason(group_id, groups_config(*patterns), marked) == expected


def test_labelling_sets_the_key_on_expected_idle_groups_only_in_new_values():
    groups = [{"group_id": "retired-a"}, {"group_id": "b", "expected_idle": True}, {"group_id": "c"}]
    as_given = copy.deepcopy(groups)
    labels = labelled(groups, groups_config("retired-.*"), {"c": Mark("bob", T0)})
    assert sum(1 for group in labels if group.get("expected_idle")) == 2
    assert labels == [{"group_id": "retired-a", "expected_idle": True}, {"group_id": "b"},
                      {"group_id": "c", "expected_idle": True}]
    assert groups == as_given  # the collector's groups are left as they were
    assert labelled(groups, groups_config(), {}) == [{"group_id": "retired-a"}, {"group_id": "b"},
                                                     {"group_id": "c"}] and groups == as_given


def test_the_config_takes_expected_idle_ids_and_refuses_a_bad_regex_naming_the_key(tmp_path):
    def parse(expected_idle):
        return parse_config({"clusters": [{"name": "p", "bootstrap_servers": "h:9092",
                                           "consumer_groups": {"expected_idle": expected_idle}}]}, source="kpulse.yaml",
                            base_dir=tmp_path)

    config = parse(["retired-.*", "nightly"])
    assert config.cluster("p").consumer_groups.expected_idle == ("retired-.*", "nightly")
    with pytest.raises(ConfigError, match=r"expected_idle\[0\].*invalid regex"):
        parse(["retired-("])
    with pytest.raises(ConfigError, match="expected_idle"):
        parse("retired")


def idle_snapshot(time: float, **labels) -> dict:
    groups = [{"group_id": name, "status": "STOP", "total_lag": 5, "max_lag_seconds": 900.0,
               "lag_seconds_threshold": 60.0, **({"expected_idle": True} if expected else {})}
              for name, expected in labels.items()]
    return {"time": time, "cluster_name": "prod", "consumer_groups": groups}


def test_an_expected_idle_group_fires_no_group_rule_and_marking_a_firing_one_resolves_it():
    rules = [rule_by_name("ConsumerGroupStatus"), rule_by_name("ConsumerGroupLagSeconds")]
    state = AlertState(rules, cluster="prod")
    first = state.evaluate(idle_snapshot(T0, retired=True, orders=False))
    assert {(a.rule, a.entity) for a in first.firing} == {("ConsumerGroupStatus", "group/orders")}
    later = state.evaluate(idle_snapshot(T0 + 60, retired=True, orders=False))
    assert {(a.rule, a.entity) for a in later.firing} == {("ConsumerGroupStatus", "group/orders"),
                                                          ("ConsumerGroupLagSeconds", "group/orders")}
    marked = state.evaluate(idle_snapshot(T0 + 70, retired=True, orders=True))
    assert marked.firing == [] and {(e.rule, e.state) for e in marked.events} == {
        ("ConsumerGroupStatus", "resolved"), ("ConsumerGroupLagSeconds", "resolved")}
    unmarked = state.evaluate(idle_snapshot(T0 + 80, retired=True, orders=False))
    assert [(a.rule, a.since) for a in unmarked.firing] == [("ConsumerGroupStatus", T0 + 80)]


def test_the_marks_file_keeps_who_and_when_per_cluster_and_unmarks(tmp_path):
    marks = ExpectedIdleFile(tmp_path / "state" / "expected-idle.json")
    assert marks.marks("prod") == {}
    assert marks.set("prod", "orders", Mark("alice", T0, "retired")) is None
    assert marks.set("test", "orders", Mark("bob", T0 + 1)) is None
    again = ExpectedIdleFile(marks.path)
    assert again.marks("prod") == {"orders": Mark("alice", T0, "retired")}
    assert again.set("prod", "orders", None) == Mark("alice", T0, "retired")
    assert again.marks("prod") == {} and marks.marks("test") == {"orders": Mark("bob", T0 + 1)}
    assert json.loads(marks.path.read_text()) == {"clusters": {"test": {"orders": {"by": "bob", "at": T0 + 1,
                                                                                     "note": ""}}}}


def test_a_damaged_marks_file_is_one_line_naming_it(tmp_path):
    path = tmp_path / "expected-idle.json"
    path.write_text('{"clusters": {"prod": {"orders": {"who": "x"}}}}')
    with pytest.raises(ExpectedIdleError, match="not a kpulse expected-idle file") as raised:
        ExpectedIdleFile(path).marks("prod")
    assert str(path) in str(raised.value) and "\n" not in str(raised.value)


def test_prometheus_users_get_the_same_silence_the_exporter_says_which_groups_are_expected_idle():
    from prometheus_client import CollectorRegistry, generate_latest

    from alerting.rules_export import prometheus_alerts
    from exporters.prometheus import SnapshotExporter

    exporter = SnapshotExporter()
    exporter.update({"cluster_name": "prod", "consumer_groups": [
        {"group_id": "retired", "status": "STOP", "expected_idle": True, "partitions": []},
        {"group_id": "orders", "status": "STOP", "partitions": []}]})
    registry = CollectorRegistry()
    registry.register(exporter)
    text = generate_latest(registry).decode()
    assert [line for line in text.splitlines() if line.startswith("kpulse_consumergroup_expected_idle")] == [
        'kpulse_consumergroup_expected_idle{cluster="prod",consumergroup="retired"} 1.0']
    group_rules = [r.expr for r in prometheus_alerts() if r.alert in ("ConsumerGroupStatus", "ConsumerGroupLagSeconds")]
    assert group_rules and all(expr.endswith(" unless on (cluster, consumergroup) "
                                             "kpulse_consumergroup_expected_idle == 1") for expr in group_rules)
