"""The Kafka Streams applications collector: per application, its instances' client and thread
states (from their metrics endpoints), its group, its state transitions and rebalancing episodes.
The logic is in ``collectors/streams/streams_state.py`` and ``streams_group.py``; this module does
the I/O.

Applications are the configured ones (``ClusterConfig.streams_apps``), the Streams groups
(KIP-1071, ``group.protocol=streams``: ``protocol: "streams"``) and the classic consumer groups
recognised as Streams applications by their internal topics (:func:`streams_state.streams_app_ids`,
``protocol: "classic"``). Discovered applications obey the cluster's ``consumer_groups``
include/exclude filter, as every type of group does; configured ones are always reported. An
application without metrics endpoints has only its group: its ``state`` is ``None`` and
``expected_instances`` is ``None``.

Run beside the lag collector (``kpulse collect``), the Streams groups' listing, descriptions,
committed offsets and log ends are taken from its reading of the same cycle
(``collectors/streams/shared_readers.py``) and read here only where it lacks them.

Streams groups are listed (ListGroups with the ``streams`` type) and described (StreamsGroupDescribe)
through ``kpulse.kafka.group_describe.GroupReader``; their input lag is read with the lag
collector's batched readers (one OffsetFetch per coordinator, one ListOffsets per partition leader;
never librdkafka's offset reads) and is what ``kafka-streams-groups --describe --offsets`` shows
(:func:`streams_group.input_partitions`). Their transitions come from the group state and the
members' epochs (:func:`streams_group.group_observations`), beside the instances' client states
when metrics endpoints are configured; a configured application that is a Streams group gets both.

Each cycle, every metrics endpoint is read concurrently. An endpoint that does not answer gives
its instance(s) the state ``UNREACHABLE`` (counted as NOT_RUNNING by the application state, see
:func:`streams_state.app_state`); the instance keeps the ``client_id`` it had when it last
answered (the URL if it never did), so its transitions read ``RUNNING -> UNREACHABLE``.

Snapshot section ``streams_apps`` (a list, one entry per application, sorted by id)::

    {"application_id", "protocol", "state", "group_state", "members", "group_error", "expected_instances",
     "instances": [{"id", "endpoint", "state", "up", "alive_threads", "failed_threads",
                    "thread_states": {thread id: state}, "error"}],
     "group": {"state", "group_epoch", "assignment_epoch", "topology_epoch", "missing_topics",
               "subtopologies", "members", "input_scope", "input_partitions", "total_lag", "lag_error"}
              or None,                                           # protocol streams only
     "transitions": [{"time", "instance", "from", "to", "inferred"}],   # last 100, oldest first
     "rebalances": {"count", "total_seconds", "ongoing_seconds"}}       # over those transitions

Lake rows: ``streams_instance`` (one per instance per cycle; ``client_state`` is null when the
endpoint did not answer, ``up`` says so) and ``streams_transition`` (one per new transition).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Set
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from collectors.brokers.broker_metrics import http_get_text
from collectors.lag.groups_reading import PUBLISHER, GroupsReading
from collectors.protocol import BuiltinSections, CollectContext, CollectorResult
from collectors.streams.shared_readers import SharedGroups, SharedLogEnds, SharedOffsets
from collectors.streams.streams_group import (MEMBER_LEFT, InputLag, group_observations, group_view,
                                              input_lag, input_partitions)
from collectors.streams.streams_state import (InstanceReading, Observation, TransitionTracker, app_state,
                                              instances_from_samples, rebalance_summary, streams_app_ids,
                                              unreachable)
from kpulse import prom_text
from kpulse.kafka.batched_client import BatchedClient
from kpulse.kafka.clients import LazyAdmin, group_state_name, list_topics
from kpulse.kafka.committed_offsets import BatchedOffsetFetch
from kpulse.config import ClusterConfig, StreamsAppConfig
from kpulse.kafka.group_model import GroupReadError, GroupStateName, StreamsGroup
from kpulse.kafka.log_ends import EARLIEST, LeaderLogEnds, LogEnds
from kpulse.lake.schema import SCHEMAS
from kpulse.snapshot import StreamsApp, StreamsInputScopeName, StreamsInstance

SECTION = "streams_apps"
INSTANCE_TABLE = "streams_instance"
TRANSITION_TABLE = "streams_transition"
ADMIN_TIMEOUT_SECONDS = 10.0
MAX_SCRAPE_THREADS = 8
TOPIC_NAMES_REFRESH_SECONDS = 60.0
NEW_GROUP_WATCH_SECONDS = 30.0


@dataclass(frozen=True)
class GroupInfo:
    """The consumer group named by an application id."""

    state: GroupStateName | None
    """Stable, PreparingRebalance, CompletingRebalance, Empty, Dead, Unknown; ``None`` if unread."""
    members: int | None
    error: str | None = None


@dataclass
class StreamsGroupReaders:
    """The readers of Streams groups: the group reader (list, describe), committed offsets, log
    ends and log starts (the batched readers of ``kpulse/kafka``)."""

    groups: Any
    """``list_groups(timeout, types)``, ``describe(listings, timeout)`` (``GroupReader``)."""
    offsets: Any
    """``read(group_ids, timeout)`` (``BatchedOffsetFetch``)."""
    log_ends: Any
    """``read(partitions, timeout)`` (``LeaderLogEnds``)."""
    log_starts: Any
    """``read(partitions, timeout)`` (``LeaderLogEnds`` at ``EARLIEST``)."""

    @classmethod
    def over(cls, client: BatchedClient) -> StreamsGroupReaders:
        from kpulse.kafka.group_describe import GroupReader

        return cls(GroupReader(client), BatchedOffsetFetch(client), LeaderLogEnds(client),
                   LeaderLogEnds(client, timestamp=EARLIEST))


@dataclass
class StreamsGroupsRead:
    """One cycle's Streams groups: group id -> its description (or why it could not be read),
    and the input lag of those described."""

    groups: dict[str, StreamsGroup | GroupReadError]
    lag: dict[str, tuple[StreamsInputScopeName, InputLag, str | None]]
    """group id -> (input scope, lag, why the lag could not be read at all)."""
    error: str | None = None
    """Why the Streams groups could not be listed (one line); None when they were, or the brokers
    do not have Streams groups."""


class StreamsAppsCollector:
    """See the module docstring. ``http_get(url, timeout) -> str`` reads a metrics endpoint
    (default: ``requests``); ``admin_factory(client_config)`` builds the Admin client on first use;
    ``clock`` gives the time at which an ongoing rebalance is measured (after the reads).
    ``discover=False`` reports only the configured applications and Streams groups named like one.
    ``streams_readers()`` builds the Streams group readers on first use (default: over a
    ``BatchedClient`` of its own). Keep one object per cluster: it holds the last states and
    transitions."""

    name = "streams_apps"
    sections = {SECTION: list[StreamsApp]}
    tables = {table: SCHEMAS[table] for table in (INSTANCE_TABLE, TRANSITION_TABLE)}

    def __init__(self, cluster_config: ClusterConfig, http_get: Callable[[str, float], str] | None = None,
                 admin_factory: Callable[[dict], Any] | None = None, clock: Callable[[], float] = time.time,
                 discover: bool = True,
                 streams_readers: Callable[[], StreamsGroupReaders] | None = None) -> None:
        self._cluster = cluster_config
        self._http_get = http_get or http_get_text
        self._admin = LazyAdmin(cluster_config, admin_factory)
        self._clock = clock
        self._discover = discover
        self.tracker = TransitionTracker()
        self._ids_by_endpoint: dict[str, list[str]] = {}
        self._topics = TopicNames()
        self._streams_readers_factory = streams_readers or (
            lambda: StreamsGroupReaders.over(BatchedClient(cluster_config, client_id="kpulse-streams")))
        self._streams_readers: StreamsGroupReaders | None = None

    # --- one cycle -------------------------------------------------------------------------------------
    def collect(self, context: CollectContext) -> CollectorResult:
        configured = {app.application_id: app for app in self._cluster.streams_apps}
        endpoints = sorted({url for app in configured.values() for url in app.metrics_endpoints})
        readings = dict(zip(endpoints, _concurrently(self._read_endpoint, endpoints)))
        reading = context.shared.of(PUBLISHER, ADMIN_TIMEOUT_SECONDS) if context.shared is not None else None
        shared = reading if isinstance(reading, GroupsReading) else None
        streams = self._read_streams_groups(configured, context.now, shared)
        groups = self._read_groups(configured, context.now, streams_groups=set(streams.groups), shared=shared)
        apps: list[StreamsApp] = []
        instance_rows, transition_rows = [], []
        for app_id in sorted(set(configured) | set(groups) | set(streams.groups)):
            app = configured.get(app_id)
            instances = [r for url in (app.metrics_endpoints if app else ()) for r in readings[url]]
            expected = app.expected_instances if app else None
            observations = {r.id: Observation(r.state, r.process_id, r.rebalances_total) for r in instances}
            detail = None
            if app_id in streams.groups:
                described = streams.groups[app_id]
                if isinstance(described, StreamsGroup):
                    group = GroupInfo(described.state, len(described.members))
                    scope, lag, lag_error = streams.lag[app_id]
                    detail = group_view(described, self._topics.names if self._topics.read else None, scope, lag,
                                        lag_error)
                    observations.update(group_observations(described, self.tracker.known(app_id)))
                else:
                    group = GroupInfo(None, None, described.reason)
            else:
                group = groups.get(app_id, GroupInfo(None, None, "not read"))
            new = self.tracker.observe(context.now, app_id, observations)
            for instance, seen in observations.items():
                if seen.state == MEMBER_LEFT:
                    self.tracker.forget(app_id, instance)  # member ids are not reused
            transition_rows += [{"time": context.now, "cluster": self._cluster.name, "application_id": app_id,
                                 "instance": t.instance, "from_state": t.from_state, "to_state": t.to_state}
                                for t in new]
            instance_rows += [{"time": context.now, "cluster": self._cluster.name, "application_id": app_id,
                               "instance": r.id, "up": r.up, "client_state": r.state if r.up else None,
                               "alive_threads": r.alive_threads, "failed_threads": r.failed_threads,
                               "group_state": group.state, "expected_instances": expected}
                              for r in instances]
            kept = self.tracker.transitions(app_id)
            apps.append({
                "application_id": app_id,
                "protocol": "streams" if app_id in streams.groups else "classic",
                "state": app_state((r.state for r in instances), expected) if app else None,
                "group_state": group.state, "members": group.members, "group_error": group.error,
                "expected_instances": expected,
                "instances": [_instance_view(r) for r in instances],
                "group": detail,
                "transitions": [{"time": t.time, "instance": t.instance, "from": t.from_state, "to": t.to_state,
                                 "inferred": t.inferred} for t in kept],
                "rebalances": rebalance_summary(kept, max(self._clock(), context.now)),
            })
        return CollectorResult(sections=BuiltinSections(streams_apps=apps),
                               rows={INSTANCE_TABLE: instance_rows, TRANSITION_TABLE: transition_rows})

    # --- Streams groups (KIP-1071) ---------------------------------------------------------------------
    def _read_streams_groups(self, configured: dict[str, StreamsAppConfig], now: float,
                             shared: GroupsReading | None = None) -> StreamsGroupsRead:
        """Every Streams group (only those named like a configured application without discovery),
        described, with its input lag; what the lag collector read this cycle (``shared``) is taken
        from its reading (``shared_readers``)."""
        try:
            if self._streams_readers is None:
                self._streams_readers = self._streams_readers_factory()
            readers = self._streams_readers
            if shared is not None:
                readers = StreamsGroupReaders(SharedGroups(shared, readers.groups), SharedOffsets(shared, readers.offsets),
                                              SharedLogEnds(shared, readers.log_ends), readers.log_starts)
            listings = readers.groups.list_groups(ADMIN_TIMEOUT_SECONDS, types=["streams"])
        except Exception as error:  # noqa: BLE001 - classic applications are still reported
            return StreamsGroupsRead({}, {}, f"Streams groups not listed: {_one_line(error)}")
        if listings is None:
            why = getattr(getattr(readers.groups, "client", None), "unavailable_reason", None)
            return StreamsGroupsRead({}, {}, f"Streams groups not listed: {why or 'no broker answered ListGroups'}")
        monitors = self._cluster.consumer_groups.monitors  # one filter for every type of group
        listings = [g for g in listings if g.type == "streams"
                    and (g.group_id in configured or (self._discover and monitors(g.group_id)))]
        if not listings:
            return StreamsGroupsRead({}, {})
        try:
            described = readers.groups.describe(listings, ADMIN_TIMEOUT_SECONDS)
        except Exception as error:  # noqa: BLE001
            reason = f"StreamsGroupDescribe: {_one_line(error)}"
            return StreamsGroupsRead({g.group_id: GroupReadError(g.group_id, reason) for g in listings}, {})
        groups = {g.group_id: described.get(g.group_id) or GroupReadError(g.group_id, "left out of the answer")
                  for g in listings}
        live = {group_id: g for group_id, g in groups.items() if isinstance(g, StreamsGroup)}
        if any(g.state == "NotReady" for g in live.values()):
            self._refresh_topic_names(now)
        return StreamsGroupsRead(groups, self._input_lag(readers, live))

    def _input_lag(self, readers: StreamsGroupReaders, groups: dict[str, StreamsGroup]
                   ) -> dict[str, tuple[StreamsInputScopeName, InputLag, str | None]]:
        if not groups:
            return {}
        committed_error = None
        try:
            committed = readers.offsets.read(sorted(groups), ADMIN_TIMEOUT_SECONDS)
        except Exception as error:  # noqa: BLE001
            committed, committed_error = None, _one_line(error)
        if committed is None:
            committed_error = committed_error or _fallback_reason(readers.offsets)
            committed = {}
        chosen = {}
        for group_id, group in groups.items():
            offsets = committed.get(group_id)
            chosen[group_id] = input_partitions(group, offsets.keys() if isinstance(offsets, dict) else ())
        wanted = sorted({key for _, keys in chosen.values() for key in keys})
        ends, end_error = _read_offsets(readers.log_ends, wanted)
        no_commit = sorted({key for group_id, (_, keys) in chosen.items() for key in keys
                            if not isinstance(committed.get(group_id), dict) or key not in committed[group_id]})
        starts, _ = _read_offsets(readers.log_starts, no_commit)  # its failures are in the partitions' errors
        lag = {}
        for group_id, (scope, keys) in chosen.items():
            offsets = committed.get(group_id)
            group_error = (committed_error or "committed offsets not read" if offsets is None
                           else None if isinstance(offsets, dict) else _one_line(offsets))
            errors = {**{k: f"log start: {v}" for k, v in starts.errors.items()}, **ends.errors}
            read = input_lag(keys, offsets if isinstance(offsets, dict) else None, ends.log_end, starts.log_end,
                             errors, group_error)
            lag[group_id] = (scope, read, group_error or end_error)
        return lag

    def _refresh_topic_names(self, now: float) -> None:
        try:
            self._topics.update(now, list_topics(self._admin.get(), ADMIN_TIMEOUT_SECONDS).topics)
        except Exception:  # noqa: BLE001 - the missing topics stay unknown
            pass

    def _read_endpoint(self, url: str) -> list[InstanceReading]:
        try:
            samples = prom_text.parse(self._http_get(url, self._cluster.metrics.timeout_seconds))
        except Exception as error:  # noqa: BLE001 - one endpoint's failure is reported, not raised
            return [unreachable(i, url, _one_line(error)) for i in self._ids_by_endpoint.get(url, [url])]
        found = instances_from_samples(url, samples)
        if found[0].state is None and url in self._ids_by_endpoint:
            # Answered, but without client-state (closing, or not registered yet): same instances, state unknown.
            return [InstanceReading(id=i, endpoint=url, up=True, error=found[0].error)
                    for i in self._ids_by_endpoint[url]]
        if found[0].state is not None:
            self._ids_by_endpoint[url] = [r.id for r in found]
        return found

    def _read_groups(self, configured: dict[str, StreamsAppConfig], now: float, streams_groups: Set[str] = frozenset(),
                     shared: GroupsReading | None = None) -> dict[str, GroupInfo]:
        """Group state and members of every classic-protocol application; discovered applications
        included. The Streams groups (``streams_groups``) are left out: DescribeGroups calls them Dead.
        The lag collector's reading of this cycle (``shared``) gives the listing and the groups it
        read; the others are described through librdkafka."""
        app_ids = set(configured) - streams_groups
        known: dict[str, GroupInfo] = {}
        try:
            admin = self._admin.get()
            if self._discover:
                if shared is not None:
                    group_ids = [g.group_id for g in shared.listings if g.type != "share"]
                else:
                    listed = admin.list_consumer_groups(request_timeout=ADMIN_TIMEOUT_SECONDS).result(
                        timeout=ADMIN_TIMEOUT_SECONDS)
                    group_ids = [g.group_id for g in listed.valid]
                if self._topics.stale(now, group_ids):
                    self._topics.update(now, list_topics(admin, ADMIN_TIMEOUT_SECONDS).topics)
                monitors = self._cluster.consumer_groups.monitors
                found = streams_app_ids([g for g in group_ids if monitors(g)], self._topics.names)
                self._topics.recognised(found)
                app_ids |= found - streams_groups
            if shared is not None:
                read = {app_id: shared.by_id.get(app_id) for app_id in app_ids}
                known = {app_id: GroupInfo(g.state, g.members) for app_id, g in read.items()
                         if g is not None and g.error is None}
            if not app_ids - set(known):
                return known
            futures = admin.describe_consumer_groups(sorted(app_ids - set(known)),
                                                     request_timeout=ADMIN_TIMEOUT_SECONDS)
        except Exception as error:  # noqa: BLE001 - instances are still reported without the group
            return {**{app_id: GroupInfo(None, None, _one_line(error)) for app_id in app_ids}, **known}
        groups = dict(known)
        for app_id, future in futures.items():
            try:
                description = future.result(timeout=ADMIN_TIMEOUT_SECONDS)
                groups[app_id] = GroupInfo(group_state_name(description.state),
                                           len(description.members))
            except Exception as error:  # noqa: BLE001
                groups[app_id] = GroupInfo(None, None, _one_line(error))
        return groups


class TopicNames:
    """The topic names discovery looks at, re-read only when they may change what is discovered.

    Reading them is a Metadata request for every partition of the cluster (at 10,000 partitions,
    most of this collector's cost), while internal topics come and go with applications, rarely.
    They are re-read every :data:`TOPIC_NAMES_REFRESH_SECONDS`, and at every cycle while some group
    listed less than :data:`NEW_GROUP_WATCH_SECONDS` after it first appeared is not recognised yet (a
    new application creates its internal topics during its first rebalance, after its group appears;
    groups listed at the first read are not new).
    So a new application is found within a cycle or two; one whose internal topics were deleted
    stays listed for at most :data:`TOPIC_NAMES_REFRESH_SECONDS`."""

    def __init__(self) -> None:
        self.names: tuple[str, ...] = ()
        self._read_at: float | None = None
        self._first_seen: dict[str, float] = {}
        self._recognised: set[str] = set()

    def stale(self, now: float, group_ids: Iterable[str]) -> bool:
        """Whether to re-read the names this cycle, given the groups listed now."""
        # Groups listed before the first read are not new: their topics are in that read.
        default = now if self._read_at is not None else float("-inf")
        first_seen = {g: self._first_seen.get(g, default) for g in group_ids}
        self._first_seen = first_seen
        if self._read_at is None or now - self._read_at >= TOPIC_NAMES_REFRESH_SECONDS:
            return True
        return any(now - seen < NEW_GROUP_WATCH_SECONDS and group not in self._recognised
                   for group, seen in first_seen.items())

    def update(self, now: float, names: Iterable[str]) -> None:
        self.names = tuple(names)
        self._read_at = now

    @property
    def read(self) -> bool:
        """The names were read at least once."""
        return self._read_at is not None

    def recognised(self, app_ids: Iterable[str]) -> None:
        """The groups found to be applications with the current names."""
        self._recognised = set(app_ids)


def _instance_view(reading: InstanceReading) -> StreamsInstance:
    return {"id": reading.id, "endpoint": reading.endpoint, "state": reading.state, "up": reading.up,
            "alive_threads": reading.alive_threads, "failed_threads": reading.failed_threads,
            "thread_states": dict(reading.thread_states), "error": reading.error}


def _one_line(error: BaseException) -> str:
    first = error.args[0] if error.args else None
    text = first.str() if first is not None and hasattr(first, "str") else f"{type(error).__name__}: {error}"
    text = " ".join(text.split())
    return text if len(text) <= 300 else text[:297] + "..."


def _read_offsets(reader: Any, partitions: list[tuple[str, int]]) -> tuple[Any, str | None]:
    """``reader.read`` of ``partitions`` (a ``LogEnds``), and why nothing was read (None: it was)."""
    if not partitions:
        return LogEnds(), None
    try:
        read = reader.read(partitions, ADMIN_TIMEOUT_SECONDS)
    except Exception as error:  # noqa: BLE001 - the partitions say why
        reason = _one_line(error)
    else:
        if read is not None:
            return read, None
        reason = _fallback_reason(reader)
    return LogEnds(errors={key: reason for key in partitions}), reason


def _fallback_reason(reader: Any) -> str:
    client = getattr(reader, "client", None)
    why = getattr(client, "unavailable_reason", None) or "the batched client cannot be used"
    return f"not read: {why} (librdkafka's offset reads are not used for Streams groups)"


def _concurrently(function: Callable[[str], list[InstanceReading]],
                  items: Iterable[str]) -> list[list[InstanceReading]]:
    items = list(items)
    if not items:
        return []
    with ThreadPoolExecutor(max_workers=min(MAX_SCRAPE_THREADS, len(items)),
                            thread_name_prefix="kpulse-streams-metrics") as pool:
        return list(pool.map(function, items))

