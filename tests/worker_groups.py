"""How ``make test`` shares the tests between its two pytest-xdist workers (``-n 2 --dist loadgroup``):
every module that uses a Kafka cluster (the session's or the secured one) runs in one worker, in the
order of the collection (tests/conftest.py puts the demo workload's modules first), and each other
module runs whole in the other worker. The cluster's modules mostly wait on Kafka; the others mostly
compute, and beside them take no time of the run's own.

pytest-xdist's own ``loadgroup`` cannot be used: it renames the items through an attribute pytest 9.2
no longer reads. Only a worker knows which tests use which fixtures, and only the controller
schedules: the workers write the cluster modules into a file the controller names in the environment
before it starts them, and the scheduler reads it once every worker has collected."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

CLUSTER_FIXTURES = frozenset({"local_cluster", "secure_cluster"})
CLUSTER_GROUP = "kafka-cluster"
MODULES_FILE = "KPULSE_TEST_CLUSTER_MODULES"
"""The environment variable naming the file of the cluster modules (set by the controller)."""


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


def write_cluster_modules(items: list) -> None:
    """In a worker, after collection: the modules with a test that uses a cluster."""
    path = os.environ.get(MODULES_FILE)
    if not path:
        return
    modules = sorted({module_of(item.nodeid) for item in items if CLUSTER_FIXTURES & set(item.fixturenames)})
    partial = Path(f"{path}.{os.getpid()}")
    partial.write_text(json.dumps(modules))
    os.replace(partial, path)


def scheduler(config, log):
    """The scheduler of ``--dist loadgroup``: whole modules as units, the cluster's modules one unit."""
    from xdist.scheduler import LoadScopeScheduling

    class ClusterScheduling(LoadScopeScheduling):
        cluster_modules: frozenset[str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.cluster_modules is None:
                text = Path(os.environ[MODULES_FILE]).read_text() if os.environ.get(MODULES_FILE) else ""
                self.cluster_modules = frozenset(json.loads(text) if text else [])
            module = module_of(nodeid)
            return CLUSTER_GROUP if module in self.cluster_modules else module

    return ClusterScheduling(config, log)
