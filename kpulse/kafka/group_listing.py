"""The groups of a cluster: ListGroups to every broker at once, through the batched client
(``kpulse/kafka/batched_client.py``). One listing for every reader: the lag collector
(:meth:`GroupListing.read`, shaped as librdkafka's) and the group reader
(``kpulse/kafka/group_describe.py``, :meth:`GroupListing.read_typed`: every type of group, in
Kafka's spelling, as ``kafka-groups --list`` prints it).

librdkafka's ListConsumerGroups waits for an answer from every broker it knows: with one broker
down, every call runs into its timeout (15 s), and the lag collector would be down for as long as
the broker is, when lag matters most. Here every broker is asked at once; a broker that cannot be reached (a refused connection fails at once) is left
out. Its groups are listed by the brokers their coordinators move to within seconds; meanwhile the
groups of the last listing that no broker listed now are kept, so that a group does not vanish
(and lose its status window) because its coordinator was on the broker that died. Once the
controller has fenced it, the broker is gone from the broker list but its groups may not be listed
yet (their new coordinator loads them first, which can take longer than three listings on a loaded
machine): it counts as not answering until every group it listed last is listed by another broker,
or for :data:`MISSING_BROKER_SECONDS` at most (a group deleted meanwhile is not kept forever). The broker list
is read again at every call (a Metadata request for no topics): a broker that is back, or new, is
asked too. A broker that answers COORDINATOR_LOAD_IN_PROGRESS (it is loading the coordinators of
a broker that died) is asked again after a short backoff, for :data:`LOADING_RETRY_SECONDS` at
most, as Kafka's Java admin client does; if every broker is still loading then, the last listing
stands for this reading. When no broker answers otherwise, :meth:`GroupListing.read` returns None
and the caller lists through librdkafka.

ListGroups v5 (Kafka 3.8+) names each group's type and can filter on it; an older broker lists
classic groups only (the other types do not exist there), so every group it lists is ``classic``
(:data:`TYPED_LIST_GROUPS_VERSION`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, cast
from collections.abc import Callable, Iterable, Sequence

from kpulse.kafka import group_model
from kpulse.kafka.batched_client import (
    BatchedClient, ConnectionManager, Unavailable, answer, error_name, one_line, remaining_ms, send,
)

STATE_NAMES = {"Empty": "EMPTY", "Stable": "STABLE", "PreparingRebalance": "PREPARING_REBALANCING",
               "CompletingRebalance": "COMPLETING_REBALANCING", "Dead": "DEAD"}
"""Kafka's group state -> the name librdkafka's ``ConsumerGroupState`` gives it (other states,
e.g. a KIP-848 group's Assigning or Reconciling: UNKNOWN)."""
LIST_GROUPS_VERSION = 4
"""The first version whose answer carries each group's state."""
MISSING_BROKER_SECONDS = 60.0
"""A broker that answered a listing and is then gone from the cluster's broker list (killed: the
controller fences it within seconds) counts as not answering until every group it listed last is
listed by another broker (their coordinators have moved and loaded them), or for this long at most
(after that it is taken as removed from the cluster, and the groups no broker lists are gone)."""
LOADING_RETRY_SECONDS = 5.0
"""How long brokers answering ListGroups with COORDINATOR_LOAD_IN_PROGRESS or
COORDINATOR_NOT_AVAILABLE (loading the group coordinators of a broker that died) are asked again,
at most, within a reading's timeout, as Kafka's Java admin client retries them."""
LOADING_BACKOFF_SECONDS = (0.1, 1.0)
"""The first wait before asking a loading broker again, and the longest (it doubles)."""
LOADING_ERRORS = ("ListGroups: COORDINATOR_LOAD_IN_PROGRESS", "ListGroups: COORDINATOR_NOT_AVAILABLE")
TYPED_LIST_GROUPS_VERSION = 5
"""The first version whose answer carries each group's type (and that filters on types)."""


@dataclass(frozen=True)
class State:
    name: str


@dataclass(frozen=True)
class Listing:
    """One listed group, shaped as librdkafka's ``ConsumerGroupListing`` where the collector reads it."""

    group_id: str
    state: State
    protocol_type: str
    type: group_model.GroupTypeName = "classic"
    kafka_state: str = ""
    """The state as Kafka spells it (``Reconciling``, ``NotReady``...), where ``state`` says UNKNOWN."""


def typed_listings_from(groups: Iterable[Any], typed: bool = True) -> dict[str, group_model.GroupListing]:
    """A ListGroups (v4+) answer's ``groups`` -> group id -> :class:`group_model.GroupListing`.
    ``typed``: the answer is v5+ and names each group's type; else (an older broker, where only
    classic groups exist) every group is ``classic``, as ``kafka-groups --list`` shows them."""
    listed = {}
    for group in groups:
        group_type = (getattr(group, "group_type", "") or "").lower() if typed else ""
        # Kafka's GroupType names (ListGroups v5), lower case: one of group_model.GROUP_TYPES
        kind = cast(group_model.GroupTypeName, group_type or "classic")
        listed[group.group_id] = group_model.GroupListing(
            group_id=group.group_id, type=kind, protocol_type=group.protocol_type or "",
            state=group.group_state or "Unknown")
    return listed


def as_librdkafka(listing: group_model.GroupListing) -> Listing:
    """The lag collector's shape of a listing: the state as librdkafka's ``ConsumerGroupState`` names it."""
    return Listing(listing.group_id, State(STATE_NAMES.get(listing.state, "UNKNOWN")), listing.protocol_type,
                   listing.type, listing.state)


def listings_from(groups: Iterable[Any]) -> dict[str, Listing]:
    """A ListGroups (v4) answer's ``groups`` -> group id -> :class:`Listing`."""
    return {group_id: as_librdkafka(listing) for group_id, listing in typed_listings_from(groups, typed=False).items()}


class GroupListing:
    def __init__(self, client: BatchedClient, sleep: Callable[[float], None] = time.sleep):
        self.client = client
        self._sleep = sleep
        self._last: dict[str, group_model.GroupListing] = {}
        self.unanswered: dict[int, str] = {}
        """Broker id -> why it did not answer the last listing (empty: every broker answered)."""
        self._missing: dict[int, float] = {}
        """Broker that answered a listing and is gone from the broker list -> the time (the client's
        clock) until which, at most, it counts as not answering (:data:`MISSING_BROKER_SECONDS`)."""
        self._listed_by: dict[str, int | None] = {}
        """Group of the last listing -> the broker that listed it (a kept group: the one that did last)."""
        self._answered: set[int] = set()
        self.typed: bool | None = None
        """Whether the brokers named the groups' types at the last listing (ListGroups v5+); None
        before the first."""

    def read(self, timeout: float) -> list[Listing] | None:
        """Every group the brokers list (see the module), shaped as librdkafka's; None when the
        batched client cannot be used or no broker answered (the caller lists through librdkafka)."""
        listed = self.read_typed(timeout)
        return None if listed is None else [as_librdkafka(listing) for listing in listed]

    def read_typed(self, timeout: float, types: Sequence[str] | None = None) -> list[group_model.GroupListing] | None:
        """Every group of ``types`` (all types when None) the brokers list, with its type and
        Kafka's state name; None when the batched client cannot be used or no broker answered
        (``client.unavailable_reason`` says why)."""
        from kafka.protocol.admin import ListGroupsRequest

        clock = self.client.clock
        deadline = clock() + timeout
        try:
            manager = self.client.manager(timeout, {ListGroupsRequest: LIST_GROUPS_VERSION})
            typed, brokers, outcomes = manager.run(self._ask, manager, deadline, types, None)
            retry_until, backoff = min(deadline, clock() + LOADING_RETRY_SECONDS), LOADING_BACKOFF_SECONDS[0]
            while (loading := [b for b, outcome in outcomes.items() if _loading(outcome)]) \
                    and clock() + backoff < retry_until:
                self._sleep(backoff)
                backoff = min(2 * backoff, LOADING_BACKOFF_SECONDS[1])
                outcomes.update(manager.run(self._ask, manager, deadline, types, loading)[2])
            listed = self._take(typed, brokers, outcomes, types)
        except Unavailable as reason:
            self.client.fell_back(str(reason))
            return None
        self.client.succeeded()
        return list(listed.values())

    async def _ask(self, manager: ConnectionManager, deadline: float, types: Sequence[str] | None,
                   only: list[int] | None) -> tuple[bool, list[int], dict[int, Any]]:
        """ListGroups to every broker (``only``: to these), at once: whether the answers name the
        groups' types, the brokers asked, and broker -> its answer or why it gave none (text)."""
        from kafka.protocol.admin import ListGroupsRequest

        if only is None:
            try:  # the broker list only (no topics): brokers that joined or came back since the last cycle
                await manager.cluster.refresh_metadata()
            except Exception:  # noqa: BLE001 - the brokers known so far are asked
                pass
        typed = list_groups_version(manager) >= TYPED_LIST_GROUPS_VERSION
        if typed and types is not None:
            request = ListGroupsRequest(types_filter=list(types), min_version=TYPED_LIST_GROUPS_VERSION)
        else:
            request = ListGroupsRequest(min_version=LIST_GROUPS_VERSION)
        brokers = sorted(broker.node_id for broker in manager.cluster.brokers()) if only is None else only
        sent = [(broker, send(manager, request, broker, remaining_ms(deadline, self.client.clock)))
                for broker in brokers]
        outcomes: dict[int, Any] = {}
        for broker, future in sent:
            try:
                response = await answer(future)
            except Exception as error:  # noqa: BLE001 - that broker is left out
                outcomes[broker] = one_line(error)
                continue
            outcomes[broker] = f"ListGroups: {error_name(response.error_code)}" if response.error_code else response
        return typed, brokers, outcomes

    def _take(self, typed: bool, brokers: list[int], outcomes: dict[int, Any],
              types: Sequence[str] | None) -> dict[str, group_model.GroupListing]:
        """The listing made of the brokers' answers, with the groups of the last listing that a
        broker which did not answer may still coordinate (see the module)."""
        listed: dict[str, group_model.GroupListing] = {}
        listed_by: dict[str, int] = {}
        unanswered = {broker: outcome for broker, outcome in outcomes.items() if isinstance(outcome, str)}
        for broker in brokers:
            if broker in unanswered:
                continue
            of_broker = typed_listings_from(outcomes[broker].groups, typed)
            listed.update(of_broker)
            listed_by.update(dict.fromkeys(of_broker, broker))
        if not brokers or len(unanswered) == len(brokers):
            # brokers still loading their coordinators answer in seconds: the last listing stands
            # meanwhile (librdkafka would wait for the same brokers, into its timeout)
            if not self._last or not any(_loading(outcome) for outcome in unanswered.values()):
                raise Unavailable(f"no broker answered ListGroups: {'; '.join(unanswered.values()) or 'no brokers known'}")
        self._note_missing(set(brokers), set(brokers) - set(unanswered), unanswered, set(listed))
        if types is not None:
            listed = {g: listing for g, listing in listed.items() if listing.type in types}
        self.unanswered = unanswered
        self.typed = typed
        kept = {g: listing for g, listing in self._last.items() if types is None or listing.type in types}
        if unanswered:  # the groups of a broker that died are listed elsewhere once their coordinators move
            listed = {**{g: listing for g, listing in kept.items() if g not in listed}, **listed}
        # a listing of some types replaces the last listing of those types only
        self._last = {**{g: listing for g, listing in self._last.items() if g not in kept}, **listed}
        self._listed_by = {g: listed_by.get(g, self._listed_by.get(g)) for g in self._last}
        return listed

    def _note_missing(self, known: set[int], answered: set[int], unanswered: dict[int, str],
                      listed: set[str]) -> None:
        """Brokers that answered before and are gone from the broker list now count as not
        answering, until every group they listed last is in ``listed`` (listed by another broker)
        or :data:`MISSING_BROKER_SECONDS` have passed."""
        now = self.client.clock()
        for broker in self._answered - known:
            self._missing.setdefault(broker, now + MISSING_BROKER_SECONDS)
        self._missing = {b: until for b, until in self._missing.items() if b not in known and now < until
                         and any(by == b and g not in listed for g, by in self._listed_by.items())}
        for broker in self._missing:
            unanswered[broker] = "no longer in the cluster's broker list"
        # a broker killed is refused at once and fenced seconds later: it is remembered while it is
        # still in the broker list, so that leaving the list makes it missing
        self._answered = answered | {b for b in self._answered if b in known or b in self._missing}


def _loading(outcome: Any) -> bool:
    """Whether a broker's outcome is a coordinator still loading (asked again shortly)."""
    return isinstance(outcome, str) and outcome in LOADING_ERRORS


def list_groups_version(manager: ConnectionManager) -> int:
    """The ListGroups version the client and the brokers both speak (-1: none)."""
    from kafka.protocol.admin import ListGroupsRequest

    return api_version(manager, ListGroupsRequest)


def api_version(manager: ConnectionManager, request: Any) -> int:
    """The highest version of ``request`` the client and the brokers both speak; -1 when the
    brokers do not speak it at all (an older Kafka). A connection manager without version data (a
    test's fake) is taken to speak every version."""
    import kafka.errors as errors

    versions = getattr(manager, "broker_version_data", None)
    if versions is None:
        highest: int = request.max_version
        return highest
    try:
        version: int = versions.api_version(request)
    except errors.IncompatibleBrokerVersion:
        return -1
    return version
