"""The SLOs page on what the real SLO job writes (the contract in docs/lake.md): collector tables
from the dashboard's lake fixture, `kpulse slo run` on them (real Spark), then the page's numbers
equal the newest `slo_status` rows, and its budget figures the Prometheus exporter's."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from streamlit.testing.v1 import AppTest

from exporters.slo_status import families, latest_rows
from kpulse.lake.reader import read_table
from tests.dashboard_lake import CLUSTER, write_lake

APP_FILE = Path(__file__).resolve().parent.parent / "dashboard" / "app.py"


def test_slos_page_shows_the_slo_jobs_evaluations(tmp_path, monkeypatch):
    lake = tmp_path / "lake"
    write_lake(str(lake), time.time())
    for table in ("slo_status", "slo_minute"):  # the job writes these itself
        shutil.rmtree(lake / table)
    config = {"clusters": [{"name": CLUSTER, "bootstrap_servers": "127.0.0.1:9"}], "lake": {"path": str(lake)},
              "intervals": {"collect_seconds": 600}}
    (tmp_path / "kpulse.yaml").write_text(yaml.safe_dump(config))
    run = subprocess.run([sys.executable, "-m", "cli.main", "--config", str(tmp_path / "kpulse.yaml"), "slo", "run",
                          "--master", "local[1]"], capture_output=True, text=True, timeout=500)
    assert run.returncode == 0, run.stderr[-2000:]
    status = read_table(str(lake), "slo_status")
    newest = status.sort_values("time").groupby(["slo", "entity"]).tail(1)
    assert len(newest) > 0

    monkeypatch.setenv("KPULSE_CONFIG", str(tmp_path / "kpulse.yaml"))
    app = AppTest.from_file(str(APP_FILE), default_timeout=60).run()
    app.switch_page("app_pages/slos.py").run()
    assert not app.exception and not app.error
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["SLOs evaluated"] == str(len(newest))
    assert metrics["Paging"] == str(int((newest["alert"] == "page").sum()))
    table = app.dataframe[0].value
    assert set(zip(table["slo"], table["entity"])) == set(zip(newest["slo"], newest["entity"]))
    worst = table.iloc[0]
    assert worst["alert"] == "page"  # paging first
    assert len(app.get("plotly_chart")) == 1

    # the page's budget figures are the exporter's, SLO by SLO
    served = {(family.name, sample.labels["slo"], sample.labels["entity"]): sample.value
              for family in families(latest_rows(str(lake))) for sample in family.samples
              if not {"window", "severity", "status"} & set(sample.labels)}
    gauges = {"error_budget_remaining": "kpulse_slo_error_budget_remaining", "bad_slices": "kpulse_slo_bad_timeslices",
              "allowed_bad_slices": "kpulse_slo_allowed_bad_timeslices", "coverage": "kpulse_slo_coverage"}
    compared = 0
    for row in table.to_dict("records"):
        for column, gauge in gauges.items():
            if pd.isna(row[column]):
                assert (gauge, row["slo"], row["entity"]) not in served
            else:
                assert served[(gauge, row["slo"], row["entity"])] == pytest.approx(row[column]), (gauge, row)
                compared += 1
    assert compared >= len(table)  # coverage at least, on every row
