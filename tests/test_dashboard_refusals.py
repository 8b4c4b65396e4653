"""What kpulse may not read, as the dashboard shows it, without a cluster: a cluster that refuses
kpulse's identity is one red line on every page (not the STALE banner: the collector runs, it is
refused), what the principal cannot see for want of a cluster ACL (``connection.limits``) is said
where it matters, and every tile and figure left null says why (``cluster.reasons``, the brokers'
``reasons``, the probe's ``not_authorized``). The same on the secured cluster in Chromium:
test_dashboard_secure_browser.py."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from streamlit.testing.v1 import AppTest

from dashboard import literal
from dashboard.services import brokers, health, unread
from kpulse.lake.store import SNAPSHOT_DIR
from tests.dashboard_lake import CLUSTER, write_lake
from tests.support import APP_FILE, open_page

AUTH_FAILED = ("authentication failed: sasl_ssl://127.0.0.1:9093/bootstrap: SASL authentication error: "
               "Authentication failed during authentication due to invalid credentials with SASL mechanism "
               "SCRAM-SHA-512")
HOSTILE_ERROR = "authentication failed: **[re-login](https://example.invalid)** <b>x</b> :material/warning: $x$"
LISTING_LIMIT = ("not authorized: Describe on cluster: consumer groups are listed only where kpulse may describe "
                 "them (ListGroups leaves the others out), and the KRaft quorum is not readable")
QUORUM_REFUSED = "not authorized: Describe on cluster (DescribeQuorum)"
MIN_ISR_REFUSED = ("not authorized: DescribeConfigs on 4 topics (__consumer_offsets, kpulse-probe, orders, ...): "
                   "min.insync.replicas unknown for their partitions; 0 partition(s) of the other topics (and "
                   "offline ones) are under min ISR")
NO_METRICS = "broker metrics are not configured (metrics.source: none)"
PROBE_REFUSED = "not authorized: Write on topic kpulse-probe"
NO_ALERTS = pd.DataFrame(columns=["severity"])


# --- pure: the frame's line, the tiles' reasons, the limits' wording --------------------------------------

def refused(error: str = AUTH_FAILED, conclusive: bool = True) -> dict:
    return {"ok": False, "error": error, "conclusive": conclusive, "cluster_operations": None, "limits": [],
            "check_seconds": 0.4}


@pytest.mark.parametrize("snapshot, line", [
    (None, None),
    ({}, None),  # a snapshot written before the connection check
    ({"connection": {"ok": True, "error": None, "limits": [LISTING_LIMIT]}}, None),
    ({"connection": refused()}, f"kpulse cannot read cluster prod: {AUTH_FAILED}"),
    ({"connection": refused("no answer within 5 s", conclusive=False)},
     "kpulse cannot read cluster prod: no answer within 5 s"),
])
def test_the_frame_says_in_one_line_when_the_cluster_refuses_kpulse(snapshot, line):
    assert health.cannot_read(snapshot, "prod") == line


@pytest.mark.parametrize("age, stale, text", [
    (5, False, "the cluster was last asked 5 s ago"),
    (3600, True, "the cluster was last asked 60 min ago: is `kpulse collect` still running?"),
])
def test_beside_that_line_the_age_is_a_caption_not_the_stale_banner(age, stale, text):
    fresh = health.freshness(1_000_000.0 - age, 1_000_000.0, 10 if stale else 600)
    assert fresh.stale is stale
    assert health.refused_age(fresh) == text


def tiles_of(snapshot: dict) -> dict[str, health.Tile]:
    # a partial snapshot on purpose: only the sections the tiles read
    return {t.label: t for t in health.overview_tiles(snapshot, NO_ALERTS, pd.DataFrame())}  # type: ignore[arg-type]


@pytest.mark.parametrize("cluster, label, detail", [
    ({"under_min_isr_partitions": None, "reasons": {"under_min_isr_partitions": MIN_ISR_REFUSED}},
     "Under min ISR", MIN_ISR_REFUSED),
    ({"under_min_isr_partitions": None, "reasons": {}}, "Under min ISR", "not collected"),
    ({"offline_partitions": None, "reasons": {"offline_partitions": "Metadata: no answer within 10 s"}},
     "Offline", "Metadata: no answer within 10 s"),
    ({"under_replicated_partitions": None}, "Under-replicated", "not collected"),
    ({"brokers_up": None, "brokers_total": None, "reasons": {"brokers_up": "Metadata: no answer within 10 s"}},
     "Brokers up", "Metadata: no answer within 10 s"),
    ({"active_controller_count": None, "controller_id": None,
      "reasons": {"controller_id": QUORUM_REFUSED, "active_controller_count": QUORUM_REFUSED}},
     "Controller", QUORUM_REFUSED),
    ({"active_controller_count": None, "reasons": {}}, "Controller", "not collected"),
    # an unread cluster is the cause of every value it holds, whatever else a field's reason says
    ({"active_controller_count": None, "controller_id": None,
      "reasons": {"active_controller_count": NO_METRICS, "controller_id": f"cluster not readable: {AUTH_FAILED}"}},
     "Controller", "cluster not readable"),
    # the frame's red line already says why the whole cluster is unread: the tile does not repeat it
    ({"under_min_isr_partitions": None, "reasons": {"under_min_isr_partitions": f"cluster not readable: {AUTH_FAILED}"}},
     "Under min ISR", "cluster not readable"),
])
def test_a_null_tile_says_why(cluster, label, detail):
    tile = tiles_of({"cluster": cluster, "brokers": []})[label]
    assert (tile.value, tile.level, tile.detail) == ("—", "unknown", detail)


def test_a_known_count_keeps_its_own_detail():
    tile = tiles_of({"cluster": {"under_min_isr_partitions": 2, "reasons": {}}, "brokers": []})["Under min ISR"]
    assert (tile.value, tile.level, tile.detail) == ("2", "critical", "partitions below min.insync.replicas")


def test_broker_metric_tiles_say_why_the_metrics_are_missing():
    snapshot = {"cluster": {}, "brokers": [
        {"id": 1, "request_handler_idle_ratio": None, "bytes_in_per_sec": None, "bytes_out_per_sec": None,
         "reasons": {"request_handler_idle_ratio": NO_METRICS, "bytes_in_per_sec": NO_METRICS,
                     "bytes_out_per_sec": NO_METRICS}}]}
    tiles = tiles_of(snapshot)
    for label in ("Lowest handler idle", "Bytes in", "Bytes out"):
        assert (tiles[label].value, tiles[label].level, tiles[label].detail) == ("—", "unknown", NO_METRICS), label
    assert tiles_of({"cluster": {}, "brokers": []})["Lowest handler idle"].detail == "no broker metrics"


def probe(**values) -> dict:
    base = {"topic": "kpulse-probe", "produce_availability": 1.0, "consume_availability": 1.0, "latency_p50_ms": 3.0,
            "latency_p99_ms": 12.5, "latency_max_ms": 20.0, "produced": 3, "produce_errors": 0, "consumed": 3,
            "lost": 0, "duplicated": 0, "per_partition": [], "error": None, "not_authorized": None}
    return {**base, **values}


COLLECTORS = [{"name": "probe", "up": True, "error": None}]


@pytest.mark.parametrize("section, collectors, value, level, detail", [
    (probe(), COLLECTORS, "OK", "ok", "produced 100% · read back 100% · p99 12.5 ms"),
    (probe(produce_availability=0.5, produce_errors=3, error="3 produce error(s) on 1 partition(s); first: ..."),
     COLLECTORS, "failing", "critical", "produced 50% · read back 100% · p99 12.5 ms"),
    (probe(lost=2), COLLECTORS, "failing", "critical", "produced 100% · read back 100% · p99 12.5 ms · 2 lost"),
    # a permission of kpulse's, not an outage: a warning naming the ACL, no availability
    (probe(produce_availability=None, consume_availability=None, latency_p99_ms=None, produced=0, consumed=0,
           error=PROBE_REFUSED, not_authorized=PROBE_REFUSED), COLLECTORS, "not authorized", "warning",
     f"kpulse's permissions, not an outage: {PROBE_REFUSED}"),
    (probe(produce_availability=None, consume_availability=None, latency_p99_ms=None, produced=0, consumed=0,
           error="cannot create the probe topic: no answer"), COLLECTORS, "—", "unknown",
     "cannot create the probe topic: no answer"),
    (None, [{"name": "probe", "up": False, "error": "timed out after 30 s"}], "—", "unknown", "timed out after 30 s"),
    (None, [{"name": "probe", "up": False, "error": f"cluster not readable: {AUTH_FAILED}"}], "—", "unknown",
     "cluster not readable"),
    (None, [], "—", "unknown", "turned off (probe.enabled: false)"),
])
def test_the_probe_tile_tells_a_refused_probe_from_a_failing_one(section, collectors, value, level, detail):
    tile = tiles_of({"cluster": {}, "brokers": [], "probe": section, "collectors": collectors})["End-to-end probe"]
    assert (tile.value, tile.level, tile.detail) == (value, level, detail)


@pytest.mark.parametrize("limits, line", [
    ([], None),
    ([LISTING_LIMIT], "Groups are listed only where kpulse may describe them: not authorized: Describe on cluster"),
    (["not authorized: Describe on cluster: the KRaft quorum is not readable"], None),
    (["groups are listed only where kpulse may see them"],  # not in the usual words: shown whole
     "Groups are listed only where kpulse may describe them: groups are listed only where kpulse may see them"),
])
def test_the_group_pages_word_the_listing_limit(limits, line):
    assert unread.listing_limit(limits) == line


@pytest.mark.parametrize("limits, line", [
    ([], None),
    ([LISTING_LIMIT], "The KRaft quorum is not readable: not authorized: Describe on cluster"),
    (["not authorized: Describe on cluster: consumer groups are listed only where kpulse may describe them"], None),
])
def test_the_brokers_page_words_the_quorum_limit(limits, line):
    assert unread.quorum_limit(limits) == line


def test_the_kraft_figures_left_null_say_why_once_per_reason():
    cluster = {"quorum": None, "fenced_broker_count": 0, "active_broker_count": 1, "metadata_error_count": None,
               "reasons": {"quorum": QUORUM_REFUSED, "metadata_error_count": NO_METRICS,
                           "controller_id": QUORUM_REFUSED}}
    figures = brokers.controller_figures({"cluster": cluster})
    assert brokers.figure_reasons(figures) == [f"Quorum leader, leader epoch, high watermark: {QUORUM_REFUSED}",
                                               f"Metadata errors: {NO_METRICS}"]


def test_the_broker_metrics_left_null_say_why_once_per_reason():
    snapshot = {"brokers": [
        {"id": 1, "request_handler_idle_ratio": None, "bytes_in_per_sec": None, "produce_p99_ms": 4.0,
         "reasons": {"request_handler_idle_ratio": NO_METRICS, "bytes_in_per_sec": NO_METRICS}},
        {"id": 2, "request_handler_idle_ratio": None, "bytes_in_per_sec": 10.0, "produce_p99_ms": None,
         "reasons": {"request_handler_idle_ratio": NO_METRICS, "produce_p99_ms": "connection refused"}}]}
    assert brokers.metric_reasons(snapshot) == [
        f"request handler idle unknown for brokers 1, 2: {NO_METRICS}",
        f"bytes in unknown for broker 1: {NO_METRICS}",
        "produce p99 unknown for broker 2: connection refused"]


def test_the_group_wording_comes_from_the_product_helper():
    from kpulse.kafka import authorization

    assert unread.not_authorized is authorization.not_authorized


# --- pages under AppTest ----------------------------------------------------------------------------------

PAGES = ("overview", "brokers", "topics", "groups", "streams", "share_groups", "slos", "alerts", "operations")


def write_setup(directory: Path, edit) -> Path:
    """The dashboard tests' lake (``write_lake``), its snapshot changed by ``edit``, and a config."""
    lake = directory / "lake"
    write_lake(str(lake), time.time(), history_cycles=2)
    path = lake / SNAPSHOT_DIR / f"{CLUSTER}.json"
    snapshot = json.loads(path.read_text())
    edit(snapshot)
    path.write_text(json.dumps(snapshot))
    config = {"clusters": [{"name": CLUSTER, "bootstrap_servers": "127.0.0.1:9"}], "lake": {"path": str(lake)},
              "intervals": {"collect_seconds": 600}, "dashboard": {"users_file": str(directory / "no-users.yaml")}}
    (directory / "kpulse.yaml").write_text(yaml.safe_dump(config))
    return directory / "kpulse.yaml"


def start(config: Path, monkeypatch, page: str | None = None, **query) -> AppTest:
    monkeypatch.setenv("KPULSE_CONFIG", str(config))
    monkeypatch.setenv("KPULSE_STATE_DIR", str(config.parent / "state"))
    monkeypatch.delenv("KPULSE_DASHBOARD_AUTH", raising=False)
    app = AppTest.from_file(str(APP_FILE), default_timeout=60)
    for key, value in query.items():
        app.query_params[key] = value
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    return open_page(app, page) if page and page != "overview" else app


def refused_cluster(error: str, age: float = 0.0):
    """The snapshot of a cycle whose connection check the cluster refused: Kafka collectors down, values null."""
    def edit(snapshot: dict) -> None:
        why = f"cluster not readable: {error}"
        snapshot["time"] -= age
        snapshot["connection"] = refused(error)
        keys = ("controller_id", "brokers_up", "brokers_total", "under_replicated_partitions", "offline_partitions",
                "under_min_isr_partitions", "preferred_leader_imbalance", "topic_count", "partition_count",
                "active_controller_count", "fenced_broker_count", "active_broker_count", "metadata_error_count")
        snapshot["cluster"] = {**{key: None for key in keys}, "brokers": [], "problem_partitions": [], "quorum": None,
                               "reasons": {key: why for key in (*keys, "quorum")}}
        snapshot.update(brokers=[], consumer_groups=[], streams_apps=[], share_groups=None, probe=None, alerts=[])
        for collector in snapshot["collectors"]:
            if collector["name"] != "broker_metrics":
                collector.update(up=False, error=why)
    return edit


@pytest.mark.parametrize("page", PAGES)
def test_every_page_says_in_one_red_line_that_the_cluster_refuses_kpulse(tmp_path, monkeypatch, page):
    app = start(write_setup(tmp_path, refused_cluster(AUTH_FAILED)), monkeypatch, page)
    banner = literal.markdown(f"kpulse cannot read cluster {CLUSTER}: {AUTH_FAILED}")
    assert banner in [e.value for e in app.error], [e.value for e in app.error]
    assert not [e.value for e in app.error if "STALE" in e.value]


def test_a_refused_cluster_whose_last_check_is_old_is_still_named_not_called_stale(tmp_path, monkeypatch):
    app = start(write_setup(tmp_path, refused_cluster(AUTH_FAILED, age=3600)), monkeypatch)
    errors = [e.value for e in app.error]
    assert errors == [literal.markdown(f"kpulse cannot read cluster {CLUSTER}: {AUTH_FAILED}")], errors
    assert any("the cluster was last asked 60 min ago: is `kpulse collect` still running?" in c.value
               for c in app.caption), [c.value for c in app.caption]


def test_the_refusal_is_shown_as_text_and_said_once_on_the_overview(tmp_path, monkeypatch):
    app = start(write_setup(tmp_path, refused_cluster(HOSTILE_ERROR)), monkeypatch)
    assert [e.value for e in app.error] == [literal.markdown(f"kpulse cannot read cluster {CLUSTER}: {HOSTILE_ERROR}")]
    # the collectors it stopped are not listed again, each with the same line
    assert not [w.value for w in app.warning if "cluster not readable" in w.value], [w.value for w in app.warning]
    tiles = [m.value for m in app.markdown if "kp-tile" in m.value]
    assert tiles and not [t for t in tiles if "re-login" in t or "<b>x</b>" in t]


def limited(snapshot: dict) -> None:
    """What the principal without Describe on the cluster reads (``partial`` on the secured cluster)."""
    snapshot["connection"] = {"ok": True, "error": None, "conclusive": True, "cluster_operations": [],
                              "limits": [LISTING_LIMIT], "check_seconds": 0.01}
    cluster = snapshot["cluster"]
    cluster.update(quorum=None, controller_id=None, active_controller_count=None, metadata_error_count=None,
                   under_min_isr_partitions=None)
    cluster["reasons"] = {"quorum": QUORUM_REFUSED, "controller_id": QUORUM_REFUSED,
                          "active_controller_count": QUORUM_REFUSED, "metadata_error_count": NO_METRICS,
                          "under_min_isr_partitions": MIN_ISR_REFUSED}
    snapshot["probe"] = probe(produce_availability=None, consume_availability=None, latency_p99_ms=None, produced=0,
                              consumed=0, error=PROBE_REFUSED, not_authorized=PROBE_REFUSED)


@pytest.fixture
def limited_config(tmp_path):
    return write_setup(tmp_path, limited)


def tile_details(app: AppTest) -> dict[str, str]:
    import re

    details = {}
    for block in app.markdown:
        match = re.search(r"<div class='kp-label'>([^<]+)</div>.*<div class='kp-detail'>(.*?)</div>", block.value)
        if match:
            details[match.group(1)] = match.group(2)
    return details


def test_the_overview_says_why_each_tile_is_empty_and_what_kpulse_may_not_see(limited_config, monkeypatch):
    app = start(limited_config, monkeypatch)
    details = tile_details(app)
    assert details["Under min ISR"] == "UNKNOWN · " + literal.html_text(MIN_ISR_REFUSED)
    assert details["Controller"] == "UNKNOWN · " + literal.html_text(QUORUM_REFUSED)
    assert details["End-to-end probe"] == "WARNING · " + literal.html_text(
        f"kpulse's permissions, not an outage: {PROBE_REFUSED}")
    assert literal.markdown(f"kpulse's view of cluster {CLUSTER} is limited: {LISTING_LIMIT}") in [
        w.value for w in app.warning], [w.value for w in app.warning]
    assert not app.error, [e.value for e in app.error]


@pytest.mark.parametrize("page", ["groups", "share_groups", "streams"])
def test_the_group_pages_say_above_the_list_that_it_is_limited(limited_config, monkeypatch, page):
    app = start(limited_config, monkeypatch, page)
    line = "Groups are listed only where kpulse may describe them: not authorized: Describe on cluster"
    assert literal.markdown(line) in [w.value for w in app.main.warning], [w.value for w in app.main.warning]


def test_the_brokers_page_says_why_its_kraft_figures_are_empty(limited_config, monkeypatch):
    app = start(limited_config, monkeypatch, "brokers")
    assert literal.markdown("The KRaft quorum is not readable: not authorized: Describe on cluster") in [
        w.value for w in app.main.warning]
    captions = [c.value for c in app.caption]
    assert literal.markdown(f"Quorum leader, leader epoch, high watermark: {QUORUM_REFUSED}") in captions, captions
    assert literal.markdown(f"Metadata errors: {NO_METRICS}") in captions, captions
    assert {m.label: m.value for m in app.metric}["Quorum leader"] == "—"


def test_the_brokers_page_says_why_broker_metrics_are_empty(tmp_path, monkeypatch):
    def no_metrics(snapshot: dict) -> None:
        for broker in snapshot["brokers"]:
            for field in ("request_handler_idle_ratio", "bytes_in_per_sec"):
                broker[field] = None
                broker["reasons"][field] = NO_METRICS

    app = start(write_setup(tmp_path, no_metrics), monkeypatch, "brokers")
    captions = [c.value for c in app.caption]
    assert literal.markdown(f"request handler idle, bytes in unknown for brokers 1, 2, 3: {NO_METRICS}") in captions, \
        captions
