"""The S3 server out for two minutes while ``kpulse collect`` runs (the real loop, its supervisor
and child, against the secured cluster as the super user, the lake on a real s3proxy server behind
a proxy that can stop answering): first a minute of a hung store (a partition: connections accepted,
nothing answered, each request waits out its timeout), then a minute of a stopped server. The
cycles keep their interval, each failed flush is named in one line, and once the server is back
every cycle's rows are in the lake once, with no ``lake_gap``."""

from __future__ import annotations

import json
import secrets
import signal
import subprocess
import sys
import time
import urllib.request

import pandas as pd
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from kpulse.lake.reader import read_table
from kpulse.lake.store import SNAPSHOT_DIR, resolve
from localkafka.s3_server import REGION, S3Server
from localkafka.secure import IDENTITIES
from tests.conftest import S3_BUCKET
from tests.stalling_proxy import StallingProxy
from tests.support import free_port

pytestmark = pytest.mark.cluster

INTERVAL = 5.0
OUTAGE_SECONDS = 120.0
FLUSH_SECONDS = 60.0  # collectors.runner.FLUSH_SECONDS: the loop's own, not shortened for the test


def wait_for(condition, timeout: float, what: str, process: subprocess.Popen):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, f"kpulse collect exited ({process.returncode}) while waiting for {what}"
        value = condition()
        if value:
            return value
        time.sleep(1)
    raise AssertionError(f"no {what} within {timeout:.0f}s")


def scrape(config: dict) -> dict[str, float]:
    """The kpulse_lake_* series of the collector's exporter ({} while it does not answer yet)."""
    url = f"http://{config['exporter']['host']}:{config['exporter']['port']}/metrics"
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            text = response.read().decode()
    except OSError:  # URLError: the exporter not started yet
        return {}
    return {sample.name: sample.value for family in text_string_to_metric_families(text)
            for sample in family.samples if sample.name.startswith("kpulse_lake_")}


def test_a_two_minute_outage_of_the_s3_server_during_collection_loses_and_repeats_no_row(secure_cluster, tmp_path, monkeypatch):
    server = S3Server(tmp_path / "s3", free_port(), "kpulse-outage", secrets.token_urlsafe(16))
    server.start()
    proxy = StallingProxy(server.port)
    collector = None
    try:
        server.create_bucket(S3_BUCKET)
        lake = f"s3://{S3_BUCKET}/outage?endpoint_override=127.0.0.1:{proxy.port}&scheme=http&region={REGION}"
        config = secure_cluster.config(IDENTITIES["admin"], lake=lake)
        config["intervals"] = {"collect_seconds": INTERVAL}
        path = tmp_path / "kpulse.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", server.access_key)  # the collector's and this test's reads
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", server.secret_key)
        log = (tmp_path / "collect.log").open("w+")
        collector = subprocess.Popen([sys.executable, "-m", "cli.main", "--config", str(path), "collect"],
                                     stdout=log, stderr=subprocess.STDOUT, text=True)
        # a first write of every table (rows of one table may be in while the others are being written)
        first = wait_for(lambda: scrape(config).get("kpulse_lake_last_write_success_timestamp_seconds"), 60,
                         "first complete write", collector)
        proxy.stall()  # the first minute: a hung store
        server.stop()
        stopped, stopped_at = time.monotonic(), pd.Timestamp.now(tz="UTC")
        time.sleep(OUTAGE_SECONDS / 2)
        proxy.heal()  # the second: a stopped server (each connection ends at once)
        time.sleep(OUTAGE_SECONDS / 2 - 2)
        during = scrape(config)
        time.sleep(2)
        server.start()
        outage = time.monotonic() - stopped
        # the next flush (at most a flush interval later) writes what the outage held, every table
        back = time.time()
        after = wait_for(lambda: (m := scrape(config)).get("kpulse_lake_last_write_success_timestamp_seconds", 0)
                         >= back and m, FLUSH_SECONDS + 2 * INTERVAL + 10, "a complete write after the outage",
                         collector)
    finally:
        if collector is not None and collector.poll() is None:
            collector.send_signal(signal.SIGTERM)
            collector.wait(90)
        server.stop()
        proxy.close()
    log.seek(0)
    output = log.read()
    assert server.secret_key not in output
    failed = [line for line in output.splitlines() if " lake: " in line]
    assert failed, output  # a flush a minute: at least one in the outage
    assert all("NETWORK_CONNECTION" in line for line in failed), failed

    server.start()  # read what the loop wrote, including its last flush at SIGTERM
    direct = lake.replace(f":{proxy.port}", f":{server.port}")
    try:
        health = read_table(direct, "cluster_health")
        assert read_table(direct, "lake_gap").empty  # nothing dropped
        status = read_table(direct, "collector_status")
        fs, base = resolve(direct)
        with fs.open_input_stream(f"{base}/{SNAPSHOT_DIR}/secure.json") as source:
            snapshot = json.loads(source.read())
    finally:
        server.stop()
    times = health["time"].sort_values()
    assert times.is_unique, "a row written twice"
    assert first < stopped_at.timestamp() and outage >= OUTAGE_SECONDS
    steps = times.diff().dt.total_seconds().dropna()
    # one row a cycle, through the outage: the cycles kept their interval (no cycle held by the
    # unreachable store, no cycle missing)
    assert times.min() < stopped_at and times.max().timestamp() >= back, (times.min(), stopped_at, times.max(), back)
    assert steps.max() <= INTERVAL + 3, steps.describe()
    assert not status[status["collector"] == "kpulse-collect"]["up"].eq(False).any()  # the child never died
    # the exporter said the lake was not being written, and then that it was again
    assert during["kpulse_lake_write_ok"] == 0 and during["kpulse_lake_unwritten_rows"] > 0, during
    assert during["kpulse_lake_last_write_success_timestamp_seconds"] == first, during  # none since
    assert after["kpulse_lake_write_ok"] == 1 and after["kpulse_lake_last_write_success_timestamp_seconds"] >= back
    assert during["kpulse_lake_dropped_rows_total"] == after["kpulse_lake_dropped_rows_total"] == 0
    assert snapshot["time"] >= back  # the dashboard's snapshot is published again
    # the snapshot's failed uploads are said once, not every cycle of the outage
    assert output.count("could not publish the snapshot of secure") == 1, output
    assert output.count("published the snapshot of secure again") == 1, output
