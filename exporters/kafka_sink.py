"""The optional Kafka sink: every lake row also published as one JSON record to a Kafka topic.

Configured by ``lake.kafka_sink`` (``cluster``: which configured cluster receives the records,
``topic_prefix``). Table ``consumer_lag`` goes to topic ``<prefix>consumer_lag``, and so on; the
record key is the monitored cluster's name, the value the row as JSON: timestamps as RFC 3339
UTC strings with microseconds (the columns the table's schema types as timestamps,
``kpulse.lake.schema``), nulls as ``null``, column names as in ``docs/lake.md``. A missing
topic is created on first use with the broker's default partitions and replication factor (a
topic the operator created beforehand is used as it is).

Nothing is lost silently. The producer (``acks=all``, idempotent) retries a record until
``message_timeout_seconds`` pass; while the receiving cluster is down records wait in the
producer's queue (at most ``max_queued`` records). A record that times out, is refused, or does
not fit in the queue is counted as dropped, and the drops become a :class:`kpulse.lake.store.Gap`
per table and cluster (first and last ``time``, count, reason) that the collection service
writes to the lake's ``lake_gap`` table like the lake's own gaps.
"""

from __future__ import annotations

import json
import threading
import time
from datetime import datetime, UTC
from typing import TYPE_CHECKING, Any
from collections.abc import Callable, Iterable

import pyarrow as pa

from kpulse.lake.schema import table_schema
from kpulse.lake.store import Gap, to_micros

if TYPE_CHECKING:
    from confluent_kafka.admin import AdminClient

DEFAULT_MAX_QUEUED = 500_000
TOPIC_RETRY_SECONDS = 60.0


def record_value(table: str, row: dict[str, Any], times: frozenset[str] | None = None) -> bytes:
    """The JSON value of one row of ``table`` (a built-in table, or an add-on's registered one); pure.
    ``times``: :func:`time_columns` of the table, when the caller has it already."""
    times = time_columns(table) if times is None else times
    return json.dumps({key: _json_value(key in times, value) for key, value in row.items()},
                      separators=(",", ":"), allow_nan=False).encode()


def time_columns(table: str) -> frozenset[str]:
    """The columns of ``table`` its schema types as timestamps (none for a table the lake does not know)."""
    schema = table_schema(table)
    return frozenset() if schema is None else frozenset(f.name for f in schema if pa.types.is_timestamp(f.type))


def _json_value(is_time: bool, value: Any) -> Any:
    if value is None:
        return None
    if is_time:
        micros = to_micros(value)
        moment = datetime.fromtimestamp(micros // 1_000_000, tz=UTC)
        return moment.replace(microsecond=micros % 1_000_000).isoformat().replace("+00:00", "Z")
    if isinstance(value, float) and value != value:  # NaN: a value that could not be read
        return None
    return value


class GapLedger:
    """Dropped records merged per (table, cluster) until taken; thread-safe (delivery reports
    arrive on the producer's poll thread)."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._gaps: dict[tuple[str, str], Gap] = {}
        self._lock = threading.Lock()
        self._clock = clock

    def record(self, table: str, cluster: str, row_time: Any, reason: str) -> None:
        """One dropped row of ``table`` whose ``time`` column was ``row_time``."""
        moment = datetime.fromtimestamp(to_micros(row_time) / 1_000_000, tz=UTC)
        with self._lock:
            gap = self._gaps.get((table, cluster))
            if gap is None:
                dropped_at = datetime.fromtimestamp(self._clock(), tz=UTC)
                self._gaps[(table, cluster)] = Gap(table, cluster, moment, moment, 1, reason, dropped_at)
            else:
                self._gaps[(table, cluster)] = Gap(table, cluster, min(gap.first_time, moment),
                                                   max(gap.last_time, moment), gap.rows_dropped + 1, reason,
                                                   gap.time)

    def take(self) -> list[Gap]:
        with self._lock:
            gaps, self._gaps = list(self._gaps.values()), {}
        return gaps


class KafkaSink:
    """See the module docstring. ``producer_factory(settings)`` replaces confluent-kafka's
    ``Producer`` (tests); nothing connects before the first :meth:`append`."""

    def __init__(self, client_config: dict[str, str], topic_prefix: str, *,
                 message_timeout_seconds: float = 300.0, max_queued: int = DEFAULT_MAX_QUEUED,
                 producer_factory: Callable[[dict], Any] | None = None,
                 admin_factory: Callable[[dict], Any] | None = None) -> None:
        self.topic_prefix = topic_prefix
        self._client_config = dict(client_config)
        self._admin_factory = admin_factory
        self._topics_ready: set[str] = set()
        self._topic_requests: dict[str, tuple[Any, float]] = {}
        self._admin: AdminClient | None = None
        self._settings = {**client_config, "acks": "all", "enable.idempotence": True,
                          "compression.type": "lz4", "linger.ms": 200,
                          "message.timeout.ms": int(message_timeout_seconds * 1000),
                          "queue.buffering.max.messages": max_queued}
        self._factory = producer_factory
        self._producer = None
        self.gaps = GapLedger()
        self.last_error: str | None = None

    def _get_producer(self):
        if self._producer is None:
            if self._factory is not None:
                self._producer = self._factory(self._settings)
            else:
                from confluent_kafka import Producer

                from kpulse.kafka.clients import quiet_logger

                self._producer = Producer({**self._settings, "logger": quiet_logger()})
        return self._producer

    def append(self, table: str, rows: Iterable[dict[str, Any]]) -> int:
        """Queue every row (a list of dicts, or ``Columns``, which iterate as dicts); returns how many
        were queued (the rest are recorded as dropped)."""
        producer = self._get_producer()
        topic = self.topic_prefix + table
        self._ensure_topic(topic)
        queued = 0
        times = time_columns(table)
        for row in rows:
            cluster = str(row.get("cluster"))
            try:
                producer.produce(topic, key=cluster.encode(), value=record_value(table, row, times),
                                 on_delivery=self._on_delivery(table, cluster, row.get("time")))
                queued += 1
            except BufferError:
                producer.poll(0)
                self._drop(table, cluster, row.get("time"), "kafka sink queue full (receiving cluster down?)")
            except Exception as error:  # noqa: BLE001 - a bad row or topic name must not stop the others
                self._drop(table, cluster, row.get("time"), f"kafka sink: {_one_line(error)}")
        producer.poll(0)
        return queued

    def _ensure_topic(self, topic: str) -> None:
        """Ask for ``topic`` to be created when missing, without waiting: a cycle must never block
        on a sink that is down. Records produced meanwhile wait for the topic (up to the message
        timeout); a failed creation is asked again after ``TOPIC_RETRY_SECONDS``."""
        if topic in self._topics_ready:
            return
        from confluent_kafka import KafkaError
        from confluent_kafka.admin import NewTopic

        from kpulse.kafka.clients import admin_client

        pending = self._topic_requests.get(topic)
        if pending is not None:
            future, asked = pending
            if not future.done():
                return
            error = future.exception()
            code = error.args[0].code() if error is not None and error.args and hasattr(error.args[0], "code") else None
            if error is None or code == KafkaError.TOPIC_ALREADY_EXISTS:
                self._topics_ready.add(topic)
                return
            self.last_error = f"kafka sink: could not create topic {topic}: {_one_line(error)}"
            if time.monotonic() - asked < TOPIC_RETRY_SECONDS:
                return
        if self._admin is None:
            self._admin = (self._admin_factory or admin_client)(self._client_config)
        try:
            future = self._admin.create_topics([NewTopic(topic, num_partitions=-1, replication_factor=-1)],
                                               request_timeout=10)[topic]
        except Exception as error:  # noqa: BLE001 - a refused request: asked again later
            self.last_error = f"kafka sink: could not create topic {topic}: {_one_line(error)}"
            future = _failed(error)
        self._topic_requests[topic] = (future, time.monotonic())

    def _on_delivery(self, table: str, cluster: str, row_time: Any):
        def report(error, _message) -> None:
            if error is not None:
                self._drop(table, cluster, row_time, f"kafka sink: {error.str() if hasattr(error, 'str') else error}")
        return report

    def _drop(self, table: str, cluster: str, row_time: Any, reason: str) -> None:
        self.last_error = reason
        if row_time is not None:
            self.gaps.record(table, cluster, row_time, reason)

    def poll(self, timeout: float = 0.0) -> int:
        """Serve delivery reports; returns the records still waiting for one."""
        if self._producer is None:
            return 0
        self._producer.poll(timeout)
        return len(self._producer)

    def close(self, timeout: float = 10.0) -> int:
        """Deliver what can be delivered within ``timeout``; returns the records left undelivered
        (recorded as dropped)."""
        if self._producer is None:
            return 0
        left = self._producer.flush(timeout)
        if left:  # purged records get a delivery report with an error: recorded as dropped
            self._producer.purge()
            self._producer.flush(1.0)
        return left


def _failed(error: BaseException):
    from concurrent.futures import Future

    future: Future = Future()
    future.set_exception(error)
    return future


def _one_line(error: BaseException) -> str:
    text = " ".join(f"{type(error).__name__}: {error}".split())
    return text if len(text) <= 300 else text[:297] + "..."
