"""Progress lines for long work (setup, cluster start): one line per step, with elapsed time."""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from typing import TextIO
from collections.abc import Iterator


class Progress:
    """Prints ``[ 12.3s] step ... done (2.1s)`` lines to a stream (stderr by default)."""

    def __init__(self, stream: TextIO | None = None, quiet: bool = False):
        self._stream = stream if stream is not None else sys.stderr
        self._quiet = quiet
        self._started = time.monotonic()

    def note(self, message: str) -> None:
        if not self._quiet:
            elapsed = time.monotonic() - self._started
            print(f"[{elapsed:6.1f}s] {message}", file=self._stream, flush=True)

    @contextmanager
    def step(self, message: str) -> Iterator[None]:
        began = time.monotonic()
        self.note(f"{message} ...")
        yield
        self.note(f"{message}: done ({time.monotonic() - began:.1f}s)")


SILENT = Progress(quiet=True)
