"""Committed offsets of many consumer groups in a few requests.

librdkafka's Admin API reads one group per call, with a FindCoordinator before each OffsetFetch
(two requests per group and cycle). Since Kafka 3.0 one FindCoordinator answers for many groups
(KIP-699) and one OffsetFetch reads many groups (KIP-709); kafka-python speaks both, so
:class:`BatchedOffsetFetch` sends:

- one FindCoordinator for the groups whose coordinator it does not know yet (coordinators are kept
  between cycles), then
- one OffsetFetch per coordinator for all of that coordinator's groups

(4 requests a cycle for 200 groups on 3 brokers; the broker CPU it saves is in docs/performance.md).

A group whose coordinator moved (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
COORDINATOR_LOAD_IN_PROGRESS) has its coordinator looked up again and is read once more in the same
call; a group that still fails, or that the brokers refuse (GROUP_AUTHORIZATION_FAILED, ...), gets
its reason, and the other groups are not held up by it. Where the batched requests cannot be used
(see ``kpulse/kafka/batched_client.py``, or a FindCoordinator that fails as a whole),
:meth:`BatchedOffsetFetch.read` returns None and the caller reads group by group through librdkafka
(``group_offsets``).

The answer parsing (:func:`coordinators_from`, :func:`offsets_from`) is pure; the class does the I/O.
The OffsetFetch v8 answers are decoded straight into offsets by ``offset_fetch_decoder`` (what
:func:`offsets_from` reads from kafka-python's decoding of any other version).
"""

from __future__ import annotations

from typing import Any
from collections.abc import Callable, Iterable

from kpulse.kafka.batched_client import (
    BatchedClient, ConnectionManager, Unavailable, answer, error_name, one_line, remaining_ms, send,
)

MOVED_COORDINATOR = {14: "COORDINATOR_LOAD_IN_PROGRESS", 15: "COORDINATOR_NOT_AVAILABLE", 16: "NOT_COORDINATOR"}
"""Group error codes after which the group's coordinator is looked up again."""
OFFSET_FETCH_VERSION = 8
"""The first version that reads many groups; 10 names topics by id, which kpulse does not need."""
FIND_COORDINATOR_VERSION = 4
"""The first version that looks up many keys."""


class GroupReadError(Exception):
    """Why one group's committed offsets could not be read (one line)."""


CommittedOffsets = dict[tuple[str, int], int]
"""One group's committed offsets: (topic, partition) -> the offset."""


def coordinators_from(coordinators: Iterable[Any]) -> tuple[dict[str, Any], dict[str, GroupReadError]]:
    """A FindCoordinator (v4+) answer's ``coordinators`` -> (group -> its coordinator entry, group ->
    why it has none)."""
    found: dict[str, Any] = {}
    failed: dict[str, GroupReadError] = {}
    for entry in coordinators:
        if entry.error_code:
            detail = f" ({entry.error_message})" if getattr(entry, "error_message", None) else ""
            failed[entry.key] = GroupReadError(f"no coordinator: {error_name(entry.error_code)}{detail}")
        else:
            found[entry.key] = entry
    return found, failed


def offsets_from(groups: Iterable[Any]) -> tuple[dict[str, CommittedOffsets], dict[str, GroupReadError], set[str]]:
    """An OffsetFetch (v8+) answer's ``groups`` -> (group -> {(topic, partition): committed offset},
    group -> why it could not be read, groups whose coordinator moved).

    A partition with an error of its own or no committed offset (-1) is left out, as librdkafka's
    reading leaves it out: the group is read, that partition has no commit to show."""
    read: dict[str, CommittedOffsets] = {}
    failed: dict[str, GroupReadError] = {}
    moved: set[str] = set()
    for group in groups:
        code = group.error_code
        if code in MOVED_COORDINATOR:
            moved.add(group.group_id)
            failed[group.group_id] = GroupReadError(f"OffsetFetch: {MOVED_COORDINATOR[code]}")
        elif code:
            failed[group.group_id] = GroupReadError(f"OffsetFetch: {error_name(code)}")
        else:
            read[group.group_id] = {(topic.name, p.partition_index): p.committed_offset
                                    for topic in group.topics for p in topic.partitions
                                    if p.error_code == 0 and p.committed_offset >= 0}
    return read, failed, moved


class CoordinatorLookupFailed(Unavailable):
    """FindCoordinator failed as a whole (no broker answered it): no group's coordinator is known."""


class Coordinators(dict[str, int]):
    """group -> node id of its coordinator, found in batches and kept between calls; shared by the
    batched readers (this module's OffsetFetch, ``group_describe``'s describe calls). A reader
    forgets a group's coordinator (``pop``) when the coordinator says it moved."""

    def by_node(self, groups: Iterable[str]) -> dict[int, list[str]]:
        """The groups whose coordinator is known, by its node id (in the order given)."""
        nodes: dict[int, list[str]] = {}
        for group in groups:
            if group in self:
                nodes.setdefault(self[group], []).append(group)
        return nodes

    async def locate(self, manager: ConnectionManager, groups: list[str], deadline: float,
                     clock: Callable[[], float]) -> dict[str, GroupReadError]:
        """One FindCoordinator (v4+) for ``groups``; keeps the coordinators found and returns the
        groups that have none, with why. Raises :class:`CoordinatorLookupFailed` when the request
        fails as a whole."""
        from kafka.protocol.metadata import CoordinatorType, FindCoordinatorRequest

        request = FindCoordinatorRequest(key_type=CoordinatorType.GROUP.value, coordinator_keys=groups,
                                         min_version=FIND_COORDINATOR_VERSION)
        try:
            response = await answer(send(manager, request, None, remaining_ms(deadline, clock)))
        except Exception as error:  # noqa: BLE001 - the caller decides (OffsetFetch: group by group instead)
            raise CoordinatorLookupFailed(f"FindCoordinator failed: {one_line(error)}") from error
        found, failed = coordinators_from(response.coordinators)
        for group, entry in found.items():
            # known to the client by its broker id, so that the request can be sent to it
            self[group] = manager.cluster.add_coordinator(entry, CoordinatorType.GROUP, group,
                                                          synthesize_node_id=False)
        return failed


class BatchedOffsetFetch:
    """Committed offsets of many groups, a few requests per call (see the module)."""

    def __init__(self, client: BatchedClient, coordinators: Coordinators | None = None) -> None:
        self.client = client
        self._coordinators = coordinators if coordinators is not None else Coordinators()
        """group -> node id of its coordinator, kept between calls (may be shared with other readers)."""

    def read(self, group_ids: list[str], timeout: float) -> dict[str, CommittedOffsets | Exception] | None:
        """group -> {(topic, partition): committed offset}, or the exception saying why that group
        was not read; None when the batched requests cannot be used (the caller reads group by group)."""
        from kafka.protocol.consumer import OffsetFetchRequest
        from kafka.protocol.metadata import FindCoordinatorRequest

        try:
            manager = self.client.manager(timeout, {OffsetFetchRequest: OFFSET_FETCH_VERSION,
                                                    FindCoordinatorRequest: FIND_COORDINATOR_VERSION})
            answers = manager.run(self._read, manager, group_ids, self.client.clock() + timeout)
        except Unavailable as reason:
            self.client.fell_back(str(reason))
            return None
        self.client.succeeded()
        return answers

    async def _read(self, manager: ConnectionManager, group_ids: list[str],
                    deadline: float) -> dict[str, CommittedOffsets | Exception]:
        clock = self.client.clock
        answers: dict[str, CommittedOffsets | Exception] = {}
        pending = list(group_ids)
        for attempt in range(2):  # a second time only for groups whose coordinator moved
            unknown = [group for group in pending if group not in self._coordinators]
            if unknown:
                answers.update(await self._coordinators.locate(manager, unknown, deadline, clock))
            by_node = self._coordinators.by_node(pending)
            sent = [(node, groups, send(manager, _offset_fetch(groups), node, remaining_ms(deadline, clock)))
                    for node, groups in by_node.items()]
            pending = []
            for node, groups, future in sent:
                try:
                    response = await answer(future)
                except Exception as error:  # noqa: BLE001 - that coordinator's groups say why
                    for group in groups:
                        self._coordinators.pop(group, None)
                        answers[group] = GroupReadError(f"OffsetFetch to broker {node}: {one_line(error)}")
                    continue
                read, failed, moved = _offsets_of(response)
                answers.update(read)
                answers.update(failed)
                for group in moved:
                    self._coordinators.pop(group, None)
                pending.extend(sorted(moved) if attempt == 0 else ())
                for group in set(groups) - read.keys() - failed.keys():
                    answers[group] = GroupReadError("OffsetFetch: the coordinator's answer left the group out")
            if not pending:
                break
        return answers


def _offset_fetch(groups: list[str]) -> Any:
    from kpulse.kafka.offset_fetch_decoder import offset_fetch_request

    return offset_fetch_request(groups)


def _offsets_of(response: Any) -> tuple[dict[str, CommittedOffsets], dict[str, GroupReadError], set[str]]:
    """:func:`offsets_from` of an answer: decoded already by ``offset_fetch_decoder`` (v8), or by
    kafka-python (any other version)."""
    from kpulse.kafka.offset_fetch_decoder import OffsetFetchAnswer

    if isinstance(response, OffsetFetchAnswer):
        return response.read, response.failed, response.moved
    return offsets_from(response.groups)
