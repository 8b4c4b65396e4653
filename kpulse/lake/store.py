"""The lake: collector samples as hive-partitioned Parquet, one dataset per table of ``kpulse/lake/schema.py``.

Layout (``docs/lake.md``)::

    <lake>/<table>/date=YYYY-MM-DD/part-<YYYYMMDDTHHMMSSZ>-<8 hex>.parquet

``date`` is the UTC date of ``time``; it exists only as the directory name, never as a column in a
file. Every file has exactly the table's schema. Files appear atomically: on a local disk they are
written under a ``.``-prefixed name (ignored by Spark and pyarrow) and renamed; on object stores
(``s3``, ``gcs``, ``abfs``), whose uploads are already all-or-nothing, they are written in place.

Writing never loses rows silently. :class:`LakeWriter` buffers rows until :meth:`LakeWriter.flush`
succeeds; a failed write keeps the rows for the next flush. The collection loop writes a buffer half
full without waiting for its flush interval (:meth:`LakeWriter.fullest`). Only when a table's buffer
exceeds ``max_buffered_rows`` (writes failing) are the oldest rows dropped, and the gap is then
written to ``lake_gap``.

Reading is ``kpulse/lake/reader.py``'s, the one reader of the lake.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta, UTC
from numbers import Real
from typing import Any
from collections.abc import Callable, Mapping, MutableMapping

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from kpulse.lake.location import S3_MAX_ATTEMPTS, S3_SCHEMES, S3_TIMEOUT_SECONDS, parse_s3_location
from kpulse.lake.rows import Columns
from kpulse.lake.schema import TIME, known_table_schema

LOG = logging.getLogger(__name__)
GAP_TABLE = "lake_gap"
EARLY_FLUSH_SHARE = 0.5
"""A buffer half full is written at the end of the cycle, whatever the flush interval: at 10,000
groups x 10 partitions a minute of ``consumer_lag`` rows is three times the default buffer."""
SNAPSHOT_DIR = "_snapshots"
"""Under the lake's root: ``<cluster>.json``, the newest snapshot of each cluster (written whole by
the collection loop, read by the dashboard)."""
PARTITION_PREFIX = "date="
ATOMIC_PUT_FILESYSTEMS = frozenset({"s3", "gcs", "abfs"})
"""Object stores where an upload appears whole or not at all: written in place, no rename."""
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)
"""The lake's times are UTC microseconds since :data:`EPOCH`."""


@dataclass(frozen=True)
class Gap:
    """Rows of one table and cluster dropped because the buffer was full; becomes a ``lake_gap`` row."""

    table: str
    cluster: str
    first_time: datetime
    last_time: datetime
    rows_dropped: int
    reason: str
    time: datetime
    """When the first of these rows was dropped (the ``time`` of the ``lake_gap`` row)."""


@dataclass(frozen=True)
class Taken:
    """The rows and gaps one write takes from a :class:`LakeWriter` (:meth:`LakeWriter.take`)."""

    buffers: dict[str, pa.Table]
    gaps: dict[tuple[str, str], Gap]

    def rows(self) -> int:
        return sum(data.num_rows for data in self.buffers.values())


@dataclass(frozen=True)
class FlushResult:
    """What one :meth:`LakeWriter.flush` did, per table."""

    written: dict[str, int] = field(default_factory=dict)
    """Table -> rows written to files (``lake_gap`` includes the gap rows)."""
    failed: dict[str, int] = field(default_factory=dict)
    """Table -> rows that could not be written; they stay buffered for the next flush."""
    errors: dict[str, str] = field(default_factory=dict)
    """Table -> the write error (one line)."""
    files: list[str] = field(default_factory=list)
    """Paths of the files written."""

    @property
    def ok(self) -> bool:
        return not self.failed


class LakeWriter:
    """Buffers rows per table and writes them as one Parquet file per table and UTC date.

    Thread-safe; an ``append`` never waits on the store (:meth:`take` and :meth:`write`, which a
    ``flush`` is, hold the buffers only to take or give back rows). The constructor does no I/O.
    ``path`` is a local directory or a pyarrow URI (``s3://``, ``file://``; ``s3a://`` is read as
    ``s3://``); with ``filesystem=`` it is a path inside that pyarrow filesystem.
    """

    def __init__(self, path: str, *, clock: Callable[[], float] = time.time,
                 max_buffered_rows: int = 200_000, filesystem: pafs.FileSystem | None = None) -> None:
        if max_buffered_rows < 1:
            raise ValueError(f"max_buffered_rows must be >= 1, got {max_buffered_rows}")
        self.path = path
        self.max_buffered_rows = max_buffered_rows
        self.last_error: str | None = None
        """The most recent write error (one line); ``None`` after a flush where every write succeeded."""
        self.last_written_at: float | None = None
        """When the last write in which every table was written ended (``clock``); ``None`` before."""
        self.rows_dropped_total = 0
        """Rows dropped from full buffers since this writer was made (each recorded in ``lake_gap``)."""
        self._writing_rows: int = 0
        self._clock = clock
        self._filesystem = filesystem
        self._resolved: tuple[pafs.FileSystem, str] | None = None
        self._buffers: dict[str, pa.Table] = {}
        self._gaps: dict[tuple[str, str], Gap] = {}
        self._lock = threading.Lock()
        """Guards the buffers and gaps; never held during I/O."""
        self._writing = threading.Lock()

    def append(self, table: str, rows: list[dict[str, Any]] | Columns) -> None:
        """Buffer rows of ``table`` (dicts, or :class:`Columns`). All or nothing: a row that breaks
        the contract (unknown key, wrong type, no ``time`` or ``cluster``) raises ``ValueError`` and
        none is buffered.

        Timestamp columns take epoch seconds or timezone-aware datetimes; missing keys are null;
        NaN in a float column is null."""
        batch = rows_to_arrow(table, rows)
        if batch.num_rows == 0:
            return
        with self._lock:
            current = self._buffers.get(table)
            combined = batch if current is None else pa.concat_tables([current, batch])
            excess = combined.num_rows - self.max_buffered_rows
            if excess > 0:
                self._record_gap(table, combined.slice(0, excess))
                combined = combined.slice(excess)
            self._buffers[table] = combined

    def fullest(self) -> float:
        """The fullest table buffer's share of ``max_buffered_rows`` (0 when nothing is buffered): the
        loop writes early past :data:`EARLY_FLUSH_SHARE` rather than let rows be dropped."""
        with self._lock:
            return max((data.num_rows for data in self._buffers.values()), default=0) / self.max_buffered_rows

    def flush(self) -> FlushResult:
        """Write every buffered row (and pending gap); never raises for a failed write."""
        return self.write(self.take())

    def take(self) -> Taken:
        """Take every buffered row and pending gap, to be written by :meth:`write` (which may run in
        another thread: the collection loop's lake thread). Rows appended meanwhile are buffered anew."""
        with self._lock:
            taken = Taken(dict(self._buffers), dict(self._gaps))
            self._buffers = {}
            return taken

    def write(self, taken: Taken) -> FlushResult:
        """Write what :meth:`take` took, one file per table and UTC date, without holding the buffers:
        ``append`` never waits on the store. The rows of a file that could not be written go back to the
        front of their buffer (the buffer limit then applies to them as to new rows); a written gap is
        forgotten. One write at a time."""
        result = FlushResult()
        with self._writing:
            with self._lock:
                self._writing_rows = taken.rows()
            try:
                return self._write_taken(taken, result)
            finally:
                with self._lock:
                    self._writing_rows = 0

    def _write_taken(self, taken: Taken, result: FlushResult) -> FlushResult:
        """The body of :meth:`write` (under ``self._writing``)."""
        try:
            fs, base = self.filesystem()
        except Exception as error:  # noqa: BLE001 - e.g. a bad URI or no credentials yet
            self.last_error = one_line(error)
            for table, data in taken.buffers.items():
                result.failed[table], result.errors[table] = data.num_rows, self.last_error
            self._give_back(taken.buffers, {})
            return result
        unreachable = None
        kept: dict[str, pa.Table] = {}
        written_gaps: dict[tuple[str, str], Gap] = {}
        for table in sorted(set(taken.buffers) | ({GAP_TABLE} if taken.gaps else set())):
            buffered = taken.buffers.get(table)
            if unreachable is None:
                kept_rows, gaps = self._write_table(fs, base, table, buffered, taken.gaps, result)
                if kept_rows is not None:
                    kept[table] = kept_rows
                written_gaps.update(gaps)
                if UNREACHABLE_MARK in result.errors.get(table, ""):
                    unreachable = f"not tried: the object store did not answer {table}'s write ({result.errors[table]})"
            elif buffered is not None and buffered.num_rows:
                result.failed[table], result.errors[table] = buffered.num_rows, unreachable
                kept[table] = buffered
        self._give_back(kept, written_gaps)  # gaps not written stay: take() leaves them
        if result.ok:
            self.last_error, self.last_written_at = None, self._clock()
        return result

    def _write_table(self, fs: pafs.FileSystem, base: str, table: str, buffered: pa.Table | None,
                     gaps: dict[tuple[str, str], Gap], result: FlushResult,
                     ) -> tuple[pa.Table | None, dict[tuple[str, str], Gap]]:
        """One file per date: (the rows of the dates that failed, or None; the gaps written)."""
        if buffered is None:
            buffered = known_table_schema(table).empty_table()
        gap_keys = list(gaps) if table == GAP_TABLE else []
        gap_rows = rows_to_arrow(table, [gap_row(gaps[key]) for key in gap_keys])
        data = pa.concat_tables([buffered, gap_rows]).combine_chunks()
        days = pc.cast(data["time"], pa.date32())
        failed_days: set[date] = set()
        for day in sorted(pc.unique(days).to_pylist()):
            part = data.filter(pc.equal(days, pa.scalar(day, pa.date32())))
            try:
                result.files.append(self._write(fs, base, table, day, part))
                result.written[table] = result.written.get(table, 0) + part.num_rows
            except Exception as error:  # noqa: BLE001 - any failure keeps the rows
                failed_days.add(day)
                result.failed[table] = result.failed.get(table, 0) + part.num_rows
                result.errors[table] = self.last_error = one_line(error)
                LOG.warning("lake: could not write %s for %s: %s", table, day, result.errors[table])
        kept = None
        if failed_days:
            failed = pc.is_in(days, pa.array(sorted(failed_days), pa.date32()))
            kept = buffered.filter(failed.slice(0, buffered.num_rows))
        written = {key: gaps[key] for key, day in zip(gap_keys, days.slice(buffered.num_rows).to_pylist())
                   if day not in failed_days}
        return (kept if kept is not None and kept.num_rows else None), written

    def _give_back(self, kept: dict[str, pa.Table], written_gaps: dict[tuple[str, str], Gap]) -> None:
        """Rows not written go back before the rows appended during the write; a gap written is
        forgotten, or kept for the rows dropped during the write when there were some."""
        with self._lock:
            self._writing_rows = 0  # given back: buffered again, or written
            for table, rows in kept.items():
                current = self._buffers.get(table)
                self._buffers[table] = rows if current is None else pa.concat_tables([rows, current])
                excess = self._buffers[table].num_rows - self.max_buffered_rows
                if excess > 0:
                    self._record_gap(table, self._buffers[table].slice(0, excess))
                    self._buffers[table] = self._buffers[table].slice(excess)
            for key, gap in written_gaps.items():
                now = self._gaps.get(key)
                if now is gap:
                    del self._gaps[key]
                elif now is not None:  # more dropped during the write: what the written row did not hold
                    self._gaps[key] = replace(now, first_time=gap.last_time, rows_dropped=now.rows_dropped - gap.rows_dropped)

    def unwritten_rows(self) -> int:
        """Rows appended and not yet in the lake: buffered, or being written."""
        with self._lock:
            return int(sum(data.num_rows for data in self._buffers.values())) + self._writing_rows

    def buffered_rows(self) -> dict[str, int]:
        """Table -> rows waiting to be written."""
        with self._lock:
            return {table: data.num_rows for table, data in self._buffers.items() if data.num_rows}

    def pending_gaps(self) -> list[Gap]:
        """Gaps recorded but not yet written to ``lake_gap``."""
        with self._lock:
            return list(self._gaps.values())

    def filesystem(self) -> tuple[pafs.FileSystem, str]:
        """The lake's pyarrow filesystem and base path, opened once (no I/O) and kept: its
        connections are reused by every write, and by the collection loop's snapshot uploads."""
        if self._resolved is None:
            self._resolved = resolve(self.path, self._filesystem)
        return self._resolved

    def _write(self, fs: pafs.FileSystem, base: str, table: str, day: date, data: pa.Table) -> str:
        directory = f"{base}/{table}/{PARTITION_PREFIX}{day.isoformat()}"
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(self._clock()))
        name = f"part-{stamp}-{uuid.uuid4().hex[:8]}.parquet"
        final = f"{directory}/{name}"
        write_whole(fs, final, lambda path: pq.write_table(data, path, filesystem=fs))
        return final

    def _record_gap(self, table: str, dropped: pa.Table) -> None:
        reason = (f"buffer limit of {self.max_buffered_rows} rows reached; last write error: "
                  f"{self.last_error or 'none (not flushed yet)'}")
        now = EPOCH + timedelta(seconds=self._clock())
        summary = dropped.group_by("cluster").aggregate([("time", "min"), ("time", "max"), ("time", "count")])
        for row in summary.to_pylist():
            key = (table, row["cluster"])
            previous = self._gaps.get(key)
            self._gaps[key] = Gap(
                table=table, cluster=row["cluster"],
                first_time=min(row["time_min"], previous.first_time) if previous else row["time_min"],
                last_time=max(row["time_max"], previous.last_time) if previous else row["time_max"],
                rows_dropped=row["time_count"] + (previous.rows_dropped if previous else 0),
                reason=reason, time=previous.time if previous else now)
            self.rows_dropped_total += row["time_count"]
            LOG.warning("lake: buffer of %s full, dropped %d rows of cluster %s", table, row["time_count"],
                        row["cluster"])


def rows_to_arrow(table: str, rows: list[dict[str, Any]] | Columns) -> pa.Table:
    """Rows (dicts, or :class:`Columns`) as an Arrow table of exactly the table's schema;
    ``ValueError`` naming table and column for anything outside the contract."""
    schema = known_table_schema(table)
    names = set(schema.names)
    if isinstance(rows, Columns):
        unknown = sorted(rows.values.keys() - names)
        if unknown:
            raise ValueError(f"lake table {table!r} has no column {', '.join(map(repr, unknown))}; "
                             f"its columns: {', '.join(schema.names)}")
        return _to_arrow(table, schema, rows.column)
    for index, row in enumerate(rows):
        if row.keys() <= names:
            continue
        unknown = sorted(row.keys() - names)
        if unknown:
            raise ValueError(f"lake table {table!r} has no column {', '.join(map(repr, unknown))} "
                             f"(row {index}); its columns: {', '.join(schema.names)}")
    return _to_arrow(table, schema, lambda name: [row.get(name) for row in rows])


def _to_arrow(table: str, schema: pa.Schema, column_values: Callable[[str], list[Any]]) -> pa.Table:
    columns = []
    for column in schema:
        values = column_values(column.name)
        try:
            if column.type == TIME:
                values = _micros_column(values)
            elif pa.types.is_integer(column.type):
                if any(issubclass(kind, float) for kind in set(map(type, values))):  # Arrow would truncate 2.5
                    for value in values:
                        if isinstance(value, float) and not value.is_integer():
                            raise ValueError(f"{value!r} is not a whole number")
            # from_pandas: NaN is stored as null (pa.array loads pandas whatever this says)
            columns.append(pa.array(values, type=column.type, from_pandas=pa.types.is_floating(column.type)))
        except (ValueError, TypeError, pa.ArrowException) as error:
            raise ValueError(f"lake table {table!r}, column {column.name!r} ({column.type}): "
                             f"{one_line(error)}") from error
        if column.name in ("time", "cluster") and columns[-1].null_count:
            raise ValueError(f"lake table {table!r}: every row needs {column.name!r}")
    return pa.Table.from_arrays(columns, schema=schema)


def _micros_column(values: list[Any]) -> list[int | None]:
    """:func:`to_micros` of each value; the rows of one cycle share one time, converted once."""
    kinds = set(map(type, values))
    if bool in kinds:  # True == 1 as a key: let to_micros refuse it
        return [None if value is None else to_micros(value) for value in values]
    converted: dict[Any, int | None] = {value: to_micros(value) for value in set(values) if value is not None}
    converted[None] = None
    return [converted[value] for value in values]


def to_micros(value: Any) -> int:
    """Epoch seconds (int/float) or a timezone-aware datetime -> microseconds since the epoch (UTC)."""
    if type(value) is float or type(value) is int:  # the common case, first: 10,000s of rows a cycle
        return round(value * 1_000_000)
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(f"naive datetime {value.isoformat()}: give a timezone (UTC) or epoch seconds")
        return (value - EPOCH) // MICROSECOND
    if isinstance(value, Real) and not isinstance(value, bool):
        return round(float(value) * 1_000_000)
    raise ValueError(f"{value!r} is not a time: give epoch seconds or a timezone-aware datetime")


UNREACHABLE_MARK = "NETWORK_CONNECTION"
"""In a write error: the object store could not be reached (the AWS SDK's error name). The other
tables of that flush are then not tried (their rows stay buffered): each would wait on the same
server, and a flush of ten tables held the collection cycle for 16 s."""
AWS_CREDENTIAL_VARIABLES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
"""The AWS identity in a process's environment, replaced as a whole by :func:`use_credentials`."""


def use_credentials(credentials: Mapping[str, str], environ: MutableMapping[str, str] = os.environ) -> None:
    """Make ``credentials`` (``lake.s3``'s :meth:`~kpulse.config.model.S3CredentialsConfig.environment`,
    AWS variable -> value) the AWS identity of this process and of every process it starts; nothing
    when empty. The configuration's identity wins over the environment's, replacing it whole (an
    ``AWS_SESSION_TOKEN`` left from the environment would not match the configuration's key).

    Why the process environment, set once by each entry point right after it reads the
    configuration: the AWS SDK inside pyarrow reads the identity from it in every process that opens
    the lake, and those are not all kpulse's to call: Spark's JVM and the Python workers it forks
    (the SLO job and the compaction open the lake inside their tasks) inherit it, as does the
    dashboard's Streamlit server. Passing the secrets as arguments instead would put them in every
    reader's signature and in the pickled closures of Spark tasks. Executors on a Spark cluster get
    them as ``spark.executorEnv`` settings (``spark_jobs/lake_io.py``'s ``build_session``)."""
    if not credentials:
        return
    for name in AWS_CREDENTIAL_VARIABLES:
        environ.pop(name, None)
    environ.update(credentials)


def resolve(path: str, filesystem: pafs.FileSystem | None = None) -> tuple[pafs.FileSystem, str]:
    """The pyarrow filesystem and the path inside it of a lake location."""
    if filesystem is not None:
        return filesystem, path.rstrip("/")
    if "://" not in path:
        return pafs.LocalFileSystem(), os.path.abspath(path)
    scheme, rest = path.split("://", 1)
    if scheme in S3_SCHEMES:
        return s3_filesystem(rest)
    fs, inner = pafs.FileSystem.from_uri(path)
    return fs, inner.rstrip("/")


def s3_filesystem(rest: str) -> tuple[pafs.FileSystem, str]:
    """``bucket/prefix?option=value&...`` (:data:`~kpulse.lake.location.S3_OPTIONS`) -> an S3
    filesystem (path-style addressing unless ``force_virtual_addressing=true``; the identity from
    the AWS environment, see :func:`use_credentials`) and ``bucket/prefix``."""
    location = parse_s3_location(rest)
    options: dict[str, Any] = {"connect_timeout": S3_TIMEOUT_SECONDS, "request_timeout": S3_TIMEOUT_SECONDS,
                               **location.options}
    options["retry_strategy"] = pafs.AwsStandardS3RetryStrategy(
        max_attempts=options.pop("max_attempts", S3_MAX_ATTEMPTS))
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if "endpoint_override" not in options and endpoint:
        scheme, _, host = endpoint.rpartition("://")
        options["endpoint_override"] = host.rstrip("/")
        options.setdefault("scheme", scheme or "https")
    if "region" not in options and "endpoint_override" not in options:  # AWS: the bucket's own region
        region = _bucket_region(location.bucket)
        if region:
            options["region"] = region
    return pafs.S3FileSystem(**options), location.path


_REGIONS: dict[str, str | None] = {}


def _bucket_region(bucket: str) -> str | None:
    """The AWS region of a bucket (asked once per process, as pyarrow's ``from_uri`` does), or
    None when it cannot be asked (then the AWS configuration's default region applies)."""
    if bucket not in _REGIONS:
        try:
            _REGIONS[bucket] = pafs.resolve_s3_region(bucket)
        except (OSError, ValueError):
            _REGIONS[bucket] = None  # asked once: a lake read often must not wait on it each time
    return _REGIONS[bucket]


def write_whole(fs: pafs.FileSystem, path: str, write: Callable[[str], None]) -> None:
    """Make the file ``path`` appear whole to every reader, ``write(p)`` writing it at ``p``. On an
    object store (:data:`ATOMIC_PUT_FILESYSTEMS`), whose upload is already all-or-nothing and which
    has no directories, that is one request at ``path``. Elsewhere it is written under a
    ``.``-prefixed temporary name in its directory (made first; ignored by every reader) and renamed;
    a failed write deletes the temporary file and raises."""
    if fs.type_name in ATOMIC_PUT_FILESYSTEMS:
        write(path)
        return
    directory, _, name = path.rpartition("/")
    fs.create_dir(directory, recursive=True)
    temporary = f"{directory}/.{name}.tmp"
    try:
        write(temporary)
        fs.move(temporary, path)
    except BaseException:
        try:
            fs.delete_file(temporary)
        except Exception:  # noqa: BLE001 - the write error is the one to report
            pass
        raise


def write_bytes_whole(fs: pafs.FileSystem, path: str, data: bytes) -> None:
    """:func:`write_whole` of ``data`` (a small file: a snapshot, the acknowledgements)."""
    def write(target: str) -> None:
        with fs.open_output_stream(target) as out:
            out.write(data)

    write_whole(fs, path, write)


def gap_row(gap: Gap) -> dict[str, Any]:
    """The ``lake_gap`` row of a gap."""
    return {"time": gap.time, "cluster": gap.cluster, "table_name": gap.table, "first_time": gap.first_time,
            "last_time": gap.last_time, "rows_dropped": gap.rows_dropped, "reason": gap.reason}


def one_line(error: BaseException) -> str:
    """``<Type>: <first line>`` of an error (what the writer and the reader say of a failure)."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}".rstrip(": ")
