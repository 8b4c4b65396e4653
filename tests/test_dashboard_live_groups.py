"""The Consumer groups list at scale: it refreshes from each new snapshot without rerunning the
page (a fragment, as the Overview's tiles), a search reruns the page so the group detail follows,
and the group's history is read for that group only. In headless Chromium against `kpulse
dashboard` on a lake written by tests/dashboard_lake.py (no Kafka needed: the page reads the
snapshot); the dashboard logs every full script run (KPULSE_DASHBOARD_TIMING_FILE), which tells a
fragment refresh from a rerun."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
import yaml

from dashboard.frame import TIMING_FILE_ENV
from kpulse.lake.reader import read_table_with_problems
from kpulse.lake.store import SNAPSHOT_DIR
from tests.conftest import ARTIFACTS, TEST_PORT_BASE
from tests.dashboard_browser import Browser, chromium_path, wait_for_dashboard
from tests.dashboard_lake import CLUSTER, write_lake
from tests.support import stop_process, wait_for

DASHBOARD_PORT = TEST_PORT_BASE + 520
DEVTOOLS_PORT = TEST_PORT_BASE + 521
GROUPS = 60


def test_a_read_with_where_returns_only_that_groups_rows(tmp_path):
    expected = write_lake(str(tmp_path / "lake"), time.time(), groups=5, partitions_per_group=1, history_cycles=4)

    frame, skipped = read_table_with_problems(str(tmp_path / "lake"), "consumer_group", cluster=CLUSTER,
                                              columns=["time", "group_id", "total_lag"],
                                              where={"group_id": expected.groups[2]})

    assert not skipped and len(frame) == 4
    assert set(frame["group_id"]) == {expected.groups[2]}
    with pytest.raises(ValueError, match="has no column 'no_such_column'"):
        read_table_with_problems(str(tmp_path / "lake"), "consumer_group", where={"no_such_column": "x"})


@pytest.fixture
def dashboard(tmp_path):
    lake = tmp_path / "lake"
    write_lake(str(lake), time.time(), groups=GROUPS, partitions_per_group=1, history_cycles=3)
    config = {"clusters": [{"name": CLUSTER, "bootstrap_servers": "127.0.0.1:9"}], "lake": {"path": str(lake)},
              "intervals": {"collect_seconds": 2}, "dashboard": {"port": DASHBOARD_PORT, "host": "127.0.0.1"}}
    (tmp_path / "kpulse.yaml").write_text(yaml.safe_dump(config))
    timing = tmp_path / "timing.jsonl"
    log = ARTIFACTS / "dashboard" / "dashboard-live-groups.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen([sys.executable, "-m", "cli.main", "--config", str(tmp_path / "kpulse.yaml"),
                                "dashboard"], env={**os.environ, TIMING_FILE_ENV: str(timing)},
                               stdout=open(log, "w"), stderr=subprocess.STDOUT)

    try:
        wait_for_dashboard(DASHBOARD_PORT, process)
        yield lake / SNAPSHOT_DIR / f"{CLUSTER}.json", timing
    finally:
        stop_process(process)


def full_runs(timing, page: str) -> int:
    if not timing.exists():
        return 0
    return sum(1 for line in timing.read_text().splitlines() if json.loads(line)["page"] == page)


@pytest.mark.skipif(chromium_path() is None, reason="chromium not installed: run `make test` "
                                                    "(scripts/setup.sh with KPULSE_WITH_BROWSER=1)")
def test_the_group_list_shows_a_new_snapshot_without_rerunning_the_page(dashboard):
    snapshot_file, timing = dashboard
    browser = Browser(DEVTOOLS_PORT)
    try:
        browser.open(f"http://127.0.0.1:{DASHBOARD_PORT}/groups")
        browser.wait_for([f"{GROUPS} of {GROUPS} groups match", "Lag (seconds, worst partition)"], timeout=90)
        runs = wait_for(lambda: full_runs(timing, "groups"), timeout=30, what="the page's run in the timing log")

        snapshot = json.loads(snapshot_file.read_text())
        late = {**snapshot["consumer_groups"][0], "group_id": "group-late"}
        snapshot["consumer_groups"].append(late)
        written = snapshot_file.with_suffix(".tmp")
        written.write_text(json.dumps(snapshot))
        os.replace(written, snapshot_file)  # as `kpulse collect` publishes it

        text = browser.wait_for([f"{GROUPS + 1} of {GROUPS + 1} groups match"], timeout=60)  # no reload
        assert "Traceback" not in text
        assert full_runs(timing, "groups") == runs, "the list refreshed by rerunning the whole page"

        browser.type_into("Search groups", "group-0003")
        browser.press_enter()
        text = browser.wait_for([f"1 of {GROUPS + 1} groups match",
                                 "kpulse reset-offsets --cluster test --group group-0003"], timeout=60)
        assert full_runs(timing, "groups") > runs, "a search must rerun the page: the detail follows the list"
    finally:
        browser.close()
