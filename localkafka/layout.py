"""Node settings of the local cluster (``server.properties``): pure data, no I/O. Its ports are
in ``kpulse/local_layout.py``."""

from __future__ import annotations

from kpulse.local_layout import HOST, ClusterLayout, NodeLayout

# A fixed id: formatting is repeatable and the state directory says which cluster it holds.
CLUSTER_ID = "a3B1c2D3e4F5g6H7i8J9kQ"

# Settings that make failures visible within seconds on a test cluster. Production defaults in
# brackets; the README lists them.
FAST_FAILURE_SETTINGS = {
    "broker.session.timeout.ms": "4000",  # [9000] controller fences a silent broker
    "broker.heartbeat.interval.ms": "1000",  # [2000]
    "replica.lag.time.max.ms": "5000",  # [30000] a lagging follower leaves the ISR
    "group.initial.rebalance.delay.ms": "0",  # [3000] groups form at once
    "controller.quorum.election.timeout.ms": "1000",  # [1000]
    "controller.quorum.fetch.timeout.ms": "2000",  # [2000]
}


def server_properties(layout: ClusterLayout, node: NodeLayout, data_dir: str) -> str:
    """The ``server.properties`` text for one node."""
    settings = {
        "process.roles": "broker,controller",
        "node.id": str(node.node_id),
        "controller.quorum.voters": layout.quorum_voters,
        "listeners": f"PLAINTEXT://{HOST}:{node.client_port},CONTROLLER://{HOST}:{node.controller_port}",
        "advertised.listeners": f"PLAINTEXT://{HOST}:{node.client_port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": data_dir,
        "num.partitions": "3",
        "default.replication.factor": "3",
        "min.insync.replicas": "2",
        "offsets.topic.replication.factor": "3",
        "transaction.state.log.replication.factor": "3",
        "transaction.state.log.min.isr": "2",
        "share.coordinator.state.topic.replication.factor": "3",
        "share.coordinator.state.topic.min.isr": "2",
        "auto.create.topics.enable": "false",
        "num.io.threads": "4",
        "num.network.threads": "2",
        "log.retention.hours": "24",
        "log.segment.bytes": str(64 * 1024 * 1024),
        **FAST_FAILURE_SETTINGS,
    }
    return "".join(f"{key}={value}\n" for key, value in settings.items())
