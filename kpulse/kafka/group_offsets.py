"""Reading consumer groups and offsets from a cluster: the I/O half of lag collection.

Cost per cycle does not grow with one request per partition:

- one ListGroups per broker (``kpulse/kafka/group_listing.py``, or librdkafka's), and the describe
  call of each group's type (``kpulse/kafka/group_describe.py``: DescribeGroups, ConsumerGroupDescribe,
  StreamsGroupDescribe; one request per coordinator and type) for the groups it does not list as
  Empty (an Empty group has no members or assignments to describe). Share groups are left out:
  they have no committed offsets (``collectors/share/``);
- committed offsets: one FindCoordinator for the groups whose coordinator is not known yet and one
  OffsetFetch per coordinator (``kpulse/kafka/committed_offsets.py``); where that cannot be used, one
  OffsetFetch per group (the Admin API takes one group per call), at most ``concurrency`` (default
  32) in flight at once, a new one sent as soon as one is answered;
- log end offsets: one ListOffsets per partition leader for every consumed partition
  (``kpulse/kafka/log_ends.py``); where that cannot be used, librdkafka's ListOffsets, which it
  splits into one request per partition leader. The partitions go in chunks of
  ``LIST_OFFSETS_CHUNK``, all in flight at once: librdkafka's cost for one call grows with the
  square of its partition count (the figures per chunk size: docs/performance.md). Each chunk is one future, not one per partition (see
  :func:`list_log_ends`), and a :class:`RequestCache` keeps a chunk's request objects from one
  cycle to the next.

The log ends of the partitions consumed at the previous reading (``expected``) are asked for
first, from a thread of their own (sending them blocks the caller for librdkafka's leader lookup),
so that ListOffsets is answered while the OffsetFetch requests
are; only partitions consumed since are read afterwards. DescribeGroups overlaps the OffsetFetch
requests too.
"""

from __future__ import annotations

import threading
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar, cast
from collections.abc import Callable, Mapping, Sequence

from kpulse.kafka.authorization import refusal_text
from kpulse.kafka.committed_offsets import CommittedOffsets
from kpulse.kafka.group_model import (
    CommittingGroupTypeName, GroupDescription, GroupReadError, GroupStateName, GroupTypeName,
)

if TYPE_CHECKING:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    from kpulse.kafka.log_ends import LogEnds

LIST_OFFSETS_CHUNK = 250
_T = TypeVar("_T")
_K = TypeVar("_K")
Chunk = tuple[tuple[str, int], ...]
"""Partitions asked in one ListOffsets call: (topic, partition), sorted."""
PendingLogEnds = list[tuple[Chunk, "Future[dict[Any, Any]]"]]
"""ListOffsets calls in flight through librdkafka: each chunk with its one future
(:func:`start_log_ends`; :func:`finish_log_ends` takes the answers)."""


@dataclass(frozen=True)
class GroupOffsets:
    """What the cluster says about one consumer group at one moment."""

    group_id: str
    state: GroupStateName
    """Kafka's state name for the group's type (``kpulse/kafka/group_model.py``: Stable, Empty,
    PreparingRebalance, Assigning, Reconciling, NotReady...), or Unknown."""
    members: int
    member_ids: tuple[str, ...]
    committed: dict[tuple[str, int], int | None]
    """(topic, partition) -> committed offset; None for a partition assigned to a member but
    never committed (the official tool prints '-')."""
    error: str | None = None
    """Why this group could not be read, when it could not."""
    type: CommittingGroupTypeName = "classic"
    """classic, consumer (KIP-848) or streams (KIP-1071)."""
    protocol_type: str = ""
    description: GroupDescription | None = None
    """Its description by the call of its type; None for a group listed as Empty or read through
    librdkafka."""


@dataclass
class ClusterOffsets:
    groups: list[GroupOffsets] = field(default_factory=list)
    log_end: dict[tuple[str, int], int] = field(default_factory=dict)
    """(topic, partition) -> log end offset (high watermark)."""
    log_end_errors: dict[tuple[str, int], str] = field(default_factory=dict)

    @cached_property
    def consumed(self) -> frozenset[tuple[str, int]]:
        """Every partition some group has a committed offset (or an assignment) on, made once, on
        first use, when ``groups`` is complete (at 10,000 groups, 100,000 partitions: the reading
        and the lag collector each built this set again)."""
        return frozenset(tp for group in self.groups for tp in group.committed)


def read_cluster_offsets(
        admin: AdminClient, monitors: Callable[[str], bool], *, concurrency: int = 32, timeout: float = 15.0,
        expected: Sequence[tuple[str, int]] = (), request_cache: RequestCache | None = None,
        read_committed: Callable[[list[str], float], Mapping[str, CommittedOffsets | Exception] | None] | None = None,
        read_log_ends: Callable[[Sequence[tuple[str, int]], float], LogEnds | None] | None = None,
        list_groups: Callable[[float], Sequence[Any] | None] | None = None,
        describe_groups: Callable[[list[Any], float], Mapping[str, GroupDescription | GroupReadError] | None] | None
        = None) -> ClusterOffsets:
    """Groups accepted by ``monitors(group_id)``, their members, committed offsets and the log ends
    of the partitions they consume. ``expected``: the partitions consumed at the previous reading
    (sorted), whose log ends are asked for before the committed offsets.

    ``list_groups(timeout)`` lists the groups from every broker that answers
    (``GroupListing.read``), ``read_committed(group_ids, timeout)`` reads the committed offsets of
    many groups at once (``BatchedOffsetFetch.read``), ``read_log_ends(partitions, timeout)`` the
    log ends of many partitions one request per leader (``LeaderLogEnds.read``),
    ``describe_groups(listings, timeout)`` describes groups by the call of their type
    (``GroupReader.describe``); when one is not given or returns None, librdkafka reads instead."""
    listed = list_groups(timeout) if list_groups is not None else None
    if listed is None:
        try:
            listing = admin.list_consumer_groups(request_timeout=timeout).result(timeout=timeout)
        except TimeoutError:  # concurrent.futures': no text of its own
            raise TimeoutError(f"no answer to ListGroups (through librdkafka) within {timeout:g} s") from None
        listed = listing.valid
        if getattr(listing, "errors", None) and not listed:  # every broker refused or failed: not "no groups"
            from kpulse.kafka.clients import error_text

            raise ListingFailed("ListGroups failed on every broker: "
                                + "; ".join(dict.fromkeys(error_text(e) for e in listing.errors)))
    listings: dict[str, Any] = {}
    kinds: dict[str, CommittingGroupTypeName] = {}
    for g in listed:
        if monitors(g.group_id) and (kind := _type_of(g)) != "share":
            listings[g.group_id], kinds[g.group_id] = g, kind
    group_ids = sorted(listings)
    result = ClusterOffsets()
    if not group_ids:
        return result
    early = _in_thread(_ask_log_ends, admin, expected, timeout, request_cache, read_log_ends) if expected else None
    empty = {g for g in group_ids if _listed_empty(listings[g])}
    to_describe = [g for g in group_ids if g not in empty]
    typed = _in_thread(describe_groups, [listings[g] for g in to_describe], timeout) \
        if describe_groups is not None and to_describe else None
    described = admin.describe_consumer_groups(to_describe, request_timeout=timeout) \
        if to_describe and typed is None else {}
    committed_by_group = read_committed(group_ids, timeout) if read_committed is not None else None
    if committed_by_group is None:
        committed_by_group = _committed_offsets(admin, group_ids, concurrency, timeout)
    typed_answers = typed.result() if typed is not None else None
    if typed is not None and typed_answers is None:  # the reader could not be used: librdkafka describes
        described = admin.describe_consumer_groups(to_describe, request_timeout=timeout)
    descriptions = _answers(described, timeout)
    for group_id in group_ids:
        listing, committed = listings[group_id], committed_by_group.get(group_id)
        listed_as = _Listed(type=kinds[group_id], protocol_type=getattr(listing, "protocol_type", "") or "")
        if group_id in empty:
            group = _empty_group(group_id, committed, listed_as)
        elif typed_answers is not None:
            group = _typed_group(group_id, typed_answers.get(group_id), committed, listed_as)
        else:
            group = _group(group_id, descriptions.get(group_id), committed, listed_as)
        if group.error is not None:
            group = replace(group, error=group_error_text(group_id, group.error))
        result.groups.append(group)
    consumed = result.consumed
    read = set(expected)
    if early is not None:
        _take_log_ends(early.result(), timeout, result)
        if not read <= consumed:  # some partition is no longer consumed
            result.log_end = {tp: offset for tp, offset in result.log_end.items() if tp in consumed}
            result.log_end_errors = {tp: error for tp, error in result.log_end_errors.items() if tp in consumed}
    missing = sorted(consumed - read)
    if missing:
        _take_log_ends(_ask_log_ends(admin, missing, timeout, request_cache, read_log_ends), timeout, result)
    if request_cache is not None:
        request_cache.forget_unused()
    return result


def _ask_log_ends(admin: AdminClient, partitions: Sequence[tuple[str, int]], timeout: float,
                  request_cache: RequestCache | None,
                  read_log_ends: Callable[[Sequence[tuple[str, int]], float], LogEnds | None] | None,
                  ) -> LogEnds | PendingLogEnds:
    """The log ends of ``partitions`` through ``read_log_ends`` (its answer, a ``LogEnds``) or, when
    it is not given or returns None, librdkafka's requests for them, sent (for :func:`finish_log_ends`)."""
    ends = read_log_ends(partitions, timeout) if read_log_ends is not None else None
    return ends if ends is not None else start_log_ends(admin, partitions, timeout, request_cache)


def _take_log_ends(asked: LogEnds | PendingLogEnds, timeout: float, result: ClusterOffsets) -> None:
    if isinstance(asked, list):  # librdkafka's requests, in flight
        finish_log_ends(asked, timeout, result)
    else:
        result.log_end.update(asked.log_end)
        result.log_end_errors.update(asked.errors)


def _in_thread(function: Callable[..., _T], *args: Any) -> Future[_T]:
    """``function(*args)`` on a thread of its own, as a future."""
    future: Future[_T] = Future()

    def run() -> None:
        try:
            future.set_result(function(*args))
        except BaseException as error:  # noqa: BLE001 - handed to the caller
            future.set_exception(error)

    threading.Thread(target=run, name="kpulse-list-offsets", daemon=True).start()
    return future


def _listed_empty(listing: Any) -> bool:
    """ListGroups already says the group is Empty: no members, so nothing to describe (describing
    it through librdkafka costs four requests: two FindCoordinator, a ConsumerGroupDescribe that a
    classic group refuses, then DescribeGroups)."""
    return getattr(getattr(listing, "state", None), "name", None) == "EMPTY"

"""What describing a group listed as Empty would say."""


def _committed_offsets(admin: AdminClient, group_ids: list[str], concurrency: int,
                       timeout: float) -> dict[str, CommittedOffsets | Exception]:
    """One OffsetFetch per group, at most ``concurrency`` in flight: a sliding window, not batches."""
    committed: dict[str, CommittedOffsets | Exception] = {}
    waiting = iter(group_ids)
    in_flight: dict[Future[Any], str] = {}

    def send(count: int) -> None:
        for group_id in (next(waiting, None) for _ in range(count)):
            if group_id is None:
                return
            for future in admin.list_consumer_group_offsets([_group_request(group_id)],
                                                            request_timeout=timeout).values():
                in_flight[future] = group_id

    send(concurrency)
    while in_flight:
        done, _ = wait(in_flight, timeout=timeout, return_when=FIRST_COMPLETED)
        if not done:  # nothing answered in time: every group not answered yet fails now, not one by one
            late = TimeoutError(f"no answer to OffsetFetch in {timeout:g} s")
            committed.update((group_id, late) for group_id in [*in_flight.values(), *waiting])
            break
        for future in done:
            group_id = in_flight.pop(future)
            try:
                answer = future.result(timeout=0)
                committed[group_id] = {(tp.topic, tp.partition): tp.offset
                                       for tp in answer.topic_partitions if tp.offset >= 0}
            except Exception as error:  # noqa: BLE001 - one failing group must not hide the others
                committed[group_id] = error
        send(len(done))
    return committed


class ListingFailed(Exception):
    """No broker listed the groups: every answer was an error (one line, the errors named)."""


def group_error_text(group_id: str, error: str) -> str:
    """Why a group could not be read, in ACL words when the brokers refused kpulse's principal
    (``not authorized: Describe on group G``: FindCoordinator, DescribeGroups and OffsetFetch all
    need it); else as the reading said it."""
    return refusal_text(error, "Describe", "group", group_id) or error


class _Listed(TypedDict):
    """What the listing tells of a group (the fields of :class:`GroupOffsets` of the same names)."""

    type: CommittingGroupTypeName
    protocol_type: str


def _empty_group(group_id: str, committed: CommittedOffsets | Exception | None, listed: _Listed) -> GroupOffsets:
    """:func:`_group` for a group ListGroups lists as Empty (no members, nothing assigned): what
    10,000 idle groups cost every cycle, so without a description to read."""
    if isinstance(committed, Exception):
        from kpulse.kafka.clients import error_text

        return GroupOffsets(group_id, "Empty", 0, (), {}, error_text(committed), **listed)
    return GroupOffsets(group_id, "Empty", 0, (), dict(committed) if committed else {}, None, **listed)


def _group(group_id: str, description: Any, committed: CommittedOffsets | Exception | None,
           listed: _Listed) -> GroupOffsets:
    """A group described through librdkafka (``description``: its ``ConsumerGroupDescription``, or
    the exception the describe call raised)."""
    from kpulse.kafka.clients import error_text, group_state_name

    errors = [error_text(e) for e in (description, committed) if isinstance(e, Exception)]
    state: GroupStateName
    member_ids: tuple[str, ...]
    assigned: set[tuple[str, int]]
    if isinstance(description, Exception) or description is None:
        state, member_ids, assigned = "Unknown", (), set()
    else:
        state = group_state_name(description.state)
        member_ids = tuple(m.member_id for m in description.members)
        assigned = {(tp.topic, tp.partition) for m in description.members
                    for tp in (m.assignment.topic_partitions if m.assignment else [])}
    offsets: dict[tuple[str, int], int | None] = {tp: None for tp in assigned}
    if isinstance(committed, dict):
        offsets.update(committed)
    return GroupOffsets(group_id=group_id, state=state, members=len(member_ids), member_ids=member_ids,
                        committed=offsets, error="; ".join(errors) or None, **listed)


def _typed_group(group_id: str, description: GroupDescription | GroupReadError | None,
                 committed: CommittedOffsets | Exception | None, listed: _Listed) -> GroupOffsets:
    """:func:`_group` for a group described by the call of its type (``GroupReader.describe``)."""
    from kpulse.kafka.clients import error_text
    from kpulse.kafka.group_model import member_partitions

    errors = [error_text(committed)] if isinstance(committed, Exception) else []
    state: GroupStateName
    member_ids: tuple[str, ...]
    assigned: set[tuple[str, int]]
    if description is None or isinstance(description, GroupReadError):
        errors.insert(0, description.reason if description is not None else "not described")
        state, member_ids, assigned, description = "Unknown", (), set(), None
    else:
        state = description.state or "Unknown"
        member_ids = tuple(m.member_id for m in description.members)
        assigned = {(topic, p) for m in description.members
                    for topic, parts in member_partitions(description, m).items() for p in parts}
    offsets: dict[tuple[str, int], int | None] = {tp: None for tp in assigned}
    if isinstance(committed, dict):
        offsets.update(committed)
    return GroupOffsets(group_id=group_id, state=state, members=len(member_ids), member_ids=member_ids,
                        committed=offsets, error="; ".join(errors) or None, description=description, **listed)


def _type_of(listing: Any) -> GroupTypeName:
    """A listing's group type: kpulse's listing names it; librdkafka's ``ConsumerGroupListing``
    (``type``: a ``ConsumerGroupType``) says CLASSIC, CONSUMER or UNKNOWN."""
    kind = getattr(listing, "type", None)
    if isinstance(kind, str):
        return cast(GroupTypeName, kind)  # kpulse's listings (group_listing.Listing) hold a GroupTypeName
    name = getattr(kind, "name", "") or ""
    return "consumer" if name == "CONSUMER" else "classic"


class RequestCache:
    """The request objects (``TopicPartition`` lists) of the chunks of the last reading, reused while
    the chunks are the same: making 10,000 of them a cycle cost ~20 ms."""

    def __init__(self) -> None:
        self._chunks: dict[Chunk, list[TopicPartition]] = {}
        self._used: set[Chunk] = set()

    def requests(self, chunk: Chunk) -> list[TopicPartition]:
        requests = self._chunks.get(chunk)
        if requests is None:
            requests = self._chunks[chunk] = _offset_requests(chunk)
        self._used.add(chunk)
        return requests

    def forget_unused(self) -> None:
        """Drop the chunks not asked for since the last call."""
        self._chunks = {chunk: self._chunks[chunk] for chunk in self._used}
        self._used = set()


def start_log_ends(admin: AdminClient, partitions: Sequence[tuple[str, int]], timeout: float,
                   request_cache: RequestCache | None = None, *, earliest: bool = False) -> PendingLogEnds:
    """Send the ListOffsets of ``partitions`` (their log ends, or with ``earliest`` their log starts,
    then without ``request_cache``), chunk by chunk; :func:`finish_log_ends` or :func:`take_log_ends`
    takes the answers."""
    chunks = [tuple(partitions[start:start + LIST_OFFSETS_CHUNK])
              for start in range(0, len(partitions), LIST_OFFSETS_CHUNK)]
    return [(chunk, list_log_ends(admin, request_cache.requests(chunk) if request_cache and not earliest
                                  else _offset_requests(chunk, earliest), timeout)) for chunk in chunks]


def finish_log_ends(pending: PendingLogEnds, timeout: float, result: ClusterOffsets) -> None:
    from kpulse.kafka.clients import error_text

    take_log_ends(pending, timeout, result.log_end, result.log_end_errors, failed=error_text,
                  refused=lambda error: error.str())  # a KafkaError, e.g. a deleted topic with offsets left behind


def take_log_ends(pending: PendingLogEnds, timeout: float, offsets: dict[tuple[str, int], int],
                  errors: dict[tuple[str, int], str], *, failed: Callable[[BaseException], str],
                  refused: Callable[[Any], str]) -> None:
    """The answers of :func:`start_log_ends` into ``offsets``; a partition without one gets its reason
    in ``errors``: ``failed(exception)`` when its whole request failed, ``refused(KafkaError)`` when
    the broker answered its partition with an error."""
    for chunk, future in pending:
        try:
            answers = future.result(timeout=timeout)
        except Exception as error:  # noqa: BLE001 - the whole request failed: every partition says why
            for key in chunk:
                errors[key] = failed(error)
            continue
        for tp, answer in answers.items():
            if hasattr(answer, "offset"):
                offsets[(tp.topic, tp.partition)] = answer.offset
            else:
                errors[(tp.topic, tp.partition)] = refused(answer)


def _offset_requests(partitions: Sequence[tuple[str, int]], earliest: bool = False) -> list[TopicPartition]:
    """ListOffsets request entries of ``partitions``: their latest offset, or with ``earliest`` their first."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import OffsetSpec

    spec = OffsetSpec.earliest() if earliest else OffsetSpec.latest()  # type: ignore[no-untyped-call]
    value = spec._value  # confluent-kafka left it unannotated; what its own list_offsets puts in each entry
    return [TopicPartition(topic, partition, value) for topic, partition in partitions]


def list_log_ends(admin: AdminClient, requests: list[TopicPartition], timeout: float) -> Future[dict[Any, Any]]:
    """One ListOffsets (latest, read uncommitted: the high watermark) for ``requests`` (from
    :func:`_offset_requests`), as ONE future of ``{TopicPartition: ListOffsetsResultInfo | KafkaError}``.

    ``AdminClient.list_offsets`` makes a ``concurrent.futures.Future`` per partition and resolves
    each from librdkafka's thread: at 10,000 partitions that bookkeeping cost more than the
    requests (~0.25 s of a cycle, all of it holding the GIL). The request-level call underneath
    (``_AdminClientImpl.list_offsets``, which confluent-kafka's wrapper calls with one future) is
    used directly: ``admin`` must be a real ``AdminClient``."""
    from confluent_kafka.cimpl import _AdminClientImpl

    future: Future[dict[Any, Any]] = Future()
    future.set_running_or_notify_cancel()
    _AdminClientImpl.list_offsets(admin, requests, future, request_timeout=timeout)
    return future


def _answers(futures: Mapping[_K, Future[Any]], timeout: float) -> dict[_K, Any]:
    """Each future's result, or the exception it raised: one failing key must not hide the others."""
    answers: dict[_K, Any] = {}
    for key, future in futures.items():
        try:
            answers[key] = future.result(timeout=timeout)
        except Exception as error:  # noqa: BLE001
            answers[key] = error
    return answers


def _group_request(group_id: str) -> Any:
    from confluent_kafka import ConsumerGroupTopicPartitions

    return ConsumerGroupTopicPartitions(group_id)

