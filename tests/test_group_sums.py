"""Every group's sums at once (``collectors/lag/group_sums.py``) equal ``lag_math``'s sums of each
group's list, and the worst status its ``max``, on random runs of partitions: empty groups, groups
with every value unknown, partitions without a committed offset."""

from __future__ import annotations

import random

import numpy as np
import pytest

from collectors.lag.group_sums import sums_over_runs
from collectors.lag.lag_math import max_over_partitions, sum_over_partitions


def random_runs(rng: random.Random):
    sizes = [rng.choice([0, 0, 1, 2, 5, 10, 30]) for _ in range(rng.randint(0, 40))]
    rows = sum(sizes)
    kind = rng.choice(["mixed", "all-unknown", "all-known", "no-commits"])
    committed, lag, seconds, status = [], [], [], []
    for _ in range(rows):
        has_commit = kind != "no-commits" and rng.random() < 0.85
        committed.append(rng.randint(0, 10 ** 6) if has_commit else -1)
        known = has_commit and kind != "all-unknown" and (kind == "all-known" or rng.random() < 0.7)
        lag.append(rng.choice([0, rng.randint(1, 10 ** 9)]) if known else -1)
        known_seconds = has_commit and kind != "all-unknown" and (kind == "all-known" or rng.random() < 0.6)
        seconds.append(round(rng.choice([0.0, rng.uniform(0, 10 ** 5)]), 3) if known_seconds else float("nan"))
        status.append(rng.randint(0, 6))
    return (sizes, np.array(committed, np.int64), np.array(lag, np.int64), np.array(seconds, np.float64),
            np.array(status, np.int8))


def per_group(sizes, *columns):
    start = 0
    for size in sizes:
        yield [column[start:start + size].tolist() for column in columns]
        start += size


@pytest.mark.parametrize("seed", range(300))
def test_the_sums_over_runs_equal_lag_maths_sums_of_each_group(seed):
    sizes, committed, lag, seconds, status = random_runs(random.Random(seed))

    sums = sums_over_runs(sizes, committed, lag, seconds, status)

    expected = []
    for offsets, lags, times, codes in per_group(sizes, committed, lag, seconds, status):
        offsets = [None if c < 0 else c for c in offsets]
        total = sum_over_partitions([None if value < 0 else value for value in lags], offsets)
        worst = max_over_partitions([None if value != value else value for value in times], offsets)
        expected.append((total.value, total.unknown, worst.value, worst.unknown,
                         sum(1 for c in offsets if c is not None), max(codes, default=0)))
    assert list(zip(sums.total_lag, sums.lag_unknown, sums.max_lag_seconds, sums.lag_seconds_unknown,
                    sums.committed, sums.status)) == expected
    assert all(type(value) is int for value in sums.total_lag if value is not None)


def test_no_groups_and_groups_without_partitions():
    empty = np.array([], np.int64)
    assert sums_over_runs([], empty, empty, np.array([], np.float64), np.array([], np.int8)).total_lag == []
    sums = sums_over_runs([0, 0], empty, empty, np.array([], np.float64), np.array([], np.int8))
    assert (sums.total_lag, sums.lag_unknown, sums.max_lag_seconds, sums.status) == ([None, None], [0, 0],
                                                                                      [None, None], [0, 0])


def test_lags_whose_sum_would_overflow_int64_are_summed_exactly():
    big = 2 ** 62
    sums = sums_over_runs([3, 1], np.array([0, 0, 0, 0], np.int64), np.array([big, big, big, 5], np.int64),
                          np.full(4, np.nan), np.zeros(4, np.int8))
    assert sums.total_lag == [3 * big, 5]
