"""The Streams apps page: applications and instances from the snapshot, the state timeline from
``streams_transition`` rows, rebalance figures. Pure."""

from __future__ import annotations

from typing import Mapping

import pandas as pd

from kpulse.snapshot import Snapshot, StreamsApp

APP_COLUMNS = ["application_id", "state", "group_state", "members", "instances", "expected_instances",
               "rebalances", "rebalancing_seconds"]


def apps_frame(snapshot: Snapshot | None) -> pd.DataFrame:
    rows = []
    for app in (snapshot or {}).get("streams_apps") or []:
        rebalances = app.get("rebalances") or {}
        rows.append({"application_id": app.get("application_id"), "state": app.get("state"),
                     "group_state": app.get("group_state"), "members": app.get("members"),
                     "instances": len(app.get("instances") or []), "expected_instances": app.get("expected_instances"),
                     "rebalances": rebalances.get("count"), "rebalancing_seconds": rebalances.get("total_seconds")})
    return pd.DataFrame(rows, columns=APP_COLUMNS)


def app(snapshot: Snapshot | None, application_id: str) -> StreamsApp | None:
    return next((a for a in (snapshot or {}).get("streams_apps") or [] if a.get("application_id") == application_id),
                None)


def instances_frame(app_entry: StreamsApp) -> pd.DataFrame:
    rows = [{"instance": i.get("id"), "state": i.get("state"), "up": i.get("up"), "alive_threads": i.get("alive_threads"),
             "failed_threads": i.get("failed_threads"),
             "threads": ", ".join(f"{t}: {s}" for t, s in sorted((i.get("thread_states") or {}).items())),
             "endpoint": i.get("endpoint"), "error": i.get("error")} for i in app_entry.get("instances") or []]
    return pd.DataFrame(rows, columns=["instance", "state", "up", "alive_threads", "failed_threads", "threads",
                                       "endpoint", "error"])


def timeline(transitions: pd.DataFrame, application_id: str, start: float, now: float,
             current: Mapping[str, str] | None = None,
             first_seen: Mapping[str, pd.Timestamp] | None = None) -> pd.DataFrame:
    """State periods per instance between ``start`` and ``now`` (epoch seconds): (instance, state,
    begin, end) with datetimes, built from the transitions (``from_state`` before the first one).
    An instance without a transition in the window stays in its ``current`` state throughout.
    An instance's first period begins when it was first seen (``first_seen``), if in the window."""
    rows = transitions[transitions["application_id"] == application_id].sort_values("time")
    begin_at = pd.Timestamp(start, unit="s", tz="UTC")
    end_at = pd.Timestamp(now, unit="s", tz="UTC")
    seen_at = {instance: max(begin_at, when) for instance, when in (first_seen or {}).items()}
    periods = []
    seen = set()
    for instance, changes in rows.groupby("instance", sort=True):
        seen.add(instance)
        state, since = changes["from_state"].iloc[0], min(seen_at.get(instance, begin_at), changes["time"].iloc[0])
        for when, to_state in zip(changes["time"], changes["to_state"]):
            if when > since:
                periods.append({"instance": instance, "state": state, "begin": since, "end": when})
            state, since = to_state, max(when, begin_at)
        periods.append({"instance": instance, "state": state, "begin": since, "end": end_at})
    for instance, state in (current or {}).items():
        if instance not in seen and state is not None:
            periods.append({"instance": instance, "state": state, "begin": seen_at.get(instance, begin_at),
                            "end": end_at})
    return pd.DataFrame(periods, columns=["instance", "state", "begin", "end"])


def rebalancing_seconds(periods: pd.DataFrame) -> float:
    """Time spent REBALANCING in the timeline, summed over instances."""
    rebalancing = periods[periods["state"] == "REBALANCING"]
    return float((rebalancing["end"] - rebalancing["begin"]).dt.total_seconds().sum()) if len(rebalancing) else 0.0
