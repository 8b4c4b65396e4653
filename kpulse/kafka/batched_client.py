"""The client the lag collector's batched reads share (``committed_offsets``, ``log_ends``).

librdkafka's Admin API reads one group per OffsetFetch, each after a FindCoordinator, and splits
ListOffsets into many requests. Kafka's protocol can do both in a few requests, and kafka-python
(already a dependency for partition reassignment) lets kpulse send exactly those requests: its
``KafkaAdminClient`` connects, authenticates and keeps the connections; kpulse builds the
requests and reads the answers.

:class:`BatchedClient` builds that client on first use (the constructor connects to nothing) and
says why it cannot be used: a client that could not be built (a token endpoint that refuses the
OAUTHBEARER client, ...; tried again after :data:`REBUILD_AFTER_SECONDS`), brokers too old for a
request. The readers then return None and the lag collector reads through librdkafka instead.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Protocol, TypeVar
from collections.abc import Awaitable, Callable, Coroutine, Mapping

if TYPE_CHECKING:
    from kafka import KafkaAdminClient

    from kpulse.config.model import ClusterConfig

LOG = logging.getLogger(__name__)
_T = TypeVar("_T")

REBUILD_AFTER_SECONDS = 300.0
"""After the client could not be built, the next attempt waits this long."""


class Unavailable(Exception):
    """The batched reading cannot be used now: the reader returns None, the caller reads through
    librdkafka. The text is one line saying why."""


class ConnectionManager(Protocol):
    """What the readers use of kafka-python's connection manager (``KafkaAdminClient._manager``;
    its ``broker_version_data`` is read where present). kafka-python has no type information: its
    cluster metadata, requests and answers are ``Any``."""

    @property
    def cluster(self) -> Any: ...

    def send(self, request: Any, /, node_id: int | None, request_timeout_ms: int) -> Any:
        """The answer's future (awaitable); raises at once for a broker the client does not know."""

    def run(self, coro: Callable[..., Coroutine[Any, Any, _T]], /, *args: Any) -> _T:
        """``coro(*args)`` run to its end on the client's event loop."""


class BatchedClient:
    def __init__(self, cluster_config: ClusterConfig, client_factory: Callable[..., Any] | None = None,
                 clock: Callable[[], float] = time.monotonic, client_id: str = "kpulse-collector",
                 fallback_note: str | None = "lag reads go through librdkafka") -> None:
        self._cluster = cluster_config
        self._fallback_note = fallback_note
        """Logged (a warning, once per reason) before the reason a read fell back; None: not
        logged, the caller reports the reason itself (the CLI prints one line)."""
        self._factory = client_factory or _default_client
        self.clock = clock
        self._client_id = client_id
        self._client: KafkaAdminClient | None = None
        self._building = threading.Lock()
        self._retry_at = float("-inf")
        self.unavailable_reason: str | None = None
        """Why the last batched read fell back to librdkafka (None: it did not)."""
        self.fallbacks = 0
        """How many reads fell back to librdkafka."""

    def manager(self, timeout: float, needs: Mapping[Any, int]) -> ConnectionManager:
        """The client's connection manager (``send``, ``run``, ``cluster``), if the brokers speak
        every request class in ``needs`` at least at the version given; else raises
        :class:`Unavailable`."""
        with self._building:  # the log ends are read from a thread of their own
            if self._client is None:
                if self.clock() < self._retry_at:
                    raise Unavailable(self.unavailable_reason or "the kafka-python client could not be built")
                try:
                    self._client = self._factory(self._cluster, client_id=self._client_id, timeout=timeout)
                except Exception as error:  # noqa: BLE001 - librdkafka still reads the cluster
                    from kpulse.kafka.clients import ConnectionFailed

                    self._retry_at = self.clock() + REBUILD_AFTER_SECONDS
                    if isinstance(error, ConnectionFailed):  # the cluster refuses kpulse: say so as it is
                        raise Unavailable(str(error)) from error
                    raise Unavailable(f"the kafka-python client could not be built: {one_line(error)}") from error
            client = self._client
        manager = client._manager
        for request, version in needs.items():
            if manager.broker_version_data.api_version(request) < version:
                raise Unavailable(f"the brokers do not speak {request.__name__} v{version} (Kafka < 3.0)")
        connections: ConnectionManager = manager
        return connections

    def fell_back(self, reason: str) -> None:
        """Record (and log, once per reason) why a read went to librdkafka."""
        if reason != self.unavailable_reason and self._fallback_note is not None:
            LOG.warning("%s: %s", self._fallback_note, reason)
        self.unavailable_reason = reason
        self.fallbacks += 1

    def succeeded(self) -> None:
        self.unavailable_reason = None

    def close(self) -> None:
        with self._building:
            client, self._client = self._client, None
        if client is not None:
            client.close()


def send(manager: ConnectionManager, request: Any, node: int | None, timeout_ms: int) -> Awaitable[Any] | Exception:
    """The answer's future, or the exception raised at once (a broker the client does not know)."""
    try:
        future: Awaitable[Any] = manager.send(request, node_id=node, request_timeout_ms=timeout_ms)
    except Exception as error:  # noqa: BLE001 - handed to the caller
        return error
    return future


async def answer(sent: Awaitable[Any] | Exception) -> Any:
    """The answer of what :func:`send` returned (raises the failure)."""
    if isinstance(sent, Exception):
        raise sent
    return await sent


def remaining_ms(deadline: float, clock: Callable[[], float]) -> int:
    return max(1, int((deadline - clock()) * 1000))


def error_name(code: int) -> str:
    """Kafka's name of an error code: 16 -> 'NOT_COORDINATOR'."""
    import kafka.errors as errors

    return getattr(errors.for_code(code), "message", None) or f"error code {code}"


def one_line(error: BaseException) -> str:
    return (f"{type(error).__name__}: {error}".splitlines() or [type(error).__name__])[0]


def _default_client(cluster: ClusterConfig, *, client_id: str, timeout: float) -> KafkaAdminClient:
    from kpulse.kafka.clients import kafka_python_admin

    return kafka_python_admin(cluster, client_id=client_id, timeout=timeout)
