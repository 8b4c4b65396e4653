"""A relative reset (shift-by -1) from the dashboard applies once per plan: after it ran, the
page offers no second execution of that plan, and a second execution forced anyway (a stale
dialog, another browser tab holding the same plan) is refused by the executor's re-check
("offsets changed since the plan was made"), so the group moves back one message, not two."""

from __future__ import annotations

import pytest

from dashboard.actions import CONFIRM_KEY
from tests.dashboard_ops import COUNTS, PASSWORDS, START, TOPIC, group_key, labels, prepare_topic, sign_in, start, write_setup
from tests.support import commit, committed

pytestmark = pytest.mark.cluster


@pytest.fixture
def setup(bootstrap, tmp_path, request):
    admin = prepare_topic(bootstrap)
    group = f"ui-relative-{request.node.name[-30:]}"
    commit(admin, group, {(TOPIC, p): START for p in COUNTS})
    return {"admin": admin, "group": group, "config": write_setup(tmp_path, bootstrap, [group])}


def planned_shift(config, group: str, monkeypatch):
    app = sign_in(start(config, monkeypatch), "olga", PASSWORDS["olga"][1])
    app.switch_page("app_pages/groups.py").run()
    key = group_key(group)
    app.selectbox(key=f"{key}-strategy").set_value("shift-by")
    app.text_input(key=f"{key}-value").input("-1")
    next(b for b in app.button if b.label == "Plan (changes nothing)").click().run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    return app, key


def confirm(app, key: str, group: str) -> None:
    app.text_input(key=f"{key}-typed").input(group)
    app.button(key=f"{key}-confirm").click().run()
    assert not app.exception


def test_a_plan_executed_once_is_not_offered_again_and_a_forced_second_run_is_refused(setup, monkeypatch):
    admin, group = setup["admin"], setup["group"]
    app, key = planned_shift(setup["config"], group, monkeypatch)

    app.button(key=f"{key}-execute").click().run()
    confirm(app, key, group)
    assert any("reset-offsets: ok" in s.value for s in app.success)
    assert "Execute…" not in labels(app), "the executed plan is not offered again"

    app.session_state[CONFIRM_KEY] = key  # a stale dialog on the same plan
    app.run()
    confirm(app, key, group)

    assert any("changed since the plan was made" in e.value for e in app.error), [e.value for e in app.error]
    assert committed(admin, group) == {(TOPIC, p): START - 1 for p in COUNTS}, "shifted once, not twice"


def test_two_tabs_holding_the_same_relative_plan_apply_it_once(setup, monkeypatch):
    admin, group = setup["admin"], setup["group"]
    first, key = planned_shift(setup["config"], group, monkeypatch)
    second, _ = planned_shift(setup["config"], group, monkeypatch)

    for app in (first, second):
        app.button(key=f"{key}-execute").click().run()
        confirm(app, key, group)

    assert any("reset-offsets: ok" in s.value for s in first.success)
    assert any("changed since the plan was made" in e.value for e in second.error), [e.value for e in second.error]
    assert committed(admin, group) == {(TOPIC, p): START - 1 for p in COUNTS}
