"""Hostile input to every operation, on the real cluster (issue 13): whatever the arguments, plan
files and CSV files say, kpulse answers with one error line or a plan whose offsets lie in
[log start, log end], never a traceback; an ``--execute`` changes only what its plan names, inside
the log, or nothing; no internal topic is touched; a Streams reset deletes only its own
application's internal topics.

A bounded number of Hypothesis cases per operation, the same ones every run (derandomized), after
the cases issue 13 reported. ``bench/fuzz_operations.py`` runs thousands per operation.
"""

from __future__ import annotations

import pytest

from tests.fuzz_operations import OPERATIONS, build_world, run_operation

pytestmark = pytest.mark.cluster

EXAMPLES = 50
"""Per operation: one to two minutes for all of them on the test cluster of a busy two-core machine."""


@pytest.fixture(scope="module")
def world(bootstrap, tmp_path_factory):
    world = build_world(bootstrap, tmp_path_factory.mktemp("fuzz"))
    yield world
    world.close()


@pytest.mark.parametrize("operation", OPERATIONS)
def test_hostile_input_gets_one_error_line_or_a_plan_inside_the_log_and_changes_nothing_else(world, operation):
    tally = run_operation(world, operation, EXAMPLES)

    assert tally.cases > EXAMPLES // 2, f"Hypothesis ran too few cases: {tally.line()}"
    assert tally.categories["plan"] and tally.categories["error"], f"the cases must reach plans and errors: {tally.line()}"
    assert (tally.tracebacks, tally.wrong) == (0, 0), tally.report()
