"""Server-side search, sort and paging of a list, so a page sends the browser one page of rows
whatever the cluster's size (thousands of topics or groups)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

DEFAULT_PAGE_SIZE = 50


@dataclass(frozen=True)
class Page:
    rows: pd.DataFrame
    """The rows of this page, in order."""
    matching: int
    """Rows matching the search, over all pages."""
    number: int
    """1-based page number (clamped to the pages there are)."""
    pages: int


def search_sort_page(frame: pd.DataFrame, *, search: str = "", search_column: str, sort_by: str | None = None,
                     descending: bool = False, page: int = 1, page_size: int = DEFAULT_PAGE_SIZE) -> Page:
    """Rows whose ``search_column`` contains ``search`` (case-insensitive, plain text), sorted by
    ``sort_by`` (nulls last, then by ``search_column``), page ``page`` of ``page_size`` rows."""
    if page_size < 1:
        raise ValueError(f"page size must be >= 1, got {page_size}")
    matching = frame
    needle = search.strip().lower()
    if needle:
        matching = frame[frame[search_column].astype(str).str.lower().str.contains(needle, regex=False)]
    keys = [sort_by, search_column] if sort_by and sort_by != search_column else [search_column]
    matching = matching.sort_values(keys, ascending=[not descending, True][:len(keys)], na_position="last",
                                    kind="stable")
    pages = max(1, -(-len(matching) // page_size))
    number = min(max(1, page), pages)
    start = (number - 1) * page_size
    return Page(matching.iloc[start:start + page_size].reset_index(drop=True), len(matching), number, pages)
