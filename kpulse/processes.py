"""Background processes kpulse starts and must be able to stop by PID, and only those.

A PID file records the PID *and* the process's start time: a PID reused by an unrelated process
after a crash or reboot is never mistaken for ours, so ``stop`` can never signal a stranger.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil


@dataclass(frozen=True)
class ProcessRecord:
    """What a PID file holds."""

    pid: int
    create_time: float
    command: list[str]


def read_record(pid_file: Path) -> ProcessRecord | None:
    try:
        data = json.loads(pid_file.read_text())
        return ProcessRecord(pid=int(data["pid"]), create_time=float(data["create_time"]),
                             command=list(data["command"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def running_pid(pid_file: Path) -> int | None:
    """The PID recorded in ``pid_file`` when that very process is still alive, else None."""
    record = read_record(pid_file)
    if record is None:
        return None
    try:
        process = psutil.Process(record.pid)
        same = abs(process.create_time() - record.create_time) < 0.5
        alive = process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return None
    return record.pid if same and alive else None


def start(command: list[str], *, pid_file: Path, log_file: Path, cwd: Path | None = None,
          env: dict[str, str] | None = None) -> int:
    """Start ``command`` detached (own session), output appended to ``log_file``."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    pid_file.parent.mkdir(parents=True, exist_ok=True)
    with open(log_file, "ab") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   cwd=cwd, env={**os.environ, **(env or {})}, start_new_session=True)
    record = {"pid": process.pid, "create_time": psutil.Process(process.pid).create_time(),
              "command": command}
    pid_file.write_text(json.dumps(record))
    return process.pid


def stop(pid_file: Path, *, kill: bool = False, timeout: float = 30.0) -> bool:
    """Stop the recorded process: SIGTERM then, after ``timeout``, SIGKILL (at once when ``kill``).

    Returns True when a running process was stopped. The PID file is removed either way.
    """
    stopped = signal_process(pid_file, signal.SIGKILL if kill else signal.SIGTERM)
    if stopped is not None:
        wait_gone([stopped], timeout)
    pid_file.unlink(missing_ok=True)
    return stopped is not None


def stop_all(pid_files: list[Path], timeout: float = 30.0) -> list[int]:
    """SIGTERM every recorded process at once, wait for all (SIGKILL after ``timeout``); returns
    the PIDs that were running. The PID files are left for the caller to remove."""
    signalled = [p for p in (signal_process(f, signal.SIGTERM) for f in pid_files) if p is not None]
    wait_gone(signalled, timeout)
    return [p.pid for p in signalled]


def signal_process(pid_file: Path, signum: int) -> psutil.Process | None:
    pid = running_pid(pid_file)
    if pid is None:
        return None
    try:
        process = psutil.Process(pid)
        process.send_signal(signum)
        return process
    except psutil.Error:
        return None


def wait_gone(processes: list[psutil.Process], timeout: float) -> None:
    """Wait for processes to exit; SIGKILL the ones still alive after ``timeout``.

    A zombie counts as gone: when the parent is another process (a test run that started the
    node), only that parent can reap it, and waiting for the PID to vanish would wait in vain."""
    alive = _wait(processes, timeout)
    for process in alive:
        try:
            process.kill()
        except psutil.Error:
            pass
    _wait(alive, 10)


def _wait(processes: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    deadline = time.monotonic() + timeout
    alive = list(processes)
    while alive:
        alive = [p for p in alive if _alive(p)]
        if not alive or time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    return alive


def _alive(process: psutil.Process) -> bool:
    try:
        os.waitpid(process.pid, os.WNOHANG)  # reap it when it is our own child
    except (ChildProcessError, OSError):
        pass
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def wait_until(predicate: Callable[[], object], timeout: float, interval: float = 0.25) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
