"""The records view: which partition of a group it opens (the worst first: the one a STALL, ERR or
WARN is about), where its read starts (the consumer group's committed offset, a share group's start
offset), the links to it from the group pages and the alerts, and the records read as the page
shows them. Pure: the read itself is :func:`kpulse.kafka.record_fetch.read_records`, called by the
page's frame; who may see keys and values is :mod:`kpulse.records.access`.

Nothing read is kept here: the frames are built for one page run and dropped."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote, urlencode

import pandas as pd

from dashboard.services.columns import Column, table
from kpulse.lag_contract import STATUS_SEVERITY
from kpulse.printable import visible
from kpulse.records.display import Shown, ShownRecord, size_text, transaction_text
from kpulse.records.model import RecordsRead, RecordView
from kpulse.share_contract import SHARE_STATUS_SEVERITY
from kpulse.snapshot import Snapshot

GroupKind = Literal["consumer", "share"]
"""``consumer``: a group that commits offsets (classic, KIP-848, a Streams application's group);
``share``: a share group (KIP-932), which has a start offset per partition instead."""
PARAMS: dict[GroupKind, str] = {"consumer": "group", "share": "sharegroup"}
"""Group kind -> the query parameter naming the group on the records view (and on its own page)."""
OFFSET_WORDS: dict[GroupKind, str] = {"consumer": "committed offset", "share": "start offset"}
"""Where the view starts reading, in words, by group kind."""
ALERT_RULES: dict[str, GroupKind] = {"ConsumerGroupStatus": "consumer", "ConsumerGroupLagSeconds": "consumer",
                                     "ShareGroupNotAcknowledging": "share"}
"""Alert rules whose entity's records the Alerts page links to (STOP, STALL, ERR; a group behind,
its partitions WARN; a share group acknowledging nothing), with the kind of group they name."""
RECORDS_COLUMN = Column("records", "Records", kind="link", link_text="records",
                        help="The records at this partition's committed offset (a share group's start offset): "
                             "the next ones the group reads.")
"""The column of a group's partition table that links each row to its records (:func:`records_link`)."""


@dataclass(frozen=True)
class PartitionChoice:
    """One partition of a group the view may open, as the latest snapshot has it."""

    topic: str
    partition: int
    status: str | None
    """Its lag status (``STALL``, ``ERR``...) or share status (``STALLED``...); None when not known."""
    offset: int | None
    """Where the group is on it: the committed offset, or a share group's start offset; None when
    the snapshot does not know it."""
    lag: int | None


def records_link(kind: GroupKind, group_id: str, topic: str | None = None, partition: int | None = None) -> str:
    """The relative link to the records view of ``group_id`` (on ``topic``'s ``partition`` when
    given, else its worst partition), every value percent-encoded: a Kafka-supplied name stays one
    query value, never markup or a path."""
    params: dict[str, Any] = {PARAMS[kind]: group_id}
    if topic is not None and partition is not None:
        params.update(topic=topic, partition=partition)
    return "records?" + urlencode(params, quote_via=quote, safe="")


def query_of(kind: GroupKind, group_id: str, topic: str | None = None, partition: int | None = None
             ) -> dict[str, str]:
    """:func:`records_link`'s parameters, for ``st.page_link(..., query_params=)``."""
    params = {PARAMS[kind]: group_id}
    if topic is not None and partition is not None:
        params.update(topic=topic, partition=str(partition))
    return params


def alert_target(rule: str, kind: str, name: str) -> GroupKind | None:
    """The kind of group whose records an alert of ``rule`` on entity ``kind/name`` links to; None
    when it links to none (another rule, or an entity that is not the group the rule names)."""
    wanted = ALERT_RULES.get(rule)
    entity_kind = {"consumer": "group", "share": "sharegroup"}.get(wanted or "")
    return wanted if wanted is not None and kind == entity_kind and name else None


def _severity(kind: GroupKind, status: str | None) -> int:
    ranks = STATUS_SEVERITY if kind == "consumer" else SHARE_STATUS_SEVERITY
    return ranks.get(status or "", -1)


def group_entry(snapshot: Snapshot | None, kind: GroupKind, group_id: str) -> Mapping[str, Any] | None:
    """The snapshot's entry of ``group_id`` (a consumer group, or a share group); None when absent."""
    if snapshot is None:
        return None
    if kind == "consumer":
        groups: list[Any] = list(snapshot.get("consumer_groups") or [])
    else:
        section = snapshot.get("share_groups")
        groups = list((section.get("groups") if section else None) or [])
    return next((g for g in groups if g.get("group_id") == group_id), None)


def partition_choices(entry: Mapping[str, Any], kind: GroupKind) -> list[PartitionChoice]:
    """The group's partitions, the worst first (by status: ERR, STOP, STALL... for a consumer group;
    NOT_CONSUMING, STALLED... for a share group), then the largest lag, then by name."""
    field = "committed_offset" if kind == "consumer" else "start_offset"
    choices = [PartitionChoice(p["topic"], int(p["partition"]), p.get("status"), p.get(field), p.get("lag"))
               for p in entry.get("partitions") or [] if p.get("topic") is not None and p.get("partition") is not None]
    return sorted(choices, key=lambda c: (-_severity(kind, c.status), -(c.lag or 0), c.topic, c.partition))


def chosen(choices: list[PartitionChoice], topic: str | None, partition: str | int | None) -> PartitionChoice | None:
    """The choice for ``topic`` and ``partition`` (as a query parameter gives them); the worst one
    when neither is given; None when they name a partition the group does not have."""
    if topic is None and partition is None:
        return choices[0] if choices else None
    return next((c for c in choices if c.topic == topic and str(c.partition) == str(partition)), None)


def choice_label(choice: PartitionChoice, kind: GroupKind) -> str:
    """``orders [3] · STALL · committed offset 41 · lag 3`` (the topic as plain text)."""
    parts = [f"{choice.topic} [{choice.partition}]", choice.status or "status unknown",
             f"{OFFSET_WORDS[kind]} {'unknown' if choice.offset is None else choice.offset}"]
    if choice.lag is not None:
        parts.append(f"lag {choice.lag:,}")
    return " · ".join(parts)


# --- the records read, as the page shows them -------------------------------------------------------

CELL_CHARACTERS = 160
"""A key, value or header list is cut to this many characters in the table (the record at the
group's offset is shown whole below it, up to the display's byte limit)."""


def cell_text(text: str, limit: int = CELL_CHARACTERS) -> str:
    """``text`` on one line as a table cell shows it: control characters (newlines, escapes,
    right-to-left marks) as visible escapes, cut to ``limit`` characters with an ellipsis."""
    shown = visible(text)
    return shown if len(shown) <= limit else shown[:limit - 1] + "…"


def block_text(text: str) -> str:
    """``text`` as a block of plain text shows it (pretty JSON, a hex view, a multi-line value):
    newlines and tabs kept, every other control character (and right-to-left mark) a visible escape."""
    return visible(text, keep="\n\t")


def contents_text(shown: Shown, limit: int = CELL_CHARACTERS) -> str:
    """A key, value or header value on one line: its text (:func:`cell_text`), or what stands for it
    when there is none to show (``(null)``, ``(hidden, 12 B)``)."""
    if shown.kind == "null":
        return "(null)"
    if shown.kind == "hidden":
        return f"(hidden, {size_text(shown.size or 0)})"
    return cell_text(shown.text, limit)


def headers_text(headers: tuple[tuple[str, Shown], ...]) -> str:
    """``name=value; name=value`` (names always; values as :func:`contents_text`), one line."""
    return cell_text("; ".join(f"{name}={contents_text(value)}" for name, value in headers)) if headers else ""


RECORD_COLUMNS = ["offset", "timestamp", "timestamp_type", "key", "headers", "value", "value_shown", "size",
                  "compression", "transaction", "producer_id", "producer_epoch", "sequence"]
_NO_PRODUCER = "Empty: the batch has no producer id (neither idempotent nor transactional)."
RECORD_TABLE = table(
    Column("offset", "Offset", key=True),
    Column("transaction", "Transaction",
           help="marker: commit or abort, a control record (no application sees it); aborted: inside an aborted "
                "transaction (a read-committed consumer skips it); committed: written in a committed transaction; "
                "-: not in a transaction."),
    Column("timestamp", "Timestamp", "UTC", kind="datetime", format="YYYY-MM-DD HH:mm:ss.SSS",
           help="Empty: the record has no timestamp."),
    Column("timestamp_type", "Timestamp type", help="CreateTime: set by the producer; LogAppendTime: by the broker."),
    Column("key", "Key", help="(hidden, size): not revealed to you; (null): no key."),
    Column("headers", "Headers", help="name=value, in the order written; values hidden as keys are."),
    Column("value", "Value", help="Its start, on one line; the record at the group's offset is shown whole below."),
    Column("value_shown", "Value shown as", help="JSON, text or binary (hex), its full size, where it is cut, "
                                                 "how many fields the config's masks replaced."),
    Column("size", "Size", "bytes", help="The record's size in its batch (uncompressed)."),
    Column("compression", "Compression", help="The codec of the record's batch."),
    Column("producer_id", "Producer id", help=_NO_PRODUCER),
    Column("producer_epoch", "Producer epoch", help=_NO_PRODUCER),
    Column("sequence", "Sequence", help=_NO_PRODUCER))
"""The records read (:func:`records_frame`) as the page shows them."""


def records_frame(shown: Sequence[ShownRecord]) -> pd.DataFrame:
    """One row per record read (:data:`RECORD_COLUMNS`), in offset order, every Kafka-supplied text
    on one line (:func:`cell_text`)."""
    rows = [{"offset": s.record.offset, "timestamp": s.record.timestamp, "timestamp_type": s.record.timestamp_type,
             "key": contents_text(s.key), "headers": headers_text(s.headers), "value": contents_text(s.value),
             "value_shown": s.value.describe(), "size": s.record.size, "compression": s.record.compression,
             "transaction": transaction_text(s.record), "producer_id": s.record.producer_id,
             "producer_epoch": s.record.producer_epoch, "sequence": s.record.sequence} for s in shown]
    frame = pd.DataFrame(rows, columns=RECORD_COLUMNS)
    for column in ("offset", "size", "producer_id", "producer_epoch", "sequence"):
        frame[column] = pd.array(frame[column], dtype="Int64")
    frame["timestamp"] = pd.to_datetime(frame["timestamp"], utc=True)
    return frame


def first_record(read: RecordsRead) -> RecordView | None:
    """The record the group reads next: the first data record at or after the offset the read
    started at (control records, which no application sees, are passed over); None when none was read."""
    return next((r for r in read.records if r.control is None), None)


def skip_targets(read: RecordsRead, start: int) -> list[int]:
    """The offsets a group at ``start`` may skip to within the records shown: each record's offset
    after ``start``, and the offset after the last one read."""
    targets = {r.offset for r in read.records if r.offset > start}
    if read.next_offset is not None and read.next_offset > start:
        targets.add(read.next_offset)
    return sorted(targets)


def read_caption(read: RecordsRead, count: int) -> str:
    """How the read went (no contents): where it started, how much it read and what ended it, the
    partition's log start and high watermark. It names the group: the page shows it as text."""
    parts = [f"from the {read.start_from}" if read.start_from else "from the offset asked for"]
    if read.read_from is not None:
        parts.append(f"read from offset {read.read_from:,}")
    parts.append(f"{len(read.records):,} record(s) of at most {count:,}")
    if read.bound is not None:
        parts.append(f"ended by: {read.bound}")
    parts.append("log start " + ("unknown" if read.log_start is None else f"{read.log_start:,}"))
    parts.append("high watermark " + ("unknown" if read.high_watermark is None else f"{read.high_watermark:,}"))
    return " · ".join(parts)
