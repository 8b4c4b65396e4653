"""The operations fuzz harness in its long mode: thousands of hostile cases per operation
(``tests/fuzz_operations.py``; ``make test`` runs 50 of each), counted.

Run: ``.venv/bin/python bench/fuzz_operations.py`` (10,000 cases per operation; ``--cases N``,
``--operations reset-offsets,from-file``). It starts a three-node cluster of its own on ports
``$KPULSE_TEST_PORT_BASE`` (default 48090) + 1..3 in a temporary state directory, builds the
harness's topics and groups, runs, and stops the cluster. ``--bootstrap`` attacks an existing
cluster instead (the harness's topics and groups get a fresh prefix there; it executes offset
resets only on its own groups, Streams group resets on its own Streams group (deleting its internal
topics and creating them again), never a Streams application reset or a reassignment; it starts a
Streams application and a share consumer of its own there once).

Prints progress while it runs, then per operation: cases tried, tracebacks, wrong changes, one-line
errors, plans, unclear endings and malformed values accepted, with the first distinct tracebacks
(exception, last frame) and wrong changes and the command line that showed each. ``--log FILE``
writes every finding as a JSON line. Exit status 1 when any traceback or wrong change was found.
Cases are random unless ``--seed N``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fuzz_operations import OPERATIONS, Tally, build_world, run_operation  # noqa: E402

PROGRESS_SECONDS = 15


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=10_000, help="Hypothesis cases per operation (default 10000)")
    parser.add_argument("--operations", default=",".join(OPERATIONS), help="comma-separated, of: " + ", ".join(OPERATIONS))
    parser.add_argument("--bootstrap", help="attack this cluster instead of starting one")
    parser.add_argument("--port-base", type=int, default=int(os.environ.get("KPULSE_TEST_PORT_BASE", "48090")))
    parser.add_argument("--seed", type=int, help="the same cases as another run with this seed")
    parser.add_argument("--log", help="write every finding (traceback, wrong change, unclear, malformed accepted) here")
    parser.add_argument("--examples", type=int, default=5, help="distinct tracebacks / wrong changes shown per operation")
    args = parser.parse_args()
    operations = [o.strip() for o in args.operations.split(",") if o.strip()]
    unknown = sorted(set(operations) - set(OPERATIONS))
    if unknown:
        parser.error(f"unknown operation(s) {', '.join(unknown)}; one of {', '.join(OPERATIONS)}")

    stopping = []

    def stop(signum, frame):  # kpulse's main() turns KeyboardInterrupt into exit 130: stop after the case
        stopping.append(signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    cluster, world = None, None
    workdir = Path(tempfile.mkdtemp(prefix="kpulse-fuzz-"))
    began = time.monotonic()
    tallies: list[Tally] = []
    running: list[Tally] = []
    # operations done, and the one running (its counts so far are shown when stopped)
    try:
        bootstrap, prefix = args.bootstrap, f"fz{int(time.time()) % 100_000}" if args.bootstrap else "fz"
        if bootstrap is None:
            from localkafka.cluster import LocalCluster
            from kpulse.local_layout import ClusterLayout
            from kpulse.progress import Progress

            cluster = LocalCluster(workdir / "cluster", ClusterLayout.from_base(args.port_base), Progress())
            bootstrap = cluster.up().bootstrap_servers
        world = build_world(bootstrap, workdir / "harness", prefix)
        print(f"harness ready on {bootstrap} (prefix {prefix}); {args.cases} cases per operation "
              f"({'seed ' + str(args.seed) if args.seed is not None else 'random'})", flush=True)
        log = open(args.log, "w") if args.log else None
        for operation in operations:
            started, shown = time.monotonic(), [time.monotonic()]

            def progress(tally, started=started, shown=shown, operation=operation):
                running[:] = [tally]
                if stopping:
                    raise KeyboardInterrupt
                if time.monotonic() - shown[0] >= PROGRESS_SECONDS:
                    shown[0] = time.monotonic()
                    elapsed = shown[0] - started
                    print(f"[{shown[0] - began:6.0f} s] {operation}: {tally.cases}/{args.cases} cases, "
                          f"{tally.tracebacks} tracebacks, {tally.wrong} wrong ({tally.cases / elapsed:.1f} cases/s)",
                          flush=True)

            tally = run_operation(world, operation, args.cases, derandomize=False, seed=args.seed,
                                  on_case=progress, log=log)
            tallies.append(tally)
            running.clear()
            print(f"[{time.monotonic() - began:6.0f} s] {tally.line()}", flush=True)
        if log:
            log.close()
    except KeyboardInterrupt:
        tallies += running
        print("stopped: counts so far", flush=True)
    finally:
        if world is not None:
            world.close()
        if cluster is not None:
            cluster.down(wipe=True)
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"\n{sum(t.cases for t in tallies)} cases in {time.monotonic() - began:.0f} s on {os.cpu_count()} cores")
    for tally in tallies:
        print(tally.line())
    for tally in tallies:
        if tally.tracebacks or tally.wrong or tally.malformed or tally.categories["unclear"]:
            print("\n" + tally.report(args.examples))
    return 1 if any(t.tracebacks or t.wrong for t in tallies) else 0


if __name__ == "__main__":
    sys.exit(main())
