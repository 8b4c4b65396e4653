"""Every table of every page is one a person reads (issue 28): under Streamlit's AppTest, without a
cluster (a fake Admin client for the Topics page), on a snapshot with something missing everywhere
(a group, a Streams application and a share group kpulse may not read, a topic whose configs are
refused, a broker down), each page's tables, list and detail, are checked by
``tests/dashboard_tables.py``: human headers, a unit where a column holds a quantity, the key
column pinned first, empty cells for missing values with the reason beside or on hover. The
operations' plan tables are checked column by column against the dashboard's catalog. The
browser's rendering of the headers: ``tests/test_dashboard_browser.py``."""

from __future__ import annotations

import pandas as pd
import pytest
from confluent_kafka import KafkaError
from streamlit.testing.v1 import AppTest

from dashboard.services import plans
from dashboard.services.columns import Column, table
from dashboard.services.sources import Sources
from kpulse.config import load_config
from operations.registry import OPERATIONS
from tests.dashboard_lake import STREAMS_GROUP
from tests.dashboard_share import share_section
from tests.dashboard_tables import page_problems, shown_columns, table_problems
from tests.dashboard_unread import (FakeAdmin, FakeLogDirs, add_unread_groups, kafka_error, start,
                                                    unread_streams_apps, write_setup)
from tests.plan_samples import SAMPLE_PLANS

REFUSED_TOPIC = "team_b.audit"
IDLE = ("group-0004", "group-0009")
"""Groups the snapshot has firing ConsumerGroupStatus: an alert group of two entities."""


def something_missing_everywhere(snapshot: dict) -> None:
    add_unread_groups(snapshot)
    unread_streams_apps(snapshot)
    snapshot["share_groups"] = share_section()
    first = snapshot["consumer_groups"][0]
    for partition in first["partitions"]:
        partition["topic"] = "orders"  # a group consuming a topic the fake Admin client knows
    first["partitions"][0].update(lag=None, lag_seconds=None, log_end_offset=None,
                                  reasons={"log_end_offset": "broker 3 is down"})
    first.update(type="consumer", member_details=[
        {"member_id": "m-a", "client_id": "c", "client_host": "h", "instance_id": None, "member_epoch": 7,
         "process_id": None, "assignment": {"orders": [0]}, "target_assignment": {"orders": [0]},
         "reconciling": False}])
    snapshot["alerts"] += [{"rule": "ConsumerGroupStatus", "severity": "warning", "entity": f"group/{group}",
                            "value": 3.0, "summary": f"consumer group {group} is STOP", "since": snapshot["time"] - 60,
                            "runbook": "ConsumerGroupStatus"} for group in IDLE]


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    return write_setup(tmp_path_factory.mktemp("tables"), something_missing_everywhere)


def app_on(config, monkeypatch, page: str, **query) -> AppTest:
    sources = Sources(load_config(str(config)), admin_factory=lambda client_config: FakeAdmin(
        {REFUSED_TOPIC: kafka_error(KafkaError.TOPIC_AUTHORIZATION_FAILED)}),
        log_dirs_factory=lambda cluster: FakeLogDirs())
    return start(config, monkeypatch, page, sources, **query)


PAGES = [  # (page, query, the number of tables it shows, a widget to set and its value)
    ("brokers", {}, 3, None),
    ("topics", {"topic": "orders"}, 5, None),  # list, partitions, problem partitions, consumers, configs
    ("topics", {"topic": REFUSED_TOPIC}, 2, None),  # list, partitions: no configs
    ("groups", {"group": "group-0000"}, 3, None),  # list, partitions, members
    ("streams", {}, 3, None),  # apps, instances, recent transitions
    ("streams", {}, 5, ("streams-chosen", STREAMS_GROUP)),  # apps, members, subtopologies, input lag, transitions
    ("share_groups", {"sharegroup": "share-000"}, 3, None),  # list, members, partitions
    ("slos", {}, 1, None),
    ("alerts", {"rule": "ConsumerGroupStatus"}, 2, None),  # groups, the group's entities
    ("operations", {}, 1, None),  # the audit log
]


@pytest.mark.parametrize("page, query, tables, widget", PAGES,
                         ids=[f"{p}-{'-'.join(q.values()) or (w[1] if w else '')}" for p, q, _, w in PAGES])
def test_every_table_has_human_headers_with_units_its_key_pinned_first_and_empty_cells(
        config, monkeypatch, page, query, tables, widget):
    app = app_on(config, monkeypatch, page, **query)
    if widget:
        app.selectbox(key=widget[0]).set_value(widget[1]).run()
        assert not app.exception
    assert len(app.dataframe) == tables, [[c.header for c in shown_columns(d)] for d in app.dataframe]
    assert page_problems(app, page) == []


def test_the_headers_read_as_the_issue_asks(config, monkeypatch):
    """The group list's lag, threshold and total lag, the topic list's min ISR and size, the broker
    table's rates and latencies: under their names with their units, the group pinned at the left."""
    def headers(app: AppTest, number: int) -> list[str]:
        return [column.header for column in shown_columns(app.dataframe[number])]

    groups = app_on(config, monkeypatch, "groups")
    assert headers(groups, 0)[:5] == ["Group", "Status", "Lag (s)", "Threshold (s)", "Total lag (records)"]
    assert [c.pinned for c in shown_columns(groups.dataframe[0])][:2] == [True, False]
    assert {"Min ISR", "Size (bytes)", "Why configs not read"} <= set(headers(app_on(config, monkeypatch, "topics"), 0))
    assert {"Bytes in (B/s)", "Produce p99 (ms)", "Request handler idle (%)"} <= set(
        headers(app_on(config, monkeypatch, "brokers"), 0))
    slos = headers(app_on(config, monkeypatch, "slos"), 0)
    assert "Budgeting method" in slos and "budgeting_method" not in slos and slos[:2] == ["SLO", "Entity"]


def test_a_missing_value_is_an_empty_cell_with_its_reason_beside_it(config, monkeypatch):
    app = app_on(config, monkeypatch, "topics")
    [listed] = [d for d in app.dataframe if "min_isr" in d.value.columns]
    assert listed.proto.HasField("placeholder") and listed.proto.placeholder == ""  # an empty cell, not "None"
    rows = listed.value.set_index("topic")
    assert pd.isna(rows.loc[REFUSED_TOPIC, "min_isr"])
    assert rows.loc[REFUSED_TOPIC, "configs_problem"] == f"not authorized: DescribeConfigs on topic {REFUSED_TOPIC}"


@pytest.mark.parametrize("entry", OPERATIONS, ids=lambda e: e.name)
def test_every_column_of_every_operation_plan_has_its_header(entry):
    for title, frame in entry.tables(SAMPLE_PLANS[entry.plan_type]).items():
        assert set(frame.columns) <= set(plans.PLAN_COLUMNS), (title, set(frame.columns) - set(plans.PLAN_COLUMNS))
        assert plans.plan_columns(frame)[0].key, title


def test_the_check_finds_every_flaw_it_looks_for():
    """A table drawn without the helper, and one with a unit-less quantity and an unpinned key:
    each flaw is named (the check can fail)."""
    def raw() -> None:
        import pandas as pd
        import streamlit as st

        st.dataframe(pd.DataFrame({"group_id": ["g"], "lag_seconds_threshold": [60.5], "why_null": [None]}),
                     hide_index=True)

    def half_done() -> None:
        import pandas as pd

        from dashboard import components
        from dashboard.services.columns import Column, table

        components.table(pd.DataFrame({"group": ["g"], "lag": [1.5], "state": [None]}),
                         table(Column("group", "Group"), Column("lag", "Lag"), Column("state", "State")))

    problems = table_problems(AppTest.from_function(raw).run().dataframe[0])
    assert problems == ["a missing value is not an empty cell (the placeholder is not '')", "no key column is pinned",
                        "'group_id' is headed 'group_id', a code name",
                        "'lag_seconds_threshold' is headed 'lag_seconds_threshold', a code name",
                        "'lag_seconds_threshold' holds a quantity but its header 'lag_seconds_threshold' has no unit",
                        "'why_null' is headed 'why_null', a code name",
                        "'why_null' has empty cells but neither its help nor a reason column says why"]
    assert table_problems(AppTest.from_function(half_done).run().dataframe[0]) == [
        "no key column is pinned", "'lag' holds a quantity but its header 'Lag' has no unit",
        "'State' has empty cells but neither its help nor a reason column says why"]


def test_a_table_spec_puts_its_key_columns_first_and_names_each_column_once():
    columns = table(Column("topic", "Topic", key=True), Column("lag", "Lag", "s"))
    assert [column.label for column in columns] == ["Topic", "Lag (s)"]
    with pytest.raises(ValueError, match="key columns must come first"):
        table(Column("lag", "Lag", "s"), Column("topic", "Topic", key=True))
    with pytest.raises(ValueError, match="used twice"):
        table(Column("lag", "Lag", "s"), Column("lag_seconds", "Lag", "s"))
