"""The datetime and duration formats of the official tools, parsed to epoch milliseconds.

- ``--to-datetime``: ``YYYY-MM-DDTHH:mm:SS.sss`` with an optional zone (``Z``, ``+02:00``,
  ``+0200``, ``+02``); without a zone it is UTC, as ``kafka-consumer-groups`` reads it.
  Seconds' fraction is optional here (the official tool requires ``.sss``).
- ``--by-duration``: ISO-8601 ``PnDTnHnMn.nS`` (Java's ``Duration.parse``): days, hours,
  minutes, seconds, each optional but at least one; an optional leading sign.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from operations.errors import BadInput

_DATETIME = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?"
    r"(Z|[+-]\d{2}(?::?\d{2})?)?\Z")
_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?\d+)D)?(?:T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+)(?:[.,](\d{1,9}))?S)?)?\Z",
    re.IGNORECASE)


def parse_datetime_ms(text: str) -> int:
    """Epoch milliseconds of ``text``; :class:`BadInput` naming the expected format otherwise."""
    match = _DATETIME.match(text.strip())
    if not match:
        raise BadInput(f"malformed datetime {text!r}: expected YYYY-MM-DDTHH:mm:SS.sss "
                       "(UTC unless a zone such as Z or +02:00 follows)")
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    fraction, zone = match.group(7) or "", match.group(8)
    try:
        moment = datetime(year, month, day, hour, minute, second, tzinfo=_zone(zone))
    except ValueError as error:
        raise BadInput(f"malformed datetime {text!r}: {error}") from None
    millis = int((fraction + "000")[:3])
    return int(moment.timestamp()) * 1000 + millis


def _zone(zone: str | None) -> timezone:
    if zone in (None, "Z"):
        return timezone.utc
    sign = -1 if zone[0] == "-" else 1
    digits = zone[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:4] or 0)
    if hours > 18 or minutes > 59:
        raise BadInput(f"malformed time zone {zone!r}")
    return timezone(sign * timedelta(hours=hours, minutes=minutes))


def parse_duration_ms(text: str) -> int:
    """Milliseconds of an ISO-8601 duration (``P1DT2H``, ``PT15M``, ``PT0.5S``)."""
    match = _DURATION.match(text.strip())
    if not match or not any(match.groups()[1:]) or text.strip().upper().endswith("T"):
        raise BadInput(f"malformed duration {text!r}: expected ISO-8601 PnDTnHnMnS, "
                       "e.g. PT30M, P1DT12H, PT0.5S")
    sign, days, hours, minutes, seconds, fraction = match.groups()
    total = (int(days or 0) * 86_400_000 + int(hours or 0) * 3_600_000 + int(minutes or 0) * 60_000
             + int(seconds or 0) * 1000)
    if fraction:
        millis = int((fraction + "00")[:3])
        total += -millis if (seconds or "").startswith("-") else millis
    return -total if sign == "-" else total
