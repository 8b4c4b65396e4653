"""One operation at a time per target: an exclusive lock file per cluster and target under the
state directory (``<state>/locks/<cluster>/<target>.lock``), held while an executor runs.

``flock`` locks vanish with the process that held them, so a crashed executor never leaves a
stale lock behind. They hold between processes on one machine (the CLI and the dashboard of one
kpulse installation), not across machines: several kpulse hosts acting on the same cluster still
rely on the executor's re-check of the group's state and offsets. Lock files are ``0600`` in
``0700`` directories (:mod:`operations.private_files`).
"""

from __future__ import annotations

import fcntl
import os
import re
from contextlib import contextmanager
from pathlib import Path
from collections.abc import Iterator
from urllib.parse import quote

from operations.errors import Refused
from operations.private_files import open_private

_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


def lock_path(state_dir: Path, cluster: str, target: str) -> Path:
    return state_dir / "locks" / _SAFE.sub("_", cluster) / (quote(target, safe="") + ".lock")


@contextmanager
def exclusive(state_dir: Path, cluster: str, target: str) -> Iterator[None]:
    """Hold the lock of ``target`` or raise :class:`Refused` at once when another process or
    thread holds it."""
    path = lock_path(state_dir, cluster, target)
    descriptor = open_private(path)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Refused(f"another operation on {target} of cluster {cluster!r} is in progress; "
                          "try again when it has finished") from None
        os.ftruncate(descriptor, 0)
        os.write(descriptor, f"{os.getpid()}\n".encode())
        yield
    finally:
        os.close(descriptor)
