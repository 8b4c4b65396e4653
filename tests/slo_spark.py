"""The one SparkSession the SLO tests share (import the ``spark`` fixture from here)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    from spark_jobs.lake_io import build_session

    session = build_session("local[2]", shuffle_partitions=2, app_name="kpulse-test-slo",
                            extra={"spark.ui.enabled": "false", "spark.driver.host": "127.0.0.1",
                                   "spark.driver.bindAddress": "127.0.0.1",
                                   "spark.sql.adaptive.coalescePartitions.enabled": "true"})
    yield session
    session.stop()
