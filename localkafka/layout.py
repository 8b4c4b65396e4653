"""Node settings of the local cluster (``server.properties``): pure data, no I/O. Its ports are
in ``kpulse/local_layout.py``."""

from __future__ import annotations

from dataclasses import dataclass

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


SASL_SSL_PORT_OFFSET = 600
"""Node *i*'s SASL_SSL listener, when the cluster has one (:class:`SaslSslListener`): base + 600 + i
(base + 500 is the dashboard's)."""
SCRAM_MECHANISM = "SCRAM-SHA-512"


@dataclass(frozen=True)
class SaslSslListener:
    """A SASL_SSL listener beside each node's PLAINTEXT one (an option of the local cluster, for the
    collection bench's ``--secure``): SCRAM-SHA-512 (the users are created when the storage is
    formatted), TLS with the node's key and certificate in one PEM file and the CA that signed it as
    the PEM truststore, as ``localkafka/secure.py`` configures its broker. The brokers still talk to
    each other and to the controllers over PLAINTEXT, and there is no authorizer: the two listeners
    differ by TLS and SASL alone."""

    keystore: str
    """PEM: the broker's private key, then its certificate (``ssl.keystore.type=PEM``)."""
    truststore: str
    """PEM: the CA certificate (``ssl.truststore.type=PEM``)."""

    @staticmethod
    def port(layout: ClusterLayout, node: NodeLayout) -> int:
        return layout.base + SASL_SSL_PORT_OFFSET + node.node_id

    @classmethod
    def bootstrap_servers(cls, layout: ClusterLayout) -> str:
        return ",".join(f"{HOST}:{cls.port(layout, node)}" for node in layout.nodes)

    def settings(self) -> dict[str, str]:
        """The listener's own settings (``listener.name.sasl_ssl.*``), besides its place in
        ``listeners``, ``advertised.listeners`` and the security protocol map."""
        prefix = "listener.name.sasl_ssl."
        return {
            "sasl.enabled.mechanisms": SCRAM_MECHANISM,
            f"{prefix}{SCRAM_MECHANISM.lower()}.sasl.jaas.config":
                "org.apache.kafka.common.security.scram.ScramLoginModule required;",
            f"{prefix}ssl.keystore.type": "PEM",
            f"{prefix}ssl.keystore.location": self.keystore,
            f"{prefix}ssl.truststore.type": "PEM",
            f"{prefix}ssl.truststore.location": self.truststore,
        }


def scram_format_arguments(users: dict[str, str]) -> list[str]:
    """``kafka.tools.StorageTool format`` arguments that create SCRAM-SHA-512 credentials for each
    user (name -> password) in the cluster's metadata."""
    for name, password in users.items():
        if not name or any(c in f"{name}{password}" for c in ",=[]"):
            raise ValueError(f"{name!r}: a SCRAM user name and password here have no ',', '=', '[' or ']'")
    return [argument for name, password in users.items()
            for argument in ("--add-scram", f"{SCRAM_MECHANISM}=[name={name},password={password}]")]


def server_properties(layout: ClusterLayout, node: NodeLayout, data_dir: str,
                      sasl_ssl: SaslSslListener | None = None) -> str:
    """The ``server.properties`` text for one node; ``sasl_ssl``: with a SASL_SSL listener too."""
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
    if sasl_ssl is not None:
        address = f"SASL_SSL://{HOST}:{sasl_ssl.port(layout, node)}"
        settings["listeners"] += f",{address}"
        settings["advertised.listeners"] += f",{address}"
        settings["listener.security.protocol.map"] += ",SASL_SSL:SASL_SSL"
        settings.update(sasl_ssl.settings())
    return "".join(f"{key}={value}\n" for key, value in settings.items())
