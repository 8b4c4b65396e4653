"""The Share groups page under Streamlit's AppTest, on a lake written with the real LakeWriter and
a snapshot as ``kpulse collect`` publishes it (tests/dashboard_lake.py, plus a share_groups section
and share_group rows written here): no exception, list searched, sorted and paged on the server,
detail with members, assignments, per-partition start offset and lag and the lag history; hostile
Kafka-supplied names shown only as text. The page on a real cluster: tests/test_share_groups.py."""

from __future__ import annotations

import json
import os
import time

import pytest
import yaml
from streamlit.testing.v1 import AppTest

from kpulse.lake.store import SNAPSHOT_DIR, LakeWriter
from tests.dashboard_lake import CLUSTER, CYCLE_SECONDS, write_lake
from tests.dashboard_share import (HOSTILE_CLIENT, HOSTILE_GROUP, HOSTILE_TOPIC, share_group_name,
                                    share_section)
from tests.support import APP_FILE, open_page


def write_share_lake(path: str, now: float, section: dict | None, history_cycles: int = 30) -> None:
    """``write_lake`` with ``section`` as the snapshot's share groups and ``history_cycles`` share_group rows
    per group, the lag rising to the snapshot's."""
    write_lake(path, now, groups=3, history_cycles=history_cycles)
    snapshot_file = os.path.join(path, SNAPSHOT_DIR, f"{CLUSTER}.json")
    with open(snapshot_file) as file:
        snapshot = json.load(file)
    snapshot["share_groups"] = section
    with open(snapshot_file, "w") as file:
        json.dump(snapshot, file)
    writer = LakeWriter(path, clock=lambda: now)
    times = [snapshot["time"] - CYCLE_SECONDS * i for i in range(history_cycles)][::-1]
    writer.append("share_group", [
        {"time": t, "cluster": CLUSTER, "group_id": g["group_id"], "state": g["state"], "members": g["members"],
         "group_epoch": g["group_epoch"], "assignment_epoch": g["assignment_epoch"], "partitions": g["partition_count"],
         "total_lag": g["total_lag"] * (j + 1) // history_cycles, "lag_unknown_partitions": g["lag_unknown_partitions"],
         "status": g["status"], "error": None}
        for j, t in enumerate(times) for g in (section or {}).get("groups", [])])
    assert writer.flush().ok


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    directory = tmp_path_factory.mktemp("share-dashboard")
    write_share_lake(str(directory / "lake"), time.time(), share_section())
    return write_config(directory)


def write_config(directory) -> str:
    config = {"clusters": [{"name": CLUSTER, "bootstrap_servers": "127.0.0.1:9"}],
              "lake": {"path": str(directory / "lake")}, "intervals": {"collect_seconds": 600}}
    (directory / "kpulse.yaml").write_text(yaml.safe_dump(config))
    return str(directory / "kpulse.yaml")


def start(config: str, monkeypatch, **query) -> AppTest:
    monkeypatch.setenv("KPULSE_CONFIG", config)
    monkeypatch.delenv("KPULSE_DASHBOARD_AUTH", raising=False)
    app = AppTest.from_file(str(APP_FILE), default_timeout=60)
    for key, value in query.items():
        app.query_params[key] = value
    app.run()
    return open_page(app, "share_groups")


def test_the_list_pages_searches_and_sorts_on_the_server(config, monkeypatch):
    app = start(config, monkeypatch)
    table = app.dataframe[0].value
    assert len(table) == 50  # one page of the 61 groups
    assert any("61 of 61 share groups match · page 1 of 2" in c.value for c in app.caption)
    assert table["status"].iloc[0] == "NOT_CONSUMING"  # worst status first
    app.number_input(key="share-page").set_value(2).run()
    assert len(app.dataframe[0].value) == 11
    app.text_input(key="share-search").input("share-01").run()
    searched = app.dataframe[0].value
    assert sorted(searched["group_id"]) == [share_group_name(i) for i in range(10, 20)]
    assert app.number_input(key="share-page").value == 1  # a narrower search: back to its last page
    app.selectbox(key="share-sort").set_value("lag (records not acknowledged)").run()
    by_lag = app.dataframe[0].value
    assert list(by_lag["group_id"][:2]) == [share_group_name(19), share_group_name(18)]
    assert not app.exception


def test_the_detail_shows_members_assignments_partitions_and_the_lag_history(config, monkeypatch):
    app = start(config, monkeypatch, sharegroup=share_group_name(13))
    assert app.selectbox(key="share-chosen").value == share_group_name(13)
    metrics = {m.label: m.value for m in app.metric}
    assert metrics == {"State": "Stable", "Members": "2", "Lag (records)": f"{3 * 13 + 3:,}", "Status": "STALLED"}
    members = app.dataframe[1].value
    assert list(members["member_id"]) == ["m-13-1", "m-13-2"] and list(members["assignment"]) == ["jobs:0,2",
                                                                                                  "jobs:1,3"]
    partitions = app.dataframe[2].value
    assert list(partitions["start_offset"]) == [0, 100, 200] and list(partitions["lag"]) == [13, 14, 15]
    assert len(app.get("plotly_chart")) == 1
    # the share group's own operations, and only those (no consumer-group offset reset)
    choice = app.radio(key=f"op-group-{CLUSTER}-{share_group_name(13)}-choice")
    assert set(choice.options) <= {"reset-share-group", "delete-offsets", "delete-group"}
    assert "reset-share-group" in choice.options


def test_a_link_to_an_unknown_share_group_says_so_and_shows_the_list(config, monkeypatch):
    app = start(config, monkeypatch, sharegroup="no-such-group")
    assert any("'no-such-group' is not in the latest snapshot" in w.value for w in app.warning)
    assert len(app.dataframe[0].value) == 50


def markdown_texts(app: AppTest) -> list[str]:
    """What the page renders as Markdown: bodies, captions, headings, alerts, metric and widget labels."""
    texts = [e.value for kind in ("markdown", "caption", "title", "header", "subheader", "warning", "error", "info",
                                  "success") for e in getattr(app, kind)]
    return texts + [e.label for e in (*app.metric, *app.selectbox, *app.text_input, *app.number_input)]


def test_hostile_names_are_shown_only_as_text(config, monkeypatch):
    app = start(config, monkeypatch, sharegroup=HOSTILE_GROUP)
    assert app.selectbox(key="share-chosen").value == HOSTILE_GROUP
    assert [name for name in (HOSTILE_GROUP, HOSTILE_TOPIC, HOSTILE_CLIENT)
            if any(name in text for text in markdown_texts(app))] == []
    assert HOSTILE_CLIENT in set(app.dataframe[1].value["client_id"])  # the table holds it as text
    assert list(app.dataframe[2].value["topic"]) == [HOSTILE_TOPIC, HOSTILE_TOPIC]
    assert any("total lag over 1 of 2 partitions" in c.value for c in app.caption)
    unknown = start(config, monkeypatch, sharegroup=HOSTILE_GROUP + "?")
    assert unknown.warning and not any(HOSTILE_GROUP in text for text in markdown_texts(unknown))


@pytest.mark.parametrize("section, shown", [
    ({"groups": [], "unsupported": "the brokers do not speak ShareGroupDescribe: share groups do not exist here"},
     "No share groups on this cluster"),
    (None, "Share groups were not collected in the latest cycle"),
])
def test_a_cluster_without_share_groups_says_why(tmp_path, monkeypatch, section, shown):
    write_share_lake(str(tmp_path / "lake"), time.time(), section, history_cycles=2)
    app = start(write_config(tmp_path), monkeypatch)
    assert any(shown in e.value for e in (*app.info, *app.warning))
    assert len(app.dataframe[0].value) == 0 and not app.exception


def test_a_reading_older_than_the_snapshot_says_when_it_was_read_and_how_long_the_brokers_took(tmp_path, monkeypatch):
    now = time.time()
    section = {**share_section(), "read_at": now - 2 - 40, "read_seconds": 38.5}  # the snapshot is 2 s old
    write_share_lake(str(tmp_path / "lake"), now, section, history_cycles=2)
    app = start(write_config(tmp_path), monkeypatch)
    shown = [c.value for c in app.caption if "brokers took" in c.value]
    assert shown and "40 s before this cycle" in shown[0] and "38.5 s" in shown[0], [c.value for c in app.caption]
    assert not app.exception
