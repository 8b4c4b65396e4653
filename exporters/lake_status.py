"""The lake writer's state as Prometheus metrics, served by ``kpulse collect`` next to the
snapshot's: whether the lake is being written, so a lake that cannot be written (an S3 outage,
wrong credentials, a full disk) is seen where the rest of kpulse is watched, not only in its log.

    kpulse_lake_write_ok                               1 when the last write wrote every table, 0 when
                                                       one failed (the rows stay buffered); absent
                                                       before the first write
    kpulse_lake_last_write_success_timestamp_seconds   when a write last wrote every table
    kpulse_lake_unwritten_rows                         rows collected and not yet in the lake
    kpulse_lake_dropped_rows_total                     rows dropped from full buffers (each in lake_gap)

A lake not written for ten minutes: ``time() - kpulse_lake_last_write_success_timestamp_seconds > 600``.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from kpulse.lake.store import LakeWriter


class LakeStatusExporter(Collector):
    """Reads the writer's state at each scrape (no I/O)."""

    def __init__(self, writer: LakeWriter) -> None:
        self._writer = writer

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        writer = self._writer
        written_at, error = writer.last_written_at, writer.last_error
        if written_at is not None or error is not None:
            yield GaugeMetricFamily("kpulse_lake_write_ok", "1 when the last lake write wrote every table, "
                                    "0 when one failed (its rows stay buffered)", value=0 if error else 1)
        if written_at is not None:
            yield GaugeMetricFamily("kpulse_lake_last_write_success_timestamp_seconds",
                                    "When a lake write last wrote every table (epoch seconds)", value=written_at)
        yield GaugeMetricFamily("kpulse_lake_unwritten_rows", "Rows collected and not yet in the lake "
                                "(buffered, or being written)", value=writer.unwritten_rows())
        yield CounterMetricFamily("kpulse_lake_dropped_rows", "Rows dropped from full lake buffers, each "
                                  "recorded in lake_gap", value=writer.rows_dropped_total)
