"""The operations fuzz harness: every ``kpulse`` operation attacked with hostile input
(Hypothesis, :mod:`tests.fuzz_inputs`), run in-process through ``cli.main.main(argv)`` against a
real cluster, and kpulse's promise checked on every case: a one-line error or a plan whose offsets
lie in [log start, log end], never a traceback, and an execution changes exactly what its plan
shows, or nothing.

Used by ``tests/test_fuzz_operations.py`` (a few dozen cases per operation in ``make test``) and
``bench/fuzz_operations.py`` (thousands).

Each case is classified by how the command ended:

- ``traceback``: an exception other than SystemExit escaped ``main``, or "Traceback" was printed;
- ``error``: exit 1 with exactly one line on stderr, or argparse's exit 2;
- ``plan``: exit 0;
- ``unclear``: anything else (exit 1 with no or several stderr lines: a failed or partial run).

and, independently, checked:

- ``wrong``: a plan shown or executed with an offset outside [log start, log end] as read from the
  cluster right after, on a partition that does not exist, on an internal topic (``__*``), or where
  a timestamp, offset or shift strategy lands elsewhere than the official tool's semantics put it;
  an internal topic named on the command line and accepted; after ``--execute``, a committed
  offset outside the log, a changed partition the plan does not name, a change by a command that
  failed, a change made for an approval request whose requester no longer has the role; a Streams
  reset that would delete a topic that is not ``<application.id>-...`` of that application, the
  longest existing application id it starts with;
- ``malformed accepted``: exit 0 for a value the official tools refuse (underscores in numbers,
  non-ASCII digits, impossible dates).

Issue 15's operations on the group types of Kafka 4 (``reset-streams-group``, ``reset-share-group``,
``delete-offsets``, ``delete-group``) are checked against the world's snapshot (the groups listed,
the harness's topics, the offsets of the groups they act on), read before and after every case,
also a refused one. ``wrong`` as well: any change by a case that failed or was not executed; an
executed case on a group the operation must refuse (the active one, another type); a change to
another group's offsets, another group deleted; a topic deleted without
``--delete-all-internal-topics``, or one that is not the Streams group's own internal topic; a
delete-group execute that leaves the group listed or its offsets; a delete-offsets execute that
changes offsets of a topic it does not name, or keeps one; a reset that changes a partition its
plan does not name, deletes offsets or puts one outside the log; a plan that would delete topics
without the flag or not the group's own.

What the harness must never do to the cluster it runs on: it executes offset resets only on its own
groups (restored to their baseline after each case) and elections; Streams application resets are
dry runs; Streams group and share group resets are executed on the world's groups and undone after
(offsets committed again, internal topics created again); deleting a Streams or share group or
their offsets is only planned (the cases turn such an ``--execute`` into ``--dry-run``); and
``reassign execute`` runs its executor with the reassignment client replaced by one that records
the reassignment instead of sending it, and the throttles left unset.

Speed: ``main`` builds one ``Operations`` per call, which would build a new Admin client per case;
:meth:`Harness.patched` replaces ``operations.service.admin_client`` with a cache keyed by the
client config, so one client serves every case of a config.
"""

from __future__ import annotations

import contextlib
import io
import inspect
import json
import os
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from collections.abc import Callable

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed

from tests.fuzz_cases import CASES, OPERATIONS, Case, seeds  # noqa: F401 - OPERATIONS: for the test and the bench
from tests.fuzz_inputs import FIRST_RECORD_MS, first_offset_at
from tests.fuzz_world import World


@dataclass
class CaseResult:
    argv: list[str]
    category: str
    """``traceback``, ``error``, ``plan`` or ``unclear`` (module docstring)."""
    exit_code: int | None
    stderr: str
    problems: list[str] = field(default_factory=list)
    """Why the case is a wrong change (none: it is not)."""
    malformed_accepted: bool = False
    signature: str = ""
    """Traceback: exception type and last frame."""
    files: dict[str, bytes] = field(default_factory=dict)


class Harness:
    """Runs cases of one :class:`World` and checks them (module docstring)."""

    def __init__(self, world: World):
        self.world = world
        self.captured: list[tuple[str, Any]] = []
        self.case_dir = world.workdir / "case"

    @contextlib.contextmanager
    def patched(self):
        """kpulse as the harness runs it: one Admin client per config, plans recorded, Streams
        resets and reassignments never executed, state in the harness's directory."""
        import operations.service as service
        from operations.reassign import Reassigner
        from operations.service import Operations

        cache: dict[str, Any] = {}
        build = service.admin_client

        def cached_admin(settings: dict, **options):
            key = json.dumps([settings, options], sort_keys=True, default=str)
            if key not in cache:
                cache[key] = build(settings, **options)
            return cache[key]

        def planned(kind: str, name: str):
            original = getattr(Operations, name)

            def wrapper(operations, *args, **kwargs):
                plan = original(operations, *args, **kwargs)
                self.captured.append((kind, plan))
                return plan
            return wrapper

        original_reset = Operations.reset_offsets

        def reset_offsets(operations, actor, plan, *args, **kwargs):
            self.captured.append(("reset", plan))
            return original_reset(operations, actor, plan, *args, **kwargs)

        harness, real_legacy = self, []

        class Unsent:
            """kafka-python's admin client as the reassignment executor sees it: no reassignment in
            progress; a started one is recorded, not sent; any other call (a read) goes to a real
            client."""

            def __init__(self, factory):
                self._factory = factory

            def list_partition_reassignments(self):
                return {}

            def alter_partition_reassignments(self, request):
                harness.captured.append(("reassign-request", request))
                return {tp: None for tp in request}

            def close(self):
                pass

            def __getattr__(self, name):
                if not real_legacy:
                    real_legacy.append(self._factory())
                return getattr(real_legacy[0], name)

        def never(operations, *args, **kwargs):
            raise AssertionError("the fuzz harness never executes a Streams reset")

        replaced = {"plan_reset_offsets": planned("reset", "plan_reset_offsets"),
                    "plan_streams_reset": planned("streams", "plan_streams_reset"),
                    "plan_reassignment": planned("reassign", "plan_reassignment"),
                    "plan_streams_group_reset": planned("reset", "plan_streams_group_reset"),
                    "plan_share_reset": planned("reset", "plan_share_reset"),
                    "plan_delete_offsets": planned("group-change", "plan_delete_offsets"),
                    "plan_delete_group": planned("group-change", "plan_delete_group"),
                    "reset_offsets": reset_offsets, "reset_streams_app": never}
        unsent = {"_legacy_admin": lambda reassigner: Unsent(reassigner._legacy_factory), "_set_throttles": lambda reassigner, *args: None,
                  "remove_throttles": lambda reassigner, *args: None}
        saved = {name: getattr(Operations, name) for name in replaced}
        saved_reassigner = {name: getattr(Reassigner, name) for name in unsent}
        environment = {k: os.environ.get(k) for k in ("KPULSE_STATE_DIR", "KPULSE_CONFIG", "KPULSE_DEBUG",
                                                      "KPULSE_PASSWORD")}
        os.environ["KPULSE_STATE_DIR"] = str(self.world.state)
        for key in ("KPULSE_CONFIG", "KPULSE_DEBUG", "KPULSE_PASSWORD"):
            os.environ.pop(key, None)
        service.admin_client = cached_admin
        for name, function in replaced.items():
            setattr(Operations, name, function)
        for name, function in unsent.items():
            setattr(Reassigner, name, function)
        try:
            yield
        finally:
            service.admin_client = build
            for name, function in saved.items():
                setattr(Operations, name, function)
            for name, function in saved_reassigner.items():
                setattr(Reassigner, name, function)
            for client in real_legacy:
                client.close()
            for key, value in environment.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value

    def plan_json(self, argv: list[str]) -> dict:
        code, out, err, error = run_cli(argv)
        assert code == 0 and error is None, f"{argv}: {code} {err} {error!r}"
        return json.loads(out)

    def run(self, case: Case) -> CaseResult:
        """Run ``case`` (inside :meth:`patched`), classify it, check it, restore the group."""
        w = self.world
        self.case_dir.mkdir(parents=True, exist_ok=True)
        files = dict(case.files)
        for name, content in files.items():
            (self.case_dir / name).write_bytes(content)
        request_id = self._create_request(case.approval) if case.approval else None
        argv = [self._substitute(a, request_id) for a in case.argv]
        before = w.committed(case.group) if case.execute and case.group is not None and not case.operation else None
        snapshot = w.snapshot() if case.operation else None
        self.captured.clear()
        started = time.time()
        code, out, err, error = run_cli(argv)
        finished = time.time()
        result = CaseResult(argv, "", code, err, files=files)
        lines = err.strip().splitlines()
        if error is not None or "Traceback" in out + err:
            result.category = "traceback"
            result.signature = _signature(error) if error is not None else "Traceback printed"
        elif code == 0:
            result.category = "plan"
        elif (code == 1 and len(lines) == 1) or code == 2:
            result.category = "error"
        else:
            result.category = "unclear"
        if code == 0:
            result.problems += self._plan_problems(case, out, argv, started, finished)
            result.malformed_accepted = case.malformed
        if snapshot is not None:
            later = w.snapshot()
            result.problems += sorted(set(self._group_problems(case, argv, snapshot, later, code)))
            for _ in range(20):  # until the world is as before the case (a deletion may still be under way)
                if later == snapshot:
                    break
                for group in (w.groups["delete"], w.groups["offsets"]):
                    w.restore(group)
                w.restore_modern()
                time.sleep(0.5)
                later = w.snapshot()
            else:
                raise AssertionError(f"the harness cannot restore its world after {argv}")
        elif case.execute and case.group is not None:
            after = w.committed(case.group)
            result.problems += self._committed_problems(case, before, after, code)
            w.restore(case.group)
        if request_id is not None:
            with contextlib.suppress(OSError):
                (w.state / "approvals" / f"{request_id}.json").unlink()
        return result

    def _substitute(self, arg: str, request_id: str | None) -> str:
        arg = arg.replace("{dir}", str(self.case_dir)).replace("{missing}", str(self.case_dir / "missing" / "x"))
        if request_id is not None:
            arg = arg.replace("{request-prefix}", request_id[:6]).replace("{request}", request_id)
        while "{file:" in arg:
            start = arg.index("{file:")
            end = arg.index("}", start)
            arg = arg[:start] + str(self.case_dir / arg[start + 6:end]) + arg[end + 1:]
        return arg

    def _create_request(self, approval: tuple[str, str]) -> str:
        from operations.approvals import ApprovalStore

        requester, plan = approval
        store = ApprovalStore(self.world.state / "approvals")
        # the requester signed in from the users file (a keyword the code before issue 13 lacks)
        source = ({"requested_source": "users-file"}
                  if "requested_source" in inspect.signature(store.create).parameters else {})
        request = store.create("fuzz", "reset-offsets", f"group {self.world.groups['approve']}", json.loads(plan),
                               requester, "operator", {}, **source)
        return request.id

    # --- checks ----------------------------------------------------------------------------------

    def _plan_problems(self, case: Case, out: str, argv: list[str], started: float, finished: float) -> list[str]:
        plans, problems = [], []
        for kind, plan in self.captured:
            if kind == "reassign-request":
                problems += ["reassignment started on an internal topic" for tp in plan if tp.topic.startswith("__")]
                continue
            with contextlib.suppress(Exception):
                plans.append((kind, plan.to_dict()))
        if "--json" in argv:
            with contextlib.suppress(ValueError):
                shown = json.loads(out)
                if isinstance(shown, dict) and isinstance(shown.get("plan", shown), dict):
                    plan = shown.get("plan", shown)
                    kind = ("reset" if "group_id" in plan and "strategy" in plan
                            else "group-change" if "group_id" in plan else "streams" if "application_id" in plan
                            else "reassign" if "goal" in plan else "other")
                    plans.append((kind, plan))
        problems += ["accepted an internal topic named on the command line"] if case.names_internal else []
        for kind, plan in plans:
            if kind == "reset":
                problems += self._offset_problems(case, plan.get("partitions"), started, finished)
                problems += self._group_delete_problems(case, argv, plan)
            elif kind == "group-change":
                problems += ["plan names an internal topic" for r in plan.get("partitions") or plan.get("offsets") or []
                             if isinstance(r, dict) and str(r.get("topic")).startswith("__")]
                problems += self._group_delete_problems(case, argv, plan)
            elif kind == "streams":
                problems += self._offset_problems(case, plan.get("input"), started, finished)
                problems += self._offset_problems(None, plan.get("intermediate"), started, finished)
                problems += self._delete_problems(plan)
            elif kind == "reassign":
                problems += ["reassignment plan moves an internal topic" for m in plan.get("moves") or []
                             if isinstance(m, dict) and str(m.get("topic")).startswith("__")]
        return sorted(set(problems))

    def _offset_problems(self, case: Case | None, rows, started: float, finished: float) -> list[str]:
        if not rows:
            return []
        if not isinstance(rows, (list, tuple)) or not all(isinstance(r, dict) for r in rows):
            return ["plan rows are not partitions"]
        existing = self.world.partitions()
        problems, checked = [], []
        for row in rows:
            topic, partition, new = row.get("topic"), row.get("partition"), row.get("new")
            if not isinstance(topic, str) or type(partition) is not int or type(new) is not int:
                problems.append("planned row is not a topic with integer partition and offset")
            elif topic.startswith("__"):
                problems.append("planned offset on an internal topic")
            elif partition not in existing.get(topic, ()):
                problems.append("planned offset on a partition that does not exist")
            else:
                checked.append(row)
        ranges = self.world.log_ranges({(r["topic"], r["partition"]) for r in checked})
        for row in checked:
            start, end = ranges[(row["topic"], row["partition"])]
            if not start <= row["new"] <= end:
                problems.append("planned offset outside [log start, log end]")
            elif case is not None and case.oracle is not None:
                expected = self._expected(case.oracle, row, start, end, started, finished)
                if expected is not None and row["new"] != expected:
                    problems.append(f"{case.oracle[0]} strategy lands elsewhere than the official tool's semantics")
        return problems

    def _expected(self, oracle: tuple[str, int], row: dict, start: int, end: int, started: float,
                  finished: float) -> int | None:
        kind, value = oracle
        if kind == "offset":
            return min(max(value, start), end)
        if kind == "shift":
            current = row.get("current")
            base = current if type(current) is int else end
            return min(max(base + value, start), end)
        if row["topic"] not in self.world.counts:
            return None
        if kind == "timestamp":
            return first_offset_at(value, FIRST_RECORD_MS, start, end)
        early = first_offset_at(int(started * 1000) - value - 1000, FIRST_RECORD_MS, start, end)
        late = first_offset_at(int(finished * 1000) - value + 1000, FIRST_RECORD_MS, start, end)
        return early if early == late else None

    def _delete_problems(self, plan: dict) -> list[str]:
        deleting = plan.get("delete_topics") or []
        if not deleting:
            return []
        groups = self.world.group_ids()
        problems = []
        for topic in deleting:
            if str(topic).startswith("__"):
                problems.append("Streams reset deletes an internal topic")
                continue
            owners = [g for g in groups if str(topic).startswith(g + "-")]
            owner = max(owners, key=len) if owners else None
            if owner != plan.get("application_id"):
                problems.append("Streams reset deletes a topic of " + ("another application" if owner
                                                                       else "no existing application"))
        return problems

    def _group_delete_problems(self, case: Case, argv: list[str], plan: dict) -> list[str]:
        """A plan of issue 15's operations deletes topics only when asked, and only its Streams
        group's own internal topics."""
        deleting = plan.get("delete_topics") or []
        if not deleting:
            return []
        problems = [] if "--delete-all-internal-topics" in argv else ["plans to delete topics without --delete-all-internal-topics"]
        if plan.get("group_id") != self.world.streams_group or not set(deleting) <= set(self.world.streams_topics):
            problems.append("plans to delete topics that are not the Streams group's internal topics")
        return problems

    def _group_problems(self, case: Case, argv: list[str], before: dict, after: dict, code: int | None) -> list[str]:
        """What an operation of issue 15 changed, against what it may change (module docstring)."""
        w = self.world
        if after == before:
            return []
        executed = code == 0 and "--execute" in argv
        if not executed:
            return ["changed the cluster although " + ("the command failed" if code != 0 else "it was not executed")]
        problems = []
        target, operation = case.group, case.operation
        assert operation is not None  # the world's snapshot is taken for the group operations only
        inactive = {"reset-streams-group": {w.streams_group}, "reset-share-group": {w.share_group},
                    "delete-offsets": {w.groups["delete"], w.groups["offsets"], w.streams_group, w.share_group},
                    "delete-group": {w.groups["delete"], w.groups["offsets"], w.streams_group, w.share_group}}[operation]
        if target not in inactive:
            problems.append("executed on a group it must refuse (active, of another type or not the world's)")
        # which part of the snapshot holds the target's offsets
        part = "streams" if target == w.streams_group else "share" if target == w.share_group else None
        offsets_before = before[part] if part else before["offsets"].get(target)
        offsets_after = after[part] if part else after["offsets"].get(target)
        others = {g: o for g, o in before["offsets"].items() if g != target}
        if others != {g: o for g, o in after["offsets"].items() if g != target}:
            problems.append("changed the offsets of another group")
        for name in ("streams", "share"):
            if name != part and before[name] != after[name]:
                problems.append(f"changed the offsets of the {name} group")
        vanished = before["groups"] - after["groups"]
        if vanished - {target} or after["groups"] - before["groups"]:
            problems.append("deleted or created another group")
        gone_topics = set(before["topics"]) - set(after["topics"])
        if set(after["topics"]) - set(before["topics"]) or any(after["topics"][t] != n for t, n in before["topics"].items()
                                                                 if t in after["topics"]):
            problems.append("created or changed a topic")
        if gone_topics:
            if "--delete-all-internal-topics" not in argv:
                problems.append("deleted topics without --delete-all-internal-topics")
            if target != w.streams_group or not gone_topics <= set(w.streams_topics):
                problems.append("deleted topics that are not the Streams group's internal topics")
        planned = set()
        for _kind, plan in self.captured:
            with contextlib.suppress(Exception):
                planned |= {(p.topic, p.partition) for p in getattr(plan, "partitions", ())}
        before_o, after_o = offsets_before or {}, offsets_after or {}
        changed = {tp for tp in set(before_o) | set(after_o) if before_o.get(tp) != after_o.get(tp)}
        if operation == "delete-group":
            if target in after["groups"] or after_o:
                problems.append("delete-group execute left the group or its offsets")
        elif operation == "delete-offsets":
            named = {a.split("=", 1)[1] for a in argv if a.startswith("--topic=")}
            if any(tp[0] not in named or tp in after_o for tp in changed):
                problems.append("delete-offsets changed offsets of a topic it does not name, or kept one")
            if vanished:
                problems.append("delete-offsets deleted the group")
        else:
            if changed - planned:
                problems.append("changed a partition the plan does not name")
            if any(tp not in after_o for tp in changed) or vanished:
                problems.append("a reset deleted offsets or the group")
            ranges = w.log_ranges({tp for tp in changed if tp in after_o and after_o[tp] is not None})
            if any(not lo <= after_o[tp] <= hi for tp, (lo, hi) in ranges.items()):
                problems.append("committed offset outside [log start, log end]")
        return problems

    def _committed_problems(self, case: Case, before, after, code: int | None) -> list[str]:
        if before is None or after is None:
            return []
        changed = {tp for tp in set(before) | set(after) if before.get(tp) != after.get(tp)}
        if not changed:
            return []
        planned = _named_partitions(case)  # the plan file's or the request's, whoever executes it
        for kind, plan in self.captured:
            if kind == "reset":
                with contextlib.suppress(Exception):
                    planned |= {(p.topic, p.partition) for p in plan.partitions}
        problems = []
        if code != 0:
            problems.append("offsets changed although the command failed")
        if case.approval is not None and case.approval[0] != "alice":
            problems.append("ran an approval request whose requester no longer has the role")
        internal = {tp for tp in changed if tp[0].startswith("__")}
        if internal:
            problems.append("committed offsets on an internal topic")
        if changed - planned:
            problems.append("changed a partition the plan does not name")
        existing = self.world.partitions()
        known = {tp for tp in changed - internal if tp[1] in existing.get(tp[0], ()) and tp in after}
        ranges = self.world.log_ranges(known)
        if any(not ranges[tp][0] <= after[tp] <= ranges[tp][1] for tp in known):
            problems.append("committed offset outside [log start, log end]")
        return problems


def _named_partitions(case: Case) -> set[tuple[str, int]]:
    texts = [content for name, content in case.files if name.endswith(".json")]
    texts += [case.approval[1].encode()] if case.approval else []
    named = set()
    for text in texts:
        with contextlib.suppress(ValueError, UnicodeDecodeError, RecursionError, TypeError, KeyError):
            named |= {(row["topic"], row["partition"]) for row in json.loads(text)["partitions"]
                      if isinstance(row, dict) and isinstance(row.get("topic"), str) and type(row.get("partition")) is int}
    return named


def run_cli(argv: list[str]) -> tuple[int | None, str, str, BaseException | None]:
    """``cli.main.main(argv)`` in this process: (exit status, stdout, stderr, exception escaped)."""
    from cli.main import main

    out, err = io.StringIO(), io.StringIO()
    code, error = None, None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
        except Exception as escaped:  # noqa: BLE001 - the harness counts it
            error = escaped
    return code, out.getvalue(), err.getvalue(), error


def _signature(error: BaseException) -> str:
    frames = traceback.extract_tb(error.__traceback__)
    last = frames[-1] if frames else None
    where = f"{Path(last.filename).name}:{last.lineno} in {last.name}" if last else "?"
    return f"{type(error).__name__} at {where}: {str(error)[:120]}"


@dataclass
class Tally:
    """What one operation's cases came to."""

    operation: str
    cases: int = 0
    categories: Counter = field(default_factory=Counter)
    wrong: int = 0
    malformed: int = 0
    examples: dict[str, dict[str, str]] = field(
        default_factory=lambda: {"traceback": {}, "wrong": {}, "malformed": {}, "unclear": {}})
    """kind -> distinct signature -> the first case that showed it."""
    log: Any = None
    """An open text file: every case that is not a plain error or plan, one JSON line each."""

    @property
    def tracebacks(self) -> int:
        return self.categories["traceback"]

    def add(self, result: CaseResult) -> None:
        self.cases += 1
        self.categories[result.category] += 1
        shown = _show_case(result)
        if result.category == "traceback":
            self.examples["traceback"].setdefault(result.signature, shown)
        if result.problems:
            self.wrong += 1
            self.examples["wrong"].setdefault("; ".join(result.problems), shown)
        if result.malformed_accepted:
            self.malformed += 1
            self.examples["malformed"].setdefault(_flags(result.argv), shown)
        if result.category == "unclear":
            self.examples["unclear"].setdefault(f"exit {result.exit_code}, {len(result.stderr.splitlines())} "
                                                "stderr line(s)", shown)
        if self.log is not None and (result.category in ("traceback", "unclear") or result.problems
                                     or result.malformed_accepted):
            self.log.write(json.dumps({"operation": self.operation, "category": result.category,
                                       "signature": result.signature, "problems": result.problems,
                                       "malformed_accepted": result.malformed_accepted, "case": shown}) + "\n")

    def line(self) -> str:
        c = self.categories
        return (f"{self.operation:<20} {self.cases:>6} cases  {c['traceback']:>5} tracebacks  {self.wrong:>5} wrong  "
                f"{c['error']:>6} one-line errors  {c['plan']:>6} plans  {c['unclear']:>4} unclear  "
                f"{self.malformed:>4} malformed accepted")

    def report(self, limit: int = 5) -> str:
        lines = [self.line()]
        for kind in ("traceback", "wrong", "malformed", "unclear"):
            distinct = self.examples[kind]
            for signature, shown in list(distinct.items())[:limit]:
                lines.append(f"  {kind}: {signature}\n    {shown}")
            if len(distinct) > limit:
                lines.append(f"  ... and {len(distinct) - limit} more distinct {kind} signature(s)")
        return "\n".join(lines)


def _show_case(result: CaseResult) -> str:
    argv = " ".join(repr(a) if (not a.isprintable() or " " in a or not a) else a for a in result.argv[2:])
    files = "".join(f"\n    {name}: {content[:160]!r}{'...' if len(content) > 160 else ''}"
                    for name, content in result.files.items())
    tail = result.stderr.strip().splitlines()[-1:] if result.stderr.strip() else []
    return f"kpulse {argv[:400]}  -> exit {result.exit_code}" + (f" {tail[0][:200]!r}" if tail else "") + files


def _flags(argv: list[str]) -> str:
    return " ".join(a.split("=")[0] for a in argv[2:] if a.startswith("--"))


def run_operation(world: World, operation: str, max_examples: int, *, derandomize: bool = True,
                  seed: int | None = None, on_case: Callable[[Tally], None] | None = None, log=None) -> Tally:
    """The issue's seed cases, then ``max_examples`` Hypothesis cases of ``operation`` (the same
    ones every run when ``derandomize``; else random, or those of ``seed``)."""
    harness, tally = Harness(world), Tally(operation, log=log)

    @settings(max_examples=max_examples, derandomize=derandomize, deadline=None, database=None,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(CASES[operation](world))
    def attack(case: Case) -> None:
        tally.add(harness.run(case))
        if on_case:
            on_case(tally)

    if seed is not None:
        attack = hypothesis_seed(seed)(attack)
    with harness.patched():
        for case in seeds(world, operation):
            tally.add(harness.run(case))
        if max_examples:
            attack()
    return tally


def build_world(bootstrap: str, workdir: Path, prefix: str = "fz") -> World:
    world = World(bootstrap, workdir, prefix)
    world.build(Harness(world))
    return world
