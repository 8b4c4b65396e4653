"""kafka-python's OAUTHBEARER tokens (``kpulse/kafka/oauth.py``): fetched by OIDC client credentials,
kept while most of their lifetime is left, fetched again when less than a fifth is, the old one
used while a refresh fails and it has not expired, and a refusal named in one line. On a fake
clock and a recorded token endpoint; ``test_secure_oauth.py`` runs them against a real issuer."""

from __future__ import annotations

import base64
import json

import pytest

from kpulse.kafka.oauth import ClientCredentialsTokens, TokenRequestFailed

URL = "http://127.0.0.1:1/oauth2/token"


class Answer:
    def __init__(self, status: int, body):
        self.status_code = status
        self._body = body
        self.text = body if isinstance(body, str) else json.dumps(body)

    def json(self):
        if isinstance(self._body, str):
            raise ValueError("not JSON")
        return self._body


class Endpoint:
    """The token endpoint: answers in turn, each request recorded."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.requests = []

    def post(self, url, **kwargs):
        self.requests.append((url, kwargs))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def jwt(**claims) -> str:
    def part(data):
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()
    return f"{part({'alg': 'RS256'})}.{part(claims)}.c2ln"


def granted(token: str, expires_in: int | None = 300):
    body: dict[str, str | int] = {"access_token": token, "token_type": "Bearer"}
    if expires_in is not None:
        body["expires_in"] = expires_in
    return Answer(200, body)


class Clock:
    def __init__(self, now: float = 1_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def tokens(endpoint, clock, scope="kafka"):
    return ClientCredentialsTokens(URL, "kpulse-oauth", "s3cret", scope, clock=clock, post=endpoint.post)


def test_the_request_is_the_client_credentials_grant_with_basic_authentication():
    endpoint = Endpoint(granted("t1"))
    assert tokens(endpoint, Clock()).token() == "t1"
    (url, request), = endpoint.requests
    assert url == URL
    assert request["data"] == {"grant_type": "client_credentials", "scope": "kafka"}
    assert request["auth"] == ("kpulse-oauth", "s3cret")
    assert request["timeout"] > 0


def test_no_scope_asks_for_none():
    endpoint = Endpoint(granted("t1"))
    tokens(endpoint, Clock(), scope=None).token()
    assert endpoint.requests[0][1]["data"] == {"grant_type": "client_credentials"}


def test_a_token_is_kept_until_less_than_a_fifth_of_its_lifetime_is_left():
    clock = Clock()
    endpoint = Endpoint(granted("t1", 300), granted("t2", 300))
    provider = tokens(endpoint, clock)
    assert provider.token() == "t1"
    clock.now += 239  # 61 s of 300 left
    assert provider.token() == "t1" and len(endpoint.requests) == 1
    clock.now += 2  # 59 s left: under a fifth
    assert provider.token() == "t2" and len(endpoint.requests) == 2
    clock.now += 200
    assert provider.token() == "t2" and len(endpoint.requests) == 2


def test_the_lifetime_comes_from_the_jwt_when_the_answer_has_no_expires_in():
    clock = Clock()
    first, second = jwt(sub="kpulse-oauth", exp=clock.now + 100), jwt(sub="kpulse-oauth", exp=clock.now + 500)
    endpoint = Endpoint(granted(first, None), granted(second, None))
    provider = tokens(endpoint, clock)
    assert provider.token() == first
    clock.now += 79
    assert provider.token() == first
    clock.now += 2
    assert provider.token() == second


def test_a_failed_refresh_keeps_the_unexpired_token_and_tries_again_later():
    clock = Clock()
    endpoint = Endpoint(granted("t1", 300), Answer(503, "busy"), granted("t2", 300))
    provider = tokens(endpoint, clock)
    provider.token()
    clock.now += 250
    assert provider.token() == "t1"  # refresh failed: the old token still has 50 s
    assert len(endpoint.requests) == 2
    clock.now += 1
    assert provider.token() == "t1" and len(endpoint.requests) == 2  # not asked again at once
    clock.now += 10
    assert provider.token() == "t2" and len(endpoint.requests) == 3


def test_an_expired_token_is_not_used_when_the_refresh_fails():
    clock = Clock()
    endpoint = Endpoint(granted("t1", 300), Answer(401, {"error": "invalid_client"}))
    provider = tokens(endpoint, clock)
    provider.token()
    clock.now += 300
    with pytest.raises(TokenRequestFailed, match="^OAUTHBEARER token request failed: "):
        provider.token()


def test_invalidate_makes_the_next_call_fetch_a_new_token():
    endpoint = Endpoint(granted("t1"), granted("t2"))
    provider = tokens(endpoint, Clock())
    provider.token()
    provider.invalidate()
    assert provider.token() == "t2"


@pytest.mark.parametrize("answer, expected", [
    (Answer(401, {"error": "invalid_client"}),
     f"OAUTHBEARER token request failed: {URL} answered HTTP 401: invalid_client (wrong client id or secret?)"),
    (Answer(400, {"error": "invalid_scope", "error_description": "OAuth 2.0 Parameter: scope"}),
     f"OAUTHBEARER token request failed: {URL} answered HTTP 400: invalid_scope: OAuth 2.0 Parameter: scope"),
    (Answer(500, "<html>\n<body>oops</body></html>"),
     f"OAUTHBEARER token request failed: {URL} answered HTTP 500: <html> <body>oops</body></html>"),
    (Answer(200, {"token_type": "Bearer"}),
     f"OAUTHBEARER token request failed: {URL} answered without an access_token"),
    (Answer(200, {"access_token": "opaque"}),
     f"OAUTHBEARER token request failed: {URL} gave a token without expires_in or exp"),
])
def test_a_refusal_is_one_line_naming_the_endpoint_and_its_words(answer, expected):
    with pytest.raises(TokenRequestFailed) as raised:
        tokens(Endpoint(answer), Clock()).token()
    assert str(raised.value) == expected


def test_an_unreachable_endpoint_is_one_line():
    import requests

    endpoint = Endpoint(requests.ConnectionError("Connection refused\nmore"))
    with pytest.raises(TokenRequestFailed, match=f"^OAUTHBEARER token request failed: cannot reach {URL}: "
                                                 "Connection refused more$"):
        tokens(endpoint, Clock()).token()


def test_the_secret_stays_out_of_repr():
    assert "s3cret" not in repr(tokens(Endpoint(), Clock()))


def test_kafka_python_gets_an_abstract_token_provider_and_one_per_identity():
    from kafka.net.sasl.oauth import AbstractTokenProvider

    from kpulse.config.model import SecurityConfig
    from kpulse.kafka.oauth import token_provider

    security = SecurityConfig(protocol="SASL_SSL", sasl_mechanism="OAUTHBEARER",
                              sasl_oauthbearer_token_endpoint_url=URL, sasl_oauthbearer_client_id="c",
                              sasl_oauthbearer_client_secret="s")
    provider = token_provider(security)
    assert isinstance(provider, AbstractTokenProvider)
    assert token_provider(security) is provider
    other = SecurityConfig(protocol="SASL_SSL", sasl_mechanism="OAUTHBEARER", sasl_oauthbearer_token_endpoint_url=URL,
                           sasl_oauthbearer_client_id="c", sasl_oauthbearer_client_secret="other")
    assert token_provider(other) is not provider


def test_a_token_the_broker_refused_is_fetched_anew_at_the_next_handshake():
    from kafka.net.sasl import get_sasl_mechanism

    from kpulse.config.model import SecurityConfig
    from kpulse.kafka.oauth import token_provider

    security = SecurityConfig(protocol="SASL_SSL", sasl_mechanism="OAUTHBEARER",
                              sasl_oauthbearer_token_endpoint_url=URL, sasl_oauthbearer_client_id="refused",
                              sasl_oauthbearer_client_secret="s")
    provider = token_provider(security)
    endpoint = Endpoint(granted("t1"), granted("t2"))
    provider.tokens = tokens(endpoint, Clock())
    mechanism = get_sasl_mechanism("OAUTHBEARER")(sasl_oauth_token_provider=provider)
    assert b"auth=Bearer t1" in mechanism.auth_bytes()
    mechanism.receive(b'{"status":"invalid_token"}')
    assert not mechanism.is_authenticated()
    again = get_sasl_mechanism("OAUTHBEARER")(sasl_oauth_token_provider=provider)
    assert b"auth=Bearer t2" in again.auth_bytes()
    again.receive(b"")
    assert again.is_authenticated() and provider.token() == "t2"
