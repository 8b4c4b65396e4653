"""Snapshots with values kpulse could not read, and the Admin client of a principal refused
DescribeConfigs on some topics: shared by the tests of the values shown with their reasons
(tests/test_dashboard_unreadable_values.py) and of the dashboard's tables (tests/test_dashboard_tables.py)."""

from __future__ import annotations

import json
import time
from concurrent.futures import Future
from pathlib import Path
from types import SimpleNamespace

import yaml
from confluent_kafka import KafkaError, KafkaException
from streamlit.testing.v1 import AppTest

from dashboard.frame import SOURCES_KEY
from dashboard.services.sources import Sources
from kpulse.lake.store import SNAPSHOT_DIR
from tests.dashboard_lake import CLUSTER, STREAMS_GROUP, write_lake
from tests.support import APP_FILE, open_page

HOSTILE_GROUP = "**[re-login](https://example.invalid/x)** <img src=x> :material/warning: :red[x] $x^2$ #"


def write_setup(directory: Path, edit=None, **dashboard) -> Path:
    """A lake written by ``write_lake`` (its snapshot changed by ``edit``) and a config naming it."""
    lake = directory / "lake"
    write_lake(str(lake), time.time(), history_cycles=2)
    if edit is not None:
        path = lake / SNAPSHOT_DIR / f"{CLUSTER}.json"
        snapshot = json.loads(path.read_text())
        edit(snapshot)
        path.write_text(json.dumps(snapshot))
    config = {"clusters": [{"name": CLUSTER, "bootstrap_servers": "127.0.0.1:9"}], "lake": {"path": str(lake)},
              "intervals": {"collect_seconds": 600},
              "dashboard": {"users_file": str(directory / "no-users.yaml"), **dashboard}}
    (directory / "kpulse.yaml").write_text(yaml.safe_dump(config))
    return directory / "kpulse.yaml"


def start(config: Path, monkeypatch, page: str | None = None, sources: Sources | None = None, **query) -> AppTest:
    monkeypatch.setenv("KPULSE_CONFIG", str(config))
    monkeypatch.setenv("KPULSE_STATE_DIR", str(config.parent / "state"))
    monkeypatch.delenv("KPULSE_DASHBOARD_AUTH", raising=False)
    app = AppTest.from_file(str(APP_FILE), default_timeout=60)
    if sources is not None:
        app.session_state[SOURCES_KEY] = sources
    for key, value in query.items():
        app.query_params[key] = value
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    return open_page(app, page) if page else app


PARTITIONS = {"orders": 3, "payments": 2, "team_b.audit": 1}
"""Topic -> partitions, each with replicas 1, 2, 3 all in sync."""


def kafka_error(code: int) -> KafkaException:
    return KafkaException(KafkaError(code))


def answered(value=None, error: BaseException | None = None) -> Future:
    future: Future = Future()
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)
    return future


class FakeAdmin:
    """An Admin client whose principal may read every topic's metadata and offsets, but whose
    DescribeConfigs fails for the topics of ``refused`` (topic -> the exception of its future), or
    as a whole with ``whole_call``."""

    def __init__(self, refused: dict[str, BaseException], whole_call: BaseException | None = None):
        self.refused = refused
        self.whole_call = whole_call

    def list_topics(self, timeout=None, topic=None):
        return SimpleNamespace(topics={name: SimpleNamespace(error=None, partitions={
            p: SimpleNamespace(leader=1, replicas=[1, 2, 3], isrs=[1, 2, 3]) for p in range(count)})
            for name, count in PARTITIONS.items()})

    def describe_configs(self, resources, request_timeout=None):
        if self.whole_call is not None:
            raise self.whole_call
        entries = {"min.insync.replicas": SimpleNamespace(value="2", source=SimpleNamespace(name="DYNAMIC_TOPIC_CONFIG"),
                                                          is_default=False),
                   "retention.ms": SimpleNamespace(value="604800000", source=SimpleNamespace(name="DEFAULT_CONFIG"),
                                                   is_default=True)}
        return {r: answered(error=self.refused[r.name]) if r.name in self.refused else answered(entries)
                for r in resources}

    def list_offsets(self, request, request_timeout=None):
        return {tp: answered(SimpleNamespace(offset=10)) for tp in request}


class FakeLogDirs:
    def describe_log_dirs(self, topics):
        return [{"log_dirs": [{"error_code": 0, "topics": [
            {"name": t, "partitions": [{"partition_index": 0, "partition_size": 1000}]} for t in topics]}]}]


def unread_group(group_id: str, error: str) -> dict:
    """A consumer group as the lag collector writes one whose offsets could not be read."""
    return {"group_id": group_id, "type": "classic", "protocol_type": "consumer", "state": None, "members": None,
            "partition_count": 0, "total_lag": None, "total_lag_partial": False, "lag_unknown_partitions": 0,
            "max_lag_seconds": None, "max_lag_seconds_partial": False, "lag_seconds_unknown_partitions": 0,
            "status": None, "lag_seconds_threshold": 60.0, "error": error, "group_epoch": None,
            "assignment_epoch": None, "reconciling_members": None, "member_details": [], "partitions": []}


UNREAD_GROUPS = {"team-b-audit": "no coordinator: GROUP_AUTHORIZATION_FAILED",
                 "billing-eu": "OffsetFetch: COORDINATOR_LOAD_IN_PROGRESS",
                 HOSTILE_GROUP: "OffsetFetch: GROUP_AUTHORIZATION_FAILED"}


def add_unread_groups(snapshot: dict) -> None:
    snapshot["consumer_groups"] += [unread_group(g, error) for g, error in UNREAD_GROUPS.items()]


def unread_streams_apps(snapshot: dict) -> None:
    snapshot["streams_apps"].append({
        "application_id": "team-b-enricher", "protocol": "streams", "state": None, "group_state": None,
        "members": None, "group_error": "StreamsGroupDescribe: GROUP_AUTHORIZATION_FAILED",
        "expected_instances": None, "instances": [], "group": None, "transitions": [],
        "rebalances": {"count": 0, "total_seconds": 0.0, "ongoing_seconds": None}})
    streams_group = next(a for a in snapshot["streams_apps"] if a["application_id"] == STREAMS_GROUP)
    streams_group["group"].update(input_partitions=[], total_lag=None,
                                  lag_error="OffsetFetch: GROUP_AUTHORIZATION_FAILED")
