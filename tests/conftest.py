"""Shared fixtures: one real local Kafka cluster (and, for tests that ask, the demo workload) per
test session, in a state directory and on ports of its own so it never touches a demo cluster
the developer may be running (ports from $KPULSE_TEST_PORT_BASE, default 29090)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests import worker_groups

_STARTED: list = []
"""The session cluster, once a test has started it (for the health check after each module)."""
_WORKER = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
TEST_PORT_BASE = int(os.environ.get("KPULSE_TEST_PORT_BASE", "29090")) - 2000 * _WORKER
"""Each pytest-xdist worker's servers on ports of their own (``make test`` runs two workers), below the
ephemeral ports (32768 and up)."""
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"


@pytest.fixture(scope="session")
def test_state_dir():
    directory = Path(tempfile.mkdtemp(prefix="kpulse-test-state-"))
    previous = {key: os.environ.get(key) for key in ("KPULSE_STATE_DIR", "KPULSE_PORT_BASE")}
    # The CLI run as a subprocess by tests finds the same cluster through these.
    os.environ["KPULSE_STATE_DIR"] = str(directory)
    os.environ["KPULSE_PORT_BASE"] = str(TEST_PORT_BASE)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)
    for key, value in previous.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="session")
def local_cluster(test_state_dir):
    from localkafka.cluster import LocalCluster
    from kpulse.local_layout import ClusterLayout
    from kpulse.progress import Progress

    cluster = LocalCluster(test_state_dir, ClusterLayout.from_base(TEST_PORT_BASE), Progress())
    try:
        cluster.up()
        _STARTED.append(cluster)
        _wait_for_the_group_coordinator(cluster.layout.bootstrap_servers)
        yield cluster
    finally:
        from localkafka.demo.workload import DemoWorkload

        DemoWorkload(cluster).stop()
        _keep_logs(cluster)
        # SIGKILL, as the data is wiped next: stopped together, the last node's controlled shutdown
        # waits for a quorum that is gone, and is killed after 30 s anyway
        for node in cluster.layout.nodes:
            cluster.kill_broker(node.node_id)
        cluster.down(wipe=True)


def _wait_for_the_group_coordinator(bootstrap: str, timeout: float = 120) -> None:
    """Until a group's offsets can be read: the first group request of a fresh cluster creates
    ``__consumer_offsets``, and librdkafka aborted the whole test process (a native crash, not an
    exception) when its first offset commit met the coordinator still being elected. Asked through
    kafka-python, which retries; every module then starts from a cluster with its coordinators up."""
    import time

    from kafka.admin import KafkaAdminClient

    deadline = time.monotonic() + timeout
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kpulse-test-warm-up")
    try:
        while True:
            try:
                admin.list_group_offsets("kpulse-test-warm-up")
                return
            except Exception:  # noqa: BLE001 - coordinator not available yet
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
    finally:
        admin.close()


SECURE_PORT_BASE = TEST_PORT_BASE + 1000
"""The secured one-node cluster's ports (``localkafka/secure.py``), beside the plain test cluster's."""


@pytest.fixture(scope="session")
def secure_cluster(test_state_dir):
    """The secured one-node cluster (TLS, SASL, mTLS, ACLs; ``localkafka/secure.py``), started once
    for the session, with what the secured tests read (``tests/secure_support.py``)."""
    from kpulse.progress import Progress
    from localkafka.secure import SecureCluster
    from tests.secure_support import seed

    cluster = SecureCluster(test_state_dir, SECURE_PORT_BASE, Progress())
    try:
        cluster.up()
        seed(cluster)
        yield cluster
    finally:
        target = ARTIFACTS / "cluster-logs"
        target.mkdir(parents=True, exist_ok=True)
        if cluster.log_file.exists():
            (target / "secure-node.log").write_bytes(cluster.log_file.read_bytes()[-2_000_000:])
        cluster.down(wipe=True)


@pytest.fixture(scope="session")
def demo_workload(local_cluster):
    """The demo workload, from the first test that asks for it until the last one
    (:func:`pytest_runtest_teardown`), or the end of the session."""
    from localkafka.demo.workload import DemoWorkload
    from kpulse.progress import Progress

    demo = DemoWorkload(local_cluster, Progress())
    demo.start()
    _DEMO.append(demo)
    yield demo
    if _DEMO:
        _DEMO.pop().stop()


_DEMO: list = []
"""The running demo workload, until it is stopped."""
_LAST_DEMO_TEST: list[str] = []
"""The node ID of the last test of the run that uses the demo workload."""


def pytest_configure(config):
    if config.getoption("dist", "no") == "loadgroup":
        worker_groups.name_the_file()


def pytest_unconfigure(config):
    if config.getoption("dist", "no") == "loadgroup":
        worker_groups.remove_the_file()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``make test``'s two workers: the session cluster's modules in one, the secured cluster's and the
    rest in the other (``tests/worker_groups.py``)."""
    if config.getoption("dist", "no") == "loadgroup":
        return worker_groups.scheduler(config, log)
    return None


def _module(item) -> str:
    return item.nodeid.split("::")[0]


@pytest.hookimpl(trylast=True)  # after -k, -m and --deselect have chosen the tests
def pytest_collection_modifyitems(items):
    """The modules that use the demo workload run first, and the workload stops after the last test
    that uses it: its producers, consumers and Streams apps keep two thirds of a core busy, and
    every module after them ran 10-25 % slower on a 2-core machine (tests/test_ops_offsets.py 43 s
    instead of 32 s). The order inside each module, and of the other modules, stays."""
    demo_modules = {_module(item) for item in items if "demo_workload" in item.fixturenames}
    items[:] = [i for i in items if _module(i) in demo_modules] + [i for i in items if _module(i) not in demo_modules]
    _LAST_DEMO_TEST[:] = [item.nodeid for item in items if "demo_workload" in item.fixturenames][-1:]
    try:
        worker_groups.write_cluster_modules(items)
    except ValueError as error:
        raise pytest.UsageError(str(error)) from None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    try:
        return (yield)
    finally:
        if _DEMO and [item.nodeid] == _LAST_DEMO_TEST:
            _DEMO.pop().stop()


@pytest.fixture(scope="session")
def bootstrap(local_cluster) -> str:
    return local_cluster.layout.bootstrap_servers


S3_BUCKET = "kpulse-lake"
"""The bucket the ``s3_server`` fixture creates."""


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """A real S3 server (s3proxy, ``localkafka/s3_server.py``) on a free loopback port, with a
    fresh data directory, credentials of its own and the bucket :data:`S3_BUCKET`; stopped at the
    end of the session. Use it from modules that do not use ``local_cluster``."""
    import secrets

    from localkafka.s3_server import S3Server
    from tests.support import free_port

    server = S3Server(tmp_path_factory.mktemp("s3"), free_port(), f"kpulse-{secrets.token_hex(4)}",
                      secrets.token_urlsafe(24))
    server.start()
    try:
        server.create_bucket(S3_BUCKET)
        yield server
    finally:
        server.stop()


def kpulse(*args: str, timeout: float = 180, check: bool = True) -> subprocess.CompletedProcess:
    """Run the kpulse CLI as a user would (same interpreter, same environment)."""
    result = subprocess.run([sys.executable, "-m", "cli.main", *args], capture_output=True, text=True,
                            timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(f"kpulse {' '.join(args)} failed ({result.returncode}):\n{result.stderr}")
    return result


def start_broker_and_restore_leaders(broker_id: int, bootstrap: str) -> None:
    """``kpulse cluster start-broker``, then :func:`restore_preferred_leaders`."""
    kpulse("cluster", "start-broker", str(broker_id))
    restore_preferred_leaders(bootstrap)


def restore_preferred_leaders(bootstrap: str, timeout: float = 60) -> None:
    """Move leadership back to the preferred replicas now, as the controller would by itself within
    ``leader.imbalance.check.interval.seconds`` (300 s) after a broker restart: in the middle of a
    later test. Group coordinators move with the ``__consumer_offsets`` leaders, and librdkafka's
    ListConsumerGroupOffsets (the lag collector's fallback and the fuzz tests' independent check,
    run in the test process; the operations read through kafka-python) can crash the process when an OffsetFetch is answered NOT_COORDINATOR
    (librdkafka #5040). Does nothing (no tool run) when every leader is where it should be."""
    from confluent_kafka.admin import AdminClient

    from localkafka.tools import run_tool

    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + timeout
    while True:
        partitions = [part for meta in admin.list_topics(timeout=15).topics.values()
                      for part in meta.partitions.values() if part.replicas]
        # a restarted broker first catches up: until it is in sync again it cannot lead
        catching_up = any(len(part.isrs) < len(part.replicas) for part in partitions)
        off_preferred = any(part.leader != part.replicas[0] and part.replicas[0] in part.isrs for part in partitions)
        if not catching_up and not off_preferred:
            return
        if time.monotonic() > deadline:  # a replica out of sync for good: elect what can be elected, no more
            catching_up = False
        if off_preferred and not catching_up:
            run_tool("kafka-leader-election", ["--bootstrap-server", bootstrap, "--election-type", "preferred",
                                               "--all-topic-partitions"], timeout=120)
            if time.monotonic() > deadline:
                return
        time.sleep(1)


def one_error_line(result: subprocess.CompletedProcess) -> str:
    """The one stderr line of a CLI run that failed as a user error (exit 1, no traceback)."""
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def _keep_logs(cluster) -> None:
    """Copy node logs into test-artifacts/ so a failed CI run can be read afterwards."""
    target = ARTIFACTS / "cluster-logs"
    target.mkdir(parents=True, exist_ok=True)
    for log in cluster.root.glob("node-*/logs/server.log"):
        (target / f"{log.parent.parent.name}.log").write_bytes(log.read_bytes()[-2_000_000:])


@pytest.fixture(autouse=True, scope="module")
def cluster_left_healthy(request):
    """After every module that used the session cluster: all nodes running and no partition
    without a leader, within a minute. A module that breaks the cluster for the next ones fails
    here, under its own name, instead of failing an innocent test later."""
    yield
    if not _STARTED:
        return
    cluster = _STARTED[0]
    problems = _cluster_problems(cluster)
    deadline = time.monotonic() + 60
    while problems and time.monotonic() < deadline:
        time.sleep(1)
        problems = _cluster_problems(cluster)
    assert not problems, f"{request.module.__name__} left the test cluster unhealthy: {problems}"
    restore_preferred_leaders(cluster.layout.bootstrap_servers)


def _cluster_problems(cluster) -> list[str]:
    from confluent_kafka.admin import AdminClient

    problems = [f"node {node.id} is not running" for node in cluster.status().nodes if not node.running]
    if problems:
        return problems
    admin = AdminClient({"bootstrap.servers": cluster.layout.bootstrap_servers})
    try:
        metadata = admin.list_topics(timeout=10)
    except Exception as error:  # noqa: BLE001
        return [f"metadata unreadable: {error}"]
    return [f"{topic}[{partition}] has no leader" for topic, described in metadata.topics.items()
            for partition, state in described.partitions.items() if state.leader < 0]
