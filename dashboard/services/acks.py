"""Acknowledgements and silences of alerts, with who and until when, persisted as one JSON file in
the lake (``<lake>/_dashboard/alert_acks.json``, written whole: temporary name, then rename), so
every dashboard instance reading that lake sees them. Names starting with ``_`` are not lake tables.

An *acknowledgement* says someone is on it; a *silence* also hides the alert from the firing list
until it ends. Both end at ``until``; the newest one of an alert wins.

One made on a group of alerts (every entity of a rule on a cluster, ``alerting/grouping.py``) has the
entity :data:`EVERY_ENTITY`: it covers each entity of the rule firing then or later (as an Alertmanager
silence matching ``alertname`` does) until it ends; an entity's own, when newer, wins over it."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Iterable, Mapping

from dashboard.services.sources import DashboardError, one_line
from kpulse.lake.store import resolve

STORE_DIR = "_dashboard"
STORE_FILE = "alert_acks.json"
KINDS = ("acknowledge", "silence")
EVERY_ENTITY = "*"
"""The entity of an acknowledgement or silence of a whole group: every entity of its rule."""
MAX_HOURS = 24 * 14


@dataclass(frozen=True)
class Ack:
    cluster: str
    rule: str
    entity: str
    kind: str
    """``acknowledge`` or ``silence``."""
    by: str
    until: float
    """Epoch seconds when it ends."""
    at: float
    """Epoch seconds when it was made."""
    note: str = ""


def new_ack(*, cluster: str, rule: str, entity: str, kind: str, by: str, hours: float, now: float,
            note: str = "") -> Ack:
    """Validate what the user typed: a name, a known kind, a duration of (0, 14 days]."""
    if kind not in KINDS:
        raise DashboardError(f"unknown action {kind!r}: {' or '.join(KINDS)}")
    if not by.strip():
        raise DashboardError("say who you are: the acknowledgement records a name")
    if not 0 < hours <= MAX_HOURS:
        raise DashboardError(f"duration must be more than 0 and at most {MAX_HOURS} hours, got {hours:g}")
    return Ack(cluster, rule, entity, kind, by.strip(), now + hours * 3600, now, note.strip())


def active(acks: Iterable[Ack], cluster: str, now: float) -> dict[tuple[str, str], Ack]:
    """(rule, entity) -> the newest acknowledgement or silence of ``cluster`` still running at ``now``."""
    current: dict[tuple[str, str], Ack] = {}
    for ack in sorted(acks, key=lambda a: a.at):
        if ack.cluster == cluster and ack.until > now:
            current[(ack.rule, ack.entity)] = ack
        elif ack.cluster == cluster:
            current.pop((ack.rule, ack.entity), None)
    return current


def effective(current: Mapping[tuple[str, str], Ack], rule: str, entity: str) -> Ack | None:
    """The acknowledgement or silence that applies to ``entity`` of ``rule`` (from :func:`active`):
    the newer of the entity's own and its rule's group-wide one."""
    own, group = current.get((rule, entity)), current.get((rule, EVERY_ENTITY))
    if own is None or group is None:
        return own or group
    return own if own.at >= group.at else group


class AckStore:
    def __init__(self, lake_path: str) -> None:
        self._lake_path = lake_path

    def _paths(self):
        fs, base = resolve(self._lake_path)
        return fs, f"{base}/{STORE_DIR}", f"{base}/{STORE_DIR}/{STORE_FILE}"

    def load(self) -> list[Ack]:
        try:
            fs, _, path = self._paths()
            with fs.open_input_stream(path) as stream:
                data = json.loads(stream.read() or b"[]")
        except FileNotFoundError:
            return []
        except OSError as error:
            if "not found" in str(error).lower() or "no such file" in str(error).lower():
                return []
            raise DashboardError(f"cannot read acknowledgements: {one_line(error)}") from None
        except ValueError as error:
            raise DashboardError(f"the acknowledgements file is not valid JSON: {one_line(error)}") from None
        try:
            return [Ack(**item) for item in data]
        except TypeError as error:
            raise DashboardError(f"the acknowledgements file has an unexpected entry: {one_line(error)}") from None

    def add(self, ack: Ack, now: float) -> None:
        """Append ``ack``, dropping entries that ended over a day ago."""
        kept = [a for a in self.load() if a.until > now - 86400] + [ack]
        try:
            fs, directory, path = self._paths()
            fs.create_dir(directory, recursive=True)
            temporary = f"{directory}/.{STORE_FILE}.tmp"
            with fs.open_output_stream(temporary) as out:
                out.write(json.dumps([asdict(a) for a in kept], indent=1).encode())
            fs.move(temporary, path)
        except OSError as error:
            raise DashboardError(f"cannot save the acknowledgement: {one_line(error)}") from None
