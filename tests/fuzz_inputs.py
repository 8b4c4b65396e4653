"""Hostile argument values for the operations fuzz harness (:mod:`tests.fuzz_operations`), as
Hypothesis strategies, and what each value means when it is well formed.

Every strategy draws a :class:`Value`: the text put on the command line or in a file, what a
correct reader makes of it (``meaning``: an int, epoch milliseconds or a duration in ms; None when
the text is not well formed or the harness does not judge it) and whether the official tools'
rules refuse it (``malformed``: underscores in numbers, non-ASCII digits, impossible dates). A
``malformed`` value that gets a plan (exit 0) is counted as "malformed accepted".

Pure: no Kafka, no files.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from hypothesis import strategies as st

MINUTE_MS = 60_000
FIRST_RECORD_MS = 1_600_000_020_000
"""Record j of every harness partition is stamped FIRST_RECORD_MS + j minutes (September 2020)."""
EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
DIGIT_SCRIPTS = {"arabic-indic": "٠١٢٣٤٥٦٧٨٩", "fullwidth": "０１２３４５６７８９", "devanagari": "०१२३४५६७८९"}
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state", "__share_group_state", "__cluster_metadata")
HOSTILE_NAMES = (
    "", " ", "  ", "\t", "x\n", "**[Click here to re-authenticate](https://example.invalid/login)**",
    "![x](https://example.invalid/pixel.png)", "name#", "x; touch pwned #", "$(touch pwned)", "`id`",
    "a|b && c", "'single'", '"double"', "\x1b[31mred\x1b[0m", "\x07bell", "a\rb", "<script>alert(1)</script>",
    "日本語", "ünïcödé", "a" * 249, "b" * 300, ".", "..", "../etc/passwd", "%s%n", "{0}", "null", "-", "--execute",
)
"""Markdown, control characters, shell metacharacters, lengths and look-alikes (no NUL, no
surrogates: neither reaches a command line)."""

_TEXT = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=40)


@dataclass(frozen=True)
class Value:
    text: str
    meaning: int | None = None
    malformed: bool = False


def in_script(text: str, script: str) -> str:
    return text.translate(str.maketrans("0123456789", DIGIT_SCRIPTS[script]))


def hostile_names(real: list[str] | tuple[str, ...]) -> st.SearchStrategy[str]:
    """Mostly the real names (so that cases get past the lookup), then their prefixes, look-alikes,
    internal topics and hostile text."""
    real = list(real)
    prefixes = sorted({name[:cut] for name in real for cut in range(1, len(name)) if name[cut - 1] in "-._"}
                      | {name[:-1] for name in real})
    return st.one_of(st.sampled_from(real), st.sampled_from(real), st.sampled_from(real),
                     st.sampled_from(prefixes + [n + " " for n in real] + [n.upper() for n in real]),
                     st.sampled_from(list(INTERNAL_TOPICS) + list(HOSTILE_NAMES)), _TEXT)


@st.composite
def numbers(draw, small: tuple[int, int] = (-40, 60)) -> Value:
    """An integer in one of many spellings; ``meaning`` is the integer when the spelling is one the
    official tool reads (optional sign, ASCII digits; surrounding spaces tolerated)."""
    value = draw(st.one_of(st.integers(*small), st.integers(*small), st.integers(-10 ** 25, 10 ** 25),
                           st.sampled_from([0, 2 ** 31, 2 ** 63 - 1, 2 ** 63, -2 ** 63, -2 ** 63 - 1, 2 ** 64, 10 ** 100])))
    form = draw(st.sampled_from(["plain", "plain", "plain", "plus", "spaces", "underscore", "arabic-indic",
                                 "fullwidth", "devanagari", "hex", "float", "exponent", "empty", "junk", "double-sign"]))
    plain = str(value)
    if form == "plain":
        return Value(plain, value)
    if form == "plus":
        return Value(plain if value < 0 else "+" + plain, value)
    if form == "spaces":
        return Value(f" {plain} ", value)
    if form == "underscore":
        sign, digits = ("-", plain[1:]) if value < 0 else ("", plain)
        if len(digits) < 2:
            return Value(plain, value)
        return Value(sign + digits[0] + "_" + digits[1:], None, malformed=True)
    if form in DIGIT_SCRIPTS:
        return Value(in_script(plain, form), None, malformed=True)
    if form == "hex":
        return Value(hex(value), None, malformed=True)
    if form == "float":
        return Value(f"{value}.5", None, malformed=True)
    if form == "exponent":
        return Value("1e3", None, malformed=True)
    if form == "empty":
        return Value(draw(st.sampled_from(["", " ", "\t"])), None, malformed=True)
    if form == "double-sign":
        return Value("--" + plain.lstrip("-"), None, malformed=True)
    return Value(draw(_TEXT), None)


def epoch_ms(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0, millis: int = 0,
             offset_minutes: int = 0) -> int:
    """Epoch milliseconds of a wall time at a UTC offset, for any year 1-9999 (negative before 1970)."""
    days = date(year, month, day).toordinal() - EPOCH_ORDINAL
    return (((days * 24 + hour) * 60 + minute - offset_minutes) * 60 + second) * 1000 + millis


def format_datetime(ms: int, fraction: bool = True) -> str:
    """``YYYY-MM-DDTHH:mm:SS.sss`` (UTC) of epoch milliseconds, also before 1970."""
    days, rest = divmod(ms, 86_400_000)
    day = date.fromordinal(EPOCH_ORDINAL + days)
    hours, rest = divmod(rest, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds, millis = divmod(rest, 1000)
    text = f"{day.year:04d}-{day.month:02d}-{day.day:02d}T{hours:02d}:{minutes:02d}:{seconds:02d}"
    return text + (f".{millis:03d}" if fraction else "")


NEAR_EPOCH = ("1969-12-31T23:59:59.999", "1969-12-31T23:59:59.998", "1969-12-31T23:59:59.997",
              "1969-12-31T23:59:59.996", "1969-12-31T23:59:59.000", "1970-01-01T00:00:00.000",
              "1970-01-01T00:00:00.001", "1900-01-01T00:00:00.000", "0001-01-01T00:00:00.000")


@st.composite
def datetimes(draw, first_record_ms: int) -> Value:
    """``--to-datetime`` values; ``meaning`` = epoch ms. Near the epoch (-1, -2, -3 ms are Kafka's
    ListOffsets markers), near the harness's records (``first_record_ms`` + whole minutes), anywhere
    in years 1-9999 with any zone, impossible dates, other digit scripts, junk."""
    kind = draw(st.sampled_from(["any", "any", "near-epoch", "near-data", "near-data", "impossible", "script", "junk"]))
    if kind == "near-epoch":
        text = draw(st.sampled_from(NEAR_EPOCH))
        return Value(text, _parse_canonical(text))
    if kind == "near-data":
        ms = first_record_ms + draw(st.integers(-3, 32)) * MINUTE_MS + draw(st.sampled_from([0, -1, 1, -30_000, 999]))
        return Value(format_datetime(ms), ms)
    if kind == "impossible":
        text = draw(st.sampled_from(["2024-02-30T00:00:00.000", "2023-13-01T00:00:00.000", "2024-01-32T00:00:00.000",
                                     "2024-01-01T24:00:00.000", "2024-01-01T23:60:00.000", "2024-01-01T23:59:61.000",
                                     "2024-01-01T00:00:00.000+25:00", "2024-01-01T00:00:00.000+02:99",
                                     "0000-01-01T00:00:00.000", "10000-01-01T00:00:00.000"]))
        return Value(text, None, malformed=True)
    if kind == "junk":
        return Value(draw(st.one_of(_TEXT, st.sampled_from(["2024-01-01", "2024-01-01 00:00:00.000", "now", "",
                                                             "2024-01-01T00:00:00.000 junk", "-1", "1700000000000"]))))
    year, month, day = draw(st.integers(1, 9999)), draw(st.integers(1, 12)), draw(st.integers(1, 28))
    hour, minute, second, millis = draw(st.integers(0, 23)), draw(st.integers(0, 59)), draw(st.integers(0, 59)), draw(st.integers(0, 999))
    zone, offset = draw(st.sampled_from([("", 0), ("Z", 0), ("+02:00", 120), ("-05:30", -330), ("+0200", 120),
                                         ("+02", 120), ("+18:00", 1080), ("-18:00", -1080)]))
    fraction, millis = draw(st.sampled_from([("", 0), (f".{millis:03d}", millis), (f".{millis:03d}999", millis),
                                             (".5", 500)]))
    text = f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}{fraction}{zone}"
    meaning = epoch_ms(year, month, day, hour, minute, second, millis, offset)
    if kind == "script":
        return Value(in_script(text, draw(st.sampled_from(sorted(DIGIT_SCRIPTS)))), None, malformed=True)
    return Value(text, meaning)


def _parse_canonical(text: str) -> int:
    day, time = text.split("T")
    year, month, dom = (int(x) for x in day.split("-"))
    clock, millis = time.split(".")
    hour, minute, second = (int(x) for x in clock.split(":"))
    return epoch_ms(year, month, dom, hour, minute, second, int(millis))


DURATION_SEEDS = ("P99999999999999999999D", "PT99999999999999999999S", "P99999999999D", "PT9223372036854775807S",
                  "P106751991167D", "P106751991168D", "-P99999999999999999999D", "PT0S", "P0D", "PT", "P", "",
                  "P1W", "P1Y", "P1M", "PT1.5H", "PT0.5S", "-PT-1S", "pt15m", "P1DT", "PT-0.5S", "PT1H30M")


@st.composite
def durations(draw) -> Value:
    """ISO-8601 durations (``--by-duration``, ``audit show --since``); ``meaning`` = milliseconds for
    well-formed ones (Java's ``Duration.parse`` grammar: days, hours, minutes, seconds with a
    fraction, an optional sign before P), including values far beyond any clock."""
    kind = draw(st.sampled_from(["structured", "structured", "structured", "seed", "script", "junk"]))
    if kind == "seed":
        text = draw(st.sampled_from(DURATION_SEEDS))
        return Value(text, duration_ms(text))
    if kind == "junk":
        return Value(draw(_TEXT))
    magnitude = st.one_of(st.integers(0, 100), st.integers(0, 10 ** 7), st.integers(0, 10 ** 25))
    parts = {unit: draw(st.none() | magnitude) for unit in "DHMS"}
    if all(v is None for v in parts.values()):
        parts["M"] = draw(magnitude)
    fraction = draw(st.sampled_from(["", "", ".5", ".25", ".123456789"])) if parts["S"] is not None else ""
    sign = draw(st.sampled_from(["", "", "-", "+"]))
    text = sign + "P" + (f"{parts['D']}D" if parts["D"] is not None else "")
    clock = "".join(f"{parts[u]}{u}" for u in "HM" if parts[u] is not None)
    clock += f"{parts['S']}{fraction}S" if parts["S"] is not None else ""
    text += ("T" + clock) if clock else ""
    if draw(st.booleans()):
        text = text.lower()
    if kind == "script":
        return Value(in_script(text, draw(st.sampled_from(sorted(DIGIT_SCRIPTS)))), None, malformed=True)
    return Value(text, duration_ms(text))


def duration_ms(text: str) -> int | None:
    """Milliseconds of a Java ``Duration.parse`` text (days, hours, minutes, seconds; signs per part
    and before P; fraction of seconds truncated to ms), unbounded; None when not well formed.
    Independent of kpulse's own parser on purpose."""
    import re

    match = re.fullmatch(r"([-+]?)P(?:([-+]?[0-9]+)D)?(?:T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?"
                         r"(?:([-+]?)([0-9]+)(?:[.,]([0-9]{1,9}))?S)?)?", text, re.IGNORECASE)
    if not match or text.upper().endswith("T") or not any(match.group(i) for i in (2, 3, 4, 6)):
        return None
    sign, days, hours, minutes, seconds_sign, seconds, fraction = match.groups()
    total = int(days or 0) * 86_400_000 + int(hours or 0) * 3_600_000 + int(minutes or 0) * MINUTE_MS
    second_ms = int(seconds or 0) * 1000 + int(((fraction or "") + "000")[:3])
    total += -second_ms if seconds_sign == "-" else second_ms
    return -total if sign == "-" else total


def first_offset_at(ms: int, first_record_ms: int, log_start: int, log_end: int) -> int:
    """Where a timestamp reset lands on a partition whose record j is stamped ``first_record_ms +
    j`` minutes: the first record at or after ``ms`` (the log start for any earlier time, also
    before the epoch), or the log end when no record is that recent."""
    wanted = -((first_record_ms - ms) // MINUTE_MS)  # ceil((ms - first) / minute)
    wanted = max(log_start, wanted)
    return wanted if wanted < log_end else log_end
