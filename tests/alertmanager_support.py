"""Helpers of the alert delivery tests: a real Alertmanager (the Debian package's binary) on loopback,
routing to a webhook receiver the test runs, and small HTTP servers that answer as told."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from collections.abc import Iterator
from typing import Any

import yaml

from tests.support import answers_ok, free_port, stop_process, wait_for

ALERTMANAGER = "/usr/bin/prometheus-alertmanager"


def alertmanager_installed() -> bool:
    return shutil.which(ALERTMANAGER) is not None


class Recorder:
    """An HTTP server on loopback that records every request (method, path, JSON body) and answers
    each with the next status of ``statuses`` (the last one repeated), optionally held until
    :attr:`release` is set. Stop with :meth:`close`."""

    def __init__(self, statuses: tuple[int, ...] = (200,), *, hold: bool = False) -> None:
        self.requests: list[tuple[str, str, Any]] = []
        """(method, path, the JSON body as ``json.loads`` reads it, or None)."""
        self.statuses = list(statuses)
        self.arrived = threading.Event()
        self.release = threading.Event()
        if not hold:
            self.release.set()
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                recorder.requests.append((self.command, self.path, json.loads(body) if body else None))
                recorder.arrived.set()
                recorder.release.wait(60)
                status = recorder.statuses.pop(0) if len(recorder.statuses) > 1 else recorder.statuses[0]
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b"{}" if status < 300 else b'"boom"')

            do_POST = do_GET = do_DELETE = _answer

            def log_message(self, format, *args) -> None:  # noqa: A002
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


class Webhook(Recorder):
    """Alertmanager's webhook receiver: :attr:`notifications` are the bodies it POSTed."""

    @property
    def notifications(self) -> list[dict]:
        return [body for method, _, body in list(self.requests) if method == "POST"]

    def alerts(self, status: str | None = None, alertname: str | None = None) -> list[dict]:
        """Every alert of every notification, optionally of one status and one alertname."""
        return [alert for body in self.notifications for alert in body["alerts"]
                if (status is None or alert["status"] == status)
                and (alertname is None or alert["labels"].get("alertname") == alertname)]


def alertmanager_config(webhook_url: str) -> dict:
    """Route everything to ``webhook_url`` at once: group_wait and group_interval 1 s, repeat 4 h;
    grouped by alertname and cluster (kpulse's alerts carry both); resolved ones sent too."""
    return {"route": {"receiver": "test", "group_by": ["alertname", "cluster"], "group_wait": "1s",
                      "group_interval": "1s", "repeat_interval": "4h"},
            "receivers": [{"name": "test", "webhook_configs": [{"url": webhook_url, "send_resolved": True}]}]}


@contextmanager
def running_alertmanager(directory: Path, webhook_url: str) -> Iterator[str]:
    """A real Alertmanager on a free loopback port, its data under ``directory``, gossip off; its
    base URL. Stopped (and waited for) at exit."""
    directory.mkdir(parents=True, exist_ok=True)
    config = directory / "alertmanager.yml"
    config.write_text(yaml.safe_dump(alertmanager_config(webhook_url)))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = (directory / "alertmanager.log").open("wb")
    process = subprocess.Popen([ALERTMANAGER, f"--config.file={config}", f"--storage.path={directory / 'data'}",
                                f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address="],
                               stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: process.poll() is not None or answers_ok(f"{url}/-/ready"), timeout=60,
                 what="Alertmanager ready")
        assert process.poll() is None, (directory / "alertmanager.log").read_text()
        yield url
    finally:
        stop_process(process, grace=15)
        log.close()
