"""Expected-idle consumer groups: groups nobody should be paged about when they stop consuming (a
retired group whose offsets are kept, a job run by hand, a nightly loader).

A group is expected idle when the cluster's config names it (``consumer_groups.expected_idle``:
exact ids or regexes, :meth:`kpulse.config.model.ConsumerGroupsConfig.expected_idle_by_config`) or
when someone marked it on the Consumer groups page. Marks are kept in one JSON file in the state
directory, ``<state dir>/expected-idle.json`` (:data:`FILE_NAME`), written whole (temporary name,
then rename) under a lock, and read by the collection loop every cycle (parsed again only when the
file changed). Marking is not a change to the cluster: the operations service authorizes it by role
and records it in the audit log (``operations/service.py``), with no typed confirmation.

Whether a group is expected idle is decided here, once per cycle: the collection loop reads the
marks, and the snapshot is composed with ``expected_idle: true`` on those groups (:func:`labelled`,
``collectors/snapshot.py``). Everyone after reads that label: the alert rules on groups leave the
group out (``alerting/rules.py``), the exporter says so, the Consumer groups page shows it.
"""

from __future__ import annotations

import fcntl
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from collections.abc import Mapping, Sequence

from kpulse.config.model import ConsumerGroupsConfig
from kpulse.errors import KpulseError
from kpulse.snapshot import ConsumerGroup

FILE_NAME = "expected-idle.json"
CONFIG = "config"
"""The ``by`` of a group the config names (:func:`reason`)."""


class ExpectedIdleError(KpulseError):
    """The marks file cannot be read or written."""


@dataclass(frozen=True)
class Mark:
    """One group marked expected-idle from the page."""

    by: str
    """Who marked it (the signed-in user)."""
    at: float
    """When (epoch seconds)."""
    note: str = ""
    """Why, as typed (e.g. "retired with orders-v1")."""


def reason(group_id: str, consumer_groups: ConsumerGroupsConfig, marks: Mapping[str, Mark]) -> str | None:
    """Why ``group_id`` is expected idle: :data:`CONFIG`, ``"marked by <who>"``, or ``None`` (it is
    not). ``consumer_groups``: the cluster's config."""
    if consumer_groups.expected_idle_by_config(group_id):
        return CONFIG
    mark = marks.get(group_id)
    return None if mark is None else f"marked by {mark.by}"


def labelled(groups: Sequence[ConsumerGroup], consumer_groups: ConsumerGroupsConfig,
             marks: Mapping[str, Mark]) -> list[ConsumerGroup]:
    """``groups`` with ``expected_idle: true`` on those expected idle (:func:`reason`) and the key left
    out on the others, as the snapshot contract says. Pure: a group whose label changes is a new
    dict, the others are taken as they are, and ``groups`` is left unchanged."""
    if not consumer_groups.expected_idle and not marks:  # the usual case, for 10,000 groups every cycle
        return [_unlabelled(group) if "expected_idle" in group else group for group in groups]
    result: list[ConsumerGroup] = []
    for group in groups:
        if reason(str(group.get("group_id")), consumer_groups, marks) is None:
            result.append(_unlabelled(group) if "expected_idle" in group else group)
        elif group.get("expected_idle") is True:
            result.append(group)
        else:
            idle = group.copy()
            idle["expected_idle"] = True
            result.append(idle)
    return result


def _unlabelled(group: ConsumerGroup) -> ConsumerGroup:
    copy = group.copy()
    del copy["expected_idle"]
    return copy


class ExpectedIdleFile:
    """The marks of every cluster in one file. The constructor touches nothing; a missing file has
    no marks."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._cache: tuple[tuple[int, int, int], dict[str, dict[str, Mark]]] | None = None

    def _load(self) -> dict[str, dict[str, Mark]]:
        try:
            status = self.path.stat()
        except FileNotFoundError:
            return {}
        except OSError as error:
            raise ExpectedIdleError(f"{self.path}: cannot read the expected-idle marks: {error.strerror}") from None
        version = (status.st_ino, status.st_size, status.st_mtime_ns)
        if self._cache is not None and self._cache[0] == version:
            return self._cache[1]
        try:
            data = json.loads(self.path.read_text() or "{}")
            clusters = {str(cluster): {str(group): Mark(**mark) for group, mark in groups.items()}
                        for cluster, groups in (data.get("clusters") or {}).items()}
        except (OSError, ValueError, TypeError, AttributeError) as error:
            raise ExpectedIdleError(f"{self.path}: not a kpulse expected-idle file: "
                                    f"{' '.join(str(error).split())}") from None
        self._cache = (version, clusters)
        return clusters

    def marks(self, cluster: str) -> dict[str, Mark]:
        """Group id -> its mark, for ``cluster``."""
        return dict(self._load().get(cluster, {}))

    def set(self, cluster: str, group_id: str, mark: Mark | None) -> Mark | None:
        """Mark ``group_id`` of ``cluster`` (``mark``) or unmark it (``None``); the mark it had before."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock_path = self.path.with_name(f".{self.path.name}.lock")
        try:
            with open(lock_path, "a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                self._cache = None
                clusters = self._load()
                groups = clusters.setdefault(cluster, {})
                before = groups.pop(group_id, None)
                if mark is not None:
                    groups[group_id] = mark
                if not groups:
                    del clusters[cluster]
                data = {"clusters": {c: {g: asdict(m) for g, m in sorted(gs.items())}
                                     for c, gs in sorted(clusters.items())}}
                temporary = self.path.with_name(f".{self.path.name}.tmp")
                temporary.write_text(json.dumps(data, indent=1))
                os.replace(temporary, self.path)
                self._cache = None
                return before
        except OSError as error:
            raise ExpectedIdleError(f"{self.path}: cannot save the expected-idle marks: {error.strerror}") from None


def default_file() -> ExpectedIdleFile:
    """The marks file of this machine's state directory (``$KPULSE_STATE_DIR``)."""
    from kpulse import home

    return ExpectedIdleFile(home.state_dir() / FILE_NAME)
