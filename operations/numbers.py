"""Integers a user gives (offsets, shifts, partitions, broker ids; on the command line, in a CSV
plan file or in a dashboard form), read as the official Kafka tools read them: Java's
``Long.parseLong`` / ``Integer.parseInt``.

Only ASCII digits with an optional sign: ``1_000``, `` 1000``, ``1.0``, ``0x10`` and non-ASCII
digits (``١٠``, ``²``), all of which Python's ``int()`` accepts or half-accepts, are refused, and
a value outside the Java type's range is refused too, in one line that names what was being read.
"""

from __future__ import annotations

import re

from operations.errors import BadInput

JAVA_LONG = (-(2 ** 63), 2 ** 63 - 1)
"""The range of an offset or a shift (Java ``long``)."""
JAVA_INT = (-(2 ** 31), 2 ** 31 - 1)
PARTITION = (0, JAVA_INT[1])
"""A partition number or a broker id: a non-negative Java ``int``."""

_INTEGER = re.compile(r"[+-]?[0-9]+\Z")


def parse_integer(text, what: str, bounds: tuple[int, int] = JAVA_LONG) -> int:
    """``text`` as an integer within ``bounds`` (inclusive); :class:`BadInput` naming ``what``
    (``--to-offset``, ``partition in --topic 't:x'``) otherwise."""
    shown = repr(text) if not isinstance(text, str) or len(text) <= 40 else repr(text[:37] + "...")
    if not isinstance(text, str) or not _INTEGER.match(text):
        raise BadInput(f"{what} needs an integer, got {shown} (ASCII digits with an optional sign)")
    low, high = bounds
    # more than 19 significant digits never fits; int() of a string of thousands of them fails
    if len(text.lstrip("+-").lstrip("0")) > 19 or not low <= int(text) <= high:
        raise BadInput(f"{what}: {shown.strip(chr(39))} is out of range ({low}..{high})")
    return int(text)


def parse_integers(text: str, what: str, bounds: tuple[int, int] = PARTITION) -> list[int]:
    """A comma-separated list (``0,2,5``), as Kafka's tools split it (no spaces)."""
    return [parse_integer(item, what, bounds) for item in text.split(",")]
