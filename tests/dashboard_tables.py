"""What a table a person reads must look like, checked on what a page sends the browser (an
AppTest ``st.dataframe`` element: its data, its column config, its column order): every header a
person reads (no code name: no ``_``, a capital first), with its unit in parentheses where the
column holds a quantity; the key columns pinned, first; a missing value an empty cell, and where a
column has one, the reason on hovering over its header or in a reason column beside it."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import pandas as pd

QUANTITY_WORDS = frozenset({"lag", "bytes", "size", "seconds", "ms", "minutes", "threshold", "rate", "idle", "ratio",
                            "coverage", "remaining", "sli", "objective", "replayed", "skipped"})
"""A column holds a quantity (its header needs a unit) when a word of its code name is one of these
(time, size, rate, lag, a share), when it holds times, or fractional numbers."""
UNIT = re.compile(r"\S \([^()]+\)$")
"""A header ending with its unit: ``Lag (s)``."""
REASON_HEADERS = re.compile(r"^(Why .+|Error|Partial|Problems)$")
"""Columns that say why other cells of their row are empty (empty themselves when nothing is wrong)."""


@dataclass(frozen=True)
class Shown:
    """One column of a table as the page sends it."""

    name: str
    """The frame's column."""
    header: str
    """What the browser heads it with: the config's label, else the frame's name."""
    help: str | None
    pinned: bool
    values: pd.Series


def shown_columns(element) -> list[Shown]:
    """The columns an AppTest dataframe element shows, in the order shown."""
    config = json.loads(element.proto.columns or "{}")
    data = element.value
    order = list(element.proto.column_order) or [str(c) for c in data.columns]
    settings = {name: config.get(name) or {} for name in order}
    return [Shown(name, settings[name].get("label") or name, settings[name].get("help"),
                  bool(settings[name].get("pinned")), data[name])
            for name in order if not settings[name].get("hidden")]


def holds_quantity(column: Shown) -> bool:
    if pd.api.types.is_bool_dtype(column.values):
        return False
    if set(re.split(r"[_ ]", column.name)) & QUANTITY_WORDS:
        return True
    if pd.api.types.is_datetime64_any_dtype(column.values):
        return True
    if pd.api.types.is_float_dtype(column.values):
        known = column.values.dropna()
        return bool(len(known)) and bool((known != known.round()).any())
    return False


def table_problems(element, where: str = "") -> list[str]:
    """What is wrong with one table a page shows, one line per flaw (empty: nothing)."""
    proto = element.proto
    columns = shown_columns(element)
    problems = []
    if not (proto.HasField("placeholder") and proto.placeholder == ""):
        problems.append("a missing value is not an empty cell (the placeholder is not '')")
    pinned = [column.pinned for column in columns]
    if not any(pinned):
        problems.append("no key column is pinned")
    elif pinned != sorted(pinned, reverse=True):
        problems.append(f"pinned columns are not first: {[c.header for c in columns]}")
    reasons = any(REASON_HEADERS.match(column.header) for column in columns)
    for column in columns:
        header = column.header
        if "_" in header or not (header[:1].isupper() or header[:1].isdigit()):
            problems.append(f"{column.name!r} is headed {header!r}, a code name")
        if holds_quantity(column) and not UNIT.search(header):
            problems.append(f"{column.name!r} holds a quantity but its header {header!r} has no unit")
        missing = bool(column.values.isna().any()) and not pd.api.types.is_bool_dtype(column.values)
        if missing and not REASON_HEADERS.match(header) and not column.help and not reasons:
            problems.append(f"{header!r} has empty cells but neither its help nor a reason column says why")
    return [f"{where}{problem}" for problem in problems]


def page_problems(app, page: str) -> list[str]:
    """The flaws of every table on the page ``app`` shows, each line naming the page and the table's
    headers."""
    found = []
    for element in app.dataframe:
        headers = ", ".join(column.header for column in shown_columns(element))
        found += table_problems(element, f"{page} [{headers}]: ")
    return found
