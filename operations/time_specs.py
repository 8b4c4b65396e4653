"""The datetime and duration formats of the official tools, parsed to epoch milliseconds.

- ``--to-datetime``: ``YYYY-MM-DDTHH:mm:SS.sss`` with an optional zone (``Z``, ``+02:00``,
  ``+0200``, ``+02``); without a zone it is UTC, as ``kafka-consumer-groups`` reads it.
  Seconds' fraction is optional here (the official tool requires ``.sss``). A time before the
  epoch is a negative number of milliseconds, exact (callers read it as the log start).
- ``--by-duration``: ISO-8601 ``PnDTnHnMn.nS`` (Java's ``Duration.parse``): days, hours,
  minutes, seconds, each optional but at least one; an optional leading sign. Out of Java's
  range (seconds in a ``long``, as ``Duration.parse`` checks, and milliseconds in a ``long``, as
  ``toMillis`` does) it is refused.

Digits are ASCII digits only (Python's ``\\d`` also matches ``١`` or ``९``; the patterns say
``[0-9]`` and are compiled with ``re.ASCII``).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from operations.errors import BadInput

_DATETIME = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,9}))?"
    r"(Z|[+-][0-9]{2}(?::?[0-9]{2})?)?\Z", re.ASCII)
_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?[0-9]+)D)?(?:T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{1,9}))?S)?)?\Z",
    re.IGNORECASE | re.ASCII)
_EPOCH = datetime(1970, 1, 1)
_MILLISECOND = timedelta(milliseconds=1)
_LONG_MIN, _LONG_MAX = -(2 ** 63), 2 ** 63 - 1


def parse_datetime_ms(text: str) -> int:
    """Epoch milliseconds of ``text``; :class:`BadInput` naming the expected format otherwise."""
    match = _DATETIME.match(text.strip())
    if not match:
        raise BadInput(f"malformed datetime {text!r}: expected YYYY-MM-DDTHH:mm:SS.sss "
                       "(UTC unless a zone such as Z or +02:00 follows)")
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    fraction, zone = match.group(7) or "", match.group(8)
    try:
        local = datetime(year, month, day, hour, minute, second)
    except ValueError as error:
        raise BadInput(f"malformed datetime {text!r}: {error}") from None
    # timedelta arithmetic: exact before the epoch and at the ends of the calendar, where
    # datetime.timestamp() would truncate toward zero or overflow
    return (local - _EPOCH - _zone(zone)) // _MILLISECOND + int((fraction + "000")[:3])


def _zone(zone: str | None) -> timedelta:
    """The zone's offset from UTC (at most 18 hours, as Java's ``ZoneOffset``)."""
    if zone in (None, "Z"):
        return timedelta(0)
    sign = -1 if zone[0] == "-" else 1
    digits = zone[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:4] or 0)
    if minutes > 59 or hours * 60 + minutes > 18 * 60:
        raise BadInput(f"malformed time zone {zone!r}: at most 18 hours from UTC")
    return sign * timedelta(hours=hours, minutes=minutes)


def parse_duration_ms(text: str) -> int:
    """Milliseconds of an ISO-8601 duration (``P1DT2H``, ``PT15M``, ``PT0.5S``)."""
    match = _DURATION.match(text.strip())
    if not match or not any(match.groups()[1:]) or text.strip().upper().endswith("T"):
        raise BadInput(f"malformed duration {text!r}: expected ISO-8601 PnDTnHnMnS, "
                       "e.g. PT30M, P1DT12H, PT0.5S")
    sign, days, hours, minutes, seconds, fraction = match.groups()
    total_seconds = 0
    for value, unit in ((days, 86_400), (hours, 3_600), (minutes, 60), (seconds, 1)):
        if len((value or "").lstrip("+-").lstrip("0")) > 19:  # beyond a long (and int()'s digit limit)
            raise _out_of_range(text)
        total_seconds += int(value or 0) * unit
        if not _LONG_MIN <= int(value or 0) * unit <= _LONG_MAX or not _LONG_MIN <= total_seconds <= _LONG_MAX:
            raise _out_of_range(text)
    total = total_seconds * 1000
    if fraction:
        millis = int((fraction + "00")[:3])
        total += -millis if (seconds or "").startswith("-") else millis
    total = -total if sign == "-" else total
    if not _LONG_MIN <= total <= _LONG_MAX:
        raise _out_of_range(text)
    return total


def _out_of_range(text: str) -> BadInput:
    return BadInput(f"duration {text!r} is out of range: at most {_LONG_MAX} milliseconds "
                    "(about 292 million years), as Java's Duration")
