"""The collector protocol and registry: built-ins are registered exactly like add-ons.

A collector is an object with a ``name`` and ``collect(context) -> CollectorResult``. Its
constructor must not connect to anything (pass clients in, or build them lazily in ``collect``).
The registry runs each collector in isolation: one that raises is marked down (``up=False`` with
the error) and the others keep running.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, runtime_checkable


@dataclass(frozen=True)
class CollectContext:
    """What every collector gets each cycle."""

    cluster: Any
    """The ``kpulse.config.ClusterConfig`` being collected."""
    now: float
    """Wall-clock time of this cycle (epoch seconds); collectors stamp samples with it."""


@dataclass
class CollectorResult:
    """What one collector returns for one cycle: named sections of the snapshot plus lake rows."""

    sections: dict[str, Any] = field(default_factory=dict)
    """Snapshot sections this collector owns, e.g. ``{"cluster": {...}}``."""
    rows: dict[str, list[dict]] = field(default_factory=dict)
    """Lake table name -> rows to append this cycle."""


@runtime_checkable
class Collector(Protocol):
    name: str

    def collect(self, context: CollectContext) -> CollectorResult: ...


@dataclass(frozen=True)
class CollectorStatus:
    name: str
    up: bool
    duration_seconds: float
    error: str | None = None


class DuplicateCollectorError(ValueError):
    pass


class Registry:
    """Named collector factories, each ``factory(cluster_config) -> Collector``. ``create`` builds
    fresh collectors for one cluster; factories and constructors make no connection."""

    def __init__(self) -> None:
        self._factories: dict[str, Callable[[Any], Collector]] = {}

    def register(self, name: str, factory: Callable[[Any], Collector]) -> None:
        if name in self._factories:
            raise DuplicateCollectorError(f"a collector named {name!r} is already registered")
        self._factories[name] = factory

    @property
    def names(self) -> list[str]:
        return list(self._factories)

    def create(self, cluster_config: Any) -> list[Collector]:
        return [factory(cluster_config) for factory in self._factories.values()]


def run_isolated(collectors: list[Collector], context: CollectContext,
                 clock: Callable[[], float] = time.monotonic) -> tuple[dict[str, Any], dict[str, list[dict]],
                                                                       list[CollectorStatus]]:
    """Run every collector once; a failing one is reported down and contributes nothing."""
    sections: dict[str, Any] = {}
    rows: dict[str, list[dict]] = {}
    statuses = []
    for collector in collectors:
        began = clock()
        try:
            result = collector.collect(context)
        except Exception as error:  # noqa: BLE001 - isolation is the point
            statuses.append(CollectorStatus(collector.name, False, clock() - began,
                                            f"{type(error).__name__}: {error}".splitlines()[0]))
            continue
        statuses.append(CollectorStatus(collector.name, True, clock() - began))
        sections.update(result.sections)
        for table, table_rows in result.rows.items():
            rows.setdefault(table, []).extend(table_rows)
    return sections, rows, statuses
