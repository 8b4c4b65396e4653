"""`kpulse lake compact`: closed days become one file per table, atomically (a reader sees the old
files or the new one, never both, never neither), without losing or duplicating a row, and a
second run changes nothing; retention deletes old partitions, consumer_lag is downsampled before
its raw rows expire; the dashboard's reader and the SLO job read the compacted lake unchanged.
Real Spark (local), real files."""

from __future__ import annotations

import shutil
from datetime import date, datetime, timedelta, UTC

import pandas as pd
import pyarrow.fs as pafs
import pytest

from kpulse.config.model import RetentionConfig
from kpulse.lake import compaction, reader
from kpulse.lake.compaction import Partition, plan_partition
from kpulse.lake.reader import read_table
from kpulse.lake.store import LakeWriter
from spark_jobs import compact_job
from tests.slo_spark import DEFINITIONS, spark  # noqa: F401 - the session fixture

DAY = date(2026, 3, 9)
START = datetime(2026, 3, 9, tzinfo=UTC)
NEXT_DAY = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
"""``--until`` of the runs: 2026-03-09 is closed, 2026-03-10 is today."""
FS = pafs.LocalFileSystem()


def write_lake(lake, *, days=(0, 1), cycles=36, flush_every=6, groups=3, partitions=2) -> None:
    """consumer_lag and consumer_group rows every 10 s from midnight of each day offset, one
    file per ``flush_every`` cycles (as the collector's one flush a minute)."""
    clock = [START.timestamp()]
    writer = LakeWriter(str(lake), clock=lambda: clock[0])
    for offset in days:
        for cycle in range(cycles):
            t = START.timestamp() + offset * 86_400 + cycle * 10
            writer.append("consumer_lag", [
                {"time": t, "cluster": "prod", "group_id": f"g{g}", "topic": "orders", "partition": p,
                 "committed_offset": 100 * cycle + g, "log_end_offset": 100 * cycle + g + (cycle * p) % 7,
                 "lag": (cycle * p) % 7, "lag_seconds": None if cycle % 5 == 0 else float(cycle % 11),
                 "status": "WARN" if cycle % 9 == 0 else "OK"}
                for g in range(groups) for p in range(partitions)])
            writer.append("consumer_group", [{"time": t, "cluster": "prod", "group_id": f"g{g}", "state": "Stable",
                                              "members": 1, "total_lag": cycle} for g in range(groups)])
            if cycle % flush_every == flush_every - 1:
                clock[0] = t
                assert writer.flush().ok
    assert writer.flush().ok


def files(lake, table, day) -> list[str]:
    directory = f"{lake}/{table}/date={day.isoformat()}"
    return sorted(entry.base_name for entry in FS.get_file_info(pafs.FileSelector(directory)))


def sorted_frame(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values(list(frame.columns)).reset_index(drop=True)


# --- planning (pure) -------------------------------------------------------------------------------

RETENTION = RetentionConfig()
TODAY = date(2026, 3, 20)


@pytest.mark.parametrize("table, day, partition, downsampled, expected", [
    ("consumer_lag", TODAY, Partition(("a", "b")), False, ()),  # today: the collector writes it
    ("consumer_group", TODAY - timedelta(days=1), Partition(("a", "b")), False, ("compact",)),
    ("consumer_group", TODAY - timedelta(days=1), Partition(("a",)), False, ()),  # already one file
    ("consumer_group", TODAY - timedelta(days=1), Partition(("c",), leftovers=("a",)), False, ("clean",)),
    ("consumer_group", TODAY - timedelta(days=1), Partition(("c",), temporaries=(".compacted-x.tmp",)), False,
     ("clean",)),
    ("consumer_group", TODAY - timedelta(days=91), Partition(("a",)), False, ("expire",)),
    ("consumer_group", TODAY - timedelta(days=90), Partition(("a", "b")), False, ("compact",)),
    ("consumer_lag", TODAY - timedelta(days=1), Partition(("a", "b")), False, ("downsample", "compact")),
    ("consumer_lag", TODAY - timedelta(days=1), Partition(("a",)), True, ()),
    ("consumer_lag", TODAY - timedelta(days=1), Partition(("a", "late")), True, ("downsample", "compact")),
    ("consumer_lag", TODAY - timedelta(days=8), Partition(("a",)), True, ("expire",)),
    ("consumer_lag", TODAY - timedelta(days=8), Partition(("a", "late")), True, ("downsample", "expire")),
    ("consumer_lag", TODAY - timedelta(days=8), Partition(("a", "b")), False, ("downsample", "expire")),
    ("consumer_lag", TODAY - timedelta(days=95), Partition(("a",)), False, ("expire",)),  # too old to keep
    ("share_partition", TODAY - timedelta(days=8), Partition(("a",)), False, ("expire",)),
    ("audit", TODAY - timedelta(days=4000), Partition(("a", "b")), False, ("compact",)),  # forever
    ("slo_minute", TODAY - timedelta(days=1), Partition(("a", "b")), False, ()),  # the SLO job's own
])
def test_plan_of_a_partition(table, day, partition, downsampled, expected):
    assert plan_partition(table, day, TODAY, partition, RETENTION, downsampled) == expected


def test_downsampling_off_and_retention_overrides():
    off = RetentionConfig(downsample_minutes=0, tables={"consumer_group": 2, "audit": None})
    old = TODAY - timedelta(days=3)
    assert plan_partition("consumer_lag", old, TODAY, Partition(("a", "b")), off, False) == ("compact",)
    assert plan_partition("consumer_group", old, TODAY, Partition(("a",)), off, False) == ("expire",)


# --- the job, on a real lake with real Spark ---------------------------------------------------------

def test_compaction_keeps_every_row_and_a_second_run_changes_nothing(spark, tmp_path):  # noqa: F811
    write_lake(tmp_path)
    lag_before = sorted_frame(read_table(str(tmp_path), "consumer_lag"))
    groups_before = sorted_frame(read_table(str(tmp_path), "consumer_group"))
    today_files = files(tmp_path, "consumer_lag", NEXT_DAY.date())
    assert len(files(tmp_path, "consumer_lag", DAY)) == 6

    result = compact_job.run(spark, str(tmp_path), RetentionConfig(), until=NEXT_DAY.timestamp())

    assert not result.failed
    for table in ("consumer_lag", "consumer_group", "consumer_lag_downsampled"):
        names = files(tmp_path, table, DAY)
        assert len(names) == 1 and names[0].startswith("compacted-"), (table, names)
    assert files(tmp_path, "consumer_lag", NEXT_DAY.date()) == today_files  # today: untouched
    pd.testing.assert_frame_equal(sorted_frame(read_table(str(tmp_path), "consumer_lag")), lag_before)
    pd.testing.assert_frame_equal(sorted_frame(read_table(str(tmp_path), "consumer_group")), groups_before)
    log = read_table(str(tmp_path), "lake_compaction")
    assert sorted(zip(log["table_name"], log["action"])) == [
        ("consumer_group", "compact"), ("consumer_lag", "compact"), ("consumer_lag_downsampled", "downsample")]
    compacted = log[log["table_name"] == "consumer_lag"].iloc[0]
    assert (compacted["files_before"], compacted["rows_before"], compacted["rows_after"]) == (6, 216, 216)

    listing = {table: files(tmp_path, table, DAY) for table in ("consumer_lag", "consumer_group")}
    again = compact_job.run(spark, str(tmp_path), RetentionConfig(), until=NEXT_DAY.timestamp())
    assert again.planned == [] and again.done == []
    assert {table: files(tmp_path, table, DAY) for table in listing} == listing


def test_downsampled_rows_match_the_raw_rows_bucket_by_bucket(spark, tmp_path):  # noqa: F811
    write_lake(tmp_path, days=(0,), cycles=90)  # 15 minutes: three 5-minute buckets
    raw = read_table(str(tmp_path), "consumer_lag")

    compact_job.run(spark, str(tmp_path), RetentionConfig(downsample_minutes=5), until=NEXT_DAY.timestamp())

    folded = read_table(str(tmp_path), "consumer_lag_downsampled")
    keys = ["group_id", "topic", "partition"]
    raw["bucket"] = raw["time"].dt.floor("5min")
    last = raw.sort_values("time").groupby([*keys, "bucket"]).last()  # pandas' last skips nulls, as the fold
    expected = raw.groupby([*keys, "bucket"]).agg(samples=("time", "size"), max_lag=("lag", "max"),
                                                  max_lag_seconds=("lag_seconds", "max"))
    expected[["committed_offset", "log_end_offset", "lag", "status"]] = last[
        ["committed_offset", "log_end_offset", "lag", "status"]]
    got = folded.rename(columns={"time": "bucket"}).set_index([*keys, "bucket"]).sort_index()
    expected = expected.sort_index()
    assert len(folded) == len(expected) == 3 * 3 * 2
    assert set(folded["bucket_minutes"]) == {5}
    for column in expected.columns:
        assert got[column].astype(object).tolist() == expected[column].astype(object).tolist(), column


def test_retention_expires_old_days_after_downsampling_them(spark, tmp_path):  # noqa: F811
    write_lake(tmp_path, days=(0, 1, 9), cycles=12)
    until = (START + timedelta(days=9, hours=1)).timestamp()  # 2026-03-18: the 9th is 9 days old

    result = compact_job.run(spark, str(tmp_path), RetentionConfig(per_partition_days=7, days=8),
                             until=until)

    assert not result.failed
    assert [day for day, _ in reader.partitions(FS, f"{tmp_path}/consumer_lag")] == [date(2026, 3, 18)]
    assert [day for day, _ in reader.partitions(FS, f"{tmp_path}/consumer_group")] == [
        date(2026, 3, 10), date(2026, 3, 18)]
    downsampled = read_table(str(tmp_path), "consumer_lag_downsampled")
    assert sorted(set(downsampled["time"].dt.date)) == [date(2026, 3, 10)]  # the 9th: older than `days`
    assert downsampled["samples"].sum() == 12 * 3 * 2


def test_dry_run_changes_nothing(spark, tmp_path):  # noqa: F811
    write_lake(tmp_path)
    before = {table: files(tmp_path, table, DAY) for table in ("consumer_lag", "consumer_group")}

    result = compact_job.run(spark, str(tmp_path), RetentionConfig(), until=NEXT_DAY.timestamp(), dry_run=True)

    assert {(t.table, t.actions) for t in result.planned} == {
        ("consumer_lag", ("downsample", "compact")), ("consumer_group", ("compact",))}
    assert {table: files(tmp_path, table, DAY) for table in before} == before
    assert not (tmp_path / "lake_compaction").exists()


# --- crashes and concurrent readers ------------------------------------------------------------------

def test_a_crash_after_the_swap_leaves_the_rows_once_and_the_next_run_cleans_up(spark, tmp_path,  # noqa: F811
                                                                                 monkeypatch):
    write_lake(tmp_path, days=(0,))
    before = sorted_frame(read_table(str(tmp_path), "consumer_lag"))

    def crash(*_):
        raise OSError("killed")

    monkeypatch.setattr(compaction, "_delete", crash)  # dies between the swap and the deletions
    with pytest.raises(OSError):
        compaction.compact(FS, str(tmp_path), "consumer_lag", DAY)
    monkeypatch.undo()
    names = files(tmp_path, "consumer_lag", DAY)
    assert len(names) == 7 and sum(name.startswith("compacted-") for name in names) == 1
    pd.testing.assert_frame_equal(sorted_frame(read_table(str(tmp_path), "consumer_lag")), before)

    result = compact_job.run(spark, str(tmp_path), RetentionConfig(downsample_minutes=0), until=NEXT_DAY.timestamp())

    assert sorted((d.table, d.action) for d in result.done) == [("consumer_group", "compact"),
                                                                ("consumer_lag", "clean")]
    assert len(files(tmp_path, "consumer_lag", DAY)) == 1
    pd.testing.assert_frame_equal(sorted_frame(read_table(str(tmp_path), "consumer_lag")), before)


def test_a_crash_before_the_swap_changes_nothing_a_reader_sees(tmp_path, monkeypatch):
    write_lake(tmp_path, days=(0,))
    before = sorted_frame(read_table(str(tmp_path), "consumer_lag"))
    class Dying(pafs.LocalFileSystem):
        def move(self, src, dest):
            raise OSError("killed before the rename")

    with pytest.raises(OSError):
        compaction.compact(Dying(), str(tmp_path), "consumer_lag", DAY)
    names = files(tmp_path, "consumer_lag", DAY)
    assert len(names) == 6 and not any(name.startswith("compacted-") for name in names)
    pd.testing.assert_frame_equal(sorted_frame(read_table(str(tmp_path), "consumer_lag")), before)


def test_a_late_file_written_after_compaction_stays_and_is_compacted_next(tmp_path):
    write_lake(tmp_path, days=(0,))
    compaction.compact(FS, str(tmp_path), "consumer_lag", DAY)
    late = LakeWriter(str(tmp_path))
    late.append("consumer_lag", [{"time": START + timedelta(hours=23), "cluster": "prod", "group_id": "late",
                                  "topic": "orders", "partition": 0, "lag": 1}])
    assert late.flush().ok
    assert len(read_table(str(tmp_path), "consumer_lag")) == 217

    compaction.compact(FS, str(tmp_path), "consumer_lag", DAY)

    assert len(files(tmp_path, "consumer_lag", DAY)) == 1
    assert len(read_table(str(tmp_path), "consumer_lag")) == 217


def test_a_reader_that_listed_the_old_files_reads_the_new_one(tmp_path, monkeypatch):
    """The swap happens between a reader's listing and its reads: it lists again, and sees each
    row once (the dashboard's read_table, and read_days/count_rows of the SLO job)."""
    write_lake(tmp_path, days=(0,))
    lake = str(tmp_path)
    expected = sorted_frame(read_table(lake, "consumer_lag"))
    listed = reader.partition_files
    swapped = []

    def list_then_swap(fs, directory):
        paths = listed(fs, directory)
        if not swapped and "consumer_lag" in directory and len(paths) > 1:
            swapped.append(compaction.compact(FS, lake, "consumer_lag", DAY))  # old files deleted now
        return paths

    monkeypatch.setattr(reader, "partition_files", list_then_swap)
    pd.testing.assert_frame_equal(sorted_frame(read_table(lake, "consumer_lag")), expected)
    assert swapped

    shutil.rmtree(tmp_path / "consumer_lag")
    write_lake(tmp_path, days=(0,))
    swapped.clear()
    assert reader.read_days(lake, "consumer_lag", DAY, DAY).num_rows == len(expected)
    assert swapped
    swapped.clear()
    shutil.rmtree(tmp_path / "consumer_lag")
    write_lake(tmp_path, days=(0,))
    assert reader.count_rows(lake, "consumer_lag", DAY, DAY) == len(expected)
    assert swapped


# --- the SLO job reads the compacted lake as it read the files -------------------------------------

def test_the_slo_job_computes_the_same_minutes_from_the_compacted_lake(spark, tmp_path):  # noqa: F811
    from spark_jobs.job import run as run_slo
    from tests.slo_spark import write_samples

    plain, compacted = tmp_path / "plain", tmp_path / "compacted"
    for minute_range in (range(0, 30), range(30, 60), range(60, 120)):  # three flushes, across midnight
        write_samples(plain, minute_range, offline_at=(5, 70))
    shutil.copytree(plain, compacted)
    until = datetime(2026, 3, 10, 1, 0, tzinfo=UTC).timestamp()
    result = compact_job.run(spark, str(compacted), RetentionConfig(), until=until)
    assert {d.table for d in result.done} == {"cluster_health", "consumer_group"}

    for lake in (plain, compacted):
        run_slo(spark, str(lake), DEFINITIONS, until=until, full=True)
    for table in ("slo_minute", "slo_status"):
        assert len(read_table(str(plain), table)) > 0
        pd.testing.assert_frame_equal(sorted_frame(read_table(str(compacted), table)),
                                      sorted_frame(read_table(str(plain), table)))


# --- the command and its configuration -------------------------------------------------------------

def test_the_command_refuses_bad_input_in_one_line(tmp_path, capsys):
    from cli.main import main

    assert main(["lake", "compact", "--lake", str(tmp_path / "missing")]) == 1
    assert main(["lake", "compact", "--lake", str(tmp_path), "--until", "yesterday-ish"]) == 1
    assert main(["lake", "compact", "--lake", str(tmp_path), "--daily", "--dry-run"]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 3 and all(line.startswith("kpulse: error: ") for line in lines), lines
    assert "no lake at" in lines[0] and "not an ISO 8601 time" in lines[1] and "--daily" in lines[2]


@pytest.mark.parametrize("retention, error", [
    ({"days": 0}, "lake.retention.days: expected a number of days >= 1 or 'forever', got int 0"),
    ({"per_partition_days": "week"}, "lake.retention.per_partition_days: expected a number of days"),
    ({"tables": {"audit": -1}}, "lake.retention.tables.audit: expected a number of days"),
    ({"daily_at": "25:00"}, "lake.retention.daily_at: expected a UTC time of day HH:MM"),
    ({"downsample_minutes": -5}, "lake.retention.downsample_minutes: must be between 0 and 1440"),
    ({"keep": 3}, "lake.retention.keep: unknown key"),
])
def test_retention_config_errors_name_the_key(retention, error):
    from pathlib import Path

    from kpulse.config.errors import ConfigError
    from kpulse.config.parse import parse_config

    data = {"clusters": [{"name": "c", "bootstrap_servers": "h:9092"}], "lake": {"path": "/l", "retention": retention}}
    with pytest.raises(ConfigError) as raised:
        parse_config(data, source="t", base_dir=Path("/"))
    assert str(raised.value).startswith(error)


def test_retention_config_reads_forever_and_overrides():
    from pathlib import Path

    from kpulse.config.parse import parse_config

    data = {"clusters": [{"name": "c", "bootstrap_servers": "h:9092"}],
            "lake": {"retention": {"per_partition_days": 3, "days": "forever", "tables": {"probe": 30}}}}
    retention = parse_config(data, source="t", base_dir=Path("/")).lake.retention
    assert (retention.per_partition_days, retention.days, dict(retention.tables)) == (3, None, {"audit": None,
                                                                                               "probe": 30})
    assert compaction.retention_days(retention, "consumer_group") is None
    assert compaction.retention_days(retention, "share_partition") == 3


@pytest.mark.parametrize("now, expected_hours", [
    (datetime(2026, 3, 9, 0, 0, tzinfo=UTC), 0.5),
    (datetime(2026, 3, 9, 0, 30, tzinfo=UTC), 24.0),  # just run: tomorrow
    (datetime(2026, 3, 9, 23, 30, tzinfo=UTC), 1.0),
])
def test_the_daily_service_waits_for_the_configured_time(now, expected_hours):
    from spark_jobs.compact_command import seconds_until

    assert seconds_until("00:30", now) == expected_hours * 3600


def test_spark_submit_runs_the_same_job(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    import pyspark

    spark_home = Path(pyspark.__file__).parent
    root = Path(__file__).resolve().parent.parent
    write_lake(tmp_path, days=(0,))
    before = sorted_frame(read_table(str(tmp_path), "consumer_lag"))
    env = {**os.environ, "SPARK_HOME": str(spark_home), "SPARK_LOCAL_IP": "127.0.0.1",
           "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}

    done = subprocess.run([str(spark_home / "bin" / "spark-submit"), "--master", "local[1]",
                           str(root / "spark_jobs" / "lake_compact.py"), "--lake", str(tmp_path),
                           "--until", NEXT_DAY.isoformat()], env=env, capture_output=True, text=True, timeout=300)

    assert done.returncode == 0, done.stderr[-2000:]
    assert "compact    consumer_lag 2026-03-09: 6 -> 1 file(s), 216 -> 216 rows" in done.stdout
    assert [name.startswith("compacted-") for name in files(tmp_path, "consumer_lag", DAY)] == [True]
    pd.testing.assert_frame_equal(sorted_frame(read_table(str(tmp_path), "consumer_lag")), before)


def test_readers_running_during_the_compaction_always_see_each_row_once(tmp_path):
    """Real concurrency: two threads read the partition over and over (the dashboard's read and
    the SLO job's footer count) while it is compacted; every read gives the whole day, once."""
    import threading

    write_lake(tmp_path, days=(0,), cycles=360, flush_every=6)  # 60 files
    lake = str(tmp_path)
    expected = len(read_table(lake, "consumer_lag"))
    seen: list[tuple[str, int]] = []
    stop = threading.Event()

    def keep_reading(name, read):
        while not stop.is_set():
            seen.append((name, read()))

    readers = [threading.Thread(target=keep_reading, args=("read_table", lambda: len(read_table(lake, "consumer_lag")))),
               threading.Thread(target=keep_reading, args=("count_rows",
                                                          lambda: reader.count_rows(lake, "consumer_lag", DAY, DAY)))]
    for thread in readers:
        thread.start()
    try:
        while len(seen) < 4:
            stop.wait(0.01)
        compaction.compact(FS, lake, "consumer_lag", DAY)
        after = len(seen)
        while len(seen) < after + 4:
            stop.wait(0.01)
    finally:
        stop.set()
        for thread in readers:
            thread.join()

    assert len(files(tmp_path, "consumer_lag", DAY)) == 1
    assert {name for name, _ in seen} == {"read_table", "count_rows"}
    assert [count for _, count in seen if count != expected] == []
