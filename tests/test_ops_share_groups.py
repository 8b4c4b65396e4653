"""A share group's start offsets reset as ``kafka-share-groups --reset-offsets`` (Kafka 4.3.1) does it,
and its offsets and the group deleted as ``--delete-offsets`` / ``--delete`` do, on the real cluster:
two share groups read the same topic (``kafka-console-share-consumer``, ``share.auto.offset.reset``
earliest); kpulse acts on one, the official tool on the other, and ``kafka-share-groups --describe``
shows the same afterwards. The tests run in the file's order: the first while the consumers run."""

from __future__ import annotations

import time
from contextlib import ExitStack
from datetime import datetime, UTC

import pytest

from operations.access import User
from operations.errors import BadInput, Refused
from operations.offset_plan import Scope, Strategy
from tests.group_ops_support import wait_until
from tests.support import admin_for, create_topic, official, operations_for, produce, start_share_consumer

pytestmark = pytest.mark.cluster
ADMIN = User("tester", "admin")
TOPIC = "osh-queue"
MINE, THEIRS = "osh-kpulse", "osh-official"
RECORDS = 10
FIRST_MS = int(time.time() * 1000) - 600_000


def share_groups(bootstrap: str, *args: str) -> str:
    return official("kafka-share-groups", "--bootstrap-server", bootstrap, *args)


def described(bootstrap: str, group: str) -> dict[tuple[str, int], tuple[str, str]]:
    """(topic, partition) -> (START-OFFSET, LAG) as ``kafka-share-groups --describe`` prints them."""
    rows = [line.split() for line in share_groups(bootstrap, "--describe", "--group", group).splitlines()]
    return {(cells[1], int(cells[2])): (cells[3], cells[4]) for cells in rows
            if len(cells) == 5 and cells[0] == group and cells[2].isdigit()}


def new_offsets(output: str, group: str) -> dict[tuple[str, int], int]:
    rows = [line.split() for line in output.splitlines()]
    return {(cells[1], int(cells[2])): int(cells[3]) for cells in rows
            if len(cells) == 4 and cells[0] == group and cells[2].isdigit()}




class Twins:
    def __init__(self, bootstrap: str, stack: ExitStack):
        self.bootstrap, self.stack, self.stopped = bootstrap, stack, False

    def stop(self) -> None:
        if not self.stopped:
            self.stack.close()
            self.stopped = True
            wait_until(lambda: all("Empty" in share_groups(self.bootstrap, "--describe", "--group", g, "--state")
                                   for g in (MINE, THEIRS)), 120, "both share groups Empty")


@pytest.fixture(scope="module")
def twins(bootstrap):
    create_topic(admin_for(bootstrap), TOPIC, 3)
    produce(bootstrap, TOPIC, {p: RECORDS for p in range(3)}, first_ms=FIRST_MS, step_ms=1000)
    stack = ExitStack()
    for group in (MINE, THEIRS):
        stack.enter_context(start_share_consumer(bootstrap, TOPIC, group))
    try:
        every = {(TOPIC, p) for p in range(3)}
        wait_until(lambda: all(set(described(bootstrap, g)) == every and
                               {lag for _, lag in described(bootstrap, g).values()} == {"0"} for g in (MINE, THEIRS)),
                   180, "both share groups to acknowledge every record")
        yield Twins(bootstrap, stack)
    finally:
        stack.close()


def test_an_active_share_group_is_refused_by_kpulse_and_by_the_official_tool(bootstrap, tmp_path, twins):
    operations = operations_for(tmp_path, bootstrap)
    before = {g: described(bootstrap, g) for g in (MINE, THEIRS)}

    with pytest.raises(Refused, match=rf"^cannot reset the start offsets of share group '{MINE}': the share group is "
                                      r"Stable with 1 active member\(s\)"):
        operations.plan_share_reset("test", MINE, Scope(all_topics=True), Strategy("to-latest"))
    with pytest.raises(Refused, match="active member"):
        operations.plan_delete_group("test", MINE)
    answer = share_groups(bootstrap, "--reset-offsets", "--group", THEIRS, "--all-topics", "--to-latest", "--execute")
    assert f"Share group '{THEIRS}' is not empty." in answer
    assert {g: described(bootstrap, g) for g in (MINE, THEIRS)} == before


def datetime_text(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]


def test_a_plan_shows_the_offsets_of_the_official_dry_run(bootstrap, tmp_path, twins):
    twins.stop()
    operations = operations_for(tmp_path, bootstrap)
    cases = [(Scope(all_topics=True), ["--all-topics"], "to-earliest", None),
             (Scope(all_topics=True), ["--all-topics"], "to-latest", None),
             (Scope.parse(False, [f"{TOPIC}:0,2"]), ["--topic", f"{TOPIC}:0,2"], "to-datetime",
              datetime_text(FIRST_MS + 3_500)),
             (Scope.parse(False, [TOPIC]), ["--topic", TOPIC], "to-datetime", datetime_text(FIRST_MS + 3_600_000))]
    for scope, flags, name, value in cases:
        plan = operations.plan_share_reset("test", MINE, scope, Strategy(name, value))
        expected = new_offsets(share_groups(bootstrap, "--reset-offsets", "--group", MINE, *flags, f"--{name}",
                                            *([value] if value else []), "--dry-run"), MINE)
        assert expected and plan.new_offsets() == expected, (name, value)
    with pytest.raises(BadInput, match="--shift-by is not a strategy of kafka-share-groups --reset-offsets"):
        operations.plan_share_reset("test", MINE, Scope(all_topics=True), Strategy("shift-by", "1"))


def test_an_executed_reset_equals_the_official_execute(bootstrap, tmp_path, twins):
    twins.stop()
    operations = operations_for(tmp_path, bootstrap)
    for name, value in (("to-latest", None), ("to-datetime", datetime_text(FIRST_MS + 4_200))):
        plan = operations.plan_share_reset("test", MINE, Scope(all_topics=True), Strategy(name, value))
        outcome = operations.reset_share_group(ADMIN, plan)
        answer = share_groups(bootstrap, "--reset-offsets", "--group", THEIRS, "--all-topics", f"--{name}",
                              *([value] if value else []), "--execute")
        assert outcome.result == "ok" and "Error" not in answer, (outcome, answer)
        mine = {tp: start for tp, (start, _) in described(bootstrap, MINE).items()}
        assert mine == {tp: start for tp, (start, _) in described(bootstrap, THEIRS).items()}
        assert mine == {(TOPIC, p): str(RECORDS if name == "to-latest" else 5) for p in range(3)}
    rows = operations.audit.read().query("action == 'reset-share-group'").to_dict("records")
    assert [r["result"] for r in rows] == ["ok", "ok"] and all(r["target"] == f"group {MINE}" for r in rows)


def test_delete_offsets_and_delete_of_a_share_group_equal_kafka_share_groups(bootstrap, tmp_path, twins):
    twins.stop()
    operations = operations_for(tmp_path, bootstrap)
    plan = operations.plan_delete_offsets("test", MINE, [TOPIC])

    assert (plan.group_type, len(plan.partitions)) == ("share", 3)
    assert operations.delete_offsets(ADMIN, plan).result == "ok"
    answer = share_groups(bootstrap, "--delete-offsets", "--group", THEIRS, "--topic", TOPIC)
    assert "EXIT" not in answer and "Error" not in answer, answer
    assert described(bootstrap, MINE) == described(bootstrap, THEIRS)

    plan = operations.plan_delete_group("test", MINE)
    assert plan.group_type == "share"
    assert operations.delete_group(ADMIN, plan).result == "ok"
    answer = share_groups(bootstrap, "--delete", "--group", THEIRS)
    assert "successful" in answer, answer
    assert {MINE, THEIRS} & set(official("kafka-groups", "--bootstrap-server", bootstrap, "--list").split()) == set()
