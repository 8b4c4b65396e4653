"""Shared drawing: coloured health tiles, Plotly charts, the freshness banner, every table (from
its columns' spec, ``dashboard/services/columns.py``), the pager and the searchable, sortable,
paged list above it.
Pages compose these; nothing here reads data. Chart titles and the names in a chart (legend,
categories, hover) are text: Plotly would read ``<a href>`` and ``<b>`` in them."""

from __future__ import annotations

from html import escape
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
import streamlit as st

from dashboard import literal
from dashboard.services.columns import Column
from dashboard.services.health import CRIT, INFO, OK, UNKNOWN, WARN, Freshness, Tile, refused_age
from dashboard.services.paging import DEFAULT_PAGE_SIZE, Page, search_sort_page

COLOURS = {OK: "#1b7f3b", WARN: "#b7791f", CRIT: "#c53030", UNKNOWN: "#718096", INFO: "#2b6cb0"}
STATE_COLOURS = {"RUNNING": "#38a169", "REBALANCING": "#dd6b20", "ERROR": "#c53030", "PENDING_ERROR": "#c53030",
                 "NOT_RUNNING": "#718096", "UNREACHABLE": "#4a5568", "PENDING_SHUTDOWN": "#a0aec0",
                 "CREATED": "#90cdf4", "DEGRADED": "#d69e2e",
                 # Streams groups (KIP-1071) and their members
                 "Stable": "#38a169", "Assigning": "#dd6b20", "Reconciling": "#dd6b20", "NotReady": "#c53030",
                 "Empty": "#718096", "Dead": "#4a5568", "Left": "#a0aec0"}
_TILE_CSS = """<style>
.kp-tile{border-radius:8px;padding:10px 14px;color:#fff;min-height:92px;margin-bottom:8px}
.kp-tile .kp-label{font-size:0.85rem;opacity:.9}.kp-tile .kp-value{font-size:1.6rem;font-weight:700}
.kp-tile .kp-detail{font-size:0.75rem;opacity:.9}</style>"""


def tiles(items: Sequence[Tile], per_row: int = 5) -> None:
    st.markdown(_TILE_CSS, unsafe_allow_html=True)
    for start in range(0, len(items), per_row):
        for column, tile in zip(st.columns(per_row), items[start:start + per_row]):
            column.markdown(
                f"<div class='kp-tile' style='background:{COLOURS[tile.level]}' title='{escape(tile.level)}'>"
                f"<div class='kp-label'>{escape(tile.label)}</div><div class='kp-value'>{escape(tile.value)}</div>"
                f"<div class='kp-detail'>{escape(tile.level.upper())}"
                f"{' · ' + literal.html_text(tile.detail) if tile.detail else ''}"
                f"</div></div>", unsafe_allow_html=True)


def freshness_banner(fresh: Freshness, cannot_read: str | None = None) -> None:
    """The frame's line under the title: a cluster that refuses kpulse (``cannot_read``, shown as
    text) is one red line with its age beside it, in place of the STALE banner; else the STALE
    banner or the data's age."""
    if cannot_read:
        st.error(literal.markdown(cannot_read), icon=":material/block:")
        st.caption(refused_age(fresh))
    elif fresh.stale:
        st.error(fresh.text, icon=":material/warning:")
    else:
        st.caption(f":green[:material/check_circle:] {fresh.text}")


def line_chart(frame: pd.DataFrame, *, x: str, y: str, color: str | None = None, title: str, y_title: str = "",
               thresholds: Sequence[tuple[float, str]] = (), key: str | None = None, height: int = 300,
               y_unit: str = "") -> None:
    """A time series; ``thresholds`` are (value, label) horizontal lines; ``y_unit`` follows each
    y tick, after Plotly's SI prefix (``B/s``: 3.9kB/s, 12MB/s)."""
    if frame.empty:
        st.info(f"{literal.markdown(title)}: no data in this window")
        return
    figure = px.line(_shown(frame, color), x=x, y=y, color=color, title=literal.html_text(title),
                     height=height)
    for value, label in thresholds:
        figure.add_hline(y=value, line_dash="dash", line_color=COLOURS[CRIT] if value <= 0.1 else COLOURS[WARN],
                         annotation_text=label)
    figure.update_layout(margin=dict(l=10, r=10, t=40, b=10), yaxis_title=y_title, xaxis_title="")
    if y_unit:
        figure.update_yaxes(ticksuffix=y_unit)
    st.plotly_chart(figure, width="stretch", key=key)


def bar_chart(frame: pd.DataFrame, *, x: str, y: str, color: str | None = None, title: str,
              key: str | None = None) -> None:
    if frame.empty:
        st.info(f"{literal.markdown(title)}: no data")
        return
    figure = px.bar(_shown(frame, x, color), x=x, y=y, color=color, barmode="group",
                    title=literal.html_text(title), height=300)
    figure.update_layout(margin=dict(l=10, r=10, t=40, b=10))
    st.plotly_chart(figure, width="stretch", key=key)


def timeline_chart(periods: pd.DataFrame, *, title: str, key: str | None = None) -> None:
    """State periods per instance as coloured bars (REBALANCING, Assigning and Reconciling stand out
    in orange)."""
    if periods.empty:
        st.info(f"{literal.markdown(title)}: no states recorded in this window")
        return
    figure = px.timeline(_shown(periods, "instance"), x_start="begin", x_end="end", y="instance", color="state",
                         title=literal.html_text(title),
                         color_discrete_map=STATE_COLOURS, height=120 + 40 * periods["instance"].nunique())
    figure.update_layout(margin=dict(l=10, r=10, t=40, b=10))
    st.plotly_chart(figure, width="stretch", key=key)


def burn_down_chart(frame: pd.DataFrame, *, title: str, key: str | None = None) -> None:
    if frame.empty:
        st.info(f"{literal.markdown(title)}: no evaluations in this window")
        return
    figure = go.Figure(go.Scatter(x=frame["time"], y=frame["error_budget_remaining"], mode="lines",
                                  name="budget remaining", fill="tozeroy"))
    figure.add_hline(y=0, line_dash="dash", line_color=COLOURS[CRIT], annotation_text="budget exhausted")
    lowest = frame["error_budget_remaining"].min()
    figure.update_layout(title=literal.html_text(title), height=300,
                         margin=dict(l=10, r=10, t=40, b=10), yaxis_tickformat=".0%",
                         yaxis_title="error budget remaining",
                         # 0..100 %, below 0 only when the budget really is overspent
                         yaxis_range=[min(0.0, lowest * 1.1) if lowest == lowest else 0.0, 1.05])
    st.plotly_chart(figure, width="stretch", key=key)


def _shown(frame: pd.DataFrame, *columns: str | None) -> pd.DataFrame:
    """``frame`` with the text of ``columns`` (legend entries, categories) as Plotly shows text."""
    text = [c for c in columns if c is not None and c in frame]
    return frame.assign(**{c: frame[c].map(lambda v: literal.html_text(v) if isinstance(v, str) else v)
                           for c in text})


def table(frame: pd.DataFrame, columns: Sequence[Column], *, key: str | None = None,
          row_style: Callable[[pd.Series], list[str]] | None = None) -> None:
    """``frame`` as a table a person reads: only ``columns``, in their order, each under its header
    and unit, formatted, with its help on hovering over the header; the key columns pinned at the
    left; a missing value an empty cell (not "None"). ``row_style``: a pandas Styler rule per row."""
    shown = frame[[column.name for column in columns]]
    st.dataframe(shown.style.apply(row_style, axis=1) if row_style else shown, hide_index=True, width="stretch",
                 key=key, placeholder="", column_order=[column.name for column in columns],
                 column_config={column.name: _column_config(column) for column in columns})


def _column_config(column: Column) -> Any:
    common: dict[str, Any] = {"label": column.label, "help": column.help, "pinned": True if column.key else None}
    if column.kind == "number":
        return st.column_config.NumberColumn(**common, format=column.format, step=column.step)
    if column.kind == "datetime":
        return st.column_config.DatetimeColumn(**common, format=column.format)
    if column.kind == "link":
        return st.column_config.LinkColumn(**common, display_text=column.link_text)
    return st.column_config.Column(**common)


def pager(key: str, matching: int, page_size: int = DEFAULT_PAGE_SIZE) -> int:
    """A page-number input; returns the 1-based page asked for."""
    pages = max(1, -(-matching // page_size))
    if st.session_state.get(key, 1) > pages:  # a narrower search: back to its last page
        st.session_state[key] = pages
    return int(st.number_input(f"page (of {pages})", min_value=1, max_value=pages, value=1, step=1, key=key))


def searched_list(key: str, table: pd.DataFrame, *, sorts: dict[str, str], search_column: str, noun: str,
                  placeholder: str) -> Page:
    """Search box, sort choice, "worst first" toggle and pager over ``table`` (searched, sorted and
    paged on the server: ``dashboard/services/paging.py``), with the caption counting the matches;
    returns the page to show. Widget keys: ``<key>-search``, ``-sort``, ``-desc``, ``-page``."""
    search_col, sort_col, order_col = st.columns([3, 2, 1])
    search = search_col.text_input(f"Search {noun}", key=f"{key}-search", placeholder=placeholder)
    sort = sort_col.selectbox("Sort by", list(sorts), key=f"{key}-sort")
    descending = order_col.toggle("worst first", value=True, key=f"{key}-desc")

    def found(number: int = 1) -> Page:
        return search_sort_page(table, search=search, search_column=search_column, sort_by=sorts[sort],
                                descending=descending and sorts[sort] != search_column, page=number)

    page = found(pager(f"{key}-page", found().matching))
    st.caption(f"{page.matching} of {len(table)} {noun} match · page {page.number} of {page.pages} · "
               f"{DEFAULT_PAGE_SIZE} per page")
    return page
