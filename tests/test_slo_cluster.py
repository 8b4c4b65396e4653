"""From the real cluster to the SLO tables: collect, kill a broker, collect, run the SLO job, and
see partition-health minutes go bad and the burn rate rise to a page."""

from __future__ import annotations

import time

import pytest
import yaml

from collectors.registry import BUILTINS
from kpulse.lake.reader import read_table
from collectors.protocol import Registry
from collectors.runner import CollectionService
from kpulse.config import load_config
from kpulse.kafka.clients import admin_client
from spark_jobs.definitions import parse_definitions
from spark_jobs.job import run
from tests.slo_spark import spark  # noqa: F401 - the shared session fixture

TOPIC = "slo-e2e-rf1-on-3"
HEALTH = parse_definitions({"slos": [{
    "name": "partition-health", "scope": "cluster", "indicator": "partition_health_minutes",
    "budgetingMethod": "Timeslices", "target": 0.999, "timeWindow": "1d"}]})


class MinuteClock:
    """Each collection cycle is one minute later: minutes of history in seconds of real time."""

    def __init__(self, start: float):
        self.now = start

    def __call__(self) -> float:
        self.now += 60
        return self.now


def collect(service, cycles: int, until=None, pause: float = 0.0) -> list[int | None]:
    offline = []
    for cycle in range(cycles):
        if cycle and pause:
            time.sleep(pause)
        snapshot = service.cycle().snapshots["test"]
        offline.append((snapshot.get("cluster") or {}).get("offline_partitions"))
        if until is not None and until(snapshot):
            break
    return offline


@pytest.mark.cluster
def test_killing_a_broker_turns_partition_health_minutes_bad_and_pages(local_cluster, spark, tmp_path):
    admin = admin_client({"bootstrap.servers": local_cluster.layout.bootstrap_servers})
    from confluent_kafka.admin import NewTopic

    admin.create_topics([NewTopic(TOPIC, num_partitions=1, replication_factor=-1,
                                 replica_assignment=[[3]], config={"min.insync.replicas": "1"})])[TOPIC].result(30)
    (tmp_path / "kpulse.yaml").write_text(yaml.safe_dump({
        "clusters": [{"name": "test", "bootstrap_servers": local_cluster.layout.bootstrap_servers}],
        "lake": {"path": str(tmp_path / "lake")}}))
    registry = Registry()
    registry.register("cluster_metadata", BUILTINS["cluster_metadata"])
    clock = MinuteClock(start=(time.time() // 60) * 60 - 3 * 3600)
    service = CollectionService(load_config(tmp_path / "kpulse.yaml"), registry=registry, clock=clock,
                                flush_seconds=0)
    try:
        healthy = collect(service, 10)
        local_cluster.kill_broker(3)
        # the controller fences the killed node after its session timeout (4 s here): a few cycles
        fencing = collect(service, 120, until=lambda s: ((s.get("cluster") or {}).get("offline_partitions") or 0) > 0,
                          pause=0.5)
        broken = collect(service, 10)
    finally:
        local_cluster.start_broker(3)
        service.close()
    killed_at = clock.now - 60 * (len(broken) + len(fencing))
    assert healthy == [0] * 10 and fencing[-1] > 0 and all(o and o > 0 for o in broken), (healthy, fencing, broken)

    lake = str(tmp_path / "lake")
    result = run(spark, lake, HEALTH, until=clock.now + 60)
    minutes = read_table(lake, "slo_minute").sort_values("time")
    # a cycle whose metadata request failed while the broker went away is a no-data minute (null)
    goods = [None if pd_isnull(g) else int(g) for g in minutes["good"]]
    assert goods[:10] == [1] * 10 and goods[-10:] == [0] * 10
    status = read_table(lake, "slo_status").set_index("time")
    before = status[status.index <= pd_utc(killed_at)].iloc[-1]
    assert before["burn_rate_5m"] == 0.0 and pd_isnull(before["alert"])
    [latest] = result.latest
    assert latest["burn_rate_5m"] == pytest.approx(1000.0)  # every minute of the last 5 bad, budget 0.001
    assert latest["burn_rate_1h"] > 14.4 and latest["alert"] == "page"
    assert "page_1h_5m" in latest["alert_conditions"]
    # 10+ bad minutes of the 1.44 a day at 0.999 allows: overspent, whatever the minutes observed
    assert latest["allowed_bad_slices"] == 1.44 and latest["bad_slices"] >= 10
    assert latest["error_budget_remaining"] == pytest.approx(1 - latest["bad_slices"] / 1.44)
    assert latest["budget_status"] == "exhausted"


def pd_utc(epoch: float):
    import pandas as pd

    return pd.Timestamp(epoch, unit="s", tz="UTC")


def pd_isnull(value) -> bool:
    import pandas as pd

    return value is None or pd.isna(value)
