"""Lag, time lag and Burrow-style status one partition at a time (the rules of
collectors/lag/lag_math.py and lag_status.py), and the group sums, on tables of hand-computed cases:
the status rules as a numbered table of cases per rule, and each rule's function on its own."""

from __future__ import annotations

from functools import partial

import pytest

from collectors.lag.lag_math import (
    REASON_LOG_END_BELOW_HISTORY, REASON_NO_COMMIT, REASON_NO_HISTORY, REASON_NO_LOG_END, REASON_NO_RATE,
    HistoryPoint, OffsetHistory, PartitionTotal, estimate_lag_seconds, max_over_partitions, partition_lag,
    sum_over_partitions,
)
from collectors.lag.lag_status import (
    OffsetObservation, PartitionWindow, StatusTracker, caught_up_once, evaluate_partition, lag_growing,
    no_observation, offset_unchanged, rewind_not_recovered, stalled, stopped, stuck_too_long, too_few_observations,
    worst_status,
)
from kpulse.lag_contract import PartitionStatus

OK, WARN, REWIND, STALL, STOP, ERR = (PartitionStatus.OK, PartitionStatus.WARN, PartitionStatus.REWIND,
                                      PartitionStatus.STALL, PartitionStatus.STOP, PartitionStatus.ERR)


# --- offset lag ---------------------------------------------------------------------------------

@pytest.mark.parametrize("committed, log_end, expected", [
    pytest.param(100, 150, 50, id="behind by 50"),
    pytest.param(150, 150, 0, id="caught up"),
    pytest.param(160, 150, 0, id="committed past log end clamps to 0"),
    pytest.param(0, 0, 0, id="empty partition committed at 0"),
    pytest.param(None, 150, None, id="no commit is None not 0"),
    pytest.param(-1, 150, None, id="kafka -1 means no commit"),
    pytest.param(100, None, None, id="unknown log end"),
    pytest.param(100, -1, None, id="kafka -1 log end is unknown"),
])
def test_partition_lag(committed, log_end, expected):
    assert partition_lag(committed, log_end) == expected


# --- the lookup table ---------------------------------------------------------------------------

def _history(points, max_points=60, topic="t", partition=0) -> OffsetHistory:
    history = OffsetHistory(max_points)
    for offset, time in points:
        history.record(topic, partition, offset, time)
    return history


def _table(history, topic="t", partition=0):
    return [(point.log_end_offset, point.time) for point in history.points(topic, partition)]


@pytest.mark.parametrize("recorded, expected", [
    pytest.param([(100, 0), (200, 1), (300, 2)], [(100, 0), (200, 1), (300, 2)], id="rising log end keeps every point"),
    pytest.param([(100, 0), (100, 1), (100, 2), (100, 3)], [(100, 0), (100, 3)],
                 id="plateau keeps first and latest time"),
    pytest.param([(100, 0), (200, 1), (200, 2), (200, 3), (300, 4)], [(100, 0), (200, 1), (200, 3), (300, 4)],
                 id="plateau between rises keeps both edges"),
    pytest.param([(100, 5), (200, 4)], [(100, 5)], id="older point ignored"),
    pytest.param([(100, 5), (200, 5)], [(100, 5)], id="same time ignored"),
    pytest.param([(100, 0), (200, 1), (190, 2)], [(100, 0), (200, 1)],
                 id="a dip below the newest point is not recorded"),
    pytest.param([(100, 0), (200, 1), (190, 2), (210, 3)], [(100, 0), (200, 1), (210, 3)],
                 id="a dip that recovers leaves the table as it was"),
    pytest.param([(100, 0), (200, 1), (50, 2), (60, 3)], [(100, 0), (200, 1)],
                 id="below the whole table: still a dip for two readings"),
    pytest.param([(100, 0), (200, 1), (50, 2), (60, 3), (70, 4)], [(70, 4)],
                 id="three readings below the newest point restart the table"),
    pytest.param([(100, 0), (200, 1), (50, 2), (60, 3), (70, 4), (80, 5)], [(70, 4), (80, 5)],
                 id="table grows again after the restart"),
    pytest.param([(100, 0), (200, 1), (190, 2), (150, 3), (199, 4)], [(199, 4)],
                 id="three readings below the newest point whatever their values"),
    pytest.param([(100, 0), (200, 1), (190, 2), (195, 3), (200, 4), (190, 5), (195, 6)], [(100, 0), (200, 1), (200, 4)],
                 id="a reading at the newest point ends the dip and its count"),
    pytest.param([(100, 0), (200, 1), (190, 2), (180, 1), (170, 0.5), (160, 3)], [(100, 0), (200, 1)],
                 id="readings not newer than the table do not count"),
    pytest.param([(100, 0), (90, 1), (80, 2), (70, 3)], [(70, 3)], id="one point: restarted after three readings too"),
])
def test_history_record_rules(recorded, expected):
    assert _table(_history(recorded)) == expected


def test_history_is_bounded_and_drops_the_oldest():
    history = _history([(offset * 10, offset) for offset in range(10)], max_points=5)
    assert _table(history) == [(50, 5), (60, 6), (70, 7), (80, 8), (90, 9)]


def test_history_default_bound_is_60_points():
    history = _history([(offset, offset) for offset in range(100)])
    assert len(history.points("t", 0)) == 60
    assert history.points("t", 0)[0] == HistoryPoint(40, 40)


def test_history_partitions_are_separate_and_forgettable():
    history = OffsetHistory()
    history.record("b", 1, 10, 0)
    history.record("a", 0, 500, 0)
    for time in (1, 2, 3):
        history.record("a", 0, 400, time)  # backwards on a/0 must not touch b/1
    assert history.known_partitions() == [("a", 0), ("b", 1)]
    assert _table(history, "b", 1) == [(10, 0)]
    history.forget("a", 0)
    assert history.known_partitions() == [("b", 1)]
    assert history.points("a", 0) == ()


def test_history_needs_two_points():
    with pytest.raises(ValueError, match="max_points"):
        OffsetHistory(1)


# --- time lag -----------------------------------------------------------------------------------

def lag_seconds_with_reason(history: OffsetHistory, topic: str, partition: int, committed: int | None,
                            log_end: int | None, now: float) -> tuple[float | None, str | None]:
    """``(seconds, None)`` or ``(None, reason)``: :func:`estimate_lag_seconds` without ``extrapolated``."""
    estimate = estimate_lag_seconds(history, topic, partition, committed, log_end, now)
    return estimate.seconds, estimate.reason


def lag_seconds(history: OffsetHistory, topic: str, partition: int, committed: int | None,
                log_end: int | None, now: float) -> float | None:
    """Seconds behind, 0.0 when caught up, ``None`` when it cannot be told."""
    return estimate_lag_seconds(history, topic, partition, committed, log_end, now).seconds


# Log end 1000 at t=100, 1100 at t=101, idle (plateau) until t=103, 1400 at t=104. now = 105.
SHARED = [(1000, 100.0), (1100, 101.0), (1100, 102.0), (1100, 103.0), (1400, 104.0)]


@pytest.mark.parametrize("recorded, committed, log_end, now, seconds, reason, extrapolated", [
    pytest.param(SHARED, 1400, 1400, 105.0, 0.0, None, False, id="caught up is 0"),
    pytest.param(SHARED, 1500, 1400, 105.0, 0.0, None, False, id="committed past log end is 0"),
    pytest.param(SHARED, 1000, 1400, 105.0, 5.0, None, False, id="exact on the oldest point"),
    pytest.param(SHARED, 1050, 1400, 105.0, 4.5, None, False, id="between two points"),
    pytest.param(SHARED, 1100, 1400, 105.0, 2.0, None, False, id="on a plateau the latest time wins"),
    pytest.param(SHARED, 1250, 1400, 105.0, 1.5, None, False, id="after a plateau"),
    pytest.param(SHARED, 1399, 1400, 105.0, 2.0 - 299 / 300, None, False,
                 id="one record behind"),
    pytest.param(SHARED, 1399, 1400, 103.5, 0.0, None, False, id="negative estimate clamps to 0"),
    pytest.param(SHARED, 900, 1400, 105.0, 6.0, None, True, id="older than the table extrapolates at oldest rate"),
    pytest.param([(1000, 100.0), (1000, 102.0), (1200, 104.0)], 900, 1200, 104.0, 5.0, None, True,
                 id="extrapolation skips an idle oldest segment"),
    pytest.param(SHARED, 1550, 1700, 105.0, 0.5, None, False, id="unrecorded current log end used as newest point"),
    pytest.param([(1000, 100.0)], 1100, 1200, 102.0, 1.0, None, False, id="one point plus current log end"),
    pytest.param([(1000, 100.0)], 900, 1000, 100.0, None, "not enough history (1 point)", False,
                 id="one point is not enough"),
    pytest.param([(1000, 100.0), (1000, 110.0)], 900, 1000, 110.0, None, REASON_NO_RATE, False,
                 id="idle topic has no rate to extrapolate"),
    pytest.param([], 900, 1000, 110.0, None, REASON_NO_HISTORY, False, id="never recorded"),
    pytest.param(SHARED, 1200, 1300, 105.0, 105.0 - (103.0 + 100 / 300), None, False,
                 id="log end in a dip: the table stands for it"),
    pytest.param(SHARED, 1350, 1300, 105.0, 105.0 - (103.0 + 250 / 300), None, False,
                 id="committed past the log end in a dip but below the table: still behind"),
    pytest.param(SHARED, 1400, 1300, 105.0, 0.0, None, False, id="committed at the table's newest point in a dip"),
    pytest.param(SHARED, 800, 900, 105.0, None, REASON_LOG_END_BELOW_HISTORY, False,
                 id="log end below the whole table is not guessed"),
    pytest.param(SHARED, 950, 900, 105.0, 0.0, None, False, id="caught up with a log end below the whole table"),
    pytest.param(SHARED, None, 1400, 105.0, None, REASON_NO_COMMIT, False, id="no commit"),
    pytest.param(SHARED, -1, 1400, 105.0, None, REASON_NO_COMMIT, False, id="kafka -1 commit"),
    pytest.param(SHARED, 1000, None, 105.0, None, REASON_NO_LOG_END, False, id="no log end"),
])
def test_lag_seconds(recorded, committed, log_end, now, seconds, reason, extrapolated):
    history = _history(recorded)
    estimate = estimate_lag_seconds(history, "t", 0, committed, log_end, now)
    if seconds is None:
        assert estimate.seconds is None
    else:
        assert estimate.seconds == pytest.approx(seconds, abs=1e-9)
    assert estimate.reason == reason
    assert estimate.extrapolated is extrapolated
    assert lag_seconds_with_reason(history, "t", 0, committed, log_end, now) == (estimate.seconds, reason)
    assert lag_seconds(history, "t", 0, committed, log_end, now) == estimate.seconds


def test_lag_seconds_after_the_log_end_went_backwards_uses_only_the_new_log():
    history = _history(SHARED)
    for now, end in ((106.0, 10), (107.0, 12)):  # topic recreated: below the whole table, not guessed
        history.record("t", 0, end, now)
        assert lag_seconds_with_reason(history, "t", 0, 5, end, now) == (None, REASON_LOG_END_BELOW_HISTORY)
    history.record("t", 0, 14, 108.0)  # the third reading below it: the table restarts
    assert lag_seconds_with_reason(history, "t", 0, 5, 14, 108.0) == (None, "not enough history (1 point)")
    history.record("t", 0, 114, 109.0)
    assert lag_seconds(history, "t", 0, 64, 114, 110.0) == pytest.approx(1.5)


def test_a_failover_dip_keeps_the_table_and_the_time_lag():
    """Right after a leader moves, the new leader's high watermark can read below the old one's for
    a reading or two: the table and the time lag go on as if the log end were its newest point."""
    rising = [(100 + 10 * second, float(second)) for second in range(11)]  # 10 records/s: 200 at t=10
    history = _history(rising)
    history.record("t", 0, 190, 11.0)
    assert lag_seconds_with_reason(history, "t", 0, 150, 190, 11.0) == (pytest.approx(6.0), None)  # 150 at t=5
    history.record("t", 0, 205, 12.0)
    assert lag_seconds_with_reason(history, "t", 0, 150, 205, 12.0) == (pytest.approx(7.0), None)
    assert _table(history) == [*rising, (205, 12.0)]


def test_time_lag_of_a_consumer_7_5_s_behind_a_100_msg_per_s_producer():
    start, base = 1_700_000_000.0, 5_000
    history = OffsetHistory()
    for second in range(61):
        history.record("orders", 3, base + 100 * second, start + second)
    now = start + 60
    committed = base + 100 * 60 - 750  # 7.5 s of records not yet read
    estimate = lag_seconds(history, "orders", 3, committed, base + 6_000, now)
    assert estimate == pytest.approx(7.5, rel=0.20)
    assert estimate == pytest.approx(7.5, abs=1e-6)


def test_time_lag_beyond_a_short_table_extrapolates_at_the_producer_rate():
    start = 1_700_000_000.0
    history = OffsetHistory(max_points=10)
    for second in range(61):
        history.record("orders", 0, 100 * second, start + second)
    estimate = estimate_lag_seconds(history, "orders", 0, 100 * 60 - 1_500, 6_000, start + 60)
    assert estimate.extrapolated
    assert estimate.seconds == pytest.approx(15.0, abs=1e-6)


# --- a group's sum and worst value over its partitions -----------------------------------------

@pytest.mark.parametrize("values, committed, total, worst, unknown", [
    pytest.param([10, 20, 30], [0, 0, 0], 60, 30, 0, id="every partition known: complete"),
    pytest.param([10, None, 30], [0, 5, 0], 40, 30, 1, id="one log end unknown: partial, 1 missing"),
    pytest.param([None, None, 7], [0, 0, 0], 7, 7, 2, id="two of three unknown: partial, 2 missing"),
    pytest.param([None, None], [0, 0], None, None, 2, id="none known: null, 2 missing"),
    pytest.param([10, None], [0, None], 10, 10, 0, id="no commit has no lag: left out, not missing"),
    pytest.param([10, None], [0, -1], 10, 10, 0, id="kafka -1 commit is no commit"),
    pytest.param([None], [None], None, None, 0, id="nothing committed: null, nothing missing"),
    pytest.param([], [], None, None, 0, id="no partitions"),
    pytest.param([0, None], [3, 3], 0, 0, 1, id="a known 0 plus an unknown is partial, not a complete 0"),
])
def test_sums_over_partitions_say_how_many_partitions_were_left_out(values, committed, total, worst, unknown):
    summed, maximum = sum_over_partitions(values, committed), max_over_partitions(values, committed)
    assert summed == PartitionTotal(total, unknown) and maximum == PartitionTotal(worst, unknown)
    assert summed.partial is (total is not None and unknown > 0)
    assert maximum.partial is summed.partial


# --- Burrow-style status: a table of cases per rule ---------------------------------------------

def _window(committed, log_end, start=0.0, step=10.0):
    assert len(committed) == len(log_end)
    return [OffsetObservation(start + index * step, c, e) for index, (c, e) in enumerate(zip(committed, log_end))]


@pytest.mark.parametrize("committed, log_end, has_members, expected", [
    # Rule 0: no observation -> None
    pytest.param([], [], True, None, id="no observation has no status"),
    # Rule 1: lag > 0 now and the committed offset below the highest of the window (a rewind not yet
    # recovered) -> REWIND
    pytest.param([100, 120, 90, 110], [200, 210, 220, 230], True, REWIND, id="rewind"),
    pytest.param([100, 90, 95], [150, 150, 160], True, REWIND, id="rewind beats growing lag"),
    pytest.param([100, 80, 80, 80], [150, 160, 170, 180], True, REWIND, id="rewind beats the stall after it"),
    pytest.param([100, 80, 80, 80], [150, 160, 170, 180], False, REWIND, id="rewind beats the stop after it"),
    pytest.param([100, 200, 50, 60], [100, 250, 260, 270], True, REWIND, id="rewind beats zero lag before it"),
    pytest.param([100, 50], [150, 150], True, REWIND, id="two observations show a rewind"),
    pytest.param([100, 120, 90, 130], [200, 210, 220, 230], True, OK, id="past the offset it rewound from: rules 2-8"),
    pytest.param([100, 120, 90, 120, 120], [110, 130, 140, 170, 180], True, WARN,
                 id="back at the offset it rewound from: rules 2-8"),
    pytest.param([100, 120, 90, 100], [200, 210, 220, 100], True, OK, id="no lag now: rules 2-8"),
    # Rule 2: the lag is 0 in any observation of the window (caught up at least once) -> OK
    pytest.param([10, 20, 30], [10, 40, 60], True, OK, id="zero lag beats growing lag"),
    pytest.param([50, 50, 50], [50, 60, 70], True, OK, id="zero lag beats stall"),
    pytest.param([50, 50, 50], [50, 60, 70], False, OK, id="zero lag beats stop"),
    pytest.param([100], [100], True, OK, id="one caught-up observation is enough for OK"),
    # Rule 3: fewer than min_observations (3) observations -> None
    pytest.param([100, 110], [150, 170], True, None, id="two lagging observations are too few"),
    # Rule 4: committed offset unchanged for longer than err_after_seconds -> ERR
    #   (cases in test_stuck_partition_escalates_to_err: they need the time the offset got stuck)
    # Rule 5: committed offset unchanged across the window, group has active members -> STALL
    pytest.param([100, 100, 100], [150, 160, 170], True, STALL, id="members but offset does not move"),
    pytest.param([100, 100, 100], [150, 150, 150], True, STALL, id="stall with an idle producer"),
    # Rule 6: committed offset unchanged across the window, group has no members -> STOP
    pytest.param([100, 100, 100], [150, 160, 170], False, STOP, id="no members and offset does not move"),
    pytest.param([100, 100, 100, 100], [150, 160, 170, 180], False, STOP, id="stop beats growing lag"),
    # Rule 7: lag never decreased between consecutive observations and grew overall -> WARN
    pytest.param([100, 110, 120, 130], [200, 220, 240, 260], True, WARN, id="lag grows every poll"),
    pytest.param([100, 110, 120, 130], [200, 220, 230, 260], True, WARN, id="lag grows with a flat step"),
    pytest.param([100, 100, 120], [150, 160, 180], True, WARN, id="growing lag with a repeated offset is not stall"),
    # Rule 8: otherwise -> OK
    pytest.param([100, 110, 120], [150, 160, 170], True, OK, id="flat lag of a consumer keeping pace"),
    pytest.param([100, 110, 120], [150, 150, 180], True, OK, id="lag goes down and up"),
    pytest.param([100, 200, 300], [400, 420, 440], True, OK, id="catching up"),
])
def test_partition_status_rules(committed, log_end, has_members, expected):
    observations = _window(committed, log_end)
    now = observations[-1].time + 10 if observations else 0.0
    assert evaluate_partition(observations, now, has_members) == expected


@pytest.mark.parametrize("stuck_since, now, has_members, expected", [
    pytest.param(-1000.0, 20.0, True, ERR, id="stall longer than 900 s is ERR"),
    pytest.param(-1000.0, 20.0, False, ERR, id="stop longer than 900 s is ERR"),
    pytest.param(-880.0, 20.0, False, STOP, id="exactly 900 s is still STOP"),
    pytest.param(None, 920.0, True, ERR, id="without a known start the window start counts"),
    pytest.param(None, 900.0, True, STALL, id="window start 900 s ago is still STALL"),
])
def test_stuck_partition_escalates_to_err(stuck_since, now, has_members, expected):
    observations = _window([100, 100, 100], [150, 160, 170])
    assert evaluate_partition(observations, now, has_members, stuck_since=stuck_since) == expected


@pytest.mark.parametrize("rule, committed, log_end, matches", [
    pytest.param(no_observation, [], [], True, id="rule 0: an empty window"),
    pytest.param(no_observation, [100], [150], False, id="rule 0: one observation"),
    pytest.param(rewind_not_recovered, [100, 120, 90, 110], [200, 210, 220, 230], True, id="rule 1: down once"),
    pytest.param(rewind_not_recovered, [100, 100, 120], [150, 160, 180], False, id="rule 1: repeated, never down"),
    pytest.param(rewind_not_recovered, [100, 120, 90, 120], [200, 210, 220, 230], False,
                 id="rule 1: down, then back at the offset it went down from"),
    pytest.param(rewind_not_recovered, [100, 130, 140, 90, 150, 120], [200] * 6, True,
                 id="rule 1: a second rewind after the first one recovered"),
    pytest.param(rewind_not_recovered, [100, 120, 90], [200, 210, 90], False, id="rule 1: down, but no lag now"),
    pytest.param(caught_up_once, [100, 110], [150, 110], True, id="rule 2: the last observation caught up"),
    pytest.param(caught_up_once, [100, 110], [101, 111], False, id="rule 2: one record behind throughout"),
    pytest.param(partial(too_few_observations, min_observations=3), [100, 110], [150, 170], True,
                 id="rule 3: two of three"),
    pytest.param(partial(too_few_observations, min_observations=3), [100, 110, 120], [150, 170, 190], False,
                 id="rule 3: three of three"),
    pytest.param(offset_unchanged, [100, 100, 100], [150, 160, 170], True, id="rules 4 to 6: the same offset"),
    pytest.param(offset_unchanged, [100, 90, 100], [150, 160, 170], False,
                 id="rules 4 to 6: back where it started is not unchanged"),
    pytest.param(partial(stuck_too_long, now=920.0, stuck_since=None, err_after_seconds=900.0),
                 [100, 100, 100], [150, 160, 170], True, id="rule 4: the window started 920 s ago"),
    pytest.param(partial(stuck_too_long, now=920.0, stuck_since=None, err_after_seconds=900.0),
                 [100, 110, 120], [150, 160, 170], False, id="rule 4: moving for 920 s"),
    pytest.param(partial(stalled, has_members=True), [100, 100, 100], [150, 160, 170], True, id="rule 5: members"),
    pytest.param(partial(stalled, has_members=False), [100, 100, 100], [150, 160, 170], False,
                 id="rule 5: no members"),
    pytest.param(partial(stopped, has_members=False), [100, 100, 100], [150, 160, 170], True,
                 id="rule 6: no members"),
    pytest.param(partial(stopped, has_members=True), [100, 100, 100], [150, 160, 170], False, id="rule 6: members"),
    pytest.param(lag_growing, [100, 110, 120], [200, 220, 240], True, id="rule 7: grows every poll"),
    pytest.param(lag_growing, [100, 110, 120], [150, 160, 170], False, id="rule 7: flat"),
    pytest.param(lag_growing, [100, 110, 120], [150, 150, 180], False, id="rule 7: down once, then up"),
])
def test_each_rule_on_its_own(rule, committed, log_end, matches):
    """Each rule's function says what its rule says, on a window of polls 10 s apart from t=0."""
    assert rule(_window(committed, log_end)) is matches


def test_err_only_for_a_stuck_offset():
    observations = _window([100, 110, 120], [200, 220, 240])
    assert evaluate_partition(observations, 10_000.0, True, stuck_since=-10_000.0) == WARN


def test_min_observations_is_configurable():
    observations = _window([100, 100], [150, 160])
    assert evaluate_partition(observations, 20.0, False, min_observations=2) == STOP
    assert evaluate_partition(observations, 20.0, False, min_observations=3) is None


def test_severity_ranking():
    assert [status.severity for status in (OK, WARN, REWIND, STALL, STOP, ERR)] == [0, 1, 2, 3, 4, 5]
    assert worst_status([OK, STOP, None, REWIND, STALL]) == STOP
    assert worst_status([WARN, ERR, STOP]) == ERR
    assert worst_status([None, None]) is None
    assert worst_status([]) is None


def _observe(tracker, group, topic, partition, committed, log_end, start=0.0, step=10.0):
    for observation in _window(committed, log_end, start, step):
        tracker.observe(group, topic, partition, observation)


@pytest.mark.parametrize("partitions, has_members, expected", [
    pytest.param({0: ([100, 110, 120], [150, 160, 170]), 1: ([100, 110, 120], [200, 220, 240]),
                  2: ([100, 100, 100], [150, 160, 170])}, True, STALL, id="OK WARN STALL is STALL"),
    pytest.param({0: ([100, 90, 95], [150, 150, 160]), 1: ([100, 100, 100], [150, 160, 170])}, False, STOP,
                 id="REWIND and STOP is STOP"),
    pytest.param({0: ([100, 90, 95], [150, 150, 160]), 1: ([100, 110, 120], [200, 220, 240])}, True, REWIND,
                 id="REWIND and WARN is REWIND"),
    pytest.param({0: ([100, 110, 120], [150, 160, 170]), 1: ([100], [150])}, True, OK,
                 id="a partition without status is skipped"),
    pytest.param({0: ([100], [150]), 1: ([100, 110], [150, 170])}, True, None, id="no partition with a status"),
])
def test_group_status_is_the_worst_partition(partitions, has_members, expected):
    tracker = StatusTracker()
    for partition, (committed, log_end) in partitions.items():
        _observe(tracker, "g", "t", partition, committed, log_end)
    assert tracker.group_status("g", 30.0, has_members) == expected


def test_group_status_of_an_unknown_group_is_none():
    assert StatusTracker().group_status("nobody", 0.0, True) is None


def test_window_is_bounded_and_slides_the_zero_lag_out():
    tracker = StatusTracker(window_size=10)
    tracker.observe("g", "t", 0, OffsetObservation(0.0, 100, 100))  # caught up once
    _observe(tracker, "g", "t", 0, [100 + 10 * i for i in range(10)], [150 + 20 * i for i in range(10)], start=10.0)
    window = tracker.observations("g", "t", 0)
    assert len(window) == 10
    assert window[0] == OffsetObservation(10.0, 100, 150)
    assert tracker.partition_status("g", "t", 0, 110.0, True) == WARN


def test_zero_lag_still_in_the_window_keeps_ok():
    tracker = StatusTracker(window_size=10)
    tracker.observe("g", "t", 0, OffsetObservation(0.0, 100, 100))
    _observe(tracker, "g", "t", 0, [100 + 10 * i for i in range(9)], [150 + 20 * i for i in range(9)], start=10.0)
    assert tracker.partition_status("g", "t", 0, 100.0, True) == OK


def test_stuck_time_is_tracked_beyond_the_window():
    tracker = StatusTracker(window_size=3)
    for time in (0.0, 400.0, 800.0, 1000.0):
        tracker.observe("g", "t", 0, OffsetObservation(time, 100, 150 + int(time)))
    assert [o.time for o in tracker.observations("g", "t", 0)] == [400.0, 800.0, 1000.0]
    # window alone spans 600 s; the offset has not moved since t=0, 1000 s ago
    assert tracker.partition_status("g", "t", 0, 1000.0, False) == ERR


def test_stuck_time_restarts_when_the_offset_moves():
    window = PartitionWindow(size=3)
    for time, committed in ((0.0, 100), (10.0, 100), (20.0, 120), (30.0, 120)):
        window.observe(OffsetObservation(time, committed, 500))
    assert window.stuck_since == 20.0


def test_out_of_order_observation_is_ignored():
    tracker = StatusTracker()
    _observe(tracker, "g", "t", 0, [100, 100, 100], [150, 160, 170])
    tracker.observe("g", "t", 0, OffsetObservation(15.0, 50, 170))  # would be a rewind
    assert len(tracker.observations("g", "t", 0)) == 3
    assert tracker.partition_status("g", "t", 0, 30.0, True) == STALL


def test_forget_group_and_partition():
    tracker = StatusTracker()
    _observe(tracker, "a", "t", 0, [100, 100, 100], [150, 160, 170])
    _observe(tracker, "b", "t", 0, [100, 100, 100], [150, 160, 170])
    _observe(tracker, "b", "t", 1, [100, 100, 100], [100, 160, 170])
    assert tracker.groups() == ["a", "b"]
    tracker.forget_group("a")
    assert tracker.groups() == ["b"]
    assert tracker.partition_status("a", "t", 0, 30.0, True) is None
    tracker.forget_partition("b", "t", 0)
    assert tracker.group_status("b", 30.0, True) == OK
    tracker.forget_partition("b", "t", 1)
    assert tracker.groups() == []


@pytest.mark.parametrize("kwargs", [
    pytest.param({"window_size": 1}, id="window of one"),
    pytest.param({"min_observations": 1}, id="min observations of one"),
    pytest.param({"window_size": 5, "min_observations": 6}, id="min observations above window"),
    pytest.param({"err_after_seconds": 0}, id="zero err threshold"),
])
def test_tracker_rejects_bad_settings(kwargs):
    with pytest.raises(ValueError):
        StatusTracker(**kwargs)


def test_observation_without_commit_is_rejected():
    with pytest.raises(ValueError, match="committed"):
        OffsetObservation(0.0, -1, 100)
    assert OffsetObservation(0.0, 120, 100).lag == 0
