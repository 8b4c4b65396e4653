"""Files only the kpulse user may read: the audit spool, approval requests, lock files (and the
users file, :mod:`operations.access`). Files are created ``0600`` and directories ``0700``,
whatever the umask; a file that exists already is narrowed to ``0600`` when opened."""

from __future__ import annotations

import os
from pathlib import Path

FILE_MODE = 0o600
DIRECTORY_MODE = 0o700


def private_dir(path: Path) -> None:
    """Create ``path`` and its missing parents ``0700`` (existing directories are left as they are)."""
    missing = []
    while not path.exists() and path != path.parent:
        missing.append(path)
        path = path.parent
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=DIRECTORY_MODE)
        except FileExistsError:
            continue
        os.chmod(directory, DIRECTORY_MODE)  # mkdir's mode is filtered by the umask


def open_private(path: Path, flags: int = os.O_RDWR | os.O_CREAT) -> int:
    """``os.open`` of a ``0600`` file in a private directory (a descriptor)."""
    private_dir(path.parent)
    descriptor = os.open(path, flags, FILE_MODE)
    os.fchmod(descriptor, FILE_MODE)
    return descriptor


def write_private(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` at once (a ``.``-prefixed temporary file renamed over it)."""
    temporary = path.with_name(f".{path.name}.tmp")
    with os.fdopen(open_private(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "w") as file:
        file.write(text)
    os.replace(temporary, path)
