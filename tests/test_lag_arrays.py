"""lag_arrays applies the rules of lag_math and lag_status to every group partition at once: it must
answer exactly what those rules answer one partition at a time (``OffsetHistory`` and
``estimate_lag_seconds``, ``StatusTracker`` and ``evaluate_partition``), cycle after cycle,
whatever the offsets do (move, stall, rewind, vanish, come back, dip for a reading or two after a
failover, go backwards with a recreated or truncated topic) and however the groups and partitions come and go."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from collectors.lag.lag_arrays import REASONS, STATUS_BY_CODE, LagArrays
from collectors.lag.lag_math import (
    DEFAULT_DIP_READINGS, REASON_LOG_END_BELOW_HISTORY, REASON_NO_HISTORY, OffsetHistory, estimate_lag_seconds,
    partition_lag,
)
from collectors.lag.lag_status import StatusTracker
from kpulse.lag_contract import PartitionStatus

TOPICS = [("a", 0), ("a", 1), ("b", 0), ("c", 0), ("c", 1), ("c", 2)]
GROUPS = ["g1", "g2", "g3", "g4"]


class Reference:
    """The per-partition rules, fed the way the collector feeds them."""

    def __init__(self, max_points, window_size, min_observations, err_after_seconds, dip_readings=DEFAULT_DIP_READINGS):
        self.history = OffsetHistory(max_points, dip_readings)
        self.tracker = StatusTracker(window_size, min_observations, err_after_seconds)

    def cycle(self, log_ends, consumption, now):
        for (topic, partition), log_end in log_ends.items():
            self.history.record(topic, partition, log_end, now)
        answers = []
        for group, (topic, partition), committed, has_members in consumption:
            log_end = log_ends.get((topic, partition))
            status = self.tracker.observe_and_status(group, topic, partition, now, committed, log_end, has_members)
            estimate = estimate_lag_seconds(self.history, topic, partition, committed, log_end, now)
            answers.append((partition_lag(committed, log_end), estimate.seconds, estimate.reason,
                            estimate.extrapolated, status))
        present = {group for group, _, _, _ in consumption}
        for group in self.tracker.groups():
            if group not in present:
                self.tracker.forget_group(group)
        for topic, partition in self.history.known_partitions():
            if (topic, partition) not in log_ends:
                self.history.forget(topic, partition)
        return answers


def arrays_cycle(lag: LagArrays, log_ends, consumption, now):
    lag.record(list(log_ends), list(log_ends.values()), now)
    answer = lag.evaluate([g for g, _, _, _ in consumption], [tp for _, tp, _, _ in consumption],
                          [-1 if c is None else c for _, _, c, _ in consumption],
                          [log_ends.get(tp, -1) for _, tp, _, _ in consumption],
                          [m for _, _, _, m in consumption], now)
    lag.forget_groups_except({group for group, _, _, _ in consumption})
    lag.forget_partitions_except(set(log_ends))
    return [(None if lag < 0 else lag, None if math.isnan(s) else s, REASONS[r], bool(e), STATUS_BY_CODE[st])
            for lag, s, r, e, st in zip(answer.lag.tolist(), answer.lag_seconds.tolist(),
                                      answer.lag_seconds_reason.tolist(), answer.extrapolated.tolist(),
                                      answer.status.tolist())]


def scenario(seed: int, cycles: int):
    """Random cycles: (log ends, [(group, partition, committed, has members)], now)."""
    rng = random.Random(seed)
    log_end = {tp: rng.randrange(0, 50) for tp in TOPICS}
    dipping = {tp: 0 for tp in TOPICS}  # readings left of a failover dip
    committed = {(g, tp): rng.randrange(0, 50) for g in GROUPS for tp in TOPICS}
    members = {g: rng.random() < 0.5 for g in GROUPS}
    consumes = {g: rng.sample(TOPICS, rng.randrange(1, len(TOPICS))) for g in GROUPS}
    now = 1_700_000_000.0
    for _ in range(cycles):
        now += rng.choice([0.0, 0.5, 10.0, 10.0, 10.0, 37.5, 400.0])  # 0: a cycle at the same time is ignored
        for tp in TOPICS:
            roll = rng.random()
            if roll < 0.45:
                log_end[tp] += rng.randrange(1, 40)
            elif roll < 0.5:
                log_end[tp] = rng.randrange(0, 10)  # recreated
            elif roll < 0.53:
                log_end[tp] = max(0, log_end[tp] - rng.randrange(1, 30))  # truncated (unclean election)
            elif roll < 0.6:
                dipping[tp] = rng.randrange(1, 5)  # the next readings (some past the dip window) lag behind
        for key in committed:
            roll = rng.random()
            if roll < 0.4:
                committed[key] = min(log_end[key[1]], committed[key] + rng.randrange(0, 60))
            elif roll < 0.45:
                committed[key] = max(0, committed[key] - rng.randrange(1, 20))  # a reset: REWIND
            elif roll < 0.5:
                committed[key] = log_end[key[1]]  # caught up
        for group in GROUPS:
            if rng.random() < 0.1:
                members[group] = not members[group]
            if rng.random() < 0.05:
                consumes[group] = rng.sample(TOPICS, rng.randrange(1, len(TOPICS)))
        read = {}
        for tp, end in log_end.items():
            if dipping[tp]:  # a new leader whose high watermark lags the old one's
                dipping[tp] -= 1
                end = max(0, end - rng.randrange(1, 60))
            read[tp] = end
        ends = {tp: end for tp, end in read.items() if rng.random() > 0.05}  # sometimes not read
        present = [g for g in GROUPS if rng.random() > 0.08]  # a group may vanish for a while
        consumption = [(g, tp, None if rng.random() < 0.05 else committed[(g, tp)], members[g])
                       for g in present for tp in sorted(consumes[g])]
        yield ends, consumption, now


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("max_points, window_size, min_observations, err_after, dip_readings", [
    (60, 10, 3, 900.0, 3), (4, 3, 2, 30.0, 2), (2, 5, 5, 120.0, 1), (60, 10, 3, 900.0, 4)])
def test_the_arrays_answer_what_the_per_partition_rules_answer(seed, max_points, window_size, min_observations,
                                                               err_after, dip_readings):
    reference = Reference(max_points, window_size, min_observations, err_after, dip_readings)
    lag = LagArrays(max_points, window_size, min_observations, err_after, dip_readings)
    seen_statuses, seen_reasons = set(), set()
    for number, (ends, consumption, now) in enumerate(scenario(seed, 150)):
        expected = reference.cycle(ends, consumption, now)
        got = arrays_cycle(lag, ends, consumption, now)
        for tp in ends:
            assert lag.history_points(tp) == [(p.log_end_offset, p.time) for p in reference.history.points(*tp)], (
                f"cycle {number}, {tp}")
        for (group, tp, _, _), want, have in zip(consumption, expected, got):
            where = f"cycle {number}, {group} {tp}"
            assert have[0] == want[0], where
            if want[1] is None:
                assert have[1] is None, where
            else:
                assert have[1] == pytest.approx(want[1], rel=1e-12, abs=1e-9), where
            assert have[2:] == want[2:], where
            seen_statuses.add(want[4])
            seen_reasons.add(want[2])
    # the scenarios reach the rules they are meant to compare
    assert {PartitionStatus.OK, PartitionStatus.REWIND, None} <= seen_statuses
    assert len(seen_reasons) >= 4


def test_every_status_and_reason_is_reached_across_the_seeds():
    statuses, reasons, extrapolated, dip_lengths = set(), set(), False, set()
    for seed in range(12):
        reference = Reference(4, 3, 2, 30.0)
        for ends, consumption, now in scenario(seed, 150):
            for answer in reference.cycle(ends, consumption, now):
                statuses.add(answer[4])
                reasons.add(answer[2])
                extrapolated |= answer[3]
            dip_lengths |= set(reference.history._dips.values())
    assert statuses == {None, *PartitionStatus}
    assert dip_lengths == {1, 2}  # log ends below the newest point, one and two readings in a row
    # a partition whose log end is read is recorded before it is evaluated: never "no history" here
    assert reasons == set(REASONS) - {REASON_NO_HISTORY} and extrapolated


RISING = [(100 + 10 * second, float(second)) for second in range(11)]
"""Log end 100 at t=0 ... 200 at t=10: 10 records/s, so 150 at t=5 and 195 at t=9.5."""


def both_cycles(readings, consumption, dip_readings=3):
    """RISING, then ``readings`` ((log end, now)), through the per-partition rules and the arrays: the
    answers to ``consumption`` at each reading (the same from both) and the table after each."""
    reference, lag = Reference(60, 10, 3, 900.0, dip_readings), LagArrays(dip_readings=dip_readings)
    tp = ("t", 0)
    for end, now in RISING:
        arrays_cycle(lag, {tp: end}, consumption, now)
        reference.cycle({tp: end}, consumption, now)
    answers, tables = [], []
    for end, now in readings:
        got, want = arrays_cycle(lag, {tp: end}, consumption, now), reference.cycle({tp: end}, consumption, now)
        assert [a[:1] + a[2:] for a in got] == [a[:1] + a[2:] for a in want], now
        assert [a[1] for a in got] == pytest.approx([a[1] for a in want], abs=1e-9), now
        table = [(p.log_end_offset, p.time) for p in reference.history.points(*tp)]
        assert lag.history_points(tp) == table, now
        answers.append(want)
        tables.append(table)
    return answers, tables


def test_a_failover_dip_neither_restarts_the_history_nor_hides_the_time_lag():
    """Broker failover: the new leader's high watermark reads 190, below the table's newest point
    (200), then catches up (205). g (at 150: the log end at t=5) and h (at 195: t=9.5, past the
    dipped log end) are behind by ``now - 5`` and ``now - 9.5`` s in every cycle; their offset lags
    are as read, never negative."""
    answers, tables = both_cycles([(190, 11.0), (205, 12.0)], [("g", ("t", 0), 150, True), ("h", ("t", 0), 195, True)])
    dip, after = answers
    assert [(lag, seconds) for lag, seconds, *_ in dip] == [(40, pytest.approx(6.0)), (0, pytest.approx(1.5))]
    assert [(lag, seconds) for lag, seconds, *_ in after] == [(55, pytest.approx(7.0)), (10, pytest.approx(2.5))]
    assert all(reason is None and not extrapolated for _, _, reason, extrapolated, _ in dip + after)
    assert tables == [RISING, [*RISING, (205, 12.0)]]  # the dip was never a point


def test_a_recreated_partition_restarts_its_history_after_the_dip_window():
    """The topic recreated: the log end drops to 3 and stays (the group reset to 1). Two readings
    are still taken for a dip, with the reason; the third restarts the history."""
    answers, tables = both_cycles([(3, 11.0), (5, 12.0), (7, 13.0), (9, 14.0)], [("g", ("t", 0), 1, True)])
    assert [answer[0][2] for answer in answers[:2]] == [REASON_LOG_END_BELOW_HISTORY] * 2
    assert [answer[0][:2] for answer in answers[:2]] == [(2, None), (4, None)]
    assert answers[2][0][2] == "not enough history (1 point)"
    assert answers[3][0][1] == pytest.approx(14.0 - 10.0) and answers[3][0][3]  # 1 was at t=10 at 2 records/s
    assert tables == [RISING, RISING, [(7, 13.0)], [(7, 13.0), (9, 14.0)]]


def test_a_log_end_that_stays_below_the_newest_point_restarts_the_history():
    """Truncated (an unclean leader election lost 20 records) and written on from there: within the
    table, so the time lag is told from it for two readings; the third restarts it."""
    answers, tables = both_cycles([(180, 11.0), (185, 12.0), (190, 13.0)], [("g", ("t", 0), 150, True)])
    assert [answer[0][1] for answer in answers[:2]] == [pytest.approx(6.0), pytest.approx(7.0)]
    assert answers[2][0][1:3] == (None, "not enough history (1 point)")
    assert tables == [RISING, RISING, [(190, 13.0)]]


def test_with_one_dip_reading_any_lower_log_end_restarts_the_history():
    answers, tables = both_cycles([(190, 11.0)], [("g", ("t", 0), 150, True)], dip_readings=1)
    assert answers[0][0][1:3] == (None, "not enough history (1 point)") and tables == [[(190, 11.0)]]


def test_rows_of_forgotten_partitions_and_groups_are_reused_clean():
    lag = LagArrays(max_points=3, window_size=3, min_observations=2)
    tp = ("t", 0)
    for now, end in ((10.0, 5), (20.0, 9), (30.0, 14)):
        arrays_cycle(lag, {tp: end}, [("g", tp, 4, True)], now)
    arrays_cycle(lag, {}, [], 40.0)  # topic and group gone
    assert lag.known_partitions() == [] and lag.groups() == []
    answers = arrays_cycle(lag, {("u", 0): 100}, [("h", ("u", 0), 10, True)], 50.0)
    # a fresh row: one point of history, one observation, nothing left of t/g
    assert answers == [(90, None, "not enough history (1 point)", False, None)]


def test_invalid_sizes_are_refused():
    with pytest.raises(ValueError, match="max_points"):
        LagArrays(max_points=1)
    with pytest.raises(ValueError, match="min_observations"):
        LagArrays(window_size=3, min_observations=4)


def test_ten_thousand_partitions_with_full_histories_and_windows():
    lag = LagArrays()
    tps = [(f"t{i // 50}", i % 50) for i in range(10_000)]
    for cycle in range(70):
        now = 1000.0 + 10 * cycle
        answers = arrays_cycle(lag, {tp: 100 * cycle + 7 for tp in tps},
                               [(f"g{i // 50}", tp, 3 if cycle < 2 else 100 * (cycle - 2), True)
                                for i, tp in enumerate(tps)], now)
    assert lag._points.max() == 60  # every history full
    # committed 6700 at t=1690: the log end was 6607 at t=1660 and 6707 at t=1670 (10 records/s)
    assert all(answer[1] == pytest.approx(1690 - (1660 + 93 / 10), abs=1e-9) for answer in answers)
    assert {answer[4] for answer in answers} == {PartitionStatus.OK}
    assert np.all(lag._entries[:10_000] == 10)
