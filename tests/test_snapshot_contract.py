"""The snapshot's typed contract (``kpulse/snapshot.py``): the published JSON Schema is the one the
model generates, ``kpulse collect --once --json`` on the real cluster validates against it, and an
add-on collector registered through the ``kpulse.collectors`` entry-point group declares a section
and a lake table that pass through a real collection cycle to the snapshot and the lake."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml

from kpulse.lake.reader import read_table
from kpulse.lake.store import LakeWriter
from tests.support import collect_config

ADD_ON_MODULE = "kpulse_test_topic_census"
ADD_ON_SOURCE = '''
"""A tiny add-on collector: how many topics the cluster has, as a snapshot section and a lake table."""

from typing import Annotated, TypedDict

import pyarrow as pa
from confluent_kafka.admin import AdminClient

from collectors.protocol import CollectorResult


class TopicCensus(TypedDict):
    """The add-on's section."""

    topics: Annotated[int, "Topics in the cluster metadata."]
    internal_topics: Annotated[int, "Of which internal (their names start with __)."]


CENSUS_TABLE = pa.schema([("time", pa.timestamp("us", tz="UTC")), ("cluster", pa.string()),
                          ("topics", pa.int32()), ("internal_topics", pa.int32())])


class TopicCensusCollector:
    name = "topic_census"
    sections = {"topic_census": TopicCensus}
    tables = {"topic_census": CENSUS_TABLE}

    def __init__(self, cluster):
        self._cluster = cluster

    def collect(self, context):
        names = list(AdminClient(self._cluster.client_config()).list_topics(timeout=10).topics)
        census = {"topics": len(names), "internal_topics": sum(1 for n in names if n.startswith("__"))}
        row = {"time": context.now, "cluster": self._cluster.name, **census}
        return CollectorResult(sections={"topic_census": census}, rows={"topic_census": [row]})


def factory(cluster):
    return TopicCensusCollector(cluster)
'''


def install_add_on(directory: Path, monkeypatch) -> None:
    """A distribution installed the way pip leaves one (a module and its ``.dist-info`` with an
    ``entry_points.txt``) in a directory put on ``sys.path``."""
    directory.mkdir()
    (directory / f"{ADD_ON_MODULE}.py").write_text(ADD_ON_SOURCE)
    info = directory / "kpulse_test_topic_census-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: kpulse-test-topic-census\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(f"""\
        [kpulse.collectors]
        topic_census = {ADD_ON_MODULE}:factory
        """))
    monkeypatch.syspath_prepend(str(directory))
    monkeypatch.delitem(sys.modules, ADD_ON_MODULE, raising=False)


SCHEMA_FILE = Path(__file__).resolve().parent.parent / "docs" / "snapshot.schema.json"


def test_the_published_json_schema_is_the_one_the_model_generates():
    from kpulse.snapshot import schema_text

    assert SCHEMA_FILE.read_text() == schema_text(), \
        "regenerate it: python -m kpulse.snapshot > docs/snapshot.schema.json"


def test_the_schema_documents_every_field_and_is_a_valid_json_schema():
    from jsonschema import Draft202012Validator

    schema = json.loads(SCHEMA_FILE.read_text())
    Draft202012Validator.check_schema(schema)
    undocumented = [f"{name}.{field}" for name, definition in [("Snapshot", schema), *schema["$defs"].items()]
                    for field, spec in definition["properties"].items() if not spec.get("description")]
    assert undocumented == []


def test_an_add_on_section_is_in_the_schema_by_its_declared_type():
    from jsonschema import Draft202012Validator

    from kpulse.snapshot import json_schema

    module = {}
    exec(compile(ADD_ON_SOURCE, ADD_ON_MODULE, "exec", dont_inherit=True), module)
    validator = Draft202012Validator(json_schema({"topic_census": module["TopicCensus"]}))
    assert validator.schema["properties"]["topic_census"]["anyOf"][0] == {"$ref": "#/$defs/TopicCensus"}
    census = validator.schema["$defs"]["TopicCensus"]
    assert census["required"] == ["topics", "internal_topics"] and census["additionalProperties"] is False
    assert census["properties"]["topics"] == {"type": "integer", "description": "Topics in the cluster metadata."}


@pytest.fixture
def add_on_tables_forgotten(monkeypatch):
    """The lake tables add-ons register stay registered for the process: forget them after the test."""
    from kpulse.lake import schema

    monkeypatch.setattr(schema, "_ADD_ON_SCHEMAS", {}, raising=False)


@pytest.fixture(scope="module")
def config_file(local_cluster, tmp_path_factory):
    return collect_config(local_cluster.layout, tmp_path_factory.mktemp("snapshot-contract"))


@pytest.mark.cluster
def test_an_add_on_collector_from_the_entry_point_group_reaches_the_snapshot_and_the_lake(
        config_file, tmp_path, monkeypatch, add_on_tables_forgotten):
    from collectors.registry import default_registry
    from collectors.runner import CollectionService
    from kpulse.config import load_config

    install_add_on(tmp_path / "site", monkeypatch)
    config = load_config(config_file)
    lake = str(tmp_path / "lake")
    service = CollectionService(config, registry=default_registry(), lake=LakeWriter(lake))
    try:
        snapshot = service.cycle().snapshots["test"]
    finally:
        service.close()
    statuses = {c["name"]: c for c in snapshot["collectors"]}
    assert statuses["topic_census"]["up"] is True, statuses["topic_census"]
    assert "lake_errors" not in snapshot, snapshot.get("lake_errors")
    census = snapshot["topic_census"]
    assert census["topics"] == snapshot["cluster"]["topic_count"]
    rows = read_table(lake, "topic_census")
    assert list(rows["cluster"]) == ["test"]
    assert (list(rows["topics"]), list(rows["internal_topics"])) == ([census["topics"]], [census["internal_topics"]])
    from jsonschema import Draft202012Validator

    from kpulse.snapshot import json_schema, to_json

    schema = json_schema(service.declared.add_on_sections)
    Draft202012Validator(schema).validate(json.loads(to_json(snapshot)))


def commit_a_group(bootstrap: str, topic: str, group: str) -> None:
    """A topic of two partitions with a record each, and a group that committed on one of them."""
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 2, 3)])[topic].result(timeout=30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for partition in (0, 1):
        producer.produce(topic, b"x", partition=partition)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        for attempt in range(30):  # a fresh cluster creates __consumer_offsets at the first group: NOT_COORDINATOR
            try:
                consumer.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
                return
            except KafkaException:
                if attempt == 29:
                    raise
                time.sleep(1)
    finally:
        consumer.close()


@pytest.mark.cluster
def test_collect_once_json_validates_against_the_published_schema(config_file, bootstrap):
    from jsonschema import Draft202012Validator

    from kpulse.snapshot import json_schema

    commit_a_group(bootstrap, "snapshot-contract", "snapshot-contract-group")
    result = subprocess.run([sys.executable, "-m", "cli.main", "--config", str(config_file), "collect", "--once",
                             "--json"], capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr
    snapshot = json.loads(result.stdout)
    Draft202012Validator(json.loads(SCHEMA_FILE.read_text())).validate(snapshot)
    Draft202012Validator(json_schema({})).validate(snapshot)  # no add-on: no section beyond the model's
    assert snapshot["probe"] is not None and snapshot["brokers"], "the sections to validate were collected"
    [group] = [g for g in snapshot["consumer_groups"] if g["group_id"] == "snapshot-contract-group"]
    assert group["partitions"], group


def test_a_section_outside_the_model_fails_validation():
    from jsonschema import Draft202012Validator, ValidationError

    from kpulse.snapshot import json_schema

    validator = Draft202012Validator(json_schema({}))
    snapshot = {"time": 1.0, "cluster_name": "c", "brokers": [], "consumer_groups": [], "streams_apps": [],
                "share_groups": None, "probe": None, "alerts": [], "collectors": [],
                "cluster": {"controller_id": None, "brokers": [], "brokers_up": None, "brokers_total": None,
                            "topic_count": None, "partition_count": None, "under_replicated_partitions": None,
                            "offline_partitions": None, "under_min_isr_partitions": None,
                            "preferred_leader_imbalance": None, "active_controller_count": None,
                            "problem_partitions": [], "reasons": {}}}
    validator.validate(snapshot)
    with pytest.raises(ValidationError, match="'surprise' was unexpected"):
        validator.validate({**snapshot, "surprise": 1})
    with pytest.raises(ValidationError, match="'partitions' was unexpected"):
        validator.validate({**snapshot, "cluster": {**snapshot["cluster"], "partitions": 3}})


# --- the readers read the model's fields, and no other ------------------------------------------------

VARIANTS = ({"int": 5, "float": 0.05, "bool": True, "status": "STOP", "state": "ERROR", "severity": "critical",
             "literal": -1},
            {"int": 0, "float": 1e9, "bool": False, "status": "OK", "state": "RUNNING", "severity": "warning",
             "literal": 0})
"""Values of the example snapshots; a field of names (a Literal) the variant gives no valid value for
takes the last name (the worst status, in the first variant) or the first."""


class StrictDict(dict):
    """A snapshot object that notes every key read from it that its type does not declare."""

    def __init__(self, data: dict, kind: type, unknown: set[str]) -> None:
        super().__init__(data)
        self._fields, self._kind, self._unknown = set(kind.__annotations__), kind.__name__, unknown

    def _read(self, key) -> None:
        if key not in self._fields:
            self._unknown.add(f"{self._kind}.{key}")

    def get(self, key, default=None):
        self._read(key)
        return super().get(key, default)

    def __getitem__(self, key):
        self._read(key)
        return super().__getitem__(key)

    def __contains__(self, key):
        self._read(key)
        return super().__contains__(key)


def example(hint, name: str, values: dict, unknown: set[str]):
    """A value of type ``hint`` with every field present and every list of one item: objects are
    :class:`StrictDict`."""
    import types
    import typing

    from kpulse.snapshot import _unwrap

    hint, _ = _unwrap(hint)
    if typing.is_typeddict(hint):
        fields = typing.get_type_hints(hint, include_extras=True)
        return StrictDict({key: example(kind, key, values, unknown) for key, kind in fields.items()}, hint, unknown)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return example(next(arg for arg in args if arg is not type(None)), name, values, unknown)
    if origin is typing.Literal:
        return values[name] if values.get(name) in args else args[values["literal"]]
    if origin is list:
        return [example(args[0], name, values, unknown)]
    if origin is dict:
        return {"key": example(args[1], name, values, unknown)}
    if hint is str:
        return values.get(name, f"{name}-1")
    if hint in (int, float, bool):
        return values[hint.__name__] if name != "time" else 1_700_000_000.0
    return None


def test_the_exporter_the_alert_rules_and_the_dashboard_read_only_fields_of_the_model():
    import pandas as pd
    from prometheus_client import CollectorRegistry, generate_latest

    from alerting.rules import RULES
    from cli.collect import summary_line
    from collectors.runner import CycleResult
    from dashboard.services import alerts, brokers, groups, health, share_groups, streams
    from exporters.prometheus import SnapshotExporter
    from kpulse.snapshot import Snapshot

    unknown: set[str] = set()
    for values in VARIANTS:
        snapshot = example(Snapshot, "snapshot", values, unknown)
        exporter = SnapshotExporter()
        exporter.update(snapshot)
        registry = CollectorRegistry()
        registry.register(exporter)
        assert "kpulse_collector_up" in generate_latest(registry).decode()
        for rule in RULES:
            rule.check(snapshot)
        assert len(health.overview_tiles(snapshot, pd.DataFrame(columns=["severity"]), pd.DataFrame())) > 5
        [group] = snapshot["consumer_groups"]
        assert len(groups.groups_frame(snapshot)) == 1 and groups.partial_groups(snapshot) in (0, 1)
        assert len(groups.group_partitions(snapshot, group["group_id"])) == 1
        assert len(brokers.broker_table(snapshot, pd.DataFrame())) == 1
        [app] = snapshot["streams_apps"]
        assert len(streams.apps_frame(snapshot)) == 1
        assert len(streams.instances_frame(streams.app(snapshot, app["application_id"]))) == 1
        [share_group] = snapshot["share_groups"]["groups"]
        assert len(share_groups.groups_frame(snapshot)) == 1 and share_groups.unsupported(snapshot) is not None
        shown = share_groups.group(snapshot, share_group["group_id"])
        assert len(share_groups.partitions_frame(shown)) == len(share_groups.members_frame(shown)) == 1
        events = pd.DataFrame(columns=["time", "rule", "entity", "state", "severity", "since", "value", "summary"])
        assert len(alerts.firing_alerts(events, snapshot, {}, 1_700_000_001.0)) == 1
        for rule, entity in (("UnderReplicatedPartitions", "cluster/c"), ("RequestHandlerIdleLow", "broker/5"),
                             ("BrokerDown", "broker/5"), ("ConsumerGroupLagSeconds", f"group/{group['group_id']}"),
                             ("ConsumerGroupStatus", f"group/{group['group_id']}"),
                             ("ShareGroupNotAcknowledging", f"sharegroup/{share_group['group_id']}")):
            query = alerts.context_query(rule, entity)
            alerts.with_snapshot_point(query, pd.DataFrame(columns=["time", "value"]), snapshot)
        assert snapshot["cluster_name"] in summary_line(snapshot, CycleResult())
    assert sorted(unknown) == []


# --- declarations that cannot go together are refused in one line -----------------------------------

def test_a_built_in_table_name_or_a_table_without_time_and_cluster_is_refused(monkeypatch):
    import pyarrow as pa

    from kpulse.lake import schema

    monkeypatch.setattr(schema, "_ADD_ON_SCHEMAS", {})
    schema.register_tables({"consumer_lag": schema.SCHEMAS["consumer_lag"]})  # a built-in declaring its own
    with pytest.raises(schema.LakeTableError, match="^lake table 'probe' is built in: an add-on cannot declare it"):
        schema.register_tables({"probe": pa.schema([("time", schema.TIME), ("cluster", pa.string())])})
    with pytest.raises(schema.LakeTableError, match="^lake table 'census' must begin with time"):
        schema.register_tables({"census": pa.schema([("cluster", pa.string()), ("time", schema.TIME)])})
    census = pa.schema([("time", schema.TIME), ("cluster", pa.string()), ("topics", pa.int32())])
    schema.register_tables({"census": census})
    with pytest.raises(schema.LakeTableError, match="^lake table 'census' is declared twice with different columns"):
        schema.register_tables({"census": pa.schema([*census][:2])})
    assert schema.table_schema("census") == census and schema.table_names()[-1] == "census"


def test_a_section_named_like_the_models_own_or_declared_twice_is_refused():
    from collectors.protocol import DeclarationError, declarations
    from kpulse.snapshot import BUILTIN_SECTIONS, ConsumerGroup

    def collector(name, sections):
        return type("C", (), {"name": name, "sections": sections})()

    declared = declarations([collector("lag", {"consumer_groups": list[ConsumerGroup]}),
                             collector("census", {"census": int})])
    assert declared.add_on_sections == {"census": int} and "consumer_groups" in BUILTIN_SECTIONS
    for taken in ("brokers", "alerts", "consumer_groups"):
        with pytest.raises(DeclarationError, match=f"^collector 'mine' declares section '{taken}', a name of "
                                                   "kpulse's own snapshot"):
            declarations([collector("mine", {taken: dict})])
    with pytest.raises(DeclarationError, match="^section 'census' is declared by two collectors, 'a' and 'b'$"):
        declarations([collector("a", {"census": int}), collector("b", {"census": int})])


def test_the_built_in_collectors_declare_and_return_their_sections_with_the_models_types():
    import typing

    from collectors.brokers.broker_metrics import BrokerMetricsCollector
    from collectors.cluster.cluster_metadata import ClusterMetadataCollector
    from collectors.lag.consumer_lag import ConsumerLagCollector
    from collectors.probe.probe import ProbeCollector
    from collectors.protocol import BuiltinSections
    from collectors.share.share_groups import ShareGroupsCollector
    from collectors.streams.streams_apps import StreamsAppsCollector
    from kpulse.snapshot import BUILTIN_SECTIONS

    returned = typing.get_type_hints(BuiltinSections)  # what the checker holds each built-in's result to
    assert returned == dict(BUILTIN_SECTIONS)
    for kind in (ClusterMetadataCollector, BrokerMetricsCollector, ConsumerLagCollector, StreamsAppsCollector,
                 ShareGroupsCollector, ProbeCollector):
        assert kind.sections and all(returned[name] == declared for name, declared in kind.sections.items())


def test_a_declared_section_not_returned_is_null_and_an_undeclared_one_is_left_out():
    from collectors.protocol import CollectorStatus
    from collectors.snapshot import observe

    snapshot = observe("c", 1.0, {"census": {"topics": 3}, "stray": 1}, [CollectorStatus("census", True, 0.1)],
                       add_on_sections=["census", "absent"])
    assert snapshot["census"] == {"topics": 3} and snapshot["absent"] is None and "stray" not in snapshot


def test_kpulse_collect_stops_in_one_line_on_an_add_on_that_takes_a_built_in_table(tmp_path):
    import os

    site = tmp_path / "site"
    site.mkdir()
    (site / "kpulse_test_greedy.py").write_text(textwrap.dedent('''\
        import pyarrow as pa


        class Greedy:
            name = "greedy"
            tables = {"probe": pa.schema([("time", pa.timestamp("us", tz="UTC")), ("cluster", pa.string())])}

            def collect(self, context):
                raise AssertionError("never run")


        def factory(cluster):
            return Greedy()
        '''))
    info = site / "kpulse_test_greedy-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: kpulse-test-greedy\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[kpulse.collectors]\ngreedy = kpulse_test_greedy:factory\n")
    config = tmp_path / "kpulse.yaml"
    config.write_text(yaml.safe_dump({"clusters": [{"name": "c", "bootstrap_servers": "127.0.0.1:1"}],
                                      "lake": {"path": str(tmp_path / "lake")}}))
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-m", "cli.main", "--config", str(config), "collect", "--once"],
                            capture_output=True, text=True, timeout=120, env=environment)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.strip().splitlines() == [
        "kpulse: error: collector 'greedy' declares lake table 'probe', a built-in table, with other columns (its "
        "columns: time, cluster, broker_id, partition, produced, produce_errors, consumed, lost, duplicated, "
        "latency_p50_ms, latency_p99_ms, latency_max_ms)"]
