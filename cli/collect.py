"""`kpulse collect`: the collection loop as a command (continuous, or one snapshot with --once)."""

from __future__ import annotations

import faulthandler
import json
import os
import signal
import subprocess
import sys
import threading
import time

from collectors.runner import GC_SETTLE_CYCLES, CollectionService, CycleResult
from kpulse.config import DEFAULT_SOURCE
from kpulse.printable import visible
from kpulse.snapshot import Snapshot

ONCE_READINGS = 3
ONCE_SPACING_SECONDS = 1.0
"""--once takes three readings a second apart: rates (bytes/s, idle ratios) need two samples and a
consumer group's status needs three observations."""


def collect_command(config, *, once: bool, as_json: bool, cluster: str | None,
                    spacing: float = ONCE_SPACING_SECONDS, out=sys.stdout) -> int:
    faulthandler.enable()  # a crash inside a native client library still leaves a Python stack in the log
    # --once is a look at the cluster beside the running loop: it sends no alert to Alertmanager
    service = CollectionService(config, cluster_names=[cluster] if cluster else None, deliver_alerts=not once)
    if once:
        try:
            for reading in range(ONCE_READINGS):
                if reading:
                    time.sleep(spacing)
                result = service.cycle()
                refused = unreadable(result)
                if refused:
                    break  # no second reading of a cluster that said no
        finally:
            service.close()
        snapshots = list(result.snapshots.values())
        if as_json:
            print(json.dumps(snapshots[0] if len(snapshots) == 1 else snapshots, indent=2, default=str), file=out)
        else:
            for snapshot in snapshots:
                print(summary_line(snapshot, result), file=out)
        for line in refused:
            print(f"kpulse: error: {line}", file=sys.stderr)
        return 1 if refused else 0

    if os.environ.get(_SUPERVISED) is None:
        return supervise(config, cluster, out)

    from prometheus_client import CollectorRegistry

    from exporters.prometheus import SnapshotExporter, serve
    from exporters.lake_status import LakeStatusExporter
    from exporters.slo_status import SloStatusExporter

    exporter = SnapshotExporter(granularity=config.exporter.granularity, compatibility=config.exporter.compatibility)
    service.exporter = exporter
    service.loop_state = loop_state(config, cluster)
    if config.exporter.enabled:
        registry = CollectorRegistry()
        registry.register(SloStatusExporter(config.lake.path))  # what the SLO job last wrote
        registry.register(LakeStatusExporter(service.lake))  # whether the lake is being written
        serve(exporter, port=config.exporter.port, host=config.exporter.host, registry=registry)
        print(f"Prometheus exporter on http://{config.exporter.host}:{config.exporter.port}/metrics", file=out)
    service.gc_settle_cycles = GC_SETTLE_CYCLES  # this process runs the loop: see collectors.runner.settle_gc
    print(f"collecting every {config.intervals.collect_seconds:g}s into {config.lake.path}", file=out, flush=True)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())

    def report(result: CycleResult) -> None:
        for snapshot in result.snapshots.values():
            print(summary_line(snapshot, result), file=out, flush=True)

    service.run(stop, on_cycle=report)
    print("collector stopped", file=out)
    return 0


_SUPERVISED = "KPULSE_COLLECT_SUPERVISED"
LOOP_ENVIRONMENT = {"MALLOC_ARENA_MAX": "2", "MALLOC_MMAP_THRESHOLD_": "131072", "MALLOC_TRIM_THRESHOLD_": "131072",
                    "ARROW_DEFAULT_MEMORY_POOL": "system"}
"""Set for the collection loop's process unless already set, to keep its peak memory low
(docs/performance.md):

- glibc gives each thread that allocates a malloc arena of its own (up to 8 per core) and memory
  freed in one stays with it; the collectors and librdkafka run many threads: two arenas;
- a cycle at 10,000 groups allocates and frees many large blocks (100,000-element arrays and lists):
  from 128 KiB up they are mapped and unmapped on their own, and a free heap top above 128 KiB is
  given back, instead of glibc's adaptive thresholds keeping them;
- pyarrow's own allocator (mimalloc) keeps freed memory for reuse; the lake writes a few files a
  minute, for which the system allocator does as well.

Measured at 10,000 groups, nine cycles of the whole collection, one run each on a loaded machine:
peak RSS 534 MB with two arenas alone (one cycle of that run fell back to librdkafka), 479 MB with
pyarrow on the system allocator too, 413 MB with all four."""
RESTART_DELAY_SECONDS = 5.0


def supervise(config, cluster: str | None, out) -> int:
    """Run the collection loop in a child process and start it again when it dies.

    The native Kafka client library has crashed the process here (a segfault in librdkafka's own
    thread, seen twice in hours of collection, not reproduced since); a crash must not end
    monitoring silently. Each restart is written to the lake's ``collector_status`` table as
    collector ``kpulse-collect`` down with the signal, and the rows the child had not flushed yet
    (at most ``FLUSH_SECONDS`` of them) as ``lake_gap`` rows, from the mark the child keeps
    (``collectors/loop_state.py``)."""
    command = [sys.executable, "-m", "cli.main"]
    if config.source != DEFAULT_SOURCE:
        command += ["--config", str(config.source)]
    command += ["collect"] + (["--cluster", cluster] if cluster else [])
    stopping = threading.Event()
    child: subprocess.Popen | None = None

    def forward(signum, _frame) -> None:
        stopping.set()
        if child is not None and child.poll() is None:
            child.send_signal(signum)

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, forward)
    while True:
        child = subprocess.Popen(command, env={**LOOP_ENVIRONMENT, **os.environ, _SUPERVISED: "1"})
        code = child.wait()
        died = time.time()
        if stopping.is_set() or code == 0:
            return 0 if stopping.is_set() else code
        why = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
        lost = _record_crash(config, cluster, why, pid=child.pid, died=died)
        print(f"collector process died ({why}); restarting in {RESTART_DELAY_SECONDS:g}s; {lost}", file=out,
              flush=True)
        if stopping.wait(RESTART_DELAY_SECONDS):
            return 0


def loop_state(config, cluster: str | None):
    """Where the loop of ``kpulse collect [--cluster cluster]`` keeps its state (the child and its
    supervisor agree on it)."""
    from collectors.loop_state import LoopState
    from kpulse.home import state_dir

    return LoopState(state_dir(), config.lake.path, _cluster_names(config, cluster))


def _cluster_names(config, cluster: str | None) -> list[str]:
    return [cluster] if cluster else [c.name for c in config.clusters]


def _record_crash(config, cluster: str | None, why: str, *, pid: int, died: float) -> str:
    """Write the crash to the lake (``collector_status`` and ``lake_gap``); what was lost, in words."""
    from kpulse.lake.store import LakeWriter
    from collectors.loop_state import crash_gap_rows

    mark = loop_state(config, cluster).read_mark()
    gaps = crash_gap_rows(mark, pid=pid, died=died, why=why)
    if mark is None or mark.pid != pid:
        lost = "it died before its first cycle"
    elif gaps:
        dropped = sum(count for gap in gaps if isinstance(count := gap["rows_dropped"], int))
        lost = f"{dropped} buffered row(s) lost, recorded in lake_gap"
    else:
        lost = "no buffered rows lost"
    lake = LakeWriter(config.lake.path)
    for name in _cluster_names(config, cluster):
        lake.append("collector_status", [{"time": died, "cluster": name, "collector": "kpulse-collect", "up": False,
                                          "duration_seconds": None,
                                          "error": f"collector process died ({why}); {lost}; restarted"}])
    lake.append("lake_gap", gaps)
    flushed = lake.flush()
    return lost if flushed.ok else f"{lost} (not written: {'; '.join(flushed.errors.values())})"


def unreadable(result: CycleResult) -> list[str]:
    """One line per cluster that refused kpulse's identity or could not be reached this cycle."""
    lines = []
    for name, snapshot in result.snapshots.items():
        connection = snapshot.get("connection")
        if connection is not None and not connection["ok"] and connection["conclusive"]:
            lines.append(visible(f"cluster {name!r} cannot be read: {connection['error']}"))
    return lines


def summary_line(snapshot: Snapshot, result: CycleResult) -> str:
    cluster = snapshot.get("cluster") or {}
    down = [c["name"] for c in snapshot.get("collectors", []) if not c["up"]]
    parts = [
        time.strftime("%H:%M:%S", time.localtime(snapshot["time"])),
        snapshot["cluster_name"],
        f"brokers {cluster.get('brokers_up')}/{cluster.get('brokers_total')}",
        f"URP {cluster.get('under_replicated_partitions')}",
        f"offline {cluster.get('offline_partitions')}",
        f"groups {len(snapshot.get('consumer_groups', []))}",
        f"alerts {len(snapshot.get('alerts', []))}",
    ]
    if down:
        parts.append("DOWN: " + ", ".join(down))
    if result.lake_error:
        parts.append("lake: " + result.lake_error)
    return "  ".join(parts)
