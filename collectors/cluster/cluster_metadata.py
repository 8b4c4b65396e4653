"""The cluster metadata collector: brokers, partition health and load, from the Admin API; the
KRaft quorum (DescribeQuorum) and the eligible leader replicas of the problem partitions
(DescribeTopicPartitions), through kafka-python (``kpulse/kafka/kraft_reads.py``); every topic's
partitions with their replicas and their oldest and newest offsets (``topics``: kafka_exporter's
per-partition series), the offsets from one ListOffsets per leader for each
(``kpulse/kafka/partition_offsets.py``).

ELR and LastKnownElr are read for the problem partitions shown (at most
:data:`PROBLEM_PARTITIONS_SHOWN`) only, one DescribeTopicPartitions for all their topics, page by
page: a healthy cluster costs no request at all, whatever its size
(docs/performance.md has the cost against reading every partition). The quorum is one request a
cycle. Either read failing, or not spoken by the brokers, leaves its fields null with a reason in
``reasons`` (``quorum``, ``elr``); the rest of the section is unaffected.

Note on the controller: in KRaft, DescribeCluster answered by a broker names a *random live
broker* as controller (seen here on Kafka 4.3: three calls gave 1, 2, 1 while the quorum leader was
3). The real active controller comes from the brokers' metrics (``CurrentControllerId``), so this
collector reports ``controller_id`` only as what the Admin API says, flagged as such.
"""

from __future__ import annotations

import heapq
import time
from typing import TYPE_CHECKING, Any, TypeVar, cast
from collections.abc import Callable

from collectors.cluster.cluster_health import PartitionState, summarize
from collectors.protocol import BuiltinSections, CollectContext, CollectorResult
from kpulse.kafka.authorization import refusal_text
from kpulse.kafka.authorization import summary as refused_summary
from kpulse.kafka.batched_client import BatchedClient, one_line
from kpulse.kafka.clients import LazyAdmin, list_topics
from kpulse.kafka.kraft_reads import KraftReader, NotSupported
from kpulse.kafka.partition_offsets import OffsetsRead, PartitionOffsets
from kpulse.lake.schema import SCHEMAS
from kpulse.config import ClusterConfig
from kpulse.snapshot import (ClusterMetadataSection, KraftQuorum, MetadataBroker, PartitionProblemName,
                             ProblemPartition, TopicPartitionState, TopicState)

if TYPE_CHECKING:
    from confluent_kafka.admin import AdminClient

T = TypeVar("T")

CONFIG_REFRESH_SECONDS = 60.0
PROBLEM_PARTITIONS_SHOWN = 200


class ClusterMetadataCollector:
    name = "cluster_metadata"
    sections = {"cluster": ClusterMetadataSection}
    tables = {table: SCHEMAS[table] for table in ("cluster_health", "broker_state")}

    def __init__(self, cluster_config: ClusterConfig, admin_factory: Callable[[dict[str, str]], Any] | None = None,
                 clock: Callable[[], float] = time.monotonic, request_timeout: float = 10.0,
                 kraft_reader: KraftReader | None = None, wall_clock: Callable[[], float] = time.time,
                 partition_offsets: PartitionOffsets | None = None) -> None:
        self._cluster = cluster_config
        self._admin = LazyAdmin(cluster_config, admin_factory)
        self._kraft = kraft_reader or KraftReader(BatchedClient(cluster_config, client_id="kpulse-metadata",
                                                                fallback_note=None))
        client = self._kraft.client
        self._offsets = partition_offsets or (PartitionOffsets(client) if isinstance(client, BatchedClient) else None)
        """Reads every partition's oldest and newest offset; None: not read (a reader without a Kafka client)."""
        self._wall_clock = wall_clock
        self._clock = clock
        self._timeout = request_timeout
        self._known_brokers: set[int] = set()
        self._min_isr: dict[str, int | None] = {}
        self._min_isr_refused: dict[str, str] = {}
        """Topics whose configs the principal may not describe -> the refusal (one line)."""
        self._min_isr_read_at = float("-inf")

    def collect(self, context: CollectContext) -> CollectorResult:
        admin = self._admin.get()
        metadata = list_topics(admin, self._timeout)
        live = {broker_id: f"{broker.host}:{broker.port}" for broker_id, broker in metadata.brokers.items()}
        partitions = [
            PartitionState(name, p.id, p.leader, tuple(p.replicas), tuple(p.isrs))
            for name, topic in metadata.topics.items() if topic.error is None
            for p in topic.partitions.values()
        ]
        self._known_brokers |= set(live).union(*(p.replicas for p in partitions))
        self._refresh_min_isr(admin, sorted(name for name, topic in metadata.topics.items()
                                            if topic.error is None and topic.partitions))
        summary = summarize(partitions, self._min_isr, set(self._known_brokers))
        refused = sorted(t for t in self._min_isr_refused if t in metadata.topics)

        brokers: list[MetadataBroker] = [{"id": b, "up": b in live, "address": live.get(b)}
                                         for b in sorted(self._known_brokers)]
        load = {b.broker_id: b for b in summary.brokers}
        section: ClusterMetadataSection = {
            "controller_id": None,
            "admin_reported_controller_id": metadata.controller_id,
            "reasons": {"controller_id": "KRaft: the Admin API names a random broker; taken from broker metrics"},
            "brokers": brokers,
            "brokers_up": sum(b["up"] for b in brokers),
            "brokers_total": len(brokers),
            "topic_count": summary.topic_count,
            "partition_count": summary.partition_count,
            "under_replicated_partitions": len(summary.under_replicated),
            "offline_partitions": len(summary.offline),
            "under_min_isr_partitions": None if refused else len(summary.under_min_isr),
            "preferred_leader_imbalance": len(summary.not_preferred_leader),
            "broker_load": [
                {"broker_id": b, "partition_count": load[b].partition_count, "leader_count": load[b].leader_count,
                 "preferred_leader_count": load[b].preferred_leader_count} for b in sorted(load)],
            "problem_partitions": [
                {"topic": p.topic, "partition": p.partition, "leader": p.leader, "replicas": list(p.replicas),
                 "isr": list(p.isr), "problems": _problems(p, self._min_isr.get(p.topic))}
                # (topic, partition) lead each tuple and are unique: the tuples sort by them. The first
                # few of a sick cluster's thousands, without sorting them all.
                for p in heapq.nsmallest(PROBLEM_PARTITIONS_SHOWN,
                                         {*summary.offline, *summary.under_min_isr, *summary.under_replicated})],
            "quorum": None,
            "topics": _topics(partitions, self._read_offsets(admin, partitions)),
        }
        if refused:
            section["reasons"]["under_min_isr_partitions"] = _min_isr_unknown(refused, len(summary.under_min_isr))
        nodes = sorted(live)  # asked in turn: a broker down is not asked
        section["quorum"] = self._quorum(section["reasons"], nodes)
        if getattr(getattr(self._cluster, "metrics", None), "source", None) == "none":
            section["kraft_from_admin"] = self._kraft_from_admin(section["quorum"], section["reasons"], nodes)
        self._add_elr(section["problem_partitions"], section["reasons"], nodes)
        row = {"time": context.now, "cluster": self._cluster.name,
               **{k: section[k] for k in ("brokers_up", "brokers_total", "topic_count", "partition_count",
                                          "under_replicated_partitions", "offline_partitions",
                                          "under_min_isr_partitions", "preferred_leader_imbalance")}}
        row["unknown_reasons"] = "; ".join(f"{key}: {section['reasons'][key]}" for key, value in row.items()
                                           if value is None and key in section["reasons"]) or None
        broker_rows = [{"time": context.now, "cluster": self._cluster.name, "broker_id": b["id"], "up": b["up"],
                        "partition_count": load[b["id"]].partition_count if b["id"] in load else 0,
                        "leader_count": load[b["id"]].leader_count if b["id"] in load else 0} for b in brokers]
        return CollectorResult(sections=BuiltinSections(cluster=section),
                               rows={"cluster_health": [row], "broker_state": broker_rows})

    def close(self) -> None:
        self._kraft.client.close()

    def _read_offsets(self, admin: AdminClient, partitions: list[PartitionState]) -> OffsetsRead | str:
        """Every partition's oldest and newest offset, or why none could be read (one line)."""
        if self._offsets is None:
            return "not read: no Kafka client for ListOffsets"
        try:
            return self._offsets.read(admin, [(p.topic, p.partition) for p in partitions], self._timeout)
        except Exception as error:  # noqa: BLE001 - the rest of the section stands
            return f"ListOffsets failed: {one_line(error)}"

    def _quorum(self, reasons: dict[str, str], nodes: list[int]) -> KraftQuorum | None:
        """The quorum with the configured VoterLagging thresholds, or None with ``reasons["quorum"]``."""
        quorum = _kraft_read(lambda: self._kraft.quorum(self._timeout, self._wall_clock(), nodes), reasons,
                             "quorum", "DescribeQuorum")
        if quorum is None:
            return None
        kraft = getattr(self._cluster, "kraft", None)
        quorum["voter_lag_threshold_records"] = getattr(kraft, "voter_lag_records", None)
        quorum["voter_lag_threshold_seconds"] = getattr(kraft, "voter_lag_seconds", None)
        # the reader's quorum (kpulse.kafka.kraft_reads.quorum_from, typed as a dict) with the thresholds above
        return cast(KraftQuorum, quorum)

    def _kraft_from_admin(self, quorum: KraftQuorum | None, reasons: dict[str, str],
                          nodes: list[int]) -> dict[str, int | None]:
        """Without broker metrics (``metrics.source: none``, usual on managed clusters): the active
        controller from DescribeQuorum's leader, fenced and active brokers from DescribeCluster v2."""
        leader = quorum["leader_id"] if quorum is not None else None
        values: dict[str, int | None] = {"controller_id": leader,
                                          "active_controller_count": None if quorum is None else int(leader is not None),
                                          "fenced_broker_count": None, "active_broker_count": None}
        registered = _kraft_read(lambda: self._kraft.registrations(self._timeout, nodes), reasons,
                                 "kraft_brokers", "DescribeCluster")
        if registered is None:
            return values
        values["fenced_broker_count"] = len(registered["fenced"])
        values["active_broker_count"] = len(registered["unfenced"])
        return values

    def _add_elr(self, problems: list[ProblemPartition], reasons: dict[str, str], nodes: list[int]) -> None:
        """Each problem partition's ``elr`` and ``last_known_elr`` (None when not read, with
        ``reasons["elr"]``)."""
        for problem in problems:
            problem["elr"] = problem["last_known_elr"] = None
        if not problems:
            return
        wanted: dict[str, list[int]] = {}
        for problem in problems:
            wanted.setdefault(problem["topic"], []).append(problem["partition"])
        try:
            found = self._kraft.elr(wanted, self._timeout, nodes)
        except NotSupported as reason:
            reasons["elr"] = f"not available: {reason}"
            return
        except Exception as error:  # noqa: BLE001 - the partitions are still shown
            reasons["elr"] = f"DescribeTopicPartitions failed: {one_line(error)}"
            return
        missing = 0
        for problem in problems:
            elr, last_known = found.get((problem["topic"], problem["partition"]), (None, None))
            problem["elr"], problem["last_known_elr"] = elr, last_known
            missing += (problem["topic"], problem["partition"]) not in found
        if missing:
            reasons["elr"] = f"{missing} problem partition(s) not in the DescribeTopicPartitions answer (deleted?)"
        elif any(p["elr"] is None for p in problems):
            reasons["elr"] = "the brokers send no ELR: eligible.leader.replicas.version is not enabled"

    def _refresh_min_isr(self, admin: AdminClient, topics: list[str]) -> None:
        """min.insync.replicas of every topic (its effective value, broker default included),
        re-read every CONFIG_REFRESH_SECONDS and for topics not seen before."""
        now = self._clock()
        stale = now - self._min_isr_read_at > CONFIG_REFRESH_SECONDS
        wanted = topics if stale else [t for t in topics if t not in self._min_isr]
        if not wanted:
            return
        from confluent_kafka.admin import ConfigResource, ResourceType

        futures = admin.describe_configs([ConfigResource(ResourceType.TOPIC, t) for t in wanted],
                                         request_timeout=self._timeout)
        for resource, future in futures.items():
            self._min_isr_refused.pop(resource.name, None)
            try:
                entry = future.result(timeout=self._timeout).get("min.insync.replicas")
                self._min_isr[resource.name] = int(entry.value) if entry is not None else None
            except Exception as error:  # noqa: BLE001 - a topic deleted meanwhile has no config
                self._min_isr[resource.name] = None
                refusal = refusal_text(error, "DescribeConfigs", "topic", resource.name)
                if refusal is not None:
                    self._min_isr_refused[resource.name] = refusal
        if stale:
            self._min_isr_read_at = now
            self._min_isr = {t: self._min_isr.get(t) for t in topics}
            self._min_isr_refused = {t: why for t, why in self._min_isr_refused.items() if t in self._min_isr}


def _topics(partitions: list[PartitionState], offsets: OffsetsRead | str) -> list[TopicState]:
    """Every topic, by name, with its partitions by number: replicas from the metadata, offsets from
    ``offsets`` (or null, each with why)."""
    by_topic: dict[str, list[TopicPartitionState]] = {}
    unread = offsets if isinstance(offsets, str) else None
    read = offsets if isinstance(offsets, OffsetsRead) else OffsetsRead()
    starts, ends = read.log_start, read.log_end
    for state in sorted(partitions):
        key = (state.topic, state.partition)
        start, end = starts.get(key), ends.get(key)
        row: TopicPartitionState = {"partition": state.partition,
                                    "leader": state.leader if state.leader >= 0 else None,
                                    "replicas": list(state.replicas), "isr": list(state.isr),
                                    "log_start_offset": start, "log_end_offset": end}
        if start is None or end is None:
            reasons: dict[str, str] = {}
            if start is None:
                reasons["log_start_offset"] = unread or read.log_start_errors.get(key, "not read")
            if end is None:
                reasons["log_end_offset"] = unread or read.log_end_errors.get(key, "not read")
            row["reasons"] = reasons
        by_topic.setdefault(state.topic, []).append(row)
    return [{"name": name, "partitions": rows} for name, rows in by_topic.items()]


def _kraft_read(read: Callable[[], T], reasons: dict[str, str], key: str, request: str) -> T | None:
    """``read()``, or None with ``reasons[key]``: not spoken by the brokers, refused (in ACL words:
    these requests need Describe on the cluster), or failed; the rest of the section stands."""
    try:
        return read()
    except NotSupported as reason:
        reasons[key] = f"not available: {reason}"
    except Exception as error:  # noqa: BLE001 - the rest of the section stands
        refusal = refusal_text(error, "Describe", "cluster")
        reasons[key] = f"{refusal} ({request})" if refusal else f"{request} failed: {one_line(error)}"
    return None


def _min_isr_unknown(refused_topics: list[str], known_under: int) -> str:
    """Why ``under_min_isr_partitions`` is null: whose min.insync.replicas the principal may not read,
    and what is known without it (offline partitions and the readable topics' partitions)."""
    return (f"{refused_summary('DescribeConfigs', 'topic', refused_topics)}: min.insync.replicas unknown for their "
            f"partitions; {known_under} partition(s) of the other topics (and offline ones) are under min ISR")


def _problems(state: PartitionState, min_isr: int | None) -> list[PartitionProblemName]:
    found: list[PartitionProblemName] = []
    if state.offline:
        found.append("offline")
    if state.under_min_isr(min_isr):
        found.append("under_min_isr")
    if state.under_replicated:
        found.append("under_replicated")
    return found
