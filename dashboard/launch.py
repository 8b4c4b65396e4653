"""``kpulse dashboard``: run ``streamlit run dashboard/app.py`` on the config's dashboard host and
port, headless, telemetry off, no file watching, no traceback in the browser (as a backstop:
pages already turn errors into one line), and no full garbage collection after every script run
(``runner.postScriptGC``: with a large snapshot and its tables cached, millions of objects, a full
collection after each run holds the interpreter while the browser waits, docs/performance.md;
Python's own collections still run)."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

from kpulse.errors import KpulseError

APP = Path(__file__).resolve().parent / "app.py"


class DashboardStartError(KpulseError):
    """The dashboard cannot start (port taken, bad address)."""


def streamlit_command(host: str, port: int) -> list[str]:
    return [sys.executable, "-m", "streamlit", "run", str(APP), "--server.headless=true",
            f"--server.address={host}", f"--server.port={port}", "--browser.gatherUsageStats=false",
            "--server.fileWatcherType=none", "--client.showErrorDetails=none", "--client.toolbarMode=minimal",
            "--global.developmentMode=false", "--runner.postScriptGC=false"]


def check_port(host: str, port: int) -> None:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as error:
            raise DashboardStartError(f"cannot serve the dashboard on {host}:{port}: {error.strerror or error} "
                                      f"(set dashboard.port in the config, or --port)") from None


def dashboard_command(config, config_path: str | None, port: int | None = None) -> None:
    """Check the port of ``config`` (a :class:`KpulseConfig`, read from ``config_path``, which the
    dashboard process reads again), then replace this process with Streamlit."""
    host, port = config.dashboard.host, port or config.dashboard.port
    check_port(host, port)
    environ = dict(os.environ)
    if config_path:
        environ["KPULSE_CONFIG"] = str(Path(config_path).resolve())
    print(f"kpulse dashboard: http://{host}:{port} (config: {config.source})", flush=True)
    command = streamlit_command(host, port)
    os.execve(command[0], command, environ)
