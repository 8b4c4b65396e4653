"""The options of an ``s3://bucket/prefix?option=value&...`` lake location, read and checked without
opening anything: the configuration checks a location with it when it is read, and
``kpulse/lake/store.py`` opens the filesystem from what it returns. Pure: no pyarrow, no network.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

S3_SCHEMES = ("s3", "s3a", "s3n")
"""``s3a`` and ``s3n`` are Spark's (Hadoop's) names for S3; the Python side opens them as ``s3``."""
S3_OPTIONS: dict[str, type] = {
    "endpoint_override": str, "scheme": str, "region": str, "force_virtual_addressing": bool,
    "connect_timeout": float, "request_timeout": float, "max_attempts": int}
"""Query parameters of an ``s3://bucket/prefix?...`` lake location: pyarrow's ``S3FileSystem``
arguments, and ``max_attempts`` (its retry strategy's). Credentials are never in the location (it is
printed in messages): they come from ``lake.s3`` in the configuration or the AWS environment, as does
the endpoint when not given here (``AWS_ENDPOINT_URL``)."""
S3_TIMEOUT_SECONDS = 10.0
"""Connect and request timeout of an S3 lake unless its location says otherwise: an unreachable
server is a failed flush (the rows stay buffered) within seconds, not a stalled cycle."""
S3_MAX_ATTEMPTS = 2
"""Tries of one S3 request (the first and one retry) unless the location says otherwise: a throttled
or dropped request is tried again at once, but a server that is down fails the flush within a second
rather than pyarrow's default three tries; the collector's next flush is the next retry (its rows stay
buffered), and a reader's next refresh."""
MAX_ATTEMPTS_RANGE = (1, 10)


@dataclass(frozen=True)
class S3Location:
    """An S3 lake location taken apart."""

    path: str
    """``bucket/prefix`` (no trailing ``/``)."""
    options: dict[str, Any]
    """``S3FileSystem`` keyword arguments given in the query (typed), plus ``max_attempts``; the
    defaults (timeouts, tries) are not filled in here."""

    @property
    def bucket(self) -> str:
        return self.path.split("/", 1)[0]


def is_s3(location: str) -> bool:
    """Whether a lake location is on S3 (``s3://``, ``s3a://``, ``s3n://``)."""
    return location.partition("://")[0] in S3_SCHEMES and "://" in location


def parse_s3_location(rest: str) -> S3Location:
    """``bucket/prefix?option=value&...`` (the location after ``s3://``) -> :class:`S3Location`;
    ``ValueError`` (one line, naming the option) for an unknown option, a bad value or no bucket."""
    inner, _, query = rest.partition("?")
    options: dict[str, Any] = {}
    for key, value in parse_qsl(query, keep_blank_values=True):
        kind = S3_OPTIONS.get(key)
        if kind is None:
            close = difflib.get_close_matches(key, S3_OPTIONS, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"known: {', '.join(S3_OPTIONS)}"
            raise ValueError(f"s3 lake location: unknown option {key!r} ({hint})")
        options[key] = _option_value(key, value, kind)
    if not inner.split("/", 1)[0]:
        raise ValueError("s3 lake location: no bucket (s3://bucket/prefix)")
    return S3Location(path=inner.rstrip("/"), options=options)


def _option_value(key: str, value: str, kind: type) -> Any:
    if kind is bool:
        return value.lower() in ("1", "true", "yes")
    if kind is int:
        if not value.strip().isdigit():
            raise ValueError(f"s3 lake location: {key}={value!r} is not a whole number")
        number = int(value)
        low, high = MAX_ATTEMPTS_RANGE
        if not low <= number <= high:
            raise ValueError(f"s3 lake location: {key}={value!r} must be between {low} and {high}")
        return number
    if kind is float:
        try:
            seconds = float(value)
        except ValueError:
            raise ValueError(f"s3 lake location: {key}={value!r} is not a number") from None
        if not seconds > 0:
            raise ValueError(f"s3 lake location: {key}={value!r} must be a number of seconds > 0")
        return seconds
    return value


def check_location(location: str) -> None:
    """``ValueError`` when an S3 lake location could not be opened as written (what the
    configuration checks); other locations are left to pyarrow."""
    if is_s3(location):
        parse_s3_location(location.split("://", 1)[1])
