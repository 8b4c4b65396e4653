"""An update reads its stored minutes around the windows' edges and whole hours in between
(``spark_jobs/lookback.py``): its status rows must equal those computed from every stored minute.
Pure, without Spark; the job end to end is tests/test_slo_job.py."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from spark_jobs import burn, lookback, windows
from spark_jobs.definitions import parse_definitions

H0 = 29_000_000 - 29_000_000 % 1440  # a UTC midnight, as an epoch minute


def definitions(window: str = "3d"):
    return parse_definitions({"slos": [
        {"name": "t", "scope": "consumer_group", "indicator": "consumer_progress_minutes",
         "budgetingMethod": "Timeslices", "target": 0.99, "timeWindow": window},
        {"name": "o", "scope": "cluster", "indicator": "probe_produce_availability",
         "budgetingMethod": "Occurrences", "target": 0.9, "timeWindow": "1d"}]})


def history(rng: np.random.Generator, first: int, end: int) -> pa.Table:
    """Minute rows of three keys over ``[first, end)``: bad minutes, no-data minutes, a key that
    begins late and one that stops early, minutes with no row at all."""
    pieces = []
    for slo, entity, begin, stop in (("t", "g1", first, end), ("t", "g2", first + (end - first) // 3, end),
                                     ("t", "g3", first, end - (end - first) // 3), ("o", "c", first + 17, end)):
        minute = np.arange(begin, stop)
        minute = minute[rng.random(len(minute)) > 0.01]  # no row at all
        if len(minute) == 0:
            continue
        valid = (rng.integers(1, 40, len(minute)) if slo == "o" else np.ones(len(minute), dtype=np.int64))
        good = valid - (rng.random(len(minute)) < 0.05) * rng.integers(1, 2, len(minute)) * (valid > 0)
        null = rng.random(len(minute)) < 0.03
        pieces.append(pa.table({"cluster": ["k"] * len(minute), "slo": [slo] * len(minute),
                                "entity": [entity] * len(minute), "minute": pa.array(minute),
                                "good": pa.array(good, mask=null), "valid": pa.array(valid, mask=null)}))
    return pa.concat_tables(pieces)


def sparse(every: pa.Table, start: int, end: int, lookback_start: int, lengths) -> pa.Table:
    """What an update reads: the minute ranges, the gap hours rolled up, the fresh minutes."""
    minute = every.column("minute").to_numpy()
    ranges = lookback.minute_ranges(start, end, lookback_start, lengths)
    in_ranges = np.zeros(len(minute), dtype=bool)
    for low, high in ranges:
        in_ranges |= (minute >= low) & (minute < high)
    stored = every.filter(pa.array(in_ranges))
    hours = lookback.rollup(every.filter(pa.array((minute >= lookback_start) & (minute < start))))
    gaps = hours.filter(pa.array(lookback.gap_hours(hours.column("hour").to_numpy(), ranges, lookback_start, start)))
    fresh = every.filter(pa.array(minute >= start))
    with_observed = [table.append_column("observed", lookback.observed(table)) for table in (stored, fresh)]
    return pa.concat_tables([with_observed[0], lookback.as_minute_rows(gaps), with_observed[1]])


@pytest.mark.parametrize("window,start_hour,length", [("3d", 100, 70), ("2d", 97, 130), ("1d", 30, 60)])
def test_an_update_reading_the_edges_and_hours_gives_the_status_of_every_stored_minute(window, start_hour, length):
    rng = np.random.default_rng(7)
    defs = definitions(window)
    start = H0 + 60 * start_hour
    end = start + length
    lookback_start = start - defs.longest_window_minutes - 1
    every = history(rng, lookback_start - 500, end)
    every = every.filter(pc.greater_equal(every.column("minute"), lookback_start))
    lengths = [*burn.BURN_WINDOWS.values(), *(slo.window_minutes for slo in defs.slos)]
    read = sparse(every, start, end, lookback_start, lengths)
    assert read.num_rows < every.num_rows / 2  # hours, not minutes, in between

    def rows(table):
        return sorted(windows.status(table, defs, start, end).to_pylist(),
                      key=lambda r: (r["slo"], r["entity"], r["time"]))

    expected, got = rows(every), rows(read)
    assert len(expected) > 2.5 * length and [(r["slo"], r["entity"], r["time"]) for r in got] == \
        [(r["slo"], r["entity"], r["time"]) for r in expected]
    assert got == expected


def test_minute_ranges_are_whole_hours_around_each_edge_within_the_lookback():
    start, end = H0 + 600, H0 + 665
    ranges = lookback.minute_ranges(start, end, start - 1441, [5, 60, 1440])
    # the 1d edge [start - 1441, end - 1440) and its hours; the 1h edge and the last minute: the last two hours
    assert ranges == [(start - 1441, start - 1320), (start - 120, start)]
    assert lookback.minute_ranges(start, end, start - 100, [1440]) == [(start - 60, start)]
    hour = np.arange(start - 1500, start + 60, 60)
    gaps = hour[lookback.gap_hours(hour, ranges, start - 1441, start)]
    assert gaps[0] == start - 1320 and gaps[-1] == start - 180 and len(gaps) == 20


def test_an_hour_rolls_up_its_minutes_with_no_data_as_zero_and_counts_the_observed_ones():
    rows = pa.table({"cluster": ["k"] * 4, "slo": ["t"] * 4, "entity": ["g"] * 4,
                     "minute": pa.array([H0, H0 + 1, H0 + 59, H0 + 60]),
                     "good": pa.array([1, None, 0, 1]), "valid": pa.array([1, None, 1, 1])})
    assert lookback.rollup(rows).to_pylist() == [
        {"cluster": "k", "slo": "t", "entity": "g", "hour": H0, "good": 1, "valid": 2, "observed": 2},
        {"cluster": "k", "slo": "t", "entity": "g", "hour": H0 + 60, "good": 1, "valid": 1, "observed": 1}]
