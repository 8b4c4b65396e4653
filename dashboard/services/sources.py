"""Where the dashboard's data comes from: the configuration, the lake tables and the latest
snapshot of each cluster (``<lake>/_snapshots/<cluster>.json``, written by ``kpulse collect``).

Thin I/O only. Every failure a user can meet (unreachable lake, corrupt snapshot, bad config) is a
:class:`DashboardError` whose text is the one line the page shows.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import date
from typing import Any
from collections.abc import Callable

import pandas as pd
import pyarrow.fs as pafs

from kpulse.config import KpulseConfig, load_config
from kpulse.errors import KpulseError
from kpulse.lake.reader import UnreadableFile, read_table_with_problems
from kpulse.lake.store import SNAPSHOT_DIR, resolve, use_credentials
from kpulse.snapshot import Snapshot


class DashboardError(KpulseError):
    """Something the dashboard cannot show; ``str()`` is the one line shown instead."""


def one_line(error: BaseException) -> str:
    """The first line of an error, prefixed by its type unless it is one of kpulse's own."""
    lines = str(error).strip().splitlines()
    text = lines[0] if lines else ""
    if isinstance(error, KpulseError):
        return text or type(error).__name__
    return f"{type(error).__name__}: {text}".rstrip(": ")


@dataclass(frozen=True)
class MissingData:
    """Lake files a read skipped because they could not be read: their rows are not in the frame."""

    table: str
    files: tuple[str, ...]
    """``"<path>: <error>"`` of each."""
    first_day: date | None
    last_day: date | None
    """The UTC dates of the partitions that held them (``None`` when no file was in a ``date=`` one)."""

    @classmethod
    def of(cls, table: str, skipped: list[UnreadableFile]) -> MissingData | None:
        days = sorted(day for day in (problem.day for problem in skipped) if day is not None)
        return cls(table, tuple(map(str, skipped)), days[0] if days else None,
                   days[-1] if days else None) if skipped else None

    def summary(self) -> str:
        """How many files and which period, without the paths (safe to show as Markdown)."""
        period = ("" if self.first_day is None else f" of {self.first_day}" if self.first_day == self.last_day
                  else f" of {self.first_day} to {self.last_day}")
        return (f"{len(self.files)} unreadable lake file(s) skipped: {self.table} rows{period} (UTC) "
                "may be missing here.")

    def first_file(self) -> str:
        """The first file and its error (plain text), and how many more there are."""
        return self.files[0] + (f" (and {len(self.files) - 1} more)" if len(self.files) > 1 else "")

    def line(self) -> str:
        """:meth:`summary` and :meth:`first_file` in one line (for a log)."""
        return f"{self.summary()} {self.first_file()}"


@dataclass(frozen=True)
class TableRead:
    frame: pd.DataFrame
    missing: MissingData | None
    """What the read had to skip; ``None`` when every file was read."""


@dataclass(frozen=True)
class Sources:
    """The configuration and the lake it names. Builds no client and opens no file when created."""

    config: KpulseConfig
    admin_factory: Callable[[dict], Any] | None = field(default=None, compare=False)
    """Builds a cluster's Admin client from its client config; ``None`` = the real one."""
    log_dirs_factory: Callable[[Any], Any] | None = field(default=None, compare=False)
    """Builds the client that answers DescribeLogDirs for a ClusterConfig; ``None`` = kafka-python's."""
    records_reader: Callable[..., Any] | None = field(default=None, compare=False)
    """Reads a group's next records of one partition for the records view, ``(cluster config, group
    kind, group id, topic, partition, count) -> RecordsRead``; ``None`` = the real bounded read
    (``kpulse.kafka.record_fetch``)."""

    @property
    def lake_path(self) -> str:
        return self.config.lake.path

    @property
    def collect_seconds(self) -> float:
        return self.config.intervals.collect_seconds

    def read(self, table: str, cluster: str, *, since: float | None = None, until: float | None = None,
             columns: list[str] | None = None) -> pd.DataFrame:
        """Rows of one lake table and cluster with ``since <= time < until`` (epoch seconds)."""
        return self.read_checked(table, cluster, since=since, until=until, columns=columns).frame

    def read_checked(self, table: str, cluster: str, *, since: float | None = None, until: float | None = None,
                     columns: list[str] | None = None, where: dict[str, str] | None = None) -> TableRead:
        """:meth:`read` (only the rows whose columns equal ``where``'s values), and which data is
        missing because a file could not be read."""
        try:
            frame, skipped = read_table_with_problems(self.lake_path, table, since=since, until=until,
                                                      cluster=cluster, columns=columns, where=where)
        except (OSError, ValueError) as error:
            raise DashboardError(f"cannot read lake table {table} at {self.lake_path}: {one_line(error)}") from None
        if skipped and frame.empty:
            raise DashboardError(f"lake table {table}: {len(skipped)} unreadable file(s), e.g. {skipped[0]}")
        return TableRead(frame, MissingData.of(table, skipped))

    def snapshot_stamp(self, cluster: str) -> float | None:
        """Modification time of the cluster's latest snapshot (a cache key); ``None`` when absent."""
        fs, path = self._snapshot_path(cluster)
        try:
            info = fs.get_file_info(path)
        except OSError as error:
            raise DashboardError(f"cannot reach the lake at {self.lake_path}: {one_line(error)}") from None
        if info.type != pafs.FileType.File:
            return None
        return info.mtime.timestamp() if info.mtime is not None else 0.0

    def snapshot(self, cluster: str) -> Snapshot | None:
        """The latest snapshot of ``cluster``; ``None`` when the collectors have not written one."""
        fs, path = self._snapshot_path(cluster)
        try:
            with fs.open_input_stream(path) as stream:
                data = stream.read()
        except FileNotFoundError:
            return None
        except OSError as error:
            if "not found" in str(error).lower() or "no such file" in str(error).lower():
                return None
            raise DashboardError(f"cannot read the snapshot of {cluster}: {one_line(error)}") from None
        try:
            snapshot: Snapshot = json.loads(data)
        except ValueError as error:
            raise DashboardError(f"the snapshot of {cluster} ({path}) is not valid JSON: {error}") from None
        if not isinstance(snapshot, dict) or "time" not in snapshot:
            raise DashboardError(f"the snapshot of {cluster} ({path}) has no 'time': not a kpulse snapshot")
        return snapshot

    def _snapshot_path(self, cluster: str) -> tuple[pafs.FileSystem, str]:
        try:
            fs, base = resolve(self.lake_path)
        except (OSError, ValueError) as error:
            raise DashboardError(f"cannot open the lake {self.lake_path}: {one_line(error)}") from None
        return fs, f"{base}/{SNAPSHOT_DIR}/{cluster}.json"


def load_sources(config_path: str | None = None) -> Sources:
    """Sources from ``config_path``, else ``$KPULSE_CONFIG``, else the local cluster's default."""
    try:
        config = load_config(config_path or os.environ.get("KPULSE_CONFIG") or None)
        use_credentials(config.lake.credential_environment())  # the Streamlit server is this process
        return Sources(config)
    except KpulseError as error:
        source = getattr(error, "source", None)
        raise DashboardError(f"{source + ': ' if source else ''}{error}") from None
