"""The S3 lake configured in kpulse.yaml alone: credentials in ``lake.s3`` (usually ``${VAR}``
references), the AWS environment cleared, on the real s3proxy server (the ``s3_server`` fixture).
The writer, the reader, ``kpulse audit show`` and ``kpulse slo run`` in a subprocess all reach the
bucket; a wrong secret is one line without it. ``kpulse config check`` refuses a lake location
whose query it cannot open, naming ``lake.path``, without asking any server."""

from __future__ import annotations

import collections
import http.server
import json
import os
import re
import secrets
import threading
import time
from pathlib import Path

import pytest
import yaml

from kpulse.config import ConfigError, load_config, parse_config
from kpulse.lake.location import S3_MAX_ATTEMPTS
from kpulse.lake.reader import read_table
from kpulse.lake.store import LakeWriter, use_credentials
from localkafka.s3_server import REGION, S3Server
from tests.conftest import S3_BUCKET, kpulse
from tests.slo_spark import write_samples

AWS_VARIABLES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                 "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3")
CLUSTERS = [{"name": "prod", "bootstrap_servers": "127.0.0.1:9"}]


def location(server: S3Server, prefix: str) -> str:
    return f"s3://{S3_BUCKET}/{prefix}?endpoint_override=127.0.0.1:{server.port}&scheme=http&region={REGION}"


def parse(lake: dict, environ: dict[str, str] | None = None):
    return parse_config({"clusters": CLUSTERS, "lake": lake}, source="kpulse.yaml", base_dir=Path("/"),
                        environ=environ or {})


@pytest.fixture
def no_aws_env(monkeypatch, tmp_path):
    """No AWS credentials anywhere but the config: the variables unset, no ~/.aws files."""
    for name in AWS_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))


def config_file(tmp_path: Path, lake: str, secret: str = "${LAKE_SECRET}") -> Path:
    path = tmp_path / "kpulse.yaml"
    path.write_text(yaml.safe_dump({"clusters": CLUSTERS, "lake": {
        "path": lake, "s3": {"access_key_id": "${LAKE_KEY_ID}", "secret_access_key": secret}}}))
    return path


# --- lake.s3 in the configuration (pure) ---

def test_lake_s3_takes_its_secrets_from_variables_and_never_shows_them():
    config = parse({"path": "s3://b/lake?region=eu-west-1",
                    "s3": {"access_key_id": "AKIA1", "secret_access_key": "${SECRET}", "session_token": "${TOKEN}"}},
                   {"SECRET": "s3cr3t-value", "TOKEN": "t0ken-value"})
    assert config.lake.s3 is not None
    assert config.lake.s3.environment() == {"AWS_ACCESS_KEY_ID": "AKIA1", "AWS_SECRET_ACCESS_KEY": "s3cr3t-value",
                                            "AWS_SESSION_TOKEN": "t0ken-value"}
    assert "s3cr3t-value" not in repr(config) and "t0ken-value" not in repr(config)
    assert parse({"path": "s3://b/lake"}).lake.s3 is None


@pytest.mark.parametrize(("lake", "message"), [
    ({"path": "s3://b/l", "s3": {"access_key_id": "AKIA1"}},
     "lake.s3.secret_access_key: required when access_key_id is given"),
    ({"path": "s3://b/l", "s3": {"secret_access_key": "x"}},
     "lake.s3.access_key_id: required when secret_access_key is given"),
    ({"path": "s3://b/l", "s3": {"session_token": "x"}},
     "lake.s3.session_token: only used with access_key_id and secret_access_key"),
    ({"path": "/var/lake", "s3": {"access_key_id": "AKIA1", "secret_access_key": "x"}},
     "lake.s3: only used when lake.path is an s3:// location (it is /var/lake)"),
    ({"path": "s3://b/l", "s3": {"access_key": "AKIA1"}}, "lake.s3.access_key: unknown key"),
])
def test_lake_s3_refuses_half_credentials_and_a_lake_that_is_not_on_s3(lake, message):
    with pytest.raises(ConfigError) as refused:
        parse(lake)
    assert str(refused.value).startswith(message), str(refused.value)
    assert "\n" not in str(refused.value)


def test_use_credentials_replaces_the_environments_identity_as_a_whole():
    environ = {"AWS_ACCESS_KEY_ID": "ENV", "AWS_SECRET_ACCESS_KEY": "env", "AWS_SESSION_TOKEN": "env-token",
               "AWS_PROFILE": "dev", "HOME": "/root"}
    use_credentials({"AWS_ACCESS_KEY_ID": "CFG", "AWS_SECRET_ACCESS_KEY": "cfg"}, environ)
    # the environment's session token belongs to the environment's key: never mixed with the config's
    assert environ == {"AWS_ACCESS_KEY_ID": "CFG", "AWS_SECRET_ACCESS_KEY": "cfg", "AWS_PROFILE": "dev",
                       "HOME": "/root"}
    untouched = dict(environ)
    use_credentials({}, environ)
    assert environ == untouched


# --- the lake location checked when the configuration is read (pure, no server) ---

@pytest.mark.parametrize(("path", "message"), [
    ("s3://b/p?endpointt=x", "lake.path: s3 lake location: unknown option 'endpointt'"),
    ("s3a://b/p?connect_timeout=abc", "lake.path: s3 lake location: connect_timeout='abc' is not a number"),
    ("s3://b/p?max_attempts=0", "lake.path: s3 lake location: max_attempts='0' must be between 1 and 10"),
    ("s3://b/p?max_attempts=two", "lake.path: s3 lake location: max_attempts='two' is not a whole number"),
    ("s3:///p", "lake.path: s3 lake location: no bucket (s3://bucket/prefix)"),
])
def test_a_lake_location_kpulse_cannot_open_is_refused_when_the_config_is_read(path, message):
    with pytest.raises(ConfigError) as refused:
        parse({"path": path})
    assert str(refused.value).startswith(message), str(refused.value)


def test_config_check_names_lake_path_for_an_unknown_location_option(tmp_path):
    config = tmp_path / "kpulse.yaml"
    config.write_text(yaml.safe_dump({"clusters": CLUSTERS, "lake": {"path": "s3://b/p?endpointt=x"}}))
    began = time.monotonic()
    refused = kpulse("--config", str(config), "config", "check", check=False)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused.stderr
    assert refused.stderr.strip().splitlines() == [
        f"kpulse: error: {config}: lake.path: s3 lake location: unknown option 'endpointt' (did you mean "
        "'endpoint_override'?)"], refused.stderr
    assert time.monotonic() - began < 30


# --- on the real server, the AWS environment empty ---

def test_a_lake_with_credentials_only_in_the_config_is_written_and_read(s3_server, no_aws_env, monkeypatch,
                                                                        tmp_path):
    monkeypatch.setenv("LAKE_KEY_ID", s3_server.access_key)
    monkeypatch.setenv("LAKE_SECRET", s3_server.secret_key)
    config = load_config(config_file(tmp_path, location(s3_server, "config-creds")))
    assert "AWS_SECRET_ACCESS_KEY" not in os.environ
    writer = LakeWriter(config.lake.path)
    writer.append("broker_state", [{"time": time.time(), "cluster": "prod", "broker_id": 1, "up": True}])
    assert not writer.flush().ok  # no identity yet: refused
    use_credentials(config.lake.credential_environment())
    assert writer.flush().ok
    assert read_table(config.lake.path, "broker_state")["broker_id"].tolist() == [1]


def test_audit_show_and_slo_run_in_a_subprocess_use_the_configs_credentials(s3_server, no_aws_env, monkeypatch,
                                                                            tmp_path):
    lake = location(s3_server, "config-cli")
    config = config_file(tmp_path, lake)
    monkeypatch.setenv("LAKE_KEY_ID", s3_server.access_key)
    monkeypatch.setenv("LAKE_SECRET", s3_server.secret_key)
    with monkeypatch.context() as writing:  # the test's own writes: credentials in its environment
        writing.setenv("AWS_ACCESS_KEY_ID", s3_server.access_key)
        writing.setenv("AWS_SECRET_ACCESS_KEY", s3_server.secret_key)
        writer = LakeWriter(lake)
        writer.append("audit", [{"time": time.time(), "cluster": "prod", "action_id": "a1", "actor": "ann",
                                 "action": "reset-offsets", "target": "group billing", "result": "ok"}])
        assert writer.flush().ok
        write_samples(lake, range(0, 5))
    assert "AWS_SECRET_ACCESS_KEY" not in os.environ
    shown = kpulse("--config", str(config), "audit", "show", "--json")
    assert [r["action_id"] for r in json.loads(shown.stdout)["records"]] == ["a1"]
    run = kpulse("--config", str(config), "slo", "run", "--master", "local[1]", "--until", "2026-03-09T23:10:00Z",
                 "--json")
    assert json.loads(run.stdout)["minute_rows"] > 0
    with monkeypatch.context() as reading:
        reading.setenv("AWS_ACCESS_KEY_ID", s3_server.access_key)
        reading.setenv("AWS_SECRET_ACCESS_KEY", s3_server.secret_key)
        assert len(read_table(lake, "slo_minute")) > 0  # written by the job's Spark tasks
    printed = shown.stdout + shown.stderr + run.stdout + run.stderr
    assert s3_server.secret_key not in printed


def test_a_wrong_secret_in_the_config_is_one_line_without_the_secret(s3_server, no_aws_env, monkeypatch, tmp_path):
    wrong = "not-the-" + secrets.token_hex(8)
    monkeypatch.setenv("LAKE_KEY_ID", s3_server.access_key)
    config = config_file(tmp_path, location(s3_server, "config-wrong"), secret=wrong)
    refused = kpulse("--config", str(config), "audit", "show", check=False)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and "ACCESS_DENIED" in refused.stderr, refused.stderr
    assert wrong not in refused.stderr + refused.stdout and s3_server.secret_key not in refused.stderr


# --- how often one request is tried (max_attempts) ---

class _Unavailable(http.server.BaseHTTPRequestHandler):
    """An S3 endpoint that answers every request 503 SlowDown (which the AWS SDK retries), counting them."""

    requests: list[str] = []

    def _refuse(self) -> None:
        type(self).requests.append(f"{self.command} {self.path}")
        body = b"<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"
        self.send_response(503)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_HEAD = do_GET = do_PUT = do_POST = do_DELETE = _refuse

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def unavailable_endpoint():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Unavailable)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("query", ["", "&max_attempts=1", "&max_attempts=3"])
def test_a_write_tries_each_request_max_attempts_times(unavailable_endpoint, monkeypatch, query):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "kpulse")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "unused")
    _Unavailable.requests = []
    lake = f"s3://{S3_BUCKET}/p?endpoint_override={unavailable_endpoint}&scheme=http&region={REGION}{query}"
    writer = LakeWriter(lake)
    writer.append("broker_state", [{"time": time.time(), "cluster": "prod", "broker_id": 1, "up": True}])
    result = writer.flush()
    assert result.failed == {"broker_state": 1} and "SLOW_DOWN" in result.errors["broker_state"], result.errors
    expected = int(query.rpartition("=")[2]) if query else S3_MAX_ATTEMPTS
    # the upload's first request (a multipart upload's start; no directory is made first), tried
    # max_attempts times
    tries = collections.Counter(_Unavailable.requests)
    assert len(tries) == 1 and next(iter(tries)).startswith(f"POST /{S3_BUCKET}/p/broker_state/date%3D"), tries
    assert set(tries.values()) == {expected}, _Unavailable.requests


def test_spark_executors_get_the_identity_and_spark_redacts_each_of_its_settings():
    from spark_jobs.lake_io import executor_environment

    assert executor_environment({}) == {}
    settings = executor_environment({"AWS_ACCESS_KEY_ID": "AKIA1", "AWS_SECRET_ACCESS_KEY": "s", "AWS_SESSION_TOKEN": "t"})
    names = [name for name in settings if name.startswith("spark.executorEnv.")]
    assert names == ["spark.executorEnv.AWS_ACCESS_KEY_ID", "spark.executorEnv.AWS_SECRET_ACCESS_KEY",
                     "spark.executorEnv.AWS_SESSION_TOKEN"]
    spark_default = re.compile("secret|password|token|access[.]?key|credential", re.IGNORECASE)
    assert [name for name in names if not spark_default.search(name)] == ["spark.executorEnv.AWS_ACCESS_KEY_ID"]
    widened = re.compile(settings["spark.redaction.regex"].removeprefix("(?i)"), re.IGNORECASE)
    assert all(widened.search(name) for name in names)


def test_the_dashboard_reads_the_bucket_with_the_configs_credentials_and_shows_none(s3_server, no_aws_env,
                                                                                    monkeypatch, tmp_path):
    import pyarrow.fs as pafs
    from streamlit.testing.v1 import AppTest

    from tests.dashboard_lake import CLUSTER, write_lake
    from tests.support import APP_FILE, open_page

    expected = write_lake(str(tmp_path / "lake"), time.time(), groups=2, partitions_per_group=2, history_cycles=3)
    pafs.copy_files(str(tmp_path / "lake"), f"{S3_BUCKET}/config-dashboard",
                    destination_filesystem=s3_server.filesystem())
    config = tmp_path / "kpulse.yaml"
    config.write_text(yaml.safe_dump({"clusters": [{"name": CLUSTER, "bootstrap_servers": "127.0.0.1:9"}],
                                      "lake": {"path": location(s3_server, "config-dashboard"), "s3": {
                                          "access_key_id": s3_server.access_key,
                                          "secret_access_key": "${LAKE_SECRET}"}},
                                      "intervals": {"collect_seconds": 600}}))
    monkeypatch.setenv("LAKE_SECRET", s3_server.secret_key)
    monkeypatch.setenv("KPULSE_CONFIG", str(config))
    app = AppTest.from_file(str(APP_FILE), default_timeout=60)
    app.run()
    assert not app.exception and not app.error, [e.value for e in app.exception] + [e.value for e in app.error]
    assert any("kp-value" in block.value for block in app.markdown)  # the snapshot's tiles, from the bucket
    app.query_params["group"] = expected.groups[1]
    open_page(app, "groups")
    charts = [json.loads(chart.proto.spec) for chart in app.get("plotly_chart")]
    assert len(charts) == 2 and all(chart["data"] for chart in charts) and not app.error  # the lake's history
    shown = " ".join(str(element.value) for kind in ("markdown", "caption", "text", "code", "warning", "info")
                     for element in getattr(app, kind))
    assert s3_server.secret_key not in shown
