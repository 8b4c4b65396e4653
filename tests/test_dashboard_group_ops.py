"""The group page's Actions box offers the operations on Kafka 4's group types beside the offset
reset (AppTest on the real cluster): an operator chooses delete-offsets, plans (nothing changes),
a wrongly typed name executes nothing, the group's name executes exactly the plan, read back and
audited."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.dashboard_ops import CLUSTER, COUNTS, START, TOPIC, group_key, prepare_topic, sign_in, start, write_setup
from tests.group_ops_support import commit_offsets, read_committed
from tests.support import create_topic

pytestmark = pytest.mark.cluster


def test_an_operator_deletes_a_groups_offsets_of_one_topic_through_plan_and_typed_confirmation(
        bootstrap, tmp_path, monkeypatch):
    admin = prepare_topic(bootstrap)
    other, group = "ui-group-ops-other", "ui-group-ops"
    create_topic(admin, other, 1)
    offsets = {**{(TOPIC, p): START for p in COUNTS}, (other, 0): 0}
    commit_offsets(bootstrap, group, offsets)
    app = start(write_setup(tmp_path, bootstrap, [group]), monkeypatch)
    sign_in(app, "olga", "olga-secret-1")
    app.switch_page("app_pages/groups.py").run()
    choice = app.radio(key=f"{group_key(group)}-choice")

    assert {"reset-offsets", "reset-share-group", "delete-offsets"} <= set(choice.options)
    assert "delete-group" not in choice.options  # an admin's: an operator is not offered it
    choice.set_value("delete-offsets").run()
    key = f"{group_key(group)}-delete-offsets"
    assert any(f"kpulse delete-offsets --cluster {CLUSTER} --group {group}" in c.value for c in app.text)
    app.multiselect(key=f"{key}-delete-topics").set_value([other])
    next(b for b in app.button if b.label == "Plan (changes nothing)").click().run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    [plan] = [d.value for d in app.dataframe if "offset" in d.value.columns]
    assert list(plan[["topic", "partition"]].itertuples(index=False, name=None)) == [(other, 0)]
    assert read_committed(bootstrap, group) == offsets

    app.button(key=f"{key}-execute").click().run()
    app.text_input(key=f"{key}-typed").input("ui-group-op")
    app.button(key=f"{key}-confirm").click().run()
    assert any("nothing executed" in e.value for e in app.error) and read_committed(bootstrap, group) == offsets

    app.text_input(key=f"{key}-typed").input(group)
    app.button(key=f"{key}-confirm").click().run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    assert any("delete-offsets: ok" in s.value for s in app.success)
    assert read_committed(bootstrap, group) == {(TOPIC, p): START for p in COUNTS}

    from kpulse.config import load_config
    from operations.audit import AuditLog

    rows = AuditLog(load_config(str(tmp_path / "kpulse.yaml")).lake.path, Path("/nonexistent-spool")).read()
    [row] = rows[rows["action"] == "delete-offsets"].to_dict("records")
    assert (row["actor"], row["target"], row["result"], row["cluster"]) == ("olga", f"group {group}", "ok", CLUSTER)
    assert json.loads(row["after_json"]) == {f"{other}-0": None}
