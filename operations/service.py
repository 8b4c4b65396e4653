"""The one entry point the CLI and the dashboard use for operations: plan (anyone may look),
execute (authorized, one at a time per target, audited).

Every execute call runs the same sequence:

1. :func:`operations.access.authorize` (the actor's role as the users file gives it now,
   read-only cluster) - a refusal is audited as ``denied``;
2. the target's lock (:mod:`operations.locks`) - a busy lock is audited as ``refused``;
3. whether kpulse's principal may do it (:func:`operations.preflight.require`: the ACLs the
   feature needs, as Kafka says the principal holds them) - a refusal is audited as ``refused``;
4. the executor, which re-checks the preconditions, applies and reads back;
5. an audit record with the plan, before, after and result (``ok``, ``partial``, ``failed``,
   ``refused``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any
from collections.abc import Callable

from kpulse import home
from kpulse.expected_idle import FILE_NAME as EXPECTED_IDLE_FILE, ExpectedIdleError, ExpectedIdleFile, Mark
from kpulse.kafka.clients import KafkaPythonUnsupported, admin_client, kafka_python_admin
from operations import locks
from operations.access import APPROVE, MARK_EXPECTED_IDLE, User, UsersFile, authorize, users_file
from operations.approvals import ApprovalRequest, ApprovalStore
from operations.audit import AuditLog, AuditRecord
from operations.errors import BadInput, NotAuthorized, OperationError, Refused
from operations.group_ops import (
    GroupChangeOutcome, execute_delete_group, execute_delete_offsets, execute_share_reset,
    execute_streams_group_reset, plan_delete_group, plan_delete_offsets, plan_share_reset, plan_streams_group_reset,
    read_group_now,
)
from operations.group_plans import DeleteGroupPlan, DeleteOffsetsPlan, ShareResetPlan, StreamsGroupResetPlan
from kpulse.kafka.group_describe import read_group
from operations.group_requests import GroupRequests
from operations.internal_topics import refuse_internal_topics
from operations.kafka_reads import TIMEOUT, GroupListing, all_groups, metadata
from operations.election import ElectionOutcome, execute_election
from operations.election_plan import ElectionPlan, plan_election
from operations.offset_plan import ResetPlan, Scope, Strategy
from operations.offset_reset import ResetOutcome, check_saved_plan, execute_offset_reset, plan_offset_reset
from operations.preflight import PrincipalPermissions, require
from operations.reassign import Reassigner, ReassignmentStatus, generate, legacy_admin_client, plan_from_official_json
from operations.reassign_plan import ReassignmentPlan
from operations.registry import (
    APPROVABLE, DELETE_GROUP, DELETE_OFFSETS, ELECT_LEADERS, REASSIGN_CANCEL, REASSIGN_EXECUTE, REASSIGN_VERIFY,
    RESET_OFFSETS, RESET_SHARE_GROUP, RESET_STREAMS_APP, RESET_STREAMS_GROUP, SKIP_RECORDS, SavedPlanType, operation,
)
from operations.skip_plan import SkipRecordsPlan
from operations.skip_records import (
    execute_skip_records, plan_skip_records, record_stamp, share_delivery_settings,
)
from operations.streams_reset import StreamsResetOutcome, execute_streams_reset, plan_streams_reset
from operations.streams_reset_plan import StreamsResetPlan


class Operations:
    """Operations on the clusters of ``config`` (a :class:`KpulseConfig`). Builds no client and
    touches no file until used."""

    def __init__(self, config, *, state_dir: Path | None = None, audit: AuditLog | None = None,
                 admin_factory: Callable[[dict], Any] | None = None, clock: Callable[[], float] = time.time,
                 users: UsersFile | None = None, group_reader: Callable[..., tuple] = read_group):
        self.config = config
        self.state_dir = state_dir or home.state_dir()
        self.users = users or users_file(config, self.state_dir)
        """Where every authorization reads the actor's current role."""
        self.audit = audit or AuditLog(config.lake.path, self.state_dir / "audit-spool.jsonl", clock=clock)
        self.approvals = ApprovalStore(self.state_dir / "approvals", clock)
        self.expected_idle = ExpectedIdleFile(self.state_dir / EXPECTED_IDLE_FILE)
        """The groups marked expected-idle, which the collection loop reads (``kpulse/expected_idle.py``)."""
        self._admin_factory = admin_factory or (lambda settings: admin_client(settings, connection_errors=True))
        self._admins: dict[str, Any] = {}
        self._reassigners: dict[str, Reassigner] = {}
        self._clock = clock
        self._read_group = group_reader
        """``(cluster config, group id, timeout) -> (GroupListing, GroupDescription)``: the group reader."""

    def may(self, user: User, action: str, cluster: str) -> bool:
        """Whether to offer ``action`` to ``user`` at all (the UI hides what this refuses)."""
        try:
            self.authorize(user, action, self.config.cluster(cluster))
        except (NotAuthorized, Refused):
            return False
        return True

    def authorize(self, user: User, action: str, cluster) -> User:
        """The user with its current role, when it may do ``action`` on ``cluster`` (a
        :class:`ClusterConfig`); raises :class:`NotAuthorized` or :class:`Refused` otherwise."""
        current = self.users.current(user)
        authorize(current, action.split(":")[0], cluster)
        return current

    def admin(self, cluster: str):
        if cluster not in self._admins:
            self._admins[cluster] = self._admin_factory(self.config.cluster(cluster).client_config())
        return self._admins[cluster]

    # --- consumer group offsets ------------------------------------------------------------------

    def plan_reset_offsets(self, cluster: str, group_id: str, scope: Scope, strategy: Strategy, *,
                           include_internal: bool = False) -> ResetPlan:
        name = self.config.cluster(cluster).name
        with self._requests(name) as requests:
            return plan_offset_reset(self.admin(name), requests, name, group_id, scope, strategy, clock=self._clock,
                                     include_internal=include_internal, list_groups=self._group_listing(name))

    def check_reset_plan(self, plan: ResetPlan, *, include_internal: bool = False) -> None:
        """Refuse a plan made earlier (a ``--plan`` file) that no longer fits the cluster, before it
        is shown or run (:func:`check_saved_plan`; the executor checks again)."""
        check_saved_plan(self.admin(self.config.cluster(plan.cluster).name), plan, include_internal=include_internal)

    def reset_offsets(self, actor: User, plan: ResetPlan, *, approved_by: str | None = None,
                      expect_current: dict[tuple[str, int], int] | None = None,
                      include_internal: bool = False) -> ResetOutcome:
        """``expect_current`` (``--expect-current``): committed offsets the executor must find."""
        before = {f"{p.topic}-{p.partition}": p.current for p in plan.partitions}

        def apply() -> tuple[ResetOutcome, Any]:
            with self._requests(plan.cluster) as requests:
                outcome = execute_offset_reset(self.admin(plan.cluster), requests, plan, expect_current,
                                               include_internal=include_internal,
                                               list_groups=self._group_listing(plan.cluster))
            return outcome, {f"{p.topic}-{p.partition}": p.after for p in outcome.partitions}

        return self.run(actor, RESET_OFFSETS, plan.cluster, plan.target, plan.to_dict(), before,
                        self._permitted(plan.cluster, RESET_OFFSETS, apply, group=plan.group_id,
                                        topics=[p.topic for p in plan.partitions]),
                        approved_by=approved_by)

    # --- preferred leader election ---------------------------------------------------------------

    def plan_election(self, cluster: str, scope=(), *, include_internal: bool = False) -> ElectionPlan:
        name = self.config.cluster(cluster).name
        return plan_election(metadata(self.admin(name)).topics, name, scope, clock=self._clock,
                             include_internal=include_internal)

    def elect_leaders(self, actor: User, plan: ElectionPlan, *, include_internal: bool = False) -> ElectionOutcome:
        before = {f"{m.topic}-{m.partition}": m.leader for m in plan.moves}

        def apply():
            outcome = execute_election(self.admin(plan.cluster), plan, include_internal=include_internal)
            return outcome, {f"{r['topic']}-{r['partition']}": r["after"] for r in outcome.partitions}

        if plan.electable:  # nothing to elect asks nothing of Kafka
            apply = self._permitted(plan.cluster, ELECT_LEADERS, apply)
        return self.run(actor, ELECT_LEADERS, plan.cluster, plan.target, plan.to_dict(), before, apply)

    # --- Streams application reset --------------------------------------------------------------

    def plan_streams_reset(self, cluster: str, application_id: str, input_topics: list[str],
                           intermediate_topics: list[str], internal_topics: list[str] | None = None,
                           strategy: Strategy | None = None, *, include_internal: bool = False) -> StreamsResetPlan:
        name = self.config.cluster(cluster).name
        with self._requests(name) as requests:
            return plan_streams_reset(self.admin(name), requests, name, application_id, input_topics,
                                      intermediate_topics, internal_topics, strategy, clock=self._clock,
                                      list_groups=self._group_listing(name), include_internal=include_internal)

    def reset_streams_app(self, actor: User, plan: StreamsResetPlan, *, approved_by: str | None = None,
                          include_internal: bool = False) -> StreamsResetOutcome:
        before = {"offsets": {f"{p.topic}-{p.partition}": p.current for p in plan.input + plan.intermediate},
                  "topics": list(plan.delete_topics)}

        def apply():
            with self._requests(plan.cluster) as requests:
                outcome = execute_streams_reset(self.admin(plan.cluster), requests, plan,
                                                include_internal=include_internal,
                                                list_groups=self._group_listing(plan.cluster))
            return outcome, {"offsets": {f"{r['topic']}-{r['partition']}": r["after"] for r in outcome.partitions},
                             "deleted": list(outcome.deleted)}

        apply = self._permitted(plan.cluster, RESET_STREAMS_APP, apply, group=plan.application_id,
                                topics=[p.topic for p in plan.input + plan.intermediate],
                                internal_topics=plan.delete_topics)
        return self.run(actor, RESET_STREAMS_APP, plan.cluster, plan.target, plan.to_dict(), before, apply,
                        approved_by=approved_by, lock=f"group {plan.application_id}")

    def _group_listing(self, cluster: str) -> Callable[[], dict[str, GroupListing]]:
        """Every group of every type, streams-protocol ones included (:func:`all_groups`)."""
        config = self.config.cluster(cluster)
        return lambda: all_groups(self.admin(config.name), lambda: kafka_python_admin(
            config, client_id="kpulse-operations", timeout=TIMEOUT))

    # --- Kafka 4's group types: Streams and share group resets, delete offsets, delete a group ----

    def group_type(self, cluster: str, group_id: str) -> str:
        """``classic``, ``consumer``, ``streams`` or ``share``; :class:`BadInput` for an unknown group."""
        return read_group_now(self._reader(cluster), group_id)[0].type

    def _reader(self, cluster: str):
        config = self.config.cluster(cluster)
        return lambda group_id: self._read_group(config, group_id, TIMEOUT)

    def _requests(self, cluster: str) -> GroupRequests:
        """The group requests every operation reads and commits a group's offsets with (kafka-python,
        never librdkafka's offset calls: librdkafka #5040); connects on first use, closed by ``with``."""
        config = self.config.cluster(cluster)

        def client():
            try:
                return kafka_python_admin(config, client_id="kpulse-operations", timeout=TIMEOUT)
            except KafkaPythonUnsupported as error:
                raise BadInput(f"the group offsets of cluster {config.name!r} are read and changed through kafka-python: "
                               f"{error}; nothing changed") from None

        return GroupRequests(client, TIMEOUT)

    def _with_group(self, cluster: str, call):
        """``call(admin, requests, read)`` with this cluster's clients (kafka-python's closed after)."""
        name = self.config.cluster(cluster).name
        with self._requests(name) as requests:
            return call(self.admin(name), requests, self._reader(name))

    def plan_streams_group_reset(self, cluster: str, group_id: str, scope: Scope, strategy: Strategy, *,
                                 delete_internal_topics: bool = False,
                                 include_internal: bool = False) -> StreamsGroupResetPlan:
        name = self.config.cluster(cluster).name
        return self._with_group(name, lambda admin, requests, read: plan_streams_group_reset(
            admin, requests, read, name, group_id, scope, strategy, delete_internal_topics=delete_internal_topics,
            clock=self._clock, include_internal=include_internal))

    def reset_streams_group(self, actor: User, plan: StreamsGroupResetPlan, *, approved_by: str | None = None,
                            include_internal: bool = False):
        before = {"offsets": {f"{p.topic}-{p.partition}": p.current for p in plan.partitions},
                  "topics": list(plan.delete_topics)}

        def apply():
            outcome = self._with_group(plan.cluster, lambda admin, requests, read: execute_streams_group_reset(
                admin, requests, read, plan, include_internal=include_internal))
            return outcome, {"offsets": {f"{r['topic']}-{r['partition']}": r["after"] for r in outcome.partitions},
                             "deleted": list(outcome.deleted)}

        apply = self._permitted(plan.cluster, RESET_STREAMS_GROUP, apply, group=plan.group_id,
                                topics=[p.topic for p in plan.partitions], internal_topics=plan.delete_topics)
        return self.run(actor, RESET_STREAMS_GROUP, plan.cluster, plan.target, plan.to_dict(), before, apply,
                        approved_by=approved_by)

    def plan_share_reset(self, cluster: str, group_id: str, scope: Scope, strategy: Strategy, *,
                         include_internal: bool = False) -> ShareResetPlan:
        name = self.config.cluster(cluster).name
        return self._with_group(name, lambda admin, requests, read: plan_share_reset(
            admin, requests, read, name, group_id, scope, strategy, clock=self._clock,
            include_internal=include_internal))

    def reset_share_group(self, actor: User, plan: ShareResetPlan, *, approved_by: str | None = None,
                          include_internal: bool = False) -> ResetOutcome:
        before = {f"{p.topic}-{p.partition}": p.current for p in plan.partitions}

        def apply():
            outcome = self._with_group(plan.cluster, lambda admin, requests, read: execute_share_reset(
                admin, requests, read, plan, include_internal=include_internal))
            return outcome, {f"{p.topic}-{p.partition}": p.after for p in outcome.partitions}

        apply = self._permitted(plan.cluster, RESET_SHARE_GROUP, apply, group=plan.group_id,
                                topics=[p.topic for p in plan.partitions])
        return self.run(actor, RESET_SHARE_GROUP, plan.cluster, plan.target, plan.to_dict(), before, apply,
                        approved_by=approved_by)

    def plan_delete_offsets(self, cluster: str, group_id: str, topics: list[str], *,
                            include_internal: bool = False) -> DeleteOffsetsPlan:
        name = self.config.cluster(cluster).name
        return self._with_group(name, lambda admin, requests, read: plan_delete_offsets(
            admin, requests, read, name, group_id, topics, clock=self._clock, include_internal=include_internal))

    def delete_offsets(self, actor: User, plan: DeleteOffsetsPlan, *, approved_by: str | None = None,
                       include_internal: bool = False) -> GroupChangeOutcome:
        before = {f"{r.topic}-{r.partition}": r.offset for r in plan.partitions}

        def apply():
            outcome = self._with_group(plan.cluster, lambda admin, requests, read: execute_delete_offsets(
                admin, requests, read, plan, include_internal=include_internal))
            return outcome, {f"{r['topic']}-{r['partition']}": r["after"] for r in outcome.partitions}

        apply = self._permitted(plan.cluster, DELETE_OFFSETS, apply, group=plan.group_id, topics=plan.topics)
        return self.run(actor, DELETE_OFFSETS, plan.cluster, plan.target, plan.to_dict(), before, apply,
                        approved_by=approved_by)

    def plan_delete_group(self, cluster: str, group_id: str, *, delete_internal_topics: bool = False,
                          include_internal: bool = False) -> DeleteGroupPlan:
        name = self.config.cluster(cluster).name
        plan = self._with_group(name, lambda admin, requests, read: plan_delete_group(
            admin, requests, read, name, group_id, delete_internal_topics=delete_internal_topics, clock=self._clock))
        refuse_internal_topics(plan.delete_topics, include_internal, "deleting a group's internal topics")
        return plan

    def delete_group(self, actor: User, plan: DeleteGroupPlan, *, approved_by: str | None = None,
                     include_internal: bool = False) -> GroupChangeOutcome:
        before = {"offsets": {f"{r.topic}-{r.partition}": r.offset for r in plan.offsets},
                  "topics": list(plan.delete_topics)}

        def apply():
            outcome = self._with_group(plan.cluster, lambda admin, requests, read: execute_delete_group(
                admin, requests, read, plan, include_internal=include_internal))
            return outcome, {"group": None if outcome.result == "ok" else plan.group_id,
                             "deleted": list(outcome.deleted)}

        apply = self._permitted(plan.cluster, DELETE_GROUP, apply, group=plan.group_id,
                                internal_topics=plan.delete_topics)
        return self.run(actor, DELETE_GROUP, plan.cluster, plan.target, plan.to_dict(), before, apply,
                        approved_by=approved_by)

    # --- skipping records -------------------------------------------------------------------------

    def plan_skip_records(self, cluster: str, group_id: str, topic: str, partition: int, to_offset: int | None = None,
                          *, expect_from: int | None = None, include_internal: bool = False) -> SkipRecordsPlan:
        """Skip the record at the committed offset of ``topic``-``partition`` (or up to
        ``to_offset``); ``expect_from``: the committed offset the person saw
        (:func:`operations.skip_records.plan_skip_records`)."""
        config = self.config.cluster(cluster)

        def stamp(topic: str, partition: int, offset: int):
            return record_stamp(config, topic, partition, offset)

        return self._with_group(config.name, lambda admin, requests, read: plan_skip_records(
            admin, requests, read, config.name, group_id, topic, partition, to_offset, expect_from=expect_from,
            stamp=stamp, share_settings=lambda group: share_delivery_settings(admin, group), clock=self._clock,
            include_internal=include_internal))

    def skip_records(self, actor: User, plan: SkipRecordsPlan, *, approved_by: str | None = None,
                     include_internal: bool = False) -> ResetOutcome:
        """Apply a skip (the group type's reset executor), audited with the plan: the offsets and
        the skipped record's timestamp, never its contents."""
        where = f"{plan.topic}-{plan.partition}"

        def apply():
            outcome = self._with_group(plan.cluster, lambda admin, requests, read: execute_skip_records(
                admin, requests, read, plan, include_internal=include_internal,
                list_groups=self._group_listing(plan.cluster)))
            return outcome, {f"{p.topic}-{p.partition}": p.after for p in outcome.partitions}

        apply = self._permitted(plan.cluster, SKIP_RECORDS, apply, group=plan.group_id, topics=[plan.topic])
        return self.run(actor, SKIP_RECORDS, plan.cluster, plan.target, plan.to_dict(), {where: plan.from_offset},
                        apply, approved_by=approved_by)

    # --- partition reassignment -----------------------------------------------------------------

    def reassigner(self, cluster: str) -> Reassigner:
        """One per cluster, kept: it holds kafka-python's client (closed by :meth:`close`)."""
        config = self.config.cluster(cluster)
        if config.name not in self._reassigners:
            self._reassigners[config.name] = Reassigner(self.admin(config.name), lambda: legacy_admin_client(config))
        return self._reassigners[config.name]

    def close(self) -> None:
        for reassigner in self._reassigners.values():
            reassigner.close()
        self._reassigners.clear()

    def plan_reassignment(self, cluster: str, topics: list[str], brokers: list[int] | None = None,
                          drain_broker: int | None = None, official_json: str | None = None, *,
                          include_internal: bool = False) -> ReassignmentPlan:
        name = self.config.cluster(cluster).name
        if official_json is not None:
            return plan_from_official_json(self.admin(name), name, official_json, clock=self._clock,
                                           include_internal=include_internal)
        return generate(self.admin(name), name, topics, brokers, drain_broker, clock=self._clock,
                        include_internal=include_internal)

    def start_reassignment(self, actor: User, plan: ReassignmentPlan, throttle_bytes: int, *,
                           approved_by: str | None = None, include_internal: bool = False) -> ReassignmentStatus:
        return self._reassign(actor, REASSIGN_EXECUTE, plan, lambda reassigner: reassigner.execute(
            plan, throttle_bytes, include_internal=include_internal), approved_by)

    def verify_reassignment(self, actor: User, plan: ReassignmentPlan) -> ReassignmentStatus:
        """Read-only while moves are in progress; once complete it removes the throttles (a change,
        authorized and audited)."""
        status = self.reassigner(plan.cluster).status(plan)
        if status.result != "ok":
            return status
        return self._reassign(actor, REASSIGN_VERIFY, plan, lambda r: r.verify(plan))

    def cancel_reassignment(self, actor: User, plan: ReassignmentPlan) -> ReassignmentStatus:
        return self._reassign(actor, REASSIGN_CANCEL, plan, lambda reassigner: reassigner.cancel(plan))

    def _reassign(self, actor: User, action: str, plan: ReassignmentPlan, call,
                  approved_by: str | None = None) -> ReassignmentStatus:
        before = {f"{m.topic}-{m.partition}": list(m.current) for m in plan.moves}

        def apply():
            status = call(self.reassigner(plan.cluster))
            return status, {f"{r['topic']}-{r['partition']}": r["replicas"] for r in status.partitions}

        if plan.moves:
            apply = self._permitted(plan.cluster, action, apply, moved_topics=[m.topic for m in plan.moves])
        return self.run(actor, action, plan.cluster, plan.target, plan.to_dict(), before, apply,
                        approved_by=approved_by)

    # --- expected-idle consumer groups (not a cluster change) ----------------------------------------

    def set_expected_idle(self, actor: User, cluster: str, group_id: str, expected: bool, note: str = "") -> Mark | None:
        """Mark ``group_id`` expected-idle (``expected``) or unmark it: authorized by role (a read-only
        cluster allows it: it changes what pages someone, not the cluster), audited with who and when.
        Unmarking a group only the config names changes nothing the config says (the page says so).
        Returns the mark it had before."""
        cluster_config = self.config.cluster(cluster)
        action = MARK_EXPECTED_IDLE if expected else f"un{MARK_EXPECTED_IDLE}"
        record = dict(cluster=cluster_config.name, actor=actor.name, action=action, target=group_id)
        if not isinstance(group_id, str) or not group_id:
            raise BadInput("say which consumer group: the group id is empty")
        try:
            actor = self.authorize(actor, MARK_EXPECTED_IDLE, cluster_config)
        except (NotAuthorized, Refused) as error:
            self.audit.record(AuditRecord(**record, result="denied", error=str(error)))
            raise
        mark = Mark(by=actor.name, at=self._clock(), note=" ".join(note.split())) if expected else None
        try:
            before = self.expected_idle.set(cluster_config.name, group_id, mark)
        except ExpectedIdleError as error:
            self.audit.record(AuditRecord(**record, result="failed", error=str(error)))
            raise
        self.audit.record(AuditRecord(**record, result="ok", before={"expected_idle": before is not None},
                                      after={"expected_idle": expected}, plan={"note": mark.note} if mark else None))
        return before

    def expected_idle_marks(self, cluster: str) -> dict[str, Mark]:
        return self.expected_idle.marks(self.config.cluster(cluster).name)

    # --- two-person approval ----------------------------------------------------------------------

    def needs_approval(self, cluster: str, action: str) -> bool:
        return self.config.cluster(cluster).require_approval and action in APPROVABLE

    def request_approval(self, actor: User, action: str, plan, options: dict | None = None) -> ApprovalRequest:
        """Record ``plan`` as a request another operator approves (nothing runs now). ``options``:
        how it is to run (``throttle_bytes``, ``include_internal``)."""
        cluster = self.config.cluster(plan.cluster)
        record = dict(cluster=cluster.name, actor=actor.name, action=action, target=plan.target, plan=plan.to_dict())
        try:
            actor = self.authorize(actor, action, cluster)
        except (NotAuthorized, Refused) as error:
            self.audit.record(AuditRecord(**record, result="denied", error=str(error)))
            raise
        request = self.approvals.create(cluster.name, action, plan.target, plan.to_dict(), actor.name, actor.role, options,
                                        requested_source=actor.source)
        self.audit.record(AuditRecord(**record, result="requested", error=None, after={"request": request.id}))
        return request

    def approve(self, approver: User, request_id: str):
        """Approve a pending request and run its plan now, as the requester. A requester who no
        longer has the role the action needs makes the request fail (refused, audited)."""
        request = self.approvals.get(request_id)
        cluster = self.config.cluster(request.cluster)
        approver = self.authorize(approver, APPROVE, cluster)
        requester = User(request.requested_by, request.requested_role, request.requested_source)
        try:
            self.authorize(requester, request.action, cluster)
        except (NotAuthorized, Refused) as error:
            if request.status == "pending" and request.requested_by != approver.name:
                self.approvals.mark_failed(request_id, str(error))
                self.audit.record(AuditRecord(cluster=cluster.name, actor=requester.name, action=request.action,
                                              target=request.target, result="denied", plan=request.plan,
                                              error=str(error), approved_by=approver.name))
                raise type(error)(f"approval request {request_id} refused: {error}") from None
        request = self.approvals.decide(request_id, approver.name, "approved")
        try:
            entry = operation(request.action) if request.action in APPROVABLE else None
            if entry is None or not isinstance(entry.plan_type, SavedPlanType):  # a request file written by hand
                raise BadInput(f"{request.action} does not take approval")
            return entry.executor(self, requester, entry.plan_type.from_dict(request.plan), request.options,
                                  approver.name)
        except OperationError as error:
            self.approvals.mark_failed(request_id, str(error))
            raise

    def reject(self, approver: User, request_id: str) -> ApprovalRequest:
        request = self.approvals.get(request_id)
        approver = self.authorize(approver, APPROVE, self.config.cluster(request.cluster))
        decided = self.approvals.decide(request_id, approver.name, "rejected")
        self.audit.record(AuditRecord(cluster=request.cluster, actor=approver.name, action=request.action,
                                      target=request.target, result="rejected", plan=request.plan,
                                      after={"request": request.id}))
        return decided

    # --- the common sequence ---------------------------------------------------------------------

    def _permitted(self, cluster: str, action: str, apply: Callable[[], tuple[Any, Any]],
                   **resources) -> Callable[[], tuple[Any, Any]]:
        """``apply`` preceded by the check that kpulse's principal may do ``action`` on the plan's
        ``resources`` (:func:`operations.preflight.require`): run under the lock, right before the
        executor, so a refusal changes nothing and is audited as refused."""
        def checked() -> tuple[Any, Any]:
            require(PrincipalPermissions(self.admin(cluster)), action, **resources)
            return apply()

        return checked

    def run(self, actor: User, action: str, cluster: str, target: str, plan: Any, before: Any,
            apply: Callable[[], tuple[Any, Any]], *, approved_by: str | None = None, lock: str | None = None):
        """Authorize, lock (``lock``, default ``target``: a Streams reset takes its group's lock),
        ``apply()`` -> (outcome with ``result``/``error``, state after), audit."""
        cluster_config = self.config.cluster(cluster)

        def audit(result: str, after: Any = None, error: str | None = None) -> None:
            self.audit.record(AuditRecord(cluster=cluster_config.name, actor=actor.name, action=action,
                                          target=target, result=result, plan=plan, before=before, after=after,
                                          error=error, approved_by=approved_by))

        try:
            self.authorize(actor, action, cluster_config)
            if approved_by is None and self.needs_approval(cluster_config.name, action):
                raise Refused(f"cluster {cluster_config.name!r} requires a second operator's approval for {action}: "
                              "request it, then another operator approves")
        except (NotAuthorized, Refused) as error:
            audit("denied", error=str(error))
            raise
        try:
            with locks.exclusive(self.state_dir, cluster_config.name, lock or target):
                outcome, after = apply()
        except Refused as error:
            audit("refused", error=str(error))
            raise
        except OperationError as error:
            audit("failed", error=str(error))
            raise
        audit(outcome.result, after, outcome.error)
        return outcome
