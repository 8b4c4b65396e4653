"""Before an executor changes anything: may kpulse's principal do it?

Kafka says what a principal may do on a resource it describes (KIP-430 authorized operations:
DescribeCluster, DescribeGroups, Metadata / DescribeTopicPartitions with
``include_authorized_operations``). :func:`require` asks for the cluster, the group and the topics
a plan touches, compares with the feature's needs (:mod:`operations.permissions`) and refuses in
one line naming what is missing ("not authorized: Read on group team-a-billing (kpulse's principal
may: Describe)"), before anything is changed; :meth:`operations.service.Operations.run` audits it
as refused.

Nothing is refused on a guess: a resource whose operations Kafka did not say (a call that failed
or timed out, a streams or share group that DescribeGroups does not describe, an operation the
cluster's answer cannot tell) is left to Kafka, and the executor names Kafka's answer.
"""

from __future__ import annotations

from collections.abc import Iterable

from operations.errors import Refused
from operations.kafka_reads import TIMEOUT
from operations.permissions import (
    CLUSTER_NAME, INTERNAL_TOPICS, ITS_TOPICS, MOVED_TOPICS, THE_CLUSTER, THE_GROUP, Granted, feature, refusal,
    shortfalls,
)

_REFUSED = {"GROUP_AUTHORIZATION_FAILED", "TOPIC_AUTHORIZATION_FAILED"}


def _error_name(error: BaseException) -> str:
    first = error.args[0] if error.args else None
    name = getattr(first, "name", None)
    return name() if callable(name) else ""


def _granted(described) -> Granted:
    operations = getattr(described, "authorized_operations", None)
    if operations is None:
        return Granted.unknown()
    return Granted(frozenset(getattr(op, "name", str(op)) for op in operations))


class PrincipalPermissions:
    """What kpulse's principal may do on one cluster, asked through ``admin`` (confluent-kafka's
    Admin) when called. Every answer Kafka does not give is :meth:`Granted.unknown`."""

    def __init__(self, admin, timeout: float = TIMEOUT):
        self.admin = admin
        self.timeout = timeout

    def cluster(self) -> Granted:
        """Without Describe on the cluster, DescribeCluster answers with no operations at all."""
        try:
            described = self.admin.describe_cluster(include_authorized_operations=True,
                                                    request_timeout=self.timeout).result(timeout=self.timeout + 5)
        except Exception:  # noqa: BLE001 - not known: left to Kafka
            return Granted.unknown()
        operations = getattr(described, "authorized_operations", None)
        return Granted(frozenset(op.name for op in operations)) if operations else Granted.without_describe()

    def groups(self, group_ids: Iterable[str]) -> dict[str, Granted]:
        wanted = sorted(set(group_ids))
        return self._each(wanted, lambda: self.admin.describe_consumer_groups(
            wanted, include_authorized_operations=True, request_timeout=self.timeout))

    def topics(self, names: Iterable[str]) -> dict[str, Granted]:
        from confluent_kafka import TopicCollection

        wanted = sorted(set(names))
        return self._each(wanted, lambda: self.admin.describe_topics(
            TopicCollection(wanted), include_authorized_operations=True, request_timeout=self.timeout))

    def _each(self, names: list[str], call) -> dict[str, Granted]:
        if not names:
            return {}
        try:
            futures = call()
        except Exception:  # noqa: BLE001 - not known: left to Kafka
            return {name: Granted.unknown() for name in names}
        found = {}
        for name in names:
            try:
                found[name] = _granted(futures[name].result(timeout=self.timeout + 5))
            except Exception as error:  # noqa: BLE001
                found[name] = Granted(frozenset()) if _error_name(error) in _REFUSED else Granted.unknown()
        return found


def require(permissions: PrincipalPermissions, action: str, *, group: str | None = None,
            topics: Iterable[str] = (), internal_topics: Iterable[str] = (), moved_topics: Iterable[str] = ()) -> None:
    """Refuse (:class:`Refused`, one line) when the principal lacks what ``action`` (an operation's
    name or audited action) needs on the plan's ``group``, the ``topics`` whose offsets change, the
    ``internal_topics`` it deletes, the ``moved_topics`` of a reassignment, or the cluster."""
    entry = feature(action)
    needed = [n for n in entry.needs if not n.optional]
    resources = {THE_GROUP: [group] if group else [], ITS_TOPICS: sorted(set(topics)),
                 INTERNAL_TOPICS: sorted(set(internal_topics)), MOVED_TOPICS: sorted(set(moved_topics)),
                 THE_CLUSTER: [CLUSTER_NAME] if any(n.scope is THE_CLUSTER for n in needed) else []}
    asked = {(n.scope.resource_type, name) for n in needed for name in resources.get(n.scope, ())}
    groups = permissions.groups(name for kind, name in asked if kind == "group")
    topics_granted = permissions.topics(name for kind, name in asked if kind == "topic")
    cluster = permissions.cluster() if ("cluster", CLUSTER_NAME) in asked else Granted.unknown()
    answers = {"group": groups, "topic": topics_granted, "cluster": {CLUSTER_NAME: cluster}}
    lacking, _ = shortfalls(entry, resources, lambda kind, name: answers[kind].get(name, Granted.unknown()))
    if lacking:
        raise Refused(f"{refusal(lacking)}; nothing changed")
