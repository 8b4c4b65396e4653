"""SLO status as Prometheus metrics: the newest status of every SLO and entity, as the SLOs page
shows it (one definition: ``kpulse/lake/slo_status.py``).

``SloStatusExporter(lake)`` is a prometheus_client collector: register it next to the collectors'
``SnapshotExporter`` and the same endpoint serves both. It reads the newest ``slo_status`` rows
with pyarrow (no Spark), at most once per ``refresh_seconds``. A key the SLO job's last run
skipped is served from its last row (as on the page) for up to ``MAX_AGE_SECONDS`` after its
cluster's newest evaluation, with that row's ``kpulse_slo_evaluation_timestamp_seconds``. Series
(labels ``cluster, slo, entity``; null values are left out, never exported as zero)::

    kpulse_slo_sli, kpulse_slo_objective, kpulse_slo_error_budget_remaining,
    kpulse_slo_burn_rate{window="5m"|"30m"|"1h"|"2h"|"6h"|"1d"|"3d"|"window"},
    kpulse_slo_time_to_exhaustion_seconds,
    kpulse_slo_alert{severity="page"|"ticket"}  1 when that level is the one met, else 0,
    kpulse_slo_bad_timeslices, kpulse_slo_allowed_bad_timeslices   Timeslices: the budget in one-minute slices,
    kpulse_slo_coverage                          observed minutes / window minutes,
    kpulse_slo_events, kpulse_slo_min_events     valid events in the window (Occurrences: and the
                                                 minimum before it can page),
    kpulse_slo_budget_status{status="ok"|"exhausted"|"too_few_events"|"no_data"}  1 for the row's,
    kpulse_slo_evaluation_timestamp_seconds     when the row was evaluated (staleness check).

Alertmanager pages on ``kpulse_slo_alert{severity="page"} == 1``; an overspent budget is
``kpulse_slo_budget_status{status="exhausted"} == 1`` (never below an Occurrences SLO's minimum of
events), the same rule as the SLOs page and the Overview.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime
from typing import Any
from collections.abc import Callable, Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from kpulse.lake.slo_status import BUDGET_STATUSES, BURN_RATE_COLUMNS, read_newest_status

LOG = logging.getLogger(__name__)
SEVERITIES = ("page", "ticket")
ROW_GAUGES = {
    "sli": ("kpulse_slo_sli", "Good / valid over the SLO window"),
    "objective": ("kpulse_slo_objective", "SLO target"),
    "error_budget_remaining": (
        "kpulse_slo_error_budget_remaining", "Share of the error budget left (Timeslices: 1 - bad / allowed bad "
        "minutes of the whole window; Occurrences: over the observed events); negative when overspent"),
    "time_to_exhaustion_seconds": ("kpulse_slo_time_to_exhaustion_seconds",
                                   "Seconds until the budget is spent at the 1h burn rate"),
    "bad_slices": ("kpulse_slo_bad_timeslices", "Timeslices: bad one-minute slices in the SLO window"),
    "allowed_bad_slices": ("kpulse_slo_allowed_bad_timeslices", "Timeslices: bad one-minute slices the whole window "
                           "allows, (1 - objective) x the window's minutes"),
    "coverage": ("kpulse_slo_coverage", "Minutes of the SLO window with data / the window's minutes"),
    "valid_events": ("kpulse_slo_events", "Valid events (Occurrences) or observed minutes (Timeslices) in the window"),
    "min_events": ("kpulse_slo_min_events", "Occurrences: valid events the window needs before the SLO can page"),
}
"""Status column -> (gauge, help): one value per row, left out when null."""


def latest_rows(lake: str) -> list[dict[str, Any]]:
    """The newest status of every SLO and entity (:func:`kpulse.lake.slo_status.read_newest_status`:
    a key the last run skipped keeps its last row for ``MAX_AGE_SECONDS``), ordered by cluster, SLO
    and entity; nulls are ``None``. A file that cannot be read is skipped (logged; the SLO job
    records it in ``lake_gap``)."""
    frame, skipped = read_newest_status(lake)
    for problem in skipped:  # one bad file must not hide every SLO's status
        LOG.warning("SLO status: skipped unreadable file %s", problem)
    return frame.astype(object).where(frame.notna(), None).to_dict("records")


def families(rows: list[dict[str, Any]]) -> list[GaugeMetricFamily]:
    """The gauges for these status rows."""
    labels = ["cluster", "slo", "entity"]
    made = {column: GaugeMetricFamily(name, text, labels=labels) for column, (name, text) in ROW_GAUGES.items()}
    made.update({
        "burn": GaugeMetricFamily("kpulse_slo_burn_rate", "Error ratio / error budget over a window",
                                  labels=[*labels, "window"]),
        "alert": GaugeMetricFamily("kpulse_slo_alert", "1 when the SRE-workbook burn-rate alert of this severity "
                                   "is the most severe one met", labels=[*labels, "severity"]),
        "budget_status": GaugeMetricFamily("kpulse_slo_budget_status", "1 for the budget's state (exhausted: "
                                           "overspent; too_few_events: Occurrences below its minimum, never "
                                           "pages)", labels=[*labels, "status"]),
        "time": GaugeMetricFamily("kpulse_slo_evaluation_timestamp_seconds", "When the status was evaluated",
                                  labels=labels),
    })
    for row in rows:
        values = [str(row["cluster"]), str(row["slo"]), str(row["entity"])]
        for key in ROW_GAUGES:
            if row.get(key) is not None:
                made[key].add_metric(values, float(row[key]))
        for column in BURN_RATE_COLUMNS:
            if row.get(column) is not None:
                made["burn"].add_metric([*values, column.removeprefix("burn_rate_")], float(row[column]))
        for severity in SEVERITIES:
            made["alert"].add_metric([*values, severity], float(row.get("alert") == severity))
        if row.get("budget_status") is not None:  # rows written before the column existed have none
            for status in BUDGET_STATUSES:
                made["budget_status"].add_metric([*values, status], float(row["budget_status"] == status))
        evaluated = row["time"]
        made["time"].add_metric(values, evaluated.timestamp() if isinstance(evaluated, datetime) else float(evaluated))
    return list(made.values())


class SloStatusExporter(Collector):
    """Serves the newest SLO status from the lake; a lake that cannot be read keeps the last rows."""

    def __init__(self, lake: str, *, refresh_seconds: float = 60.0, clock: Callable[[], float] = time.time):
        self._lake = lake
        self._refresh_seconds = refresh_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._rows: list[dict[str, Any]] = []
        self._read_at = float("-inf")

    def rows(self) -> list[dict[str, Any]]:
        with self._lock:
            now = self._clock()
            if now - self._read_at >= self._refresh_seconds:
                self._read_at = now
                try:
                    self._rows = latest_rows(self._lake)
                except (OSError, ValueError) as error:
                    LOG.warning("SLO status not refreshed from %s: %s", self._lake, error)
            return self._rows

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield from families(self.rows())
