"""The one entry point the CLI and the dashboard use for operations: plan (anyone may look),
execute (authorized, one at a time per target, audited).

Every execute call runs the same sequence:

1. :func:`operations.access.authorize` (role, read-only cluster) - a refusal is audited as
   ``denied``;
2. the target's lock (:mod:`operations.locks`) - a busy lock is audited as ``refused``;
3. the executor, which re-checks the preconditions, applies and reads back;
4. an audit record with the plan, before, after and result (``ok``, ``partial``, ``failed``,
   ``refused``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

from kpulse import home
from kpulse.kafka_clients import admin_client
from operations import locks
from operations.access import User, authorize
from operations.audit import AuditLog, AuditRecord
from operations.errors import NotAuthorized, OperationError, Refused
from operations.kafka_reads import metadata
from operations.leaders import ElectionOutcome, ElectionPlan, execute_election, plan_election
from operations.offset_plan import ResetPlan, Scope, Strategy
from operations.reassign import Reassigner, ReassignmentStatus, generate, legacy_admin_client, plan_from_official_json
from operations.reassign_plan import ReassignmentPlan
from operations.offset_reset import ResetOutcome, execute_offset_reset, plan_offset_reset
from operations.streams_reset import StreamsResetOutcome, StreamsResetPlan, execute_streams_reset, plan_streams_reset


class Operations:
    """Operations on the clusters of ``config`` (a :class:`KpulseConfig`). Builds no client and
    touches no file until used."""

    def __init__(self, config, *, state_dir: Path | None = None, audit: AuditLog | None = None,
                 admin_factory: Callable[[dict], Any] | None = None, clock: Callable[[], float] = time.time):
        self.config = config
        self.state_dir = state_dir or home.state_dir()
        self.audit = audit or AuditLog(config.lake.path, self.state_dir / "audit-spool.jsonl", clock=clock)
        self._admin_factory = admin_factory or admin_client
        self._admins: dict[str, Any] = {}
        self._reassigners: dict[str, Reassigner] = {}
        self._clock = clock

    def admin(self, cluster: str):
        if cluster not in self._admins:
            self._admins[cluster] = self._admin_factory(self.config.cluster(cluster).client_config())
        return self._admins[cluster]

    # --- consumer group offsets ------------------------------------------------------------------

    def plan_reset_offsets(self, cluster: str, group_id: str, scope: Scope, strategy: Strategy) -> ResetPlan:
        name = self.config.cluster(cluster).name
        return plan_offset_reset(self.admin(name), name, group_id, scope, strategy, clock=self._clock)

    def reset_offsets(self, actor: User, plan: ResetPlan) -> ResetOutcome:
        before = {f"{p.topic}-{p.partition}": p.current for p in plan.partitions}

        def apply() -> tuple[ResetOutcome, Any]:
            outcome = execute_offset_reset(self.admin(plan.cluster), plan)
            return outcome, {f"{p.topic}-{p.partition}": p.after for p in outcome.partitions}

        return self.run(actor, "reset-offsets", plan.cluster, f"group {plan.group_id}",
                        plan.to_dict(), before, apply)

    # --- preferred leader election ---------------------------------------------------------------

    def plan_election(self, cluster: str, scope=()) -> ElectionPlan:
        name = self.config.cluster(cluster).name
        return plan_election(metadata(self.admin(name)).topics, name, scope, clock=self._clock)

    def elect_leaders(self, actor: User, plan: ElectionPlan) -> ElectionOutcome:
        before = {f"{m.topic}-{m.partition}": m.leader for m in plan.moves}

        def apply():
            outcome = execute_election(self.admin(plan.cluster), plan)
            return outcome, {f"{r['topic']}-{r['partition']}": r["after"] for r in outcome.partitions}

        return self.run(actor, "elect-leaders", plan.cluster, plan.target, plan.to_dict(), before, apply)

    # --- Streams application reset --------------------------------------------------------------

    def plan_streams_reset(self, cluster: str, application_id: str, input_topics: list[str],
                           intermediate_topics: list[str], internal_topics: list[str] | None = None,
                           strategy: Strategy | None = None) -> StreamsResetPlan:
        name = self.config.cluster(cluster).name
        return plan_streams_reset(self.admin(name), name, application_id, input_topics, intermediate_topics,
                                  internal_topics, strategy, clock=self._clock)

    def reset_streams_app(self, actor: User, plan: StreamsResetPlan) -> StreamsResetOutcome:
        before = {"offsets": {f"{p.topic}-{p.partition}": p.current for p in plan.input + plan.intermediate},
                  "topics": list(plan.delete_topics)}

        def apply():
            outcome = execute_streams_reset(self.admin(plan.cluster), plan)
            return outcome, {"offsets": {f"{r['topic']}-{r['partition']}": r["after"] for r in outcome.partitions},
                             "deleted": list(outcome.deleted)}

        return self.run(actor, "reset-streams-app", plan.cluster, plan.target, plan.to_dict(), before, apply)

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
                          drain_broker: int | None = None, official_json: str | None = None) -> ReassignmentPlan:
        name = self.config.cluster(cluster).name
        if official_json is not None:
            return plan_from_official_json(self.admin(name), name, official_json, clock=self._clock)
        return generate(self.admin(name), name, topics, brokers, drain_broker, clock=self._clock)

    def start_reassignment(self, actor: User, plan: ReassignmentPlan, throttle_bytes: int) -> ReassignmentStatus:
        return self._reassign(actor, "reassign:execute", plan,
                              lambda reassigner: reassigner.execute(plan, throttle_bytes))

    def verify_reassignment(self, actor: User, plan: ReassignmentPlan) -> ReassignmentStatus:
        """Read-only while moves are in progress; once complete it removes the throttles (a change,
        authorized and audited)."""
        reassigner = self.reassigner(plan.cluster)
        if reassigner.status(plan).result != "ok":
            return reassigner.status(plan)
        return self._reassign(actor, "reassign:verify", plan, lambda r: r.verify(plan))

    def cancel_reassignment(self, actor: User, plan: ReassignmentPlan) -> ReassignmentStatus:
        return self._reassign(actor, "reassign:cancel", plan, lambda reassigner: reassigner.cancel(plan))

    def _reassign(self, actor: User, action: str, plan: ReassignmentPlan, call) -> ReassignmentStatus:
        before = {f"{m.topic}-{m.partition}": list(m.current) for m in plan.moves}

        def apply():
            status = call(self.reassigner(plan.cluster))
            return status, {f"{r['topic']}-{r['partition']}": r["replicas"] for r in status.partitions}

        return self.run(actor, action, plan.cluster, plan.target, plan.to_dict(), before, apply)

    # --- the common sequence ---------------------------------------------------------------------

    def run(self, actor: User, action: str, cluster: str, target: str, plan: Any, before: Any,
            apply: Callable[[], tuple[Any, Any]], *, approved_by: str | None = None):
        """Authorize, lock, ``apply()`` -> (outcome with ``result``/``error``, state after), audit."""
        cluster_config = self.config.cluster(cluster)

        def audit(result: str, after: Any = None, error: str | None = None) -> None:
            self.audit.record(AuditRecord(cluster=cluster_config.name, actor=actor.name, action=action,
                                          target=target, result=result, plan=plan, before=before, after=after,
                                          error=error, approved_by=approved_by))

        try:
            authorize(actor, action.split(":")[0], cluster_config)
        except (NotAuthorized, Refused) as error:
            audit("denied", error=str(error))
            raise
        try:
            with locks.exclusive(self.state_dir, cluster_config.name, target):
                outcome, after = apply()
        except Refused as error:
            audit("refused", error=str(error))
            raise
        except OperationError as error:
            audit("failed", error=str(error))
            raise
        audit(outcome.result, after, outcome.error)
        return outcome
