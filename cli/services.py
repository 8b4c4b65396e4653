"""kpulse's own long-running services started by `kpulse up` (the collectors now; the SLO job and
the UI as they land), each a background process with a PID file under ``<state dir>/services/``."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from kpulse import processes


@dataclass(frozen=True)
class Service:
    name: str
    args: tuple[str, ...]
    """Arguments of the kpulse CLI, e.g. ("collect",)."""
    where: str
    """What to tell the user: where to look."""


@dataclass(frozen=True)
class ServiceStatus:
    name: str
    running: bool
    pid: int | None
    log: str
    where: str


class Services:
    def __init__(self, state: Path, config_path: str | None = None):
        self.root = state / "services"
        self._config = ["--config", config_path] if config_path else []

    def _pid_file(self, name: str) -> Path:
        return self.root / f"{name}.pid.json"

    def start(self, services: list[Service]) -> list[ServiceStatus]:
        for service in services:
            if processes.running_pid(self._pid_file(service.name)) is None:
                command = [sys.executable, "-m", "cli.main", *self._config, *service.args]
                processes.start(command, pid_file=self._pid_file(service.name),
                                log_file=self.root / f"{service.name}.log")
        return self.status(services)

    def stop(self) -> list[int]:
        stopped = processes.stop_all(sorted(self.root.glob("*.pid.json")))
        for pid_file in self.root.glob("*.pid.json"):
            pid_file.unlink(missing_ok=True)
        return stopped

    def status(self, services: list[Service]) -> list[ServiceStatus]:
        return [ServiceStatus(s.name, (pid := processes.running_pid(self._pid_file(s.name))) is not None, pid,
                              str(self.root / f"{s.name}.log"), s.where) for s in services]
