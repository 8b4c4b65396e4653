#!/usr/bin/env python3
"""Container health probe of the kpulse image (its HEALTHCHECK): exit 0 when an HTTP GET of
``$KPULSE_HEALTH_URL`` answers 2xx within ``$KPULSE_HEALTH_TIMEOUT`` seconds, else exit 1.

The default URL is the dashboard's health endpoint; the compose services that run something else
from the same image (collector exporter, Spark master and worker UIs) set their own URL. The slim
image has neither curl nor wget, hence this script.
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request

DEFAULT_URL = "http://127.0.0.1:8501/_stcore/health"


def main() -> int:
    url = os.environ.get("KPULSE_HEALTH_URL") or DEFAULT_URL
    timeout = float(os.environ.get("KPULSE_HEALTH_TIMEOUT") or 5)
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            ok = 200 <= response.status < 300
    except (OSError, urllib.error.URLError, ValueError) as error:
        print(f"unhealthy: {url}: {error}", file=sys.stderr)
        return 1
    if not ok:
        print(f"unhealthy: {url}: HTTP {response.status}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
