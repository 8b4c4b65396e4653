"""Kafka client construction shared by every kpulse part that talks to a cluster, and the wait
for an Admin API answer that says why a cluster cannot be used (:func:`wait`)."""

from __future__ import annotations

import collections
import concurrent.futures
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from kpulse.errors import KpulseError

if TYPE_CHECKING:
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import AdminClient, ClusterMetadata
    from kafka import KafkaAdminClient

    from kpulse.config.model import ClusterConfig
    from kpulse.kafka.group_model import GroupStateName

_Client = TypeVar("_Client")
_Result = TypeVar("_Result")

_LIBRDKAFKA_LOG = logging.getLogger("kpulse.librdkafka")
_LIBRDKAFKA_LOG.addHandler(logging.NullHandler())
_LIBRDKAFKA_LOG.propagate = False


def quiet_logger() -> logging.Logger:
    """The logger to give librdkafka clients (``"logger"`` setting) instead of its stderr lines."""
    return _LIBRDKAFKA_LOG


def admin_client(settings: Mapping[str, Any], *, connection_errors: bool = False) -> AdminClient:
    """An AdminClient whose librdkafka log lines (connection refused while a broker is down, ...)
    go to the ``kpulse.librdkafka`` logger instead of stderr: kpulse reports failures itself.

    With ``connection_errors``, its connection errors are kept in ``.connection_errors``
    (:class:`ConnectionErrors`) for :func:`wait` and :func:`list_topics`, which say why a cluster
    cannot answer. librdkafka queues those reports until the client is polled: give the option only
    to clients whose calls go through :func:`wait` (a client never polled would keep every report)."""
    from confluent_kafka.admin import AdminClient

    if not connection_errors:
        return built(AdminClient, {**settings, "logger": _LIBRDKAFKA_LOG})
    errors = ConnectionErrors(certificate=settings.get("ssl.certificate.location"))
    admin = built(AdminClient, {**settings, "logger": _LIBRDKAFKA_LOG, "error_cb": errors.record})
    # kpulse's own attribute on the client (its class allows any): wait() and list_topics() read it
    admin.connection_errors = errors  # type: ignore[attr-defined]
    return admin


def built(client_class: Callable[[dict[str, Any]], _Client], settings: dict[str, Any]) -> _Client:
    """``client_class(settings)`` (a librdkafka AdminClient, Producer or Consumer); a client that
    cannot even be made (a client key that does not decrypt, a certificate file that is not PEM, an
    unknown setting) raises :class:`ClientSetupFailed` with one line naming the setting."""
    from confluent_kafka import KafkaException

    try:
        return client_class(settings)
    except KafkaException as error:
        raise ClientSetupFailed(setup_failure_text(error_text(error), settings)) from None


def setup_failure_text(text: str, settings: Mapping[str, Any]) -> str:
    """One line for a librdkafka client that could not be made (``text``: librdkafka's words)."""
    text = " ".join(text.split()).removeprefix("Failed to create admin client: ")
    text = text.removeprefix("Failed to create producer: ").removeprefix("Failed to create consumer: ")
    key = settings.get("ssl.key.location")
    if "ssl.key.location failed" in text and key:
        hint = ("wrong ssl_key_password?" if settings.get("ssl.key.password") else
                "is it encrypted? then set ssl_key_password")
        return f"cannot read the client key {key}: {hint} (librdkafka: {text})"
    if "ssl.certificate.location failed" in text:
        return f"cannot read the client certificate {settings.get('ssl.certificate.location')} (librdkafka: {text})"
    if "ssl.ca.location failed" in text:
        return f"cannot read the CA file {settings.get('ssl.ca.location')} (librdkafka: {text})"
    return f"cannot set up a Kafka client: {text}"


class ConnectionFailed(Exception):
    """The cluster cannot be used now, and librdkafka said why (one line)."""


class NoAnswer(ConnectionFailed):
    """The cluster did not answer in time and nothing said why: not a refusal (a slow or loaded
    cluster may answer the next call)."""


class ClientSetupFailed(ConnectionFailed, KpulseError):
    """A client could not be made from the configured settings (key, certificate, CA file); one line."""


class ConnectionErrors:
    """The connection errors librdkafka reported for one client (its ``error_cb``, served by
    ``poll``), numbered so that a wait looks at those reported since it began, and whether every
    broker was down at the last report (cleared by the next answered call)."""

    _KEPT = 64

    def __init__(self, certificate: str | None = None) -> None:
        self._certificate = certificate
        """The client certificate configured (mTLS), named when the broker refuses it."""
        self._events: collections.deque[tuple[int, str, str]] = collections.deque(maxlen=self._KEPT)
        self._count = 0
        self._all_down = False
        self._lock = threading.Lock()

    def record(self, error: KafkaError) -> None:
        with self._lock:
            self._count += 1
            if error.name() == "_ALL_BROKERS_DOWN":
                self._all_down = True
            self._events.append((self._count, error.name(), " ".join(error.str().split())))

    def answered(self) -> None:
        """A call was answered: some broker is up."""
        with self._lock:
            self._all_down = False

    def mark(self) -> int:
        with self._lock:
            return self._count

    def since(self, mark: int) -> list[tuple[str, str]]:
        """(code name, text) of the errors reported after ``mark``, oldest first."""
        with self._lock:
            return [(name, text) for number, name, text in self._events if number > mark]

    def verdict(self, mark: int) -> str | None:
        """Why the cluster cannot answer, when the reports after ``mark`` say it for sure: an
        authentication failure (SASL); or, while every broker is down, a TLS handshake failure or
        the last connection error (``Connection refused``, a name that does not resolve, ...)."""
        events = [(name, text) for name, text in self.since(mark) if name != "_ALL_BROKERS_DOWN"]
        for name, text in events:
            if name == "_AUTHENTICATION":
                return f"authentication failed: {text}"
        with self._lock:
            all_down = self._all_down
        if not all_down or not events:
            return None
        for name, text in events:
            if _CLIENT_CERTIFICATE_REFUSED in text:
                if self._certificate is None:
                    return ("TLS handshake failed: the broker requires a client certificate and none is configured "
                            f"(ssl_certificate_location, ssl_key_location): {text}")
                return (f"TLS handshake failed: the broker refused the client certificate {self._certificate} "
                        f"(not signed by a CA it trusts, or expired): {text}")
            if name == "_SSL" or "SSL_HANDSHAKE" in text or "SSL handshake failed" in text:
                return f"TLS handshake failed: {text}"
        return f"all brokers down: {events[-1][1]}"

    def last(self, mark: int) -> str | None:
        events = [text for name, text in self.since(mark) if name != "_ALL_BROKERS_DOWN"]
        return events[-1] if events else None


POLL_SECONDS = 0.1
_CLIENT_CERTIFICATE_REFUSED = "alert bad certificate"
"""What OpenSSL says when the broker rejects the client's certificate, or its absence (TLS 1.3
tells the client after the handshake: the first request fails)."""


def wait(admin: AdminClient, future: concurrent.futures.Future[_Result], timeout: float) -> _Result:
    """``future.result()`` of an Admin API call of ``admin``, served in short steps: raises
    :class:`ConnectionFailed` at once when librdkafka reports a failure that will not go away
    during this call (:meth:`ConnectionErrors.verdict`), and names the last connection error when
    the call times out. An admin without ``connection_errors`` (a test's fake) is simply waited on."""
    errors: ConnectionErrors | None = getattr(admin, "connection_errors", None)
    if errors is None:
        return future.result(timeout=timeout)
    admin.poll(0)  # reports queued before this call are served now: only later ones decide
    mark = errors.mark()
    deadline = time.monotonic() + timeout
    while not future.done():
        left = deadline - time.monotonic()
        if left <= 0:
            break
        concurrent.futures.wait([future], timeout=min(POLL_SECONDS, left))
        admin.poll(0)
        why = errors.verdict(mark)
        if why is not None and not future.done():
            raise ConnectionFailed(why)
    if not future.done():
        last = errors.last(mark)
        raise NoAnswer(f"no answer within {timeout:g} s" + (f" (last connection error: {last})" if last else ""))
    try:
        result = future.result(timeout=0)
    except Exception as error:  # noqa: BLE001 - the caller reports it; add what the client saw
        last = errors.last(mark)
        if last is None or not _no_answer(error):
            raise
        raise ConnectionFailed(f"{error_text(error)} (last connection error: {last})") from None
    errors.answered()
    return result


def list_topics(admin: AdminClient, timeout: float, topic: str | None = None) -> ClusterMetadata:
    """``admin.list_topics(topic)`` asked in growing steps (1, 2, 4 s ...) within ``timeout``.

    A request sent to a broker as it dies is lost, and librdkafka waits out the whole timeout for it
    (2 of 6 broker kills here): asked again, the next one goes to a live broker. With
    ``connection_errors`` (:func:`admin_client`), a connection failure is named at once as in
    :func:`wait`."""
    errors: ConnectionErrors | None = getattr(admin, "connection_errors", None)
    if errors is not None:
        admin.poll(0)
    mark = errors.mark() if errors is not None else 0
    deadline = time.monotonic() + timeout
    step = 1.0
    while True:
        left = deadline - time.monotonic()
        try:
            wait_for = max(0.1, min(step, left))
            metadata = (admin.list_topics(timeout=wait_for) if topic is None
                        else admin.list_topics(topic=topic, timeout=wait_for))
        except Exception as error:  # noqa: BLE001
            if errors is None:
                if not _no_answer(error) or deadline - time.monotonic() <= 0:
                    raise
                step *= 2
                continue
            admin.poll(0)
            why = errors.verdict(mark)
            if why is not None:
                raise ConnectionFailed(why) from None
            if deadline - time.monotonic() <= 0:
                last = errors.last(mark)
                if last is None:
                    raise
                raise ConnectionFailed(f"{error_text(error)} (last connection error: {last})") from None
            if not _no_answer(error):
                time.sleep(min(POLL_SECONDS, max(0.0, deadline - time.monotonic())))
            step *= 2
            continue
        if errors is not None:
            errors.answered()
        return metadata


def _no_answer(error: BaseException) -> bool:
    """A timeout or a transport failure: the cluster did not answer (nothing it said)."""
    first = error.args[0] if error.args else None
    return getattr(first, "name", lambda: "")() in ("_TIMED_OUT", "_TRANSPORT") or isinstance(
        error, (TimeoutError, concurrent.futures.TimeoutError))


class LazyAdmin:
    """The Admin client of one cluster, built on first use: collectors' constructors never
    connect. ``factory(client_config)`` replaces :func:`admin_client` (tests pass fakes)."""

    def __init__(self, cluster_config: ClusterConfig,
                 factory: Callable[[dict[str, str]], AdminClient] | None = None) -> None:
        self._cluster = cluster_config
        self._factory = factory or admin_client
        self._admin: AdminClient | None = None

    def get(self) -> AdminClient:
        if self._admin is None:
            self._admin = self._factory(self._cluster.client_config())
        return self._admin


def error_text(error: BaseException) -> str:
    """One line for a confluent-kafka exception (whose first argument is a KafkaError)."""
    first = error.args[0] if error.args else None
    if first is not None and hasattr(first, "str"):
        text: str = first.str()
        return text
    return str(error)


_GROUP_STATE_NAMES: dict[str, GroupStateName] = {
    "STABLE": "Stable", "PREPARING_REBALANCING": "PreparingRebalance", "COMPLETING_REBALANCING": "CompletingRebalance",
    "EMPTY": "Empty", "DEAD": "Dead"}


def group_state_name(state: object) -> GroupStateName:
    """ConsumerGroupState.STABLE -> 'Stable', as the official tool spells it; 'Unknown' otherwise."""
    return _GROUP_STATE_NAMES.get(getattr(state, "name", ""), "Unknown")


class KafkaPythonUnsupported(ValueError):
    """The cluster's security settings are ones kpulse does not hand to kafka-python (OAUTHBEARER
    without a token endpoint: the config check refuses it, a config built in code may hold it)."""


def kafka_python_admin(cluster: ClusterConfig, *, client_id: str, timeout: float) -> KafkaAdminClient:
    """kafka-python's ``KafkaAdminClient`` for ``cluster`` (a ClusterConfig), for the requests
    confluent-kafka cannot make (partition reassignment, log dirs) or makes one group at a time
    (committed offsets). Connects (bootstrap, API versions) before it returns. Its log lines (a broker
    that closed a connection, ...) are kept off stderr: kpulse reports failures itself.

    OAUTHBEARER: tokens by OIDC client credentials (:mod:`kpulse.kafka.oauth`), the first one asked
    for before connecting, so that a token endpoint that refuses the client is named in one line
    (:class:`~kpulse.kafka.oauth.TokenRequestFailed`). Raises :class:`KafkaPythonUnsupported` for
    OAUTHBEARER without a token endpoint."""
    from kafka import KafkaAdminClient

    library_log = logging.getLogger("kafka")
    if not library_log.handlers:
        library_log.addHandler(logging.NullHandler())
        library_log.propagate = False

    security = cluster.security
    timeout_ms = int(timeout * 1000)
    settings: dict[str, Any] = {
        "bootstrap_servers": cluster.bootstrap_servers.split(","), "security_protocol": security.protocol,
        "request_timeout_ms": timeout_ms, "bootstrap_timeout_ms": timeout_ms, "client_id": client_id}
    if security.uses_sasl and security.sasl_mechanism == "OAUTHBEARER":
        if not security.sasl_oauthbearer_token_endpoint_url:
            raise KafkaPythonUnsupported("OAUTHBEARER needs sasl_oauthbearer_token_endpoint_url: "
                                         "kpulse supports OIDC client credentials only")
        from kpulse.kafka.oauth import token_provider

        provider = token_provider(security)
        provider.token()
        settings.update(sasl_mechanism="OAUTHBEARER", sasl_oauth_token_provider=provider)
    elif security.uses_sasl:
        settings.update(sasl_mechanism=security.sasl_mechanism, sasl_plain_username=security.sasl_username,
                        sasl_plain_password=security.sasl_password)
    if security.uses_ssl:
        settings.update(ssl_cafile=security.ssl_ca_location, ssl_certfile=security.ssl_certificate_location,
                        ssl_keyfile=security.ssl_key_location, ssl_password=security.ssl_key_password,
                        ssl_check_hostname=security.ssl_endpoint_identification)
    refusal = connection_refusal(cluster)
    if refusal is not None:  # kafka-python would wait out its bootstrap timeout and say "Unable to bootstrap"
        raise ConnectionFailed(refusal)
    return KafkaAdminClient(**settings)


def connection_refusal(cluster: ClusterConfig, timeout: float = 5.0) -> str | None:
    """Why ``cluster`` refuses the configured identity, as librdkafka names it within a second or
    two (a wrong password or mechanism, an unverified broker, a refused or missing client
    certificate, a key that does not decrypt, every broker down); None when it answers, or merely
    does not answer within ``timeout``."""
    try:
        admin = admin_client({**cluster.client_config(), "socket.connection.setup.timeout.ms": int(timeout * 1000)},
                             connection_errors=True)
        wait(admin, admin.describe_cluster(request_timeout=timeout), timeout + 1)
    except NoAnswer:
        return None
    except ConnectionFailed as error:  # ClientSetupFailed included
        return str(error)
    except Exception:  # noqa: BLE001 - anything else is for the caller's own call to meet
        return None
    return None
