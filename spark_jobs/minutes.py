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

from typing import Callable, Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kpulse.lag_contract import NOT_CONSUMING, within_lag_threshold
from spark_jobs import keys
from spark_jobs.definitions import SloDefinition

MINUTE_MICROS = 60_000_000
BAD_CONSUMER_STATUSES = NOT_CONSUMING
SAMPLE_SCHEMA = pa.schema([("cluster", pa.string()), ("entity", pa.string()), ("minute", pa.int64()),
                           ("good", pa.float64()), ("valid", pa.float64())])
NAME = pa.dictionary(pa.int32(), pa.string())
"""Names (cluster, entity) in computed tables: dictionary-encoded, as they are repeated on every row."""
MINUTE_SCHEMA = pa.schema([("cluster", NAME), ("entity", NAME), ("minute", pa.int64()),
                           ("good", pa.int64()), ("valid", pa.int64())])


def minute_of(times: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Epoch minutes (int64) of UTC timestamps."""
    return np.floor_divide(pc.cast(times, pa.int64()).to_numpy(zero_copy_only=False), MINUTE_MICROS)


def per_entity(slo: SloDefinition, entity: pa.ChunkedArray, value: Callable, default) -> np.ndarray:
    """``default`` (float, NaN for None) for every row, except rows of an entity whose override
    gives a value (``value(override)``)."""
    result = np.full(len(entity), np.nan if default is None else float(default))
    for override in slo.overrides:
        overridden = value(override)
        if overridden is not None:
            result[_true(pc.equal(entity, override.entity))] = float(overridden)
    return result


def param(slo: SloDefinition, name: str, entity: pa.ChunkedArray) -> np.ndarray:
    return per_entity(slo, entity, lambda o: o.params.get(name), slo.params.get(name))


def _true(condition) -> np.ndarray:
    """A boolean mask: true where ``condition`` is true (null is false)."""
    return pc.fill_null(condition, False).to_numpy(zero_copy_only=False).astype(bool, copy=False)


def _plain(column):
    """A string column, decoded if it is dictionary-encoded."""
    return column.cast(column.type.value_type) if pa.types.is_dictionary(column.type) else column


def _values(column) -> np.ndarray:
    """A numeric column as float64 with NaN for null."""
    return pc.cast(column, pa.float64()).to_numpy(zero_copy_only=False)


def _judged(rows: pa.Table, entity, good: np.ndarray, valid: np.ndarray) -> pa.Table:
    return pa.table({"cluster": rows.column("cluster"), "entity": entity, "minute": minute_of(rows.column("time")),
                     "good": good.astype(np.float64, copy=False), "valid": valid.astype(np.float64, copy=False)})


def _probe_produce_availability(rows: pa.Table, slo: SloDefinition) -> pa.Table:
    produced, errors = _values(rows.column("produced")), _values(rows.column("produce_errors"))
    both = ~np.isnan(produced) & ~np.isnan(errors)
    return _judged(rows, rows.column("cluster"), np.nan_to_num(produced), np.where(both, produced + errors, 0.0))


def _probe_latency(rows: pa.Table, slo: SloDefinition) -> pa.Table:
    entity = rows.column("cluster")
    latency = _values(rows.column("latency_p99_ms"))
    with np.errstate(invalid="ignore"):
        good = latency <= param(slo, "latency_p99_ms_threshold", entity)
    return _judged(rows, entity, good, ~np.isnan(latency))


def _partition_health(rows: pa.Table, slo: SloDefinition) -> pa.Table:
    offline, under_min_isr = _values(rows.column("offline_partitions")), _values(rows.column("under_min_isr_partitions"))
    return _judged(rows, rows.column("cluster"), (offline == 0) & (under_min_isr == 0),
                   ~np.isnan(offline) & ~np.isnan(under_min_isr))


def _consumer_freshness(rows: pa.Table, slo: SloDefinition) -> pa.Table:
    entity = rows.column("group_id")
    threshold = param(slo, "lag_seconds_threshold", entity)
    own = _values(rows.column("lag_seconds_threshold"))
    threshold = np.where(np.isnan(threshold), own, threshold)
    lag = _values(rows.column("max_lag_seconds"))
    partial = _values(rows.column("lag_seconds_unknown_partitions")) > 0  # null (older rows): complete
    with np.errstate(invalid="ignore"):
        good = within_lag_threshold(lag, threshold)
    # a partial worst lag is a lower bound: over the threshold it is bad, under it it tells nothing
    return _judged(rows, entity, good, ~np.isnan(lag) & ~np.isnan(threshold) & ~(partial & good))


def _consumer_progress(rows: pa.Table, slo: SloDefinition) -> pa.Table:
    status = rows.column("status")
    known = _true(pc.is_valid(status))
    bad = _true(pc.is_in(status, value_set=pa.array(BAD_CONSUMER_STATUSES)))
    return _judged(rows, rows.column("group_id"), known & ~bad, known)


def _streams_availability(rows: pa.Table, slo: SloDefinition) -> pa.Table:
    """One sample per application and cycle: good when every expected instance answers and runs;
    while all answer and some are REBALANCING, good for the first ``rebalancing_tolerance_seconds``
    of that rebalance (measured from its first sample), bad after."""
    if rows.num_rows == 0:
        return SAMPLE_SCHEMA.empty_table()
    up = _true(rows.column("up"))
    state = rows.column("client_state")
    instances = pa.table({
        "cluster": _plain(rows.column("cluster")), "entity": _plain(rows.column("application_id")),
        "time": pc.cast(rows.column("time"), pa.int64()),
        "running": (up & _true(pc.equal(state, "RUNNING"))).astype(np.int64),
        "rebalancing": (up & _true(pc.equal(state, "REBALANCING"))).astype(np.int64),
        "expected_instances": rows.column("expected_instances")})
    cycles = (instances.group_by(["cluster", "entity", "time"])
              .aggregate([("running", "sum"), ("rebalancing", "sum"), ("running", "count"),
                          ("expected_instances", "max")])
              .sort_by([("cluster", "ascending"), ("entity", "ascending"), ("time", "ascending")]))
    running, rebalancing = (cycles.column(c).to_numpy() for c in ("running_sum", "rebalancing_sum"))
    count = cycles.column("running_count").to_numpy()
    expected = _values(cycles.column("expected_instances_max"))
    expected = np.where(np.isnan(expected), count, expected)
    healthy = (running + rebalancing == count) & (count >= expected)
    in_rebalance = healthy & (rebalancing > 0)
    times = cycles.column("time").to_numpy()
    entity = cycles.column("entity")
    key = keys.encode(cycles.column("cluster"), entity)[0]
    # A rebalance is a run of consecutive rebalancing cycles of one application; it began at the
    # first of them.
    first_of_run = in_rebalance & ~np.concatenate([[False], in_rebalance[:-1] & (key[1:] == key[:-1])])
    run_start = np.where(first_of_run, np.arange(len(times)), 0)
    np.maximum.accumulate(run_start, out=run_start)  # index of the latest run start at or before each cycle
    began = times[run_start]
    tolerance = param(slo, "rebalancing_tolerance_seconds", entity) * 1_000_000
    with np.errstate(invalid="ignore"):
        within = (times - began) <= tolerance
    good = (healthy & (rebalancing == 0)) | (in_rebalance & within)
    judged = pa.table({"cluster": cycles.column("cluster"), "time": pc.cast(cycles.column("time"),
                                                                           pa.timestamp("us", tz="UTC"))})
    return _judged(judged, entity, good, np.ones(len(good)))


def _broker_saturation(rows: pa.Table, slo: SloDefinition) -> pa.Table:
    entity = pc.cast(rows.column("broker_id"), pa.string())
    idle = _values(rows.column("request_handler_idle_ratio"))
    with np.errstate(invalid="ignore"):
        good = idle >= param(slo, "min_request_handler_idle_ratio", entity)
    return _judged(rows, entity, good, ~np.isnan(idle))


COLUMNS: dict[str, tuple[str, ...]] = {
    "probe_produce_availability": ("produced", "produce_errors"),
    "probe_latency": ("latency_p99_ms",),
    "partition_health_minutes": ("offline_partitions", "under_min_isr_partitions"),
    "consumer_freshness_minutes": ("group_id", "max_lag_seconds", "lag_seconds_threshold",
                                   "lag_seconds_unknown_partitions"),
    "consumer_progress_minutes": ("group_id", "status"),
    "streams_availability_minutes": ("application_id", "up", "client_state", "expected_instances"),
    "broker_saturation_minutes": ("broker_id", "request_handler_idle_ratio"),
}
"""The columns each indicator reads, besides ``time`` and ``cluster``."""

SAMPLERS: dict[str, Callable[[pa.Table, SloDefinition], pa.Table]] = {
    "probe_produce_availability": _probe_produce_availability,
    "probe_latency": _probe_latency,
    "partition_health_minutes": _partition_health,
    "consumer_freshness_minutes": _consumer_freshness,
    "consumer_progress_minutes": _consumer_progress,
    "streams_availability_minutes": _streams_availability,
    "broker_saturation_minutes": _broker_saturation,
}


def samples(rows: pa.Table, slo: SloDefinition) -> pa.Table:
    """The SLO's table rows as ``(cluster, entity, minute, good, valid)`` samples (rows with a null
    time, cluster or entity are dropped: they belong to nothing)."""
    if rows.column("time").null_count:
        rows = rows.filter(pc.is_valid(rows.column("time")))
    judged = SAMPLERS[slo.indicator](rows, slo)
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
    good = np.bincount(slot, weights=sampled.column("good").to_numpy(), minlength=len(present))
    valid = np.bincount(slot, weights=sampled.column("valid").to_numpy(), minlength=len(present))
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
