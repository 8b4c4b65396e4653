"""A Streams group (KIP-1071) reset as ``kafka-streams-groups --reset-offsets`` (Kafka 4.3.1) does it,
on the real cluster: two instances of the demo's topology on ``group.protocol=streams`` (twin
groups, same input, same offsets); kpulse acts on one, the official tool on the other, and both end
with the same offsets and the same internal topics. The tests run in the file's order: the first
while the applications run, the others once they are stopped."""

from __future__ import annotations

import time
from datetime import datetime, UTC

import pytest

from operations.access import User
from operations.errors import BadInput, Refused
from operations.offset_plan import Scope, Strategy
from tests.conftest import one_error_line
from tests.group_ops_support import read_committed, wait_until
from tests.support import cli, official, operations_for, produce, start_streams_app

pytestmark = pytest.mark.cluster
ADMIN = User("tester", "admin")
PREFIX = "osg-"
ORDERS = PREFIX + "orders"
MINE, THEIRS = "osg-app-kpulse", "osg-app-official"
RECORDS = 20
FIRST_MS = int(time.time() * 1000) - 600_000
"""Record j of each partition has timestamp FIRST_MS + j seconds: ten minutes ago."""






def streams_groups(bootstrap: str, *args: str) -> str:
    return official("kafka-streams-groups", "--bootstrap-server", bootstrap, *args)


def new_offsets(output: str, group: str) -> dict[tuple[str, int], int]:
    """The GROUP TOPIC PARTITION NEW-OFFSET rows of a reset's output."""
    rows = [line.split() for line in output.splitlines()]
    return {(cells[1], int(cells[2])): int(cells[3]) for cells in rows
            if len(cells) == 4 and cells[0] == group and cells[2].isdigit()}


def internal_topics(bootstrap: str, group: str) -> set[str]:
    """The group's repartition and changelog topics that exist, named without the group id."""
    listed = official("kafka-topics", "--bootstrap-server", bootstrap, "--list").split()
    return {t.removeprefix(group) for t in listed if t.startswith(group + "-")}




class Twins:
    """The two applications: running until :meth:`stop`."""

    def __init__(self, bootstrap: str, stack):
        self.bootstrap = bootstrap
        self.stack = stack
        self.stopped = False

    def stop(self) -> None:
        if self.stopped:
            return
        self.stack.close()
        self.stopped = True
        wait_until(lambda: all("Empty" in streams_groups(self.bootstrap, "--describe", "--group", g, "--state")
                               for g in (MINE, THEIRS)), 120, "both Streams groups Empty")


@pytest.fixture(scope="module")
def twins(bootstrap, tmp_path_factory):
    from contextlib import ExitStack

    from tests.support import admin_for, create_topic

    admin = admin_for(bootstrap)
    for name in ("orders", "orders-by-region", "order-counts"):
        create_topic(admin, PREFIX + name, 3)
    produce(bootstrap, ORDERS, {p: RECORDS for p in range(3)}, first_ms=FIRST_MS, step_ms=1000)
    state = tmp_path_factory.mktemp("streams-groups")
    stack = ExitStack()
    stack.enter_context(start_streams_app(bootstrap, MINE, PREFIX, state / "mine", instance=1))
    stack.enter_context(start_streams_app(bootstrap, THEIRS, PREFIX, state / "theirs", instance=2))
    every = {(ORDERS, p): RECORDS for p in range(3)}
    try:
        wait_until(lambda: all(every.items() <= read_committed(bootstrap, g).items() for g in (MINE, THEIRS)), 240,
                   "both applications to commit every input record")
        yield Twins(bootstrap, stack)
    finally:
        stack.close()


def test_a_running_streams_group_is_refused_by_kpulse_and_by_the_official_tool(bootstrap, tmp_path, twins):
    operations = operations_for(tmp_path, bootstrap)
    before = {g: read_committed(bootstrap, g) for g in (MINE, THEIRS)}

    with pytest.raises(Refused, match=rf"^cannot reset the offsets of group '{MINE}': the streams group is \w+ with "
                                      r"1 active member\(s\) .*; stop them first"):
        operations.plan_streams_group_reset("test", MINE, Scope(all_topics=True), Strategy("to-earliest"),
                                            delete_internal_topics=True)
    line = one_error_line(cli(tmp_path / "kpulse.yaml", "reset-streams-app", "--application-id", MINE, "--execute"))
    assert "active member(s)" in line and "nothing changed" in line
    answer = streams_groups(bootstrap, "--reset-offsets", "--group", THEIRS, "--all-input-topics", "--to-earliest",
                            "--delete-all-internal-topics", "--execute")
    assert f"can only be reset if the group '{THEIRS}' is inactive" in answer

    assert {g: read_committed(bootstrap, g) for g in (MINE, THEIRS)} == before
    assert internal_topics(bootstrap, MINE) == internal_topics(bootstrap, THEIRS) == {
        "-by-customer-repartition", "-order-counts-changelog"}


def test_a_skip_on_a_running_streams_group_is_refused_with_the_stop_then_skip_sequence(bootstrap, tmp_path, twins):
    operations = operations_for(tmp_path, bootstrap)
    before = read_committed(bootstrap, MINE)

    with pytest.raises(Refused, match=rf"^cannot skip records of group '{MINE}' on {ORDERS}-1: the streams group is "
                                      r"\w+ with 1 active member\(s\) .*Stop its consumers .*kpulse skip-records"):
        operations.plan_skip_records("test", MINE, ORDERS, 1)
    assert read_committed(bootstrap, MINE) == before


def datetime_text(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]


STRATEGIES = [("to-earliest", None), ("to-latest", None), ("to-current", None), ("to-offset", "7"),
              ("shift-by", "-4"), ("shift-by", "50"), ("to-datetime", datetime_text(FIRST_MS + 5_500)),
              ("by-duration", "PT5M"), ("by-duration", "PT1H")]


def test_a_plan_shows_the_offsets_of_the_official_dry_run_for_every_strategy_and_scope(bootstrap, tmp_path, twins):
    twins.stop()
    operations = operations_for(tmp_path, bootstrap)
    plan_file = tmp_path / "plan.csv"
    plan_file.write_text(f"{ORDERS},0,3\n{ORDERS},2,99\n")
    cases = [(Scope(all_topics=True), "--all-input-topics", name, value) for name, value in STRATEGIES]
    cases += [(Scope.parse(False, [f"{ORDERS}:0,2"]), f"--input-topic={ORDERS}:0,2", "shift-by", "-2"),
              (Scope.parse(False, [ORDERS]), f"--input-topic={ORDERS}", "to-offset", "3"),
              (Scope(), None, "from-file", str(plan_file))]
    for scope, flag, name, value in cases:
        plan = operations.plan_streams_group_reset("test", MINE, scope, Strategy(name, value))
        args = ["--reset-offsets", "--group", MINE, f"--{name}"] + ([value] if value else []) + ([flag] if flag else [])
        expected = new_offsets(streams_groups(bootstrap, *args, "--dry-run"), MINE)
        assert expected and plan.new_offsets() == expected, (name, value, flag)
    assert read_committed(bootstrap, MINE) == read_committed(bootstrap, THEIRS)


def test_an_input_topic_without_committed_offsets_is_refused_as_the_official_tool_resets_nothing(bootstrap, tmp_path,
                                                                                               twins):
    twins.stop()
    operations = operations_for(tmp_path, bootstrap)
    region = PREFIX + "orders-by-region"
    if (region, 0) in read_committed(bootstrap, MINE):
        pytest.skip("the topology committed on its intermediate topic")
    with pytest.raises(BadInput, match=f"not part of group '{MINE}'"):
        operations.plan_streams_group_reset("test", MINE, Scope.parse(False, [region]), Strategy("to-earliest"))
    answer = streams_groups(bootstrap, "--reset-offsets", "--group", MINE, "--input-topic", region, "--to-earliest",
                            "--dry-run")
    assert "not part of the group" in answer and new_offsets(answer, MINE) == {}


def test_an_executed_reset_equals_the_official_execute_and_keeps_the_internal_topics_without_the_flag(
        bootstrap, tmp_path, twins):
    twins.stop()
    operations = operations_for(tmp_path, bootstrap)
    plan = operations.plan_streams_group_reset("test", MINE, Scope(all_topics=True), Strategy("shift-by", "-5"))

    assert plan.delete_topics == () and plan.kept_topics == ()
    outcome = operations.reset_streams_group(ADMIN, plan)
    answer = streams_groups(bootstrap, "--reset-offsets", "--group", THEIRS, "--all-input-topics", "--shift-by", "-5",
                            "--execute")

    assert outcome.result == "ok" and "Error" not in answer, (outcome, answer)
    assert read_committed(bootstrap, MINE) == read_committed(bootstrap, THEIRS) == {(ORDERS, p): RECORDS - 5 for p in range(3)}
    assert internal_topics(bootstrap, MINE) == internal_topics(bootstrap, THEIRS) == {
        "-by-customer-repartition", "-order-counts-changelog"}


def test_a_skip_on_an_input_partition_moves_that_one_offset_as_the_official_shift_by_one(bootstrap, tmp_path, twins):
    twins.stop()
    operations = operations_for(tmp_path, bootstrap)
    before = read_committed(bootstrap, MINE)
    plan = operations.plan_skip_records("test", MINE, ORDERS, 1)
    answer = streams_groups(bootstrap, "--reset-offsets", "--group", MINE, "--input-topic", f"{ORDERS}:1",
                            "--shift-by", "1", "--dry-run")

    assert (plan.group_type, plan.from_offset) == ("streams", before[(ORDERS, 1)])
    assert new_offsets(answer, MINE) == {(ORDERS, 1): plan.to_offset} == {(ORDERS, 1): before[(ORDERS, 1)] + 1}
    assert plan.record_timestamp == FIRST_MS + plan.from_offset * 1000  # record j was stamped FIRST_MS + j s
    outcome = operations.skip_records(User("tester", "operator"), plan)
    assert outcome.result == "ok", outcome.error
    assert read_committed(bootstrap, MINE) == {**before, (ORDERS, 1): plan.to_offset}
    assert internal_topics(bootstrap, MINE) == {"-by-customer-repartition", "-order-counts-changelog"}


def test_reset_streams_app_deletes_the_internal_topics_as_delete_all_internal_topics_does(bootstrap, tmp_path, twins):
    twins.stop()
    operations = operations_for(tmp_path, bootstrap)
    result = cli(tmp_path / "kpulse.yaml", "reset-streams-app", "--application-id", MINE, "--execute")
    answer = streams_groups(bootstrap, "--reset-offsets", "--group", THEIRS, "--all-input-topics", "--to-earliest",
                            "--delete-all-internal-topics", "--execute")

    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Streams group {MINE} (Empty): --to-earliest, scope all input topics" in result.stdout
    assert "KafkaStreams#cleanUp()" in result.stdout and "Error" not in answer
    assert read_committed(bootstrap, MINE) == read_committed(bootstrap, THEIRS) == {(ORDERS, p): 0 for p in range(3)}
    wait_until(lambda: internal_topics(bootstrap, MINE) == internal_topics(bootstrap, THEIRS) == set(), 60,
               "both groups' internal topics deleted")
    [row] = operations.audit.read().query("action == 'reset-streams-group'").to_dict("records")
    assert (row["target"], row["result"]) == (f"group {MINE}", "ok")
    assert '"deleted": ["' + MINE + '-by-customer-repartition"' in row["after_json"]


def test_delete_offsets_and_delete_of_a_streams_group_equal_kafka_streams_groups(bootstrap, tmp_path, twins):
    twins.stop()
    operations = operations_for(tmp_path, bootstrap)
    plan = operations.plan_delete_offsets("test", MINE, [ORDERS])

    assert (plan.group_type, len(plan.partitions)) == ("streams", 3)
    assert operations.delete_offsets(ADMIN, plan).result == "ok"
    answer = streams_groups(bootstrap, "--delete-offsets", "--group", THEIRS, "--input-topic", ORDERS)
    assert "Request succeeded" in answer, answer
    assert read_committed(bootstrap, MINE) == read_committed(bootstrap, THEIRS) == {}

    plan = operations.plan_delete_group("test", MINE, delete_internal_topics=True)
    assert (plan.group_type, plan.delete_topics) == ("streams", ())  # deleted by the reset before
    assert operations.delete_group(ADMIN, plan).result == "ok"
    answer = streams_groups(bootstrap, "--delete", "--group", THEIRS, "--delete-all-internal-topics")
    assert "was successful" in answer, answer
    assert {MINE, THEIRS} & set(official("kafka-groups", "--bootstrap-server", bootstrap, "--list").split()) == set()
