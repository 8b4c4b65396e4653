"""Time from `kpulse cluster up` to ready, and the resident memory of the three nodes.

Run: ``.venv/bin/python bench/cluster_startup.py [--runs 3]`` (warm cache: run `make setup` first).
Each run starts a fresh cluster (format + start) in a state directory of its own, on ports 49090+,
then a restart on the existing data; prints the median, the RSS of the nodes, and stops it.
Goals: ready in 30 s or less, nodes' total RSS 1.5 GB or less.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import psutil


def kpulse(env: dict, *args: str) -> float:
    began = time.monotonic()
    subprocess.run([sys.executable, "-m", "cli.main", *args], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - began


def node_rss_mb(env: dict) -> float:
    import json

    status = json.loads(subprocess.run([sys.executable, "-m", "cli.main", "cluster", "status", "--json"],
                                       env=env, check=True, capture_output=True, text=True).stdout)
    return sum(psutil.Process(node["pid"]).memory_info().rss for node in status["nodes"]) / 2**20


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    from localkafka.runtime import ensure_runtime, kafka_version

    ensure_runtime()
    fresh, restart, rss = [], [], []
    for run in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="kpulse-bench-") as state:
            env = {**os.environ, "KPULSE_STATE_DIR": state, "KPULSE_PORT_BASE": "49090"}
            try:
                fresh.append(kpulse(env, "cluster", "up"))
                time.sleep(10)  # let the JVMs settle before reading memory
                rss.append(node_rss_mb(env))
                kpulse(env, "cluster", "down")
                restart.append(kpulse(env, "cluster", "up"))
            finally:
                kpulse(env, "cluster", "down", "--wipe")
        print(f"run {run + 1}: fresh up {fresh[-1]:.1f} s, restart {restart[-1]:.1f} s, "
              f"nodes RSS {rss[-1]:.0f} MB", flush=True)
    print(f"\nKafka {kafka_version()}, 3 KRaft nodes, {os.cpu_count()} cores, median of {args.runs} runs")
    print(f"  cluster up to ready (fresh: format + start): {statistics.median(fresh):5.1f} s  (goal <= 30 s)")
    print(f"  cluster up to ready (restart on data):       {statistics.median(restart):5.1f} s  (goal <= 30 s)")
    print(f"  resident memory of the three nodes:          {statistics.median(rss):5.0f} MB (goal <= 1536 MB)")


if __name__ == "__main__":
    main()
