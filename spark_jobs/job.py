"""The SLO job: lake samples -> ``slo_minute`` and ``slo_status`` (extract, transform, load).

Incremental and idempotent. A run evaluates up to ``until`` (the end of its newest complete
minute, E). It recomputes the minutes from the UTC midnight before ``previous E - lateness`` (the
previous run's newest ``slo_status`` time; the first sample's day on a first or ``--full`` run),
so samples that arrived late within the lateness are counted, and it overwrites whole date
partitions of both tables: running twice gives the same files' content, never duplicates. Rolling
windows read the stored minutes from the longest window before that start, not the whole history.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kpulse.progress import SILENT, Progress
from spark_jobs import lake_io, minutes, windows
from spark_jobs.definitions import SloDefinitions
from spark_jobs.lake_io import LakeError, day_of_minute

MINUTES_PER_DAY = 1440
SAMPLE_MARGIN_MINUTES = 60
"""Streams samples are read this much before the recomputed range, to see where a rebalance began."""


@dataclass(frozen=True)
class RunPlan:
    """Which minutes a run recomputes (``[start, end)``), which it reads back from ``slo_minute``
    (``[lookback_start, start)``), and the status times it writes (``start .. end``), as epoch minutes."""

    start: int
    end: int
    lookback_start: int
    first: int
    """First minute given rows: ``start``, or the first sample's minute on a first or full run."""

    @property
    def days(self) -> tuple[date, date]:
        return day_of_minute(self.start), day_of_minute(self.end - 1)


def plan_run(until_minute: int, previous_minute: int | None, earliest_minute: int, lateness_minutes: int,
             longest_window_minutes: int) -> RunPlan | None:
    """Pure. ``previous_minute``: the previous run's evaluation time (None: first or full run);
    ``earliest_minute``: the first sample's minute. None when there is nothing to evaluate."""
    first = earliest_minute if previous_minute is None else min(previous_minute, until_minute) - lateness_minutes
    start = first - first % MINUTES_PER_DAY
    if until_minute <= start:
        return None
    return RunPlan(start=start, end=until_minute, lookback_start=start - longest_window_minutes - 1,
                   first=start if previous_minute is not None else max(start, earliest_minute))


@dataclass
class RunResult:
    plan: RunPlan | None
    minute_rows: int = 0
    status_rows: int = 0
    latest: list[dict[str, Any]] = field(default_factory=list)
    """The ``slo_status`` rows at the evaluation time."""

    def as_dict(self) -> dict[str, Any]:
        if self.plan is None:
            return {"evaluated_until": None, "recomputed_from": None, "minute_rows": 0, "status_rows": 0, "status": []}
        iso = lambda m: datetime.fromtimestamp(m * 60, timezone.utc).isoformat()  # noqa: E731
        return {"evaluated_until": iso(self.plan.end), "recomputed_from": iso(self.plan.start),
                "minute_rows": self.minute_rows, "status_rows": self.status_rows, "status": self.latest}


def run(spark: SparkSession, lake: str, definitions: SloDefinitions, *, until: float | None = None,
        clusters: list[str] | None = None, full: bool = False, progress: Progress = SILENT) -> RunResult:
    """Evaluate every SLO up to ``until`` (epoch seconds; default now) and write both tables."""
    try:
        return _run(spark, lake, definitions, until, clusters, full, progress)
    except LakeError:
        raise
    except Exception as error:  # noqa: BLE001 - Spark's errors (corrupt file, ...) become one line
        if not type(error).__module__.startswith(("pyspark", "py4j")):
            raise
        raise LakeError(f"the SLO job failed reading or writing the lake at {lake}: {_spark_message(error)}") from None


def _run(spark, lake, definitions, until, clusters, full, progress) -> RunResult:
    lake_io.check_lake(lake)
    until_minute = math.floor((time.time() if until is None else until) / 60)
    with progress.step("finding what to recompute"):
        previous = None if full else lake_io.time_bound(lake, "slo_status", clusters, newest=True)
        earliest = _earliest_minute(lake, definitions, clusters) if previous is None else 0
        plan = plan_run(until_minute, None if previous is None else previous // 60_000_000, earliest,
                        definitions.lateness_minutes, definitions.longest_window_minutes)
    if plan is None:
        progress.note("nothing to evaluate: no complete minute after the previous run")
        return RunResult(None)
    progress.note(f"recomputing minutes {_iso(plan.start)} .. {_iso(plan.end)}, {len(definitions.slos)} SLO(s)")
    with progress.step("computing per-minute good/valid counts"):
        stored = _stored_minutes(spark, lake, plan, definitions, clusters)
        fresh = _fresh_minutes(spark, lake, plan, definitions, clusters, stored).persist()
        minute_rows = fresh.count()
    with progress.step(f"writing slo_minute ({minute_rows} rows)"):
        lake_io.overwrite_partitions(_keep_other_clusters(spark, lake, "slo_minute", _as_table(fresh), plan, clusters),
                                     lake, "slo_minute")
    with progress.step("rolling up windows and writing slo_status"):
        status = windows.status(fresh.unionByName(stored), definitions, plan.start, plan.end)
        lake_io.overwrite_partitions(_keep_other_clusters(spark, lake, "slo_status", status, plan, clusters),
                                     lake, "slo_status")
    # A status row for every minute row recomputed, and for the stored minute just before ``start``.
    status_rows = minute_rows + stored.where(F.col("minute") == plan.start - 1).count()
    fresh.unpersist()
    written = lake_io.read_table(spark, lake, "slo_status", day_of_minute(plan.end), day_of_minute(plan.end))
    if clusters:
        written = written.where(F.col("cluster").isin(clusters))
    latest = [_plain(row.asDict()) for row in
              written.where(F.unix_micros("time") == plan.end * 60_000_000).orderBy("cluster", "slo", "entity").collect()]
    return RunResult(plan, minute_rows, status_rows, latest)


def _earliest_minute(lake, definitions: SloDefinitions, clusters) -> int:
    """The minute of the first sample of any table the SLOs read."""
    found = [lake_io.time_bound(lake, table, clusters, newest=False) for table in definitions.tables]
    found = [micros for micros in found if micros is not None]
    if not found:
        raise LakeError(f"no samples in the lake at {lake} (tables {', '.join(definitions.tables)} are empty); "
                        "run `kpulse collect` first")
    return min(found) // 60_000_000


def _fresh_minutes(spark, lake, plan: RunPlan, definitions: SloDefinitions, clusters, stored: DataFrame) -> DataFrame:
    tables: dict[str, DataFrame] = {}
    for table in definitions.tables:
        margin = SAMPLE_MARGIN_MINUTES if table == "streams_instance" else 0
        rows = lake_io.read_table(spark, lake, table, day_of_minute(plan.start - margin), plan.days[1])
        rows = rows.where((F.unix_micros("time") >= (plan.start - margin) * 60_000_000)
                          & (F.unix_micros("time") < plan.end * 60_000_000))
        tables[table] = rows.where(F.col("cluster").isin(clusters)) if clusters else rows
    result = None
    for slo in definitions.slos:
        known = stored.where(F.col("slo") == slo.name).select("cluster", "entity").distinct()
        computed = minutes.to_minutes(spark, minutes.samples(tables[slo.table], slo), slo, plan.first, plan.end, known)
        computed = computed.withColumn("slo", F.lit(slo.name))
        result = computed if result is None else result.unionByName(computed)
    return result.select("cluster", "slo", "entity", "minute", "good", "valid")


def _stored_minutes(spark, lake, plan: RunPlan, definitions: SloDefinitions, clusters) -> DataFrame:
    # Only days before ``start`` (a midnight): the later ones are about to be overwritten.
    rows = lake_io.read_table(spark, lake, "slo_minute", day_of_minute(plan.lookback_start),
                              day_of_minute(plan.start - 1))
    rows = rows.select("cluster", "slo", "entity", minutes.minute_of(F.col("time")).alias("minute"), "good", "valid")
    rows = rows.where((F.col("minute") >= plan.lookback_start) & (F.col("minute") < plan.start)
                      & F.col("slo").isin([slo.name for slo in definitions.slos]))
    return rows.where(F.col("cluster").isin(clusters)) if clusters else rows


def _as_table(fresh: DataFrame) -> DataFrame:
    return fresh.select(F.timestamp_seconds(F.col("minute") * 60).alias("time"), "cluster", "slo", "entity",
                        "good", "valid")


def _keep_other_clusters(spark, lake, table, frame: DataFrame, plan: RunPlan, clusters) -> DataFrame:
    """With ``--cluster``, the rows of other clusters in the partitions about to be replaced are
    read first (and materialized) and written back, so a run for one cluster keeps the others'."""
    if not clusters:
        return frame
    others = lake_io.read_table(spark, lake, table, plan.days[0], day_of_minute(plan.end))
    others = others.where(~F.col("cluster").isin(clusters)).localCheckpoint(eager=True)
    return frame.unionByName(others)


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    value = row.get("time")
    if isinstance(value, datetime):
        # PySpark returns naive local-time datetimes; make it the UTC instant it is.
        row["time"] = datetime.fromtimestamp(value.timestamp(), timezone.utc).isoformat()
    return row


def _iso(minute: int) -> str:
    return datetime.fromtimestamp(minute * 60, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _spark_message(error: BaseException) -> str:
    text = str(error)
    for marker in ("Caused by: ", "org.apache.spark.SparkException: ", "Exception: "):
        for line in text.splitlines():
            if marker in line:
                return line.split(marker, 1)[1].strip()[:400]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return (lines[0] if lines else type(error).__name__)[:400]
