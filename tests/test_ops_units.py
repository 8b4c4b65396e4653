"""Pure logic of operations, from tables of cases: datetimes and durations as the official tools
read them, offset choice and clamping, plan files, password hashes and roles, the audit spool."""

from __future__ import annotations

import json
from datetime import datetime, UTC
from pathlib import Path

import pytest

from operations.access import User, UsersFile, authorize, hash_password, password_matches
from operations.audit import AuditLog, AuditRecord
from operations.errors import BadInput, NotAuthorized, Refused
from operations.offset_plan import PartitionReset, ResetPlan, Scope, Strategy, choose_offsets, parse_reset_csv
from operations.reassign import Reassigner
from operations.time_specs import parse_datetime_ms, parse_duration_ms


def ms(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0,
       microsecond: int = 0) -> int:
    return int(datetime(year, month, day, hour, minute, second, microsecond, tzinfo=UTC).timestamp() * 1000)


@pytest.mark.parametrize("text, expected", [
    ("2024-03-09T12:00:00.250", ms(2024, 3, 9, 12) + 250),
    ("2024-03-09T12:00:00", ms(2024, 3, 9, 12)),
    ("2024-03-09T12:00:00.000Z", ms(2024, 3, 9, 12)),
    ("2024-03-09T14:00:00.000+02:00", ms(2024, 3, 9, 12)),
    ("2024-03-09T07:00:00.000-0500", ms(2024, 3, 9, 12)),
])
def test_datetimes_are_utc_unless_a_zone_is_given(text, expected):
    assert parse_datetime_ms(text) == expected


@pytest.mark.parametrize("text", ["2024-03-09 12:00:00", "2024-02-30T00:00:00.000", "12:00", "", "2024-03-09T25:00:00"])
def test_malformed_datetimes_are_refused(text):
    with pytest.raises(BadInput, match="malformed datetime"):
        parse_datetime_ms(text)


@pytest.mark.parametrize("text, expected", [
    ("PT30M", 1_800_000), ("P1DT2H", 93_600_000), ("PT0.5S", 500), ("pt1h", 3_600_000), ("-PT1S", -1000),
    ("P2D", 172_800_000), ("PT1H30M15S", 5_415_000),
])
def test_durations_follow_java_duration_parse(text, expected):
    assert parse_duration_ms(text) == expected


@pytest.mark.parametrize("text", ["P", "PT", "30M", "P1H", "PT5X", "P1W", ""])
def test_malformed_durations_are_refused(text):
    with pytest.raises(BadInput, match="malformed duration"):
        parse_duration_ms(text)


T0, T1 = ("t", 0), ("t", 1)
START = {T0: 3, T1: 0}
END = {T0: 20, T1: 12}
COMMITTED = {T0: 10}


@pytest.mark.parametrize("strategy, extra, expected", [
    (Strategy("to-earliest"), {}, {T0: (3, None), T1: (0, None)}),
    (Strategy("to-latest"), {}, {T0: (20, None), T1: (12, None)}),
    (Strategy("to-current"), {}, {T0: (10, None), T1: (12, None)}),  # no commit: the log end
    (Strategy("to-offset", "15"), {}, {T0: (15, 15), T1: (12, 15)}),
    (Strategy("to-offset", "1"), {}, {T0: (3, 1), T1: (1, 1)}),
    (Strategy("to-datetime", "x"), {"timestamp_offsets": {T0: 8, T1: None}}, {T0: (8, None), T1: (12, None)}),
    (Strategy("from-file", "f"), {"file_offsets": {T1: 99}}, {T1: (12, 99)}),
])
def test_offsets_chosen_and_clamped_like_the_official_tool(strategy, extra, expected):
    assert choose_offsets(strategy, [T0, T1], COMMITTED, START, END, **extra) == expected


def test_shift_by_needs_a_committed_offset_and_is_clamped():
    assert choose_offsets(Strategy("shift-by", "-9"), [T0], COMMITTED, START, END) == {T0: (3, 1)}
    with pytest.raises(BadInput, match="cannot shift partition t-1: the group has no committed offset"):
        choose_offsets(Strategy("shift-by", "1"), [T0, T1], COMMITTED, START, END)


def test_scope_parsing_and_bad_scopes():
    assert Scope.parse(False, ["a", "b:2,0"]).topics == (("a", None), ("b", (0, 2)))
    for bad in ("b:x", ":1", "b:-1"):
        with pytest.raises(BadInput):
            Scope.parse(False, [bad])


def test_plan_files_in_both_official_formats():
    assert parse_reset_csv("t,0,5\nt,1,7\n", "g") == {T0: 5, T1: 7}
    assert parse_reset_csv("g,t,0,5\nother,t,1,7\n", "g") == {T0: 5}
    for bad, message in (("", "empty"), ("t,0\n", "line 1"), ("t,zero,1\n", "partition needs an integer"), ("other,t,0,1\n", "no line for group")):
        with pytest.raises(BadInput, match=message):
            parse_reset_csv(bad, "g")


def test_a_plan_survives_json_and_csv_round_trips():
    plan = ResetPlan(cluster="c", group_id="g", group_state="Empty", strategy=Strategy("shift-by", "-9"),
                     scope=Scope.parse(False, ["t:0"]),
                     partitions=(PartitionReset("t", 0, 10, 3, 20, 3, requested=1),), planned_at=1.5)
    assert ResetPlan.from_dict(json.loads(plan.to_json())) == plan
    assert parse_reset_csv(plan.to_csv(), "g") == plan.new_offsets() == {T0: 3}
    row = plan.to_dict()["partitions"][0]
    assert (row["lag_before"], row["lag_after"], row["replayed"], row["skipped"]) == (10, 17, 7, 0)


def test_passwords_are_salted_hashes_checked_in_constant_time(tmp_path):
    first, second = hash_password("correct horse"), hash_password("correct horse")
    assert first != second and password_matches("correct horse", first) and not password_matches("wrong", first)
    users = UsersFile(tmp_path / "users.yaml")
    users.add("ann", "operator", "correct horse")
    assert users.authenticate("ann", "correct horse") == User("ann", "operator", "users-file")
    assert (tmp_path / "users.yaml").stat().st_mode & 0o077 == 0
    for name, password in (("ann", "nope"), ("bob", "correct horse")):
        with pytest.raises(NotAuthorized, match="^wrong user name or password$"):
            users.authenticate(name, password)
    with pytest.raises(BadInput, match="too short"):
        users.add("cid", "viewer", "short")
    with pytest.raises(BadInput, match="unknown role"):
        users.add("cid", "root", "long enough")


class Cluster:
    def __init__(self, read_only: bool):
        self.name, self.read_only = "prod", read_only


@pytest.mark.parametrize("role, action, read_only, allowed", [
    ("viewer", "reset-offsets", False, False), ("operator", "reset-offsets", False, True),
    ("operator", "elect-leaders", False, True), ("operator", "reset-streams-app", False, False),
    ("operator", "reassign", False, False), ("admin", "reassign", False, True),
    ("admin", "reset-offsets", True, False), ("admin", "manage-users", True, True),
])
def test_roles_and_read_only_clusters(role, action, read_only, allowed):
    user = User("u", role)
    if allowed:
        authorize(user, action, Cluster(read_only))
    else:
        with pytest.raises(Refused):
            authorize(user, action, Cluster(read_only))


def test_audit_rows_wait_in_the_spool_while_the_lake_cannot_be_written_and_none_is_lost(tmp_path):
    blocked = tmp_path / "lake"
    blocked.write_text("a file where the lake directory should be")
    audit = AuditLog(str(blocked), tmp_path / "spool.jsonl", clock=lambda: 1_700_000_000.0)
    record = AuditRecord(cluster="prod", actor="ann", action="reset-offsets", target="group g", result="ok",
                         plan={"p": 1}, before={"t-0": 5}, after={"t-0": 0})

    first_id, written = audit.record(record)
    second_id, written_again = audit.record(record)
    assert not written and not written_again
    assert [r["action_id"] for r in audit.pending()] == [first_id, second_id]

    blocked.unlink()
    assert audit.retry_spool() == 0
    frame = audit.read()
    assert list(frame["action_id"]) == [first_id, second_id]
    assert json.loads(frame["before_json"][0]) == {"t-0": 5} and not Path(tmp_path / "spool.jsonl").exists()


def test_the_service_tells_the_ui_which_actions_to_offer(tmp_path):
    from kpulse.config import parse_config
    from operations.service import Operations

    config = parse_config({"clusters": [{"name": "prod", "bootstrap_servers": "k:9092"},
                                        {"name": "archive", "bootstrap_servers": "a:9092", "read_only": True}],
                           "lake": {"path": str(tmp_path / "lake")}}, source="test", base_dir=tmp_path, environ={})
    operations = Operations(config, state_dir=tmp_path, admin_factory=lambda settings: None)

    assert operations.may(User("o", "operator"), "reset-offsets", "prod")
    assert not operations.may(User("o", "operator"), "reassign:execute", "prod")
    assert not operations.may(User("v", "viewer"), "elect-leaders", "prod")
    assert not operations.may(User("a", "admin"), "reset-offsets", "archive")


class Partition:
    def __init__(self, replicas, leader, isrs):
        self.replicas, self.leader, self.isrs = replicas, leader, isrs


class Topic:
    def __init__(self, partitions):
        self.partitions = dict(enumerate(partitions))


def test_an_election_plan_lists_misled_partitions_and_which_can_be_elected_now():
    from operations.election_plan import plan_election

    topics = {"t": Topic([Partition([1, 2], 1, [1, 2]), Partition([2, 3], 3, [3, 2]), Partition([3, 1], 1, [1])]),
              "__consumer_offsets": Topic([Partition([1, 2], 2, [1, 2])])}
    plan = plan_election(topics, "prod", (), clock=lambda: 0.0)

    assert [(m.partition, m.leader, m.preferred, m.preferred_in_sync) for m in plan.moves] == [(1, 3, 2, True), (2, 1, 3, False)]
    assert [m.partition for m in plan.electable] == [1]
    with pytest.raises(BadInput, match="unknown topic 'u'"):
        plan_election(topics, "prod", (("u", None),))


@pytest.mark.parametrize("application, topic, existing, owner", [
    ("kpulse", "kpulse-demo-streams-order-counts-changelog", {"kpulse-demo-streams"}, "kpulse-demo-streams"),
    ("kpulse", "kpulse-demo-streams-order-counts-changelog", set(), "kpulse"),  # no such app: the prefix's own
    ("X", "X-app-v2-s-changelog", {"X-app", "X-app-v2"}, "X-app-v2"),  # the longest existing id
    ("X", "X-appx-s-changelog", {"X-app"}, "X"),  # X-app is not a prefix of X-appx-
    ("X", "X-app-changelog", {"X-app"}, "X-app"),  # X's store "app", or not: left alone, the safe side
    ("X-app", "X-app-s-repartition", {"X"}, "X-app"),  # a shorter id never owns a longer one's topic
])
def test_an_internal_topic_belongs_to_the_longest_existing_application_id_it_starts_with(
        application, topic, existing, owner):
    from operations.streams_reset_plan import topic_owners

    assert topic_owners(application, [topic], existing) == {topic: owner}


def test_internal_topics_are_refused_unless_included_and_named_in_one_line():
    from operations.internal_topics import KAFKA_INTERNAL_TOPICS, is_kafka_internal_topic, refuse_internal_topics

    assert all(is_kafka_internal_topic(t) for t in KAFKA_INTERNAL_TOPICS)
    assert not any(is_kafka_internal_topic(t) for t in ("orders", "_schemas", "_confluent-metrics", "a__b"))
    with pytest.raises(Refused, match=r"^__consumer_offsets, __transaction_state: resetting offsets refused .*"
                                      r"--include-internal"):
        refuse_internal_topics(["orders", "__transaction_state", "__consumer_offsets"], False, "resetting offsets")
    refuse_internal_topics(["__consumer_offsets"], True, "resetting offsets")
    refuse_internal_topics(["orders"], False, "resetting offsets")



def test_a_group_is_stopped_only_when_readable_and_without_active_members():
    """librdkafka describes a streams or share group as Dead with no members, even while it
    runs: the listing of every group type decides (issue 13)."""
    from operations.kafka_reads import GroupListing, GroupView, Member
    from operations.offset_reset import refuse_unless_stopped

    dead, empty = GroupView("g", "Dead", ()), GroupView("g", "Empty", ())
    running = GroupView("g", "Stable", (Member("m-1", "app-1", "/10.0.0.7"),))
    refused = {
        (dead, GroupListing("g", "share", "Stable")):
            r"it is a share group \(Stable\), not a classic or consumer group; nothing changed "
            r"\(kpulse reset-share-group resets share groups, as kafka-share-groups does\)$",
        (dead, GroupListing("g", "streams", "Empty")):
            r"it is a streams group \(Empty\), not a classic or consumer group; nothing changed "
            r"\(kpulse reset-streams-group resets streams groups, as kafka-streams-groups does\)$",
        (empty, GroupListing("g", "streams", "")): r"it is a streams group \(state unknown\), not a classic",
        (dead, GroupListing("g", "classic", "Empty")):
            r"it is listed by the cluster \(classic, Empty\) but described as Dead: .*plan again$",
        (running, GroupListing("g", "consumer", "Stable")):
            r"it is Stable with active members app-1@10.0.0.7 \(m-1\); stop them first",
        (running, None): r"it is Stable with active members",
    }
    for (view, listing), reason in refused.items():
        with pytest.raises(Refused, match=f"^cannot reset the offsets of group 'g': {reason}"):
            refuse_unless_stopped(view, listing, "cannot reset the offsets of group 'g': it")
    for view, listing in ((empty, GroupListing("g", "classic", "Empty")), (empty, GroupListing("g", "consumer", "Empty")),
                          (dead, None), (empty, None)):
        refuse_unless_stopped(view, listing, "cannot reset the offsets of group 'g': it")


@pytest.mark.parametrize("request_id", ["b" * 300, "\u0661" * 12, "../approvals", ""])
def test_an_approval_request_id_that_cannot_be_one_is_unknown_in_one_line(tmp_path, request_id):
    """Request ids are 12 hex digits: anything else is an unknown request, never a file name to
    look up (a 300-character id raised 'File name too long' from the file system)."""
    from operations.approvals import ApprovalStore

    store = ApprovalStore(tmp_path / "approvals")
    made = store.create("c", "reset-offsets", "group g", {}, "otto", "operator")

    with pytest.raises(BadInput, match="unknown approval request"):
        store.get(request_id)
    assert store.get(made.id) == made


class StubbedReassigner(Reassigner):
    """A Reassigner whose cluster reads and writes are tables: the moves complete at once (small
    partitions), or stay in progress."""

    def __init__(self, complete: bool):
        super().__init__(admin=None, legacy_admin_factory=lambda: self)
        self.complete = complete
        self.throttles: list[str] = []
        self.replicas = {("t", 0): [1, 2]}

    def current(self, plan, *, check_brokers=False):
        return dict(self.replicas)

    def ongoing(self):
        return {} if self.complete or not self.throttles else {("t", 0): {}}

    def _set_throttles(self, moves, rate):
        self.throttles.append(f"set {rate}")

    def remove_throttles(self, moves):
        self.throttles.append("removed")

    def alter_partition_reassignments(self, request):
        if self.complete:
            self.replicas = {("t", 0): [3, 2]}
        return dict.fromkeys(request)


@pytest.mark.parametrize("complete, result, throttles", [
    (True, "ok", ["set 1000", "removed"]),  # nothing left to throttle: no throttle stays behind
    (False, "in-progress", ["set 1000"]),  # kept until verify sees the moves done
])
def test_a_reassignment_complete_at_its_read_back_removes_its_throttles_at_once(complete, result, throttles):
    from operations.reassign_plan import PartitionMove, ReassignmentPlan

    reassigner = StubbedReassigner(complete)
    plan = ReassignmentPlan("c", "balance over brokers 1,2,3", (PartitionMove("t", 0, (1, 2), (3, 2)),), 0.0)
    status = reassigner.execute(plan, 1000)
    assert (status.result, status.throttles_removed, reassigner.throttles) == (result, complete, throttles)
