"""The classic offset reset and the classic Streams application reset read and commit a group's
offsets only through the group requests (kafka-python, :class:`operations.group_requests.GroupRequests`),
never through librdkafka's ListConsumerGroupOffsets / AlterConsumerGroupOffsets, which abort the
whole process on a moving coordinator (librdkafka #5040; ``rd_kafka_enq_once_del_source_return:
Assertion 'eonce->refcnt > 0'`` on the first alter of a fresh cluster).

Pure logic: the service facade over a fake librdkafka admin (metadata, log offsets, group
description, topic deletion; its offset calls fail the test) and fake group requests. The real
cluster runs the same paths against the official tools' ``--execute`` on twin groups
(test_ops_offsets, test_ops_streams)."""

from __future__ import annotations

from concurrent.futures import Future
from types import SimpleNamespace
from typing import Any

import pytest

from tests.support import RecordedAudit

from operations.access import User
from operations.kafka_reads import GroupListing
from operations.offset_plan import Scope, Strategy

GROUP = "billing"
APP = "orders-app"
INPUT, CHANGELOG = "orders", "orders-app-store-changelog"
LOGS = {(INPUT, 0): (2, 40), (INPUT, 1): (0, 25)}
"""(log start, log end) per partition."""
OPERATOR = User("olga", "operator")
ADMIN = User("ada", "admin")


def done(value) -> Future[Any]:
    future: Future[Any] = Future()
    future.set_result(value)
    return future


class FakeAdmin:
    """confluent-kafka's Admin as the planners and executors use it, with no group offset calls."""

    def __init__(self):
        self.topics = {INPUT: [0, 1], CHANGELOG: [0]}
        self.offset_calls: list[str] = []

    def describe_consumer_groups(self, group_ids, request_timeout):
        from confluent_kafka import ConsumerGroupState

        return {g: done(SimpleNamespace(members=[], state=ConsumerGroupState.EMPTY)) for g in group_ids}

    def list_topics(self, timeout):
        return SimpleNamespace(topics={name: SimpleNamespace(partitions=dict.fromkeys(partitions))
                                       for name, partitions in self.topics.items()})

    def list_offsets(self, requests, request_timeout):
        def offset(tp, spec):
            start, end = LOGS.get((tp.topic, tp.partition), (0, 0))
            return start if type(spec).__name__ == "EarliestSpec" else end

        return {tp: done(SimpleNamespace(offset=offset(tp, spec))) for tp, spec in requests.items()}

    def delete_topics(self, topics, operation_timeout, request_timeout):
        for topic in topics:
            self.topics.pop(topic)
        return {topic: done(None) for topic in topics}

    def list_consumer_group_offsets(self, *args, **kwargs):
        self.offset_calls.append("ListConsumerGroupOffsets")
        raise AssertionError("librdkafka's ListConsumerGroupOffsets was called")

    def alter_consumer_group_offsets(self, *args, **kwargs):
        self.offset_calls.append("AlterConsumerGroupOffsets")
        raise AssertionError("librdkafka's AlterConsumerGroupOffsets was called")


class FakeRequests:
    """The group requests: committed offsets per group, commits recorded; ``refuse`` -> the error
    the coordinator answers for that partition."""

    def __init__(self, committed: dict[str, dict], refuse: dict | None = None):
        self.offsets = {group: dict(offsets) for group, offsets in committed.items()}
        self.refuse = refuse or {}
        self.commits: list[tuple[str, dict]] = []
        self.closed = 0

    def committed(self, group_id, **_):
        return dict(self.offsets.get(group_id, {}))

    def commit(self, group_id, offsets):
        self.commits.append((group_id, dict(offsets)))
        for tp, offset in offsets.items():
            if tp not in self.refuse:
                self.offsets.setdefault(group_id, {})[tp] = offset
        return {tp: self.refuse.get(tp) for tp in offsets}

    def close(self):
        self.closed += 1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@pytest.fixture
def service(tmp_path):
    """(the Operations service over the fakes, the fake admin, the fake requests)."""
    from kpulse.config import parse_config
    from operations.service import Operations

    config = parse_config({"clusters": [{"name": "prod", "bootstrap_servers": "k:9092"}],
                           "lake": {"path": str(tmp_path / "lake")}}, source="test", base_dir=tmp_path, environ={})
    admin = FakeAdmin()
    requests = FakeRequests({GROUP: {(INPUT, 0): 30, (INPUT, 1): 20}, APP: {(INPUT, 0): 35}})
    listing = {g: GroupListing(g, "classic", "Empty") for g in (GROUP, APP)}

    class Offline(Operations):
        """The service with its kafka-python clients replaced by the fakes."""

        def _requests(self, cluster):
            return requests

        def _group_listing(self, cluster):
            return lambda: listing

    return Offline(config, state_dir=tmp_path / "state", audit=RecordedAudit(), admin_factory=lambda settings: admin), \
        admin, requests


def test_an_offset_reset_reads_and_commits_through_the_group_requests_never_librdkafka(service):
    operations, admin, requests = service

    plan = operations.plan_reset_offsets("prod", GROUP, Scope.parse(True, None), Strategy("to-earliest"))
    outcome = operations.reset_offsets(OPERATOR, plan, expect_current={(INPUT, 1): 20})

    assert admin.offset_calls == []
    assert [(p.current, p.new) for p in plan.partitions] == [(30, 2), (20, 0)]
    assert requests.commits == [(GROUP, {(INPUT, 0): 2, (INPUT, 1): 0})]
    assert outcome.result == "ok" and [(r.before, r.after, r.error) for r in outcome.partitions] == [
        (30, 2, None), (20, 0, None)]
    [record] = operations.audit.records
    assert (record.result, record.after) == ("ok", {f"{INPUT}-0": 2, f"{INPUT}-1": 0})


def test_a_partition_the_coordinator_refuses_is_named_in_the_outcome_and_the_audit(service):
    operations, admin, requests = service
    plan = operations.plan_reset_offsets("prod", GROUP, Scope.parse(False, [INPUT]), Strategy("to-latest"))
    requests.refuse = {(INPUT, 1): "UNKNOWN_MEMBER_ID"}

    outcome = operations.reset_offsets(OPERATOR, plan)

    assert admin.offset_calls == []
    assert [(r.partition, r.after, r.error) for r in outcome.partitions] == [(0, 40, None), (1, 20, "UNKNOWN_MEMBER_ID")]
    assert outcome.result == "partial" and "orders-1 (committed 20, planned 25)" in outcome.error
    assert operations.audit.records[-1].result == "partial"


def test_an_offset_reset_refuses_offsets_that_moved_since_the_plan_and_commits_nothing(service):
    from operations.errors import Refused

    operations, admin, requests = service
    plan = operations.plan_reset_offsets("prod", GROUP, Scope.parse(True, None), Strategy("to-earliest"))
    requests.offsets[GROUP][(INPUT, 0)] = 31

    with pytest.raises(Refused, match=f"the offsets of group '{GROUP}' changed since the plan was made "
                                      r"\(orders-0: 30 -> 31\); plan again"):
        operations.reset_offsets(OPERATOR, plan)
    assert requests.commits == [] and admin.offset_calls == []
    assert operations.audit.records[-1].result == "refused"


def test_a_streams_app_reset_reads_and_commits_through_the_group_requests_never_librdkafka(service):
    operations, admin, requests = service

    plan = operations.plan_streams_reset("prod", APP, [INPUT], [])
    outcome = operations.reset_streams_app(ADMIN, plan, include_internal=False)

    assert admin.offset_calls == []
    assert [(p.partition, p.current, p.new) for p in plan.input] == [(0, 35, 2), (1, None, 0)]
    assert plan.delete_topics == (CHANGELOG,)
    assert requests.commits == [(APP, {(INPUT, 0): 2, (INPUT, 1): 0})]
    assert outcome.result == "ok" and outcome.deleted == (CHANGELOG,)
    assert [(r["before"], r["after"], r["error"]) for r in outcome.partitions] == [(35, 2, None), (None, 0, None)]


def test_a_streams_app_whose_commit_is_refused_keeps_its_internal_topics(service):
    """As the official resetter, whose commit fails before it deletes anything."""
    operations, admin, requests = service
    plan = operations.plan_streams_reset("prod", APP, [INPUT], [])
    requests.refuse = {(INPUT, 1): "UNKNOWN_MEMBER_ID"}

    outcome = operations.reset_streams_app(ADMIN, plan)

    assert admin.offset_calls == [] and CHANGELOG in admin.topics and outcome.deleted == ()
    assert outcome.result == "partial"
    assert [(r["partition"], r["error"]) for r in outcome.partitions] == [(0, None), (1, "UNKNOWN_MEMBER_ID")]


def test_a_cluster_kafka_python_cannot_reach_is_named_in_one_line_and_librdkafka_is_not_asked(tmp_path):
    """Security settings kpulse does not give kafka-python (OAUTHBEARER without a token endpoint:
    the config check refuses it, a config built in code may hold it) fall back to no librdkafka
    offset call (that is the crash this avoids)."""
    import dataclasses

    from kpulse.config import parse_config
    from operations.errors import BadInput
    from operations.service import Operations

    security = {"protocol": "SASL_SSL", "sasl_mechanism": "OAUTHBEARER",
                "sasl_oauthbearer_token_endpoint_url": "https://idp/token", "sasl_oauthbearer_client_id": "kpulse",
                "sasl_oauthbearer_client_secret": "cs"}
    config = parse_config({"clusters": [{"name": "prod", "bootstrap_servers": "k:9092", "security": security}],
                           "lake": {"path": str(tmp_path / "lake")}}, source="test", base_dir=tmp_path, environ={})
    cluster = config.clusters[0]
    config = dataclasses.replace(config, clusters=(dataclasses.replace(cluster, security=dataclasses.replace(
        cluster.security, sasl_oauthbearer_token_endpoint_url=None)),))
    admin = FakeAdmin()

    class Listed(Operations):
        def _group_listing(self, cluster):
            return lambda: {GROUP: GroupListing(GROUP, "classic", "Empty")}

    operations = Listed(config, state_dir=tmp_path / "state", audit=RecordedAudit(), admin_factory=lambda settings: admin)

    with pytest.raises(BadInput, match="^the group offsets of cluster 'prod' are read and changed through "
                                       "kafka-python: OAUTHBEARER needs sasl_oauthbearer_token_endpoint_url: "
                                       "kpulse supports OIDC client credentials only; nothing changed$"):
        operations.plan_reset_offsets("prod", GROUP, Scope.parse(True, None), Strategy("to-earliest"))
    assert admin.offset_calls == []
