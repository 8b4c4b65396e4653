"""The shared frame of every page: the data sources, the chosen cluster, cached reads (caching
lives here, at the page edge, never in services), and errors shown as one line.

Pages call these helpers; they never build Kafka clients or read files themselves."""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from collections.abc import Iterator, Mapping

import pandas as pd
import streamlit as st

from dashboard import literal
from alerting.grouping import AlertGroup
from dashboard.services.acks import Ack, AckStore, Silencer, active
from dashboard.services.alerts import firing_alerts, grouped
from dashboard.services.groups import groups_frame
from dashboard.services.health import cannot_read as health_cannot_read
from dashboard.services.kafka_admin import ClusterAdmin
from dashboard.services.slos import READ_BACK_SECONDS, latest_status, status_table
from dashboard.services.sources import DashboardError, MissingData, Sources, TableRead, load_sources, one_line
from dashboard.services.topics import (TopicConfigs, consumer_rows_by_topic, consumers_frame, partitions_frame,
                                       sizes_from_log_dirs, topics_frame)
from kpulse.snapshot import ConsumerGroup, Snapshot

if TYPE_CHECKING:
    from kpulse.config.model import ClusterConfig
    from kpulse.records.model import RecordsRead
    from operations.service import Operations

LOG = logging.getLogger("kpulse.dashboard")
SOURCES_KEY = "kpulse_sources"
"""Session-state key: tests and benchmarks may put their own :class:`Sources` here before a run."""
CLUSTER_KEY = "cluster"
ALERT_HISTORY_SECONDS = 7 * 86400
SLO_STATUS_SECONDS = 15 * 60
"""Newest SLO evaluations are looked for in this window."""


@contextmanager
def shown_errors(what: str = "") -> Iterator[None]:
    """Run a part of a page; any failure becomes one ``st.error`` line (traceback only in the log),
    shown as text: errors quote topic and group names."""
    try:
        yield
    except DashboardError as error:
        st.error(f"{what + ': ' if what else ''}{literal.markdown(error)}", icon=":material/error:")
    except Exception as error:  # noqa: BLE001 - no traceback reaches the UI
        LOG.exception("dashboard error")
        st.error(f"{what + ': ' if what else ''}{literal.markdown(one_line(error))}", icon=":material/error:")


@st.cache_resource(show_spinner=False)
def _configured_sources(config_path: str | None) -> Sources:
    return load_sources(config_path)


def sources() -> Sources:
    """The injected sources, else those of ``$KPULSE_CONFIG`` (set by ``kpulse dashboard --config``)."""
    injected = st.session_state.get(SOURCES_KEY)
    return injected if injected is not None else _configured_sources(os.environ.get("KPULSE_CONFIG") or None)


def cluster() -> str:
    """The cluster chosen in the sidebar (the first configured one until then)."""
    names = sources().config.cluster_names
    chosen = st.session_state.get(CLUSTER_KEY)
    return chosen if chosen in names else names[0]


def refresh_seconds() -> float:
    """How often live panels refresh: the collection interval (at least 2 s; 10 s without a config)."""
    try:
        return max(2.0, sources().collect_seconds)
    except Exception:  # noqa: BLE001 - the frame shows the config error itself
        return 10.0


def now() -> float:
    return time.time()


def _bucket(seconds: float, step: float) -> float:
    """``seconds`` rounded down to ``step``, so cache keys repeat within one collection interval."""
    return float(int(seconds // step) * step)


@st.cache_resource(show_spinner=False, max_entries=8)
def _snapshot(_sources: Sources, lake_path: str, cluster_name: str, stamp: float | None) -> Snapshot | None:
    return _sources.snapshot(cluster_name)


def snapshot() -> Snapshot | None:
    """The chosen cluster's latest snapshot, parsed once per file version (read-only: do not mutate)."""
    src = sources()
    name = cluster()
    return _snapshot(src, src.lake_path, name, src.snapshot_stamp(name))


@st.cache_resource(show_spinner=False, max_entries=4)
def _groups_table(_sources: Sources, lake_path: str, cluster_name: str, stamp: float | None) -> pd.DataFrame:
    return groups_frame(_snapshot(_sources, lake_path, cluster_name, stamp))


@st.cache_resource(show_spinner=False, max_entries=4)
def _groups_by_id(_sources: Sources, lake_path: str, cluster_name: str, stamp: float | None
                  ) -> dict[str, ConsumerGroup]:
    snap = _snapshot(_sources, lake_path, cluster_name, stamp)
    return {g["group_id"]: g for g in (snap.get("consumer_groups") or [] if snap else [])}


@st.cache_resource(show_spinner=False, max_entries=4)
def _consumers_by_topic(_sources: Sources, lake_path: str, cluster_name: str, stamp: float | None
                        ) -> dict[str, list[dict[str, Any]]]:
    return consumer_rows_by_topic(_snapshot(_sources, lake_path, cluster_name, stamp))


def topic_consumers(topic: str) -> pd.DataFrame | None:
    """The groups consuming ``topic`` in the latest snapshot (``services.topics.consumer_rows_by_topic``,
    built once per snapshot; the table for this topic only); None when none does."""
    src = sources()
    name = cluster()
    rows = _consumers_by_topic(src, src.lake_path, name, src.snapshot_stamp(name)).get(topic)
    return consumers_frame(rows) if rows else None


PREWARM_POLL_SECONDS = 1.0
"""How often the prewarming thread looks for a new snapshot file."""
PREWARM_IDLE_SECONDS = 300.0
"""It prewarms only while someone used the dashboard this recently: an idle dashboard parses nothing."""
_last_visit = [0.0]


def _prewarm_once(src: Sources, seen: dict[tuple[str, str], float]) -> None:
    """For each cluster: parse its snapshot, and build what pages derive from it, once per new
    file; read its topic metadata, and build the Topics page's tables from it, once per period.
    A cluster that fails is left to the pages (they show why) and does not stop the others."""
    for name in src.config.cluster_names:
        try:
            stamp = src.snapshot_stamp(name)
            if stamp is not None and seen.get((name, "snapshot")) != stamp:
                seen[(name, "snapshot")] = stamp
                _snapshot(src, src.lake_path, name, stamp)
                _groups_table(src, src.lake_path, name, stamp)
                _groups_by_id(src, src.lake_path, name, stamp)
                _consumers_by_topic(src, src.lake_path, name, stamp)
            bucket = _bucket(now(), METADATA_SECONDS)
            if seen.get((name, "metadata")) != bucket:
                seen[(name, "metadata")] = bucket  # a cluster that does not answer is not asked again this period
                client = _admin(src, src.config.source, name, id(src.admin_factory))
                _topic_names(client, src.config.source, name, id(src.admin_factory), bucket)
                _topic_catalog(client, src.config.source, name, id(src.admin_factory), bucket)
        except Exception:  # noqa: BLE001 - the pages read the same and show what fails
            LOG.debug("prewarming %s failed", name, exc_info=True)


def _prewarm_loop(src: Sources) -> None:
    seen: dict[tuple[str, str], float] = {}
    while True:
        time.sleep(PREWARM_POLL_SECONDS)
        if time.time() - _last_visit[0] <= PREWARM_IDLE_SECONDS:
            _prewarm_once(src, seen)


@st.cache_resource(show_spinner=False)
def _prewarming(_sources: Sources, lake_path: str) -> threading.Thread:
    thread = threading.Thread(target=_prewarm_loop, args=(_sources,), name="kpulse-snapshot-prewarm", daemon=True)
    thread.start()
    return thread


def prewarm() -> None:
    """Keep the snapshot's caches warm while the dashboard is in use: a thread parses each new
    snapshot as the collectors write it (every collection interval) and builds the group and topic
    tables pages derive from it, and reads the topic metadata every :data:`METADATA_SECONDS`, so a
    page load after a new snapshot or period does not wait for that (parsing a large snapshot
    and building the Topics page's tables take a noticeable part of a second: docs/performance.md,
    "The dashboard at scale"). Only for the configured sources (tests that inject their own
    start no thread)."""
    _last_visit[0] = time.time()
    if st.session_state.get(SOURCES_KEY) is None:
        src = sources()
        _prewarming(src, src.lake_path)


def groups_table() -> pd.DataFrame:
    """The snapshot's consumer groups as the page's table (``services.groups.groups_frame``), built
    once per snapshot: at 10,000 groups building it is most of a rerun (read-only: do not mutate)."""
    src = sources()
    name = cluster()
    return _groups_table(src, src.lake_path, name, src.snapshot_stamp(name))


def consumer_group(group_id: str) -> ConsumerGroup | Mapping[str, None]:
    """The snapshot's entry of one consumer group (``{}`` when it is not there), found by id."""
    src = sources()
    name = cluster()
    return _groups_by_id(src, src.lake_path, name, src.snapshot_stamp(name)).get(group_id) or {}


@st.cache_data(show_spinner=False, ttl=10, max_entries=64)
def _read(_sources: Sources, lake_path: str, table: str, cluster_name: str, since: float,
          columns: tuple[str, ...] | None, where: tuple[tuple[str, str], ...] = ()) -> TableRead:
    return _sources.read_checked(table, cluster_name, since=since, columns=list(columns) if columns else None,
                                 where=dict(where))


def read(table: str, window_seconds: float, columns: list[str] | None = None,
         where: dict[str, str] | None = None) -> pd.DataFrame:
    """Rows of ``table`` for the chosen cluster over the last ``window_seconds`` (only those whose
    columns equal ``where``'s values, filtered in the scan: one group of 10,000); a warning on the
    page when files holding some of them could not be read."""
    src = sources()
    since = _bucket(now() - window_seconds, src.collect_seconds)
    result = _read(src, src.lake_path, table, cluster(), since, tuple(columns) if columns else None,
                   tuple(sorted((where or {}).items())))
    _warn_missing(result)
    return result.frame


def _warn_missing(result: TableRead) -> None:
    if result.missing is not None:
        LOG.warning("lake: %s", result.missing.line())
        st.warning(result.missing.summary(), icon=":material/warning:")
        st.text(result.missing.first_file())


def cannot_read(snap: Snapshot | None) -> str | None:
    """"kpulse cannot read cluster <name>: <error>" when the chosen cluster's newest snapshot says its
    connection check failed (``services.health.cannot_read``): every page shows it under the title."""
    return health_cannot_read(snap, cluster())


def connection_limits() -> list[str]:
    """What the chosen cluster's principal cannot see for want of an ACL on the cluster, one line
    each (the newest snapshot's ``connection.limits``); pages word them where they matter
    (``services.unread``)."""
    snap = snapshot()
    connection = snap.get("connection") if snap else None
    return list(connection.get("limits") or []) if connection else []


def newest_sample_time(snap: Snapshot | None) -> float | None:
    """The snapshot's time, else the newest ``cluster_health`` row of the last hour."""
    if snap is not None:
        return float(snap["time"])
    health = read("cluster_health", 3600, ["time"])
    return health["time"].max().timestamp() if len(health) else None


@st.cache_resource(show_spinner=False)
def _admin(_sources: Sources, source: str, cluster_name: str, factory_id: int) -> ClusterAdmin:
    return ClusterAdmin(_sources.config.cluster(cluster_name), factory=_sources.admin_factory,
                        log_dirs_factory=_sources.log_dirs_factory)


def admin() -> ClusterAdmin:
    src = sources()
    return _admin(src, src.config.source, cluster(), id(src.admin_factory))


METADATA_SECONDS = 30
"""Topic metadata (every partition, through the Admin API) is read again this often."""


@st.cache_resource(show_spinner=False, ttl=2 * METADATA_SECONDS, max_entries=8)
def _partitions(_admin_client: ClusterAdmin, source: str, cluster_name: str, factory_id: int,
                bucket: float) -> list[dict[str, Any]]:
    return _admin_client.partitions()


def topic_partitions() -> list[dict[str, Any]]:
    """Every partition's metadata (Admin API), refreshed every 30 s; shared, not copied, between
    page runs (``st.cache_data`` unpickled 20,000 dicts on every run): read-only."""
    src = sources()
    return _partitions(admin(), src.config.source, cluster(), id(src.admin_factory), _bucket(now(), METADATA_SECONDS))


@st.cache_resource(show_spinner=False, ttl=2 * METADATA_SECONDS, max_entries=8)
def _topic_names(_admin_client: ClusterAdmin, source: str, cluster_name: str, factory_id: int,
                 bucket: float) -> tuple[str, ...]:
    return tuple(sorted({p["topic"] for p in _partitions(_admin_client, source, cluster_name, factory_id, bucket)}))


def topic_names() -> tuple[str, ...]:
    """Every topic's name, sorted (the operation forms' pickers), from :func:`topic_partitions`."""
    src = sources()
    return _topic_names(admin(), src.config.source, cluster(), id(src.admin_factory), _bucket(now(), METADATA_SECONDS))


@st.cache_resource(show_spinner=False, max_entries=4)
def _topic_catalog(_admin_client: ClusterAdmin, source: str, cluster_name: str, factory_id: int,
                   bucket: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    partitions = partitions_frame(_partitions(_admin_client, source, cluster_name, factory_id, bucket))
    return partitions, topics_frame(partitions)


def topic_catalog() -> tuple[pd.DataFrame, pd.DataFrame]:
    """(every partition, every topic) as the Topics page's frames (``services.topics``), from the
    Admin API's metadata, built once per 30 s, not on every rerun (read-only: do not mutate)."""
    src = sources()
    return _topic_catalog(admin(), src.config.source, cluster(), id(src.admin_factory),
                          _bucket(now(), METADATA_SECONDS))


@st.cache_data(show_spinner=False, ttl=60, max_entries=32)
def _topic_configs(_admin_client: ClusterAdmin, source: str, cluster_name: str, factory_id: int,
                   topic_names: tuple[str, ...]) -> TopicConfigs:
    return _admin_client.topic_configs(list(topic_names))


def topic_configs(topic_names: list[str]) -> TopicConfigs:
    """The configs of the topics shown (one DescribeConfigs), refreshed every minute; topics whose
    configs were refused say why. When the call fails as a whole, every topic says why (that
    answer is not cached: the next run asks again)."""
    src = sources()
    try:
        return _topic_configs(admin(), src.config.source, cluster(), id(src.admin_factory), tuple(topic_names))
    except DashboardError as error:
        return TopicConfigs.unread(topic_names, str(error))


@st.cache_data(show_spinner=False, ttl=60, max_entries=32)
def _topic_sizes(_admin_client: ClusterAdmin, source: str, cluster_name: str,
                 topic_names: tuple[str, ...]) -> dict[str, int]:
    return sizes_from_log_dirs(_admin_client.log_dirs(list(topic_names)))


def topic_sizes(topic_names: list[str]) -> dict[str, int]:
    """Bytes per topic (one copy), for the topics shown; refreshed every minute."""
    src = sources()
    return _topic_sizes(admin(), src.config.source, cluster(), tuple(topic_names))


def ack_store() -> AckStore:
    return AckStore(sources().lake_path)


def silencer() -> Silencer | None:
    """Alertmanager silences for the acknowledgements (``dashboard/services/acks.py``); ``None`` when no
    Alertmanager is configured."""
    config = sources().config
    settings = config.alerting.alertmanager
    return Silencer(settings, dashboard_url=config.dashboard.external_url) if settings.enabled else None


def alert_acks() -> dict[tuple[str, str], Ack]:
    """(rule, entity) -> the acknowledgement or silence running now, of the chosen cluster."""
    return active(ack_store().load(), cluster(), now())


def firing(acks: Mapping[tuple[str, str], Ack] | None = None) -> pd.DataFrame:
    """Alerts firing now for the chosen cluster, acknowledgements applied (one row per entity)."""
    events = read("alert_event", ALERT_HISTORY_SECONDS)
    return firing_alerts(events, snapshot(), alert_acks() if acks is None else acks, now())


def firing_groups(firing_rows: pd.DataFrame, acks: Mapping[tuple[str, str], Ack] | None = None
                  ) -> tuple[list[AlertGroup], pd.DataFrame]:
    """``firing_rows`` grouped by rule (``alerting/grouping.py``): (groups, their table)."""
    return grouped(firing_rows, alert_acks() if acks is None else acks, now())


@st.cache_resource(show_spinner=False, max_entries=4)
def _slo_latest(_sources: Sources, lake_path: str, cluster_name: str,
                since: float) -> tuple[pd.DataFrame, pd.DataFrame, MissingData | None]:
    result = _sources.read_checked("slo_status", cluster_name, since=since)
    latest = latest_status(result.frame, fresh_since=since + READ_BACK_SECONDS)
    return latest, status_table(latest), result.missing


def _slo_views() -> tuple[pd.DataFrame, pd.DataFrame]:
    src = sources()
    # read again once per SLO evaluation interval (the SLO job writes then), not on every rerun
    since = _bucket(now() - SLO_STATUS_SECONDS - READ_BACK_SECONDS, src.config.intervals.slo_seconds)
    latest, table, missing = _slo_latest(src, src.lake_path, cluster(), since)
    _warn_missing(TableRead(latest.iloc[:0], missing))
    return latest, table


def slo_latest() -> pd.DataFrame:
    """The newest status of every SLO and entity (``services.slos.latest_status``), computed once
    per SLO evaluation interval: at 10,000 SLOs an hour of ``slo_status`` is 600,000 rows (read-only:
    do not mutate)."""
    return _slo_views()[0]


def slo_table() -> pd.DataFrame:
    """:func:`slo_latest` as the SLO page's searchable list (``services.slos.status_table``)."""
    return _slo_views()[1]


TIMING_FILE_ENV = "KPULSE_DASHBOARD_TIMING_FILE"
"""When set, every full script run appends ``{"page", "seconds", "time"}`` as a JSON line to this
file: the server time of a page (bench/dashboard.py --browser reads it)."""


def record_run_time(page: str, started: float) -> None:
    """Append this script run's duration (since ``started``, ``time.perf_counter()``) to
    :data:`TIMING_FILE_ENV`'s file, when it is set."""
    path = os.environ.get(TIMING_FILE_ENV)
    if not path:
        return
    line = json.dumps({"page": page, "seconds": round(time.perf_counter() - started, 4), "time": time.time()})
    with open(path, "a", encoding="utf-8") as out:
        out.write(line + "\n")


def read_records(kind: str, group_id: str, topic: str, partition: int, count: int) -> RecordsRead:
    """The next ``count`` records of ``topic``'s ``partition`` from the committed offset of consumer
    group ``group_id`` (``kind`` ``consumer``) or the start offset of share group ``group_id``
    (``share``), on the chosen cluster: one bounded read (the cluster's ``records`` bounds), never
    raising (its ``error`` says why it failed). Never cached: each call asks the brokers, and the
    caller keeps the answer only in its own session's state (nothing read is shared between users
    or written to a log)."""
    src = sources()
    config = src.config.cluster(cluster())
    reader = src.records_reader or _read_records
    return reader(config, kind, group_id, topic, partition, count)


def _read_records(config: ClusterConfig, kind: str, group_id: str, topic: str, partition: int,
                  count: int) -> RecordsRead:
    from kpulse.kafka.record_fetch import read_records

    return read_records(config, topic, partition, group=group_id, count=count)  # a share group's: its start offset


def entity_param(name: str) -> str | None:
    """A query parameter naming an entity (``?group=...``), for links between pages."""
    value = st.query_params.get(name)
    return value or None


@st.cache_resource(show_spinner=False)
def _operations(_sources: Sources, source: str, lake_path: str, state_dir: str, factory_id: int) -> Operations:
    from operations.service import Operations

    return Operations(_sources.config, state_dir=Path(state_dir), admin_factory=_sources.admin_factory)


def operations() -> Operations:
    """The operations service (plans, executes, audits) for the configured clusters; one per config."""
    from kpulse import home

    src = sources()
    return _operations(src, src.config.source, src.lake_path, str(home.state_dir()), id(src.admin_factory))
