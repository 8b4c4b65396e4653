"""The consumer groups of a cluster: ListGroups to every broker at once, through the lag
collector's batched client (``kpulse/kafka/batched_client.py``).

librdkafka's ListConsumerGroups waits for an answer from every broker it knows. With one broker
down, every call ran into its timeout (15 s): on the test cluster, six cycles in a row failed and
the lag collector was down for as long as the broker was, when lag matters most. Here every broker
is asked at once; a broker that cannot be reached (a refused connection fails at once) is left
out. Its groups are listed by the brokers their coordinators move to within seconds; meanwhile the
groups of the last listing that no broker listed now are kept, so that a group does not vanish
(and lose its status window) because its coordinator was on the broker that died. The broker list
is read again at every call (a Metadata request for no topics): a broker that is back, or new, is
asked too. When no broker answers, :meth:`GroupListing.read` returns None and the caller lists
through librdkafka.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from kpulse.kafka.batched_client import BatchedClient, Unavailable, answer, error_name, one_line, remaining_ms, send

STATE_NAMES = {"Empty": "EMPTY", "Stable": "STABLE", "PreparingRebalance": "PREPARING_REBALANCING",
               "CompletingRebalance": "COMPLETING_REBALANCING", "Dead": "DEAD"}
"""Kafka's group state -> the name librdkafka's ``ConsumerGroupState`` gives it (other states,
e.g. a KIP-848 group's Assigning or Reconciling: UNKNOWN)."""
LIST_GROUPS_VERSION = 4
"""The first version whose answer carries each group's state."""


@dataclass(frozen=True)
class State:
    name: str


@dataclass(frozen=True)
class Listing:
    """One listed group, shaped as librdkafka's ``ConsumerGroupListing`` where the collector reads it."""

    group_id: str
    state: State
    protocol_type: str


def listings_from(groups: Iterable[Any]) -> dict[str, Listing]:
    """A ListGroups (v4+) answer's ``groups`` -> group id -> :class:`Listing`."""
    return {group.group_id: Listing(group.group_id, State(STATE_NAMES.get(group.group_state, "UNKNOWN")),
                                    group.protocol_type) for group in groups}


class GroupListing:
    def __init__(self, client: BatchedClient):
        self.client = client
        self._last: dict[str, Listing] = {}
        self.unanswered: dict[int, str] = {}
        """Broker id -> why it did not answer the last listing (empty: every broker answered)."""

    def read(self, timeout: float) -> list[Listing] | None:
        """Every group the brokers list (see the module); None when the batched client cannot be
        used or no broker answered (the caller lists through librdkafka)."""
        from kafka.protocol.admin import ListGroupsRequest

        try:
            manager = self.client.manager(timeout, {ListGroupsRequest: LIST_GROUPS_VERSION})
            listed = manager.run(self._read, manager, self.client.clock() + timeout)
        except Unavailable as reason:
            self.client.fell_back(str(reason))
            return None
        self.client.succeeded()
        return list(listed.values())

    async def _read(self, manager, deadline: float) -> dict[str, Listing]:
        from kafka.protocol.admin import ListGroupsRequest

        try:  # the broker list only (no topics): brokers that joined or came back since the last cycle
            await manager.cluster.refresh_metadata()
        except Exception:  # noqa: BLE001 - the brokers known so far are asked
            pass
        brokers = sorted(broker.node_id for broker in manager.cluster.brokers())
        sent = [(broker, send(manager, ListGroupsRequest(min_version=LIST_GROUPS_VERSION), broker,
                              remaining_ms(deadline, self.client.clock))) for broker in brokers]
        listed: dict[str, Listing] = {}
        unanswered: dict[int, str] = {}
        for broker, future in sent:
            try:
                response = await answer(future)
            except Exception as error:  # noqa: BLE001 - that broker is left out
                unanswered[broker] = one_line(error)
                continue
            if response.error_code:
                unanswered[broker] = f"ListGroups: {error_name(response.error_code)}"
                continue
            listed.update(listings_from(response.groups))
        if not brokers or len(unanswered) == len(brokers):
            raise Unavailable(f"no broker answered ListGroups: {'; '.join(unanswered.values()) or 'no brokers known'}")
        self.unanswered = unanswered
        if unanswered:  # the groups of a broker that died are listed elsewhere once their coordinators move
            listed = {**{g: listing for g, listing in self._last.items() if g not in listed}, **listed}
        self._last = listed
        return listed
