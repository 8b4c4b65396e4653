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
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from datetime import datetime, timedelta, UTC
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kpulse.config.model import RetentionConfig  # noqa: E402
from kpulse.lake.rows import Columns  # noqa: E402
from kpulse.lake.store import LakeWriter  # noqa: E402

CLUSTER = "bench"
DAY = datetime(2026, 1, 30, tzinfo=UTC)
CYCLE_SECONDS = 10
FLUSH_CYCLES = 6
TABLES = ("consumer_lag", "consumer_group", "consumer_lag_downsampled")


def generate(lake: Path, args, rng: np.random.Generator) -> int:
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
    writer = LakeWriter(str(lake), clock=lambda: clock[0], max_buffered_rows=10_000_000)
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


def footprint(lake: Path, table: str) -> tuple[int, int]:
    """(files, bytes) of the table's partition of the generated day."""
    directory = lake / table / f"date={DAY.date().isoformat()}"
    files = [p for p in directory.glob("*.parquet")] if directory.exists() else []
    return len(files), sum(p.stat().st_size for p in files)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=int, default=60, help="minutes of the day to generate (default 60)")
    parser.add_argument("--groups", type=int, default=10_000)
    parser.add_argument("--partitions-per-group", type=int, default=10)
    parser.add_argument("--topics", type=int, default=1_000)
    parser.add_argument("--keep", help="generate into this directory (kept) instead of a temporary one")
    args = parser.parse_args()

    from kpulse.progress import Progress
    from spark_jobs.compact_job import run
    from spark_jobs.lake_io import build_session

    lake = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="kpulse-compact-bench-"))
    scale = 1440 / args.minutes
    try:
        began = time.perf_counter()
        rows = generate(lake, args, np.random.default_rng(7))
        print(f"generated {rows:,} rows ({args.minutes} min of {args.groups:,} groups x {args.partitions_per_group} "
              f"partitions, one flush a minute) in {time.perf_counter() - began:.1f}s into {lake}", flush=True)
        before = {table: footprint(lake, table) for table in TABLES}
        spark = build_session("local[2]", app_name="kpulse-compact-bench", extra={"spark.ui.enabled": "false"})
        try:
            began = time.perf_counter()
            result = run(spark, str(lake), RetentionConfig(), until=(DAY + timedelta(days=1, hours=1)).timestamp(),
                         progress=Progress())
            seconds = time.perf_counter() - began
        finally:
            spark.stop()
        if result.failed:
            print("FAILED: " + "; ".join(result.failed))
            return 1
        after = {table: footprint(lake, table) for table in TABLES}
        compacted = sum(d.rows_before for d in result.done if d.action == "compact")
        print(f"\ncompaction: {seconds:.1f}s for {compacted:,} rows = {compacted / seconds / 1e6:.2f} M rows/s "
              f"(local[2]; downsampling included; a whole day: ~{seconds * scale / 60:.0f} min)")
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
    finally:
        if not args.keep:
            shutil.rmtree(lake, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
