"""The collection bench's ``--secure`` option (``bench/lag_collection.py --secure``, issue 26): its pure
parts. The local cluster's SASL_SSL listener option (``localkafka/layout.py`` ``SaslSslListener``,
``localkafka/cluster.py`` ``ScramUser``): the node settings with and without it, the format
arguments that create the SCRAM user, the kpulse security section of the secured side; the bench's
refused combinations, its two configs, its ratios and its reading of py-spy's stacks. The bench
itself is run by hand (docs/performance.md, "SASL_SSL against PLAINTEXT")."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from kpulse.local_layout import ClusterLayout
from localkafka.cluster import ClusterError, LocalCluster, ScramUser
from localkafka.layout import SaslSslListener, scram_format_arguments, server_properties

BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"


def settings_of(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines())


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("lag_collection_secure_bench", BENCH_DIR / "lag_collection.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def secure(bench):
    from bench import lag_secure

    return lag_secure


def test_without_the_option_a_node_has_its_plaintext_listener_only():
    layout = ClusterLayout.from_base(20000)
    settings = settings_of(server_properties(layout, layout.node(2), "/data/2"))
    assert settings["listeners"] == "PLAINTEXT://127.0.0.1:20002,CONTROLLER://127.0.0.1:20102"
    assert settings["advertised.listeners"] == "PLAINTEXT://127.0.0.1:20002"
    assert settings["listener.security.protocol.map"] == "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
    assert not [key for key in settings if "sasl" in key or "ssl" in key]


def test_the_option_adds_a_sasl_ssl_listener_beside_plaintext_and_brokers_still_talk_plaintext():
    layout = ClusterLayout.from_base(20000)
    listener = SaslSslListener(keystore="/c/broker-keystore.pem", truststore="/c/ca.pem")
    plain = settings_of(server_properties(layout, layout.node(2), "/data/2"))
    settings = settings_of(server_properties(layout, layout.node(2), "/data/2", listener))
    assert settings["listeners"] == ("PLAINTEXT://127.0.0.1:20002,CONTROLLER://127.0.0.1:20102,"
                                     "SASL_SSL://127.0.0.1:20602")
    assert settings["advertised.listeners"] == "PLAINTEXT://127.0.0.1:20002,SASL_SSL://127.0.0.1:20602"
    assert settings["listener.security.protocol.map"] == "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL"
    assert settings["inter.broker.listener.name"] == "PLAINTEXT"
    assert settings["sasl.enabled.mechanisms"] == "SCRAM-SHA-512"
    assert settings["listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config"] == (
        "org.apache.kafka.common.security.scram.ScramLoginModule required;")
    assert settings["listener.name.sasl_ssl.ssl.keystore.type"] == "PEM"
    assert settings["listener.name.sasl_ssl.ssl.keystore.location"] == "/c/broker-keystore.pem"
    assert settings["listener.name.sasl_ssl.ssl.truststore.location"] == "/c/ca.pem"
    assert "authorizer.class.name" not in settings
    # everything else as without the option
    changed = {key for key in settings if plain.get(key) != settings[key]}
    assert changed == {"listeners", "advertised.listeners", "listener.security.protocol.map",
                       *listener.settings()}


def test_the_sasl_ssl_ports_are_base_plus_600_and_clash_with_no_other_port_of_the_layout():
    layout = ClusterLayout.from_base(20000)
    assert SaslSslListener.bootstrap_servers(layout) == "127.0.0.1:20601,127.0.0.1:20602,127.0.0.1:20603"
    others = {p for n in layout.nodes for p in (n.client_port, n.controller_port, n.metrics_port)}
    others |= {layout.streams_metrics_port(i) for i in (1, 2, 3)} | {layout.exporter_port, layout.base + 500}
    assert not others & {SaslSslListener.port(layout, node) for node in layout.nodes}


def test_the_scram_user_is_created_by_the_storage_tool_arguments():
    assert scram_format_arguments({"kpulse-bench": "s3cret"}) == [
        "--add-scram", "SCRAM-SHA-512=[name=kpulse-bench,password=s3cret]"]
    with pytest.raises(ValueError, match="no ',', '=', '\\[' or '\\]'"):
        scram_format_arguments({"a": "p,w"})


def test_the_secured_side_connects_with_the_user_and_the_clusters_ca(tmp_path):
    cluster = LocalCluster(tmp_path, ClusterLayout.from_base(20000), sasl_ssl_user=ScramUser("u", "pw"))
    assert cluster.sasl_ssl_bootstrap_servers == "127.0.0.1:20601,127.0.0.1:20602,127.0.0.1:20603"
    assert cluster.sasl_ssl_security() == {
        "protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512", "sasl_username": "u", "sasl_password": "pw",
        "ssl_ca_location": str(tmp_path / "cluster" / "certs" / "kpulse-local-ca.pem")}
    assert cluster.sasl_ssl_listener().keystore == str(tmp_path / "cluster" / "certs" / "broker-keystore.pem")
    assert not (tmp_path / "cluster").exists()  # the constructor and these touch nothing


def test_a_cluster_without_the_option_has_no_secured_side(tmp_path):
    cluster = LocalCluster(tmp_path, ClusterLayout.from_base(20000))
    assert cluster.sasl_ssl_listener() is None
    with pytest.raises(ClusterError, match="no SASL_SSL listener"):
        cluster.sasl_ssl_security()


@pytest.mark.parametrize("argv, message", [
    (["--secure", "--bootstrap", "h:1"], "not with --bootstrap"),
    (["--secure", "--groups"], "not with --groups"),
    (["--secure", "--streams-groups", "2", "--kminion", "k"], "not with --streams-groups, --kminion"),
    (["--secure", "--sustain", "60"], "not with --sustain"),
    (["--profile", "py-spy"], "--profile goes with --secure"),
])
def test_secure_goes_with_the_benchs_own_classic_cluster_only(bench, capsys, argv, message):
    with pytest.raises(SystemExit):
        bench.parse_args(argv)
    assert message in capsys.readouterr().err


def test_the_two_configs_differ_in_bootstrap_and_security_only(bench, secure, tmp_path):
    ca = tmp_path / "ca.pem"
    ca.write_text("not read here")
    security = {"protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512", "sasl_username": "u",
                "sasl_password": "pw", "ssl_ca_location": str(ca)}
    configs = secure.secure_configs(bench.bench_config, "127.0.0.1:1", "127.0.0.1:601", security,
                                    ["http://127.0.0.1:201/metrics"], bench.ALL_BENCH_GROUPS)
    plain, secured = configs["plaintext"].cluster(None), configs["sasl_ssl"].cluster(None)
    assert plain.security.protocol == "PLAINTEXT"
    assert secured.client_config()["security.protocol"] == "SASL_SSL"
    assert secured.client_config()["sasl.username"] == "u"
    same = [field for field in ("consumer_groups", "metrics", "name") if getattr(plain, field) != getattr(secured, field)]
    assert same == []
    assert (plain.bootstrap_servers, secured.bootstrap_servers) == ("127.0.0.1:1", "127.0.0.1:601")


def test_ratios_of_the_medians_and_of_cycles_measured_side_by_side(secure):
    figures = secure.ratios([1.0, 2.0, 1.0, 1.0], [1.2, 2.0, 1.5, 1.1])
    assert figures["ratio_of_medians"] == pytest.approx(1.35 / 1.0)
    assert figures["paired_ratio_median"] == pytest.approx((1.1 + 1.2) / 2)
    low, high = figures["paired_ratio_quartiles"]
    assert low <= figures["paired_ratio_median"] <= high


def test_py_spy_stacks_are_read_busy_in_the_cycles_only_and_sorted_by_where_the_time_goes(secure):
    io = "thread (7): kafka-io;Thread.run (threading.py:982);NetworkSelector.run_forever (kafka/net/selector.py:239)"
    cycle = "thread (1): MainThread;main (lag_collection.py:1);_Side.cycle (lag_secure.py:62)"
    text = "\n".join([
        f"{io};EpollSelector.select (selectors.py:468) 500",  # idle: left out
        f"{io};KafkaSSLTransport._sock_recv (kafka/net/transport.py:434);SSLSocket.recv (ssl.py:1296) 30",
        f"{io};KafkaConnection._sasl_authenticate (kafka/net/connection.py:471);"
        "SSLSocket.recv (ssl.py:1296) 4",
        f"{io};KafkaProtocol._process_response (kafka/protocol/parser.py:1) 10",
        f"{cycle};ConsumerLagCollector.evaluate (collectors/lag/consumer_lag.py:99) 20",
        "thread (1): MainThread;main (lag_collection.py:1);profile_side (lag_secure.py:192) 300",  # sleeping
        "thread (1): MainThread;main (lag_collection.py:1);settle_gc (collectors/runner.py:317) 7",  # not a cycle
    ])
    profile = secure.read_collapsed(text)
    assert profile["samples"] == 64
    assert profile["categories"] == {
        "TLS record reads and writes (ssl.py: OpenSSL's decryption and encryption)": 30,
        "connecting: TLS context and handshake, SASL, API versions (once per connection)": 4,
        "answers decoded (kafka-python and kpulse's decoders)": 10,
        "the rest (kpulse's evaluation, librdkafka calls' Python side, ...)": 20}
    assert next(iter(profile["leaves"])) == "SSLSocket.recv (ssl.py:1296)"
