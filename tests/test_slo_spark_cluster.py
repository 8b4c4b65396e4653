"""The SLO job submitted with plain spark-submit to a real Spark standalone master and worker,
started here from the pyspark distribution (the pip wheel has no sbin/: spark-class runs the
Master and Worker main classes), bound to 127.0.0.1 on free ports and stopped afterwards."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pyspark
import pytest

from tests.slo_spark import at, write_samples
from tests.support import free_port

SPARK_HOME = Path(pyspark.__file__).parent
REPO = Path(__file__).resolve().parent.parent


def spark_env() -> dict[str, str]:
    return {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}


def start(args: list[str], log: Path) -> subprocess.Popen:
    return subprocess.Popen([str(SPARK_HOME / "bin" / "spark-class"), *args], env=spark_env(),
                            stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)  # our own session: the JVM spark-class started
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)


def master_state(ui_port: int) -> dict:
    return json.loads(urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=5).read())


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    logs = tmp_path_factory.mktemp("spark-standalone")
    port, ui_port = free_port(), free_port()
    master = start(["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                    "--webui-port", str(ui_port)], logs / "master.log")
    worker = None
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                master_state(ui_port)
                break
            except OSError:
                if time.monotonic() > deadline or master.poll() is not None:
                    raise AssertionError("Spark master did not start:\n" + (logs / "master.log").read_text()[-3000:]) from None
                time.sleep(1)
        worker = start(["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--port", str(free_port()),
                        "--webui-port", str(free_port()), "--cores", "2", "--memory", "1g",
                        "--work-dir", str(logs / "work"), f"spark://127.0.0.1:{port}"], logs / "worker.log")
        while not any(w["state"] == "ALIVE" for w in master_state(ui_port)["workers"]):
            if time.monotonic() > deadline or worker.poll() is not None:
                raise AssertionError("Spark worker did not register:\n" + (logs / "worker.log").read_text()[-3000:])
            time.sleep(1)
        yield f"spark://127.0.0.1:{port}", ui_port
    finally:
        for process in (worker, master):
            if process is not None:
                stop(process)


def test_spark_submit_runs_the_job_on_a_standalone_cluster(standalone, tmp_path):
    master, ui_port = standalone
    write_samples(tmp_path, range(0, 20), offline_at={18, 19})
    definitions = tmp_path / "slos.yaml"
    definitions.write_text("slos:\n  - name: partition-health\n    scope: cluster\n"
                           "    indicator: partition_health_minutes\n    budgetingMethod: Timeslices\n"
                           "    target: 0.99\n    timeWindow: 1d\n")
    result = subprocess.run(
        [str(SPARK_HOME / "bin" / "spark-submit"), "--master", master, "--executor-memory", "512m",
         "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.ui.enabled=false",
         str(REPO / "spark_jobs" / "slo_job.py"), "--lake", str(tmp_path), "--definitions", str(definitions),
         "--until", at(20).isoformat(), "--json"],
        env=spark_env(), capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-4000:]
    summary = json.loads(result.stdout[result.stdout.index("{"):])
    [status] = summary["status"]
    assert summary["minute_rows"] == 20 and (status["good_events"], status["valid_events"]) == (18, 20)
    assert status["burn_rate_5m"] == pytest.approx((2 / 5) / 0.01) and status["alert"] == "page"
    apps = master_state(ui_port)["completedapps"]
    assert any(app["name"] == "kpulse-slo" for app in apps), apps  # it really ran on the standalone master


def test_the_job_on_the_standalone_cluster_reads_and_writes_a_lake_in_a_bucket(standalone, s3_server, tmp_path,
                                                                                monkeypatch):
    """The executors read the samples from the real S3 server (s3proxy) and write the job's tables
    there, with the credentials only in the config's ``lake.s3`` (``--config``): the job hands them
    to the executors as ``spark.executorEnv`` (neither the driver's nor the worker's environment has
    any), the endpoint in the lake's location."""
    import yaml

    from kpulse.lake.reader import read_table
    from localkafka.s3_server import REGION
    from tests.conftest import S3_BUCKET

    master, ui_port = standalone
    lake = f"s3://{S3_BUCKET}/standalone?endpoint_override=127.0.0.1:{s3_server.port}&scheme=http&region={REGION}"
    with monkeypatch.context() as writing:
        writing.setenv("AWS_ACCESS_KEY_ID", s3_server.access_key)
        writing.setenv("AWS_SECRET_ACCESS_KEY", s3_server.secret_key)
        write_samples(lake, range(0, 10), offline_at={9})
    config = tmp_path / "kpulse.yaml"
    config.write_text(yaml.safe_dump({"clusters": [{"name": "prod", "bootstrap_servers": "127.0.0.1:9"}], "lake": {
        "path": lake, "s3": {"access_key_id": s3_server.access_key, "secret_access_key": "${LAKE_SECRET}"}}}))
    definitions = tmp_path / "slos.yaml"
    definitions.write_text("slos:\n  - name: partition-health\n    scope: cluster\n"
                           "    indicator: partition_health_minutes\n    budgetingMethod: Timeslices\n"
                           "    target: 0.99\n    timeWindow: 1d\n")
    environment = {key: value for key, value in spark_env().items() if not key.startswith("AWS_")}
    result = subprocess.run(
        [str(SPARK_HOME / "bin" / "spark-submit"), "--master", master, "--executor-memory", "512m",
         "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.ui.enabled=false",
         str(REPO / "spark_jobs" / "slo_job.py"), "--config", str(config), "--definitions", str(definitions),
         "--until", at(10).isoformat(), "--json"],
        env={**environment, "LAKE_SECRET": s3_server.secret_key}, capture_output=True, text=True, timeout=600,
        cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-4000:]
    assert s3_server.secret_key not in result.stdout + result.stderr
    [status] = json.loads(result.stdout[result.stdout.index("{"):])["status"]
    assert (status["good_events"], status["valid_events"]) == (9, 10)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3_server.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_server.secret_key)
    stored = read_table(lake, "slo_status")
    assert len(stored) == 10 and stored["good_events"].iloc[-1] == 9
    apps = master_state(ui_port)["completedapps"]
    assert sum(app["name"] == "kpulse-slo" for app in apps) >= 1, apps
