"""Kafka client construction shared by every kpulse part that talks to a cluster."""

from __future__ import annotations

import logging

_LIBRDKAFKA_LOG = logging.getLogger("kpulse.librdkafka")
_LIBRDKAFKA_LOG.addHandler(logging.NullHandler())
_LIBRDKAFKA_LOG.propagate = False


def quiet_logger() -> logging.Logger:
    """The logger to give librdkafka clients (``"logger"`` setting) instead of its stderr lines."""
    return _LIBRDKAFKA_LOG


def admin_client(settings: dict[str, str]):
    """An AdminClient whose librdkafka log lines (connection refused while a broker is down, ...)
    go to the ``kpulse.librdkafka`` logger instead of stderr: kpulse reports failures itself."""
    from confluent_kafka.admin import AdminClient

    return AdminClient({**settings, "logger": _LIBRDKAFKA_LOG})


class LazyAdmin:
    """The Admin client of one cluster, built on first use: collectors' constructors never
    connect. ``factory(client_config)`` replaces :func:`admin_client` (tests pass fakes)."""

    def __init__(self, cluster_config, factory=None):
        self._cluster = cluster_config
        self._factory = factory or admin_client
        self._admin = None

    def get(self):
        if self._admin is None:
            self._admin = self._factory(self._cluster.client_config())
        return self._admin


def error_text(error: BaseException) -> str:
    """One line for a confluent-kafka exception (whose first argument is a KafkaError)."""
    first = error.args[0] if error.args else None
    return first.str() if hasattr(first, "str") else str(error)


_GROUP_STATE_NAMES = {"STABLE": "Stable", "PREPARING_REBALANCING": "PreparingRebalance",
                      "COMPLETING_REBALANCING": "CompletingRebalance", "EMPTY": "Empty", "DEAD": "Dead"}


def group_state_name(state) -> str:
    """ConsumerGroupState.STABLE -> 'Stable', as the official tool spells it; 'Unknown' otherwise."""
    return _GROUP_STATE_NAMES.get(getattr(state, "name", ""), "Unknown")


class KafkaPythonUnsupported(ValueError):
    """The cluster's security settings are ones kpulse does not hand to kafka-python."""


def kafka_python_admin(cluster, *, client_id: str, timeout: float):
    """kafka-python's ``KafkaAdminClient`` for ``cluster`` (a ClusterConfig), for the requests
    confluent-kafka cannot make (partition reassignment, log dirs) or makes one group at a time
    (committed offsets). Connects (bootstrap, API versions) before it returns. Its log lines (a broker
    that closed a connection, ...) are kept off stderr: kpulse reports failures itself.

    Raises :class:`KafkaPythonUnsupported` for OAUTHBEARER clusters."""
    from kafka import KafkaAdminClient

    library_log = logging.getLogger("kafka")
    if not library_log.handlers:
        library_log.addHandler(logging.NullHandler())
        library_log.propagate = False

    security = cluster.security
    if security.sasl_mechanism == "OAUTHBEARER":
        raise KafkaPythonUnsupported("kafka-python is not given OAUTHBEARER credentials")
    timeout_ms = int(timeout * 1000)
    settings = {"bootstrap_servers": cluster.bootstrap_servers.split(","), "security_protocol": security.protocol,
                "request_timeout_ms": timeout_ms, "bootstrap_timeout_ms": timeout_ms, "client_id": client_id}
    if security.uses_sasl:
        settings.update(sasl_mechanism=security.sasl_mechanism, sasl_plain_username=security.sasl_username,
                        sasl_plain_password=security.sasl_password)
    if security.uses_ssl:
        settings.update(ssl_cafile=security.ssl_ca_location, ssl_certfile=security.ssl_certificate_location,
                        ssl_keyfile=security.ssl_key_location, ssl_password=security.ssl_key_password,
                        ssl_check_hostname=security.ssl_endpoint_identification)
    return KafkaAdminClient(**settings)
