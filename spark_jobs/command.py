"""``kpulse slo run | check | export-rules`` and the ``spark-submit`` entry's arguments."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from datetime import datetime, UTC

from kpulse.errors import KpulseError


class SloArgumentError(KpulseError):
    """A malformed command-line value (e.g. --until)."""


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--master", help="Spark master URL (default: local[*], or what spark-submit set)")
    parser.add_argument("--definitions", help="SLO definitions YAML (default: spark_jobs/slo-definitions.yaml)")
    parser.add_argument("--cluster", action="append", help="only this cluster (repeatable; default: all in the lake)")
    parser.add_argument("--until", help="evaluate up to this UTC time, ISO 8601 (default: now)")
    parser.add_argument("--lake", help="lake path or URI (default: lake.path of the config)")
    parser.add_argument("--full", action="store_true", help="recompute from the first sample, not incrementally")
    parser.add_argument("--json", action="store_true", help="print the result (latest status rows) as JSON")
    parser.add_argument("--every", type=float, metavar="SECONDS",
                        help="keep running: one incremental run every SECONDS (one Spark session; until SIGTERM)")


def add_parsers(commands) -> None:
    slo = commands.add_parser("slo", help="SLIs, error budgets and burn rates from the lake (PySpark job)")
    actions = slo.add_subparsers(dest="action", required=True, metavar="ACTION")
    add_run_arguments(actions.add_parser("run", help="compute slo_minute, slo_hour and slo_status into the lake"))
    check = actions.add_parser("check", help="validate SLO definitions and print them")
    check.add_argument("--definitions", help="SLO definitions YAML (default: the shipped one)")
    rules = actions.add_parser("export-rules", help="Prometheus recording and alerting rules for the same SLOs")
    rules.add_argument("--definitions", help="SLO definitions YAML (default: the shipped one)")
    rules.add_argument("--output", "-o", help="write to this file instead of stdout")


def run_command(args: argparse.Namespace, config) -> int:
    """``kpulse slo ...``; ``config`` (a :class:`KpulseConfig`) gives the lake of ``run`` without
    ``--lake`` (else it is ``None``)."""
    from spark_jobs.definitions import load_definitions

    definitions = load_definitions(args.definitions)
    if args.action == "check":
        print(f"{definitions.source}: {len(definitions.slos)} SLO(s) OK, lateness {definitions.lateness_minutes}m")
        from spark_jobs.burn import ALERT_CONDITIONS, allowed_bad_slices, default_min_events

        for slo in definitions.slos:
            if slo.budgeting_method == "Timeslices":
                budget = f", {float(allowed_bad_slices(slo.target, slo.window_minutes)):g} bad minutes allowed"
            else:
                least = slo.min_events or definitions.min_events or int(default_min_events(slo.target))
                budget = f", pages from {least:,} events"
            factors = "/".join(f"{round(float(c.factor(slo.window_minutes)), 2):g}" for c in ALERT_CONDITIONS)
            print(f"  {slo.name:<24} {slo.scope:<15} {slo.indicator:<30} {slo.budgeting_method:<11} "
                  f"{slo.target:g} over {slo.window}{budget}"
                  + (f", {len(slo.overrides)} override(s)" if slo.overrides else "")
                  + f", burn-rate alerts at {factors}")
        return 0
    if args.action == "export-rules":
        from spark_jobs.rules import rules_yaml

        text = rules_yaml(definitions)
        if args.output:
            with open(args.output, "w") as out:
                out.write(text)
            print(f"wrote {args.output}")
        else:
            print(text, end="")
        return 0
    return execute(args, config.lake.path if args.lake is None else args.lake, definitions,
                   credentials=config.lake.credential_environment())


def execute(args: argparse.Namespace, lake: str, definitions, *,
            credentials: Mapping[str, str] | None = None) -> int:
    """Run the job (shared by ``kpulse slo run`` and ``spark-submit spark_jobs/slo_job.py``).
    ``credentials``: ``lake.s3``'s AWS variables, handed to Spark's executors."""
    from kpulse.progress import Progress
    from spark_jobs.lake_io import build_session, check_lake

    until = parse_until(args.until)
    every = getattr(args, "every", None)
    if every is not None and (every <= 0 or until is not None):
        raise SloArgumentError("--every takes a number of seconds > 0, and not with --until")
    if every is None:
        check_lake(lake)  # before starting Spark: a wrong path is one line, without the JVM's start-up noise
    progress = Progress()
    with progress.step(f"starting Spark ({args.master or 'local'})"):
        spark = build_session(args.master, credentials=credentials)
    try:
        if every is not None:
            return _every(spark, args, lake, definitions, every, progress)
        _run_once(spark, args, lake, definitions, until, progress)
    finally:
        spark.stop()
    return 0


def _run_once(spark, args, lake: str, definitions, until: float | None, progress) -> None:
    from spark_jobs.job import run

    result = run(spark, lake, definitions, until=until, clusters=args.cluster, full=args.full, progress=progress)
    for problem in result.unreadable:
        print(f"kpulse slo: skipped unreadable file {problem}; its rows are left out (recorded in lake_gap)",
              file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(result.as_dict(), indent=2, default=str))
        return
    summary = result.as_dict()
    print(f"evaluated until {summary['evaluated_until']}: {summary['minute_rows']} minute rows, "
          f"{summary['status_rows']} status rows written to {lake}")
    from kpulse.lake.slo_status import budget_text, coverage_text

    for row in summary["status"]:
        sli = "no data" if row["sli"] is None else f"SLI {row['sli']:.5f}"
        budget = "" if row["error_budget_remaining"] is None else (
            f", budget left {row['error_budget_remaining']:.2%} ({budget_text(row)}, "
            f"coverage {coverage_text(row['coverage'])})")
        burn = "" if row["burn_rate_1h"] is None else f", burn 1h {row['burn_rate_1h']:.2f}"
        alert = f"  ALERT {row['alert']} ({row['alert_conditions']})" if row["alert"] else ""
        print(f"  {row['cluster']} {row['slo']} {row['entity']}: {sli}{budget}{burn}{alert}")


def _every(spark, args, lake: str, definitions, every: float, progress) -> int:
    """The service mode (``kpulse up``, the compose file): an incremental run every ``every``
    seconds on one Spark session. A failed run (lake not written yet, unreachable, corrupt file)
    is one line and the next run tries again; SIGTERM or Ctrl-C ends the loop between runs."""
    import signal
    import threading
    import time

    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    while not stop.is_set():
        began = time.monotonic()
        try:
            _run_once(spark, args, lake, definitions, None, progress)
        except KpulseError as error:
            print(f"kpulse slo: run failed, the next one in {every:g} s: {error}", file=sys.stderr, flush=True)
        args.full = False  # --full applies to the first run only
        stop.wait(max(0.0, every - (time.monotonic() - began)))
    return 0


def parse_until(text: str | None) -> float | None:
    if text is None or text == "now":
        return None
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise SloArgumentError(f"--until: not an ISO 8601 time: {text!r} (e.g. 2026-11-23T09:00:00Z)") from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.timestamp()


def main(argv: list[str] | None = None) -> int:
    """``spark-submit spark_jobs/slo_job.py --lake PATH [...]``: the same job, errors as one line."""
    parser = argparse.ArgumentParser(prog="slo_job.py", description="kpulse SLO job (spark-submit entry)")
    add_run_arguments(parser)
    parser.add_argument("--config", help="kpulse.yaml: its lake.path and lake.s3 (default: $KPULSE_CONFIG or the "
                                         "built-in default)")
    args = parser.parse_args(argv)
    try:
        from kpulse.config import load_config
        from kpulse.lake.store import use_credentials
        from spark_jobs.definitions import load_definitions

        config = load_config(args.config)
        use_credentials(config.lake.credential_environment())
        return execute(args, config.lake.path if args.lake is None else args.lake, load_definitions(args.definitions),
                       credentials=config.lake.credential_environment())
    except KpulseError as error:
        source = getattr(error, "source", None)
        print(f"slo_job: error: {source + ': ' if source else ''}{error}", file=sys.stderr)
        return 1
