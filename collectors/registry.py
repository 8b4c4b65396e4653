"""The built-in collectors, registered exactly as an add-on registers its own.

Add-ons: a package exposing an entry point in the group ``kpulse.collectors`` whose object is a
``factory(cluster_config) -> Collector`` is registered under the entry point's name.
"""

from __future__ import annotations

from importlib.metadata import entry_points

from collectors.protocol import Collector, CollectorFactory, Registry
from kpulse.config import ClusterConfig

ENTRY_POINT_GROUP = "kpulse.collectors"


def _cluster_metadata(cluster: ClusterConfig) -> Collector:
    from collectors.cluster.cluster_metadata import ClusterMetadataCollector

    return ClusterMetadataCollector(cluster)


def _broker_metrics(cluster: ClusterConfig) -> Collector:
    from collectors.brokers.broker_metrics import BrokerMetricsCollector

    return BrokerMetricsCollector(cluster)


def _consumer_lag(cluster: ClusterConfig) -> Collector:
    from collectors.lag.consumer_lag import ConsumerLagCollector

    return ConsumerLagCollector(cluster)


def _streams_apps(cluster: ClusterConfig) -> Collector:
    from collectors.streams.streams_apps import StreamsAppsCollector

    return StreamsAppsCollector(cluster)


def _share_groups(cluster: ClusterConfig) -> Collector:
    from collectors.share.share_groups import ShareGroupsCollector

    return ShareGroupsCollector(cluster)


def _probe(cluster: ClusterConfig) -> Collector | None:
    if not cluster.probe.enabled:
        return None
    from collectors.probe.probe import ProbeCollector

    return ProbeCollector(cluster, topic=cluster.probe.topic)


BUILTINS: dict[str, CollectorFactory] = {
    "cluster_metadata": _cluster_metadata,
    "broker_metrics": _broker_metrics,
    "consumer_lag": _consumer_lag,
    "streams_apps": _streams_apps,
    "share_groups": _share_groups,
    "probe": _probe,
}


def default_registry(with_add_ons: bool = True) -> Registry:
    registry = Registry()
    for name, factory in BUILTINS.items():
        registry.register(name, factory)
    if with_add_ons:
        for entry_point in entry_points(group=ENTRY_POINT_GROUP):
            registry.register(entry_point.name, entry_point.load())
    return registry
