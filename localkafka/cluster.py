"""Start, stop and inspect the local three-node KRaft cluster.

State lives under ``<state dir>/cluster/``: ``layout.json`` (the port base the cluster was created
with, so later commands find it whatever the environment says) and one ``node-<id>/`` per node
with ``server.properties``, ``data/``, ``logs/`` and ``pid.json``.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from kpulse import processes
from kpulse.errors import KpulseError
from kpulse.home import state_dir
from kpulse.kafka.clients import admin_client
from kpulse.local_layout import ClusterLayout, NodeLayout
from kpulse.progress import SILENT, Progress
from localkafka.layout import CLUSTER_ID, SCRAM_MECHANISM, SaslSslListener, scram_format_arguments, server_properties
from localkafka.runtime import JAVA_DIR, JavaRuntime, ensure_runtime, java_command, kafka_version

NODE_HEAP = "384m"


@dataclass(frozen=True)
class NodeJvm:
    """How the nodes' JVMs run. The default starts fast and stays small (a demo and test cluster:
    three nodes in ~1.1 GB, ready in ~15 s): only the quick JIT tier and a 384 MB heap.
    ``STEADY_JVM`` is closer to a production broker (both JIT tiers, a heap for 10,000s of
    partitions): what the collection benchmark runs its brokers with."""

    heap: str = NODE_HEAP
    fast_start: bool = True


STEADY_JVM = NodeJvm(heap="1g", fast_start=False)


@dataclass(frozen=True)
class ScramUser:
    """The option that gives each node a SASL_SSL listener beside its PLAINTEXT one
    (``localkafka/layout.py`` :class:`~localkafka.layout.SaslSslListener`, on base + 600 + i) and
    this SCRAM-SHA-512 user, created when the storage is formatted (a cluster formatted without the
    option has no such user). The CA and the brokers' certificate are made on the fly in
    ``<state>/cluster/certs/`` (``localkafka/certs.py``). Used by ``bench/lag_collection.py --secure``."""

    name: str = "kpulse-bench"
    password: str = "kpulse-bench-secret"


BROKER_CN = "kpulse-broker"
READY_TIMEOUT_SECONDS = 90.0


class ClusterError(KpulseError):
    """The local cluster could not do what was asked; the message is one line for the user."""


@dataclass(frozen=True)
class NodeStatus:
    id: int
    port: int
    controller_port: int
    metrics_url: str
    running: bool
    pid: int | None
    log: str


@dataclass(frozen=True)
class ClusterStatus:
    bootstrap_servers: str
    kafka_version: str
    state_dir: str
    nodes: list[NodeStatus]

    @property
    def all_running(self) -> bool:
        return all(node.running for node in self.nodes)

    def to_dict(self) -> dict:
        return asdict(self)


class LocalCluster:
    """The local cluster in one state directory. The constructor touches nothing."""

    def __init__(self, state: Path | None = None, layout: ClusterLayout | None = None,
                 progress: Progress = SILENT, jvm: NodeJvm = NodeJvm(), sasl_ssl_user: ScramUser | None = None):
        self.root = (state or state_dir()) / "cluster"
        self._layout = layout
        self.progress = progress
        self.jvm = jvm
        self.sasl_ssl_user = sasl_ssl_user
        """None (the default): PLAINTEXT only. Else the SASL_SSL listeners and their user (:class:`ScramUser`)."""

    # --- the SASL_SSL listener (option) -------------------------------------------------------------
    @property
    def certs(self) -> Path:
        return self.root / "certs"

    @property
    def ca_file(self) -> Path:
        from localkafka.certs import Authority

        return Authority(self.certs).certificate_path

    def sasl_ssl_listener(self) -> SaslSslListener | None:
        if self.sasl_ssl_user is None:
            return None
        return SaslSslListener(keystore=str(self.certs / "broker-keystore.pem"), truststore=str(self.ca_file))

    @property
    def sasl_ssl_bootstrap_servers(self) -> str:
        if self.sasl_ssl_user is None:
            raise ClusterError("this local cluster has no SASL_SSL listener (LocalCluster(sasl_ssl_user=...))")
        return SaslSslListener.bootstrap_servers(self.layout)

    def sasl_ssl_security(self) -> dict[str, str]:
        """The ``security`` section of a kpulse config that connects through the SASL_SSL listeners."""
        if self.sasl_ssl_user is None:
            raise ClusterError("this local cluster has no SASL_SSL listener (LocalCluster(sasl_ssl_user=...))")
        return {"protocol": "SASL_SSL", "sasl_mechanism": SCRAM_MECHANISM, "sasl_username": self.sasl_ssl_user.name,
                "sasl_password": self.sasl_ssl_user.password, "ssl_ca_location": str(self.ca_file)}

    def _certificates(self) -> None:
        """The CA and the brokers' certificate (one for the three nodes: it names 127.0.0.1), made
        once per state directory."""
        from localkafka.certs import Authority

        keystore = self.certs / "broker-keystore.pem"
        if keystore.exists():
            return
        authority = Authority(self.certs).create()
        broker = authority.issue(BROKER_CN, server=True)
        keystore.write_bytes(broker.key.read_bytes() + broker.certificate.read_bytes())
        keystore.chmod(0o600)

    # --- where things are ---------------------------------------------------------------------------
    @property
    def layout(self) -> ClusterLayout:
        if self._layout is None:
            saved = self.root / "layout.json"
            base = json.loads(saved.read_text())["port_base"] if saved.exists() else None
            self._layout = ClusterLayout.from_base(base)
        return self._layout

    def node_dir(self, node_id: int) -> Path:
        return self.root / f"node-{node_id}"

    def _pid_file(self, node_id: int) -> Path:
        return self.node_dir(node_id) / "pid.json"

    # --- status -------------------------------------------------------------------------------------
    def status(self) -> ClusterStatus:
        nodes = []
        for node in self.layout.nodes:
            pid = processes.running_pid(self._pid_file(node.node_id))
            nodes.append(NodeStatus(id=node.node_id, port=node.client_port, controller_port=node.controller_port,
                                    metrics_url=node.metrics_url, running=pid is not None, pid=pid,
                                    log=str(self.node_dir(node.node_id) / "logs" / "server.log")))
        return ClusterStatus(bootstrap_servers=self.layout.bootstrap_servers, kafka_version=kafka_version(),
                             state_dir=str(self.root), nodes=nodes)

    # --- up / down ----------------------------------------------------------------------------------
    def up(self, timeout: float = READY_TIMEOUT_SECONDS) -> ClusterStatus:
        """Format what is new, start what is not running, and wait until the cluster is ready."""
        missing = [n for n in self.layout.nodes if processes.running_pid(self._pid_file(n.node_id)) is None]
        if not missing:
            self.progress.note(f"cluster already up: {self.layout.bootstrap_servers}")
            return self.status()
        busy = [port for node in missing for port in (node.client_port, node.controller_port, node.metrics_port)
                + ((SaslSslListener.port(self.layout, node),) if self.sasl_ssl_user is not None else ())
                if _port_in_use(port)]
        if busy:
            raise ClusterError(f"port(s) {', '.join(map(str, busy))} already in use on 127.0.0.1 (another cluster? "
                               "stop it, or choose other ports with KPULSE_PORT_BASE)")
        runtime = ensure_runtime(self.progress)
        self._save_layout()
        if self.sasl_ssl_user is not None:
            self._certificates()
        unformatted = [n for n in missing if not (self.node_dir(n.node_id) / "data" / "meta.properties").exists()]
        if unformatted:
            with self.progress.step(f"formatting storage of {len(unformatted)} node(s)"):
                self._format(runtime, unformatted)
        try:
            with self.progress.step(f"starting {len(missing)} node(s)"):
                for node in missing:
                    self._start_node(runtime, node)
            with self.progress.step("waiting for a quorum leader and all brokers registered"):
                self.wait_ready(timeout)
        except BaseException:
            # Leave nothing half-started behind: stop the nodes this call started.
            processes.stop_all([self._pid_file(n.node_id) for n in missing])
            raise
        return self.status()

    def down(self, wipe: bool = False) -> list[int]:
        """Stop every node this state directory started (SIGTERM, then SIGKILL after 30 s)."""
        stopped = processes.stop_all([self._pid_file(node.node_id) for node in self.layout.nodes])
        for node in self.layout.nodes:
            self._pid_file(node.node_id).unlink(missing_ok=True)
        if wipe:
            shutil.rmtree(self.root, ignore_errors=True)
        return stopped

    # --- one node -----------------------------------------------------------------------------------
    def stop_broker(self, node_id: int) -> bool:
        """Controlled shutdown (SIGTERM): leadership moves away before the node exits."""
        self.layout.node(node_id)
        return processes.stop(self._pid_file(node_id), timeout=30)

    def kill_broker(self, node_id: int) -> bool:
        """SIGKILL: the node vanishes as in a crash; the controller fences it after the session timeout."""
        self.layout.node(node_id)
        return processes.stop(self._pid_file(node_id), kill=True)

    def start_broker(self, node_id: int, timeout: float = READY_TIMEOUT_SECONDS) -> ClusterStatus:
        node = self.layout.node(node_id)
        if not (self.node_dir(node_id) / "data" / "meta.properties").exists():
            raise ClusterError("the local cluster was never started here: run `kpulse cluster up` first")
        if processes.running_pid(self._pid_file(node_id)) is None:
            self._start_node(ensure_runtime(self.progress), node)
        self.wait_ready(timeout)
        return self.status()

    # --- internals ----------------------------------------------------------------------------------
    def _save_layout(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / "layout.json").write_text(json.dumps({"port_base": self.layout.base}))

    def _write_properties(self, node: NodeLayout) -> Path:
        directory = self.node_dir(node.node_id)
        (directory / "logs").mkdir(parents=True, exist_ok=True)
        path = directory / "server.properties"
        path.write_text(server_properties(self.layout, node, str(directory / "data"), self.sasl_ssl_listener()))
        return path

    def _format(self, runtime: JavaRuntime, nodes: list[NodeLayout]) -> None:
        scram = ([] if self.sasl_ssl_user is None else
                 scram_format_arguments({self.sasl_ssl_user.name: self.sasl_ssl_user.password}))

        def format_one(node: NodeLayout) -> None:
            properties = self._write_properties(node)
            command = java_command(runtime, "kafka.tools.StorageTool",
                                   ["format", "--cluster-id", CLUSTER_ID, "--config", str(properties),
                                    "--ignore-formatted", *scram], heap="128m")
            result = subprocess.run(command, capture_output=True, text=True)
            if result.returncode != 0:
                raise ClusterError(f"formatting node {node.node_id} failed: "
                                   + (result.stderr or result.stdout).strip().splitlines()[-1])

        with ThreadPoolExecutor(len(nodes)) as pool:
            list(pool.map(format_one, nodes))

    def _start_node(self, runtime: JavaRuntime, node: NodeLayout) -> None:
        properties = self._write_properties(node)
        logs = self.node_dir(node.node_id) / "logs"
        command = java_command(
            runtime, "kafka.Kafka", [str(properties)], heap=self.jvm.heap, fast_start=self.jvm.fast_start,
            log_config="log4j2-server.properties",
            agent=(node.metrics_port, JAVA_DIR / "jmx-exporter-broker.yaml"),
            system_properties={"kafka.logs.dir": str(logs)})
        processes.start(command, pid_file=self._pid_file(node.node_id), log_file=logs / "stdout.log")

    def wait_ready(self, timeout: float) -> None:
        """Until every running node's exporter answers, a quorum leader is known and the brokers are registered."""
        deadline = time.monotonic() + timeout
        last_problem: str | None = "nothing checked yet"
        self._exporters_seen: set[int] = set()
        while time.monotonic() < deadline:
            dead = [n.node_id for n in self.layout.nodes
                    if processes.read_record(self._pid_file(n.node_id)) is not None
                    and processes.running_pid(self._pid_file(n.node_id)) is None]
            if dead:
                log = self.node_dir(dead[0]) / "logs" / "server.log"
                raise ClusterError(f"node {dead[0]} exited during start; see {log}")
            last_problem = self._readiness_problem()
            if last_problem is None:
                return
            time.sleep(0.5)
        raise ClusterError(f"cluster not ready after {timeout:.0f}s: {last_problem}")

    def _readiness_problem(self) -> str | None:
        """None when ready. A broker registers only with an active controller, so every running
        node registered means the quorum has a leader; each node's exporter must then answer once
        (a full scrape walks every MBean: slow on a loaded machine, so it is read once per node)."""
        running = [n for n in self.layout.nodes if processes.running_pid(self._pid_file(n.node_id)) is not None]
        registered = _registered_brokers(self.layout.bootstrap_servers)
        expected = {n.node_id for n in running}
        if registered is None or not expected <= registered:
            return f"brokers registered: {sorted(registered or [])}, expected {sorted(expected)}"
        for node in running:
            if node.node_id in self._exporters_seen:
                continue
            leader = scrape_value(node.metrics_url, "kafka_server_raft_metrics_current_leader", timeout=15)
            if leader is None:
                return f"node {node.node_id} metrics endpoint not serving yet"
            if leader < 0:
                return f"node {node.node_id} knows no quorum leader yet"
            self._exporters_seen.add(node.node_id)
        return None


def _port_in_use(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def scrape_value(url: str, metric: str, timeout: float = 5) -> float | None:
    """The first sample of ``metric`` on a Prometheus text endpoint, or None when unreachable."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            text = response.read().decode()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(metric) and line[len(metric)] in " {":
            return float(line.rsplit(" ", 1)[1])
    return None


def _registered_brokers(bootstrap: str) -> set[int] | None:
    admin = admin_client({"bootstrap.servers": bootstrap, "socket.connection.setup.timeout.ms": 2000})
    try:
        cluster = admin.describe_cluster(request_timeout=3).result(timeout=5)
    except Exception:  # noqa: BLE001 - any failure means "not ready yet"
        return None
    return {node.id for node in cluster.nodes}
