"""A file with a lake file's name but not the table's schema (``time`` as a string, as a hostile
user or a foreign tool may leave one): every reader skips it and names it once, as it does a file
that is not Parquet at all, and reads the good files beside it. Without Kafka."""

from __future__ import annotations

import json
import logging
import time
from datetime import date

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
import yaml

from kpulse.lake.reader import (UnreadableFileError, count_rows, read_days, read_file, read_table,
                                read_table_with_problems, time_bound)
from kpulse.lake.schema import SCHEMAS
from kpulse.lake.store import LakeWriter
from tests.conftest import kpulse
from tests.slo_spark import write_samples

DAY = date(2026, 3, 9)


def wrong_schema_file(lake, table="cluster_health", time_value="yesterday"):
    """A Parquet file named like the writer's, in the table's folder, whose ``time`` is a string."""
    bad = lake / table / f"date={DAY}" / "part-20260309T230500Z-0badf11e.parquet"
    bad.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"time": [time_value], "cluster": ["prod"], "offline_partitions": ["many"]}), bad)
    return bad


@pytest.mark.parametrize("time_value", ["yesterday", "2026-03-09T23:05:00+00:00"])
def test_the_one_reader_skips_and_names_a_file_of_another_schema(tmp_path, time_value, caplog):
    write_samples(tmp_path, range(0, 10))
    bad = wrong_schema_file(tmp_path, time_value=time_value)

    unreadable: list = []
    rows = read_days(str(tmp_path), "cluster_health", DAY, DAY, unreadable=unreadable)
    assert rows.num_rows == 20
    assert [str(p).split(": ", 1)[0] for p in unreadable] == [str(bad)]
    assert "time" in unreadable[0].error and "string" in unreadable[0].error and "\n" not in unreadable[0].error
    with pytest.raises(UnreadableFileError, match="^cannot read .*0badf11e"):
        read_days(str(tmp_path), "cluster_health", DAY, DAY)

    bound: list = []
    assert time_bound(str(tmp_path), "cluster_health", None, newest=False, unreadable=bound) is not None
    assert [p.path for p in bound] == [str(bad)]
    counted: list = []
    assert count_rows(str(tmp_path), "cluster_health", DAY, DAY, counted) == 20
    assert [p.path for p in counted] == [str(bad)]

    frame, skipped = read_table_with_problems(str(tmp_path), "cluster_health")  # the dashboard's read
    assert len(frame) == 20 and [p.path for p in skipped] == [str(bad)]
    with caplog.at_level(logging.WARNING, logger="kpulse.lake.reader"):
        assert len(read_table(str(tmp_path), "cluster_health")) == 20
    assert caplog.text.count("0badf11e") == 1


def test_slo_run_skips_names_and_records_it_once_without_a_traceback(tmp_path):
    write_samples(tmp_path, range(0, 10), offline_at={9})
    bad = wrong_schema_file(tmp_path)
    result = kpulse("slo", "run", "--lake", str(tmp_path), "--master", "local[1]",
                    "--until", "2026-03-09T23:10:00Z", check=False)
    assert "Traceback" not in result.stderr and result.returncode == 0, result.stderr
    named = [line for line in result.stderr.splitlines() if "0badf11e" in line]
    assert len(named) == 1 and named[0].startswith(f"kpulse slo: skipped unreadable file {bad}: "), result.stderr
    assert "column time is string" in named[0]
    assert "prod partition-health prod: SLI 0.90000" in result.stdout
    gaps = read_table(str(tmp_path), "lake_gap")
    assert list(gaps["reason"].str.contains("0badf11e")) == [True]


def test_audit_show_skips_and_names_it(tmp_path):
    lake = tmp_path / "lake"
    writer = LakeWriter(str(lake))
    writer.append("audit", [{"time": time.time(), "cluster": "prod", "action_id": "a1", "actor": "ann",
                             "action": "reset-offsets", "target": "group billing", "result": "ok"}])
    assert writer.flush().ok
    today = time.strftime("%Y-%m-%d", time.gmtime())
    bad = lake / "audit" / f"date={today}" / "part-20260309T230500Z-0badf11e.parquet"
    pq.write_table(pa.table({"time": ["yesterday"], "cluster": ["prod"]}), bad)
    config = tmp_path / "kpulse.yaml"
    config.write_text(yaml.safe_dump({"clusters": [{"name": "prod", "bootstrap_servers": "127.0.0.1:9"}],
                                      "lake": {"path": str(lake)}}))
    result = kpulse("--config", str(config), "audit", "show", "--json", check=False)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert [r["action_id"] for r in json.loads(result.stdout)["records"]] == ["a1"]
    assert [line for line in result.stderr.splitlines() if "0badf11e" in line] == [
        line for line in result.stderr.splitlines() if line.startswith(f"lake: skipped {bad}: ")] != []


def test_read_file_the_compaction_and_the_spark_tasks_use_refuses_it_by_name(tmp_path):
    bad = wrong_schema_file(tmp_path)
    with pytest.raises(UnreadableFileError, match=f"^cannot read {bad}: .*time"):
        read_file(pafs.LocalFileSystem(), str(bad), SCHEMAS["cluster_health"])
