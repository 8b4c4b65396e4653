"""``kpulse lake compact [--until TIME] [--dry-run] [--daily]`` and the ``spark-submit
spark_jobs/lake_compact.py`` entry's arguments."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping
from datetime import datetime, timedelta, UTC

from kpulse.errors import KpulseError
from kpulse.lake.store import one_line
from spark_jobs.command import SloArgumentError, parse_until


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--master", help="Spark master URL (default: local[*], or what spark-submit set)")
    parser.add_argument("--lake", help="lake path or URI (default: lake.path of the config)")
    parser.add_argument("--until", help="act as if it were this UTC time, ISO 8601: days before its date are "
                                        "closed (default: now)")
    parser.add_argument("--dry-run", action="store_true", help="print what would be done, change nothing")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--daily", action="store_true",
                        help="keep running: one run a day at lake.retention.daily_at (UTC; until SIGTERM)")


def add_parsers(commands) -> None:
    lake = commands.add_parser("lake", help="the lake's upkeep (PySpark job)")
    actions = lake.add_subparsers(dest="action", required=True, metavar="ACTION")
    add_run_arguments(actions.add_parser(
        "compact", help="retention, downsampling and one file per table and closed day (idempotent)"))


def run_command(args: argparse.Namespace, config) -> int:
    """``kpulse lake compact``: the retention of ``config`` (a :class:`KpulseConfig`)."""
    lake = config.lake.path if args.lake is None else args.lake
    return execute(args, lake, config.lake.retention, credentials=config.lake.credential_environment())


def execute(args: argparse.Namespace, lake: str, retention, *, credentials: Mapping[str, str] | None = None) -> int:
    """Run the job once, or daily (shared by ``kpulse lake compact`` and spark-submit).
    ``credentials``: ``lake.s3``'s AWS variables, handed to Spark's executors."""
    from kpulse.progress import Progress
    from spark_jobs.lake_io import check_lake

    until = parse_until(args.until)
    if args.daily and (until is not None or args.dry_run):
        raise SloArgumentError("--daily takes neither --until nor --dry-run")
    progress = Progress()
    if args.daily:
        return _daily(args, lake, retention, progress, credentials)
    check_lake(lake)  # before starting Spark: a wrong path is one line
    return _run_once(args, lake, retention, until, progress, credentials)


def _run_once(args, lake: str, retention, until: float | None, progress,
              credentials: Mapping[str, str] | None = None) -> int:
    from spark_jobs.compact_job import run
    from spark_jobs.lake_io import build_session

    if args.dry_run:  # planning lists files on the driver: no Spark needed
        result = run(None, lake, retention, until=until, dry_run=True, progress=progress)
    else:
        with progress.step(f"starting Spark ({args.master or 'local'})"):
            spark = build_session(args.master, app_name="kpulse-lake-compact", credentials=credentials)
        try:
            result = run(spark, lake, retention, until=until, progress=progress)
        finally:
            spark.stop()
    if args.json:
        print(json.dumps(result.as_dict(), indent=2, default=str))
    else:
        _print(result, args.dry_run)
    for failure in result.failed:
        print(f"kpulse lake compact: {failure}; left as it was, the next run retries", file=sys.stderr)
    return 1 if result.failed else 0


def _print(result, dry_run: bool) -> None:
    if dry_run:
        for task in result.planned:
            print(f"would {' + '.join(task.actions)}: {task.table} {task.day.isoformat()}")
        print(f"{len(result.planned)} partition(s) to work on; nothing changed (dry run)")
        return
    before = sum(d.bytes_before for d in result.done if d.action != "downsample")
    after = sum(d.bytes_after for d in result.done if d.action != "downsample")
    for done in result.done:
        print(f"{done.action:<10} {done.table} {done.day.isoformat()}: {done.files_before} -> {done.files_after} "
              f"file(s), {done.rows_before} -> {done.rows_after} rows, {_mb(done.bytes_before)} -> "
              f"{_mb(done.bytes_after)}, {done.seconds:.1f} s")
    print(f"run {result.run_id}: {len(result.done)} action(s) on days before {result.today.isoformat()}, "
          f"{_mb(before)} -> {_mb(after)} (recorded in lake_compaction)")


def _mb(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


def seconds_until(daily_at: str, now: datetime) -> float:
    """Seconds from ``now`` (aware) to the next ``HH:MM`` UTC. Pure."""
    hour, minute = map(int, daily_at.split(":"))
    at = now.astimezone(UTC).replace(hour=hour, minute=minute, second=0, microsecond=0)
    if at <= now:
        at += timedelta(days=1)
    return (at - now).total_seconds()


def _daily(args, lake: str, retention, progress, credentials: Mapping[str, str] | None = None) -> int:
    """The service of ``kpulse up``: sleeps until ``daily_at``, starts Spark, compacts, stops
    Spark (no JVM held between runs). A failed run is one line; SIGTERM ends the wait."""
    import signal
    import threading

    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    while True:
        wait = seconds_until(retention.daily_at, datetime.now(UTC))
        progress.note(f"next compaction at {retention.daily_at} UTC, in {wait / 3600:.1f} h")
        if stop.wait(wait):
            return 0
        try:
            _run_once(args, lake, retention, None, progress, credentials)
        except Exception as error:  # noqa: BLE001 - the service outlives a failed run (Spark did not start, ...)
            text = str(error) if isinstance(error, KpulseError) else one_line(error)
            print(f"kpulse lake compact: run failed, the next one tomorrow: {text}", file=sys.stderr, flush=True)
        time.sleep(1)  # past HH:MM before planning the next run


def main(argv: list[str] | None = None) -> int:
    """``spark-submit spark_jobs/lake_compact.py [--lake PATH] [...]``: errors as one line."""
    parser = argparse.ArgumentParser(prog="lake_compact.py", description="kpulse lake compaction (spark-submit entry)")
    add_run_arguments(parser)
    parser.add_argument("--config", help="kpulse.yaml (default: $KPULSE_CONFIG or the built-in default)")
    args = parser.parse_args(argv)
    try:
        from kpulse.config import load_config
        from kpulse.lake.store import use_credentials

        config = load_config(args.config)
        use_credentials(config.lake.credential_environment())
        return execute(args, config.lake.path if args.lake is None else args.lake, config.lake.retention,
                       credentials=config.lake.credential_environment())
    except KpulseError as error:
        source = getattr(error, "source", None)
        print(f"lake_compact: error: {source + ': ' if source else ''}{error}", file=sys.stderr)
        return 1
