"""The ACLs kpulse needs, per feature, in one place: read-only monitoring, the probe, and each
operation. Pure: no I/O.

Read by ``kpulse acls`` (:mod:`operations.acl_commands`: the ``kafka-acls`` commands), ``kpulse
doctor`` (:mod:`operations.doctor`: what the configured principal may do), the executors' check
before they change anything (:mod:`operations.preflight`) and docs/operations.md, whose table is
:func:`markdown_table` (``tests/test_permissions.py`` keeps them equal).

Each row was read in Kafka 4's ``KafkaApis`` / ``ControllerApis`` (the "Operations and resources on
protocols" table of Kafka's security documentation lags behind them: it still says ClusterAction
for ElectLeaders, which checks Alter on the cluster) and tried on a real ``StandardAuthorizer``
(``tests/test_acls_secured.py``). Kafka's implications apply: Read, Write, Delete and Alter each
allow Describe; AlterConfigs allows DescribeConfigs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from collections.abc import Callable, Collection, Iterable, Mapping

from kpulse.kafka.authorization import resource_text
from operations.access import ACTION_ROLES, MARK_EXPECTED_IDLE
from operations.registry import (
    DELETE_GROUP, DELETE_OFFSETS, ELECT_LEADERS, REASSIGN, RESET_OFFSETS, RESET_SHARE_GROUP, RESET_STREAMS_APP,
    RESET_STREAMS_GROUP, SKIP_RECORDS,
)
from operations.roles import VIEWER

MONITORING = "monitoring"
PROBE = "probe"
READ_RECORDS = "read-records"
"""``kpulse records`` and the dashboard's records view (``kpulse/kafka/record_fetch.py``): a read for a
person, not an operation (nothing changes); its contents are the operator's to reveal."""
CLUSTER_NAME = "kafka-cluster"
"""The one cluster resource's name, as Kafka's ACLs spell it."""


def probe_group(cluster_name: str) -> str:
    """The group.id of the probe's consumer (``collectors/probe/probe.py``; a test keeps them equal)."""
    return f"kpulse-probe-{cluster_name}"

IMPLIED_BY = {"Describe": ("Read", "Write", "Delete", "Alter"), "DescribeConfigs": ("AlterConfigs",)}
"""Operation -> the operations whose grant allows it too (Kafka's ``AclEntry`` implications)."""


@dataclass(frozen=True)
class Scope:
    """Which resources of one type a need is on, in the table's words; resolved to names by its
    reader (``kpulse acls``: the configured patterns; the pre-check: the plan's group and topics)."""

    resource_type: str
    """``cluster``, ``topic`` or ``group``."""
    text: str


THE_CLUSTER = Scope("cluster", "the cluster")
EVERY_TOPIC = Scope("topic", "every topic")
MONITORED_GROUPS = Scope("group", "every monitored group")
PROBE_TOPIC = Scope("topic", "the probe topic")
PROBE_GROUP = Scope("group", "the probe's group")
THE_GROUP = Scope("group", "the group")
ITS_TOPICS = Scope("topic", "the topics whose offsets change")
INTERNAL_TOPICS = Scope("topic", "the internal topics it deletes")
MOVED_TOPICS = Scope("topic", "the topics whose replicas move")
READ_TOPICS = Scope("topic", "the topics whose records are read")


@dataclass(frozen=True)
class Need:
    """One ACL a feature needs."""

    operation: str
    """As ``kafka-acls --operation`` spells it: Describe, DescribeConfigs, Read, Write, Create, Delete,
    Alter, AlterConfigs."""
    scope: Scope
    requests: tuple[str, ...]
    """The Kafka requests that check it."""
    why: str
    """What it is for, and what is lost without it."""
    label: str = ""
    """The doctor's name for the line of this need (monitoring only: one line per need)."""
    optional: bool = False
    """The feature works without it, with less (``why`` says what)."""
    when: str = ""
    """When it applies, if not always."""


@dataclass(frozen=True)
class Feature:
    name: str
    """``monitoring``, ``probe``, or the operation's name (:mod:`operations.registry`)."""
    needs: tuple[Need, ...]
    note: str = ""

    @property
    def role(self) -> str:
        """The least kpulse role that uses it (monitoring and the probe: anyone)."""
        return ACTION_ROLES.get(self.name, VIEWER)


def _group_commit(request: str) -> tuple[Need, ...]:
    return (Need("Read", THE_GROUP, (request,), "an admin commit for the group, which has no member "
                 "(Read allows Describe too: OffsetFetch, DescribeGroups)"),
            Need("Read", ITS_TOPICS, (request,), "Kafka checks Read on every topic of the request"))


FEATURES: tuple[Feature, ...] = (
    Feature(MONITORING, (
        Need("Describe", THE_CLUSTER, ("ListGroups", "DescribeQuorum", "DescribeLogDirs", "DescribeCluster"),
             "every group listed (without it ListGroups silently returns only the groups kpulse may Describe), "
             "the KRaft quorum, topic sizes on the Topics page", label="cluster"),
        Need("Describe", EVERY_TOPIC, ("Metadata", "ListOffsets", "DescribeTopicPartitions", "OffsetFetch"),
             "partitions, leaders, log ends, ELR; Metadata silently leaves out a topic kpulse may not Describe, "
             "and a group's offsets or members on it are refused", label="topics"),
        Need("DescribeConfigs", EVERY_TOPIC, ("DescribeConfigs",),
             "min.insync.replicas (under-min-ISR partitions) and the Topics page's configs; the answer holds "
             "the broker defaults, so DescribeConfigs on the cluster is not needed", label="topic configs"),
        Need("Describe", MONITORED_GROUPS, ("FindCoordinator", "DescribeGroups", "ConsumerGroupDescribe",
                                            "StreamsGroupDescribe", "ShareGroupDescribe", "OffsetFetch",
                                            "DescribeShareGroupOffsets"),
             "each group's type, members, committed offsets and lag", label="groups"),
    ), note="the collectors and the dashboard; every operation plans with these reads"),
    Feature(PROBE, (
        Need("Create", PROBE_TOPIC, ("CreateTopics",), "the probe creates its topic on its first cycle "
             "(Create on the cluster allows it too)", when="while the topic does not exist"),
        Need("Write", PROBE_TOPIC, ("Produce",), "a record to every partition each cycle"),
        Need("Read", PROBE_TOPIC, ("Fetch",), "reading them back"),
        Need("Describe", PROBE_GROUP, ("FindCoordinator",), "its consumer is only assigned partitions and commits "
             "nothing, but librdkafka looks up the coordinator of its group.id (kpulse-probe-<cluster>); without it "
             "every cycle meets GROUP_AUTHORIZATION_FAILED"),
        Need("Alter", PROBE_TOPIC, ("CreatePartitions",), "a partition for a broker added later", optional=True),
        Need("Alter", THE_CLUSTER, ("ElectLeaders",), "leadership of its own partitions back to their preferred "
             "broker at once after a restart (without it Kafka's automatic rebalance does it, within 5 minutes); "
             "Alter on the cluster also allows reassignments", optional=True),
    )),
    Feature(READ_RECORDS, (
        Need("Read", READ_TOPICS, ("Fetch", "ListOffsets", "Metadata"), "the partition's records, read-committed, "
             "from an offset (no group joined, nothing committed); Read allows Describe (its log start and end)"),
        Need("Describe", THE_GROUP, ("FindCoordinator", "OffsetFetch", "DescribeShareGroupOffsets"),
             "the group's committed offset to start from (monitoring grants it on the monitored groups)",
             when="with --group"),
    ), note="kpulse records and the dashboard's records view; contents hidden until an operator reveals them"),
    Feature(RESET_OFFSETS, _group_commit("OffsetCommit")),
    Feature(RESET_STREAMS_APP, (
        *_group_commit("OffsetCommit"),
        Need("Delete", INTERNAL_TOPICS, ("DeleteTopics",), "the application's repartition and changelog topics "
             "(named <application.id>-...)"),
    )),
    Feature(RESET_STREAMS_GROUP, (
        *_group_commit("OffsetCommit"),
        Need("Delete", INTERNAL_TOPICS, ("DeleteTopics",), "the group's repartition and changelog topics "
             "(named <group>-...)", when="with --delete-all-internal-topics"),
    )),
    Feature(RESET_SHARE_GROUP, _group_commit("AlterShareGroupOffsets")),
    Feature(DELETE_OFFSETS, (
        Need("Delete", THE_GROUP, ("OffsetDelete", "DeleteShareGroupOffsets"), "the group forgets its offsets"),
        Need("Read", ITS_TOPICS, ("OffsetDelete", "DeleteShareGroupOffsets"),
             "Kafka checks Read on every topic of the request"),
    )),
    Feature(DELETE_GROUP, (
        Need("Delete", THE_GROUP, ("DeleteGroups",), "the group and its offsets"),
        Need("Delete", INTERNAL_TOPICS, ("DeleteTopics",), "a Streams group's internal topics",
             when="with --delete-all-internal-topics"),
    )),
    Feature(SKIP_RECORDS, (
        _group_commit("OffsetCommit")[0],
        Need("Read", ITS_TOPICS, ("OffsetCommit", "Fetch"), "Kafka checks Read on the topic of the commit; the "
             "skipped record's timestamp is fetched as `kpulse records` reads (no group joined, nothing "
             "committed)"),
    )),
    Feature(ELECT_LEADERS, (
        Need("Alter", THE_CLUSTER, ("ElectLeaders",), "preferred leader election (Kafka's security table says "
             "ClusterAction; the controller checks Alter)"),
    )),
    Feature(REASSIGN, (
        Need("Alter", THE_CLUSTER, ("AlterPartitionReassignments", "ListPartitionReassignments"),
             "start, follow and cancel the moves"),
        Need("AlterConfigs", THE_CLUSTER, ("IncrementalAlterConfigs", "DescribeConfigs"),
             "the replication throttle rates on the brokers, set, read back and removed"),
        Need("AlterConfigs", MOVED_TOPICS, ("IncrementalAlterConfigs", "DescribeConfigs"),
             "each topic's throttled replicas, set, read back and removed"),
    )),
    Feature(MARK_EXPECTED_IDLE, (), note="a kpulse file: nothing in Kafka"),
)
"""Every feature: monitoring, the probe, reading records, each operation of the registry in its order,
the marks."""


def feature(name: str) -> Feature:
    """The feature called ``name``, or that of the audited action ``name`` (``reassign:verify``)."""
    for candidate in FEATURES:
        if candidate.name == name.split(":")[0]:
            return candidate
    raise KeyError(f"no feature {name!r}")


# --- what the principal may do --------------------------------------------------------------------------

def acl_name(operation: str) -> str:
    """Kafka's ACL spelling of an operation: librdkafka's ``DESCRIBE_CONFIGS`` -> ``DescribeConfigs``."""
    if operation.isupper() or "_" in operation:
        return "".join(word.capitalize() for word in operation.split("_"))
    return operation


@dataclass(frozen=True)
class Granted:
    """What the principal may do on one resource, as Kafka answered (KIP-430 authorized operations)."""

    operations: frozenset[str]
    """As Kafka's ACLs (``Read``) or librdkafka (``READ``) spell them."""
    unsure: Literal["", "all", "no-describe"] = ""
    """``""``: the operations are all it may do; ``"all"``: nothing is known; ``"no-describe"``: the
    cluster answered without operations, as it does to a principal without Describe on it: whatever
    would allow Describe is absent, the rest unknown."""

    @classmethod
    def unknown(cls) -> Granted:
        return cls(frozenset(), "all")

    @classmethod
    def without_describe(cls) -> Granted:
        return cls(frozenset(), "no-describe")

    def names(self) -> list[str]:
        return sorted(acl_name(op) for op in self.operations)


def permits(granted: Granted, operation: str) -> bool | None:
    """Whether ``granted`` allows ``operation`` (directly or by Kafka's implications); None: not known."""
    held = {acl_name(op) for op in granted.operations}
    if operation in held or any(op in held for op in IMPLIED_BY.get(operation, ())):
        return True
    if granted.unsure == "all":
        return None
    if granted.unsure == "no-describe":
        return False if operation == "Describe" or operation in IMPLIED_BY["Describe"] else None
    return False


@dataclass(frozen=True)
class Shortfall:
    """A need the principal lacks on some resources."""

    need: Need
    names: tuple[str, ...]
    granted: Mapping[str, Granted]
    """Resource name -> what the principal may do there."""


Lookup = Callable[[str, str], Granted]
"""``(resource type, name) -> Granted``."""


def shortfalls(feature: Feature, resources: Mapping[Scope, Iterable[str]], granted: Lookup, *,
               optional: bool = False) -> tuple[list[Shortfall], list[tuple[Need, tuple[str, ...]]]]:
    """The needs of ``feature`` the principal lacks on the ``resources`` of each scope (a scope
    without resources: the need does not apply), and those nothing says about (need, names).
    ``optional``: the optional needs too."""
    lacking, unknown = [], []
    for need in feature.needs:
        if need.optional and not optional:
            continue
        names = tuple(resources.get(need.scope, ()))
        answers = {name: granted(need.scope.resource_type, name) for name in names}
        refused = tuple(name for name in names if permits(answers[name], need.operation) is False)
        unsure = tuple(name for name in names if permits(answers[name], need.operation) is None)
        if refused:
            lacking.append(Shortfall(need, refused, {name: answers[name] for name in refused}))
        if unsure:
            unknown.append((need, unsure))
    return lacking, unknown


def refusal(lacking: Iterable[Shortfall]) -> str:
    """``not authorized: Read on group team-a-billing (kpulse's principal may: Describe); ...``."""
    parts = []
    for short in lacking:
        may = sorted({name for granted in short.granted.values() for name in granted.names()})
        parts.append(f"{short.need.operation} on {resource_text(short.need.scope.resource_type, short.names)} "
                     f"(kpulse's principal may: {', '.join(may) or 'nothing'})")
    return "not authorized: " + "; ".join(parts)


AUTHORIZATION_ERRORS = {"GROUP_AUTHORIZATION_FAILED": "group", "TOPIC_AUTHORIZATION_FAILED": "topic",
                        "CLUSTER_AUTHORIZATION_FAILED": "cluster"}


def explain(error: str | None, feature_name: str, *, group: str | None = None,
            topics: Collection[str] = ()) -> str | None:
    """What an authorization error Kafka answered during ``feature_name`` means, from the table:
    ``GROUP_AUTHORIZATION_FAILED`` in an offset reset -> ``not authorized: Read on group g``; None
    for any other error."""
    kind = next((k for name, k in AUTHORIZATION_ERRORS.items() if error and name in error), None)
    if kind is None:
        return None
    names = {"group": [group] if group else [], "topic": list(topics), "cluster": [CLUSTER_NAME]}[kind]
    needs = [n for n in feature(feature_name).needs if n.scope.resource_type == kind and not n.optional
             and n.scope is not INTERNAL_TOPICS]
    if not needs or not names:
        return None
    return "not authorized: " + "; ".join(f"{n.operation} on {resource_text(kind, names)}" for n in needs)


# --- the documentation ----------------------------------------------------------------------------------

def markdown_table() -> str:
    """The table of docs/operations.md: one row per need, the feature with the least kpulse role
    that uses it."""
    rows = ["| feature (kpulse role) | operation | resource | requests | what for |", "|---|---|---|---|---|"]
    for entry in FEATURES:
        name = f"{entry.name} ({entry.role})"
        if not entry.needs:
            rows.append(f"| {name} | - | - | - | {entry.note} |")
        for need in entry.needs:
            condition = "; ".join(part for part in ("optional" if need.optional else "", need.when) if part)
            why = need.why.replace("|", "\\|") + (f" ({condition})" if condition else "")
            rows.append(f"| {name} | {need.operation} | {need.scope.resource_type}: {need.scope.text} | "
                        f"{', '.join(need.requests)} | {why} |")
    return "\n".join(rows) + "\n"
