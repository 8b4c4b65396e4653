"""The check before a cycle's collectors run: does the cluster answer with the configured identity?

One DescribeCluster (asking for the principal's authorized operations, KIP-430) names within
seconds what would otherwise surface as each collector's own timeout a minute later: a wrong
password or mechanism, a CA that does not verify the brokers, a client certificate the broker
refuses or that is missing, a client key that does not decrypt, a closed port. When the cluster
cannot be read, the loop marks its Kafka collectors down with that one line instead of running them
(``collectors/runner.py``); ``kpulse collect --once`` exits non-zero with it.

A check that merely times out (a slow or overloaded cluster: nothing said no) lets the collectors
run as usual: each of them reports what it could read.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from kpulse.config import ClusterConfig
from kpulse.kafka.authorization import not_authorized
from kpulse.kafka.clients import ClientSetupFailed, ConnectionFailed, NoAnswer, admin_client, error_text, wait
from kpulse.kafka.oauth import LIBRDKAFKA_TOKEN_FAILURE, token_failure_text
from kpulse.snapshot import ClusterConnection

if TYPE_CHECKING:
    from confluent_kafka.admin import AdminClient

CHECK_SECONDS = 5.0
"""How long the check waits for DescribeCluster."""
CONNECT_SECONDS = 5.0
"""librdkafka's connection setup timeout for the check's client."""

AdminFactory = Callable[[dict[str, str | int]], "AdminClient"]
"""Makes the check's client from librdkafka settings (the cluster's, plus the connection timeout)."""


class ConnectionGate:
    """The check for one cluster (a ``kpulse.config.ClusterConfig``). The constructor connects to
    nothing; the client is made at the first check and kept while the cluster answers."""

    def __init__(self, cluster: ClusterConfig, *, factory: AdminFactory | None = None,
                 timeout: float = CHECK_SECONDS) -> None:
        self._cluster = cluster
        self._factory: AdminFactory = factory or (lambda settings: admin_client(settings, connection_errors=True))
        self._timeout = timeout
        self._admin: AdminClient | None = None

    def check(self) -> ClusterConnection:
        began = time.monotonic()
        try:
            admin = self._admin
            if admin is None:
                admin = self._admin = self._factory({**self._cluster.client_config(),
                                                     "socket.connection.setup.timeout.ms": int(CONNECT_SECONDS * 1000)})
            described = wait(admin, admin.describe_cluster(
                include_authorized_operations=True, request_timeout=self._timeout), self._timeout + 1)
        except ClientSetupFailed as error:
            return _refused(str(error), began)
        except ConnectionFailed as error:
            self._admin = None  # a fresh client next cycle: librdkafka backs off its reconnects
            return _refused(self._token_failure_named(str(error)), began, conclusive=not isinstance(error, NoAnswer))
        except Exception as error:  # noqa: BLE001 - any other client failure: one line, collectors still run
            self._admin = None
            return _refused(error_text(error), began, conclusive=False)
        # asked for, so librdkafka's None is the broker's empty set (no Describe on the cluster)
        operations = sorted(op.name for op in getattr(described, "authorized_operations", None) or [])
        return {"ok": True, "error": None, "conclusive": True, "cluster_operations": operations,
                "limits": limits_of(operations), "check_seconds": round(time.monotonic() - began, 4)}

    def _token_failure_named(self, text: str) -> str:
        """An OAUTHBEARER token librdkafka could not get, in the token endpoint's own words (librdkafka
        gives its answer without the HTTP status: ``{"error":"invalid_client"}``)."""
        security = self._cluster.security
        if LIBRDKAFKA_TOKEN_FAILURE in text and security.sasl_oauthbearer_token_endpoint_url:
            return token_failure_text(security, text.split(LIBRDKAFKA_TOKEN_FAILURE, 1)[1])
        return text

    def close(self) -> None:
        self._admin = None


def limits_of(cluster_operations: list[str]) -> list[str]:
    """What the principal cannot see for want of an ACL on the cluster, one line each: Kafka filters
    some answers silently instead of refusing them (DOMAIN.md §9)."""
    limits = []
    if "DESCRIBE" not in cluster_operations and "ALL" not in cluster_operations:
        limits.append(f"{not_authorized('Describe', 'cluster')}: consumer groups are listed only where kpulse may "
                      "describe them (ListGroups leaves the others out), and the KRaft quorum is not readable")
    return limits


def _refused(text: str, began: float, *, conclusive: bool = True) -> ClusterConnection:
    return {"ok": False, "error": text, "conclusive": conclusive, "cluster_operations": None, "limits": [],
            "check_seconds": round(time.monotonic() - began, 4)}
