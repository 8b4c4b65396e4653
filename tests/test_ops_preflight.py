"""An execution is refused before anything changes when kpulse's principal lacks the ACL it needs
(``operations/preflight.py``: Kafka's KIP-430 authorized operations of the cluster, the group and
the topics, against ``operations/permissions.py``); when Kafka refuses anyway, the outcome and the
audit row name Kafka's error per partition.

Over fakes of confluent-kafka's Admin and of the group requests; the secured cluster runs the same
paths for real (tests/test_acls_secured.py)."""

from __future__ import annotations

from concurrent.futures import Future
from types import SimpleNamespace
from typing import Any

import pytest

from tests.support import RecordedAudit

from operations.access import User
from operations.errors import Refused
from operations.kafka_reads import GroupListing
from operations.offset_plan import Scope, Strategy
from operations.preflight import PrincipalPermissions, require

GROUP, TOPIC = "team-a-billing", "orders"
OPERATOR = User("olga", "operator")


def done(value) -> Future[Any]:
    future: Future[Any] = Future()
    future.set_result(value)
    return future


def failed(name: str) -> Future[Any]:
    from confluent_kafka import KafkaError, KafkaException

    future: Future[Any] = Future()
    future.set_exception(KafkaException(KafkaError(getattr(KafkaError, name))))
    return future


def ops(*names):
    from confluent_kafka.admin import AclOperation

    return [AclOperation[name] for name in names]


class Admin:
    """confluent-kafka's Admin as the planner, the executor and the pre-check use it.
    ``groups`` / ``topics``: name -> authorized operation names, or an error name; ``cluster``:
    the cluster's (None: answered without operations)."""

    def __init__(self, groups=None, topics=None, cluster=("DESCRIBE",)):
        self.groups = groups if groups is not None else {GROUP: ("DESCRIBE",)}
        self.topics = topics if topics is not None else {TOPIC: ("DESCRIBE",)}
        self.cluster = cluster
        self.asked: list[str] = []

    def _answer(self, table, name, value):
        found = table.get(name)
        if isinstance(found, str):
            return failed(found)
        return done(value(None if found is None else ops(*found)))

    def describe_consumer_groups(self, group_ids, request_timeout, include_authorized_operations=False):
        from confluent_kafka import ConsumerGroupState

        self.asked += [f"group {g}" for g in group_ids if include_authorized_operations]
        return {g: self._answer(self.groups, g, lambda found: SimpleNamespace(
            members=[], state=ConsumerGroupState.EMPTY, authorized_operations=found)) for g in group_ids}

    def describe_topics(self, topics, request_timeout, include_authorized_operations=False):
        self.asked += [f"topic {t}" for t in topics.topic_names]
        return {t: self._answer(self.topics, t, lambda found: SimpleNamespace(authorized_operations=found))
                for t in topics.topic_names}

    def describe_cluster(self, request_timeout, include_authorized_operations=False):
        self.asked.append("cluster")
        return done(SimpleNamespace(authorized_operations=None if self.cluster is None else ops(*self.cluster)))

    def list_topics(self, timeout):
        return SimpleNamespace(topics={TOPIC: SimpleNamespace(partitions=dict.fromkeys([0, 1]))})

    def list_offsets(self, requests, request_timeout):
        return {tp: done(SimpleNamespace(offset=0 if type(spec).__name__ == "EarliestSpec" else 100))
                for tp, spec in requests.items()}


class Requests:
    """The group requests: committed offsets, commits answered with ``refuse`` (an error name) or None."""

    def __init__(self, refuse=None):
        self.offsets = {(TOPIC, 0): 10, (TOPIC, 1): 10}
        self.refuse = refuse
        self.commits = []

    def committed(self, group_id, **_):
        return dict(self.offsets)

    def commit(self, group_id, offsets):
        self.commits.append(dict(offsets))
        if self.refuse is None:
            self.offsets.update(offsets)
        return {tp: self.refuse for tp in offsets}

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


@pytest.fixture
def service(tmp_path):
    from kpulse.config import parse_config
    from operations.service import Operations

    config = parse_config({"clusters": [{"name": "prod", "bootstrap_servers": "k:9092"}],
                           "lake": {"path": str(tmp_path / "lake")}}, source="test", base_dir=tmp_path, environ={})
    state = SimpleNamespace(admin=Admin(), requests=Requests())

    class Offline(Operations):
        def _requests(self, cluster):
            return state.requests

        def _group_listing(self, cluster):
            return lambda: {GROUP: GroupListing(GROUP, "classic", "Empty")}

    state.operations = Offline(config, state_dir=tmp_path / "state", audit=RecordedAudit(),
                               admin_factory=lambda settings: state.admin)
    return state


# --- the check ------------------------------------------------------------------------------------------

def test_a_reader_is_refused_read_on_the_group_and_the_topic():
    with pytest.raises(Refused) as refused:
        require(PrincipalPermissions(Admin()), "reset-offsets", group=GROUP, topics=[TOPIC])
    assert str(refused.value) == ("not authorized: Read on group team-a-billing (kpulse's principal may: Describe); "
                                  "Read on topic orders (kpulse's principal may: Describe); nothing changed")


def test_a_principal_with_read_passes_and_only_what_the_feature_needs_is_asked():
    admin = Admin(groups={GROUP: ("READ", "DESCRIBE")}, topics={TOPIC: ("READ",)})
    require(PrincipalPermissions(admin), "reset-offsets", group=GROUP, topics=[TOPIC])
    assert admin.asked == [f"group {GROUP}", f"topic {TOPIC}"]


def test_a_group_it_may_not_even_describe_is_refused_with_nothing_it_may_do():
    with pytest.raises(Refused, match=r"^not authorized: Delete on group team-b \(kpulse's principal may: nothing\)"):
        require(PrincipalPermissions(Admin(groups={"team-b": "GROUP_AUTHORIZATION_FAILED"})), "delete-group",
                group="team-b")


@pytest.mark.parametrize("cluster,refused", [
    (None, "not authorized: Alter on cluster (kpulse's principal may: nothing); nothing changed"),
    (("DESCRIBE", "DESCRIBE_CONFIGS"), "not authorized: Alter on cluster (kpulse's principal may: Describe, "
                                       "DescribeConfigs); nothing changed"),
    (("ALTER", "DESCRIBE"), None),
])
def test_an_election_needs_alter_on_the_cluster(cluster, refused):
    check = lambda: require(PrincipalPermissions(Admin(cluster=cluster)), "elect-leaders")  # noqa: E731
    if refused is None:
        check()
    else:
        with pytest.raises(Refused) as error:
            check()
        assert str(error.value) == refused


def test_a_reassignment_needs_alter_and_alterconfigs_on_the_cluster_and_its_topics():
    admin = Admin(cluster=("ALTER", "DESCRIBE"), topics={TOPIC: ("DESCRIBE",)})
    with pytest.raises(Refused, match=r"^not authorized: AlterConfigs on cluster .*; AlterConfigs on topic orders"):
        require(PrincipalPermissions(admin), "reassign:execute", moved_topics=[TOPIC])


def test_what_kafka_does_not_say_is_left_to_kafka():
    class Broken(Admin):
        def describe_consumer_groups(self, *args, **kwargs):
            raise TypeError("an admin without include_authorized_operations")

    require(PrincipalPermissions(Broken(groups={}, topics={TOPIC: "UNKNOWN_TOPIC_OR_PART"})), "reset-offsets",
            group=GROUP, topics=[TOPIC])


# --- through the service -----------------------------------------------------------------------------

def test_the_reader_s_offset_reset_is_refused_before_the_commit_and_audited_as_refused(service):
    operations = service.operations
    plan = operations.plan_reset_offsets("prod", GROUP, Scope.parse(False, [TOPIC]), Strategy("to-earliest"))

    with pytest.raises(Refused, match=r"^not authorized: Read on group team-a-billing \(kpulse's principal may: "
                                      r"Describe\); Read on topic orders"):
        operations.reset_offsets(OPERATOR, plan)

    assert service.requests.commits == []
    [record] = operations.audit.records
    assert record.result == "refused" and record.error.startswith("not authorized: Read on group team-a-billing")


def test_a_commit_kafka_refuses_anyway_names_kafka_s_error_per_partition_in_the_audit(service):
    service.admin.groups, service.admin.topics = {}, {}   # Kafka says nothing: the executor tries
    service.requests.refuse = "GROUP_AUTHORIZATION_FAILED"
    operations = service.operations
    plan = operations.plan_reset_offsets("prod", GROUP, Scope.parse(False, [TOPIC]), Strategy("to-earliest"))

    outcome = operations.reset_offsets(OPERATOR, plan)

    assert outcome.result == "failed"
    assert [p.error for p in outcome.partitions] == ["GROUP_AUTHORIZATION_FAILED"] * 2
    [record] = operations.audit.records
    assert record.result == "failed"
    assert "GROUP_AUTHORIZATION_FAILED on orders-0, orders-1" in record.error
    assert "orders-0 (committed 10, planned 0)" in record.error
