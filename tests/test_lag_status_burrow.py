"""Burrow's own test vectors through kpulse's status rules, one partition at a time
(``lag_status.evaluate_partition``) and on arrays (``lag_arrays.LagArrays``, the collector's path):
both must give Burrow's answer, or the answer the module docstring of ``lag_status`` names as a
deliberate difference.

The cases are the table ``tests`` of linkedin/Burrow ``core/internal/evaluator/caching_test.go`` at
commit ced55ba90f6b833a45a124d411fd5eef63a70933 (2025-10-03; the table as changed by d69a8ec,
"Detect rewinds when consumer has any rewind in history", Burrow #714), numbered as there. A Burrow
offset ``{Offset, Timestamp (ms), Lag}`` is a kpulse reading at ``Timestamp / 1000`` s of committed
offset ``Offset`` and log end ``Offset + Lag``; kpulse judges at the newest reading (it has no use
for Burrow's ``timeNow``: its STOP reads the group's membership, not commit times), and the group
has members (Burrow's consumers are committing). Left out: 8, 9 and 10, whose ``currentLag`` comes
from a broker offset newer than the last commit (kpulse reads both offsets in one poll, so its
newest reading is the current lag); 11, whose commits have no lag (kpulse reads no commit without a
log end); 12, about Burrow's ``allowed-lag``, which kpulse does not have (13 and 14 are kept: Burrow
answers them with allowed lag 0 as it does with 99, cases 5 and 7).
"""

from __future__ import annotations

import pytest

from collectors.lag.lag_arrays import STATUS_BY_CODE, LagArrays
from collectors.lag.lag_status import OffsetObservation, evaluate_partition, rewind_not_recovered
from kpulse.lag_contract import PartitionStatus

OK, WARN, REWIND, STALL, STOP = (PartitionStatus.OK, PartitionStatus.WARN, PartitionStatus.REWIND,
                                 PartitionStatus.STALL, PartitionStatus.STOP)
STEP = [100_000, 200_000, 300_000, 400_000, 500_000]
"""The commit timestamps (ms) of most of Burrow's cases."""


def readings(offsets, lags, timestamps=STEP):
    return [OffsetObservation(t / 1000, o, o + lag) for o, lag, t in zip(offsets, lags, timestamps, strict=True)]


# (Burrow's case, readings, Burrow's status, kpulse's status, why they differ)
BURROW_CASES = [
    pytest.param(readings([1000, 2000, 3000, 4000, 5000], [0, 50, 100, 150, 200]), OK, OK,
                 id="0: OK because there is zero lag somewhere"),
    pytest.param(readings([1000, 2000, 3000, 4000, 5000], [0, 50, 100, 150, 200]), OK, OK,
                 id="1: same, timeNow 900"),
    pytest.param(readings([1000, 2000, 3000, 4000, 5000], [0, 50, 100, 150, 200]), STOP, OK,
                 id="2: Burrow's STOP by commit times (kpulse: STOP/STALL difference)"),
    pytest.param(readings([1000, 2000, 3000, 4000, 5000], [50, 100, 150, 200, 250]), STOP, WARN,
                 id="3: Burrow's STOP by commit times, lag always non-zero (kpulse: STOP/STALL difference)"),
    pytest.param(readings([1000] * 5, [0, 50, 100, 150, 200]), OK, OK,
                 id="4: OK because of zero lag, though the offset is always the same"),
    pytest.param(readings([1000] * 5, [100, 150, 200, 250, 300]), STALL, STALL,
                 id="5: STALL because the lag is always non-zero"),
    pytest.param(readings([1000] * 5, [100] * 5), STALL, STALL, id="6: still STALL when the lag stays the same"),
    pytest.param(readings([1000, 2000, 3000, 2000, 4000], [100, 150, 200, 1250, 300]), OK, OK,
                 id="7: OK, the offsets go backwards but catch up the rewind within the window"),
    pytest.param(readings([1000] * 5, [100, 150, 200, 250, 300]), STALL, STALL, id="13: same as 5 (allowed lag 99)"),
    pytest.param(readings([1000, 2000, 3000, 2000, 4000], [100, 150, 200, 1250, 300]), OK, OK,
                 id="14: same as 7 (allowed lag 99)"),
    pytest.param(readings([1000, 2000, 3000, 2000, 2500], [100, 150, 200, 1250, 300]), REWIND, REWIND,
                 id="15: REWIND, the consumer did not catch up to the previous point"),
]

# Cases Burrow's table does not have, with Burrow's answer worked out by hand from caching.go at the same
# commit (its timeNow taken as the newest commit's time).
KPULSE_CASES = [
    pytest.param(readings([1000, 2000, 0, 100], [0, 0, 2100, 2100], STEP[:4]), REWIND, REWIND,
                 id="reset to earliest after zero lag (#714's own example): REWIND though the lag was 0"),
    pytest.param(readings([1000, 2000, 1500, 1600], [100, 100, 700, 0], STEP[:4]), OK, OK,
                 id="not back at the previous point, but no lag now (log truncated below it): OK"),
    pytest.param(readings([1000, 2000, 1500, 2000, 2000], [100, 100, 700, 300, 400]), OK, OK,
                 id="back exactly at the offset it rewound from counts as recovered"),
    pytest.param(readings([100, 50, 100, 100], [100, 150, 100, 100], STEP[:4]), OK, OK,
                 id="recovered, then the same offset twice: it moved in the window, not STALL"),
    pytest.param(readings([1000, 3000, 2000, 3500, 1000, 1200], [100] * 6, [*STEP, 600_000]), WARN, REWIND,
                 id="a second rewind after the first recovered (kpulse: any rewind not yet recovered)"),
    pytest.param(readings([1000, 500], [100, 700], STEP[:2]), REWIND, REWIND,
                 id="two readings show a rewind (kpulse: before its minimum of readings)"),
]


def arrays_status(window, has_members=True) -> PartitionStatus | None:
    """The window fed to ``LagArrays`` one cycle per reading, as the collector feeds it; the status
    at the newest reading."""
    lag = LagArrays(window_size=10)
    status = None
    for reading in window:
        lag.record([("t", 0)], [reading.log_end], reading.time)
        answer = lag.evaluate(["g"], [("t", 0)], [reading.committed], [reading.log_end], [has_members], reading.time)
        status = STATUS_BY_CODE[int(answer.status[0])]
    return status


@pytest.mark.parametrize("window, burrow, kpulse", BURROW_CASES + KPULSE_CASES)
def test_burrow_cases_give_burrows_status_or_a_named_difference(window, burrow, kpulse):
    assert evaluate_partition(window, window[-1].time, has_members=True) == kpulse
    assert arrays_status(window) == kpulse


@pytest.mark.parametrize("window, burrow, kpulse", BURROW_CASES)
def test_the_rewind_rule_matches_where_burrow_says_rewind(window, burrow, kpulse):
    """Burrow's Rule 2 (``checkIfOffsetsRewind`` and ``checkIfRewindRecovered``), with its current-lag
    gate: kpulse's rule matches exactly on Burrow's cases that end REWIND."""
    assert rewind_not_recovered(window) is (burrow == REWIND)
