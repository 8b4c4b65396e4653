"""Share groups without a cluster: the status rules (collectors/share/share_status.py) on a numbered
table of hand-made windows per rule and each rule's function on its own, the collector's section and
lake rows from readings a fake GroupReader hands it (the real reader against the real cluster and
the official tool: tests/test_share_groups.py), the Prometheus series rendered from a snapshot
section, with hostile names as label values."""

from __future__ import annotations

import threading
from functools import partial
from typing import cast

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from alerting.rules import rule_by_name
from collectors.protocol import CollectContext
from collectors.share.share_groups import REASON_NOT_INITIALISED, ShareGroupsCollector, ShareGroupsUnreadable
from collectors.share.share_status import (
    Reading, ShareWindows, acknowledged_everything_once, falling_behind, no_progress, no_reading, not_consuming,
    partition_status, stalled, too_few_readings, worst,
)
from exporters.prometheus import SnapshotExporter
from kpulse.config.model import ClusterConfig
from kpulse.kafka.group_model import (GroupListing, GroupReadError, ShareGroup, ShareMember, SharePartitionOffset,
                                      TypeUnsupported)
from kpulse.lake.store import LakeWriter
from kpulse.share_contract import ShareStatus
from kpulse.snapshot import Snapshot

OK, WARN, STALLED, NOT_CONSUMING = ShareStatus.OK, ShareStatus.WARN, ShareStatus.STALLED, ShareStatus.NOT_CONSUMING


def window(*readings: tuple[int, int]) -> list[Reading]:
    return [Reading(start, lag) for start, lag in readings]


# --- the status rules, one window at a time: a table of cases per rule -------------------------------

@pytest.mark.parametrize("readings, members, expected", [
    # Rule 0: no reading -> None
    pytest.param([], True, None, id="no reading -> no status"),
    # Rule 1: the lag is 0 in any reading of the window (everything acknowledged once) -> OK
    pytest.param([(0, 0)], True, OK, id="lag 0 at once -> OK (rule 1 before the minimum)"),
    pytest.param([(10, 5), (10, 0), (10, 9), (10, 9)], True, OK,
                 id="lag 0 once in the window -> OK whatever followed"),
    # Rule 2: fewer than min_observations (3) readings -> None
    pytest.param([(10, 5), (10, 5)], True, None, id="two readings, lag > 0 -> too few, no status"),
    # Rule 3: no progress (start offset still, lag never went down), members -> STALLED
    pytest.param([(10, 5), (10, 5), (10, 5)], True, STALLED, id="flat lag, start still, members -> STALLED"),
    pytest.param([(10, 5), (10, 7), (10, 9)], True, STALLED, id="lag grows, start still, members -> STALLED"),
    # Rule 4: no progress, no members -> NOT_CONSUMING
    pytest.param([(10, 5), (10, 7), (10, 9)], False, NOT_CONSUMING, id="the same without members -> NOT_CONSUMING"),
    pytest.param([(10, 5), (10, 5), (10, 5)], False, NOT_CONSUMING, id="flat lag, no members -> NOT_CONSUMING"),
    # Rule 5: the lag never went down and grew overall (the start offset moves) -> WARN
    pytest.param([(10, 5), (12, 7), (14, 9)], True, WARN,
                 id="start moves, lag never falls and grows -> WARN: acknowledging, falling behind"),
    pytest.param([(10, 5), (12, 7), (14, 9)], False, WARN, id="WARN does not depend on members"),
    pytest.param([(10, 5), (10, 5), (11, 5), (11, 6)], True, WARN,
                 id="start moved once in the window and the lag grew by one -> WARN, not STALLED"),
    # Rule 6: otherwise -> OK
    pytest.param([(10, 5), (11, 5), (12, 5)], True, OK,
                 id="start moves, lag flat -> OK: acknowledging as fast as records arrive"),
    pytest.param([(10, 5), (10, 4), (10, 6)], True, OK,
                 id="start still but the lag went down once -> OK: records acknowledged out of order"),
    pytest.param([(10, 5), (12, 7), (14, 6)], True, OK, id="lag fell at the end -> OK"),
    pytest.param([(10, 5), (10, 5), (11, 5), (11, 5)], True, OK,
                 id="start moved once in the window, lag flat -> OK"),
])
def test_partition_status(readings, members, expected):
    assert partition_status(window(*readings), members) == expected


@pytest.mark.parametrize("rule, readings, matches", [
    pytest.param(no_reading, [], True, id="rule 0: an empty window"),
    pytest.param(no_reading, [(10, 5)], False, id="rule 0: one reading"),
    pytest.param(acknowledged_everything_once, [(10, 5), (12, 0)], True, id="rule 1: the last reading at lag 0"),
    pytest.param(acknowledged_everything_once, [(10, 1), (12, 1)], False, id="rule 1: one record left throughout"),
    pytest.param(partial(too_few_readings, min_observations=3), [(10, 5), (10, 5)], True, id="rule 2: two of three"),
    pytest.param(partial(too_few_readings, min_observations=3), [(10, 5)] * 3, False, id="rule 2: three of three"),
    pytest.param(no_progress, [(10, 5), (10, 7), (10, 9)], True, id="rules 3 and 4: start still, lag up"),
    pytest.param(no_progress, [(10, 5), (10, 4), (10, 6)], False, id="rules 3 and 4: the lag went down once"),
    pytest.param(no_progress, [(10, 5), (11, 5), (11, 5)], False, id="rules 3 and 4: the start moved once"),
    pytest.param(partial(stalled, has_members=True), [(10, 5)] * 3, True, id="rule 3: members"),
    pytest.param(partial(stalled, has_members=False), [(10, 5)] * 3, False, id="rule 3: no members"),
    pytest.param(partial(not_consuming, has_members=False), [(10, 5)] * 3, True, id="rule 4: no members"),
    pytest.param(partial(not_consuming, has_members=True), [(10, 5)] * 3, False, id="rule 4: members"),
    pytest.param(falling_behind, [(10, 5), (12, 7), (14, 9)], True, id="rule 5: the lag grows"),
    pytest.param(falling_behind, [(10, 5), (12, 5), (14, 5)], False, id="rule 5: flat"),
    pytest.param(falling_behind, [(10, 5), (12, 4), (14, 9)], False, id="rule 5: down once, then up"),
])
def test_each_rule_on_its_own(rule, readings, matches):
    """Each rule's function says what its rule says, on a window of ``(start offset, lag)`` readings."""
    assert rule(window(*readings)) is matches


def test_the_minimum_number_of_readings_is_a_parameter():
    stuck = window((3, 4), (3, 4), (3, 4))
    assert partition_status(stuck, True, min_observations=4) is None
    assert partition_status(stuck + window((3, 4)), True, min_observations=4) == STALLED


@pytest.mark.parametrize("statuses, expected", [
    ([], None), ([None, None], None), ([OK, None], "OK"), ([OK, WARN], "WARN"),
    (["STALLED", "WARN", OK], "STALLED"), ([STALLED, NOT_CONSUMING, OK], "NOT_CONSUMING"),
])
def test_a_group_has_its_worst_partitions_status(statuses, expected):
    assert worst(statuses) == expected


def test_the_window_keeps_the_last_readings_and_restarts_when_the_start_offset_goes_back():
    windows = ShareWindows(window_size=3, min_observations=2)
    for start, lag in ((0, 0), (5, 3), (5, 4), (5, 6)):
        windows.record("p", start, lag)
    assert windows.window("p") == tuple(window((5, 3), (5, 4), (5, 6)))  # the caught-up reading left the window
    assert windows.status("p", has_members=True) == STALLED
    windows.record("p", 0, 40)  # an operator reset the start offset to the earliest
    assert windows.window("p") == tuple(window((0, 40)))
    assert windows.status("p", has_members=True) is None


def test_an_unknown_value_adds_no_reading_and_unread_partitions_are_forgotten():
    windows = ShareWindows()
    windows.record("a", 5, 3)
    windows.record("a", None, 3)
    windows.record("a", 5, None)
    windows.record("b", 1, 1)
    assert windows.window("a") == tuple(window((5, 3)))
    windows.forget_except(["a"])
    assert len(windows) == 1 and windows.window("b") == ()


def test_window_parameters_that_cannot_work_are_refused():
    with pytest.raises(ValueError, match="min_observations"):
        ShareWindows(window_size=2, min_observations=3)


# --- the collector on a fake reader --------------------------------------------------------------------

CLUSTER = ClusterConfig(name="prod", bootstrap_servers="node-1:9092")


class FakeReader:
    """The GroupReader API (kpulse/kafka/group_describe.py) over fixed answers: pure-logic tests only."""

    def __init__(self, groups: dict | None = None, offsets: dict | None = None, unsupported: dict | None = None,
                 listing: bool = True) -> None:
        self.groups = groups or {}
        self.offsets = offsets or {}
        self.unsupported = unsupported or {}
        self.listing = listing
        self.asked: list[tuple] = []

    def list_groups(self, timeout, types=None):
        self.asked.append(("list", tuple(types or ())))
        if not self.listing:
            return None
        return [GroupListing(g, "share", "share", getattr(d, "state", "Empty")) for g, d in self.groups.items()]

    def describe(self, listings, timeout):
        self.asked.append(("describe", tuple(item.group_id for item in listings)))
        return {item.group_id: self.groups[item.group_id] for item in listings}

    def share_offsets(self, group_ids, timeout):
        self.asked.append(("offsets", tuple(group_ids)))
        return {group_id: self.offsets[group_id] for group_id in group_ids}


def member(member_id: str, assignment: dict) -> ShareMember:
    return ShareMember(member_id=member_id, rack_id=None, member_epoch=3, client_id=f"client-{member_id}",
                       client_host="/10.0.0.1", subscribed_topics=tuple(assignment), assignment=assignment)


def share_group(group_id: str, *members: ShareMember) -> ShareGroup:
    return ShareGroup(group_id=group_id, state="Stable" if members else "Empty", group_epoch=4, assignment_epoch=4,
                      assignor="simple", members=tuple(members))


def offsets(*rows: tuple[str, int, int | None, int | None]) -> tuple[SharePartitionOffset, ...]:
    return tuple(SharePartitionOffset(topic, partition, start, lag, 0) for topic, partition, start, lag in rows)


def collect(collector: ShareGroupsCollector, now: float = 1000.0):
    return collector.collect(CollectContext(CLUSTER, now))


def test_a_stuck_consumer_becomes_stalled_after_the_minimum_readings_and_the_rule_fires():
    reader = FakeReader(groups={"jobs": share_group("jobs", member("m1", {"orders": (0, 1)}))},
                        offsets={"jobs": offsets(("orders", 1, 40, 2), ("orders", 0, 10, 5))})
    collector = ShareGroupsCollector(CLUSTER, reader=reader, read_pacing=0)
    first = collect(collector).sections["share_groups"]
    assert reader.asked == [("list", ("share",)), ("describe", ("jobs",)), ("offsets", ("jobs",))]
    [group] = first["groups"]
    assert (group["state"], group["members"], group["total_lag"], group["status"]) == ("Stable", 1, 7, None)
    assert [(p["topic"], p["partition"], p["start_offset"], p["lag"]) for p in group["partitions"]] == [
        ("orders", 0, 10, 5), ("orders", 1, 40, 2)]
    assert group["member_list"] == [{"member_id": "m1", "client_id": "client-m1", "host": "/10.0.0.1",
                                     "rack_id": None, "member_epoch": 3, "subscribed_topics": ["orders"],
                                     "assignment": {"orders": [0, 1]}}]
    assert "not enough readings" in group["reasons"]["status"]
    for now in (1010.0, 1020.0):
        result = collect(collector, now)
    [group] = result.sections["share_groups"]["groups"]
    assert group["status"] == "STALLED" and [p["status"] for p in group["partitions"]] == ["STALLED", "STALLED"]
    [finding] = rule_by_name("ShareGroupNotAcknowledging").check({"share_groups": result.sections["share_groups"]})
    assert (finding.entity, finding.value) == ("sharegroup/jobs", 7.0)
    assert "STALLED" in finding.summary and "lag 7" in finding.summary
    assert result.rows["share_group"] == [{"time": 1020.0, "cluster": "prod", "group_id": "jobs", "state": "Stable",
                                           "members": 1, "group_epoch": 4, "assignment_epoch": 4, "partitions": 2,
                                           "total_lag": 7, "lag_unknown_partitions": 0, "status": "STALLED",
                                           "error": None}]
    assert [(r["topic"], r["partition"], r["start_offset"], r["lag"], r["status"])
            for r in result.rows["share_partition"]] == [("orders", 0, 10, 5, "STALLED"), ("orders", 1, 40, 2,
                                                                                             "STALLED")]


def test_a_group_that_acknowledges_stays_ok_and_one_without_members_is_not_consuming():
    reader = FakeReader(groups={"busy": share_group("busy", member("m1", {"t": (0,)})), "idle": share_group("idle")})
    collector = ShareGroupsCollector(CLUSTER, reader=reader, read_pacing=0)
    for step in range(4):
        reader.offsets = {"busy": offsets(("t", 0, 100 + 10 * step, 3)), "idle": offsets(("t", 0, 7, 4 + step))}
        result = collect(collector, 1000.0 + step)
    statuses = {g["group_id"]: g["status"] for g in result.sections["share_groups"]["groups"]}
    assert statuses == {"busy": "OK", "idle": "NOT_CONSUMING"}
    findings = rule_by_name("ShareGroupNotAcknowledging").check({"share_groups": result.sections["share_groups"]})
    assert [(f.entity, f.value) for f in findings] == [("sharegroup/idle", 7.0)]


def test_unknown_values_are_null_with_a_reason_and_a_partial_sum_says_so():
    reader = FakeReader(groups={"g": share_group("g", member("m", {"t": (0, 1, 2)}))},
                        offsets={"g": (SharePartitionOffset("t", 0, 5, 2, 0),
                                       SharePartitionOffset("t", 1, -1, -1, None),
                                       SharePartitionOffset("t", 2, 9, None, 0, error="LEADER_NOT_AVAILABLE"))})
    [group] = collect(ShareGroupsCollector(CLUSTER, reader=reader)).sections["share_groups"]["groups"]
    p0, p1, p2 = group["partitions"]
    assert (p1["start_offset"], p1["lag"], p1["reasons"]["start_offset"]) == (None, None, REASON_NOT_INITIALISED)
    assert (p2["lag"], p2["reasons"]["lag"]) == (None, "LEADER_NOT_AVAILABLE")
    assert (group["total_lag"], group["total_lag_partial"], group["lag_unknown_partitions"]) == (2, True, 1)
    assert "partial" in group["reasons"]["total_lag"]


def test_a_group_that_cannot_be_described_keeps_its_offsets_and_says_why():
    reader = FakeReader(groups={"g": GroupReadError("g", "COORDINATOR_NOT_AVAILABLE: try again")},
                        offsets={"g": offsets(("t", 0, 5, 2))})
    [group] = collect(ShareGroupsCollector(CLUSTER, reader=reader)).sections["share_groups"]["groups"]
    assert (group["members"], group["member_list"], group["total_lag"]) == (None, [], 2)
    assert group["error"] == "describe: COORDINATOR_NOT_AVAILABLE: try again"
    assert group["partitions"][0]["status"] is None  # STALLED or NOT_CONSUMING needs the members


def test_brokers_without_share_groups_give_an_empty_section_with_the_reason_not_an_error():
    reason = "the brokers do not speak ShareGroupDescribe: share groups do not exist on this cluster"
    reader = FakeReader(unsupported={"share": TypeUnsupported("share", reason)})
    result = collect(ShareGroupsCollector(CLUSTER, reader=reader))
    section = result.sections["share_groups"]
    assert (section["groups"], section["unsupported"], section["read_at"]) == ([], reason, 1000.0)
    assert result.rows == {"share_group": [], "share_partition": []}


def test_a_cluster_that_cannot_be_listed_puts_the_collector_down_in_one_line():
    with pytest.raises(ShareGroupsUnreadable, match="^cannot list share groups: [^\n]+$"):
        collect(ShareGroupsCollector(CLUSTER, reader=FakeReader(listing=False)))


def test_a_deleted_group_loses_its_windows():
    reader = FakeReader(groups={"g": share_group("g")}, offsets={"g": offsets(("t", 0, 1, 1))})
    collector = ShareGroupsCollector(CLUSTER, reader=reader, read_pacing=0)
    collect(collector)
    assert len(collector.windows) == 1
    reader.groups, reader.offsets = {}, {}
    collect(collector)
    assert len(collector.windows) == 0


def test_a_cycle_where_the_offsets_could_not_be_read_keeps_the_windows():
    reader = FakeReader(groups={"g": share_group("g", member("m", {"t": (0,)}))},
                        offsets={"g": offsets(("t", 0, 1, 4))})
    collector = ShareGroupsCollector(CLUSTER, reader=reader, read_pacing=0)
    collect(collector)
    collect(collector)
    reader.offsets = {"g": GroupReadError("g", "COORDINATOR_LOAD_IN_PROGRESS")}
    [group] = collect(collector).sections["share_groups"]["groups"]
    assert (group["partitions"], group["total_lag"], group["error"]) == ([], None,
                                                                         "offsets: COORDINATOR_LOAD_IN_PROGRESS")
    reader.offsets = {"g": offsets(("t", 0, 1, 4))}
    [group] = collect(collector).sections["share_groups"]["groups"]
    assert group["status"] == "STALLED"  # the two readings before the failed cycle still count


def test_the_rows_are_what_the_lake_takes(tmp_path):
    from kpulse.lake.reader import read_table

    reader = FakeReader(groups={"g": share_group("g", member("m", {"t": (0,)}))},
                        offsets={"g": offsets(("t", 0, 3, 4), ("t", 1, None, None))})
    result = collect(ShareGroupsCollector(CLUSTER, reader=reader))
    writer = LakeWriter(str(tmp_path))
    for table, rows in result.rows.items():
        writer.append(table, rows)
    assert writer.flush().ok
    partitions = read_table(str(tmp_path), "share_partition").sort_values("partition")
    assert partitions["lag"].iloc[0] == 4 and partitions["lag"].isna().iloc[1]
    assert partitions["start_offset"].iloc[0] == 3 and partitions["start_offset"].isna().iloc[1]
    assert int(read_table(str(tmp_path), "share_group")["total_lag"].iloc[0]) == 4


# --- the exporter --------------------------------------------------------------------------------------

HOSTILE = 'a "quoted" \\ back\nslash {x="y"} # \u202e'


def exported(section) -> dict[tuple[str, tuple], float]:
    exporter = SnapshotExporter()
    exporter.update(cast(Snapshot, {"cluster_name": "prod", "share_groups": section}))  # the keys it reads here
    registry = CollectorRegistry()
    registry.register(exporter)
    samples = {}
    for family in text_string_to_metric_families(generate_latest(registry).decode()):
        for sample in family.samples:
            if sample.name.startswith("kpulse_sharegroup"):  # and kpulse_sharegroups_
                samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def test_share_group_series_from_a_snapshot_section_with_a_hostile_group_name():
    section = {"unsupported": None, "groups": [{
        "group_id": HOSTILE, "state": "Stable", "members": 2, "total_lag": 9, "lag_unknown_partitions": 0,
        "status": "STALLED",
        "partitions": [{"topic": "orders", "partition": 0, "start_offset": 12, "lag": 9, "status": "STALLED"},
                       {"topic": "orders", "partition": 1, "start_offset": None, "lag": None, "status": None}]}]}
    samples = exported(section)
    g = (("cluster", "prod"), ("sharegroup", HOSTILE))

    def key(name, **labels):
        return name, tuple(sorted((dict(g) | labels).items()))

    assert samples[key("kpulse_sharegroup_partition_lag", topic="orders", partition="0")] == 9
    assert samples[key("kpulse_sharegroup_start_offset", topic="orders", partition="0")] == 12
    assert key("kpulse_sharegroup_partition_lag", topic="orders", partition="1") not in samples  # null is absent, not 0
    assert samples[key("kpulse_sharegroup_members")] == 2
    assert {labels[-1][1]: value for (name, labels), value in samples.items()
            if name == "kpulse_sharegroup_state"} == {"Empty": 0, "Stable": 1, "Dead": 0}
    assert {dict(labels)["status"]: value for (name, labels), value in samples.items()
            if name == "kpulse_sharegroup_status"} == {"OK": 0, "WARN": 0, "STALLED": 1, "NOT_CONSUMING": 0}
    assert samples[key("kpulse_sharegroup_lag")] == 9


def test_a_state_this_release_does_not_know_is_exported_as_itself():
    section = {"unsupported": None, "groups": [{"group_id": "g", "state": "Unknown", "members": None,
                                                "status": None, "partitions": []}]}
    states = {dict(labels)["state"]: value for (name, labels), value in exported(section).items()
              if name == "kpulse_sharegroup_state"}
    assert states == {"Empty": 0, "Stable": 0, "Dead": 0, "Unknown": 1}


def test_no_share_group_series_without_the_section():
    assert exported(None) == {} and exported({"groups": [], "unsupported": "old brokers"}) == {}


def test_share_groups_obey_the_consumer_groups_include_and_exclude_filter():
    from kpulse.config.model import ConsumerGroupsConfig

    cluster = ClusterConfig(name="prod", bootstrap_servers="node-1:9092",
                            consumer_groups=ConsumerGroupsConfig(include=("jobs-.*",), exclude=("jobs-retired",)))
    reader = FakeReader(groups={"jobs-a": share_group("jobs-a"), "jobs-retired": share_group("jobs-retired"),
                                "other": share_group("other")},
                        offsets={g: offsets(("t", 0, 1, 1)) for g in ("jobs-a", "jobs-retired", "other")})
    result = ShareGroupsCollector(cluster, reader=reader).collect(CollectContext(cluster, 1000.0))
    assert [g["group_id"] for g in result.sections["share_groups"]["groups"]] == ["jobs-a"]
    assert {row["group_id"] for row in result.rows["share_partition"]} == {"jobs-a"}
    assert reader.asked[1:] == [("describe", ("jobs-a",)), ("offsets", ("jobs-a",))]


class SlowOffsets(FakeReader):
    """A FakeReader whose DescribeShareGroupOffsets answers only once ``release`` is set, as a 4.3.1
    broker answering in seconds (it asks its share coordinator and the partition leaders first)."""

    def __init__(self, *args, **kwargs):
        import threading

        super().__init__(*args, **kwargs)
        self.release = threading.Event()

    def share_offsets(self, group_ids, timeout):
        assert self.release.wait(10), "the test never answered"
        return super().share_offsets(group_ids, timeout)


def test_a_slow_share_offsets_answer_does_not_hold_the_cycle_and_is_shown_when_it_comes():
    reader = SlowOffsets(groups={"g": share_group("g", member("m", {"t": (0,)}))}, offsets={"g": offsets(("t", 0, 5, 3))})
    collector = ShareGroupsCollector(CLUSTER, reader=reader, read_budget=0.05, read_pacing=0)  # about the wait
    reader.release.set()
    first = collect(collector, now=1000.0)  # answered within the budget: this cycle's reading
    assert first.sections["share_groups"]["read_at"] == 1000.0
    assert [row["lag"] for row in first.rows["share_partition"]] == [3]

    reader.release.clear()
    reader.offsets = {"g": offsets(("t", 0, 9, 1))}
    waiting = collect(collector, now=1010.0)  # the brokers have not answered: the last reading, no new rows
    assert waiting.sections["share_groups"]["read_at"] == 1000.0
    assert waiting.sections["share_groups"]["groups"][0]["partitions"][0]["lag"] == 3
    assert waiting.rows == {"share_group": [], "share_partition": []}

    reader.release.set()
    import time as clock

    deadline = clock.monotonic() + 10
    while collector.reading_in_flight and clock.monotonic() < deadline:
        clock.sleep(0.01)
    late = collect(collector, now=1020.0)  # the answer of the read started at 1010 s, with its time
    assert late.sections["share_groups"]["read_at"] == 1010.0
    assert late.sections["share_groups"]["read_seconds"] >= 0
    assert [(row["time"], row["lag"]) for row in late.rows["share_partition"]] == [(1010.0, 1)]
    collector.close()


def test_a_cycle_waits_for_the_share_answer_only_while_its_other_collectors_run():
    from collectors.protocol import CycleReadings

    reader = SlowOffsets(groups={"g": share_group("g", member("m", {"t": (0,)}))}, offsets={"g": offsets(("t", 0, 5, 3))})
    collector = ShareGroupsCollector(CLUSTER, reader=reader, read_budget=60.0, read_pacing=0)  # about the wait
    reader.release.set()
    collect(collector, now=1000.0)  # the first reading is always waited for

    # the other collectors are done and the brokers have not answered: the last reading, at once
    # (waiting for the 60 s budget would run into SlowOffsets' 10 s and fail the read)
    reader.release.clear()
    reader.offsets = {"g": offsets(("t", 0, 9, 1))}
    others_done = CycleReadings(["share_groups", "consumer_lag"])
    others_done.finished("consumer_lag")
    waiting = collector.collect(CollectContext(CLUSTER, 1010.0, shared=others_done))
    assert waiting.sections["share_groups"]["read_at"] == 1000.0
    assert waiting.rows == {"share_group": [], "share_partition": []}
    reader.release.set()
    import time as clock

    deadline = clock.monotonic() + 10
    while collector.reading_in_flight and clock.monotonic() < deadline:
        clock.sleep(0.01)
    collect(collector, now=1020.0)  # takes the late answer and asks again at 1020

    # while another collector still runs, the answer that comes meanwhile is this cycle's
    reader.release.clear()
    others_running = CycleReadings(["share_groups", "consumer_lag"])
    answer = threading.Timer(0.3, reader.release.set)
    answer.start()
    current = collector.collect(CollectContext(CLUSTER, 1030.0, shared=others_running))
    answer.join()
    assert current.sections["share_groups"]["read_at"] in (1020.0, 1030.0)
    if current.sections["share_groups"]["read_at"] == 1020.0:  # the read asked at 1020 was answered first
        current = collector.collect(CollectContext(CLUSTER, 1030.0, shared=others_running))
    assert current.sections["share_groups"]["read_at"] == 1030.0
    assert [row["lag"] for row in current.rows["share_partition"]] == [1]
    collector.close()


class TimedReader(FakeReader):
    """A FakeReader whose DescribeShareGroupOffsets takes ``seconds`` on the collector's (fake) clock."""

    def __init__(self, clock: list, seconds: float, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.clock, self.seconds = clock, seconds

    def share_offsets(self, group_ids, timeout):
        self.clock[0] += self.seconds
        return super().share_offsets(group_ids, timeout)


def test_a_slow_reading_is_paced_out_so_the_brokers_are_not_kept_busy_answering_it():
    clock = [100.0]
    reader = TimedReader(clock, 5.0, groups={"g": share_group("g", member("m", {"t": (0,)}))},
                         offsets={"g": offsets(("t", 0, 5, 3))})
    collector = ShareGroupsCollector(CLUSTER, reader=reader, read_pacing=3.0, clock=lambda: clock[0])
    first = collect(collector, now=1000.0)  # took 5 s (100 -> 105): none before 105 + 3 x 5 = 120
    assert first.sections["share_groups"]["read_at"] == 1000.0
    asked = len(reader.asked)

    for at in (110.0, 119.9):
        clock[0] = at
        shown = collect(collector, now=1000.0 + at)
        assert len(reader.asked) == asked, f"asked again at {at}, inside the pacing"
        assert shown.sections["share_groups"]["read_at"] == 1000.0  # the last reading, with its time
        assert shown.rows == {"share_group": [], "share_partition": []}

    clock[0] = 120.0
    reader.offsets = {"g": offsets(("t", 0, 9, 1))}
    paced_out = collect(collector, now=1120.0)
    assert [kind for kind, _ in reader.asked[asked:]] == ["list", "describe", "offsets"]
    assert paced_out.sections["share_groups"]["read_at"] == 1120.0
    assert [row["lag"] for row in paced_out.rows["share_partition"]] == [1]
    collector.close()


def test_a_fast_reading_is_asked_every_cycle():
    clock = [100.0]
    reader = TimedReader(clock, 0.3, groups={"g": share_group("g", member("m", {"t": (0,)}))},
                         offsets={"g": offsets(("t", 0, 5, 3))})
    collector = ShareGroupsCollector(CLUSTER, reader=reader, clock=lambda: clock[0])
    for cycle in range(3):  # 10 s cycles, as `kpulse collect` runs them; a reading takes 0.3 s
        clock[0] = 100.0 + 10 * cycle
        reading = collect(collector, now=1000.0 + 10 * cycle)
        assert reading.sections["share_groups"]["read_at"] == 1000.0 + 10 * cycle
    assert [kind for kind, _ in reader.asked].count("offsets") == 3
    collector.close()


def test_the_readings_time_and_duration_are_exported():
    samples = exported({"groups": [], "unsupported": None, "read_at": 1700000000.0, "read_seconds": 6.5})
    assert samples[("kpulse_sharegroups_read_timestamp_seconds", (("cluster", "prod"),))] == 1700000000.0
    assert samples[("kpulse_sharegroups_read_duration_seconds", (("cluster", "prod"),))] == 6.5
