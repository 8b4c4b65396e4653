"""Consumer group offset resets on the real cluster: for every strategy and scope, kpulse leaves
exactly the committed offsets that `kafka-consumer-groups --reset-offsets --execute` leaves on a
twin group that started from the same offsets."""

from __future__ import annotations

import contextlib
import itertools
import subprocess
import time

import pytest

from operations.access import User
from operations.errors import Refused
from operations.group_requests import GroupRequests
from operations.offset_plan import Scope, Strategy
from tests.conftest import kpulse, one_error_line
from tests.support import (
    admin_for, commit, committed, config_file, create_topic, official, operations_for, produce,
)

pytestmark = pytest.mark.cluster

A, B = "ops-reset-a", "ops-reset-b"
MINUTE = 60_000
COUNTS_A = {0: 20, 1: 12, 2: 25}
COUNTS_B = {0: 6, 1: 6}
LOG_START_A0 = 3
INITIAL = {(A, 0): 10, (A, 1): 5, (A, 2): 20, (B, 0): 4}
"""B-1 has no committed offset on purpose (to-current falls back to the log end there)."""
ADMIN = User("tester", "admin")
_counter = itertools.count()


@pytest.fixture(scope="module")
def topics(bootstrap):
    """Two topics; message j of every partition is stamped first_ms + j minutes (an hour ago);
    A-0 starts at offset 3 (records deleted), so clamping to the log start shows."""
    from confluent_kafka import TopicPartition

    admin = admin_for(bootstrap)
    create_topic(admin, A, 3)
    create_topic(admin, B, 2)
    first_ms = (int(time.time()) - 3600) * 1000
    produce(bootstrap, A, COUNTS_A, first_ms=first_ms, step_ms=MINUTE)
    produce(bootstrap, B, COUNTS_B, first_ms=first_ms, step_ms=MINUTE)
    admin.delete_records([TopicPartition(A, 0, LOG_START_A0)], request_timeout=15)[TopicPartition(A, 0, LOG_START_A0)].result(timeout=20)
    return {"admin": admin, "first_ms": first_ms}


@pytest.fixture(scope="module")
def operations(tmp_path_factory, bootstrap):
    return operations_for(tmp_path_factory.mktemp("ops-offsets"), bootstrap)


def twin_groups(admin, name: str) -> tuple[str, str]:
    number = next(_counter)
    kpulse_group, tool_group = f"ops-k{number}-{name}", f"ops-t{number}-{name}"
    commit(admin, kpulse_group, INITIAL)
    commit(admin, tool_group, INITIAL)
    return kpulse_group, tool_group


def strategy_args(name: str, topics, tmp_path) -> list[str]:
    first_ms = topics["first_ms"]
    if name in ("to-earliest", "to-latest", "to-current"):
        return [f"--{name}"]
    if name == "to-offset":
        return ["--to-offset", "15"]
    if name == "shift-by":
        return ["--shift-by", "-8"]
    if name == "to-datetime":
        moment = first_ms + 8 * MINUTE - 30_000  # half a minute before message 8
        return ["--to-datetime", time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(moment / 1000)) + f".{moment % 1000:03d}"]
    if name == "by-duration":
        seconds = (int(time.time() * 1000) - (first_ms + 5 * MINUTE - 30_000)) // 1000
        return ["--by-duration", f"PT{seconds}S"]
    plan = tmp_path / "plan.csv"
    plan.write_text(f"{A},0,1\n{A},1,30\n{B},0,2\n")  # below log start, above log end, inside
    return ["--from-file", str(plan)]


SCOPES = {"all-topics": ["--all-topics"], "topic": ["--topic", A], "partitions": ["--topic", f"{A}:0,2"]}
STRATEGY_NAMES = ("to-earliest", "to-latest", "to-current", "to-offset", "shift-by", "to-datetime",
                  "by-duration", "from-file")


def reset_both(operations, topics, tmp_path, scope_args: list[str], strategy: list[str], name: str):
    admin = topics["admin"]
    mine, theirs = twin_groups(admin, name)
    scope = Scope.parse("--all-topics" in scope_args, scope_args[1:] if scope_args[0] == "--topic" else None)
    value = strategy[1] if len(strategy) > 1 else None
    plan = operations.plan_reset_offsets("test", mine, scope, Strategy(strategy[0][2:], value))
    outcome = operations.reset_offsets(ADMIN, plan)
    output = official("kafka-consumer-groups", "--bootstrap-server", operations.config.cluster("test").bootstrap_servers,
                      "--group", theirs, "--reset-offsets", *scope_args, *strategy, "--execute")
    assert not output.startswith("EXIT"), output
    return plan, outcome, committed(admin, mine), committed(admin, theirs)


@pytest.mark.parametrize("scope", SCOPES)
@pytest.mark.parametrize("strategy", STRATEGY_NAMES)
def test_kpulse_leaves_the_offsets_the_official_tool_leaves(operations, topics, tmp_path, scope, strategy):
    args = strategy_args(strategy, topics, tmp_path)
    plan, outcome, mine, theirs = reset_both(operations, topics, tmp_path, SCOPES[scope], args, f"{strategy}-{scope}")

    assert outcome.result == "ok", outcome
    assert mine == theirs
    assert {(p.topic, p.partition): p.after for p in outcome.partitions} == plan.new_offsets()
    if strategy != "to-current":
        assert mine != INITIAL, "the case must move at least one offset"


def test_to_current_on_a_partition_without_commit_moves_it_to_the_log_end_like_the_tool(operations, topics, tmp_path):
    plan, outcome, mine, theirs = reset_both(operations, topics, tmp_path, ["--topic", B], ["--to-current"], "current-b")

    assert mine == theirs
    assert mine[(B, 1)] == COUNTS_B[1] and mine[(B, 0)] == INITIAL[(B, 0)]


def test_the_plan_shows_lag_replay_and_skip_and_clamps_to_the_log(operations, topics):
    mine, _ = twin_groups(topics["admin"], "plan")
    plan = operations.plan_reset_offsets("test", mine, Scope.parse(False, [A]), Strategy("shift-by", "-8"))

    rows = {(p.topic, p.partition): p for p in plan.partitions}
    assert [(r.current, r.new, r.lag_before, r.lag_after, r.replayed, r.skipped) for r in rows.values()] == [
        (10, LOG_START_A0, 10, 17, 7, 0),  # 10 - 8 = 2 is below the log start: clamped to 3
        (5, 0, 7, 12, 5, 0),
        (20, 12, 5, 13, 8, 0),
    ]
    assert rows[(A, 0)].requested == 2 and len(plan.warnings) == 2
    assert committed(topics["admin"], mine) == INITIAL, "planning changes nothing"


def test_an_exported_csv_plan_is_read_back_by_the_official_tool(operations, topics, tmp_path):
    mine, theirs = twin_groups(topics["admin"], "export")
    plan = operations.plan_reset_offsets("test", mine, Scope.parse(True, None), Strategy("to-earliest"))
    exported = tmp_path / "exported.csv"
    exported.write_text(plan.to_csv())

    output = official("kafka-consumer-groups", "--bootstrap-server", operations.config.cluster("test").bootstrap_servers,
                      "--group", theirs, "--reset-offsets", "--from-file", str(exported), "--execute")

    assert not output.startswith("EXIT"), output
    assert committed(topics["admin"], theirs) == plan.new_offsets() == {(A, 0): 3, (A, 1): 0, (A, 2): 0, (B, 0): 0}


def test_a_group_the_cluster_lists_but_librdkafka_describes_as_dead_is_refused(operations, topics):
    """Deleted between the listing and the description: its members cannot be read, so neither
    the planner nor the executor takes Dead for stopped (issue 13)."""
    from operations.offset_reset import execute_offset_reset, plan_offset_reset
    from tests.group_ops_support import group_requests

    admin = topics["admin"]
    mine, _ = twin_groups(admin, "gone")
    listed = operations._group_listing("test")()
    plan = operations.plan_reset_offsets("test", mine, Scope.parse(True, None), Strategy("to-earliest"))
    admin.delete_consumer_groups([mine], request_timeout=15)[mine].result(timeout=20)

    refusal = f"^cannot reset the offsets of group '{mine}': it is listed by the cluster \\(.+\\) but described as Dead"
    with group_requests(operations.config.cluster("test").bootstrap_servers) as requests:
        with pytest.raises(Refused, match=refusal):
            plan_offset_reset(admin, requests, "test", mine, Scope.parse(True, None), Strategy("to-earliest"),
                              list_groups=lambda: listed)
        with pytest.raises(Refused, match=refusal):
            execute_offset_reset(admin, requests, plan, list_groups=lambda: listed)
    assert committed(admin, mine) == {}


class StaleCoordinator(GroupRequests):
    """Group requests whose first FindCoordinator answer of every request is replaced by another
    broker, as when the coordinator has just moved away: that broker answers NOT_COORDINATOR.
    ``codes``: each answer's group error code, in order."""

    def __init__(self, bootstrap: str):
        from kafka.admin import KafkaAdminClient

        super().__init__(lambda: KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kpulse-test"))
        self.codes: list[int] = []
        self.stale = False

    def _call(self, group_id, request, answer, what, **options):
        def recorded(response):
            code, result = answer(response)
            self.codes.append(code)
            return code, result

        self.stale = True
        return super()._call(group_id, request, recorded, what, **options)

    async def _coordinator(self, manager, group_id):
        node = await super()._coordinator(manager, group_id)
        if not self.stale:
            return node
        self.stale = False
        return next(broker.node_id for broker in manager.cluster.brokers() if broker.node_id != node)


def test_a_reset_whose_coordinator_moved_away_asks_the_new_one_and_leaves_what_the_tool_leaves(operations, topics):
    """Every offset read and commit of the reset first reaches a broker that is not the group's
    coordinator (as right after the coordinator moved: librdkafka's ListConsumerGroupOffsets and
    AlterConsumerGroupOffsets could abort the process there, librdkafka #5040). Each is answered
    NOT_COORDINATOR, asked again of the coordinator, and the reset ends as the official tool's."""
    from operations.offset_reset import execute_offset_reset, plan_offset_reset

    admin = topics["admin"]
    bootstrap = operations.config.cluster("test").bootstrap_servers
    mine, theirs = twin_groups(admin, "moved")
    with StaleCoordinator(bootstrap) as requests:
        plan = plan_offset_reset(admin, requests, "test", mine, Scope.parse(True, None), Strategy("shift-by", "-8"),
                                 list_groups=operations._group_listing("test"))
        outcome = execute_offset_reset(admin, requests, plan, list_groups=operations._group_listing("test"))
    output = official("kafka-consumer-groups", "--bootstrap-server", bootstrap, "--group", theirs, "--reset-offsets",
                      "--all-topics", "--shift-by", "-8", "--execute")

    assert not output.startswith("EXIT"), output
    not_coordinator = 16
    assert requests.codes == [not_coordinator, 0] * 4  # the plan's read; the executor's read, commit, read-back
    assert outcome.result == "ok", outcome
    assert committed(admin, mine) == committed(admin, theirs) == plan.new_offsets() != INITIAL


@contextlib.contextmanager
def share_consumer(operations, group: str, topic: str, log_path):
    """``kafka-console-share-consumer`` in ``group``, a share group (KIP-932), until the cluster
    lists the group as a stable share group."""
    from localkafka.runtime import ensure_runtime, java_command

    bootstrap = operations.config.cluster("test").bootstrap_servers
    log = open(log_path, "w")
    process = subprocess.Popen(java_command(ensure_runtime(), "org.apache.kafka.tools.consumer.ConsoleShareConsumer",
                                            ["--bootstrap-server", bootstrap, "--group", group, "--topic", topic]),
                               stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 90
        while not ((listing := operations._group_listing("test")().get(group)) and listing.group_type == "share"
                   and listing.state == "Stable"):
            assert time.monotonic() < deadline and process.poll() is None, log_path.read_text()[-3000:]
            time.sleep(0.5)
        yield
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def test_an_offset_reset_of_a_running_share_group_is_refused_in_one_line(operations, topics, tmp_path):
    """librdkafka shows a share group as Dead with no members: the listing of every group type
    says what it is (issue 13)."""
    group = f"ops-share{next(_counter)}"
    cli = str(config_file(tmp_path / "kpulse.yaml", operations.config.cluster("test").bootstrap_servers,
                          tmp_path / "lake"))
    with share_consumer(operations, group, B, tmp_path / "share.log"):
        result = kpulse("--config", cli, "reset-offsets", "--group", group, "--topic", B, "--to-earliest",
                        "--execute", check=False)
        assert one_error_line(result) == (
            f"kpulse: error: cannot reset the offsets of group '{group}': it is a share group (Stable), not a "
            "classic or consumer group; nothing changed (kpulse reset-share-group resets share groups, as "
            "kafka-share-groups does)")
