"""The one reader of the lake: lists a table's ``date=`` partitions and their data files, reads
them with pyarrow as the table's contract schema, and says which files it had to skip.

Every reader of the lake goes through here: the dashboard (:func:`read_table_with_problems`), the
audit log (:func:`read_table`), the SLO job's driver and Spark tasks (:func:`read_days`,
:func:`count_rows`, :func:`time_bound`, through ``spark_jobs/lake_io.py``) and the SLO exporter
(``kpulse.lake.slo_status``). Layout (``docs/lake.md``)::

    <lake>/<table>/date=YYYY-MM-DD/part-<YYYYMMDDTHHMMSSZ>-<8 hex>.parquet

Names starting with ``.`` or ``_`` (the writer's temporary files, ``_SUCCESS``, ``_staging``) are
not data, as for Spark. A file written before a column was added reads that column as null.

Compaction (``kpulse lake compact``) swaps a partition's files for one file atomically: the new
``compacted-….parquet`` names in its footer (:data:`REPLACES_KEY`) every file it replaces, and
from the moment it appears those files are no longer data (:func:`partition_files`), even before
the compaction deletes them. A file that vanishes between the listing and the read (deleted by a
compaction or by retention) makes the reader list its partition again, so a read sees either the
old files or the new one, never both, never neither.

A file that cannot be read is skipped and reported (:class:`UnreadableFile`), never allowed to
hide the good ones; the SLO job records each one once as a ``lake_gap`` row
(:func:`record_unreadable`): its rows are missing from everything computed. Strict readers (no
``unreadable`` list given) raise :class:`UnreadableFileError` instead.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from datetime import date, datetime, timedelta, UTC
from typing import TYPE_CHECKING, Any, NamedTuple
from collections.abc import Callable, Iterable, Mapping

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from kpulse.errors import KpulseError
from kpulse.lake.schema import SCHEMAS, TIME, known_table_schema
from kpulse.lake.store import EPOCH, GAP_TABLE, MICROSECOND, PARTITION_PREFIX, LakeWriter, one_line, resolve, to_micros

if TYPE_CHECKING:  # pandas (also loaded by pyarrow.dataset) is for readers that want frames
    import pandas as pd
    import pyarrow.dataset as ds

LOG = logging.getLogger(__name__)
ANY_CLUSTER = "*"
"""``cluster`` of a ``lake_gap`` row about a file nobody could read: it may hold rows of any cluster."""
UNREADABLE_REASON = "unreadable file "
"""How the ``reason`` of a ``lake_gap`` row about an unreadable file begins (then ``<path>: <error>``)."""
NOT_DATA = (".", "_")
"""Prefixes of names that are not data (temporary files, ``_SUCCESS``, ``_staging``)."""
COMPACTED_PREFIX = "compacted-"
"""How the name of a file written by the compaction begins (then ``<UTC time>-<8 hex>.parquet``)."""
REPLACES_KEY = b"kpulse.replaces"
"""Footer key of a compacted file: a JSON list of the names of the files (in its partition) it replaces."""
LISTING_ATTEMPTS = 3
"""How many times a partition is listed again when one of its files vanished while it was read."""
_REPLACED: dict[str, frozenset[str]] = {}
"""Compacted file path -> the names it replaces (compacted files are never rewritten: cached)."""


@dataclass(frozen=True)
class UnreadableFile:
    """A lake file (or partition directory) a reader had to skip; ``str()`` is ``"<path>: <error>"``."""

    path: str
    error: str
    """Why, in one line."""

    def __str__(self) -> str:
        return f"{self.path}: {self.error}"

    @property
    def table(self) -> str | None:
        """The table whose directory holds it (the name before ``date=``)."""
        parts = self.path.replace("\\", "/").split("/")
        dated = [i for i, part in enumerate(parts) if part.startswith(PARTITION_PREFIX)]
        return parts[dated[-1] - 1] if dated and dated[-1] > 0 else None

    @property
    def day(self) -> date | None:
        """The UTC date of its ``date=`` partition: the day whose rows it held."""
        for part in reversed(self.path.replace("\\", "/").split("/")):
            if part.startswith(PARTITION_PREFIX):
                try:
                    return date.fromisoformat(part[len(PARTITION_PREFIX):])
                except ValueError:
                    return None
        return None

    def gap_row(self, now: float) -> dict[str, Any]:
        """Its ``lake_gap`` row: the file's day, any cluster, rows unknown."""
        day = self.day
        start = None if day is None else datetime(day.year, day.month, day.day, tzinfo=UTC)
        return {"time": now, "cluster": ANY_CLUSTER, "table_name": self.table or "", "first_time": start,
                "last_time": None if start is None else start + timedelta(days=1) - MICROSECOND,
                "rows_dropped": None, "reason": f"{UNREADABLE_REASON}{self}"}


class UnreadableFileError(KpulseError):
    """A strict read met a file it cannot read: ``cannot read <path>: <error>``."""

    def __init__(self, file: UnreadableFile) -> None:
        self.file = file
        super().__init__(f"cannot read {file.path}: {file.error.split(': ', 1)[-1]}")


class LakeRead(NamedTuple):
    frame: pd.DataFrame
    skipped: list[UnreadableFile]
    """Every file or directory that could not be read, and why."""


# --- listing ---------------------------------------------------------------------------------------

def is_data(name: str) -> bool:
    """Whether a file or directory name inside a table is data (not temporary, not ``_SUCCESS``)."""
    return not name.startswith(NOT_DATA)


def partitions(fs: pafs.FileSystem, table_dir: str,
               skipped: list[UnreadableFile] | None = None) -> list[tuple[date, str]]:
    """``(day, directory)`` of each ``date=`` partition of a table directory, oldest first; [] when
    the table has none. A directory that is not a ``date=YYYY-MM-DD`` one is added to ``skipped``
    (ignored without the list). A table directory that cannot be listed raises ``OSError``."""
    if fs.get_file_info(table_dir).type == pafs.FileType.NotFound:
        bucket = table_dir.split("/", 1)[0]
        if fs.type_name == "s3" and fs.get_file_info(bucket).type == pafs.FileType.NotFound:
            raise FileNotFoundError(f"the bucket {bucket!r} does not exist (NO_SUCH_BUCKET)")  # not an empty table
        return []
    days = []
    for entry in sorted(fs.get_file_info(pafs.FileSelector(table_dir)), key=lambda e: e.base_name):
        if not is_data(entry.base_name) or entry.type != pafs.FileType.Directory:
            continue
        try:
            if not entry.base_name.startswith(PARTITION_PREFIX):
                raise ValueError("no date= prefix")
            days.append((date.fromisoformat(entry.base_name[len(PARTITION_PREFIX):]), entry.path))
        except ValueError:
            if skipped is not None:
                skipped.append(UnreadableFile(entry.path, "not a date=YYYY-MM-DD partition directory"))
    return sorted(days)


def partitions_between(fs: pafs.FileSystem, table_dir: str, first: date | None, last: date | None,
                       skipped: list[UnreadableFile] | None = None) -> list[tuple[date, str]]:
    """:func:`partitions` from ``first`` to ``last`` (inclusive; None = open)."""
    return [(day, directory) for day, directory in partitions(fs, table_dir, skipped)
            if not ((first and day < first) or (last and day > last))]


def partition_files(fs: pafs.FileSystem, directory: str) -> list[str]:
    """The data files of one partition directory, by name, without those a compacted file there
    replaces; ``OSError`` when it cannot be listed."""
    listing = fs.get_file_info(pafs.FileSelector(directory))
    names = [entry.base_name for entry in sorted(listing, key=lambda e: e.base_name)
             if entry.type == pafs.FileType.File and is_data(entry.base_name)]
    replaced: set[str] = set()
    for name in names:
        if name.startswith(COMPACTED_PREFIX):
            replaced |= replaced_by(fs, f"{directory}/{name}")
    return [f"{directory}/{name}" for name in names if name not in replaced]


def replaced_by(fs: pafs.FileSystem, path: str) -> frozenset[str]:
    """The names of the files a compacted file replaces (from its footer); none when it cannot
    be read (then it is reported as unreadable, and the files it was to replace stay data)."""
    known = _REPLACED.get(path)
    if known is not None:
        return known
    try:
        with fs.open_input_file(path) as source:
            metadata = pq.ParquetFile(source).schema_arrow.metadata or {}
        names = frozenset(json.loads(metadata[REPLACES_KEY]))
    except (OSError, pa.ArrowException, KeyError, ValueError):
        return frozenset()
    if len(_REPLACED) > 10_000:
        _REPLACED.clear()
    _REPLACED[path] = names
    return names


def vanished(fs: pafs.FileSystem, path: str) -> bool:
    """Whether a file listed a moment ago is gone (a compaction or retention deleted it)."""
    try:
        gone: bool = fs.get_file_info(path).type == pafs.FileType.NotFound
        return gone
    except OSError:
        return False


def each_file(fs: pafs.FileSystem, directory: str, read: Callable[[str], Any]) -> list[tuple[str, Any]]:
    """``(path, read(path))`` for each data file of a partition; ``read`` raises
    :class:`UnreadableFileError` for a file it cannot read, given back as the result. When a listed
    file has vanished (swapped by a compaction), the partition is listed and read again; a
    partition directory that vanished (expired) has no files."""
    for attempt in range(LISTING_ATTEMPTS):
        try:
            paths = partition_files(fs, directory)
        except FileNotFoundError:
            return []
        results: list[tuple[str, Any]] = []
        for path in paths:
            try:
                results.append((path, read(path)))
            except UnreadableFileError as error:
                if attempt + 1 < LISTING_ATTEMPTS and vanished(fs, path):
                    break
                results.append((path, error))
        else:
            return results
    return results


def data_files(fs: pafs.FileSystem, table_dir: str, first: date | None, last: date | None,
               skipped: list[UnreadableFile]) -> list[str]:
    """Data files of the partitions from ``first`` to ``last`` (inclusive; None = open), in order.
    A partition that cannot be listed is added to ``skipped``."""
    files = []
    for _, directory in partitions_between(fs, table_dir, first, last, skipped):
        try:
            files.extend(partition_files(fs, directory))
        except OSError as error:
            skipped.append(UnreadableFile(directory, one_line(error)))
    return files


# --- reading as a DataFrame ------------------------------------------------------------------------

def read_table_with_problems(path: str, table: str, *, since: Any = None, until: Any = None,
                             cluster: str | Iterable[str] | None = None, columns: list[str] | None = None,
                             filesystem: pafs.FileSystem | None = None,
                             where: Mapping[str, Any] | None = None) -> LakeRead:
    """Rows of ``table`` with ``since <= time < until`` (epoch seconds or aware datetimes), of
    ``cluster`` (a name or several), whose columns equal ``where``'s values (e.g. one group of
    thousands: filtered in the scan), as a DataFrame of ``columns`` (default: all, in schema order)
    ordered by ``time``, plus the files that could not be read and why.

    Only ``date=`` partitions that can hold the range are listed. No ``date`` column: use ``time``.
    Timestamps are ``datetime64[ns, UTC]``; int and bool columns are pandas nullable dtypes
    (``Int32``, ``Int64``, ``boolean``); floats are ``float64`` with NaN for null; strings are
    ``object``. A missing table is an empty frame with the same columns and dtypes. An unreachable
    lake (the table directory cannot be listed) raises ``OSError``."""
    schema = known_table_schema(table)
    wanted = list(columns) if columns is not None else schema.names
    unknown = [name for name in [*wanted, *(where or {})] if name not in schema.names]
    if unknown:
        raise ValueError(f"lake table {table!r} has no column {', '.join(map(repr, unknown))}")
    fs, base = resolve(path, filesystem)
    low = None if since is None else to_micros(since)
    high = None if until is None else to_micros(until)
    condition = _condition(low, high, cluster, {name: pa.scalar(value, schema.field(name).type)
                                                for name, value in (where or {}).items()})
    for attempt in range(LISTING_ATTEMPTS):
        skipped: list[UnreadableFile] = []
        files = data_files(fs, f"{base}/{table}", _day(low), _day(high), skipped)
        pieces = _scan_files(fs, files, schema, wanted, condition, skipped)
        if attempt + 1 == LISTING_ATTEMPTS or not any(vanished(fs, problem.path) for problem in skipped):
            break  # else a compaction swapped files while they were read: list them again
    data = pa.concat_tables(pieces) if pieces else schema.empty_table().select(wanted)
    if "time" in wanted:
        data = data.sort_by("time")
    frame = data.to_pandas(types_mapper=_pandas_types().get, coerce_temporal_nanoseconds=True)
    return LakeRead(frame, skipped)


def read_table(path: str, table: str, *, since: Any = None, until: Any = None,
               cluster: str | Iterable[str] | None = None, columns: list[str] | None = None,
               filesystem: pafs.FileSystem | None = None) -> pd.DataFrame:
    """:func:`read_table_with_problems` that logs each skipped file as a warning."""
    frame, skipped = read_table_with_problems(path, table, since=since, until=until, cluster=cluster,
                                              columns=columns, filesystem=filesystem)
    for problem in skipped:
        LOG.warning("lake: skipped %s", problem)
    return frame


def _pandas_types() -> dict[pa.DataType, Any]:
    """Nullable pandas dtypes, so a column's dtype does not depend on whether this read had a null."""
    import pandas as pd

    return {pa.int32(): pd.Int32Dtype(), pa.int64(): pd.Int64Dtype(), pa.bool_(): pd.BooleanDtype()}


def _day(micros: int | None) -> date | None:
    return None if micros is None else (EPOCH + micros * MICROSECOND).date()


def _condition(low: int | None, high: int | None, cluster: str | Iterable[str] | None,
               equal: dict[str, pa.Scalar] | None = None) -> ds.Expression | None:
    import pyarrow.dataset as ds

    parts = [ds.field(name) == value for name, value in (equal or {}).items()]
    if low is not None:
        parts.append(ds.field("time") >= pa.scalar(low, TIME))
    if high is not None:
        parts.append(ds.field("time") < pa.scalar(high, TIME))
    if cluster is not None:
        names = [cluster] if isinstance(cluster, str) else list(cluster)
        parts.append(ds.field("cluster").isin(names))
    condition = None
    for part in parts:
        condition = part if condition is None else condition & part
    return condition


def _scan_files(fs: pafs.FileSystem, files: list[str], schema: pa.Schema, columns: list[str],
                condition: ds.Expression | None, skipped: list[UnreadableFile]) -> list[pa.Table]:
    """Read all files in one scan; if that fails, file by file, skipping the unreadable ones.
    Files written before a column was added read that column as null (``schema`` is explicit)."""
    import pyarrow.dataset as ds

    def scan(paths: list[str], found: list[UnreadableFile]) -> pa.Table:
        dataset = ds.dataset(paths, schema=schema, format="parquet", filesystem=fs)
        fragments = []
        for fragment in dataset.get_fragments():  # the footers, read once (the scan keeps them)
            problem = schema_problem(fragment.physical_schema, schema)
            if problem is None:
                fragments.append(fragment)
            else:
                found.append(UnreadableFile(fragment.path, problem))
        kept = ds.FileSystemDataset(fragments, schema, ds.ParquetFileFormat(), fs)
        return kept.to_table(columns=columns, filter=condition)

    if not files:
        return []
    found: list[UnreadableFile] = []
    try:
        table = scan(files, found)
        skipped.extend(found)
        return [table]
    except Exception:  # noqa: BLE001 - find the bad files one by one
        pass
    pieces = []
    for path in files:
        found = []
        try:
            pieces.append(scan([path], found))
            skipped.extend(found)
        except Exception as error:  # noqa: BLE001 - a bad file must not hide the good ones
            skipped.append(UnreadableFile(path, one_line(error)))
    return pieces


def schema_problem(present: pa.Schema, contract: pa.Schema) -> str | None:
    """Why a file of schema ``present`` is not a file of the table of schema ``contract`` (a
    column of the contract stored as another kind of value: ``time`` as text), or None. A column
    the file lacks (written before it was added) and a timestamp unit or integer width of another
    writer are no problem: they read as null, or cast."""
    for name in contract.names:
        index = present.get_field_index(name)
        if index < 0:
            continue
        stored, wanted = present.field(index).type, contract.field(name).type
        if _kind(stored) != _kind(wanted):
            return f"not a file of this table (column {name} is {stored}, its schema has {wanted})"
    return None


def _kind(kind: pa.DataType) -> str:
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    for name, test in (("timestamp", pa.types.is_timestamp), ("integer", pa.types.is_integer),
                       ("float", pa.types.is_floating), ("bool", pa.types.is_boolean),
                       ("string", lambda t: pa.types.is_string(t) or pa.types.is_large_string(t))):
        if test(kind):
            return name
    return str(kind)


# --- reading as Arrow, file by file (the SLO job, on the driver and in Spark tasks) ----------------

def read_file(fs: pafs.FileSystem, path: str, schema: pa.Schema, columns: list[str] | None = None,
              clusters: list[str] | None = None, dictionary: bool = False,
              times: tuple[int, int] | None = None) -> pa.Table:
    """One file as ``columns`` of the contract ``schema`` (a column missing from an older file
    reads as null; with ``dictionary``, string columns stay dictionary-encoded), only the rows of
    ``clusters`` when given. With ``times`` (epoch microseconds ``[low, high)``), only its row
    groups whose ``time`` statistics can hold such a time (a superset of those rows: the others
    of such a group are read too; a group without statistics is read).
    :class:`UnreadableFileError` when it cannot be read."""
    columns = list(columns or schema.names)
    wanted = arrow_schema(schema, columns, dictionary)
    strings = [f.name for f in wanted if pa.types.is_dictionary(f.type)]
    try:
        with fs.open_input_file(path) as source:
            present = pq.ParquetFile(source, read_dictionary=strings)
            problem = schema_problem(present.schema_arrow, schema)
            if problem is not None:
                raise UnreadableFileError(UnreadableFile(path, problem))
            names = [name for name in columns if name in present.schema_arrow.names]
            groups = None if times is None else row_groups_within(present, *times)
            table = present.read(columns=names) if groups is None else present.read_row_groups(groups, columns=names)
    except (OSError, pa.ArrowException) as error:
        raise UnreadableFileError(UnreadableFile(path, one_line(error))) from None
    try:
        table = pa.table({f.name: table.column(f.name).cast(f.type) if f.name in names
                          else pa.nulls(table.num_rows, f.type) for f in wanted}, schema=wanted)
    except pa.ArrowException as error:  # a value the contract's type cannot hold
        raise UnreadableFileError(UnreadableFile(path, one_line(error))) from None
    if clusters and "cluster" in columns:
        table = table.filter(pc.is_in(table.column("cluster"), value_set=pa.array(clusters)))
    return table


_MICROS_PER_UNIT = {"milliseconds": 1_000, "microseconds": 1, "nanoseconds": 0.001}


def row_groups_within(parquet: pq.ParquetFile, low: int, high: int) -> list[int] | None:
    """The row groups of a file whose ``time`` statistics overlap ``[low, high)`` (epoch
    microseconds); None (read all) when the file has no ``time`` column of a known unit."""
    if "time" not in parquet.schema.names:  # the lake's schemas are flat: a leaf per column
        return None
    index = parquet.schema.names.index("time")
    try:
        unit = json.loads(parquet.schema.column(index).logical_type.to_json()).get("timeUnit")
    except ValueError:
        return None
    scale = _MICROS_PER_UNIT.get(unit)
    if scale is None:
        return None
    groups = []
    for group in range(parquet.metadata.num_row_groups):
        stats = parquet.metadata.row_group(group).column(index).statistics
        if stats is None or not stats.has_min_max or (stats.max_raw * scale >= low and stats.min_raw * scale < high):
            groups.append(group)
    return groups


def arrow_schema(schema: pa.Schema, columns: list[str], dictionary: bool = False) -> pa.Schema:
    """``columns`` of ``schema``; with ``dictionary``, string columns dictionary-encoded."""
    fields = [schema.field(name) for name in columns]
    if dictionary:
        fields = [f.with_type(pa.dictionary(pa.int32(), pa.string())) if f.type == pa.string() else f for f in fields]
    return pa.schema(fields)


def read_days(lake: str, table: str, first: date | None, last: date | None, *, columns: list[str] | None = None,
              clusters: list[str] | None = None, dictionary: bool = False,
              files: Callable[[str], bool] | None = None, unreadable: list[UnreadableFile] | None = None,
              filesystem: pafs.FileSystem | None = None, times: tuple[int, int] | None = None) -> pa.Table:
    """Rows of the date partitions ``first..last`` (inclusive; None = open) that exist, as an Arrow
    table of the contract schema's ``columns`` (see :func:`read_file`; ``times`` skips the row
    groups that cannot hold a time of that range). ``files(name) -> bool`` picks files by name.
    A file that cannot be read is skipped and added to ``unreadable``; without that list it raises
    :class:`UnreadableFileError`. A directory that cannot be listed raises ``OSError``."""
    fs, base = resolve(lake, filesystem)
    schema = SCHEMAS[table]
    wanted = list(columns or schema.names)
    pieces = []

    def read(path: str) -> pa.Table | None:
        if files is None or files(path.rsplit("/", 1)[-1]):
            return read_file(fs, path, schema, wanted, clusters, dictionary, times)
        return None

    for _, directory in partitions_between(fs, f"{base}/{table}", first, last):
        for _, result in each_file(fs, directory, read):
            if isinstance(result, UnreadableFileError):
                if unreadable is None:
                    raise result
                unreadable.append(result.file)
            elif result is not None:
                pieces.append(result)
    return pa.concat_tables(pieces) if pieces else arrow_schema(schema, wanted, dictionary).empty_table()


def count_rows(lake: str, table: str, first: date, last: date, unreadable: list[UnreadableFile] | None = None,
               filesystem: pafs.FileSystem | None = None) -> int:
    """Rows in the date partitions ``first..last`` (from the Parquet footers, no data read).
    Unreadable files: see :func:`read_days`."""
    fs, base = resolve(lake, filesystem)
    total = 0
    for _, directory in partitions_between(fs, f"{base}/{table}", first, last):
        for _, result in each_file(fs, directory, lambda path: footer_rows(fs, path, SCHEMAS[table])):
            if isinstance(result, UnreadableFileError):
                if unreadable is None:
                    raise result
                unreadable.append(result.file)
            else:
                total += result
    return total


def footer_rows(fs: pafs.FileSystem, path: str, schema: pa.Schema | None = None) -> int:
    """Rows of one Parquet file, from its footer; :class:`UnreadableFileError` when it cannot be
    read, or is not a file of the table of ``schema`` (:func:`schema_problem`)."""
    try:
        with fs.open_input_file(path) as source:
            parquet = pq.ParquetFile(source)
            problem = None if schema is None else schema_problem(parquet.schema_arrow, schema)
            rows: int = parquet.metadata.num_rows
    except (OSError, pa.ArrowException) as error:
        raise UnreadableFileError(UnreadableFile(path, one_line(error))) from None
    if problem is not None:
        raise UnreadableFileError(UnreadableFile(path, problem))
    return rows


def time_bound(lake: str, table: str, clusters: list[str] | None, *, newest: bool,
               unreadable: list[UnreadableFile] | None = None, filesystem: pafs.FileSystem | None = None) -> int | None:
    """The newest (or oldest) ``time`` of ``table`` (of ``clusters``, default all) as epoch
    microseconds, from its last (first) non-empty partition; None for an empty table.
    Unreadable files: see :func:`read_days`."""
    fs, base = resolve(lake, filesystem)
    days = [day for day, _ in partitions(fs, f"{base}/{table}")]
    for day in reversed(days) if newest else days:
        times = read_days(lake, table, day, day, columns=["time", "cluster"] if clusters else ["time"],
                          clusters=clusters, unreadable=unreadable, filesystem=filesystem).column("time")
        if len(times) and times.null_count < len(times):
            bound = pc.max(times) if newest else pc.min(times)
            micros: int = bound.cast(pa.int64()).as_py()
            return micros
    return None


# --- reporting -------------------------------------------------------------------------------------

def record_unreadable(path: str, problems: Iterable[UnreadableFile], *, now: float | None = None,
                      filesystem: pafs.FileSystem | None = None) -> list[UnreadableFile]:
    """Write a ``lake_gap`` row for each unreadable file not recorded before (its reason is the
    key: a file still unreadable on the next run is not recorded again); those newly recorded.
    Never raises for a lake that cannot be written (the rows are then not recorded, and logged)."""
    problems = list({str(p): p for p in problems if p.table in SCHEMAS}.values())
    if not problems:
        return []
    try:
        known = set(read_table_with_problems(path, GAP_TABLE, columns=["reason"], filesystem=filesystem)
                    .frame["reason"].dropna())
    except OSError as error:
        LOG.warning("lake: cannot read %s to record unreadable files: %s", GAP_TABLE, one_line(error))
        return []
    fresh = [p for p in problems if f"{UNREADABLE_REASON}{p}" not in known]
    if fresh:
        writer = LakeWriter(path, filesystem=filesystem)
        writer.append(GAP_TABLE, [p.gap_row(time.time() if now is None else now) for p in fresh])
        if not writer.flush().ok:
            LOG.warning("lake: could not record %d unreadable file(s): %s", len(fresh), writer.last_error)
            return []
    return fresh
