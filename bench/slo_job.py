"""Benchmark of the SLO job: a generated lake, the job in local mode, DuckDB on the same files.

Generates ``--days`` of samples (default 30) for a cluster of ``--brokers`` brokers and
``--groups`` consumer groups of ``--partitions`` partitions, ``--samples-per-minute`` collection
cycles a minute (default 6 = the collectors' 10 s interval), as lake Parquet with the contract
schemas. The SLO job reads the group-level ``consumer_group`` rows (the collectors already fold
each group's partitions into its worst lag and status), plus cluster_health, broker_metrics,
probe and streams_instance. Then it times:

1. the full job (``run(..., full=True)``) in ``local[2]``: input rows / second end to end;
2. the per-minute good/valid aggregation alone, in Spark and in DuckDB over the same files;
3. an hourly incremental update: one more hour of samples, then ``run`` again.

    .venv/bin/python bench/slo_job.py [--days 30] [--samples-per-minute 6] [--keep DIR]

At the issue's scale (10,000 groups) the figure that matters is 3., the hourly update (goal
<= 60 s): ``--days 1 --groups 10000 --hourly-only`` skips the comparisons of 2.

With ``--history-days N`` it times the hourly update alone with N days of the job's own outputs
already in the lake, as after N days of hourly updates (generated directly, laid out as the job
writes them: ``slo_minute`` one file per hour and shard, ``slo_hour`` one file per closed day and
shard), and three hours of samples; 30 days at 10,000 groups is 864 M stored minute rows, which
the update must not read back:

    .venv/bin/python bench/slo_job.py --history-days 30 --groups 10000 [--keep DIR]

On S3 (``bench/lake_target.py``): ``--lake s3`` on a real S3 server started on loopback,
``--lake-uri s3://...`` on yours, ``--compare`` the same on a local directory and then on S3,
with the ratio; with any of them it prints where the update's time goes (``bench/lake_timing.py``:
the job's steps with their filesystem calls by kind, the driver's and the tasks'). DuckDB's
comparison runs on a local directory only:

    .venv/bin/python bench/slo_job.py --history-days 30 --groups 1000 --compare
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from datetime import datetime, timedelta, UTC
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kpulse.lake.schema import SCHEMAS  # noqa: E402
from kpulse.lake.store import resolve  # noqa: E402
from spark_jobs.definitions import load_definitions  # noqa: E402

from bench import lake_target  # noqa: E402
from bench import lake_timing  # noqa: E402
from bench.lake_timing import tree_cpu_seconds  # noqa: E402

CLUSTER = "bench"
STATUSES = np.array(["OK", "OK", "OK", "OK", "OK", "OK", "WARN", "STALL"])


def generate(lake: str, start: datetime, hours: int, args, rng: np.random.Generator, tag: str) -> int:
    """Write ``hours`` of samples from ``start``, one file per table and day (per hour or few at
    thousands of groups: a day of 10,000 groups' rows would not fit in memory); the rows written."""
    total = 0
    fits = 5_000_000 // (60 * args.samples_per_minute * args.groups)
    chunk = max(hours_ for hours_ in (1, 2, 3, 4, 6, 8, 12, 24) if hours_ <= max(1, fits))  # divides a day
    for offset in range(0, hours, chunk):
        day_start = start + timedelta(hours=offset)
        cycles = min(chunk, hours - offset) * 60 * args.samples_per_minute
        base = int(day_start.timestamp() * 1_000_000)
        times = base + (np.arange(cycles, dtype=np.int64) * (60_000_000 // args.samples_per_minute))
        total += _write(lake, "consumer_group", day_start, tag, _groups(times, args, rng))
        total += _write(lake, "cluster_health", day_start, tag, _health(times, rng))
        total += _write(lake, "broker_metrics", day_start, tag, _brokers(times, args, rng))
        total += _write(lake, "probe", day_start, tag, _probe(times, args, rng))
        total += _write(lake, "streams_instance", day_start, tag, _streams(times, rng))
    return total


def _groups(times, args, rng) -> dict:
    n = len(times) * args.groups
    return {"time": np.repeat(times, args.groups),
            "group_id": np.tile(np.array([f"group-{g:03d}" for g in range(args.groups)], dtype=object), len(times)),
            "state": np.full(n, "Stable", dtype=object), "members": np.full(n, 3, dtype=np.int32),
            "partitions": np.full(n, args.partitions, dtype=np.int32),
            "total_lag": rng.integers(0, 5000, n), "max_lag_seconds": rng.exponential(12.0, n),
            "status": STATUSES[rng.integers(0, len(STATUSES), n)], "lag_seconds_threshold": np.full(n, 60.0)}


def _health(times, rng) -> dict:
    n = len(times)
    return {"time": times, "brokers_up": np.full(n, 3, dtype=np.int32), "partition_count": np.full(n, 10000, dtype=np.int32),
            "offline_partitions": (rng.random(n) < 0.0005).astype(np.int32),
            "under_min_isr_partitions": (rng.random(n) < 0.001).astype(np.int32)}


def _brokers(times, args, rng) -> dict:
    n = len(times) * args.brokers
    return {"time": np.repeat(times, args.brokers), "broker_id": np.tile(np.arange(1, args.brokers + 1, dtype=np.int32),
                                                                          len(times)),
            "request_handler_idle_ratio": rng.uniform(0.1, 0.9, n)}


def _probe(times, args, rng) -> dict:
    n = len(times) * args.brokers
    return {"time": np.repeat(times, args.brokers), "broker_id": np.tile(np.arange(1, args.brokers + 1, dtype=np.int32),
                                                                          len(times)),
            "produced": np.ones(n, dtype=np.int32), "produce_errors": (rng.random(n) < 0.0005).astype(np.int32),
            "latency_p99_ms": rng.exponential(20.0, n)}


def _streams(times, rng) -> dict:
    n = len(times) * 2
    states = np.where(rng.random(n) < 0.002, "REBALANCING", "RUNNING").astype(object)
    return {"time": np.repeat(times, 2), "application_id": np.full(n, "orders-app", dtype=object),
            "instance": np.tile(np.array(["a", "b"], dtype=object), len(times)), "up": np.ones(n, dtype=bool),
            "client_state": states, "expected_instances": np.full(n, 2, dtype=np.int32)}


def _put(lake: str, relative: str, table: pa.Table, **options) -> None:
    """Write ``table`` as ``<lake>/<relative>`` through the lake's filesystem (a directory or S3)."""
    fs, base = resolve(lake)
    path = f"{base}/{relative}"
    fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
    pq.write_table(table, path, filesystem=fs, **options)


def _write(lake: str, table: str, day: datetime, tag: str, columns: dict) -> int:
    schema = SCHEMAS[table]
    n = len(columns["time"])
    arrays = []
    for field in schema:
        if field.name == "cluster":
            arrays.append(pa.DictionaryArray.from_arrays(np.zeros(n, dtype=np.int32), [CLUSTER]).cast(pa.string()))
        elif field.name in columns:
            arrays.append(pa.array(columns[field.name], type=field.type))
        else:
            arrays.append(pa.nulls(n, field.type))
    _put(lake, f"{table}/date={day.date().isoformat()}/part-{tag}-{day:%Y%m%d%H}.parquet",
         pa.Table.from_arrays(arrays, schema=schema))
    return n


def history_keys(groups: int, brokers: int) -> list[tuple[str, str]]:
    """(slo, entity) of every key the default SLOs have on the generated cluster."""
    keys = [(slo, CLUSTER) for slo in ("produce-availability", "end-to-end-latency", "partition-health")]
    keys += [(slo, f"group-{g:03d}") for slo in ("consumer-freshness", "consumer-progress") for g in range(groups)]
    keys += [("streams-availability", "orders-app")]
    keys += [("broker-saturation", str(b)) for b in range(1, brokers + 1)]
    return keys


def generate_history(lake: str, until: datetime, days: int, shards: int, args, rng: np.random.Generator) -> int:
    """``days`` of ``slo_minute`` and ``slo_hour`` up to ``until`` (an hour), as the job's updates
    leave them, and ``slo_status`` at ``until``; the minute rows written."""
    from spark_jobs import lookback, tasks

    keys = history_keys(args.groups, args.brokers)
    slo = pa.array([k[0] for k in keys])
    entity = pa.array([k[1] for k in keys])
    shard = tasks.shard_of([pa.array([CLUSTER] * len(keys)), slo, entity], shards)
    occurrences = np.isin(slo.to_numpy(zero_copy_only=False), ["produce-availability", "end-to-end-latency"])
    first_hour = int(until.timestamp()) // 60 - days * 1440
    written = 0
    templates = []
    for number in range(shards):  # one hour of each shard's keys, repeated with other times
        mine = np.flatnonzero(shard == number)
        n = len(mine) * 60
        valid = np.where(np.repeat(occurrences[mine], 60), 6 * args.brokers, 1).astype(np.int64)
        good = valid - (rng.random(n) < 0.004) * valid
        minute_rows = pa.table({
            "cluster": pa.DictionaryArray.from_arrays(np.zeros(n, dtype=np.int32), [CLUSTER]),
            "slo": pa.DictionaryArray.from_arrays(np.repeat(mine, 60).astype(np.int32), slo),
            "entity": pa.DictionaryArray.from_arrays(np.repeat(mine, 60).astype(np.int32), entity),
            "minute": pa.array(np.tile(np.arange(60, dtype=np.int64), len(mine))),
            "good": pa.array(good), "valid": pa.array(valid)})
        order = np.argsort(minute_rows.column("minute").to_numpy(), kind="stable")  # time order, as the job writes
        templates.append((minute_rows.take(pa.array(order)), lookback.rollup(minute_rows)))
    for hour in range(days * 24):
        minute0 = first_hour + 60 * hour
        hour_start = datetime.fromtimestamp(minute0 * 60, UTC)
        for number, (minutes, _) in enumerate(templates):
            table = pa.table({"time": pa.array((minutes.column("minute").to_numpy() + minute0) * 60_000_000)
                              .cast(pa.timestamp("us", tz="UTC")),
                              "cluster": minutes.column("cluster"), "slo": minutes.column("slo"),
                              "entity": minutes.column("entity"), "good": minutes.column("good"),
                              "valid": minutes.column("valid")})
            _put(lake, f"slo_minute/date={hour_start.date().isoformat()}/bench-part-h{hour_start.hour:02d}-shard-"
                 f"{number:04d}-of-{shards:04d}.parquet", table, store_schema=False, row_group_size=65_536)
            written += table.num_rows
    for offset in range(days + 1):  # closed days: a file per shard; the last day by the hour
        day = (datetime.fromtimestamp(first_hour * 60, UTC) + timedelta(days=offset)).date()
        day_minute = int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()) // 60
        hours = [h for h in range(24) if first_hour <= day_minute + 60 * h < first_hour + days * 1440]
        if not hours:
            continue
        directory = f"slo_hour/date={day.isoformat()}"
        closed = day_minute + 1440 <= int(until.timestamp()) // 60 - 1440  # no update starts in it any more
        for number, (_, hour_rows) in enumerate(templates):
            pieces = []
            for h in hours:
                time_ = pa.array(np.full(hour_rows.num_rows, (day_minute + 60 * h) * 60_000_000))
                pieces.append(pa.table({"time": time_.cast(pa.timestamp("us", tz="UTC")),
                                        **{c: hour_rows.column(c) for c in ("cluster", "slo", "entity", "good",
                                                                               "valid", "observed")}}))
            if closed:
                _put(lake, f"{directory}/bench-part-shard-{number:04d}-of-{shards:04d}.parquet", pa.concat_tables(pieces),
                     store_schema=False)
            else:
                for h, piece in zip(hours, pieces):
                    _put(lake, f"{directory}/bench-part-h{h:02d}-shard-{number:04d}-of-{shards:04d}.parquet", piece,
                         store_schema=False)
    status = {f.name: pa.nulls(len(keys), f.type) for f in SCHEMAS["slo_status"]}
    status.update(time=pa.array(np.full(len(keys), int(until.timestamp()) * 1_000_000)).cast(SCHEMAS["slo_status"].field("time").type),
                  cluster=pa.array([CLUSTER] * len(keys)), slo=slo, entity=entity)
    _put(lake, f"slo_status/date={(until - timedelta(minutes=1)).date().isoformat()}/bench-part-h"
         f"{(until - timedelta(minutes=1)).hour:02d}-shard-0000-of-0001.parquet", pa.table(status, schema=SCHEMAS["slo_status"]))
    return written


def history_update(args, label: str, lake: str, extra: dict[str, str], counting: bool) -> dict[str, float]:
    """The hourly update with ``--history-days`` of outputs in the lake (see the module); its timings."""
    from spark_jobs import job, tasks
    from spark_jobs.job import run
    from spark_jobs.lake_io import build_session

    end = datetime(2026, 1, 31, tzinfo=UTC)
    evaluated = end - timedelta(hours=1)  # the previous update's evaluation time
    rng = np.random.default_rng(7)
    keys = len(history_keys(args.groups, args.brokers))
    samples_per_hour = 60 * args.samples_per_minute * (args.groups + 2 * args.brokers + 4)
    estimate = keys * 24 * args.history_days + keys * 1440 + 3 * samples_per_hour
    shards = tasks.shard_count(2, estimate, job.SHARD_ROWS)
    marker = Path(lake) / f"_history-{args.history_days}d-{args.groups}g-{shards}s" if args.keep else None
    print(f"\n=== {label}: {lake}", flush=True)
    began = time.perf_counter()
    if marker is not None and marker.exists():
        minute_rows = int(marker.read_text())
    else:
        if marker is not None and Path(lake).exists():
            shutil.rmtree(lake)
        minute_rows = generate_history(lake, evaluated, args.history_days, shards, args, rng)
        generate(lake, evaluated - timedelta(hours=2), 3, args, rng, "recent")
        if marker is not None:
            marker.write_text(str(minute_rows))
    generated = time.perf_counter() - began
    fs, base = resolve(lake)
    listing = fs.get_file_info(pafs.FileSelector(f"{base}/slo_minute", recursive=True))
    size = sum(f.size for f in listing if f.type == pafs.FileType.File)
    print(f"{args.history_days} days of job outputs for {keys:,} keys ({args.groups:,} groups): {minute_rows:,} "
          f"slo_minute rows ({size / 1e9:.2f} GB in {len(listing):,} files and folders, {shards} shards) in {lake}; "
          f"{generated:.0f}s", flush=True)
    if args.generate_only:
        return {}
    phases = lake_timing.Phases()
    spark = build_session("local[2]", shuffle_partitions=8, extra={"spark.ui.enabled": "false",
                                                                   "spark.driver.memory": "6g", **extra})
    try:
        if args.compare:
            print(f"Spark's Python workers started before the timing: "
                  f"{lake_timing.warm_up(spark, ('spark_jobs.tasks', 'spark_jobs.lookback')):.1f}s", flush=True)
        began, cpu, started, server = (time.perf_counter(), tree_cpu_seconds(os.getpid()), time.time(),
                                        lake_target.server_cpu(lake))
        result = run(spark, lake, load_definitions(), until=end.timestamp(), progress=phases)
        seconds, spent, ended = time.perf_counter() - began, tree_cpu_seconds(os.getpid()) - cpu, time.time()
        server = lake_target.server_cpu(lake) - server
    finally:
        spark.stop()
    print(f"\nhourly update with {args.history_days} days of history at {args.groups:,} groups: {seconds:.1f}s "
          f"(goal <= 60 s: {'met' if seconds <= 60 else 'MISSED'}), {spent:.1f} CPU seconds; recomputed from "
          f"{result.as_dict()['recomputed_from']}; read back {result.stored_rows:,} stored rows of "
          f"{minute_rows:,} minute rows ({result.stored_rows / minute_rows:.1%}); wrote {result.minute_rows:,} "
          f"minute rows and {result.status_rows:,} status rows ({lake_target.load()})"
          + (f"; of the CPU seconds, {server:.1f} the S3 server's" if server else ""))
    if counting:
        breakdown(label, phases.steps, started, ended)
    return {"generating the history (the job's outputs)": generated, "hourly update": seconds}


def breakdown(label: str, steps: list[lake_timing.Phase], started: float, ended: float) -> None:
    """Where the hourly update's time went (``bench/lake_timing.py``)."""
    shown = lake_timing.with_gaps(steps, started, ended, "between the steps (driver: planning, footers)")
    calls = lake_timing.calls(Path(os.environ[lake_timing.LOG_ENV]))
    print("\n" + "\n".join(lake_timing.report(f"{label}, hourly update", shown, calls, os.getpid())))


def duckdb_minutes(lake: Path) -> tuple[float, int]:
    """The per-minute good/valid of the default SLOs' consumer, health, broker and probe indicators."""
    import duckdb

    con = duckdb.connect()
    con.execute("SET threads TO 2")
    scan = lambda t: f"read_parquet('{lake}/{t}/*/*.parquet', hive_partitioning = false)"  # noqa: E731
    minute = "CAST(floor(epoch_us(time) / 60000000) AS BIGINT)"
    queries = [
        f"""SELECT cluster, group_id, {minute} m, sum(CASE WHEN max_lag_seconds <= lag_seconds_threshold THEN 1 ELSE 0 END) g,
            sum(CASE WHEN max_lag_seconds IS NOT NULL THEN 1 ELSE 0 END) v FROM {scan('consumer_group')} GROUP BY ALL""",
        f"""SELECT cluster, group_id, {minute} m, sum(CASE WHEN status NOT IN ('STOP','STALL','ERR') THEN 1 ELSE 0 END) g,
            sum(CASE WHEN status IS NOT NULL THEN 1 ELSE 0 END) v FROM {scan('consumer_group')} GROUP BY ALL""",
        f"""SELECT cluster, {minute} m, sum(CASE WHEN offline_partitions = 0 AND under_min_isr_partitions = 0 THEN 1 ELSE 0 END) g,
            count(*) v FROM {scan('cluster_health')} GROUP BY ALL""",
        f"""SELECT cluster, broker_id, {minute} m, sum(CASE WHEN request_handler_idle_ratio >= 0.2 THEN 1 ELSE 0 END) g,
            count(*) v FROM {scan('broker_metrics')} GROUP BY ALL""",
        f"""SELECT cluster, {minute} m, sum(produced) g, sum(produced + produce_errors) v FROM {scan('probe')} GROUP BY ALL""",
    ]
    began = time.perf_counter()
    rows = 0
    for query in queries:
        counted = con.execute(f"SELECT count(*) FROM ({query})").fetchone()
        assert counted is not None  # a count(*) has its one row
        rows += counted[0]
    return time.perf_counter() - began, rows


def spark_minutes(spark, lake: str, definitions, first: datetime, end: datetime) -> tuple[float, int]:
    """The job's first stage alone: one Spark task per day, samples -> per-minute counts (staged,
    then thrown away)."""
    import functools

    from spark_jobs import lake_io, tasks

    began = time.perf_counter()
    start_minute, end_minute = int(first.timestamp()) // 60, int(end.timestamp()) // 60
    staging = lake_io.Staging.new(lake)
    work = tasks.Work(lake, staging, definitions, start_minute, end_minute, start_minute, start_minute, None, 1)
    try:
        calls = [functools.partial(tasks.count_day, work, day) for day in tasks.days(start_minute, end_minute)]
        counted = spark.sparkContext.parallelize(calls, len(calls)).map(lambda call: call()).collect()
    finally:
        staging.remove()
    return time.perf_counter() - began, sum(r["counts"] for r in counted)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--partitions", type=int, default=50)
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--samples-per-minute", type=int, default=6, choices=(1, 2, 3, 4, 6, 12),
                        help="collection cycles a minute (default 6: the collectors' 10 s interval)")
    parser.add_argument("--keep", help="generate into (or reuse) this directory instead of a temporary one")
    parser.add_argument("--skip-duckdb", action="store_true")
    parser.add_argument("--generate-only", action="store_true", help="write the samples (use with --keep) and stop")
    parser.add_argument("--hourly-only", action="store_true",
                        help="time the full job and the hourly update only (skip 2., the per-minute comparisons)")
    parser.add_argument("--history-days", type=int,
                        help="time only the hourly update, with this many days of the job's outputs in the lake")
    lake_target.add_arguments(parser)
    args = parser.parse_args()
    refused = lake_target.check(args)
    if refused:
        parser.error(refused)
    counting = lake_target.breakdown(args)
    extra = lake_timing.enable(Path(tempfile.mkdtemp(prefix="kpulse-bench-calls-"))) if counting else {}
    print(f"SLO job bench: {args.groups:,} groups; {lake_target.load()}", flush=True)
    results = {}
    with lake_target.locations(args, "kpulse-slo-history-" if args.history_days else "kpulse-slo-bench-") as lakes:
        for kind, lake in lakes.items():
            label = lake_target.label(kind)
            results[kind] = (history_update if args.history_days else full_and_hourly)(args, label, lake, extra, counting)
    if len(results) == 2 and all(results.values()):
        (local, first), (remote, second) = results.items()
        print(f"\n{lake_target.label(remote)} against the {lake_target.label(local)}, same workload "
              f"({lake_target.load()}):")
        for name in first:
            print(f"  {name:<46}{first[name]:>8.1f} s{second[name]:>8.1f} s   ratio {second[name] / first[name]:.2f}")
    return 0


def full_and_hourly(args, label: str, lake: str, extra: dict[str, str], counting: bool) -> dict[str, float]:
    """Generate ``--days``, time the full job (and the comparisons), then an hourly update; its timings."""
    from spark_jobs.job import run
    from spark_jobs.lake_io import build_session

    end = datetime(2026, 1, 31, tzinfo=UTC)
    first = end - timedelta(days=args.days)
    rng = np.random.default_rng(7)
    print(f"\n=== {label}: {lake}", flush=True)
    began = time.perf_counter()
    marker = Path(lake) / f"_generated-{args.days}d-{args.groups}g-{args.samples_per_minute}spm" if args.keep else None
    if marker is not None and marker.exists():  # --keep DIR of an earlier run with the same sizes: reuse its samples
        rows = int(marker.read_text())
    else:
        rows = generate(lake, first, args.days * 24 - 1, args, rng, "bulk")
        if marker is not None:
            marker.write_text(str(rows))
    if args.generate_only:
        print(f"{rows:,} input rows in {lake}")
        return {}
    generated = time.perf_counter() - began
    print(f"generated {rows:,} input rows ({args.days} d, {args.groups} groups x {args.partitions} partitions, "
          f"{args.brokers} brokers, {args.samples_per_minute} sample(s)/min) in {generated:.1f}s "
          f"into {lake}", flush=True)
    definitions = load_definitions()
    spark = build_session("local[2]", shuffle_partitions=8, extra={"spark.ui.enabled": "false",
                                                                   "spark.driver.memory": "6g", **extra})
    last_hour = end - timedelta(hours=1)
    local = "://" not in lake
    try:
        began = time.perf_counter()
        result = run(spark, lake, definitions, until=last_hour.timestamp(), full=True, progress=lake_timing.Phases())
        full_seconds = time.perf_counter() - began
        print(f"\nSpark full job (local[2]): {full_seconds:.1f}s for {rows:,} input rows = "
              f"{rows / full_seconds / 1e6:.2f} M rows/s end to end ({result.minute_rows:,} minute rows, "
              f"{result.status_rows:,} status rows written)", flush=True)

        if args.hourly_only:
            args.skip_duckdb = True
        else:
            spark_seconds, spark_count = spark_minutes(spark, lake, definitions, first, last_hour)
            print(f"Spark per-minute aggregation only (the job's first stage): {spark_seconds:.1f}s "
                  f"({spark_count:,} entity-minutes with samples)")
        if not args.skip_duckdb and local:
            duck_seconds, duck_count = duckdb_minutes(Path(lake))
            print(f"DuckDB per-minute aggregation (2 threads): {duck_seconds:.1f}s ({duck_count:,} minute groups)")
            print(f"ratio Spark / DuckDB, per-minute aggregation: {spark_seconds / duck_seconds:.1f}x")

        hour_rows = generate(lake, last_hour, 1, args, rng, "hourly")
        phases = lake_timing.Phases()
        began, cpu, started, server = (time.perf_counter(), tree_cpu_seconds(os.getpid()), time.time(),
                                        lake_target.server_cpu(lake))
        hourly = run(spark, lake, definitions, until=end.timestamp(), progress=phases)
        hourly_seconds, hourly_cpu, ended = time.perf_counter() - began, tree_cpu_seconds(os.getpid()) - cpu, time.time()
        print(f"\nhourly incremental update ({hour_rows:,} new rows; recomputed from "
              f"{hourly.as_dict()['recomputed_from']}): {hourly_seconds:.1f}s at {args.groups:,} groups "
              f"(goal <= 60 s: {'met' if hourly_seconds <= 60 else 'MISSED'}), {hourly_cpu:.1f} CPU seconds "
              f"(driver, JVM and Python workers); {hourly.minute_rows:,} minute rows and "
              f"{hourly.status_rows:,} status rows written ({lake_target.load()})"
              + (f"; of the CPU seconds, {lake_target.server_cpu(lake) - server:.1f} the S3 server's" if server else ""))
    finally:
        spark.stop()
    if counting:
        breakdown(label, phases.steps, started, ended)
    return {"generating the samples": generated, "full job": full_seconds, "hourly update": hourly_seconds}


if __name__ == "__main__":
    sys.exit(main())
