"""Sustained collection: ``bench/lag_collection.py --sustain SECONDS``.

Runs the collection loop as ``kpulse collect`` runs it (``CollectionService.run``: a cycle every
``intervals.collect_seconds``, 10 s by default, the lake written once a minute, the garbage
collector settled) for SECONDS, into a lake of its own, and reports:

- the cycles run and those that overran the interval (took longer than it: the next one started
  late), with the longest;
- the lake's ``lake_gap`` rows (rows the loop had to drop), and the largest spacing between two
  consecutive cycles in the ``consumer_lag`` table (a cycle missing from the lake shows as a
  spacing of two intervals or more);
- the peak resident memory of the loop's process.
"""

from __future__ import annotations

import resource
import threading
import time


def sustain(config, seconds: float) -> dict:
    from collectors.runner import GC_SETTLE_CYCLES, CollectionService, CycleResult

    interval = config.intervals.collect_seconds
    stop = threading.Event()
    durations: list[float] = []
    began = [time.monotonic()]

    class TimedService(CollectionService):
        """The service whose every cycle's start is noted in ``began``."""

        def cycle(self) -> CycleResult:
            began[0] = time.monotonic()
            return super().cycle()

    service = TimedService(config, gc_settle_cycles=GC_SETTLE_CYCLES)

    def on_cycle(_result) -> None:
        durations.append(time.monotonic() - began[0])
        if time.monotonic() - start >= seconds:
            stop.set()

    start = time.monotonic()
    service.run(stop, on_cycle=on_cycle)  # closes the service: the last rows are flushed
    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # before the lake is read back
    return {"interval_s": interval, "seconds": time.monotonic() - start, "cycles": len(durations),
            "overruns": sum(1 for d in durations if d > interval), "longest_s": max(durations, default=0.0),
            "median_s": sorted(durations)[len(durations) // 2] if durations else None,
            **lake_coverage(config.lake.path, interval), "peak_rss_mb": peak_rss_mb}


def lake_coverage(lake: str, interval: float) -> dict:
    """``lake_gap`` rows and the largest spacing between consecutive ``consumer_lag`` cycles."""
    from kpulse.lake.reader import read_table

    gaps = read_table(lake, "lake_gap")
    times = sorted(set(read_table(lake, "consumer_lag", columns=["time"])["time"]))
    spacings = [(b - a).total_seconds() for a, b in zip(times, times[1:])]
    return {"lake_gap_rows": len(gaps), "lake_cycles": len(times), "largest_spacing_s": max(spacings, default=None),
            "missing_cycles": sum(1 for s in spacings if s >= 2 * interval)}


def print_sustain(figures: dict) -> None:
    print(f"\nsustained: {figures['cycles']} cycles every {figures['interval_s']:g} s for {figures['seconds']:.0f} s "
          f"as `kpulse collect` runs them")
    print(f"  cycles over the interval: {figures['overruns']} (longest {figures['longest_s']:.2f} s, "
          f"median {figures['median_s']:.2f} s; goal: none)")
    spacing = figures["largest_spacing_s"]
    print(f"  lake: {figures['lake_cycles']} cycles in consumer_lag, largest spacing "
          + (f"{spacing:.1f} s" if spacing is not None else "-")
          + f", {figures['missing_cycles']} cycles missing, {figures['lake_gap_rows']} lake_gap rows (goal: none)")
    print(f"  peak resident memory of the loop: {figures['peak_rss_mb']:.0f} MB (goal <= 500 MB)")
