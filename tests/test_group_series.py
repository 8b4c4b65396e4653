"""The exporter's series for each type of group (KIP-848 consumer groups, Streams groups): type,
state, epochs and reconciling members, from a snapshot (pure logic; the live series are checked in
tests/test_group_types_lag.py and tests/test_streams_groups.py through the collectors)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from exporters.prometheus import SnapshotExporter

HOSTILE = 'g"}\n# TYPE evil gauge\nevil{x="1'


def exported(**sections) -> dict[tuple[str, tuple], float]:
    exporter = SnapshotExporter()
    exporter.update({"cluster_name": "prod", **sections})  # type: ignore[typeddict-item]  # partial on purpose
    registry = CollectorRegistry()
    registry.register(exporter)
    samples = {}
    for family in text_string_to_metric_families(generate_latest(registry).decode()):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def series(samples, name) -> dict[tuple, float]:
    return {labels: value for (metric, labels), value in samples.items() if metric == name}


def consumer_group(group_id, type_, state, **extra):
    return {"group_id": group_id, "type": type_, "protocol_type": "consumer", "state": state, "members": 2,
            "partitions": [], **extra}


def test_a_kip848_group_exports_its_type_state_epochs_and_reconciling_members():
    samples = exported(consumer_groups=[consumer_group(HOSTILE, "consumer", "Reconciling", group_epoch=7,
                                                       assignment_epoch=7, reconciling_members=1)])
    g = (("cluster", "prod"), ("consumergroup", HOSTILE))
    assert series(samples, "kpulse_consumergroup_info") == {
        tuple(sorted(g + (("protocol_type", "consumer"), ("type", "consumer")))): 1}
    states = {dict(labels)["state"]: value for labels, value in series(samples, "kpulse_consumergroup_state").items()}
    assert states == {"Empty": 0, "Assigning": 0, "Reconciling": 1, "Stable": 0, "Dead": 0}
    assert samples[("kpulse_consumergroup_group_epoch", g)] == 7
    assert samples[("kpulse_consumergroup_assignment_epoch", g)] == 7
    assert samples[("kpulse_consumergroup_reconciling_members", g)] == 1


def test_a_classic_group_has_classic_states_and_no_epochs():
    samples = exported(consumer_groups=[consumer_group("old", "classic", "CompletingRebalance",
                                                       group_epoch=None, assignment_epoch=None)])
    states = {dict(labels)["state"]: value for labels, value in series(samples, "kpulse_consumergroup_state").items()}
    assert states == {"Empty": 0, "PreparingRebalance": 0, "CompletingRebalance": 1, "Stable": 0, "Dead": 0}
    assert series(samples, "kpulse_consumergroup_group_epoch") == {}
    assert series(samples, "kpulse_consumergroup_reconciling_members") == {}


def test_an_unknown_state_or_type_is_exported_as_itself_and_no_state_means_no_series():
    samples = exported(consumer_groups=[consumer_group("a", "future", "Sleeping"),
                                        consumer_group("b", "consumer", None)])
    states = {(dict(labels)["consumergroup"], dict(labels)["state"]): value
              for labels, value in series(samples, "kpulse_consumergroup_state").items()}
    assert states == {("a", "Sleeping"): 1}


def test_a_streams_group_exports_its_state_members_epochs_and_input_lag():
    app = {"application_id": HOSTILE, "protocol": "streams", "state": None, "group_state": "NotReady", "members": 1,
           "instances": [], "transitions": [],
           "group": {"state": "NotReady", "group_epoch": 5, "assignment_epoch": 4, "topology_epoch": 2,
                     "members": [], "subtopologies": [], "input_partitions": [], "total_lag": 42}}
    samples = exported(streams_apps=[app])
    a = (("application_id", HOSTILE), ("cluster", "prod"))
    states = {dict(labels)["state"]: value for labels, value in series(samples, "kpulse_streams_group_state").items()}
    assert states == {"Empty": 0, "NotReady": 1, "Assigning": 0, "Reconciling": 0, "Stable": 0, "Dead": 0}
    assert samples[("kpulse_streams_group_members", a)] == 1
    assert samples[("kpulse_streams_group_epoch", a)] == 5
    assert samples[("kpulse_streams_group_assignment_epoch", a)] == 4
    assert samples[("kpulse_streams_group_topology_epoch", a)] == 2
    assert samples[("kpulse_streams_group_lag", a)] == 42


def test_a_classic_protocol_streams_app_has_no_streams_group_series():
    app = {"application_id": "old-app", "protocol": "classic", "state": None, "group_state": "Stable", "members": 1,
           "instances": [], "transitions": [], "group": None}
    samples = exported(streams_apps=[app])
    assert not [name for name, _ in samples if name.startswith("kpulse_streams_group_")]
