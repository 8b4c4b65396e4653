"""The typed, immutable configuration: what kpulse monitors and how.

Every value here has been validated by :func:`kpulse.config.parse_config`; consumers never
re-check types or ranges. Mappings are read-only (``MappingProxyType``); secrets are left out of
``repr()`` so a logged config does not leak them.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import re
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, get_args
from urllib.parse import urlsplit, urlunsplit

from kpulse.config.errors import ConfigError
from kpulse.lag_contract import DEFAULT_LAG_SECONDS_THRESHOLD

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
SSL_PROTOCOLS = ("SSL", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
MetricsSourceName = Literal["jmx_exporter", "prometheus", "none"]
"""Where broker metrics come from (``metrics.source``)."""
METRICS_SOURCES: tuple[MetricsSourceName, ...] = get_args(MetricsSourceName)
EXPORTER_GRANULARITIES = ("partition", "group")
"""``exporter.granularity``: ``group`` leaves out the groups' per-partition series (as kminion's)."""
EXPORTER_COMPATIBILITIES = ("kafka_exporter", "kafka_lag_exporter")
"""``exporter.compatibility``: the peers whose series the exporter also serves, under their names."""
REDACTED = "***"


def _empty_mapping() -> Mapping[Any, Any]:
    return MappingProxyType({})


@dataclass(frozen=True)
class SecurityConfig:
    """How kpulse authenticates to the brokers and encrypts the connection."""

    protocol: str = "PLAINTEXT"
    """One of :data:`PROTOCOLS`."""
    sasl_mechanism: str | None = None
    """One of :data:`SASL_MECHANISMS`; set exactly when ``protocol`` is ``SASL_*``."""
    sasl_username: str | None = None
    """SASL user (PLAIN, SCRAM-*)."""
    sasl_password: str | None = field(default=None, repr=False)
    """SASL password (PLAIN, SCRAM-*); usually ``${ENV_VAR}`` in the file."""
    sasl_oauthbearer_token_endpoint_url: str | None = None
    """OAUTHBEARER: the identity provider's token endpoint (http or https), where every client
    stack gets its tokens by OIDC client credentials; required with OAUTHBEARER."""
    sasl_oauthbearer_client_id: str | None = None
    """OAUTHBEARER with OIDC: the client id."""
    sasl_oauthbearer_client_secret: str | None = field(default=None, repr=False)
    """OAUTHBEARER with OIDC: the client secret."""
    sasl_oauthbearer_scope: str | None = None
    """OAUTHBEARER with OIDC: the requested scope, if the identity provider needs one."""
    sasl_oauthbearer_ca_location: str | None = None
    """OAUTHBEARER: CA bundle (PEM, absolute path) that verifies an https token endpoint; unset =
    this machine's trust store (librdkafka and kpulse's own requests; the JVM's for the Java tools)."""
    ssl_ca_location: str | None = None
    """CA bundle (absolute path, or librdkafka's ``probe``); unset = system default."""
    ssl_certificate_location: str | None = None
    """Client certificate (mutual TLS), absolute path; set together with ``ssl_key_location``."""
    ssl_key_location: str | None = None
    """Client private key (mutual TLS), absolute path."""
    ssl_key_password: str | None = field(default=None, repr=False)
    """Password of the client private key."""
    ssl_endpoint_identification: bool = True
    """Check that the broker certificate matches its host name."""

    @property
    def uses_sasl(self) -> bool:
        return self.protocol in SASL_PROTOCOLS

    @property
    def uses_ssl(self) -> bool:
        return self.protocol in SSL_PROTOCOLS

    def token_endpoint_ca_location(self) -> str | None:
        """What verifies an https token endpoint: ``sasl_oauthbearer_ca_location``, else OpenSSL's
        default CA file (or directory) on this machine; None for an http endpoint or none found.
        Said explicitly because librdkafka's wheels look for a CA file where Red Hat keeps it."""
        url = self.sasl_oauthbearer_token_endpoint_url or ""
        if not url.lower().startswith("https:"):
            return None
        if self.sasl_oauthbearer_ca_location:
            return self.sasl_oauthbearer_ca_location
        paths = ssl.get_default_verify_paths()
        return paths.cafile or paths.capath


@dataclass(frozen=True)
class MetricsConfig:
    """Where broker metrics (JMX) come from; Kafka's own protocol gives offsets and metadata."""

    source: MetricsSourceName = "none"
    """``none`` = only what the Kafka protocol tells."""
    broker_endpoints: Mapping[int, str] = field(default_factory=_empty_mapping, hash=False)
    """Broker id -> Prometheus JMX exporter URL (``source == "jmx_exporter"``)."""
    prometheus_url: str | None = None
    """Base URL of a Prometheus server (``source == "prometheus"``), e.g. ``http://prom:9090``."""
    prometheus_selector: str = ""
    """Label matchers added to every PromQL query, without braces, e.g. ``cluster="prod"``."""
    prometheus_rate_window_seconds: int = 120
    """Range of ``rate()`` in the PromQL asked (``source == "prometheus"``): whole seconds, at least
    two scrape intervals of the brokers' job (120 s suits intervals up to 1 min)."""
    timeout_seconds: float = 5.0
    """Timeout of one scrape or query."""


@dataclass(frozen=True)
class ProbeConfig:
    """The end-to-end probe: a topic with a partition led by every broker, written and read back
    every cycle (produce and consume availability, end-to-end latency, lost and duplicated)."""

    enabled: bool = True
    """Off for clusters where kpulse may not create a topic."""
    topic: str = "kpulse-probe"
    """Created by kpulse when missing (replication factor min(3, brokers), 1 h retention)."""


DEFAULT_VOTER_LAG_RECORDS = 1000
DEFAULT_VOTER_LAG_SECONDS = 30.0


@dataclass(frozen=True)
class KraftConfig:
    """Thresholds of the KRaft quorum alert (``VoterLagging``; docs/monitoring.md and the rule's
    runbook say why these defaults)."""

    voter_lag_records: int = DEFAULT_VOTER_LAG_RECORDS
    """A voter whose log end is more than this many records behind the leader's is lagging. A healthy
    follower is a few records behind at most; the leader appends a no-op record every 500 ms, so an
    idle cluster needs ~8 minutes to put a stopped voter this far behind, a busy one much less."""
    voter_lag_seconds: float = DEFAULT_VOTER_LAG_SECONDS
    """A voter that has not caught up with the leader's log end for longer than this is lagging:
    well above the 2 s ``controller.quorum.fetch.timeout.ms`` after which a follower starts an
    election, and the broker session timeout (9 s), so a restart's blip does not count."""


@dataclass(frozen=True)
class StreamsAppConfig:
    """One Kafka Streams application to monitor."""

    application_id: str
    """``application.id`` of the app (also its consumer group id)."""
    metrics_endpoints: tuple[str, ...]
    """Prometheus metrics URL of each instance (JMX exporter or Micrometer)."""
    expected_instances: int
    """Instances that should be running; fewer is an alert. Defaults to the endpoint count."""


@dataclass(frozen=True)
class GroupOverride:
    """Settings of one consumer group that differ from the cluster's defaults."""

    lag_seconds_threshold: float | None = None
    """Freshness threshold for this group; ``None`` = the cluster's default."""


@dataclass(frozen=True)
class ConsumerGroupsConfig:
    """Which consumer groups are monitored, and when their lag is an alert."""

    include: tuple[str, ...] = (".*",)
    """Regexes; a group is monitored when its whole id matches one of them (``.`` matches a newline
    too: the default ``.*`` leaves no group out)..."""
    exclude: tuple[str, ...] = ()
    """...and matches none of these."""
    lag_seconds_threshold: float = DEFAULT_LAG_SECONDS_THRESHOLD
    """A group whose time lag exceeds this many seconds is alerting."""
    overrides: Mapping[str, GroupOverride] = field(default_factory=_empty_mapping, hash=False)
    """Exact group id -> its own settings."""
    expected_idle: tuple[str, ...] = ()
    """Groups expected to be idle (retired, run by hand, nightly): an exact group id or a regex
    matched against the whole id. They are monitored and shown, labelled "expected idle", but fire
    no group alert (``alerting/rules.py``). The Consumer groups page marks more (``kpulse/expected_idle.py``)."""

    def monitors(self, group_id: str) -> bool:
        """Whether ``group_id`` is monitored (the answers cached: asked for every group every cycle)."""
        return _monitored(self.include, self.exclude, group_id)

    def expected_idle_by_config(self, group_id: str) -> bool:
        """Whether ``expected_idle`` names ``group_id`` (exactly, or a regex matching its whole id)."""
        if not self.expected_idle:
            return False
        exact, pattern = _idle_matcher(self.expected_idle)
        return group_id in exact or pattern.fullmatch(group_id) is not None

    def lag_seconds_threshold_for(self, group_id: str) -> float:
        override = self.overrides.get(group_id)
        if override is not None and override.lag_seconds_threshold is not None:
            return override.lag_seconds_threshold
        return self.lag_seconds_threshold


@functools.lru_cache(maxsize=1 << 17)
def _monitored(include: tuple[str, ...], exclude: tuple[str, ...], group_id: str) -> bool:
    """:meth:`ConsumerGroupsConfig.monitors` (``re`` caches the compiled patterns)."""
    return any(re.fullmatch(p, group_id, re.DOTALL) for p in include) and not any(
        re.fullmatch(p, group_id, re.DOTALL) for p in exclude)


@functools.lru_cache(maxsize=64)
def _idle_matcher(entries: tuple[str, ...]) -> tuple[frozenset[str], re.Pattern[str]]:
    """The ids and one regex of every entry: called for each of 10,000 groups every cycle, one
    compiled alternation is ten times cheaper than ``re.fullmatch`` per entry."""
    def is_regex(entry: str) -> bool:  # the config refuses others; a model built in code may hold an id
        try:
            re.compile(entry)
        except re.error:
            return False
        return True

    regexes = [entry for entry in entries if is_regex(entry)] or ["(?!)"]
    return frozenset(entries), re.compile("|".join(f"(?:{entry})" for entry in regexes), re.DOTALL)


DEFAULT_RECORDS_MAX_RECORDS = 20
DEFAULT_RECORDS_MAX_BYTES = 1 << 20
DEFAULT_RECORDS_TIMEOUT_SECONDS = 5.0


@dataclass(frozen=True)
class RecordsMaskConfig:
    """What is masked in every key, value and header value shown, revealed or not
    (:mod:`kpulse.records.display`)."""

    fields: tuple[str, ...] = ()
    """JSON field names (matched case-insensitively, at any depth) whose values are shown as ``***``;
    a header of one of these names has its value masked too."""
    patterns: tuple[str, ...] = ()
    """Regexes; every match in the text shown (and every matching run of bytes in a hex view) is
    replaced by ``***``."""


@dataclass(frozen=True)
class RecordsConfig:
    """Reading records of a partition (``kpulse records``, the dashboard's records view): who may see
    keys and values, what is masked, and how much one read may take."""

    visible_topics: tuple[str, ...] = ()
    """Regexes matched against the whole topic name: operators may reveal the keys, values and header
    values of these topics; of any other topic nobody sees them. Default: none."""
    mask: RecordsMaskConfig = RecordsMaskConfig()
    max_records: int = DEFAULT_RECORDS_MAX_RECORDS
    """At most this many records per read (the largest count a user may ask for)."""
    max_bytes: int = DEFAULT_RECORDS_MAX_BYTES
    """At most this many bytes fetched per read (the Fetch request's ``max_bytes``; Kafka still
    returns a first batch larger than this whole, so a huge record can be seen)."""
    timeout_seconds: float = DEFAULT_RECORDS_TIMEOUT_SECONDS
    """At most this long per read, all requests included."""

    def topic_visible(self, topic: str) -> bool:
        """Whether :attr:`visible_topics` lets operators reveal the contents of ``topic``."""
        return any(re.fullmatch(pattern, topic, re.DOTALL) for pattern in self.visible_topics)


@dataclass(frozen=True)
class ClusterConfig:
    """One Kafka cluster to monitor."""

    name: str
    """Unique name, ``[A-Za-z0-9_.-]+``; what the UI, the CLI and the lake call the cluster."""
    bootstrap_servers: str
    """Comma-separated ``host:port`` list."""
    read_only: bool = False
    """When true, kpulse refuses every operation that changes this cluster."""
    require_approval: bool = False
    """When true, offset resets, Streams resets and reassignments are requests that a second
    operator approves (two-person rule) before they run."""
    security: SecurityConfig = SecurityConfig()
    metrics: MetricsConfig = MetricsConfig()
    streams_apps: tuple[StreamsAppConfig, ...] = ()
    consumer_groups: ConsumerGroupsConfig = ConsumerGroupsConfig()
    probe: ProbeConfig = ProbeConfig()
    kraft: KraftConfig = KraftConfig()
    records: RecordsConfig = RecordsConfig()

    def client_config(self) -> dict[str, str]:
        """librdkafka (confluent-kafka) client settings; only the ones that are set."""
        sec = self.security
        settings = {"bootstrap.servers": self.bootstrap_servers, "security.protocol": sec.protocol}
        if sec.uses_sasl:
            settings["sasl.mechanism"] = sec.sasl_mechanism or ""
            if sec.sasl_mechanism == "OAUTHBEARER":
                settings["sasl.oauthbearer.method"] = "oidc"
                token_endpoint_ca = sec.token_endpoint_ca_location()
                if token_endpoint_ca:
                    settings["https.ca.location"] = token_endpoint_ca
            optional = {
                "sasl.username": sec.sasl_username,
                "sasl.password": sec.sasl_password,
                "sasl.oauthbearer.token.endpoint.url": sec.sasl_oauthbearer_token_endpoint_url,
                "sasl.oauthbearer.client.id": sec.sasl_oauthbearer_client_id,
                "sasl.oauthbearer.client.secret": sec.sasl_oauthbearer_client_secret,
                "sasl.oauthbearer.scope": sec.sasl_oauthbearer_scope,
            }
            settings.update({k: v for k, v in optional.items() if v is not None})
        if sec.uses_ssl:
            optional = {
                "ssl.ca.location": sec.ssl_ca_location,
                "ssl.certificate.location": sec.ssl_certificate_location,
                "ssl.key.location": sec.ssl_key_location,
                "ssl.key.password": sec.ssl_key_password,
            }
            settings.update({k: v for k, v in optional.items() if v is not None})
            settings["ssl.endpoint.identification.algorithm"] = (
                "https" if sec.ssl_endpoint_identification else "none"
            )
        return settings

    def redacted(self) -> dict[str, Any]:
        """This cluster as plain data (safe for YAML/JSON) with every secret replaced by ``***``:
        passwords, the OAuth client secret and passwords inside URLs."""
        plain: dict[str, Any] = to_plain(self)  # a dataclass: a dict
        for key in ("sasl_password", "sasl_oauthbearer_client_secret", "ssl_key_password"):
            if plain["security"][key] is not None:
                plain["security"][key] = REDACTED
        metrics = plain["metrics"]
        metrics["broker_endpoints"] = {
            broker: _redact_url(url) for broker, url in metrics["broker_endpoints"].items()
        }
        if metrics["prometheus_url"] is not None:
            metrics["prometheus_url"] = _redact_url(metrics["prometheus_url"])
        for app in plain["streams_apps"]:
            app["metrics_endpoints"] = [_redact_url(url) for url in app["metrics_endpoints"]]
        return plain

    def streams_app(self, application_id: str) -> StreamsAppConfig | None:
        return next((a for a in self.streams_apps if a.application_id == application_id), None)


@dataclass(frozen=True)
class KafkaSinkConfig:
    """Also publish every lake row to Kafka topics (``exporters/kafka_sink.py``)."""

    cluster: str
    """The configured cluster that receives the records."""
    topic_prefix: str = "kpulse."
    """Table ``consumer_lag`` goes to topic ``<topic_prefix>consumer_lag``."""
    message_timeout_seconds: float = 300.0
    """How long a record is retried before it is counted as dropped (and a gap recorded)."""


@dataclass(frozen=True)
class RetentionConfig:
    """How long the lake keeps each table's ``date=`` partitions, and how ``consumer_lag`` is
    downsampled before its raw rows expire (``kpulse lake compact``, docs/lake.md). Days count
    whole UTC days before today's; ``None`` = forever."""

    per_partition_days: int | None = 7
    """``consumer_lag`` and ``share_partition`` (one row per group partition and cycle)."""
    days: int | None = 90
    """Every other table (group-level, health, alerts, SLOs, ``consumer_lag_downsampled``)."""
    downsample_minutes: int = 5
    """Bucket of ``consumer_lag_downsampled`` (last values and largest lag per partition); 0 = off."""
    tables: Mapping[str, int | None] = field(default_factory=lambda: MappingProxyType({"audit": None}))
    """Table -> days, overriding the two above; ``audit`` is kept forever unless named here."""
    daily_at: str = "00:30"
    """UTC time of day (``HH:MM``) at which the ``kpulse up`` service compacts the closed days."""


@dataclass(frozen=True)
class S3CredentialsConfig:
    """``lake.s3``: the AWS identity kpulse uses for an ``s3://`` lake, instead of the one in its
    environment (the endpoint, region and addressing stay in ``lake.path``'s query). The secrets
    are usually ``${ENV_VAR}`` references in the file; they are left out of ``repr`` and never printed."""

    access_key_id: str
    """``AWS_ACCESS_KEY_ID``'s value."""
    secret_access_key: str = field(repr=False)
    """``AWS_SECRET_ACCESS_KEY``'s value."""
    session_token: str | None = field(default=None, repr=False)
    """``AWS_SESSION_TOKEN``'s value, for temporary credentials."""

    def environment(self) -> dict[str, str]:
        """These credentials as the AWS environment variables the AWS SDK reads."""
        variables = {"AWS_ACCESS_KEY_ID": self.access_key_id, "AWS_SECRET_ACCESS_KEY": self.secret_access_key}
        if self.session_token is not None:
            variables["AWS_SESSION_TOKEN"] = self.session_token
        return variables


@dataclass(frozen=True)
class LakeConfig:
    """Where collected samples and Spark aggregates are stored."""

    path: str
    """Absolute local directory, or a URI pyarrow/Spark can write (``s3a://...``, ``file:///...``)."""
    kafka_sink: KafkaSinkConfig | None = None
    """Optional second sink; ``None`` = off."""
    retention: RetentionConfig = field(default_factory=RetentionConfig)
    """Retention, downsampling and the daily compaction."""
    s3: S3CredentialsConfig | None = None
    """The identity of an ``s3://`` lake; ``None``: the AWS environment's (variables, profile, role)."""

    def credential_environment(self) -> dict[str, str]:
        """``lake.s3`` as AWS environment variables ({} without it): what each entry point hands
        ``kpulse.lake.store.use_credentials`` after reading the configuration."""
        return {} if self.s3 is None else self.s3.environment()

    @property
    def local_path(self) -> Path | None:
        """The directory when the lake is on the local file system, else ``None``."""
        if self.path.startswith("file://"):
            return Path(urlsplit(self.path).path)
        return None if "://" in self.path else Path(self.path)


@dataclass(frozen=True)
class IntervalsConfig:
    collect_seconds: float = 10.0
    """How often ``kpulse collect`` samples every cluster."""
    slo_seconds: float = 60.0
    """How often SLOs (freshness, availability budgets) are evaluated from the lake."""


@dataclass(frozen=True)
class ExporterConfig:
    """The Prometheus endpoint served by ``kpulse collect``."""

    port: int = 9308
    """TCP port; 0 disables the exporter."""
    host: str = "127.0.0.1"
    """Address to bind; loopback unless the config says otherwise (as the dashboard's): set
    ``0.0.0.0`` for a Prometheus on another machine or outside the container."""
    granularity: str = "partition"
    """One of :data:`EXPORTER_GRANULARITIES`: ``partition`` exports a series per group partition
    (lag, committed offset, time lag), ``group`` only the group-level ones (``exporters/prometheus.py``)."""
    compatibility: tuple[str, ...] = ("kafka_exporter",)
    """Some of :data:`EXPORTER_COMPATIBILITIES`: the peers whose series are served besides kpulse's own,
    with their names and labels (kafka_exporter's by default; kafka-lag-exporter's on request)."""

    @property
    def enabled(self) -> bool:
        return self.port != 0


@dataclass(frozen=True)
class DashboardConfig:
    """The Streamlit dashboard."""

    port: int = 8501
    host: str = "127.0.0.1"
    """Address to bind; ``0.0.0.0`` to accept connections from other machines."""
    users_file: Path | None = None
    """Local users file (salted password hashes), absolute; ``None`` = the default location."""
    url: str | None = None
    """The address users open the dashboard at (behind a proxy, another host name), as Prometheus's
    ``--web.external-url``: the base of the links in the alerts kpulse sends (``alerting/alertmanager.py``).
    ``None`` = ``http://<host>:<port>`` (``localhost`` when bound to every address)."""

    @property
    def external_url(self) -> str:
        """:attr:`url` without a trailing ``/``, or the default address (see :attr:`url`)."""
        if self.url:
            return self.url.rstrip("/")
        host = "localhost" if self.host in ("0.0.0.0", "::", "") else self.host
        return f"http://{'[' + host + ']' if ':' in host else host}:{self.port}"


@dataclass(frozen=True)
class AlertmanagerConfig:
    """Where and how kpulse delivers its alerts to Alertmanager (API v2), as Prometheus does
    (``alerting/delivery.py``). No URL = no delivery."""

    urls: tuple[str, ...] = ()
    """Base URL of each Alertmanager (``http://am:9093``); every alert goes to each of them, as
    Prometheus sends to every Alertmanager of an HA pair. Silences made on the Alerts page go to the
    first that accepts (an HA cluster shares them). Empty = delivery off."""
    timeout_seconds: float = 10.0
    """Timeout of one HTTP request (Prometheus's ``alertmanager_config.timeout`` default)."""
    resend_interval_seconds: float = 60.0
    """Firing alerts are sent again this often (Prometheus's ``--rules.alert.resend-delay``); an
    Alertmanager that failed is tried again after this long."""
    retries: int = 3
    """Retries of a failed request (a connection error, a timeout or a 5xx answer), with exponential
    backoff; a 4xx answer is not retried."""

    @property
    def enabled(self) -> bool:
        return bool(self.urls)


@dataclass(frozen=True)
class AlertingConfig:
    """What kpulse does with its alerts besides showing them."""

    alertmanager: AlertmanagerConfig = AlertmanagerConfig()


@dataclass(frozen=True)
class KpulseConfig:
    """The whole configuration."""

    clusters: tuple[ClusterConfig, ...]
    """At least one; names are unique."""
    lake: LakeConfig
    intervals: IntervalsConfig
    exporter: ExporterConfig
    dashboard: DashboardConfig
    source: str
    """Where this came from: a file path, or ``"built-in local cluster default"``."""
    alerting: AlertingConfig = AlertingConfig()
    """Alert delivery (Alertmanager); default: none."""

    @property
    def cluster_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.clusters)

    def cluster(self, name: str | None = None) -> ClusterConfig:
        """The cluster called ``name``; the first one when ``name`` is ``None``."""
        if name is None:
            return self.clusters[0]
        for cluster in self.clusters:
            if cluster.name == name:
                return cluster
        close = difflib.get_close_matches(name, self.cluster_names, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        known = ", ".join(self.cluster_names)
        raise ConfigError(f"unknown cluster '{name}' (known: {known}{hint})", source=self.source)


def to_plain(value: Any) -> Any:
    """Dataclasses, mappings, tuples and paths as dicts, lists and strings."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {key: to_plain(item) for key, item in value.items()}
    if isinstance(value, (tuple, list)):
        return [to_plain(item) for item in value]
    if isinstance(value, Path):
        return str(value)
    return value


def redact_url(url: str) -> str:
    """``url`` with the password of its user part, if any, replaced by ``***``."""
    return _redact_url(url)


def _redact_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username}:{REDACTED}@{host}"))
