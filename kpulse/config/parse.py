"""Parsed YAML (plain dicts and lists) -> validated :class:`KpulseConfig`. Pure: no file access.

Strict: every mapping declares its keys up front, so a typo is reported as the typo (with a
suggestion) rather than as the required key it hid.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar, overload
from urllib.parse import urlsplit

import yaml

from kpulse import home
from kpulse.config import envsubst
from kpulse.config.errors import ConfigError, child_path
from kpulse.lag_contract import DEFAULT_LAG_SECONDS_THRESHOLD
from kpulse.lake.location import check_location, is_s3
from kpulse.config.model import (
    EXPORTER_COMPATIBILITIES, EXPORTER_GRANULARITIES, METRICS_SOURCES, PROTOCOLS, SASL_MECHANISMS, AlertingConfig,
    AlertmanagerConfig, ClusterConfig, ConsumerGroupsConfig,
    DashboardConfig, ExporterConfig, GroupOverride, IntervalsConfig, KafkaSinkConfig, KpulseConfig, LakeConfig,
    KraftConfig, MetricsConfig, ProbeConfig, RecordsConfig, RecordsMaskConfig, RetentionConfig, S3CredentialsConfig,
    SecurityConfig,
    StreamsAppConfig, DEFAULT_VOTER_LAG_RECORDS, DEFAULT_VOTER_LAG_SECONDS,
)

_CLUSTER_NAME = re.compile(r"[A-Za-z0-9_.-]+\Z")
_URI_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_LABEL_MATCHERS = re.compile(r'\s*[A-Za-z_][A-Za-z0-9_]*\s*(=~|!~|!=|=)\s*"(?:[^"\\]|\\.)*"\s*(,|\Z)')
_MISSING = object()
_Choice = TypeVar("_Choice", bound=str)


def parse_config(
    data: Mapping[str, Any] | None,
    *,
    source: str,
    base_dir: Path,
    environ: Mapping[str, str] | None = None,
) -> KpulseConfig:
    """Validate ``data`` (a parsed YAML document). Relative paths resolve against ``base_dir``;
    ``${VAR}`` references against ``environ`` (default ``os.environ``)."""
    reader = _Section(data, "", os.environ if environ is None else environ, base_dir,
                      ("clusters", "lake", "intervals", "exporter", "dashboard", "alerting"))
    clusters = tuple(_cluster(item) for item in reader.sections("clusters", required=True))
    if not clusters:
        raise ConfigError("clusters: at least one cluster is required")
    _refuse_duplicates([c.name for c in clusters], "clusters", "name", "cluster name")

    lake = reader.section("lake", ("path", "kafka_sink", "retention", "s3"))
    lake_path = lake.path_or_uri("path") or str(home.state_dir() / "lake")
    try:
        check_location(lake_path)
    except ValueError as error:
        raise ConfigError(f"{lake.path('path')}: {error}") from None
    s3_credentials = _s3_credentials(lake.section("s3", ("access_key_id", "secret_access_key", "session_token")))
    if lake.data.get("s3") is not None and not is_s3(lake_path):
        raise ConfigError(f"{lake.path('s3')}: only used when lake.path is an s3:// location (it is {lake_path})")
    kafka_sink = _kafka_sink(lake.section("kafka_sink", ("cluster", "topic_prefix", "message_timeout_seconds")),
                             [c.name for c in clusters])
    intervals = reader.section("intervals", ("collect_seconds", "slo_seconds"))
    exporter = reader.section("exporter", ("port", "host", "granularity", "compatibility"))
    dashboard = reader.section("dashboard", ("port", "host", "users_file", "url"))
    users_file = dashboard.path_or_uri("users_file", local_only=True)
    dashboard_url = dashboard.string("url", non_empty=True)
    if dashboard_url is not None:
        _url(dashboard.path("url"), dashboard_url)
    alerting = reader.section("alerting", ("alertmanager",))
    return KpulseConfig(
        clusters=clusters,
        lake=LakeConfig(path=lake_path, kafka_sink=kafka_sink, retention=_retention(lake.section(
            "retention", ("per_partition_days", "days", "downsample_minutes", "tables", "daily_at"))),
            s3=s3_credentials),
        intervals=IntervalsConfig(
            collect_seconds=intervals.seconds("collect_seconds", 10.0),
            slo_seconds=intervals.seconds("slo_seconds", 60.0),
        ),
        exporter=ExporterConfig(
            port=exporter.integer("port", 9308, minimum=0, maximum=65535),
            host=exporter.string("host", "127.0.0.1", non_empty=True),
            granularity=exporter.choice("granularity", EXPORTER_GRANULARITIES, "partition"),
            compatibility=_compatibility(exporter),
        ),
        dashboard=DashboardConfig(
            port=dashboard.integer("port", 8501, minimum=1, maximum=65535),
            host=dashboard.string("host", "127.0.0.1", non_empty=True),
            users_file=Path(users_file) if users_file else None,
            url=dashboard_url,
        ),
        source=source,
        alerting=AlertingConfig(alertmanager=_alertmanager(alerting.section(
            "alertmanager", ("urls", "timeout_seconds", "resend_interval_seconds", "retries")))),
    )


def _s3_credentials(reader: _Section) -> S3CredentialsConfig | None:
    """``lake.s3``: an access key id and its secret (and a session token), all or nothing."""
    key_id = reader.string("access_key_id", non_empty=True)
    secret = reader.string("secret_access_key", non_empty=True)
    token = reader.string("session_token", non_empty=True)
    if key_id is None and secret is None:
        if token is not None:
            raise ConfigError(f"{reader.path('session_token')}: only used with access_key_id and secret_access_key")
        return None
    if key_id is None:
        raise ConfigError(f"{reader.path('access_key_id')}: required when secret_access_key is given")
    if secret is None:
        raise ConfigError(f"{reader.path('secret_access_key')}: required when access_key_id is given")
    return S3CredentialsConfig(access_key_id=key_id, secret_access_key=secret, session_token=token)


def _compatibility(reader: _Section) -> tuple[str, ...]:
    """``exporter.compatibility``: a list of :data:`EXPORTER_COMPATIBILITIES` (``[]``: kpulse's own
    series only), each once."""
    chosen = reader.strings("compatibility", default=("kafka_exporter",))
    for index, name in enumerate(chosen):
        if name not in EXPORTER_COMPATIBILITIES:
            raise ConfigError(f"{child_path(reader.path('compatibility'), index)}: {name!r} is not one of "
                              f"{', '.join(EXPORTER_COMPATIBILITIES)}")
    return tuple(dict.fromkeys(chosen))


def _alertmanager(reader: _Section) -> AlertmanagerConfig:
    default = AlertmanagerConfig()
    urls = reader.strings("urls")
    for index, url in enumerate(urls):
        _url(child_path(reader.path("urls"), index), url)
    _refuse_duplicates([url.rstrip("/") for url in urls], reader.path("urls"), "", "Alertmanager URL")
    return AlertmanagerConfig(
        urls=tuple(url.rstrip("/") for url in urls),
        timeout_seconds=reader.seconds("timeout_seconds", default.timeout_seconds),
        resend_interval_seconds=reader.seconds("resend_interval_seconds", default.resend_interval_seconds),
        retries=reader.integer("retries", default.retries, minimum=0, maximum=10))


def _retention(reader: _Section) -> RetentionConfig:
    default = RetentionConfig()
    tables = dict(default.tables)
    for table in reader.mapping("tables"):
        tables[str(table)] = _days(reader.section("tables"), table, None)
    daily_at = reader.string("daily_at", default.daily_at)
    if not re.fullmatch(r"([01]\d|2[0-3]):[0-5]\d", daily_at):
        raise ConfigError(f"{reader.path('daily_at')}: expected a UTC time of day HH:MM, got {daily_at!r}")
    return RetentionConfig(
        per_partition_days=_days(reader, "per_partition_days", default.per_partition_days),
        days=_days(reader, "days", default.days),
        downsample_minutes=reader.integer("downsample_minutes", default.downsample_minutes, minimum=0,
                                          maximum=1440),
        tables=MappingProxyType(tables), daily_at=daily_at)


def _days(reader: _Section, key: Any, default: int | None) -> int | None:
    """A number of days >= 1, or ``forever`` (None)."""
    value = reader.data.get(key)
    if value is None:
        return default
    if value == "forever":
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{reader.path(key)}: expected a number of days >= 1 or 'forever', got {_describe(value)}")
    return value


def _kafka_sink(reader: _Section, cluster_names: list[str]) -> KafkaSinkConfig | None:
    if not reader.data:
        return None
    cluster = reader.string("cluster", required=True, non_empty=True)
    if cluster not in cluster_names:
        close = difflib.get_close_matches(cluster, cluster_names, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else f" (known: {', '.join(cluster_names)})"
        raise ConfigError(f"{reader.path('cluster')}: no configured cluster is called '{cluster}'{hint}")
    topic_prefix = reader.string("topic_prefix", "kpulse.")
    if not re.fullmatch(r"[A-Za-z0-9._-]*", topic_prefix):
        raise ConfigError(f"{reader.path('topic_prefix')}: a topic name may hold only letters, digits, '.', '_' "
                          f"and '-', got {topic_prefix!r}")
    return KafkaSinkConfig(cluster=cluster, topic_prefix=topic_prefix,
                           message_timeout_seconds=reader.seconds("message_timeout_seconds", 300.0))


def _cluster(reader: _Section) -> ClusterConfig:
    reader.declare("name", "bootstrap_servers", "read_only", "require_approval", "security", "metrics",
                   "streams_apps", "consumer_groups", "probe", "kraft", "records")
    name = reader.string("name", required=True)
    if not _CLUSTER_NAME.match(name):
        raise ConfigError(f"{reader.path('name')}: {name!r} may only use letters, digits, '_', '.', '-'")
    bootstrap_servers = reader.string("bootstrap_servers", required=True)
    for server in bootstrap_servers.split(","):
        host, _, port = server.strip().rpartition("://")[2].rpartition(":")
        if not host or not (port.isascii() and port.isdigit()):
            raise ConfigError(f"{reader.path('bootstrap_servers')}: {server.strip()!r} is not host:port")
    apps = tuple(_streams_app(item) for item in reader.sections("streams_apps"))
    _refuse_duplicates([a.application_id for a in apps], reader.path("streams_apps"),
                       "application_id", "application id")
    return ClusterConfig(
        name=name,
        bootstrap_servers=",".join(s.strip() for s in bootstrap_servers.split(",")),
        read_only=reader.boolean("read_only", False),
        require_approval=reader.boolean("require_approval", False),
        security=_security(reader.section("security")),
        metrics=_metrics(reader.section("metrics")),
        streams_apps=apps,
        consumer_groups=_consumer_groups(reader.section("consumer_groups")),
        probe=_probe(reader.section("probe")),
        kraft=_kraft(reader.section("kraft")),
        records=_records(reader.section("records")),
    )


def _records(reader: _Section) -> RecordsConfig:
    reader.declare("visible_topics", "mask", "max_records", "max_bytes", "timeout_seconds")
    mask = reader.section("mask", ("fields", "patterns"))
    visible_topics = reader.strings("visible_topics")
    patterns = mask.strings("patterns")
    for key_path, values in ((reader.path("visible_topics"), visible_topics), (mask.path("patterns"), patterns)):
        for index, pattern in enumerate(values):
            _regex(child_path(key_path, index), pattern)
    for index, pattern in enumerate(patterns):
        if re.fullmatch(pattern, ""):
            raise ConfigError(f"{child_path(mask.path('patterns'), index)}: {pattern!r} matches empty text, "
                              "so it would mask between every character")
    default = RecordsConfig()
    return RecordsConfig(
        visible_topics=visible_topics,
        mask=RecordsMaskConfig(fields=mask.strings("fields"), patterns=patterns),
        max_records=reader.integer("max_records", default.max_records, minimum=1, maximum=10_000),
        max_bytes=reader.integer("max_bytes", default.max_bytes, minimum=1024, maximum=1 << 30),
        timeout_seconds=reader.seconds("timeout_seconds", default.timeout_seconds),
    )


def _regex(key_path: str, pattern: str) -> None:
    try:
        re.compile(pattern)
    except re.error as error:
        raise ConfigError(f"{key_path}: invalid regex {pattern!r}: {error}") from None


def _kraft(reader: _Section) -> KraftConfig:
    reader.declare("voter_lag_records", "voter_lag_seconds")
    return KraftConfig(voter_lag_records=reader.integer("voter_lag_records", DEFAULT_VOTER_LAG_RECORDS, minimum=1),
                       voter_lag_seconds=reader.seconds("voter_lag_seconds", DEFAULT_VOTER_LAG_SECONDS))


def _probe(reader: _Section) -> ProbeConfig:
    reader.declare("enabled", "topic")
    return ProbeConfig(enabled=reader.boolean("enabled", True),
                       topic=reader.string("topic", "kpulse-probe", non_empty=True))


def _security(reader: _Section) -> SecurityConfig:
    sasl_keys = ("sasl_mechanism", "sasl_username", "sasl_password")
    oauth_keys = ("sasl_oauthbearer_token_endpoint_url", "sasl_oauthbearer_client_id",
                  "sasl_oauthbearer_client_secret", "sasl_oauthbearer_scope")
    ssl_keys = ("ssl_ca_location", "ssl_certificate_location", "ssl_key_location", "ssl_key_password")
    oauth_ca_key = "sasl_oauthbearer_ca_location"
    reader.declare("protocol", *sasl_keys, *oauth_keys, oauth_ca_key, *ssl_keys, "ssl_endpoint_identification")
    protocol = reader.choice("protocol", PROTOCOLS, "PLAINTEXT")
    values: dict[str, Any] = {key: reader.string(key) for key in (*sasl_keys, *oauth_keys)}
    values[oauth_ca_key] = reader.path_or_uri(oauth_ca_key, local_only=True)
    values["sasl_mechanism"] = reader.choice("sasl_mechanism", SASL_MECHANISMS, None)
    values.update({key: reader.path_or_uri(key, local_only=True) for key in ssl_keys[:3]})
    values["ssl_key_password"] = reader.string("ssl_key_password")
    security = SecurityConfig(
        protocol=protocol,
        ssl_endpoint_identification=reader.boolean("ssl_endpoint_identification", True),
        **values,
    )

    def refuse_unused(keys: tuple[str, ...], used_when: str) -> None:
        for key in keys:
            if values[key] is not None:
                raise ConfigError(f"{reader.path(key)}: only used when {used_when}")

    mechanism = security.sasl_mechanism
    if not security.uses_sasl:
        refuse_unused(sasl_keys + oauth_keys + (oauth_ca_key,),
                      f"protocol is SASL_PLAINTEXT or SASL_SSL (it is {protocol})")
    elif mechanism is None:
        raise ConfigError(f"{reader.path('sasl_mechanism')}: required when protocol is {protocol} "
                          f"(one of {', '.join(SASL_MECHANISMS)})")
    elif mechanism == "OAUTHBEARER":
        refuse_unused(sasl_keys[1:], "sasl_mechanism is PLAIN or SCRAM-SHA-*")
        url = security.sasl_oauthbearer_token_endpoint_url
        if url is None:  # librdkafka's unsecured JWTs: no broker that validates tokens takes them
            raise ConfigError(f"{reader.path('sasl_mechanism')}: OAUTHBEARER needs "
                              "sasl_oauthbearer_token_endpoint_url: kpulse supports OIDC client credentials only")
        _url(reader.path(oauth_keys[0]), url)
        reader.require_set(values, oauth_keys[1:3], "sasl_mechanism is OAUTHBEARER")
        reader.require_exists(oauth_ca_key, values[oauth_ca_key])
    else:
        refuse_unused(oauth_keys + (oauth_ca_key,), "sasl_mechanism is OAUTHBEARER")
        reader.require_set(values, sasl_keys[1:], f"sasl_mechanism is {mechanism}")
    if not security.uses_ssl:
        refuse_unused(ssl_keys, f"protocol is SSL or SASL_SSL (it is {protocol})")
    if (security.ssl_certificate_location is None) != (security.ssl_key_location is None):
        missing = "ssl_key_location" if security.ssl_key_location is None else "ssl_certificate_location"
        raise ConfigError(f"{reader.path(missing)}: ssl_certificate_location and ssl_key_location "
                          "go together (mutual TLS)")
    if security.ssl_key_password is not None and security.ssl_key_location is None:
        raise ConfigError(f"{reader.path('ssl_key_password')}: only used with ssl_key_location")
    for key in ssl_keys[:3]:
        reader.require_exists(key, values[key])
    return security


def _metrics(reader: _Section) -> MetricsConfig:
    reader.declare("source", "broker_endpoints", "prometheus_url", "prometheus_selector",
                   "prometheus_rate_window_seconds", "timeout_seconds")
    source = reader.choice("source", METRICS_SOURCES, "none")
    endpoints = reader.mapping("broker_endpoints")
    broker_endpoints: dict[int, str] = {}
    for key, value in endpoints.items():
        key_path = child_path(reader.path("broker_endpoints"), key)
        broker_id = key if isinstance(key, int) and not isinstance(key, bool) else None
        if broker_id is None and isinstance(key, str) and key.isascii() and key.isdigit():
            broker_id = int(key)
        if broker_id is None or broker_id < 0:
            raise ConfigError(f"{key_path}: broker id must be a non-negative integer, got {key!r}")
        broker_endpoints[broker_id] = _url(key_path, reader.substituted(key_path, value, str))
    if source == "jmx_exporter" and not broker_endpoints:
        raise ConfigError(f"{reader.path('broker_endpoints')}: required when source is jmx_exporter "
                          "(broker id -> JMX exporter URL)")
    prometheus_url = reader.string("prometheus_url")
    if prometheus_url is not None:
        _url(reader.path("prometheus_url"), prometheus_url)
    elif source == "prometheus":
        raise ConfigError(f"{reader.path('prometheus_url')}: required when source is prometheus")
    selector = reader.string("prometheus_selector", "")
    if not _valid_matchers(selector):
        raise ConfigError(f"{reader.path('prometheus_selector')}: {selector!r} is not a list of label "
                          "matchers without braces, e.g. 'cluster=\"prod\",env=~\"eu-.*\"'")
    window = reader.seconds("prometheus_rate_window_seconds", 120.0)
    if window != int(window):  # a PromQL range is whole seconds here ("90s")
        raise ConfigError(f"{reader.path('prometheus_rate_window_seconds')}: must be a whole number of seconds, "
                          f"got {window:g}")
    return MetricsConfig(
        source=source,
        broker_endpoints=MappingProxyType(broker_endpoints),
        prometheus_url=prometheus_url.rstrip("/") if prometheus_url else None,
        prometheus_selector=selector.strip(),
        prometheus_rate_window_seconds=int(window),
        timeout_seconds=reader.seconds("timeout_seconds", 5.0),
    )


def _streams_app(reader: _Section) -> StreamsAppConfig:
    reader.declare("application_id", "metrics_endpoints", "expected_instances")
    application_id = reader.string("application_id", required=True, non_empty=True)
    endpoints = reader.strings("metrics_endpoints", required=True)
    if not endpoints:
        raise ConfigError(f"{reader.path('metrics_endpoints')}: at least one endpoint is required")
    for index, url in enumerate(endpoints):
        _url(child_path(reader.path("metrics_endpoints"), index), url)
    return StreamsAppConfig(
        application_id=application_id,
        metrics_endpoints=endpoints,
        expected_instances=reader.integer("expected_instances", len(endpoints), minimum=1),
    )


def _consumer_groups(reader: _Section) -> ConsumerGroupsConfig:
    reader.declare("include", "exclude", "lag_seconds_threshold", "overrides", "expected_idle")
    patterns = {key: reader.strings(key, default=default)
                for key, default in (("include", (".*",)), ("exclude", ()), ("expected_idle", ()))}
    for key, values in patterns.items():
        for index, pattern in enumerate(values):
            try:
                re.compile(pattern)
            except re.error as error:
                raise ConfigError(f"{child_path(reader.path(key), index)}: "
                                  f"invalid regex {pattern!r}: {error}") from None
    overrides: dict[str, GroupOverride] = {}
    for group_id, value in reader.mapping("overrides").items():
        override_path = child_path(reader.path("overrides"), group_id)
        if not isinstance(group_id, str):
            raise ConfigError(f"{override_path}: group id must be a string, got {group_id!r}")
        override = _Section(value, override_path, reader.environ, reader.base_dir,
                            ("lag_seconds_threshold",))
        overrides[group_id] = GroupOverride(override.seconds("lag_seconds_threshold", None))
    return ConsumerGroupsConfig(
        include=patterns["include"],
        exclude=patterns["exclude"],
        expected_idle=patterns["expected_idle"],
        lag_seconds_threshold=reader.seconds("lag_seconds_threshold", DEFAULT_LAG_SECONDS_THRESHOLD),
        overrides=MappingProxyType(overrides),
    )


class _Section:
    """One YAML mapping being read, at ``path``; typed getters that report errors by key path."""

    def __init__(self, data: Any, path: str, environ: Mapping[str, str], base_dir: Path,
                 keys: tuple[str, ...] | None = None) -> None:
        if data is None:
            data = {}
        if not isinstance(data, Mapping):
            raise ConfigError(f"{path or 'config'}: expected a mapping, got {_describe(data)}")
        self.data, self.environ, self.base_dir, self._path = data, environ, base_dir, path
        if keys is not None:
            self.declare(*keys)

    def declare(self, *keys: str) -> None:
        """Refuse every key but ``keys``, suggesting the closest known one."""
        for key in self.data:
            if key not in keys:
                close = difflib.get_close_matches(str(key), keys, n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else f" (known: {', '.join(keys)})"
                raise ConfigError(f"{self.path(key)}: unknown key{hint}")

    def path(self, key: object) -> str:
        return child_path(self._path, key)

    def section(self, key: str, keys: tuple[str, ...] | None = None) -> _Section:
        return _Section(self.data.get(key), self.path(key), self.environ, self.base_dir, keys)

    def sections(self, key: str, *, required: bool = False) -> list[_Section]:
        items = self._list(key, required)
        return [_Section(item, child_path(self.path(key), i), self.environ, self.base_dir)
                for i, item in enumerate(items)]

    def mapping(self, key: str) -> Mapping[Any, Any]:
        return self.section(key).data

    def strings(self, key: str, *, required: bool = False,
                default: tuple[str, ...] = ()) -> tuple[str, ...]:
        if self.data.get(key) is None and not required:
            return default
        return tuple(self.substituted(child_path(self.path(key), i), item, str)
                     for i, item in enumerate(self._list(key, required)))

    def string(self, key: str, default: str | None = None, *, required: bool = False,
               non_empty: bool = False) -> Any:
        value = self._get(key, str, default, required)
        if non_empty and value is not None and not value.strip():
            raise ConfigError(f"{self.path(key)}: must not be empty")
        return value

    @overload
    def choice(self, key: str, choices: tuple[_Choice, ...], default: _Choice) -> _Choice: ...

    @overload
    def choice(self, key: str, choices: tuple[_Choice, ...], default: None) -> _Choice | None: ...

    def choice(self, key: str, choices: tuple[_Choice, ...], default: _Choice | None) -> _Choice | None:
        value = self._get(key, str, default, False)
        if value is None:
            return None
        by_case = {c.casefold(): c for c in choices}
        if value.casefold() not in by_case:
            raise ConfigError(f"{self.path(key)}: {value!r} is not one of {', '.join(choices)}")
        return by_case[value.casefold()]

    def boolean(self, key: str, default: bool) -> bool:
        value: bool = self._get(key, bool, default, False)
        return value

    def integer(self, key: str, default: int, *, minimum: int | None = None,
                maximum: int | None = None) -> int:
        value: int = self._get(key, int, default, False)
        if minimum is not None and value < minimum or maximum is not None and value > maximum:
            bounds = f">= {minimum}" if maximum is None else f"between {minimum} and {maximum}"
            raise ConfigError(f"{self.path(key)}: must be {bounds}, got {value}")
        return value

    def seconds(self, key: str, default: float | None) -> Any:
        value = self._get(key, float, default, False)
        if value is not None and not value > 0:
            raise ConfigError(f"{self.path(key)}: must be a number of seconds > 0, got {value}")
        return None if value is None else float(value)

    def path_or_uri(self, key: str, *, local_only: bool = False) -> str | None:
        """A path resolved against the config file's directory; URIs (``s3a://``) unchanged."""
        value: str | None = self.string(key, non_empty=True)
        if value is None or value == "probe" and key == "ssl_ca_location":
            return value
        if _URI_SCHEME.match(value):
            if local_only:
                raise ConfigError(f"{self.path(key)}: must be a local file path, got {value!r}")
            return value
        return str((self.base_dir / Path(value).expanduser()).resolve())

    def require_exists(self, key: str, path: str | None) -> None:
        """Refuse a CA, certificate or key ``path`` that does not exist (the client would fail
        later, less clearly); ``ssl_ca_location: probe`` is librdkafka's, not a file."""
        if path is not None and not (path == "probe" and key == "ssl_ca_location") and not Path(path).exists():
            raise ConfigError(f"{self.path(key)}: no such file {path}")

    def require_set(self, values: Mapping[str, Any], keys: tuple[str, ...], condition: str) -> None:
        for key in keys:
            if values[key] is None:
                raise ConfigError(f"{self.path(key)}: required when {condition}")

    def substituted(self, key_path: str, value: Any, kind: type) -> Any:
        """``value`` after ``${VAR}`` substitution, checked to be a ``kind``. A number or boolean
        may come from a variable (``port: ${PORT:-8501}``): the result is read as a YAML scalar."""
        if isinstance(value, str) and envsubst.has_reference(value):
            value = envsubst.substitute(value, key_path, self.environ)
            if kind is not str:
                value = _yaml_scalar(value)
        elif isinstance(value, str):
            value = envsubst.substitute(value, key_path, self.environ)
        accepted = (int, float) if kind is float else kind
        if not isinstance(value, accepted) or kind is not bool and isinstance(value, bool):
            raise ConfigError(f"{key_path}: expected {_KIND_NAMES[kind]}, got {_describe(value)}")
        return value

    def _get(self, key: str, kind: type, default: Any, required: bool) -> Any:
        value = self.data.get(key)
        if value is None:
            if required:
                raise ConfigError(f"{self.path(key)}: required")
            return default
        return self.substituted(self.path(key), value, kind)

    def _list(self, key: str, required: bool) -> list[Any]:
        value = self.data.get(key)
        if value is None and required:
            raise ConfigError(f"{self.path(key)}: required")
        if value is not None and not isinstance(value, list):
            raise ConfigError(f"{self.path(key)}: expected a list, got {_describe(value)}")
        return value or []


_KIND_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false"}


def _describe(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"{type(value).__name__} {value!r}"


def _yaml_scalar(text: str) -> Any:
    try:
        return yaml.safe_load(text) if text.strip() else None
    except yaml.YAMLError:
        return text


def _valid_matchers(selector: str) -> bool:
    position = 0
    while position < len(selector.rstrip()):
        match = _LABEL_MATCHERS.match(selector, position)
        if match is None:
            return False
        position = match.end()
    return True


def _url(key_path: str, url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"{key_path}: {url!r} is not an http(s) URL")
    return url


def _refuse_duplicates(values: list[str], list_path: str, key: str, what: str) -> None:
    first_index: dict[str, int] = {}
    for index, value in enumerate(values):
        if value in first_index:
            raise ConfigError(f"{list_path}[{index}]{'.' + key if key else ''}: duplicate {what} {value!r} "
                              f"(also {list_path}[{first_index[value]}])")
        first_index[value] = index
