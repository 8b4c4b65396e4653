"""Bad input to the CLI is one clear line on stderr, exit status 1, and no traceback."""

from __future__ import annotations

from tests.conftest import kpulse, one_error_line


def test_a_misspelled_config_key_is_named_with_its_file_and_a_suggestion(tmp_path):
    config = tmp_path / "kpulse.yaml"
    config.write_text("clusters:\n  - name: prod\n    bootstrap_server: kafka:9092\n")
    line = one_error_line(kpulse("--config", str(config), "config", "check", check=False))
    assert line == (f"kpulse: error: {config}: clusters[0].bootstrap_server: unknown key "
                    "(did you mean 'bootstrap_servers'?)")


def test_a_missing_config_file_is_named(tmp_path):
    line = one_error_line(kpulse("--config", str(tmp_path / "nope.yaml"), "up", check=False))
    assert line == f"kpulse: error: config file not found: {tmp_path / 'nope.yaml'}"


def test_an_unreachable_configured_cluster_is_one_line_without_librdkafka_noise(tmp_path):
    config = tmp_path / "kpulse.yaml"
    config.write_text("clusters:\n  - name: gone\n    bootstrap_servers: 127.0.0.1:1\n")
    line = one_error_line(kpulse("--config", str(config), "up", check=False))
    assert line.startswith("kpulse: error: cluster 'gone' at 127.0.0.1:1 is unreachable:")


def test_config_check_hides_passwords(tmp_path):
    config = tmp_path / "kpulse.yaml"
    config.write_text("clusters:\n  - name: prod\n    bootstrap_servers: kafka:9093\n    security:\n"
                      "      protocol: SASL_SSL\n      sasl_mechanism: SCRAM-SHA-512\n      sasl_username: ops\n"
                      "      sasl_password: hunter2\n")
    result = kpulse("--config", str(config), "config", "check")
    assert "hunter2" not in result.stdout
    assert "SCRAM-SHA-512" in result.stdout
