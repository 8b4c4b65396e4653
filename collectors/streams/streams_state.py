"""Kafka Streams state logic: pure functions and a tracker over plain data, no I/O.

- :func:`instances_from_samples` turns one metrics endpoint's exposition into instance readings
  (metric names of ``localkafka/java/jmx-exporter-streams.yaml``);
- :func:`app_state` folds the instances of one application into the application's state;
- :class:`TransitionTracker` remembers each instance's last state between cycles and reports the
  changes (the last :data:`TRANSITIONS_KEPT` per application);
- :func:`rebalance_episodes` / :func:`app_rebalance_episodes` / :func:`rebalance_summary` find the
  rebalancing periods in a list of transitions: an instance in REBALANCING, or a Streams group
  (:data:`GROUP_INSTANCE`) out of Stable into Assigning or Reconciling until it leaves them.

States are the names of ``KafkaStreams.State`` plus :data:`UNREACHABLE` (the endpoint did not
answer) for instances, and :data:`DEGRADED` for applications.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from kpulse.prom_text import Sample
from kpulse.snapshot import (Rebalances, StreamsAppStateName, StreamsClientStateName, StreamsInstanceStateName,
                             StreamsThreadStateName, StreamsTransitionStateName)

CLIENT_STATES: dict[int, StreamsClientStateName] = {0: "CREATED", 1: "REBALANCING", 2: "RUNNING", 3: "PENDING_SHUTDOWN", 4: "NOT_RUNNING",
                 5: "PENDING_ERROR", 6: "ERROR"}
"""Value of ``client-state`` (KIP-1091) -> ``KafkaStreams.State`` name."""
THREAD_STATES: dict[int, StreamsThreadStateName] = {0: "CREATED", 1: "STARTING", 2: "PARTITIONS_REVOKED", 3: "PARTITIONS_ASSIGNED", 4: "RUNNING",
                 5: "PENDING_SHUTDOWN", 6: "DEAD"}
"""Value of ``thread-state`` -> ``StreamThread.State`` name."""
REBALANCING: Final = "REBALANCING"
RUNNING: Final = "RUNNING"
UNREACHABLE: Final = "UNREACHABLE"
"""Instance state when its metrics endpoint did not answer (the process is gone, or the network)."""
DEGRADED: Final = "DEGRADED"
"""Application state: some, but fewer than the expected number of, instances are RUNNING."""
TRANSITIONS_KEPT = 100
"""Transitions remembered per application (the snapshot shows them; the lake has them all)."""
GROUP_INSTANCE = "(group)"
"""The ``instance`` of a transition of a Streams group's own state (KIP-1071; Kafka's spelling:
Empty, NotReady, Assigning, Reconciling, Stable, Dead), beside the instances' client states."""
GROUP_STABLE: Final = "Stable"
GROUP_REBALANCING_STATES: frozenset[StreamsTransitionStateName] = frozenset({"Assigning", "Reconciling"})
"""Streams group states in which the group rebalances: a new target assignment is being computed
or the members are moving to it."""

CLIENT_STATE_METRIC = "kafka_streams_stream_metrics_client_state"
THREAD_STATE_METRIC = "kafka_streams_stream_thread_metrics_thread_state"
ALIVE_THREADS_METRIC = "kafka_streams_stream_metrics_alive_stream_threads"
FAILED_THREADS_METRIC = "kafka_streams_stream_metrics_failed_stream_threads"
REBALANCE_COUNTER_METRICS = ("kafka_consumer_coordinator_rebalance_total", "kafka_consumer_coordinator_rebalance")
"""The consumer's ``rebalance-total`` (the JMX exporter drops the ``_total`` of a gauge)."""


@dataclass
class InstanceReading:
    """One Streams client (``KafkaStreams`` object) as its metrics endpoint showed it this cycle."""

    id: str
    """The ``client_id`` label; the endpoint URL when the endpoint never told us one."""
    endpoint: str
    up: bool
    """The endpoint answered with Prometheus text."""
    state: StreamsInstanceStateName | None = None
    """A :data:`CLIENT_STATES` name (UNKNOWN for a value not among them), :data:`UNREACHABLE`, or ``None`` when the endpoint answered
    without a ``client-state`` metric (Streams older than 4.0, or the client is closing)."""
    alive_threads: int | None = None
    failed_threads: int | None = None
    thread_states: dict[str, StreamsThreadStateName] = field(default_factory=dict)
    """Thread id (``<client id>-StreamThread-<n>``) -> :data:`THREAD_STATES` name (UNKNOWN for a value
    not among them)."""
    process_id: str | None = None
    """The ``process_id`` label: a new one means the instance was restarted."""
    rebalances_total: float | None = None
    """Sum of ``rebalance-total`` of this client's stream-thread consumers, when exported."""
    error: str | None = None
    """Why the endpoint gave nothing (one line), or what is missing from it."""


def unreachable(instance_id: str, endpoint: str, error: str) -> InstanceReading:
    return InstanceReading(id=instance_id, endpoint=endpoint, up=False, state=UNREACHABLE, error=error)


def instances_from_samples(endpoint: str, samples: Sequence[Sample]) -> list[InstanceReading]:
    """The Streams clients an endpoint exposes (one per ``client_id`` of ``client-state``; usually
    one per JVM).
    An endpoint without ``client-state`` gives one reading with ``state=None`` and an error."""
    clients: dict[str, InstanceReading] = {}
    for sample in samples:
        if sample.name == CLIENT_STATE_METRIC and "client_id" in sample.labels:
            client_id = sample.labels["client_id"]
            clients[client_id] = InstanceReading(
                id=client_id, endpoint=endpoint, up=True, state=CLIENT_STATES.get(int(sample.value), "UNKNOWN"),
                process_id=sample.labels.get("process_id"))
    if not clients:
        return [InstanceReading(id=endpoint, endpoint=endpoint, up=True,
                                error=f"the endpoint answered without {CLIENT_STATE_METRIC}")]
    for sample in samples:
        labels = sample.labels
        if sample.name == ALIVE_THREADS_METRIC and labels.get("client_id") in clients:
            clients[labels["client_id"]].alive_threads = int(sample.value)
        elif sample.name == FAILED_THREADS_METRIC and labels.get("client_id") in clients:
            clients[labels["client_id"]].failed_threads = int(sample.value)
        elif sample.name == THREAD_STATE_METRIC and "thread_id" in labels:
            owner = _owner(clients, labels["thread_id"], labels.get("process_id"))
            if owner is not None:
                owner.thread_states[labels["thread_id"]] = THREAD_STATES.get(int(sample.value), "UNKNOWN")
        elif sample.name in REBALANCE_COUNTER_METRICS and "-StreamThread-" in labels.get("client_id", ""):
            owner = _owner(clients, labels["client_id"], None)
            if owner is not None:
                owner.rebalances_total = (owner.rebalances_total or 0.0) + sample.value
    return list(clients.values())


def _owner(clients: Mapping[str, InstanceReading], thread_or_consumer_id: str,
           process_id: str | None) -> InstanceReading | None:
    # Thread ids are "<client id>-StreamThread-<n>", their consumers' "...-StreamThread-<n>-consumer".
    prefix = thread_or_consumer_id.split("-StreamThread-")[0]
    if prefix in clients:
        return clients[prefix]
    matches = [c for c in clients.values() if process_id is not None and c.process_id == process_id]
    return matches[0] if len(matches) == 1 else None


# --- discovery ---------------------------------------------------------------------------------------

INTERNAL_TOPIC_SUFFIXES = ("-repartition", "-changelog")


def streams_app_ids(group_ids: Iterable[str], topic_names: Iterable[str]) -> set[str]:
    """Consumer groups that are Kafka Streams applications, by the cheap rule: a group ``G`` is one
    when a topic ``G-<name>-repartition`` or ``G-<name>-changelog`` exists (the internal topics
    Streams creates). Costs one ListGroups and one Metadata request, not a DescribeGroups of every
    group. A stateless application without repartitioning has no such topic and is not found:
    configure it."""
    groups = set(group_ids)
    found = set()
    for topic in topic_names:
        if not topic.endswith(INTERNAL_TOPIC_SUFFIXES):
            continue
        # Every "-" could end the application id: "a-b-store-changelog" may belong to "a" or "a-b".
        for index, char in enumerate(topic):
            if char == "-" and topic[:index] in groups:
                rest = topic[index + 1:]  # "<name>-repartition" with a non-empty name
                if any(rest.endswith(s) and len(rest) > len(s) for s in INTERNAL_TOPIC_SUFFIXES):
                    found.add(topic[:index])
    return found


# --- application state -------------------------------------------------------------------------------

_NOT_RUNNING_LIKE: frozenset[StreamsInstanceStateName | None] = frozenset({"NOT_RUNNING", UNREACHABLE, None,
                                                                          "UNKNOWN"})
_WORST_FIRST: tuple[StreamsAppStateName, ...] = ("NOT_RUNNING", "PENDING_SHUTDOWN", "CREATED")


def app_state(instance_states: Iterable[StreamsInstanceStateName | None],
              expected_instances: int | None) -> StreamsAppStateName | None:
    """The state of one application from its instances' states. First rule that applies:

    1. no instance known (no metrics endpoint) -> ``None``: only the consumer group tells;
    2. any ERROR or PENDING_ERROR -> ``ERROR`` (needs a human, whatever the others do);
    3. any REBALANCING -> ``REBALANCING`` (transient by nature: the SLO tolerates it briefly);
    4. at least ``expected_instances`` RUNNING (all known instances when ``None``) -> ``RUNNING``;
    5. at least one RUNNING -> :data:`DEGRADED` (processing, with fewer instances than expected);
    6. the worst of the rest: NOT_RUNNING (also UNREACHABLE and unknown) > PENDING_SHUTDOWN > CREATED.
    """
    states = list(instance_states)
    if not states:
        return None
    if any(s in ("ERROR", "PENDING_ERROR") for s in states):
        return "ERROR"
    if REBALANCING in states:
        return REBALANCING
    running = states.count(RUNNING)
    needed = len(states) if expected_instances is None else expected_instances
    if running >= needed and running > 0:
        return RUNNING
    if running > 0:
        return DEGRADED
    present = {"NOT_RUNNING" if s in _NOT_RUNNING_LIKE else s for s in states}
    return next((s for s in _WORST_FIRST if s in present), "NOT_RUNNING")


# --- transitions -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Transition:
    """One observed state change of one instance."""

    time: float
    """Epoch seconds of the cycle that saw the new state."""
    application_id: str
    instance: str
    from_state: StreamsTransitionStateName
    to_state: StreamsTransitionStateName
    inferred: bool = False
    """True for a REBALANCING pass seen only through the rebalance counter (see the tracker)."""


@dataclass(frozen=True)
class Observation:
    """What the tracker needs of one instance in one cycle."""

    state: StreamsTransitionStateName | None
    """An instance's, the Streams group's or a member's state; ``None`` = unknown this cycle: the
    previous state is kept, nothing is recorded."""
    process_id: str | None = None
    rebalances_total: float | None = None


@dataclass
class _Last:
    state: StreamsTransitionStateName
    process_id: str | None
    rebalances_total: float | None


class TransitionTracker:
    """Each instance's last known state, and the transitions between cycles.

    Rules:

    - the first observation of an instance records no transition (where it came from is unknown);
    - a state different from the previous cycle's records ``previous -> new``;
    - an instance whose endpoint stops answering is observed as :data:`UNREACHABLE` by the caller,
      so it transitions ``RUNNING -> UNREACHABLE`` (and back to whatever it reports on return);
    - a rebalance that began and ended between two scrapes (common: they often last well under a
      second) leaves the state unchanged but advances the consumer's ``rebalance-total``; for the
      same process and the same state, the tracker then records ``S -> REBALANCING -> S`` at this
      cycle's time, marked ``inferred`` (its duration is unknown, counted as 0).

    The last :data:`TRANSITIONS_KEPT` transitions of every application are kept in :attr:`recent`.
    """

    def __init__(self, kept: int = TRANSITIONS_KEPT) -> None:
        self._last: dict[tuple[str, str], _Last] = {}
        self._kept = kept
        self.recent: dict[str, deque[Transition]] = {}

    def observe(self, time: float, application_id: str,
                observations: Mapping[str, Observation]) -> list[Transition]:
        """Record this cycle's observations of one application's instances; returns the new transitions."""
        new: list[Transition] = []
        for instance, seen in observations.items():
            if seen.state is None:
                continue
            key = (application_id, instance)
            last = self._last.get(key)
            if last is not None and last.state != seen.state:
                new.append(Transition(time, application_id, instance, last.state, seen.state))
            elif last is not None and _missed_rebalance(instance, last, seen):
                new.append(Transition(time, application_id, instance, seen.state, REBALANCING, inferred=True))
                new.append(Transition(time, application_id, instance, REBALANCING, seen.state, inferred=True))
            counter = seen.rebalances_total
            if counter is None and last is not None and last.process_id == seen.process_id:
                counter = last.rebalances_total
            self._last[key] = _Last(seen.state, seen.process_id, counter)
        self.recent.setdefault(application_id, deque(maxlen=self._kept)).extend(new)
        return new

    def transitions(self, application_id: str) -> list[Transition]:
        return list(self.recent.get(application_id, ()))

    def known(self, application_id: str) -> list[str]:
        """The instances of ``application_id`` with a last state."""
        return [instance for app, instance in self._last if app == application_id]

    def forget(self, application_id: str, instance: str) -> None:
        """Drop an instance's last state (a group member that left: its id is never seen again)."""
        self._last.pop((application_id, instance), None)

    def last_state(self, application_id: str, instance: str) -> StreamsTransitionStateName | None:
        last = self._last.get((application_id, instance))
        return None if last is None else last.state


def is_rebalancing(instance: str, state: StreamsTransitionStateName | None) -> bool:
    """Whether ``instance`` in ``state`` is rebalancing: a client in REBALANCING, or a Streams
    group (:data:`GROUP_INSTANCE`) in one of :data:`GROUP_REBALANCING_STATES`."""
    return state == REBALANCING or (instance == GROUP_INSTANCE and state in GROUP_REBALANCING_STATES)


def _missed_rebalance(instance: str, last: _Last, seen: Observation) -> bool:
    if instance == GROUP_INSTANCE and seen.state != GROUP_STABLE:
        return False  # a group's episode is Stable -> ... -> Stable; NotReady or Empty epochs move too
    return (not is_rebalancing(instance, seen.state)
            and last.process_id is not None and last.process_id == seen.process_id
            and last.rebalances_total is not None and seen.rebalances_total is not None
            and seen.rebalances_total > last.rebalances_total)


# --- rebalancing episodes ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Episode:
    """A rebalancing period (:func:`is_rebalancing`): from entering it to leaving it."""

    start: float
    end: float | None
    """``None`` while it is going on."""
    instance: str | None = None
    """The instance; ``None`` for an application-level episode (the union of its instances')."""

    def seconds(self, now: float) -> float:
        """Duration; for an ongoing episode, the time so far."""
        return (now if self.end is None else self.end) - self.start


def rebalance_episodes(transitions: Iterable[Transition]) -> list[Episode]:
    """Per-instance rebalancing episodes (:func:`is_rebalancing`), in start order. A transition into
    a rebalancing state opens one (a Streams group going Assigning -> Reconciling stays in it), the
    next transition of that instance out of them closes it. A transition out of them with no known
    start (evicted from the kept window, or the first observation was already rebalancing) is
    left out."""
    open_since: dict[str, float] = {}
    episodes: list[Episode] = []
    for t in sorted(transitions, key=lambda t: t.time):
        if is_rebalancing(t.instance, t.to_state):
            open_since.setdefault(t.instance, t.time)
        elif is_rebalancing(t.instance, t.from_state) and t.instance in open_since:
            episodes.append(Episode(open_since.pop(t.instance), t.time, t.instance))
    episodes.extend(Episode(start, None, instance) for instance, start in open_since.items())
    return sorted(episodes, key=lambda e: e.start)


def app_rebalance_episodes(transitions: Iterable[Transition]) -> list[Episode]:
    """Application-level episodes: the application rebalances while any instance does, so
    overlapping (or touching) instance episodes merge into one."""
    merged: list[Episode] = []
    for episode in rebalance_episodes(transitions):
        if merged and (merged[-1].end is None or episode.start <= merged[-1].end):
            last = merged[-1]
            end = None if last.end is None or episode.end is None else max(last.end, episode.end)
            merged[-1] = Episode(last.start, end)
        else:
            merged.append(Episode(episode.start, episode.end))
    return merged


def rebalance_summary(transitions: Iterable[Transition], now: float) -> Rebalances:
    """``count`` of application-level episodes, ``total_seconds`` spent rebalancing (ongoing one
    included so far), ``ongoing_seconds`` of the current one (``None`` when not rebalancing)."""
    episodes = app_rebalance_episodes(transitions)
    ongoing = next((e for e in episodes if e.end is None), None)
    return {"count": len(episodes),
            "total_seconds": round(sum(e.seconds(now) for e in episodes), 3),
            "ongoing_seconds": None if ongoing is None else round(ongoing.seconds(now), 3)}
