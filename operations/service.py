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
