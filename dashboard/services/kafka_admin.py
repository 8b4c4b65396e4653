"""The dashboard's only Kafka calls (Admin API): topic metadata, topic configs and partition
offsets. Plain data out; every failure of a call is a :class:`DashboardError` with one line (a
topic whose configs alone are refused is not: :class:`services.topics.TopicConfigs` says why).

The client is built on first use (:class:`kpulse.kafka.clients.LazyAdmin`); pass ``factory`` to
use another (tests, benchmarks). After a failure, calls fail at once with the same error for
``RETRY_AFTER_SECONDS`` so an unreachable cluster does not make every page wait for the timeout."""

from __future__ import annotations

import concurrent.futures
import time
from typing import Any
from collections.abc import Callable

from dashboard.services.sources import DashboardError
from dashboard.services.topics import TopicConfigs
from kpulse.kafka.authorization import refusal_text
from kpulse.kafka.clients import LazyAdmin, admin_client, error_text, list_topics

TIMEOUT_SECONDS = 5.0
RETRY_AFTER_SECONDS = 15.0


class ClusterAdmin:
    def __init__(self, cluster_config, factory: Callable[[dict], Any] | None = None,
                 timeout: float = TIMEOUT_SECONDS, clock: Callable[[], float] = time.monotonic,
                 log_dirs_factory: Callable[[Any], Any] | None = None) -> None:
        self._name = cluster_config.name
        self._cluster = cluster_config
        # connection errors kept: list_topics names a refused password or certificate at once
        self._admin = LazyAdmin(cluster_config, factory or (lambda settings: admin_client(settings,
                                                                                          connection_errors=True)))
        self._log_dirs_factory = log_dirs_factory
        self._log_dirs_admin: Any = None  # kafka-python's KafkaAdminClient, once asked for
        self._timeout = timeout
        self._clock = clock
        self._failure: tuple[float, str] | None = None

    def _fail(self, what: str, error: BaseException) -> DashboardError:
        text = f"cluster {self._name}: {what}: {error_text(error)}"
        self._failure = (self._clock() + RETRY_AFTER_SECONDS, text)
        return DashboardError(text)

    def _check(self) -> None:
        if self._failure is not None and self._clock() < self._failure[0]:
            raise DashboardError(f"{self._failure[1]} (retrying in a few seconds)")

    def partitions(self) -> list[dict[str, Any]]:
        """One dict per partition of every topic: topic, partition, leader (-1 = none), replicas, isr."""
        self._check()
        try:
            metadata = list_topics(self._admin.get(), self._timeout)
        except Exception as error:  # noqa: BLE001 - any client failure is one line on the page
            raise self._fail("cannot list topics", error) from None
        self._failure = None
        rows = []
        for name, topic in metadata.topics.items():
            if topic.error is not None and not topic.partitions:
                continue
            for number, partition in topic.partitions.items():
                rows.append({"topic": name, "partition": number, "leader": partition.leader,
                             "replicas": list(partition.replicas), "isr": list(partition.isrs)})
        return rows

    def topic_configs(self, topics: list[str]) -> TopicConfigs:
        """The configs of ``topics`` (one DescribeConfigs for all of them), topic by topic: a topic
        the cluster refuses (its ACLs, an unknown topic) is a problem of that topic only, and the
        others are read. Raises :class:`DashboardError` only when the call as a whole fails."""
        if not topics:
            return TopicConfigs({}, {})
        from confluent_kafka.admin import ConfigResource, ResourceType

        self._check()
        resources = [ConfigResource(ResourceType.TOPIC, topic) for topic in topics]
        try:
            futures = self._admin.get().describe_configs(resources, request_timeout=self._timeout)
        except Exception as error:  # noqa: BLE001 - refused at once: nothing waited for, nothing to remember
            raise DashboardError(f"cluster {self._name}: cannot describe topic configs: {error_text(error)}") from None
        _, waiting = concurrent.futures.wait(list(futures.values()), timeout=self._timeout)
        if waiting:
            raise self._fail("cannot describe topic configs", TimeoutError(
                f"no answer for {len(waiting)} of {len(futures)} topics within {self._timeout:g} s"))
        configs: dict[str, dict[str, dict[str, Any]]] = {}
        problems: dict[str, str] = {}
        for resource, future in futures.items():
            try:
                entries = future.result(timeout=0)
            except Exception as error:  # noqa: BLE001 - this topic's: the others stand
                problems[resource.name] = _config_problem(resource.name, error)
                continue
            configs[resource.name] = {name: {"value": entry.value, "source": entry.source.name
                                             if hasattr(entry.source, "name") else str(entry.source),
                                             "default": bool(entry.is_default)}
                                      for name, entry in entries.items()}
        return TopicConfigs(configs, problems)

    def log_dirs(self, topics: list[str]) -> list[dict[str, Any]]:
        """DescribeLogDirs of ``topics`` on every broker (kafka-python: confluent-kafka has no such
        call), as kafka-python returns it: per broker, per log dir, per topic, partition sizes."""
        if not topics:
            return []
        try:
            if self._log_dirs_admin is None:
                if self._log_dirs_factory is None:
                    from operations.reassign import legacy_admin_client

                    self._log_dirs_factory = legacy_admin_client
                self._log_dirs_admin = self._log_dirs_factory(self._cluster)
            return self._log_dirs_admin.describe_log_dirs(list(topics))
        except Exception as error:  # noqa: BLE001 - sizes are optional: one line, the rest of the page stands
            raise DashboardError(f"cluster {self._name}: cannot read log sizes: {error_text(error)}") from None

    def offsets(self, topic: str, partitions: list[int]) -> dict[int, dict[str, int | None]]:
        """Partition -> {earliest, latest} offsets (one ListOffsets per kind)."""
        from confluent_kafka import TopicPartition
        from confluent_kafka.admin import OffsetSpec

        self._check()
        result: dict[int, dict[str, int | None]] = {p: {"earliest": None, "latest": None} for p in partitions}
        for kind, spec in (("earliest", OffsetSpec.earliest()), ("latest", OffsetSpec.latest())):
            request = {TopicPartition(topic, p): spec for p in partitions}
            try:
                futures = self._admin.get().list_offsets(request, request_timeout=self._timeout)
                for tp, future in futures.items():
                    try:
                        result[tp.partition][kind] = future.result(timeout=self._timeout).offset
                    except Exception:  # noqa: BLE001 - e.g. an offline partition: unknown, not zero
                        result[tp.partition][kind] = None
            except Exception as error:  # noqa: BLE001
                raise self._fail(f"cannot list offsets of {topic}", error) from None
        return result


def _config_problem(topic: str, error: BaseException) -> str:
    """Why one topic's configs were not read: the ACL kpulse lacks when the cluster refused it,
    else the error's text."""
    return refusal_text(error, "DescribeConfigs", "topic", topic) or error_text(error)
