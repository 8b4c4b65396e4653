"""Compaction, downsampling and retention of the lake's ``date=`` partitions: what one task of
``kpulse lake compact`` does to one table and day (``spark_jobs/compact_job.py`` runs them).

The swap is one rename (``docs/lake.md``, "Compaction, retention, downsampling"): a partition's files are merged into one
``compacted-<UTC time>-<8 hex>.parquet`` whose footer names every file it replaces
(:data:`kpulse.lake.reader.REPLACES_KEY`); it is written as a ``.``-prefixed temporary, checked
(its row count must equal the sum of the replaced files'), then renamed into the partition. From
that rename on, every reader (:func:`kpulse.lake.reader.partition_files`) takes it instead of the
files it replaces; they are deleted afterwards. A crash before the rename leaves a temporary that
no reader sees; a crash after it leaves replaced files that no reader takes, deleted by the next
run (``clean``). A file written into the partition after the listing (a late flush) is not
replaced: it stays data, and the next run compacts it.

Pure planning (:func:`plan_partition`) is apart from the I/O.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from datetime import date, datetime, UTC
from typing import Any
from collections.abc import Callable, Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from kpulse.config.model import RetentionConfig
from kpulse.errors import KpulseError
from kpulse.lake.reader import (
    COMPACTED_PREFIX, REPLACES_KEY, UnreadableFileError, is_data, partition_files, read_file,
)
from kpulse.lake.schema import SCHEMAS
from kpulse.lake.store import PARTITION_PREFIX

PER_PARTITION_TABLES = ("consumer_lag", "share_partition")
"""Tables with one row per group partition and cycle: ~100,000 rows every 10 s at 10,000 groups."""
DOWNSAMPLED = {"consumer_lag": "consumer_lag_downsampled"}
"""Per-partition table -> the table its rows are folded into, kept after the raw rows expire."""
NOT_COMPACTED = ("slo_minute", "slo_hour", "slo_status")
"""The SLO job replaces these partitions whole and reads them by shard file names: never merged."""
ROW_GROUP_ROWS = 1_000_000
"""Rows gathered (then sorted) before a row group of the compacted file is written."""
SORT_KEYS = ("cluster", "group_id", "topic", "partition", "application_id", "instance", "broker_id", "rule",
             "entity")
"""Columns a compacted file is sorted by (those the table has), then ``time``: the rows of one
partition or entity lie together, which Parquet's dictionary and run-length encodings compress well."""
COMPRESSION = "zstd"


class CompactionError(KpulseError):
    """A partition cannot be compacted (an unreadable file, a row count that does not add up);
    nothing was swapped. One line."""


@dataclass(frozen=True)
class Partition:
    """What a listing of one partition shows."""

    files: tuple[str, ...]
    """Names of its data files (those a compacted file replaces left out)."""
    leftovers: tuple[str, ...] = ()
    """Names of data files a compacted file already replaces (an interrupted run's)."""
    temporaries: tuple[str, ...] = ()
    """Names of an interrupted compaction's temporary files (``.compacted-…tmp``)."""


def retention_days(retention: RetentionConfig, table: str) -> int | None:
    """Days a table's partitions are kept (None: forever)."""
    if table in retention.tables:
        return retention.tables[table]
    return retention.per_partition_days if table in PER_PARTITION_TABLES else retention.days


def plan_partition(table: str, day: date, today: date, partition: Partition, retention: RetentionConfig,
                   downsampled_exists: bool) -> tuple[str, ...]:
    """Pure. What to do with one partition, in order: ``downsample``, then ``expire`` (delete the
    partition) or ``compact`` / ``clean``. Today's partition (the collector writes it) is never
    touched; nor is a partition that already is one file with nothing left over."""
    if day >= today:
        return ()
    actions: list[str] = []
    keep = retention_days(retention, table)
    expired = keep is not None and (today - day).days > keep
    target = DOWNSAMPLED.get(table)
    if target and retention.downsample_minutes > 0 and partition.files:
        target_keep = retention_days(retention, target)
        wanted = target_keep is None or (today - day).days <= target_keep
        if wanted and (not downsampled_exists or len(partition.files) > 1):
            actions.append("downsample")
    if expired:
        return (*actions, "expire")
    if table in NOT_COMPACTED:
        return tuple(actions)
    if len(partition.files) > 1:
        actions.append("compact")
    elif partition.leftovers or partition.temporaries:
        actions.append("clean")
    return tuple(actions)


# --- listing ---------------------------------------------------------------------------------------

def partition_directory(base: str, table: str, day: date) -> str:
    return f"{base}/{table}/{PARTITION_PREFIX}{day.isoformat()}"


def inspect(fs: pafs.FileSystem, directory: str) -> Partition:
    """The data files, leftovers and temporaries of a partition (empty when it does not exist)."""
    try:
        listing = fs.get_file_info(pafs.FileSelector(directory))
    except FileNotFoundError:
        return Partition(())
    names = sorted(e.base_name for e in listing if e.type == pafs.FileType.File)
    data = [name for name in names if is_data(name)]
    visible = [path.rsplit("/", 1)[-1] for path in partition_files(fs, directory)]
    return Partition(files=tuple(visible), leftovers=tuple(n for n in data if n not in visible),
                     temporaries=tuple(n for n in names if n.startswith(f".{COMPACTED_PREFIX}")))


def sizes(fs: pafs.FileSystem, directory: str, names: tuple[str, ...] | list[str]) -> tuple[int, int]:
    """(rows, bytes) of the named files of a partition, from their footers and sizes."""
    rows = size = 0
    for name in names:
        path = f"{directory}/{name}"
        with fs.open_input_file(path) as source:
            rows += pq.ParquetFile(source).metadata.num_rows
        size += fs.get_file_info(path).size or 0
    return rows, size


# --- actions ---------------------------------------------------------------------------------------

@dataclass
class Done:
    """One action on one partition: a ``lake_compaction`` row."""

    table: str
    day: date
    action: str
    files_before: int
    files_after: int
    rows_before: int
    rows_after: int
    bytes_before: int
    bytes_after: int
    seconds: float

    def row(self, run_id: str, now: float) -> dict[str, Any]:
        return {"time": now, "cluster": "*", "run_id": run_id, "table_name": self.table, "day": self.day.isoformat(),
                "action": self.action, "files_before": self.files_before, "files_after": self.files_after,
                "rows_before": self.rows_before, "rows_after": self.rows_after, "bytes_before": self.bytes_before,
                "bytes_after": self.bytes_after, "seconds": round(self.seconds, 3)}


def compact(fs: pafs.FileSystem, base: str, table: str, day: date) -> Done:
    """Merge the partition's data files into one compacted file, swapped in atomically; then
    delete what it replaces. Rows are checked: the new file holds exactly as many as the old ones."""
    began = time.monotonic()
    directory = partition_directory(base, table, day)
    listed = inspect(fs, directory)
    rows_before, bytes_before = sizes(fs, directory, listed.files)
    schema = SCHEMAS[table]
    batches = _batches(fs, directory, listed.files, schema)
    final = _swap_in(fs, directory, schema, (*listed.files, *listed.leftovers), batches, rows_before)
    _delete(fs, directory, (*listed.files, *listed.leftovers, *listed.temporaries))
    rows_after, bytes_after = sizes(fs, directory, [final.rsplit("/", 1)[-1]])
    return Done(table, day, "compact", len(listed.files), 1, rows_before, rows_after, bytes_before, bytes_after,
                time.monotonic() - began)


def clean(fs: pafs.FileSystem, base: str, table: str, day: date) -> Done:
    """Delete what an interrupted run left: replaced files and temporaries (no reader takes them)."""
    began = time.monotonic()
    directory = partition_directory(base, table, day)
    listed = inspect(fs, directory)
    rows, size = sizes(fs, directory, listed.files)
    _delete(fs, directory, (*listed.leftovers, *listed.temporaries))
    return Done(table, day, "clean", len(listed.files), len(listed.files), rows, rows, size, size,
                time.monotonic() - began)


def expire(fs: pafs.FileSystem, base: str, table: str, day: date) -> Done:
    """Delete the partition (retention)."""
    began = time.monotonic()
    directory = partition_directory(base, table, day)
    listed = inspect(fs, directory)
    rows, size = sizes(fs, directory, listed.files)
    fs.delete_dir(directory)
    return Done(table, day, "expire", len(listed.files), 0, rows, 0, size, 0, time.monotonic() - began)


def downsample(fs: pafs.FileSystem, base: str, table: str, day: date, minutes: int) -> Done:
    """Fold the day's rows of a per-partition table into buckets of ``minutes`` (one row per
    cluster, group, topic, partition and bucket: the last values, the largest lag) and swap them
    in as the downsampled table's partition of that day (replacing what an earlier run wrote)."""
    began = time.monotonic()
    source = partition_directory(base, table, day)
    listed = inspect(fs, source)
    rows_before, bytes_before = sizes(fs, source, listed.files)
    folded = fold(_batches(fs, source, listed.files, SCHEMAS[table], sort=False), minutes)
    return _replace_downsampled(fs, base, table, day, folded, len(listed.files), rows_before, bytes_before, began)


def compact_and_downsample(fs: pafs.FileSystem, base: str, table: str, day: date, minutes: int) -> list[Done]:
    """:func:`downsample` and :func:`compact` in one pass over the day's rows (what a closed day of
    ``consumer_lag`` gets): the raw rows are read once, folded and written sorted."""
    began = time.monotonic()
    directory = partition_directory(base, table, day)
    listed = inspect(fs, directory)
    rows_before, bytes_before = sizes(fs, directory, listed.files)
    schema = SCHEMAS[table]
    folder = Folder(minutes)

    def batches() -> Iterator[pa.Table]:
        for batch in _batches(fs, directory, listed.files, schema, sort=False):
            folder.add(batch)
            yield batch.sort_by(_sort_keys(schema))

    final = _swap_in(fs, directory, schema, (*listed.files, *listed.leftovers), batches(), rows_before)
    _delete(fs, directory, (*listed.files, *listed.leftovers, *listed.temporaries))
    rows_after, bytes_after = sizes(fs, directory, [final.rsplit("/", 1)[-1]])
    compacted = Done(table, day, "compact", len(listed.files), 1, rows_before, rows_after, bytes_before, bytes_after,
                     time.monotonic() - began)
    folded = _replace_downsampled(fs, base, table, day, folder.result(), len(listed.files), rows_before,
                                  bytes_before, time.monotonic())
    return [folded, compacted]


def _replace_downsampled(fs: pafs.FileSystem, base: str, table: str, day: date, folded: pa.Table, files: int,
                         rows_before: int, bytes_before: int, began: float) -> Done:
    target_table = DOWNSAMPLED[table]
    target = partition_directory(base, target_table, day)
    fs.create_dir(target, recursive=True)
    existing = inspect(fs, target)
    final = _swap_in(fs, target, SCHEMAS[target_table], (*existing.files, *existing.leftovers),
                     iter([folded]) if folded.num_rows else iter(()), folded.num_rows)
    _delete(fs, target, (*existing.files, *existing.leftovers, *existing.temporaries))
    rows_after, bytes_after = sizes(fs, target, [final.rsplit("/", 1)[-1]])
    return Done(target_table, day, "downsample", files, 1, rows_before, rows_after, bytes_before, bytes_after,
                time.monotonic() - began)


ACTIONS: dict[str, Callable[..., Done]] = {"compact": compact, "clean": clean, "expire": expire}


# --- the swap --------------------------------------------------------------------------------------

def _swap_in(fs: pafs.FileSystem, directory: str, schema: pa.Schema, replaces: tuple[str, ...],
             batches: Iterable[pa.Table], expected_rows: int) -> str:
    """Write ``batches`` as one compacted file replacing ``replaces``; check its rows; rename it
    into place (the swap). Its path."""
    name = f"{COMPACTED_PREFIX}{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{uuid.uuid4().hex[:8]}.parquet"
    final, temporary = f"{directory}/{name}", f"{directory}/.{name}.tmp"
    marked = schema.with_metadata({REPLACES_KEY: json.dumps(sorted(replaces)).encode()})
    try:
        with fs.open_output_stream(temporary) as sink, \
                pq.ParquetWriter(sink, marked, compression=COMPRESSION) as writer:
            for batch in batches:
                writer.write_table(batch.replace_schema_metadata(marked.metadata))
        with fs.open_input_file(temporary) as written:
            rows = pq.ParquetFile(written).metadata.num_rows
        if rows != expected_rows:
            raise CompactionError(f"{directory}: the compacted file holds {rows} rows, the files it replaces "
                                  f"{expected_rows}; nothing was swapped")
        fs.move(temporary, final)
    except BaseException:
        try:
            fs.delete_file(temporary)
        except OSError:
            pass
        raise
    return final


def _delete(fs: pafs.FileSystem, directory: str, names: Iterable[str]) -> None:
    for name in names:
        try:
            fs.delete_file(f"{directory}/{name}")
        except FileNotFoundError:
            pass


def _sort_keys(schema: pa.Schema) -> list[tuple[str, str]]:
    return [(name, "ascending") for name in SORT_KEYS if name in schema.names] + [("time", "ascending")]


def _batches(fs: pafs.FileSystem, directory: str, names: Iterable[str], schema: pa.Schema,
             sort: bool = True) -> Iterator[pa.Table]:
    """The files' rows as tables of about :data:`ROW_GROUP_ROWS` rows (with ``sort``, each sorted
    by the table's keys and time), in the contract schema (older files' missing columns as null)."""
    pending: list[pa.Table] = []
    count = 0
    for name in names:
        try:
            table = read_file(fs, f"{directory}/{name}", schema)
        except UnreadableFileError as error:
            raise CompactionError(f"{error}; the partition is left as it is") from None
        pending.append(table)
        count += table.num_rows
        if count >= ROW_GROUP_ROWS:
            merged = pa.concat_tables(pending)
            yield merged.sort_by(_sort_keys(schema)) if sort else merged
            pending, count = [], 0
    if pending:
        merged = pa.concat_tables(pending)
        yield merged.sort_by(_sort_keys(schema)) if sort else merged


# --- downsampling (pure) ---------------------------------------------------------------------------

_KEYS = ["cluster", "group_id", "topic", "partition", "bucket"]
_LAST = ["committed_offset", "log_end_offset", "lag", "status"]


class Folder:
    """Folds ``consumer_lag`` rows, batch by batch, into ``consumer_lag_downsampled`` rows: per
    cluster, group, topic, partition and bucket of ``minutes``, the count, the last known values
    and the largest lag and time lag. Pure (no I/O); holds one partial row per key and bucket."""

    def __init__(self, minutes: int) -> None:
        self.minutes = minutes
        self._width = minutes * 60_000_000
        self._partials: list[pa.Table] = []
        self._pending = 0
        """Rows of the partials added since the last merge."""
        self._merged = 0
        """Rows of the last merge (the first partial)."""

    def add(self, batch: pa.Table) -> None:
        self._partials.append(_partial(batch, self._width))
        self._pending += self._partials[-1].num_rows
        # Merge once the new partials outweigh what was merged: each row is merged a few times at
        # most (the merged table grows geometrically), not once per batch.
        if self._pending > max(2 * ROW_GROUP_ROWS, self._merged):
            self._partials = [_merge(self._partials)]
            self._merged, self._pending = self._partials[0].num_rows, 0

    def result(self) -> pa.Table:
        schema = SCHEMAS[DOWNSAMPLED["consumer_lag"]]
        if not self._partials:
            return schema.empty_table()
        merged = _merge(self._partials)
        merged = merged.take(pc.sort_indices(merged, [(k, "ascending") for k in _KEYS]))
        return pa.table({
            "time": merged["bucket"].cast(pa.int64()).cast(schema.field("time").type),
            "cluster": merged["cluster"], "group_id": merged["group_id"], "topic": merged["topic"],
            "partition": merged["partition"],
            "bucket_minutes": pa.array(np.full(merged.num_rows, self.minutes, dtype=np.int32)),
            "samples": merged["samples"].cast(pa.int32()),
            "committed_offset": merged["committed_offset"], "log_end_offset": merged["log_end_offset"],
            "lag": merged["lag"], "max_lag": merged["max_lag"], "max_lag_seconds": merged["max_lag_seconds"],
            "status": merged["status"],
        }, schema=schema)


def fold(batches: Iterable[pa.Table], minutes: int) -> pa.Table:
    """All ``batches`` through one :class:`Folder`. Pure."""
    folder = Folder(minutes)
    for batch in batches:
        folder.add(batch)
    return folder.result()


def _partial(rows: pa.Table, width: int) -> pa.Table:
    micros = rows["time"].cast(pa.int64())
    bucket = pc.multiply(pc.divide(micros, pa.scalar(width, pa.int64())), pa.scalar(width, pa.int64()))
    rows = rows.append_column("bucket", bucket)
    if len(micros) > 1 and np.any(np.diff(micros.to_numpy()) < 0):
        rows = rows.sort_by("time")  # "last" follows the row order; a flush's rows are in time order already
    grouped = rows.group_by(_KEYS, use_threads=False).aggregate(
        [("time", "count"), ("time", "max"), *[(name, "last") for name in _LAST], ("lag", "max"),
         ("lag_seconds", "max")])
    return pa.table({**{k: grouped[k] for k in _KEYS}, "samples": grouped["time_count"],
                     "last_time": grouped["time_max"], **{n: grouped[f"{n}_last"] for n in _LAST},
                     "max_lag": grouped["lag_max"], "max_lag_seconds": grouped["lag_seconds_max"]})


def _merge(partials: list[pa.Table]) -> pa.Table:
    rows = pa.concat_tables(partials).sort_by("last_time")
    grouped = rows.group_by(_KEYS, use_threads=False).aggregate(
        [("samples", "sum"), ("last_time", "max"), *[(name, "last") for name in _LAST], ("max_lag", "max"),
         ("max_lag_seconds", "max")])
    return pa.table({**{k: grouped[k] for k in _KEYS}, "samples": grouped["samples_sum"],
                     "last_time": grouped["last_time_max"], **{n: grouped[f"{n}_last"] for n in _LAST},
                     "max_lag": grouped["max_lag_max"], "max_lag_seconds": grouped["max_lag_seconds_max"]})


def run_actions(fs: pafs.FileSystem, base: str, table: str, day: date, actions: tuple[str, ...],
                minutes: int, done: list[Done] | None = None) -> list[Done]:
    """Do ``actions`` (from :func:`plan_partition`) in order; what was done is appended to
    ``done`` as it is done (so a failure part-way keeps the record of what came before)."""
    done = [] if done is None else done
    if actions[:2] == ("downsample", "compact"):
        done += compact_and_downsample(fs, base, table, day, minutes)
        actions = actions[2:]
    for action in actions:
        if action == "downsample":
            done.append(downsample(fs, base, table, day, minutes))
        else:
            done.append(ACTIONS[action](fs, base, table, day))
    return done


def utc_day(epoch_seconds: float) -> date:
    """The UTC date of a time (the ``date=`` partition it belongs to)."""
    return datetime.fromtimestamp(epoch_seconds, UTC).date()
