"""The pieces the SLO job's Spark tasks are built from, without Spark: key encoding, shards and
their files, the staging area that replaces lake partitions, and the transforms' independence
from row order. The job end to end (in Spark) is tests/test_slo_job.py."""

from __future__ import annotations

import random
import zlib
from datetime import datetime, UTC

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kpulse.lake.reader import read_table
from kpulse.lake.schema import SCHEMAS
from spark_jobs import keys, minutes, tasks, windows
from spark_jobs.definitions import parse_definitions
from spark_jobs.lake_io import Staging

M0 = 28_000_000


def test_keys_encode_plain_and_dictionary_columns_alike():
    clusters = pa.chunked_array([pa.array(["a", "a"]).dictionary_encode(), pa.array(["b", "a"]).dictionary_encode()])
    entities = pa.array(["x", "y", "x", "x"])
    ids, (cluster_of, entity_of) = keys.encode(clusters, entities)
    assert [(cluster_of[i].as_py(), entity_of[i].as_py()) for i in ids] == [("a", "x"), ("a", "y"), ("b", "x"), ("a", "x")]
    assert ids[0] == ids[3] and len(set(ids.tolist())) == 3
    assert keys.expand(ids, entity_of).to_pylist() == ["x", "y", "x", "x"]


def test_shard_count_is_a_power_of_two_covering_every_core_and_the_rows():
    assert tasks.shard_count(2, 0, 100) == 2
    assert tasks.shard_count(3, 0, 100) == 4
    assert tasks.shard_count(2, 1_000, 100) == 16  # 10 needed -> 16
    assert tasks.shard_count(2, 10**12, 100) == 256  # bounded


@pytest.mark.parametrize("written_by", [1, 2, 4, 8, 16])
@pytest.mark.parametrize("now", [1, 2, 4, 8, 16])
def test_a_shard_reads_exactly_the_files_that_can_hold_its_keys(written_by, now):
    """Files are named after the shard that wrote them; a later run with another shard count
    must still find every key of its shard, and read no more files than it must."""
    names = [f"run-part-shard-{s:04d}-of-{written_by:04d}.parquet" for s in range(written_by)]
    rng = random.Random(written_by * 100 + now)
    for _ in range(200):
        crc = zlib.crc32(f"prod\x00slo\x00group-{rng.random()}".encode())
        shard = crc % now
        chosen = [n for n in names if tasks.may_hold(n, shard, now)]
        assert names[crc % written_by] in chosen
        assert len(chosen) == max(1, written_by // now)
    assert tasks.may_hold("run-part-kept.parquet", 0, now)  # not written by a shard: always read


def test_shard_of_agrees_with_crc32_of_the_names():
    parts = [pa.array(["prod", "edge"]), pa.array(["s", "s"]), pa.array(["g1", "g2"])]
    assert tasks.shard_of(parts, 8).tolist() == [zlib.crc32(b"prod\x00s\x00g1") % 8, zlib.crc32(b"edge\x00s\x00g2") % 8]


def test_dense_fills_gaps_from_each_entitys_first_minute_whatever_the_row_order():
    counts = pa.table({"cluster": ["p", "p", "p", "p"], "entity": ["b", "a", "b", "a"],
                       "minute": pa.array([M0 + 3, M0 + 2, M0 + 1, M0 + 0], pa.int64()),
                       "good": pa.array([1, 0, None, 1], pa.int64()), "valid": pa.array([1, 1, None, 1], pa.int64())})
    rows = minutes.dense(counts, M0, M0 + 4, known=[("p", "c"), ("p", "c")]).to_pylist()
    got = sorted((r["entity"], r["minute"] - M0, r["good"]) for r in rows)
    assert got == [("a", 0, 1), ("a", 1, None), ("a", 2, 0), ("a", 3, None),
                   ("b", 1, None), ("b", 2, None), ("b", 3, 1),
                   ("c", 0, None), ("c", 1, None), ("c", 2, None), ("c", 3, None)]


def test_status_does_not_depend_on_row_order_and_counts_missing_minutes_as_no_data():
    definitions = parse_definitions({"slos": [{"name": "s", "scope": "cluster", "indicator": "partition_health_minutes",
                                               "budgetingMethod": "Timeslices", "target": 0.9, "timeWindow": "1h"}]})
    series = [(m, 0 if m == 3 else 1, 1) for m in range(10) if m != 5]  # minute 5 has no row at all
    rows = [{"cluster": "p", "slo": "s", "entity": "p", "minute": M0 + m, "good": g, "valid": v} for m, g, v in series]
    ordered = windows.status(pa.Table.from_pylist(rows), definitions, M0 + 1, M0 + 10).to_pylist()
    shuffled = rows[:]
    random.Random(1).shuffle(shuffled)
    again = windows.status(pa.Table.from_pylist(shuffled), definitions, M0 + 1, M0 + 10).to_pylist()
    key = lambda r: r["time"]  # noqa: E731
    assert sorted(ordered, key=key) == sorted(again, key=key)
    by_end = {int(r["time"].timestamp() // 60) - M0: r for r in ordered}
    assert 6 not in by_end  # no row for minute 5: no status at its end
    assert (by_end[10]["good_events"], by_end[10]["valid_events"]) == (8, 9)
    assert by_end[10]["burn_rate_5m"] == pytest.approx(0.0)  # minutes 5..9: 5 has no data, the rest good
    assert by_end[7]["burn_rate_5m"] == pytest.approx((1 / 4) / 0.1)  # minutes 2..6 without 5: 1 bad of 4


def minute_rows(cluster: str, day: int, count: int) -> pa.Table:
    start = int(datetime(2026, 3, day, tzinfo=UTC).timestamp() // 60)
    return pa.table({"time": pa.array([(start + m) * 60_000_000 for m in range(count)], pa.int64())
                     .cast(pa.timestamp("us", tz="UTC")),
                     "cluster": [cluster] * count, "slo": ["s"] * count, "entity": [cluster] * count,
                     "good": pa.array([1] * count, pa.int64()), "valid": pa.array([1] * count, pa.int64())},
                    schema=SCHEMAS["slo_minute"])


def test_staging_replaces_only_the_partitions_it_holds_and_keeps_other_clusters_when_asked(tmp_path):
    lake = str(tmp_path)
    first = Staging(lake, "run-1")
    first.write("slo_minute", pa.concat_tables([minute_rows("prod", 9, 3), minute_rows("edge", 9, 2),
                                                minute_rows("prod", 10, 4)]), "shard-0000-of-0001")
    assert first.commit("slo_minute") == 2
    first.remove()
    second = Staging(lake, "run-2")
    second.write("slo_minute", pa.concat_tables([minute_rows("prod", 9, 1), minute_rows("prod", 10, 1)]),
                 "shard-0000-of-0001")
    assert not list((tmp_path / "slo_minute" / "date=2026-03-10").glob("run-2-*"))  # nothing before commit
    second.commit("slo_minute", clusters=["prod"])
    second.remove()
    frame = read_table(lake, "slo_minute")
    days = frame.groupby([frame["time"].dt.day, "cluster"]).size().to_dict()
    assert days == {(9, "edge"): 2, (9, "prod"): 1, (10, "prod"): 1}  # edge's rows of day 9 kept
    assert not (tmp_path / "_staging").exists()
    for file in (tmp_path / "slo_minute").rglob("*.parquet"):
        assert pq.read_schema(file).remove_metadata() == SCHEMAS["slo_minute"], file


def test_staging_replaces_the_rows_from_its_start_and_keeps_earlier_hours_and_day_wide_files_rows(tmp_path):
    """An update from 10:00 on a day written whole by an earlier version (one day-wide file) and
    by hour files: the rows before 10:00 stay (the hour files untouched, the day-wide file's early
    rows written again as hour files), those from 10:00 are the staged ones, and with a cluster
    given, the other cluster's rows from 10:00 stay as well."""
    lake = str(tmp_path)
    legacy = Staging(lake, "run-0")
    legacy.write("slo_minute", pa.concat_tables([minute_rows("prod", 9, 1440), minute_rows("edge", 9, 1440)]),
                 "shard-0000-of-0001")  # day-wide, as before hour files
    legacy.commit("slo_minute")
    day = tmp_path / "slo_minute" / "date=2026-03-09"
    since = int(datetime(2026, 3, 9, 10, tzinfo=UTC).timestamp() // 60)
    first = Staging(lake, "run-1")
    first.write("slo_minute", minute_rows("prod", 9, 1440).slice(600), "shard-0000-of-0001", hourly=True)
    first.commit("slo_minute", clusters=["prod"], since=since)
    files = {p.name: p.stat().st_mtime_ns for p in day.glob("*.parquet")}
    assert not [name for name in files if name.startswith("run-0-")]  # the day-wide file is gone
    assert len([name for name in files if "-part-h" in name and "-kept" not in name]) == 14  # 10:00 .. 23:00

    second = Staging(lake, "run-2")
    later = minute_rows("prod", 9, 1440).slice(690)  # from 11:30, the previous hour files cut at 11:30
    second.write("slo_minute", later.set_column(4, "good", pa.array([0] * later.num_rows, pa.int64())),
                 "shard-0000-of-0001", hourly=True)
    second.commit("slo_minute", clusters=["prod"], since=since + 90)
    after = {p.name: p.stat().st_mtime_ns for p in day.glob("*.parquet")}
    unchanged = [name for name in files if "-part-h10-" in name or "-part-h0" in name]
    assert unchanged and {name: after.get(name) for name in unchanged} == {name: files[name] for name in unchanged}
    frame = read_table(lake, "slo_minute")
    minute = (frame["time"] - pd.Timestamp("2026-03-09", tz="UTC")) // pd.Timedelta(minutes=1)
    assert frame.groupby("cluster").size().to_dict() == {"edge": 1440, "prod": 1440}  # none lost, none twice
    assert not frame[["cluster", "time"]].duplicated().any()
    prod = frame["cluster"] == "prod"
    assert (frame["good"][prod & (minute >= 690)] == 0).all() and (frame["good"][prod & (minute < 690)] == 1).all()
    assert (frame["good"][~prod] == 1).all()
    for file in day.glob("*.parquet"):
        assert pq.read_schema(file).remove_metadata() == SCHEMAS["slo_minute"], file
