"""KRaft reads through the batched client (``kpulse/kafka/batched_client.py``): the metadata
quorum (DescribeQuorum, what ``kafka-metadata-quorum describe --status/--replication`` prints) and
the eligible leader replicas of some partitions (DescribeTopicPartitions, the ``Elr:`` and
``LastKnownElr:`` of ``kafka-topics --describe`` on 4.x).

The answers become plain dicts by pure functions (:func:`quorum_from`, :func:`elr_from`), tested
on their own; :class:`KraftReader` sends the requests. A cluster whose brokers do not speak a
request (ZooKeeper mode, Kafka before 3.3 for DescribeQuorum or 3.8 for DescribeTopicPartitions)
gets :class:`NotSupported` with a one-line reason, never an error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from kpulse.kafka.batched_client import (
    BatchedClient, ConnectionManager, Unavailable, answer, error_name, remaining_ms, send,
)

_T = TypeVar("_T")

METADATA_TOPIC = "__cluster_metadata"
"""The KRaft metadata log: one partition, 0."""
ELR_PAGE = 2000
"""Partitions per DescribeTopicPartitions answer (the broker's own cap is 2000)."""
ATTEMPTS = 3
"""A read sent to a broker that just died fails at once (connection refused); the client then picks
another broker. Tries per read, within its timeout."""


class NotSupported(Exception):
    """The brokers do not speak the request; the text is one line saying so."""


# --- pure ----------------------------------------------------------------------------------------------

def _seconds(timestamp_ms: int | None) -> float | None:
    """Epoch ms -> epoch seconds; Kafka's -1 (not known) -> None."""
    return None if timestamp_ms is None or timestamp_ms < 0 else timestamp_ms / 1000.0


def _replica(state: Any, leader_leo: int | None, now: float) -> dict[str, Any]:
    known = state.log_end_offset is not None and state.log_end_offset >= 0
    caught_up = _seconds(state.last_caught_up_timestamp)
    return {"id": state.replica_id,
            "log_end_offset": state.log_end_offset if known else None,
            # the tool's arithmetic, -1 included: a replica the leader has not seen fetch (since it
            # was elected) is its whole log end + 1 behind
            "lag": None if leader_leo is None or state.log_end_offset is None else leader_leo - state.log_end_offset,
            "last_fetch_time": _seconds(state.last_fetch_timestamp),
            "last_caught_up_time": caught_up,
            "caught_up_age_seconds": None if caught_up is None else max(0.0, now - caught_up)}


def quorum_from(response: Any, now: float) -> dict[str, Any]:
    """A DescribeQuorum answer -> the snapshot's quorum (``kpulse.snapshot.KraftQuorum`` without
    the thresholds). ``lag`` of a replica is the leader's log end offset minus its own, as
    ``kafka-metadata-quorum describe --replication`` prints it (the leader's is 0; a replica whose
    log end the leader does not know, -1 in the answer, has ``log_end_offset`` None and the tool's
    lag, the leader's log end + 1); voters are
    listed leader first, then by id (the tool's order), observers by id. Raises ``ValueError``
    (one line) for an answer carrying an error."""
    if getattr(response, "error_code", 0):
        raise ValueError(f"DescribeQuorum: {error_name(response.error_code)}"
                         + (f": {response.error_message}" if getattr(response, "error_message", None) else ""))
    partition = next((p for topic in response.topics if topic.topic_name == METADATA_TOPIC
                      for p in topic.partitions if p.partition_index == 0), None)
    if partition is None:
        raise ValueError(f"DescribeQuorum: no {METADATA_TOPIC} partition 0 in the answer")
    if partition.error_code:
        raise ValueError(f"DescribeQuorum: {error_name(partition.error_code)}"
                         + (f": {partition.error_message}" if getattr(partition, "error_message", None) else ""))
    leader = partition.leader_id
    leader_leo = next((v.log_end_offset for v in partition.current_voters if v.replica_id == leader), None)
    voters = sorted((_replica(v, leader_leo, now) for v in partition.current_voters),
                    key=lambda r: (r["id"] != leader, r["id"]))
    observers = sorted((_replica(o, leader_leo, now) for o in partition.observers), key=lambda r: r["id"])
    followers = [v for v in voters if v["id"] != leader]
    lags = [v["lag"] for v in followers if v["lag"] is not None]
    ages = [v["caught_up_age_seconds"] for v in followers if v["caught_up_age_seconds"] is not None]
    return {"leader_id": leader if leader is not None and leader >= 0 else None,
            "leader_epoch": partition.leader_epoch,
            "high_watermark": partition.high_watermark if partition.high_watermark >= 0 else None,
            "voters": voters,
            "observers": observers,
            "max_voter_lag": max(lags) if lags else None,
            "max_voter_caught_up_age_seconds": max(ages) if ages else None}


def elr_from(responses: Iterable[Any]) -> dict[tuple[str, int], tuple[list[int] | None, list[int] | None]]:
    """DescribeTopicPartitions answers -> (topic, partition) -> (ELR, LastKnownElr), each a sorted
    list or None when the answer leaves it out (null: the feature is off). Topics answered with an
    error (deleted meanwhile) are left out."""
    found = {}
    for response in responses:
        for topic in response.topics:
            if topic.error_code:
                continue
            for p in topic.partitions:
                if p.error_code:
                    continue
                elr = None if p.eligible_leader_replicas is None else sorted(p.eligible_leader_replicas)
                known = None if p.last_known_elr is None else sorted(p.last_known_elr)
                found[(topic.name, p.partition_index)] = (elr, known)
    return found


def registrations_from(response: Any) -> dict[str, list[int]]:
    """A DescribeCluster (v2+, fenced brokers included) answer -> ``{"unfenced": ids, "fenced": ids}``,
    each sorted: the controller's ActiveBrokerCount and FencedBrokerCount without its metrics.
    Raises ``ValueError`` (one line) for an answer carrying an error."""
    if getattr(response, "error_code", 0):
        raise ValueError(f"DescribeCluster: {error_name(response.error_code)}"
                         + (f": {response.error_message}" if getattr(response, "error_message", None) else ""))
    fenced = sorted(b.broker_id for b in response.brokers if getattr(b, "is_fenced", False))
    unfenced = sorted(b.broker_id for b in response.brokers if not getattr(b, "is_fenced", False))
    return {"unfenced": unfenced, "fenced": fenced}


# --- I/O -----------------------------------------------------------------------------------------------

class KraftReader:
    """Sends DescribeQuorum and DescribeTopicPartitions through ``client`` (a :class:`BatchedClient`;
    building it connects to nothing)."""

    def __init__(self, client: BatchedClient) -> None:
        self.client = client

    def _manager(self, timeout: float, request: Any) -> ConnectionManager:
        from kpulse.kafka.group_listing import api_version

        try:
            manager = self.client.manager(timeout, {})
        except Unavailable as reason:
            raise NotSupported(str(reason)) from None
        if api_version(manager, request) < 0:
            raise NotSupported(f"the brokers do not speak {request.__name__.removesuffix('Request')} "
                               f"({_SINCE.get(request.__name__, 'an older Kafka')})")
        return manager

    def quorum(self, timeout: float, now: float, nodes: Sequence[int] = ()) -> dict[str, Any]:
        """The quorum (:func:`quorum_from`), asked of ``nodes`` in turn (live broker ids; none: the
        client picks); raises :class:`NotSupported`, or another exception (one line) when the read failed."""
        from kafka.protocol.admin import DescribeQuorumRequest

        manager = self._manager(timeout, DescribeQuorumRequest)
        topic = DescribeQuorumRequest.TopicData
        request = DescribeQuorumRequest(topics=[topic(topic_name=METADATA_TOPIC,
                                                      partitions=[topic.PartitionData(partition_index=0)])])

        def attempt(node: int | None, deadline: float) -> Any:
            async def read() -> Any:
                return await answer(send(manager, request, node, remaining_ms(deadline, self.client.clock)))
            return manager.run(read)

        return quorum_from(_retried(attempt, nodes, timeout, self.client.clock), now)

    def registrations(self, timeout: float, nodes: Sequence[int] = ()) -> dict[str, list[int]]:
        """The registered brokers, fenced or not (:func:`registrations_from`): DescribeCluster v2
        (KIP-1073, Kafka 4.0); raises :class:`NotSupported` for older brokers."""
        from kafka.protocol.admin import DescribeClusterRequest

        manager = self._manager(timeout, DescribeClusterRequest)
        from kpulse.kafka.group_listing import api_version

        if api_version(manager, DescribeClusterRequest) < 2:
            raise NotSupported("the brokers do not list fenced brokers in DescribeCluster (Kafka 4.0, KIP-1073)")
        request = DescribeClusterRequest(include_cluster_authorized_operations=False, endpoint_type=1,
                                         include_fenced_brokers=True, min_version=2)

        def attempt(node: int | None, deadline: float) -> Any:
            async def read() -> Any:
                return await answer(send(manager, request, node, remaining_ms(deadline, self.client.clock)))
            return manager.run(read)

        return registrations_from(_retried(attempt, nodes, timeout, self.client.clock))

    def elr(self, partitions: Mapping[str, Iterable[int]], timeout: float, nodes: Sequence[int] = ()
            ) -> dict[tuple[str, int], tuple[list[int] | None, list[int] | None]]:
        """ELR and LastKnownElr of the given partitions (topic -> partition numbers): one
        DescribeTopicPartitions for all their topics, followed page by page (:data:`ELR_PAGE`
        partitions each, the broker's cursor) until the answer ends. Asked of ``nodes`` in turn (live
        broker ids; none: the client picks). Raises :class:`NotSupported`.

        One request, not one per topic at once: with a broker down every topic it holds a replica
        of has problem partitions, and more requests in flight than the client allows to one broker
        (five) would fail the read ("Node paused: max_in_flight")."""
        from kafka.protocol.admin import DescribeTopicPartitionsRequest as Request

        manager = self._manager(timeout, Request)
        wanted = {topic: sorted(set(numbers)) for topic, numbers in partitions.items() if numbers}
        if not wanted:
            return {}

        def attempt(node: int | None, deadline: float) -> list[Any]:
            async def read() -> list[Any]:
                topics = sorted(wanted)
                cursor = Request.Cursor(topic_name=topics[0], partition_index=0)
                answers = []
                while topics:
                    request = Request(topics=[Request.TopicRequest(name=topic) for topic in topics],
                                      response_partition_limit=ELR_PAGE, cursor=cursor)
                    response = await answer(send(manager, request, node, remaining_ms(deadline, self.client.clock)))
                    answers.append(response)
                    following = response.next_cursor
                    if following is None:
                        break
                    topics = [topic for topic in topics if topic >= following.topic_name]
                    cursor = Request.Cursor(topic_name=following.topic_name, partition_index=following.partition_index)
                return answers
            return manager.run(read)

        found = elr_from(_retried(attempt, nodes, timeout, self.client.clock))
        return {(topic, number): found[(topic, number)] for topic, numbers in wanted.items() for number in numbers
                if (topic, number) in found}


def _retried(attempt: Callable[[int | None, float], _T], nodes: Sequence[int], timeout: float,
             clock: Callable[[], float]) -> _T:
    """``attempt(node, deadline)``, tried again (:data:`ATTEMPTS` in all) when it fails for another
    reason than the answer's content, each time of the next of ``nodes`` (None when there are none:
    the client picks) and within its share of ``timeout``: a broker that just died, or one that
    does not answer in time, is left for another instead of taking the whole timeout."""
    from tenacity import Retrying, retry_if_not_exception_type, stop_after_attempt

    tries = iter(range(ATTEMPTS))
    for trial in Retrying(stop=stop_after_attempt(ATTEMPTS), reraise=True,
                          retry=retry_if_not_exception_type((NotSupported, ValueError))):
        with trial:
            number = next(tries)
            node = nodes[number % len(nodes)] if nodes else None
            return attempt(node, clock() + timeout / ATTEMPTS)
    raise AssertionError("unreachable: tenacity reraises the last failure")


_SINCE = {"DescribeQuorumRequest": "KRaft, Kafka 3.3+", "DescribeTopicPartitionsRequest": "Kafka 3.8+"}
