"""SASL/OAUTHBEARER tokens for kafka-python: the OAuth 2.0 client credentials grant (RFC 6749,
section 4.4) against the configured token endpoint, as librdkafka (``sasl.oauthbearer.method=oidc``)
and Kafka's Java client (``OAuthBearerLoginCallbackHandler``) do it for the rest of kpulse.

:class:`ClientCredentialsTokens` asks for a token, keeps it while more than a fifth of its lifetime
is left (librdkafka and the Java client refresh at 80 % too), and asks again after that; a refresh
that fails leaves the old token in use while it has not expired, and is tried again
:data:`RETRY_SECONDS` later. A refusal (a wrong secret, an unknown client, a scope the client may
not have) or an unreachable endpoint is :class:`TokenRequestFailed`, one line naming the endpoint.
:func:`token_provider` wraps it as the ``sasl_oauth_token_provider`` kafka-python wants, one per
identity in a process.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol
from collections.abc import Callable

from kpulse.errors import KpulseError

if TYPE_CHECKING:
    from kpulse.config.model import SecurityConfig

REFRESH_AT_FRACTION = 0.8
"""A token is fetched again once this fraction of its lifetime has passed."""
RETRY_SECONDS = 10.0
"""After a failed refresh (the old token still valid), the next attempt waits this long."""
REQUEST_TIMEOUT_SECONDS = 10.0
"""Connect and read timeout of one token request."""
_TEXT_CHARS = 200


class TokenRequestFailed(KpulseError):
    """The token endpoint did not give a token; one line naming the endpoint and why."""


@dataclass(frozen=True)
class AccessToken:
    """A token the endpoint gave."""

    value: str = field(repr=False)
    """The JWT (compact serialization) sent to the broker."""
    issued_at: float
    """Wall-clock seconds when it was asked for."""
    expires_at: float
    """Wall-clock seconds when it expires."""

    @property
    def refresh_at(self) -> float:
        return self.issued_at + REFRESH_AT_FRACTION * (self.expires_at - self.issued_at)


class ClientCredentialsTokens:
    """Tokens of one client at one token endpoint. ``post`` is ``requests.post`` (tests pass a
    recorded endpoint), ``clock`` wall-clock seconds. Constructing it asks for nothing."""

    def __init__(self, token_endpoint_url: str, client_id: str, client_secret: str, scope: str | None = None, *,
                 ca_location: str | None = None, clock: Callable[[], float] = time.time,
                 post: Callable[..., Any] | None = None, timeout: float = REQUEST_TIMEOUT_SECONDS):
        self.token_endpoint_url = token_endpoint_url
        self.client_id = client_id
        self._client_secret = client_secret
        self.scope = scope
        self.ca_location = ca_location
        """What verifies an https endpoint (a PEM file or a directory); None: requests' own CAs."""
        self._clock = clock
        self._post = post
        self._timeout = timeout
        self._token: AccessToken | None = None
        self._retry_at = float("-inf")
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ClientCredentialsTokens({self.token_endpoint_url!r}, client_id={self.client_id!r})"

    def token(self) -> str:
        """A token with more than a fifth of its lifetime left, fetched when needed (or, while a
        refresh fails, the current one until it expires); raises :class:`TokenRequestFailed`."""
        with self._lock:
            now = self._clock()
            current = self._token
            if current is not None and now < current.refresh_at:
                return current.value
            if current is not None and now < current.expires_at and now < self._retry_at:
                return current.value
            try:
                self._token = self._fetch()
            except TokenRequestFailed:
                if current is not None and now < current.expires_at:
                    self._retry_at = now + RETRY_SECONDS
                    return current.value
                raise
            return self._token.value

    def invalidate(self) -> None:
        """Forget the current token (the broker refused it): the next call fetches a new one."""
        with self._lock:
            self._token = None
            self._retry_at = float("-inf")

    def _fetch(self) -> AccessToken:
        import requests

        post = self._post or requests.post
        data = {"grant_type": "client_credentials"}
        if self.scope:
            data["scope"] = self.scope
        issued_at = self._clock()
        url = self.token_endpoint_url
        try:
            answer = post(url, data=data, auth=(self.client_id, self._client_secret), timeout=self._timeout,
                          headers={"Accept": "application/json"}, verify=self.ca_location or True)
        except requests.RequestException as error:
            raise TokenRequestFailed(f"OAUTHBEARER token request failed: cannot reach {url}: {_one_line(error)}") from None
        try:
            body = answer.json()
        except ValueError:
            body = None
        if answer.status_code != 200:
            raise TokenRequestFailed(f"OAUTHBEARER token request failed: {url} answered HTTP {answer.status_code}: "
                                     f"{_refusal(body, answer.text)}")
        value = body.get("access_token") if isinstance(body, dict) else None
        if not isinstance(value, str) or not value:
            raise TokenRequestFailed(f"OAUTHBEARER token request failed: {url} answered without an access_token")
        expires_in = body.get("expires_in")
        if isinstance(expires_in, (int, float)) and not isinstance(expires_in, bool) and expires_in > 0:
            return AccessToken(value, issued_at, issued_at + float(expires_in))
        expiry = _jwt_expiry(value)
        if expiry is None:
            raise TokenRequestFailed(f"OAUTHBEARER token request failed: {url} gave a token without expires_in or exp")
        return AccessToken(value, issued_at, expiry)


def _refusal(body: Any, text: str) -> str:
    """The endpoint's own words: RFC 6749's ``error`` (and ``error_description``), else its text."""
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        words = body["error"]
        if isinstance(body.get("error_description"), str) and body["error_description"]:
            words += f": {body['error_description']}"
        elif words == "invalid_client":
            words += " (wrong client id or secret?)"
        return _one_line(words)
    return _one_line(text)[:_TEXT_CHARS] or "no text"


def _one_line(value: object) -> str:
    return " ".join(str(value).split())


def _jwt_expiry(token: str) -> float | None:
    """The ``exp`` claim of a JWT (not verified: the broker verifies it), None when it has none."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (binascii.Error, ValueError):
        return None
    expiry = claims.get("exp") if isinstance(claims, dict) else None
    return float(expiry) if isinstance(expiry, (int, float)) and not isinstance(expiry, bool) else None


LIBRDKAFKA_TOKEN_FAILURE = "Failed to acquire SASL OAUTHBEARER token: "
"""How librdkafka's authentication error starts when it could not get a token (its words follow)."""


def token_failure_text(security: SecurityConfig, librdkafka_words: str, *, post: Callable[..., Any] | None = None,
                       timeout: float = 5.0) -> str:
    """One line for a token librdkafka could not get (``librdkafka_words``: what it said after
    :data:`LIBRDKAFKA_TOKEN_FAILURE`, e.g. ``{"error":"invalid_client"}`` without the HTTP status):
    the endpoint is asked once more, as kafka-python's clients ask it, to name the failure in the
    same words; when that request gets a token, librdkafka's own words."""
    url = security.sasl_oauthbearer_token_endpoint_url
    try:
        ClientCredentialsTokens(*_client_credentials(security), security.sasl_oauthbearer_scope,
                                ca_location=security.token_endpoint_ca_location(), post=post, timeout=timeout).token()
    except TokenRequestFailed as error:
        return str(error)
    return f"OAUTHBEARER token request failed: librdkafka could not get a token from {url}: {_one_line(librdkafka_words)}"


def _client_credentials(security: SecurityConfig) -> tuple[str, str, str]:
    """The token endpoint, the client id and its secret: the config requires all three with a token
    endpoint (a config built in code without them fails as a token request that cannot be made)."""
    url = security.sasl_oauthbearer_token_endpoint_url
    client_id, secret = security.sasl_oauthbearer_client_id, security.sasl_oauthbearer_client_secret
    if url is None or client_id is None or secret is None:
        raise TokenRequestFailed("OAUTHBEARER token request failed: sasl_oauthbearer_token_endpoint_url, "
                                 "sasl_oauthbearer_client_id and sasl_oauthbearer_client_secret are required")
    return url, client_id, secret


class TokenProvider(Protocol):
    """kafka-python's ``sasl_oauth_token_provider``: asked for a token at each SASL handshake."""

    def token(self) -> str: ...


def token_provider(security: SecurityConfig) -> TokenProvider:
    """kafka-python's ``sasl_oauth_token_provider`` for ``security`` (a ``SecurityConfig`` with a
    token endpoint), shared by every kafka-python client of the process with the same identity."""
    return _provider(*_client_credentials(security), security.sasl_oauthbearer_scope,
                     security.token_endpoint_ca_location())


@functools.lru_cache(maxsize=32)
def _provider(url: str, client_id: str, client_secret: str, scope: str | None,
              ca_location: str | None) -> TokenProvider:
    return _provider_class()(ClientCredentialsTokens(url, client_id, client_secret, scope, ca_location=ca_location))


@functools.lru_cache(maxsize=1)
def _provider_class() -> Callable[[ClientCredentialsTokens], TokenProvider]:
    """The provider class, made on first use (importing kafka-python costs 0.15 s, which the
    connection check, importing this module, does not need), with kafka-python's OAUTHBEARER
    mechanism replaced by one that forgets a token the broker refused: the next handshake then
    fetches a new one instead of offering the refused one until its refresh time."""
    from kafka.net.sasl import register_sasl_mechanism
    from kafka.net.sasl.oauth import AbstractTokenProvider, SaslMechanismOAuth

    # kafka-python has no type information: its classes are Any to the checker
    class ClientCredentialsTokenProvider(AbstractTokenProvider):  # type: ignore[misc]
        """kafka-python asks ``token()`` at each SASL handshake (a new connection, a re-authentication)."""

        def __init__(self, tokens: ClientCredentialsTokens) -> None:
            super().__init__()
            self.tokens = tokens

        def token(self) -> str:
            return self.tokens.token()

        def refused(self) -> None:
            self.tokens.invalidate()

    class SaslMechanismOAuthRefreshing(SaslMechanismOAuth):  # type: ignore[misc]
        def receive(self, auth_bytes: bytes) -> None:
            super().receive(auth_bytes)
            if auth_bytes != b"" and hasattr(self.token_provider, "refused"):  # the broker's error
                self.token_provider.refused()

    register_sasl_mechanism("OAUTHBEARER", SaslMechanismOAuthRefreshing, overwrite=True)
    return ClientCredentialsTokenProvider
