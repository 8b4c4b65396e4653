"""A value kpulse may not read is shown with its reason, never a blank, a zero or a lost page.

Under Streamlit's AppTest, without a cluster: the Topics page for a principal refused
DescribeConfigs on some topics (a fake Admin client: the page's logic is under test here, not
Kafka's ACLs), consumer groups, Streams applications and share groups whose offsets the collectors
could not read (their snapshot entries carry ``error``), the partial-lag caption that tells offset
lag from lag in seconds, and a failed sign-in that never repeats what was typed."""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path

import pandas as pd
import pytest
import yaml
from confluent_kafka import KafkaError
from streamlit.testing.v1 import AppTest

from dashboard import literal
from dashboard.services.sources import Sources
from kpulse.config import load_config
from tests.dashboard_lake import CLUSTER, STREAMS_GROUP
from tests.dashboard_ops import sign_in
from tests.dashboard_unread import (HOSTILE_GROUP, PARTITIONS, UNREAD_GROUPS, FakeAdmin, FakeLogDirs, add_unread_groups,
                                    kafka_error, start, unread_streams_apps, write_setup)


def markdown_texts(app: AppTest) -> list[str]:
    """What the page renders as Markdown: bodies, captions, headings, alerts, metric and widget labels."""
    texts = [e.value for kind in ("markdown", "caption", "title", "header", "subheader", "warning", "error", "info",
                                  "success") for e in getattr(app, kind)]
    return texts + [e.label for e in (*app.metric, *app.selectbox, *app.text_input, *app.number_input)]


def table_with(app: AppTest, column: str) -> pd.DataFrame:
    tables = [d.value for d in app.dataframe if column in d.value.columns]
    assert len(tables) == 1, f"{len(tables)} tables with a {column!r} column"
    return tables[0]


def texts(column: pd.Series) -> dict:
    """A text column read back from the page, missing values as None."""
    return {key: (None if pd.isna(value) else value) for key, value in column.items()}


# --- Topics: DescribeConfigs refused on some topics ------------------------------------------------------

def topics_page(tmp_path, monkeypatch, admin: FakeAdmin, **query) -> AppTest:
    config = write_setup(tmp_path)
    sources = Sources(load_config(str(config)), admin_factory=lambda client_config: admin,
                      log_dirs_factory=lambda cluster: FakeLogDirs())
    return start(config, monkeypatch, "topics", sources, **query)


DENIED = "not authorized: DescribeConfigs on topic team_b.audit"


def test_a_topic_whose_configs_are_refused_keeps_its_row_with_the_reason_and_the_others_their_min_isr(
        tmp_path, monkeypatch):
    app = topics_page(tmp_path, monkeypatch, FakeAdmin({"team_b.audit": kafka_error(
        KafkaError.TOPIC_AUTHORIZATION_FAILED)}))
    assert not app.error, [e.value for e in app.error]  # no "cannot describe topic configs" for the whole page
    listed = table_with(app, "replication_factor").set_index("topic")
    assert listed["partitions"].to_dict() == PARTITIONS
    assert set(listed["replication_factor"]) == {3} and set(listed["under_replicated"]) == {0}
    assert listed["size_bytes"].to_dict() == {"orders": 1000, "payments": 1000, "team_b.audit": 1000}
    assert listed.loc["orders", "min_isr"] == 2 and listed.loc["payments", "min_isr"] == 2
    assert pd.isna(listed.loc["team_b.audit", "min_isr"])  # empty, not a number
    assert texts(listed["configs_problem"]) == {"orders": None, "payments": None, "team_b.audit": DENIED}
    assert any("min ISR unknown for 1 of 3 topics" in c.value for c in app.caption), [c.value for c in app.caption]


def test_the_detail_of_a_refused_topic_says_why_its_configs_are_missing_and_shows_its_partitions(
        tmp_path, monkeypatch):
    app = topics_page(tmp_path, monkeypatch, FakeAdmin({"team_b.audit": kafka_error(
        KafkaError.TOPIC_AUTHORIZATION_FAILED)}), topic="team_b.audit")
    assert app.selectbox(key="topics-chosen").value == "team_b.audit"
    assert not app.error, [e.value for e in app.error]
    assert list(table_with(app, "latest_offset")["latest_offset"]) == [10]
    assert [w.value for w in app.main.warning] == [f"Configs not read: {literal.markdown(DENIED)}"]
    assert not [d for d in app.dataframe if "config" in d.value.columns]
    app.selectbox(key="topics-chosen").set_value("orders").run()  # an authorized topic: its configs
    configs = table_with(app, "config").set_index("config")
    assert configs.loc["min.insync.replicas", "value"] == "2" and not app.main.warning


def test_the_admin_service_reads_the_configs_it_may_and_names_the_acl_it_lacks_for_the_others(tmp_path):
    from dashboard.services.kafka_admin import ClusterAdmin
    from dashboard.services.sources import DashboardError

    cluster = load_config(str(write_setup(tmp_path))).cluster(CLUSTER)
    admin = ClusterAdmin(cluster, factory=lambda client_config: FakeAdmin(
        {"team_b.audit": kafka_error(KafkaError.TOPIC_AUTHORIZATION_FAILED),
         "payments": kafka_error(KafkaError.UNKNOWN_TOPIC_OR_PART)}), timeout=0.2)
    read = admin.topic_configs(list(PARTITIONS))
    assert read.configs["orders"]["min.insync.replicas"] == {"value": "2", "source": "DYNAMIC_TOPIC_CONFIG",
                                                            "default": False}
    assert read.problems == {"team_b.audit": DENIED, "payments": "Broker: Unknown topic or partition"}
    assert (read.min_isr("orders"), read.min_isr("team_b.audit")) == (2, None)

    class Silent(FakeAdmin):
        def describe_configs(self, resources, request_timeout=None):
            return {r: Future() for r in resources}  # never answered

    silent = ClusterAdmin(cluster, factory=lambda client_config: Silent({}), timeout=0.2)
    with pytest.raises(DashboardError, match="cannot describe topic configs: no answer for 3 of 3 topics within 0.2 s"):
        silent.topic_configs(list(PARTITIONS))
    with pytest.raises(DashboardError, match="retrying in a few seconds"):  # remembered: the next call does not wait
        silent.topic_configs(list(PARTITIONS))


@pytest.mark.parametrize("admin, shown", [
    (FakeAdmin({"team_b.audit": kafka_error(KafkaError.UNKNOWN_TOPIC_OR_PART)}),
     {"orders": None, "payments": None, "team_b.audit": "Broker: Unknown topic or partition"}),
    (FakeAdmin({}, whole_call=RuntimeError("DescribeConfigs failed")),
     {t: f"cluster {CLUSTER}: cannot describe topic configs: DescribeConfigs failed" for t in PARTITIONS}),
])
def test_another_failure_to_read_configs_is_shown_as_its_text_in_the_column(tmp_path, monkeypatch, admin, shown):
    app = topics_page(tmp_path, monkeypatch, admin, topic="team_b.audit")
    listed = table_with(app, "replication_factor").set_index("topic")
    assert listed["partitions"].to_dict() == PARTITIONS
    assert texts(listed["configs_problem"]) == shown
    assert listed["min_isr"].isna().sum() == sum(1 for why in shown.values() if why)
    assert [w.value for w in app.main.warning] == [f"Configs not read: {literal.markdown(shown['team_b.audit'])}"]
    assert list(table_with(app, "latest_offset")["latest_offset"]) == [10]


# --- consumer groups, Streams applications and share groups kpulse may not read -------------------------

@pytest.mark.parametrize("error, shown", [
    (None, None),
    ("", None),
    ("no coordinator: GROUP_AUTHORIZATION_FAILED", "not authorized: Describe on group g"),
    ("OffsetFetch: GROUP_AUTHORIZATION_FAILED (Not authorized to access group: g)",
     "not authorized: Describe on group g"),
    ("StreamsGroupDescribe: KafkaError{code=GROUP_AUTHORIZATION_FAILED,val=30,str=\"Broker: Group authorization "
     "failed\"}", "not authorized: Describe on group g"),
    ("Committed offsets: Broker: Group authorization failed", "not authorized: Describe on group g"),
    ("describe: GROUP_AUTHORIZATION_FAILED; offsets: GROUP_AUTHORIZATION_FAILED", "not authorized: Describe on group g"),
    ("describe: COORDINATOR_NOT_AVAILABLE; offsets: GROUP_AUTHORIZATION_FAILED",
     "describe: COORDINATOR_NOT_AVAILABLE; not authorized: Describe on group g"),
    ("OffsetFetch: COORDINATOR_LOAD_IN_PROGRESS", "OffsetFetch: COORDINATOR_LOAD_IN_PROGRESS"),
    ("not authorized: Describe on group g", "not authorized: Describe on group g"),  # already said so: kept
])
def test_a_group_error_is_shown_as_the_acl_kpulse_lacks_or_as_its_text(error, shown):
    from dashboard.services.unread import group_problem

    assert group_problem("g", error) == shown


@pytest.fixture
def groups_config(tmp_path):
    return write_setup(tmp_path, add_unread_groups)


def test_a_group_kpulse_may_not_read_is_listed_with_why_and_nothing_counted_as_zero(groups_config, monkeypatch):
    app = start(groups_config, monkeypatch, "groups")
    listed = app.dataframe[0].value.set_index("group_id")
    assert len(listed) == 12 + 3
    assert texts(listed.loc[list(UNREAD_GROUPS), "problem"]) == {
        "team-b-audit": "not authorized: Describe on group team-b-audit",
        "billing-eu": "OffsetFetch: COORDINATOR_LOAD_IN_PROGRESS",
        HOSTILE_GROUP: f"not authorized: Describe on group {HOSTILE_GROUP}"}
    assert listed["problem"].notna().sum() == 3
    unread = listed.loc[list(UNREAD_GROUPS)]
    for column in ("total_lag", "max_lag_seconds", "partitions", "members"):
        assert unread[column].isna().all(), column  # unknown, not 0
    assert any(c.value.startswith("⚠ 3 of 15 groups kpulse may not read") for c in app.caption), \
        [c.value for c in app.caption]


@pytest.mark.parametrize("worst_first", [True, False])
def test_sorting_by_lag_keeps_the_unread_groups_last(groups_config, monkeypatch, worst_first):
    app = start(groups_config, monkeypatch, "groups")
    app.selectbox(key="groups-sort").set_value("lag (offsets)").run()
    app.toggle(key="groups-desc").set_value(worst_first).run()
    assert not app.exception
    listed = app.dataframe[0].value
    assert len(listed) == 15
    assert set(listed["group_id"].iloc[-3:]) == set(UNREAD_GROUPS)
    known = list(listed["total_lag"].iloc[:-3])
    assert known == sorted(known, reverse=worst_first)


def test_the_page_of_a_group_kpulse_may_not_read_says_why_in_one_line(groups_config, monkeypatch):
    app = start(groups_config, monkeypatch, "groups", group="team-b-audit")
    assert app.selectbox(key="groups-chosen").value == "team-b-audit"
    assert [w.value for w in app.main.warning] == [
        "kpulse may not read this group: " + literal.markdown("not authorized: Describe on group team-b-audit")]
    other = start(groups_config, monkeypatch, "groups", group="billing-eu")
    assert [w.value for w in other.main.warning] == [
        "kpulse may not read this group: " + literal.markdown("OffsetFetch: COORDINATOR_LOAD_IN_PROGRESS")]
    hostile = start(groups_config, monkeypatch, "groups", group=HOSTILE_GROUP)
    assert [w.value for w in hostile.main.warning] == [
        "kpulse may not read this group: " + literal.markdown(f"not authorized: Describe on group {HOSTILE_GROUP}")]
    assert not [text for text in markdown_texts(hostile) if HOSTILE_GROUP in text]


def test_a_streams_application_kpulse_may_not_read_is_listed_and_shown_with_why(tmp_path, monkeypatch):
    config = write_setup(tmp_path, unread_streams_apps)
    app = start(config, monkeypatch, "streams", app="team-b-enricher")
    listed = app.dataframe[0].value.set_index("application_id")
    assert texts(listed["problem"])["team-b-enricher"] == "not authorized: Describe on group team-b-enricher"
    assert pd.isna(listed.loc["team-b-enricher", "members"])
    assert "kpulse may not read this application's group: " + literal.markdown(
        "not authorized: Describe on group team-b-enricher") in [w.value for w in app.main.warning]
    app.selectbox(key="streams-chosen").set_value(STREAMS_GROUP).run()
    assert "Input lag not read: " + literal.markdown(f"not authorized: Describe on group {STREAMS_GROUP}") in [
        e.value for e in app.error]
    assert {m.label: m.value for m in app.metric}["Input lag"] == "—"


def unread_share_groups(snapshot: dict) -> None:
    snapshot["share_groups"] = {"unsupported": None, "read_at": snapshot["time"], "read_seconds": 0.1, "groups": [
        {"group_id": "jobs", "state": "Stable", "members": 1, "group_epoch": 3, "assignment_epoch": 3,
         "partition_count": 1, "total_lag": 4, "total_lag_partial": False, "lag_unknown_partitions": 0,
         "status": "OK", "error": None, "member_list": [],
         "partitions": [{"topic": "jobs", "partition": 0, "start_offset": 3, "lag": 4, "status": "OK"}]},
        {"group_id": "team-b-queue", "state": None, "members": None, "group_epoch": None, "assignment_epoch": None,
         "partition_count": 0, "total_lag": None, "total_lag_partial": False, "lag_unknown_partitions": 0,
         "status": None, "error": "describe: GROUP_AUTHORIZATION_FAILED; offsets: GROUP_AUTHORIZATION_FAILED",
         "member_list": [], "partitions": []}]}


def test_a_share_group_kpulse_may_not_read_is_listed_last_by_lag_and_shown_with_why(tmp_path, monkeypatch):
    config = write_setup(tmp_path, unread_share_groups)
    app = start(config, monkeypatch, "share_groups", sharegroup="team-b-queue")
    app.selectbox(key="share-sort").set_value("lag (records not acknowledged)").run()
    listed = app.dataframe[0].value
    assert list(listed["group_id"]) == ["jobs", "team-b-queue"]
    assert texts(listed.set_index("group_id")["problem"]) == {
        "jobs": None, "team-b-queue": "not authorized: Describe on group team-b-queue"}
    assert pd.isna(listed["total_lag"].iloc[1]) and pd.isna(listed["partitions"].iloc[1])
    assert [w.value for w in app.main.warning] == [
        "kpulse may not read this group: " + literal.markdown("not authorized: Describe on group team-b-queue")]


# --- partial lag: offset lag or lag in seconds -----------------------------------------------------------

def partial_sums(snapshot: dict) -> None:
    """group-0001: only lag in seconds unknown on 2 of its 4 partitions (every offset lag known);
    group-0002: the log end of 1 partition not read (its offset lag and lag in seconds unknown)."""
    groups = {g["group_id"]: g for g in snapshot["consumer_groups"]}
    groups["group-0001"].update(lag_unknown_partitions=0, total_lag_partial=False, lag_seconds_unknown_partitions=2,
                                max_lag_seconds_partial=True)
    groups["group-0002"].update(lag_unknown_partitions=1, total_lag_partial=True, lag_seconds_unknown_partitions=1,
                                max_lag_seconds_partial=True)


def only_seconds(snapshot: dict) -> None:
    groups = {g["group_id"]: g for g in snapshot["consumer_groups"]}
    for name in ("group-0001", "group-0003"):
        groups[name].update(lag_unknown_partitions=0, total_lag_partial=False, lag_seconds_unknown_partitions=3,
                            max_lag_seconds_partial=True)


def partial_caption(app: AppTest) -> str:
    [caption] = [c.value for c in app.caption if "partial lag sums" in c.value]
    return caption


def test_the_partial_lag_caption_counts_unknown_offset_lag_and_unknown_lag_seconds_apart(tmp_path, monkeypatch):
    app = start(write_setup(tmp_path, partial_sums), monkeypatch, "groups")
    caption = partial_caption(app)
    assert caption.startswith("⚠ 2 of 12 groups have partial lag sums"), caption
    assert "offset lag unknown on 1 partition of 1 group (log end not read" in caption, caption
    assert "only lag in seconds unknown on 2 partitions of 1 group (no timestamp to interpolate from" in caption


def test_when_only_lag_seconds_are_unknown_the_caption_does_not_blame_the_log_end(tmp_path, monkeypatch):
    app = start(write_setup(tmp_path, only_seconds), monkeypatch, "groups")
    caption = partial_caption(app)
    assert caption.startswith("⚠ 2 of 12 groups have partial lag sums"), caption
    assert "only lag in seconds unknown on 6 partitions of 2 groups (no timestamp to interpolate from" in caption
    assert "log end" not in caption and "offset lag unknown" not in caption, caption


# --- sign-in ---------------------------------------------------------------------------------------------

def test_a_failed_sign_in_never_repeats_the_typed_name_and_looks_the_same_for_both_causes(tmp_path, monkeypatch):
    from operations.access import UsersFile
    from operations.audit import AuditLog

    config = write_setup(tmp_path)
    settings = yaml.safe_load(config.read_text())
    users = UsersFile(tmp_path / "users.yaml")
    users.add("ann", "operator", "ann-secret-pass-1")
    settings["dashboard"]["users_file"] = str(users.path)
    config.write_text(yaml.safe_dump(settings))
    app = start(config, monkeypatch)
    sign_in(app, "ann-Secret-pass-1", "ann-secret-pass-1")  # the password typed into the name field
    assert [e.value for e in app.error] == ["wrong user name or password"]
    assert not [text for text in markdown_texts(app) if "Secret-pass" in text]
    sign_in(app, "ann", "not-her-password")
    assert [e.value for e in app.error] == ["wrong user name or password"]
    assert not [text for text in markdown_texts(app) if "ann" in text]
    rows = AuditLog(load_config(str(config)).lake.path, Path("/nonexistent-spool")).read()
    assert list(rows["actor"]) == ["(unknown user)", "ann"]
    assert "Secret-pass" not in rows.to_json()
