"""How ``make test`` shares the tests between its two pytest-xdist workers (``-n 2 --dist loadgroup``):
every module that uses the session's Kafka cluster runs in one worker, in the order of the collection
(tests/conftest.py puts the demo workload's modules first); the modules of the secured cluster run
together, and each other module whole, in the other worker. The cluster's modules mostly wait on
Kafka, and take the longest: the rest runs beside them.

pytest-xdist's own ``loadgroup`` cannot be used: it renames the items through an attribute pytest 9.2
no longer reads. Only a worker knows which tests use which fixtures, and only the controller
schedules: the workers write the cluster modules into a file the controller names in the environment
before it starts them, and the scheduler reads it once every worker has collected."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

GROUPS = {"local_cluster": "kafka-cluster", "secure_cluster": "kafka-secure"}
"""The unit of work of the modules that use each cluster."""
MODULES_FILE = "KPULSE_TEST_CLUSTER_MODULES"
"""The environment variable naming the file of the cluster modules' groups (set by the controller)."""


def module_of(nodeid: str) -> str:
    return nodeid.split("::")[0]


def name_the_file() -> None:
    """In the controller, before the workers start: where they write the cluster modules."""
    if MODULES_FILE not in os.environ:
        handle, path = tempfile.mkstemp(prefix="kpulse-test-cluster-modules-", suffix=".json")
        os.close(handle)
        os.environ[MODULES_FILE] = path


def remove_the_file() -> None:
    path = os.environ.pop(MODULES_FILE, None)
    if path:
        Path(path).unlink(missing_ok=True)


def cluster_groups(items: list) -> dict[str, str]:
    """The group of each module with a test that uses a cluster. A module that uses both clusters
    is refused: its worker would start a second secured cluster of its own."""
    groups: dict[str, str] = {}
    for item in items:
        for fixture, group in GROUPS.items():
            if fixture in item.fixturenames and groups.setdefault(module_of(item.nodeid), group) != group:
                raise ValueError(f"{module_of(item.nodeid)} uses both the session's cluster and the secured one: "
                                 "put the tests of each cluster in a module of their own (tests/worker_groups.py)")
    return groups


def write_cluster_modules(items: list) -> None:
    """In a worker, after collection: the cluster modules' groups, for the controller."""
    groups = cluster_groups(items)  # refuses a module that uses both clusters in every run
    path = os.environ.get(MODULES_FILE)
    if not path:
        return
    partial = Path(f"{path}.{os.getpid()}")
    partial.write_text(json.dumps(groups))
    os.replace(partial, path)


def scheduler(config, log):
    """The scheduler of ``--dist loadgroup``: whole modules as units, each cluster's modules one unit."""
    from xdist.scheduler import LoadScopeScheduling

    class ClusterScheduling(LoadScopeScheduling):
        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:
                text = Path(os.environ[MODULES_FILE]).read_text() if os.environ.get(MODULES_FILE) else ""
                self.groups = json.loads(text) if text else {}
            module = module_of(nodeid)
            return self.groups.get(module, module)

    return ClusterScheduling(config, log)
