"""The operations UI's setting, shared by its AppTest tests and its Chromium tests: a topic with
known contents (``TOPIC``: ``COUNTS`` messages per partition, groups committed at ``START``),
users of every role (``PASSWORDS``), a config and a snapshot naming the groups (the pages list
groups from it), and the steps of a session: start, sign in, read the buttons."""

from __future__ import annotations

import json
import time
from pathlib import Path

import yaml

from operations.access import UsersFile
from tests.support import APP_FILE, admin_for, create_topic, produce

CLUSTER = "live"
TOPIC = "ui-ops-orders"
COUNTS = {0: 20, 1: 15, 2: 10}
START = 5
PASSWORDS = {"olga": ("operator", "olga-secret-1"), "otto": ("operator", "otto-secret-1"),
             "vic": ("viewer", "vic-secret-1"), "ada": ("admin", "ada-secret-1")}


def write_setup(directory: Path, bootstrap: str, groups: list[str], *, port: int = 8501, read_only: bool = False,
                require_approval: bool = False) -> Path:
    """Users file, config and a snapshot naming ``groups`` (the pages list groups from it)."""
    users = UsersFile(directory / "users.yaml")
    for name, (role, password) in PASSWORDS.items():
        users.add(name, role, password)
    lake = directory / "lake"
    config = {"clusters": [{"name": CLUSTER, "bootstrap_servers": bootstrap, "probe": {"enabled": False},
                            "read_only": read_only, "require_approval": require_approval}],
              "lake": {"path": str(lake)}, "intervals": {"collect_seconds": 600},
              "dashboard": {"users_file": str(users.path), "port": port, "host": "127.0.0.1"}}
    (lake / "_snapshots").mkdir(parents=True)
    snapshot = {"time": time.time(), "cluster_name": CLUSTER,
                "brokers": [{"id": b, "up": True, "partition_count": 1, "leader_count": 1} for b in (1, 2, 3)],
                "consumer_groups": [
        {"group_id": group, "state": "Empty", "members": 0, "partition_count": len(COUNTS), "status": "OK",
         "total_lag": sum(c - START for c in COUNTS.values()), "max_lag_seconds": 0.0, "lag_seconds_threshold": 60.0,
         "partitions": [{"topic": TOPIC, "partition": p, "committed_offset": START, "log_end_offset": c,
                         "lag": c - START, "lag_seconds": 0.0, "status": "OK"} for p, c in COUNTS.items()]}
        for group in groups]}
    (lake / "_snapshots" / f"{CLUSTER}.json").write_text(json.dumps(snapshot))
    path = directory / "kpulse.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def prepare_topic(bootstrap: str):
    """``TOPIC`` with ``COUNTS`` messages, created once per session; an admin client of the cluster."""
    admin = admin_for(bootstrap)
    if TOPIC not in admin.list_topics(timeout=10).topics:
        create_topic(admin, TOPIC, len(COUNTS))
        produce(bootstrap, TOPIC, COUNTS, first_ms=int(time.time() * 1000) - 60_000, step_ms=1000)
    return admin


def start(config: Path, monkeypatch):
    """The dashboard under AppTest on ``config``, run once (nobody signed in)."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("KPULSE_CONFIG", str(config))
    monkeypatch.delenv("KPULSE_DASHBOARD_AUTH", raising=False)
    return AppTest.from_file(str(APP_FILE), default_timeout=90).run()


def sign_in(app, name: str, password: str):
    app.text_input(key="sign-in-name").input(name)
    app.text_input(key="sign-in-password").input(password)
    next(b for b in app.button if b.label == "Sign in").click().run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def labels(app) -> set[str]:
    """The labels of the page's buttons."""
    return {b.label for b in app.button}


def group_key(group: str) -> str:
    """The widget key prefix of ``group``'s action form."""
    return f"op-group-{CLUSTER}-{group}"
