"""The SLO job end to end on a lake written by the collectors' LakeWriter, in a real local Spark:
the contract of both output tables, rerun, late data, incremental runs, bad input; and the CLI."""

from __future__ import annotations

import json
import shutil
from datetime import datetime, UTC

import pandas as pd
import pyarrow.parquet as pq
import pytest

from kpulse.lake.reader import read_table
from kpulse.lake.store import LakeWriter
from kpulse.lake.schema import SCHEMAS
from spark_jobs.job import run
from spark_jobs.lake_io import LakeError
from tests.conftest import kpulse
from tests.slo_spark import DAY_ONE, DEFINITIONS, at, spark, write_samples  # noqa: F401 - spark: the shared session fixture

def minute_table(lake):
    frame = read_table(str(lake), "slo_minute")
    return sorted((r.slo, r.entity, int(r.time.timestamp() // 60), None if pd.isna(r.good) else int(r.good))
                  for r in frame.itertuples())


def health_minutes(lake):
    base = int(DAY_ONE.timestamp() // 60)
    return {m - base: g for slo, _, m, g in minute_table(lake) if slo == "partition-health"}


def test_outputs_follow_the_lake_contract_and_a_rerun_writes_the_same_rows(spark, tmp_path):
    write_samples(tmp_path, range(0, 90), offline_at={70, 71})
    until = at(90).timestamp()
    first = run(spark, str(tmp_path), DEFINITIONS, until=until)
    for table in ("slo_minute", "slo_status"):
        files = list((tmp_path / table).rglob("*.parquet"))
        assert files and {f.parent.name for f in files} == {"date=2026-03-09", "date=2026-03-10"}
        for file in files:
            assert pq.read_schema(file).remove_metadata() == SCHEMAS[table], file
    minutes_before, status_before = minute_table(tmp_path), read_table(str(tmp_path), "slo_status")
    assert len(minutes_before) == 2 * 90 and len(status_before) == 2 * 90  # minute ends 23:01 .. 00:30
    assert first.minute_rows == 180 and first.status_rows == 180

    again = run(spark, str(tmp_path), DEFINITIONS, until=until)
    assert minute_table(tmp_path) == minutes_before
    status_after = read_table(str(tmp_path), "slo_status")
    assert status_after.equals(status_before)
    latest = {(r["slo"], r["entity"]): r for r in again.latest}
    health = latest[("partition-health", "prod")]
    assert health["time"] == "2026-03-10T00:30:00+00:00"
    assert (health["good_events"], health["valid_events"]) == (88, 90)
    assert health["burn_rate_1h"] == pytest.approx((2 / 60) / 0.01)
    assert latest[("consumer-progress", "billing")]["sli"] == pytest.approx(88 / 90)


def test_minutes_without_samples_are_no_data_and_late_samples_within_lateness_are_counted(spark, tmp_path):
    write_samples(tmp_path, range(0, 30), skip={25})
    run(spark, str(tmp_path), DEFINITIONS, until=at(30).timestamp())
    assert health_minutes(tmp_path)[25] is None
    # minute 25's samples arrive late (bad ones), with minutes 30..39, before the next run
    write_samples(tmp_path, [25], offline_at={25})
    write_samples(tmp_path, range(30, 40))
    result = run(spark, str(tmp_path), DEFINITIONS, until=at(40).timestamp())
    minutes = health_minutes(tmp_path)
    assert minutes[25] == 0 and minutes[24] == 1 and minutes[39] == 1 and len(minutes) == 40
    health = next(r for r in result.latest if r["slo"] == "partition-health")
    assert (health["good_events"], health["valid_events"]) == (39, 40)


def test_an_incremental_run_recomputes_from_the_hour_before_the_previous_run_less_the_lateness(spark, tmp_path):
    write_samples(tmp_path, range(0, 150), offline_at={10})
    run(spark, str(tmp_path), DEFINITIONS, until=at(130).timestamp())  # 01:10 on day two
    before = {table: file_times(tmp_path / table) for table in ("slo_minute", "slo_status")}
    result = run(spark, str(tmp_path), DEFINITIONS, until=at(150).timestamp())
    # previous evaluation 01:10, less the 10 minutes' lateness: from 01:00 on day two
    assert datetime.fromisoformat(result.as_dict()["recomputed_from"]) == datetime(2026, 3, 10, 1, tzinfo=UTC)
    after = {table: file_times(tmp_path / table) for table in ("slo_minute", "slo_status")}
    for table in after:  # the files of the hours before were not rewritten, those from 01:00 were
        earlier = {name: stamp for name, stamp in before[table].items() if "-part-h01-" not in name}
        assert earlier and {name: after[table].get(name) for name in earlier} == earlier
        assert not [name for name in before[table] if "-part-h01-" in name and name in after[table]]
    # the rows written are those of the minutes 01:00 .. 01:30 and the evaluations at their ends
    assert result.minute_rows == 2 * 30 and result.status_rows == 2 * 31
    health = next(r for r in result.latest if r["slo"] == "partition-health")
    assert (health["good_events"], health["valid_events"]) == (149, 150)  # the windows still see minute 10
    assert len(health_minutes(tmp_path)) == 150


def file_times(table_dir):
    """``date=…/name -> modification time`` of a table's files."""
    return {f"{p.parent.name}/{p.name}": p.stat().st_mtime_ns for p in table_dir.rglob("*.parquet")}


def lake_rows(lake, table):
    """Every row of a table, every column, in key and time order."""
    frame = read_table(str(lake), table)
    return frame.sort_values(["cluster", "slo", "entity", "time"], kind="stable").reset_index(drop=True)


def test_incremental_runs_give_exactly_the_rows_of_one_full_run_over_the_same_samples(spark, tmp_path):
    """Runs every few minutes, across midnight, with a group that appears late, a minute without
    samples, bad minutes and samples arriving within the lateness: every row of both tables, every
    column, equals one full run's."""
    incremental, full = tmp_path / "incremental", tmp_path / "full"
    bad, skip = {10, 58, 61, 62, 133}, {40}

    def samples(lake, minutes):
        write_samples(lake, minutes, offline_at=bad, skip=skip)
        write_samples(lake, [m for m in minutes if m >= 70], offline_at=bad, skip=skip, cluster="edge")

    runs, written = [17, 45, 61, 66, 119, 125, 181], []
    for previous, until in zip([0, *runs], runs):
        arrived = range(previous, until - 3) if until < runs[-1] else range(previous, until)
        samples(incremental, arrived)
        result = run(spark, str(incremental), DEFINITIONS, until=at(until).timestamp())
        if previous:  # from the hour of the previous evaluation less the lateness
            assert result.plan.start * 60 == (at(previous - 10).timestamp() // 3600) * 3600
        written.append((result.plan.start, until, result.minute_rows, result.status_rows))
        samples(incremental, range(until - 3, until) if until < runs[-1] else [])  # late, within the lateness
    samples(full, range(0, runs[-1]))
    run(spark, str(full), DEFINITIONS, until=at(runs[-1]).timestamp(), full=True)
    for table in ("slo_minute", "slo_hour", "slo_status"):
        expected = lake_rows(full, table)
        assert len(expected) > (10 if table == "slo_hour" else 400)
        pd.testing.assert_frame_equal(lake_rows(incremental, table), expected, check_exact=True)
    # the run from midnight wrote the closed day's hours again as one file per shard, no hour files;
    # the minutes stay one file per hour (an update reads only the hours around its windows' edges)
    day_one = [p.name for p in (incremental / "slo_hour" / "date=2026-03-09").glob("*.parquet")]
    assert day_one and not [name for name in day_one if "-part-h" in name]
    assert [p.name for p in (incremental / "slo_minute" / "date=2026-03-09").glob("*-part-h23-*.parquet")]
    # each run wrote the rows of its own minutes (and the evaluations at their ends), no others
    minute_times, status_times = (lake_rows(full, table)["time"] for table in ("slo_minute", "slo_status"))
    for start, until, minute_rows, status_rows in written:
        start = pd.Timestamp(start * 60, unit="s", tz="UTC")
        assert minute_rows == ((minute_times >= start) & (minute_times < at(until))).sum() > 0
        assert status_rows == ((status_times >= start) & (status_times <= at(until))).sum() > 0


def test_an_update_of_a_day_written_whole_by_an_earlier_version_recomputes_that_day(spark, tmp_path):
    """Outputs of the version that replaced whole days (files without an hour in their name):
    the first update recomputes from their midnight, then the rows equal a full run's."""
    updated, full = tmp_path / "updated", tmp_path / "full"
    for lake in (updated, full):
        write_samples(lake, range(0, 150), offline_at={70, 100})
    run(spark, str(updated), DEFINITIONS, until=at(130).timestamp())
    for file in (updated / "slo_minute").rglob("*.parquet"):  # as the earlier version named them
        file.rename(file.with_name(file.name.replace("-part-h", "-day-h").replace("-shard-", "-part-shard-")))
    result = run(spark, str(updated), DEFINITIONS, until=at(150).timestamp())
    assert datetime.fromisoformat(result.as_dict()["recomputed_from"]) == datetime(2026, 3, 10, tzinfo=UTC)
    run(spark, str(full), DEFINITIONS, until=at(150).timestamp(), full=True)
    for table in ("slo_minute", "slo_status"):
        pd.testing.assert_frame_equal(lake_rows(updated, table), lake_rows(full, table), check_exact=True)


def test_a_closed_day_with_an_unreadable_hour_file_is_not_merged(spark, tmp_path):
    """The update from midnight writes the closed day's hours again as day files, unless one of
    that day's files could not be read: merged, its rows would be gone for good."""
    write_samples(tmp_path, range(0, 110))
    run(spark, str(tmp_path), DEFINITIONS, until=at(55).timestamp())  # before midnight: day one by the hour
    run(spark, str(tmp_path), DEFINITIONS, until=at(100).timestamp())
    day_one = tmp_path / "slo_hour" / "date=2026-03-09"
    bad = sorted(day_one.glob("*-part-h23-*.parquet"))[0]
    bad.write_bytes(b"PAR1 this is not parquet")
    before = sorted(p.name for p in day_one.glob("*.parquet"))
    result = run(spark, str(tmp_path), DEFINITIONS, until=at(110).timestamp())
    assert datetime.fromisoformat(result.as_dict()["recomputed_from"]) == datetime(2026, 3, 10, tzinfo=UTC)
    assert any(line.startswith(f"{bad}: ") for line in result.unreadable)
    assert sorted(p.name for p in day_one.glob("*.parquet")) == before


def test_a_run_for_one_cluster_keeps_the_other_clusters_rows(spark, tmp_path):
    write_samples(tmp_path, range(0, 20), cluster="prod")
    write_samples(tmp_path, range(0, 20), offline_at={5}, cluster="edge")
    run(spark, str(tmp_path), DEFINITIONS, until=at(20).timestamp())
    run(spark, str(tmp_path), DEFINITIONS, until=at(20).timestamp(), clusters=["prod"], full=True)
    frame = read_table(str(tmp_path), "slo_minute")
    assert sorted(frame.groupby("cluster").size().items()) == [("edge", 40), ("prod", 40)]


def test_a_missing_or_corrupt_lake_is_one_line_and_writes_nothing(spark, tmp_path):
    with pytest.raises(LakeError, match=r"^no lake at .*absent"):
        run(spark, str(tmp_path / "absent"), DEFINITIONS, until=at(10).timestamp())
    with pytest.raises(LakeError, match=r"^no samples in the lake"):
        run(spark, str(tmp_path), DEFINITIONS, until=at(10).timestamp())
    assert not (tmp_path / "slo_minute").exists() and not (tmp_path / "slo_status").exists()


def garbage_file(lake, table="cluster_health", day="2026-03-09"):
    bad = lake / table / f"date={day}" / "part-20260309T230500Z-0badf11e.parquet"
    bad.write_bytes(b"PAR1 this is not parquet")
    return bad


def test_an_unreadable_lake_file_is_skipped_named_and_recorded_once_as_a_gap(spark, tmp_path):
    """One corrupt file among good ones: every SLO of every cluster is still evaluated from the
    good files, the file is named in one line, and a ``lake_gap`` row records it, once."""
    write_samples(tmp_path, range(0, 10), offline_at={3}, cluster="prod")
    write_samples(tmp_path, range(0, 10), cluster="edge")
    bad = garbage_file(tmp_path)
    first = run(spark, str(tmp_path), DEFINITIONS, until=at(10).timestamp())
    assert len(first.unreadable) == 1 and first.unreadable[0].startswith(f"{bad}: ") and "\n" not in first.unreadable[0]
    latest = {(r["cluster"], r["slo"], r["entity"]): (r["good_events"], r["valid_events"]) for r in first.latest}
    assert latest == {("prod", "partition-health", "prod"): (9, 10), ("edge", "partition-health", "edge"): (10, 10),
                      ("prod", "consumer-progress", "billing"): (9, 10),
                      ("edge", "consumer-progress", "billing"): (10, 10)}
    run(spark, str(tmp_path), DEFINITIONS, until=at(10).timestamp(), full=True)  # the same file again
    gaps = read_table(str(tmp_path), "lake_gap")
    assert len(gaps) == 1, gaps
    gap = gaps.iloc[0]
    assert gap["table_name"] == "cluster_health" and gap["reason"].startswith(f"unreadable file {bad}: ")
    assert str(gap["first_time"].date()) == str(gap["last_time"].date()) == "2026-03-09"
    assert pd.isna(gap["rows_dropped"])  # unknown: the file cannot even say how many


def test_cli_run_names_an_unreadable_file_in_one_line_and_goes_on(tmp_path):
    write_samples(tmp_path, range(0, 10), offline_at={9})
    bad = garbage_file(tmp_path)
    result = kpulse("slo", "run", "--lake", str(tmp_path), "--master", "local[1]", "--until", "2026-03-09T23:10:00Z")
    named = [line for line in result.stderr.splitlines() if "0badf11e" in line]
    assert named == [f"kpulse slo: skipped unreadable file {named[0].split('unreadable file ', 1)[1]}"], result.stderr
    assert str(bad) in named[0] and "recorded in lake_gap" in named[0]
    assert "Traceback" not in result.stderr
    assert "prod partition-health prod: SLI 0.90000" in result.stdout
    # the shipped partition-health (0.999 over 30 days): 1 bad minute of 43.2 allowed, 10 of 43,200 minutes seen
    assert "budget left 97.69% (42.2 of 43.2 bad minutes left, coverage 0.023%)" in result.stdout


def test_cli_check_refuses_a_bad_definitions_file_naming_the_field(tmp_path):
    path = tmp_path / "slos.yaml"
    path.write_text("slos:\n  - name: x\n    scope: cluster\n    indicator: partition_health_minutes\n"
                    "    budgetingMethod: Timeslices\n    target: 0.99\n    timeWindow: 30d\n    windw: 1\n")
    result = kpulse("slo", "check", "--definitions", str(path), check=False)
    assert result.returncode == 1
    assert result.stderr.strip() == f"kpulse: error: {path}: slos[0].windw: unknown field; did you mean 'window'?" \
        or "slos[0].windw: unknown field" in result.stderr and "Traceback" not in result.stderr
    shipped = kpulse("slo", "check")
    assert "7 SLO(s) OK" in shipped.stdout and "partition-health" in shipped.stdout
    assert "0.99 over 30d, 432 bad minutes allowed" in shipped.stdout
    assert "0.999 over 30d, pages from 10,000 events" in shipped.stdout  # produce-availability's default minimum


def test_cli_run_prints_progress_and_json_and_refuses_a_malformed_until(tmp_path):
    write_samples(tmp_path, range(0, 10), offline_at={9})
    definitions = tmp_path / "slos.yaml"
    definitions.write_text("slos:\n  - name: partition-health\n    scope: cluster\n"
                           "    indicator: partition_health_minutes\n    budgetingMethod: Timeslices\n"
                           "    target: 0.99\n    timeWindow: 1d\n")
    bad = kpulse("slo", "run", "--lake", str(tmp_path), "--until", "yesterday", check=False)
    assert bad.returncode == 1 and bad.stderr.strip().startswith("kpulse: error: --until: not an ISO 8601 time")
    result = kpulse("slo", "run", "--lake", str(tmp_path), "--definitions", str(definitions), "--master", "local[1]",
                    "--until", "2026-03-09T23:10:00Z", "--json")
    assert "computing per-minute good/valid counts (1 day(s), one Spark task each): done" in result.stderr
    assert "replacing slo_minute (10 rows) and slo_status (10 rows): done" in result.stderr
    assert "Traceback" not in result.stderr
    summary = json.loads(result.stdout)
    assert summary["evaluated_until"] == "2026-03-09T23:10:00+00:00" and summary["minute_rows"] == 10
    [status] = summary["status"]
    assert (status["good_events"], status["valid_events"], status["alert"]) == (9, 10, "page")


def test_every_keeps_running_through_a_missing_lake_and_stops_cleanly_on_sigterm(tmp_path):
    """`kpulse slo run --every` is the service `kpulse up` starts: a run that fails is one line and
    the next one tries again; SIGTERM ends it between runs."""
    import os
    import signal
    import subprocess
    import sys
    import time

    lake = tmp_path / "lake"
    definitions = tmp_path / "slos.yaml"
    definitions.write_text("slos:\n  - name: partition-health\n    scope: cluster\n"
                           "    indicator: partition_health_minutes\n    budgetingMethod: Timeslices\n"
                           "    target: 0.99\n    timeWindow: 1h\n")
    log = tmp_path / "slo.log"
    with open(log, "w") as out:
        service = subprocess.Popen([sys.executable, "-m", "cli.main", "slo", "run", "--every", "2", "--lake", str(lake),
                                    "--definitions", str(definitions), "--master", "local[1]"],
                                   stdout=out, stderr=subprocess.STDOUT, text=True)
    try:
        def wait_for(text: str, timeout: float = 120) -> None:
            deadline = time.monotonic() + timeout
            while text not in log.read_text():
                assert service.poll() is None, f"the service exited:\n{log.read_text()}"
                assert time.monotonic() < deadline, f"no {text!r} in:\n{log.read_text()}"
                time.sleep(0.5)

        wait_for("run failed, the next one in 2 s: no lake at")
        now = time.time()
        writer = LakeWriter(str(lake))
        writer.append("cluster_health", [{"time": now - 120 + 10 * i, "cluster": "prod", "under_min_isr_partitions": 0,
                                          "offline_partitions": 0} for i in range(6)])
        assert writer.flush().ok
        wait_for("prod partition-health prod: SLI 1.00000")
        os.kill(service.pid, signal.SIGTERM)
        assert service.wait(timeout=120) == 0
    finally:
        if service.poll() is None:
            service.kill()
    assert "Traceback" not in log.read_text()
    assert not read_table(str(lake), "slo_status").empty


def test_updates_read_the_minutes_around_the_windows_edges_and_hours_between_and_equal_a_full_run(spark, tmp_path):
    """1-day windows over 30 hours of samples: an update reads back the stored minutes around each
    window's edges and the hours in between (``slo_hour``), far fewer rows than the window's
    minutes, and every row of the three tables equals one full run's. A lake whose ``slo_hour`` is
    missing (written by an earlier version) gets it back from its minutes on the next update."""
    incremental, full = tmp_path / "incremental", tmp_path / "full"
    bad = {5, 70, 400, 1000, 1441, 1500, 1650, 1790}
    runs, read_back = [200, 1300, 1500, 1570, 1650, 1800], []
    for previous, until in zip([0, *runs], runs):
        write_samples(incremental, range(previous, until), offline_at=bad)
        if until == 1570:  # as an earlier version left it: no slo_hour
            shutil.rmtree(incremental / "slo_hour")
        result = run(spark, str(incremental), DEFINITIONS, until=at(until).timestamp())
        read_back.append((result.stored_rows, result.plan.start - int(at(0).timestamp()) // 60))
    write_samples(full, range(0, runs[-1]), offline_at=bad)
    run(spark, str(full), DEFINITIONS, until=at(runs[-1]).timestamp(), full=True)
    for table in ("slo_minute", "slo_hour", "slo_status"):
        pd.testing.assert_frame_equal(lake_rows(incremental, table), lake_rows(full, table), check_exact=True)
    keys = 2
    for rows, stored_minutes in (read_back[2], read_back[-1]):  # hours, not minutes, between the edges
        assert 0 < rows < keys * stored_minutes / 2
    rows, stored_minutes = read_back[3]  # the update after slo_hour was lost: every minute once
    assert rows >= keys * stored_minutes - len(bad)
