"""The collection loop: every cycle, for every configured cluster, check the connection, run the
collectors in isolation, evaluate the alert rules on what they observed, append rows to the lake,
then compose the snapshot once from all of it (``collectors/snapshot.py``) and hand it on, unchanged
after: to the Prometheus exporter and to ``<lake>/_snapshots/<cluster>.json``; flush the lake. In
the loop (:meth:`CollectionService.run`) the lake's writes and snapshot uploads run in a thread of
their own (``collectors/lake_thread.py``): a store that stops answering never holds a cycle.

A lake that cannot be written keeps its rows buffered and retries next cycle (or records a gap,
see ``kpulse/lake/store.py``); the loop itself goes on. With ``lake.kafka_sink`` configured every
row is also published to Kafka (``exporters/kafka_sink.py``); what that sink drops is written to
the lake as ``lake_gap`` rows. With ``alerting.alertmanager`` configured every evaluation is handed to
the alert delivery (``alerting/delivery.py``), which sends to Alertmanager in a thread of its own: the
cycle only records its state in the snapshot's ``alert_delivery`` section.
"""

from __future__ import annotations

import gc
import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal, cast
from collections.abc import Callable, Iterable

from alerting.delivery import AlertDelivery, configured_delivery
from alerting.state import AlertState, to_dicts
from collectors.loop_state import LoopMark, LoopState, restorable_alerts
from collectors.connection_gate import ConnectionGate
from collectors.lake_thread import LakeThread
from collectors.protocol import CollectContext, Collector, CollectorStatus, Registry, declarations, run_isolated
from collectors.registry import default_registry
from collectors.snapshot import Outcome, compose, observe
from kpulse.config import ClusterConfig
from kpulse.expected_idle import ExpectedIdleError, ExpectedIdleFile, Mark, default_file
from kpulse.kafka.kafka_python import preload as preload_kafka_python
from kpulse.lake.rows import Columns
from kpulse.lake.schema import register_tables
from kpulse.lake.store import (
    EARLY_FLUSH_SHARE, SNAPSHOT_DIR, FlushResult, LakeWriter, gap_row, one_line, write_bytes_whole)
from kpulse.snapshot import BUILTIN_SECTIONS, AlertmanagerDelivery, FiringAlert, Snapshot, to_json

LOG = logging.getLogger(__name__)
FLUSH_SECONDS = 60.0
"""Lake files are written at most this often (and at shutdown): one file per table and date per
flush, so flushing every 10 s cycle would make ~8,600 small files per table per day."""
GC_SETTLE_CYCLES = 60
"""``kpulse collect`` settles the garbage collector (:func:`settle_gc`) after its first cycle and
then every this many cycles (10 minutes at the default interval)."""
GC_YOUNG_THRESHOLD = 100_000
"""Container objects allocated (net of those freed) before a young collection, once settled; Python's
default is 700."""


@dataclass
class ClusterCollection:
    cluster: ClusterConfig
    collectors: list[Collector]
    alerts: AlertState
    last_snapshot: Snapshot | None = None
    gate: Any = None
    """The cluster's :class:`~collectors.connection_gate.ConnectionGate`; None: no check (tests' fakes)."""


@dataclass
class CycleResult:
    snapshots: dict[str, Snapshot] = field(default_factory=dict)
    lake_error: str | None = None


class CollectionService:
    """Owns the collectors of every cluster between cycles (rates, histories and trackers live in
    them). The constructor connects to nothing."""

    def __init__(self, config, *, registry: Registry | None = None, lake: LakeWriter | None = None,
                 exporter=None, clock: Callable[[], float] = time.time, alert_state_factory=None,
                 cluster_names: list[str] | None = None, flush_seconds: float = FLUSH_SECONDS,
                 kafka_sink=None, gc_settle_cycles: int | None = None,
                 expected_idle: ExpectedIdleFile | None = None, alert_delivery: AlertDelivery | None = None,
                 deliver_alerts: bool = True,
                 connection_gate: Callable[[Any], Any] | Literal[False] | None = None) -> None:
        """``connection_gate``: ``factory(cluster) -> ConnectionGate`` for the check before each cycle
        (``collectors/connection_gate.py``); False: none; None (default): the real check with the
        built-in registry, none with a registry given."""
        self.config = config
        gate: Callable[[Any], Any] | None
        if connection_gate is None:  # the built-in collectors talk to Kafka: check it; a test's own registry may not
            gate = ConnectionGate if registry is None else None
        else:
            gate = connection_gate or None
        registry = registry or default_registry()
        clusters = [config.cluster(name) for name in cluster_names] if cluster_names else list(config.clusters)
        factory = alert_state_factory or (lambda cluster: AlertState(cluster=cluster.name))
        self.clusters = [ClusterCollection(c, registry.create(c), factory(c), gate=gate(c) if gate else None)
                         for c in clusters]
        self.declared = declarations(c for entry in self.clusters for c in entry.collectors)
        """The sections and lake tables the collectors declare (``collectors/protocol.py``)."""
        register_tables(self.declared.tables)
        self._add_on_sections = list(self.declared.add_on_sections)
        self._undeclared_seen: set[str] = set()
        self.lake = lake if lake is not None else LakeWriter(config.lake.path)
        self.exporter = exporter
        self.kafka_sink = kafka_sink if kafka_sink is not None else _configured_kafka_sink(config)
        self.alert_delivery = alert_delivery if alert_delivery is not None else (
            configured_delivery(config) if deliver_alerts else None)
        """Sends the alerts to Alertmanager (``alerting/delivery.py``); ``None`` when none is configured
        or ``deliver_alerts`` is false (``kpulse collect --once``: a look, not the loop that pages)."""
        self._clock = clock
        self._flush_seconds = flush_seconds
        self._last_flush = float("-inf")
        self._unpublished: set[str] = set()
        """Clusters whose last snapshot could not be published."""
        self._lake_thread: LakeThread | None = None
        """The loop's lake I/O (:meth:`run`); ``None``: written in the cycle (``--once``, tests)."""
        self._taking: tuple[dict[str, dict[str, int]], float] | None = None
        """The loop mark's unflushed rows when the running write took the buffers, and when."""
        self.gc_settle_cycles = gc_settle_cycles
        """Settle the garbage collector after the first cycle and every this many (None: never);
        a process-wide act, so only the process that runs the loop asks for it."""
        self._cycles = 0
        self.loop_state: LoopState | None = None
        """Where the loop's mark and alert states are kept across a crash of its process
        (``collectors/loop_state.py``); ``None`` (one-off runs): nothing is kept."""
        self._mark: LoopMark | None = None
        self._saved_alerts: list | None = None
        self._pool: ThreadPoolExecutor | None = None
        """The collectors' threads, started at the first cycle and kept (see ``run_isolated``)."""
        preload_kafka_python()  # before those threads import it at once (kpulse/kafka/kafka_python.py)
        self.expected_idle = expected_idle or default_file()
        """The groups marked expected-idle on the dashboard (``kpulse/expected_idle.py``), read every cycle."""
        self._idle_marks: dict[str, dict[str, Mark]] = {}

    def cycle(self) -> CycleResult:
        result = CycleResult()
        if self._pool is None:
            workers = max((len(entry.collectors) for entry in self.clusters), default=1)
            self._pool = ThreadPoolExecutor(max_workers=max(workers, 1), thread_name_prefix="collector")
            if self.alert_delivery is not None:
                self.alert_delivery.start()
        if self.loop_state is not None and self._mark is None:
            self._resume()
        for entry in self.clusters:
            now = self._clock()
            name = entry.cluster.name
            connection = entry.gate.check() if entry.gate is not None else None
            running, skipped = _gated(entry.collectors, connection)
            sections, rows, statuses = run_isolated(running, CollectContext(entry.cluster, now), pool=self._pool)
            statuses = _in_registration_order(entry.collectors, statuses + skipped)
            self._say_undeclared(sections)
            observation = observe(name, now, sections, statuses, self._add_on_sections, connection=connection,
                                  consumer_groups=entry.cluster.consumer_groups, idle_marks=self._marks(name))
            evaluation = entry.alerts.evaluate(observation)
            rows["alert_event"] = _joined(rows.get("alert_event"), (event.row() for event in evaluation.events))
            delivery: list[AlertmanagerDelivery] | None = None
            if self.alert_delivery is not None:
                self.alert_delivery.observe(name, evaluation, now)
                delivery = self.alert_delivery.status(name)
            rows["collector_status"] = _joined(rows.get("collector_status"), (
                {"time": now, "cluster": name, "collector": s.name, "up": s.up,
                 "duration_seconds": s.duration_seconds, "error": s.error} for s in statuses))
            lake_errors = self._append(name, rows, now)
            snapshot = compose(observation, Outcome(
                alerts=cast(list[FiringAlert], to_dicts(evaluation.firing)),  # an Alert's fields, as FiringAlert's
                alert_errors=list(evaluation.errors), alert_delivery=delivery, lake_errors=lake_errors))
            entry.last_snapshot = snapshot
            result.snapshots[entry.cluster.name] = snapshot
            if self.exporter is not None:
                self.exporter.update(snapshot)
        due = time.monotonic() - self._last_flush >= self._flush_seconds or self.lake.fullest() >= EARLY_FLUSH_SHARE
        # (early when a buffer fills faster than the interval, at scale)
        if self._lake_thread is None:
            if due:
                result.lake_error = self.flush()
            for name, snapshot in result.snapshots.items():
                self._publish_snapshot(name, snapshot)
        else:  # the loop: the store's answers, however slow, never hold the cycle
            result.lake_error = self._written(self._lake_thread.finished())
            if due and not self._lake_thread.writing:
                self._start_write(self._lake_thread)
            self._lake_thread.publish(result.snapshots)
        if self._mark is not None:
            self._keep_state(max((s["time"] for s in result.snapshots.values()), default=None))
        if self.gc_settle_cycles and self._cycles % self.gc_settle_cycles == 0:
            settle_gc()
        self._cycles += 1
        return result

    def _append(self, cluster: str, rows: dict[str, list[dict[str, Any]] | Columns], now: float) -> list[str]:
        """Hand the cycle's rows to the lake (and the Kafka sink); the rows refused, one line each: a
        collector broke the lake contract (said in the log), and the loop goes on."""
        refused: list[str] = []
        for table, table_rows in rows.items():
            try:
                self.lake.append(table, table_rows)
            except ValueError as error:
                refused.append(str(error))
                LOG.error("lake rows refused: %s", error)
                continue
            if self._mark is not None:
                self._mark.appended(cluster, table, len(table_rows), now)
            if self.kafka_sink is not None:
                self.kafka_sink.append(table, table_rows)
        return refused

    def _marks(self, cluster: str) -> dict[str, Mark]:
        """The cluster's expected-idle marks; the last ones read when the file cannot be (said in the log)."""
        try:
            self._idle_marks[cluster] = self.expected_idle.marks(cluster)
        except ExpectedIdleError as error:
            LOG.warning("expected-idle marks kept from the last read: %s", error)
        return self._idle_marks.get(cluster, {})

    def _say_undeclared(self, sections: dict[str, Any]) -> None:
        """Log, once per name, a section a collector returned without declaring it (left out of the snapshot)."""
        undeclared = sections.keys() - self.declared.sections.keys() - BUILTIN_SECTIONS.keys() - self._undeclared_seen
        for name in sorted(undeclared):
            LOG.warning("section %r is left out of the snapshot: no collector declares it (collectors/protocol.py)",
                        name)
        self._undeclared_seen |= undeclared

    def flush(self) -> str | None:
        """Write buffered rows to the lake; the error (one line) when some could not be written."""
        self._last_flush = time.monotonic()
        self._record_sink_gaps()
        self._taking = None
        return self._written(self.lake.flush())

    def _start_write(self, lake_thread: LakeThread) -> None:
        """Take the buffered rows now and write them in the lake thread."""
        self._last_flush = time.monotonic()
        self._record_sink_gaps()
        self._taking = (self._mark.counted(), self._clock()) if self._mark is not None else None
        lake_thread.write(self.lake.take())

    def _written(self, flushed: FlushResult | None) -> str | None:
        """Account for a finished write (the loop's mark); its error (one line), if any."""
        if flushed is None:
            return None
        if self._mark is not None:
            taken, taken_at = self._taking if self._taking is not None else (None, None)
            self._mark.written(set(flushed.written) - set(flushed.failed), taken, taken_at)
            if flushed.ok:
                self._mark.flushed_at = self._clock()
        if flushed.ok:
            return None
        error = "; ".join(f"{t}: {e}" for t, e in flushed.errors.items())
        LOG.warning("lake write failed, rows kept for the next flush: %s", error)
        return error

    def _resume(self) -> None:
        """First cycle of a loop that keeps state: take back the alert states a crashed process
        left (when recent enough), then mark this process as the one collecting."""
        state = self.loop_state
        if state is None:  # a one-off run keeps nothing
            return
        now = self._clock()
        try:
            restorable, written_until = restorable_alerts(state.read_alerts(), state.read_mark(), now)
            for entry in self.clusters:
                if entry.cluster.name in restorable:
                    count = entry.alerts.restore(restorable[entry.cluster.name], events_written_until=written_until)
                    LOG.info("restored %d alert state(s) of %s", count, entry.cluster.name)
        except (KeyError, TypeError, ValueError) as error:  # a damaged file: start afresh, say so
            LOG.warning("ignored the saved alert states in %s: %s", state.alerts_path, error)
        self._mark = LoopMark(pid=os.getpid(), started=now)
        self._keep_state(None)

    def _keep_state(self, cycle_time: float | None) -> None:
        """Write the loop's mark (every cycle) and the alert states (when they changed)."""
        loop_state, mark = self.loop_state, self._mark
        if loop_state is None or mark is None:  # a one-off run keeps nothing
            return
        try:
            saved = {entry.cluster.name: entry.alerts.saved() for entry in self.clusters}
            alerts = [state["alerts"] for state in saved.values()]
            if alerts != self._saved_alerts:
                loop_state.write_alerts(mark.pid, saved)
                self._saved_alerts = alerts
            mark.cycle_time = cycle_time
            loop_state.write_mark(mark)
        except OSError as error:
            LOG.warning("could not keep the loop's state in %s: %s", loop_state.directory, error)

    def _publish_snapshot(self, cluster_name: str, snapshot: Snapshot) -> None:
        """The latest snapshot for the dashboard, written whole (:func:`~kpulse.lake.store.write_whole`)."""
        try:
            fs, base = self.lake.filesystem()
            write_bytes_whole(fs, f"{base}/{SNAPSHOT_DIR}/{cluster_name}.json", to_json(snapshot))
        except (OSError, TypeError) as error:  # TypeError: a value JSON cannot hold (a bug, not a reason to stop)
            if cluster_name not in self._unpublished:  # said once while it lasts, not every cycle of an outage
                LOG.warning("could not publish the snapshot of %s: %s (not said again until one is published)",
                            cluster_name, one_line(error))
            self._unpublished.add(cluster_name)
            return
        if cluster_name in self._unpublished:
            self._unpublished.discard(cluster_name)
            LOG.warning("published the snapshot of %s again", cluster_name)

    def run(self, stop: threading.Event, on_cycle: Callable[[CycleResult], None] | None = None) -> None:
        """Cycle every ``intervals.collect_seconds`` until ``stop``, the lake written in a thread of
        its own (``collectors/lake_thread.py``), then :meth:`close`."""
        interval = self.config.intervals.collect_seconds
        self._lake_thread = LakeThread(self.lake, self._publish_snapshot)
        while not stop.is_set():
            began = time.monotonic()
            result = self.cycle()
            if on_cycle:
                on_cycle(result)
            stop.wait(max(0.0, interval - (time.monotonic() - began)))
        self.close()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        for entry in self.clusters:
            for collector in entry.collectors:
                close = getattr(collector, "close", None)
                if close is not None:
                    try:
                        close()
                    except Exception:  # noqa: BLE001 - closing must not hide the other closes
                        LOG.exception("closing collector %s", collector.name)
        if self.kafka_sink is not None:
            self.kafka_sink.close()
        if self.alert_delivery is not None:
            self.alert_delivery.close()
        if self._lake_thread is not None:  # its write finishes first: one write at a time
            self._written(self._lake_thread.close())
            self._lake_thread = None
        self.flush()
        if self._mark is not None:
            self._keep_state(self._mark.cycle_time)

    def _record_sink_gaps(self) -> None:
        if self.kafka_sink is None:
            return
        self.kafka_sink.poll(0)
        gaps = self.kafka_sink.gaps.take()
        if gaps:
            LOG.warning("kafka sink dropped rows: %s", "; ".join(f"{g.table}: {g.rows_dropped}" for g in gaps))
            self.lake.append("lake_gap", [gap_row(gap) for gap in gaps])


def _gated(collectors: list[Collector], connection) -> tuple[list[Collector], list[CollectorStatus]]:
    """The collectors to run this cycle, and the statuses of those not run: when the cluster said
    no to the configured identity (``connection``, conclusive), a collector that talks to Kafka
    (``uses_kafka``, true unless it says otherwise) is down with the reason instead of running into
    its own timeouts."""
    if connection is None or connection["ok"] or not connection["conclusive"]:
        return collectors, []
    why = f"cluster not readable: {connection['error']}"
    running = [c for c in collectors if not getattr(c, "uses_kafka", True)]
    return running, [CollectorStatus(c.name, False, 0.0, why) for c in collectors if getattr(c, "uses_kafka", True)]


def _joined(rows: list[dict[str, Any]] | Columns | None,
            more: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """A table's rows from the collectors (none, dicts or :class:`Columns`) followed by the loop's
    own ``more``: a new list, the collectors' left as they are."""
    return [*(rows if rows is not None else ()), *more]


def _in_registration_order(collectors: list[Collector], statuses: list[CollectorStatus]) -> list[CollectorStatus]:
    by_name = {status.name: status for status in statuses}
    return [by_name[c.name] for c in collectors if c.name in by_name]


def settle_gc() -> None:
    """Collect garbage, then leave every object alive now out of later collections until the next
    settle (``gc.freeze``; the objects frozen last time are collected with the rest first, so
    garbage among them lives at most one settle period), and make young collections rare
    (:data:`GC_YOUNG_THRESHOLD`).

    Why: a cycle allocates many short-lived containers, and each full collection would walk every
    long-lived object (modules, clients, the lag collector's per-partition state) while holding the
    GIL the collectors share; frozen, they are not walked. With the higher young threshold a young
    collection runs about once a cycle, mostly after the cycle's temporaries were freed by
    reference counting; garbage cycles wait at most until the next settle. The measurements:
    docs/performance.md, "Why the code is shaped so"."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, middle, old)


def _configured_kafka_sink(config):
    settings = config.lake.kafka_sink
    if settings is None:
        return None
    from exporters.kafka_sink import KafkaSink

    return KafkaSink(config.cluster(settings.cluster).client_config(), settings.topic_prefix,
                     message_timeout_seconds=settings.message_timeout_seconds)
