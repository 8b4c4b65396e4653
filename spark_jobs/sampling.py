"""What every SLO indicator's sampler uses: epoch minutes, per-entity parameters, masks, and the
``(cluster, entity, minute, good, valid)`` sample table. Pure."""

from __future__ import annotations

from typing import TYPE_CHECKING
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:
    from spark_jobs.definitions import SloDefinition

MINUTE_MICROS = 60_000_000
SAMPLE_SCHEMA = pa.schema([("cluster", pa.string()), ("entity", pa.string()), ("minute", pa.int64()),
                           ("good", pa.float64()), ("valid", pa.float64())])


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
            result[true(pc.equal(entity, override.entity))] = float(overridden)
    return result


def param(slo: SloDefinition, name: str, entity: pa.ChunkedArray) -> np.ndarray:
    return per_entity(slo, entity, lambda o: o.params.get(name), slo.params.get(name))


def true(condition) -> np.ndarray:
    """A boolean mask: true where ``condition`` is true (null is false)."""
    return pc.fill_null(condition, False).to_numpy(zero_copy_only=False).astype(bool, copy=False)


def plain(column):
    """A string column, decoded if it is dictionary-encoded."""
    return column.cast(column.type.value_type) if pa.types.is_dictionary(column.type) else column


def values(column) -> np.ndarray:
    """A numeric column as float64 with NaN for null."""
    return pc.cast(column, pa.float64()).to_numpy(zero_copy_only=False)


def judged(rows: pa.Table, entity, good: np.ndarray, valid: np.ndarray) -> pa.Table:
    return pa.table({"cluster": rows.column("cluster"), "entity": entity, "minute": minute_of(rows.column("time")),
                     "good": good.astype(np.float64, copy=False), "valid": valid.astype(np.float64, copy=False)})
