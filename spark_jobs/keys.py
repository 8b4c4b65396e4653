"""Row keys made of several string columns (``cluster, entity`` or ``cluster, slo, entity``) as
small integers, in O(rows): each column is dictionary-encoded on its own, the codes combined, and
the combinations that occur numbered densely. Pure."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def encode(*columns) -> tuple[np.ndarray, list[pa.Array]]:
    """``(ids, parts)``: per row the index of its key (int64), and per column the keys' values
    (``parts[i][ids[r]]`` is row r's value of column i). Null values are encoded as their own
    value (read back as null)."""
    codes, dictionaries = [], []
    for column in columns:
        code, dictionary = _codes(column)
        codes.append(code)
        dictionaries.append(dictionary)
    rows = len(codes[0]) if codes else 0
    combined = np.zeros(rows, dtype=np.int64)
    for code, dictionary in zip(codes, dictionaries):
        combined = combined * max(len(dictionary), 1) + code
    space = 1
    for dictionary in dictionaries:
        space *= max(len(dictionary), 1)
    if space <= 4 * rows + 1_000_000:
        used = np.flatnonzero(np.bincount(combined, minlength=space))
        number = np.full(space, -1, dtype=np.int64)
        number[used] = np.arange(len(used))
        ids = number[combined]
    else:  # a sparse key space: sort instead
        used, ids = np.unique(combined, return_inverse=True)
    parts = []
    rest = used
    for dictionary in reversed(dictionaries):
        size = max(len(dictionary), 1)
        parts.append(dictionary.take(pa.array(rest % size)))
        rest = rest // size
    return ids, parts[::-1]


def _codes(column) -> tuple[np.ndarray, pa.Array]:
    """A column's dictionary codes (int64) and dictionary; a dictionary column (as read from
    Parquet with ``read_dictionary``) keeps its own, without decoding a string."""
    if isinstance(column, pa.ChunkedArray) and pa.types.is_dictionary(column.type) and column.null_count == 0:
        chunks = column.unify_dictionaries().chunks
        if chunks:
            return (np.concatenate([c.indices.to_numpy(zero_copy_only=False).astype(np.int64) for c in chunks]),
                    chunks[0].dictionary.cast(pa.string()))
    if isinstance(column, pa.DictionaryArray) and column.null_count == 0:
        return column.indices.to_numpy(zero_copy_only=False).astype(np.int64), column.dictionary.cast(pa.string())
    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    encoded = pc.dictionary_encode(column.cast(pa.string()), null_encoding="encode")
    return encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64), encoded.dictionary


def expand(ids: np.ndarray, values: pa.Array) -> pa.Array:
    """``values[ids]``, dictionary-encoded (cheap to build and to write; Parquet stores it as
    plain strings with a dictionary page)."""
    return pa.DictionaryArray.from_arrays(pa.array(ids.astype(np.int32, copy=False)), values)
