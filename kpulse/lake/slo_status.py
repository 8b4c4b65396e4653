"""The newest SLO status, defined once: what the dashboard's SLOs page shows and what the
Prometheus exporter (``exporters/slo_status.py``) serves; and the budget's statuses and words
(``431 of 432 bad minutes left``) that the page, the Overview and ``kpulse slo run`` share.

The SLO job writes one ``slo_status`` row per SLO, entity and evaluated minute. A run may leave a
key out (its entity had no samples in the minutes the run evaluated, a run limited with
``--cluster``), so "the rows at the newest time" is not the newest status of every key.

**The rule.** The newest status of a key ``(cluster, slo, entity)`` is its newest row, as long as
that row is at most :data:`MAX_AGE_SECONDS` older than the newest evaluation of its cluster (the
newest ``time`` of any of the cluster's rows). A key a run skipped keeps its last status for that
long; a key no run evaluates any more (an SLO removed from the definitions, a deleted group)
drops out after it. The age is counted from the cluster's newest evaluation, not from the wall
clock: when the SLO job stops, the exporter keeps serving the last statuses, each with its
evaluation time (``kpulse_slo_evaluation_timestamp_seconds``: alert on its age), instead of
letting the series vanish and the burn-rate alerts resolve; the page, for its part, says the job
is not running once the newest evaluation is 15 minutes old (``dashboard/services/slos.py``).
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any
from collections.abc import Mapping

import pyarrow.fs as pafs

from kpulse.lake import reader
from kpulse.lake.schema import SCHEMAS
from kpulse.lake.store import EPOCH, MICROSECOND

if TYPE_CHECKING:
    import pandas as pd

TABLE = "slo_status"
KEY = ("cluster", "slo", "entity")
"""What one status is about: a row per key is the newest status."""
MAX_AGE_SECONDS = 15 * 60
"""How much older than its cluster's newest evaluation a key's newest row may be and still count."""
BURN_RATE_COLUMNS: tuple[str, ...] = tuple(name for name in SCHEMAS[TABLE].names if name.startswith("burn_rate_"))
"""The burn-rate columns of a status, shortest window first (``burn_rate_<window>``, the last one over
the SLO's whole window)."""


BUDGET_STATUSES = ("ok", "exhausted", "too_few_events", "no_data")
"""``slo_status.budget_status`` (computed by ``spark_jobs/burn.py``): the budget is not overspent
(remaining >= 0, 0 exactly at the objective); overspent (< 0); an Occurrences SLO with fewer valid
events in its window than its minimum (never pages, never exhausted); nothing observed in the window."""
OK, EXHAUSTED, TOO_FEW_EVENTS, NO_DATA = BUDGET_STATUSES


def budget_text(row: Mapping[str, Any]) -> str:
    """Pure. The budget of one status row in words, as the SLOs page, the Overview and ``kpulse slo
    run`` show it beside the percentage: ``431 of 432 bad minutes left`` (Timeslices),
    ``2.5 bad minutes over the 43.2 allowed``, ``too few events to page: 100 of 10,000``
    (Occurrences below its minimum), ``12,345 events`` (Occurrences), ``no data in the window``."""
    status = _value(row.get("budget_status"))
    if status == NO_DATA or _value(row.get("error_budget_remaining")) is None:
        return "no data in the window"
    bad, allowed = _value(row.get("bad_slices")), _value(row.get("allowed_bad_slices"))
    if bad is not None and allowed is not None:
        left = float(allowed) - float(bad)
        if left < 0:
            return f"{_minutes(-left)} bad minutes over the {_minutes(allowed)} allowed"
        return f"{_minutes(left)} of {_minutes(allowed)} bad minutes left"
    events, least = _value(row.get("valid_events")), _value(row.get("min_events"))
    if status == TOO_FEW_EVENTS and events is not None and least is not None:
        return f"too few events to page: {int(events):,} of {int(least):,}"
    return f"{int(events):,} events" if events is not None else ""


def coverage_text(coverage: float) -> str:
    """``0.7%``, or two significant digits below 1 % (``0.0046%`` two minutes into 30 days)."""
    return f"{coverage:.1%}" if coverage >= 0.01 or coverage == 0 else f"{coverage * 100:.2g}%"


def _minutes(value: float) -> str:
    """432 -> ``432``, 43.2 -> ``43.2`` (budgets of a fraction of a minute keep one decimal)."""
    rounded = round(float(value), 1)
    return f"{rounded:,.0f}" if rounded == int(rounded) else f"{rounded:,.1f}"


def _value(value: Any) -> Any:
    """None for null (None, NaN, pandas' NA)."""
    try:
        return None if value is None or value != value else value
    except (TypeError, ValueError):  # pandas.NA refuses comparison
        return None


def newest_status(rows: pd.DataFrame) -> pd.DataFrame:
    """Pure. The newest status of every key among ``slo_status`` rows (the rule above), ordered by
    key. ``rows`` needs ``time``, ``slo`` and ``entity``; without ``cluster`` they are taken as the
    rows of one cluster."""
    import pandas as pd

    if rows.empty:
        return rows.iloc[0:0]
    import numpy as np

    key = [name for name in KEY if name in rows.columns]
    if "cluster" in rows.columns:
        evaluated = rows.groupby("cluster", sort=False)["time"].transform("max")
    else:
        evaluated = rows["time"].max()
    # A row too old to count cannot be the newest row of a key that counts: only the others are
    # grouped (the page reads twice the span it needs), by position, copying only their keys.
    recent = np.flatnonzero((rows["time"] >= evaluated - pd.Timedelta(seconds=MAX_AGE_SECONDS)).to_numpy())
    candidates = rows.iloc[recent, [rows.columns.get_loc(name) for name in [*key, "time"]]]
    if not candidates["time"].is_monotonic_increasing:  # the reader's frames are in time order already
        order = np.argsort(candidates["time"].to_numpy(), kind="stable")
        candidates, recent = candidates.iloc[order], recent[order]
    newest = rows.iloc[recent[~candidates.duplicated(key, keep="last").to_numpy()]]
    return newest.sort_values(key, kind="stable")


def read_newest_status(lake: str, *, filesystem: pafs.FileSystem | None = None) -> reader.LakeRead:
    """The newest status of every key in the lake (:func:`newest_status`), read with pyarrow
    through the lake's reader: only the rows that can count (from :data:`MAX_AGE_SECONDS` before
    the oldest newest evaluation of the clusters evaluated within :data:`MAX_AGE_SECONDS` of the
    lake's newest one). A cluster whose newest evaluation is older than that is left out: its SLO
    job stopped long before the others'. Unreadable files are skipped and listed."""
    skipped: list[reader.UnreadableFile] = []
    newest = reader.time_bound(lake, TABLE, None, newest=True, unreadable=skipped, filesystem=filesystem)
    if newest is None:
        return reader.LakeRead(_read(lake, TABLE, skipped, filesystem), skipped)  # no rows: the empty frame
    max_age = timedelta(seconds=MAX_AGE_SECONDS)
    since = EPOCH + newest * MICROSECOND - max_age
    rows = _read(lake, TABLE, skipped, filesystem, since=since)
    if not rows.empty:
        earliest = rows.groupby("cluster")["time"].max().min().to_pydatetime() - max_age
        if earliest < since:  # a cluster evaluated a little before the newest needs its own rows back to there
            import pandas as pd

            before = _read(lake, TABLE, skipped, filesystem, since=earliest, until=since,
                           cluster=sorted(rows["cluster"].unique()))
            rows = pd.concat([before, rows], ignore_index=True)
    distinct = list({str(problem): problem for problem in skipped}.values())
    return reader.LakeRead(newest_status(rows), distinct)


def _read(lake: str, table: str, skipped: list[reader.UnreadableFile], filesystem: pafs.FileSystem | None,
          **bounds: Any) -> pd.DataFrame:
    frame, problems = reader.read_table_with_problems(lake, table, filesystem=filesystem, **bounds)
    skipped.extend(problems)
    return frame
