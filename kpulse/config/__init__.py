"""kpulse configuration: one strict YAML file describing the clusters to monitor.

Load it with :func:`load_config`; every problem is a :class:`ConfigError` whose one-line message
starts with the key path (``clusters[0].security.sasl_mechanism: ...``). The documented reference
is :func:`reference_config_path` (``kpulse/reference-config.yaml``).
"""

from kpulse.config.errors import ConfigError
from kpulse.config.load import (
    CONFIG_ENV_VAR, DEFAULT_SOURCE, default_config, load_config, reference_config_path,
)
from kpulse.config.model import (
    METRICS_SOURCES, PROTOCOLS, SASL_MECHANISMS, ClusterConfig, ConsumerGroupsConfig,
    DashboardConfig, ExporterConfig, GroupOverride, IntervalsConfig, KafkaSinkConfig, KpulseConfig,
    KraftConfig, LakeConfig, MetricsConfig, ProbeConfig, SecurityConfig, StreamsAppConfig,
)
from kpulse.config.parse import parse_config

__all__ = [
    "CONFIG_ENV_VAR", "DEFAULT_SOURCE", "METRICS_SOURCES", "PROTOCOLS", "SASL_MECHANISMS",
    "ClusterConfig", "ConfigError", "ConsumerGroupsConfig", "DashboardConfig", "ExporterConfig",
    "GroupOverride", "IntervalsConfig", "KafkaSinkConfig", "KpulseConfig", "LakeConfig", "MetricsConfig",
    "KraftConfig", "ProbeConfig", "SecurityConfig", "StreamsAppConfig", "default_config", "load_config", "parse_config",
    "reference_config_path",
]
