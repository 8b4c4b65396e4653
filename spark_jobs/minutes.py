"""Per-minute good and valid counts of one SLO, per entity, from the lake's samples. Pure: Arrow
tables in, Arrow tables out (vectorised with pyarrow.compute and NumPy; the job runs these inside
Spark tasks, one task per day).

Three steps:

1. :func:`samples`: each sample row (one collection cycle) becomes ``(cluster, entity, minute,
   good, valid)``, where ``minute`` is the epoch minute of its ``time``. For event indicators
   (Occurrences) good/valid are event counts; for the others a sample is 1/0 good and 1 valid, or
   0 valid when it cannot be judged (a null value is never good).
2. :func:`minute_counts`: one row per entity and minute that has samples. Occurrences sums the
   events; Timeslices makes a minute good (1) when its good/valid samples reach the time-slice
   target, valid 1. A minute whose samples are all unjudgeable has ``good`` and ``valid`` null.
3. :func:`dense`: one row per entity and minute of ``[start, end)``, for every entity seen (from
   its first sample on) or passed as known (from ``start``); a minute without valid samples has
   ``good`` and ``valid`` null (no data), never zero or good.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spark_jobs import keys
from spark_jobs.indicators import INDICATORS
from spark_jobs.sampling import per_entity

if TYPE_CHECKING:
    from spark_jobs.definitions import SloDefinition

NAME = pa.dictionary(pa.int32(), pa.string())
"""Names (cluster, entity) in computed tables: dictionary-encoded, as they are repeated on every row."""
MINUTE_SCHEMA = pa.schema([("cluster", NAME), ("entity", NAME), ("minute", pa.int64()),
                           ("good", pa.int64()), ("valid", pa.int64())])


def samples(rows: pa.Table, slo: SloDefinition) -> pa.Table:
    """The SLO's table rows as ``(cluster, entity, minute, good, valid)`` samples (rows with a null
    time, cluster or entity are dropped: they belong to nothing)."""
    if rows.column("time").null_count:
        rows = rows.filter(pc.is_valid(rows.column("time")))
    judged = INDICATORS[slo.indicator].sampler(rows, slo)
    if judged.column("cluster").null_count or judged.column("entity").null_count:
        judged = judged.filter(pc.and_(pc.is_valid(judged.column("cluster")), pc.is_valid(judged.column("entity"))))
    return judged


def minute_counts(sampled: pa.Table, slo: SloDefinition, start: int, end: int) -> pa.Table:
    """One row per entity and minute of ``[start, end)`` that has samples: ``(cluster, entity,
    minute, good, valid)`` as long counts, null when none of its samples could be judged."""
    minute = sampled.column("minute").to_numpy()
    inside = (minute >= start) & (minute < end)
    if not inside.all():
        sampled, minute = sampled.filter(pa.array(inside)), minute[inside]
    if len(minute) == 0:
        return MINUTE_SCHEMA.empty_table()
    key, (clusters, entities) = keys.encode(sampled.column("cluster"), sampled.column("entity"))
    low = int(minute.min())
    span = int(minute.max()) - low + 1
    cell = key * span + (minute - low)  # one cell per key and minute
    if len(clusters) * span <= 8 * len(cell) + 1_000_000:
        size = len(clusters) * span
        present = np.flatnonzero(np.bincount(cell, minlength=size))
        index = np.full(size, -1, dtype=np.int64)
        index[present] = np.arange(len(present))
        slot = index[cell]
    else:
        present, slot = np.unique(cell, return_inverse=True)
    # weighted: float counts (numpy's stubs say an integer array whatever the weights)
    good: np.ndarray = np.bincount(slot, weights=sampled.column("good").to_numpy(), minlength=len(present))
    valid: np.ndarray = np.bincount(slot, weights=sampled.column("valid").to_numpy(), minlength=len(present))
    key_of, minute_of_cell = present // span, low + present % span
    entity = keys.expand(key_of, entities)
    has_data = valid > 0
    if slo.budgeting_method == "Occurrences":
        good, valid = np.round(good), np.round(valid)
    else:
        target = per_entity(slo, entity, lambda o: o.time_slice_target, slo.time_slice_target)
        # A tiny tolerance so that, e.g., 9 good of 10 samples meets a 0.9 target despite float rounding.
        with np.errstate(divide="ignore", invalid="ignore"):
            good = (good / np.where(has_data, valid, 1) >= target - 1e-9).astype(np.float64)
        valid = np.ones(len(valid))
    return pa.table({"cluster": keys.expand(key_of, clusters), "entity": entity, "minute": minute_of_cell,
                     "good": pa.array(good.astype(np.int64), mask=~has_data),
                     "valid": pa.array(valid.astype(np.int64), mask=~has_data)}, schema=MINUTE_SCHEMA)


def dense(counts: pa.Table, start: int, end: int, known: Iterable[tuple[str, str]] = ()) -> pa.Table:
    """``counts`` (any ``(cluster, entity, minute, good, valid)`` rows, at most one per entity and
    minute) filled to one row per entity and minute of ``[start, end)``: an entity gets rows from
    its first minute on, or from ``start`` when it is ``known``; added minutes are null (no data).
    Rows are ordered by entity, then minute."""
    known = list(known)
    minute = counts.column("minute").to_numpy()
    inside = (minute >= start) & (minute < end)
    if not inside.all():
        counts, minute = counts.filter(pa.array(inside)), minute[inside]
    key, (key_clusters, key_entities) = keys.encode(counts.column("cluster"), counts.column("entity"))
    ids = {pair: index for index, pair in enumerate(zip(key_clusters.to_pylist(), key_entities.to_pylist()))}
    new = [pair for pair in dict.fromkeys(known) if pair not in ids]
    if new:
        key_clusters = pa.concat_arrays([key_clusters, pa.array([c for c, _ in new], pa.string())])
        key_entities = pa.concat_arrays([key_entities, pa.array([e for _, e in new], pa.string())])
        ids.update({pair: len(ids) + n for n, pair in enumerate(new)})
    if len(key_clusters) == 0:
        return MINUTE_SCHEMA.empty_table()
    since = np.full(len(key_clusters), end, dtype=np.int64)
    since[[ids[pair] for pair in known]] = start
    counted = key
    np.minimum.at(since, counted, minute)
    lengths = end - since
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    total = int(lengths.sum())
    key_of_row = np.repeat(np.arange(len(lengths)), lengths)
    minutes = np.arange(total, dtype=np.int64) - np.repeat(offsets - since, lengths)
    good = np.zeros(total, dtype=np.int64)
    valid = np.zeros(total, dtype=np.int64)
    has_data = np.zeros(total, dtype=bool)
    position = offsets[counted] + (minute - since[counted])
    good[position] = counts.column("good").fill_null(0).to_numpy()
    valid[position] = counts.column("valid").fill_null(0).to_numpy()
    has_data[position] = counts.column("valid").is_valid().to_numpy(zero_copy_only=False)
    return pa.table({"cluster": keys.expand(key_of_row, key_clusters),
                     "entity": keys.expand(key_of_row, key_entities),
                     "minute": minutes, "good": pa.array(good, mask=~has_data),
                     "valid": pa.array(valid, mask=~has_data)}, schema=MINUTE_SCHEMA)


def to_minutes(sampled: pa.Table, slo: SloDefinition, start: int, end: int,
               known: Iterable[tuple[str, str]] = ()) -> pa.Table:
    """:func:`minute_counts` then :func:`dense`: every entity's minutes of ``[start, end)``."""
    return dense(minute_counts(sampled, slo, start, end), start, end, known)
