"""kminion beside kpulse: the peer mode of ``bench/lag_collection.py --kminion PATH``.

kminion (redpanda-data/kminion, built by ``bench/kminion/build.sh``) collects when Prometheus scrapes
it: one GET of its ``/metrics`` is one lag collection. It runs lag-only, as kpulse's lag collector
does: ``consumerGroups`` on with ``scrapeMode: adminApi`` and ``granularity: partition``, ``topics``
and ``logDirs`` off, the same groups (``bench-.*``).

:func:`interleaved` times, in rounds, one kpulse lag cycle (``ConsumerLagCollector.collect``) and one
kminion scrape, the order alternating from round to round (so that neither always runs on brokers
just warmed by the other), and around each measured call the CPU time the three broker JVMs used
(``/proc/<pid>/stat`` utime + stime). Printed: both medians, the median of the per-round ratios
(kpulse / kminion, the paired ratio), and both broker CPU figures per cycle. kpulse's garbage
collector is settled after its first cycle, as ``kpulse collect`` settles it.
"""

from __future__ import annotations

import json
import socket
import statistics
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

WARM_UP_ROUNDS = 3
READY_SECONDS = 300.0
SCRAPE_TIMEOUT_SECONDS = 300.0
LAG_SERIES = "kminion_kafka_consumer_group_topic_partition_lag{"


def kminion_config(bootstrap: str, port: int) -> dict:
    """kminion's configuration, lag-only (JSON is YAML)."""
    return {"logger": {"level": "warn"},
            "kafka": {"brokers": bootstrap.split(","), "clientId": "kminion-bench"},
            "minion": {"consumerGroups": {"enabled": True, "scrapeMode": "adminApi", "granularity": "partition",
                                          "allowedGroups": ["/bench-.*/"]},
                       "topics": {"enabled": False}, "logDirs": {"enabled": False},
                       "endToEnd": {"enabled": False}},
            "exporter": {"host": "127.0.0.1", "port": port, "namespace": "kminion"}}


def lag_series(metrics: str) -> int:
    """The group partitions a kminion scrape reports a lag for."""
    return sum(1 for line in metrics.splitlines() if line.startswith(LAG_SERIES))


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of these processes so far."""
    from bench.scale_state import process_cpu_seconds

    return sum(process_cpu_seconds(pid) for pid in pids)


def paired_ratio(ours: list[float], theirs: list[float]) -> float:
    """Median of the per-round ratios ours / theirs."""
    return statistics.median(a / b for a, b in zip(ours, theirs))


class Kminion:
    """A kminion process on a free local port (its config in a temp directory)."""

    def __init__(self, binary: str, bootstrap: str):
        self.binary = str(Path(binary).resolve())
        self.bootstrap = bootstrap
        self.directory = Path(tempfile.mkdtemp(prefix="kpulse-bench-kminion-"))
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/metrics"
        self.process: subprocess.Popen | None = None

    def start(self) -> int:
        """Start it and wait for its first full scrape; returns the group partitions it reports."""
        config = self.directory / "config.yaml"
        config.write_text(json.dumps(kminion_config(self.bootstrap, self.port), indent=2))
        log = (self.directory / "kminion.log").open("w")
        self.process = subprocess.Popen([self.binary], env={"CONFIG_FILEPATH": str(config), "PATH": "/usr/bin:/bin"},
                                        stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + READY_SECONDS
        while True:
            if self.process.poll() is not None:
                raise SystemExit(f"kminion exited at start: see {self.directory / 'kminion.log'}")
            try:
                series = lag_series(scrape(self.url))
                if series:
                    return series
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit(f"kminion reported no consumer group lag after {READY_SECONDS:g} s")
            time.sleep(1)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=SCRAPE_TIMEOUT_SECONDS) as response:
        return response.read().decode()


def interleaved(config, kminion_url: str, broker_pids: list[int], kminion_pid: int | None, rounds: int,
                spacing: float) -> dict:
    """Rounds of one kpulse lag cycle and one kminion scrape, alternating which goes first."""
    from collectors.lag.consumer_lag import ConsumerLagCollector
    from collectors.protocol import CollectContext
    from collectors.runner import settle_gc

    cluster = config.cluster(None)
    lag = ConsumerLagCollector(cluster)
    settled: list[bool] = []
    figures: dict[str, dict[str, list[float]]] = {"kpulse": {"seconds": [], "broker_cpu": []},
                                                  "kminion": {"seconds": [], "broker_cpu": [], "own_cpu": []}}
    counted: dict[str, int] = {}

    def kpulse_cycle():
        if "kpulse" in counted and not settled:
            settle_gc()  # after the first cycle, as `kpulse collect` does
            settled.append(True)
        result = lag.collect(CollectContext(cluster, time.time()))
        counted["kpulse"] = sum(len(g["partitions"]) for g in result.sections["consumer_groups"])

    def kminion_scrape():
        counted["kminion"] = lag_series(scrape(kminion_url))

    calls = {"kpulse": kpulse_cycle, "kminion": kminion_scrape}
    for round_number in range(WARM_UP_ROUNDS + rounds):
        order = ("kpulse", "kminion") if round_number % 2 == 0 else ("kminion", "kpulse")
        for name in order:
            cpu_before = cpu_seconds(broker_pids)
            own_before = cpu_seconds([kminion_pid]) if kminion_pid and name == "kminion" else 0.0
            began = time.perf_counter()
            calls[name]()
            seconds = time.perf_counter() - began
            broker_cpu = cpu_seconds(broker_pids) - cpu_before
            if round_number >= WARM_UP_ROUNDS:
                figures[name]["seconds"].append(seconds)
                figures[name]["broker_cpu"].append(broker_cpu)
                if kminion_pid and name == "kminion":
                    figures[name]["own_cpu"].append(cpu_seconds([kminion_pid]) - own_before)
            time.sleep(spacing)
    lag.close()
    kp, km = figures["kpulse"], figures["kminion"]
    return {"rounds": rounds, "group_partitions": counted,
            "kpulse_median_s": statistics.median(kp["seconds"]), "kminion_median_s": statistics.median(km["seconds"]),
            "paired_ratio": paired_ratio(kp["seconds"], km["seconds"]),
            "kpulse_broker_cpu_s": statistics.median(kp["broker_cpu"]),
            "kminion_broker_cpu_s": statistics.median(km["broker_cpu"]),
            "broker_cpu_ratio": sum(kp["broker_cpu"]) / max(sum(km["broker_cpu"]), 1e-9),
            "kminion_own_cpu_s": statistics.median(km["own_cpu"]) if km["own_cpu"] else None}


def print_peer(figures: dict) -> None:
    counted = figures["group_partitions"]
    print(f"\nkpulse beside kminion ({figures['rounds']} interleaved rounds; group partitions reported: "
          f"kpulse {counted.get('kpulse')}, kminion {counted.get('kminion')}):")
    print(f"  kpulse lag cycle median:      {figures['kpulse_median_s']:.3f} s, "
          f"brokers' CPU {figures['kpulse_broker_cpu_s']:.3f} s per cycle")
    own = figures["kminion_own_cpu_s"]
    print(f"  kminion lag-only scrape median: {figures['kminion_median_s']:.3f} s, "
          f"brokers' CPU {figures['kminion_broker_cpu_s']:.3f} s per scrape"
          + (f" (kminion's own CPU {own:.3f} s)" if own is not None else ""))
    print(f"  paired ratio kpulse / kminion: {figures['paired_ratio']:.2f} (goal <= 0.33); brokers' CPU ratio "
          f"{figures['broker_cpu_ratio']:.2f} (goal <= 0.33)")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
