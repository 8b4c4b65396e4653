"""Acknowledgements and silences of alerts, with who and until when, persisted as one JSON file in
the lake (``<lake>/_dashboard/alert_acks.json``, written whole: temporary name, then rename), so
every dashboard instance reading that lake sees them. Names starting with ``_`` are not lake tables.

An *acknowledgement* says someone is on it; a *silence* also hides the alert from the firing list
until it ends. Both end at ``until``; the newest one of an alert wins.

One made on a group of alerts (every entity of a rule on a cluster, ``alerting/grouping.py``) has the
entity :data:`EVERY_ENTITY`: it covers each entity of the rule firing then or later (as an Alertmanager
silence matching ``alertname`` does) until it ends; an entity's own, when newer, wins over it.

With Alertmanager configured (``alerting.alertmanager``), each one also becomes an Alertmanager silence
(:class:`Silencer`; matchers on ``alertname``, ``cluster`` and ``entity``, ``alerting/alertmanager.py``),
an acknowledgement too: Alertmanager has no acknowledgement, and a silence is what stops its repeated
notifications while someone is on it (as karma's "ack" button does). Its id is stored beside kpulse's
record (:attr:`Ack.silence_id`); ending it early (:func:`end_acks`) expires the silence. When
Alertmanager cannot be reached, kpulse's own record is kept all the same and the caller gets one line
to show."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from collections.abc import Iterable, Mapping

from alerting.alertmanager import EVERY_ENTITY as ALERTMANAGER_EVERY_ENTITY, silence_payload
from alerting.am_client import AlertmanagerClient, AlertmanagerError
from dashboard.services.sources import DashboardError, one_line
from kpulse.config.model import AlertmanagerConfig
from kpulse.lake.store import resolve, write_bytes_whole

STORE_DIR = "_dashboard"
STORE_FILE = "alert_acks.json"
KINDS = ("acknowledge", "silence")
EVERY_ENTITY = ALERTMANAGER_EVERY_ENTITY
"""The entity of an acknowledgement or silence of a whole group: every entity of its rule (its
Alertmanager silence has no ``entity`` matcher)."""
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
    silence_id: str | None = None
    """The Alertmanager silence made for it; ``None`` when none was (none configured, or it failed)."""
    silence_url: str | None = None
    """The Alertmanager that holds that silence."""


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
        return fs, f"{base}/{STORE_DIR}/{STORE_FILE}"

    def load(self) -> list[Ack]:
        try:
            fs, path = self._paths()
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
        self._write([a for a in self.load() if a.until > now - 86400] + [ack])

    def end(self, cluster: str, rule: str, entity: str, now: float) -> list[Ack]:
        """End now every acknowledgement or silence of ``entity`` of ``rule`` still running (its
        ``until`` becomes ``now``); the ones ended."""
        acks = self.load()
        ended = [a for a in acks if (a.cluster, a.rule, a.entity) == (cluster, rule, entity) and a.until > now]
        if ended:
            self._write([replace(a, until=now) if a in ended else a for a in acks])
        return ended

    def _write(self, kept: list[Ack]) -> None:
        try:
            fs, path = self._paths()
            write_bytes_whole(fs, path, json.dumps([asdict(a) for a in kept], indent=1).encode())
        except OSError as error:
            raise DashboardError(f"cannot save the acknowledgement: {one_line(error)}") from None


PAGE_RETRIES = 1
"""Retries of a silence request at most: someone waits on the page (the collection loop's sends use the
configured ``retries``)."""


class Silencer:
    """Alertmanager silences for the acknowledgements and silences of the Alerts page (see the module doc)."""

    def __init__(self, settings: AlertmanagerConfig, *, dashboard_url: str | None = None,
                 client_factory=AlertmanagerClient) -> None:
        self._clients = {url: client_factory(url, timeout=settings.timeout_seconds,
                                             retries=min(settings.retries, PAGE_RETRIES)) for url in settings.urls}
        self._dashboard_url = dashboard_url

    def silence(self, ack: Ack) -> Ack:
        """``ack`` with the id of the silence made for it on the first Alertmanager that accepts it (an HA
        cluster shares silences); DashboardError (one line) when none does."""
        payload = silence_payload(cluster=ack.cluster, rule=ack.rule, entity=ack.entity, kind=ack.kind, by=ack.by,
                                  note=ack.note, starts=ack.at, ends=ack.until, dashboard_url=self._dashboard_url)
        errors = []
        for url, client in self._clients.items():
            try:
                return replace(ack, silence_id=client.create_silence(payload), silence_url=url)
            except AlertmanagerError as error:
                errors.append(str(error))
        raise DashboardError("could not make the Alertmanager silence: " + "; ".join(errors))

    def expire(self, ack: Ack) -> None:
        """Expire the silence made for ``ack`` (none made: nothing to do); DashboardError (one line)."""
        if ack.silence_id is None:
            return
        client = self._clients.get(ack.silence_url or "") or AlertmanagerClient(ack.silence_url or "")
        try:
            client.expire_silence(ack.silence_id)
        except AlertmanagerError as error:
            raise DashboardError(f"could not expire the Alertmanager silence {ack.silence_id}: {error}") from None


def save_ack(store: AckStore, ack: Ack, now: float, silencer: Silencer | None) -> str | None:
    """Record ``ack``, with its Alertmanager silence when ``silencer`` is given; the line to show when
    that silence could not be made (kpulse's own record is kept all the same), else ``None``."""
    message = None
    if silencer is not None:
        try:
            ack = silencer.silence(ack)
        except DashboardError as error:
            message = f"{error}; kpulse's own {ack.kind} is recorded"
    try:
        store.add(ack, now)
    except DashboardError:
        if ack.silence_id is not None and silencer is not None:  # not recorded: leave no silence nobody can end
            try:
                silencer.expire(ack)
            except DashboardError:
                pass
        raise
    return message


def end_acks(store: AckStore, cluster: str, rule: str, entity: str, now: float,
             silencer: Silencer | None) -> tuple[list[Ack], str | None]:
    """End the running acknowledgements and silences of ``entity`` of ``rule`` now and expire their
    Alertmanager silences; (the ones ended, the line to show when a silence could not be expired)."""
    ended = store.end(cluster, rule, entity, now)
    errors = []
    for ack in ended:
        if ack.silence_id is None:
            continue
        if silencer is None:
            errors.append(f"the Alertmanager silence {ack.silence_id} at {ack.silence_url} was left to end by "
                          "itself: no Alertmanager is configured now")
            continue
        try:
            silencer.expire(ack)
        except DashboardError as error:
            errors.append(str(error))
    return ended, "; ".join(errors) or None
