"""Lake rows given column by column (what a collector returns for its largest tables)."""

from __future__ import annotations

from typing import Any
from collections.abc import Iterator


class Columns:
    """Rows of one table given column by column, for the tables a cycle writes by the ten
    thousand (``consumer_lag``): one list per column instead of a dict per row, turned into Arrow
    without visiting a row. A value that is not a list (``time``, ``cluster``) is every row's.
    Iterating gives the rows as dicts (what the Kafka sink sends); the lake checks the columns
    against its schema exactly as it checks rows (``kpulse.lake.store.rows_to_arrow``)."""

    __slots__ = ("length", "values")

    def __init__(self, length: int, **values: Any) -> None:
        for name, column in values.items():
            if isinstance(column, list) and len(column) != length:
                raise ValueError(f"column {name!r} has {len(column)} values for {length} rows")
        self.length = length
        self.values = values
        """Column name -> a list of ``length`` values, or one value for every row."""

    def column(self, name: str) -> list[Any]:
        """The column's values, one per row (None for a column not given)."""
        column = self.values.get(name)
        return column if isinstance(column, list) else [column] * self.length

    def __len__(self) -> int:
        return self.length

    def __iter__(self) -> Iterator[dict[str, Any]]:
        names = list(self.values)
        return (dict(zip(names, row)) for row in zip(*(self.column(name) for name in names)))
