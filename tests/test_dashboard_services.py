"""The dashboard's pure services, case by case: freshness, tiles' thresholds, paging, the firing
set merged from lake events and the snapshot, acknowledgements, the Streams timeline, topic
frames, SLO ordering. The pages themselves are tested in test_dashboard_pages.py."""

from __future__ import annotations

import pandas as pd
import pytest

from dashboard.services import acks, alerts, health, streams, topics
from dashboard.services.paging import search_sort_page
from dashboard.services.slos import STATUS_COLUMNS, latest_status
from dashboard.services.sources import DashboardError

NOW = 1_800_000_000.0


def ts(seconds: float) -> pd.Timestamp:
    return pd.Timestamp(seconds, unit="s", tz="UTC")


@pytest.mark.parametrize("newest, interval, stale, text", [
    (None, 10, True, "no samples yet"),
    (NOW - 5, 10, False, "data 5 s old"),
    (NOW - 20, 10, False, "data 20 s old"),        # exactly two intervals: still fresh
    (NOW - 21, 10, True, "STALE: the newest sample is 21 s old"),
    (NOW - 7200, 60, True, "STALE: the newest sample is 2 h 0 min old"),
])
def test_freshness(newest, interval, stale, text):
    fresh = health.freshness(newest, NOW, interval)
    assert fresh.stale is stale and fresh.text.startswith(text)


@pytest.mark.parametrize("idle, level", [(0.5, "ok"), (0.2, "ok"), (0.19, "warning"), (0.1, "warning"),
                                         (0.09, "critical")])
def test_idle_tile_follows_the_0_2_and_0_1_thresholds(idle, level):
    snapshot = {"cluster": {}, "brokers": [{"id": 1, "request_handler_idle_ratio": 0.9},
                                           {"id": 2, "request_handler_idle_ratio": idle}]}
    tiles = {t.label: t for t in health.overview_tiles(snapshot, pd.DataFrame(columns=["severity"]), pd.DataFrame())}
    assert tiles["Lowest handler idle"].level == level
    assert tiles["Lowest handler idle"].detail == "broker 2"


@pytest.mark.parametrize("cluster, label, value, level", [
    ({"brokers_up": 3, "brokers_total": 3}, "Brokers up", "3 / 3", "ok"),
    ({"brokers_up": 2, "brokers_total": 3}, "Brokers up", "2 / 3", "critical"),
    ({"active_controller_count": 1, "controller_id": 2}, "Controller", "OK (node 2)", "ok"),
    ({"active_controller_count": 2}, "Controller", "2 active", "critical"),
    ({"active_controller_count": 0}, "Controller", "0 active", "critical"),
    ({"under_replicated_partitions": 0}, "Under-replicated", "0", "ok"),
    ({"under_replicated_partitions": 4}, "Under-replicated", "4", "warning"),
    ({"offline_partitions": 1}, "Offline", "1", "critical"),
    ({"under_min_isr_partitions": 2}, "Under min ISR", "2", "critical"),
    ({}, "Offline", "—", "unknown"),               # not collected is not zero
])
def test_cluster_tiles(cluster, label, value, level):
    tiles = {t.label: t for t in health.overview_tiles({"cluster": cluster, "brokers": []},
                                                       pd.DataFrame(columns=["severity"]), pd.DataFrame())}
    assert (tiles[label].value, tiles[label].level) == (value, level)


def test_paging_searches_sorts_nulls_last_and_clamps_the_page():
    frame = pd.DataFrame({"name": [f"g{i:02d}" for i in range(25)],
                          "lag": [None if i % 10 == 0 else float(i) for i in range(25)]})
    page = search_sort_page(frame, search="G1", search_column="name", sort_by="lag", descending=True, page_size=4)
    assert page.matching == 10 and page.pages == 3
    assert list(page.rows["name"]) == ["g19", "g18", "g17", "g16"]
    last = search_sort_page(frame, search="g1", search_column="name", sort_by="lag", descending=True, page=99,
                            page_size=4)
    assert last.number == 3 and list(last.rows["name"]) == ["g11", "g10"]  # the null lag last
    assert search_sort_page(frame, search="zzz", search_column="name").matching == 0
    assert search_sort_page(frame, search="g0.", search_column="name").matching == 0  # plain text, not a regex


def _event(time, rule, entity, state, severity="warning", since=None):
    return {"time": ts(time), "cluster": "c", "rule": rule, "severity": severity, "entity": entity, "state": state,
            "value": 1.0, "since": ts(since if since is not None else time), "summary": f"{rule} {entity}"}


def test_firing_merges_lake_events_with_the_newer_snapshot():
    events = pd.DataFrame([
        _event(NOW - 500, "A", "x", "firing", since=NOW - 600),
        _event(NOW - 400, "B", "y", "firing", "critical"),
        _event(NOW - 300, "C", "z", "firing"),
        _event(NOW - 200, "C", "z", "resolved"),
        _event(NOW - 100, "D", "w", "firing"),            # resolved since the last flush: not in the snapshot
    ])
    snapshot = {"time": NOW - 50, "alerts": [
        {"rule": "A", "severity": "warning", "entity": "x", "value": 1, "summary": "a", "since": NOW - 600},
        {"rule": "B", "severity": "critical", "entity": "y", "value": 1, "summary": "b", "since": NOW - 400},
        {"rule": "E", "severity": "critical", "entity": "v", "value": 1, "summary": "e", "since": NOW - 60},
    ]}
    firing = alerts.firing_alerts(events, snapshot, {}, NOW)
    assert list(zip(firing["rule"], firing["entity"])) == [("B", "y"), ("E", "v"), ("A", "x")]
    assert firing["age_seconds"].tolist() == [400, 60, 600]
    without_snapshot = alerts.firing_alerts(events, None, {}, NOW)
    assert sorted(without_snapshot["rule"]) == ["A", "B", "D"]


def test_acknowledgements_validate_expire_and_the_newest_wins(tmp_path):
    with pytest.raises(DashboardError, match="say who you are"):
        acks.new_ack(cluster="c", rule="A", entity="x", kind="acknowledge", by=" ", hours=1, now=NOW)
    with pytest.raises(DashboardError, match="duration"):
        acks.new_ack(cluster="c", rule="A", entity="x", kind="silence", by="bob", hours=0, now=NOW)
    with pytest.raises(DashboardError, match="unknown action"):
        acks.new_ack(cluster="c", rule="A", entity="x", kind="mute", by="bob", hours=1, now=NOW)
    store = acks.AckStore(str(tmp_path / "lake"))
    assert store.load() == []
    first = acks.new_ack(cluster="c", rule="A", entity="x", kind="silence", by="bob", hours=1, now=NOW - 7200)
    second = acks.new_ack(cluster="c", rule="A", entity="x", kind="acknowledge", by="amy", hours=2, now=NOW - 60)
    other = acks.new_ack(cluster="d", rule="A", entity="x", kind="silence", by="cy", hours=2, now=NOW - 60)
    for ack in (first, second, other):
        store.add(ack, NOW)
    assert store.load() == [first, second, other]
    current = acks.active(store.load(), "c", NOW)
    assert current == {("A", "x"): second}
    assert acks.active(store.load(), "c", NOW + 3 * 3600) == {}
    (tmp_path / "lake" / acks.STORE_DIR / acks.STORE_FILE).write_text("{broken")
    with pytest.raises(DashboardError, match="not valid JSON"):
        store.load()


def test_the_timeline_shows_rebalancing_periods_per_instance():
    transitions = pd.DataFrame([
        {"time": ts(NOW - 300), "application_id": "app", "instance": "i1", "from_state": "RUNNING", "to_state": "REBALANCING"},
        {"time": ts(NOW - 240), "application_id": "app", "instance": "i1", "from_state": "REBALANCING", "to_state": "RUNNING"},
        {"time": ts(NOW - 100), "application_id": "other", "instance": "o", "from_state": "RUNNING", "to_state": "ERROR"},
    ])
    periods = streams.timeline(transitions, "app", NOW - 600, NOW, {"i1": "RUNNING", "i2": "RUNNING"})
    assert list(zip(periods["instance"], periods["state"])) == [("i1", "RUNNING"), ("i1", "REBALANCING"),
                                                              ("i1", "RUNNING"), ("i2", "RUNNING")]
    assert streams.rebalancing_seconds(periods) == 60


def test_topic_frames_count_replication_problems_and_find_streams_internal_topics():
    metadata = [{"topic": "t", "partition": 0, "leader": 1, "replicas": [1, 2, 3], "isr": [1, 2, 3]},
                {"topic": "t", "partition": 1, "leader": 2, "replicas": [2, 3, 1], "isr": [2]},
                {"topic": "t", "partition": 2, "leader": -1, "replicas": [3, 1, 2], "isr": []},
                {"topic": "__consumer_offsets", "partition": 0, "leader": 1, "replicas": [1], "isr": [1]}]
    parts = topics.partitions_frame(metadata)
    frame = topics.topics_frame(parts).set_index("topic")
    assert frame.loc["t", ["partitions", "replication_factor", "under_replicated", "offline"]].tolist() == [3, 3, 2, 1]
    assert bool(frame.loc["__consumer_offsets", "internal"])
    detail = topics.partition_detail(parts, "t", {0: {"earliest": 5, "latest": 9}}, min_isr=2)
    assert detail["messages"].tolist()[0] == 4 and pd.isna(detail["latest_offset"][1])
    assert detail["under_min_isr"].tolist() == [False, True, True]
    names = ["app-store-changelog", "app-x-repartition", "app-out", "app2-store-changelog"]
    assert topics.internal_topics(names, "app") == ["app-store-changelog", "app-x-repartition"]


def test_slo_status_takes_the_newest_row_per_slo_and_entity_paging_first():
    def row(time, slo, entity, alert, budget):
        return {"time": ts(time), "slo": slo, "entity": entity, "alert": alert, "error_budget_remaining": budget}
    rows = pd.DataFrame([row(NOW - 120, "s1", "e", "page", -0.5), row(NOW - 60, "s1", "e", None, 0.2),
                         row(NOW - 60, "s2", "e", "ticket", 0.5), row(NOW - 60, "s3", "e", None, 0.1),
                         row(NOW - 60, "s4", "e", "page", 0.9)]).reindex(columns=STATUS_COLUMNS)
    latest = latest_status(rows)
    assert list(latest["slo"]) == ["s4", "s2", "s3", "s1"]


@pytest.mark.parametrize("rule, entity, table, column", [
    ("OfflinePartitions", "cluster/c", "cluster_health", "offline_partitions"),
    ("RequestHandlerIdleCritical", "broker/2", "broker_metrics", "request_handler_idle_ratio"),
    ("BrokerDown", "broker/3", "broker_state", "up"),
    ("ConsumerGroupLagSeconds", "group/g", "consumer_group", "max_lag_seconds"),
    ("StreamsAppNotRunning", "streams/app", "streams_instance", "running"),
    ("ProbeFailing", "probe", "probe", "failed"),
])
def test_every_alert_has_a_context_chart(rule, entity, table, column):
    query = alerts.context_query(rule, entity)
    assert (query.table, query.column) == (table, column)


def test_the_context_chart_ends_with_the_snapshot_value():
    query = alerts.context_query("OfflinePartitions", "cluster/c")
    lake_rows = pd.DataFrame({"time": [ts(NOW - 120), ts(NOW - 60)], "offline_partitions": [0, 0]})
    series = alerts.with_snapshot_point(query, alerts.context_series(query, lake_rows),
                                        {"time": NOW - 5, "cluster": {"offline_partitions": 3}})
    assert series["value"].tolist() == [0, 0, 3] and series["time"].iloc[-1] == ts(NOW - 5)
    broker = alerts.context_query("BrokerDown", "broker/3")
    down = alerts.with_snapshot_point(broker, pd.DataFrame(columns=["time", "value"]),
                                      {"time": NOW, "cluster": {"brokers": [{"id": 3, "up": False}]}})
    assert down["value"].tolist() == [0.0]


def test_topic_size_is_one_copy_per_partition_from_the_largest_replica():
    def broker(number, sizes, error=0):
        return {"broker": number, "log_dirs": [{"error_code": error, "topics": [
            {"name": "t", "partitions": [{"partition_index": p, "partition_size": size} for p, size in sizes.items()]}]}]}
    log_dirs = [broker(1, {0: 100, 1: 50}), broker(2, {0: 90, 1: 70}), broker(3, {0: 999}, error=57)]
    assert topics.sizes_from_log_dirs(log_dirs) == {"t": 170}  # 100 + 70; an offline log dir is not counted


def test_the_timeline_starts_when_an_instance_was_first_seen():
    empty = pd.DataFrame(columns=["time", "application_id", "instance", "from_state", "to_state"])
    periods = streams.timeline(empty, "app", NOW - 3600, NOW, {"i1": "RUNNING", "i2": "RUNNING"},
                               {"i1": ts(NOW - 120), "i2": ts(NOW - 7200)})
    assert periods.set_index("instance")["begin"].to_dict() == {"i1": ts(NOW - 120), "i2": ts(NOW - 3600)}


def test_a_read_that_skipped_an_unreadable_file_says_which_data_is_missing(tmp_path):
    from kpulse.lake.store import LakeWriter
    from dashboard.services.sources import Sources
    from kpulse.config import parse_config

    writer = LakeWriter(str(tmp_path))
    writer.append("cluster_health", [{"time": NOW - 60 * i, "cluster": "prod", "brokers_up": 3} for i in range(5)])
    assert writer.flush().ok
    [good] = (tmp_path / "cluster_health").rglob("*.parquet")
    bad = good.parent / "part-20270115T080000Z-0badf11e.parquet"
    bad.write_bytes(b"PAR1 truncated")
    config = parse_config({"clusters": [{"name": "prod", "bootstrap_servers": "127.0.0.1:9"}],
                           "lake": {"path": str(tmp_path)}}, source="test", base_dir=tmp_path)
    read = Sources(config).read_checked("cluster_health", "prod", since=NOW - 3600)
    assert len(read.frame) == 5  # the good file is read
    missing = read.missing
    assert missing is not None and missing.files == (f"{bad}: " + missing.files[0].split(": ", 1)[1],)
    day = good.parent.name.removeprefix("date=")
    assert missing.line() == (f"1 unreadable lake file(s) skipped: cluster_health rows of {day} (UTC) may be "
                              f"missing here. {missing.files[0]}")
    assert Sources(config).read_checked("collector_status", "prod").missing is None  # no bad file there
    with pytest.raises(DashboardError, match=r"^lake table cluster_health: 1 unreadable file\(s\), e.g. .*0badf11e"):
        Sources(config).read_checked("cluster_health", "prod", since=NOW + 1)  # nothing readable left: an error


RECONCILING_GROUP = {
    "group_id": "g848", "type": "consumer", "state": "Reconciling", "members": 2, "group_epoch": 7,
    "assignment_epoch": 7, "reconciling_members": 1,
    "member_details": [
        {"member_id": "m-a", "client_id": "c", "client_host": "/127.0.0.1", "instance_id": None, "member_epoch": 7,
         "process_id": None, "assignment": {"t": [0, 1, 2]}, "target_assignment": {"t": [0, 1, 2]},
         "reconciling": False},
        {"member_id": "m-b", "client_id": "c", "client_host": "/127.0.0.1", "instance_id": None, "member_epoch": 6,
         "process_id": None, "assignment": {}, "target_assignment": {"t": [3, 4, 5]}, "reconciling": True}]}


def test_a_kip848_groups_members_show_current_and_target_assignments_reconciling_first():
    from dashboard.services import groups

    frame = groups.members_frame(RECONCILING_GROUP)
    assert list(frame["member_id"]) == ["m-b", "m-a"]
    assert list(frame["assignment"]) == ["-", "t:0,1,2"]
    assert list(frame["target_assignment"]) == ["t:3,4,5", "t:0,1,2"]
    assert list(frame["reconciling"]) == [True, False]
    assert groups.membership_caption(RECONCILING_GROUP) == (
        "KIP-848 consumer group · group epoch 7 · target assignment epoch 7 · 1 of 2 members reconciling")


def test_a_classic_group_has_no_epochs_and_a_group_listed_empty_no_member_table():
    from dashboard.services import groups

    classic = {"group_id": "g", "type": "classic", "group_epoch": None, "assignment_epoch": None,
               "reconciling_members": None,
               "member_details": [{"member_id": "m", "client_id": "c", "client_host": "h", "member_epoch": None,
                                   "assignment": {"t": [0]}, "target_assignment": None, "reconciling": False}]}
    assert groups.membership_caption(classic) == "classic group"
    assert list(groups.members_frame(classic)["target_assignment"].isna()) == [True]
    assert groups.members_frame({"group_id": "e", "type": "consumer", "member_details": []}) is None
    assert groups.membership_caption({"group_id": "old snapshot"}) is None


def test_a_topic_lists_the_groups_consuming_it_with_their_lag_on_that_topic_worst_first():
    from dashboard.services.topics import consumer_rows_by_topic, consumers_frame

    def part(topic, partition, committed, lag, seconds=None, status=None):
        return {"topic": topic, "partition": partition, "committed_offset": committed, "lag": lag,
                "lag_seconds": seconds, "status": status}

    snapshot = {
        "consumer_groups": [
            {"group_id": "billing", "type": "classic", "state": "Stable", "members": 2, "partitions": [
                part("orders", 0, 10, 5, 2.0, "OK"), part("orders", 1, 7, None, None, None),  # log end not read
                part("payments", 0, 3, 100, 40.0, "ERR")]},
            {"group_id": "<b>shop</b>", "type": "streams", "state": "Empty", "members": 0, "partitions": [
                part("orders", 0, 15, 0, 0.0, "STOP"), part("orders", 1, 20, 40, 9.5, "WARN")]},
            {"group_id": "fresh", "type": "consumer", "state": "Stable", "members": 1, "partitions": [
                part("orders", 2, None, None)]},  # assigned, nothing committed yet: not a consumer of it yet
        ],
        "share_groups": {"groups": [
            {"group_id": "jobs", "state": "Stable", "members": 2, "partitions": [
                {"topic": "orders", "partition": 0, "start_offset": 3, "lag": 12, "status": "STALLED"}]}]},
    }
    by_topic = {topic: consumers_frame(rows) for topic, rows in consumer_rows_by_topic(snapshot).items()}
    assert set(by_topic) == {"orders", "payments"}
    orders = by_topic["orders"]
    assert orders[["group_id", "type", "partitions", "lag", "lag_unknown_partitions", "status"]].values.tolist() == [
        ["<b>shop</b>", "streams", 2, 40, 0, "STOP"],
        ["jobs", "share", 1, 12, 0, "STALLED"],
        ["billing", "classic", 2, 5, 1, "OK"],  # 5 is a lower bound: one partition's lag is unknown
    ]
    assert orders.loc[0, "max_lag_seconds"] == 9.5
    assert by_topic["payments"][["group_id", "lag", "status"]].values.tolist() == [["billing", 100, "ERR"]]
    # each row links to its group's page, the id encoded (a hostile id stays one query value)
    assert orders["page"].tolist() == ["groups?group=%3Cb%3Eshop%3C%2Fb%3E", "share-groups?sharegroup=jobs",
                                       "groups?group=billing"]
    assert consumer_rows_by_topic(None) == {}


def test_prewarming_parses_each_new_snapshot_and_reads_metadata_once_so_pages_find_them_cached(tmp_path,
                                                                                               monkeypatch):
    """The dashboard's prewarming thread (``frame._prewarm_once``, one pass of it): a new snapshot
    file is parsed and its group and topic tables built before a page asks; the same file is not
    parsed again; the topic metadata is read once per period, and a cluster that fails leaves
    the others prewarmed."""
    import json as json_module
    from types import SimpleNamespace

    from dashboard import frame
    from dashboard.services.sources import Sources
    from kpulse.config import parse_config
    from kpulse.lake.store import SNAPSHOT_DIR

    config = parse_config({"clusters": [{"name": "down", "bootstrap_servers": "127.0.0.1:8"},
                                        {"name": "prod", "bootstrap_servers": "127.0.0.1:9"}],
                           "lake": {"path": str(tmp_path)}}, source="test", base_dir=tmp_path)
    metadata_reads, parsed = [], []
    monkeypatch.setattr(frame, "now", lambda: NOW)  # one metadata period throughout

    class Admin:
        def __init__(self, client_config):
            self.servers = client_config.get("bootstrap.servers")

        def list_topics(self, timeout=None):
            metadata_reads.append(self.servers)
            if self.servers == "127.0.0.1:8":
                raise ConnectionError("the cluster 'down' does not answer")
            return SimpleNamespace(topics={"orders": SimpleNamespace(error=None, partitions={
                0: SimpleNamespace(leader=1, replicas=[1], isrs=[1])})})

    class Counting(Sources):
        def snapshot(self, cluster):
            parsed.append(cluster)
            return super().snapshot(cluster)

    source = Counting(config, admin_factory=Admin)
    snapshots = tmp_path / SNAPSHOT_DIR
    snapshots.mkdir()
    (snapshots / "prod.json").write_text(json_module.dumps({"time": NOW, "consumer_groups": [
        {"group_id": "billing", "partitions": [{"topic": "orders", "partition": 0, "committed_offset": 1, "lag": 2}]}]}))
    seen: dict = {}
    for cache in (frame._snapshot, frame._groups_table, frame._groups_by_id, frame._consumers_by_topic,
                  frame._partitions, frame._topic_names, frame._topic_catalog):
        cache.clear()
    frame._prewarm_once(source, seen)
    assert parsed == ["prod"]  # "down" has no snapshot yet
    assert sorted(metadata_reads) == ["127.0.0.1:8", "127.0.0.1:9"]  # "down" failed, "prod" was still read
    stamp = source.snapshot_stamp("prod")
    assert frame._groups_by_id(source, source.lake_path, "prod", stamp)["billing"]["group_id"] == "billing"
    assert frame._consumers_by_topic(source, source.lake_path, "prod", stamp)["orders"][0]["lag"] == 2
    assert parsed == ["prod"]  # the page's reads above found them cached
    bucket = frame._bucket(frame.now(), frame.METADATA_SECONDS)
    client = frame._admin(source, source.config.source, "prod", id(source.admin_factory))
    assert frame._topic_names(client, source.config.source, "prod", id(source.admin_factory), bucket) == ("orders",)
    reads = len(metadata_reads)
    frame._prewarm_once(source, seen)  # nothing new: nothing parsed or read again
    assert parsed == ["prod"] and len(metadata_reads) == reads
