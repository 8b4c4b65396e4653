"""Per-minute good and valid counts of one SLO, per entity, from the lake's samples.

Two steps, both ``DataFrame -> DataFrame``:

1. :func:`samples`: each sample row (one collection cycle) becomes ``(cluster, entity, minute,
   good, valid)``, where ``minute`` is the epoch minute of its ``time``. For event indicators
   (Occurrences) good/valid are event counts; for the others a sample is 1/0 good and 1 valid, or
   0 valid when it cannot be judged (a null value is never good).
2. :func:`to_minutes`: one row per entity and minute of ``[start, end)``, for every entity seen in
   the samples (from its first sample on) or passed as known (from ``start``); a minute without valid samples has ``good`` and ``valid`` null
   (no data), never zero or good. Occurrences sums the events; Timeslices makes a minute good (1)
   when its good/valid samples reach the time-slice target, valid 1.
"""

from __future__ import annotations

from typing import Callable

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from spark_jobs.definitions import SloDefinition

MINUTE_MICROS = 60_000_000
MINUTE_COLUMNS = ("cluster", "entity", "minute", "good", "valid")
BAD_CONSUMER_STATUSES = ("STOP", "STALL", "ERR")


def minute_of(time: Column) -> Column:
    """Epoch minute (long) of a UTC timestamp."""
    return F.floor(F.unix_micros(time) / MINUTE_MICROS).cast("long")


def per_entity(slo: SloDefinition, entity: Column, value: Callable, default) -> Column:
    """``default`` for every entity except those whose override gives a value (``value(override)``)."""
    result = F.lit(default)
    for override in slo.overrides:
        overridden = value(override)
        if overridden is not None:
            result = F.when(entity == override.entity, F.lit(overridden)).otherwise(result)
    return result


def param(slo: SloDefinition, name: str, entity: Column) -> Column:
    return per_entity(slo, entity, lambda o: o.params.get(name), slo.params.get(name)).cast("double")


def _flag(condition: Column) -> Column:
    """1.0 when true, 0.0 when false or null (unknown is never good)."""
    return F.when(condition, 1.0).otherwise(0.0)


def _probe_produce_availability(rows: DataFrame, slo: SloDefinition) -> DataFrame:
    return rows.select("cluster", F.col("cluster").alias("entity"), "time",
                       F.col("produced").cast("double").alias("good"),
                       (F.col("produced") + F.col("produce_errors")).cast("double").alias("valid"))


def _probe_latency(rows: DataFrame, slo: SloDefinition) -> DataFrame:
    entity = F.col("cluster")
    known = F.col("latency_p99_ms").isNotNull()
    return rows.select("cluster", entity.alias("entity"), "time",
                       _flag(F.col("latency_p99_ms") <= param(slo, "latency_p99_ms_threshold", entity)).alias("good"),
                       _flag(known).alias("valid"))


def _partition_health(rows: DataFrame, slo: SloDefinition) -> DataFrame:
    offline, under_min_isr = F.col("offline_partitions"), F.col("under_min_isr_partitions")
    return rows.select("cluster", F.col("cluster").alias("entity"), "time",
                       _flag((offline == 0) & (under_min_isr == 0)).alias("good"),
                       _flag(offline.isNotNull() & under_min_isr.isNotNull()).alias("valid"))


def _consumer_freshness(rows: DataFrame, slo: SloDefinition) -> DataFrame:
    entity = F.col("group_id")
    threshold = F.coalesce(param(slo, "lag_seconds_threshold", entity), F.col("lag_seconds_threshold"))
    lag = F.col("max_lag_seconds")
    return rows.select("cluster", entity.alias("entity"), "time", _flag(lag <= threshold).alias("good"),
                       _flag(lag.isNotNull() & threshold.isNotNull()).alias("valid"))


def _consumer_progress(rows: DataFrame, slo: SloDefinition) -> DataFrame:
    status = F.col("status")
    return rows.select("cluster", F.col("group_id").alias("entity"), "time",
                       _flag(~status.isin(*BAD_CONSUMER_STATUSES)).alias("good"),
                       _flag(status.isNotNull()).alias("valid"))


def _streams_availability(rows: DataFrame, slo: SloDefinition) -> DataFrame:
    """One sample per application and cycle: good when every expected instance answers and runs;
    while all answer and some are REBALANCING, good for the first ``rebalancing_tolerance_seconds``
    of that rebalance (measured from its first sample), bad after."""
    up = F.coalesce(F.col("up"), F.lit(False))
    running = up & (F.col("client_state") == "RUNNING")
    rebalancing = up & (F.col("client_state") == "REBALANCING")
    cycles = (rows.groupBy("cluster", F.col("application_id").alias("entity"), "time")
              .agg(F.sum(_flag(running)).alias("running"), F.sum(_flag(rebalancing)).alias("rebalancing"),
                   F.count(F.lit(1)).alias("instances"), F.max("expected_instances").alias("expected")))
    expected = F.coalesce(F.col("expected"), F.col("instances"))
    healthy = ((F.col("running") + F.col("rebalancing")) == F.col("instances")) & (F.col("instances") >= expected)
    in_rebalance = healthy & (F.col("rebalancing") > 0)
    ordered = Window.partitionBy("cluster", "entity").orderBy("time")
    # A rebalance is a run of consecutive rebalancing samples; its id is the count of other samples before it.
    run = F.sum(F.when(in_rebalance, 0).otherwise(1)).over(ordered.rowsBetween(Window.unboundedPreceding, 0))
    started = F.min(F.when(F.col("in_rebalance"), F.col("time"))).over(Window.partitionBy("cluster", "entity", "run"))
    tolerance = param(slo, "rebalancing_tolerance_seconds", F.col("entity"))
    within = (F.unix_micros(F.col("time")) - F.unix_micros(started)) <= tolerance * 1_000_000
    return (cycles.withColumn("in_rebalance", in_rebalance).withColumn("run", run)
            .select("cluster", "entity", "time",
                    _flag((healthy & (F.col("rebalancing") == 0)) | (F.col("in_rebalance") & within)).alias("good"),
                    F.lit(1.0).alias("valid")))


def _broker_saturation(rows: DataFrame, slo: SloDefinition) -> DataFrame:
    entity = F.col("broker_id").cast("string")
    idle = F.col("request_handler_idle_ratio")
    return rows.select("cluster", entity.alias("entity"), "time",
                       _flag(idle >= param(slo, "min_request_handler_idle_ratio", entity)).alias("good"),
                       _flag(idle.isNotNull()).alias("valid"))


SAMPLERS: dict[str, Callable[[DataFrame, SloDefinition], DataFrame]] = {
    "probe_produce_availability": _probe_produce_availability,
    "probe_latency": _probe_latency,
    "partition_health_minutes": _partition_health,
    "consumer_freshness_minutes": _consumer_freshness,
    "consumer_progress_minutes": _consumer_progress,
    "streams_availability_minutes": _streams_availability,
    "broker_saturation_minutes": _broker_saturation,
}


def samples(rows: DataFrame, slo: SloDefinition) -> DataFrame:
    """The SLO's table rows as ``(cluster, entity, minute, good, valid)`` samples."""
    judged = SAMPLERS[slo.indicator](rows, slo)
    return judged.select("cluster", "entity", minute_of(F.col("time")).alias("minute"), "good", "valid")


def to_minutes(spark: SparkSession, sampled: DataFrame, slo: SloDefinition, start: int, end: int,
               known_entities: DataFrame | None = None) -> DataFrame:
    """One row per entity and minute in ``[start, end)``: ``(cluster, entity, minute, good, valid)``
    with long counts, null when the minute has no valid data."""
    in_range = sampled.where((F.col("minute") >= start) & (F.col("minute") < end))
    summed = (in_range.groupBy("cluster", "entity", "minute")
              .agg(F.sum("good").alias("good"), F.sum("valid").alias("valid")))
    # An entity gets rows from its first sample on, or from ``start`` when it was known before.
    entities = summed.groupBy("cluster", "entity").agg(F.min("minute").alias("since"))
    if known_entities is not None:
        known = known_entities.select("cluster", "entity", F.lit(start).cast("long").alias("since"))
        entities = entities.unionByName(known).groupBy("cluster", "entity").agg(F.min("since").alias("since"))
    grid = (entities.crossJoin(spark.range(start, end).withColumnRenamed("id", "minute"))
            .where(F.col("minute") >= F.col("since")).select("cluster", "entity", "minute"))
    summed = grid.join(summed, ["cluster", "entity", "minute"], how="left")
    has_data = F.col("valid") > 0
    if slo.budgeting_method == "Occurrences":
        good, valid = F.round(F.col("good")).cast("long"), F.round(F.col("valid")).cast("long")
    else:
        target = per_entity(slo, F.col("entity"), lambda o: o.time_slice_target, slo.time_slice_target)
        # A tiny tolerance so that, e.g., 9 good of 10 samples meets a 0.9 target despite float rounding.
        good = F.when(F.col("good") / F.col("valid") >= target - 1e-9, 1).otherwise(0).cast("long")
        valid = F.lit(1).cast("long")
    return summed.select("cluster", "entity", "minute", F.when(has_data, good).alias("good"),
                         F.when(has_data, valid).alias("valid"))
