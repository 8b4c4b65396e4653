"""The lag collection bench's modern-groups options (``bench/lag_collection.py --streams-groups N
--share-groups M``): which topic each group reads, which arguments are refused, and how the check
against ``kafka-groups --list`` reads the official tool's output. The bench itself is a script run by
hand (docs/performance.md); these are its pure parts."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench" / "lag_collection.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("lag_collection_bench", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_group_i_reads_topic_i_so_the_modern_groups_share_the_classic_groups_topics(bench):
    assert bench.modern_group_topics(3, 200) == ["bench.t000", "bench.t001", "bench.t002"]
    assert bench.modern_group_topics(0, 200) == []
    assert bench.modern_group_topics(20, 20) == bench.topic_names(20)


@pytest.mark.parametrize("count, topics, message", [
    (21, 20, "21 groups need as many bench topics, and there are 20"),
    (-1, 20, "-1: a number of groups is 0 or more"),
])
def test_more_groups_than_topics_or_a_negative_count_is_refused(bench, count, topics, message):
    with pytest.raises(ValueError, match=message):
        bench.modern_group_topics(count, topics)


@pytest.mark.parametrize("argv, message", [
    (["--topics", "20", "--streams-groups", "21"], "--streams-groups: 21 groups need as many bench topics"),
    (["--share-groups", "-2"], "--share-groups: -2: a number of groups is 0 or more"),
    (["--partitions", "0"], "--topics and --partitions must be at least 1"),
    (["--cycles", "1"], "--cycles must be at least 2"),
])
def test_bad_arguments_stop_the_bench_with_one_line(bench, capsys, argv, message):
    with pytest.raises(SystemExit) as stopped:
        bench.parse_args(argv)
    assert stopped.value.code == 2
    assert message in capsys.readouterr().err


def test_without_the_options_the_bench_measures_classic_groups_only_as_before(bench):
    args = bench.parse_args([])
    assert (args.streams_groups, args.share_groups, args.topics, args.partitions, args.port_base) == (
        0, 0, 200, 50, 49090)


LISTING = """\
GROUP                TYPE                 PROTOCOL            
bench-g000           Classic                                   
bench-streams-000    Streams              streams              
bench-share-000      Share                share                
bench-streams-001    Consumer             consumer             
"""
"""``kafka-groups --list`` of Kafka 4.3.1 (columns as it prints them; a classic group has no protocol)."""


def test_the_listing_check_names_each_group_missing_or_of_another_type(bench):
    expected = {"bench-streams-000": "Streams", "bench-share-000": "Share", "bench-streams-001": "Streams",
                "bench-share-001": "Share"}
    assert bench.listing_mismatches(LISTING, expected) == [
        "bench-share-001 not listed", "bench-streams-001 listed as Consumer, not Streams"]
    assert bench.listing_mismatches(LISTING, {"bench-streams-000": "Streams", "bench-share-000": "Share"}) == []


def process_state(pid: int) -> str:
    """The one-letter state of a process (``T``: stopped) from /proc/PID/stat."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2]


def test_the_clients_are_stopped_during_the_measured_cycle_and_continued_after_it_even_when_it_fails(bench):
    import subprocess
    import sys
    import time

    child = subprocess.Popen([sys.executable, "-c", "import time\nwhile True: time.sleep(0.01)"])
    try:
        with pytest.raises(RuntimeError, match="a cycle that failed"):
            began = time.monotonic()
            with bench.clients_paused(child.pid, settle=0.3):
                assert time.monotonic() - began >= 0.3  # the brokers' moment to settle
                assert process_state(child.pid) == "T"
                raise RuntimeError("a cycle that failed")
        time.sleep(0.2)
        assert process_state(child.pid) in "SR"
        with bench.clients_paused(None):  # the other arms: nothing is paused
            assert process_state(child.pid) in "SR"
    finally:
        child.kill()
        child.wait()


def test_the_paused_arm_passes_the_clients_pid_to_each_measuring_process(bench):
    args = bench.parse_args(["--bootstrap", "127.0.0.1:1", "--pause-pid", "4242"])
    command = bench.subprocess_command(args)
    assert command[command.index("--pause-pid") + 1] == "4242"
    assert "--pause-pid" not in bench.subprocess_command(bench.parse_args(["--bootstrap", "127.0.0.1:1"]))
