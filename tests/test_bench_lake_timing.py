"""The lake benches' phase accounting (``bench/lake_timing.py``, issue 30): which phase a logged
filesystem call is counted in, the driver's calls apart from the Spark tasks', and the time between
the job's own steps shown as phases of its own. The benches themselves are run by hand
(docs/performance.md, "The lake on S3")."""

from __future__ import annotations

from bench.lake_timing import Phase, account, with_gaps

DRIVER, WORKER = 100, 200


def test_a_call_is_counted_in_the_phase_it_began_in_by_process_and_kind():
    phases = [Phase("listing", 10.0, 11.0), Phase("tasks", 11.0, 15.0)]
    records = [
        (DRIVER, "list", 10.2, 0.5, 0, 1),
        (DRIVER, "head", 10.9, 0.3, 0, 3),  # ends in the next phase: counted where it began
        (WORKER, "get", 11.0, 0.25, 4096, 1),  # begins at the boundary: the later phase
        (WORKER, "get", 12.0, 0.5, 1024, 1),
        (WORKER, "put", 13.0, 0.125, 2048, 0),  # a write: bytes and seconds, no request of its own
        (DRIVER, "delete", 15.0, 1.0, 0, 1),  # after the last phase: not counted
        (WORKER, "get", 9.0, 1.0, 1, 1),  # before the first
    ]
    listing, tasks = account(records, phases, DRIVER)
    assert sorted(listing) == [("driver", "head"), ("driver", "list")]
    assert (listing["driver", "head"].calls, listing["driver", "head"].seconds) == (3, 0.3)
    assert sorted(tasks) == [("tasks", "get"), ("tasks", "put")]
    assert (tasks["tasks", "get"].calls, tasks["tasks", "get"].seconds, tasks["tasks", "get"].bytes) == (2, 0.75, 5120)
    assert (tasks["tasks", "put"].calls, tasks["tasks", "put"].bytes) == (0, 2048)


def test_the_time_between_steps_becomes_phases_of_its_own():
    steps = [Phase("b", 12.0, 13.0), Phase("a", 10.5, 11.0), Phase("c", 13.02, 14.0)]
    shown = with_gaps(steps, 10.0, 15.0, "rest")
    assert [(p.name, p.began, p.ended) for p in shown] == [
        ("rest", 10.0, 10.5), ("a", 10.5, 11.0), ("rest", 11.0, 12.0), ("b", 12.0, 13.0),
        ("c", 13.02, 14.0), ("rest", 14.0, 15.0)]  # 20 ms between b and c: not a phase
