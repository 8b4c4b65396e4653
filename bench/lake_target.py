"""Where a lake bench writes: a local directory, a real S3 server on loopback, or a bucket of yours.

``--lake dir`` (the default) is a temporary directory (``--keep DIR`` where the bench has it);
``--lake s3`` starts s3proxy (``localkafka/s3_server.py``, the server ``make test`` uses: its jar is
in the cache after ``make setup``) on a free loopback port with a fresh data directory under the
system's temporary folder (the same disk as ``--lake dir``), random credentials and a bucket, sets
``AWS_ACCESS_KEY_ID`` and ``AWS_SECRET_ACCESS_KEY`` for the run (Spark's workers inherit them)
and stops it at the end; ``--lake-uri s3://bucket/prefix?...`` writes under
``<prefix>/kpulse-bench-<hex>`` of your location (credentials from your environment) and deletes
that folder at the end. ``--compare`` runs the same workload on ``dir`` and then on ``s3`` (or your
``--lake-uri``) and prints both and their ratio.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import socket
import sys
import tempfile
from contextlib import ExitStack, contextmanager
from pathlib import Path
from collections.abc import Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

BUCKET = "kpulse-bench"
SERVERS: dict[str, int] = {}
"""Lake location -> the pid of the s3proxy serving it (its CPU is printed beside the timings)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lake", choices=("dir", "s3"), help="dir: a local directory (default); s3: a real S3 "
                        "server (s3proxy) started on loopback for the run; either prints where the time goes")
    parser.add_argument("--lake-uri", help="an S3 location of yours (s3://bucket/prefix?endpoint_override=...), "
                        "credentials from the AWS environment; the bench writes and then deletes a folder under it")
    parser.add_argument("--compare", action="store_true",
                        help="the same workload on a local directory and on S3 (--lake-uri, else s3proxy): both and the ratio")
    parser.add_argument("--no-count", action="store_true",
                        help="do not wrap the lake's filesystem (no per-call breakdown; the figures without its overhead)")


def kinds(args: argparse.Namespace) -> list[str]:
    """The lakes to run on, in order: ``dir``, ``s3`` (s3proxy) or ``uri``."""
    remote = "uri" if args.lake_uri else "s3"
    if args.compare:
        return ["dir", remote]
    if args.lake_uri:
        return ["uri"]
    return [args.lake or "dir"]


def breakdown(args: argparse.Namespace) -> bool:
    """Whether to count the filesystem calls: with any of the lake options, unless --no-count."""
    return bool(args.lake or args.lake_uri or args.compare) and not args.no_count


def check(args: argparse.Namespace) -> str | None:
    """One line when the options cannot go together, else None."""
    if args.lake_uri and not args.lake_uri.startswith(("s3://", "s3a://")):
        return f"--lake-uri {args.lake_uri!r}: give an s3:// location"
    if args.lake_uri and args.lake == "dir" and not args.compare:
        return "--lake dir and --lake-uri: choose one (or --compare for both)"
    if getattr(args, "keep", None) and (args.compare or args.lake_uri or args.lake == "s3"):
        return "--keep is for a local directory: it does not go with --lake s3, --lake-uri or --compare"
    return None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def s3proxy() -> Iterator[str]:
    """A fresh s3proxy with a bucket; its lake location (the credentials in the environment)."""
    from localkafka.s3_server import REGION, S3Server

    data = Path(tempfile.mkdtemp(prefix="kpulse-bench-s3-"))
    server = S3Server(data, free_port(), f"bench-{secrets.token_hex(4)}", secrets.token_urlsafe(24))
    saved = {key: os.environ.get(key) for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    try:
        server.start()
        server.create_bucket(BUCKET)
        os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"] = server.access_key, server.secret_key
        location = f"s3://{BUCKET}/lake?endpoint_override=127.0.0.1:{server.port}&scheme=http&region={REGION}"
        if server.process is not None:
            SERVERS[location] = server.process.pid
        yield location
    finally:
        server.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(data, ignore_errors=True)


@contextmanager
def under(uri: str) -> Iterator[str]:
    """A fresh folder under the user's S3 location, deleted at the end."""
    from kpulse.lake.store import resolve

    base, _, query = uri.partition("?")
    location = f"{base.rstrip('/')}/kpulse-bench-{secrets.token_hex(4)}" + (f"?{query}" if query else "")
    try:
        yield location
    finally:
        fs, inner = resolve(location)
        try:
            fs.delete_dir(inner)
        except OSError:
            pass


@contextmanager
def directory(keep: str | None, prefix: str) -> Iterator[str]:
    path = Path(keep) if keep else Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield str(path)
    finally:
        if not keep:
            shutil.rmtree(path, ignore_errors=True)


@contextmanager
def locations(args: argparse.Namespace, prefix: str) -> Iterator[dict[str, str]]:
    """Every lake the run needs, started before the first Spark session (its workers take their
    environment, the credentials, from the JVM it starts): kind -> location."""
    with ExitStack() as stack:
        found = {}
        for kind in kinds(args):
            if kind == "dir":
                found[kind] = stack.enter_context(directory(getattr(args, "keep", None), prefix))
            elif kind == "s3":
                found[kind] = stack.enter_context(s3proxy())
            else:
                found[kind] = stack.enter_context(under(args.lake_uri))
        yield found


def server_cpu(location: str) -> float:
    """CPU seconds so far of the s3proxy serving ``location`` (0 for a directory or your bucket)."""
    from bench.lake_timing import tree_cpu_seconds

    pid = SERVERS.get(location)
    return tree_cpu_seconds(pid) if pid else 0.0


def label(kind: str) -> str:
    return {"dir": "local directory", "s3": "S3 (s3proxy on loopback)", "uri": "S3 (--lake-uri)"}[kind]


def load() -> str:
    """The load average, as ``uptime`` prints it."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f}"
