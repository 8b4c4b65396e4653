"""The SLO job's two kinds of Spark task. Each reads the lake with pyarrow, computes with the pure
transforms (``minutes``, ``windows``) and writes its output to the run's staging area; the driver
replaces the hours of the lake's tables only once every task has succeeded (``job.py``).

1. :func:`count_day`, one task per UTC day of the recomputed range: the day's samples of every
   table the SLOs read (only row groups that can hold a recomputed minute) -> per-minute good/valid
   counts of every SLO and entity (minutes with samples).
2. :func:`evaluate_shard`, one task per shard of ``(cluster, slo, entity)`` keys: the staged counts
   and the stored minutes the windows look back on -> the ``slo_minute`` rows (no-data minutes
   filled in) and the ``slo_status`` rows of its keys.

A task returns a small dict; a lake problem comes back as ``{"error": "one line"}`` rather than
as an exception, so the driver can show it without Spark's traceback around it. Lake files a task
could not read and skipped are in its ``"unreadable"`` list (:class:`kpulse.lake.reader.UnreadableFile`).
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kpulse.errors import KpulseError
from kpulse.lake.reader import UnreadableFile
from spark_jobs import keys, lake_io, lookback, minutes, windows
from spark_jobs.definitions import SloDefinitions
from spark_jobs.indicators import INDICATORS
from spark_jobs.lake_io import Staging, day_of_minute
from spark_jobs.sampling import MINUTE_MICROS

MINUTES_PER_DAY = 1440
SAMPLE_MARGIN_MINUTES = 60
"""Streams samples are read this much before the recomputed range, to see where a rebalance began."""
ROW_GROUP_ROWS = 65_536
"""Rows per row group of the job's outputs (time-ordered): at 20,000 keys about 3 minutes each."""
_WITH_OBSERVED = pa.schema([("cluster", minutes.NAME), ("slo", minutes.NAME), ("entity", minutes.NAME),
                            ("minute", pa.int64()), ("good", pa.int64()), ("valid", pa.int64()),
                            ("observed", pa.int64())])
COUNTS = "_counts"
"""The staged per-minute counts (not a lake table)."""
COUNT_SCHEMA = pa.schema([("slo", minutes.NAME), *minutes.MINUTE_SCHEMA])
COUNT_STAGED = pa.schema([("time", pa.timestamp("us", tz="UTC")), ("slo", pa.string()), ("cluster", pa.string()),
                          ("entity", pa.string()), ("minute", pa.int64()), ("good", pa.int64()), ("valid", pa.int64())])


@dataclass(frozen=True)
class Work:
    """What every task of one run needs (pickled to the executors)."""

    lake: str
    staging: Staging
    definitions: SloDefinitions
    start: int
    end: int
    first: int
    lookback_start: int
    clusters: tuple[str, ...] | None
    shards: int
    """How many shards of keys (a power of two): a key's shard is CRC-32 of its names modulo this."""
    merge: tuple[date, ...] = ()
    """Closed days of ``slo_hour`` inside the lookback still stored by the hour: each shard writes
    its rows of them again as one day-wide file (every update reads the lookback's hours, 24 files
    a day would cost more to open than to read)."""
    backfill: tuple[date, ...] = ()
    """Days of the lookback with ``slo_minute`` but no ``slo_hour`` files (written by a version
    without it): read whole, minute by minute, and their hours written."""


def _one_thread_each() -> None:
    """Spark already runs a task per core: pyarrow's own thread pools would only contend with it."""
    if pa.cpu_count() != 1:
        pa.set_cpu_count(1)
        pa.set_io_thread_count(1)


def count_day(work: Work, day: date) -> dict[str, Any]:
    _one_thread_each()
    try:
        return _count_day(work, day)
    except KpulseError as error:
        return {"error": str(error)}


def _count_day(work: Work, day: date) -> dict[str, Any]:
    day_start = _first_minute(day)
    low, high = max(day_start, work.first), min(day_start + MINUTES_PER_DAY, work.end)
    pieces: list[pa.Table] = []
    read = 0
    unreadable: list[UnreadableFile] = []
    for table in work.definitions.tables:
        margin = SAMPLE_MARGIN_MINUTES if table == "streams_instance" else 0
        rows = lake_io.read_days(work.lake, table, day_of_minute(low - margin), day,
                                 columns=_columns(work.definitions, table), dictionary=True,
                                 clusters=list(work.clusters or ()) or None, unreadable=unreadable,
                                 times=((low - margin) * MINUTE_MICROS, high * MINUTE_MICROS))
        read += rows.num_rows
        for slo in work.definitions.slos:
            if slo.table == table:
                counts = minutes.minute_counts(minutes.samples(rows, slo), slo, low, high)
                pieces.append(counts.add_column(0, "slo", _repeat(slo.name, counts.num_rows)))
    counts = pa.concat_tables(pieces) if pieces else COUNT_SCHEMA.empty_table()
    if counts.num_rows:
        counts = counts.append_column("time", _time(counts.column("minute")))
        key, parts = _keys(counts)
        shard = shard_of(parts, work.shards)[key]
        for number in np.unique(shard):
            work.staging.write(COUNTS, counts.filter(pa.array(shard == number)),
                               f"{day.isoformat()}-{_shard_name(int(number), work.shards)}", compression="lz4")
    return {"day": day.isoformat(), "samples": read, "counts": counts.num_rows, "unreadable": unreadable}


def evaluate_shard(work: Work, shard: int) -> dict[str, Any]:
    _one_thread_each()
    try:
        return _evaluate_shard(work, shard)
    except KpulseError as error:
        return {"error": str(error)}


def _evaluate_shard(work: Work, shard: int) -> dict[str, Any]:
    names = [slo.name for slo in work.definitions.slos]
    unreadable: list = []
    part = _shard_name(shard, work.shards)
    clusters = list(work.clusters or ()) or None
    ranges = lookback.minute_ranges(work.start, work.end, work.lookback_start, work.definitions.window_lengths)
    hours = lake_io.read_days(work.lake, "slo_hour", day_of_minute(work.lookback_start),
                              day_of_minute(work.start - 1), dictionary=True, clusters=clusters,
                              files=lambda name: may_hold(name, shard, work.shards), unreadable=unreadable,
                              times=(lookback.floor_hour(work.lookback_start) * MINUTE_MICROS, work.start * MINUTE_MICROS))
    hours = _own(hours, shard, work.shards)
    hour = np.floor_divide(pc.cast(hours.column("time"), pa.int64()).to_numpy(), MINUTE_MICROS)
    for day in work.merge:  # closed days of slo_hour still stored by the hour, as one file
        begin = _first_minute(day)
        work.staging.write("slo_hour", hours.filter(pa.array((hour >= begin) & (hour < begin + MINUTES_PER_DAY))), part)
    stored, backfilled = _stored_minutes(work, shard, ranges, unreadable)
    if backfilled.num_rows:  # days written by an earlier version, without slo_hour: rolled up now
        _write_output(work, "slo_hour", _as_hour_table(lookback.rollup(backfilled)), part, before=work.start)
        inside = pc.greater_equal(backfilled.column("minute"), work.lookback_start)
        stored = pa.concat_tables([stored, backfilled.filter(inside)])
    if clusters and stored.num_rows:
        stored = stored.filter(pc.is_in(stored.column("cluster"), value_set=pa.array(clusters)))
    gaps = lookback.gap_hours(hour, ranges, work.lookback_start, work.start) & pc.is_in(
        hours.column("slo"), value_set=pa.array(names)).to_numpy(zero_copy_only=False)
    stored = pa.concat_tables([stored.append_column("observed", lookback.observed(stored)),
                               lookback.as_minute_rows(hours.filter(pa.array(gaps))).cast(_WITH_OBSERVED)])
    stored = stored.filter(pc.is_in(stored.column("slo"), value_set=pa.array(names)))
    counts = work.staging.read(COUNTS, COUNT_STAGED, files=lambda name: name.endswith(f"-{part}.parquet"))
    fresh = []
    for slo in work.definitions.slos:
        mine = stored.filter(pc.equal(stored.column("slo"), slo.name))
        known = _pairs(mine)
        counted = counts.filter(pc.equal(counts.column("slo"), slo.name)).select(minutes.MINUTE_SCHEMA.names)
        filled = minutes.dense(counted, work.first, work.end, known)
        fresh.append(filled.add_column(1, "slo", _repeat(slo.name, filled.num_rows)))
    fresh_minutes = pa.concat_tables(fresh)
    fresh_observed = fresh_minutes.append_column("observed", lookback.observed(fresh_minutes))
    every = pa.concat_tables([stored.select(fresh_observed.column_names).cast(fresh_observed.schema), fresh_observed])
    status = windows.status(every, work.definitions, work.start, work.end)
    minute_rows = _as_minute_table(fresh_minutes)
    _write_output(work, "slo_minute", minute_rows, part)
    _write_output(work, "slo_hour", _as_hour_table(lookback.rollup(fresh_minutes)), part)
    _write_output(work, "slo_status", status, part)
    latest = status.filter(pc.equal(pc.cast(status.column("time"), pa.int64()), work.end * MINUTE_MICROS))
    return {"shard": shard, "minute_rows": minute_rows.num_rows, "status_rows": status.num_rows,
            "stored_rows": stored.num_rows, "latest": latest.to_pylist(), "unreadable": unreadable}


def _stored_minutes(work: Work, shard: int, ranges: list[tuple[int, int]],
                    unreadable: list) -> tuple[pa.Table, pa.Table]:
    """The shard's stored ``slo_minute`` rows of ``ranges`` (of its clusters), as ``(cluster, slo,
    entity, minute, good, valid)``, reading only the files and row groups that can hold them; and
    every row (of every cluster) of the days in ``work.backfill``, before ``start``."""
    shards = work.shards
    pieces, filled = [], []
    for low, high in ranges:
        for day in days(low, high):
            if day in work.backfill:  # read whole below
                continue
            day_start = _first_minute(day)

            def wanted(name: str, low=low, high=high, day_start=day_start) -> bool:
                first, end = lake_io.file_minutes(name, day_start)
                return first < high and end > low and may_hold(name, shard, shards)

            rows = lake_io.read_days(work.lake, "slo_minute", day, day, dictionary=True, files=wanted,
                                     clusters=list(work.clusters or ()) or None, unreadable=unreadable,
                                     times=(low * MINUTE_MICROS, high * MINUTE_MICROS))
            pieces.append(_minutes_within(_own(rows, shard, shards), low, high))
    for day in work.backfill:  # the whole day before start: its hours are written whole
        rows = lake_io.read_days(work.lake, "slo_minute", day, day, dictionary=True, unreadable=unreadable,
                                 files=lambda name: may_hold(name, shard, shards))
        filled.append(_minutes_within(_own(rows, shard, shards), 0, work.start))
    empty = _WITH_OBSERVED.remove(len(_WITH_OBSERVED) - 1).empty_table()
    return (pa.concat_tables(pieces) if pieces else empty), (pa.concat_tables(filled) if filled else empty)


def _minutes_within(rows: pa.Table, low: int, high: int) -> pa.Table:
    minute = np.floor_divide(pc.cast(rows.column("time"), pa.int64()).to_numpy(), MINUTE_MICROS)
    inside = (minute >= low) & (minute < high)
    return pa.table({"cluster": rows.column("cluster"), "slo": rows.column("slo"), "entity": rows.column("entity"),
                     "minute": pa.array(minute, pa.int64()), "good": rows.column("good"),
                     "valid": rows.column("valid")}).filter(pa.array(inside))


def _own(rows: pa.Table, shard: int, shards: int) -> pa.Table:
    """The rows of ``rows`` whose key falls in ``shard`` (a file may hold other shards' keys)."""
    if rows.num_rows == 0 or shards == 1:
        return rows
    key, parts = _keys(rows)
    return rows.filter(pa.array((shard_of(parts, shards) == shard)[key]))


def _first_minute(day: date) -> int:
    """The epoch minute ``day`` (UTC) begins at."""
    return (day - date(1970, 1, 1)).days * MINUTES_PER_DAY


def _write_output(work: Work, table: str, rows: pa.Table, part: str, before: int | None = None) -> None:
    """Stage ``rows`` by the hour, but those of whole days that no later update can start in (from
    the run's start to the day of its end less the lateness; with ``before``, rows of earlier
    minutes: the days before that minute's) as one file per day. Rows are in time order, in row
    groups of :data:`ROW_GROUP_ROWS`: an update reads only the row groups around its windows'
    edges (``lookback.py``)."""
    if rows.num_rows == 0:
        return
    rows = rows.sort_by("time") if table != "slo_status" else rows
    if before is None:
        first = -(-work.start // MINUTES_PER_DAY) * MINUTES_PER_DAY
        end = (work.end - work.definitions.lateness_minutes) // MINUTES_PER_DAY * MINUTES_PER_DAY
    else:
        first, end = 0, before // MINUTES_PER_DAY * MINUTES_PER_DAY
    minute = np.floor_divide(pc.cast(rows.column("time"), pa.int64()).to_numpy(), MINUTE_MICROS)
    closed = (minute >= first) & (minute < end)
    if closed.any():
        work.staging.write(table, rows.filter(pa.array(closed)), part, row_group_rows=ROW_GROUP_ROWS)
    if not closed.all():
        work.staging.write(table, rows.filter(pa.array(~closed)), part, hourly=True, row_group_rows=ROW_GROUP_ROWS)


def shard_count(parallelism: int, rows: int, rows_per_shard: int, most: int = 256) -> int:
    """Enough shards for every core and for ``rows_per_shard`` at most each: a power of two."""
    wanted = max(1, parallelism, -(-rows // rows_per_shard))
    return min(1 << (wanted - 1).bit_length(), most)


def shard_of(parts: list[pa.Array], shards: int) -> np.ndarray:
    """The shard of each key (``parts``: the keys' cluster, slo and entity names)."""
    names = zip(*(part.to_pylist() for part in parts))
    return np.array([zlib.crc32("\x00".join(name).encode()) % shards for name in names], dtype=np.int64)


def may_hold(file_name: str, shard: int, shards: int) -> bool:
    """Whether a file written by this job (``...-shard-S-of-N.parquet``) can hold keys of ``shard``
    of ``shards``: with both counts powers of two, only one file of N can; other files might."""
    match = _SHARD_FILE.search(file_name)
    if match is None:
        return True
    written, of = int(match.group(1)), int(match.group(2))
    if of >= shards:
        return written % shards == shard
    return shard % of == written


def days(first_minute: int, end_minute: int) -> list[date]:
    """The UTC days of the minutes ``[first_minute, end_minute)``."""
    first, last = day_of_minute(first_minute), day_of_minute(end_minute - 1)
    return [first + timedelta(days=n) for n in range((last - first).days + 1)]


_SHARD_FILE = re.compile(r"-shard-(\d+)-of-(\d+)\.parquet$")


def _shard_name(shard: int, shards: int) -> str:
    return f"shard-{shard:04d}-of-{shards:04d}"


def _columns(definitions: SloDefinitions, table: str) -> list[str]:
    """The columns of ``table`` its SLOs read."""
    wanted = {"time", "cluster"}.union(*(INDICATORS[s.indicator].columns for s in definitions.slos if s.table == table))
    return [name for name in lake_io.SCHEMAS[table].names if name in wanted]


def _keys(rows: pa.Table) -> tuple[np.ndarray, list[pa.Array]]:
    return keys.encode(*(rows.column(c) for c in ("cluster", "slo", "entity")))


def _pairs(rows: pa.Table) -> list[tuple[str, str]]:
    """The distinct ``(cluster, entity)`` of ``rows``."""
    if rows.num_rows == 0:
        return []
    _, (clusters, entities) = keys.encode(rows.column("cluster"), rows.column("entity"))
    return list(zip(clusters.to_pylist(), entities.to_pylist()))


def _repeat(name: str, count: int) -> pa.Array:
    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(count, dtype=np.int32)), pa.array([name], pa.string()))


def _time(minute) -> pa.Array:
    return pc.cast(pc.multiply(minute, MINUTE_MICROS), pa.timestamp("us", tz="UTC"))


def _as_hour_table(rows: pa.Table) -> pa.Table:
    columns = {"time": _time(rows.column("hour")), "cluster": rows.column("cluster"), "slo": rows.column("slo"),
               "entity": rows.column("entity"), "good": rows.column("good"), "valid": rows.column("valid"),
               "observed": rows.column("observed")}
    return pa.table({name: columns[name] for name in lake_io.SCHEMAS["slo_hour"].names})


def _as_minute_table(rows: pa.Table) -> pa.Table:
    columns = {"time": _time(rows.column("minute")), "cluster": rows.column("cluster"), "slo": rows.column("slo"),
               "entity": rows.column("entity"), "good": rows.column("good"), "valid": rows.column("valid")}
    return pa.table({name: columns[name] for name in lake_io.SCHEMAS["slo_minute"].names})
