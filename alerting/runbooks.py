"""Runbooks of the alert rules: what it means, what to check, what to do; for the on-call engineer.

One :class:`Runbook` per rule of :mod:`alerting.rules`, keyed by the rule name (the rule's
``runbook`` reference). Commands are written for ``kpulse kafka-cli`` (the official Kafka tools of
the pinned release, same arguments as ``bin/kafka-*.sh``) with ``$BOOTSTRAP`` as the bootstrap
server: export it in the shell, or pass ``bootstrap=`` to :func:`runbook_text` to fill it in.
The facts come from DOMAIN.md §1-3.
"""

from __future__ import annotations

from dataclasses import dataclass

BOOTSTRAP_PLACEHOLDER = "$BOOTSTRAP"
HEADINGS = ("What it means", "What to check", "What to do")


@dataclass(frozen=True)
class Runbook:
    meaning: str
    """What the alert means and what is at stake."""
    check: str
    """What to look at first, with the commands."""
    action: str
    """What to do about it."""

    def text(self, bootstrap: str | None = None) -> str:
        sections = zip(HEADINGS, (self.meaning, self.check, self.action))
        text = "\n\n".join(f"{heading}:\n{body.strip()}" for heading, body in sections)
        return text if bootstrap is None else text.replace(BOOTSTRAP_PLACEHOLDER, bootstrap)


def _cli(command: str) -> str:
    return f"  kpulse kafka-cli {command}"


_TOPICS = "kafka-topics --bootstrap-server $BOOTSTRAP --describe"
_GROUPS = "kafka-consumer-groups --bootstrap-server $BOOTSTRAP"
_SHARE_GROUPS = "kafka-share-groups --bootstrap-server $BOOTSTRAP"
_QUORUM = "kafka-metadata-quorum --bootstrap-server $BOOTSTRAP describe"
_IDLE_CHECK = f"""\
- One broker or all? One broker low while the others are fine = hot partitions or leader
  imbalance: compare leader count and bytes in per broker on the kpulse Brokers page.
- Latency: produce/fetch p99 of that broker; network processor idle (low = network threads
  saturated too).
- Thread count vs cores:
{_cli("kafka-configs --bootstrap-server $BOOTSTRAP --entity-type brokers --entity-name <id> --describe --all")}
  (look at num.io.threads and num.network.threads)."""
_IDLE_ACTION = f"""\
- Set num.io.threads close to the broker's core count (a dynamic, cluster-wide setting):
{_cli("kafka-configs --bootstrap-server $BOOTSTRAP --entity-type brokers --entity-default --alter"
     " --add-config num.io.threads=<cores>")}
- Reduce load: client quotas, larger producer batches (linger.ms, batch.size), consumers with
  a larger fetch.min.bytes instead of many tiny fetches.
- Spread leadership:
{_cli("kafka-leader-election --bootstrap-server $BOOTSTRAP --election-type PREFERRED --all-topic-partitions")}
- Still saturated: add brokers and move partitions to them (kafka-reassign-partitions, throttled)."""

RUNBOOKS: dict[str, Runbook] = {
    "UnderReplicatedPartitions": Runbook(
        meaning="""\
Some partitions have fewer in-sync replicas than replicas: a follower fell behind or its broker is
gone. Clients still work, but redundancy is reduced; one more failure can take partitions below
min.insync.replicas or offline.""",
        check=f"""\
- Which partitions, and which brokers are missing from their ISR:
{_cli(_TOPICS + " --under-replicated-partitions")}
- The same one or two brokers missing everywhere = a host problem on those brokers (disk full or
  slow, network, noisy neighbour, config drift): check BrokerDown, their logs and disks:
{_cli("kafka-log-dirs --bootstrap-server $BOOTSTRAP --describe --broker-list <id>")}
- Spread over all brokers = cluster-wide load or resource exhaustion: check the request handler
  idle ratio, bytes in and network on every broker.
- A partition reassignment in progress also shows URP:
{_cli("kafka-reassign-partitions --bootstrap-server $BOOTSTRAP --list")}""",
        action="""\
- Host problem: fix or restart that broker; its replicas catch up by themselves once it is back.
  If it cannot come back, move its replicas away (kafka-reassign-partitions, with a throttle).
- Cluster-wide: reduce load, throttle running reassignments, add brokers and rebalance.
- Watch the count fall to 0. If offline or under-min-ISR partitions appear, those alerts win.""",
    ),
    "OfflinePartitions": Runbook(
        meaning="""\
Partitions have no leader: producers and consumers of those partitions fail now. Every replica in
the ISR is down (or the only replica is).""",
        check=f"""\
- Which partitions, and which brokers hold their replicas:
{_cli(_TOPICS + " --unavailable-partitions")}
- Are those brokers down (BrokerDown)? Is there an active controller (ActiveControllerCount)?
{_cli(_QUORUM + " --status")}""",
        action="""\
- Bring back any broker that was in the ISR of the partition: the controller elects a leader by
  itself and nothing is lost.
- Only if no ISR member can ever come back, and the data owner accepts losing records:
  kpulse kafka-cli kafka-leader-election --bootstrap-server $BOOTSTRAP --election-type UNCLEAN --topic <t> --partition <p>""",
    ),
    "UnderMinIsrPartitions": Runbook(
        meaning="""\
Partitions have fewer in-sync replicas than their topic's min.insync.replicas: producers with
acks=all get NotEnoughReplicas errors, writes fail now. Reads still work.""",
        check=f"""\
- Which partitions, and which brokers are missing from the ISR:
{_cli(_TOPICS + " --under-min-isr-partitions")}
- The next ones at risk:
{_cli(_TOPICS + " --at-min-isr-partitions")}
- The topic's min.insync.replicas against its replication factor:
{_cli("kafka-configs --bootstrap-server $BOOTSTRAP --entity-type topics --entity-name <topic> --describe")}""",
        action="""\
- Bring the missing brokers back (see UnderReplicatedPartitions: host problem vs load).
- Do not lower min.insync.replicas to make the alert go away unless the data owner accepts the
  loss of durability; the replication factor must stay above min.insync.replicas.""",
    ),
    "ActiveControllerCount": Runbook(
        meaning="""\
The active controller count summed over the cluster must be exactly 1. 0 = no controller: no topic
creation, no metadata changes, no reaction to a broker failure. 2 or more = split brain:
partition moves and metadata changes fail. A 0 or 2 during a failover is normal; this alert
means it lasted.""",
        check=f"""\
- The KRaft quorum: leader id, epoch, and whether the voters follow it:
{_cli(_QUORUM + " --status")}
{_cli(_QUORUM + " --replication")}
- Which nodes report 1 (per-node active controller on the kpulse Brokers page), and whether the
  controller-role nodes are up.""",
        action="""\
- 0: start the stopped controller nodes; a majority of the voters must be up for a leader to be
  elected. Read their logs if they are up but no leader is elected.
- 2: restart the nodes that report 1, one at a time, until exactly one remains.
- Confirm with `describe --status` that one leader is reported and the count is back to 1.""",
    ),
    "RequestHandlerIdleLow": Runbook(
        meaning="""\
The broker's request handler threads (num.io.threads) are busy more than 80 % of the time
(idle < 0.2): a potential problem, requests will start queueing if load grows.""",
        check=_IDLE_CHECK,
        action=_IDLE_ACTION,
    ),
    "RequestHandlerIdleCritical": Runbook(
        meaning="""\
The broker's request handler threads are busy more than 90 % of the time (idle < 0.1): requests
queue now, produce and fetch latency rise, clients time out.""",
        check=_IDLE_CHECK,
        action=_IDLE_ACTION,
    ),
    "BrokerDown": Runbook(
        meaning="""\
A broker known to the cluster is not registered as alive. Its leaders moved to other replicas, its
partitions are under-replicated, and partitions whose only in-sync replica it held are offline.
(The Prometheus rule uses `up == 0` of the broker's metrics endpoint instead: that can also be a
dead exporter, not a dead broker; check both.)""",
        check=f"""\
- The process and the host: `kpulse cluster status` for the local cluster, your orchestrator
  otherwise; the broker's server.log (disk full, out of memory, fatal errors).
- Whether the node is fenced or lagging in the metadata log:
{_cli(_QUORUM + " --replication")}
- Whether it answers at all:
{_cli("kafka-broker-api-versions --bootstrap-server <broker host:port>")}""",
        action="""\
- Restart the broker (planned restarts shorter than the hold do not alert).
- Host lost for good: start a replacement with the same node id and data, or move its replicas to
  other brokers (kafka-reassign-partitions, throttled).
- When it is back, leadership returns by preferred leader election (automatic unless
  auto.leader.rebalance.enable is false):
  kpulse kafka-cli kafka-leader-election --bootstrap-server $BOOTSTRAP --election-type PREFERRED --all-topic-partitions""",
    ),
    "ConsumerGroupStatus": Runbook(
        meaning="""\
Burrow-style status of the group. STOP: the group has no members and its committed offsets do not
move while lag exists: nobody consumes. STALL: members are present but the offsets do not move:
the consumer is alive but stuck (poison record, hung poll loop, blocked downstream). ERR
(critical): STOP or STALL that has lasted more than 15 minutes.""",
        check=f"""\
- Offsets, lag and owners per partition, members, state:
{_cli(_GROUPS + " --describe --group <group>")}
{_cli(_GROUPS + " --describe --group <group> --members --verbose")}
{_cli(_GROUPS + " --describe --group <group> --state")}
- STOP: is the application deployed and running? Is the group retired?
- STALL: the application's logs (deserialization errors, exceptions on one record, rebalances
  after max.poll.interval.ms); are only some partitions stuck? The record a stuck partition's
  consumer is on (its committed offset) in kpulse's records view (Records, from this alert or the
  group's partition row), or:
  kpulse records --group <group> --topic <t> --partition <p>""",
        action=f"""\
- STOP: start the consumer. A retired group: exclude it in kpulse's consumer_groups config, or
  delete it:
{_cli(_GROUPS + " --delete --group <group>")}
- STALL: fix and restart the consumer. A poison record (one the consumer fails on, again and
  again): stop the group's consumers, skip that one record (a dry run shows the committed offset,
  the new one and the record's time; only that partition changes), then start them:
  kpulse skip-records --group <group> --topic <t> --partition <p>
  and run it again with --execute (the records view's "Skip this record" does the same).""",
    ),
    "ConsumerGroupLagSeconds": Runbook(
        meaning="""\
The group's oldest unconsumed record is older than the group's freshness threshold
(lag_seconds_threshold): downstream data is stale.""",
        check=f"""\
- Which partitions lag; one hot partition = key skew, all of them = not enough throughput:
{_cli(_GROUPS + " --describe --group <group>")}
- Status WARN (lag keeps growing) or a flat lag? Did the producers' rate jump (bytes in)? Is the
  group rebalancing (members coming and going)?""",
        action=f"""\
- Add consumer instances, up to the partition count; speed up the processing.
- More partitions help only if the keys spread (partitions can never be removed, and key ordering
  changes).
- If the backlog may be skipped (group stopped first, dry run first):
{_cli(_GROUPS + " --reset-offsets --group <group> --all-topics --to-latest --dry-run")}
- If the threshold is wrong for this group, set its lag_seconds_threshold override in the config.""",
    ),
    "ShareGroupNotAcknowledging": Runbook(
        meaning="""\
A share group (KIP-932, queues for Kafka) has records waiting and acknowledges none of them: over
kpulse's window of readings its start offset never moved and its lag (the broker's count of records
not yet acknowledged) never went down. STALLED: members are present but acknowledge nothing (a hung
or crashed-but-connected consumer, a poison record redelivered until it is archived, a consumer
that never acknowledges). NOT_CONSUMING: the group has no members at all. Records wait; with a
retention limit, they can be deleted before anyone processes them.""",
        check=f"""\
- Start offset and lag per partition, and the group's state:
{_cli(_SHARE_GROUPS + " --describe --group <group>")}
{_cli(_SHARE_GROUPS + " --describe --group <group> --state")}
- Members, their clients and hosts, and their assigned partitions:
{_cli(_SHARE_GROUPS + " --describe --group <group> --members --verbose")}
- STALLED: the consumers' logs (exceptions while processing, a record that fails every delivery,
  acknowledgement errors, a process paused or swapping); the group.share.record.lock.duration.ms
  and group.share.delivery.count.limit settings decide how often a record comes back:
{_cli("kafka-configs --bootstrap-server $BOOTSTRAP --entity-type groups --entity-name <group> --describe")}
- NOT_CONSUMING: is the application deployed and running? Is the group retired?""",
        action=f"""\
- STALLED: fix the consumer and restart it; records it held are released when its acquisition
  locks expire and are delivered again. A poison record is archived after the delivery count limit.
- NOT_CONSUMING: start the consumers. A retired group: delete it (no members first):
{_cli(_SHARE_GROUPS + " --delete --group <group>")}
- To skip the backlog (no members, dry run first):
{_cli(_SHARE_GROUPS + " --reset-offsets --group <group> --topic <t> --to-latest --dry-run")}
  and run it again with --execute instead of --dry-run.""",
    ),
    "StreamsAppNotRunning": Runbook(
        meaning="""\
The Kafka Streams application has not been RUNNING for longer than the grace period (2 minutes):
usually a long rebalance while state stores restore from their changelog topics, or NOT_RUNNING
(stopped). ERROR / PENDING_ERROR is critical at once: every stream thread died and the app will not
process anything until it is restarted.""",
        check=f"""\
- The kpulse Streams page: which instances are up, alive and failed threads, recent state
  transitions (repeated REBALANCING = instances restarting or missing heartbeats).
- The consumer group named by application.id:
{_cli(_GROUPS + " --describe --group <application.id> --members --verbose")}
{_cli(_GROUPS + " --describe --group <application.id> --state")}
- The application's logs: the exception that killed the threads; state restore progress
  (restore listeners: onRestoreStart / onBatchRestored / onRestoreEnd).""",
        action="""\
- ERROR: fix the cause and restart the instances.
- Long or repeated rebalances: standby replicas (num.standby.replicas >= 1) so a task moves to a
  warm copy; static membership (group.instance.id and a larger session.timeout.ms) so a restart
  does not rebalance; cooperative incremental rebalancing (default since 2.4); keep the state
  directory on persistent storage so restarts do not restore from scratch.
- Resetting the application (kafka-streams-application-reset) is a last resort: every instance
  stopped, --dry-run first, and each instance must clean its local state before restarting.""",
    ),
    "ProbeFailing": Runbook(
        meaning="""\
kpulse's end-to-end probe could not write to or read from its probe topic (availability < 1), or
records it wrote never came back (lost > 0). Clients see the same thing.""",
        check=f"""\
- Which broker failed: the kpulse probe page shows results per probe partition / leader.
- Related alerts: BrokerDown, OfflinePartitions, UnderMinIsrPartitions.
- The probe topic: one partition led by every broker?
{_cli(_TOPICS + " --topic <probe topic>")}
- Try by hand:
{_cli("kafka-console-producer --bootstrap-server $BOOTSTRAP --topic <probe topic>")}
- Lost records: an unclean leader election, or producers without acks=all.""",
        action="""\
- Handle the underlying broker or partition alert first.
- If the probe topic lost its layout (a broker leads none of its partitions), run a preferred
  leader election for it, or reassign it.
- If only the probe fails while real clients work, check the probe's credentials and ACLs.""",
    ),
    "CollectorDown": Runbook(
        meaning="""\
A kpulse collector failed its recent cycles: its part of the snapshot is missing (null), so the
rules that need it can neither fire nor resolve. Not a Kafka failure by itself, but it can hide
one.""",
        check="""\
- The collector's error (kpulse collectors panel, lake table collector_status).
- The configuration and credentials: `kpulse config check`.
- Reachability of what it reads: bootstrap servers, broker metrics endpoints, Prometheus.
  Test the Kafka connection the same way kpulse does:
  kpulse kafka-cli kafka-broker-api-versions --bootstrap-server $BOOTSTRAP""",
        action="""\
- Fix the configuration, credentials or network path and watch the collector come back up.
- While it is down, look at Kafka directly (the commands in the other runbooks): a dead metrics
  pipeline cannot tell you a broker is healthy.""",
    ),
    "MetadataErrors": Runbook(
        meaning="""\
A KRaft node counted errors while loading or applying the metadata log (MetadataErrorCount of
kafka.controller:type=KafkaController). Its view of topics, partitions, configs or ACLs may differ
from the rest of the cluster's, silently. The count only grows until the node restarts, so the alert
stays firing until then.""",
        check=f"""\
- Which node (the alert's entity) and since when: its server.log around the first error
  ("Error ... metadata", "MetadataLoader", "fault handler").
- Does its metadata agree with the others'? Compare the quorum figures and the log end offsets:
{_cli(_QUORUM + " --replication")}
- Metadata apply lag of every node on the kpulse Brokers page (KRaft quorum section): a node that
  stopped applying records shows a growing lag.
- The error names the record or snapshot it could not apply: keep that node's metadata log
  directory (__cluster_metadata-0) as it is for the investigation.""",
        action="""\
- Restart the node: it reloads the metadata from the latest snapshot and the log. The count starts
  at 0 again.
- Errors again after the restart = a bad record or snapshot: keep the logs, do not delete
  metadata directories, and raise it with the Kafka project (a known bug of your version?).
- Until it is fixed, move partition leadership away from that node (preferred leader election after
  reassigning its leaders) so that clients are not served from wrong metadata.""",
    ),
    "FencedBrokers": Runbook(
        meaning="""\
The active controller has fenced brokers (FencedBrokerCount > 0): they missed heartbeats for
broker.session.timeout.ms (9 s by default), or they started and have not caught up with the
metadata log yet. A fenced broker leads no partition and is out of every ISR: clients cannot use it,
and its partitions run with one replica less.""",
        check=f"""\
- Is the broker process down? BrokerDown fires too then; the kpulse Brokers page shows it.
- Which brokers are fenced (BrokerRegistrationState 10 = FENCED on the active controller's metrics
  endpoint; the Admin API):
{_cli("kafka-cluster list-endpoints --bootstrap-server $BOOTSTRAP --include-fenced-brokers")}
  (STATE fenced)
- Running but fenced: can it reach the controllers (network, controller.quorum.bootstrap.servers)?
  Is it catching up the metadata (its LastAppliedRecordLagMs on the Brokers page; its server.log)?
{_cli(_QUORUM + " --replication")}
  (a broker-only node is an observer there: its lag is how far its metadata is behind)""",
        action="""\
- Process down: start it; it is unfenced once it has caught up with the metadata (seconds).
- Running and fenced: fix the network path to the controllers, or restart it; a heartbeat timeout
  from long GC pauses wants heap or GC tuning.
- Partitions with a replica on it are under-replicated meanwhile: watch UnderMinIsrPartitions.""",
    ),
    "VoterLagging": Runbook(
        meaning="""\
A KRaft voter (controller) is behind the quorum leader: its metadata log end is more than
kraft.voter_lag_records records behind the leader's, or it has not caught up with the leader's log
end for longer than kraft.voter_lag_seconds (defaults 1000 records, 30 s). The quorum still commits
while a majority keeps up, but one more voter lost stops every metadata change (no topic creation,
no leader election after a broker failure), and a lagging voter cannot take over as leader quickly.

Why the defaults: a healthy follower fetches continuously and is a few records behind at most; the
leader appends a no-op record every 500 ms (metadata.max.idle.interval.ms), so an idle cluster puts
a stopped voter 1000 records behind in about 8 minutes and a busy one much sooner. 30 s is well
above controller.quorum.fetch.timeout.ms (2 s) and the broker session timeout (9 s), so a restart's
blip does not count.""",
        check=f"""\
- The lag and the last caught-up time of every voter, as kpulse shows them on the Brokers page:
{_cli(_QUORUM + " --replication")}
{_cli(_QUORUM + " --status")}
- Voter down (its row does not move, BrokerDown fires): see BrokerDown.
- Voter up but behind: its disk (slow writes to the metadata log dir), GC pauses, network to the
  leader; its server.log for fetch errors.""",
        action="""\
- Bring the voter back or fix what slows it; it catches up by itself (from a snapshot when far behind).
- Do not restart another voter meanwhile: with one voter behind, losing a second stops the quorum.
- A voter lost for good: add a new controller and remove the old one (kafka-metadata-quorum
  add-controller / remove-controller, dynamic quorums, kraft.version 1).""",
    ),
    "KpulseNotAuthorized": Runbook(
        meaning="""kpulse's own principal lacks an ACL: some values it would show are null with "not authorized:
<Operation> on <resource>" (a group's lag, under-min-ISR partitions without DescribeConfigs on
topics, the KRaft quorum without Describe on the cluster), or the probe may not write to or read
its topic. Kafka itself is not failing; what kpulse cannot read, it cannot alert on either.""",
        check="""- The alert's summary names each missing ACL; the pages show the same reason beside the value.
- What the principal may do, feature by feature:
  kpulse doctor
- The ACLs it has now:
  kpulse kafka-cli kafka-acls --bootstrap-server $BOOTSTRAP --list --principal User:<kpulse's principal>""",
        action="""- Grant what is missing (docs/operations.md lists the ACLs per feature); `kpulse acls --principal
  User:<name>` prints the kafka-acls commands.
- Or accept the limit: turn the probe off (probe.enabled: false), or narrow consumer_groups.include
  to the groups kpulse may read. The alert resolves at the next cycle that reads everything.""",
    ),
}


def runbook_text(name: str, bootstrap: str | None = None) -> str:
    """The runbook of rule ``name`` as text, with ``$BOOTSTRAP`` replaced when ``bootstrap`` is given."""
    return RUNBOOKS[name].text(bootstrap)
