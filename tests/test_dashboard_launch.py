"""How ``kpulse dashboard`` starts Streamlit (``dashboard/launch.py``); the server it starts is
driven in tests/test_dashboard_browser.py."""

from __future__ import annotations

from streamlit import config

from dashboard.launch import streamlit_command


def test_the_dashboard_runs_streamlit_without_a_full_collection_after_every_script_run():
    """Streamlit runs ``gc.collect(2)`` after every script run by default: at 10,000 groups, with
    the snapshot's tables cached, each took 0.5-1 s while the browser waited (docs/performance.md)."""
    flags = dict(arg.removeprefix("--").split("=", 1) for arg in streamlit_command("127.0.0.1", 8501)
                 if arg.startswith("--"))
    assert config.get_config_options()["runner.postScriptGC"].default_val is True  # the option exists, on
    assert flags["runner.postScriptGC"] == "false"
    assert flags["server.fileWatcherType"] == "none" and flags["client.showErrorDetails"] == "none"
