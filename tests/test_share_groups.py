"""Share groups on the real cluster, against the official tool: the share_groups collector's start
offset and lag per partition equal ``kafka-share-groups --describe``, its members and assignments
``--describe --members --verbose``; a share group with records waiting and a consumer that
acknowledges nothing (a consumer hung after its first poll, a consumer gone) is STALLED or
NOT_CONSUMING and ShareGroupNotAcknowledging fires for it, not for a group whose consumer
acknowledges; ``kpulse collect`` serves the kpulse_sharegroup_* series on /metrics and writes the
share tables to the lake. The rules themselves: tests/test_share_logic.py."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
import urllib.request
from contextlib import contextmanager

import pytest

from alerting.rules import rule_by_name
from alerting.state import AlertState
from collectors.protocol import CollectContext
from collectors.share.share_groups import DEFAULT_TIMEOUT_SECONDS, ShareGroupsCollector
from kpulse.config import load_config
from kpulse.config.model import ClusterConfig
from kpulse.lake.reader import read_table
from tests.support import (admin_for, collect_config, create_topic, free_port, official_rows, produce,
                           set_share_auto_offset_reset, start_share_consumer, wait_for)

pytestmark = pytest.mark.cluster
TOPIC = "kp-share-jobs"
COUNTS = {0: 12, 1: 7, 2: 9}
LIVE, LEFT, HUNG = "kp-share-live", "kp-share-left", "kp-share-hung"
"""A consumer that acknowledges everything; one that read 5 records and left; one hung after its first poll."""

HUNG_CONSUMER = textwrap.dedent("""\
    import sys, time
    from confluent_kafka import ShareConsumer
    consumer = ShareConsumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2]})
    consumer.subscribe([sys.argv[3]])
    while not consumer.poll(1.0):
        pass
    print("acquired", flush=True)
    time.sleep(3600)  # hung: no further poll, so nothing is acknowledged, and still a member
    """)


@contextmanager
def hung_share_consumer(bootstrap: str, group: str, topic: str):
    """A confluent-kafka share consumer of ``group`` that polls until it gets records and then hangs
    (its background thread keeps it a member for ``max.poll.interval.ms``, 5 min); killed at the end.
    The official tool shows the group's lag once the records' acquisition lock has expired unacknowledged
    (the share partition writes its state then): the group's lock is the broker's minimum, 15 s, not 30 s."""
    set_share_auto_offset_reset(bootstrap, group, share_record_lock_duration_ms="15000")
    process = subprocess.Popen([sys.executable, "-c", HUNG_CONSUMER, bootstrap, group, topic],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert process.stdout is not None  # piped
        assert process.stdout.readline().strip() == "acquired", "the hung consumer got no records"
        yield process
    finally:
        process.kill()
        process.wait(10)


def official_partitions(bootstrap: str, group: str) -> dict[tuple[str, int], tuple[int | None, int | None]]:
    """(topic, partition) -> (START-OFFSET, LAG) of ``kafka-share-groups --describe`` ('-' is None)."""
    rows = official_rows("kafka-share-groups", "--bootstrap-server", bootstrap, "--describe", "--group", group)
    number = lambda text: None if text == "-" else int(text)  # noqa: E731
    return {(r["TOPIC"], int(r["PARTITION"])): (number(r["START-OFFSET"]), number(r["LAG"])) for r in rows}


def official_members(bootstrap: str, group: str) -> dict[str, tuple[str, str, str]]:
    """CONSUMER-ID -> (CLIENT-ID, HOST, ASSIGNMENT) of ``kafka-share-groups --describe --members --verbose``."""
    rows = official_rows("kafka-share-groups", "--bootstrap-server", bootstrap, "--describe", "--group", group,
                         "--members", "--verbose")
    return {r["CONSUMER-ID"]: (r["CLIENT-ID"], r["HOST"], r["ASSIGNMENT"]) for r in rows}


def collected(group: dict) -> dict[tuple[str, int], tuple[int | None, int | None]]:
    return {(p["topic"], p["partition"]): (p["start_offset"], p["lag"]) for p in group["partitions"]}


def collected_members(group: dict) -> dict[str, tuple[str, str, str]]:
    return {m["member_id"]: (m["client_id"], m["host"], ",".join(
        f"{topic}:{','.join(str(p) for p in partitions)}" for topic, partitions in m["assignment"].items()))
        for m in group["member_list"]}


class Readings:
    """The share_groups collector on the test cluster, one new reading per :meth:`read` (it waits for
    the brokers' answer and asks at once, unpaced: the 1 s budget of a collection cycle and the
    pacing of slow readings, which would show the last reading again, are tested in
    tests/test_share_logic.py)."""

    def __init__(self, bootstrap: str):
        self.cluster = ClusterConfig(name="test", bootstrap_servers=bootstrap)
        self.collector = ShareGroupsCollector(self.cluster, read_budget=3 * DEFAULT_TIMEOUT_SECONDS, read_pacing=0)

    def read(self) -> dict:
        section = self.collector.collect(CollectContext(self.cluster, time.time())).sections["share_groups"]
        assert isinstance(section, dict)  # the collector's ShareGroups section
        assert section["unsupported"] is None
        return section

    def group(self, group_id: str, section: dict | None = None) -> dict | None:
        """The group in ``section`` (a new reading when None); None while it is not listed yet."""
        return next((g for g in (section or self.read())["groups"] if g["group_id"] == group_id), None)


def agreeing(bootstrap: str, readings: Readings, group_id: str, settled=lambda official: True):
    """The collector's group when its partitions equal the official tool's read just before and just
    after (unchanged in between), and ``settled(official)`` holds; retried until then."""
    seen: list = []

    def attempt():
        before = official_partitions(bootstrap, group_id)
        group = readings.group(group_id)
        after = official_partitions(bootstrap, group_id)
        seen[:] = [before, group and collected(group), after]
        return group if group and before == after == collected(group) and settled(after) else None
    try:
        return wait_for(attempt, timeout=150, interval=1, what=f"share group {group_id} read as the official tool")
    except AssertionError as error:
        raise AssertionError(f"{error}; last official, collected, official: {seen}") from None


@pytest.fixture(scope="module")
def groups(bootstrap):
    """The topic with records in every partition, and the three groups: LIVE consuming (it runs for the
    whole module), LEFT read 5 records and left, HUNG set to read from the earliest offset."""
    admin = admin_for(bootstrap)
    if TOPIC not in admin.list_topics(timeout=10).topics:
        create_topic(admin, TOPIC, 3)
        produce(bootstrap, TOPIC, COUNTS, first_ms=int(time.time() * 1000) - 60_000, step_ms=10)
    with start_share_consumer(bootstrap, TOPIC, LEFT, extra_args=["--max-messages", "5"]) as left:
        left.wait(120)
    with start_share_consumer(bootstrap, TOPIC, LIVE) as live:
        yield live


def test_start_offsets_lags_and_members_equal_the_official_tool(bootstrap, groups):
    readings = Readings(bootstrap)
    everything_read = lambda official: len(official) == 3 and all(lag == 0 for _, lag in official.values())  # noqa
    live = agreeing(bootstrap, readings, LIVE, everything_read)
    members = official_members(bootstrap, LIVE)
    assert collected_members(live) == members and len(members) == 1
    [(client, host, assignment)] = members.values()
    assert assignment == f"{TOPIC}:0,1,2" and client
    assert (live["state"], live["members"], live["total_lag"]) == ("Stable", 1, 0)

    left = agreeing(bootstrap, readings, LEFT)
    assert (left["state"], left["members"], left["member_list"]) == ("Empty", 0, [])
    assert left["total_lag"] == sum(lag for _, lag in official_partitions(bootstrap, LEFT).values() if lag)
    assert left["total_lag"] > 0, "records wait for the group that left"


def test_a_group_that_acknowledges_nothing_is_alerted_on_and_one_that_acknowledges_is_not(bootstrap, groups):
    readings = Readings(bootstrap)
    with hung_share_consumer(bootstrap, HUNG, TOPIC):
        hung = agreeing(bootstrap, readings, HUNG, lambda official: any(lag for _, lag in official.values()))
        assert hung["members"] == 1 and len(official_members(bootstrap, HUNG)) == 1
        sections = [readings.read() for _ in range(2)]  # with the reading above: the 3 the status needs
    statuses = {g["group_id"]: g["status"] for g in sections[-1]["groups"]}
    assert statuses[HUNG] == "STALLED"  # a member, and nothing acknowledged
    assert statuses[LEFT] == "NOT_CONSUMING"  # nobody consumes, records wait
    assert statuses[LIVE] == "OK"
    rule = rule_by_name("ShareGroupNotAcknowledging")
    tracker = AlertState([rule])
    now = time.time()
    tracker.evaluate({"time": now, "cluster_name": "test", "share_groups": sections[-1]})
    fired = tracker.evaluate({"time": now + rule.for_seconds + 1, "cluster_name": "test",
                              "share_groups": sections[-1]})
    ours = {f"sharegroup/{group}" for group in (HUNG, LEFT, LIVE)}  # other modules' share groups share the cluster
    assert sorted(alert.entity for alert in fired.firing if alert.entity in ours) == [f"sharegroup/{HUNG}",
                                                                                     f"sharegroup/{LEFT}"]
    hung_alert = next(alert for alert in fired.firing if alert.entity == f"sharegroup/{HUNG}")
    assert hung_alert.value == readings.group(HUNG, sections[-1])["total_lag"] > 0


def test_collect_serves_the_share_group_series_and_writes_the_share_tables(local_cluster, bootstrap, groups,
                                                                         tmp_path):
    config = collect_config(local_cluster.layout, tmp_path, exporter={"port": free_port(), "host": "127.0.0.1"})
    port = load_config(config).exporter.port
    process = subprocess.Popen([sys.executable, "-m", "cli.main", "--config", str(config), "collect"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    status = f'kpulse_sharegroup_status{{cluster="test",sharegroup="{LEFT}",status="NOT_CONSUMING"}} 1.0'

    def metrics() -> str | None:
        try:
            text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
        except OSError:
            return None
        return text if status in text else None

    try:
        text = wait_for(metrics, timeout=120, interval=1, what="the share group status on /metrics")
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    for (topic, partition), (start, lag) in official_partitions(bootstrap, LEFT).items():
        labels = f'cluster="test",partition="{partition}",sharegroup="{LEFT}",topic="{topic}"'
        assert (f"kpulse_sharegroup_partition_lag{{{labels}}} {float(lag)}" in text) is (lag is not None)
        assert (f"kpulse_sharegroup_start_offset{{{labels}}} {float(start)}" in text) is (start is not None)
    assert f'kpulse_sharegroup_members{{cluster="test",sharegroup="{LIVE}"}} 1.0' in text
    assert f'kpulse_sharegroup_state{{cluster="test",sharegroup="{LIVE}",state="Stable"}} 1.0' in text
    assert f'kpulse_sharegroup_state{{cluster="test",sharegroup="{LIVE}",state="Empty"}} 0.0' in text
    lake = str(tmp_path / "lake")
    rows = read_table(lake, "share_group")
    assert {LIVE, LEFT} <= set(rows["group_id"])
    partitions = read_table(lake, "share_partition")
    assert set(partitions.loc[partitions["group_id"] == LEFT, "partition"]) == {0, 1, 2}
