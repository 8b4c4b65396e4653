"""The narrow OffsetFetch v8 decoder reads exactly what kafka-python's decoder and ``offsets_from``
read, on answers encoded by kafka-python's own response classes (and, for tagged fields, which
kafka-python does not encode, by a byte writer checked against kafka-python's encoding first); and
kafka-python's connection hands it the v8 answers of the requests ``committed_offsets`` sends.
The real-cluster reading through it is in tests/test_batched_reads.py."""

from __future__ import annotations

import random
import struct

import pytest
from kafka.protocol.consumer import OffsetFetchResponse
from kafka.protocol.parser import KafkaProtocol

from kpulse.kafka.committed_offsets import offsets_from
from kpulse.kafka.offset_fetch_decoder import OffsetFetchAnswer, decode_offset_fetch_v8, offset_fetch_request

GROUP = OffsetFetchResponse.OffsetFetchResponseGroup
TOPIC = GROUP.OffsetFetchResponseTopics
PARTITION = TOPIC.OffsetFetchResponsePartitions
NAMES = ["orders", "paiements-é", "注文", "a" * 200, "x.y_z-1", "🚀"]
"""Topic and group names: plain, accented, CJK, long (a two-byte length), an emoji."""
GROUP_ERRORS = [0, 0, 0, 14, 15, 16, 30, 69, 25]
PARTITION_ERRORS = [0, 0, 0, 0, 3, 25, 72]


def random_answer(rng: random.Random, max_groups: int = 8, max_topics: int = 4, max_partitions: int = 12) -> dict:
    """An answer as plain data: (throttle, [(group, error, [(topic, tagged, [partition fields])])])."""
    groups = []
    for g in range(rng.randint(0, max_groups)):
        topics = []
        for t in range(rng.randint(0, max_topics)):
            partitions = []
            for p in rng.sample(range(10_000), rng.randint(0, max_partitions)):
                metadata = rng.choice([None, "", "", "", "m", "métadonnées " * rng.randint(1, 20)])
                offset = rng.choice([-1, 0, rng.randint(1, 2 ** 40), 2 ** 63 - 1])
                partitions.append((p, offset, rng.choice([-1, 0, 7]), metadata, rng.choice(PARTITION_ERRORS)))
            topics.append((f"{rng.choice(NAMES)}-{t}", partitions))
        groups.append((f"{rng.choice(NAMES)}-g{g}", rng.choice(GROUP_ERRORS), topics))
    return {"throttle": rng.choice([0, 0, 25]), "groups": groups}


def kafka_python_bytes(answer: dict) -> bytes:
    response = OffsetFetchResponse(throttle_time_ms=answer["throttle"], groups=[
        GROUP(group_id=group_id, error_code=error, topics=[
            TOPIC(name=name, partitions=[PARTITION(partition_index=p, committed_offset=o, committed_leader_epoch=e,
                                                   metadata=m, error_code=c) for p, o, e, m, c in partitions])
            for name, partitions in topics])
        for group_id, error, topics in answer["groups"]])
    return response.encode(version=8)


def written_bytes(answer: dict, rng: random.Random | None = None) -> bytes:
    """The v8 answer written byte by byte; with ``rng``, unknown tagged fields after some structs
    (as a newer broker may add)."""
    out = bytearray(struct.pack(">i", answer["throttle"]))

    def uvarint(value: int) -> None:
        while value >= 0x80:
            out.append(value & 0x7F | 0x80)
            value >>= 7
        out.append(value)

    def string(text: str | None) -> None:
        if text is None:
            uvarint(0)
        else:
            data = text.encode()
            uvarint(len(data) + 1)
            out.extend(data)

    def tags() -> None:
        fields = [] if rng is None or rng.random() < 0.5 else [
            (tag, rng.randbytes(rng.choice([0, 3, 200]))) for tag in sorted(rng.sample(range(300), rng.randint(1, 3)))]
        uvarint(len(fields))
        for tag, value in fields:
            uvarint(tag)
            uvarint(len(value))
            out.extend(value)

    uvarint(len(answer["groups"]) + 1)
    for group_id, error, topics in answer["groups"]:
        string(group_id)
        uvarint(len(topics) + 1)
        for name, partitions in topics:
            string(name)
            uvarint(len(partitions) + 1)
            for p, o, e, m, c in partitions:
                out.extend(struct.pack(">iqi", p, o, e))
                string(m)
                out.extend(struct.pack(">h", c))
                tags()
            tags()
        out.extend(struct.pack(">h", error))
        tags()
    tags()
    return bytes(out)


def generic(data: bytes) -> tuple:
    """kafka-python's decoding, then ``offsets_from``: what the reading did before the narrow decoder."""
    response = OffsetFetchResponse.decode(data, version=8)
    read, failed, moved = offsets_from(response.groups)
    return response.throttle_time_ms, read, {g: (type(e), str(e)) for g, e in failed.items()}, moved


def narrow(data: bytes) -> tuple:
    answer = decode_offset_fetch_v8(data)
    return answer.throttle_time_ms, answer.read, {g: (type(e), str(e)) for g, e in answer.failed.items()}, answer.moved


@pytest.mark.parametrize("seed", range(200))
def test_the_narrow_decoder_reads_what_kafka_python_and_offsets_from_read(seed):
    rng = random.Random(seed)
    answer = random_answer(rng)
    data = kafka_python_bytes(answer)
    assert written_bytes(answer) == data  # the byte writer below writes what kafka-python writes
    assert narrow(data) == generic(data)
    tagged = written_bytes(answer, rng)
    assert narrow(tagged) == generic(tagged)


def test_an_answer_at_scale_many_groups_and_partitions_with_multi_byte_lengths():
    rng = random.Random(16)
    answer = {"throttle": 0, "groups": [
        (f"bench-g{g:05d}", 0, [(f"bench.t{g % 300:03d}", [(p, rng.randint(0, 10 ** 6), 0, "", 0)
                                                            for p in range(rng.choice([1, 10, 130]))])])
        for g in range(3000)]}
    data = kafka_python_bytes(answer)
    result = narrow(data)
    assert result == generic(data)
    assert sum(len(offsets) for offsets in result[1].values()) > 30_000


@pytest.mark.parametrize("answer", [
    {"throttle": 0, "groups": []},
    {"throttle": 0, "groups": [("g", 0, [])]},
    {"throttle": 0, "groups": [("g", 0, [("t", [])])]},
    {"throttle": 0, "groups": [("g", 16, [])]},
    {"throttle": 0, "groups": [("g", 0, [("t", [(0, -1, -1, None, 0), (1, 5, -1, "", 3)])])]},
    {"throttle": 0, "groups": [("g", 0, [("t", [(0, 4, -1, "", 0)]), ("t", [(1, 5, -1, None, 0)])])]},
    {"throttle": 0, "groups": [("g", 0, [("t", [(0, 4, -1, "", 0)])]), ("g", 30, [])]},
    {"throttle": 0, "groups": [("g", 0, [("t", [(p, p * 3 - 1, -1, "meta" if p == 100 else "", 3 if p % 7 == 0 else 0)
                                                for p in range(150)])])]},
], ids=["no-groups", "no-topics", "no-partitions", "moved", "no-commit-and-partition-error",
        "a-topic-twice", "a-group-twice", "metadata-after-two-runs-of-64"])
def test_edge_answers_read_alike(answer):
    data = kafka_python_bytes(answer)
    assert narrow(data) == generic(data)


def test_bytes_that_are_not_an_answer_raise_value_error_as_kafka_python_does():
    data = kafka_python_bytes(random_answer(random.Random(3), max_groups=3))
    for broken in (data[:-1], data[:len(data) // 2], data + b"\x00"):
        with pytest.raises(ValueError):
            decode_offset_fetch_v8(broken)


def test_kafka_pythons_connection_hands_the_v8_answer_to_the_narrow_decoder():
    protocol = KafkaProtocol(client_id="test")
    request = offset_fetch_request(["g1", "g2"])
    request.API_VERSION = 8
    correlation_id = protocol.send_request(request)
    body = kafka_python_bytes({"throttle": 0, "groups": [("g1", 0, [("t", [(0, 4, -1, "", 0)])]), ("g2", 16, [])]})
    header = struct.pack(">i", correlation_id) + b"\x00"  # response header v1: correlation id, no tags
    [(answered_id, answer)] = protocol.receive_bytes(struct.pack(">i", len(header) + len(body)) + header + body)
    assert answered_id == correlation_id
    assert isinstance(answer, OffsetFetchAnswer)
    assert answer.read == {"g1": {("t", 0): 4}} and answer.moved == {"g2"}


def test_a_request_sent_at_another_version_is_decoded_by_kafka_python():
    protocol = KafkaProtocol(client_id="test")
    request = offset_fetch_request(["g1"])
    request.API_VERSION = 9  # the same answer layout, not the version this decoder is for
    correlation_id = protocol.send_request(request)
    body = kafka_python_bytes({"throttle": 0, "groups": [("g1", 0, [("t", [(0, 4, -1, "", 0)])])]})
    header = struct.pack(">i", correlation_id) + b"\x00"
    [(_, answer)] = protocol.receive_bytes(struct.pack(">i", len(header) + len(body)) + header + body)
    assert not isinstance(answer, OffsetFetchAnswer)
    assert offsets_from(answer.groups)[0] == {"g1": {("t", 0): 4}}
