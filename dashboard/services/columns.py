"""The columns of a table a person reads: which column of a frame it shows, under what header and
unit ("Lag (s)", "Total lag (records)", "Min ISR"), how its numbers are formatted, what hovering
over the header says (what the value is, and why a cell can be empty), and whether it is a key
column (what a row is about: pinned at the left, before the others). Pure: the services declare
their tables' columns here beside the frames they build, and ``components.table`` draws every
table of the dashboard from them, a missing value as an empty cell.

Frames keep their code names (``max_lag_seconds``): sorting, searching and the tests read those;
only the header a person reads changes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

Kind = Literal["auto", "number", "datetime", "link"]
"""How a column is drawn: ``auto`` as its values are (text, a checkbox for booleans, numbers as they
come), ``number`` with :attr:`Column.format`, ``datetime`` with :attr:`Column.format`, ``link`` a
relative link under :attr:`Column.link_text`."""


@dataclass(frozen=True)
class Column:
    """One column of a table a person reads."""

    name: str
    """The frame's column it shows (its code name: ``lag_seconds_threshold``)."""
    header: str
    """What a person reads, capitalised, without the unit: ``Threshold``."""
    unit: str = ""
    """The unit of its values, shown after the header in parentheses (``s``, ``ms``, ``records``,
    ``B/s``, ``%``, ``UTC``); empty for text, identifiers, offsets and counts whose header names
    what is counted (``Partitions``, ``Members``)."""
    kind: Kind = "auto"
    format: str | None = None
    """Streamlit's number format (``%.1f``, ``bytes``, ``percent``) or datetime format
    (``YYYY-MM-DD HH:mm:ss``); ``None``: as Streamlit shows the type."""
    step: float | None = None
    """A number's precision (``0.00001``: ``percent`` then shows three decimals, 99.987%)."""
    help: str | None = None
    """Shown on hovering over the header (Markdown: never a Kafka-supplied name)."""
    key: bool = False
    """What a row is about (the topic, the group): pinned at the left, before the other columns."""
    link_text: str | None = None
    """For a ``link`` column: the text shown in place of the address."""

    @property
    def label(self) -> str:
        """The header with its unit: ``Lag (s)``."""
        return f"{self.header} ({self.unit})" if self.unit else self.header


def table(*columns: Column) -> tuple[Column, ...]:
    """A table's columns in the order shown: the key columns first (``ValueError`` otherwise, and on a
    column or header named twice)."""
    keys = [column.key for column in columns]
    if keys != sorted(keys, reverse=True):
        raise ValueError(f"key columns must come first: {[c.name for c in columns]}")
    for attribute in ("name", "label"):
        values = [getattr(column, attribute) for column in columns]
        if len(set(values)) != len(values):
            raise ValueError(f"a column {attribute} is used twice: {values}")
    return columns


def of_frame(frame_columns: Iterable[str], catalog: Mapping[str, Column]) -> tuple[Column, ...]:
    """The columns of a frame whose columns vary (the operations' plans and outcomes), each from
    ``catalog``, key columns first, the others in the frame's order. A column the catalog lacks is
    shown under its own name, capitalised (the page stands; ``tests/test_dashboard_tables.py``
    checks that every operation's plan columns are in the catalog)."""
    found = [catalog.get(name) or Column(name, name[:1].upper() + name[1:].replace("_", " "))
             for name in frame_columns]
    return table(*sorted(found, key=lambda column: not column.key))


# Help texts shared by several tables.
EMPTY_WHY_NOT_READ = "Empty: not known; the **Why not read** column or the line above the table says why."
EMPTY_WHY = "Empty: not known; the **Why empty** column says why."
