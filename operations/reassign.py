"""Partition reassignment against a cluster: generate, execute under a replication throttle,
verify (and remove the throttle when done), cancel.

confluent-kafka has no reassignment call, so the AlterPartitionReassignments and
ListPartitionReassignments requests go through kafka-python's ``KafkaAdminClient``; metadata and
configs use confluent-kafka like the rest of kpulse.

Throttles as ``kafka-reassign-partitions --throttle`` sets them: ``leader.`` and
``follower.replication.throttled.rate`` on every broker of the moving partitions, and on each
topic ``leader.replication.throttled.replicas`` (the current replicas) and
``follower.replication.throttled.replicas`` (the replicas being added). They are removed when
verify finds the reassignment complete, or on cancel.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from collections.abc import Callable

from kpulse.kafka.clients import KafkaPythonUnsupported, error_text, kafka_python_admin
from operations import kafka_reads
from operations.errors import BadInput, OperationError, Refused, unknown
from operations.internal_topics import is_kafka_internal_topic, refuse_internal_topics
from operations.reassign_plan import (
    PartitionMove, ReassignmentPlan, balance, drain, moves_between, parse_official_json,
)

BROKER_THROTTLES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
TOPIC_THROTTLES = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")


@dataclass(frozen=True)
class ReassignmentStatus:
    result: str
    """``not-started``, ``in-progress``, ``ok`` (complete), ``cancelled``, ``partial``, ``failed``."""
    partitions: tuple[dict, ...]
    """{topic, partition, target, replicas, done, moving, error}."""
    throttles_removed: bool = False
    error: str | None = None

    @property
    def done(self) -> int:
        return sum(1 for p in self.partitions if p["done"])

    def to_dict(self) -> dict:
        return asdict(self)


def legacy_admin_client(cluster):
    """kafka-python's KafkaAdminClient for ``cluster`` (a ClusterConfig)."""
    try:
        return kafka_python_admin(cluster, client_id="kpulse-reassign", timeout=kafka_reads.TIMEOUT)
    except KafkaPythonUnsupported as error:
        raise BadInput(f"partition reassignment goes through kafka-python: {error}") from None


def current_assignment(admin, topics: list[str] | None = None, *,
                       include_internal: bool = False) -> dict[tuple[str, int], list[int]]:
    """Replicas of ``topics``; without ``topics``, of every topic (Kafka's internal topics only
    with ``include_internal``)."""
    meta = kafka_reads.metadata(admin).topics
    names = topics if topics else [t for t in meta if include_internal or not is_kafka_internal_topic(t)]
    for topic in names:
        if topic not in meta:
            raise unknown("topic", topic, set(meta))
    return {(t, p): list(meta[t].partitions[p].replicas) for t in names for p in meta[t].partitions}


def broker_racks(admin) -> dict[int, str | None]:
    described = kafka_reads.await_result(admin.describe_cluster(request_timeout=kafka_reads.TIMEOUT),
                                    "cannot describe the cluster")
    return {node.id: getattr(node, "rack", None) for node in described.nodes}


def generate(admin, cluster: str, topics: list[str], brokers: list[int] | None = None, drain_broker: int | None = None,
             *, clock: Callable[[], float] = time.time, include_internal: bool = False) -> ReassignmentPlan:
    refuse_internal_topics(topics, include_internal, "reassignment")
    racks = broker_racks(admin)
    chosen = sorted(brokers) if brokers else sorted(racks)
    missing = [b for b in chosen + ([drain_broker] if drain_broker is not None else []) if b not in racks]
    if missing:
        raise BadInput(f"unknown broker(s) {', '.join(map(str, missing))} (brokers: {', '.join(map(str, sorted(racks)))})")
    current = current_assignment(admin, topics, include_internal=include_internal)
    if drain_broker is not None:
        target, goal = drain(current, drain_broker, chosen, racks), f"drain broker {drain_broker}"
    else:
        target, goal = balance(current, chosen, racks), "balance over brokers " + ",".join(map(str, chosen))
    return ReassignmentPlan(cluster, goal, moves_between(current, target), clock())


def plan_from_official_json(admin, cluster: str, text: str, *, clock: Callable[[], float] = time.time,
                            include_internal: bool = False) -> ReassignmentPlan:
    target = parse_official_json(text)
    refuse_internal_topics((t for t, _ in target), include_internal, "reassignment")
    current = current_assignment(admin, sorted({t for t, _ in target}))
    unknown_partitions = [f"{t}-{p}" for t, p in target if (t, p) not in current]
    if unknown_partitions:
        raise BadInput(f"partition(s) {', '.join(unknown_partitions)} do not exist")
    return ReassignmentPlan(cluster, "from file", moves_between(current, target), clock())


class Reassigner:
    """Executes plans on one cluster. ``admin`` is confluent-kafka's; ``legacy_admin_factory()``
    builds kafka-python's KafkaAdminClient (only when a reassignment call is made)."""

    def __init__(self, admin, legacy_admin_factory: Callable[[], object]):
        self.admin = admin
        self._legacy_factory = legacy_admin_factory
        self._legacy = None

    def _legacy_admin(self):
        if self._legacy is None:
            try:
                self._legacy = self._legacy_factory()
            except Exception as error:  # noqa: BLE001
                raise OperationError(f"cannot connect for reassignment: {error}") from None
        return self._legacy

    def close(self) -> None:
        if self._legacy is not None:
            self._legacy.close()
            self._legacy = None

    def ongoing(self) -> dict[tuple[str, int], dict]:
        try:
            listed = self._legacy_admin().list_partition_reassignments()
        except Exception as error:  # noqa: BLE001
            raise OperationError(f"cannot list partition reassignments: {error}") from None
        return {(tp.topic, tp.partition): state for tp, state in listed.items()}

    def current(self, plan: ReassignmentPlan, *, check_brokers: bool = False) -> dict[tuple[str, int], list[int]]:
        """The replicas of the plan's partitions now. A plan (perhaps an edited file) naming a
        partition that does not exist, or (``check_brokers``) a target broker that is not in the
        cluster, is refused in one line naming them all; nothing is changed."""
        meta = kafka_reads.metadata(self.admin).topics
        current = {(m.topic, m.partition): list(meta[m.topic].partitions[m.partition].replicas) for m in plan.moves
                   if m.topic in meta and m.partition in meta[m.topic].partitions}
        missing = [f"{m.topic}-{m.partition}" for m in plan.moves if (m.topic, m.partition) not in current]
        problems = [f"partition(s) {', '.join(missing)} do not exist"] if missing else []
        if check_brokers:
            brokers = broker_racks(self.admin)
            unknown_brokers = sorted({b for m in plan.moves for b in m.target} - set(brokers))
            if unknown_brokers:
                problems.append(f"broker(s) {', '.join(map(str, unknown_brokers))} do not exist "
                                f"(brokers: {', '.join(map(str, sorted(brokers)))})")
        if problems:
            raise Refused(f"the reassignment plan is refused, nothing changed: {'; '.join(problems)}")
        return current

    def execute(self, plan: ReassignmentPlan, throttle_bytes: int, *,
                include_internal: bool = False) -> ReassignmentStatus:
        """Re-check (no internal topic unless ``include_internal``, partitions and target brokers
        exist, no reassignment in progress, replicas as planned), set the throttles, start."""
        from kafka.structs import TopicPartition

        refuse_internal_topics((m.topic for m in plan.moves), include_internal, "reassignment")
        if throttle_bytes <= 0:
            raise BadInput("--throttle must be a positive number of bytes per second")
        if not plan.moves:
            return ReassignmentStatus("ok", ())
        current = self.current(plan, check_brokers=True)
        busy = self.ongoing()
        if busy:
            raise Refused(f"a reassignment is already in progress ({', '.join(f'{t}-{p}' for t, p in sorted(busy)[:5])})")
        changed = [f"{m.topic}-{m.partition}" for m in plan.moves if tuple(current[(m.topic, m.partition)]) != m.current]
        if changed:
            raise Refused(f"replicas changed since the plan was made ({', '.join(changed[:5])}); generate again")
        self._set_throttles(plan.moves, throttle_bytes)
        request = {TopicPartition(m.topic, m.partition): list(m.target) for m in plan.moves}
        try:
            answer = self._legacy_admin().alter_partition_reassignments(request)
        except Exception as error:  # noqa: BLE001
            self.remove_throttles(plan.moves)
            raise OperationError(f"cannot start the reassignment: {error}") from None
        errors = {(tp.topic, tp.partition): str(error) for tp, error in answer.items() if error is not None}
        if len(errors) == len(plan.moves):
            self.remove_throttles(plan.moves)
        status = self.status(plan)
        rows = tuple({**row, "error": errors.get((row["topic"], row["partition"]))} for row in status.partitions)
        failed = len(errors)
        if not failed and status.result == "ok":  # complete at the read-back (small partitions): the
            return self._completed(plan, rows)  # throttles would otherwise stay until someone verified
        result = status.result if not failed else "failed" if failed == len(rows) else "partial"
        return ReassignmentStatus(result, rows, error=f"{failed} partition(s) refused" if failed else None)

    def status(self, plan: ReassignmentPlan) -> ReassignmentStatus:
        current = self.current(plan)
        busy = self.ongoing()
        rows = []
        for m in plan.moves:
            replicas = current[(m.topic, m.partition)]
            moving = (m.topic, m.partition) in busy
            rows.append({"topic": m.topic, "partition": m.partition, "target": list(m.target), "replicas": replicas,
                         "done": not moving and replicas == list(m.target), "moving": moving, "error": None})
        if all(r["done"] for r in rows):
            return ReassignmentStatus("ok", tuple(rows))
        started = any(r["moving"] or r["done"] for r in rows)
        return ReassignmentStatus("in-progress" if started else "not-started", tuple(rows))

    def verify(self, plan: ReassignmentPlan) -> ReassignmentStatus:
        """Complete -> remove the throttles, ``ok``; otherwise ``in-progress`` (throttles kept)."""
        status = self.status(plan)
        if status.result != "ok":
            return status
        return self._completed(plan, status.partitions)

    def _completed(self, plan: ReassignmentPlan, rows: tuple[dict, ...]) -> ReassignmentStatus:
        """Every move done: the throttles removed, ``ok``."""
        self.remove_throttles(plan.moves)
        return ReassignmentStatus("ok", rows, throttles_removed=True)

    def wait(self, plan: ReassignmentPlan, timeout: float, on_progress: Callable[[ReassignmentStatus], None]) -> ReassignmentStatus:
        """Poll until every move is done or ``timeout``; read-only (verify removes the throttles)."""
        deadline = time.monotonic() + timeout
        while True:
            status = self.status(plan)
            on_progress(status)
            if status.result == "ok" or time.monotonic() > deadline:
                return status
            time.sleep(1.0)

    def cancel(self, plan: ReassignmentPlan) -> ReassignmentStatus:
        """Cancel the plan's ongoing moves (Kafka puts the original replicas back), remove the
        throttles, read back."""
        from kafka.structs import TopicPartition

        self.current(plan)
        busy = self.ongoing()
        pending = [m for m in plan.moves if (m.topic, m.partition) in busy]
        errors = {}
        if pending:
            try:
                answer = self._legacy_admin().alter_partition_reassignments(
                    {TopicPartition(m.topic, m.partition): None for m in pending})
            except Exception as error:  # noqa: BLE001
                raise OperationError(f"cannot cancel the reassignment: {error}") from None
            errors = {(tp.topic, tp.partition): str(e) for tp, e in answer.items() if e is not None}
        self.remove_throttles(plan.moves)
        current = current_assignment(self.admin, sorted({m.topic for m in plan.moves}))
        rows = tuple({"topic": m.topic, "partition": m.partition, "target": list(m.target),
                      "replicas": current[(m.topic, m.partition)], "done": current[(m.topic, m.partition)] == list(m.target),
                      "moving": False, "error": errors.get((m.topic, m.partition))} for m in plan.moves)
        return ReassignmentStatus("cancelled" if not errors else "partial", rows, throttles_removed=True,
                                  error="; ".join(f"{t}-{p}: {e}" for (t, p), e in errors.items()) or None)

    # --- throttles -------------------------------------------------------------------------------

    def _set_throttles(self, moves: tuple[PartitionMove, ...], rate: int) -> None:
        brokers = sorted({b for m in moves for b in m.current + m.target})
        by_topic: dict[str, tuple[list[str], list[str]]] = {}
        for m in moves:
            leaders, followers = by_topic.setdefault(m.topic, ([], []))
            leaders += [f"{m.partition}:{b}" for b in m.current]
            followers += [f"{m.partition}:{b}" for b in m.adding]
        changes = [("broker", str(b), {name: str(rate) for name in BROKER_THROTTLES}) for b in brokers]
        changes += [("topic", topic, dict(zip(TOPIC_THROTTLES, (",".join(lead), ",".join(f)))))
                    for topic, (lead, f) in by_topic.items()]
        self._alter(changes, delete=False)

    def remove_throttles(self, moves) -> None:
        brokers = sorted({b for m in moves for b in m.current + m.target})
        changes = [("broker", str(b), dict.fromkeys(BROKER_THROTTLES)) for b in brokers]
        changes += [("topic", topic, dict.fromkeys(TOPIC_THROTTLES)) for topic in sorted({m.topic for m in moves})]
        self._alter(changes, delete=True)

    def _alter(self, changes, *, delete: bool) -> None:
        from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

        resources = []
        for kind, name, values in changes:
            entries = [ConfigEntry(key, None if delete else value,
                                   incremental_operation=AlterConfigOpType.DELETE if delete else AlterConfigOpType.SET)
                       for key, value in values.items()]
            resources.append(ConfigResource(ResourceType.BROKER if kind == "broker" else ResourceType.TOPIC, name,
                                            incremental_configs=entries))
        for resource in resources:  # the Admin API takes one broker resource per call
            future = self.admin.incremental_alter_configs([resource], request_timeout=kafka_reads.TIMEOUT)[resource]
            try:
                future.result(timeout=kafka_reads.TIMEOUT + 5)
            except Exception as error:  # noqa: BLE001
                action = "remove" if delete else "set"
                raise OperationError(f"cannot {action} the replication throttle on {_label(resource)}: "
                                     f"{error_text(error)}") from None


def _label(resource) -> str:
    from confluent_kafka.admin import ResourceType

    return f"{'broker' if resource.restype == ResourceType.BROKER else 'topic'} {resource.name}"


def throttle_configs(admin, brokers: list[int], topics: list[str]) -> dict[str, dict[str, str]]:
    """The throttle settings in force (``broker 1`` / ``topic t`` -> {config: value}); empty dicts
    when none is set."""
    from confluent_kafka.admin import ConfigResource, ResourceType

    resources = [ConfigResource(ResourceType.BROKER, str(b)) for b in brokers]
    resources += [ConfigResource(ResourceType.TOPIC, t) for t in topics]
    found = {}
    for resource in resources:
        future = admin.describe_configs([resource], request_timeout=kafka_reads.TIMEOUT)[resource]
        entries = kafka_reads.await_result(future, f"cannot describe the configs of {_label(resource)}")
        wanted = BROKER_THROTTLES if resource.restype == ResourceType.BROKER else TOPIC_THROTTLES
        found[_label(resource)] = {k: e.value for k, e in entries.items()
                                   if k in wanted and e.value not in (None, "") and not e.is_default}
    return found
