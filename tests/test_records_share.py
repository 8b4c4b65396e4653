"""Reading records from a share group's start offset (``kpulse/kafka/record_fetch.py``), on the demo's
share group (in a module of its own: a module that uses the demo workload runs while it runs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kpulse.config import parse_config
from kpulse.kafka.record_fetch import read_records
from tests.support import wait_for

pytestmark = pytest.mark.cluster


def test_a_share_group_starts_at_its_start_offset(bootstrap, demo_workload):
    from localkafka.demo.topology import SHARE_GROUP

    cluster = parse_config({"clusters": [{"name": "test", "bootstrap_servers": bootstrap}]}, source="test",
                           base_dir=Path("/"), environ={}).cluster()

    def read():
        result = read_records(cluster, "demo.tasks", 0, group=SHARE_GROUP, count=1)
        return result if result.start_from == f"start offset of share group {SHARE_GROUP}" else None

    result = wait_for(read, timeout=90, what="demo-share's start offset on demo.tasks-0")
    assert result.error is None and result.requested_start is not None
    assert result.log_start is not None and result.high_watermark is not None
    assert result.log_start <= result.requested_start <= result.high_watermark
