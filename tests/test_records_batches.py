"""Record batches -> records (``kpulse/records/batches.py``), from batches built with kafka-python's
own builder: which records an aborted transaction holds when two producers interleave, the abort
marker ending it, sequences wrapping, and a batch that cannot be decoded; and a read whose client
fails unexpectedly is one error line. Pure: no Kafka."""

from __future__ import annotations

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from kpulse.records.batches import MAX_SEQUENCE, AbortTracker, CorruptBatch, records_from

ABORT, COMMIT = 0, 1
ATTRIBUTES_LOW = 22
"""The low byte of a batch's attributes (int16 at byte 21): codec bits 0-2, control bit 5."""


def batch(base: int, producer: int, count: int = 1, *, transactional: bool = True, control: int | None = None,
          sequence: int = 0) -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=transactional,
                                        producer_id=producer, producer_epoch=0, base_sequence=sequence,
                                        batch_size=1 << 20)
    for index in range(count):
        key = bytes([0, 0, 0, control]) if control is not None else f"p{producer}-{base + index}".encode()
        builder.append(index, timestamp=1_700_000_000_000, key=key, value=b"" if control is not None else b"v",
                       headers=[])
    data = bytearray(builder.build())
    data[0:8] = base.to_bytes(8, "big")  # the base offset, which the broker assigns
    if control is not None:  # kafka-python builds no markers (the broker writes them): the attribute bit
        data[ATTRIBUTES_LOW] |= 0x20
    return bytes(data)


def records(*batches: bytes, aborted: list[tuple[int, int]], start: int = 0):
    tracker = AbortTracker()
    tracker.add(aborted)
    return records_from(MemoryRecords(b"".join(batches)), start, tracker)


def test_only_the_aborted_producers_records_up_to_its_marker_are_aborted():
    read = records(batch(0, 7, 2), batch(2, 8, 1), batch(3, 7, control=ABORT), batch(4, 7, 1), batch(5, 8, control=COMMIT),
                   aborted=[(7, 0)])
    assert [(r.offset, r.producer_id, r.control, r.aborted) for r in read] == [
        (0, 7, None, True), (1, 7, None, True), (2, 8, None, False), (3, 7, "abort", False),
        (4, 7, None, False), (5, 8, "commit", False)]


def test_records_before_the_start_are_left_out_but_still_track_the_transaction():
    read = records(batch(0, 7, 3), batch(3, 7, control=ABORT), aborted=[(7, 0)], start=2)
    assert [(r.offset, r.aborted, r.control) for r in read] == [(2, True, None), (3, False, "abort")]


def test_a_transaction_listed_again_by_a_later_answer_is_counted_once():
    tracker = AbortTracker()
    tracker.add([(7, 0)])
    tracker.add([(7, 0)])
    assert len(tracker.pending) == 1


def test_sequences_count_from_the_batch_base_and_wrap():
    read = records(batch(10, 7, 3, transactional=False, sequence=MAX_SEQUENCE - 1), aborted=[])
    assert [r.sequence for r in read] == [MAX_SEQUENCE - 1, MAX_SEQUENCE, 0]
    assert not any(r.transactional or r.aborted for r in read)


def test_a_batch_that_cannot_be_decoded_names_its_offset_and_keeps_what_came_before():
    good, bad = batch(0, 7, 1, transactional=False), bytearray(batch(1, 7, 2, transactional=False))
    bad[ATTRIBUTES_LOW] |= 0x04  # claims zstd, the records are not
    with pytest.raises(CorruptBatch) as caught:
        records(good, bytes(bad), aborted=[])
    assert caught.value.args[0].startswith("the batch at offset 1 could not be decoded: ")
    assert [r.offset for r in caught.value.args[1]] == [0]


def test_a_read_that_fails_unexpectedly_is_one_error_line_not_an_exception():
    import time

    from kpulse.config.model import ClusterConfig
    from kpulse.kafka.record_fetch import read_records

    class Failing:
        def run(self, *args):
            raise RuntimeError("the client broke\nin two lines")

    class Client:
        clock = staticmethod(time.monotonic)

        def manager(self, timeout, needs):
            return Failing()

    read = read_records(ClusterConfig("c", "k:9092"), "orders", 2, offset=5, client=Client())  # type: ignore[arg-type]
    assert (read.error, read.records, read.requested_start) == (
        "the read of orders-2 failed: RuntimeError: the client broke", (), 5)
