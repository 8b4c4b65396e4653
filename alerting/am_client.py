"""HTTP to one Alertmanager (API v2): post alerts, create, list and expire silences.

Each request has the configured timeout and is retried with exponential backoff (tenacity) when the
connection fails, it times out or Alertmanager answers 5xx; a 4xx answer (a request Alertmanager
refuses) is not retried. A request that still fails raises :class:`AlertmanagerError`, whose
message is one line naming the Alertmanager.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any
from collections.abc import Callable
from urllib.parse import quote

from tenacity import RetryError, Retrying, retry_if_exception, stop_after_attempt, wait_exponential

BACKOFF_FIRST_SECONDS = 0.5
"""Wait before the first retry; doubled before each next one..."""
BACKOFF_MAX_SECONDS = 8.0
"""...up to this."""
USER_AGENT = "kpulse"


class AlertmanagerError(Exception):
    """A request to an Alertmanager failed (after its retries); ``str()`` is one line."""


class _Retryable(Exception):
    """A failure worth retrying: no answer, a timeout, or a 5xx."""


Opener = Callable[..., Any]
"""``urllib.request.urlopen``'s signature; tests may pass another."""


class AlertmanagerClient:
    """One Alertmanager at ``url`` (its base, e.g. ``http://am:9093``). Connects to nothing until asked."""

    def __init__(self, url: str, *, timeout: float = 10.0, retries: int = 3,
                 backoff_first: float = BACKOFF_FIRST_SECONDS, backoff_max: float = BACKOFF_MAX_SECONDS,
                 opener: Opener = urllib.request.urlopen) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.retries = retries
        self._backoff = (backoff_first, backoff_max)
        self._open = opener

    def post_alerts(self, alerts: list[dict[str, Any]]) -> None:
        """``POST /api/v2/alerts``."""
        self._request("POST", "/api/v2/alerts", alerts)

    def create_silence(self, silence: dict[str, Any]) -> str:
        """``POST /api/v2/silences``; the new silence's id."""
        answer = self._request("POST", "/api/v2/silences", silence)
        try:
            return str(answer["silenceID"])
        except (KeyError, TypeError):
            raise AlertmanagerError(f"Alertmanager {self.url} answered a silence without its id: "
                                    f"{str(answer)[:200]!r}") from None

    def expire_silence(self, silence_id: str) -> None:
        """``DELETE /api/v2/silence/{id}`` (Alertmanager expires it)."""
        self._request("DELETE", f"/api/v2/silence/{quote(silence_id, safe='')}", None)

    def silences(self) -> list[dict[str, Any]]:
        """``GET /api/v2/silences``: every silence Alertmanager holds (active, pending, expired)."""
        return list(self._request("GET", "/api/v2/silences", None) or [])

    def alerts(self) -> list[dict[str, Any]]:
        """``GET /api/v2/alerts``: the alerts Alertmanager holds."""
        return list(self._request("GET", "/api/v2/alerts", None) or [])

    def _request(self, method: str, path: str, body: Any) -> Any:
        first, largest = self._backoff
        retrying = Retrying(stop=stop_after_attempt(self.retries + 1),
                            wait=wait_exponential(multiplier=first, min=first, max=largest),
                            retry=retry_if_exception(lambda error: isinstance(error, _Retryable)), reraise=False)
        try:
            return retrying(self._once, method, path, body)
        except RetryError as error:
            cause = error.last_attempt.exception()
            tries = f" ({self.retries + 1} attempts)" if self.retries else ""
            raise AlertmanagerError(f"Alertmanager {self.url}: {cause}{tries}") from None

    def _once(self, method: str, path: str, body: Any) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.url}{path}", data=data, method=method,
                                         headers={"Content-Type": "application/json", "User-Agent": USER_AGENT})
        try:
            with self._open(request, timeout=self.timeout) as response:
                text = response.read()
        except urllib.error.HTTPError as error:
            detail = _one_line(error.read().decode(errors="replace")) if error.fp is not None else ""
            message = f"{method} {path} answered {error.code} {error.reason}" + (f": {detail}" if detail else "")
            if error.code >= 500:
                raise _Retryable(message) from None
            raise AlertmanagerError(f"Alertmanager {self.url}: {message}") from None
        except urllib.error.URLError as error:
            raise _Retryable(f"{method} {path}: {_one_line(str(error.reason))}") from None
        except (TimeoutError, OSError) as error:
            raise _Retryable(f"{method} {path}: {type(error).__name__}: {_one_line(str(error))}") from None
        if not text.strip():
            return None
        try:
            return json.loads(text)
        except ValueError:
            raise AlertmanagerError(f"Alertmanager {self.url}: {method} {path} answered something that is not "
                                    f"JSON: {_one_line(text.decode(errors='replace'))[:200]!r}") from None


def _one_line(text: str) -> str:
    return " ".join(text.split())[:300]
