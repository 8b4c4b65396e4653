"""The lake on a real S3 server (s3proxy on loopback, the ``s3_server`` fixture), without Kafka:
``lake.path: s3://bucket/prefix?endpoint_override=...`` with the credentials from the AWS
environment. The same rows written to a directory and to the bucket read back equal; compaction,
``kpulse audit show`` and ``kpulse slo run`` work on it; a missing bucket, wrong credentials and a
stopped server are named in one line that never holds the secret, and no row is lost."""

from __future__ import annotations

import json
import os
import re
import secrets
import time
from datetime import date, datetime, UTC

import pandas as pd
import pyarrow.fs as pafs
import pytest
import yaml

from kpulse.lake import compaction
from kpulse.lake.reader import read_table
from kpulse.lake.schema import SCHEMAS
from kpulse.lake.store import LakeWriter, resolve
from localkafka.s3_server import REGION, S3Server
from tests.conftest import S3_BUCKET, kpulse
from spark_jobs import job
from spark_jobs.definitions import load_definitions
from tests.slo_spark import spark, write_samples  # noqa: F401 - spark: the shared session fixture
from tests.support import free_port

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC).timestamp()


def location(server: S3Server, prefix: str, bucket: str = S3_BUCKET) -> str:
    return f"s3://{bucket}/{prefix}?endpoint_override=127.0.0.1:{server.port}&scheme=http&region={REGION}"


@pytest.fixture
def aws_env(s3_server, monkeypatch):
    """The server's credentials in the AWS environment, as a deployment gives them."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3_server.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_server.secret_key)
    return s3_server


def sorted_frame(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values(list(frame.columns)).reset_index(drop=True)


def write_cycles(lake: str, cycles: int = 12) -> None:
    """Rows of four tables every 10 s across midnight UTC, one flush a minute, nulls included."""
    writer = LakeWriter(lake)
    for cycle in range(cycles):
        t = NOW - 12 * 3600 - 60 + cycle * 10
        writer.append("cluster_health", [{"time": t, "cluster": "prod", "brokers_up": 3, "offline_partitions": cycle % 2,
                                          "controller_id": None}])
        writer.append("broker_state", [{"time": t, "cluster": "prod", "broker_id": b, "up": b != 3 or cycle < 6}
                                       for b in (1, 2, 3)])
        writer.append("consumer_group", [{"time": t, "cluster": "prod", "group_id": f"g{g}", "state": "Stable",
                                          "members": 1, "total_lag": cycle * g} for g in range(3)])
        writer.append("consumer_lag", [{"time": t, "cluster": "prod", "group_id": f"g{g}", "topic": "orders",
                                        "partition": p, "lag": cycle + p, "lag_seconds": None if p else 1.5 * cycle,
                                        "status": "OK"} for g in range(3) for p in range(2)])
        if cycle % 6 == 5:
            assert writer.flush().ok


def test_the_same_rows_read_back_equal_from_a_directory_and_from_the_bucket(aws_env, tmp_path):
    local, remote = str(tmp_path / "lake"), location(aws_env, "equal")
    write_cycles(local)
    write_cycles(remote)
    written = 0
    for table in SCHEMAS:
        here, there = read_table(local, table), read_table(remote, table)
        pd.testing.assert_frame_equal(sorted_frame(there), sorted_frame(here), obj=table)
        written += len(here)
    assert written == 12 * (1 + 3 + 3 + 6)
    fs, base = resolve(remote)
    assert base == f"{S3_BUCKET}/equal" and fs.type_name == "s3"


def test_an_s3a_location_takes_its_endpoint_from_the_aws_environment_and_refuses_an_unknown_option(aws_env, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", aws_env.endpoint)
    writer = LakeWriter(f"s3a://{S3_BUCKET}/from-env")
    writer.append("broker_state", [{"time": NOW, "cluster": "prod", "broker_id": 1, "up": True}])
    assert writer.flush().ok
    assert list(read_table(f"s3://{S3_BUCKET}/from-env?region={REGION}", "broker_state")["broker_id"]) == [1]
    with pytest.raises(ValueError, match="^s3 lake location: unknown option 'secret_key'"):
        read_table(f"s3://{S3_BUCKET}/from-env?secret_key=x", "broker_state")


def files_of_one_day(lake: str, *, flushes: int, groups: int):
    """``consumer_group`` rows of 2026-03-09 in the lake, one file per flush: (the rows read back,
    sorted; the lake's filesystem and its base path; that day's directory)."""
    writer = LakeWriter(lake)
    start = datetime(2026, 3, 9, tzinfo=UTC).timestamp()
    for flush in range(flushes):
        writer.append("consumer_group", [{"time": start + flush * 60 + g, "cluster": "prod", "group_id": f"g{g}",
                                          "state": "Stable", "members": 1, "total_lag": flush} for g in range(groups)])
        assert writer.flush().ok
    fs, base = resolve(lake)
    return sorted_frame(read_table(lake, "consumer_group")), fs, base, compaction.partition_directory(
        base, "consumer_group", date(2026, 3, 9))


def test_lake_compact_swaps_a_closed_day_for_one_file_in_the_bucket_and_keeps_every_row(aws_env):
    lake = location(aws_env, "compact")
    before, fs, _, directory = files_of_one_day(lake, flushes=4, groups=3)
    assert len(compaction.inspect(fs, directory).files) == 4

    run = kpulse("lake", "compact", "--lake", lake, "--master", "local[1]", "--until", "2026-03-10T12:00:00Z")
    assert aws_env.secret_key not in run.stdout + run.stderr

    log = read_table(lake, "lake_compaction")
    assert [(r.table_name, r.action, r.files_before, r.rows_before, r.rows_after) for r in log.itertuples()] == [
        ("consumer_group", "compact", 4, 12, 12)]
    names = compaction.inspect(fs, directory).files
    assert len(names) == 1 and names[0].startswith("compacted-")
    pd.testing.assert_frame_equal(sorted_frame(read_table(lake, "consumer_group")), before)


def test_a_compaction_killed_after_the_swap_leaves_each_row_once_and_the_next_run_finishes(aws_env, monkeypatch):
    lake = location(aws_env, "killed")
    before, fs, base, directory = files_of_one_day(lake, flushes=3, groups=2)

    def killed(*_):
        raise OSError("killed between the swap and the deletions")

    with monkeypatch.context() as patch, pytest.raises(OSError, match="killed"):
        patch.setattr(compaction, "_delete", killed)
        compaction.compact(fs, base, "consumer_group", date(2026, 3, 9))
    listed = compaction.inspect(fs, directory)
    assert len(listed.files) == 1 and listed.files[0].startswith("compacted-") and len(listed.leftovers) == 3
    pd.testing.assert_frame_equal(sorted_frame(read_table(lake, "consumer_group")), before)  # each row once

    compaction.clean(fs, base, "consumer_group", date(2026, 3, 9))  # what the next run does first
    assert compaction.inspect(fs, directory).leftovers == ()
    pd.testing.assert_frame_equal(sorted_frame(read_table(lake, "consumer_group")), before)


def test_two_collectors_writing_different_clusters_into_one_bucket_at_once_lose_nothing(aws_env):
    import threading

    lake = location(aws_env, "two-collectors")
    failures: list = []

    def collector(cluster: str) -> None:
        writer = LakeWriter(lake)
        for cycle in range(5):
            writer.append("broker_state", [{"time": NOW + cycle, "cluster": cluster, "broker_id": b, "up": True}
                                           for b in (1, 2, 3)])
            result = writer.flush()
            if not result.ok:
                failures.append(result.errors)

    threads = [threading.Thread(target=collector, args=(cluster,)) for cluster in ("east", "west")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    rows = read_table(lake, "broker_state")
    assert sorted(rows.groupby("cluster").size().items()) == [("east", 15), ("west", 15)]
    assert not rows.duplicated().any()


def test_audit_show_reads_the_audit_log_in_the_bucket_and_never_prints_the_secret(aws_env, tmp_path):
    lake = location(aws_env, "audit")
    writer = LakeWriter(lake)
    writer.append("audit", [{"time": time.time(), "cluster": "prod", "action_id": "a1", "actor": "ann",
                             "action": "reset-offsets", "target": "group billing", "result": "ok"}])
    assert writer.flush().ok
    config = tmp_path / "kpulse.yaml"
    config.write_text(yaml.safe_dump({"clusters": [{"name": "prod", "bootstrap_servers": "127.0.0.1:9"}],
                                      "lake": {"path": lake}}))
    shown = kpulse("--config", str(config), "audit", "show", "--json")
    assert [r["action_id"] for r in json.loads(shown.stdout)["records"]] == ["a1"]

    os.environ["AWS_SECRET_ACCESS_KEY"] = "not-the-secret"  # monkeypatch restores it
    refused = kpulse("--config", str(config), "audit", "show", check=False)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused.stderr
    assert refused.stderr.startswith("kpulse: error: cannot read the audit log in the lake at s3://"), refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and "ACCESS_DENIED" in refused.stderr
    assert aws_env.secret_key not in refused.stderr + refused.stdout + shown.stderr + shown.stdout


@pytest.mark.parametrize("fault", ["missing bucket", "wrong secret"])
def test_a_lake_it_cannot_write_keeps_the_rows_and_says_why_in_one_line(aws_env, monkeypatch, fault):
    lake = location(aws_env, "faults", bucket="no-such-bucket" if fault == "missing bucket" else S3_BUCKET)
    if fault == "wrong secret":
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-" + secrets.token_hex(4))
    writer = LakeWriter(lake)
    writer.append("broker_state", [{"time": NOW, "cluster": "prod", "broker_id": 1, "up": True}])
    result = writer.flush()
    assert not result.ok and result.failed == {"broker_state": 1} and writer.buffered_rows() == {"broker_state": 1}
    error = result.errors["broker_state"]
    assert "\n" not in error and aws_env.secret_key not in error and os.environ["AWS_SECRET_ACCESS_KEY"] not in error
    # the upload's own error (no directory is made on an object store first)
    named = r"bucket 'no-such-bucket'.*NO_SUCH_BUCKET" if fault == "missing bucket" else "SIGNATURE_DOES_NOT_MATCH"
    assert re.search(named, error), error
    with pytest.raises(OSError, match="NO_SUCH_BUCKET" if fault == "missing bucket" else "ACCESS_DENIED|SIGNATURE"):
        read_table(lake, "broker_state")


def test_rows_collected_while_the_server_is_stopped_are_written_once_it_is_back(tmp_path, s3_server, monkeypatch):
    server = S3Server(tmp_path / "s3", free_port(), "kpulse-outage", secrets.token_urlsafe(16))
    server.start()
    try:
        server.create_bucket(S3_BUCKET)
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", server.access_key)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", server.secret_key)
        lake = location(server, "outage") + "&connect_timeout=1&request_timeout=2"
        writer = LakeWriter(lake)
        writer.append("broker_state", [{"time": NOW, "cluster": "prod", "broker_id": 1, "up": True}])
        assert writer.flush().ok
        server.stop()
        began = time.monotonic()
        for second in (1, 2):  # two cycles of the outage
            writer.append("broker_state", [{"time": NOW + second, "cluster": "prod", "broker_id": 1, "up": True}])
            writer.append("cluster_health", [{"time": NOW + second, "cluster": "prod", "brokers_up": 3}])
            failed = writer.flush()
            assert not failed.ok and failed.failed == {"broker_state": second, "cluster_health": second}
            assert "\n" not in failed.errors["broker_state"] and "NETWORK_CONNECTION" in failed.errors["broker_state"]
            # the server is not asked again for the other tables of the same flush: the cycle is not held
            assert failed.errors["cluster_health"].startswith("not tried: the object store did not answer ")
        outage_seconds = time.monotonic() - began
        assert writer.buffered_rows() == {"broker_state": 2, "cluster_health": 2}
        server.start()
        assert writer.flush().ok
        times = read_table(lake, "broker_state")["time"]
        assert [t.timestamp() - NOW for t in times] == [0, 1, 2]
        assert len(read_table(lake, "cluster_health")) == 2
        assert read_table(lake, "lake_gap").empty  # nothing dropped: the buffer held the outage
        assert outage_seconds < 30, outage_seconds
    finally:
        server.stop()


def test_slo_run_on_the_bucket_gives_the_results_of_the_same_samples_in_a_directory(aws_env, spark, tmp_path):  # noqa: F811
    """``kpulse slo run`` (its own local Spark, the credentials from its environment) on the
    bucket, and the same job in the session's Spark on a directory: the same rows."""
    remote = location(aws_env, "slo")
    write_samples(tmp_path, range(0, 10), offline_at={9})
    write_samples(remote, range(0, 10), offline_at={9})
    here = job.run(spark, str(tmp_path), load_definitions(), until=datetime(2026, 3, 9, 23, 10, tzinfo=UTC).timestamp())
    run = kpulse("slo", "run", "--lake", remote, "--master", "local[1]", "--until", "2026-03-09T23:10:00Z", "--json")
    there = json.loads(run.stdout)
    assert aws_env.secret_key not in run.stdout + run.stderr
    assert there["status"] == json.loads(json.dumps(here.as_dict(), default=str))["status"] and len(there["status"]) >= 2
    assert there["minute_rows"] == here.minute_rows > 0
    for table in ("slo_minute", "slo_hour", "slo_status"):
        pd.testing.assert_frame_equal(sorted_frame(read_table(remote, table)),
                                      sorted_frame(read_table(str(tmp_path), table)), obj=table)


def test_the_dashboard_shows_the_same_tiles_and_history_charts_from_the_bucket(aws_env, tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from tests.dashboard_lake import CLUSTER, write_lake
    from tests.support import APP_FILE, open_page

    expected = write_lake(str(tmp_path / "lake"), time.time(), groups=4, partitions_per_group=2, history_cycles=6)
    pafs.copy_files(str(tmp_path / "lake"), f"{S3_BUCKET}/dashboard", destination_filesystem=aws_env.filesystem())
    shown = []
    for name, lake in (("local", str(tmp_path / "lake")), ("s3", location(aws_env, "dashboard"))):
        config = tmp_path / f"{name}.yaml"
        config.write_text(yaml.safe_dump({"clusters": [{"name": CLUSTER, "bootstrap_servers": "127.0.0.1:9"}],
                                          "lake": {"path": lake}, "intervals": {"collect_seconds": 600}}))
        monkeypatch.setenv("KPULSE_CONFIG", str(config))
        app = AppTest.from_file(str(APP_FILE), default_timeout=60)
        app.run()
        assert not app.exception and not app.error, [e.value for e in app.exception]
        tiles = sorted(block.value for block in app.markdown if "kp-value" in block.value)
        app.query_params["group"] = expected.groups[1]
        open_page(app, "groups")
        charts = [chart.proto.spec for chart in app.get("plotly_chart")]
        assert len(charts) == 2 and not app.error, name  # lag in offsets and in seconds
        shown.append((tiles, charts))
    assert shown[0] == shown[1] and shown[0][0]
    assert all(json.loads(spec)["data"] for spec in shown[0][1])  # lines drawn, not an empty chart
