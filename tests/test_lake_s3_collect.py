"""``kpulse collect`` on the session's Kafka cluster writing its lake and its snapshot to a bucket
of the real S3 server (s3proxy, the ``s3_server`` fixture), the credentials from the AWS
environment: the part of the lake-on-S3 tests that needs Kafka (the rest: tests/test_lake_s3.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow.fs as pafs
import pytest
import yaml

from kpulse.lake.reader import read_table
from localkafka.s3_server import REGION
from tests.conftest import S3_BUCKET
from tests.support import collect_config


@pytest.mark.cluster
def test_collect_once_writes_the_lake_and_the_snapshot_to_the_bucket(local_cluster, s3_server, tmp_path, monkeypatch):
    lake = f"s3a://{S3_BUCKET}/collect?endpoint_override=127.0.0.1:{s3_server.port}&scheme=http&region={REGION}"
    config = collect_config(local_cluster.layout, tmp_path)
    data = yaml.safe_load(config.read_text())
    config.write_text(yaml.safe_dump({**data, "lake": {"path": lake}}))
    env = {**os.environ, "AWS_ACCESS_KEY_ID": s3_server.access_key, "AWS_SECRET_ACCESS_KEY": s3_server.secret_key}
    result = subprocess.run([sys.executable, "-m", "cli.main", "--config", str(config), "collect", "--once", "--json"],
                            capture_output=True, text=True, timeout=180, env=env)
    assert result.returncode == 0, result.stderr
    assert s3_server.secret_key not in result.stdout + result.stderr
    snapshot = json.loads(result.stdout)

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3_server.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_server.secret_key)
    health = read_table(lake, "cluster_health")
    brokers = read_table(lake, "broker_state")
    assert set(health["cluster"]) == {"test"} and len(health) >= 1
    assert health["partition_count"].iloc[-1] == snapshot["cluster"]["partition_count"]
    assert sorted(set(brokers["broker_id"])) == [1, 2, 3]
    stored = s3_server.filesystem().get_file_info(f"{S3_BUCKET}/collect/_snapshots/test.json")
    assert stored.type == pafs.FileType.File and stored.size > 100
