"""A real Prometheus for the tests (Debian's ``prometheus`` package: ``/usr/bin/prometheus``, and
``promtool`` beside it; ``make test``'s setup installs both), and what the tests ask it.

:func:`running_prometheus` writes a ``prometheus.yml`` for the scrape jobs and rule files it is
given, starts the server on a free loopback port with a fresh TSDB in the test's directory and the
lifecycle API on, waits until it is ready and every target is up, and stops it at exit (SIGTERM,
SIGKILL after a grace). Its log is ``prometheus.log`` in that directory. It scrapes every 2 s and
evaluates rules every second, so a test waits seconds, not minutes, for samples and evaluations.

A missing binary fails the test that needs it (it does not skip): a green run without Prometheus
would prove nothing, and CI ran one for eight sessions with the promtool test skipped.

Also here, because the rule tests need it both statically and against the server:
:func:`metric_names`, the metric names a PromQL expression reads."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from collections.abc import Iterator, Sequence

import pytest
import yaml

from tests.support import answers_ok, free_port, stop_process

SCRAPE_SECONDS = 2
"""Scrape interval (and timeout) of the test server: with 1 s, a broker's exporter on this loaded
2-core machine missed the timeout now and then, and Prometheus marked the broker down (``up`` 0)."""
EVALUATION_SECONDS = 1
"""Rule evaluation interval of the test server."""


def binary(name: str) -> str:
    """The path of ``prometheus`` or ``promtool``; fails the test (no skip) when it is missing."""
    path = shutil.which(name) or (f"/usr/bin/{name}" if Path(f"/usr/bin/{name}").exists() else None)
    if path is None:
        pytest.fail(f"{name} is not installed: run `make test` (scripts/setup.sh installs Debian's prometheus), "
                    "or `apt-get install prometheus`", pytrace=False)
    return path


def static_job(job: str, targets: dict[str, dict[str, str]]) -> dict[str, Any]:
    """A scrape job over ``targets`` (``http://host:port/path`` -> the target's extra labels); every
    target of one job must share the metrics path."""
    paths = {urllib.parse.urlsplit(url).path or "/metrics" for url in targets}
    if len(paths) != 1:
        raise ValueError(f"targets of job {job} have different paths: {sorted(paths)}")
    return {"job_name": job, "metrics_path": paths.pop(),
            "static_configs": [{"targets": [urllib.parse.urlsplit(url).netloc], "labels": labels}
                               for url, labels in targets.items()]}


class PrometheusServer:
    """One running Prometheus (see the module doc); :attr:`url` is its base URL."""

    def __init__(self, directory: Path, jobs: list[dict[str, Any]], rule_files: list[Path]) -> None:
        self.directory = directory
        self.jobs = jobs
        self.rule_files = rule_files
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.config = directory / "prometheus.yml"
        self.config.write_text(yaml.safe_dump({
            "global": {"scrape_interval": f"{SCRAPE_SECONDS}s", "evaluation_interval": f"{EVALUATION_SECONDS}s",
                       "scrape_timeout": f"{SCRAPE_SECONDS}s"},
            "rule_files": [str(path) for path in rule_files],
            "scrape_configs": [*jobs, static_job("prometheus", {f"{self.url}/metrics": {}})]}))
        self.log = directory / "prometheus.log"
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 120) -> None:
        check = subprocess.run([binary("promtool"), "check", "config", str(self.config)], capture_output=True,
                               text=True)
        assert check.returncode == 0, check.stdout + check.stderr
        with self.log.open("w") as log:
            self.process = subprocess.Popen(
                [binary("prometheus"), f"--config.file={self.config}",
                 f"--storage.tsdb.path={self.directory / 'tsdb'}", f"--web.listen-address=127.0.0.1:{self.port}",
                 "--web.enable-lifecycle"], stdout=log, stderr=subprocess.STDOUT)
        self._wait(self._ready, timeout, "Prometheus ready (/-/ready)")

    def stop(self, grace: float = 20) -> None:
        if self.process is not None:
            stop_process(self.process, grace)

    # --- what the tests ask --------------------------------------------------------------------------

    def get(self, path: str, **params: str) -> Any:
        """The ``data`` of a successful API answer (``/api/v1/...``); AssertionError otherwise."""
        url = f"{self.url}{path}" + (f"?{urllib.parse.urlencode(params)}" if params else "")
        try:
            body = json.loads(urllib.request.urlopen(url, timeout=10).read())
        except urllib.error.HTTPError as error:
            body = json.loads(error.read() or b"{}")
        assert body.get("status") == "success", f"{path} {params}: {body}"
        return body["data"]

    def query(self, promql: str) -> list[dict[str, Any]]:
        """An instant query's result (``[{"metric": {...}, "value": [t, "v"]}, ...]``)."""
        return self.get("/api/v1/query", query=promql)["result"]

    def targets(self) -> list[dict[str, Any]]:
        return self.get("/api/v1/targets", state="active")["activeTargets"]

    def rule_groups(self) -> list[dict[str, Any]]:
        return self.get("/api/v1/rules")["groups"]

    def alerts(self) -> list[dict[str, Any]]:
        """Pending and firing alerts (``labels``, ``state``, ``activeAt``...)."""
        return self.get("/api/v1/alerts")["alerts"]

    def wait_targets_up(self, timeout: float = 180) -> list[dict[str, Any]]:
        """Until every configured target (the server's own too) has been scraped and is up."""
        expected = sum(len(c["targets"]) for job in self.jobs for c in job["static_configs"]) + 1

        def all_up():
            targets = self.targets()
            return len(targets) == expected and all(t["health"] == "up" for t in targets) and targets
        return self._wait(all_up, timeout, f"all {expected} targets up (/api/v1/targets)")

    def wait_for(self, predicate, timeout: float, what: str):
        """``predicate()``'s first true value; AssertionError naming ``what`` (and the end of the
        server's log when it died) after ``timeout`` seconds."""
        return self._wait(predicate, timeout, what)

    # --- internals -----------------------------------------------------------------------------------

    def _ready(self) -> bool:
        return answers_ok(f"{self.url}/-/ready", timeout=5)

    def _wait(self, predicate, timeout: float, what: str):
        deadline = time.monotonic() + timeout
        while True:
            if self.process is not None and self.process.poll() is not None:
                raise AssertionError(f"Prometheus exited ({self.process.returncode}) while waiting for {what}:\n"
                                     + self.log.read_text()[-3000:])
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} not reached within {timeout:g} s")
            time.sleep(0.5)


@contextmanager
def running_prometheus(directory: Path, jobs: list[dict[str, Any]], rule_files: Sequence[Path] = (),
                       timeout: float = 180) -> Iterator[PrometheusServer]:
    """A started :class:`PrometheusServer` with every target up; stopped at exit."""
    directory.mkdir(parents=True, exist_ok=True)
    server = PrometheusServer(directory, jobs, list(rule_files))
    try:
        server.start(timeout)
        server.wait_targets_up(timeout)
        yield server
    finally:
        server.stop()


# --- PromQL: the metric names an expression reads --------------------------------------------------------

PROMQL_WORDS = {"sum", "max", "min", "avg", "count", "by", "without", "and", "or", "unless", "rate", "irate",
                "increase", "absent", "on", "ignoring", "group_left", "group_right", "bool", "offset", "clamp_max",
                "clamp_min", "avg_over_time", "max_over_time", "min_over_time", "count_over_time", "time",
                "timestamp", "abs", "vector", "scalar"}


def metric_names(expr: str) -> set[str]:
    """The metric names ``expr`` selects (label values, label lists, ranges and numbers left out)."""
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', expr)
    text = re.sub(r"\{[^}]*\}|\[[^\]]*\]", " ", text)
    text = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", " ", text)
    text = re.sub(r"(?<![\w:])\d+(\.\d+)?(e\d+)?", " ", text)
    return set(re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", text)) - PROMQL_WORDS
