"""The Brokers page: one row per broker, time series from the lake, partition and leader
balance. Pure."""

from __future__ import annotations

import pandas as pd

from kpulse.snapshot import Snapshot

BROKER_TABLE: dict[str, str] = {
    "broker": "id", "up": "up", "partitions": "partition_count", "leaders": "leader_count",
    "preferred_leaders": "preferred_leader_count", "request_handler_idle": "request_handler_idle_ratio",
    "network_idle": "network_processor_idle_ratio", "bytes_in_per_sec": "bytes_in_per_sec",
    "bytes_out_per_sec": "bytes_out_per_sec", "produce_p99_ms": "produce_p99_ms", "fetch_p99_ms": "fetch_p99_ms",
    "error": "error",
}
"""Column of the page's broker table -> the :class:`kpulse.snapshot.Broker` field it shows, under
the short headings the page has always had (``under_replicated`` comes from the lake instead)."""
BROKER_COLUMNS = ["broker", "up", "partitions", "leaders", "preferred_leaders", "request_handler_idle",
                  "network_idle", "bytes_in_per_sec", "bytes_out_per_sec", "under_replicated", "produce_p99_ms",
                  "fetch_p99_ms", "error"]


def broker_table(snapshot: Snapshot | None, latest_metrics: pd.DataFrame) -> pd.DataFrame:
    """The snapshot's brokers, with URP led by each broker from its newest ``broker_metrics`` row."""
    urp = {}
    if latest_metrics is not None and not latest_metrics.empty:
        newest = latest_metrics.sort_values("time").groupby("broker_id").tail(1)
        urp = dict(zip(newest["broker_id"].astype(int), newest["under_replicated_partitions"]))
    rows = []
    for broker in (snapshot or {}).get("brokers") or []:
        rows.append({**{column: broker.get(field) for column, field in BROKER_TABLE.items()},
                     "under_replicated": urp.get(broker.get("id"))})
    return pd.DataFrame(rows, columns=BROKER_COLUMNS)


def balance(table: pd.DataFrame) -> dict[str, float | None]:
    """How uneven partitions and leaders are: the busiest broker's share over the mean, minus 1
    (0 = perfectly even, 0.5 = the busiest has 50 % more than the average)."""
    result = {}
    for column in ("partitions", "leaders"):
        values = pd.to_numeric(table[column], errors="coerce").dropna() if len(table) else pd.Series(dtype=float)
        mean = values.mean() if len(values) else None
        result[column] = None if not mean else float(values.max() / mean - 1)
    return result


def balance_frame(table: pd.DataFrame) -> pd.DataFrame:
    """Long form (broker, kind, count) for a grouped bar chart of partitions and leaders."""
    long = table.melt(id_vars=["broker"], value_vars=["partitions", "leaders"], var_name="kind", value_name="count")
    long["broker"] = long["broker"].astype(str)
    return long


def series(metrics: pd.DataFrame, column: str) -> pd.DataFrame:
    """(time, broker, value) of one ``broker_metrics`` column, brokers as text for colouring."""
    frame = metrics[["time", "broker_id", column]].rename(columns={"broker_id": "broker", column: "value"})
    frame["broker"] = "broker " + frame["broker"].astype(str)
    return frame
