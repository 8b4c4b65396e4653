"""Every dashboard page under Streamlit's AppTest, against a lake written with the real LakeWriter
(tests/dashboard_lake.py): no exception, the key widgets present, the numbers equal the fixture's.
The cluster in the config does not answer, so Admin API parts must show one error line, not a
traceback. The Topics page on a real cluster is in test_dashboard_browser.py."""

from __future__ import annotations

import time

import pytest
import yaml
from streamlit.testing.v1 import AppTest

from dashboard.services.acks import AckStore
from tests.dashboard_lake import APP, CLUSTER, STREAMS_GROUP, write_lake
from tests.support import APP_FILE, open_page
from datetime import UTC

@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    directory = tmp_path_factory.mktemp("dashboard")
    expected = write_lake(str(directory / "lake"), time.time())
    config = {"clusters": [{"name": CLUSTER, "bootstrap_servers": "127.0.0.1:9"}],
              "lake": {"path": str(directory / "lake")},
              "intervals": {"collect_seconds": 600}}  # fresh for the whole module (stale after 2 intervals)
    (directory / "kpulse.yaml").write_text(yaml.safe_dump(config))
    return directory, expected


@pytest.fixture
def app(lake, monkeypatch):
    directory, _ = lake
    monkeypatch.setenv("KPULSE_CONFIG", str(directory / "kpulse.yaml"))
    test = AppTest.from_file(str(APP_FILE), default_timeout=60)
    test.run()
    return test


def tile_values(app: AppTest) -> dict[str, tuple[str, str]]:
    """Tile label -> (value, level) read back from the tiles' HTML."""
    import re

    tiles = {}
    for block in app.markdown:
        match = re.search(r"title='(\w+)'><div class='kp-label'>([^<]+)</div><div class='kp-value'>([^<]+)</div>",
                          block.value)
        if match:
            tiles[match.group(2)] = (match.group(3), match.group(1))
    return tiles


def test_overview_tiles_show_the_fixture_numbers_coloured_by_the_thresholds(app, lake):
    _, expected = lake
    assert not app.exception
    tiles = tile_values(app)
    assert tiles["Brokers up"] == (f"{expected.brokers_up} / {expected.brokers_total}", "critical")
    assert tiles["Controller"] == ("OK (node 1)", "ok")
    assert tiles["Under-replicated"] == (str(expected.under_replicated), "warning")
    assert tiles["Offline"] == (str(expected.offline), "critical")
    assert tiles["Under min ISR"] == (str(expected.under_min_isr), "critical")
    assert tiles["Lowest handler idle"] == ("15%", "warning")  # broker 2 at 0.15; broker 3 is down
    assert tiles["Bytes in"] == ("3.0 kB/s", "info")  # 1000 + 2000 B/s
    assert tiles["Firing alerts"] == ("2 critical · 2 warning", "critical")
    assert tiles["SLOs at risk"] == ("2 of 3", "critical")
    assert any("data " in c.value and " old" in c.value for c in app.caption)
    assert not app.error


def test_brokers_page_table_and_balance(app):
    open_page(app, "brokers")
    table = app.dataframe[0].value
    assert list(table["broker"]) == [1, 2, 3]
    assert list(table["partitions"]) == [40, 38, 12]
    assert list(table["under_replicated"].fillna(-1)) == [3, 2, -1]
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Partition skew (busiest vs mean)"] == f"{40 / (90 / 3) - 1:.0%}"
    assert metrics["Leader skew (busiest vs mean)"] == f"{20 / (36 / 3) - 1:.0%}"
    assert len(app.get("plotly_chart")) == 6  # 5, and the KRaft quorum's lag per voter
    assert any(t.value.startswith("kpulse reassign") for t in app.text)


def test_brokers_page_shows_the_kraft_quorum_controller_figures_and_elr_of_problem_partitions(app):
    open_page(app, "brokers")
    assert not app.exception
    assert [h.value for h in app.subheader][:2] == ["KRaft quorum", "Problem partitions"]
    metrics = {m.label: m.value for m in app.metric}
    assert {k: metrics[k] for k in ("Quorum leader", "Leader epoch", "High watermark", "Fenced brokers",
                                    "Active brokers", "Metadata errors")} == {
        "Quorum leader": "1", "Leader epoch": "5", "High watermark": "1,200", "Fenced brokers": "1",
        "Active brokers": "2", "Metadata errors": "0"}
    quorum = next(d.value for d in app.dataframe if "role" in d.value.columns)
    assert list(quorum["node"]) == [1, 2, 3] and list(quorum["role"]) == ["leader", "follower", "follower"]
    assert list(quorum["lag"]) == [0, 1, 500] and list(quorum["caught_up_age_seconds"]) == [0.0, 0.5, 95.0]
    problems = next(d.value for d in app.dataframe if "elr" in d.value.columns)
    assert problems.to_dict("records") == [{"topic": "orders", "partition": 2, "problems": "under_min_isr, "
                                            "under_replicated", "leader": 1, "replicas": "1, 2, 3", "isr": "1",
                                            "elr": "2", "last_known_elr": ""}]


def test_brokers_table_shows_byte_rates_and_latencies_with_their_units(app):
    """Not raw floats such as 3926.1377 (issue 17): byte rates in bytes (KB, MB) per second,
    latencies in ms with one decimal, idle ratios in percent; the unit in the header (issue 28)."""
    import json

    open_page(app, "brokers")
    columns = json.loads(app.dataframe[0].proto.columns)
    formats = {name: columns.get(name, {}).get("type_config", {}).get("format") for name in
               ("bytes_in_per_sec", "bytes_out_per_sec", "produce_p99_ms", "fetch_p99_ms", "request_handler_idle")}
    assert formats == {"bytes_in_per_sec": "bytes", "bytes_out_per_sec": "bytes", "produce_p99_ms": "%.1f",
                       "fetch_p99_ms": "%.1f", "request_handler_idle": "percent"}
    labels = {name: columns[name]["label"] for name in ("bytes_in_per_sec", "produce_p99_ms", "fetch_p99_ms",
                                                        "request_handler_idle")}
    assert labels == {"bytes_in_per_sec": "Bytes in (B/s)", "produce_p99_ms": "Produce p99 (ms)",
                      "fetch_p99_ms": "Fetch p99 (ms)", "request_handler_idle": "Request handler idle (%)"}
    # and the byte-rate charts' axes: SI-prefixed bytes per second (3.9kB/s), not bare numbers
    charts = {json.loads(chart.proto.spec)["layout"]["title"]["text"]: json.loads(chart.proto.spec)["layout"]
              for chart in app.get("plotly_chart")}
    for title in ("Bytes in per second", "Bytes out per second"):
        assert charts[title]["yaxis"].get("ticksuffix") == "B/s", title


def test_groups_page_pages_searches_and_sorts_on_the_server(app, lake):
    _, expected = lake
    open_page(app, "groups")
    table = app.dataframe[0].value
    assert len(table) == len(expected.groups)
    assert table["group_id"].iloc[0] == expected.worst_group  # worst lag seconds first
    assert app.selectbox(key="groups-chosen").value == expected.worst_group
    detail = app.dataframe[1].value
    assert int(detail["lag"].sum()) == expected.worst_group_lag
    app.text_input(key="groups-search").input("group-000").run()
    searched = app.dataframe[0].value
    assert sorted(searched["group_id"]) == [g for g in expected.groups if "group-000" in g]
    app.selectbox(key="groups-sort").set_value("status").run()
    by_status = app.dataframe[0].value
    assert by_status["status"].iloc[0] == "STOP"
    assert any("of 12 groups match" in c.value for c in app.caption)


def test_group_detail_opens_from_a_link_with_its_lag_history(lake, monkeypatch):
    directory, expected = lake
    monkeypatch.setenv("KPULSE_CONFIG", str(directory / "kpulse.yaml"))
    test = AppTest.from_file(str(APP_FILE), default_timeout=60)
    test.run()
    test.query_params["group"] = expected.groups[3]
    open_page(test, "groups")
    assert test.selectbox(key="groups-chosen").value == expected.groups[3]
    charts = test.get("plotly_chart")
    assert len(charts) == 2  # lag in offsets and in seconds


def test_streams_page_shows_instances_and_the_rebalance(app):
    open_page(app, "streams")
    apps = app.dataframe[0].value
    assert list(zip(apps["application_id"], apps["protocol"])) == [(APP, "classic"), (STREAMS_GROUP, "streams")]
    instances = app.dataframe[1].value
    assert list(instances["state"]) == ["RUNNING", "RUNNING"]
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Rebalances (recent transitions)"] == "1"
    assert metrics["REBALANCING in this window"] == "120 s"  # two instances, 60 s each
    # the cluster does not answer: internal topics show one line, the rest of the page stands
    assert [e.value for e in app.error] and all("internal topics" in e.value for e in app.error)


def test_streams_page_shows_a_streams_group_with_its_members_tasks_and_input_lag(app):
    open_page(app, "streams")
    app.selectbox(key="streams-chosen").set_value(STREAMS_GROUP).run()
    assert not app.exception
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Group state"] == "Reconciling"
    assert metrics["Group / target assignment epoch"] == "8 / 8"
    assert metrics["Members (reconciling)"] == "2 (1)"
    assert metrics["Input lag"] == "12"
    # apps, members, subtopologies, input lag, recent transitions: no instances table (no metrics endpoints)
    assert len(app.dataframe) == 5
    members = app.dataframe[1].value
    # the reconciling member first, its target tasks beside its (empty) current ones
    assert list(zip(members["member_id"], members["reconciling"], members["active"], members["target_active"])) == [
        ("m-2", True, "", "0:[1]"), ("m-1", False, "0:[0]; 1:[0,1]", "0:[0]; 1:[0,1]")]
    subtopologies = app.dataframe[2].value
    assert list(subtopologies["changelog_topics"]) == ["", "orders-streams-counts-changelog"]
    lag = app.dataframe[3].value
    assert list(lag["lag"]) == [7, 0, 5]
    transitions = app.dataframe[4].value
    assert list(zip(transitions["instance"], transitions["from"], transitions["to"])) == [
        ("(group)", "Stable", "Reconciling")]
    assert any("protocol streams" in c.value for c in app.caption)
    # a Streams group is reset as kafka-streams-groups does, not as a classic application
    [choice] = [r for r in app.radio if r.key == f"op-streams-{CLUSTER}-{STREAMS_GROUP}-choice"] or [None]
    offered = choice.options if choice is not None else [c.value for c in app.text]
    assert "reset-streams-app" not in " ".join(offered) and "reset-streams-group" in " ".join(offered)


def test_slos_page_lists_every_slo_paging_first_with_a_burn_down(app, lake):
    _, expected = lake
    open_page(app, "slos")
    table = app.dataframe[0].value
    assert len(table) == expected.slo_rows
    assert table["slo"].iloc[0] == expected.slo_page and table["alert"].iloc[0] == "page"
    assert table["error_budget_remaining"].iloc[0] == pytest.approx(expected.slo_page_budget)
    # the fixture's 54 bad minutes of the 43.2 a 30-day 0.999 window allows, in words too
    assert (table["budget"].iloc[0], table["budget_status"].iloc[0]) == (
        "10.8 bad minutes over the 43.2 allowed", "exhausted")
    assert any("10.8 bad minutes over the 43.2 allowed" in c.value for c in app.caption)
    metrics = {m.label: m.value for m in app.metric}
    assert (metrics["SLOs evaluated"], metrics["Paging"], metrics["Ticket"]) == ("3", "1", "1")
    assert len(app.get("plotly_chart")) == 1


def test_alerts_page_triage_order_runbook_and_acknowledgement_persisted(app, lake):
    directory, expected = lake
    open_page(app, "alerts")
    table = app.dataframe[0].value  # one row per rule: each rule here fires for one entity, named in the row
    assert list(zip(table["rule"], table["severity"], table["affected"])) == expected.firing
    assert list(table["entities"]) == [1] * len(expected.firing)
    chosen = app.selectbox(key="alerts-chosen")
    assert chosen.value == "OfflinePartitions · cluster/test"
    assert "What it means" in app.get("code")[0].value
    assert len(app.get("plotly_chart")) == 1
    app.text_input(key="alerts-ack-who").input("alice")
    app.radio(key="alerts-ack-kind").set_value("silence")
    app.number_input(key="alerts-ack-hours").set_value(2.0)
    submit = [b for b in app.button if b.label == "Save"][0]
    submit.click().run()
    assert not app.exception
    saved = AckStore(str(directory / "lake")).load()
    assert [(a.rule, a.entity, a.kind, a.by) for a in saved] == [("OfflinePartitions", "cluster/test", "silence",
                                                                 "alice")]
    assert saved[0].until == pytest.approx(time.time() + 7200, abs=120)
    remaining = app.dataframe[0].value
    assert "OfflinePartitions" not in set(remaining["rule"])  # silenced alerts are hidden
    app.toggle(key="alerts-show-silenced").set_value(True).run()
    shown = app.dataframe[0].value
    assert shown.loc[shown["rule"] == "OfflinePartitions", "ack_by"].iloc[0] == "alice"


def test_an_acknowledgement_without_a_name_is_refused_with_one_line(app, lake):
    directory, _ = lake
    open_page(app, "alerts")
    before = AckStore(str(directory / "lake")).load()
    app.text_input(key="alerts-ack-who").input("  ")
    [b for b in app.button if b.label == "Save"][0].click().run()
    assert not app.exception
    assert any("say who you are" in e.value for e in app.error)
    assert AckStore(str(directory / "lake")).load() == before


def test_topics_page_with_an_unreachable_cluster_shows_one_error_line(app):
    open_page(app, "topics")
    errors = [e.value for e in app.error]
    assert len(errors) == 1 and "cannot list topics" in errors[0] and "\n" not in errors[0]


def test_stale_data_gets_a_loud_banner(tmp_path, monkeypatch):
    write_lake(str(tmp_path / "lake"), time.time() - 3600, history_cycles=5)
    config = {"clusters": [{"name": CLUSTER, "bootstrap_servers": "127.0.0.1:9"}], "lake": {"path": str(tmp_path / "lake")},
              "intervals": {"collect_seconds": 10}}
    (tmp_path / "kpulse.yaml").write_text(yaml.safe_dump(config))
    monkeypatch.setenv("KPULSE_CONFIG", str(tmp_path / "kpulse.yaml"))
    test = AppTest.from_file(str(APP_FILE), default_timeout=60).run()
    assert not test.exception
    assert any(e.value.startswith("STALE: the newest sample is 60 min old") for e in test.error)


def test_a_corrupt_snapshot_is_one_error_line_on_every_page(tmp_path, monkeypatch):
    write_lake(str(tmp_path / "lake"), time.time(), history_cycles=3)
    (tmp_path / "lake" / "_snapshots" / f"{CLUSTER}.json").write_text("{not json")
    config = {"clusters": [{"name": CLUSTER, "bootstrap_servers": "127.0.0.1:9"}], "lake": {"path": str(tmp_path / "lake")}}
    (tmp_path / "kpulse.yaml").write_text(yaml.safe_dump(config))
    monkeypatch.setenv("KPULSE_CONFIG", str(tmp_path / "kpulse.yaml"))
    test = AppTest.from_file(str(APP_FILE), default_timeout=60).run()
    for page in ("overview", "brokers", "groups", "streams", "alerts"):
        open_page(test, page)
        assert any("is not valid JSON" in e.value for e in test.error), page


def test_a_link_to_an_unknown_group_says_so_and_shows_the_list(lake, monkeypatch):
    directory, expected = lake
    monkeypatch.setenv("KPULSE_CONFIG", str(directory / "kpulse.yaml"))
    test = AppTest.from_file(str(APP_FILE), default_timeout=60).run()
    test.query_params["group"] = "no-such-group"
    open_page(test, "groups")
    assert any("'no-such-group' is not in the latest snapshot" in w.value for w in test.warning)
    assert len(test.dataframe[0].value) == len(expected.groups)


def test_narrowing_the_search_on_a_later_page_moves_back_to_the_last_page(tmp_path, monkeypatch):
    write_lake(str(tmp_path / "lake"), time.time(), groups=120, partitions_per_group=1, history_cycles=2)
    config = {"clusters": [{"name": CLUSTER, "bootstrap_servers": "127.0.0.1:9"}], "lake": {"path": str(tmp_path / "lake")},
              "intervals": {"collect_seconds": 600}}
    (tmp_path / "kpulse.yaml").write_text(yaml.safe_dump(config))
    monkeypatch.setenv("KPULSE_CONFIG", str(tmp_path / "kpulse.yaml"))
    test = AppTest.from_file(str(APP_FILE), default_timeout=60).run()
    open_page(test, "groups")
    assert len(test.dataframe[0].value) == 50
    test.number_input(key="groups-page").set_value(3).run()
    assert len(test.dataframe[0].value) == 20  # 120 groups: 50 + 50 + 20
    test.text_input(key="groups-search").input("group-00").run()  # group-0000 .. group-0099: 2 pages
    assert not test.exception
    assert test.number_input(key="groups-page").value == 2
    assert len(test.dataframe[0].value) == 50


def test_an_unreadable_lake_file_is_a_warning_naming_the_file_count_and_the_day(tmp_path, monkeypatch):
    from datetime import datetime

    now = time.time()
    write_lake(str(tmp_path / "lake"), now, history_cycles=5)
    day = datetime.fromtimestamp(now - 2, UTC).date().isoformat()
    (tmp_path / "lake" / "cluster_health" / f"date={day}" / "part-20270115T080000Z-0badf11e.parquet").write_bytes(
        b"PAR1 truncated")
    config = {"clusters": [{"name": CLUSTER, "bootstrap_servers": "127.0.0.1:9"}], "lake": {"path": str(tmp_path / "lake")},
              "intervals": {"collect_seconds": 600}}
    (tmp_path / "kpulse.yaml").write_text(yaml.safe_dump(config))
    monkeypatch.setenv("KPULSE_CONFIG", str(tmp_path / "kpulse.yaml"))
    test = AppTest.from_file(str(APP_FILE), default_timeout=60).run()
    assert not test.exception, [e.value for e in test.exception]
    warnings = [w.value for w in test.warning if "unreadable lake file" in w.value]
    assert len(warnings) == 1 and f"1 unreadable lake file(s) skipped: cluster_health rows of {day} (UTC)" in warnings[0]
    assert any("0badf11e.parquet: " in text.value for text in test.text)  # the file, as plain text
    open_page(test, "brokers")  # pages that read only good files say nothing
    assert not [w.value for w in test.warning if "unreadable lake file" in w.value]


def test_a_kip848_group_detail_lists_its_members_with_the_reconciling_one_first(lake, monkeypatch, tmp_path):
    import json
    import os

    from kpulse.lake.store import SNAPSHOT_DIR

    directory, expected = lake
    lake_path = str(tmp_path / "lake")
    write_lake(lake_path, time.time())
    snapshot_file = os.path.join(lake_path, SNAPSHOT_DIR, f"{CLUSTER}.json")
    with open(snapshot_file) as f:
        snapshot = json.load(f)
    group = next(g for g in snapshot["consumer_groups"] if g["group_id"] == expected.worst_group)
    group.update(type="consumer", state="Reconciling", members=2, group_epoch=7, assignment_epoch=7,
                 reconciling_members=1, member_details=[
                     {"member_id": "m-a", "client_id": "c", "client_host": "h", "instance_id": None, "member_epoch": 7,
                      "process_id": None, "assignment": {"t": [0]}, "target_assignment": {"t": [0]},
                      "reconciling": False},
                     {"member_id": "**m-b**", "client_id": "c", "client_host": "h", "instance_id": None,
                      "member_epoch": 6, "process_id": None, "assignment": {}, "target_assignment": {"t": [1]},
                      "reconciling": True}])
    with open(snapshot_file, "w") as f:
        json.dump(snapshot, f)
    config = yaml.safe_load((directory / "kpulse.yaml").read_text())
    config["lake"]["path"] = lake_path
    (tmp_path / "kpulse.yaml").write_text(yaml.safe_dump(config))
    monkeypatch.setenv("KPULSE_CONFIG", str(tmp_path / "kpulse.yaml"))
    test = AppTest.from_file(str(APP_FILE), default_timeout=60)
    test.run()
    open_page(test, "groups")
    assert test.selectbox(key="groups-chosen").value == expected.worst_group
    assert test.dataframe[0].value.set_index("group_id").loc[expected.worst_group, "type"] == "consumer"
    members = test.dataframe[2].value
    assert list(members["member_id"]) == ["**m-b**", "m-a"]  # as text, reconciling first
    assert list(members["target_assignment"]) == ["t:1", "t:0"]
    assert any("1 of 2 members reconciling" in c.value for c in test.caption)
    assert not test.exception


def test_thousands_of_slos_are_searched_and_paged_on_the_server(tmp_path, monkeypatch):
    expected = write_lake(str(tmp_path / "lake"), time.time(), groups=120, partitions_per_group=1, history_cycles=2,
                          slo_for_every_group=True)
    config = {"clusters": [{"name": CLUSTER, "bootstrap_servers": "127.0.0.1:9"}], "lake": {"path": str(tmp_path / "lake")},
              "intervals": {"collect_seconds": 600}}
    (tmp_path / "kpulse.yaml").write_text(yaml.safe_dump(config))
    monkeypatch.setenv("KPULSE_CONFIG", str(tmp_path / "kpulse.yaml"))
    test = AppTest.from_file(str(APP_FILE), default_timeout=60).run()
    open_page(test, "slos")
    assert not test.exception
    table = test.dataframe[0].value
    assert len(table) == 50  # a page, not all 122
    assert table["slo"].iloc[0] == expected.slo_page and table["alert"].iloc[0] == "page"  # triage order kept
    assert any(f"{expected.slo_rows} of {expected.slo_rows} SLOs match" in c.value for c in test.caption)
    assert {m.label: m.value for m in test.metric}["SLOs evaluated"] == str(expected.slo_rows)
    test.text_input(key="slos-search").input(expected.groups[7]).run()
    assert list(test.dataframe[0].value["entity"]) == [expected.groups[7]]
    assert test.selectbox(key="slos-chosen").value == f"consumer-freshness · {expected.groups[7]}"
    assert len(test.get("plotly_chart")) == 1  # its burn-down


def test_no_page_renders_a_stray_string_of_its_source():
    """Streamlit's magic writes every bare string at a page's module level to the page, docstrings
    of attributes included ("Session-state key of the request being approved ..." opened the
    Operations page, issue 17). Only the page's own docstring (the first statement) is left alone."""
    import ast
    from pathlib import Path

    stray = []
    for page in sorted((Path(APP_FILE).parent / "app_pages").glob("*.py")):
        body = ast.parse(page.read_text()).body
        for statement in body[1:]:
            if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant) \
                    and isinstance(statement.value.value, str):
                stray.append(f"{page.name}:{statement.lineno}")
    assert stray == []


def test_the_operations_page_starts_with_its_title_and_no_stray_line(app):
    open_page(app, "operations")
    assert [t.value for t in app.title] == ["Operations"]
    assert not [m.value for m in app.markdown if "Session-state key" in m.value]
