"""The Java side of kpulse, fetched from Maven Central and compiled once into the cache.

Layout under ``cache_dir()/kafka-<version>/``:

- ``lib/``: every jar of the POM (Kafka broker, tools, Streams, log4j2) except the agent;
- ``agent/jmx_prometheus_javaagent.jar``: the Prometheus JMX exporter agent;
- ``demo-classes-<sources fingerprint>/``: the compiled demo Java applications (the Streams app
  and the share consumer), one directory per version of their sources, so worktrees with other
  sources share the cache without recompiling each other's classes away;
- ``.complete``: a fingerprint of the POM; a mismatch means fetch again.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kpulse.errors import KpulseError
from kpulse.home import cache_dir
from kpulse.progress import SILENT, Progress

JAVA_DIR = Path(__file__).resolve().parent / "java"
POM = JAVA_DIR / "pom.xml"
STREAMS_DEMO_SOURCES = sorted((JAVA_DIR / "streams-demo").rglob("*.java"))


class SetupError(KpulseError):
    """Setup of the Java runtime failed (Maven, javac or Java missing)."""


def kafka_version() -> str:
    match = re.search(r"<kafka.version>([^<]+)</kafka.version>", POM.read_text())
    assert match, "pom.xml names no kafka.version"
    return match.group(1)


@dataclass(frozen=True)
class JavaRuntime:
    """Paths of a ready runtime."""

    root: Path

    @property
    def lib_dir(self) -> Path:
        return self.root / "lib"

    @property
    def classpath(self) -> str:
        return str(self.lib_dir / "*")

    @property
    def agent_jar(self) -> Path:
        return self.root / "agent" / "jmx_prometheus_javaagent.jar"

    @property
    def streams_demo_classes(self) -> Path:
        """The compiled demo Java applications (``kpulse.demo.StreamsDemo``, ``kpulse.demo.ShareDemo``)."""
        return self.root / f"demo-classes-{sources_fingerprint()}"

    def jars(self) -> list[Path]:
        return sorted(self.lib_dir.glob("*.jar"))


def fingerprint() -> str:
    """Of the POM: what ``lib/`` and ``agent/`` were fetched for."""
    return hashlib.sha256(POM.read_bytes()).hexdigest()[:16]


def sources_fingerprint() -> str:
    digest = hashlib.sha256()
    for source in STREAMS_DEMO_SOURCES:
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()[:16]


def runtime_root() -> Path:
    return cache_dir() / f"kafka-{kafka_version()}"


def is_ready() -> bool:
    marker = runtime_root() / ".complete"
    return (marker.exists() and marker.read_text().strip() == fingerprint()
            and JavaRuntime(runtime_root()).streams_demo_classes.is_dir())


def ensure_runtime(progress: Progress = SILENT) -> JavaRuntime:
    """Fetch and compile what is missing; a no-op when the cache is current."""
    runtime = JavaRuntime(runtime_root())
    if is_ready():
        return runtime
    for tool in ("java", "javac", "mvn"):
        if shutil.which(tool) is None:
            raise SetupError(f"{tool} not found on PATH: kpulse needs a JDK 17+ and Maven to set up")
    marker = runtime.root / ".complete"
    if not (marker.exists() and marker.read_text().strip() == fingerprint()):
        _fetch(runtime, progress)
    if not runtime.streams_demo_classes.is_dir():
        _compile(runtime, progress)
    return runtime


def _fetch(runtime: JavaRuntime, progress: Progress) -> None:
    runtime.root.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=runtime.root.name + ".staging-", dir=runtime.root.parent))
    try:
        (staging / "agent").mkdir()
        with progress.step(f"fetching Kafka {kafka_version()} and the JMX exporter from Maven Central"):
            _run(["mvn", "-B", "-q", "-f", str(POM), "dependency:copy-dependencies",
                  f"-DoutputDirectory={staging / 'lib'}"], "Maven fetch")
            agents = list((staging / "lib").glob("jmx_prometheus_javaagent-*.jar"))
            if len(agents) != 1:
                raise SetupError("Maven fetched no jmx_prometheus_javaagent jar")
            agents[0].rename(staging / "agent" / "jmx_prometheus_javaagent.jar")
        (staging / ".complete").write_text(fingerprint() + "\n")
        shutil.rmtree(runtime.root, ignore_errors=True)
        staging.rename(runtime.root)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _compile(runtime: JavaRuntime, progress: Progress) -> None:
    """Compile into a directory of its own, then move it in place: another process compiling the
    same sources at the same time does no harm (the first one in wins)."""
    staging = Path(tempfile.mkdtemp(prefix=".demo-classes-", dir=runtime.root))
    try:
        with progress.step("compiling the demo Java applications (Kafka Streams app, share consumer)"):
            _run(["javac", "-nowarn", "-d", str(staging), "-cp", runtime.classpath,
                  *map(str, STREAMS_DEMO_SOURCES)], "javac")
        try:
            staging.rename(runtime.streams_demo_classes)
        except OSError:
            if not runtime.streams_demo_classes.is_dir():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _run(command: list[str], what: str) -> None:
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        tail = (result.stdout + result.stderr).strip().splitlines()[-15:]
        raise SetupError(f"{what} failed (exit {result.returncode}):\n" + "\n".join(tail))


def java_command(runtime: JavaRuntime, main_class: str, args: list[str], *,
                 heap: str = "256m", fast_start: bool = True, log_config: str = "log4j2-tools.properties",
                 agent: tuple[int, Path] | None = None, extra_classpath: Sequence[Path] = (),
                 system_properties: dict[str, str] | None = None) -> list[str]:
    """The ``java`` command line for a main class on the runtime's classpath. ``fast_start``: only
    the quick JIT tier (a tool or a demo node is ready sooner; hot code then runs slower)."""
    java = os.environ.get("KPULSE_JAVA", "java")
    command = [java, f"-Xmx{heap}", "-XX:+UseSerialGC", *(["-XX:TieredStopAtLevel=1"] if fast_start else []),
               "-Djava.awt.headless=true", f"-Dlog4j2.configurationFile={JAVA_DIR / log_config}"]
    if agent is not None:
        port, rules = agent
        command.append(f"-javaagent:{runtime.agent_jar}=127.0.0.1:{port}:{rules}")
    for key, value in (system_properties or {}).items():
        command.append(f"-D{key}={value}")
    classpath = [str(p) for p in extra_classpath] + [runtime.classpath]
    return command + ["-cp", os.pathsep.join(classpath), main_class, *args]
