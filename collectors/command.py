"""`kpulse collect`: the collection loop as a command (continuous, or one snapshot with --once)."""

from __future__ import annotations

import json
import signal
import sys
import threading
import time

from collectors.runner import CollectionService, CycleResult

ONCE_READINGS = 3
ONCE_SPACING_SECONDS = 1.0
"""--once takes three readings a second apart: rates (bytes/s, idle ratios) need two samples and a
consumer group's status needs three observations."""


def collect_command(config, *, once: bool, as_json: bool, cluster: str | None,
                    spacing: float = ONCE_SPACING_SECONDS, out=sys.stdout) -> int:
    service = CollectionService(config, cluster_names=[cluster] if cluster else None)
    if once:
        try:
            for reading in range(ONCE_READINGS):
                if reading:
                    time.sleep(spacing)
                result = service.cycle()
        finally:
            service.close()
        snapshots = list(result.snapshots.values())
        if as_json:
            print(json.dumps(snapshots[0] if len(snapshots) == 1 else snapshots, indent=2, default=str), file=out)
        else:
            for snapshot in snapshots:
                print(summary_line(snapshot, result), file=out)
        return 0

    from prometheus_client import CollectorRegistry, start_http_server

    from collectors.exporter import SnapshotExporter

    exporter = SnapshotExporter()
    service.exporter = exporter
    if config.exporter.enabled:
        registry = CollectorRegistry()
        registry.register(exporter)
        start_http_server(config.exporter.port, addr=config.exporter.host, registry=registry)
        print(f"Prometheus exporter on http://{config.exporter.host}:{config.exporter.port}/metrics", file=out)
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


def summary_line(snapshot: dict, result: CycleResult) -> str:
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
