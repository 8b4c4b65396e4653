"""``kpulse records``: the next records of one partition from a group's committed offset (a share
group's start offset), or from an offset given, with keys, values and header values hidden unless
``--reveal`` (an operator, on a topic the cluster's ``records.visible_topics`` matches; audited).

Reading: :func:`kpulse.kafka.record_fetch.read_records`; showing: :mod:`kpulse.records.display`;
who may reveal: :mod:`operations.records_access`. What the command prints goes through
``visible_output`` (``cli/main.py``): a control character in a record is shown as its escape.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from kpulse.errors import KpulseError
from kpulse.printable import visible
from kpulse.records.display import Shown, ShownRecord, show_record, transaction_text
from kpulse.records.model import RecordsRead

COMMAND = "records"
PREVIEW_CHARACTERS = 40
"""A key or value in the table: its first characters on one line (the whole follows the table)."""


class ReadError(KpulseError):
    """The read failed before any record: its one line is all the command prints."""


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        COMMAND, help="the next records of a partition from a group's committed offset (contents hidden unless "
                      "--reveal)",
        description="Read the next records of one partition, from --offset, else from the committed offset of "
                    "--group (a share group's start offset), else from the log start. Joins no group, commits "
                    "nothing. Keys, values and header values are hidden unless --reveal: an operator may reveal "
                    "them on a topic the cluster's records.visible_topics matches, and every reveal is audited.")
    parser.add_argument("--topic", required=True)
    parser.add_argument("--partition", required=True, type=_partition)
    parser.add_argument("--group", help="start at this group's committed offset (share group: its start offset)")
    parser.add_argument("--offset", type=_offset, help="start at this offset (instead of the group's)")
    parser.add_argument("--count", type=_count, help="at most this many records (default and most: the cluster's "
                                                     "records.max_records, 20 unless configured)")
    parser.add_argument("--cluster", help="configured cluster name (default: the first)")
    parser.add_argument("--reveal", action="store_true", help="show keys, values and header values (operators, "
                                                              "on topics records.visible_topics matches; audited)")
    parser.add_argument("--as", dest="as_user", metavar="USER", help="reveal as this user of the users file")
    parser.add_argument("--json", action="store_true", help="print the read as JSON")


def run(args: argparse.Namespace, config: Any) -> int:
    from kpulse.kafka.record_fetch import read_records

    cluster = config.cluster(args.cluster)
    actor = None
    if args.reveal:  # who, before anything is read: a refused user waits for nothing
        from cli.operation_commands import cli_actor
        from operations.records_access import reveal_refusal_for

        actor = cli_actor(config, args.as_user)
        refusal = reveal_refusal_for(actor, cluster, args.topic)
        if refusal is not None:
            _refuse(config, actor, cluster, args.topic, args.partition)
    read = read_records(cluster, args.topic, args.partition, group=args.group, offset=args.offset, count=args.count)
    if read.error is not None and not read.records:
        raise ReadError(read.error)
    if actor is not None and read.records:
        _reveal(config, actor, cluster, read)
    shown = [show_record(record, reveal=args.reveal, mask=cluster.records.mask) for record in read.records]
    if args.json:
        print(json.dumps(as_json(read, shown), indent=2, ensure_ascii=False))
    else:
        print_read(read, shown)
    if read.error is not None:
        print(visible(f"kpulse: error: {read.error}"), file=sys.stderr)
        return 1
    return 0


def _refuse(config: Any, actor: Any, cluster: Any, topic: str, partition: int) -> None:
    """Audit the refused reveal and raise its line (:func:`operations.records_access.reveal` does both)."""
    _reveal_offsets(config, actor, cluster, topic, partition, [])


def _reveal(config: Any, actor: Any, cluster: Any, read: RecordsRead) -> None:
    _reveal_offsets(config, actor, cluster, read.topic, read.partition, [r.offset for r in read.records])


def _reveal_offsets(config: Any, actor: Any, cluster: Any, topic: str, partition: int, offsets: list[int]) -> None:
    from operations.records_access import reveal
    from operations.service import Operations

    operations = Operations(config)
    reveal(operations.audit, operations.users, actor, cluster, topic, partition, offsets)


# --- printing ------------------------------------------------------------------------------------------

def print_read(read: RecordsRead, shown: list[ShownRecord]) -> None:
    where = f"{read.topic}-{read.partition} on cluster {read.cluster}"
    start = "" if read.requested_start is None else f" {read.requested_start}"
    print(f"Records of {where}, from offset{start} ({read.start_from})")
    print(f"log start {_offset_text(read.log_start)}, high watermark {_offset_text(read.high_watermark)}, "
          f"last stable offset {_offset_text(read.last_stable_offset)}; "
          f"{len(read.records)} record{'s' if len(read.records) != 1 else ''} read"
          + (f", stopped by {_bound_text(read)}" if read.bound else ""))
    for note in read.notes:
        print(f"note: {note}")
    if not shown:
        return
    rows = [_row(item) for item in shown]
    headers = ("OFFSET", "TIMESTAMP (UTC)", "SIZE (B)", "COMPRESSION", "PRODUCER ID", "EPOCH", "SEQUENCE",
               "TRANSACTION", "HEADERS", "KEY", "VALUE")
    widths = [max(len(headers[i]), *(len(row[i]) for row in rows)) for i in range(len(headers))]
    print()
    print("  ".join(header.ljust(width) for header, width in zip(headers, widths)).rstrip())
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    if any(item.revealed for item in shown):
        for item in shown:
            _print_contents(item)


def _offset_text(offset: int | None) -> str:
    return "unknown" if offset is None else str(offset)


def _bound_text(read: RecordsRead) -> str:
    return {"count": "the record count", "bytes": "the byte budget", "time": "the time budget",
            "end of log": "the end of the log"}[read.bound] if read.bound else ""


def _row(item: ShownRecord) -> list[str]:
    record = item.record
    timestamp = "-" if record.timestamp is None else (
        record.timestamp.strftime("%Y-%m-%d %H:%M:%S.") + f"{record.timestamp.microsecond // 1000:03d}"
        + (" (broker)" if record.timestamp_type == "LogAppendTime" else ""))
    return [str(record.offset), timestamp, f"{record.size:,}", record.compression, _number(record.producer_id),
            _number(record.producer_epoch), _number(record.sequence), transaction_text(record),
            ", ".join(visible(name) for name, _ in item.headers) or "-", _preview(item.key), _preview(item.value)]


def _number(value: int | None) -> str:
    return "-" if value is None else str(value)


def _preview(shown: Shown) -> str:
    if shown.kind in ("null", "hidden", "binary"):
        return shown.describe()
    text = visible(" ".join(shown.text.split()) if shown.kind == "json" else shown.text)
    return text if len(text) <= PREVIEW_CHARACTERS else text[:PREVIEW_CHARACTERS - 1] + "…"


def _print_contents(item: ShownRecord) -> None:
    offset = item.record.offset
    parts = [("key", item.key), ("value", item.value)] + [(f"header {visible(name)}", value)
                                                           for name, value in item.headers]
    for label, shown in parts:
        if shown.kind == "null":
            continue
        print(f"\n--- offset {offset}, {label} ({shown.describe()})")
        print(shown.text)


def as_json(read: RecordsRead, shown: list[ShownRecord]) -> dict[str, Any]:
    def contents(item: Shown) -> dict[str, Any]:
        return {"kind": item.kind, "text": item.text if item.kind not in ("null", "hidden") else None,
                "size_bytes": item.size, "cut_at_bytes": item.cut_at, "masked": item.masked}

    return {
        "cluster": read.cluster, "topic": read.topic, "partition": read.partition, "start_from": read.start_from,
        "requested_start": read.requested_start, "log_start": read.log_start, "high_watermark": read.high_watermark,
        "last_stable_offset": read.last_stable_offset, "read_from": read.read_from, "next_offset": read.next_offset,
        "bound": read.bound, "notes": list(read.notes), "error": read.error,
        "records": [{
            "offset": item.record.offset,
            "timestamp": None if item.record.timestamp is None else item.record.timestamp.isoformat(),
            "timestamp_type": item.record.timestamp_type, "size_bytes": item.record.size,
            "compression": item.record.compression, "producer_id": item.record.producer_id,
            "producer_epoch": item.record.producer_epoch, "sequence": item.record.sequence,
            "transactional": item.record.transactional, "control": item.record.control,
            "aborted": item.record.aborted, "revealed": item.revealed,
            "key": contents(item.key), "value": contents(item.value),
            "headers": [{"name": name, "value": contents(value)} for name, value in item.headers],
        } for item in shown],
    }


def _partition(text: str) -> int:
    return _integer(text, "partition", 0, 2**31 - 1)


def _offset(text: str) -> int:
    return _integer(text, "offset", 0, 2**63 - 1)


def _count(text: str) -> int:
    return _integer(text, "count", 1, 10_000)


def _integer(text: str, what: str, low: int, high: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what} must be a whole number, got {text!r}") from None
    if not low <= value <= high:
        raise argparse.ArgumentTypeError(f"{what} must be between {low} and {high}, got {value}")
    return value
