"""Spark session and lake I/O for the SLO job: read date partitions of a lake table with its
contract schema, overwrite whole date partitions of the job's own tables (reruns replace, never
duplicate), find where the previous run stopped."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pyarrow as pa
import pyarrow.fs as pafs
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from collectors.lake import resolve
from collectors.lake_schema import SCHEMAS
from kpulse.errors import KpulseError

PARTITION_PREFIX = "date="
_SPARK_TYPES = {pa.string(): T.StringType(), pa.int32(): T.IntegerType(), pa.int64(): T.LongType(),
                pa.float64(): T.DoubleType(), pa.bool_(): T.BooleanType(), pa.timestamp("us", tz="UTC"): T.TimestampType()}
SESSION_CONFIG = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.adaptive.enabled": "true",
    "spark.ui.showConsoleProgress": "false",
}


class LakeError(KpulseError):
    """The lake cannot be read or written (missing, unreachable, corrupt file)."""


def build_session(master: str | None = None, *, shuffle_partitions: int | None = None,
                  app_name: str = "kpulse-slo", extra: dict[str, str] | None = None) -> SparkSession:
    """The job's session: UTC, dynamic partition overwrite, microsecond timestamps. ``master=None``
    keeps what ``spark-submit`` set, else ``local[*]``."""
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    elif not _submitted():
        builder = builder.master("local[*]")
    config = {**SESSION_CONFIG, **(extra or {})}
    if shuffle_partitions:
        config["spark.sql.shuffle.partitions"] = str(shuffle_partitions)
    for key, value in config.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _submitted() -> bool:
    import os

    return "SPARK_MASTER" in os.environ or "PYSPARK_GATEWAY_PORT" in os.environ or "spark.master" in os.environ.get(
        "PYSPARK_SUBMIT_ARGS", "")


def spark_schema(table: str) -> T.StructType:
    return T.StructType([T.StructField(f.name, _SPARK_TYPES[f.type], True) for f in SCHEMAS[table]])


def partitions(lake: str, table: str) -> list[date]:
    """The ``date=`` partitions of a table, oldest first ([] when the table has none)."""
    fs, base = resolve(lake)
    directory = f"{base}/{table}"
    try:
        if fs.get_file_info(directory).type == pafs.FileType.NotFound:
            return []
        entries = fs.get_file_info(pafs.FileSelector(directory))
    except OSError as error:
        raise LakeError(f"cannot list {lake}/{table}: {_first_line(error)}") from None
    days = []
    for entry in entries:
        if entry.type == pafs.FileType.Directory and entry.base_name.startswith(PARTITION_PREFIX):
            try:
                days.append(date.fromisoformat(entry.base_name[len(PARTITION_PREFIX):]))
            except ValueError:
                continue
    return sorted(days)


def check_lake(lake: str) -> None:
    fs, base = resolve(lake)
    try:
        info = fs.get_file_info(base)
    except OSError as error:
        raise LakeError(f"cannot reach the lake at {lake}: {_first_line(error)}") from None
    if info.type == pafs.FileType.NotFound:
        raise LakeError(f"no lake at {lake} (run `kpulse collect` first, or give lake.path in the config)")


def read_table(spark: SparkSession, lake: str, table: str, first: date, last: date) -> DataFrame:
    """Rows of the date partitions ``first..last`` that exist (an empty frame when none do)."""
    days = [day for day in partitions(lake, table) if first <= day <= last]
    schema = spark_schema(table)
    if not days:
        return spark.createDataFrame([], schema)
    root = _spark_path(lake, table)
    paths = [f"{root}/{PARTITION_PREFIX}{day.isoformat()}" for day in days]
    return spark.read.schema(schema).option("basePath", root).parquet(*paths).select(*schema.fieldNames())


def overwrite_partitions(frame: DataFrame, lake: str, table: str) -> None:
    """Write ``frame`` (exactly the table's columns) partitioned by the UTC date of ``time``,
    replacing only the date partitions it has rows for."""
    columns = [f.name for f in SCHEMAS[table]]
    # Every lake column is nullable; Spark would write literal or never-null columns as required.
    # A union with an empty frame of the contract schema makes them nullable (and costs nothing).
    frame = frame.select(*columns).unionByName(frame.sparkSession.createDataFrame([], spark_schema(table)))
    (frame.select(*columns, F.to_date("time").alias("date"))
     .write.mode("overwrite").option("partitionOverwriteMode", "dynamic")
     .partitionBy("date").parquet(_spark_path(lake, table)))


def time_bound(lake: str, table: str, clusters: list[str] | None, *, newest: bool) -> int | None:
    """The newest (or oldest) ``time`` of ``table`` as epoch microseconds, from its last (first)
    non-empty partition, read with pyarrow (cheaper than a Spark job); None for an empty table."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    fs, base = resolve(lake)
    days = partitions(lake, table)
    for day in reversed(days) if newest else days:
        directory = f"{base}/{table}/{PARTITION_PREFIX}{day.isoformat()}"
        try:
            dataset = ds.dataset(directory, format="parquet", filesystem=fs, ignore_prefixes=[".", "_"])
            condition = ds.field("cluster").isin(clusters) if clusters else None
            times = dataset.to_table(columns=["time"], filter=condition).column("time")
        except (OSError, pa.ArrowException) as error:
            raise LakeError(f"cannot read {directory}: {_first_line(error)}") from None
        if len(times) and times.null_count < len(times):
            bound = pc.max(times) if newest else pc.min(times)
            return bound.cast(pa.int64()).as_py()
    return None


def day_of_minute(minute: int) -> date:
    return (datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(minutes=minute)).date()


def _spark_path(lake: str, table: str) -> str:
    return f"{lake.rstrip('/')}/{table}"


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__
