"""How a key, a value or a header value is shown: JSON (pretty-printed) where it parses as an object
or an array, else UTF-8 text where it decodes, else a hex view; masked by the config's rules; cut at
a byte limit with its full size stated. Pure.

Everything returned is a ``str`` holding the record's text as it is: control characters,
right-to-left marks, Markdown and HTML included. Showing it literally is the caller's job (the CLI
writes through :func:`kpulse.printable.visible_output`, the dashboard through ``dashboard/literal.py``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Literal

from kpulse.config.model import RecordsMaskConfig
from kpulse.records.model import RecordView

ShownKind = Literal["null", "hidden", "json", "text", "binary"]
"""``null``: Kafka holds no bytes (a null key, a tombstone); ``hidden``: not revealed to this user
(only its size is shown); ``json``, ``text``, ``binary`` (a hex view): how the bytes were read."""
MASK = "***"
"""What replaces a masked field's value or a pattern's match."""
MASK_BYTE = ord("*")
DEFAULT_LIMIT_BYTES = 4096
"""Text and JSON are cut after this many bytes (UTF-8) of what is shown; a hex view shows a quarter
as many bytes of the value (each byte takes about four characters)."""
HEX_ROW = 16
NO_MASK = RecordsMaskConfig()


@dataclass(frozen=True)
class Shown:
    """A key, value or header value as a person sees it."""

    kind: ShownKind
    text: str
    """What to show: pretty JSON, the text, or the hex view (offset, hex bytes, printable ASCII);
    empty for ``null`` and ``hidden``."""
    size: int | None
    """The full size in bytes of what Kafka holds; None for ``null``."""
    cut_at: int | None = None
    """When :attr:`text` shows only the start of it: how many bytes are shown (of the text for text
    and JSON, of the value for a hex view); None when it is shown whole."""
    masked: int = 0
    """How many fields or pattern matches were masked."""

    def describe(self) -> str:
        """One line about it, e.g. "JSON, 2,345 B, cut at 4,096 B, 2 masked", "hidden, 12 B", "null"."""
        if self.kind == "null":
            return "null"
        words = [{"json": "JSON", "text": "text", "binary": "binary (hex)", "hidden": "hidden"}[self.kind],
                 size_text(self.size or 0)]
        if self.cut_at is not None:
            words.append("cut at " + size_text(self.cut_at))
        if self.masked:
            words.append(f"{self.masked:,} masked")
        return ", ".join(words)

    @property
    def truncated(self) -> bool:
        return self.cut_at is not None


@dataclass(frozen=True)
class ShownRecord:
    """A record as a person sees it: its metadata, and its contents shown or hidden."""

    record: RecordView
    key: Shown
    value: Shown
    headers: tuple[tuple[str, Shown], ...]
    """Header names are always shown (they are the schema, as field names); their values follow the key's and
    value's rule."""
    revealed: bool
    """Whether the key, value and header values are shown (else each is ``hidden`` with its size)."""


def size_text(size: int) -> str:
    """``1,234 B``: bytes with a thousands separator and the unit."""
    return f"{size:,} B"


def limit_of(kind: ShownKind, limit: int = DEFAULT_LIMIT_BYTES) -> int:
    """How many bytes of a ``kind`` are shown at most: of the text for text and JSON, of the value
    for a hex view."""
    return max(HEX_ROW, limit // 4) if kind == "binary" else limit


def show(data: bytes | None, *, mask: RecordsMaskConfig = NO_MASK, limit: int = DEFAULT_LIMIT_BYTES) -> Shown:
    """``data`` as a person sees it, masked by ``mask`` and cut after ``limit`` bytes."""
    if data is None:
        return Shown("null", "", None)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return _binary(data, mask, limit)
    kind: ShownKind = "text"
    masked = 0
    parsed = _json(text)
    if parsed is not None:
        try:
            text, masked = _pretty(parsed, {name.casefold() for name in mask.fields})
            kind = "json"
        except RecursionError:  # nested deeper than Python's stack: shown as the text it is
            pass
    for pattern in mask.patterns:
        text, count = re.subn(pattern, MASK, text)
        masked += count
    text, truncated = _cut(text, limit)
    return Shown(kind, text, len(data), limit if truncated else None, masked)


def hidden(data: bytes | None) -> Shown:
    """``data`` not revealed: its size only (a null stays ``null``, which says nothing of the contents)."""
    return Shown("null", "", None) if data is None else Shown("hidden", "", len(data))


def show_record(record: RecordView, *, reveal: bool, mask: RecordsMaskConfig = NO_MASK,
                limit: int = DEFAULT_LIMIT_BYTES) -> ShownRecord:
    """``record`` as a person sees it: contents shown (masked) when ``reveal``, else hidden. Whether
    ``reveal`` is allowed is :mod:`kpulse.records.access`'s answer, not this function's."""
    fields = {name.casefold() for name in mask.fields}

    def contents(data: bytes | None, name: str | None = None) -> Shown:
        if not reveal:
            return hidden(data)
        if name is not None and name.casefold() in fields and data is not None:
            return Shown("text", MASK, len(data), masked=1)
        return show(data, mask=mask, limit=limit)

    return ShownRecord(record, contents(record.key), contents(record.value),
                       tuple((name, contents(value, name)) for name, value in record.headers), reveal)


def transaction_text(record: RecordView) -> str:
    """The record's part in a transaction, in words: ``-`` (none), ``committed``, ``aborted``
    (a read-committed consumer skips it), ``marker: commit``, ``marker: abort``. Every transactional
    record read (the read stops at the last stable offset) that is not aborted is committed."""
    if record.control is not None:
        return f"marker: {record.control}"
    if record.aborted:
        return "aborted"
    return "committed" if record.transactional else "-"


def hex_view(data: bytes) -> str:
    """``hexdump -C``'s layout: the offset, 16 bytes in hex, and those bytes where printable ASCII
    (else ``.``), one line per 16 bytes."""
    lines = []
    for start in range(0, len(data), HEX_ROW):
        row = data[start:start + HEX_ROW]
        hex_part = " ".join(f"{byte:02x}" for byte in row)
        text_part = "".join(chr(byte) if 0x20 <= byte < 0x7f else "." for byte in row)
        lines.append(f"{start:08x}  {hex_part:<{HEX_ROW * 3 - 1}}  |{text_part}|")
    return "\n".join(lines)


def _binary(data: bytes, mask: RecordsMaskConfig, limit: int) -> Shown:
    """A hex view, with every pattern match in the bytes (read as Latin-1, one character per byte)
    overwritten by ``*`` bytes, so masked text does not show in the ASCII column nor in hex."""
    masked = 0
    if mask.patterns:
        as_text = data.decode("latin-1")
        buffer = bytearray(data)
        for pattern in mask.patterns:
            for match in re.finditer(pattern, as_text):
                buffer[match.start():match.end()] = bytes([MASK_BYTE]) * (match.end() - match.start())
                masked += 1
        data_shown = bytes(buffer)
    else:
        data_shown = data
    shown_bytes = limit_of("binary", limit)
    return Shown("binary", hex_view(data_shown[:shown_bytes]), len(data),
                 shown_bytes if len(data) > shown_bytes else None, masked)


class _Duplicate(ValueError):
    pass


@dataclass(frozen=True)
class _Object:
    """A JSON object's fields in the order written."""

    pairs: list[tuple[str, object]]


class _Number(str):
    """A JSON number kept as written (``1.10`` stays ``1.10``, ``1e400`` is not infinity)."""


def _json(text: str) -> object | None:
    """The parsed document when ``text`` is a JSON object or array with no repeated key; else None
    (shown as text: pretty-printing would lose a repeated key, and a scalar reads the same as text)."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return None

    def pairs(items: list[tuple[str, object]]) -> _Object:
        if len({key for key, _ in items}) != len(items):
            raise _Duplicate
        return _Object(items)

    def reject_constant(name: str) -> object:
        raise ValueError(name)  # NaN, Infinity: not JSON

    try:
        parsed: object = json.loads(text, object_pairs_hook=pairs, parse_float=_Number, parse_int=_Number,
                                    parse_constant=reject_constant)
    except (ValueError, RecursionError):
        return None
    return parsed


def _pretty(document: object, masked_fields: set[str]) -> tuple[str, int]:
    """``document`` indented by two spaces, strings as JSON writes them (non-ASCII kept), numbers as
    written; the value of every field named in ``masked_fields`` replaced by ``"***"``."""
    masked = 0
    out: list[str] = []

    def write(node: object, indent: str) -> None:
        nonlocal masked
        if isinstance(node, _Object):
            if not node.pairs:
                out.append("{}")
                return
            out.append("{\n")
            for index, (key, value) in enumerate(node.pairs):
                out.append(f"{indent}  {json.dumps(key, ensure_ascii=False)}: ")
                if key.casefold() in masked_fields:
                    out.append(json.dumps(MASK))
                    masked += 1
                else:
                    write(value, indent + "  ")
                out.append(",\n" if index < len(node.pairs) - 1 else "\n")
            out.append(indent + "}")
        elif isinstance(node, list):
            if not node:
                out.append("[]")
                return
            out.append("[\n")
            for index, item in enumerate(node):
                out.append(indent + "  ")
                write(item, indent + "  ")
                out.append(",\n" if index < len(node) - 1 else "\n")
            out.append(indent + "]")
        elif isinstance(node, _Number):
            out.append(str(node))
        elif isinstance(node, str):
            out.append(json.dumps(node, ensure_ascii=False))
        else:
            out.append(json.dumps(node))

    write(document, "")
    return "".join(out), masked


def _cut(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut after at most ``limit`` bytes of UTF-8, at a character boundary."""
    encoded = text.encode("utf-8")
    if len(encoded) <= limit:
        return text, False
    return encoded[:limit].decode("utf-8", errors="ignore"), True
