"""A real OpenID Connect issuer on loopback, for the secured cluster's OAUTHBEARER identity:
Spring Authorization Server (Maven Central), configured by properties alone. It does the client
credentials grant and refuses a wrong client secret (``401 invalid_client``), signs RS256 JWTs
whose ``sub`` (and ``aud``) is the client id, and serves its keys (JWKS) and OpenID discovery, over
https with a certificate it is given (:class:`IssuerTls`), else http.

Layout under ``cache_dir()/oidc-issuer-<fingerprint>/`` (the fingerprint covers the POM and the
main class): ``lib/`` (the POM's jars), ``classes/`` (``OidcIssuer.java`` compiled); in the state
directory given to :class:`OidcIssuer`: ``application.properties`` (the clients and their secrets,
``0600``), ``pid.json``, ``issuer.log``. The signing key lives in the issuer's memory: a restart
makes a new one, which a broker fetches again when it meets a token signed with it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from kpulse import processes
from kpulse.errors import KpulseError
from kpulse.home import cache_dir
from kpulse.local_layout import HOST
from kpulse.progress import SILENT, Progress
from localkafka.client_properties import properties_text
from localkafka.runtime import JAVA_DIR, SetupError

ISSUER_DIR = JAVA_DIR / "oidc-issuer"
POM = ISSUER_DIR / "pom.xml"
SOURCES = sorted(ISSUER_DIR.glob("*.java"))
MAIN_CLASS = "kpulse.issuer.OidcIssuer"
TOKEN_SECONDS = 300
"""Lifetime of an access token (Spring Authorization Server's default too)."""
READY_TIMEOUT_SECONDS = 60.0
TOKEN_PATH = "/oauth2/token"
JWKS_PATH = "/oauth2/jwks"


class IssuerError(KpulseError):
    """The OIDC issuer could not be started; one line for the user."""


@dataclass(frozen=True)
class OAuthClient:
    """A client registered with the issuer (client credentials grant, ``client_secret_basic`` or
    ``client_secret_post``)."""

    client_id: str
    """Also the ``sub`` of its tokens, hence the Kafka principal ``User:<client_id>``."""
    client_secret: str = field(repr=False)
    scopes: tuple[str, ...] = ()
    """The scopes it may ask for."""


@dataclass(frozen=True)
class IssuerTls:
    """The issuer serves https with this certificate and key (PEM, the key unencrypted PKCS#8)."""

    certificate: Path
    key: Path
    ca: Path
    """The CA that signed ``certificate``: what its clients verify it with."""


@dataclass(frozen=True)
class IssuerRuntime:
    root: Path

    @property
    def lib_dir(self) -> Path:
        return self.root / "lib"

    @property
    def classes_dir(self) -> Path:
        return self.root / "classes"

    @property
    def classpath(self) -> str:
        return os.pathsep.join([str(self.classes_dir), str(self.lib_dir / "*")])


def fingerprint() -> str:
    digest = hashlib.sha256(POM.read_bytes())
    for source in SOURCES:
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()[:16]


def ensure_issuer_runtime(progress: Progress = SILENT) -> IssuerRuntime:
    """Fetch the issuer's jars and compile its main class once into the cache; a no-op when current.
    Built in a directory of its own, then moved in place (the first of two concurrent builds wins)."""
    runtime = IssuerRuntime(cache_dir() / f"oidc-issuer-{fingerprint()}")
    if runtime.classes_dir.is_dir():
        return runtime
    for tool in ("java", "javac", "mvn"):
        if shutil.which(tool) is None:
            raise SetupError(f"{tool} not found on PATH: the OIDC issuer needs a JDK 17+ and Maven")
    runtime.root.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=runtime.root.name + ".staging-", dir=runtime.root.parent))
    try:
        with progress.step("fetching the OIDC issuer (Spring Authorization Server) from Maven Central"):
            _run(["mvn", "-B", "-q", "-f", str(POM), "dependency:copy-dependencies",
                  f"-DoutputDirectory={staging / 'lib'}"], "Maven fetch of the OIDC issuer")
            _run(["javac", "-nowarn", "-d", str(staging / "classes"), "-cp", str(staging / "lib" / "*"),
                  *map(str, SOURCES)], "javac (OIDC issuer)")
        try:
            staging.rename(runtime.root)
        except OSError:
            if not runtime.classes_dir.is_dir():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return runtime


def _run(command: list[str], what: str) -> None:
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        tail = (result.stdout + result.stderr).strip().splitlines()[-15:]
        raise SetupError(f"{what} failed (exit {result.returncode}):\n" + "\n".join(tail))


class OidcIssuer:
    """The issuer on ``HOST:port`` with ``clients`` registered; its files in ``root``. The
    constructor touches nothing."""

    def __init__(self, root: Path, port: int, clients: tuple[OAuthClient, ...], *,
                 tls: IssuerTls | None = None, token_seconds: int = TOKEN_SECONDS):
        self.root = root
        self.port = port
        self.clients = clients
        self.tls = tls
        self.token_seconds = token_seconds

    @property
    def url(self) -> str:
        """The issuer identifier (the ``iss`` of its tokens): https with ``tls``, else http."""
        return f"{'https' if self.tls else 'http'}://{HOST}:{self.port}"

    @property
    def token_endpoint(self) -> str:
        return self.url + TOKEN_PATH

    @property
    def jwks_url(self) -> str:
        return self.url + JWKS_PATH

    @property
    def pid_file(self) -> Path:
        return self.root / "pid.json"

    @property
    def log_file(self) -> Path:
        return self.root / "issuer.log"

    def properties(self) -> dict[str, str]:
        """Spring Boot's properties of this issuer (``spring.security.oauth2.authorizationserver``)."""
        settings = {"server.address": HOST, "server.port": str(self.port), "spring.main.banner-mode": "off",
                    "spring.security.oauth2.authorizationserver.issuer": self.url}
        if self.tls:
            settings.update({"server.ssl.certificate": f"file:{self.tls.certificate}",
                             "server.ssl.certificate-private-key": f"file:{self.tls.key}"})
        for number, client in enumerate(self.clients):
            prefix = f"spring.security.oauth2.authorizationserver.client.client-{number}."
            settings.update({
                prefix + "registration.client-id": client.client_id,
                prefix + "registration.client-secret": "{noop}" + client.client_secret,
                prefix + "registration.client-authentication-methods": "client_secret_basic,client_secret_post",
                prefix + "registration.authorization-grant-types": "client_credentials",
                prefix + "token.access-token-time-to-live": f"{self.token_seconds}s",
            })
            if client.scopes:
                settings[prefix + "registration.scopes"] = ",".join(client.scopes)
        return settings

    def start(self, progress: Progress = SILENT, timeout: float = READY_TIMEOUT_SECONDS) -> OidcIssuer:
        """Start the issuer (a no-op when it runs) and wait until it serves its keys."""
        if processes.running_pid(self.pid_file) is not None:
            return self
        runtime = ensure_issuer_runtime(progress)
        with progress.step(f"OIDC issuer: starting on {self.url}"):
            self.root.mkdir(parents=True, exist_ok=True)
            config = self.root / "application.properties"
            config.write_text(properties_text(self.properties()))
            config.chmod(0o600)
            java = os.environ.get("KPULSE_JAVA", "java")
            command = [java, "-Xmx160m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true",
                       "-cp", runtime.classpath, MAIN_CLASS, f"--spring.config.location=file:{config}"]
            processes.start(command, pid_file=self.pid_file, log_file=self.log_file)
            try:
                self._wait_ready(timeout)
            except BaseException:
                self.stop()
                raise
        return self

    def stop(self) -> None:
        processes.stop(self.pid_file, timeout=15)
        self.pid_file.unlink(missing_ok=True)

    def _wait_ready(self, timeout: float) -> None:
        import requests

        deadline = time.monotonic() + timeout
        problem = "nothing checked yet"
        while time.monotonic() < deadline:
            if processes.running_pid(self.pid_file) is None:
                raise IssuerError(f"the OIDC issuer exited during start; see {self.log_file}")
            try:
                answer = requests.get(self.jwks_url, timeout=2, verify=str(self.tls.ca) if self.tls else True)
                if answer.status_code == 200 and answer.json().get("keys"):
                    return
                problem = f"{self.jwks_url} answered HTTP {answer.status_code}"
            except (OSError, ValueError) as error:  # requests.RequestException is an OSError
                problem = str(error)
            time.sleep(0.2)
        raise IssuerError(f"the OIDC issuer is not ready after {timeout:.0f}s: {problem}; see {self.log_file}")
