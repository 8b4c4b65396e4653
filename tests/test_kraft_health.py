"""KRaft health: the quorum from DescribeQuorum, ELR / LastKnownElr of the problem partitions from
DescribeTopicPartitions, the controller's gauges from the brokers' JMX exporters; pure parts from
tables of cases, then agreement with the official tools on the real cluster (``kafka-metadata-quorum
describe --status/--replication`` and ``kafka-topics --describe``), a broker killed for ELR, fencing
and a lagging voter (the alerts firing), and restarted to full health."""

from __future__ import annotations

from dataclasses import replace
import re
import time
from types import SimpleNamespace

import pytest

from alerting.rules import rule_by_name
from alerting.state import AlertState
from collectors.brokers.broker_metrics import BrokerMetricsCollector
from collectors.brokers.broker_values import BrokerMetrics, cluster_level, values_from_samples
from collectors.cluster.cluster_metadata import ClusterMetadataCollector
from collectors.protocol import CollectContext
from collectors.snapshot import observe
from kpulse import prom_text
from kpulse.config import parse_config
from kpulse.kafka.kraft_reads import NotSupported, elr_from, quorum_from
from kpulse.snapshot import Snapshot
from tests.support import described_partitions, official, wait_for

NOW = 1_795_000_000.0


def as_tool(value, scale=1):
    """A figure as kafka-metadata-quorum prints it: -1 for unknown, milliseconds as integers."""
    return -1 if value is None else round(value * scale)


# --- DescribeQuorum answers (pure) ---------------------------------------------------------------------

def replica(node, leo, fetched=NOW * 1000 - 200, caught_up=NOW * 1000 - 200):
    return SimpleNamespace(replica_id=node, log_end_offset=leo, last_fetch_timestamp=int(fetched),
                           last_caught_up_timestamp=int(caught_up))


def quorum_answer(leader=2, epoch=7, hw=500, voters=(), observers=(), error=0, partition_error=0):
    partition = SimpleNamespace(partition_index=0, error_code=partition_error, error_message=None, leader_id=leader,
                                leader_epoch=epoch, high_watermark=hw, current_voters=list(voters),
                                observers=list(observers))
    return SimpleNamespace(error_code=error, error_message=None,
                           topics=[SimpleNamespace(topic_name="__cluster_metadata", partitions=[partition])])


def test_quorum_lag_is_the_leaders_log_end_minus_each_replicas_and_the_leader_comes_first():
    answer = quorum_answer(voters=[replica(1, 480, caught_up=NOW * 1000 - 45_000), replica(2, 505), replica(3, 505)],
                           observers=[replica(5, 500), replica(4, -1, fetched=-1, caught_up=-1)])
    quorum = quorum_from(answer, NOW)
    assert (quorum["leader_id"], quorum["leader_epoch"], quorum["high_watermark"]) == (2, 7, 500)
    assert [(v["id"], v["log_end_offset"], v["lag"]) for v in quorum["voters"]] == [(2, 505, 0), (1, 480, 25),
                                                                                    (3, 505, 0)]
    assert quorum["voters"][1]["caught_up_age_seconds"] == pytest.approx(45.0)
    assert quorum["voters"][1]["last_caught_up_time"] == pytest.approx(NOW - 45.0)
    assert [(o["id"], o["log_end_offset"], o["lag"]) for o in quorum["observers"]] == [(4, None, 506), (5, 500, 5)]
    assert quorum["observers"][0]["last_fetch_time"] is None  # Kafka's -1: never, not 1969
    assert (quorum["max_voter_lag"], quorum["max_voter_caught_up_age_seconds"]) == (25, pytest.approx(45.0))


def test_a_quorum_of_one_has_no_follower_figures():
    quorum = quorum_from(quorum_answer(leader=1, voters=[replica(1, 10)]), NOW)
    assert (quorum["max_voter_lag"], quorum["max_voter_caught_up_age_seconds"]) == (None, None)


@pytest.mark.parametrize("answer, message", [
    (quorum_answer(error=41), "DescribeQuorum: NOT_CONTROLLER"),
    (quorum_answer(partition_error=6), "DescribeQuorum: NOT_LEADER_FOR_PARTITION"),
    (SimpleNamespace(error_code=0, topics=[]), "no __cluster_metadata partition 0"),
])
def test_an_answer_with_an_error_is_a_one_line_error(answer, message):
    with pytest.raises(ValueError, match=message):
        quorum_from(answer, NOW)


def test_elr_from_keeps_null_apart_from_empty_and_skips_errors():
    def part(index, elr, known, error=0):
        return SimpleNamespace(partition_index=index, error_code=error, eligible_leader_replicas=elr,
                               last_known_elr=known)
    answers = [SimpleNamespace(topics=[
        SimpleNamespace(name="a", error_code=0, partitions=[part(0, [3, 1], []), part(1, None, None),
                                                             part(2, [1], [2], error=9)]),
        SimpleNamespace(name="gone", error_code=3, partitions=[])])]
    assert elr_from(answers) == {("a", 0): ([1, 3], []), ("a", 1): (None, None)}


# --- the collector with a fake reader (pure logic of the section) ---------------------------------------

class FakeReader:
    def __init__(self, quorum=None, elr=None, failure=None):
        self.client = SimpleNamespace(close=lambda: None)
        self._quorum, self._elr, self._failure = quorum, elr or {}, failure
        self.asked: list = []

    def quorum(self, timeout, now, nodes=()):
        self.nodes = list(nodes)
        if self._failure:
            raise self._failure
        return dict(self._quorum)

    def elr(self, partitions, timeout, nodes=()):
        self.asked.append({t: sorted(p) for t, p in partitions.items()})
        self.nodes = list(nodes)
        if self._failure:
            raise self._failure
        return self._elr


def fake_admin(partitions):
    """A confluent-kafka admin answering list_topics with ``partitions``: (topic, number, leader,
    replicas, isr) and describe_configs with min.insync.replicas 2."""
    topics = {}
    for topic, number, leader, replicas, isr in partitions:
        topics.setdefault(topic, SimpleNamespace(error=None, partitions={})).partitions[number] = SimpleNamespace(
            id=number, leader=leader, replicas=replicas, isrs=isr)
    brokers = {b: SimpleNamespace(host="h", port=9000 + b) for b in (1, 2, 3)}

    class Future:
        def result(self, timeout=None):
            return {"min.insync.replicas": SimpleNamespace(value="2")}

    return SimpleNamespace(list_topics=lambda timeout: SimpleNamespace(brokers=brokers, topics=topics,
                                                                       controller_id=1),
                           describe_configs=lambda resources, request_timeout: {r: Future() for r in resources})


def metadata_section(reader, partitions, kraft=None):
    cluster = SimpleNamespace(name="c", kraft=kraft or SimpleNamespace(voter_lag_records=1000, voter_lag_seconds=30.0),
                              client_config=dict)
    collector = ClusterMetadataCollector(cluster, admin_factory=lambda _: fake_admin(partitions), kraft_reader=reader)
    return collector.collect(CollectContext(cluster, NOW)).sections["cluster"]


HEALTHY = [("t", 0, 1, [1, 2, 3], [1, 2, 3]), ("t", 1, 2, [2, 3, 1], [2, 3, 1])]
SICK = [("t", 0, 1, [1, 2, 3], [1]), ("t", 1, 2, [2, 3, 1], [2, 3, 1]), ("u", 7, -1, [3], [])]


def test_a_healthy_cluster_asks_no_elr_and_the_quorum_carries_the_configured_thresholds():
    reader = FakeReader(quorum=quorum_from(quorum_answer(voters=[replica(2, 5), replica(1, 5)]), NOW))
    section = metadata_section(reader, HEALTHY, SimpleNamespace(voter_lag_records=50, voter_lag_seconds=12.0))
    assert reader.asked == []
    assert section["quorum"]["leader_id"] == 2
    assert (section["quorum"]["voter_lag_threshold_records"], section["quorum"]["voter_lag_threshold_seconds"]) == (
        50, 12.0)


def test_elr_is_asked_for_the_problem_partitions_only_and_set_on_each():
    reader = FakeReader(quorum=quorum_from(quorum_answer(voters=[replica(2, 5)]), NOW),
                        elr={("t", 0): ([2], []), ("u", 7): ([], [3])})
    section = metadata_section(reader, SICK)
    assert reader.asked == [{"t": [0], "u": [7]}]
    assert [(p["topic"], p["partition"], p["elr"], p["last_known_elr"]) for p in section["problem_partitions"]] == [
        ("t", 0, [2], []), ("u", 7, [], [3])]
    assert "elr" not in section["reasons"]


@pytest.mark.parametrize("failure, reason", [
    (NotSupported("the brokers do not speak DescribeQuorum (KRaft, Kafka 3.3+)"),
     "not available: the brokers do not speak DescribeQuorum (KRaft, Kafka 3.3+)"),
    (TimeoutError("no answer in 10 s"), "DescribeQuorum failed: TimeoutError: no answer in 10 s"),
])
def test_a_broker_that_cannot_answer_leaves_quorum_and_elr_null_with_a_reason_and_the_rest_stands(failure, reason):
    section = metadata_section(FakeReader(failure=failure), SICK)
    assert section["quorum"] is None and section["reasons"]["quorum"] == reason
    assert all(p["elr"] is None and p["last_known_elr"] is None for p in section["problem_partitions"])
    assert section["reasons"]["elr"].split(":")[0] in ("not available", "DescribeTopicPartitions failed")
    assert section["under_replicated_partitions"] == 2 and section["offline_partitions"] == 1


def test_elr_null_from_the_broker_says_the_feature_is_off():
    reader = FakeReader(quorum=quorum_from(quorum_answer(voters=[replica(2, 5)]), NOW),
                        elr={("t", 0): (None, None), ("u", 7): (None, None)})
    section = metadata_section(reader, SICK)
    assert "eligible.leader.replicas.version" in section["reasons"]["elr"]


# --- controller gauges (pure) --------------------------------------------------------------------------

def controller_page(*, errors=0, fenced=0, active_brokers=3, apply_lag=250.0, active=0) -> list[prom_text.Sample]:
    text = "".join(f"# TYPE {name} gauge\n{name} {value}\n" for name, value in (
        ("kafka_controller_kafkacontroller_metadataerrorcount", errors),
        ("kafka_controller_kafkacontroller_fencedbrokercount", fenced),
        ("kafka_controller_kafkacontroller_activebrokercount", active_brokers),
        ("kafka_controller_kafkacontroller_lastappliedrecordlagms", apply_lag),
        ("kafka_controller_kafkacontroller_activecontrollercount", active),
        ("kafka_server_metadataloader_currentcontrollerid", 2)))
    from collectors.brokers.broker_values import READ

    return prom_text.parse(text, READ)


def test_the_controller_gauges_are_read_per_node_and_missing_on_a_broker_only_node():
    broker, _ = values_from_samples(1, controller_page(errors=2, fenced=1, active_brokers=2, apply_lag=812.0), NOW, {})
    assert (broker.metadata_error_count, broker.fenced_broker_count, broker.active_broker_count,
            broker.metadata_apply_lag_ms) == (2, 1, 2, 812.0)
    broker_only, _ = values_from_samples(4, [], NOW, {})
    assert broker_only.fenced_broker_count is None
    assert "controller-role" in broker_only.reasons["metadata_apply_lag_ms"]


def test_the_cluster_takes_fenced_and_active_counts_from_the_active_controller_and_sums_errors():
    nodes = []
    for node, page in ((1, controller_page(fenced=0, active_brokers=3, errors=1)),  # a standby not caught up yet
                       (2, controller_page(fenced=1, active_brokers=2, active=1)),
                       (3, controller_page(fenced=0, active_brokers=3, errors=2))):
        nodes.append(values_from_samples(node, page, NOW, {})[0])
    values = cluster_level(nodes)
    assert (values["fenced_broker_count"], values["active_broker_count"], values["metadata_error_count"]) == (1, 2, 3)
    none = cluster_level([BrokerMetrics(1, error="refused")])
    assert none["fenced_broker_count"] is None and none["reasons"]["fenced_broker_count"] == "no broker answered"


# --- the real cluster ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cluster_config(local_cluster, tmp_path_factory):
    layout = local_cluster.layout
    data = {"clusters": [{"name": "test", "bootstrap_servers": layout.bootstrap_servers,
                          "kraft": {"voter_lag_records": 1000, "voter_lag_seconds": 20},
                          "metrics": {"source": "jmx_exporter",
                                      "broker_endpoints": {n.node_id: n.metrics_url for n in layout.nodes}}}]}
    return parse_config(data, source="test", base_dir=tmp_path_factory.mktemp("cfg")).cluster(None)


def replication_rows(bootstrap: str) -> list[dict[str, str]]:
    """Rows of ``kafka-metadata-quorum describe --replication``, by column header."""
    text = official("kafka-metadata-quorum", "--bootstrap-server", bootstrap, "describe", "--replication")
    assert not text.startswith("EXIT"), text
    lines = [line.split() for line in text.splitlines() if line.strip() and "WARN" not in line]
    header = next(i for i, cells in enumerate(lines) if cells[:1] == ["NodeId"])
    return [dict(zip(lines[header], cells)) for cells in lines[header + 1:]]


def status_fields(bootstrap: str) -> dict[str, str]:
    text = official("kafka-metadata-quorum", "--bootstrap-server", bootstrap, "describe", "--status")
    assert not text.startswith("EXIT"), text
    return dict(re.findall(r"^(\w+):\s+(.*?)\s*$", text, re.MULTILINE))


def snapshot_of(metadata_collector, metrics_collector, config) -> Snapshot:
    context = CollectContext(config, time.time())
    sections = {"cluster": metadata_collector.collect(context).sections["cluster"],
                "broker_metrics": metrics_collector.collect(context).sections["broker_metrics"]}
    return observe("test", context.now, sections, [])


@pytest.mark.cluster
def test_the_quorum_agrees_with_kafka_metadata_quorum_on_a_quiet_cluster(cluster_config, bootstrap):
    collector = ClusterMetadataCollector(cluster_config)
    try:
        ours = collector.collect(CollectContext(cluster_config, time.time())).sections["cluster"]["quorum"]
        status, rows = status_fields(bootstrap), replication_rows(bootstrap)
    finally:
        collector.close()
    assert ours is not None
    assert ours["leader_id"] == int(status["LeaderId"]) and ours["leader_epoch"] == int(status["LeaderEpoch"])
    voters = [int(r["NodeId"]) for r in rows if r["Status"] in ("Leader", "Follower")]
    assert [v["id"] for v in ours["voters"]] == voters
    assert [o["id"] for o in ours["observers"]] == [int(r["NodeId"]) for r in rows if r["Status"] == "Observer"]
    # The tool runs after kpulse's read (a JVM start: seconds), and the leader appends a no-op record
    # every 500 ms meanwhile: log ends and the high watermark only grow between the two reads, and a
    # follower's lag differs by at most the records appended in between.
    appended = int(status["HighWatermark"]) - ours["high_watermark"]
    assert appended >= 0
    theirs = {int(r["NodeId"]): r for r in rows}
    for voter in ours["voters"]:
        assert voter["log_end_offset"] <= int(theirs[voter["id"]]["LogEndOffset"])
        assert abs(voter["lag"] - int(theirs[voter["id"]]["Lag"])) <= max(appended, 5), (voter, theirs[voter["id"]])
    assert ours["voters"][0]["lag"] == 0 and theirs[ours["leader_id"]]["Lag"] == "0"
    assert ours["max_voter_lag"] <= 5  # quiet: the followers keep up


@pytest.mark.cluster
def test_a_killed_broker_gives_elr_as_kafka_topics_shows_it_and_fires_fenced_brokers_and_voter_lagging(
        cluster_config, bootstrap, local_cluster):
    from confluent_kafka.admin import AdminClient

    from tests.conftest import kpulse, start_broker_and_restore_leaders
    from tests.support import create_topic

    # first by name: the snapshot shows the first 200 problem partitions by (topic, partition), and
    # with broker 1 down after the suite's other tests every topic with a replica on it is one
    topic = "0.kraft.elr"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    victim = 1  # the quorum's leader or not, whichever it is now: both have happened in this test
    # min.insync.replicas 3 of 3: one broker lost takes every partition under min ISR, and the
    # controller moves the lost replica from the ISR to the ELR (KIP-966, on by default in 4.x)
    create_topic(admin, topic, 3, 3, config={"min.insync.replicas": "3"})
    # a dead voter is not caught up for more than kraft.voter_lag_seconds within 5 s, not the module's 20
    cluster_config = replace(cluster_config, kraft=replace(cluster_config.kraft, voter_lag_seconds=5))
    metadata, metrics = ClusterMetadataCollector(cluster_config), BrokerMetricsCollector(cluster_config)
    survivors = ",".join(n.bootstrap for n in local_cluster.layout.nodes if n.node_id != victim)
    before = snapshot_of(metadata, metrics, cluster_config)
    assert before["cluster"]["fenced_broker_count"] == 0 and before["cluster"]["metadata_error_count"] == 0
    kpulse("cluster", "kill-broker", str(victim))
    try:
        def ours_and_theirs():
            snapshot = snapshot_of(metadata, metrics, cluster_config)
            rows = {int(r["Partition"]): r for r in described_partitions(survivors, "", topic)}
            mine = {p["partition"]: p for p in snapshot["cluster"]["problem_partitions"] if p["topic"] == topic}
            return snapshot, mine, rows

        def elr_agrees():  # both settled: kpulse reads first, so a change between the reads is seen next time
            snapshot, mine, rows = ours_and_theirs()
            if len(mine) != 3 or any(r.get("Elr", "") != str(victim) for r in rows.values()) or any(
                    p["elr"] != [victim] for p in mine.values()):
                return None
            return snapshot, mine, rows

        snapshot, mine, rows = wait_for(elr_agrees, timeout=90, what=f"broker {victim} in the ELR of every partition")
        for partition, row in rows.items():
            assert mine[partition]["elr"] == sorted(int(b) for b in row["Elr"].split(",") if b)
            # an empty LastKnownElr ends the tool's line: described_partitions' strip leaves no "LastKnownElr: "
            known = row.get("LastKnownElr", "")
            assert mine[partition]["last_known_elr"] == sorted(int(b) for b in known.split(",") if b)
            assert "under_min_isr" in mine[partition]["problems"]

        expected = {("FencedBrokers", "cluster/test"), ("VoterLagging", f"controller/{victim}")}
        hold = max(rule_by_name(name).for_seconds for name, _ in expected)

        def fenced_and_lagging_fire():
            """Both conditions hold in a real snapshot (broker.session.timeout.ms is 4 s on the local
            cluster: fenced within seconds; the voter not caught up for kraft.voter_lag_seconds, 5 s here),
            and the alerts fire once the rules' holds have passed: the same snapshot evaluated again
            at a time past the longest hold (the state's clock is the snapshot's time), instead of
            waiting out 60 s of wall-clock time with the broker down."""
            snapshot, tracker = snapshot_of(metadata, metrics, cluster_config), AlertState()
            tracker.evaluate(snapshot)
            later = tracker.evaluate({**snapshot, "time": snapshot["time"] + hold + 1})
            firing = {(a.rule, a.entity) for a in later.firing}
            return (snapshot, tracker) if expected <= firing else None

        snapshot, alerts = wait_for(fenced_and_lagging_fire, timeout=180, interval=2,
                                    what="FencedBrokers and VoterLagging firing")
        assert snapshot["cluster"]["fenced_broker_count"] == 1
        voter = {v["id"]: v for v in snapshot["cluster"]["quorum"]["voters"]}[victim]
        tool = {int(r["NodeId"]): r for r in replication_rows(survivors)}[victim]
        # a dead voter's log end stands still (or is -1 to a leader elected since it died: null to kpulse)
        assert as_tool(voter["log_end_offset"]) == int(tool["LogEndOffset"])
        assert as_tool(voter["last_caught_up_time"], 1000) == int(tool["LastCaughtUpTimestamp"])
        assert [f for f in rule_by_name("MetadataErrors").check(snapshot) if hasattr(f, "summary")] == []
    finally:
        start_broker_and_restore_leaders(victim, bootstrap)
        admin.delete_topics([topic])[topic].result(30)
    try:
        def resolved():
            snapshot = snapshot_of(metadata, metrics, cluster_config)
            result = alerts.evaluate({**snapshot, "time": snapshot["time"] + hold + 1})
            return not {a.rule for a in result.firing} & {"FencedBrokers", "VoterLagging"}

        wait_for(resolved, timeout=120, what="FencedBrokers and VoterLagging resolved after the restart")
    finally:
        metadata.close()


# --- the exporter --------------------------------------------------------------------------------------

def test_the_exporter_has_a_series_per_kraft_figure_and_leaves_null_out():
    from prometheus_client.parser import text_string_to_metric_families

    from exporters.prometheus import SnapshotExporter

    quorum = quorum_from(quorum_answer(voters=[replica(2, 505), replica(1, 480, caught_up=NOW * 1000 - 45_000)],
                                       observers=[replica(4, -1, fetched=-1, caught_up=-1)]), NOW)
    snapshot = {"time": NOW, "cluster_name": "prod",
                "cluster": {"brokers_up": 2, "fenced_broker_count": 1, "active_broker_count": 2,
                            "metadata_error_count": None, "quorum": quorum},
                "brokers": [{"id": 1, "up": True, "metadata_error_count": 0, "metadata_apply_lag_ms": 812.0},
                            {"id": 4, "up": True, "metadata_error_count": None, "metadata_apply_lag_ms": None}]}
    exporter = SnapshotExporter()
    exporter.update(snapshot)
    got = {(s.name, tuple(sorted(s.labels.items()))): s.value
           for family in text_string_to_metric_families(exporter.text().decode()) for s in family.samples}
    kraft = {key: value for key, value in got.items() if key[0].startswith("kpulse_kraft_")}
    c = (("cluster", "prod"),)
    assert kraft == {
        ("kpulse_kraft_metadata_errors_total", (("broker", "1"), *c)): 0,
        ("kpulse_kraft_metadata_apply_lag_seconds", (("broker", "1"), *c)): pytest.approx(0.812),
        ("kpulse_kraft_fenced_brokers", c): 1, ("kpulse_kraft_active_brokers", c): 2,
        ("kpulse_kraft_quorum_leader_info", (*c, ("node", "2"))): 1,
        ("kpulse_kraft_quorum_leader_epoch", c): 7, ("kpulse_kraft_quorum_high_watermark", c): 500,
        ("kpulse_kraft_quorum_replica_lag", (*c, ("node", "2"), ("role", "voter"))): 0,
        ("kpulse_kraft_quorum_replica_lag", (*c, ("node", "1"), ("role", "voter"))): 25,
        ("kpulse_kraft_quorum_replica_lag", (*c, ("node", "4"), ("role", "observer"))): 506,
        ("kpulse_kraft_quorum_replica_caught_up_age_seconds", (*c, ("node", "2"), ("role", "voter"))):
            pytest.approx(0.2),
        ("kpulse_kraft_quorum_replica_caught_up_age_seconds", (*c, ("node", "1"), ("role", "voter"))):
            pytest.approx(45.0),
    }


def test_the_problem_partition_table_of_one_topic_shows_elr_as_kafka_topics_does():
    from dashboard.services.brokers import problem_partition_table

    snapshot = {"cluster": {"problem_partitions": [
        {"topic": "a", "partition": 0, "leader": -1, "replicas": [1, 2], "isr": [], "problems": ["offline"],
         "elr": [], "last_known_elr": [2, 1]},
        {"topic": 'b "x"', "partition": 3, "leader": 1, "replicas": [1, 2], "isr": [1], "problems": ["under_min_isr"],
         "elr": None, "last_known_elr": None}]}}
    assert problem_partition_table(snapshot, "a")[["elr", "last_known_elr"]].values.tolist() == [["", "2, 1"]]
    assert problem_partition_table(snapshot, 'b "x"')[["topic", "elr"]].values.tolist() == [['b "x"', "—"]]
    assert problem_partition_table(None).empty


def test_the_prometheus_source_asks_for_the_controller_gauges_and_reads_them_per_broker():
    from collectors.brokers.prometheus_query import prometheus_queries, values_from_prometheus

    queries = prometheus_queries('cluster="prod"')
    assert queries["metadata_apply_lag_ms"] == ('max by (broker_id) (kafka_controller_kafkacontroller_'
                                                'lastappliedrecordlagms{broker_id!="",cluster="prod"})')
    results = {key: {} for key in queries}
    results.update(up={1: 1.0, 4: 1.0}, fenced_broker_count={1: 1.0}, active_broker_count={1: 2.0},
                   metadata_error_count={1: 0.0}, metadata_apply_lag_ms={1: 420.0})
    controller, broker_only = values_from_prometheus(1, results), values_from_prometheus(4, results)
    assert (controller.fenced_broker_count, controller.active_broker_count, controller.metadata_error_count,
            controller.metadata_apply_lag_ms) == (1, 2, 0, 420.0)
    assert broker_only.metadata_apply_lag_ms is None
    assert "controller-role" in broker_only.reasons["metadata_apply_lag_ms"]


def test_the_elr_of_many_topics_is_one_request_a_page_not_one_per_topic(monkeypatch):
    """With a broker down every topic it holds a replica of has problem partitions: one request per
    topic at once went past the client's five in flight to a broker ("Node paused: max_in_flight")
    and the ELR read failed while kafka-topics showed it."""
    import asyncio

    import kpulse.kafka.group_listing as listing
    import kpulse.kafka.kraft_reads as kraft_reads

    topics = [f"t{i}" for i in range(8)]
    pages = [SimpleNamespace(topics=[SimpleNamespace(name=t, error_code=0, partitions=[SimpleNamespace(
                 partition_index=0, error_code=0, eligible_leader_replicas=[3], last_known_elr=[])]) for t in topics[:5]],
                             next_cursor=SimpleNamespace(topic_name="t5", partition_index=0)),
             SimpleNamespace(topics=[SimpleNamespace(name=t, error_code=0, partitions=[SimpleNamespace(
                 partition_index=0, error_code=0, eligible_leader_replicas=[3], last_known_elr=[])]) for t in topics[5:]],
                             next_cursor=None)]
    sent = []

    async def answered(request):
        return pages[len(sent) - 1]

    monkeypatch.setattr(kraft_reads, "send", lambda manager, request, node, timeout_ms: sent.append(request) or request)
    monkeypatch.setattr(kraft_reads, "answer", answered)
    monkeypatch.setattr(listing, "api_version", lambda manager, request: 0)
    manager = SimpleNamespace(run=lambda read, *args: asyncio.run(read()))
    reader = kraft_reads.KraftReader(SimpleNamespace(manager=lambda timeout, needs: manager, clock=time.monotonic))
    found = reader.elr({t: [0] for t in topics}, 5, nodes=[2])
    assert found == {(t, 0): ([3], []) for t in topics}
    assert [[t.name for t in request.topics] for request in sent] == [topics, topics[5:]]
    assert (sent[1].cursor.topic_name, sent[1].cursor.partition_index) == ("t5", 0)


def test_each_try_asks_the_next_live_broker_within_its_share_of_the_timeout():
    from kpulse.kafka.kraft_reads import ATTEMPTS, _retried

    asked = []
    clock = iter(range(100, 200)).__next__

    def attempt(node, deadline):
        asked.append((node, deadline))
        if len(asked) < ATTEMPTS:
            raise TimeoutError(f"broker {node} answered nothing")  # a hung connection, as seen with a broker down
        return "answer"

    assert _retried(attempt, [2, 3], 9.0, clock) == "answer"
    assert [node for node, _ in asked] == [2, 3, 2]
    assert [deadline for _, deadline in asked] == [100 + 3.0, 101 + 3.0, 102 + 3.0]
    asked.clear()
    assert _retried(attempt, [], 9.0, clock) == "answer" and [node for node, _ in asked] == [None] * ATTEMPTS


def test_a_read_that_meets_a_broker_that_just_died_is_tried_again_and_an_error_answer_is_not():
    from kpulse.kafka.kraft_reads import KraftReader

    class Manager:
        def __init__(self, outcomes):
            self.outcomes, self.runs = list(outcomes), 0

        def run(self, read, *args):
            self.runs += 1
            outcome = self.outcomes.pop(0)
            if isinstance(outcome, Exception):
                raise outcome
            return outcome

    def reader(manager):
        return KraftReader(SimpleNamespace(manager=lambda timeout, needs: manager, clock=time.monotonic))

    died = Manager([ConnectionRefusedError("node 1"), quorum_answer(voters=[replica(2, 5)])])
    assert reader(died).quorum(5, NOW)["leader_id"] == 2 and died.runs == 2
    down = Manager([ConnectionRefusedError("node 1")] * 3)
    with pytest.raises(ConnectionRefusedError):
        reader(down).quorum(5, NOW)
    assert down.runs == 3
    refused = Manager([quorum_answer(error=41)])
    with pytest.raises(ValueError, match="NOT_CONTROLLER"):
        reader(refused).quorum(5, NOW)
    assert refused.runs == 1
