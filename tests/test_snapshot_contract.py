"""The snapshot's typed contract (``kpulse/snapshot.py``): the published JSON Schema is the one the
model generates, ``kpulse collect --once --json`` on the real cluster validates against it, and an
add-on collector registered through the ``kpulse.collectors`` entry-point group declares a section
and a lake table that pass through a real collection cycle to the snapshot and the lake."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from kpulse.lake.store import LakeWriter, read_table

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


@pytest.fixture
def add_on_tables_forgotten(monkeypatch):
    """The lake tables add-ons register stay registered for the process: forget them after the test."""
    from kpulse.lake import schema

    monkeypatch.setattr(schema, "_ADD_ON_SCHEMAS", {}, raising=False)


@pytest.fixture(scope="module")
def config_file(local_cluster, tmp_path_factory):
    directory = tmp_path_factory.mktemp("snapshot-contract")
    layout = local_cluster.layout
    data = {"clusters": [{"name": "test", "bootstrap_servers": layout.bootstrap_servers,
                          "metrics": {"source": "jmx_exporter", "timeout_seconds": 10,
                                      "broker_endpoints": {n.node_id: n.metrics_url for n in layout.nodes}}}],
            "lake": {"path": str(directory / "lake")},
            "intervals": {"collect_seconds": 1}}
    path = directory / "kpulse.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


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
    assert census["internal_topics"] >= 1  # __consumer_offsets
    rows = read_table(lake, "topic_census")
    assert list(rows["topics"]) == [census["topics"]] and list(rows["cluster"]) == ["test"]
