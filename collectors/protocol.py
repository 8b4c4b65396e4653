"""The collector protocol and registry: built-ins are registered exactly like add-ons.

A collector is an object with a ``name`` and ``collect(context) -> CollectorResult``. Its
constructor must not connect to anything (pass clients in, or build them lazily in ``collect``).
The registry runs each collector in isolation: one that raises is marked down (``up=False`` with
the error) and the others keep running.

A collector declares what it returns (:class:`Collector`): the snapshot sections (``sections``,
name -> type) and the lake tables (``tables``, name -> Arrow schema). The collection loop gathers
the declarations of every collector (:func:`declarations`): a declared section is in every
snapshot (null in a cycle the collector did not return it), a declared table is written to the
lake and the Kafka sink like a built-in one. A section or table nobody declared is not: the section
is left out of the snapshot (and logged), the table's rows are refused (``lake_errors``).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, TypedDict, runtime_checkable
from collections.abc import Callable, Iterable, Mapping

from kpulse.config import ClusterConfig
from kpulse.errors import KpulseError
from kpulse.lake.rows import Columns
from kpulse.lake.schema import SCHEMAS
from kpulse.snapshot import (BUILTIN_SECTIONS, RESERVED_NAMES, BrokerMetricsSection, ClusterMetadataSection,
                             ConsumerGroup, Probe, ShareGroups, StreamsApp)

if TYPE_CHECKING:
    import pyarrow as pa

LakeRows: TypeAlias = list[dict[str, Any]] | Columns
"""One lake table's rows of one cycle: a dict per row (column -> value), or :class:`Columns`. The
values are the lake's to check, against the table's schema (``kpulse.lake.store.rows_to_arrow``), as
``LakeWriter.append`` takes them."""


class BuiltinSections(TypedDict, total=False):
    """The sections the built-in collectors return, by name and type (what
    ``kpulse.snapshot.BUILTIN_SECTIONS`` lists): a built-in collector builds its
    :attr:`CollectorResult.sections` as one of these, so that the checker holds each section to
    its type. Each collector returns only its own."""

    cluster: ClusterMetadataSection
    """The cluster metadata collector's (composed into the snapshot's ``cluster`` and ``brokers``)."""
    broker_metrics: BrokerMetricsSection
    """The broker metrics collector's (composed into the snapshot's ``cluster`` and ``brokers``)."""
    consumer_groups: list[ConsumerGroup]
    """The consumer lag collector's."""
    streams_apps: list[StreamsApp]
    """The Streams apps collector's."""
    share_groups: ShareGroups
    """The share groups collector's."""
    probe: Probe
    """The probe's."""


class CycleReadings:
    """What the collectors of one cycle share while they run: a collector publishes a reading of
    the cluster (:meth:`publish`) and another waits for it (:meth:`of`) instead of reading the same
    thing again. The lag collector publishes its groups reading, which the Streams collector takes
    (``collectors/lag/groups_reading.py``).

    Each collector publishes at most once a cycle; when it returns (or raises) without publishing,
    the others get None at once and read for themselves. A collector not in the cycle is never
    waited for."""

    def __init__(self, names: Iterable[str]):
        self._events = {name: threading.Event() for name in names}
        self._readings: dict[str, object] = {}
        self._running = set(self._events)
        self._lock = threading.Lock()

    def publish(self, name: str, reading: object) -> None:
        """``reading`` is collector ``name``'s for this cycle (the first one published counts)."""
        event = self._events.get(name)
        if event is None or event.is_set():
            return
        self._readings[name] = reading
        event.set()

    def of(self, name: str, timeout: float) -> object:
        """Collector ``name``'s reading of this cycle, waiting at most ``timeout`` seconds for it;
        None when that collector is not in the cycle, finished without publishing, or is late. The
        reader narrows it to the type the publisher documents (``isinstance``)."""
        event = self._events.get(name)
        if event is None or not event.wait(timeout):
            return None
        return self._readings.get(name)

    def finished(self, name: str) -> None:
        """Collector ``name`` returned: whoever waits for its reading stops waiting."""
        event = self._events.get(name)
        if event is not None:
            event.set()
        with self._lock:
            self._running.discard(name)

    def others_running(self, name: str) -> bool:
        """Whether a collector other than ``name`` is still running in this cycle."""
        with self._lock:
            return bool(self._running - {name})


@dataclass(frozen=True)
class CollectContext:
    """What every collector gets each cycle."""

    cluster: ClusterConfig
    """The cluster being collected."""
    now: float
    """Wall-clock time of this cycle (epoch seconds); collectors stamp samples with it."""
    shared: CycleReadings | None = None
    """The readings the collectors of this cycle share (:func:`run_isolated` gives every cycle its
    own); None when a collector runs alone."""


@dataclass
class CollectorResult:
    """What one collector returns for one cycle: named sections of the snapshot plus lake rows."""

    sections: Mapping[str, object] = field(default_factory=dict)
    """Snapshot sections this collector owns, name -> value, e.g. ``{"cluster": {...}}``: a
    built-in collector's are a :class:`BuiltinSections`, an add-on's are of the types it declares
    (:class:`Collector`)."""
    rows: dict[str, LakeRows] = field(default_factory=dict)
    """Lake table name -> rows to append this cycle (dicts, or :class:`Columns`)."""


@runtime_checkable
class Collector(Protocol):
    """A collector. Besides ``name`` and ``collect``, it may declare (class attributes; not part of
    the ``isinstance`` check, both default to empty):

    ``sections: Mapping[str, type]``
        The snapshot sections it returns, name -> type: a ``TypedDict`` whose fields are
        ``Annotated[type, "doc"]`` (as in ``kpulse/snapshot.py``), or ``list[...]`` of one, or a
        plain JSON type. The JSON Schema of the snapshot includes it
        (``kpulse.snapshot.json_schema(add_on_sections)``). A built-in section name
        (``kpulse.snapshot.RESERVED_NAMES``) can be declared only with its built-in type.
    ``uses_kafka: bool``
        Whether it talks to the Kafka cluster (default true). When the cluster refuses the configured
        identity (``collectors/connection_gate.py``), the loop does not run such collectors that
        cycle: they are down with the reason.
    ``tables: Mapping[str, pyarrow.Schema]``
        The lake tables it writes, name -> schema beginning with ``time`` (timestamp[us, tz=UTC])
        and ``cluster`` (string). A built-in table can be declared only with its own schema
        (``kpulse.lake.schema.SCHEMAS``).
    """

    name: str

    def collect(self, context: CollectContext) -> CollectorResult: ...


class DeclarationError(KpulseError):
    """Collectors declare sections that cannot go together (one line)."""


@dataclass(frozen=True)
class Declarations:
    """What a set of collectors declares, merged."""

    sections: dict[str, object] = field(default_factory=dict)
    """Section name -> type (a type form: a ``TypedDict``, ``list[...]`` of one, a JSON type), built-in
    ones included."""
    tables: dict[str, pa.Schema] = field(default_factory=dict)
    """Lake table name -> schema, built-in ones included."""

    @property
    def add_on_sections(self) -> dict[str, object]:
        """The declared sections that are not the built-in collectors': they pass through to the snapshot."""
        return {name: kind for name, kind in self.sections.items() if name not in BUILTIN_SECTIONS}


def declarations(collectors: Iterable[Collector]) -> Declarations:
    """The sections and tables ``collectors`` declare. A section declared by two collectors of
    different names, or a built-in name declared with another type, is refused
    (:class:`DeclarationError`), as is a built-in lake table declared with other columns or one
    table declared twice with different ones (the lake checks the rest when it registers them,
    ``kpulse.lake.schema.register_tables``)."""
    sections: dict[str, object] = {}
    owners: dict[str, str] = {}
    tables: dict[str, pa.Schema] = {}
    for collector in collectors:
        declared: Mapping[str, object] = getattr(collector, "sections", None) or {}
        for name, kind in declared.items():
            if name in RESERVED_NAMES and kind != BUILTIN_SECTIONS.get(name):
                raise DeclarationError(f"collector {collector.name!r} declares section {name!r}, a name of "
                                       "kpulse's own snapshot: choose another name")
            owner = owners.setdefault(name, collector.name)
            if owner != collector.name:
                raise DeclarationError(f"section {name!r} is declared by two collectors, {owner!r} and "
                                       f"{collector.name!r}")
            sections[name] = kind
        declared_tables: Mapping[str, pa.Schema] = getattr(collector, "tables", None) or {}
        for name, schema in declared_tables.items():
            built_in = SCHEMAS.get(name)
            if built_in is not None and not schema.equals(built_in):
                raise DeclarationError(f"collector {collector.name!r} declares lake table {name!r}, a built-in "
                                       f"table, with other columns (its columns: {', '.join(built_in.names)})")
            if not tables.setdefault(name, schema).equals(schema):
                raise DeclarationError(f"lake table {name!r} is declared twice with different columns "
                                       f"(collector {collector.name!r})")
    return Declarations(sections, tables)


@dataclass(frozen=True)
class CollectorStatus:
    name: str
    up: bool
    duration_seconds: float
    error: str | None = None


class DuplicateCollectorError(ValueError):
    pass


CollectorFactory: TypeAlias = Callable[[ClusterConfig], Collector | None]
"""Builds a cluster's collector (None: the collector does not apply to that cluster, e.g. a probe
turned off); connects to nothing."""


class Registry:
    """Named collector factories (:data:`CollectorFactory`). ``create`` builds fresh collectors for
    one cluster; factories and constructors make no connection."""

    def __init__(self) -> None:
        self._factories: dict[str, CollectorFactory] = {}

    def register(self, name: str, factory: CollectorFactory) -> None:
        if name in self._factories:
            raise DuplicateCollectorError(f"a collector named {name!r} is already registered")
        self._factories[name] = factory

    @property
    def names(self) -> list[str]:
        return list(self._factories)

    def create(self, cluster_config: ClusterConfig) -> list[Collector]:
        collectors = (factory(cluster_config) for factory in self._factories.values())
        return [collector for collector in collectors if collector is not None]


def run_isolated(collectors: list[Collector], context: CollectContext,
                 clock: Callable[[], float] = time.monotonic,
                 pool: ThreadPoolExecutor | None = None) -> tuple[dict[str, object], dict[str, LakeRows],
                                                                  list[CollectorStatus]]:
    """Run every collector once, concurrently (each owns its clients, so a slow one, such as the
    probe waiting for its records, does not hold up the others); a failing one is reported down
    and contributes nothing. Results are merged in registration order.

    ``pool``: threads kept from one cycle to the next (with at least one per collector); without
    it, threads are started for this call (each start waits for the new thread to run, which costs
    a cycle noticeably on busy cores: docs/performance.md)."""

    shared = context.shared
    if shared is None:
        shared = CycleReadings(c.name for c in collectors)
        context = replace(context, shared=shared)

    def run(collector: Collector) -> tuple[CollectorResult | None, CollectorStatus]:
        began = clock()
        try:
            result = collector.collect(context)
        except Exception as error:  # noqa: BLE001 - isolation is the point
            first_line = f"{type(error).__name__}: {error}".splitlines()[0]
            return None, CollectorStatus(collector.name, False, clock() - began, first_line)
        finally:
            shared.finished(collector.name)
        return result, CollectorStatus(collector.name, True, clock() - began)

    if pool is not None and len(collectors) > 1:
        outcomes = list(pool.map(run, collectors))
    elif len(collectors) > 1:
        with ThreadPoolExecutor(max_workers=len(collectors), thread_name_prefix="collector") as own_pool:
            outcomes = list(own_pool.map(run, collectors))
    else:
        outcomes = [run(c) for c in collectors]
    sections: dict[str, object] = {}
    rows: dict[str, LakeRows] = {}
    for result, _ in outcomes:
        if result is None:
            continue
        sections.update(result.sections)
        for table, table_rows in result.rows.items():
            merged = rows.get(table)
            if merged is None:
                rows[table] = table_rows if isinstance(table_rows, Columns) else list(table_rows)
            else:  # two collectors write the table: as dicts
                rows[table] = [*merged, *table_rows]
    return sections, rows, [status for _, status in outcomes]
