"""``make test``'s two workers: the modules that use the session's Kafka cluster are one unit of work, in
the collection's order, those of the secured cluster another, and each other module is a unit of its
own (tests/worker_groups.py)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from tests import worker_groups


def item(nodeid: str, *fixtures: str) -> SimpleNamespace:
    return SimpleNamespace(nodeid=nodeid, fixturenames=["request", *fixtures])


def test_each_clusters_modules_are_one_unit_and_every_other_module_a_unit_of_its_own(tmp_path, monkeypatch):
    monkeypatch.setenv(worker_groups.MODULES_FILE, str(tmp_path / "modules.json"))
    items = [item("tests/test_a.py::test_1", "bootstrap", "local_cluster"), item("tests/test_a.py::test_2"),
             item("tests/test_b.py::test_1"), item("tests/test_c.py::test_1[x]", "secure_cluster"),
             item("tests/test_d.py::test_1"), item("tests/test_d.py::test_2")]
    worker_groups.write_cluster_modules(items)

    config = SimpleNamespace(getvalue={"tx": ["2*popen"]}.get)
    scheduler = worker_groups.scheduler(config, None)
    scopes = [scheduler._split_scope(each.nodeid) for each in items]

    assert scopes == ["kafka-cluster", "kafka-cluster", "tests/test_b.py", "kafka-secure", "tests/test_d.py",
                      "tests/test_d.py"]


def test_a_module_that_uses_both_clusters_is_refused_in_one_line():
    items = [item("tests/test_e.py::test_1", "secure_cluster"), item("tests/test_e.py::test_2", "local_cluster")]
    with pytest.raises(ValueError, match=r"^tests/test_e.py uses both the session's cluster and the secured one"):
        worker_groups.cluster_groups(items)


def test_make_test_runs_two_workers_with_these_groups():
    makefile = (Path(__file__).resolve().parent.parent / "Makefile").read_text()
    assert "pytest -n 2 --dist loadgroup" in makefile
