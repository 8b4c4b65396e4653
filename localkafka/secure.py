"""A secured one-node KRaft cluster on loopback, for testing kpulse as it meets production
clusters: TLS everywhere, SASL (SCRAM-SHA-512, SCRAM-SHA-256, PLAIN, OAUTHBEARER) on one listener,
mutual TLS on another, ``StandardAuthorizer`` with ``allow.everyone.if.no.acl.found=false``, and the
identities of :data:`IDENTITIES` with their ACLs. OAUTHBEARER tokens come from a real OpenID
Connect issuer started beside the broker (``localkafka/oidc_issuer.py``: client credentials); the
broker validates them against the issuer's JWKS, and a token's ``sub`` (the client id) is the
principal.

Layout under ``<state dir>/secure-cluster/``: ``certs/`` (a CA made on the fly, the broker's and
the clients' certificates), ``server.properties``, ``data/``, ``logs/``, ``pid.json``, ``oidc-issuer/``,
and one kpulse config per identity (``kpulse-<identity>.yaml``) that tests and users can point kpulse at.

Ports from one base (the test suite's base + 1000 by default):

=====================  ==========
SASL_SSL listener      base + 1
mTLS (SSL) listener    base + 2
OIDC issuer (https)    base + 3
controller (mTLS)      base + 101
=====================  ==========
"""

from __future__ import annotations

import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from kpulse import processes
from kpulse.errors import KpulseError
from kpulse.local_layout import HOST
from kpulse.progress import SILENT, Progress
from localkafka.certs import Authority
from localkafka.layout import CLUSTER_ID
from localkafka.oidc_issuer import IssuerTls, OAuthClient, OidcIssuer
from localkafka.runtime import JavaRuntime, ensure_runtime, java_command

BROKER_CN = "kpulse-broker"
ISSUER_CN = "kpulse-oidc-issuer"
NODE_ID = 1
READY_TIMEOUT_SECONDS = 90.0
OAUTHBEARER = "OAUTHBEARER"
OAUTH_SCOPE = "kafka"
"""The scope the OAUTHBEARER identity asks for (the broker does not check it; asking exercises the setting)."""
OAUTHBEARER_VALIDATOR = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
OAUTHBEARER_LOGIN_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
ALLOWED_URLS = "org.apache.kafka.sasl.oauthbearer.allowed.urls"


@dataclass(frozen=True)
class Grant:
    """One ACL: ``principal`` may do ``operation`` on ``resource_type`` ``name`` (``*``: all;
    ``prefixed``: every name that starts with ``name``)."""

    resource_type: str
    """CLUSTER, TOPIC or GROUP."""
    name: str
    operation: str
    """READ, WRITE, DESCRIBE, DESCRIBE_CONFIGS, ..."""
    prefixed: bool = False


READ_ONLY = (Grant("CLUSTER", "kafka-cluster", "DESCRIBE"), Grant("CLUSTER", "kafka-cluster", "DESCRIBE_CONFIGS"),
             Grant("TOPIC", "*", "DESCRIBE"), Grant("GROUP", "*", "DESCRIBE"))
"""The read-only monitoring principal: no DescribeConfigs on topics, no Write anywhere."""


@dataclass(frozen=True)
class Identity:
    """Who a client of the secured cluster is, and what the ACLs let it do."""

    name: str
    """Short name, used in file names and test ids."""
    mechanism: str | None
    """SASL mechanism on the SASL_SSL listener; None: mutual TLS on the SSL listener."""
    password: str = ""
    """OAUTHBEARER: the client secret at the OIDC issuer (``name`` is the client id)."""
    grants: tuple[Grant, ...] = ()
    super_user: bool = False
    key_password: str | None = None
    """mTLS: the client key is encrypted with this password."""
    extra_scram: tuple[str, ...] = field(default=())
    """More SCRAM mechanisms the same user has credentials for."""


IDENTITIES: dict[str, Identity] = {identity.name: identity for identity in (
    Identity("admin", "SCRAM-SHA-512", "admin-secret", super_user=True, extra_scram=("SCRAM-SHA-256",)),
    Identity("reader", "SCRAM-SHA-512", "reader-secret", grants=READ_ONLY, extra_scram=("SCRAM-SHA-256",)),
    Identity("partial", "SCRAM-SHA-512", "partial-secret",
             grants=(Grant("TOPIC", "*", "DESCRIBE"), Grant("GROUP", "team-a-", "DESCRIBE", prefixed=True))),
    Identity("lister", "SCRAM-SHA-512", "lister-secret",
             grants=(Grant("CLUSTER", "kafka-cluster", "DESCRIBE"), Grant("TOPIC", "*", "DESCRIBE"),
                     Grant("GROUP", "team-a-", "DESCRIBE", prefixed=True))),
    Identity("writer", "SCRAM-SHA-512", "writer-secret",
             grants=(*READ_ONLY, Grant("TOPIC", "kpulse-probe", "WRITE"))),
    Identity("plain", "PLAIN", "plain-secret", grants=READ_ONLY),
    Identity("kpulse-mtls", None, grants=READ_ONLY, key_password="mtls-key-secret"),
    Identity("kpulse-oauth", OAUTHBEARER, "oauth-client-secret", grants=READ_ONLY),
)}


class SecureClusterError(KpulseError):
    """The secured local cluster could not be started; one line for the user."""


@dataclass(frozen=True)
class SecureLayout:
    base: int

    @property
    def sasl_port(self) -> int:
        return self.base + 1

    @property
    def mtls_port(self) -> int:
        return self.base + 2

    @property
    def issuer_port(self) -> int:
        return self.base + 3

    @property
    def controller_port(self) -> int:
        return self.base + 101

    @property
    def sasl_bootstrap(self) -> str:
        return f"{HOST}:{self.sasl_port}"

    @property
    def mtls_bootstrap(self) -> str:
        return f"{HOST}:{self.mtls_port}"


class SecureCluster:
    """The secured cluster in ``state/secure-cluster``. The constructor touches nothing."""

    def __init__(self, state: Path, base: int, progress: Progress = SILENT):
        self.root = state / "secure-cluster"
        self.layout = SecureLayout(base)
        self.progress = progress
        self.certs = self.root / "certs"
        self.authority = Authority(self.certs)
        self.issuer = OidcIssuer(self.root / "oidc-issuer", self.layout.issuer_port, tuple(
            OAuthClient(i.name, i.password, (OAUTH_SCOPE,)) for i in IDENTITIES.values() if i.mechanism == OAUTHBEARER),
            tls=IssuerTls(self.certs / f"{ISSUER_CN}.pem", self.certs / f"{ISSUER_CN}.key", self.ca_file))

    @property
    def pid_file(self) -> Path:
        return self.root / "pid.json"

    @property
    def log_file(self) -> Path:
        return self.root / "logs" / "server.log"

    @property
    def ca_file(self) -> Path:
        return self.authority.certificate_path

    def principal(self, identity: Identity) -> str:
        if identity.mechanism is None:
            return f"User:CN={identity.name},OU=local,O=kpulse"
        return f"User:{identity.name}"

    # --- up / down ----------------------------------------------------------------------------------
    def up(self, timeout: float = READY_TIMEOUT_SECONDS) -> SecureCluster:
        if processes.running_pid(self.pid_file) is not None:
            self.issuer.start(self.progress)
            return self
        runtime = ensure_runtime(self.progress)
        fresh = not (self.root / "data" / "meta.properties").exists()
        if fresh:
            with self.progress.step("secured cluster: certificates and storage"):
                self._certificates()
                self._format(runtime)
        self.issuer.start(self.progress)  # before the broker, which fetches the issuer's keys at start
        with self.progress.step(f"secured cluster: starting on {self.layout.sasl_bootstrap} (SASL_SSL) "
                                f"and {self.layout.mtls_bootstrap} (mTLS)"):
            self._start(runtime)
            try:
                self._wait_ready(timeout)
                self._grant()
            except BaseException:
                self.down()
                raise
        for identity in IDENTITIES.values():
            self.write_config(identity)
        return self

    def down(self, wipe: bool = False) -> None:
        processes.stop(self.pid_file, timeout=30)
        self.pid_file.unlink(missing_ok=True)
        self.issuer.stop()
        if wipe:
            shutil.rmtree(self.root, ignore_errors=True)

    # --- clients ------------------------------------------------------------------------------------
    def security(self, identity: Identity, **overrides) -> dict:
        """The ``security`` section of a kpulse config for ``identity`` (``overrides`` replace keys)."""
        if identity.mechanism is None:
            security = {"protocol": "SSL", "ssl_ca_location": str(self.ca_file),
                        "ssl_certificate_location": str(self.certs / f"{identity.name}.pem"),
                        "ssl_key_location": str(self.certs / f"{identity.name}.key"),
                        "ssl_key_password": identity.key_password}
        elif identity.mechanism == OAUTHBEARER:
            security = {"protocol": "SASL_SSL", "sasl_mechanism": OAUTHBEARER,
                        "sasl_oauthbearer_token_endpoint_url": self.issuer.token_endpoint,
                        "sasl_oauthbearer_client_id": identity.name,
                        "sasl_oauthbearer_client_secret": identity.password,
                        "sasl_oauthbearer_scope": OAUTH_SCOPE, "sasl_oauthbearer_ca_location": str(self.ca_file),
                        "ssl_ca_location": str(self.ca_file)}
        else:
            security = {"protocol": "SASL_SSL", "sasl_mechanism": identity.mechanism,
                        "sasl_username": identity.name, "sasl_password": identity.password,
                        "ssl_ca_location": str(self.ca_file)}
        security.update(overrides)
        return {key: value for key, value in security.items() if value is not None}

    def bootstrap(self, identity: Identity) -> str:
        return self.layout.mtls_bootstrap if identity.mechanism is None else self.layout.sasl_bootstrap

    def config(self, identity: Identity, *, lake: Path | None = None, **security_overrides) -> dict:
        """A whole kpulse config (as data) that monitors this cluster as ``identity``."""
        return {"clusters": [{"name": "secure", "bootstrap_servers": self.bootstrap(identity),
                              "security": self.security(identity, **security_overrides),
                              "metrics": {"source": "none"}}],
                "lake": {"path": str(lake or self.root / f"lake-{identity.name}")},
                "exporter": {"port": self.layout.base + 400, "host": HOST}}

    def write_config(self, identity: Identity, path: Path | None = None, **kwargs) -> Path:
        path = path or self.root / f"kpulse-{identity.name}.yaml"
        path.write_text(yaml.safe_dump(self.config(identity, **kwargs), sort_keys=False))
        path.chmod(0o600)
        return path

    def admin_settings(self) -> dict[str, str]:
        """librdkafka settings of the super user (SCRAM-SHA-512)."""
        admin = IDENTITIES["admin"]
        return {"bootstrap.servers": self.layout.sasl_bootstrap, "security.protocol": "SASL_SSL",
                "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": admin.name, "sasl.password": admin.password,
                "ssl.ca.location": str(self.ca_file)}

    # --- internals ----------------------------------------------------------------------------------
    def _certificates(self) -> None:
        shutil.rmtree(self.certs, ignore_errors=True)
        self.authority.create()
        broker = self.authority.issue(BROKER_CN, server=True)
        self.authority.issue(ISSUER_CN, server=True)
        # The broker's keystore: its key and certificate in one PEM file (ssl.keystore.type=PEM).
        (self.certs / "broker-keystore.pem").write_bytes(broker.key.read_bytes() + broker.certificate.read_bytes())
        (self.certs / "broker-keystore.pem").chmod(0o600)
        for identity in IDENTITIES.values():
            if identity.mechanism is None:
                self.authority.issue(identity.name, key_password=identity.key_password)
        # A certificate the broker does not trust (another CA), for the misconfiguration tests.
        Authority(self.certs / "untrusted", name="untrusted").create().issue("kpulse-mtls")

    def server_properties(self) -> str:
        layout = self.layout
        super_users = ";".join(["User:admin", f"User:CN={BROKER_CN},OU=local,O=kpulse"])
        plain_users = " ".join(f'user_{i.name}="{i.password}"' for i in IDENTITIES.values()
                               if i.mechanism not in (None, OAUTHBEARER))
        settings = {
            "process.roles": "broker,controller",
            "node.id": str(NODE_ID),
            "controller.quorum.voters": f"{NODE_ID}@{HOST}:{layout.controller_port}",
            "listeners": (f"SASL_SSL://{HOST}:{layout.sasl_port},MTLS://{HOST}:{layout.mtls_port},"
                          f"CONTROLLER://{HOST}:{layout.controller_port}"),
            "advertised.listeners": f"SASL_SSL://{HOST}:{layout.sasl_port},MTLS://{HOST}:{layout.mtls_port}",
            "listener.security.protocol.map": "SASL_SSL:SASL_SSL,MTLS:SSL,CONTROLLER:SSL",
            "inter.broker.listener.name": "MTLS",
            "controller.listener.names": "CONTROLLER",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(self.certs / "broker-keystore.pem"),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self.ca_file),
            "listener.name.mtls.ssl.client.auth": "required",
            "listener.name.controller.ssl.client.auth": "required",
            "sasl.enabled.mechanisms": f"SCRAM-SHA-512,SCRAM-SHA-256,PLAIN,{OAUTHBEARER}",
            "listener.name.sasl_ssl.plain.sasl.jaas.config":
                f"org.apache.kafka.common.security.plain.PlainLoginModule required {plain_users};",
            "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config":
                "org.apache.kafka.common.security.scram.ScramLoginModule required;",
            "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config":
                "org.apache.kafka.common.security.scram.ScramLoginModule required;",
            # OAUTHBEARER: JWTs signed by the issuer's keys (JWKS), from that issuer; the principal is `sub`
            # The JWKS over https, verified by the CA. With any option, the broker's own login on this
            # listener mints an unsecured token (Kafka's default login handler), which needs a subject:
            # never sent (brokers talk over mTLS), and the validator would refuse it.
            "listener.name.sasl_ssl.oauthbearer.sasl.jaas.config":
                f'{OAUTHBEARER_LOGIN_MODULE} required ssl.truststore.type="PEM" '
                f'ssl.truststore.location="{self.ca_file}" unsecuredLoginStringClaim_sub="{BROKER_CN}";',
            "listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class": OAUTHBEARER_VALIDATOR,
            "sasl.oauthbearer.jwks.endpoint.url": self.issuer.jwks_url,
            "sasl.oauthbearer.expected.issuer": self.issuer.url,
            # the issuer's tokens name their client as audience: the broker accepts its OAuth clients'
            "sasl.oauthbearer.expected.audience": ",".join(client.client_id for client in self.issuer.clients),
            "sasl.oauthbearer.sub.claim.name": "sub",
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "allow.everyone.if.no.acl.found": "false",
            "super.users": super_users,
            "log.dirs": str(self.root / "data"),
            "num.partitions": "1",
            "default.replication.factor": "1",
            "min.insync.replicas": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "3",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "auto.create.topics.enable": "false",
            "group.initial.rebalance.delay.ms": "0",
            "num.io.threads": "2",
            "num.network.threads": "2",
        }
        return "".join(f"{key}={value}\n" for key, value in settings.items())

    def _write_properties(self) -> Path:
        (self.root / "logs").mkdir(parents=True, exist_ok=True)
        path = self.root / "server.properties"
        path.write_text(self.server_properties())
        path.chmod(0o600)
        return path

    def _format(self, runtime: JavaRuntime) -> None:
        scram = [argument for identity in IDENTITIES.values() if identity.mechanism
                 for mechanism in {identity.mechanism, *identity.extra_scram} if mechanism.startswith("SCRAM")
                 for argument in ("--add-scram", f"{mechanism}=[name={identity.name},password={identity.password}]")]
        command = java_command(runtime, "kafka.tools.StorageTool",
                               ["format", "--cluster-id", CLUSTER_ID, "--config", str(self._write_properties()),
                                "--ignore-formatted", *scram], heap="128m")
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            raise SecureClusterError("formatting the secured node failed: "
                                     + (result.stderr or result.stdout).strip().splitlines()[-1])

    def _start(self, runtime: JavaRuntime) -> None:
        command = java_command(runtime, "kafka.Kafka", [str(self._write_properties())], heap="384m",
                               log_config="log4j2-server.properties",
                               system_properties={"kafka.logs.dir": str(self.root / "logs"),
                                                  ALLOWED_URLS: self.issuer.jwks_url})
        processes.start(command, pid_file=self.pid_file, log_file=self.root / "logs" / "stdout.log")

    def _wait_ready(self, timeout: float) -> None:
        from confluent_kafka.admin import AdminClient

        from kpulse.kafka.clients import quiet_logger

        admin = AdminClient({**self.admin_settings()}, logger=quiet_logger())
        deadline = time.monotonic() + timeout
        problem = "nothing checked yet"
        while time.monotonic() < deadline:
            if processes.running_pid(self.pid_file) is None:
                raise SecureClusterError(f"the secured node exited during start; see {self.log_file}")
            try:
                cluster = admin.describe_cluster(request_timeout=3).result(timeout=5)
                if cluster.nodes:
                    return
                problem = "no broker registered"
            except Exception as error:  # noqa: BLE001 - not ready yet
                problem = str(error)
            time.sleep(0.5)
        raise SecureClusterError(f"secured cluster not ready after {timeout:.0f}s: {problem}")

    def _grant(self) -> None:
        from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient,
                                           ResourcePatternType, ResourceType)

        from kpulse.kafka.clients import quiet_logger

        admin = AdminClient({**self.admin_settings()}, logger=quiet_logger())
        bindings = [AclBinding(ResourceType.BROKER if grant.resource_type == "CLUSTER" else ResourceType[grant.resource_type],
                               grant.name,
                               ResourcePatternType.PREFIXED if grant.prefixed else ResourcePatternType.LITERAL,
                               self.principal(identity), "*", AclOperation[grant.operation],
                               AclPermissionType.ALLOW)
                    for identity in IDENTITIES.values() for grant in identity.grants]
        for future in admin.create_acls(bindings, request_timeout=15).values():
            future.result(timeout=20)
