"""The lake compaction job: retention, downsampling and small-file compaction of closed days.

The driver lists every table's ``date=`` partitions (names only, and the footers of compacted
files), plans what each needs (``kpulse.lake.compaction.plan_partition``: pure) and runs one Spark
task per table and day that has work; a task merges the day's files into one, folds
``consumer_lag`` into ``consumer_lag_downsampled`` or deletes an expired partition, all through
``kpulse/lake/compaction.py``. Today's partitions are never touched (the collector writes them).
Each action becomes a ``lake_compaction`` row. Idempotent: a second run finds nothing to do; a run
killed at any point leaves a readable lake and the next run finishes its work.
"""

from __future__ import annotations

import functools
import time
import uuid
from dataclasses import dataclass, field
from datetime import date, datetime, UTC
from typing import Any

from pyspark.sql import SparkSession

from kpulse.config.model import RetentionConfig
from kpulse.lake import compaction, reader
from kpulse.lake.schema import SCHEMAS
from kpulse.lake.store import LakeWriter, one_line, resolve
from kpulse.progress import SILENT, Progress
from spark_jobs import lake_io
from spark_jobs.job import in_tasks, spark_message

LOG_TABLE = "lake_compaction"


@dataclass(frozen=True)
class Task:
    """Work on one table and day, in order (``downsample``, ``compact``, ``clean``, ``expire``)."""

    table: str
    day: date
    actions: tuple[str, ...]


@dataclass
class CompactionResult:
    run_id: str
    today: date
    planned: list[Task]
    done: list[compaction.Done] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    """``"<table> <day>: <error>"`` of each task that failed (its partition left as it was)."""

    def as_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "today": self.today.isoformat(),
                "planned": [{"table": t.table, "day": t.day.isoformat(), "actions": list(t.actions)}
                            for t in self.planned],
                "done": [d.row(self.run_id, 0) | {"time": None} for d in self.done], "failed": self.failed}


def plan(lake: str, retention: RetentionConfig, today: date) -> list[Task]:
    """What every partition of every built-in table needs (listing only)."""
    fs, base = resolve(lake)
    listed: dict[str, dict[date, compaction.Partition]] = {}
    for table in SCHEMAS:
        listed[table] = {day: compaction.inspect(fs, directory)
                         for day, directory in reader.partitions(fs, f"{base}/{table}")}
    tasks: list[Task] = []
    downsampling: set[tuple[str, date]] = set()
    for table, days in listed.items():
        target = compaction.DOWNSAMPLED.get(table)
        for day, partition in days.items():
            exists = bool(target and listed[target].get(day, compaction.Partition(())).files)
            actions = compaction.plan_partition(table, day, today, partition, retention, exists)
            if actions:
                tasks.append(Task(table, day, actions))
            if "downsample" in actions and target is not None:  # a table downsampled has a target
                downsampling.add((target, day))
    # A downsampled partition being rewritten this run is left to the task that rewrites it.
    return [t for t in tasks if (t.table, t.day) not in downsampling or t.actions == ("expire",)]


def run(spark: SparkSession | None, lake: str, retention: RetentionConfig, *, until: float | None = None,
        dry_run: bool = False, progress: Progress = SILENT) -> CompactionResult:
    """Plan, then (unless ``dry_run``: then ``spark`` may be None) run the tasks and record what
    they did in ``lake_compaction``."""
    lake_io.check_lake(lake)
    today = compaction.utc_day(time.time() if until is None else until)
    run_id = f"compact-{datetime.now(UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"
    with progress.step("listing the lake's partitions"):
        try:
            tasks = plan(lake, retention, today)
        except OSError as error:
            raise lake_io.LakeError(f"cannot list the lake at {lake}: {one_line(error)}") from None
    result = CompactionResult(run_id, today, tasks)
    progress.note(f"{len(tasks)} partition(s) to work on before {today.isoformat()}"
                  + (" (dry run: nothing changed)" if dry_run else ""))
    if dry_run or not tasks:
        return result
    if spark is None:
        raise ValueError("compacting needs a Spark session (None is for a dry run only)")
    calls = [functools.partial(_task, lake, task, retention.downsample_minutes) for task in tasks]
    with progress.step(f"compacting, downsampling, expiring ({len(tasks)} Spark task(s))"):
        try:
            outcomes = in_tasks(spark, calls, progress)
        except Exception as error:  # noqa: BLE001 - Spark's errors (lost executor, ...) become one line
            if not type(error).__module__.startswith(("pyspark", "py4j")):
                raise
            raise lake_io.LakeError(f"the compaction failed on {lake}: {spark_message(error)}; "
                                    "every partition is readable, the next run finishes the work") from None
    for task, outcome in zip(tasks, outcomes):
        result.done += [compaction.Done(**{**d, "day": date.fromisoformat(d["day"])}) for d in outcome["done"]]
        if outcome.get("failed"):
            result.failed.append(f"{task.table} {task.day.isoformat()}: {outcome['failed']}")
    _record(lake, result)
    return result


def _task(lake: str, task: Task, minutes: int) -> dict[str, Any]:
    """One Spark task: the actions on one partition; what was done, and the error that stopped it."""
    fs, base = resolve(lake)
    done: list[compaction.Done] = []
    failed = None
    try:
        compaction.run_actions(fs, base, task.table, task.day, task.actions, minutes, done)
    except Exception as error:  # noqa: BLE001 - the partition is left readable; the next run retries
        failed = one_line(error)
    return {"done": [_plain(d) for d in done], "failed": failed}


def _plain(done: compaction.Done) -> dict[str, Any]:
    return {**done.__dict__, "day": done.day.isoformat()}


def _record(lake: str, result: CompactionResult) -> None:
    """The ``lake_compaction`` rows of the run (a write failure is logged in the result, not raised)."""
    if not result.done:
        return
    writer = LakeWriter(lake)
    now = time.time()
    writer.append(LOG_TABLE, [done.row(result.run_id, now) for done in result.done])
    flushed = writer.flush()
    if not flushed.ok:
        result.failed.append(f"{LOG_TABLE}: could not record the run: {writer.last_error}")
