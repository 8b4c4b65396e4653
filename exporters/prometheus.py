"""kpulse's Prometheus exporter: the latest snapshot of every cluster as metrics.

Three sets of series (docs/monitoring.md, "Metric names", has the table):

- **kafka_exporter's** (``exporter.compatibility`` includes ``kafka_exporter``, the default): its 15
  metrics but the ZooKeeper one, with its names, labels and help (``kafka_exporter.go``,
  danielqsj/kafka_exporter): brokers (``kafka_brokers``, ``kafka_broker_info{id,address}``), every
  partition of every topic the snapshot's ``cluster.topics`` holds, internal ones included
  (``kafka_topic_partitions{topic}``, ``kafka_topic_partition_{current_offset,oldest_offset,leader,
  replicas,in_sync_replica,leader_is_preferred,under_replicated_partition}{topic,partition}``:
  :func:`_emit_topics`), and every consumer group (``kafka_consumergroup_members{consumergroup}``,
  ``..._current_offset`` and ``..._lag{consumergroup,topic,partition}``, ``..._current_offset_sum``
  and ``..._lag_sum{consumergroup,topic}``). Its two ``_sum`` names are served ``untyped``
  (:data:`UNTYPED_SERIES`): Prometheus reserves the suffix for summaries and histograms, and
  ``promtool check metrics`` refuses it on a gauge.
- **kafka-lag-exporter's** (``kafka_lag_exporter``, off by default): ``kafka_consumergroup_group_*`` and
  ``kafka_partition_{latest,earliest}_offset`` with its labels (``cluster_name`` for ``cluster``),
  as its ``ConsumerGroupCollector.scala`` computes them: :func:`_emit_lag_exporter`.
- **kpulse's own**, ``kpulse_*``, named as Prometheus asks (base units, ``_total`` on counters only,
  ``_info`` for a series whose labels are the information): a group's sums
  (``kpulse_consumergroup_lag``, ``kpulse_consumergroup_lag_seconds``), statuses, states, KRaft, Streams,
  share groups, the probe, the collectors, the alerts.

Every series but kafka-lag-exporter's has a ``cluster`` label (kpulse can watch several); ``/metrics``
serves every cluster, ``/metrics?cluster=NAME`` one (:func:`serve`). A null value is not exported
(absent, not zero).

A group's sums are over the partitions whose value is known. While a broker is down some are not:
``kpulse_consumergroup_lag`` and ``kpulse_consumergroup_lag_seconds`` are then lower bounds, and
``kpulse_consumergroup_lag_unknown_partitions`` / ``..._lag_seconds_unknown_partitions`` (0 when
complete) say how many partitions were left out. A lower bound is still exported rather than
dropped: an alert on ``lag > N`` that holds on part of the partitions holds on all of them.

Granularity (``exporter.granularity``, as kminion's ``minion.consumerGroups.granularity``):
``partition`` (the default) exports every series above; ``group`` drops the per-partition series of
consumer and share groups (:data:`PARTITION_SERIES`), which at 10,000 groups of 10 partitions are
most of the page (the topics' partitions stay: one series each per partition, not per group).

At that scale building prometheus_client's families on every scrape is too slow for a scrape
interval (docs/performance.md, "The exporter at scale"): :meth:`SnapshotExporter.text` renders the
exposition once per snapshot, in a thread of its own as soon as the snapshot is in, and every scrape
is served the newest rendered bytes (:func:`serve`, the server ``kpulse collect`` starts).
:meth:`SnapshotExporter.collect` still yields the same series as families, for a registry.
"""

from __future__ import annotations

import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from typing import Literal, Protocol

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric, UntypedMetricFamily
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from kpulse.config.model import EXPORTER_COMPATIBILITIES, EXPORTER_GRANULARITIES
from kpulse.kafka.group_model import STATES
from kpulse.lag_contract import STATUS_NAMES
from kpulse.refusals import AREAS, refusals
from kpulse.share_contract import SHARE_STATUS_NAMES
from kpulse.snapshot import (AlertmanagerDelivery, Broker, ClusterHealth, ConsumerGroup, GroupPartition, Probe,
                             ShareGroups, Snapshot, StreamsApp, StreamsGroupDetail, TopicState)

STATUSES = STATUS_NAMES
STREAMS_STATES = ("CREATED", "REBALANCING", "RUNNING", "PENDING_SHUTDOWN", "NOT_RUNNING", "PENDING_ERROR", "ERROR",
                  "UNREACHABLE")
SHARE_STATES = STATES["share"]
"""Kafka's share group states; a state outside them (``Unknown``) is exported as 1 with 0 for these."""
LOG = logging.getLogger("kpulse.exporter")
GRANULARITIES = EXPORTER_GRANULARITIES
COMPATIBILITIES = EXPORTER_COMPATIBILITIES
DEFAULT_COMPATIBILITY = ("kafka_exporter",)
PARTITION_SERIES = ("kafka_consumergroup_lag", "kafka_consumergroup_current_offset",
                    "kpulse_consumergroup_partition_lag_seconds", "kpulse_sharegroup_partition_lag",
                    "kpulse_sharegroup_start_offset", "kafka_consumergroup_group_offset", "kafka_consumergroup_group_lag",
                    "kafka_consumergroup_group_lag_seconds")
"""The per-partition series of groups: exported with granularity ``partition`` only."""
KAFKA_EXPORTER_SERIES = (
    "kafka_brokers", "kafka_broker_info", "kafka_topic_partitions", "kafka_topic_partition_current_offset",
    "kafka_topic_partition_oldest_offset", "kafka_topic_partition_leader", "kafka_topic_partition_replicas",
    "kafka_topic_partition_in_sync_replica", "kafka_topic_partition_leader_is_preferred",
    "kafka_topic_partition_under_replicated_partition", "kafka_consumergroup_current_offset",
    "kafka_consumergroup_current_offset_sum", "kafka_consumergroup_lag", "kafka_consumergroup_lag_sum",
    "kafka_consumergroup_members")
"""kafka_exporter's 16 metrics but ``kafka_consumergroupzookeeper_lag_zookeeper`` (ZooKeeper's offsets)."""
LAG_EXPORTER_SERIES = (
    "kafka_consumergroup_group_offset", "kafka_consumergroup_group_lag", "kafka_consumergroup_group_lag_seconds",
    "kafka_consumergroup_group_max_lag", "kafka_consumergroup_group_max_lag_seconds",
    "kafka_consumergroup_group_sum_lag", "kafka_consumergroup_group_topic_sum_lag", "kafka_partition_latest_offset",
    "kafka_partition_earliest_offset")
"""kafka-lag-exporter's metrics (``Metrics.scala``) but ``kafka_consumergroup_poll_time_ms``, whose
abbreviated unit promtool refuses (``kpulse_collector_duration_seconds{collector="consumer_lag"}``
is its counterpart)."""
COUNTER_SERIES = frozenset({
    "kpulse_alertmanager_notifications_sent_total", "kpulse_alertmanager_notifications_failed_total",
    "kpulse_broker_produced_bytes_total", "kpulse_broker_fetched_bytes_total", "kpulse_broker_produced_messages_total",
    "kpulse_kraft_metadata_errors_total", "kpulse_probe_produced_records_total", "kpulse_probe_consumed_records_total",
    "kpulse_probe_lost_records_total", "kpulse_probe_duplicated_records_total"})
"""Series exported as counters."""
UNTYPED_SERIES = frozenset({"kafka_consumergroup_lag_sum", "kafka_consumergroup_current_offset_sum"})
"""kafka_exporter's names that end in ``_sum`` (a gauge may not: promtool): exported untyped. The
others are gauges."""

Labels = dict[str, str | int]
"""Label name -> value: text, or a broker id or a partition number (written as its decimal)."""


class Emit(Protocol):
    """Where a sample goes: a registry's families (:meth:`SnapshotExporter.collect`) or the text
    exposition (:class:`_TextFamilies`). A ``None`` value is not exported."""

    def __call__(self, name: str, help_text: str, labels: Labels, value: float | None) -> None: ...


def kind_of(name: str) -> Literal["counter", "untyped", "gauge"]:
    """The TYPE a series is exported with."""
    return "counter" if name in COUNTER_SERIES else "untyped" if name in UNTYPED_SERIES else "gauge"


CLUSTER_SERIES: tuple[tuple[Literal["brokers_total", "under_replicated_partitions", "offline_partitions",
                                    "under_min_isr_partitions", "active_controller_count",
                                    "preferred_leader_imbalance"], str, str], ...] = (
    ("brokers_total", "kpulse_cluster_known_brokers", "Brokers known (up or not)"),
    ("under_replicated_partitions", "kpulse_cluster_under_replicated_partitions",
     "Partitions whose ISR is smaller than the replica set"),
    ("offline_partitions", "kpulse_cluster_offline_partitions", "Partitions without a leader"),
    ("under_min_isr_partitions", "kpulse_cluster_under_min_isr_partitions",
     "Partitions whose ISR is smaller than min.insync.replicas"),
    ("active_controller_count", "kpulse_cluster_active_controllers",
     "Nodes reporting themselves as the active controller (must be 1)"),
    ("preferred_leader_imbalance", "kpulse_cluster_preferred_leader_imbalance",
     "Online partitions not led by their preferred replica"))
""":class:`kpulse.snapshot.ClusterHealth` field -> (series, help)."""
BrokerField = Literal["request_handler_idle_ratio", "network_processor_idle_ratio", "partition_count", "leader_count",
                      "produce_p99_ms", "fetch_p99_ms", "bytes_in_total", "bytes_out_total", "messages_in_total",
                      "metadata_error_count", "metadata_apply_lag_ms"]
BROKER_SERIES: tuple[tuple[BrokerField, str, str, float], ...] = (
    ("request_handler_idle_ratio", "kpulse_broker_request_handler_idle_ratio",
     "Idle fraction (0..1) of the broker's request handler threads", 1),
    ("network_processor_idle_ratio", "kpulse_broker_network_processor_idle_ratio",
     "Idle fraction (0..1) of the broker's network processor threads", 1),
    ("partition_count", "kpulse_broker_partitions", "Partition replicas the broker hosts", 1),
    ("leader_count", "kpulse_broker_leader_partitions", "Partitions the broker leads", 1),
    ("produce_p99_ms", "kpulse_broker_produce_p99_seconds",
     "99th percentile of the broker's Produce request total time, seconds", 1000),
    ("fetch_p99_ms", "kpulse_broker_fetch_p99_seconds",
     "99th percentile of the broker's FetchConsumer request total time, seconds", 1000),
    ("bytes_in_total", "kpulse_broker_produced_bytes_total",
     "Bytes produced to the broker since it started, replication excluded (BytesInPerSec's count)", 1),
    ("bytes_out_total", "kpulse_broker_fetched_bytes_total",
     "Bytes consumers fetched from the broker since it started, replication excluded (BytesOutPerSec's count)", 1),
    ("messages_in_total", "kpulse_broker_produced_messages_total",
     "Messages produced to the broker since it started (MessagesInPerSec's count)", 1),
    ("metadata_error_count", "kpulse_kraft_metadata_errors_total",
     "Errors this controller-role node met loading or applying the metadata log since it started "
     "(MetadataErrorCount)", 1),
    ("metadata_apply_lag_ms", "kpulse_kraft_metadata_apply_lag_seconds",
     "Now minus the append time of the last metadata record this node applied, seconds (LastAppliedRecordLagMs)",
     1000))
""":class:`kpulse.snapshot.Broker` field -> (series, help, divisor: milliseconds to seconds), label ``broker``."""
ProbeField = Literal["produce_availability", "consume_availability", "latency_p99_ms", "produced_total",
                     "consumed_total", "lost_total", "duplicated_total"]
PROBE_SERIES: tuple[tuple[ProbeField, str, str, float], ...] = (
    ("produce_availability", "kpulse_probe_produce_availability",
     "End-to-end probe: records acknowledged / records sent in the last cycle (0..1)", 1),
    ("consume_availability", "kpulse_probe_consume_availability",
     "End-to-end probe: of the last cycle's acknowledged records, the fraction read back in the cycle (0..1)", 1),
    ("latency_p99_ms", "kpulse_probe_latency_p99_seconds",
     "End-to-end probe: 99th percentile of produce-to-consume latency in the last cycle, seconds", 1000),
    ("produced_total", "kpulse_probe_produced_records_total",
     "End-to-end probe: records acknowledged since the collection loop started", 1),
    ("consumed_total", "kpulse_probe_consumed_records_total",
     "End-to-end probe: records read back since the collection loop started", 1),
    ("lost_total", "kpulse_probe_lost_records_total",
     "End-to-end probe: records acknowledged but never read back since the collection loop started", 1),
    ("duplicated_total", "kpulse_probe_duplicated_records_total",
     "End-to-end probe: reads of a record already read since the collection loop started", 1))
""":class:`kpulse.snapshot.Probe` field -> (series, help, divisor: milliseconds to seconds)."""


class UnknownCluster(LookupError):
    """``/metrics?cluster=NAME`` names no cluster the exporter has a snapshot of (one line)."""


class SnapshotExporter(Collector):
    """A prometheus_client collector over the latest snapshots; ``update`` swaps one in.

    ``granularity``: one of :data:`GRANULARITIES` (``group`` leaves out :data:`PARTITION_SERIES`);
    ``compatibility``: some of :data:`COMPATIBILITIES`, the peers whose series are served too."""

    def __init__(self, granularity: str = "partition", compatibility: Iterable[str] = DEFAULT_COMPATIBILITY) -> None:
        if granularity not in GRANULARITIES:
            raise ValueError(f"granularity must be one of {', '.join(GRANULARITIES)}, got {granularity!r}")
        self.compatibility = tuple(compatibility)
        unknown = [name for name in self.compatibility if name not in COMPATIBILITIES]
        if unknown:
            raise ValueError(f"compatibility must be some of {', '.join(COMPATIBILITIES)}, got {unknown[0]!r}")
        self.granularity = granularity
        self._lock = threading.Lock()
        self._render_lock = threading.Lock()
        self._snapshots: dict[str, Snapshot] = {}
        self._version = 0
        self._versions: dict[str, int] = {}
        """Cluster -> the version its snapshot came in at (its own page is rendered again only then)."""
        self._texts: dict[str | None, tuple[int, bytes]] = {}
        """Page (None: every cluster; else one cluster's) -> (the version it was rendered at, its bytes)."""
        self._served: set[str | None] = set()
        """The pages scrapes asked for: the ones rendered in the background."""
        self._stale = threading.Event()
        self._renderer: threading.Thread | None = None
        self._render_failed = False

    def update(self, snapshot: Snapshot) -> None:
        with self._lock:
            self._snapshots[snapshot["cluster_name"]] = snapshot
            self._version += 1
            self._versions[snapshot["cluster_name"]] = self._version
        self._stale.set()

    def render_in_background(self) -> None:
        """From now on render each new snapshot's page in a thread of its own as soon as it is
        in, so no scrape waits for it (:meth:`served_text`)."""
        with self._lock:
            if self._renderer is not None:
                return
            self._renderer = threading.Thread(target=self._render_loop, name="kpulse-exporter-render", daemon=True)
        self._renderer.start()

    def _render_loop(self) -> None:
        while True:
            self._stale.wait()
            self._stale.clear()
            with self._lock:
                pages = list(self._served)
            for page in pages:
                try:
                    self.text(page)
                except Exception:  # noqa: BLE001 - the next scrape renders it again and answers the error
                    self._render_failed = True
                    LOG.exception("exporter: cannot render the snapshot")

    def _current(self, cluster: str | None = None) -> tuple[int, list[Snapshot]]:
        """The version of the page and its snapshots: every cluster's, or ``cluster``'s."""
        with self._lock:
            if cluster is None:
                return self._version, list(self._snapshots.values())
            if cluster not in self._snapshots:
                known = ", ".join(sorted(self._snapshots)) or "none yet"
                raise UnknownCluster(f"no cluster named {cluster!r} here (clusters: {known})")
            return self._versions[cluster], [self._snapshots[cluster]]

    def collect(self) -> Iterator[Metric]:
        _, snapshots = self._current()
        families: dict[str, GaugeMetricFamily | CounterMetricFamily | UntypedMetricFamily] = {}

        def emit(name: str, help_text: str, labels: Labels, value: float | None) -> None:
            if value is None:
                return
            family = families.get(name)
            if family is None:
                kind = kind_of(name)
                if kind == "counter":
                    family = CounterMetricFamily(name, help_text, labels=list(labels))
                elif kind == "untyped":
                    family = UntypedMetricFamily(name, help_text, labels=list(labels))
                else:
                    family = GaugeMetricFamily(name, help_text, labels=list(labels))
                families[name] = family
            family.add_metric([str(v) for v in labels.values()], float(value))

        for snapshot in snapshots:
            _emit_snapshot(emit, snapshot, self.granularity, self.compatibility)
        yield from families.values()

    def text(self, cluster: str | None = None) -> bytes:
        """The exposition (Prometheus text format 0.0.4) of the latest snapshots (of every cluster,
        or of ``cluster``: :class:`UnknownCluster` when there is no such snapshot): rendered on the
        first call after an :meth:`update`, then the same bytes until the next one."""
        with self._render_lock:  # one scrape renders, the others wait for its bytes
            version, snapshots = self._current(cluster)
            kept = self._texts.get(cluster)
            if kept is None or kept[0] != version:
                rendered = _TextFamilies()
                for snapshot in snapshots:
                    _emit_snapshot(rendered, snapshot, self.granularity, self.compatibility)
                kept = self._texts[cluster] = (version, rendered.exposition())
                self._render_failed = False
            return kept[1]

    def served_text(self, cluster: str | None = None) -> bytes:
        """What a scrape is answered: the newest rendered page (of every cluster, or of ``cluster``),
        even while the next snapshot's is being rendered (at most one cycle older than :meth:`text`);
        :meth:`text` before the first, and after a render failed (the scrape then answers the error)."""
        rendered = self._texts.get(cluster)
        body = rendered[1] if rendered is not None and not self._render_failed else self.text(cluster)
        with self._lock:  # a page asked for (of a cluster there is) is rendered in the background from now on
            self._served.add(cluster)
        return body


class _TextFamilies:
    """An ``emit`` that writes each sample straight as its exposition line (what
    ``generate_latest`` prints for a :class:`GaugeMetricFamily`, without building one)."""

    def __init__(self) -> None:
        self._families: dict[str, tuple[str, list[str]]] = {}
        self._escaped: dict[str, str] = {}
        self._last_labels: Labels | None = None
        self._last_text = ""

    def __call__(self, name: str, help_text: str, labels: Labels, value: float | None) -> None:
        if value is None:
            return
        family = self._families.get(name)
        if family is None:
            family = self._families[name] = (help_text, [])
        if labels is not self._last_labels:  # a group's or a partition's series share one labels dict
            self._last_labels, self._last_text = labels, ",".join(  # sorted by name, as generate_latest
                f'{key}="{self._escape(raw)}"' for key, raw in sorted(labels.items()))
        # as floatToGoString writes it (what generate_latest prints), without its cost for most ints
        shown = f"{value}.0" if type(value) is int and -10**15 < value < 1_000_000 else floatToGoString(value)
        family[1].append(f"{name}{{{self._last_text}}} {shown}\n")

    def _escape(self, raw: str | int) -> str:
        label = raw if type(raw) is str else str(raw)
        shown = self._escaped.get(label)
        if shown is None:
            shown = self._escaped[label] = label.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')
        return shown

    def exposition(self) -> bytes:
        out = []
        for name, (help_text, lines) in self._families.items():
            shown_help = help_text.replace("\\", "\\\\").replace("\n", "\\n")
            out.append(f"# HELP {name} {shown_help}\n# TYPE {name} {kind_of(name)}\n")
            out.extend(lines)
        return "".join(out).encode()


class _OneCluster(Collector):
    """Another collector's series of one cluster (label ``cluster``): ``/metrics?cluster=NAME``'s
    share of the extra registry (the SLO series)."""

    def __init__(self, collector: Collector, cluster: str) -> None:
        self._collector, self._cluster = collector, cluster

    def collect(self) -> Iterator[Metric]:
        for family in self._collector.collect():
            kept = [sample for sample in family.samples if sample.labels.get("cluster") == self._cluster]
            if kept:
                copy = Metric(family.name, family.documentation, family.type, family.unit)
                copy.samples = kept
                yield copy


def serve(exporter: SnapshotExporter, *, port: int, host: str,
          registry: Collector | None = None) -> tuple[ThreadingHTTPServer, threading.Thread]:
    """Serve ``/metrics`` on ``host:port`` (0 = any free port: see ``server.server_port``) in a
    daemon thread: the exporter's rendered bytes (:meth:`SnapshotExporter.served_text`, each
    snapshot rendered once, in the background), then ``registry``'s series (small, e.g. the SLO
    statuses) rendered per scrape. ``/metrics?cluster=NAME`` serves one cluster's series (404 for a
    cluster it has no snapshot of): one scrape job per cluster, so that a dashboard with no cluster
    variable never sums two clusters. Stop with ``server.shutdown()``."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            path, _, query = self.path.partition("?")
            if path not in ("/", "/metrics"):
                self.send_error(404, "only /metrics is served here")
                return
            asked = parse_qs(query).get("cluster", [])
            if len(asked) > 1:
                self.send_error(400, "name one cluster: /metrics?cluster=NAME")
                return
            cluster = asked[0] if asked else None
            try:
                body = exporter.served_text(cluster)
                if registry is not None:
                    body += generate_latest(registry if cluster is None else _OneCluster(registry, cluster))
            except UnknownCluster as error:
                self.send_error(404, str(error))
                return
            except Exception as error:  # noqa: BLE001 - one line to the scraper, the traceback in the log
                LOG.exception("exporter: cannot answer a scrape")
                self.send_error(500, f"cannot render the metrics: {type(error).__name__}")
                return
            self.send_response(200)
            self.send_header("Content-Type", CONTENT_TYPE_LATEST)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - scrapes are not logged
            pass

    exporter.render_in_background()
    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="kpulse-exporter", daemon=True)
    thread.start()
    return server, thread


def _emit_snapshot(emit: Emit, snapshot: Snapshot, granularity: str = "partition",
                   compatibility: Collection[str] = DEFAULT_COMPATIBILITY) -> None:
    per_partition = granularity == "partition"
    kafka_exporter = "kafka_exporter" in compatibility
    c: Labels = {"cluster": snapshot["cluster_name"]}
    cluster: ClusterHealth | Mapping[str, None] = snapshot.get("cluster") or {}
    if kafka_exporter:
        emit("kafka_brokers", "Number of Brokers in the Kafka Cluster.", c, cluster.get("brokers_up"))
        for known in cluster.get("brokers") or []:
            if known["up"] and known["address"] is not None:
                emit("kafka_broker_info", "Information about the Kafka Broker.",
                     {**c, "id": known["id"], "address": known["address"]}, 1)
        _emit_topics(emit, c, cluster.get("topics"))
    for key, name, text in CLUSTER_SERIES:
        emit(name, text, c, cluster.get(key))
    found = refusals(snapshot)
    for area in AREAS:
        emit("kpulse_not_authorized_values", "Values kpulse's principal may not read, or probe steps it may not "
             "take, by area (their reasons, 'not authorized: <Operation> on <resource>', are in the snapshot)",
             {**c, "area": area}, len(found.get(area, ())))
    for broker in snapshot.get("brokers", []):
        _emit_broker(emit, {**c, "broker": broker["id"]}, broker)
    _emit_kraft(emit, c, cluster)
    for group in snapshot.get("consumer_groups", []):
        _emit_consumer_group(emit, {**c, "consumergroup": group["group_id"]}, group, per_partition, kafka_exporter)
    if "kafka_lag_exporter" in compatibility:
        _emit_lag_exporter(emit, snapshot, cluster.get("topics"), per_partition)
    for app in snapshot.get("streams_apps", []):
        a = {**c, "application_id": app["application_id"]}
        emit("kpulse_streams_app_running", "1 when every expected instance is RUNNING", a,
             None if app.get("state") is None else int(app["state"] == "RUNNING"))
        if app.get("protocol") == "streams":
            _emit_streams_group(emit, a, app)
        for instance in app.get("instances", []):
            for state in STREAMS_STATES:
                if instance.get("state") is not None:
                    emit("kpulse_streams_instance_state", "1 for the Streams instance's current client state "
                         "(streams_instance: its client id, or its metrics endpoint until it answered)",
                         {**a, "streams_instance": instance["id"], "state": state}, int(instance["state"] == state))
    _emit_share_groups(emit, c, snapshot.get("share_groups"), per_partition)
    probe: Probe | Mapping[str, None] = snapshot.get("probe") or {}
    for probe_field, name, text, divisor in PROBE_SERIES:
        emit(name, text, c, _scaled(probe.get(probe_field), divisor))
    for collector in snapshot.get("collectors", []):
        labels = {**c, "collector": collector["name"]}
        emit("kpulse_collector_up", "1 when the collector's last cycle succeeded", labels, int(collector["up"]))
        emit("kpulse_collector_duration_seconds", "Duration of the collector's last cycle", labels,
             collector.get("duration_seconds"))
    firing: dict[tuple[str, str], int] = {}
    for alert in snapshot.get("alerts", []):
        rule_severity = (alert["rule"], alert["severity"])
        firing[rule_severity] = firing.get(rule_severity, 0) + 1
    for (rule, severity), count in sorted(firing.items()):
        emit("kpulse_alerts_firing", "Firing alerts", {**c, "rule": rule, "severity": severity}, count)
    _emit_alert_delivery(emit, c, snapshot.get("alert_delivery"))


def _scaled(value: float | None, divisor: float) -> float | None:
    """``value`` in base units: milliseconds / 1000 = seconds (divisor 1: as it is)."""
    return value if value is None or divisor == 1 else value / divisor


def _emit_broker(emit: Emit, b: Labels, broker: Broker) -> None:
    emit("kpulse_broker_up", "1 when the broker is registered", b,
         None if broker.get("up") is None else int(bool(broker["up"])))
    for field, name, text, divisor in BROKER_SERIES:
        emit(name, text, b, _scaled(broker.get(field), divisor))


def _emit_topics(emit: Emit, c: Labels, topics: Sequence[TopicState] | None) -> None:
    """kafka_exporter's topic series, with its help texts: every partition of every topic."""
    for topic in topics or ():
        t = {**c, "topic": topic["name"]}
        emit("kafka_topic_partitions", "Number of partitions for this Topic", t, len(topic["partitions"]))
        for p in topic["partitions"]:
            labels = {**t, "partition": p["partition"]}
            leader, replicas, isr = p["leader"], p["replicas"], p["isr"]
            emit("kafka_topic_partition_current_offset", "Current Offset of a Broker at Topic/Partition", labels,
                 p["log_end_offset"])
            emit("kafka_topic_partition_oldest_offset", "Oldest Offset of a Broker at Topic/Partition", labels,
                 p["log_start_offset"])
            emit("kafka_topic_partition_leader", "Leader Broker ID of this Topic/Partition", labels, leader)
            emit("kafka_topic_partition_replicas", "Number of Replicas for this Topic/Partition", labels,
                 len(replicas))
            emit("kafka_topic_partition_in_sync_replica", "Number of In-Sync Replicas for this Topic/Partition",
                 labels, len(isr))
            emit("kafka_topic_partition_leader_is_preferred", "1 if Topic/Partition is using the Preferred Broker",
                 labels, int(leader is not None and bool(replicas) and leader == replicas[0]))
            emit("kafka_topic_partition_under_replicated_partition", "1 if Topic/Partition is under Replicated",
                 labels, int(len(isr) < len(replicas)))


def _emit_consumer_group(emit: Emit, g: Labels, group: ConsumerGroup, per_partition: bool,
                         kafka_exporter: bool) -> None:
    """A consumer group's kpulse series, and with ``kafka_exporter`` its kafka_exporter ones: members,
    per partition committed offset and lag, per topic their sums (over the partitions with a
    committed offset; the lag's over those whose lag is known)."""
    if kafka_exporter:
        emit("kafka_consumergroup_members", "Amount of members in a consumer group", g, group.get("members"))
    emit("kpulse_consumergroup_lag", "The group's lag: log end minus committed offset summed over its partitions "
         "whose lag is known, records (see kpulse_consumergroup_lag_unknown_partitions)", g, group.get("total_lag"))
    emit("kpulse_consumergroup_lag_unknown_partitions", "Partitions with a committed offset whose lag is unknown "
         "(log end not read), left out of kpulse_consumergroup_lag: > 0 means the sum is partial", g,
         group.get("lag_unknown_partitions"))
    emit("kpulse_consumergroup_lag_seconds", "Worst estimated time lag of the group's partitions, seconds (over the "
         "partitions whose time lag is known: see kpulse_consumergroup_lag_seconds_unknown_partitions)", g,
         group.get("max_lag_seconds"))
    emit("kpulse_consumergroup_lag_seconds_unknown_partitions", "Partitions with a committed offset whose time "
         "lag is unknown, left out of kpulse_consumergroup_lag_seconds: > 0 means it is a lower bound", g,
         group.get("lag_seconds_unknown_partitions"))
    _emit_group_kind(emit, g, group)
    if group.get("expected_idle"):
        emit("kpulse_consumergroup_expected_idle", "1 for a group expected to be idle (config or marked on the "
             "dashboard): it fires no group alert; absent for the others", g, 1)
    if group.get("status") is not None:
        for status in STATUSES:
            emit("kpulse_consumergroup_status", "1 for the group's current Burrow-style status",
                 {**g, "status": status}, int(group["status"] == status))
    sums: dict[str, list[int]] = {}
    """Topic -> [committed offsets summed, lags summed, partitions whose lag is known]."""
    for p in group.get("partitions", []):
        committed, lag = p.get("committed_offset"), p.get("lag")
        if kafka_exporter and committed is not None:
            topic_sums = sums.get(p["topic"])
            if topic_sums is None:
                topic_sums = sums[p["topic"]] = [0, 0, 0]
            topic_sums[0] += committed
            if lag is not None:
                topic_sums[1] += lag
                topic_sums[2] += 1
        if per_partition:
            labels = {**g, "topic": p["topic"], "partition": p["partition"]}
            if kafka_exporter:
                emit("kafka_consumergroup_lag", "Current Approximate Lag of a ConsumerGroup at Topic/Partition",
                     labels, lag)
                emit("kafka_consumergroup_current_offset", "Current Offset of a ConsumerGroup at Topic/Partition",
                     labels, committed)
            emit("kpulse_consumergroup_partition_lag_seconds", "Estimated time lag of the group's partition, seconds",
                 labels, p.get("lag_seconds"))
    for topic, (offsets, lags, known) in sums.items():
        labels = {**g, "topic": topic}
        emit("kafka_consumergroup_current_offset_sum", "Current Offset of a ConsumerGroup at Topic for all partitions",
             labels, offsets)
        emit("kafka_consumergroup_lag_sum", "Current Approximate Lag of a ConsumerGroup at Topic for all partitions",
             labels, lags if known else None)


_UNKNOWN_MEMBER = ("unknown", "unknown", "unknown")
"""kafka-lag-exporter's member labels for a group without members (its ``getGroupPartitionsInfo``)."""


def _emit_lag_exporter(emit: Emit, snapshot: Snapshot, topics: Sequence[TopicState] | None,
                       per_partition: bool) -> None:
    """kafka-lag-exporter's series (``ConsumerGroupCollector.scala``): per group partition (a member's
    assigned partitions, labelled with the member; a group without members: its partitions with a
    committed offset, labelled ``unknown``) the committed offset, the offset lag and the time lag; per
    group their largest and the lag's sum, per group and topic the lag's sum; and the log end and log
    start of every partition those groups read. Where kafka-lag-exporter writes NaN (no committed
    offset, a time lag it cannot tell) the series is absent."""
    cluster_name = snapshot["cluster_name"]
    read: dict[tuple[str, int], None] = {}
    for group in snapshot.get("consumer_groups", []):
        g: Labels = {"cluster_name": cluster_name, "group": group["group_id"]}
        by_partition = {(p["topic"], p["partition"]): p for p in group.get("partitions", [])}
        members = group.get("member_details") or []
        owned: list[tuple[tuple[str, int], tuple[str, str, str]]] = [
            ((topic, number), (member["client_host"], member["member_id"], member["client_id"]))
            for member in members for topic, numbers in sorted(member["assignment"].items()) for number in numbers]
        if not members:
            owned = [((p["topic"], p["partition"]), _UNKNOWN_MEMBER) for p in group.get("partitions", [])
                     if p.get("committed_offset") is not None]
        if not owned:
            continue
        max_lag: int | None = None
        max_seconds: float | None = None
        topic_lags: dict[str, int | None] = {}
        for key, (host, consumer_id, client_id) in owned:
            read[key] = None
            p: GroupPartition | Mapping[str, None] = by_partition.get(key) or {}
            lag, seconds = p.get("lag"), p.get("lag_seconds")
            if lag is not None:
                max_lag = lag if max_lag is None else max(max_lag, lag)
            if seconds is not None:
                max_seconds = seconds if max_seconds is None else max(max_seconds, seconds)
            summed = topic_lags.get(key[0])
            topic_lags[key[0]] = summed if lag is None else lag + (summed or 0)
            if per_partition:
                labels: Labels = {**g, "topic": key[0], "partition": key[1], "member_host": host,
                                  "consumer_id": consumer_id, "client_id": client_id}
                emit("kafka_consumergroup_group_offset", "Last group consumed offset of a partition", labels,
                     p.get("committed_offset"))
                emit("kafka_consumergroup_group_lag", "Group offset lag of a partition", labels, lag)
                emit("kafka_consumergroup_group_lag_seconds", "Group time lag of a partition", labels, seconds)
        emit("kafka_consumergroup_group_max_lag", "Max group offset lag", g, max_lag)
        emit("kafka_consumergroup_group_max_lag_seconds", "Max group time lag", g, max_seconds)
        known = [value for value in topic_lags.values() if value is not None]
        emit("kafka_consumergroup_group_sum_lag", "Sum of group offset lag", g, sum(known) if known else None)
        for topic, summed in topic_lags.items():
            emit("kafka_consumergroup_group_topic_sum_lag", "Sum of group offset lag across topic partitions",
                 {**g, "topic": topic}, summed)
    offsets = {(topic["name"], p["partition"]): p for topic in topics or () for p in topic["partitions"]}
    for key in sorted(read):
        partition = offsets.get(key)
        if partition is None:
            continue
        labels = {"cluster_name": cluster_name, "topic": key[0], "partition": key[1]}
        emit("kafka_partition_latest_offset", "Latest offset of a partition", labels, partition["log_end_offset"])
        emit("kafka_partition_earliest_offset", "Earliest offset of a partition", labels,
             partition["log_start_offset"])


def _emit_alert_delivery(emit: Emit, c: Labels, deliveries: Sequence[AlertmanagerDelivery] | None) -> None:
    """Delivery to each Alertmanager (``alerting/delivery.py``), named as Prometheus's own
    ``prometheus_notifications_*``: alerts sent and failed (counters since the loop started), alerts
    not yet accepted, and whether the last send was accepted."""
    for delivery in deliveries or ():
        a = {**c, "alertmanager": delivery["alertmanager"]}
        emit("kpulse_alertmanager_notifications_sent_total", "Alerts accepted by the Alertmanager (each resend "
             "counts)", a, delivery.get("sent_total"))
        emit("kpulse_alertmanager_notifications_failed_total", "Alerts whose send to the Alertmanager failed after "
             "retries (kept and sent again later)", a, delivery.get("failed_total"))
        emit("kpulse_alertmanager_notifications_pending", "Alerts that started firing or resolved and that the "
             "Alertmanager has not accepted yet", a, delivery.get("pending"))
        emit("kpulse_alertmanager_up", "1 when the last send to the Alertmanager was accepted, 0 when it failed; "
             "absent before the first", a, None if (up := delivery.get("up")) is None else int(up))


KRAFT_CLUSTER_SERIES: tuple[tuple[Literal["fenced_broker_count", "active_broker_count"], str, str], ...] = (
    ("fenced_broker_count", "kpulse_kraft_fenced_brokers", "Fenced brokers as the active controller says"),
    ("active_broker_count", "kpulse_kraft_active_brokers", "Registered, unfenced brokers as the active controller "
                                                           "says"))
""":class:`kpulse.snapshot.ClusterHealth` field -> (series, help). The cluster's MetadataErrorCount is
``sum by (cluster) (kpulse_kraft_metadata_errors_total)``; each node's is :data:`BROKER_SERIES`'."""


def _emit_kraft(emit: Emit, c: Labels, cluster: ClusterHealth | Mapping[str, None]) -> None:
    """The cluster's controller figures and the quorum: ``kpulse_kraft_fenced_brokers``,
    ``..._active_brokers`` (cluster), ``kpulse_kraft_quorum_leader_info`` (1 for the leader's
    ``node``), ``..._leader_epoch``, ``..._high_watermark``, and per voter and observer (``node``,
    ``role``) ``..._replica_lag`` and ``..._replica_caught_up_age_seconds``."""
    for key, name, text in KRAFT_CLUSTER_SERIES:
        emit(name, text, c, cluster.get(key))
    quorum = cluster.get("quorum")
    if not quorum:
        return
    if (leader := quorum.get("leader_id")) is not None:
        emit("kpulse_kraft_quorum_leader_info", "1 for the node leading the KRaft quorum (the active controller)",
             {**c, "node": leader}, 1)
    emit("kpulse_kraft_quorum_leader_epoch", "Epoch of the quorum leader (bumped by every election)", c,
         quorum.get("leader_epoch"))
    emit("kpulse_kraft_quorum_high_watermark", "High watermark of the metadata log", c, quorum.get("high_watermark"))
    for role, replicas in (("voter", quorum.get("voters") or []), ("observer", quorum.get("observers") or [])):
        for replica in replicas:
            r = {**c, "node": replica["id"], "role": role}
            emit("kpulse_kraft_quorum_replica_lag", "The leader's metadata log end minus this replica's, records "
                 "(kafka-metadata-quorum describe --replication's Lag)", r, replica.get("lag"))
            emit("kpulse_kraft_quorum_replica_caught_up_age_seconds", "Seconds since this replica last reached the "
                 "leader's log end", r, replica.get("caught_up_age_seconds"))


def _one_hot(emit: Emit, name: str, help_text: str, labels: Labels, states: Iterable[str],
             state: str | None) -> None:
    """1 for ``state``, 0 for every other state its type can be in; a state this release does not know
    is exported as itself, and no state (not read) gives no series."""
    if state is None:
        return
    for each in dict.fromkeys((*states, state)):
        emit(name, help_text, {**labels, "state": each}, int(each == state))


def _emit_group_kind(emit: Emit, g: Labels, group: ConsumerGroup) -> None:
    """A consumer group's type (classic, consumer, streams), its state among its type's states, and
    for KIP-848 / Streams groups the epochs and the members still reconciling."""
    kind = group.get("type")
    if kind is not None:
        emit("kpulse_consumergroup_info", "1 for each group, with its type (classic, consumer, streams) and "
             "protocol type, as kafka-groups --list shows them", {**g, "type": kind,
                                                                 "protocol_type": group.get("protocol_type") or ""}, 1)
    _one_hot(emit, "kpulse_consumergroup_state", "1 for the group's current state (the states of its type)",
             {**g, "type": kind or ""}, STATES.get(kind, ()), group.get("state"))
    emit("kpulse_consumergroup_group_epoch", "Group epoch of a KIP-848 or Streams group", g, group.get("group_epoch"))
    emit("kpulse_consumergroup_assignment_epoch", "Target assignment epoch of a KIP-848 or Streams group (behind "
         "the group epoch while it is Assigning)", g, group.get("assignment_epoch"))
    emit("kpulse_consumergroup_reconciling_members", "Members of a KIP-848 or Streams group whose epoch is behind "
         "the target assignment epoch", g, group.get("reconciling_members"))


def _emit_streams_group(emit: Emit, a: Labels, app: StreamsApp) -> None:
    """A Streams group (KIP-1071): state, members, epochs and its input lag."""
    _one_hot(emit, "kpulse_streams_group_state", "1 for the Streams group's current state", a, STATES["streams"],
             app.get("group_state"))
    emit("kpulse_streams_group_members", "Members of the Streams group", a, app.get("members"))
    group: StreamsGroupDetail | Mapping[str, None] = app.get("group") or {}
    emit("kpulse_streams_group_epoch", "Streams group epoch", a, group.get("group_epoch"))
    emit("kpulse_streams_group_assignment_epoch", "Streams group target assignment epoch", a,
         group.get("assignment_epoch"))
    emit("kpulse_streams_group_topology_epoch", "Epoch of the topology the broker holds", a,
         group.get("topology_epoch"))
    emit("kpulse_streams_group_lag", "Sum of the input partitions' lag (kafka-streams-groups --describe "
         "--offsets), over those whose lag is known", a, group.get("total_lag"))


def _emit_share_groups(emit: Emit, c: Labels, section: ShareGroups | None, per_partition: bool = True) -> None:
    shown: ShareGroups | Mapping[str, None] = section or {}
    emit("kpulse_sharegroups_read_timestamp_seconds", "When the share groups shown were read (epoch seconds): behind "
         "the cycle while the brokers are slow to answer DescribeShareGroupOffsets", c, shown.get("read_at"))
    emit("kpulse_sharegroups_read_duration_seconds", "How long the brokers took to answer that reading", c,
         shown.get("read_seconds"))
    for group in shown.get("groups") or []:
        g = {**c, "sharegroup": group["group_id"]}
        emit("kpulse_sharegroup_members", "Members of the share group", g, group.get("members"))
        state = group.get("state")
        if state is not None:
            for name in dict.fromkeys((*SHARE_STATES, state)):
                emit("kpulse_sharegroup_state", "1 for the share group's current state", {**g, "state": name},
                     int(state == name))
        emit("kpulse_sharegroup_lag", "The share group's lag: records not yet acknowledged summed over its "
             "partitions whose lag is known (see kpulse_sharegroup_lag_unknown_partitions)", g, group.get("total_lag"))
        emit("kpulse_sharegroup_lag_unknown_partitions", "Partitions whose lag is unknown, left out of "
             "kpulse_sharegroup_lag: > 0 means the sum is partial", g, group.get("lag_unknown_partitions"))
        if group.get("status") is not None:
            for status in SHARE_STATUS_NAMES:
                emit("kpulse_sharegroup_status", "1 for the share group's current status (OK, WARN, STALLED, "
                     "NOT_CONSUMING)", {**g, "status": status}, int(group["status"] == status))
        for p in (group.get("partitions") or []) if per_partition else ():
            labels = {**g, "topic": p["topic"], "partition": p["partition"]}
            emit("kpulse_sharegroup_partition_lag", "Records of the share partition not yet acknowledged, as the "
                 "broker counts them", labels, p.get("lag"))
            emit("kpulse_sharegroup_start_offset", "Share-partition start offset: every record before it is "
                 "acknowledged", labels, p.get("start_offset"))
