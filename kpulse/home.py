"""Where kpulse keeps things on disk.

- the *cache* holds what is downloaded or compiled once and reused across runs (Maven artifacts,
  the compiled demo Streams application): ``$KPULSE_CACHE_DIR``, default ``~/.cache/kpulse``;
- the *state directory* holds what a running local cluster and demo own (data, logs, PIDs):
  ``$KPULSE_STATE_DIR``, default ``.kpulse/`` in the checkout (git-ignored).
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
CHECKOUT_DIR = PACKAGE_DIR.parent


def cache_dir() -> Path:
    configured = os.environ.get("KPULSE_CACHE_DIR")
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "kpulse"


def state_dir() -> Path:
    configured = os.environ.get("KPULSE_STATE_DIR")
    if configured:
        return Path(configured).expanduser().resolve()
    if (CHECKOUT_DIR / "pyproject.toml").exists():
        return CHECKOUT_DIR / ".kpulse"
    return Path.cwd() / ".kpulse"
