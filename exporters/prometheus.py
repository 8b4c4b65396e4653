"""kpulse's Prometheus exporter: the latest snapshot of every cluster as metrics.

Names of kafka_exporter are kept where it has a counterpart, so existing dashboards and alerts
work unchanged (``kafka_consumergroup_lag{consumergroup,topic,partition}``,
``kafka_consumergroup_current_offset``, ``kafka_consumergroup_lag_sum``,
``kafka_consumergroup_members``, ``kafka_topic_partition_current_offset``, ``kafka_brokers``);
the rest are ``kpulse_*``. Every series has a ``cluster`` label (kpulse can watch several).
A null value is not exported (absent, not zero).

A group's sums are over the partitions whose value is known. While a broker is down some are not:
``kafka_consumergroup_lag_sum`` and ``kpulse_consumergroup_lag_seconds`` are then lower bounds, and
``kpulse_consumergroup_lag_sum_unknown_partitions`` / ``..._lag_seconds_unknown_partitions`` (0 when
complete) say how many partitions were left out. A lower bound is still exported rather than
dropped: an alert on ``lag_sum > N`` that holds on part of the partitions holds on all of them.

KRaft health (no kafka_exporter counterpart): ``kpulse_kraft_*`` per node (metadata errors, metadata
apply lag), for the cluster (fenced and active brokers, metadata errors) and for the quorum (leader,
epoch, high watermark, each voter's and observer's lag and caught-up age): :func:`_emit_kraft`.

Share groups (KIP-932) have no kafka_exporter counterpart: ``kpulse_sharegroup_lag`` and
``kpulse_sharegroup_start_offset`` per partition are the broker's figures (``kafka-share-groups
--describe``), ``kpulse_sharegroup_state`` and ``kpulse_sharegroup_status`` are 1 for the group's
current state and status and 0 for the others, ``kpulse_sharegroup_members`` counts its members.

Granularity (``exporter.granularity``, as kminion's ``minion.consumerGroups.granularity``):
``partition`` (the default) exports every series above; ``group`` drops the per-partition series of
consumer and share groups (:data:`PARTITION_SERIES`), which at 10,000 groups of 10 partitions are
most of the page.

At that scale building prometheus_client's families on every scrape is too slow for a scrape
interval (docs/performance.md, "The exporter at scale"): :meth:`SnapshotExporter.text` renders the exposition once per snapshot, in a thread of its own as
soon as the snapshot is in, and every scrape is served the newest rendered bytes (:func:`serve`, the
server ``kpulse collect`` starts).
:meth:`SnapshotExporter.collect` still yields the same series as families, for a registry.
"""

from __future__ import annotations

import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Literal, Protocol

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from kpulse.config.model import EXPORTER_GRANULARITIES
from kpulse.kafka.group_model import STATES
from kpulse.lag_contract import STATUS_NAMES
from kpulse.refusals import AREAS, refusals
from kpulse.share_contract import SHARE_STATUS_NAMES
from kpulse.snapshot import (AlertmanagerDelivery, ClusterHealth, ConsumerGroup, Probe, ShareGroups, Snapshot,
                             StreamsApp, StreamsGroupDetail)

STATUSES = STATUS_NAMES
STREAMS_STATES = ("CREATED", "REBALANCING", "RUNNING", "PENDING_SHUTDOWN", "NOT_RUNNING", "PENDING_ERROR", "ERROR",
                  "UNREACHABLE")
SHARE_STATES = STATES["share"]
"""Kafka's share group states; a state outside them (``Unknown``) is exported as 1 with 0 for these."""
LOG = logging.getLogger("kpulse.exporter")
GRANULARITIES = EXPORTER_GRANULARITIES
PARTITION_SERIES = ("kafka_consumergroup_lag", "kafka_consumergroup_current_offset",
                    "kpulse_consumergroup_partition_lag_seconds", "kpulse_sharegroup_lag", "kpulse_sharegroup_start_offset")
"""The per-partition series of groups: exported with granularity ``partition`` only."""
COUNTER_SERIES = frozenset({"kpulse_alertmanager_notifications_sent_total",
                            "kpulse_alertmanager_notifications_failed_total"})
"""Series exported as counters (the others are gauges)."""

Labels = dict[str, str | int]
"""Label name -> value: text, or a broker id or a partition number (written as its decimal)."""


class Emit(Protocol):
    """Where a sample goes: a registry's families (:meth:`SnapshotExporter.collect`) or the text
    exposition (:class:`_TextFamilies`). A ``None`` value is not exported."""

    def __call__(self, name: str, help_text: str, labels: Labels, value: float | None) -> None: ...


CLUSTER_SERIES: tuple[tuple[Literal["brokers_total", "under_replicated_partitions", "offline_partitions",
                                    "under_min_isr_partitions", "active_controller_count",
                                    "preferred_leader_imbalance"], str], ...] = (
    ("brokers_total", "Brokers known (up or not)"),
    ("under_replicated_partitions", "Partitions whose ISR is smaller than the replica set"),
    ("offline_partitions", "Partitions without a leader"),
    ("under_min_isr_partitions", "Partitions whose ISR is smaller than min.insync.replicas"),
    ("active_controller_count", "Active controllers reported by the nodes (must be 1)"),
    ("preferred_leader_imbalance", "Partitions not led by their preferred replica"))
""":class:`kpulse.snapshot.ClusterHealth` field -> help of its ``kpulse_cluster_<field>``."""
BROKER_SERIES: tuple[Literal["request_handler_idle_ratio", "network_processor_idle_ratio", "bytes_in_per_sec",
                             "bytes_out_per_sec", "messages_in_per_sec", "partition_count", "leader_count",
                             "produce_p99_ms", "fetch_p99_ms"], ...] = (
    "request_handler_idle_ratio", "network_processor_idle_ratio", "bytes_in_per_sec", "bytes_out_per_sec",
    "messages_in_per_sec", "partition_count", "leader_count", "produce_p99_ms", "fetch_p99_ms")
""":class:`kpulse.snapshot.Broker` fields exported as ``kpulse_broker_<field>``."""
PROBE_SERIES: tuple[Literal["produce_availability", "consume_availability", "latency_p99_ms", "lost",
                            "duplicated"], ...] = (
    "produce_availability", "consume_availability", "latency_p99_ms", "lost", "duplicated")
""":class:`kpulse.snapshot.Probe` fields exported as ``kpulse_probe_<field>``."""


class SnapshotExporter(Collector):
    """A prometheus_client collector over the latest snapshots; ``update`` swaps one in.

    ``granularity``: one of :data:`GRANULARITIES` (``group`` leaves out :data:`PARTITION_SERIES`)."""

    def __init__(self, granularity: str = "partition") -> None:
        if granularity not in GRANULARITIES:
            raise ValueError(f"granularity must be one of {', '.join(GRANULARITIES)}, got {granularity!r}")
        self.granularity = granularity
        self._lock = threading.Lock()
        self._render_lock = threading.Lock()
        self._snapshots: dict[str, Snapshot] = {}
        self._version = 0
        self._text: tuple[int, bytes] | None = None
        self._stale = threading.Event()
        self._renderer: threading.Thread | None = None
        self._render_failed = False

    def update(self, snapshot: Snapshot) -> None:
        with self._lock:
            self._snapshots[snapshot["cluster_name"]] = snapshot
            self._version += 1
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
            try:
                self.text()
            except Exception:  # noqa: BLE001 - the next scrape renders it again and answers the error
                self._render_failed = True
                LOG.exception("exporter: cannot render the snapshot")

    def _current(self) -> tuple[int, list[Snapshot]]:
        with self._lock:
            return self._version, list(self._snapshots.values())

    def collect(self) -> Iterator[Metric]:
        _, snapshots = self._current()
        families: dict[str, GaugeMetricFamily | CounterMetricFamily] = {}

        def emit(name: str, help_text: str, labels: Labels, value: float | None) -> None:
            if value is None:
                return
            family = families.get(name)
            if family is None:
                kind = CounterMetricFamily if name in COUNTER_SERIES else GaugeMetricFamily
                family = families[name] = kind(name, help_text, labels=list(labels))
            family.add_metric([str(v) for v in labels.values()], float(value))

        for snapshot in snapshots:
            _emit_snapshot(emit, snapshot, self.granularity)
        yield from families.values()

    def text(self) -> bytes:
        """The exposition (Prometheus text format 0.0.4) of the latest snapshots: rendered on the
        first call after an :meth:`update`, then the same bytes until the next one."""
        with self._render_lock:  # one scrape renders, the others wait for its bytes
            version, snapshots = self._current()
            if self._text is None or self._text[0] != version:
                rendered = _TextFamilies()
                for snapshot in snapshots:
                    _emit_snapshot(rendered, snapshot, self.granularity)
                self._text = (version, rendered.exposition())
                self._render_failed = False
            return self._text[1]

    def served_text(self) -> bytes:
        """What a scrape is answered: the newest rendered page, even while the next snapshot's
        is being rendered (at most one cycle older than :meth:`text`); :meth:`text` before the
        first, and after a render failed (the scrape then answers the error)."""
        rendered = self._text
        return rendered[1] if rendered is not None and not self._render_failed else self.text()


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
            kind = "counter" if name in COUNTER_SERIES else "gauge"
            out.append(f"# HELP {name} {shown_help}\n# TYPE {name} {kind}\n")
            out.extend(lines)
        return "".join(out).encode()


def serve(exporter: SnapshotExporter, *, port: int, host: str,
          registry: Collector | None = None) -> tuple[ThreadingHTTPServer, threading.Thread]:
    """Serve ``/metrics`` on ``host:port`` (0 = any free port: see ``server.server_port``) in a
    daemon thread: the exporter's rendered bytes (:meth:`SnapshotExporter.served_text`, each
    snapshot rendered once, in the background), then ``registry``'s series (small, e.g. the SLO
    statuses) rendered per scrape. Stop with ``server.shutdown()``."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            if self.path.split("?")[0] not in ("/", "/metrics"):
                self.send_error(404, "only /metrics is served here")
                return
            try:
                body = exporter.served_text() + (generate_latest(registry) if registry is not None else b"")
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


def _emit_snapshot(emit: Emit, snapshot: Snapshot, granularity: str = "partition") -> None:
    per_partition = granularity == "partition"
    c: Labels = {"cluster": snapshot["cluster_name"]}
    cluster: ClusterHealth | Mapping[str, None] = snapshot.get("cluster") or {}
    emit("kafka_brokers", "Number of brokers up", c, cluster.get("brokers_up"))
    for key, text in CLUSTER_SERIES:
        emit(f"kpulse_cluster_{key}", text, c, cluster.get(key))
    found = refusals(snapshot)
    for area in AREAS:
        emit("kpulse_not_authorized_values", "Values kpulse's principal may not read, or probe steps it may not "
             "take, by area (their reasons, 'not authorized: <Operation> on <resource>', are in the snapshot)",
             {**c, "area": area}, len(found.get(area, ())))
    for broker in snapshot.get("brokers", []):
        b = {**c, "broker": broker["id"]}
        emit("kpulse_broker_up", "1 when the broker is registered", b,
             None if broker.get("up") is None else int(bool(broker["up"])))
        for field in BROKER_SERIES:
            emit(f"kpulse_broker_{field}", field.replace("_", " "), b, broker.get(field))
        for node_field, text in KRAFT_NODE_SERIES.items():
            emit(f"kpulse_kraft_{node_field}", text, b, broker.get(node_field))
    _emit_kraft(emit, c, cluster)
    for group in snapshot.get("consumer_groups", []):
        g = {**c, "consumergroup": group["group_id"]}
        emit("kafka_consumergroup_members", "Members of the consumer group", g, group.get("members"))
        emit("kafka_consumergroup_lag_sum", "Sum of the group's partition lags (over the partitions whose lag "
             "is known: see kpulse_consumergroup_lag_sum_unknown_partitions)", g, group.get("total_lag"))
        emit("kpulse_consumergroup_lag_sum_unknown_partitions", "Partitions with a committed offset whose lag is "
             "unknown (log end not read), left out of kafka_consumergroup_lag_sum: > 0 means the sum is partial", g,
             group.get("lag_unknown_partitions"))
        emit("kpulse_consumergroup_lag_seconds", "Worst estimated time lag of the group, seconds (over the partitions "
             "whose time lag is known: see kpulse_consumergroup_lag_seconds_unknown_partitions)", g,
             group.get("max_lag_seconds"))
        emit("kpulse_consumergroup_lag_seconds_unknown_partitions", "Partitions with a committed offset whose time "
             "lag is unknown, left out of kpulse_consumergroup_lag_seconds: > 0 means it is a lower bound", g,
             group.get("lag_seconds_unknown_partitions"))
        _emit_group_kind(emit, g, group)
        if group.get("expected_idle"):
            emit("kpulse_consumergroup_expected_idle", "1 for a group expected to be idle (config or marked on the "
                 "dashboard): it fires no group alert; absent for the others", g, 1)
        for status in STATUSES:
            if group.get("status") is not None:
                emit("kpulse_consumergroup_status", "1 for the group's current Burrow-style status",
                     {**g, "status": status}, int(group["status"] == status))
        for p in group.get("partitions", []) if per_partition else ():
            labels = {**g, "topic": p["topic"], "partition": p["partition"]}
            emit("kafka_consumergroup_lag", "Log end offset minus committed offset", labels, p.get("lag"))
            emit("kafka_consumergroup_current_offset", "Committed offset", labels, p.get("committed_offset"))
            emit("kpulse_consumergroup_partition_lag_seconds", "Estimated time lag, seconds", labels,
                 p.get("lag_seconds"))
    log_ends = {(p["topic"], p["partition"]): p.get("log_end_offset")
                for group in snapshot.get("consumer_groups", []) for p in group.get("partitions", [])}
    for (topic, partition), offset in sorted(log_ends.items()):
        emit("kafka_topic_partition_current_offset", "Log end offset", {**c, "topic": topic, "partition": partition},
             offset)
    for app in snapshot.get("streams_apps", []):
        a = {**c, "application_id": app["application_id"]}
        emit("kpulse_streams_app_running", "1 when every expected instance is RUNNING", a,
             None if app.get("state") is None else int(app["state"] == "RUNNING"))
        if app.get("protocol") == "streams":
            _emit_streams_group(emit, a, app)
        for instance in app.get("instances", []):
            for state in STREAMS_STATES:
                if instance.get("state") is not None:
                    emit("kpulse_streams_instance_state", "1 for the instance's current client state",
                         {**a, "instance": instance["id"], "state": state}, int(instance["state"] == state))
    _emit_share_groups(emit, c, snapshot.get("share_groups"), per_partition)
    probe: Probe | Mapping[str, None] = snapshot.get("probe") or {}
    for probe_field in PROBE_SERIES:
        emit(f"kpulse_probe_{probe_field}", f"End-to-end probe: {probe_field.replace('_', ' ')}", c,
             probe.get(probe_field))
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


KRAFT_NODE_SERIES: dict[Literal["metadata_error_count", "metadata_apply_lag_ms"], str] = {
    "metadata_error_count": "Errors this controller-role node met loading or applying the metadata log since it "
                            "started (MetadataErrorCount)",
    "metadata_apply_lag_ms": "Now minus the append time of the last metadata record this node applied, ms "
                             "(LastAppliedRecordLagMs)",
}
""":class:`kpulse.snapshot.Broker` field -> help of its ``kpulse_kraft_<field>``, per node (label ``broker``)."""


KRAFT_CLUSTER_SERIES: tuple[tuple[Literal["fenced_broker_count", "active_broker_count", "metadata_error_count"],
                                  str, str], ...] = (
    ("fenced_broker_count", "fenced_brokers", "Fenced brokers as the active controller says"),
    ("active_broker_count", "active_brokers", "Registered, unfenced brokers as the active controller says"),
    ("metadata_error_count", "metadata_errors", "MetadataErrorCount summed over the nodes"))
""":class:`kpulse.snapshot.ClusterHealth` field -> (``kpulse_kraft_<name>``, its help)."""


def _emit_kraft(emit: Emit, c: Labels, cluster: ClusterHealth | Mapping[str, None]) -> None:
    """The cluster's controller figures and the quorum: ``kpulse_kraft_fenced_brokers``,
    ``..._active_brokers``, ``..._metadata_errors`` (cluster), ``kpulse_kraft_quorum_leader`` (1
    for the leader's ``node``), ``..._leader_epoch``, ``..._high_watermark``, and per voter and
    observer (``node``, ``role``) ``..._replica_lag`` and ``..._replica_caught_up_age_seconds``."""
    for key, name, text in KRAFT_CLUSTER_SERIES:
        emit(f"kpulse_kraft_{name}", text, c, cluster.get(key))
    quorum = cluster.get("quorum")
    if not quorum:
        return
    if (leader := quorum.get("leader_id")) is not None:
        emit("kpulse_kraft_quorum_leader", "1 for the node leading the KRaft quorum (the active controller)",
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
    emit("kpulse_streams_group_lag_sum", "Sum of the input partitions' lag (kafka-streams-groups --describe "
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
        emit("kpulse_sharegroup_lag_sum", "Sum of the share group's partition lags (over the partitions whose lag "
             "is known: see kpulse_sharegroup_lag_sum_unknown_partitions)", g, group.get("total_lag"))
        emit("kpulse_sharegroup_lag_sum_unknown_partitions", "Partitions whose lag is unknown, left out of "
             "kpulse_sharegroup_lag_sum: > 0 means the sum is partial", g, group.get("lag_unknown_partitions"))
        if group.get("status") is not None:
            for status in SHARE_STATUS_NAMES:
                emit("kpulse_sharegroup_status", "1 for the share group's current status (OK, WARN, STALLED, "
                     "NOT_CONSUMING)", {**g, "status": status}, int(group["status"] == status))
        for p in (group.get("partitions") or []) if per_partition else ():
            labels = {**g, "topic": p["topic"], "partition": p["partition"]}
            emit("kpulse_sharegroup_lag", "Records of the share partition not yet acknowledged, as the broker "
                 "counts them", labels, p.get("lag"))
            emit("kpulse_sharegroup_start_offset", "Share-partition start offset: every record before it is "
                 "acknowledged", labels, p.get("start_offset"))
