"""Alert delivery to Alertmanager, off the collection cycle's critical path.

The collection loop hands every evaluation to :meth:`AlertDelivery.observe`, which only updates the
book (``alerting/alertmanager.py``: what each Alertmanager is due) under a lock and wakes the
workers, one thread per Alertmanager; each sends what is due to its Alertmanager
(``alerting/am_client.py``: timeouts, retries with backoff) and writes down what was accepted. So an Alertmanager that is slow or down
never makes a cycle longer: the cycle pays for the bookkeeping only.

What the loop shows of it: :meth:`AlertDelivery.status` is the snapshot's ``alert_delivery`` section
(``kpulse/snapshot.py``), one entry per Alertmanager with the alerts of that cluster sent, failed and
still pending, and the last error; the exporter turns it into ``kpulse_alertmanager_*`` series and
the Alerts page shows it. A failed send is logged as one line, counted, and its alerts stay due for
the next attempt (a resend interval later): nothing is lost while Alertmanager is down, unless it
stays down longer than a resolved alert is kept (:data:`alerting.alertmanager.RESOLVED_RETENTION_SECONDS`).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, replace
from collections.abc import Callable, Mapping

from alerting.alertmanager import DeliveryBook
from alerting.am_client import AlertmanagerClient, AlertmanagerError
from alerting.model import EvaluationResult
from kpulse.config.model import AlertmanagerConfig, redact_url
from kpulse.snapshot import AlertmanagerDelivery

LOG = logging.getLogger("kpulse.alerting")
BATCH_SIZE = 64
"""Alerts per POST, as Prometheus's notifier batches them."""
CLOSE_SECONDS = 5.0
"""How long :meth:`AlertDelivery.close` waits for a send under way."""


@dataclass
class _Counts:
    sent: int = 0
    failed: int = 0


@dataclass
class _Health:
    """What the last attempts to one Alertmanager gave."""

    up: bool | None = None
    last_sent_at: float | None = None
    last_error: str | None = None
    last_error_at: float | None = None


class AlertDelivery:
    """Sends the alerts of every cluster to each configured Alertmanager (see the module doc). The
    constructor connects to nothing; :meth:`start` starts the workers, :meth:`close` stops them."""

    def __init__(self, settings: AlertmanagerConfig, *, dashboard_url: str, evaluation_interval: float,
                 bootstraps: Mapping[str, str] | None = None, clock: Callable[[], float] = time.time,
                 client_factory: Callable[..., AlertmanagerClient] = AlertmanagerClient) -> None:
        if not settings.enabled:
            raise ValueError("no Alertmanager URL configured")
        self.settings = settings
        self._clock = clock
        self._bootstraps = dict(bootstraps or {})
        self._clients = [client_factory(url, timeout=settings.timeout_seconds, retries=settings.retries)
                         for url in settings.urls]
        self._book = DeliveryBook(settings.urls, resend_interval=settings.resend_interval_seconds,
                                  evaluation_interval=evaluation_interval, dashboard_url=dashboard_url)
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, str], _Counts] = {}
        self._health = {url: _Health() for url in settings.urls}
        self._stop = threading.Event()
        self._workers: list[tuple[threading.Thread, threading.Event]] = []
        """One (thread, wake event) per Alertmanager, once started."""

    def observe(self, cluster: str, evaluation: EvaluationResult, now: float) -> None:
        """Take in one evaluation of ``cluster`` (cheap: no I/O) and wake the workers."""
        with self._lock:
            self._book.observe(cluster, evaluation.firing, evaluation.events, now,
                               bootstrap=self._bootstraps.get(cluster))
        for _, wake in self._workers:
            wake.set()

    def deliver(self) -> None:
        """Send what is due to every Alertmanager, one after the other, in the calling thread (what
        each worker does for its own when woken; tests call it directly)."""
        for client in self._clients:
            self._deliver_to(client)

    def _deliver_to(self, client: AlertmanagerClient) -> None:
        url = client.url
        now = self._clock()
        with self._lock:  # copies: the payloads are built outside the lock, which the cycle takes
            due = [replace(notice, accepted={}) for notice in self._book.due(url, now)]
        payloads = [(n.key, n.payload(now, self._book.valid_for, self._book.dashboard_url)) for n in due]
        batches = [payloads[i:i + BATCH_SIZE] for i in range(0, len(payloads), BATCH_SIZE)]
        for index, batch in enumerate(batches):
            try:
                client.post_alerts([payload for _, payload in batch])
            except AlertmanagerError as error:
                left = [key for later in batches[index:] for key, _ in later]
                self._failed(url, left, str(error))
                return
            with self._lock:
                self._book.accepted(url, [key for key, _ in batch], now)
                for key, _ in batch:
                    self._count(key[0], url).sent += 1
                health = self._health[url]
                health.up, health.last_sent_at = True, self._clock()

    def _failed(self, url: str, keys: list, error: str) -> None:
        at = self._clock()
        with self._lock:
            self._book.failed(url, at)
            for key in keys:
                self._count(key[0], url).failed += 1
            health = self._health[url]
            health.up, health.last_error, health.last_error_at = False, error, at
        LOG.warning("alert delivery failed, %d alert(s) kept for the next attempt in %gs: %s", len(keys),
                    self.settings.resend_interval_seconds, error)

    def _count(self, cluster: str, url: str) -> _Counts:
        return self._counts.setdefault((cluster, url), _Counts())

    def status(self, cluster: str) -> list[AlertmanagerDelivery]:
        """The snapshot's ``alert_delivery`` section of ``cluster`` (``kpulse/snapshot.py``)."""
        with self._lock:
            return [{"alertmanager": redact_url(url), "up": health.up,
                     "sent_total": self._count(cluster, url).sent, "failed_total": self._count(cluster, url).failed,
                     "pending": self._book.pending(url, cluster), "last_sent_at": health.last_sent_at,
                     "last_error": health.last_error, "last_error_at": health.last_error_at,
                     "next_attempt_at": self._book.retry_at(url)}
                    for url, health in self._health.items()]

    def start(self) -> None:
        """Start the workers (once): one thread per Alertmanager, so one that hangs does not hold
        the others (as Prometheus sends to each Alertmanager on its own)."""
        if self._workers:
            return
        for client in self._clients:
            wake = threading.Event()
            worker = threading.Thread(target=self._run, args=(client, wake), daemon=True,
                                      name=f"kpulse-alert-delivery-{len(self._workers)}")
            self._workers.append((worker, wake))
            worker.start()

    def _run(self, client: AlertmanagerClient, wake: threading.Event) -> None:
        while not self._stop.is_set():
            wake.wait(timeout=self.settings.resend_interval_seconds)
            wake.clear()
            if self._stop.is_set():
                return
            try:
                self._deliver_to(client)
            except Exception:  # noqa: BLE001 - a bug must not end delivery for good; the traceback in the log
                LOG.exception("alert delivery round failed")

    def close(self, timeout: float = CLOSE_SECONDS) -> None:
        """Stop the workers, waiting up to ``timeout`` in all for sends under way."""
        self._stop.set()
        for _, wake in self._workers:
            wake.set()
        deadline = time.monotonic() + timeout
        for worker, _ in self._workers:
            worker.join(max(0.0, deadline - time.monotonic()))
        self._workers = []


def configured_delivery(config) -> AlertDelivery | None:
    """The delivery ``config`` asks for (``alerting.alertmanager``), or ``None``."""
    settings = config.alerting.alertmanager
    if not settings.enabled:
        return None
    return AlertDelivery(settings, dashboard_url=config.dashboard.external_url,
                         evaluation_interval=config.intervals.collect_seconds,
                         bootstraps={c.name: c.bootstrap_servers.split(",")[0] for c in config.clusters})
