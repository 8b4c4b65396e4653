"""``kpulse doctor``: what the configured identity may do on its cluster, feature by feature
(``feature | allowed | missing permission``), from what Kafka says it may do.

The connection itself is checked first by the caller (``collectors/connection_gate.py``, whose
DescribeCluster also gives the cluster's authorized operations). Then, read-only:

- every topic Metadata shows and every monitored group ListGroups lists is described with its
  authorized operations (KIP-430: ``describe_topics`` / ``describe_consumer_groups`` with
  ``include_authorized_operations``), and each feature's needs (:mod:`operations.permissions`)
  are checked on them: the operations on the groups kpulse monitors and the topics it sees;
- a probe topic that does not exist yet: a CreateTopics with ``validate_only`` says whether the
  probe may create it (nothing is created).

DescribeAcls is not used: KIP-430 answers for the principal as the authorizer decides (super
users, wildcard and prefixed patterns, Deny rules, implied operations included), which a list of
ACL bindings cannot tell. What nothing answers (a cluster without Describe hides its operations;
topics and groups the principal may not Describe are not listed at all) is said as such.

:func:`findings` is pure (tables of facts in, lines out); :func:`gather` does the reading.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any
from collections.abc import Callable, Mapping

from operations.internal_topics import is_kafka_internal_topic
from operations.permissions import (
    CLUSTER_NAME, EVERY_TOPIC, FEATURES, INTERNAL_TOPICS, ITS_TOPICS, MONITORED_GROUPS, MONITORING, MOVED_TOPICS,
    PROBE, PROBE_GROUP, PROBE_TOPIC, READ_TOPICS, THE_CLUSTER, THE_GROUP, Feature, Granted, permits, probe_group, resource_text,
    shortfalls,
)
from operations.preflight import PrincipalPermissions

YES, NO, PARTLY, UNKNOWN, OFF = "yes", "no", "partly", "unknown", "off"
CHECKED_AT_MOST = 1000
"""Topics and groups described at most (a doctor on 10,000 groups checks the first 1,000)."""


@dataclass(frozen=True)
class Finding:
    """One line of the report."""

    feature: str
    allowed: str
    """``yes``, ``no``, ``partly`` (some resources, or a part), ``unknown``, ``off`` (disabled)."""
    missing: str = ""
    """The permissions it lacks, as ``kafka-acls`` grants them (``Read on group team-a-billing``)."""
    note: str = ""


@dataclass(frozen=True)
class Facts:
    """What the cluster said about the principal."""

    cluster: Granted
    topics: Mapping[str, Granted]
    """Every topic Metadata showed (described, at most :data:`CHECKED_AT_MOST`)."""
    groups: Mapping[str, Granted]
    """Every monitored group ListGroups listed (described, at most :data:`CHECKED_AT_MOST`)."""
    probe_topic: str | None
    """None: the probe is disabled."""
    probe_creatable: bool | None = None
    """When the probe topic does not exist: whether CreateTopics (validate only) was allowed."""
    probe_group: tuple[str, Granted] | None = None
    """The probe consumer's group and what the principal may do on it."""
    seen: Mapping[str, int] = field(default_factory=dict)
    """``topics`` / ``groups`` -> how many were seen (more than described when over the limit)."""
    problems: tuple[str, ...] = ()
    """Reads that failed (one line each)."""
    check_seconds: float | None = None


@dataclass(frozen=True)
class Report:
    cluster: str
    findings: tuple[Finding, ...]
    notes: tuple[str, ...]

    @property
    def exit_code(self) -> int:
        """0: monitoring has every permission it needs; 2: connected, but monitoring lacks some."""
        return 2 if any(f.feature.startswith(MONITORING) and f.allowed in (NO, PARTLY) for f in self.findings) else 0

    def to_dict(self) -> dict:
        return {"cluster": self.cluster, "findings": [asdict(f) for f in self.findings], "notes": list(self.notes),
                "exit_code": self.exit_code}

    def lines(self) -> list[str]:
        width = max(len("FEATURE"), *(len(f.feature) for f in self.findings))
        rows = [f"{'FEATURE':<{width}}  {'ALLOWED':<7}  MISSING PERMISSION"]
        rows += [f"{f.feature:<{width}}  {f.allowed:<7}  {f.missing}".rstrip() for f in self.findings]
        rows += [f"note: {f.feature}: {f.note}" for f in self.findings if f.note]
        return rows + [f"note: {note}" for note in self.notes]


def _missing(lacking) -> str:
    return "; ".join(f"{s.need.operation} on {resource_text(s.need.scope.resource_type, s.names)}" for s in lacking)


def _resources(facts: Facts) -> dict:
    topics = sorted(facts.topics)
    user_topics = [t for t in topics if not is_kafka_internal_topic(t)]
    groups = sorted(facts.groups)
    internal = [t for t in user_topics if any(t.startswith(f"{g}-") for g in groups)]
    return {THE_CLUSTER: [CLUSTER_NAME], EVERY_TOPIC: topics, MONITORED_GROUPS: groups, THE_GROUP: groups,
            ITS_TOPICS: user_topics, MOVED_TOPICS: user_topics, READ_TOPICS: user_topics, INTERNAL_TOPICS: internal,
            PROBE_TOPIC: [facts.probe_topic] if facts.probe_topic in facts.topics else [],
            PROBE_GROUP: [facts.probe_group[0]] if facts.probe_group else []}


def _lookup(facts: Facts) -> Callable[[str, str], Granted]:
    groups = {**facts.groups, **dict([facts.probe_group] if facts.probe_group else [])}
    tables = {"cluster": {CLUSTER_NAME: facts.cluster}, "topic": facts.topics, "group": groups}
    return lambda kind, name: tables[kind].get(name, Granted.unknown())


def _judge(feature: Feature, facts: Facts, resources: dict, label: str | None = None) -> Finding:
    """Every required need of ``feature`` on the resources it applies to."""
    lacking, unsure = shortfalls(feature, resources, _lookup(facts))
    applied = [n for n in feature.needs if not n.optional and resources.get(n.scope)]
    name = label or feature.name
    if not applied and any(not n.optional for n in feature.needs):
        return Finding(name, UNKNOWN, note="nothing to check it on (no group or topic kpulse may see)")
    if not lacking:
        note = "; ".join(f"{need.operation} on {resource_text(need.scope.resource_type, names)} not known"
                         for need, names in unsure)
        return Finding(name, UNKNOWN if unsure else YES, note=note)
    everywhere = any(set(s.names) == set(resources[s.need.scope]) for s in lacking)
    return Finding(name, NO if everywhere else PARTLY, _missing(lacking))


def _monitoring(facts: Facts, resources: dict) -> list[Finding]:
    entry = next(f for f in FEATURES if f.name == MONITORING)
    lines = []
    for need in entry.needs:
        single = Feature(entry.name, (need,))
        line = _judge(single, facts, resources, f"{MONITORING}: {need.label}")
        if need.label == "topics" and resources[EVERY_TOPIC]:
            line = Finding(line.feature, YES, note=f"{facts.seen.get('topics', len(facts.topics))} topic(s) visible; "
                           "Metadata leaves out the topics kpulse may not Describe, unseen")
        if need.label == "groups" and permits(facts.cluster, "Describe") is False:
            listed = facts.seen.get("groups", len(facts.groups))
            line = Finding(line.feature, PARTLY, "; ".join(filter(None, ["Describe on cluster", line.missing])),
                           f"without Describe on the cluster, ListGroups shows only the groups kpulse may Describe "
                           f"({listed} listed): other groups are not seen, so their lag is not monitored")
        lines.append(line)
    return lines


def _probe(facts: Facts, resources: dict) -> Finding:
    entry = next(f for f in FEATURES if f.name == PROBE)
    if facts.probe_topic is None:
        return Finding(PROBE, OFF, note="probe.enabled is false")
    name = f"{PROBE} ({facts.probe_topic})"
    if not resources[PROBE_TOPIC]:
        if facts.probe_creatable is False:
            return Finding(name, NO, f"Create on topic {facts.probe_topic}",
                           "the topic does not exist and kpulse may not create it (Create on the topic or the cluster)")
        return Finding(name, UNKNOWN, note="the topic does not exist yet"
                       + (", and kpulse may create it" if facts.probe_creatable else "")
                       + ": Write and Read on it are known once it exists (run kpulse doctor again after a collection)")
    required = Feature(entry.name, tuple(n for n in entry.needs if not n.optional and n.operation != "Create"))
    line = _judge(required, facts, resources, name)
    optional, _ = shortfalls(Feature(entry.name, tuple(n for n in entry.needs if n.optional)), resources,
                             _lookup(facts), optional=True)
    note = "; ".join(filter(None, [line.note, f"optional, not granted: {_missing(optional)}" if optional else ""]))
    return Finding(line.feature, line.allowed, line.missing, note)


def findings(facts: Facts) -> tuple[Finding, ...]:
    resources = _resources(facts)
    found = [Finding("connection", YES, note=f"DescribeCluster answered in {facts.check_seconds:.2f} s"
                     if facts.check_seconds is not None else "")]
    found += _monitoring(facts, resources)
    found.append(_probe(facts, resources))
    for entry in FEATURES:
        if entry.name in (MONITORING, PROBE):
            continue
        found.append(_judge(entry, facts, resources) if entry.needs else Finding(entry.name, YES, note=entry.note))
    return tuple(found)


def report(cluster_name: str, facts: Facts) -> Report:
    notes = [*facts.problems]
    for kind in ("topics", "groups"):
        seen = facts.seen.get(kind, 0)
        if seen > CHECKED_AT_MOST:
            notes.append(f"{seen} {kind} seen, the first {CHECKED_AT_MOST} checked")
    return Report(cluster_name, findings(facts), tuple(notes))


# --- I/O ------------------------------------------------------------------------------------------------

def gather(admin, cluster, cluster_operations: list[str] | None, *,
           list_groups: Callable[[], Mapping[str, Any]], check_seconds: float | None = None) -> Facts:
    """What the cluster says about the principal (module docstring). ``admin``: confluent-kafka's
    Admin; ``cluster``: the ClusterConfig; ``cluster_operations``: the connection check's;
    ``list_groups()``: every group of every type (:func:`operations.kafka_reads.all_groups`)."""
    from operations import kafka_reads
    from operations.errors import OperationError

    asked = PrincipalPermissions(admin)
    problems: list[str] = []
    granted = Granted(frozenset(cluster_operations)) if cluster_operations else Granted.without_describe()
    try:
        visible = sorted(kafka_reads.metadata(admin).topics)
    except OperationError as error:
        visible, problems = [], [*problems, f"topics not read: {error}"]
    try:
        listed = sorted(g for g in list_groups() if cluster.consumer_groups.monitors(g))
    except OperationError as error:
        listed, problems = [], [*problems, f"groups not listed: {error}"]
    seen = {"topics": len(visible), "groups": len(listed)}
    topics = asked.topics(visible[:CHECKED_AT_MOST])
    groups = asked.groups(listed[:CHECKED_AT_MOST])
    probe = cluster.probe.topic if cluster.probe.enabled else None
    creatable = _may_create(admin, probe) if probe is not None and probe not in visible else None
    consumer_group = probe_group(cluster.name)
    probe_granted = (consumer_group, asked.groups([consumer_group])[consumer_group]) if probe is not None else None
    return Facts(granted, topics, groups, probe, creatable, probe_granted, seen, tuple(problems), check_seconds)


def _may_create(admin, topic: str) -> bool | None:
    """CreateTopics with validate_only: authorization is checked before anything else."""
    from confluent_kafka.admin import NewTopic

    try:
        future = admin.create_topics([NewTopic(topic, 1, -1)], validate_only=True, request_timeout=10)[topic]
        future.result(timeout=15)
        return True
    except Exception as error:  # noqa: BLE001
        first = error.args[0] if error.args else None
        name = first.name() if first is not None and hasattr(first, "name") else ""
        if name in ("TOPIC_AUTHORIZATION_FAILED", "CLUSTER_AUTHORIZATION_FAILED"):
            return False
        return None if name in ("", "_TIMED_OUT", "_TRANSPORT") else True
