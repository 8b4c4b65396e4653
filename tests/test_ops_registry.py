"""The operation registry is complete and consistent: every plan the service can make has exactly
one operation; every operation needs a known role that may change things, is checked by access,
is offered by the CLI (a subcommand and its handler) and by the dashboard (a form, on a page);
every approvable one goes through a real approval request and runs as its own action once approved.
No cluster: the executor's common sequence (:meth:`Operations.run`) is replaced by a recorder."""

from __future__ import annotations

import re
import typing
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from operations.access import ACTION_ROLES, CHANGES_CLUSTER, User, allowed, authorize
from operations.approvals import ApprovalStore
from operations.errors import NotAuthorized, Refused
from operations.registry import APPROVABLE, OPERATIONS, for_entity, of_entity, of_plan, operation
from operations.roles import ROLES, VIEWER
from operations.service import Operations
from tests.plan_samples import SAMPLE_PLANS

ROOT = Path(__file__).resolve().parent.parent
RUN_OPTIONS = {"throttle_bytes": 1000}


def planned_types() -> set[type]:
    """What the service's planners return (``Operations.plan_*``), read from their annotations."""
    return {typing.get_type_hints(getattr(Operations, name))["return"]
            for name in dir(Operations) if name.startswith("plan_")}


def offered_on_pages() -> set[str]:
    """The entities whose page draws an Actions section (``actions.slot("<entity>", ...)``)."""
    return {match for page in (ROOT / "dashboard" / "app_pages").glob("*.py")
            for match in re.findall(r'actions\.slot\("([a-z]+)"', page.read_text())}


def registry_problems(entries, *, plan_types, forms, parsers, handlers, subcommands, pages) -> list[str]:
    """What is missing or doubled between the operations ``entries`` and the parts that read them."""
    problems = []
    for plan_type in sorted(plan_types, key=lambda t: t.__name__):
        count = sum(entry.plan_type is plan_type for entry in entries)
        if count != 1:
            problems.append(f"{plan_type.__name__}: {count} operation(s) plan it, not 1")
    names = [entry.name for entry in entries]
    for kind, values in (("name", names), ("action", [e.action for e in entries])):
        problems += [f"the {kind} {value!r} is declared twice" for value in sorted(set(values))
                     if values.count(value) > 1]
    for entry in entries:
        if entry.role not in ROLES or entry.role == VIEWER:
            problems.append(f"{entry.name}: role {entry.role!r} is not a role that may change a cluster")
        if entry.action.split(":")[0] != entry.name:
            problems.append(f"{entry.name}: its action {entry.action!r} is not one of its own")
        if entry.plan_type not in plan_types:
            problems.append(f"{entry.name}: no planner of the service returns a {entry.plan_type.__name__}")
        if entry.approvable and not hasattr(entry.plan_type, "from_dict"):
            problems.append(f"{entry.name}: approvable, but a request's plan cannot be read back")
        if entry.entity not in pages:
            problems.append(f"{entry.name}: no dashboard page offers it (actions.slot({entry.entity!r}, ...))")
    for part, keys in (("dashboard form", forms), ("CLI parser", parsers), ("CLI handler", handlers),
                       ("kpulse subcommand", subcommands)):
        problems += [f"{name}: no {part}" for name in names if name not in keys]
        problems += [f"{part} {key!r}: no such operation" for key in keys if part == "dashboard form"
                     and key not in names]
    return problems


def parts() -> dict:
    from cli.main import build_parser
    from dashboard.action_forms import FORMS
    from cli.operation_args import APPROVALS, PARSERS
    from cli.operation_commands import HANDLERS

    subcommands = next(action.choices for action in build_parser()._actions if action.dest == "command")
    assert subcommands is not None  # the subparsers' choices
    return {"plan_types": planned_types(), "forms": set(FORMS), "parsers": set(PARSERS),
            "handlers": set(HANDLERS) - {APPROVALS}, "subcommands": set(subcommands), "pages": offered_on_pages()}


def test_every_plan_has_one_operation_offered_by_the_cli_and_the_dashboard():
    assert planned_types() == set(SAMPLE_PLANS)  # the samples below cover every plan
    assert registry_problems(OPERATIONS, **parts()) == []


def test_an_operation_missing_from_the_registry_is_found():
    election = operation("elect-leaders")
    problems = registry_problems([e for e in OPERATIONS if e is not election], **parts())

    assert "ElectionPlan: 0 operation(s) plan it, not 1" in problems
    assert "dashboard form 'elect-leaders': no such operation" in problems
    assert registry_problems(OPERATIONS + (election,), **parts())[0] == "ElectionPlan: 2 operation(s) plan it, not 1"


@pytest.mark.parametrize("entry", OPERATIONS, ids=lambda e: e.name)
def test_each_operation_is_found_by_its_plan_entity_and_actions_and_shows_its_plan(entry):
    plan = SAMPLE_PLANS[entry.plan_type]

    assert of_plan(plan) is entry and entry in for_entity(entry.entity)
    assert of_entity(entry.entity) is for_entity(entry.entity)[0]
    assert operation(entry.name) is entry and operation(entry.action) is entry
    summary = entry.summary(plan, str)
    assert summary and "\n" not in summary
    tables = entry.tables(plan)
    assert tables and all(isinstance(t, pd.DataFrame) for t in tables.values())
    assert not next(iter(tables.values())).empty
    assert entry.has_changes(plan) and entry.confirmation_name(plan)
    assert entry.command_line.startswith(f"kpulse {entry.name} ")
    for export in entry.exports:
        assert export.content(plan)


@pytest.mark.parametrize("entry", OPERATIONS, ids=lambda e: e.name)
def test_access_checks_each_operation_with_its_declared_role(entry):
    cluster = SimpleNamespace(name="c", read_only=False)
    below = ROLES[ROLES.index(entry.role) - 1]

    assert ACTION_ROLES[entry.name] == entry.role and entry.name in CHANGES_CLUSTER
    assert allowed(User("u", entry.role), entry.name) and not allowed(User("u", below), entry.name)
    authorize(User("u", entry.role), entry.name, cluster)
    with pytest.raises(NotAuthorized, match=f"it needs the {entry.role} role"):
        authorize(User("u", below), entry.name, cluster)
    with pytest.raises(Refused, match="read-only"):
        authorize(User("u", "admin"), entry.name, SimpleNamespace(name="c", read_only=True))


class Recorded(Operations):
    """The service with the common sequence recorded instead of run (no lock, no cluster)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.runs: list[dict] = []

    def run(self, actor, action, cluster, target, plan, before, apply, *, approved_by=None, lock=None):
        self.runs.append({"actor": actor.name, "action": action, "target": target, "plan": plan,
                          "approved_by": approved_by})
        return SimpleNamespace(result="ok", error=None)


@pytest.fixture
def service(tmp_path):
    from kpulse.config import load_config

    config = tmp_path / "kpulse.yaml"
    config.write_text(f"clusters:\n  - name: c\n    bootstrap_servers: \"127.0.0.1:1\"\n    require_approval: true\n"
                      f"    probe:\n      enabled: false\nlake:\n  path: {tmp_path / 'lake'}\n")
    return Recorded(load_config(config), state_dir=tmp_path / "state")


@pytest.mark.parametrize("entry", [e for e in OPERATIONS if e.approvable], ids=lambda e: e.name)
def test_each_approvable_operation_is_requested_then_approved_and_runs_as_its_action(service, entry):
    plan = SAMPLE_PLANS[entry.plan_type]
    requester, approver = User("ann", entry.role), User("bob", "operator")

    assert entry.action in APPROVABLE and service.needs_approval("c", entry.action)
    request = service.request_approval(requester, entry.action, plan, RUN_OPTIONS)
    service.approve(approver, request.id)

    assert service.runs == [{"actor": "ann", "action": entry.action, "target": plan.target, "plan": plan.to_dict(),
                             "approved_by": "bob"}]
    assert service.approvals.get(request.id).status == "approved"


@pytest.mark.parametrize("entry", [e for e in OPERATIONS if not e.approvable], ids=lambda e: e.name)
def test_an_operation_that_is_not_approvable_runs_at_once_and_takes_no_request(service, tmp_path, entry):
    plan = SAMPLE_PLANS[entry.plan_type]

    assert entry.action not in APPROVABLE and not service.needs_approval("c", entry.action)
    with pytest.raises(ValueError, match="does not take approval"):
        ApprovalStore(tmp_path / "approvals").create("c", entry.action, plan.target, {}, "ann", entry.role)
    entry.executor(service, User("ann", entry.role), plan, {}, None)
    assert [run["action"] for run in service.runs] == [entry.action]
