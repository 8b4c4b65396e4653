"""The SLO job: lake samples -> ``slo_minute``, ``slo_hour`` and ``slo_status`` (extract, transform, load).

Incremental and idempotent. A run evaluates up to ``until`` (the end of its newest complete
minute, E). It recomputes the minutes from the start of the UTC hour of ``previous E - lateness``
(the previous run's newest ``slo_status`` time; the first sample's day on a first or ``--full``
run), so samples that arrived late within the lateness are counted, and it replaces the rows of
both tables from that hour on (stored one file per hour: ``lake_io.Staging``): running twice
gives the same rows, never duplicates, and an hourly run writes an hour or two of rows, not the
day. A day written whole by an earlier version is recomputed from its midnight once. Rolling
windows read back, of the longest window before that start, the stored minutes around each
window's edges and the hours in between (``slo_hour``, ``lookback.py``), not every minute: at
10,000 groups a 30-day window holds 864 M minute rows. Days an earlier version wrote without
``slo_hour`` are read whole once and their hours written.

A lake file that cannot be read is left out, not fatal: its rows are missing (their minutes are
no-data, or counted from the other files), the run names it (``RunResult.unreadable``) and records
it once as a ``lake_gap`` row (``kpulse.lake.reader.record_unreadable``).

Spark distributes the work (``tasks.py``): one task per day of the recomputed range turns samples into
per-minute counts, then one task per shard of ``(cluster, slo, entity)`` keys fills no-data
minutes and rolls up the windows. Inside a task the arithmetic is vectorised with pyarrow and
NumPy, which is faster than Spark SQL's hash aggregation and window operators for these
transforms (docs/performance.md, "The SLO job"). Tasks write to a staging area; the driver replaces the hours only after
every task succeeded, so a failed run changes nothing. ``slo_status`` is replaced last, hour by
hour in time order: its newest time is where the next run starts, and a run killed while it
replaces them leaves every hour before the one it was moving, so the next run completes it.
"""

from __future__ import annotations

import functools
import math
import re
import threading
import time
from dataclasses import dataclass, field
from datetime import date, datetime, UTC
from typing import Any

from pyspark.sql import SparkSession

from kpulse.lake.reader import UnreadableFile, record_unreadable
from kpulse.progress import SILENT, Progress
from spark_jobs import lake_io, tasks
from spark_jobs.definitions import SloDefinitions
from spark_jobs.lake_io import LakeError, day_of_minute
from spark_jobs.tasks import MINUTES_PER_DAY

PROGRESS_SECONDS = 5.0
_PYTHON_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit): ")
SHARD_ROWS = 4_000_000
"""Rows (stored minutes and samples) per shard of the window computation, at most."""
MINUTES_PER_HOUR = 60
OUTPUTS = ("slo_minute", "slo_hour", "slo_status")
"""The job's tables, in the order a run replaces them: ``slo_status`` last."""


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
             longest_window_minutes: int, whole_day: bool = False) -> RunPlan | None:
    """Pure. ``previous_minute``: the previous run's evaluation time (None: first or full run);
    ``earliest_minute``: the first sample's minute; ``whole_day``: start an update at its
    midnight rather than its hour (the day's outputs were written day-wide, by an earlier
    version). None when there is nothing to evaluate."""
    first = earliest_minute if previous_minute is None else min(previous_minute, until_minute) - lateness_minutes
    start = first - first % (MINUTES_PER_DAY if previous_minute is None or whole_day else MINUTES_PER_HOUR)
    if until_minute <= start:
        return None
    return RunPlan(start=start, end=until_minute, lookback_start=start - longest_window_minutes - 1,
                   first=start if previous_minute is not None else max(start, earliest_minute))


@dataclass
class RunResult:
    plan: RunPlan | None
    minute_rows: int = 0
    status_rows: int = 0
    stored_rows: int = 0
    """Rows of its earlier outputs the run read back (minutes around the windows' edges and hours)."""
    latest: list[dict[str, Any]] = field(default_factory=list)
    """The ``slo_status`` rows at the evaluation time."""
    unreadable: list[str] = field(default_factory=list)
    """``"<path>: <error>"`` of each lake file the run skipped because it could not be read."""

    def as_dict(self) -> dict[str, Any]:
        if self.plan is None:
            return {"evaluated_until": None, "recomputed_from": None, "minute_rows": 0, "status_rows": 0, "status": [],
                    "unreadable": self.unreadable}
        iso = lambda m: datetime.fromtimestamp(m * 60, UTC).isoformat()  # noqa: E731
        return {"evaluated_until": iso(self.plan.end), "recomputed_from": iso(self.plan.start),
                "minute_rows": self.minute_rows, "status_rows": self.status_rows,
                "stored_rows_read": self.stored_rows, "status": self.latest,
                "unreadable": self.unreadable}


def run(spark: SparkSession, lake: str, definitions: SloDefinitions, *, until: float | None = None,
        clusters: list[str] | None = None, full: bool = False, progress: Progress = SILENT) -> RunResult:
    """Evaluate every SLO up to ``until`` (epoch seconds; default now) and write both tables."""
    try:
        return _run(spark, lake, definitions, until, clusters, full, progress)
    except LakeError:
        raise
    except Exception as error:  # noqa: BLE001 - Spark's errors (lost executor, ...) become one line
        if not type(error).__module__.startswith(("pyspark", "py4j")):
            raise
        raise LakeError(f"the SLO job failed on {lake}: {spark_message(error)}") from None


def _run(spark, lake, definitions, until, clusters, full, progress) -> RunResult:
    lake_io.check_lake(lake)
    until_minute = math.floor((time.time() if until is None else until) / 60)
    unreadable: list[UnreadableFile] = []
    with progress.step("finding what to recompute"):
        previous = None if full else lake_io.time_bound(lake, "slo_status", clusters, newest=True,
                                                        unreadable=unreadable)
        earliest = _earliest_minute(lake, definitions, clusters, unreadable) if previous is None else 0
        plan = plan_run(until_minute, None if previous is None else previous // 60_000_000, earliest,
                        definitions.lateness_minutes, definitions.longest_window_minutes)
        # an update starting within a day written day-wide (a first or full run starts at midnight)
        if (plan is not None and previous is not None and plan.start % MINUTES_PER_DAY
                and lake_io.day_wide_files(lake, OUTPUTS, day_of_minute(plan.start))):
            plan = plan_run(until_minute, previous // 60_000_000, earliest, definitions.lateness_minutes,
                            definitions.longest_window_minutes, whole_day=True)
    if plan is None:
        progress.note("nothing to evaluate: no complete minute after the previous run")
        return RunResult(None, unreadable=_left_out(lake, unreadable))
    progress.note(f"recomputing minutes {_iso(plan.start)} .. {_iso(plan.end)}, {len(definitions.slos)} SLO(s)")
    staging = lake_io.Staging.new(lake)
    days = tasks.days(plan.first, plan.end)
    first_day, last_day = day_of_minute(plan.lookback_start), day_of_minute(plan.start - 1)
    with_hours = set(lake_io.partitions(lake, "slo_hour"))
    backfill = tuple(day for day in lake_io.partitions(lake, "slo_minute")
                     if first_day <= day <= last_day and day not in with_hours)
    # what the shards read back: the lookback's hours, the minutes around the windows' edges (at
    # most about a day's rows), and every minute of the days to backfill
    stored = (lake_io.count_rows(lake, "slo_hour", first_day, last_day, unreadable)
              + lake_io.count_rows(lake, "slo_minute", last_day, last_day, unreadable)
              + sum(lake_io.count_rows(lake, "slo_minute", day, day, unreadable) for day in backfill if day != last_day))
    samples = sum(lake_io.count_rows(lake, table, days[0], days[-1], unreadable) for table in definitions.tables)
    shards = tasks.shard_count(spark.sparkContext.defaultParallelism, stored + samples, SHARD_ROWS)
    merge = tuple(lake_io.hour_file_days(lake, "slo_hour", day_of_minute(plan.lookback_start + MINUTES_PER_DAY - 1),
                                         day_of_minute(plan.start - MINUTES_PER_DAY)))
    work = tasks.Work(lake, staging, definitions, plan.start, plan.end, plan.first, plan.lookback_start,
                      tuple(clusters) if clusters else None, shards, merge, backfill)
    if backfill:
        progress.note(f"{len(backfill)} day(s) of slo_minute without slo_hour (an earlier version's): "
                      "read whole this once, and their hours written")
    try:
        with progress.step(f"computing per-minute good/valid counts ({len(days)} day(s), one Spark task each)"):
            counted = in_tasks(spark, [functools.partial(tasks.count_day, work, day) for day in days], progress)
        with progress.step(f"filling no-data minutes, rolling up windows ({sum(r['samples'] for r in counted)} "
                           f"samples read, about {stored} stored rows to read back, {shards} shard(s))"):
            evaluated = in_tasks(spark, [functools.partial(tasks.evaluate_shard, work, shard)
                                          for shard in range(shards)], progress)
        for day in {problem.day for r in evaluated for problem in r["unreadable"] if problem.table == "slo_hour"}:
            if day in merge:  # its rows are not all there: merged, the unread ones would be lost
                staging.discard("slo_hour", day)
        minute_rows = sum(r["minute_rows"] for r in evaluated)
        status_rows = sum(r["status_rows"] for r in evaluated)
        with progress.step(f"replacing slo_minute ({minute_rows} rows) and slo_status ({status_rows} rows)"):
            for table in OUTPUTS:  # slo_status last: its newest time marks the run done
                staging.commit(table, clusters, since=plan.start)
    finally:
        staging.remove()
    latest = sorted((_plain(row) for r in evaluated for row in r["latest"]),
                    key=lambda row: (row["cluster"], row["slo"], row["entity"]))
    unreadable += [problem for r in counted + evaluated for problem in r["unreadable"]]
    return RunResult(plan, minute_rows, status_rows, sum(r["stored_rows"] for r in evaluated), latest,
                     _left_out(lake, unreadable))


def _left_out(lake: str, unreadable: list[UnreadableFile]) -> list[str]:
    """Each unreadable file once, recorded as a ``lake_gap`` row unless it was before."""
    distinct = list({problem.path: problem for problem in unreadable}.values())
    record_unreadable(lake, distinct)
    return [str(problem) for problem in distinct]


def in_tasks(spark: SparkSession, calls: list, progress: Progress) -> list[dict[str, Any]]:
    """Run each call as one Spark task; their results, or the first task's lake error as LakeError.
    While they run, a line every few seconds says how many tasks are done."""
    if not calls:
        return []
    context = spark.sparkContext
    done = threading.Event()

    def report() -> None:
        shown = -1
        while not done.wait(PROGRESS_SECONDS):
            stages = [context.statusTracker().getStageInfo(i) for i in context.statusTracker().getActiveStageIds()]
            finished = sum(stage.numCompletedTasks for stage in stages if stage is not None)
            if stages and finished != shown:
                progress.note(f"  {finished}/{len(calls)} tasks done")
                shown = finished

    reporter = threading.Thread(target=report, name="kpulse-slo-progress", daemon=True)
    reporter.start()
    try:
        results = context.parallelize(calls, len(calls)).map(lambda call: call()).collect()
    finally:
        done.set()
        reporter.join()
    errors = [r["error"] for r in results if "error" in r]
    if errors:
        raise LakeError(errors[0])
    return results


def _earliest_minute(lake, definitions: SloDefinitions, clusters, unreadable: list[UnreadableFile]) -> int:
    """The minute of the first sample of any table the SLOs read."""
    found = [lake_io.time_bound(lake, table, clusters, newest=False, unreadable=unreadable)
             for table in definitions.tables]
    known = [micros for micros in found if micros is not None]
    if not known:
        raise LakeError(f"no samples in the lake at {lake} (tables {', '.join(definitions.tables)} are empty); "
                        "run `kpulse collect` first")
    return min(known) // 60_000_000


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    value = row.get("time")
    if isinstance(value, datetime):
        # PySpark returns naive local-time datetimes; make it the UTC instant it is.
        row["time"] = datetime.fromtimestamp(value.timestamp(), UTC).isoformat()
    return row


def _iso(minute: int) -> str:
    return datetime.fromtimestamp(minute * 60, UTC).strftime("%Y-%m-%d %H:%M UTC")


def spark_message(error: BaseException) -> str:
    text = str(error)
    # A Python task that failed: its exception's own line is the last one of the traceback.
    raised = [line.strip() for line in text.splitlines() if _PYTHON_EXCEPTION.match(line.strip())]
    if "Traceback (most recent call last)" in text and raised:
        return raised[-1][:400]
    for marker in ("Caused by: ", "org.apache.spark.SparkException: ", "Exception: "):
        for line in text.splitlines():
            if marker in line:
                return line.split(marker, 1)[1].strip()[:400]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return (lines[0] if lines else type(error).__name__)[:400]
