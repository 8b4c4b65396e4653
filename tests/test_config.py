"""kpulse configuration: strict YAML, secrets from the environment, typed result. No Kafka needed."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import yaml

from kpulse.config import (
    ClusterConfig, ConfigError, KpulseConfig, default_config, load_config, parse_config,
    reference_config_path,
)
from kpulse.local_layout import ClusterLayout

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

MINIMAL_CLUSTER = {"name": "prod", "bootstrap_servers": "kafka-1:9092,kafka-2:9092"}


def parse(data: dict, environ: dict | None = None, base_dir: Path = Path("/etc/kpulse")) -> KpulseConfig:
    return parse_config(data, source="test", base_dir=base_dir, environ=environ or {})


def parse_cluster(environ: dict | None = None, **settings) -> ClusterConfig:
    return parse({"clusters": [{**MINIMAL_CLUSTER, **settings}]}, environ).cluster()


def config_error(data: dict, environ: dict | None = None) -> str:
    with pytest.raises(ConfigError) as caught:
        parse(data, environ)
    message = str(caught.value)
    assert "\n" not in message
    return message


def write(tmp_path: Path, text: str, name: str = "kpulse.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --- the reference config and the built-in default -------------------------------------------


def test_reference_config_loads_and_has_every_top_level_section():
    config = load_config(reference_config_path(), environ={})

    raw = yaml.safe_load(reference_config_path().read_text())
    assert set(raw) == {"clusters", "lake", "intervals", "exporter", "dashboard", "alerting"}
    assert not config.alerting.alertmanager.enabled
    assert config.source == str(reference_config_path())
    assert config.cluster().name == "local"
    assert config.cluster().consumer_groups.lag_seconds_threshold_for("nightly-batch-loader") == 3600


def test_reference_config_spells_out_every_key_of_the_model():
    raw = yaml.safe_load(reference_config_path().read_text())
    config = load_config(reference_config_path(), environ={})

    def assert_documents(raw_section: dict, model: DataclassInstance, where: str) -> None:
        names = {f.name for f in dataclasses.fields(model)}
        assert set(raw_section) == names, where

    cluster_raw, cluster = raw["clusters"][0], config.cluster()
    assert_documents(cluster_raw, cluster, "clusters[0]")
    for section in ("security", "metrics", "consumer_groups"):
        assert_documents(cluster_raw[section], getattr(cluster, section), section)
    assert_documents(cluster_raw["streams_apps"][0], cluster.streams_apps[0], "streams_apps[0]")
    overrides = cluster_raw["consumer_groups"]["overrides"]
    assert_documents(overrides["nightly-batch-loader"],
                     cluster.consumer_groups.overrides["nightly-batch-loader"], "overrides")
    for section in ("lake", "intervals", "exporter", "dashboard", "alerting"):
        assert_documents(raw[section], getattr(config, section), section)
    assert_documents(raw["alerting"]["alertmanager"], config.alerting.alertmanager, "alerting.alertmanager")


def test_reference_config_describes_the_same_local_cluster_as_the_default():
    reference = load_config(reference_config_path(), environ={}).cluster()
    default = default_config(environ={}).cluster()

    assert dataclasses.replace(reference, consumer_groups=default.consumer_groups) == default


def test_the_local_cluster_lets_operators_reveal_the_demos_records_and_no_other_topics():
    records = default_config(environ={}).cluster().records
    assert records.topic_visible("demo.poison") and records.topic_visible("demo.orders")
    assert not records.topic_visible("orders") and not records.topic_visible("demo") and not records.topic_visible(
        "xdemo.poison")


def test_default_config_points_at_the_local_cluster_layout():
    config = default_config(environ={"KPULSE_PORT_BASE": "29090"})
    layout = ClusterLayout.from_base(29090)

    local = config.cluster()
    assert config.source == "built-in local cluster default"
    assert config.cluster_names == ("local",)
    assert local.bootstrap_servers == layout.bootstrap_servers
    assert local.metrics.source == "jmx_exporter"
    assert dict(local.metrics.broker_endpoints) == {n.node_id: n.metrics_url for n in layout.nodes}
    (streams,) = local.streams_apps
    assert streams.application_id == "kpulse-demo-streams"
    assert streams.expected_instances == 2
    assert streams.metrics_endpoints == ("http://127.0.0.1:29391/metrics",
                                         "http://127.0.0.1:29392/metrics")
    assert local.client_config() == {"bootstrap.servers": layout.bootstrap_servers,
                                     "security.protocol": "PLAINTEXT"}
    assert config.lake.path.endswith("lake")


def test_without_a_path_kpulse_config_names_the_file_else_the_default(tmp_path):
    path = write(tmp_path, "clusters: [{name: staging, bootstrap_servers: 'k:9092'}]\n")

    assert load_config(environ={"KPULSE_CONFIG": str(path)}).cluster_names == ("staging",)
    assert load_config(environ={}).source == "built-in local cluster default"


# --- strictness --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data, expected",
    [
        ({"clusters": [MINIMAL_CLUSTER], "intervalz": {}},
         "intervalz: unknown key (did you mean 'intervals'?)"),
        ({"clusters": [{**MINIMAL_CLUSTER, "bootstrap_server": "x:1"}]},
         "clusters[0].bootstrap_server: unknown key (did you mean 'bootstrap_servers'?)"),
        ({"clusters": [{**MINIMAL_CLUSTER, "security": {"protocol": "SASL_SSL",
                                                         "sasl_mechansim": "PLAIN"}}]},
         "clusters[0].security.sasl_mechansim: unknown key (did you mean 'sasl_mechanism'?)"),
        ({"clusters": [MINIMAL_CLUSTER, {"name": "b", "bootstrap_servers": "b:1",
                                         "streams_apps": [{"application_id": "app",
                                                           "metrics_endpoint": ["http://a/m"]}]}]},
         "clusters[1].streams_apps[0].metrics_endpoint: unknown key "
         "(did you mean 'metrics_endpoints'?)"),
        ({"clusters": [{**MINIMAL_CLUSTER, "consumer_groups": {
            "overrides": {"orders.v2": {"lag_seconds_treshold": 5}}}}]},
         'clusters[0].consumer_groups.overrides["orders.v2"].lag_seconds_treshold: unknown key '
         "(did you mean 'lag_seconds_threshold'?)"),
        ({"clusters": [MINIMAL_CLUSTER], "dashboard": {"colour": "blue"}},
         "dashboard.colour: unknown key (known: port, host, users_file, url)"),
    ],
    ids=["top-level", "cluster", "security", "streams-app", "group-override", "no-close-match"],
)
def test_unknown_key_names_its_path_and_suggests_the_known_one(data, expected):
    assert config_error(data) == expected


def test_bad_protocol_lists_the_allowed_values():
    message = config_error({"clusters": [{**MINIMAL_CLUSTER, "security": {"protocol": "TLS"}}]})

    assert message == ("clusters[0].security.protocol: 'TLS' is not one of "
                       "PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL")


def test_enum_values_are_case_insensitive_and_normalized():
    cluster = parse_cluster(security={"protocol": "sasl_ssl", "sasl_mechanism": "scram-sha-512",
                                      "sasl_username": "u", "sasl_password": "p"},
                            metrics={"source": "NONE"})

    assert (cluster.security.protocol, cluster.security.sasl_mechanism) == ("SASL_SSL", "SCRAM-SHA-512")
    assert cluster.metrics.source == "none"


def test_sasl_protocol_without_mechanism_is_refused():
    message = config_error({"clusters": [{**MINIMAL_CLUSTER, "security": {"protocol": "SASL_SSL"}}]})

    assert message.startswith("clusters[0].security.sasl_mechanism: required when protocol is SASL_SSL")


def test_scram_without_password_is_refused():
    security = {"protocol": "SASL_PLAINTEXT", "sasl_mechanism": "SCRAM-SHA-256", "sasl_username": "u"}

    message = config_error({"clusters": [{**MINIMAL_CLUSTER, "security": security}]})

    assert message == ("clusters[0].security.sasl_password: required when sasl_mechanism is "
                       "SCRAM-SHA-256")


def test_sasl_and_ssl_settings_on_a_plaintext_cluster_are_refused_not_ignored():
    sasl = config_error({"clusters": [{**MINIMAL_CLUSTER, "security": {"sasl_username": "u"}}]})
    ssl = config_error({"clusters": [{**MINIMAL_CLUSTER, "security": {
        "protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN", "sasl_username": "u",
        "sasl_password": "p", "ssl_ca_location": "/ca.pem"}}]})

    assert sasl.startswith("clusters[0].security.sasl_username: only used when protocol is SASL_")
    assert ssl.startswith("clusters[0].security.ssl_ca_location: only used when protocol is SSL")


def test_duplicate_cluster_names_are_refused():
    message = config_error({"clusters": [MINIMAL_CLUSTER, {"name": "other", "bootstrap_servers": "o:1"},
                                         MINIMAL_CLUSTER]})

    assert message == "clusters[2].name: duplicate cluster name 'prod' (also clusters[0])"


def test_duplicate_streams_application_ids_are_refused():
    app = {"application_id": "orders", "metrics_endpoints": ["http://a:1/metrics"]}

    message = config_error({"clusters": [{**MINIMAL_CLUSTER, "streams_apps": [app, app]}]})

    assert message.startswith("clusters[0].streams_apps[1].application_id: duplicate application id")


def test_invalid_consumer_group_regex_names_the_pattern():
    groups = {"include": [".*"], "exclude": ["ok-.*", "(unclosed"]}

    message = config_error({"clusters": [{**MINIMAL_CLUSTER, "consumer_groups": groups}]})

    assert message.startswith("clusters[0].consumer_groups.exclude[1]: invalid regex '(unclosed'")


@pytest.mark.parametrize(
    "data, expected",
    [
        ({"clusters": [MINIMAL_CLUSTER], "intervals": {"collect_seconds": 0}},
         "intervals.collect_seconds: must be a number of seconds > 0, got 0"),
        ({"clusters": [MINIMAL_CLUSTER], "intervals": {"slo_seconds": -5}},
         "intervals.slo_seconds: must be a number of seconds > 0, got -5"),
        ({"clusters": [MINIMAL_CLUSTER], "dashboard": {"port": "8501"}},
         "dashboard.port: expected an integer, got str '8501'"),
        ({"clusters": [MINIMAL_CLUSTER], "exporter": {"port": True}},
         "exporter.port: expected an integer, got bool True"),
        ({"clusters": [MINIMAL_CLUSTER], "exporter": {"port": 70000}},
         "exporter.port: must be between 0 and 65535, got 70000"),
        ({"clusters": [MINIMAL_CLUSTER], "exporter": {"granularity": "topic"}},
         "exporter.granularity: 'topic' is not one of partition, group"),
        ({"clusters": [MINIMAL_CLUSTER], "exporter": {"compatibility": ["kafka_exporter", "burrow"]}},
         "exporter.compatibility[1]: 'burrow' is not one of kafka_exporter, kafka_lag_exporter"),
        ({"clusters": [MINIMAL_CLUSTER], "exporter": {"compatibility": "kafka_lag_exporter"}},
         "exporter.compatibility: expected a list, got str 'kafka_lag_exporter'"),
        ({"clusters": [{**MINIMAL_CLUSTER, "read_only": "yes please"}]},
         "clusters[0].read_only: expected true or false, got str 'yes please'"),
        ({"clusters": [{"name": "prod"}]}, "clusters[0].bootstrap_servers: required"),
        ({"clusters": [{**MINIMAL_CLUSTER, "name": "prod cluster"}]},
         "clusters[0].name: 'prod cluster' may only use letters, digits, '_', '.', '-'"),
        ({"clusters": [{**MINIMAL_CLUSTER, "bootstrap_servers": "kafka-1"}]},
         "clusters[0].bootstrap_servers: 'kafka-1' is not host:port"),
        ({"clusters": []}, "clusters: at least one cluster is required"),
        ({"lake": {"path": "/data"}}, "clusters: required"),
        ({"clusters": [{**MINIMAL_CLUSTER, "metrics": {"source": "jmx_exporter"}}]},
         "clusters[0].metrics.broker_endpoints: required when source is jmx_exporter "
         "(broker id -> JMX exporter URL)"),
        ({"clusters": [{**MINIMAL_CLUSTER, "metrics": {"source": "prometheus"}}]},
         "clusters[0].metrics.prometheus_url: required when source is prometheus"),
        ({"clusters": [{**MINIMAL_CLUSTER, "metrics": {
            "source": "jmx_exporter", "broker_endpoints": {1: "kafka-1:7071"}}}]},
         "clusters[0].metrics.broker_endpoints[1]: 'kafka-1:7071' is not an http(s) URL"),
        ({"clusters": [{**MINIMAL_CLUSTER, "metrics": {"prometheus_selector": '{cluster="prod"}'}}]},
         "clusters[0].metrics.prometheus_selector: '{cluster=\"prod\"}' is not a list of label "
         "matchers without braces, e.g. 'cluster=\"prod\",env=~\"eu-.*\"'"),
        ({"clusters": [{**MINIMAL_CLUSTER, "consumer_groups": {"include": ".*"}}]},
         "clusters[0].consumer_groups.include: expected a list, got str '.*'"),
        ({"clusters": [{**MINIMAL_CLUSTER, "metrics": {"prometheus_rate_window_seconds": 90.5}}]},
         "clusters[0].metrics.prometheus_rate_window_seconds: must be a whole number of seconds, got 90.5"),
        ({"clusters": [{**MINIMAL_CLUSTER, "metrics": {"prometheus_rate_window_seconds": 0}}]},
         "clusters[0].metrics.prometheus_rate_window_seconds: must be a number of seconds > 0, got 0"),
    ],
)
def test_wrong_values_name_their_key_path(data, expected):
    assert config_error(data) == expected


def test_the_prometheus_rate_window_defaults_to_two_minutes_and_takes_whole_seconds():
    assert parse_cluster().metrics.prometheus_rate_window_seconds == 120
    assert parse_cluster(metrics={"prometheus_rate_window_seconds": 60}).metrics.prometheus_rate_window_seconds == 60


# --- secrets from the environment -------------------------------------------------------------


def sasl_cluster(password: str, environ: dict) -> ClusterConfig:
    return parse_cluster(environ, security={"protocol": "SASL_SSL", "sasl_mechanism": "PLAIN",
                                            "sasl_username": "kpulse", "sasl_password": password})


def test_env_variable_is_substituted_after_parsing():
    cluster = sasl_cluster("${KAFKA_PASSWORD}", {"KAFKA_PASSWORD": "s3cret: {not yaml}"})

    assert cluster.security.sasl_password == "s3cret: {not yaml}"


def test_env_default_applies_when_the_variable_is_unset_or_empty():
    def password(value: str, environ: dict) -> str | None:
        return sasl_cluster(value, environ).security.sasl_password

    assert password("${KAFKA_PASSWORD:-fallback}", {}) == "fallback"
    assert password("${KAFKA_PASSWORD:-fallback}", {"KAFKA_PASSWORD": ""}) == "fallback"
    assert password("pre-${KAFKA_PASSWORD:-x}-post", {"KAFKA_PASSWORD": "mid"}) == "pre-mid-post"


def test_unset_env_variable_without_default_names_key_path_and_variable():
    data = {"clusters": [{**MINIMAL_CLUSTER, "security": {
        "protocol": "SASL_SSL", "sasl_mechanism": "PLAIN", "sasl_username": "kpulse",
        "sasl_password": "${KAFKA_PASSWORD}"}}]}

    message = config_error(data, environ={"OTHER": "x"})

    assert message.startswith("clusters[0].security.sasl_password: environment variable "
                              "KAFKA_PASSWORD is not set")


def test_double_dollar_escapes_a_literal_reference():
    cluster = sasl_cluster("$${KAFKA_PASSWORD} costs $5", {"KAFKA_PASSWORD": "leaked"})

    assert cluster.security.sasl_password == "${KAFKA_PASSWORD} costs $5"


def test_numbers_and_booleans_may_come_from_the_environment():
    config = parse({"clusters": [{**MINIMAL_CLUSTER, "read_only": "${RO:-false}"}],
                    "dashboard": {"port": "${DASHBOARD_PORT:-8501}"}},
                   environ={"DASHBOARD_PORT": "9000", "RO": "true"})

    assert config.dashboard.port == 9000
    assert config.cluster().read_only is True
    assert config_error({"clusters": [MINIMAL_CLUSTER], "dashboard": {"port": "${P}"}},
                        environ={"P": "web"}) == "dashboard.port: expected an integer, got str 'web'"


def test_malformed_env_reference_is_refused():
    message = config_error({"clusters": [{**MINIMAL_CLUSTER, "bootstrap_servers": "${BROKERS"}]})

    assert message.startswith("clusters[0].bootstrap_servers: unclosed '${'")


# --- what consumers get -------------------------------------------------------------------------


def test_client_config_for_plaintext_has_only_bootstrap_and_protocol():
    assert parse_cluster().client_config() == {"bootstrap.servers": "kafka-1:9092,kafka-2:9092",
                                               "security.protocol": "PLAINTEXT"}


def test_client_config_for_sasl_ssl_with_mutual_tls_resolves_files_next_to_the_config(tmp_path):
    (tmp_path / "certs").mkdir()
    for name in ("certs/ca.pem", "client.pem", "client.key"):
        (tmp_path / name).write_text("")
    cluster = parse({"clusters": [{**MINIMAL_CLUSTER, "security": {
        "protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_username": "kpulse", "sasl_password": "${KAFKA_PASSWORD}",
        "ssl_ca_location": "certs/ca.pem", "ssl_certificate_location": str(tmp_path / "client.pem"),
        "ssl_key_location": str(tmp_path / "client.key"), "ssl_key_password": "kp",
        "ssl_endpoint_identification": False}}]}, {"KAFKA_PASSWORD": "pw"}, base_dir=tmp_path).cluster()

    assert cluster.client_config() == {
        "bootstrap.servers": "kafka-1:9092,kafka-2:9092",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "kpulse",
        "sasl.password": "pw",
        "ssl.ca.location": str(tmp_path / "certs" / "ca.pem"),
        "ssl.certificate.location": str(tmp_path / "client.pem"),
        "ssl.key.location": str(tmp_path / "client.key"),
        "ssl.key.password": "kp",
        "ssl.endpoint.identification.algorithm": "none",
    }


@pytest.mark.parametrize("key", ["ssl_ca_location", "ssl_certificate_location", "ssl_key_location"])
def test_a_missing_ca_certificate_or_key_file_is_one_line_naming_the_key_and_the_path(tmp_path, key):
    for name in ("ca.pem", "client.pem", "client.key"):
        (tmp_path / name).write_text("")
    security = {"protocol": "SSL", "ssl_ca_location": "ca.pem", "ssl_certificate_location": "client.pem",
                "ssl_key_location": "client.key", key: "missing/file.pem"}
    with pytest.raises(ConfigError) as caught:
        parse({"clusters": [{**MINIMAL_CLUSTER, "security": security}]}, base_dir=tmp_path)
    assert str(caught.value) == f"clusters[0].security.{key}: no such file {tmp_path / 'missing' / 'file.pem'}"


def test_the_ca_location_probe_is_not_a_file():
    cluster = parse_cluster(security={"protocol": "SSL", "ssl_ca_location": "probe"})
    assert cluster.client_config()["ssl.ca.location"] == "probe"


def test_the_exporter_binds_loopback_unless_the_config_says_otherwise():
    assert parse({"clusters": [MINIMAL_CLUSTER]}).exporter.host == "127.0.0.1"
    assert parse({"clusters": [MINIMAL_CLUSTER], "exporter": {"host": "0.0.0.0"}}).exporter.host == "0.0.0.0"
    assert default_config(environ={}).exporter.host == "127.0.0.1"


def test_alertmanager_delivery_is_off_unless_urls_are_given_and_each_url_is_checked():
    assert not parse({"clusters": [MINIMAL_CLUSTER]}).alerting.alertmanager.enabled
    config = parse({"clusters": [MINIMAL_CLUSTER], "alerting": {"alertmanager": {
        "urls": ["http://am-1:9093/", "${AM2}"], "timeout_seconds": 3, "resend_interval_seconds": 30, "retries": 0}},
        "dashboard": {"url": "https://kpulse.example.com/"}}, {"AM2": "http://am-2:9093"})
    settings = config.alerting.alertmanager
    assert (settings.urls, settings.timeout_seconds, settings.resend_interval_seconds, settings.retries) == (
        ("http://am-1:9093", "http://am-2:9093"), 3.0, 30.0, 0)
    assert config.dashboard.external_url == "https://kpulse.example.com"
    assert parse({"clusters": [MINIMAL_CLUSTER], "dashboard": {"host": "0.0.0.0", "port": 8600}}
                 ).dashboard.external_url == "http://localhost:8600"
    am = {"clusters": [MINIMAL_CLUSTER]}
    assert config_error({**am, "alerting": {"alertmanager": {"urls": ["am:9093"]}}}) == \
        "alerting.alertmanager.urls[0]: 'am:9093' is not an http(s) URL"
    assert config_error({**am, "alerting": {"alertmanager": {"urls": ["http://a", "http://a/"]}}}) == \
        "alerting.alertmanager.urls[1]: duplicate Alertmanager URL 'http://a' (also alerting.alertmanager.urls[0])"
    assert config_error({**am, "alerting": {"alertmanager": {"resend_interval_seconds": 0}}}) == \
        "alerting.alertmanager.resend_interval_seconds: must be a number of seconds > 0, got 0"
    assert "did you mean 'urls'" in config_error({**am, "alerting": {"alertmanager": {"url": ["http://a"]}}})
    assert config_error({**am, "dashboard": {"url": "kpulse:8501"}}) == "dashboard.url: 'kpulse:8501' is not an " \
        "http(s) URL"


def test_client_config_for_oauthbearer_with_oidc():
    cluster = parse_cluster(security={
        "protocol": "SASL_SSL", "sasl_mechanism": "OAUTHBEARER",
        "sasl_oauthbearer_token_endpoint_url": "https://idp/token",
        "sasl_oauthbearer_client_id": "kpulse", "sasl_oauthbearer_client_secret": "cs"})

    settings = cluster.client_config()

    assert settings["sasl.oauthbearer.method"] == "oidc"
    assert settings["sasl.oauthbearer.client.secret"] == "cs"
    assert settings["ssl.endpoint.identification.algorithm"] == "https"
    assert "sasl.username" not in settings


def test_redacted_hides_passwords_and_stays_printable():
    cluster = parse_cluster(
        security={"protocol": "SASL_SSL", "sasl_mechanism": "PLAIN", "sasl_username": "kpulse",
                  "sasl_password": "hunter2"},
        metrics={"source": "prometheus", "prometheus_url": "https://scraper:pr0m@prom:9090"},
    )

    redacted = cluster.redacted()
    printed = yaml.safe_dump(redacted)

    assert redacted["security"]["sasl_password"] == "***"
    assert redacted["security"]["ssl_key_password"] is None
    assert redacted["metrics"]["prometheus_url"] == "https://scraper:***@prom:9090"
    assert "hunter2" not in printed and "pr0m" not in printed
    assert "hunter2" not in repr(cluster)
    assert cluster.security.sasl_password == "hunter2"


def test_relative_paths_resolve_against_the_config_directory(tmp_path):
    path = write(tmp_path, "clusters: [{name: a, bootstrap_servers: 'k:1'}]\n"
                           "lake: {path: data/lake}\ndashboard: {users_file: users.yaml}\n")
    remote = parse({"clusters": [MINIMAL_CLUSTER], "lake": {"path": "s3a://bucket/kpulse"}})

    config = load_config(path)

    assert config.lake.path == str(tmp_path.resolve() / "data" / "lake")
    assert config.lake.local_path == tmp_path.resolve() / "data" / "lake"
    assert config.dashboard.users_file == tmp_path.resolve() / "users.yaml"
    assert remote.lake.path == "s3a://bucket/kpulse" and remote.lake.local_path is None


def test_cluster_lookup_by_name_and_unknown_name_lists_known_ones():
    config = parse({"clusters": [MINIMAL_CLUSTER, {"name": "staging", "bootstrap_servers": "s:1"}]})

    assert config.cluster().name == "prod"
    assert config.cluster("staging").bootstrap_servers == "s:1"
    with pytest.raises(ConfigError, match=r"unknown cluster 'stagin' \(known: prod, staging; "
                                          r"did you mean 'staging'\?\)"):
        config.cluster("stagin")


def test_consumer_group_selection_and_per_group_threshold():
    groups = parse_cluster(consumer_groups={
        "include": ["orders-.*", "payments"], "exclude": [".*-tmp"], "lag_seconds_threshold": 30,
        "overrides": {"orders-batch": {"lag_seconds_threshold": 900}}}).consumer_groups

    assert groups.monitors("orders-api") and groups.monitors("payments")
    assert not groups.monitors("orders-tmp") and not groups.monitors("old-payments")
    assert groups.lag_seconds_threshold_for("orders-batch") == 900
    assert groups.lag_seconds_threshold_for("orders-api") == 30


def test_the_default_selection_monitors_a_group_whose_id_holds_a_newline():
    groups = parse_cluster().consumer_groups

    assert groups.monitors("# ctl\x1b[31m\r\nnext #")
    assert not parse_cluster(consumer_groups={"exclude": ["tmp-.*"]}).consumer_groups.monitors("tmp-\nx")


def test_expected_instances_defaults_to_the_endpoint_count():
    app = {"application_id": "orders",
           "metrics_endpoints": ["http://a:1/m", "http://b:1/m", "http://c:1/m"]}

    (parsed,) = parse_cluster(streams_apps=[app]).streams_apps

    assert parsed.expected_instances == 3
    assert config_error({"clusters": [{**MINIMAL_CLUSTER, "streams_apps": [
        {**app, "expected_instances": 0}]}]}) == (
        "clusters[0].streams_apps[0].expected_instances: must be >= 1, got 0")


def test_the_result_is_immutable():
    config = parse({"clusters": [copy.deepcopy(MINIMAL_CLUSTER)]})

    with pytest.raises(dataclasses.FrozenInstanceError):
        config.cluster().name = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        config.cluster().metrics.broker_endpoints[1] = "http://x"  # type: ignore[index]


# --- files -------------------------------------------------------------------------------------


def test_malformed_yaml_names_the_file_and_line(tmp_path):
    path = write(tmp_path, "clusters:\n  - name: a\n    bootstrap_servers: k:1: 2\n")

    with pytest.raises(ConfigError) as caught:
        load_config(path)

    assert str(caught.value) == (f"{path}, line 3, column 27: invalid YAML: "
                                 "mapping values are not allowed here")


def test_unclosed_quote_names_the_line_where_the_string_starts(tmp_path):
    path = write(tmp_path, "clusters:\n  - name: a\n    bootstrap_servers: 'k:1\n"
                           "  exporter: {port: 1}\n")

    with pytest.raises(ConfigError, match=r"while scanning a quoted scalar that starts at line 3"):
        load_config(path)


def test_duplicate_yaml_key_is_refused_with_its_line(tmp_path):
    path = write(tmp_path, "clusters: [{name: a, bootstrap_servers: 'k:1'}]\n"
                           "exporter:\n  port: 1\n  port: 2\n")

    with pytest.raises(ConfigError, match=r", line 4, column 3: invalid YAML: duplicate key 'port'"):
        load_config(path)


def test_error_from_a_file_carries_the_file_as_source(tmp_path):
    path = write(tmp_path, "clusters: [{name: a, bootstrap_servers: 'k:1', readonly: true}]\n")

    with pytest.raises(ConfigError) as caught:
        load_config(path)

    assert str(caught.value) == "clusters[0].readonly: unknown key (did you mean 'read_only'?)"
    assert caught.value.source == str(path)


def test_missing_file_is_a_config_error(tmp_path):
    missing = tmp_path / "nope.yaml"

    with pytest.raises(ConfigError) as caught:
        load_config(missing)

    assert str(caught.value) == f"config file not found: {missing}"


def test_empty_file_says_clusters_are_required(tmp_path):
    with pytest.raises(ConfigError, match=r"^clusters: required$"):
        load_config(write(tmp_path, "# nothing yet\n"))
