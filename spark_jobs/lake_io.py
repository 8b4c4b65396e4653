"""Spark session and lake I/O for the SLO job (pyarrow, on the driver and inside Spark tasks): read
date partitions of a lake table through the lake's one reader (``kpulse/lake/reader.py``), stage
the job's output and then replace the hours of its own tables it recomputed (reruns replace,
never duplicate), find where the previous run stopped.

A lake file that cannot be read is skipped by the readers given an ``unreadable`` list: it is
added there (:class:`kpulse.lake.reader.UnreadableFile`) and the job names it and records it as a
``lake_gap`` row; one bad file must not stop every SLO of every cluster. The job's own staged
output is read strictly (a bad staged file fails the run)."""

from __future__ import annotations

import os
import re
import sys
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime, timedelta, UTC
from collections.abc import Iterator, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401 - pa.compute
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from pyspark.sql import SparkSession

from kpulse.errors import KpulseError
from kpulse.lake import reader
from kpulse.lake.reader import UnreadableFile
from kpulse.lake.schema import SCHEMAS
from kpulse.lake.store import PARTITION_PREFIX, resolve

DAY_MICROS = 86_400_000_000
HOUR_MICROS = 3_600_000_000
MINUTE_MICROS = 60_000_000
SESSION_CONFIG = {
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.showConsoleProgress": "false",  # the job prints its own progress lines
}


class LakeError(KpulseError):
    """The lake cannot be read or written (missing, unreachable, corrupt file)."""


def build_session(master: str | None = None, *, shuffle_partitions: int | None = None,
                  app_name: str = "kpulse-slo", extra: dict[str, str] | None = None,
                  credentials: Mapping[str, str] | None = None) -> SparkSession:
    """The job's session (UTC, no console progress bar of its own). ``master=None``
    keeps what ``spark-submit`` set, else ``local[*]``. ``credentials`` (``lake.s3``'s AWS
    variables, already in this process's environment) reach the executors
    (:func:`executor_environment`)."""
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    elif not _submitted():
        builder = builder.master("local[*]")
        master = "local[*]"
    if master and master.startswith("local"):
        # The tasks run Python (pyarrow, NumPy): on this machine, the interpreter kpulse runs in.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    config = {**SESSION_CONFIG, **executor_environment(credentials or {}), **(extra or {})}
    if shuffle_partitions:
        config["spark.sql.shuffle.partitions"] = str(shuffle_partitions)
    for key, value in config.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


SPARK_REDACTION_REGEX = "(?i)secret|password|token|access[._]?key|credential"
"""Spark's default ``spark.redaction.regex`` (4.x) with ``access[.]?key`` widened to ``access_key``."""


def executor_environment(credentials: Mapping[str, str]) -> dict[str, str]:
    """Settings giving Spark's executors the lake's AWS identity: ``spark.executorEnv.<VAR>`` (on a
    cluster the executors do not inherit the driver's environment; in local mode the Python workers
    do, and the setting changes nothing). Spark's UI, REST API and event log show ``***`` for a
    setting whose name matches ``spark.redaction.regex``; its default,
    ``(?i)secret|password|token|access[.]?key|credential``, hides the secret and the session token
    but not ``AWS_ACCESS_KEY_ID``, hence :data:`SPARK_REDACTION_REGEX` with credentials (it replaces
    a regex given to ``spark-submit``)."""
    if not credentials:
        return {}
    settings = {f"spark.executorEnv.{name}": value for name, value in credentials.items()}
    settings["spark.redaction.regex"] = SPARK_REDACTION_REGEX
    return settings


def _submitted() -> bool:
    return "SPARK_MASTER" in os.environ or "PYSPARK_GATEWAY_PORT" in os.environ or "spark.master" in os.environ.get(
        "PYSPARK_SUBMIT_ARGS", "")


def partitions(lake: str, table: str) -> list[date]:
    """The ``date=`` partitions of a table, oldest first ([] when the table has none)."""
    fs, base = resolve(lake)
    with _lake_errors(f"{lake}/{table}"):
        return [day for day, _ in reader.partitions(fs, f"{base}/{table}")]


def check_lake(lake: str) -> None:
    fs, base = resolve(lake)
    try:
        info = fs.get_file_info(base)
    except OSError as error:
        raise LakeError(f"cannot reach the lake at {lake}: {_first_line(error)}") from None
    if info.type == pafs.FileType.NotFound:
        raise LakeError(f"no lake at {lake} (run `kpulse collect` first, or give lake.path in the config)")


def time_bound(lake: str, table: str, clusters: list[str] | None, *, newest: bool,
               unreadable: list[UnreadableFile] | None = None) -> int | None:
    """The newest (or oldest) ``time`` of ``table`` as epoch microseconds, from its last (first)
    non-empty partition, read with pyarrow (cheaper than a Spark job); None for an empty table.
    Unreadable files: see :func:`read_days`."""
    with _lake_errors(f"{lake}/{table}"):
        return reader.time_bound(lake, table, clusters, newest=newest, unreadable=unreadable)


def read_days(lake: str, table: str, first: date, last: date, *, columns: list[str] | None = None,
              clusters: list[str] | None = None, dictionary: bool = False, files=None,
              unreadable: list[UnreadableFile] | None = None, times: tuple[int, int] | None = None) -> pa.Table:
    """Rows of the date partitions ``first..last`` that exist (:func:`kpulse.lake.reader.read_days`;
    ``times``: epoch microseconds ``[low, high)``, row groups that cannot hold one are skipped).
    A file that cannot be read is skipped and added to ``unreadable``; without that list it raises
    :class:`LakeError` naming it."""
    with _lake_errors(f"{lake}/{table}"):
        return reader.read_days(lake, table, first, last, columns=columns, clusters=clusters, dictionary=dictionary,
                                files=files, unreadable=unreadable, times=times)


def count_rows(lake: str, table: str, first: date, last: date,
               unreadable: list[UnreadableFile] | None = None) -> int:
    """Rows in the date partitions ``first..last`` (from the Parquet footers, no data read).
    Unreadable files: see :func:`read_days`."""
    with _lake_errors(f"{lake}/{table}"):
        return reader.count_rows(lake, table, first, last, unreadable)


@contextmanager
def _lake_errors(where: str) -> Iterator[None]:
    """The reader's errors as :class:`LakeError`: a file it cannot read, a directory it cannot list."""
    try:
        yield
    except reader.UnreadableFileError as error:
        raise LakeError(str(error)) from None
    except OSError as error:
        raise LakeError(f"cannot list {where}: {_first_line(error)}") from None


@dataclass(frozen=True)
class Staging:
    """Where a run writes its output before it replaces anything: ``<lake>/_staging/<run>/``.
    :meth:`write` may run in any Spark task; :meth:`commit` runs on the driver once every task
    has succeeded, so a failed run changes nothing in the lake."""

    lake: str
    run: str

    @classmethod
    def new(cls, lake: str) -> Staging:
        return cls(lake, f"slo-{datetime.now(UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}")

    @property
    def root(self) -> str:
        return f"{resolve(self.lake)[1]}/_staging/{self.run}"

    def write(self, table: str, rows: pa.Table, part: str, compression: str = "snappy",
              hourly: bool = False, row_group_rows: int | None = None) -> list[date]:
        """Write ``rows`` (with a ``time`` column) into one file per UTC date of ``time``, or with
        ``hourly`` one file per UTC hour (``part-h<HH>-<part>.parquet``: :meth:`commit` can then
        replace some hours of a date and keep the others); the dates."""
        if rows.num_rows == 0:
            return []
        fs, _ = resolve(self.lake)
        bucket = np.floor_divide(pa.compute.cast(rows.column("time"), pa.int64()).to_numpy(),
                                 HOUR_MICROS if hourly else DAY_MICROS)
        if np.any(bucket[1:] < bucket[:-1]):
            order = np.argsort(bucket, kind="stable")
            rows, bucket = rows.take(pa.array(order)), bucket[order]
        names = [f.name for f in rows.schema if pa.types.is_dictionary(f.type) or pa.types.is_string(f.type)]
        bounds = np.flatnonzero(np.diff(bucket)) + 1
        written: list[date] = []
        for begin, end in zip([0, *bounds], [*bounds, len(bucket)]):
            hours = int(bucket[begin]) * 24 if not hourly else int(bucket[begin])
            when = date(1970, 1, 1) + timedelta(days=hours // 24)
            directory = f"{self.root}/{table}/{PARTITION_PREFIX}{when.isoformat()}"
            fs.create_dir(directory, recursive=True)
            name = f"part-h{hours % 24:02d}-{part}.parquet" if hourly else f"part-{part}.parquet"
            with fs.open_output_stream(f"{directory}/{name}") as sink:
                # Without the Arrow schema in the footer, dictionary-encoded names read back as strings;
                # dictionary pages for the names only: trying them on every number column costs more.
                pq.write_table(rows.slice(begin, end - begin), sink, store_schema=False, use_dictionary=names,
                               compression=compression, row_group_size=row_group_rows)
            if not written or written[-1] != when:
                written.append(when)
        return written

    def read(self, table: str, schema: pa.Schema, files=None) -> pa.Table:
        """Everything staged for ``table`` (every date) in files whose name ``files(name)`` accepts;
        string columns stay dictionary-encoded."""
        fs, _ = resolve(self.lake)
        directory = f"{self.root}/{table}"
        pieces = []
        if fs.get_file_info(directory).type != pafs.FileType.NotFound:
            for entry in sorted(fs.get_file_info(pafs.FileSelector(directory, recursive=True)), key=lambda e: e.path):
                if entry.type == pafs.FileType.File and (files is None or files(entry.base_name)):
                    pieces.append(_strict(reader.read_file, fs, entry.path, schema, dictionary=True))
        return pa.concat_tables(pieces) if pieces else reader.arrow_schema(schema, schema.names, True).empty_table()

    def commit(self, table: str, clusters: list[str] | None = None, since: int | None = None) -> int:
        """Replace, in every date partition of ``table`` that has staged files, the rows with
        ``time`` from ``since`` on (epoch minutes; None, or a staged file not written ``hourly``:
        every row of the partition) with them; the partitions written.

        Only files that can hold such rows are deleted: a file of an hour (``part-h<HH>-``,
        written ``hourly``) wholly before ``since`` stays as it is; the rows before ``since`` of
        a file that straddles it (a day-wide file of an earlier version, an hour cut by
        ``since``) are kept, written again as hour files. With ``clusters``, the other
        clusters' rows of the deleted files are kept too."""
        fs, base = resolve(self.lake)
        staged = f"{self.root}/{table}"
        if fs.get_file_info(staged).type == pafs.FileType.NotFound:
            return 0
        days = [e for e in fs.get_file_info(pafs.FileSelector(staged)) if e.type == pafs.FileType.Directory]
        for day in sorted(days, key=lambda e: e.base_name):
            target = f"{base}/{table}/{day.base_name}"
            day_start = (date.fromisoformat(day.base_name[len(PARTITION_PREFIX):]) - date(1970, 1, 1)).days * 1440
            with _lake_errors(target):
                exists = fs.get_file_info(target).type == pafs.FileType.Directory
                old = reader.partition_files(fs, target) if exists else []
            doomed, straddling = [], []
            whole = since is None or any(_HOUR_FILE.search(entry.base_name) is None
                                         for entry in fs.get_file_info(pafs.FileSelector(day.path)))
            for path in old:
                first, end = file_minutes(path.rsplit("/", 1)[-1], day_start)
                if since is None or whole or first >= since:  # (whole when since is None)
                    doomed.append(path)
                elif end > since:
                    doomed.append(path)
                    straddling.append(path)
            if clusters or straddling:
                self._keep(table, [p for p in doomed if clusters or p in straddling], clusters,
                           None if whole else since, hourly=not whole)
            fs.create_dir(target, recursive=True)
            for path in doomed:
                fs.delete_file(path)
            # Hour by hour: a commit killed midway leaves every hour before the one it was moving.
            for entry in sorted(fs.get_file_info(pafs.FileSelector(day.path)), key=lambda e: e.base_name):
                fs.move(entry.path, f"{target}/{self.run}-{entry.base_name}")
        return len(days)

    def _keep(self, table: str, paths: list[str], clusters: list[str] | None, since: int | None,
              hourly: bool) -> None:
        """Stage the rows of ``paths`` that the commit keeps: before ``since``, or of another
        cluster than ``clusters``."""
        if not paths:
            return
        fs, _ = resolve(self.lake)
        rows = pa.concat_tables([_strict(reader.read_file, fs, path, SCHEMAS[table]) for path in paths])
        keep = None
        if since is not None:
            keep = pa.compute.less(pa.compute.cast(rows.column("time"), pa.int64()), since * MINUTE_MICROS)
        if clusters:
            other = pa.compute.invert(pa.compute.is_in(rows.column("cluster"), value_set=pa.array(clusters)))
            keep = other if keep is None else pa.compute.or_(keep, other)
        self.write(table, rows.filter(keep), "kept", hourly=hourly)

    def discard(self, table: str, day: date) -> None:
        """Unstage what was staged for one date partition of ``table``: the commit leaves it as it is."""
        fs, _ = resolve(self.lake)
        directory = f"{self.root}/{table}/{PARTITION_PREFIX}{day.isoformat()}"
        if fs.get_file_info(directory).type != pafs.FileType.NotFound:
            fs.delete_dir(directory)

    def remove(self) -> None:
        fs, _ = resolve(self.lake)
        try:
            if fs.get_file_info(self.root).type != pafs.FileType.NotFound:
                fs.delete_dir(self.root)
            parent = self.root.rsplit("/", 1)[0]
            if not fs.get_file_info(pafs.FileSelector(parent)):
                fs.delete_dir(parent)
        except OSError:
            pass  # leftovers under _staging are ignored by every reader


def _strict(read, *args, **kwargs):
    """A read of the job's own files: one it cannot read fails the run (:class:`LakeError`)."""
    try:
        return read(*args, **kwargs)
    except reader.UnreadableFileError as error:
        raise LakeError(str(error)) from None


_HOUR_FILE = re.compile(r"(?:^|-)part-h(\d{2})-")


def file_minutes(name: str, day_start: int) -> tuple[int, int]:
    """The epoch minutes ``[first, end)`` a file of the date partition beginning at ``day_start``
    can hold rows of: its hour for a file written ``hourly``, else the whole day."""
    match = _HOUR_FILE.search(name)
    if match is None:
        return day_start, day_start + 1440
    first = day_start + 60 * int(match.group(1))
    return first, first + 60


def hour_file_days(lake: str, table: str, first: date, last: date) -> list[date]:
    """The date partitions ``first..last`` of ``table`` that hold a file written by the hour."""
    fs, base = resolve(lake)
    with _lake_errors(f"{lake}/{table}"):
        return [day for day, directory in reader.partitions_between(fs, f"{base}/{table}", first, last)
                if any(_HOUR_FILE.search(path.rsplit("/", 1)[-1]) for path in reader.partition_files(fs, directory))]


def day_wide_files(lake: str, tables: tuple[str, ...], day: date) -> bool:
    """Whether a date partition of one of ``tables`` has a day-wide file (not written by the hour:
    a past day of a full run, a merged day, a day of a version that replaced whole days), so that
    an update cannot replace some of its hours only."""
    fs, base = resolve(lake)
    for table in tables:
        directory = f"{base}/{table}/{PARTITION_PREFIX}{day.isoformat()}"
        with _lake_errors(directory):
            if fs.get_file_info(directory).type != pafs.FileType.Directory:
                continue
            names = [path.rsplit("/", 1)[-1] for path in reader.partition_files(fs, directory)]
            if any(_HOUR_FILE.search(name) is None for name in names):
                return True
    return False


def day_of_minute(minute: int) -> date:
    return (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(minutes=minute)).date()


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__
