"""Where the local cluster listens: ports and addresses, pure data, no I/O. The default
configuration points at it (``kpulse.config.load``); ``localkafka/`` runs it.

Every port derives from one base (``$KPULSE_PORT_BASE``, default 19090) so a second cluster
(the test suite's) can run beside the demo one:

=====================  ==================  =====================
what                   node *i* (1..3)     default for node 1
=====================  ==================  =====================
client listener        base + i            19091
controller listener    base + 100 + i      19191
JMX exporter metrics   base + 200 + i      19291
Streams demo metrics   base + 300 + j      19391 (slot j: 1, 2 the classic app, 3 the KIP-1071 app)
kpulse exporter        base + 400          9308 (default base only)
=====================  ==================  =====================
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from kpulse.errors import KpulseError

DEFAULT_PORT_BASE = 19090
NODE_IDS = (1, 2, 3)
HOST = "127.0.0.1"


class UnknownNodeError(KpulseError, ValueError):
    """A node id the local cluster does not have."""


def port_base() -> int:
    return int(os.environ.get("KPULSE_PORT_BASE", DEFAULT_PORT_BASE))


@dataclass(frozen=True)
class NodeLayout:
    """One combined broker+controller node."""

    node_id: int
    client_port: int
    controller_port: int
    metrics_port: int

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.client_port}"

    @property
    def metrics_url(self) -> str:
        return f"http://{HOST}:{self.metrics_port}/metrics"


@dataclass(frozen=True)
class ClusterLayout:
    base: int
    nodes: tuple[NodeLayout, ...]

    @classmethod
    def from_base(cls, base: int | None = None) -> ClusterLayout:
        base = port_base() if base is None else base
        nodes = tuple(
            NodeLayout(node_id=i, client_port=base + i, controller_port=base + 100 + i,
                       metrics_port=base + 200 + i)
            for i in NODE_IDS
        )
        return cls(base=base, nodes=nodes)

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(node.bootstrap for node in self.nodes)

    @property
    def quorum_voters(self) -> str:
        return ",".join(f"{n.node_id}@{HOST}:{n.controller_port}" for n in self.nodes)

    def node(self, node_id: int) -> NodeLayout:
        for node in self.nodes:
            if node.node_id == node_id:
                return node
        known = ", ".join(str(n.node_id) for n in self.nodes)
        raise UnknownNodeError(f"no node {node_id} in the local cluster (nodes: {known})")

    def streams_metrics_port(self, instance: int) -> int:
        return self.base + 300 + instance

    @property
    def exporter_port(self) -> int:
        """kpulse's own Prometheus exporter: kafka_exporter's usual 9308 beside the default
        cluster, base + 400 beside any other (a test cluster next to a demo one)."""
        return 9308 if self.base == DEFAULT_PORT_BASE else self.base + 400
