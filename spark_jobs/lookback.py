"""What an update reads back of its earlier outputs, and the hourly roll-up it writes. Pure.

A status row at the end ``t`` of a minute sums each window ``w`` (the burn windows and the SLO's
own) over the minutes ``[t - w, t)``: the running total through ``t - 1`` less the one through
``t - 1 - w`` (``windows.py``). An update evaluates ``t`` in ``[start, end]``, so of the stored
minutes before ``start`` it needs, per window, only those around ``[start - 1 - w, end - w)``
minute by minute; everything between those edges enters every sum whole, and is read as hours
(``slo_hour``: one row per hour, key and its good, valid and observed minutes), each placed at its
hour's last minute. At 10,000 groups (20,000 keys of the per-group SLOs) a 30-day window is
864 M stored minute rows; an hourly update reads back 29.7 M rows instead (``bench/slo_job.py
--history-days 30``: 21.7 s).

:func:`minute_ranges` are hour-aligned, so the minutes left out are whole hours; a running total
through an edge minute then counts every hour row before it whole and none after it: the sums are
exactly those of the minute rows (``tests/test_slo_lookback.py`` checks this against every minute).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

MINUTES_PER_HOUR = 60
MINUTE_MICROS = 60_000_000
HOUR_COLUMNS = ("cluster", "slo", "entity", "good", "valid", "observed")


def minute_ranges(start: int, end: int, lookback_start: int, lengths: Iterable[int]) -> list[tuple[int, int]]:
    """The stored minutes ``[low, high)`` an update of ``[start, end)`` reads minute by minute
    (epoch minutes, merged, in order): for each window length, the hours around its edges
    ``[start - 1 - w, end - w)``, and the hour before ``start`` (evaluated at ``start``); within
    ``[lookback_start, start)``."""
    wanted = [(start - 1, start)] + [(start - 1 - w, end - w) for w in set(lengths)]
    hours = sorted((max(lookback_start, floor_hour(low)), min(start, _ceil(high))) for low, high in wanted)
    merged: list[tuple[int, int]] = []
    for low, high in hours:
        if low >= high:
            continue
        if merged and low <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], high))
        else:
            merged.append((low, high))
    return merged


def gap_hours(hour_starts: np.ndarray, ranges: list[tuple[int, int]], lookback_start: int, start: int) -> np.ndarray:
    """Whether each hour (its first epoch minute) is read as an hour row: wholly inside
    ``[lookback_start, start)`` and outside every minute range."""
    inside = (hour_starts >= lookback_start) & (hour_starts + MINUTES_PER_HOUR <= start)
    for low, high in ranges:
        inside &= (hour_starts + MINUTES_PER_HOUR <= low) | (hour_starts >= high)
    return inside


def observed(rows: pa.Table) -> pa.Array:
    """1 for a minute with data (``valid`` not null), else 0."""
    return pc.cast(pc.is_valid(rows.column("valid")), pa.int64())


def rollup(rows: pa.Table) -> pa.Table:
    """Minute rows (``cluster, slo, entity, minute, good, valid``, null = no data) -> one row per
    key and hour: ``hour`` (its first epoch minute), the sums of ``good`` and ``valid`` (no data
    as 0) and ``observed``, the minutes with data."""
    if rows.num_rows == 0:
        return pa.table({"cluster": pa.array([], pa.string()), "slo": pa.array([], pa.string()),
                         "entity": pa.array([], pa.string()), "hour": pa.array([], pa.int64()),
                         "good": pa.array([], pa.int64()), "valid": pa.array([], pa.int64()),
                         "observed": pa.array([], pa.int64())})
    minute = rows.column("minute").to_numpy()
    table = pa.table({"cluster": _plain(rows.column("cluster")), "slo": _plain(rows.column("slo")),
                      "entity": _plain(rows.column("entity")),
                      "hour": pa.array(minute - minute % MINUTES_PER_HOUR),
                      "good": rows.column("good").fill_null(0), "valid": rows.column("valid").fill_null(0),
                      "observed": observed(rows)})
    summed = table.group_by(["cluster", "slo", "entity", "hour"], use_threads=False).aggregate(
        [("good", "sum"), ("valid", "sum"), ("observed", "sum")])
    summed = summed.rename_columns([name.removesuffix("_sum") for name in summed.column_names])
    return summed.select(["cluster", "slo", "entity", "hour", "good", "valid", "observed"])


def as_minute_rows(hours: pa.Table) -> pa.Table:
    """Hour rows (``hour`` or ``time``) as rows of the minute table at their hour's last minute,
    with their ``observed`` count (what ``windows.status`` sums)."""
    if "hour" in hours.column_names:
        hour = hours.column("hour").to_numpy()
    else:
        hour = np.floor_divide(pc.cast(hours.column("time"), pa.int64()).to_numpy(), MINUTE_MICROS)
    return pa.table({"cluster": hours.column("cluster"), "slo": hours.column("slo"),
                     "entity": hours.column("entity"), "minute": pa.array(hour + MINUTES_PER_HOUR - 1),
                     "good": hours.column("good"), "valid": hours.column("valid"),
                     "observed": hours.column("observed")})


def _plain(column) -> pa.ChunkedArray:
    return column.cast(pa.string()) if pa.types.is_dictionary(column.type) else column


def floor_hour(minute: int) -> int:
    """The first minute of ``minute``'s hour (epoch minutes)."""
    return minute - minute % MINUTES_PER_HOUR


def _ceil(minute: int) -> int:
    return -(-minute // MINUTES_PER_HOUR) * MINUTES_PER_HOUR
