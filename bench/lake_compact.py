"""Benchmark of ``kpulse lake compact`` at the issue's scale: rows/s, and lake bytes per day before
and after.

Writes ``--minutes`` of one UTC day (default 60) with the real ``LakeWriter``, as the collector
does at ``--groups`` groups (default 10,000) of ``--partitions-per-group`` partitions (default 10;
group g reads topic g mod ``--topics``, default 1,000 topics of 10 partitions): every 10 s cycle
100,000 ``consumer_lag`` rows and 10,000 ``consumer_group`` rows, flushed once a minute (one file
per table and minute). Then runs the compaction job (``local[2]``) with the default retention and
prints, for the generated fraction and extrapolated to a whole day (x 1440 / minutes; the
compaction is one pass over the rows, so its time scales with them):

- rows/s of the compaction end to end (Spark start excluded),
- bytes and files per table before and after, and of ``consumer_lag_downsampled``.

    .venv/bin/python bench/lake_compact.py [--minutes 60] [--groups 10000] [--keep DIR]

On S3 (``bench/lake_target.py``): ``--lake s3`` on a real S3 server started on loopback,
``--lake-uri s3://...`` on yours, ``--compare`` the same on a local directory and then on S3,
with the ratio. With any of them it prints where the time goes (``bench/lake_timing.py``): the
phases (listing, the Spark tasks, recording the run) with their filesystem calls by kind, the
driver's and the tasks' (reading the minute files, writing the day file, the swap's copy, the
deletions), and their wall and CPU seconds:

    .venv/bin/python bench/lake_compact.py --groups 1000 --compare
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from datetime import datetime, timedelta, UTC
from pathlib import Path

import numpy as np
import pyarrow.fs as pafs

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kpulse.config.model import RetentionConfig  # noqa: E402
from kpulse.lake.rows import Columns  # noqa: E402
from kpulse.lake.store import LakeWriter, resolve  # noqa: E402

from bench import lake_target  # noqa: E402
from bench import lake_timing  # noqa: E402

CLUSTER = "bench"
DAY = datetime(2026, 1, 30, tzinfo=UTC)
CYCLE_SECONDS = 10
FLUSH_CYCLES = 6
TABLES = ("consumer_lag", "consumer_group", "consumer_lag_downsampled")


def generate(lake: str, args, rng: np.random.Generator) -> int:
    """``args.minutes`` of lag and group rows through the real writer; the rows written."""
    groups, per_group = args.groups, args.partitions_per_group
    group_of = np.repeat(np.arange(groups), per_group)
    group_ids = [f"group-{g:05d}" for g in range(groups)]
    lag_groups = [group_ids[g] for g in group_of]
    topics = [f"topic-{g % args.topics:04d}" for g in group_of]
    partitions = np.tile(np.arange(per_group, dtype=np.int32), groups).tolist()
    rate = rng.integers(1, 200, size=groups * per_group)  # records per cycle, per partition
    committed = rng.integers(0, 1_000_000, size=groups * per_group)
    stable = rng.random(groups) < 0.5  # half Stable with members, half Empty (as the collection bench)
    clock = [DAY.timestamp()]
    writer = LakeWriter(lake, clock=lambda: clock[0], max_buffered_rows=10_000_000)
    total = 0
    cycles = args.minutes * 60 // CYCLE_SECONDS
    for cycle in range(cycles):
        now = DAY.timestamp() + cycle * CYCLE_SECONDS
        lag = rng.integers(0, 50, size=groups * per_group) * (rng.random(groups * per_group) < 0.3)
        committed += rate
        log_end = committed + lag
        lag_seconds = np.where(lag > 0, lag / np.maximum(rate, 1) * CYCLE_SECONDS, 0.0)
        writer.append("consumer_lag", Columns(
            groups * per_group, time=now, cluster=CLUSTER, group_id=lag_groups, topic=topics, partition=partitions,
            committed_offset=committed.tolist(), log_end_offset=log_end.tolist(), lag=lag.tolist(),
            lag_seconds=lag_seconds.tolist(), status="OK"))
        total_lag = np.bincount(group_of, weights=lag, minlength=groups).astype(np.int64)
        writer.append("consumer_group", Columns(
            groups, time=now, cluster=CLUSTER, group_id=group_ids,
            state=np.where(stable, "Stable", "Empty").tolist(), members=np.where(stable, 2, 0).tolist(),
            partitions=per_group, total_lag=total_lag.tolist(), status="OK", type="classic",
            lag_seconds_threshold=600.0))
        total += groups * per_group + groups
        if cycle % FLUSH_CYCLES == FLUSH_CYCLES - 1:
            clock[0] = now
            result = writer.flush()
            if not result.ok:
                raise SystemExit(f"lake write failed: {result.errors}")
            if cycle % 60 == 59:
                print(f"  generated {cycle + 1}/{cycles} cycles ({total:,} rows)", flush=True)
    if not writer.flush().ok:
        raise SystemExit("lake write failed")
    return total


def footprint(lake: str, table: str) -> tuple[int, int]:
    """(files, bytes) of the table's partition of the generated day."""
    fs, base = resolve(lake)
    selector = pafs.FileSelector(f"{base}/{table}/date={DAY.date().isoformat()}", allow_not_found=True)
    files = [f for f in fs.get_file_info(selector) if f.type == pafs.FileType.File and f.base_name.endswith(".parquet")]
    return len(files), sum(f.size for f in files)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=int, default=60, help="minutes of the day to generate (default 60)")
    parser.add_argument("--groups", type=int, default=10_000)
    parser.add_argument("--partitions-per-group", type=int, default=10)
    parser.add_argument("--topics", type=int, default=1_000)
    parser.add_argument("--keep", help="generate into this directory (kept) instead of a temporary one")
    lake_target.add_arguments(parser)
    args = parser.parse_args()
    refused = lake_target.check(args)
    if refused:
        parser.error(refused)

    counting = lake_target.breakdown(args)
    extra = {"spark.ui.enabled": "false"}
    if counting:
        extra |= lake_timing.enable(Path(tempfile.mkdtemp(prefix="kpulse-bench-calls-")))
    print(f"lake compaction bench: {args.groups:,} groups x {args.partitions_per_group} partitions, {args.minutes} min; "
          f"{lake_target.load()}", flush=True)
    with lake_target.locations(args, "kpulse-compact-bench-") as lakes:
        results = {kind: one_run(lake_target.label(kind), lake, args, extra, counting) for kind, lake in lakes.items()}
    timings = [(kind, result) for kind, result in results.items() if result is not None]
    if len(timings) < len(results):
        return 1
    if len(timings) == 2:
        (local, first), (remote, second) = timings
        print(f"\n{lake_target.label(remote)} against the {lake_target.label(local)}, same workload "
              f"({lake_target.load()}):")
        for name in ("generating (the collector's flushes)", "compaction"):
            print(f"  {name:<40}{first[name]:>8.1f} s{second[name]:>8.1f} s   ratio {second[name] / first[name]:.2f}")
    return 0


def one_run(label: str, lake: str, args, extra: dict[str, str], counting: bool) -> dict[str, float] | None:
    """Generate, compact, print the figures (and where the time goes); the two timings, None when
    the compaction failed."""
    from spark_jobs.compact_job import run
    from spark_jobs.lake_io import build_session

    scale = 1440 / args.minutes
    phases = lake_timing.Phases()
    print(f"\n=== {label}: {lake}", flush=True)
    began = time.perf_counter()
    with phases.timed("generating: the collector's flushes (LakeWriter, one a minute)"):
        rows = generate(lake, args, np.random.default_rng(7))
    generated = time.perf_counter() - began
    print(f"generated {rows:,} rows ({args.minutes} min of {args.groups:,} groups x {args.partitions_per_group} "
          f"partitions, one flush a minute) in {generated:.1f}s into {lake}", flush=True)
    before = {table: footprint(lake, table) for table in TABLES}
    spark = build_session("local[2]", app_name="kpulse-compact-bench", extra=extra)
    try:
        if args.compare:
            print(f"Spark's Python workers started before the timing: "
                  f"{lake_timing.warm_up(spark, ('spark_jobs.compact_job', 'kpulse.lake.compaction')):.1f}s", flush=True)
        began, started, server = time.perf_counter(), time.time(), lake_target.server_cpu(lake)
        result = run(spark, lake, RetentionConfig(), until=(DAY + timedelta(days=1, hours=1)).timestamp(),
                     progress=phases)
        seconds, ended, server = time.perf_counter() - began, time.time(), lake_target.server_cpu(lake) - server
    finally:
        spark.stop()
    if result.failed:
        print("FAILED: " + "; ".join(result.failed))
        return None
    after = {table: footprint(lake, table) for table in TABLES}
    compacted = sum(d.rows_before for d in result.done if d.action == "compact")
    print(f"\ncompaction: {seconds:.1f}s for {compacted:,} rows = {compacted / seconds / 1e6:.2f} M rows/s "
          f"(local[2]; downsampling included; a whole day: ~{seconds * scale / 60:.0f} min; {lake_target.load()})"
          + (f"; the S3 server used {server:.1f} CPU s meanwhile" if server else ""))
    print(f"\n{'table':<26}{'files before':>13}{'MB before':>11}{'files after':>12}{'MB after':>10}"
          f"{'GB/day before':>15}{'GB/day after':>14}")
    for table in TABLES:
        (files_before, bytes_before), (files_after, bytes_after) = before[table], after[table]
        print(f"{table:<26}{files_before:>13}{bytes_before / 1e6:>11.1f}{files_after:>12}{bytes_after / 1e6:>10.1f}"
              f"{bytes_before * scale / 1e9:>15.2f}{bytes_after * scale / 1e9:>14.2f}")
    total_before = sum(b for _, b in before.values())
    raw_after = after["consumer_lag"][1] + after["consumer_group"][1]
    print(f"\nper day at this scale (x{scale:g}): {total_before * scale / 1e9:.2f} GB written by the collector, "
          f"{raw_after * scale / 1e9:.2f} GB after compaction, of which consumer_lag is kept 7 days; "
          f"then {after['consumer_lag_downsampled'][1] * scale / 1e9:.2f} GB of consumer_lag_downsampled "
          f"and {after['consumer_group'][1] * scale / 1e9:.2f} GB of consumer_group kept 90 days")
    if counting:
        calls = lake_timing.calls(Path(os.environ[lake_timing.LOG_ENV]))
        writing = [p for p in phases.steps if p.name.startswith("generating")]
        steps = [p for p in phases.steps if not p.name.startswith("generating")]
        print("\n" + "\n".join(lake_timing.report(f"{label}, generating", writing, calls, os.getpid())))
        shown = lake_timing.with_gaps(steps, started, ended, "checking the lake, recording the run (driver)")
        print("\n" + "\n".join(lake_timing.report(f"{label}, compaction", shown, calls, os.getpid())))
    return {"generating (the collector's flushes)": generated, "compaction": seconds}


if __name__ == "__main__":
    sys.exit(main())
