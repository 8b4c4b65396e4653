"""What the SLO job's tests share: the one SparkSession (import the ``spark`` fixture from here)
and a lake of collector samples at known minutes (``at``, ``write_samples``) with the two SLOs
defined on them (``DEFINITIONS``)."""

from __future__ import annotations

from datetime import datetime, timedelta, UTC

import pytest

from kpulse.lake.store import LakeWriter
from spark_jobs.definitions import parse_definitions

DAY_ONE = datetime(2026, 3, 9, 23, 0, tzinfo=UTC)  # one hour before midnight UTC
DEFINITIONS = parse_definitions({"lateness": "10m", "slos": [
    {"name": "partition-health", "scope": "cluster", "indicator": "partition_health_minutes",
     "budgetingMethod": "Timeslices", "target": 0.99, "timeWindow": "1d"},
    {"name": "consumer-progress", "scope": "consumer_group", "indicator": "consumer_progress_minutes",
     "budgetingMethod": "Timeslices", "target": 0.9, "timeWindow": "1d"},
]})


@pytest.fixture(scope="session")
def spark():
    from spark_jobs.lake_io import build_session

    session = build_session("local[2]", shuffle_partitions=2, app_name="kpulse-test-slo",
                            extra={"spark.ui.enabled": "false", "spark.driver.host": "127.0.0.1",
                                   "spark.driver.bindAddress": "127.0.0.1",
                                   "spark.sql.adaptive.coalescePartitions.enabled": "true"})
    yield session
    session.stop()


def at(minute: int, second: int = 0) -> datetime:
    """``minute`` minutes and ``second`` seconds after :data:`DAY_ONE`."""
    return DAY_ONE + timedelta(minutes=minute, seconds=second)


def write_samples(lake, minutes, *, offline_at=(), skip=(), cluster="prod"):
    """Cluster health and group ``billing`` samples at seconds 0 and 30 of each of ``minutes``
    (but ``skip``): a partition offline and the group stopped in the minutes of ``offline_at``."""
    writer = LakeWriter(str(lake))
    for minute in minutes:
        if minute in skip:
            continue
        for second in (0, 30):
            t = at(minute, second)
            writer.append("cluster_health", [{"time": t, "cluster": cluster, "under_min_isr_partitions": 0,
                                              "offline_partitions": 1 if minute in offline_at else 0}])
            writer.append("consumer_group", [{"time": t, "cluster": cluster, "group_id": "billing",
                                              "status": "STOP" if minute in offline_at else "OK"}])
    assert writer.flush().ok
