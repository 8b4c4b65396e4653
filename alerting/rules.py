"""The alert rules: one condition per rule over one snapshot; pure, no I/O.

Rules (thresholds are the constants below; DOMAIN.md §1-3):

============================  ========  ==============================================  ======
rule                          severity  condition (entity)                              hold
============================  ========  ==============================================  ======
UnderReplicatedPartitions     warning   URP > 0 (``cluster/<name>``)                    60 s
OfflinePartitions             critical  offline partitions > 0 (cluster)                0
UnderMinIsrPartitions         critical  under-min-ISR partitions > 0 (cluster)          0
ActiveControllerCount         critical  sum of active controllers != 1 (cluster)        60 s
RequestHandlerIdleLow         warning   request handler idle < 0.2 (``broker/<id>``)    300 s
RequestHandlerIdleCritical    critical  request handler idle < 0.1 (broker)             60 s
BrokerDown                    critical  a broker in the metadata is not up (broker)     60 s
ConsumerGroupStatus           warning   status STOP or STALL (``group/<id>``)           0
                              critical  status ERR (STOP/STALL for > 15 min)            0
ConsumerGroupLagSeconds       warning   max_lag_seconds > the group's threshold         60 s
ShareGroupNotAcknowledging    warning   status STALLED or NOT_CONSUMING: lag > 0 and    60 s
                                        nothing acknowledged over the window
                                        (``sharegroup/<id>``)
StreamsAppNotRunning          warning   state != RUNNING (``streams/<app id>``)         120 s
                              critical  state ERROR or PENDING_ERROR                    0
ProbeFailing                  critical  produce or consume availability < 1, lost > 0   60 s
                                        (``probe``)
CollectorDown                 warning   collector up = False (``collector/<name>``)     120 s
MetadataErrors                critical  a node's KRaft MetadataErrorCount > 0           0
                                        (``broker/<id>``)
FencedBrokers                 critical  the active controller's FencedBrokerCount > 0   60 s
                                        (cluster)
VoterLagging                  warning   a follower voter's lag > kraft.voter_lag_records  30 s
                                        or not caught up for > kraft.voter_lag_seconds,
                                        or never seen fetching by the leader
                                        (``controller/<id>``)
KpulseNotAuthorized           warning   kpulse's principal may not read a value            0
                                        (``cluster/<name>``) or run the probe (``probe``)
============================  ========  ==============================================  ======

A value that is ``None`` never fires and never resolves (see :mod:`alerting.state`).

A group labelled ``expected_idle`` (``kpulse/expected_idle.py``: the config's
``consumer_groups.expected_idle`` or a mark made on the Consumer groups page) fires neither group rule:
it is expected not to consume, so neither its status nor its growing lag pages anyone. Marking a firing
group resolves its alerts at the next snapshot; unmarking it lets them fire again (from a new ``since``).

A group's ``total_lag`` and ``max_lag_seconds`` can be partial: over the partitions whose value is
known, the others left out (a broker down; ``collectors/lag/lag_math.py``). A partial value is a lower
bound, never taken for the group's: ConsumerGroupLagSeconds fires on a partial worst lag above the
threshold (the whole group is at least that far behind) but cannot tell below it (unknown: neither
fires nor resolves); ConsumerGroupStatus, which fires on the status and only quotes the lag, gives
no value for a partial sum and says "lag at least N (K partitions unknown)". Snapshots without the
``*_partial`` fields (written before them) are taken as complete.

ShareGroupNotAcknowledging reads a share group's status (``kpulse/share_contract.py``; the rules over
a window of readings in ``collectors/share/share_status.py``): STALLED (members, but across the window
the start offset never moved and the lag never went down) or NOT_CONSUMING (no members, lag > 0, no
progress). Its value is the group's lag (none when the sum is partial); its hold rides out a consumer
that takes one slow pass over its records.

The KRaft rules read the controller figures of the broker metrics (``collectors/brokers/broker_values.py``)
and the quorum (``cluster.quorum``, DescribeQuorum). VoterLagging's thresholds are the cluster's
``kraft`` config, carried in the snapshot (``quorum.voter_lag_threshold_*``) as a group's lag
threshold is; its value is the voter's lag in records.
"""

from __future__ import annotations

import math
from typing import Any, Literal
from collections.abc import Callable, Sequence

from alerting.model import CRITICAL, WARNING, Check, Finding, Rule, Unknown
from kpulse.lag_contract import PartitionStatus, within_lag_threshold
from kpulse.refusals import AREAS, refusals
from kpulse.share_contract import NOT_ACKNOWLEDGING, ShareStatus
from kpulse.snapshot import ConsumerGroup, Snapshot

URP_HOLD_SECONDS = 60.0
"""URP must be sustained: a broker restart or a leader move causes short, harmless blips."""
EXPECTED_ACTIVE_CONTROLLERS = 1
CONTROLLER_HOLD_SECONDS = 60.0
"""A controller failover, or nodes scraped a moment apart, can show 0 or 2 for a cycle."""
IDLE_WARNING_BELOW = 0.2
"""Request handler idle ratio below this is a potential problem."""
IDLE_CRITICAL_BELOW = 0.1
"""Request handler idle ratio below this is a performance problem now."""
IDLE_WARNING_HOLD_SECONDS = 300.0
IDLE_CRITICAL_HOLD_SECONDS = 60.0
BROKER_DOWN_HOLD_SECONDS = 60.0
"""Long enough to ride out a quick restart, short enough for an unplanned outage."""
CONSUMER_WARNING_STATUSES = (PartitionStatus.STOP.value, PartitionStatus.STALL.value)
CONSUMER_CRITICAL_STATUSES = (PartitionStatus.ERR.value,)
LAG_HOLD_SECONDS = 60.0
SHARE_GROUP_HOLD_SECONDS = 60.0
"""No progress over the status window, and for this long: a consumer that processes one batch for
longer than a window of readings is not an alert yet."""
STREAMS_RUNNING = "RUNNING"
STREAMS_GRACE_SECONDS = 120.0
"""Not RUNNING for this long is an alert: short rebalances are tolerated."""
STREAMS_ERROR_STATES = ("PENDING_ERROR", "ERROR")
"""Every stream thread died: the app will not recover by itself, so no grace period."""
STREAMS_CLIENT_STATE_CODES = {"CREATED": 0, "REBALANCING": 1, "RUNNING": 2, "PENDING_SHUTDOWN": 3,
                              "NOT_RUNNING": 4, "PENDING_ERROR": 5, "ERROR": 6}
"""KIP-1091 numeric ``client-state``; the value of a StreamsAppNotRunning alert."""
PROBE_HOLD_SECONDS = 60.0
COLLECTOR_HOLD_SECONDS = 120.0
FENCED_HOLD_SECONDS = 60.0
"""A broker restarting is fenced from its shutdown until it has caught up with the metadata again
(seconds); longer is an outage, or a broker that cannot heartbeat or catch up."""
VOTER_LAG_HOLD_SECONDS = 30.0
"""A burst of metadata changes (creating thousands of partitions) can put a follower briefly past the
record threshold; the time threshold has its own margin already."""


# --- rule conditions -------------------------------------------------------------------------------

Results = list[Finding | Unknown]
"""What a rule's check returns (:data:`alerting.model.Check`)."""
ClusterFigure = Literal["under_replicated_partitions", "offline_partitions", "under_min_isr_partitions",
                        "active_controller_count", "fenced_broker_count"]
"""The :class:`kpulse.snapshot.ClusterHealth` counts the cluster rules judge."""


def cluster_entity(snapshot: Snapshot) -> str:
    return f"cluster/{snapshot.get('cluster_name')}"


def _number(value: Any) -> float | None:
    """``None`` for missing and NaN (a NaN is a value that could not be read)."""
    if value is None:
        return None
    number = float(value)
    return None if math.isnan(number) else number


def _cluster_value(snapshot: Snapshot, key: ClusterFigure) -> tuple[str, float | None]:
    cluster = snapshot.get("cluster")
    return cluster_entity(snapshot), None if cluster is None else _number(cluster.get(key))


def _cluster_count_above_zero(key: ClusterFigure, what: str) -> Check:
    def check(snapshot: Snapshot) -> Results:
        entity, value = _cluster_value(snapshot, key)
        if value is None:
            return [Unknown(entity, f"{key} not collected")]
        return [Finding(entity, value, f"{value:g} {what}")] if value > 0 else []
    return check


def _active_controllers(snapshot: Snapshot) -> Results:
    entity, value = _cluster_value(snapshot, "active_controller_count")
    if value is None:
        return [Unknown(entity, "active_controller_count not collected")]
    if value == EXPECTED_ACTIVE_CONTROLLERS:
        return []
    meaning = "no active controller" if value < 1 else "more than one active controller (split brain)"
    return [Finding(entity, value, f"{value:g} active controllers: {meaning}")]


def _idle_below(upper: float, what: str) -> Check:
    def check(snapshot: Snapshot) -> Results:
        brokers = snapshot.get("brokers")
        if brokers is None:
            return [Unknown(None, "broker metrics not collected")]
        results: Results = []
        for broker in brokers:
            entity, idle = f"broker/{broker.get('id')}", _number(broker.get("request_handler_idle_ratio"))
            if idle is None:
                results.append(Unknown(entity, "request_handler_idle_ratio not collected"))
            elif idle < upper:
                results.append(Finding(entity, idle, f"broker {broker.get('id')} request handlers are "
                                                     f"{idle:.0%} idle (< {upper:.0%}): {what}"))
        return results
    return check


def _broker_down(snapshot: Snapshot) -> Results:
    cluster = snapshot.get("cluster")
    brokers = None if cluster is None else cluster.get("brokers")
    if brokers is None:
        return [Unknown(None, "cluster metadata not collected")]
    results: Results = []
    for broker in brokers:
        entity, up = f"broker/{broker.get('id')}", broker.get("up")
        if up is None:
            results.append(Unknown(entity, "broker state not collected"))
        elif not up:
            address = f" ({broker['address']})" if broker.get("address") else ""
            results.append(Finding(entity, 0.0, f"broker {broker.get('id')}{address} is down"))
    return results


def _groups(snapshot: Snapshot, check_group: Callable[[ConsumerGroup, str], Finding | Unknown | None]) -> Results:
    groups = snapshot.get("consumer_groups")
    if groups is None:
        return [Unknown(None, "consumer groups not collected")]
    results = [check_group(group, f"group/{group.get('group_id')}") for group in groups
               if not group.get("expected_idle")]
    return [result for result in results if result is not None]


def _group_status(snapshot: Snapshot) -> Results:
    def check(group: ConsumerGroup, entity: str) -> Finding | Unknown | None:
        status = group.get("status")
        if status is None:
            return Unknown(entity, "status not known")
        if status not in CONSUMER_WARNING_STATUSES + CONSUMER_CRITICAL_STATUSES:
            return None
        severity = CRITICAL if status in CONSUMER_CRITICAL_STATUSES else WARNING
        lag = _number(group.get("total_lag"))
        meaning = {"STOP": "no members and the committed offsets do not move",
                   "STALL": "members present but the committed offsets do not move",
                   "ERR": "offsets stuck for a long time (STOP or STALL that lasted)"}[status]
        if lag is None:
            lag_text = ""
        elif group.get("total_lag_partial"):
            lag_text = f", lag at least {lag:g} ({_unknown(group.get('lag_unknown_partitions'))})"
            lag = None  # a lower bound is not the group's lag
        else:
            lag_text = f", lag {lag:g}"
        return Finding(entity, lag, f"consumer group {group.get('group_id')} is {status}: {meaning}{lag_text}",
                       severity=severity)
    return _groups(snapshot, check)


def _group_lag_seconds(snapshot: Snapshot) -> Results:
    def check(group: ConsumerGroup, entity: str) -> Finding | Unknown | None:
        lag, threshold = _number(group.get("max_lag_seconds")), _number(group.get("lag_seconds_threshold"))
        if lag is None or threshold is None:
            return Unknown(entity, "time lag or threshold not known")
        partial = bool(group.get("max_lag_seconds_partial"))
        if within_lag_threshold(lag, threshold):
            return Unknown(entity, "time lag of some partitions not known") if partial else None
        if partial:
            return Finding(entity, lag, f"consumer group {group.get('group_id')} is at least {lag:.0f} s behind "
                                        f"(threshold {threshold:g} s; "
                                        f"{_unknown(group.get('lag_seconds_unknown_partitions'))})")
        return Finding(entity, lag, f"consumer group {group.get('group_id')} is {lag:.0f} s behind "
                                    f"(threshold {threshold:g} s)")
    return _groups(snapshot, check)


def _unknown(partitions: int | None) -> str:
    if partitions is None:
        return "some partitions unknown"
    return f"{partitions} partition{'' if partitions == 1 else 's'} unknown"


def _share_group_not_acknowledging(snapshot: Snapshot) -> Results:
    section = snapshot.get("share_groups")
    if section is None:
        return [Unknown(None, "share groups not collected")]
    results: Results = []
    for group in section.get("groups") or []:
        group_id, status = group.get("group_id"), group.get("status")
        entity = f"sharegroup/{group_id}"
        if status is None:
            results.append(Unknown(entity, "status not known"))
            continue
        if status not in NOT_ACKNOWLEDGING:
            continue
        lag = _number(group.get("total_lag"))
        if lag is None:
            lag_text = ""
        elif group.get("total_lag_partial"):
            lag_text = f", lag at least {lag:g} ({_unknown(group.get('lag_unknown_partitions'))})"
            lag = None
        else:
            lag_text = f", lag {lag:g}"
        meaning = (f"{group.get('members')} members but nothing acknowledged" if status == ShareStatus.STALLED.value
                   else "no members, records wait")
        results.append(Finding(entity, lag, f"share group {group_id} is {status}: {meaning}{lag_text}"))
    return results


def _streams_not_running(snapshot: Snapshot) -> Results:
    apps = snapshot.get("streams_apps")
    if apps is None:
        return [Unknown(None, "Streams apps not collected")]
    results: Results = []
    for app in apps:
        app_id, state = app.get("application_id"), app.get("state")
        entity = f"streams/{app_id}"
        if state is None:
            results.append(Unknown(entity, "state not known"))
            continue
        if state == STREAMS_RUNNING:
            continue
        instances = app.get("instances") or []
        running = sum(1 for i in instances if i.get("state") == STREAMS_RUNNING)
        expected = app.get("expected_instances")
        of = f"{running}/{expected if expected is not None else len(instances)} instances RUNNING"
        summary = f"Streams app {app_id} is {state} ({of})"
        if state in STREAMS_ERROR_STATES:
            results.append(Finding(entity, _code(state), summary, severity=CRITICAL, for_seconds=0.0))
        else:
            results.append(Finding(entity, _code(state), summary))
    return results


def _code(state: str) -> float | None:
    code = STREAMS_CLIENT_STATE_CODES.get(state)
    return None if code is None else float(code)


def _probe_failing(snapshot: Snapshot) -> Results:
    probe = snapshot.get("probe")
    if probe is None:
        return [Unknown("probe", "probe not collected")]
    produce, consume = _number(probe.get("produce_availability")), _number(probe.get("consume_availability"))
    lost = _number(probe.get("lost"))
    failures, value = [], None
    for name, availability in (("produce", produce), ("consume", consume)):
        if availability is not None and availability < 1:
            failures.append(f"{name} availability {availability:.1%}")
            value = availability if value is None else min(value, availability)
    if lost is not None and lost > 0:
        failures.append(f"{lost:g} records lost")
        value = lost if value is None else value
    if failures:
        return [Finding("probe", value, "end-to-end probe failing: " + ", ".join(failures))]
    if None in (produce, consume, lost):
        return [Unknown("probe", "some probe values not collected")]
    return []


def _collector_down(snapshot: Snapshot) -> Results:
    collectors = snapshot.get("collectors")
    if collectors is None:
        return [Unknown(None, "collector statuses missing")]
    results: Results = []
    for collector in collectors:
        entity, up = f"collector/{collector.get('name')}", collector.get("up")
        if up is None:
            results.append(Unknown(entity))
        elif not up:
            error = collector.get("error")
            results.append(Finding(entity, 0.0, f"collector {collector.get('name')} is down"
                                                + (f": {error}" if error else "") + " (its data is missing)"))
    return results


def _metadata_errors(snapshot: Snapshot) -> Results:
    brokers = snapshot.get("brokers")
    if brokers is None:
        return [Unknown(None, "broker metrics not collected")]
    results: Results = []
    for broker in brokers:
        entity, errors = f"broker/{broker.get('id')}", _number(broker.get("metadata_error_count"))
        if errors is None:
            results.append(Unknown(entity, "metadata_error_count not collected (broker-only node, or no metrics)"))
        elif errors > 0:
            results.append(Finding(entity, errors, f"node {broker.get('id')} met {errors:g} errors loading or applying "
                                                   "the metadata log: its metadata may be wrong"))
    return results


def _fenced_brokers(snapshot: Snapshot) -> Results:
    entity, fenced = _cluster_value(snapshot, "fenced_broker_count")
    if fenced is None:
        return [Unknown(entity, "fenced_broker_count not collected")]
    if fenced <= 0:
        return []
    cluster = snapshot.get("cluster") or {}
    down = sorted(b.get("id") for b in cluster.get("brokers") or [] if b.get("up") is False)
    named = f" (not in the metadata: {', '.join(str(b) for b in down)})" if down else ""
    return [Finding(entity, fenced, f"{fenced:g} fenced brokers{named}: they lead no partition and take no "
                                    "client request")]


def _not_authorized(snapshot: Snapshot) -> Results:
    """kpulse's own permissions: what its principal may not read (entity ``cluster/<name>``) or the
    probe may not do (``probe``). A warning about kpulse, not about Kafka: the values it cannot read
    are null with these reasons, so the rules over them can neither fire nor resolve."""
    found = refusals(snapshot)
    results: Results = []
    probe = found.pop("probe", [])
    if probe:
        results.append(Finding("probe", float(len(probe)), f"kpulse may not run the probe: {probe[0]}"))
    reads = [text for area in AREAS if area in found for text in found[area]]
    if reads:
        shown = "; ".join(reads[:3]) + (f"; and {len(reads) - 3} more" if len(reads) > 3 else "")
        results.append(Finding(cluster_entity(snapshot), float(len(reads)), f"kpulse may not read everything: {shown}"))
    return results


def _voters_lagging(snapshot: Snapshot) -> Results:
    cluster = snapshot.get("cluster")
    quorum = None if cluster is None else cluster.get("quorum")
    if quorum is None:
        return [Unknown(None, "KRaft quorum not collected")]
    records = _number(quorum.get("voter_lag_threshold_records"))
    seconds = _number(quorum.get("voter_lag_threshold_seconds"))
    results: Results = []
    for voter in quorum.get("voters") or []:
        if voter.get("id") == quorum.get("leader_id"):
            continue
        entity = f"controller/{voter.get('id')}"
        lag, age = _number(voter.get("lag")), _number(voter.get("caught_up_age_seconds"))
        behind = []
        if lag is not None and records is not None and lag > records:
            behind.append(f"{lag:g} records behind the leader (threshold {records:g})")
        if age is not None and seconds is not None and age > seconds:
            behind.append(f"not caught up for {age:.0f} s (threshold {seconds:g} s)")
        if voter.get("log_end_offset") is None and voter.get("last_caught_up_time") is None:
            behind.append("it has not fetched from the leader since the leader was elected")
        if behind:
            results.append(Finding(entity, lag, f"KRaft voter {voter.get('id')} is lagging: " + ", ".join(behind)))
        elif lag is None or age is None:
            results.append(Unknown(entity, "voter lag or caught-up time not known"))
    return results


def _rule(name: str, severity: str, for_seconds: float, check: Check, condition: str,
          inhibited_by: Sequence[str] = ()) -> Rule:
    return Rule(name, severity, for_seconds, check, runbook=name, condition=condition,
                inhibited_by=tuple(inhibited_by))


RULES: tuple[Rule, ...] = (
    _rule("UnderReplicatedPartitions", WARNING, URP_HOLD_SECONDS,
          _cluster_count_above_zero("under_replicated_partitions", "under-replicated partitions"),
          "under-replicated partitions > 0"),
    _rule("OfflinePartitions", CRITICAL, 0.0,
          _cluster_count_above_zero("offline_partitions", "offline partitions (no leader): clients fail now"),
          "offline partitions > 0"),
    _rule("UnderMinIsrPartitions", CRITICAL, 0.0,
          _cluster_count_above_zero("under_min_isr_partitions",
                                    "partitions below min.insync.replicas: acks=all producers fail"),
          "under-min-ISR partitions > 0"),
    _rule("ActiveControllerCount", CRITICAL, CONTROLLER_HOLD_SECONDS, _active_controllers,
          f"active controller count != {EXPECTED_ACTIVE_CONTROLLERS}"),
    _rule("RequestHandlerIdleLow", WARNING, IDLE_WARNING_HOLD_SECONDS,
          _idle_below(IDLE_WARNING_BELOW, "a potential problem"),
          f"request handler idle ratio < {IDLE_WARNING_BELOW}", inhibited_by=("RequestHandlerIdleCritical",)),
    _rule("RequestHandlerIdleCritical", CRITICAL, IDLE_CRITICAL_HOLD_SECONDS,
          _idle_below(IDLE_CRITICAL_BELOW, "requests are queueing now"),
          f"request handler idle ratio < {IDLE_CRITICAL_BELOW}"),
    _rule("BrokerDown", CRITICAL, BROKER_DOWN_HOLD_SECONDS, _broker_down, "a known broker is not up"),
    _rule("ConsumerGroupStatus", WARNING, 0.0, _group_status,
          "status STOP or STALL (warning), ERR (critical)"),
    _rule("ConsumerGroupLagSeconds", WARNING, LAG_HOLD_SECONDS, _group_lag_seconds,
          "max lag seconds > the group's lag_seconds_threshold"),
    _rule("ShareGroupNotAcknowledging", WARNING, SHARE_GROUP_HOLD_SECONDS, _share_group_not_acknowledging,
          "share group status STALLED or NOT_CONSUMING: lag > 0 and nothing acknowledged over the window"),
    _rule("StreamsAppNotRunning", WARNING, STREAMS_GRACE_SECONDS, _streams_not_running,
          "state != RUNNING (warning after the grace period), ERROR/PENDING_ERROR (critical at once)"),
    _rule("ProbeFailing", CRITICAL, PROBE_HOLD_SECONDS, _probe_failing,
          "produce or consume availability < 1, or lost records > 0"),
    _rule("CollectorDown", WARNING, COLLECTOR_HOLD_SECONDS, _collector_down, "a collector is down"),
    _rule("MetadataErrors", CRITICAL, 0.0, _metadata_errors, "a node's KRaft metadata error count > 0"),
    _rule("FencedBrokers", CRITICAL, FENCED_HOLD_SECONDS, _fenced_brokers, "fenced brokers > 0"),
    _rule("VoterLagging", WARNING, VOTER_LAG_HOLD_SECONDS, _voters_lagging,
          "a KRaft voter lags > kraft.voter_lag_records records or is not caught up for > kraft.voter_lag_seconds"),
    _rule("KpulseNotAuthorized", WARNING, 0.0, _not_authorized,
          "kpulse's principal may not read a value or run the probe (its ACLs, not a Kafka failure)"),
)


def rule_by_name(name: str, rules: Sequence[Rule] = RULES) -> Rule:
    for rule in rules:
        if rule.name == name:
            return rule
    raise KeyError(name)
