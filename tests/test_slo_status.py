"""The newest SLO status, defined once (kpulse/lake/slo_status.py): the SLOs page and the
Prometheus exporter show the same SLOs and entities, including one the last run skipped."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pandas as pd
import yaml
from streamlit.testing.v1 import AppTest

from exporters.slo_status import SloStatusExporter, latest_rows
from kpulse.lake.slo_status import MAX_AGE_SECONDS, newest_status
from kpulse.lake.store import LakeWriter
from tests.dashboard_lake import CLUSTER, write_lake

APP_FILE = Path(__file__).resolve().parent.parent / "dashboard" / "app.py"


def status_row(when: float, slo: str, entity: str, *, cluster: str = CLUSTER, alert: str | None = None,
               budget: float = 0.5) -> dict:
    return {"time": when, "cluster": cluster, "slo": slo, "entity": entity, "scope": "consumer_group",
            "indicator": "consumer_freshness_minutes", "budgeting_method": "Timeslices", "objective": 0.99,
            "window": "30d", "sli": 0.995, "good_events": 995, "valid_events": 1000,
            "error_budget_remaining": budget, "alert": alert}


def exported_keys(exporter: SloStatusExporter) -> set[tuple[str, str, str]]:
    [sli] = [family for family in exporter.collect() if family.name == "kpulse_slo_sli"]
    return {(s.labels["cluster"], s.labels["slo"], s.labels["entity"]) for s in sli.samples}


def test_an_slo_the_last_run_skipped_is_on_the_page_and_in_prometheus_alike(tmp_path, monkeypatch):
    now = time.time()
    last_run, run_before = now - 30, now - 90
    lake = tmp_path / "lake"
    write_lake(str(lake), now)  # the samples and snapshot the page's frame needs
    shutil.rmtree(lake / "slo_status")
    writer = LakeWriter(str(lake))
    writer.append("slo_status", [
        status_row(run_before, "partition-health", CLUSTER), status_row(last_run, "partition-health", CLUSTER),
        status_row(run_before, "consumer-freshness", "billing"),
        status_row(last_run, "consumer-freshness", "billing", alert="ticket"),
        # evaluated by the run before, skipped by the last one: still the newest status of its key
        status_row(run_before, "consumer-freshness", "payments", alert="page", budget=-0.2),
    ])
    assert writer.flush().ok
    config = {"clusters": [{"name": CLUSTER, "bootstrap_servers": "127.0.0.1:9"}], "lake": {"path": str(lake)}}
    (tmp_path / "kpulse.yaml").write_text(yaml.safe_dump(config))
    monkeypatch.setenv("KPULSE_CONFIG", str(tmp_path / "kpulse.yaml"))

    app = AppTest.from_file(str(APP_FILE), default_timeout=60).run()
    app.switch_page("app_pages/slos.py").run()
    assert not app.exception and not app.error
    table = app.dataframe[0].value
    on_the_page = {(CLUSTER, slo, entity) for slo, entity in zip(table["slo"], table["entity"])}
    in_prometheus = exported_keys(SloStatusExporter(str(lake)))

    assert on_the_page == in_prometheus == {(CLUSTER, "partition-health", CLUSTER),
                                          (CLUSTER, "consumer-freshness", "billing"),
                                          (CLUSTER, "consumer-freshness", "payments")}
    assert table.iloc[0]["entity"] == "payments"  # paging first, on its older row


def frame_of(rows: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    return frame.assign(time=pd.to_datetime(frame["time"], unit="s", utc=True))


def keys_of(frame: pd.DataFrame) -> list[tuple[str, str, str]]:
    return list(zip(frame["cluster"], frame["slo"], frame["entity"]))


def test_a_key_counts_until_it_is_fifteen_minutes_older_than_its_own_clusters_newest_evaluation():
    newest = 1_800_000_000.0
    rows = frame_of([
        status_row(newest - 60, "s", "fresh", budget=0.1), status_row(newest, "s", "fresh", budget=0.2),
        status_row(newest - MAX_AGE_SECONDS, "s", "skipped-at-the-limit"),
        status_row(newest - MAX_AGE_SECONDS - 1, "s", "gone"),
        # another cluster whose job stopped an hour earlier: measured from its own newest evaluation
        status_row(newest - 3600, "s", "other", cluster="staging"),
        status_row(newest - 3600 - MAX_AGE_SECONDS + 60, "s", "skipped", cluster="staging"),
    ])
    status = newest_status(rows)
    assert keys_of(status) == [("staging", "s", "other"), ("staging", "s", "skipped"),
                               (CLUSTER, "s", "fresh"), (CLUSTER, "s", "skipped-at-the-limit")]
    assert status["error_budget_remaining"].tolist()[2] == 0.2  # the newest row of its key


def test_the_exporter_reads_back_far_enough_for_a_cluster_evaluated_before_the_newest(tmp_path):
    newest = 1_800_000_000.0
    writer = LakeWriter(str(tmp_path))
    writer.append("slo_status", [
        status_row(newest, "s", "a"),
        status_row(newest - 600, "s", "b", cluster="staging"),
        status_row(newest - 600 - 840, "s", "skipped", cluster="staging"),  # 14 min before staging's newest
        status_row(newest - 600 - 960, "s", "gone", cluster="staging"),  # 16 min before it
    ])
    assert writer.flush().ok
    rows = latest_rows(str(tmp_path))
    assert [(r["cluster"], r["slo"], r["entity"]) for r in rows] == [
        ("staging", "s", "b"), ("staging", "s", "skipped"), (CLUSTER, "s", "a")]
    assert rows[2]["alert"] is None and rows[2]["time"].timestamp() == newest
