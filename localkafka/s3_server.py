"""A real S3 server on loopback for the lake's tests and local trials: s3proxy (Apache-2.0, Java,
https://github.com/gaul/s3proxy) with its filesystem backend.

The jar (``s3proxy-<version>-jar-with-dependencies.jar``, 55 MB) is fetched once from Maven Central
into ``cache_dir()/s3proxy-<version>/``, like the Kafka runtime (``localkafka/runtime.py``): Maven
checks it against Central's checksum (``-C``, strict), then its SHA-256 is compared with
:data:`JAR_SHA256`, pinned here; a mismatch fetches nothing into the cache. ``scripts/setup.sh``
fetches it for ``make test`` (``python -m localkafka.s3_server fetch``).

:class:`S3Server` runs one s3proxy: one identity (AWS signature v2 or v4), a data directory of its
own, listening on ``127.0.0.1:<port>``. Buckets are created through the S3 API
(:meth:`S3Server.create_bucket`).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from kpulse.errors import KpulseError
from kpulse.home import cache_dir
from kpulse.progress import SILENT, Progress

S3PROXY_VERSION = "4.1.0"
ARTIFACT = f"org.gaul:s3proxy:{S3PROXY_VERSION}:jar:jar-with-dependencies"
JAR_SHA256 = "a4d025969aaf796616ed4b1e2491d87d455ce84bb28cb9db086b2e6aaa68b48d"
"""Of ``s3proxy-4.1.0-jar-with-dependencies.jar`` on Maven Central."""
REGION = "us-east-1"


class S3ServerError(KpulseError):
    """The S3 server could not be fetched or started."""


def jar_path() -> Path:
    return cache_dir() / f"s3proxy-{S3PROXY_VERSION}" / "s3proxy.jar"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as source:
        for block in iter(lambda: source.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def is_ready() -> bool:
    return jar_path().is_file() and _sha256(jar_path()) == JAR_SHA256


def ensure_s3proxy(progress: Progress = SILENT) -> Path:
    """The jar, fetched from Maven Central when the cache does not hold the pinned one."""
    jar = jar_path()
    if is_ready():
        return jar
    if shutil.which("mvn") is None:
        raise S3ServerError("mvn not found on PATH: fetching s3proxy needs Maven")
    jar.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".s3proxy-staging-", dir=jar.parent))
    try:
        with progress.step(f"fetching s3proxy {S3PROXY_VERSION} from Maven Central"):
            result = subprocess.run(["mvn", "-B", "-q", "-C", "dependency:copy", f"-Dartifact={ARTIFACT}",
                                     f"-DoutputDirectory={staging}"], capture_output=True, text=True)
            if result.returncode != 0:
                tail = (result.stdout + result.stderr).strip().splitlines()[-10:]
                raise S3ServerError(f"Maven fetch of {ARTIFACT} failed (exit {result.returncode}):\n" + "\n".join(tail))
            fetched = staging / f"s3proxy-{S3PROXY_VERSION}-jar-with-dependencies.jar"
            found = _sha256(fetched) if fetched.is_file() else "nothing"
            if found != JAR_SHA256:
                raise S3ServerError(f"{ARTIFACT}: SHA-256 {found}, expected {JAR_SHA256}: not installed")
            os.replace(fetched, jar)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return jar


@dataclass
class S3Server:
    """One s3proxy on ``127.0.0.1:port`` storing its buckets under ``data_dir``."""

    data_dir: Path
    port: int
    access_key: str
    secret_key: str
    process: subprocess.Popen | None = field(default=None, repr=False)

    @property
    def endpoint(self) -> str:
        """``http://127.0.0.1:<port>``: what ``lake.s3.endpoint`` or ``AWS_ENDPOINT_URL`` is set to."""
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60) -> None:
        """Start it (the jar fetched if missing) and wait until it accepts connections."""
        jar = ensure_s3proxy()
        (self.data_dir / "buckets").mkdir(parents=True, exist_ok=True)
        properties = self.data_dir / "s3proxy.conf"
        properties.write_text("\n".join([
            f"s3proxy.endpoint={self.endpoint}", "s3proxy.authorization=aws-v2-or-v4",
            f"s3proxy.identity={self.access_key}", f"s3proxy.credential={self.secret_key}",
            "jclouds.provider=filesystem", f"jclouds.filesystem.basedir={self.data_dir / 'buckets'}", ""]))
        properties.chmod(0o600)
        java = os.environ.get("KPULSE_JAVA", "java")
        with (self.data_dir / "s3proxy.log").open("a") as log:
            self.process = subprocess.Popen([java, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                                             "-jar", str(jar), "--properties", str(properties)],
                                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while not self.accepts():
            if self.process.poll() is not None:
                raise S3ServerError(f"s3proxy exited ({self.process.returncode}); see {self.data_dir / 's3proxy.log'}")
            if time.monotonic() > deadline:
                self.stop()
                raise S3ServerError(f"s3proxy did not listen on {self.endpoint} within {timeout:.0f} s")
            time.sleep(0.1)

    def accepts(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return True
        except OSError:
            return False

    def stop(self, grace: float = 10) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def filesystem(self, *, secret_key: str | None = None):
        """A pyarrow S3FileSystem on this server (path-style addressing), as this identity."""
        import pyarrow.fs as pafs

        return pafs.S3FileSystem(access_key=self.access_key, secret_key=secret_key or self.secret_key,
                                 endpoint_override=f"127.0.0.1:{self.port}", scheme="http", region=REGION,
                                 allow_bucket_creation=True, connect_timeout=2, request_timeout=5)

    def create_bucket(self, name: str) -> None:
        self.filesystem().create_dir(name)


def main(argv: list[str]) -> int:
    if argv != ["fetch"]:
        print("usage: python -m localkafka.s3_server fetch", file=sys.stderr)
        return 2
    try:
        print(ensure_s3proxy())
    except S3ServerError as error:
        print(f"kpulse setup: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
