"""The operations subcommands of ``kpulse``: identity and printing (arguments: :mod:`cli.operation_args`;
planning and executing: :class:`operations.service.Operations`).

Who acts on the command line: without a users file, the OS user, with the admin role (a
single-user local setup). With a users file (``dashboard.users_file``, default
``<state dir>/users.yaml``), the OS user must be in it (the OS login authenticates), or ``--as USER``
names another user, whose password comes from ``$KPULSE_PASSWORD`` or a prompt.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
import time
from pathlib import Path

from cli.operation_args import APPROVALS, AUDIT, USERS
from kpulse.progress import Progress
from operations.access import FAILED_LOGIN, users_file
from operations.errors import BadInput, LoginFailed, NotAuthorized
from operations.numbers import JAVA_LONG, PARTITION, parse_integer, parse_integers
from operations.offset_plan import STRATEGIES
from operations.registry import (
    DELETE_GROUP, DELETE_OFFSETS, ELECT_LEADERS, REASSIGN, RESET_OFFSETS, RESET_SHARE_GROUP, RESET_STREAMS_APP,
    RESET_STREAMS_GROUP, SKIP_RECORDS, operation,
)
from operations.roles import ADMIN


def run(args: argparse.Namespace, config) -> int | None:
    """Run an operations subcommand on ``config`` (a :class:`KpulseConfig`)."""
    if args.command == USERS:
        _users(args, config)
        return None
    from operations.service import Operations

    operations = Operations(config)
    if args.command == AUDIT:
        _audit_show(args, operations)
        return None
    try:
        return _change(args, operations)
    except LoginFailed:
        from operations.audit import AuditRecord

        cluster = operations.config.cluster(getattr(args, "cluster", None)).name
        actor = operations.users.failed_login_actor(args.as_user or "")
        operations.audit.record(AuditRecord(cluster=cluster, actor=actor, action="login", target=f"kpulse {args.command}",
                                            result="denied", error=FAILED_LOGIN))
        raise


def _change(args, operations) -> int | None:
    try:
        return HANDLERS[args.command](args, operations)
    finally:
        operations.close()


def cli_actor(config, as_user: str | None):
    """The user a command acts as (module docstring)."""
    from operations.access import User

    users = users_file(config)
    os_user = getpass.getuser()
    if not users.exists():
        if as_user:
            raise BadInput(f"--as needs a users file ({users.path} does not exist; create it with kpulse users add)")
        return User(os_user, ADMIN, "no-users-file")
    if as_user:
        password = os.environ.get("KPULSE_PASSWORD")
        if password is None and sys.stdin.isatty():
            password = getpass.getpass(f"password of {as_user}: ")
        if password is None:
            raise NotAuthorized(f"--as {as_user} needs the password: set KPULSE_PASSWORD or run in a terminal")
        return users.authenticate(as_user, password)
    user = users.get(os_user)
    if user is None:
        raise NotAuthorized(f"OS user {os_user!r} is not in the users file {users.path}; use --as USER")
    return user


# --- reset-offsets -------------------------------------------------------------------------------

def _reset_offsets(args, operations) -> int | None:
    from operations.offset_plan import ResetPlan, Scope, Strategy, parse_expect_current

    entry = operation(RESET_OFFSETS)
    cluster = operations.config.cluster(args.cluster).name
    expected = parse_expect_current(args.expect_current)
    if expected and not args.execute:
        raise BadInput("--expect-current is checked when the plan is executed: add --execute")
    if args.plan:
        plan = ResetPlan.from_dict(_read_json(args.plan))
        if plan.group_id != args.group or plan.cluster != cluster:
            raise BadInput(f"the plan in {args.plan} is for group {plan.group_id!r} on cluster {plan.cluster!r}")
        if not args.execute or operations.needs_approval(cluster, entry.action):
            # a dry run shows, and a request waits on, only a plan that could run (an execution is
            # checked, and audited, by the executor)
            operations.check_reset_plan(plan, include_internal=args.include_internal)
    else:
        if args.strategy is None:
            raise BadInput("a reset strategy is needed: --" + ", --".join(STRATEGIES))
        plan = entry.planner(operations, cluster, args.group, Scope.parse(args.all_topics, args.topic),
                             Strategy(*args.strategy), include_internal=args.include_internal)
    outcome = None
    if args.execute:
        actor = cli_actor(operations.config, args.as_user)
        options = _run_options(args, **({"expect_current": [[t, p, o] for (t, p), o in sorted(expected.items())]}
                                        if expected else {}))
        if operations.needs_approval(cluster, entry.action):
            _requested(operations.request_approval(actor, entry.action, plan, options))
            return None
        outcome = entry.executor(operations, actor, plan, options, None)
    if args.export:
        print(plan.to_csv(), end="")
    elif args.json:
        print(json.dumps({"plan": plan.to_dict(), "result": outcome.to_dict() if outcome else None}, indent=2))
    else:
        _print_reset_plan(plan)
        if outcome is None:
            print("dry run: nothing changed (add --execute to apply)")
        else:
            _print_reset_outcome(outcome)
            _print_authorization_hint(entry.name, plan.group_id, outcome)
    return 1 if outcome is not None and outcome.result != "ok" else None


def _run_options(args, **options) -> dict:
    """How the plan is to run, now or once approved (:attr:`Operation.executor`'s ``options``):
    the CLI's execution flags."""
    return {**options, **({"include_internal": True} if args.include_internal else {})}


def _print_reset_plan(plan) -> None:
    print(f"group {plan.group_id} ({plan.group_state}) on cluster {plan.cluster}: {plan.strategy.describe()}, "
          f"scope {plan.scope.describe() or 'from file'}")
    width = max([5] + [len(p.topic) for p in plan.partitions])
    print(f"{'TOPIC':<{width}} {'PARTITION':>9} {'CURRENT':>10} {'NEW':>10} {'LAG-BEFORE':>10} "
          f"{'LAG-AFTER':>10} {'REPLAYED':>9} {'SKIPPED':>9}")
    for p in plan.partitions:
        current = "-" if p.current is None else p.current
        lag = "-" if p.lag_before is None else p.lag_before
        print(f"{p.topic:<{width}} {p.partition:>9} {current:>10} {p.new:>10} {lag:>10} {p.lag_after:>10} "
              f"{p.replayed:>9} {p.skipped:>9}")
    print(f"{len(plan.partitions)} partition(s): {plan.total_replayed} message(s) replayed, "
          f"{plan.total_skipped} skipped")
    for warning in plan.warnings:
        print(f"warning: {warning}")


def _print_reset_outcome(outcome) -> None:
    for p in outcome.partitions:
        if p.error:
            print(f"FAILED {p.topic}-{p.partition}: {p.error}")
    done = sum(p.error is None for p in outcome.partitions)
    print(f"{outcome.result}: {done}/{len(outcome.partitions)} partition(s) reset and verified "
          "(committed offsets read back)")


def _read_json(path: str):
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise BadInput(f"cannot read the plan {path}: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise BadInput(f"cannot read the plan {path}: not UTF-8 text (byte {error.object[error.start]:#04x} "
                       f"at position {error.start})") from None
    except (ValueError, RecursionError) as error:
        raise BadInput(f"cannot read the plan {path}: not JSON ({str(error) or 'nested too deeply'})") from None


# --- reset-streams-app ---------------------------------------------------------------------------

def _topics(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def _reset_streams_app(args, operations) -> int | None:
    from operations.offset_plan import Strategy

    entry = operation(RESET_STREAMS_APP)
    cluster = operations.config.cluster(args.cluster).name
    strategy = Strategy(*args.strategy) if args.strategy else None
    if _group_type(operations, cluster, args.application_id) == "streams":
        return _streams_app_as_group(args, operations, cluster, strategy)
    plan = entry.planner(operations, cluster, args.application_id, _topics(args.input_topics),
                         _topics(args.intermediate_topics), _topics(args.internal_topics), strategy,
                         include_internal=args.include_internal)
    outcome = None
    if args.execute:
        actor = cli_actor(operations.config, args.as_user)
        if operations.needs_approval(cluster, entry.action):
            _requested(operations.request_approval(actor, entry.action, plan, _run_options(args)))
            return None
        outcome = entry.executor(operations, actor, plan, _run_options(args), None)
    if args.json:
        print(json.dumps({"plan": plan.to_dict(), "result": outcome.to_dict() if outcome else None}, indent=2))
        return 1 if outcome is not None and outcome.result != "ok" else None
    print(f"Streams application {plan.application_id} ({plan.group_state}) on cluster {plan.cluster}: "
          f"{plan.strategy.describe()}")
    for title, rows in (("input topics (reset)", plan.input), ("intermediate topics (to the end)", plan.intermediate)):
        print(f"{title}:" + ("" if rows else " none"))
        for p in rows:
            print(f"  {p.topic}-{p.partition}: {'-' if p.current is None else p.current} -> {p.new}")
    print("internal topics to delete: " + (", ".join(plan.delete_topics) or "none"))
    for topic, owner in plan.foreign:
        print(f"  {topic}: belongs to application {owner}, left alone")
    if plan.untouched:
        print("untouched (output, or not named): " + ", ".join(plan.untouched))
    if outcome is None:
        print("dry run: nothing changed (add --execute to apply)")
    else:
        for row in outcome.partitions:
            if row["error"]:
                print(f"FAILED {row['topic']}-{row['partition']}: {row['error']}")
        print(f"{outcome.result}: offsets read back, deleted {len(outcome.deleted)} topic(s)"
              + (f"; {outcome.error}" if outcome.error else ""))
    print(plan.local_state_note)
    return 1 if outcome is not None and outcome.result != "ok" else None


# --- Kafka 4's group types ------------------------------------------------------------------------

def _group_type(operations, cluster: str, group_id: str) -> str | None:
    """The group's type; None when the cluster lists no such group (the classic planner then says
    what it says of an unknown application id, with its did-you-mean)."""
    try:
        return operations.group_type(cluster, group_id)
    except BadInput:
        return None


def _streams_app_as_group(args, operations, cluster: str, strategy) -> int | None:
    """``reset-streams-app`` on an application whose group is a Streams group (KIP-1071): the
    Streams group reset, its internal topics deleted as the application reset deletes them."""
    from operations.offset_plan import Scope, Strategy

    if _topics(args.intermediate_topics):
        raise BadInput(f"{args.application_id!r} is a streams group: kafka-streams-groups has no intermediate topics; "
                       "name every topic to reset with --input-topics (or none: every input topic of its topology)")
    if _topics(args.internal_topics):
        raise BadInput(f"{args.application_id!r} is a streams group: its internal topics are deleted all together "
                       "(kafka-streams-groups --delete-all-internal-topics); leave out --internal-topics")
    inputs = _topics(args.input_topics)
    scope = Scope(all_topics=not inputs, topics=tuple((t, None) for t in inputs))
    entry = operation(RESET_STREAMS_GROUP)
    plan = entry.planner(operations, cluster, args.application_id, scope, strategy or Strategy("to-earliest"),
                         delete_internal_topics=True, include_internal=args.include_internal)
    return _plan_and_run(args, operations, entry, plan)


def _reset_streams_group(args, operations) -> int | None:
    from operations.offset_plan import Scope, Strategy

    if args.strategy is None:
        raise BadInput("a reset strategy is needed: --" + ", --".join(STRATEGIES))
    entry = operation(RESET_STREAMS_GROUP)
    cluster = operations.config.cluster(args.cluster).name
    plan = entry.planner(operations, cluster, args.group, Scope.parse(args.all_input_topics, args.input_topic),
                         Strategy(*args.strategy), delete_internal_topics=args.delete_all_internal_topics,
                         include_internal=args.include_internal)
    return _plan_and_run(args, operations, entry, plan, export=plan.to_csv() if args.export else None)


def _reset_share_group(args, operations) -> int | None:
    from operations.group_plans import SHARE_STRATEGIES
    from operations.offset_plan import Scope, Strategy

    if args.strategy is None:
        raise BadInput("a reset strategy is needed: --" + ", --".join(SHARE_STRATEGIES))
    entry = operation(RESET_SHARE_GROUP)
    cluster = operations.config.cluster(args.cluster).name
    plan = entry.planner(operations, cluster, args.group, Scope.parse(args.all_topics, args.topic),
                         Strategy(*args.strategy), include_internal=args.include_internal)
    return _plan_and_run(args, operations, entry, plan)


def _delete_offsets(args, operations) -> int | None:
    entry = operation(DELETE_OFFSETS)
    cluster = operations.config.cluster(args.cluster).name
    plan = entry.planner(operations, cluster, args.group, list(args.topic), include_internal=args.include_internal)
    return _plan_and_run(args, operations, entry, plan)


def _delete_group(args, operations) -> int | None:
    entry = operation(DELETE_GROUP)
    cluster = operations.config.cluster(args.cluster).name
    plan = entry.planner(operations, cluster, args.group, delete_internal_topics=args.delete_all_internal_topics,
                         include_internal=args.include_internal)
    return _plan_and_run(args, operations, entry, plan)


def _skip_records(args, operations) -> int | None:
    entry = operation(SKIP_RECORDS)
    cluster = operations.config.cluster(args.cluster).name
    partition = parse_integer(args.partition, "--partition", PARTITION)
    to_offset = parse_integer(args.to_offset, "--to-offset") if args.to_offset is not None else None
    expect_from = parse_integer(args.expect_from, "--expect-from") if args.expect_from is not None else None
    plan = entry.planner(operations, cluster, args.group, args.topic, partition, to_offset, expect_from=expect_from,
                         include_internal=args.include_internal)
    return _plan_and_run(args, operations, entry, plan)


def _plan_and_run(args, operations, entry, plan, export: str | None = None) -> int | None:
    """Print ``plan`` (its summary and tables, from the registry; or ``export``, the official tool's
    CSV, with ``--export``); with ``--execute`` run it first (or file an approval request) and print
    what was read back."""
    outcome = None
    if args.execute:
        actor = cli_actor(operations.config, args.as_user)
        if operations.needs_approval(plan.cluster, entry.action):
            _requested(operations.request_approval(actor, entry.action, plan, _run_options(args)))
            return None
        outcome = entry.executor(operations, actor, plan, _run_options(args), None)
    if export is not None:
        print(export, end="")
    elif args.json:
        print(json.dumps({"plan": plan.to_dict(), "result": outcome.to_dict() if outcome else None}, indent=2))
    else:
        _print_plan_and_outcome(entry, plan, outcome)
    return 1 if outcome is not None and outcome.result != "ok" else None


def _print_plan_and_outcome(entry, plan, outcome) -> None:
    print(entry.summary(plan, str) + f" on cluster {plan.cluster}")
    for number, (title, table) in enumerate(entry.tables(plan).items()):
        if number == 0 or not table.empty:
            print(f"{title}:" + ("\n" + table.to_string(index=False) if not table.empty else " none"))
    for warning in getattr(plan, "warnings", ()):
        print(f"warning: {warning}")
    if outcome is None:
        print("dry run: nothing changed (add --execute to apply)")
    else:
        table = entry.outcome_table(outcome)
        if not table.empty:
            print("read back:\n" + table.to_string(index=False))
        print(f"{outcome.result}" + (f": {outcome.error}" if outcome.error else ": done and verified (read back)"))
        _print_authorization_hint(entry.name, getattr(plan, "group_id", None), outcome)
    for note in entry.notes(plan):
        print(note)


def _print_authorization_hint(action: str, group: str | None, outcome) -> None:
    """When Kafka refused a partition for want of an ACL: which one (:func:`operations.permissions.explain`)."""
    from operations.permissions import explain

    rows = [row if isinstance(row, dict) else vars(row) for row in outcome.partitions]
    errors = [row["error"] for row in rows if row.get("error")] + [outcome.error or ""]
    for error in dict.fromkeys(errors):
        hint = explain(error, action, group=group, topics=sorted({row["topic"] for row in rows}))
        if hint:
            print(f"why: {hint} (kpulse doctor says what kpulse's principal may do)")
            return


# --- elect-leaders -------------------------------------------------------------------------------

def _election_scope(args) -> tuple:
    if args.election_type != "PREFERRED":
        raise BadInput(f"election type {args.election_type} is not run by kpulse (unclean elections lose data); "
                       "use kafka-leader-election if you must")
    if args.partition is not None and not args.topic:
        raise BadInput("--partition needs --topic")
    if args.topic:
        partition = None if args.partition is None else parse_integer(args.partition, "--partition", PARTITION)
        return ((args.topic, None if partition is None else (partition,)),)
    if args.path_to_json_file:
        from operations.plan_fields import PlanFields

        fields = PlanFields(_read_json(args.path_to_json_file),
                            'a leader election JSON ({"partitions": [{"topic": ..., "partition": ...}]})')
        chosen: dict[str, list[int]] = {}
        for item in fields.sections("partitions"):
            chosen.setdefault(item.string("topic"), []).append(item.integer("partition", bounds=PARTITION))
        return tuple((t, tuple(sorted(p))) for t, p in sorted(chosen.items()))
    return ()


def _elect_leaders(args, operations) -> int | None:
    entry = operation(ELECT_LEADERS)
    cluster = operations.config.cluster(args.cluster).name
    plan = entry.planner(operations, cluster, _election_scope(args), include_internal=args.include_internal)
    outcome = (entry.executor(operations, cli_actor(operations.config, args.as_user), plan, _run_options(args), None)
               if args.execute else None)
    if args.json:
        print(json.dumps({"plan": plan.to_dict(), "result": outcome.to_dict() if outcome else None}, indent=2))
    else:
        print(f"{len(plan.moves)} partition(s) of {plan.target} not led by their preferred replica")
        for m in plan.moves:
            note = "" if m.preferred_in_sync else "  (preferred replica not in sync: cannot elect now)"
            print(f"  {m.topic}-{m.partition}: leader {m.leader} -> preferred {m.preferred}{note}")
        if outcome is None:
            print("dry run: nothing changed (add --execute to elect)")
        else:
            for row in outcome.partitions:
                status = "ok" if row["error"] is None else f"FAILED: {row['error']}"
                print(f"  {row['topic']}-{row['partition']}: leader now {row['after']} {status}")
            print(f"{outcome.result}: {len(outcome.partitions)} election(s), leaders read back")
    return 1 if outcome is not None and outcome.result != "ok" else None


# --- reassign ------------------------------------------------------------------------------------

def _brokers(text: str) -> list[int]:
    return parse_integers(text, "--broker-list", PARTITION) if text else []


def _reassign(args, operations) -> int | None:
    from operations.reassign_plan import ReassignmentPlan

    entry = operation(REASSIGN)
    cluster = operations.config.cluster(args.cluster).name
    if args.action == "generate":
        drain = None if args.drain is None else parse_integer(args.drain, "--drain", PARTITION)
        plan = entry.planner(operations, cluster, _topics(args.topics), _brokers(args.broker_list) or None, drain,
                             include_internal=args.include_internal)
        if args.output:
            try:
                Path(args.output).write_text(json.dumps(plan.to_dict(), indent=2))
            except OSError as error:
                raise BadInput(f"cannot write the plan to {args.output}: {error.strerror or error}") from None
        if args.json:
            print(json.dumps(plan.to_dict(), indent=2))
            return None
        print(f"{plan.goal}: {len(plan.moves)} partition(s) change, {plan.replicas_moved} replica(s) move")
        for m in plan.moves:
            print(f"  {m.topic}-{m.partition}: {list(m.current)} -> {list(m.target)}")
        print(f"plan written to {args.output}" if args.output else "nothing changed (write it with --output FILE)")
        return None
    data = _read_json(args.plan)
    if isinstance(data, dict) and "moves" in data:
        plan = ReassignmentPlan.from_dict(data)
        if plan.cluster != cluster:
            raise BadInput(f"the plan in {args.plan} is for cluster {plan.cluster!r}")
    else:
        plan = entry.planner(operations, cluster, [], official_json=json.dumps(data),
                             include_internal=args.include_internal)
    actor = cli_actor(operations.config, args.as_user)
    progress = Progress()
    if args.action == "execute":
        throttle = parse_integer(str(args.throttle), "--throttle", (1, JAVA_LONG[1]))
        if args.wait and not 0 < args.timeout < float("inf"):
            raise BadInput(f"--timeout must be a positive number of seconds, got {args.timeout}")
        options = _run_options(args, throttle_bytes=throttle)
        if operations.needs_approval(cluster, entry.action):
            _requested(operations.request_approval(actor, entry.action, plan, options))
            return None
        status = entry.executor(operations, actor, plan, options, None)
        if args.wait and status.result == "in-progress":
            reassigner = operations.reassigner(cluster)
            status = reassigner.wait(plan, args.timeout, lambda s: progress.note(
                f"{s.done}/{len(s.partitions)} partition(s) moved"))
            if status.result == "ok":
                status = operations.verify_reassignment(actor, plan)
    elif args.action == "verify":
        status = operations.verify_reassignment(actor, plan)
    else:
        status = operations.cancel_reassignment(actor, plan)
    if args.json:
        print(json.dumps(status.to_dict(), indent=2))
    else:
        for row in status.partitions:
            state = "done" if row["done"] else "moving" if row["moving"] else "not moved"
            print(f"  {row['topic']}-{row['partition']}: replicas {row['replicas']} (target {row['target']}) {state}"
                  + (f" ERROR {row['error']}" if row["error"] else ""))
        print(f"{status.result}: {status.done}/{len(status.partitions)} partition(s) at their target"
              + ("; throttles removed" if status.throttles_removed else "")
              + ("; run `kpulse reassign verify` until done (it removes the throttles)" if status.result == "in-progress" else ""))
    return 1 if status.result in ("failed", "partial") else None


# --- approvals -----------------------------------------------------------------------------------

def _requested(request) -> None:
    print(f"cluster {request.cluster} requires a second operator: approval request {request.id} created "
          f"({request.action} {request.target}); nothing changed yet.")
    print(f"Another operator runs: kpulse approvals approve {request.id}")


def _approvals(args, operations) -> int | None:
    from dataclasses import asdict

    if args.action == "list":
        requests = operations.approvals.all() if args.all else operations.approvals.pending()
        if args.cluster:
            requests = [r for r in requests if r.cluster == operations.config.cluster(args.cluster).name]
        if args.json:
            print(json.dumps([asdict(r) for r in requests], indent=2))
            return None
        for r in requests:
            when = time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(r.requested_at))
            print(f"{r.id}  {when}  {r.cluster}  {r.action:<18} {r.target:<28} by {r.requested_by}  {r.status}"
                  + (f" by {r.decided_by}" if r.decided_by else ""))
        print(f"{len(requests)} request(s)")
        return None
    actor = cli_actor(operations.config, args.as_user)
    if args.action == "reject":
        request = operations.reject(actor, args.request_id)
        print(f"request {request.id} rejected by {request.decided_by}")
        return None
    outcome = operations.approve(actor, args.request_id)
    if args.json:
        print(json.dumps(outcome.to_dict(), indent=2))
    else:
        print(f"request {args.request_id} approved by {actor.name} and run: {outcome.result}"
              + (f" ({outcome.error})" if outcome.error else ""))
    return 1 if outcome.result in ("failed", "partial") else None


HANDLERS = {RESET_OFFSETS: _reset_offsets, RESET_STREAMS_APP: _reset_streams_app,
            RESET_STREAMS_GROUP: _reset_streams_group, RESET_SHARE_GROUP: _reset_share_group,
            DELETE_OFFSETS: _delete_offsets, DELETE_GROUP: _delete_group, SKIP_RECORDS: _skip_records,
            ELECT_LEADERS: _elect_leaders, REASSIGN: _reassign, APPROVALS: _approvals}
"""Subcommand -> its handler: every operation's (by its name), and approvals."""


# --- audit and users -----------------------------------------------------------------------------

def _audit_show(args, operations) -> None:
    from kpulse.printable import visible
    from operations.time_specs import parse_duration_ms

    waiting = operations.audit.retry_spool()
    now = time.time()
    start = min(now - parse_duration_ms(args.since) / 1000, now)
    since = start if start > 0 else None  # reaching before the epoch: from the beginning
    cluster = operations.config.cluster(args.cluster).name if args.cluster else None
    frame = operations.audit.read(since=since, cluster=cluster)
    rows = frame.to_dict("records")
    if args.json:
        print(json.dumps({"records": rows, "spooled": waiting}, indent=2, default=str))
        return
    for row in rows:
        row = {key: visible(value) if isinstance(value, str) else value for key, value in row.items()}  # one line
        print(f"{row['time']:%Y-%m-%d %H:%M:%S}Z {row['cluster']} {row['actor']:<12} {row['action']:<18} "
              f"{row['target']:<28} {row['result']:<8} {row['error'] or ''}")
    print(f"{len(rows)} record(s)" + (f"; {waiting} waiting in the spool (lake not writable)" if waiting else ""))


def _users(args, config) -> None:
    from operations.access import authorize_user_admin

    users = users_file(config)
    if args.action == "list":
        for user in users.users():
            print(f"{user.name:<24} {user.role}")
        return
    if users.exists():
        authorize_user_admin(cli_actor(config, args.as_user))
    elif args.role != ADMIN:
        raise BadInput("the first user must be an admin (--role admin)")
    password = os.environ.get("KPULSE_NEW_PASSWORD")
    if password is None:
        if not sys.stdin.isatty():
            raise BadInput("set KPULSE_NEW_PASSWORD or run in a terminal to type the password")
        password = getpass.getpass(f"new password of {args.name}: ")
        if getpass.getpass("again: ") != password:
            raise BadInput("the passwords differ")
    user = users.add(args.name, args.role, password)
    print(f"{user.name}: {user.role} (in {users.path})")
