"""Streams application reset on the real cluster, against `kafka-streams-application-reset` on a
twin application: both start from the same committed offsets and the same kinds of topics
(internal repartition and changelog topics, a look-alike topic that is not internal, another
application's topics); afterwards both leave the same offsets and delete the same topics."""

from __future__ import annotations

import contextlib
import itertools
import re
import subprocess
import time
from pathlib import Path

import pytest

from operations.access import User
from operations.errors import BadInput, Refused
from operations.offset_plan import Strategy
from tests.conftest import kpulse, one_error_line
from tests.support import (
    admin_for, commit, committed, config_file, create_topic, official, operations_for, produce,
)

pytestmark = pytest.mark.cluster

IN, MID, OUT = "ops-streams-in", "ops-streams-mid", "ops-streams-out"
ADMIN = User("ada", "admin")
_counter = itertools.count()


@pytest.fixture(scope="module")
def shared_topics(bootstrap):
    admin = admin_for(bootstrap)
    for topic, partitions in ((IN, 2), (MID, 2), (OUT, 1)):
        create_topic(admin, topic, partitions)
    now = int(time.time() * 1000)
    produce(bootstrap, IN, {0: 10, 1: 8}, first_ms=now - 60_000, step_ms=10)
    produce(bootstrap, MID, {0: 6, 1: 4}, first_ms=now - 60_000, step_ms=10)
    produce(bootstrap, OUT, {0: 5}, first_ms=now - 60_000, step_ms=10)
    return admin


@pytest.fixture(scope="module")
def operations(tmp_path_factory, bootstrap):
    return operations_for(tmp_path_factory.mktemp("ops-streams"), bootstrap)


def app_with_topics(admin, bootstrap, app: str) -> None:
    """What a stopped Streams app leaves behind: internal topics with data, committed offsets on
    input (partition 1 never committed), intermediate and repartition topics."""
    for suffix, partitions in (("-by-key-repartition", 2), ("-counts-changelog", 1), ("-notes", 1),
                               ("x-counts-changelog", 1)):
        create_topic(admin, app + suffix, partitions)
    produce(bootstrap, app + "-by-key-repartition", {0: 3, 1: 3}, first_ms=int(time.time() * 1000), step_ms=1)
    commit(admin, app, {(IN, 0): 7, (MID, 0): 2, (app + "-by-key-repartition", 0): 3, (OUT, 0): 1})


def topics_of(admin, app: str) -> set[str]:
    return {t.replace(app, "APP") for t in admin.list_topics(timeout=10).topics if t.startswith(app)}


def offsets_of(admin, app: str) -> dict:
    return {(t.replace(app, "APP"), p): o for (t, p), o in committed(admin, app).items()}


@pytest.mark.parametrize("strategy", [None, ("shift-by", "-2"), ("to-offset", "5")])
def test_kpulse_reset_equals_the_official_reset_of_a_twin_app(shared_topics, operations, bootstrap, strategy):
    number = next(_counter)
    mine, theirs = f"ops-app{number}-k", f"ops-app{number}-t"
    admin = shared_topics
    for app in (mine, theirs):
        app_with_topics(admin, bootstrap, app)

    plan = operations.plan_streams_reset("test", mine, [IN], [MID], strategy=Strategy(*strategy) if strategy else None)
    outcome = operations.reset_streams_app(ADMIN, plan)
    flags = [f"--{strategy[0]}", strategy[1]] if strategy else []
    output = official("kafka-streams-application-reset", "--bootstrap-server", bootstrap, "--application-id", theirs,
                      "--input-topics", IN, "--intermediate-topics", MID, *flags)
    assert not output.startswith("EXIT"), output
    deadline = time.monotonic() + 30  # the coordinator forgets offsets of deleted topics a moment later
    while time.monotonic() < deadline and any(("APP-by-key-repartition", 0) in offsets_of(admin, app)
                                              for app in (mine, theirs)):
        time.sleep(0.3)

    assert outcome.result == "ok", outcome
    assert set(plan.delete_topics) == {f"{mine}-by-key-repartition", f"{mine}-counts-changelog"}
    assert topics_of(admin, mine) == topics_of(admin, theirs) == {"APP-notes", "APPx-counts-changelog"}
    assert offsets_of(admin, mine) == offsets_of(admin, theirs)
    assert offsets_of(admin, mine)[(IN, 0)] == {None: 0, "shift-by": 5, "to-offset": 5}[strategy and strategy[0]]
    assert offsets_of(admin, mine)[(MID, 1)] == 4, "intermediate topics go to the end"
    assert offsets_of(admin, mine)[(OUT, 0)] == 1, "output topics are untouched"
    assert "KafkaStreams#cleanUp()" in outcome.local_state_note


def test_a_typo_in_the_application_id_gets_a_did_you_mean_and_changes_nothing(shared_topics, operations, bootstrap):
    app = "ops-app-typo"
    app_with_topics(shared_topics, bootstrap, app)
    with pytest.raises(BadInput, match=f"unknown application id 'ops-app-tpyo' \\(did you mean '{app}'\\?\\)"):
        operations.plan_streams_reset("test", "ops-app-tpyo", [IN], [])
    with pytest.raises(BadInput, match=r"unknown topic 'ops-streams-inn' \(did you mean 'ops-streams-in'\?\)"):
        operations.plan_streams_reset("test", app, ["ops-streams-inn"], [])
    with pytest.raises(BadInput, match="not internal topics of ops-app-typo"):
        operations.plan_streams_reset("test", app, [IN], [], internal_topics=[OUT])
    assert f"{app}-counts-changelog" in shared_topics.list_topics(timeout=10).topics


def test_a_running_application_is_refused_and_nothing_is_deleted(shared_topics, operations, bootstrap):
    from confluent_kafka import Consumer

    app = "ops-app-running"
    app_with_topics(shared_topics, bootstrap, app)
    plan = operations.plan_streams_reset("test", app, [IN], [MID])
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": app, "client.id": "instance-1",
                         "enable.auto.commit": False})
    consumer.subscribe([IN])
    try:
        deadline = time.monotonic() + 30
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
        with pytest.raises(Refused, match="cannot reset the Streams application 'ops-app-running': it is Stable"):
            operations.reset_streams_app(ADMIN, plan)
    finally:
        consumer.close()
    assert f"{app}-counts-changelog" in shared_topics.list_topics(timeout=10).topics
    assert committed(shared_topics, app)[(IN, 0)] == 7


def test_a_skip_on_a_stopped_applications_input_partition_moves_only_that_offset_and_deletes_nothing(
        shared_topics, operations, bootstrap):
    app = "ops-app-skip"
    app_with_topics(shared_topics, bootstrap, app)
    before, topics = offsets_of(shared_topics, app), topics_of(shared_topics, app)
    plan = operations.plan_skip_records("test", app, IN, 0)
    answer = official("kafka-consumer-groups", "--bootstrap-server", bootstrap, "--reset-offsets", "--group", app,
                      "--topic", f"{IN}:0", "--shift-by", "1", "--dry-run")

    assert (plan.group_type, plan.from_offset, plan.to_offset) == ("classic", 7, 8)
    assert re.search(rf"{app}\s+{IN}\s+0\s+8\b", answer), answer
    assert operations.skip_records(User("otto", "operator"), plan).result == "ok"
    assert offsets_of(shared_topics, app) == {**before, (IN, 0): 8}
    assert topics_of(shared_topics, app) == topics


# --- a prefix of another application's id (issue 13, item 1) ----------------------------------------

@contextlib.contextmanager
def active_member(bootstrap: str, group: str, topic: str = IN):
    """A running instance: a classic consumer in ``group`` with partitions assigned."""
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": "instance-1",
                         "enable.auto.commit": False})
    consumer.subscribe([topic])
    try:
        deadline = time.monotonic() + 30
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
        assert consumer.assignment(), f"{group} got no assignment"
        yield consumer
    finally:
        consumer.close()


def running_app_behind_a_prefix(admin, bootstrap) -> tuple[str, str]:
    """``X-app``'s internal topics and offsets, and a prefix ``X`` of its id (no group, no topic of
    its own)."""
    prefix = f"ops-pfx{next(_counter)}"
    app_with_topics(admin, bootstrap, prefix + "-app")
    return prefix, prefix + "-app"


def cli_config(tmp_path, bootstrap):
    return str(config_file(tmp_path / "kpulse.yaml", bootstrap, tmp_path / "lake"))


def test_a_prefix_that_is_no_application_is_unknown_and_deletes_nothing_of_the_running_app(
        shared_topics, operations, bootstrap, tmp_path):
    prefix, app = running_app_behind_a_prefix(shared_topics, bootstrap)
    with active_member(bootstrap, app):
        with pytest.raises(BadInput, match=f"^unknown application id '{prefix}'"):
            operations.plan_streams_reset("test", prefix, [IN], [])
        line = one_error_line(kpulse("--config", cli_config(tmp_path, bootstrap), "reset-streams-app",
                                     "--application-id", prefix, "--input-topics", IN, "--execute", check=False))
    assert line.startswith(f"kpulse: error: unknown application id '{prefix}'")
    assert topics_of(shared_topics, app) == {"APP-by-key-repartition", "APP-counts-changelog", "APP-notes",
                                             "APPx-counts-changelog"}
    assert committed(shared_topics, app)[(IN, 0)] == 7


def test_a_prefix_that_is_an_application_too_is_refused_while_the_longer_one_runs(
        shared_topics, operations, bootstrap, tmp_path):
    prefix, app = running_app_behind_a_prefix(shared_topics, bootstrap)
    commit(shared_topics, prefix, {(IN, 0): 3})
    stale = operations.plan_streams_reset("test", prefix, [IN], [])  # before the other app started
    with active_member(bootstrap, app):
        with pytest.raises(Refused, match=f"application '{app}' .*active members instance-1@"):
            operations.plan_streams_reset("test", prefix, [IN], [])
        with pytest.raises(Refused, match=f"application '{app}' .*active members instance-1@"):
            operations.reset_streams_app(ADMIN, stale)
        line = one_error_line(kpulse("--config", cli_config(tmp_path, bootstrap), "reset-streams-app",
                                     "--application-id", prefix, "--input-topics", IN, "--execute", check=False))
    assert line.startswith("kpulse: error: cannot reset the Streams application") and f"'{app}'" in line
    assert f"{app}-counts-changelog" in shared_topics.list_topics(timeout=10).topics
    assert committed(shared_topics, prefix) == {(IN, 0): 3}


def plan_once_every_broker_knows(operations, application_id: str, new_topic: str):
    """The plan of ``application_id`` once it deletes ``new_topic``, just created (a broker's
    metadata can lag a moment behind the controller's)."""
    deadline = time.monotonic() + 30
    while new_topic not in (plan := operations.plan_streams_reset("test", application_id, [IN], [])).delete_topics:
        assert time.monotonic() < deadline, plan
        time.sleep(0.3)
    return plan


def test_topics_of_a_longer_application_id_are_left_alone_and_a_stale_plan_that_would_delete_them_is_refused(
        shared_topics, operations, bootstrap):
    prefix, app = running_app_behind_a_prefix(shared_topics, bootstrap)
    create_topic(shared_topics, prefix + "-own-changelog", 1)
    commit(shared_topics, prefix, {(IN, 0): 3})
    plan = plan_once_every_broker_knows(operations, prefix, prefix + "-own-changelog")
    # no application is called prefix-appx: its look-alike topic is the prefix's own
    assert plan.delete_topics == (prefix + "-appx-counts-changelog", prefix + "-own-changelog")
    assert dict(plan.foreign) == {f"{app}-by-key-repartition": app, f"{app}-counts-changelog": app}

    other = f"{prefix}-late"  # an application that appears after the plan: its topics are not ours
    create_topic(shared_topics, other + "-store-changelog", 1)
    stale = plan_once_every_broker_knows(operations, prefix, other + "-store-changelog")
    commit(shared_topics, other, {(IN, 0): 1})
    with pytest.raises(Refused, match=f"{other}-store-changelog belongs to application '{other}'"):
        operations.reset_streams_app(ADMIN, stale)
    assert other + "-store-changelog" in shared_topics.list_topics(timeout=10).topics
    assert committed(shared_topics, prefix) == {(IN, 0): 3}

    outcome = operations.reset_streams_app(ADMIN, operations.plan_streams_reset("test", prefix, [IN], []))
    assert outcome.result == "ok" and outcome.deleted == plan.delete_topics
    assert topics_of(shared_topics, app) == {"APP-by-key-repartition", "APP-counts-changelog", "APP-notes"}


@pytest.fixture(scope="module")
def streams_protocol_app(shared_topics, bootstrap, tmp_path_factory):
    """A running Kafka Streams application on the streams protocol (KIP-1071), whose group
    librdkafka shows as Dead with no members; yields its application id once the cluster lists
    its group as a stable streams group."""
    from kpulse.kafka.clients import kafka_python_admin
    from localkafka.runtime import ensure_runtime, java_command
    from operations.kafka_reads import all_groups

    runtime = ensure_runtime()
    root = tmp_path_factory.mktemp("streams-protocol-app")
    source = Path(__file__).parent / "java" / "StreamsProtocolApp.java"
    subprocess.run(["javac", "-cp", runtime.classpath, "-d", str(root / "classes"), str(source)], check=True)
    app = "ops-kip1071-app"
    log = open(root / "app.log", "w")
    process = subprocess.Popen(java_command(runtime, "StreamsProtocolApp", [bootstrap, app, IN, str(root / "state")],
                                            extra_classpath=[root / "classes"]), stdout=log, stderr=subprocess.STDOUT)
    try:
        config = operations_for(root, bootstrap).config.cluster(None)
        deadline = time.monotonic() + 90
        while not any(g.group_id == app and g.group_type == "streams" and g.state == "Stable"
                      for g in all_groups(shared_topics, lambda: kafka_python_admin(config, client_id="test", timeout=15)).values()):
            assert time.monotonic() < deadline and process.poll() is None, (root / "app.log").read_text()[-3000:]
            time.sleep(0.5)
        yield app
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def test_a_running_streams_protocol_application_is_refused_though_librdkafka_shows_it_dead(
        shared_topics, operations, bootstrap, streams_protocol_app, tmp_path):
    from operations import kafka_reads

    app = streams_protocol_app
    internal = {f"{app}-by-value-repartition", f"{app}-counts-changelog"}
    assert internal <= set(shared_topics.list_topics(timeout=10).topics)
    assert kafka_reads.describe_group(shared_topics, app).state == "Dead"  # what made it look stopped

    with pytest.raises(Refused, match=f"'{app}': it is a streams group \\(Stable\\), not a classic or consumer group"):
        operations.plan_streams_reset("test", app, [IN], [])
    prefix = app.removesuffix("-app")
    commit(shared_topics, prefix, {(IN, 0): 1})
    line = one_error_line(kpulse("--config", cli_config(tmp_path, bootstrap), "reset-streams-app",
                                 "--application-id", prefix, "--input-topics", IN, "--execute", check=False))
    assert f"application '{app}' (whose internal topics start with {prefix}-) is a streams group" in line
    assert internal <= set(shared_topics.list_topics(timeout=10).topics)
    assert committed(shared_topics, prefix) == {(IN, 0): 1}


def committed_once_it_has(admin, group: str, timeout: float = 90) -> dict:
    """The group's committed offsets once it has some on every partition of the input topic and
    they stand still over more than a commit interval (tests/java/StreamsProtocolApp.java commits
    every second instead of Kafka Streams' 30 s): every record processed, nothing left to commit."""
    deadline = time.monotonic() + timeout
    previous: dict = {}
    while True:
        offsets = committed(admin, group)
        if offsets and offsets == previous and {(IN, 0), (IN, 1)} <= set(offsets):
            return offsets
        assert time.monotonic() < deadline, f"{group} committed nothing, or kept committing: {offsets}"
        previous = offsets
        time.sleep(1.5)


def test_an_offset_reset_of_a_running_streams_protocol_group_is_refused_before_any_commit(
        shared_topics, operations, bootstrap, streams_protocol_app, tmp_path):
    """``reset-offsets`` reads the group through librdkafka, which shows a running streams group
    as Dead: the cluster's listing of every group type says what it is (issue 13)."""
    from operations.offset_plan import PartitionReset, ResetPlan, Scope

    app = streams_protocol_app
    before = committed_once_it_has(shared_topics, app)
    refusal = (f"cannot reset the offsets of group '{app}': it is a streams group (Stable), not a classic or "
               "consumer group; nothing changed (kpulse reset-streams-group resets streams groups, as "
               "kafka-streams-groups does)")
    result = kpulse("--config", cli_config(tmp_path, bootstrap), "reset-offsets", "--group", app, "--all-topics",
                    "--to-earliest", "--execute", check=False)
    after = committed(shared_topics, app)
    assert one_error_line(result) == f"kpulse: error: {refusal}"
    assert after == before

    with pytest.raises(Refused, match=f"^{re.escape(refusal)}$"):
        operations.plan_reset_offsets("test", app, Scope(all_topics=True), Strategy("to-earliest"))
    saved = ResetPlan(cluster="test", group_id=app, group_state="Empty", strategy=Strategy("to-earliest"),
                      scope=Scope(all_topics=True), planned_at=time.time(),
                      partitions=tuple(PartitionReset(t, p, o, 0, o, 0) for (t, p), o in sorted(before.items())))
    with pytest.raises(Refused, match=f"^{re.escape(refusal)}$"):  # saved (or approved) while it was stopped
        operations.reset_offsets(ADMIN, saved)
    assert committed(shared_topics, app) == before
