"""Rolling windows over the minute table: the ``slo_status`` rows (SLI, budget, burn rates, alerts;
the budget arithmetic and its semantics per budgeting method: ``burn.py``).
Pure: an Arrow table of minutes in, an Arrow table of status rows out (NumPy inside; the job runs
it in Spark tasks, one task per shard of entities).

A status row is evaluated at the end ``t`` of a minute and covers the minutes ``[t - w, t)`` of
each window w. Sums come from running totals: sum over ``[t - w, t)`` = total before t - total
before t - w, so every window costs one subtraction per row however long it is.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kpulse.lake.schema import SCHEMAS
from spark_jobs import burn, keys
from spark_jobs.definitions import SloDefinitions

STATUS_COLUMNS = tuple(SCHEMAS["slo_status"].names)
STATUS_SCHEMA = pa.schema([f.with_type(pa.dictionary(pa.int32(), pa.string())) if f.type == pa.string() else f
                           for f in SCHEMAS["slo_status"]])
"""The lake's ``slo_status`` columns, names and labels dictionary-encoded (Parquet stores strings)."""
MINUTE_MICROS = 60_000_000
MINUTES_PER_DAY = 1440


def status(minutes: pa.Table, definitions: SloDefinitions, eval_from: int, eval_to: int) -> pa.Table:
    """Status rows for every SLO and entity at each minute end ``t`` with ``eval_from <= t <= eval_to``
    (epoch minutes) whose minute ``t - 1`` has a row. ``minutes`` (``cluster, slo, entity, minute,
    good, valid``, in any order, null = no data; optionally ``observed``, the minutes with data a
    row stands for, else 1 when ``valid`` is not null) must hold every minute of the longest window
    before ``eval_from`` that exists; minutes without a row count as no data. A row may stand for
    a whole hour at its last minute (``lookback.as_minute_rows``) where no window edge falls inside
    that hour."""
    minutes = minutes.filter(pc.is_in(minutes.column("slo"), value_set=pa.array([s.name for s in definitions.slos])))
    minute = minutes.column("minute").to_numpy()
    if len(minute) == 0:
        return STATUS_SCHEMA.empty_table()
    key, keys = _keys(minutes)
    # Rows in key, then minute order; a window's sum is the difference of two running totals, the
    # earlier one found by binary search: rows may be sparse (minutes missing, or a whole hour
    # rolled up into one row at its last minute), nothing is laid out per minute.
    low = int(minute.min())
    span = int(minute.max()) - low + 2
    composite = key.astype(np.int64) * span + (minute - low + 1)
    order = np.argsort(composite, kind="stable")
    composite, key, minute = composite[order], key[order], minute[order]
    observed = (minutes.column("observed").fill_null(0).to_numpy() if "observed" in minutes.column_names
                else minutes.column("valid").is_valid().to_numpy(zero_copy_only=False))
    totals = {}
    for kind, values in (("good", minutes.column("good").fill_null(0).to_numpy()),
                         ("valid", minutes.column("valid").fill_null(0).to_numpy()),
                         ("observed", observed)):
        # totals[kind][i]: the sum of the first i rows (earlier keys' rows included)
        totals[kind] = np.concatenate([[0.0], np.cumsum(values.astype(np.float64)[order])])

    evaluated = np.flatnonzero((minute >= eval_from - 1) & (minute < eval_to))
    # In order of their UTC day, so that writing one file per date partition needs no sort.
    evaluated = evaluated[np.argsort((minute[evaluated] + 1) // MINUTES_PER_DAY, kind="stable")]
    key, minute, row = key[evaluated], minute[evaluated], evaluated
    by_name = {slo.name: index for index, slo in enumerate(definitions.slos)}
    slo_index = np.array([by_name[name] for name in keys["slo"].to_pylist()], dtype=np.int64)[key]
    window_minutes = np.array([s.window_minutes for s in definitions.slos], dtype=np.int64)[slo_index]
    up_to = {kind: totals[kind][row + 1] for kind in totals}
    base = key.astype(np.int64) * span

    def summed(kinds: tuple[str, ...], length) -> list[np.ndarray]:
        """Sums of the ``length`` minutes up to and including each evaluated row's minute: the
        running total there less the one at the key's last row ``length`` minutes earlier or more."""
        before = np.searchsorted(composite, base + np.maximum(minute - length - low + 1, 0), side="right")
        return [up_to[kind] - totals[kind][before] for kind in kinds]

    sums = {name: tuple(summed(("good", "valid"), length))
            for name, length in {**burn.BURN_WINDOWS, "window": window_minutes}.items()}
    [observed_window] = summed(("observed",), window_minutes)
    observed_minutes = np.round(observed_window).astype(np.int64)
    objective, min_events = _objective(definitions, slo_index, keys["entity"].to_pylist(), key)
    budget = burn.error_budget(objective)
    rates = {name: burn.burn_rate(good, valid, budget) for name, (good, valid) in sums.items()}
    good_window, valid_window = sums["window"]
    timeslices = np.array([s.budgeting_method == "Timeslices" for s in definitions.slos])[slo_index]
    bad_slices = np.round(valid_window - good_window).astype(np.int64)
    allowed = burn.allowed_bad_slices(objective, window_minutes)
    remaining = np.where(timeslices, burn.slice_budget_remaining(bad_slices, allowed),
                         burn.budget_remaining(good_window, valid_window, budget))
    remaining[observed_minutes == 0] = np.nan
    budget_status = burn.budget_status(timeslices, remaining, valid_window, min_events)
    too_few = budget_status == burn.BUDGET_STATUSES.index("too_few_events")
    levels, names = burn.alert_labels()
    met = np.where(too_few, 0, burn.conditions_met(rates, window_minutes))  # below its minimum of events nothing pages
    exhaustion = burn.time_to_exhaustion_seconds(remaining, rates[burn.CURRENT_BURN_WINDOW], window_minutes)
    exhaustion[too_few] = np.nan
    columns = {
        "time": pa.array((minute + 1) * MINUTE_MICROS, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        "cluster": _take(keys["cluster"], key), "slo": _take(keys["slo"], key), "entity": _take(keys["entity"], key),
        "scope": _per_slo(definitions, lambda s: s.scope, slo_index),
        "indicator": _per_slo(definitions, lambda s: s.indicator, slo_index),
        "budgeting_method": _per_slo(definitions, lambda s: s.budgeting_method, slo_index),
        "objective": objective, "window": _per_slo(definitions, lambda s: s.window, slo_index),
        "sli": _nullable(burn.sli(good_window, valid_window)),
        "good_events": np.round(good_window).astype(np.int64), "valid_events": np.round(valid_window).astype(np.int64),
        "error_budget_remaining": _nullable(remaining),
        **{f"burn_rate_{name}": _nullable(rates[name]) for name in [*burn.BURN_WINDOWS, "window"]},
        "time_to_exhaustion_seconds": _nullable(exhaustion),
        "alert": _labels(levels, met), "alert_conditions": _labels(names, met),
        "bad_slices": pa.array(bad_slices, pa.int64(), mask=~timeslices),
        "allowed_bad_slices": pa.array(allowed, pa.float64(), mask=~timeslices),
        "observed_minutes": observed_minutes, "coverage": burn.coverage(observed_minutes, window_minutes),
        "min_events": pa.array(min_events, pa.int64(), mask=timeslices),
        "budget_status": _labels(list(burn.BUDGET_STATUSES), budget_status),
    }
    return pa.table({name: columns[name] for name in STATUS_COLUMNS}, schema=STATUS_SCHEMA)


def _keys(minutes: pa.Table) -> tuple[np.ndarray, dict[str, pa.Array]]:
    """Per row, the index of its ``(cluster, slo, entity)``, and those keys' three parts."""
    names = ("cluster", "slo", "entity")
    key, parts = keys.encode(*(minutes.column(name) for name in names))
    return key, dict(zip(names, parts))


def _objective(definitions: SloDefinitions, slo_index: np.ndarray, entities: list[str],
               key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's objective (its SLO's target, or the override for its entity) and minimum of
    events (the SLO's ``minEvents``, the file's, or the default for that objective)."""
    per_key = np.empty(len(entities))
    least = np.full(len(entities), -1, dtype=np.int64)  # -1: the default for the objective
    key_slo = np.zeros(len(entities), dtype=np.int64)
    key_slo[key] = slo_index
    for index, entity in enumerate(entities):
        slo = definitions.slos[key_slo[index]]
        override = slo.override(entity)
        per_key[index] = override.target if override is not None and override.target is not None else slo.target
        chosen = slo.min_events if slo.min_events is not None else definitions.min_events
        if chosen is not None:
            least[index] = chosen
    least = np.where(least < 0, burn.default_min_events(per_key), least)
    return per_key[key], least[key]


def _take(values: pa.Array, index: np.ndarray) -> pa.Array:
    return keys.expand(index, values)


def _per_slo(definitions: SloDefinitions, value, slo_index: np.ndarray) -> pa.Array:
    return _take(pa.array([value(s) for s in definitions.slos], pa.string()), slo_index)


def _labels(labels: list[str | None], mask: np.ndarray) -> pa.Array:
    """``labels[mask]`` as strings, null where the label is None."""
    present = np.array([label is not None for label in labels])
    dictionary = pa.array([label or "" for label in labels], pa.string())
    return pa.DictionaryArray.from_arrays(pa.array(mask.astype(np.int32), mask=~present[mask]), dictionary)


def _nullable(values: np.ndarray) -> pa.Array:
    """Doubles with NaN (and infinities from a zero budget) as null."""
    return pa.array(values, pa.float64(), mask=~np.isfinite(values))
