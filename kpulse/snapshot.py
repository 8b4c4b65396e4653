"""The snapshot: the typed contract between the collectors (``collectors/snapshot.py`` composes it),
the alert rules, the Prometheus exporter, the dashboard (``<lake>/_snapshots/<cluster>.json``) and
``kpulse collect --once --json``. Every field is documented here, once; ``docs/snapshot.schema.json``
is generated from these types (``python -m kpulse.snapshot > docs/snapshot.schema.json``).

Why ``TypedDict`` with ``Annotated[type, "doc"]``: at run time the snapshot is a plain dict of plain
values (written with orjson, ~1.4 MB a cycle at 10,000 partitions, read back with ``json.load``,
indexed by tests), so building it costs nothing more and no reader converts anything; the type
checker (mypy, ``scripts/check.sh``) checks every key written or read against these classes; and the
documentation of each field is part of its type (``typing.get_type_hints(..., include_extras=True)``),
so the JSON Schema carries it as ``description`` without parsing any source. (This module does not
use ``from __future__ import annotations``: on Python 3.11 a ``TypedDict`` cannot see
``NotRequired`` in a postponed annotation.)

Conventions: a value that could not be collected is null, never zero, and a ``reasons`` map of the
same object says why (field name -> one line). Times are epoch seconds (UTC). Status, state and type
names are ``Literal`` types of their string values (the checker refuses a misspelt one, the schema
lists them as an ``enum``). Keys are exactly those declared; ``NotRequired`` keys appear only when
they apply. Add-on collectors add sections of their own at the top level
(:data:`ADD_ON_SECTIONS_NOTE`), each declared with its type by its collector (``collectors/protocol.py``).
"""

import sys
import types
import typing
from typing import Annotated, Any, Literal, NotRequired, TypedDict, Union
from collections.abc import Mapping

import orjson

from kpulse.config.model import MetricsSourceName
from kpulse.kafka.group_model import (
    CommittingGroupTypeName, GroupStateName, ShareGroupStateName, StreamsGroupStateName,
)
from kpulse.lag_contract import PartitionStatusName
from kpulse.share_contract import ShareStatusName

Reasons = dict[str, str]
"""Field name -> why that field is null (or partial), one line."""


# --- names: the values a status, state or type field takes (the schema lists them as an enum) ----------

PartitionProblemName = Literal["offline", "under_min_isr", "under_replicated"]
"""What is wrong with a :class:`ProblemPartition`."""
StreamsClientStateName = Literal["CREATED", "REBALANCING", "RUNNING", "PENDING_SHUTDOWN", "NOT_RUNNING",
                                 "PENDING_ERROR", "ERROR"]
"""``KafkaStreams.State``: a Streams client's state (its ``client-state`` metric, KIP-1091)."""
StreamsInstanceStateName = Literal[StreamsClientStateName, "UNKNOWN", "UNREACHABLE"]
"""A Streams instance's state: its client's (UNKNOWN: a ``client-state`` value this release does not
know), or UNREACHABLE when its metrics endpoint did not answer."""
StreamsThreadStateName = Literal["CREATED", "STARTING", "PARTITIONS_REVOKED", "PARTITIONS_ASSIGNED", "RUNNING",
                                 "PENDING_SHUTDOWN", "DEAD", "UNKNOWN"]
"""``StreamThread.State`` (its ``thread-state`` metric); UNKNOWN: a value this release does not know."""
StreamsAppStateName = Literal[StreamsClientStateName, "DEGRADED"]
"""A Streams application's state: its instances' folded into one; DEGRADED when some, but fewer than
the expected number of, instances are RUNNING."""
StreamsMemberStateName = Literal["Stable", "Reconciling", "Left"]
"""A Streams group member's state in the transitions: Stable, Reconciling (moving to its target
assignment), Left (no longer in the group)."""
StreamsTransitionStateName = Literal[StreamsInstanceStateName, StreamsGroupStateName, StreamsMemberStateName]
"""A state before or after a Streams transition: an instance's, the Streams group's or a member's."""
StreamsProtocolName = Literal["streams", "classic"]
"""The group protocol a Streams application runs on."""
StreamsInputScopeName = Literal["assigned", "committed"]
"""Which partitions a Streams group's ``input_partitions`` holds."""
AlertSeverityName = Literal["warning", "critical"]
"""A firing alert's severity."""


# --- the cluster section ------------------------------------------------------------------------------

class MetadataBroker(TypedDict):
    """A broker the cluster metadata names (``cluster.brokers``)."""

    id: Annotated[int, "Broker (node) id."]
    up: Annotated[bool, "The broker is in the cluster metadata this cycle."]
    address: Annotated[str | None, "host:port it advertises; null while it is not up."]


class ProblemPartition(TypedDict):
    """A partition that is offline, under min ISR or under-replicated (the first 200, by topic and partition)."""

    topic: Annotated[str, "Topic."]
    partition: Annotated[int, "Partition number."]
    leader: Annotated[int | None, "Leader's broker id; null or -1 without a leader."]
    replicas: Annotated[list[int], "Replica broker ids, the preferred leader first."]
    isr: Annotated[list[int], "In-sync replica broker ids."]
    problems: Annotated[list[PartitionProblemName], "Which of offline, under_min_isr, under_replicated."]
    elr: NotRequired[Annotated[list[int] | None, "Eligible leader replicas (KIP-966): replicas out of the ISR that "
                                                 "can still be elected leader without losing committed data, as "
                                                 "kafka-topics --describe prints Elr:; null when not read (reasons."
                                                 "elr says why). "
                                                 "Optional: snapshots written without it still validate."]]
    last_known_elr: NotRequired[Annotated[list[int] | None, "Last known ELR: replicas that were eligible when the "
                                                            "partition went offline, the candidates of an unclean "
                                                            "recovery (kafka-topics' LastKnownElr:); null as elr. "
                                                            "Optional: snapshots written without it still validate."]]


class QuorumReplica(TypedDict):
    """One voter or observer of the KRaft metadata quorum, as DescribeQuorum answers (a row of
    ``kafka-metadata-quorum describe --replication``)."""

    id: Annotated[int, "Node id."]
    log_end_offset: Annotated[int | None, "Its metadata log end offset as the leader last saw it; null when the "
                                          "leader does not know it (it has not fetched since the leader was "
                                          "elected: the tool prints -1)."]
    lag: Annotated[int | None, "The leader's log end offset minus this replica's, records, as the tool's Lag column "
                               "computes it (the leader's is 0; with an unknown log end, the leader's log end + 1); "
                               "null when the leader's is unknown."]
    last_fetch_time: Annotated[float | None, "When it last fetched from the leader (epoch seconds; the tool's "
                                             "LastFetchTimestamp / 1000); null when never."]
    last_caught_up_time: Annotated[float | None, "When it last reached the leader's log end (epoch seconds; "
                                                 "LastCaughtUpTimestamp / 1000); null when never."]
    caught_up_age_seconds: Annotated[float | None, "Seconds since last_caught_up_time, at the time of the read."]


class KraftQuorum(TypedDict):
    """The KRaft metadata quorum (``__cluster_metadata``), from DescribeQuorum: what
    ``kafka-metadata-quorum describe --status`` and ``--replication`` print."""

    leader_id: Annotated[int | None, "The quorum leader's node id (the active controller); null when there is none."]
    leader_epoch: Annotated[int, "The leader's epoch: bumped by every election."]
    high_watermark: Annotated[int | None, "The metadata log's high watermark (committed offset)."]
    voters: Annotated[list[QuorumReplica], "The voters (controllers), the leader first, then by id."]
    observers: Annotated[list[QuorumReplica], "The observers (broker-only nodes replicating the log), by id."]
    max_voter_lag: Annotated[int | None, "Largest lag of a follower voter, records (the tool's MaxFollowerLag); "
                                         "null without followers."]
    max_voter_caught_up_age_seconds: Annotated[float | None, "Largest caught_up_age_seconds of a follower voter; "
                                                             "null without followers."]
    voter_lag_threshold_records: Annotated[int | None, "Config kraft.voter_lag_records: a voter further behind "
                                                       "fires VoterLagging."]
    voter_lag_threshold_seconds: Annotated[float | None, "Config kraft.voter_lag_seconds: a voter not caught up "
                                                         "for longer fires VoterLagging."]


class TopicPartitionState(TypedDict):
    """One partition of a topic: its replicas from the metadata, its offsets from ListOffsets
    (kafka_exporter's ``kafka_topic_partition_*`` series)."""

    partition: Annotated[int, "Partition number."]
    leader: Annotated[int | None, "Leader's broker id; null without a leader."]
    replicas: Annotated[list[int], "Replica broker ids, the preferred leader first."]
    isr: Annotated[list[int], "In-sync replica broker ids."]
    log_start_offset: Annotated[int | None, "Oldest offset (ListOffsets earliest); null when it could not be read "
                                            "(reasons.log_start_offset says why)."]
    log_end_offset: Annotated[int | None, "Newest offset, the next one written (ListOffsets latest, read "
                                          "uncommitted: the high watermark); null when it could not be read "
                                          "(reasons.log_end_offset says why)."]
    reasons: NotRequired[Annotated[Reasons, "Why an offset above is null; present only then."]]


class TopicState(TypedDict):
    """One topic of the cluster metadata, with every partition."""

    name: Annotated[str, "Topic name."]
    partitions: Annotated[list[TopicPartitionState], "Its partitions, by number."]


class ClusterHealth(TypedDict):
    """Partition health from the Admin API, the controller from the brokers' metrics."""

    controller_id: Annotated[int | None, "Active controller's node id, from broker metrics (in KRaft the "
                                         "Admin API names a random broker)."]
    admin_reported_controller_id: NotRequired[Annotated[int | None, "What the Admin API's DescribeCluster names "
                                                                    "(a random live broker in KRaft); absent when "
                                                                    "the metadata was not collected."]]
    brokers: Annotated[list[MetadataBroker], "Brokers known: live now, named in a replica list, or seen since the "
                                             "collector started."]
    brokers_up: Annotated[int | None, "Brokers present in the cluster metadata this cycle."]
    brokers_total: Annotated[int | None, "Brokers known (up or not)."]
    topic_count: Annotated[int | None, "Topics in the metadata."]
    partition_count: Annotated[int | None, "Partitions of all topics."]
    under_replicated_partitions: Annotated[int | None, "Partitions whose ISR is smaller than their replica set."]
    offline_partitions: Annotated[int | None, "Partitions without a leader."]
    under_min_isr_partitions: Annotated[int | None, "Partitions whose ISR is smaller than the topic's "
                                                    "min.insync.replicas."]
    preferred_leader_imbalance: Annotated[int | None, "Online partitions whose leader is not the first "
                                                      "(preferred) replica."]
    active_controller_count: Annotated[int | None, "Nodes reporting themselves as the active controller "
                                                   "(healthy: 1); from broker metrics."]
    problem_partitions: Annotated[list[ProblemPartition], "The first partitions with a problem, by topic and "
                                                          "partition."]
    topics: NotRequired[Annotated[list[TopicState] | None, "Every topic the principal may describe, internal ones "
                                                           "included, by name, with every partition's replicas and "
                                                           "offsets; null when the metadata was not collected. "
                                                           "Optional: snapshots written without it still validate."]]
    quorum: NotRequired[Annotated[KraftQuorum | None, "The KRaft metadata quorum; null when it could not be read "
                                                      "(reasons.quorum says why). "
                                                      "Optional: snapshots written without it still validate."]]
    fenced_broker_count: NotRequired[Annotated[int | None, "Fenced brokers as the active controller says "
                                                           "(FencedBrokerCount); from broker metrics. "
                                                           "Optional: snapshots written without it still validate."]]
    active_broker_count: NotRequired[Annotated[int | None, "Registered, unfenced brokers as the active controller "
                                                           "says (ActiveBrokerCount); from broker metrics. "
                                                           "Optional: snapshots written without it still validate."]]
    metadata_error_count: NotRequired[Annotated[int | None, "MetadataErrorCount summed over the controller-role "
                                                            "nodes (errors loading or applying the metadata log "
                                                            "since each started); from broker metrics. "
                                                            "Optional: snapshots written without it still validate."]]
    reasons: Annotated[Reasons, "Why a field above is null."]


# --- brokers --------------------------------------------------------------------------------------------

class Broker(TypedDict):
    """One broker: load from the metadata, saturation, traffic and latency from its metrics."""

    id: Annotated[int, "Broker (node) id."]
    up: Annotated[bool | None, "In the cluster metadata this cycle; null when the metadata was not collected."]
    partition_count: Annotated[int | None, "Replicas hosted by the broker."]
    leader_count: Annotated[int | None, "Partitions the broker leads."]
    preferred_leader_count: Annotated[int | None, "Partitions whose preferred (first) replica it is."]
    request_handler_idle_ratio: Annotated[float | None, "0..1 idle fraction of the request handler threads "
                                                        "(< 0.2 warn, < 0.1 critical)."]
    network_processor_idle_ratio: Annotated[float | None, "0..1 idle fraction of the network threads."]
    bytes_in_per_sec: Annotated[float | None, "Produced bytes per second, replication excluded."]
    bytes_out_per_sec: Annotated[float | None, "Bytes fetched by consumers per second, replication excluded."]
    messages_in_per_sec: Annotated[float | None, "Produced messages per second."]
    produce_p99_ms: Annotated[float | None, "99th percentile of Produce request total time, ms."]
    fetch_p99_ms: Annotated[float | None, "99th percentile of FetchConsumer request total time, ms."]
    metadata_error_count: NotRequired[Annotated[int | None, "KRaft MetadataErrorCount of this node: errors "
                                                            "loading or applying the metadata log since it started; "
                                                            "null on broker-only nodes. "
                                                            "Optional: snapshots written without it still validate."]]
    fenced_broker_count: NotRequired[Annotated[int | None, "FencedBrokerCount as this controller-role node says; "
                                                           "null on broker-only nodes. "
                                                           "Optional: snapshots written without it still validate."]]
    active_broker_count: NotRequired[Annotated[int | None, "ActiveBrokerCount as this controller-role node says; "
                                                           "null on broker-only nodes. "
                                                           "Optional: snapshots written without it still validate."]]
    metadata_apply_lag_ms: NotRequired[Annotated[float | None, "LastAppliedRecordLagMs: now minus the append time "
                                                               "of the last metadata record this node applied, ms; "
                                                               "null on broker-only nodes. Optional: snapshots "
                                                               "written without it still validate."]]
    bytes_in_total: NotRequired[Annotated[int | None, "The broker's BytesInPerSec count: produced bytes since it "
                                                      "started, replication excluded (a counter). Optional: "
                                                      "snapshots written without it still validate."]]
    bytes_out_total: NotRequired[Annotated[int | None, "The broker's BytesOutPerSec count: bytes fetched by "
                                                       "consumers since it started (a counter). Optional: snapshots "
                                                       "written without it still validate."]]
    messages_in_total: NotRequired[Annotated[int | None, "The broker's MessagesInPerSec count: produced messages "
                                                         "since it started (a counter). Optional: snapshots written "
                                                         "without it still validate."]]
    error: Annotated[str | None, "Why its metrics could not be read (one line); null when they were."]
    reasons: Annotated[Reasons, "Why a metric above is null."]


# --- consumer groups ------------------------------------------------------------------------------------

class GroupPartition(TypedDict):
    """One partition a consumer group has a committed offset for (or is assigned)."""

    topic: Annotated[str, "Topic."]
    partition: Annotated[int, "Partition number."]
    committed_offset: Annotated[int | None, "The group's committed offset (the next record it reads); null "
                                            "without a commit."]
    log_end_offset: Annotated[int | None, "The partition's log end offset; null when it could not be read."]
    lag: Annotated[int | None, "log_end_offset - committed_offset, clamped at 0; null when either is unknown."]
    lag_seconds: Annotated[float | None, "How far behind in time, interpolated from the log end history; null "
                                         "when it cannot be told."]
    status: Annotated[PartitionStatusName | None, "Burrow-style status (kpulse/lag_contract.py); null with too "
                                                  "few observations."]
    reasons: NotRequired[Annotated[Reasons, "Why a value above is null; present only then."]]


class GroupMember(TypedDict):
    """One member of a group, as its type's describe call tells it."""

    member_id: Annotated[str, "Member id."]
    client_id: Annotated[str, "The member's client id."]
    client_host: Annotated[str, "The host it connects from."]
    instance_id: Annotated[str | None, "Static membership's group.instance.id; null without one."]
    member_epoch: Annotated[int | None, "KIP-848 / Streams member epoch; null for a classic member."]
    process_id: Annotated[str | None, "A Streams member's process id; null for other types."]
    assignment: Annotated[dict[str, list[int]], "Topic -> the partitions it reads now (a Streams member: the "
                                                 "source partitions of its active tasks)."]
    target_assignment: Annotated[dict[str, list[int]] | None, "KIP-848: topic -> the partitions the coordinator "
                                                              "wants it to own; null for other types."]
    reconciling: Annotated[bool, "Its epoch or assignment is not yet the group's target (KIP-848, Streams)."]


class ConsumerGroup(TypedDict):
    """One consumer group: its sums over its partitions, and the partitions.

    ``total_lag`` / ``max_lag_seconds`` are over the partitions whose value is known;
    ``lag_unknown_partitions`` / ``lag_seconds_unknown_partitions`` count the partitions with a
    committed offset that were left out (a log end not read while a broker is down), and
    ``total_lag_partial`` / ``max_lag_seconds_partial`` are true when the value is over some
    partitions but not all (a lower bound), with ``reasons`` naming the partitions and why."""

    group_id: Annotated[str, "Consumer group id."]
    type: Annotated[CommittingGroupTypeName, "classic, consumer (KIP-848) or streams (KIP-1071), as kafka-groups "
                                             "--list shows it."]
    protocol_type: Annotated[str, "The protocol kafka-groups --list shows (consumer, connect, streams...)."]
    state: Annotated[GroupStateName | None, "Kafka's group state for its type (kpulse/kafka/group_model.py); "
                                            "Unknown when it could not be read."]
    members: Annotated[int | None, "Active members."]
    partition_count: Annotated[int, "Partitions the group has offsets for (the lake's consumer_group.partitions)."]
    total_lag: Annotated[int | None, "Sum of the partitions' lag over those whose lag is known; null when none is."]
    total_lag_partial: Annotated[bool, "total_lag leaves out some partitions: a lower bound."]
    lag_unknown_partitions: Annotated[int, "Partitions with a committed offset left out of total_lag."]
    max_lag_seconds: Annotated[float | None, "Largest lag_seconds over the partitions whose time lag is known; "
                                             "null when none is."]
    max_lag_seconds_partial: Annotated[bool, "max_lag_seconds leaves out some partitions: a lower bound."]
    lag_seconds_unknown_partitions: Annotated[int, "Partitions with a committed offset left out of "
                                                   "max_lag_seconds."]
    status: Annotated[PartitionStatusName | None, "Worst partition status (OK < WARN < REWIND < STALL < STOP < "
                                                  "ERR); null while no partition has one."]
    lag_seconds_threshold: Annotated[float | None, "The configured time-lag threshold for this group, seconds."]
    error: Annotated[str | None, "Why the group's offsets could not be read (one line); null when they were."]
    group_epoch: Annotated[int | None, "KIP-848 / Streams group epoch; null for a classic group or one not "
                                       "described (listed Empty)."]
    assignment_epoch: Annotated[int | None, "KIP-848 / Streams target assignment epoch; null as group_epoch."]
    reconciling_members: Annotated[int | None, "Members still moving to their target assignment; null as "
                                               "group_epoch."]
    member_details: Annotated[list[GroupMember], "Its members (none for a group listed Empty)."]
    reasons: NotRequired[Annotated[Reasons, "Why a sum is partial or null, or the status unknown; present only "
                                            "then."]]
    expected_idle: NotRequired[Annotated[bool, "True for a group expected to be idle (config "
                                               "consumer_groups.expected_idle, or marked on the Consumer groups "
                                               "page): shown, but it fires no group alert; present only then."]]
    partitions: Annotated[list[GroupPartition], "Its partitions, by topic and partition."]


# --- share groups ---------------------------------------------------------------------------------------

class SharePartition(TypedDict):
    """One partition of a share group, as DescribeShareGroupOffsets answers (the START-OFFSET and LAG
    columns of ``kafka-share-groups --describe``)."""

    topic: Annotated[str, "Topic."]
    partition: Annotated[int, "Partition number."]
    start_offset: Annotated[int | None, "Share-partition start offset: every record before it is acknowledged "
                                        "(or archived); null when the group has not initialised the partition."]
    lag: Annotated[int | None, "Records not yet acknowledged, as the broker counts them (not log end - start "
                               "offset: records acknowledged out of order are not counted); null when unknown."]
    status: Annotated[ShareStatusName | None, "OK, WARN, STALLED or NOT_CONSUMING (kpulse/share_contract.py); "
                                              "null with too few readings or an unknown value."]
    reasons: NotRequired[Annotated[Reasons, "Why a value above is null; present only then."]]


class ShareMemberState(TypedDict):
    """One member of a share group, as ``kafka-share-groups --describe --members`` shows it."""

    member_id: Annotated[str, "Member id."]
    client_id: Annotated[str, "The consumer's client.id."]
    host: Annotated[str, "The consumer's host, as the broker saw it."]
    rack_id: Annotated[str | None, "The consumer's client.rack; null when not set."]
    member_epoch: Annotated[int, "The member's epoch."]
    subscribed_topics: Annotated[list[str], "Topics it subscribed to."]
    assignment: Annotated[dict[str, list[int]], "Topic -> the partitions assigned to it, sorted."]


class ShareGroupState(TypedDict):
    """One share group (KIP-932): state, members and assignments, and per partition the start offset
    and the lag the broker reports, with a status over a window of readings.

    ``total_lag`` is over the partitions whose lag is known; ``lag_unknown_partitions`` counts the
    others and ``total_lag_partial`` is true when the sum leaves some out (a lower bound)."""

    group_id: Annotated[str, "Share group id."]
    state: Annotated[ShareGroupStateName | Literal["Unknown"] | None, "Kafka's share group state (Unknown when "
                                                                      "this release does not know it); null when "
                                                                      "the group could not be described."]
    members: Annotated[int | None, "Members; null when the group could not be described."]
    group_epoch: Annotated[int | None, "Bumped by every change of members or subscriptions."]
    assignment_epoch: Annotated[int | None, "Epoch of the target assignment."]
    partition_count: Annotated[int, "Partitions the broker reports offsets for (the lake's share_group.partitions)."]
    total_lag: Annotated[int | None, "Sum of the partitions' lag over those whose lag is known; null when none is."]
    total_lag_partial: Annotated[bool, "total_lag leaves out some partitions: a lower bound."]
    lag_unknown_partitions: Annotated[int, "Partitions whose lag is unknown, left out of total_lag."]
    status: Annotated[ShareStatusName | None, "Worst partition status (OK < WARN < STALLED < NOT_CONSUMING); "
                                              "null while no partition has one."]
    error: Annotated[str | None, "Why the group could not be described or its offsets read (one line); null when "
                                 "they were."]
    reasons: NotRequired[Annotated[Reasons, "Why a sum is partial or null, or the status unknown; present only "
                                            "then."]]
    member_list: Annotated[list[ShareMemberState], "Its members, by member id."]
    partitions: Annotated[list[SharePartition], "Its partitions, by topic and partition."]


class ShareGroups(TypedDict):
    """Every share group of the cluster, or why the cluster has none to show."""

    groups: Annotated[list[ShareGroupState], "Every share group, by group id."]
    unsupported: Annotated[str | None, "Why the brokers cannot describe share groups (an older Kafka, where they do "
                                       "not exist): not an error; null when they can."]
    read_at: Annotated[float, "When this reading was asked for, epoch seconds: older than the snapshot when the "
                              "brokers took longer than the collector waits (the last reading is shown until the "
                              "answer comes)."]
    read_seconds: Annotated[float | None, "How long the brokers took to answer this reading, seconds."]


# --- Kafka Streams applications -------------------------------------------------------------------------

class StreamsInstance(TypedDict):
    """One Streams instance, as its metrics endpoint shows it."""

    id: Annotated[str, "The instance: its client id, or the endpoint's URL until it has answered."]
    endpoint: Annotated[str, "The metrics endpoint it is read from."]
    state: Annotated[StreamsInstanceStateName | None, "KafkaStreams client state (RUNNING, REBALANCING, ERROR, "
                                                      "...), UNREACHABLE when the endpoint did not answer; null "
                                                      "when it answered without one."]
    up: Annotated[bool, "The endpoint answered this cycle."]
    alive_threads: Annotated[int | None, "Stream threads alive."]
    failed_threads: Annotated[int | None, "Stream threads that died."]
    thread_states: Annotated[dict[str, StreamsThreadStateName], "Stream thread id -> its state."]
    error: Annotated[str | None, "Why the endpoint could not be read (one line)."]


StreamsTransition = TypedDict("StreamsTransition", {  # "from" is a Python keyword: the functional form
    "time": Annotated[float, "When it was observed (epoch seconds)."],
    "instance": Annotated[str, "What changed: an instance (its client id: client states from its metrics endpoint), "
                               "the Streams group itself ('(group)': Kafka's group states) or one of its members "
                               "('member <member id>': Stable, Reconciling, Left)."],
    "from": Annotated[StreamsTransitionStateName | None, "State before."],
    "to": Annotated[StreamsTransitionStateName | None, "State after."],
    "inferred": Annotated[bool, "Not seen but deduced: a rebalance between two cycles (an instance's rebalance count, "
                                "or a Streams group's target assignment epoch, moved), recorded as S -> REBALANCING "
                                "-> S of duration 0."],
})
StreamsTransition.__doc__ = "A state change of one instance, of a Streams group or of one of its members."


class Rebalances(TypedDict):
    """Rebalancing episodes over the transitions kept."""

    count: Annotated[int, "Episodes: periods with an instance REBALANCING or the Streams group Assigning or "
                          "Reconciling (overlapping ones are one episode)."]
    total_seconds: Annotated[float, "Time spent rebalancing, seconds."]
    ongoing_seconds: Annotated[float | None, "How long the current episode has lasted; null when none is ongoing."]


class StreamsSubtopology(TypedDict):
    """One subtopology of a Streams group's topology, as the broker holds it."""

    subtopology_id: Annotated[str, "Subtopology id (the first number of a task id <subtopology>_<partition>)."]
    source_topics: Annotated[list[str], "Topics it reads, as the broker lists them."]
    repartition_source_topics: Annotated[list[str], "Internal repartition topics it reads."]
    repartition_sink_topics: Annotated[list[str], "Repartition topics it writes."]
    changelog_topics: Annotated[list[str], "Changelog topics of its state stores."]


class StreamsGroupMember(TypedDict):
    """One member of a Streams group (one Kafka Streams client), as ``kafka-streams-groups --describe
    --members --verbose`` shows it. Tasks map a subtopology id to its partitions."""

    member_id: Annotated[str, "Member id."]
    member_epoch: Annotated[int, "Member epoch: equal to the group's assignment_epoch once it has reconciled."]
    process_id: Annotated[str, "Process id of the Streams instance (one per KafkaStreams object)."]
    client_id: Annotated[str, "Client id."]
    client_host: Annotated[str, "Client host, as the broker saw it."]
    instance_id: Annotated[str | None, "Static membership instance id; null without one."]
    user_endpoint: Annotated[str | None, "host:port for interactive queries; null when not set."]
    topology_epoch: Annotated[int, "The topology epoch the member runs."]
    is_classic: Annotated[bool, "A classic-protocol member not upgraded yet."]
    reconciling: Annotated[bool, "Still moving to its target assignment: tasks differ from the target's, or its "
                                 "epoch is behind the group's assignment_epoch."]
    active_tasks: Annotated[dict[str, list[int]], "Active tasks it owns now."]
    standby_tasks: Annotated[dict[str, list[int]], "Standby tasks it owns now."]
    warmup_tasks: Annotated[dict[str, list[int]], "Warm-up tasks it owns now."]
    target_active_tasks: Annotated[dict[str, list[int]], "Active tasks of its target assignment."]
    target_standby_tasks: Annotated[dict[str, list[int]], "Standby tasks of its target assignment."]
    target_warmup_tasks: Annotated[dict[str, list[int]], "Warm-up tasks of its target assignment."]


class StreamsInputPartition(TypedDict):
    """One input partition of a Streams group and its lag, as ``kafka-streams-groups --describe
    --offsets`` shows it."""

    topic: Annotated[str, "Topic."]
    partition: Annotated[int, "Partition number."]
    committed_offset: Annotated[int | None, "The group's committed offset; null without a commit."]
    log_end_offset: Annotated[int | None, "Log end offset; null when it could not be read."]
    lag: Annotated[int | None, "log end - committed offset (log end - log start without a commit, as the official "
                               "tool counts it), clamped at 0; null when unknown."]
    error: Annotated[str | None, "Why lag is null (one line)."]


class StreamsGroupDetail(TypedDict):
    """A Streams group (KIP-1071), as StreamsGroupDescribe and the committed offsets show it."""

    state: Annotated[StreamsGroupStateName, "Empty, NotReady, Assigning, Reconciling, Stable or Dead."]
    group_epoch: Annotated[int, "Group epoch: bumped by every change of members or topology."]
    assignment_epoch: Annotated[int, "Target assignment epoch: behind group_epoch while the group is Assigning."]
    topology_epoch: Annotated[int | None, "Epoch of the topology the broker holds; null before a member sent one."]
    missing_topics: Annotated[list[str] | None, "For a NotReady group, the topology's topics the cluster lacks "
                                                "(StreamsGroupDescribe does not say; read off the topic names); null "
                                                "when not NotReady or it cannot be told."]
    subtopologies: Annotated[list[StreamsSubtopology], "Its subtopologies, by id."]
    members: Annotated[list[StreamsGroupMember], "Its members, by process id and client id."]
    input_scope: Annotated[StreamsInputScopeName, "Which partitions input_partitions holds: 'assigned' (every "
                                                  "partition of the members' active tasks on the topics they read, "
                                                  "as kafka-streams-groups --describe --offsets lists them) or "
                                                  "'committed' (a group without members: the partitions with a "
                                                  "committed offset on its source topics, as --reset-offsets "
                                                  "--all-input-topics lists them)."]
    input_partitions: Annotated[list[StreamsInputPartition], "Input partitions with their lag, by topic and "
                                                             "partition."]
    total_lag: Annotated[int | None, "Sum of the input partitions' lag over those whose lag is known; null when none "
                                     "is."]
    lag_error: Annotated[str | None, "Why the lag could not be read at all (one line); null when it was."]


class StreamsApp(TypedDict):
    """One Kafka Streams application: configured, a Streams group (KIP-1071), or a classic-protocol
    group discovered by its internal topics."""

    application_id: Annotated[str, "Streams application.id (also its group id)."]
    protocol: Annotated[StreamsProtocolName, "'streams' for a Streams group (group.protocol=streams), 'classic' "
                                             "for an application on the classic consumer-group protocol (or whose "
                                             "group does not exist)."]
    state: Annotated[StreamsAppStateName | None, "RUNNING when every expected instance is RUNNING, DEGRADED when "
                                                 "some are, else the worst instance state; null without metrics "
                                                 "endpoints (the group's state is group_state)."]
    group_state: Annotated[GroupStateName | None, "Its group's state (the Streams group's for protocol streams); "
                                                  "null when not read."]
    members: Annotated[int | None, "Its group's members; null when not read."]
    group_error: Annotated[str | None, "Why the group could not be read (one line)."]
    expected_instances: Annotated[int | None, "Instances configured; null for a discovered application."]
    instances: Annotated[list[StreamsInstance], "Its instances (configured applications only)."]
    group: Annotated[StreamsGroupDetail | None, "The Streams group in detail; null for protocol classic, or when it "
                                                "could not be described (group_error says why)."]
    transitions: Annotated[list[StreamsTransition], "The last 100 state changes, oldest first."]
    rebalances: Annotated[Rebalances, "Rebalancing over those transitions."]


# --- the end-to-end probe -------------------------------------------------------------------------------

class ProbePartition(TypedDict):
    """One probe partition's cycle."""

    partition: Annotated[int, "Probe topic partition."]
    broker_id: Annotated[int | None, "Its leader this cycle; null when it has none."]
    produced: Annotated[int, "Probe records acknowledged."]
    produce_errors: Annotated[int, "Probe records whose delivery failed."]
    consumed: Annotated[int, "Probe records read back for the first time."]
    lost: Annotated[int, "Records acknowledged but never read back within the loss deadline."]
    duplicated: Annotated[int, "Reads of a record already read."]
    latency_p50_ms: Annotated[float | None, "Median produce-to-consume latency, ms."]
    latency_p99_ms: Annotated[float | None, "99th percentile produce-to-consume latency, ms."]
    latency_max_ms: Annotated[float | None, "Largest produce-to-consume latency, ms."]
    consume_availability: Annotated[float | None, "Of this cycle's acknowledged records, the fraction read back "
                                                  "this cycle; null when there was nothing to measure."]
    error: Annotated[str | None, "Why the partition could not be probed, or its produce errors (one line)."]


class Probe(TypedDict):
    """The end-to-end probe's cycle: totals over every partition, then each partition."""

    topic: Annotated[str, "The probe topic."]
    produce_availability: Annotated[float | None, "produced / (produced + produce_errors); null when nothing was "
                                                  "sent."]
    consume_availability: Annotated[float | None, "Of the records acknowledged this cycle, the fraction read back "
                                                  "this cycle; null when there was nothing to measure."]
    latency_p50_ms: Annotated[float | None, "Median produce-to-consume latency, ms."]
    latency_p99_ms: Annotated[float | None, "99th percentile produce-to-consume latency, ms."]
    latency_max_ms: Annotated[float | None, "Largest produce-to-consume latency, ms."]
    produced: Annotated[int, "Probe records acknowledged."]
    produce_errors: Annotated[int, "Probe records whose delivery failed."]
    consumed: Annotated[int, "Probe records read back for the first time."]
    lost: Annotated[int, "Records acknowledged but never read back within the loss deadline."]
    duplicated: Annotated[int, "Reads of a record already read."]
    per_partition: Annotated[list[ProbePartition], "Each probe partition."]
    error: Annotated[str | None, "Why the probe could not run, or a summary of the produce errors; else null."]
    produced_total: NotRequired[Annotated[int, "Probe records acknowledged since the collection loop started (a "
                                               "counter). Optional: snapshots written without it still validate."]]
    consumed_total: NotRequired[Annotated[int, "Probe records read back since the collection loop started. "
                                               "Optional: snapshots written without it still validate."]]
    lost_total: NotRequired[Annotated[int, "Probe records lost since the collection loop started. Optional: "
                                           "snapshots written without it still validate."]]
    duplicated_total: NotRequired[Annotated[int, "Duplicate reads of probe records since the collection loop "
                                                 "started. Optional: snapshots written without it still validate."]]
    not_authorized: NotRequired[Annotated[str | None, "kpulse's principal may not run the probe: the ACL it lacks "
                                                      "(not authorized: Write on topic kpulse-probe); the "
                                                      "availabilities are then null and no probe row is written "
                                                      "(a permission problem, not an outage). Null otherwise."]]


# --- alerts and collectors ------------------------------------------------------------------------------

class FiringAlert(TypedDict):
    """A firing alert (``alerting/``)."""

    rule: Annotated[str, "Alert rule name (also the runbook key)."]
    severity: Annotated[AlertSeverityName, "warning or critical."]
    entity: Annotated[str, "What it is about: cluster/<name>, broker/<id>, group/<id>, sharegroup/<id>, "
                           "streams/<app id>, probe, collector/<name> or controller/<id> (a KRaft voter)."]
    value: Annotated[float | None, "The value the condition looked at."]
    summary: Annotated[str, "One line for a human, with the numbers."]
    since: Annotated[float, "When the condition was first seen (epoch seconds)."]
    runbook: Annotated[str, "Key of the rule's runbook."]


class AlertmanagerDelivery(TypedDict):
    """Delivery of this cluster's alerts to one Alertmanager (``alerting/delivery.py``); the counts
    are since the collection loop started."""

    alertmanager: Annotated[str, "The Alertmanager's configured URL (a password in it shown as ***)."]
    up: Annotated[bool | None, "Its last send was accepted; false: it failed (after retries); null: nothing "
                               "sent yet."]
    sent_total: Annotated[int, "Alerts of this cluster it accepted (each resend counts)."]
    failed_total: Annotated[int, "Alerts of this cluster whose send failed (kept and sent again later)."]
    pending: Annotated[int, "Alerts of this cluster that started firing or resolved and that it has not "
                            "accepted yet."]
    last_sent_at: Annotated[float | None, "When it last accepted a send (epoch seconds)."]
    last_error: Annotated[str | None, "Why its last failed send failed (one line); null if none failed."]
    last_error_at: Annotated[float | None, "When that send failed (epoch seconds)."]
    next_attempt_at: Annotated[float | None, "After a failure: no send to it before this time (epoch "
                                             "seconds); null when it is not waiting."]


class CollectorState(TypedDict):
    """How one collector's cycle went."""

    name: Annotated[str, "Collector name."]
    up: Annotated[bool, "It ran without error."]
    duration_seconds: Annotated[float, "How long it took, seconds."]
    error: Annotated[str | None, "Why it failed (one line); null when up."]


class ClusterConnection(TypedDict):
    """Whether the cluster answered the configured identity this cycle (one DescribeCluster before the
    collectors run, ``collectors/connection_gate.py``)."""

    ok: Annotated[bool, "The cluster answered."]
    error: Annotated[str | None, "Why it could not be read (authentication failed, TLS handshake failed, "
                                 "cannot read the client key, all brokers down, no answer ...), one line; "
                                 "null when ok."]
    conclusive: Annotated[bool, "When not ok: the cluster said no (true: the Kafka collectors did not run this "
                                "cycle and are down with the error) or merely did not answer in time (false: "
                                "they ran and report what they read)."]
    cluster_operations: Annotated[list[str] | None, "What the principal may do on the cluster resource "
                                                    "(KIP-430 authorized operations: DESCRIBE, ALTER, ...); "
                                                    "null when not known."]
    limits: Annotated[list[str], "What the principal cannot see for want of an ACL on the cluster, one line "
                                 "each (not authorized: Describe on cluster: groups are listed only where "
                                 "kpulse may describe them ...)."]
    check_seconds: Annotated[float, "How long the check took, seconds."]


# --- the snapshot ---------------------------------------------------------------------------------------

class Snapshot(TypedDict):
    """The newest state of one cluster, composed every collection cycle."""

    time: Annotated[float, "Time of the collection cycle (epoch seconds)."]
    cluster_name: Annotated[str, "Configured cluster name."]
    cluster: Annotated[ClusterHealth, "Partition health and the controller."]
    brokers: Annotated[list[Broker], "Every broker known, by id."]
    consumer_groups: Annotated[list[ConsumerGroup], "Every consumer group with committed offsets."]
    streams_apps: Annotated[list[StreamsApp], "Kafka Streams applications, by application id."]
    share_groups: Annotated[ShareGroups | None, "Share groups (KIP-932); null when they were not collected this "
                                                "cycle."]
    probe: Annotated[Probe | None, "The end-to-end probe; null when it is turned off or did not run."]
    alerts: Annotated[list[FiringAlert], "Alerts firing after this cycle."]
    collectors: Annotated[list[CollectorState], "Each collector's cycle, in registration order."]
    alert_errors: NotRequired[Annotated[list[str], "Alert rules that raised this cycle (one line each)."]]
    alert_delivery: NotRequired[Annotated[list[AlertmanagerDelivery], "Delivery of the alerts to each "
                                                                      "configured Alertmanager; present only "
                                                                      "when one is configured."]]
    lake_errors: NotRequired[Annotated[list[str], "Lake rows refused this cycle: a collector broke the lake's "
                                                  "contract (one line each)."]]
    connection: NotRequired[Annotated[ClusterConnection, "Whether the cluster answered the configured identity "
                                                         "this cycle, checked before the collectors ran."]]


ADD_ON_SECTIONS_NOTE = ("Sections of add-on collectors, under the names they declare (collectors/protocol.py); "
                        "null when the collector did not return it this cycle.")


# --- what the built-in collectors hand collectors/snapshot.compose ---------------------------------------

class BrokerLoad(TypedDict):
    """One broker's share of the partitions, from the metadata."""

    broker_id: Annotated[int, "Broker (node) id."]
    partition_count: Annotated[int, "Replicas hosted."]
    leader_count: Annotated[int, "Partitions led."]
    preferred_leader_count: Annotated[int, "Partitions whose preferred replica it is."]


class ClusterMetadataSection(TypedDict):
    """Section ``cluster`` of the cluster metadata collector: :class:`ClusterHealth` without the
    values from broker metrics, plus each broker's load (which compose moves to ``brokers``)."""

    controller_id: Annotated[None, "Not known from the Admin API (see admin_reported_controller_id)."]
    admin_reported_controller_id: Annotated[int | None, "What DescribeCluster names."]
    reasons: Annotated[Reasons, "Why a field is null."]
    brokers: Annotated[list[MetadataBroker], "Brokers known."]
    brokers_up: Annotated[int, "Brokers in the metadata."]
    brokers_total: Annotated[int, "Brokers known."]
    topic_count: Annotated[int, "Topics."]
    partition_count: Annotated[int, "Partitions."]
    under_replicated_partitions: Annotated[int, "Under-replicated partitions."]
    offline_partitions: Annotated[int, "Partitions without a leader."]
    under_min_isr_partitions: Annotated[int | None, "Partitions under min ISR; null when not known (reasons)."]
    preferred_leader_imbalance: Annotated[int, "Partitions not led by their preferred replica."]
    broker_load: Annotated[list[BrokerLoad], "Each broker's load."]
    problem_partitions: Annotated[list[ProblemPartition], "The first partitions with a problem."]
    topics: Annotated[list[TopicState], "Every topic with every partition's replicas and offsets."]
    quorum: Annotated[KraftQuorum | None, "The KRaft quorum; null when not read (reasons.quorum)."]
    kraft_from_admin: NotRequired[Annotated[dict[str, int | None], "With metrics.source none: controller_id and "
                                                                   "active_controller_count from DescribeQuorum's "
                                                                   "leader, fenced_broker_count and "
                                                                   "active_broker_count from DescribeCluster v2; "
                                                                   "null when not readable (reasons.quorum, "
                                                                   "reasons.kraft_brokers)."]]


class BrokerMetricsSection(TypedDict):
    """Section ``broker_metrics`` of the broker metrics collector (merged into ``cluster`` and
    ``brokers`` by compose, not in the snapshot itself)."""

    source: Annotated[MetricsSourceName, "jmx_exporter, prometheus or none."]
    brokers: Annotated[list[dict[str, Any]], "Each broker's collectors.brokers.broker_values.BrokerMetrics as a "
                                             "dict (the broker_metrics lake row's fields, plus reasons)."]
    active_controller_count: Annotated[int | None, "Sum over the answering nodes that export it."]
    offline_partitions: Annotated[int | None, "Largest over the controllers."]
    controller_id: Annotated[int | None, "The controller most answering nodes name."]
    fenced_broker_count: Annotated[int | None, "The active controller's FencedBrokerCount (else the largest)."]
    active_broker_count: Annotated[int | None, "The active controller's ActiveBrokerCount (else the smallest)."]
    metadata_error_count: Annotated[int | None, "MetadataErrorCount summed over the nodes exporting it."]
    reasons: Annotated[Reasons, "Why a value above is null."]
    errors: Annotated[dict[str, str], "Broker id -> why it could not be read."]
    note: Annotated[str | None, "Why there are no metrics at all (source none)."]


BUILTIN_SECTIONS: Mapping[str, Any] = types.MappingProxyType({
    "cluster": ClusterMetadataSection,
    "broker_metrics": BrokerMetricsSection,
    "consumer_groups": list[ConsumerGroup],
    "streams_apps": list[StreamsApp],
    "share_groups": ShareGroups,
    "probe": Probe,
})
"""Section name -> type, of the sections the built-in collectors return: ``cluster`` and
``broker_metrics`` are composed into the snapshot's ``cluster`` and ``brokers``, the others are
the snapshot's sections of the same name."""
RESERVED_NAMES = frozenset(Snapshot.__annotations__) | frozenset(BUILTIN_SECTIONS)
"""Names an add-on's section cannot take."""


# --- JSON ---------------------------------------------------------------------------------------------

_JSON_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


def to_json(snapshot: Mapping[str, Any]) -> bytes:
    """The snapshot as JSON (what ``_snapshots/<cluster>.json`` holds): keys made text, anything not
    JSON by nature (a datetime, a dataclass) written as ``str()`` of it, NaN and infinity as null."""
    return orjson.dumps(snapshot, default=str, option=_JSON_OPTIONS)


# --- the JSON Schema ----------------------------------------------------------------------------------

def json_schema(add_on_sections: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a snapshot. Without ``add_on_sections`` (what
    ``docs/snapshot.schema.json`` holds) any further top-level section is allowed (an add-on's);
    with them (name -> type, as collectors declare them) exactly those are, each by its type."""
    definitions: dict[str, Any] = {}
    root = _object_schema(Snapshot, definitions)
    root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    root["title"] = "kpulse snapshot"
    if add_on_sections is None:
        root["additionalProperties"] = {"description": ADD_ON_SECTIONS_NOTE}
    else:
        for name, kind in add_on_sections.items():
            root["properties"][name] = {"anyOf": [_schema_of(kind, definitions), {"type": "null"}],
                                        "description": ADD_ON_SECTIONS_NOTE}
    root["$defs"] = dict(sorted(definitions.items()))
    return {key: root[key] for key in ("$schema", "title", "description", "type", "properties",
                                        "required", "additionalProperties", "$defs")}


def _object_schema(kind: type, definitions: dict[str, Any]) -> dict[str, Any]:
    hints = typing.get_type_hints(kind, include_extras=True)
    # a TypedDict class's own attribute: `type` does not declare it
    required: frozenset[str] = kind.__required_keys__  # type: ignore[attr-defined]
    properties = {}
    for name, hint in hints.items():
        hint, doc = _unwrap(hint)
        properties[name] = {**_schema_of(hint, definitions), **({"description": doc} if doc else {})}
    schema = {"description": " ".join((kind.__doc__ or "").split()), "type": "object", "properties": properties,
              "required": [name for name in hints if name in required],
              "additionalProperties": False}
    return schema


def _unwrap(hint: Any) -> tuple[Any, str | None]:
    """The type inside ``NotRequired`` / ``Annotated``, and the field's doc."""
    doc = None
    while True:
        origin = typing.get_origin(hint)
        if origin is NotRequired or origin is typing.Required:
            hint = typing.get_args(hint)[0]
        elif origin is Annotated:
            doc = next((m for m in hint.__metadata__ if isinstance(m, str)), doc)
            hint = hint.__origin__
        else:
            return hint, doc


_SCALARS = {int: "integer", float: "number", str: "string", bool: "boolean", type(None): "null"}


def _schema_of(hint: Any, definitions: dict[str, Any]) -> dict[str, Any]:
    hint, _ = _unwrap(hint)
    if hint is None:
        hint = type(None)
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}
    if hint is Any:
        return {}
    if typing.is_typeddict(hint):
        name = hint.__name__
        if name in definitions and definitions[name].get("title") not in (None, _title(hint)):
            name = f"{hint.__module__}.{name}"  # an add-on's type named like one of the model's
        if name not in definitions:
            definitions[name] = {"title": _title(hint)}  # recursion guard
            definitions[name] = {"title": _title(hint), **_object_schema(hint, definitions)}
        return {"$ref": f"#/$defs/{name}"}
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (Union, types.UnionType):
        choices = [_schema_of(arg, definitions) for arg in args]
        if all(set(choice) == {"type"} for choice in choices):
            return {"type": [choice["type"] for choice in choices]}
        if all(set(choice) == {"enum"} or choice == {"type": "null"} for choice in choices):  # names, or null
            return {"enum": list(dict.fromkeys(value for choice in choices for value in choice.get("enum", [None])))}
        return {"anyOf": choices}
    if origin is list:
        return {"type": "array", "items": _schema_of(args[0], definitions)}
    if origin is dict:
        return {"type": "object", "additionalProperties": _schema_of(args[1], definitions)}
    if origin is typing.Literal:
        return {"enum": list(args)}
    raise TypeError(f"no JSON Schema for {hint!r}: use int, float, str, bool, None, list, dict, a TypedDict, "
                    "a Literal or a union of them")


def _title(kind: type) -> str:
    return f"{kind.__module__}.{kind.__qualname__}"


def schema_text() -> str:
    """``docs/snapshot.schema.json``: :func:`json_schema`, indented, with a final newline."""
    import json

    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":  # run as __main__: the types named by their importable module
    from kpulse import snapshot

    sys.stdout.write(snapshot.schema_text())
