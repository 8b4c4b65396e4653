"""Rolling windows over the minute table: the ``slo_status`` rows (SLI, budget, burn rates, alerts).

A status row is evaluated at the end ``t`` of a minute and covers the minutes ``[t - w, t)`` of
each window w. Sums come from running totals: sum over ``(m - w, m]`` = total up to m - total up
to m - w, so every window costs one pass however long it is (no per-row rescans of 30 days).
"""

from __future__ import annotations

from collections import defaultdict

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from spark_jobs import burn
from spark_jobs.definitions import SloDefinition, SloDefinitions
from spark_jobs.minutes import per_entity

STATUS_COLUMNS = (
    "time", "cluster", "slo", "entity", "scope", "indicator", "budgeting_method", "objective", "window", "sli",
    "good_events", "valid_events", "error_budget_remaining",
    *[f"burn_rate_{name}" for name in burn.BURN_WINDOWS], "burn_rate_window",
    "time_to_exhaustion_seconds", "alert", "alert_conditions",
)


def status(minutes: DataFrame, definitions: SloDefinitions, eval_from: int, eval_to: int) -> DataFrame:
    """Status rows for every SLO and entity at each minute end ``t`` with ``eval_from <= t <= eval_to``
    (epoch minutes). ``minutes`` (``cluster, slo, entity, minute, good, valid``) must hold every minute
    of the longest window before ``eval_from`` that exists."""
    by_window: dict[int, list[SloDefinition]] = defaultdict(list)
    for slo in definitions.slos:
        by_window[slo.window_minutes].append(slo)
    parts = [_status_for_window(minutes, slos, window_minutes, eval_from, eval_to)
             for window_minutes, slos in sorted(by_window.items())]
    result = parts[0]
    for part in parts[1:]:
        result = result.unionByName(part)
    return result


def _status_for_window(minutes: DataFrame, slos: list[SloDefinition], window_minutes: int,
                       eval_from: int, eval_to: int) -> DataFrame:
    names = [slo.name for slo in slos]
    rows = minutes.where(F.col("slo").isin(names) & (F.col("minute") >= eval_from - 1 - window_minutes)
                         & (F.col("minute") < eval_to))
    rows = _collapse_middle(rows, window_minutes, eval_from, eval_to)
    ordered = Window.partitionBy("cluster", "slo", "entity").orderBy("minute")
    running = ordered.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    rows = rows.select("cluster", "slo", "entity", "minute",
                       F.sum(F.coalesce("good", F.lit(0))).over(running).alias("total_good"),
                       F.sum(F.coalesce("valid", F.lit(0))).over(running).alias("total_valid"))
    windows = {**burn.BURN_WINDOWS, "window": window_minutes}
    sums = []
    for name, length in windows.items():
        before = ordered.rangeBetween(Window.unboundedPreceding, -length)
        for kind in ("good", "valid"):
            earlier = F.coalesce(F.max(f"total_{kind}").over(before), F.lit(0))
            sums.append((F.col(f"total_{kind}") - earlier).alias(f"{kind}_{name}"))
    # The status at the end t of minute m = t - 1: only minutes whose end is in [eval_from, eval_to].
    summed = rows.select("cluster", "slo", "entity", "minute", *sums).where(F.col("minute") >= eval_from - 1)
    return _status_columns(summed, slos, window_minutes)


def _collapse_middle(rows: DataFrame, window_minutes: int, eval_from: int, eval_to: int) -> DataFrame:
    """Minutes that no window's start crosses during the evaluated range (newer than every SLO
    window start ``t - window``, older than every burn window start ``t - 3d``) only ever count as a
    whole: sum them into one row per entity, so an hourly run sorts a few days of minutes, not 30."""
    low, high = eval_to - window_minutes, eval_from - 1 - max(burn.BURN_WINDOWS.values())
    if high - low < 2:
        return rows
    middle = (F.col("minute") >= low) & (F.col("minute") < high)
    collapsed = (rows.where(middle).groupBy("cluster", "slo", "entity")
                 .agg(F.sum(F.coalesce("good", F.lit(0))).alias("good"), F.sum(F.coalesce("valid", F.lit(0))).alias("valid"))
                 .select("cluster", "slo", "entity", F.lit(low).cast("long").alias("minute"), "good", "valid"))
    return rows.where(~middle).unionByName(collapsed)


def _by_slo(slos: list[SloDefinition], value) -> F.Column:
    """A per-SLO (and per-entity override) value as one expression."""
    result = F.lit(None)
    for slo in slos:
        result = F.when(F.col("slo") == slo.name, value(slo)).otherwise(result)
    return result


def _status_columns(summed: DataFrame, slos: list[SloDefinition], window_minutes: int) -> DataFrame:
    entity = F.col("entity")
    objective = _by_slo(slos, lambda s: per_entity(s, entity, lambda o: o.target, s.target)).cast("double")
    budget = 1 - objective
    rates = {name: burn.burn_rate(F.col(f"good_{name}"), F.col(f"valid_{name}"), budget)
             for name in [*burn.BURN_WINDOWS, "window"]}
    remaining = burn.budget_remaining(F.col("good_window"), F.col("valid_window"), budget)
    alert, conditions = burn.alert_columns(rates)
    return summed.select(
        F.timestamp_seconds((F.col("minute") + 1) * 60).alias("time"), "cluster", "slo", "entity",
        _by_slo(slos, lambda s: F.lit(s.scope)).cast("string").alias("scope"),
        _by_slo(slos, lambda s: F.lit(s.indicator)).cast("string").alias("indicator"),
        _by_slo(slos, lambda s: F.lit(s.budgeting_method)).cast("string").alias("budgeting_method"),
        objective.alias("objective"),
        _by_slo(slos, lambda s: F.lit(s.window)).cast("string").alias("window"),
        burn.sli(F.col("good_window"), F.col("valid_window")).alias("sli"),
        F.col("good_window").cast("long").alias("good_events"),
        F.col("valid_window").cast("long").alias("valid_events"),
        remaining.alias("error_budget_remaining"),
        *[rates[name].alias(f"burn_rate_{name}") for name in [*burn.BURN_WINDOWS, "window"]],
        burn.time_to_exhaustion_seconds(remaining, rates[burn.CURRENT_BURN_WINDOW], window_minutes)
        .alias("time_to_exhaustion_seconds"),
        alert.alias("alert"), conditions.alias("alert_conditions"),
    )
