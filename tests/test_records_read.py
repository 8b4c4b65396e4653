"""Reading the records of a partition on the real cluster (``kpulse/kafka/record_fetch.py``): the
same records, offsets, keys and headers as ``kafka-console-consumer`` prints for that partition;
compressed batches, aborted and committed transactions with their markers, a committed offset
before the log start, the count and byte bounds, hostile contents returned as the bytes they are,
and one error line for what cannot be read."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from kpulse.config import parse_config
from kpulse.kafka.record_fetch import read_records
from kpulse.records.display import show
from localkafka.tools import run_tool
from tests.conftest import one_error_line
from tests.support import admin_for, commit, create_topic, free_port

pytestmark = pytest.mark.cluster

TOPIC = "records-read"
PLAIN, COMPRESSED, TRANSACTIONS, TRIMMED, HOSTILE = range(5)
CODECS = ("gzip", "lz4", "zstd", "snappy")
PER_CODEC = 3
TRIMMED_TO = 6
GROUP = "records-read-behind"
HOSTILE_VALUES = [
    b"# Heading\n\n**bold** [link](http://example.invalid/x.png) ![img](http://example.invalid/i.png)",
    b"<script>alert(1)</script><img src=http://example.invalid/x onerror=alert(2)>",
    "\x1b[31mred\x1b[0m \x00 \u202eevil\u202c \u2066isolate\u2069 \r\n".encode(),
    b"x" * 20_000,
]
EXPECTED = {PLAIN: 6, COMPRESSED: len(CODECS) * PER_CODEC, TRANSACTIONS: 2, TRIMMED: 10 - TRIMMED_TO,
            HOSTILE: len(HOSTILE_VALUES)}
"""The records kafka-console-consumer prints of each partition (read-committed)."""


def cluster_config(bootstrap: str, **records):
    data = {"clusters": [{"name": "test", "bootstrap_servers": bootstrap, "probe": {"enabled": False},
                          "records": records}]}
    return parse_config(data, source="test", base_dir=Path("/"), environ={}).cluster()


@pytest.fixture(scope="module")
def topic(bootstrap):
    from confluent_kafka import Producer
    from confluent_kafka import TopicPartition

    admin = admin_for(bootstrap)
    create_topic(admin, TOPIC, 5)
    now = int(time.time() * 1000)
    plain = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    for index in range(6):  # one batch each: the byte bound then stops after one record
        plain.produce(TOPIC, partition=PLAIN, key=None if index == 3 else f"key-{index}".encode(),
                      value=f'{{"order": {index}, "note": "n{index}"}}'.encode(), timestamp=now + index,
                      headers=[("trace", f"t{index}".encode()), ("source", b"test")])
        assert plain.flush(30) == 0
    for index in range(10):
        plain.produce(TOPIC, partition=TRIMMED, key=b"k", value=f"trim-{index}".encode())
    for value in HOSTILE_VALUES:
        plain.produce(TOPIC, partition=HOSTILE, key="\u202ekey".encode(), value=value,
                      headers=[("<b>h</b>", b"\x1b[2J")])
    assert plain.flush(30) == 0
    producers = {codec: Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 200,
                                  "compression.type": codec, "enable.idempotence": True}) for codec in CODECS}
    for codec, producer in producers.items():  # one batch per codec, the codecs one after the other
        for index in range(PER_CODEC):
            producer.produce(TOPIC, partition=COMPRESSED, key=f"{codec}-{index}".encode(),
                             value=(f"{codec} record {index} " * 20).encode())
        assert producer.flush(30) == 0
    transactional = Producer({"bootstrap.servers": bootstrap, "transactional.id": "records-read-tx"})
    transactional.init_transactions(30)
    for outcome in ("abort", "commit"):
        transactional.begin_transaction()
        for index in range(2):
            transactional.produce(TOPIC, partition=TRANSACTIONS, key=f"{outcome}-{index}".encode(),
                                  value=f"{outcome}ed {index}".encode())
        transactional.flush(30)
        (transactional.abort_transaction if outcome == "abort" else transactional.commit_transaction)(30)
    trimmed = TopicPartition(TOPIC, TRIMMED, TRIMMED_TO)
    admin.delete_records([trimmed], request_timeout=15)[trimmed].result(timeout=20)
    commit(admin, GROUP, {(TOPIC, TRIMMED): 2, (TOPIC, PLAIN): 1})
    return TOPIC


@pytest.fixture(scope="module")
def console(bootstrap, topic):
    """What kafka-console-consumer prints for each compared partition, read-committed: (offset,
    headers, key, value) per record. One run for the whole topic (one JVM; its generated group commits
    nothing); the hostile partition's lines are left out (its values hold newlines)."""
    result = run_tool("kafka-console-consumer", [
        "--bootstrap-server", bootstrap, "--topic", TOPIC, "--from-beginning", "--isolation-level", "read_committed",
        "--timeout-ms", "20000", "--max-messages", str(sum(EXPECTED.values())),
        "--property", "print.partition=true", "--property", "print.offset=true", "--property", "print.headers=true",
        "--property", "print.key=true"])
    rows: dict[int, list[tuple[int, str, str, str]]] = {partition: [] for partition in EXPECTED if partition != HOSTILE}
    for line in result.stdout.splitlines():
        match = re.fullmatch(r"Partition:(\d+)\tOffset:(\d+)\t(.*?)\t(.*?)\t(.*)", line)
        if match and int(match[1]) in rows:
            rows[int(match[1])].append((int(match[2]), match[3], match[4], match[5]))
    return rows


def as_console(read) -> list[tuple[int, str, str, str]]:
    """Our records as the console consumer prints them (read-committed: no markers, no aborted)."""
    def text(data):
        return "null" if data is None else data.decode()

    def headers(record):
        return ",".join(f"{name}:{text(value)}" for name, value in record.headers) or "NO_HEADERS"

    return [(r.offset, headers(r), text(r.key), text(r.value)) for r in read.records
            if r.control is None and not r.aborted]


@pytest.mark.parametrize("partition", [PLAIN, COMPRESSED, TRANSACTIONS, TRIMMED])
def test_the_records_are_those_the_console_consumer_prints(bootstrap, console, partition):
    read = read_records(cluster_config(bootstrap, max_records=100), TOPIC, partition, offset=0, count=100)
    assert read.error is None and read.bound == "end of log"
    assert console[partition] and as_console(read) == console[partition]


def test_plain_records_have_their_keys_headers_timestamps_and_no_producer(bootstrap, topic):
    read = read_records(cluster_config(bootstrap), TOPIC, PLAIN, offset=0)
    first = read.records[0]
    assert (first.key, first.headers, first.timestamp_type, first.compression) == (
        b"key-0", (("trace", b"t0"), ("source", b"test")), "CreateTime", "none")
    assert first.timestamp is not None and read.records[3].key is None
    assert (read.log_start, read.high_watermark, read.last_stable_offset, read.next_offset) == (0, 6, 6, 6)
    assert show(first.value).kind == "json"


def test_each_compressed_batch_says_its_codec_producer_and_sequence(bootstrap, topic):
    read = read_records(cluster_config(bootstrap), TOPIC, COMPRESSED, offset=0)
    assert [r.compression for r in read.records] == [codec for codec in CODECS for _ in range(PER_CODEC)]
    assert [r.key for r in read.records] == [f"{c}-{i}".encode() for c in CODECS for i in range(PER_CODEC)]
    assert all(r.producer_id is not None and r.producer_epoch is not None for r in read.records)
    assert [r.sequence for r in read.records[:PER_CODEC]] == list(range(PER_CODEC))


def test_an_aborted_transaction_is_flagged_and_the_markers_are_shown(bootstrap, topic):
    read = read_records(cluster_config(bootstrap), TOPIC, TRANSACTIONS, offset=0)
    assert [(r.offset, r.control, r.aborted, r.transactional) for r in read.records] == [
        (0, None, True, True), (1, None, True, True), (2, "abort", False, True),
        (3, None, False, True), (4, None, False, True), (5, "commit", False, True)]
    assert [r.key for r in read.records if r.control is None] == [b"abort-0", b"abort-1", b"commit-0", b"commit-1"]


def test_a_committed_offset_before_the_log_start_is_read_from_the_log_start_with_a_note(bootstrap, topic):
    read = read_records(cluster_config(bootstrap), TOPIC, TRIMMED, group=GROUP)
    assert read.error is None
    assert (read.start_from, read.requested_start, read.log_start, read.read_from) == (
        f"committed offset of group {GROUP}", 2, TRIMMED_TO, TRIMMED_TO)
    assert read.before_log_start and [r.offset for r in read.records] == list(range(TRIMMED_TO, 10))
    assert read.notes == (f"offset 2 is before the log start {TRIMMED_TO}: records 2 to {TRIMMED_TO - 1} were "
                          f"deleted (retention or DeleteRecords); reading from {TRIMMED_TO}",)


def test_a_group_starts_at_its_committed_offset_and_without_one_at_the_log_start(bootstrap, topic):
    read = read_records(cluster_config(bootstrap), TOPIC, PLAIN, group=GROUP, count=2)
    assert (read.requested_start, [r.offset for r in read.records], read.bound) == (1, [1, 2], "count")
    other = read_records(cluster_config(bootstrap), TOPIC, COMPRESSED, group=GROUP, count=1)
    assert other.start_from == f"log start (group {GROUP} has no committed offset on {TOPIC}-{COMPRESSED})"
    assert [r.offset for r in other.records] == [0]


def test_the_byte_bound_stops_after_the_first_batch_and_the_count_bound_at_the_count(bootstrap, topic):
    by_bytes = read_records(cluster_config(bootstrap), TOPIC, PLAIN, offset=0, max_bytes=1)
    assert ([r.offset for r in by_bytes.records], by_bytes.bound, by_bytes.next_offset) == ([0], "bytes", 1)
    by_count = read_records(cluster_config(bootstrap), TOPIC, COMPRESSED, offset=1, count=4)
    assert ([r.offset for r in by_count.records], by_count.bound) == ([1, 2, 3, 4], "count")
    capped = read_records(cluster_config(bootstrap, max_records=2), TOPIC, PLAIN, offset=0, count=50)
    assert len(capped.records) == 2  # the config's bound caps what a user asks


def test_hostile_contents_come_back_as_the_bytes_and_text_they_are(bootstrap, topic):
    read = read_records(cluster_config(bootstrap), TOPIC, HOSTILE, offset=0)
    assert [r.value for r in read.records] == HOSTILE_VALUES
    assert {r.key for r in read.records} == {"\u202ekey".encode()}
    assert read.records[0].headers == (("<b>h</b>", b"\x1b[2J"),)
    assert [show(v, limit=100_000).text for v in HOSTILE_VALUES] == [v.decode() for v in HOSTILE_VALUES]
    assert show(HOSTILE_VALUES[-1]).cut_at == 4096


def test_past_the_log_end_there_is_nothing_to_read_and_it_says_so(bootstrap, topic):
    read = read_records(cluster_config(bootstrap), TOPIC, PLAIN, offset=99)
    assert (read.records, read.bound, read.error) == ((), "end of log", None)
    assert read.notes == ("offset 99 is past the log end 6: no record there",)


@pytest.mark.parametrize("where, expected", [
    ({"topic": "no-such-topic", "partition": 0, "offset": 0}, "topic 'no-such-topic' does not exist on this cluster"),
    ({"topic": TOPIC, "partition": 9, "offset": 0}, f"topic '{TOPIC}' has no partition 9 (it has 5: 0 to 4)"),
    ({"topic": TOPIC, "partition": 0, "group": "no-such-group"}, "group 'no-such-group' does not exist on this cluster"),
])
def test_what_cannot_be_read_is_one_error_line(bootstrap, topic, where, expected):
    read = read_records(cluster_config(bootstrap), **where)
    assert (read.error, read.records) == (expected, ())


def test_an_unreachable_cluster_is_one_error_line_within_the_time_budget():
    started = time.monotonic()
    read = read_records(cluster_config(f"127.0.0.1:{free_port()}", timeout_seconds=2), TOPIC, 0, offset=0)
    assert read.error is not None and read.error.startswith("cannot reach cluster 'test'") and "\n" not in read.error
    assert time.monotonic() - started < 10




# --- kpulse records ----------------------------------------------------------------------------------

def run_cli(capsys, config: Path, *args: str) -> subprocess.CompletedProcess:
    """``kpulse --config CONFIG records ARGS`` in this process (as ``python -m cli.main`` runs it)."""
    from cli.main import main

    code = main(["--config", str(config), "records", *args])
    captured = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, captured.out, captured.err)


def cli_config(tmp_path: Path, bootstrap: str, **records) -> Path:
    path = tmp_path / "kpulse.yaml"
    path.write_text(yaml.safe_dump({
        "clusters": [{"name": "test", "bootstrap_servers": bootstrap, "probe": {"enabled": False},
                      "records": records}],
        "lake": {"path": str(tmp_path / "lake")}, "dashboard": {"users_file": str(tmp_path / "users.yaml")}}))
    return path


def audit_rows(tmp_path: Path) -> list[tuple[str, str, str, str | None]]:
    from kpulse.lake.reader import read_table

    rows = read_table(str(tmp_path / "lake"), "audit")
    return [(row.action, row.target, row.result, row.plan_json) for row in rows.itertuples()]


def test_the_cli_shows_the_records_from_the_groups_offset_with_their_contents_hidden(capsys, tmp_path, bootstrap,
                                                                                   topic):
    result = run_cli(capsys, cli_config(tmp_path, bootstrap), "--group", GROUP, "--topic", TOPIC,
                     "--partition", str(TRIMMED))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"Records of {TOPIC}-{TRIMMED} on cluster test, from offset 2 (committed offset of group {GROUP})"
    assert lines[1] == (f"log start {TRIMMED_TO}, high watermark 10, last stable offset 10; 4 records read, stopped by "
                        "the end of the log")
    assert lines[2].startswith(f"note: offset 2 is before the log start {TRIMMED_TO}")
    assert re.split(r"\s{2,}", lines[4]) == ["OFFSET", "TIMESTAMP (UTC)", "SIZE (B)", "COMPRESSION", "PRODUCER ID",
                                             "EPOCH", "SEQUENCE", "TRANSACTION", "HEADERS", "KEY", "VALUE"]
    cells = re.split(r"\s{2,}", lines[5])
    assert cells[0] == str(TRIMMED_TO) and cells[-2:] == ["hidden, 1 B", "hidden, 6 B"]
    assert "trim-" not in result.stdout and len(lines) == 9


def test_the_cli_reveals_contents_on_a_visible_topic_and_audits_the_offsets(capsys, tmp_path, bootstrap, topic):
    config = cli_config(tmp_path, bootstrap, visible_topics=["records-.*"], mask={"fields": ["note"]})
    result = run_cli(capsys, config, "--offset", "4", "--topic", TOPIC, "--partition", str(PLAIN), "--reveal")
    assert result.returncode == 0, result.stderr
    assert '"order": 4' in result.stdout and '"note": "***"' in result.stdout and "n4" not in result.stdout
    assert "\n--- offset 5, value (JSON, 26 B, 1 masked)\n{\n" in result.stdout
    assert audit_rows(tmp_path) == [("reveal-records", f"{TOPIC}-{PLAIN}", "ok",
                                     f'{{"offsets": ["4-5"], "partition": {PLAIN}, "records": 2, "topic": "{TOPIC}"}}')]


def test_the_cli_refuses_a_reveal_the_config_does_not_allow_in_one_line_and_audits_it(capsys, tmp_path, bootstrap,
                                                                                      topic):
    result = run_cli(capsys, cli_config(tmp_path, bootstrap), "--offset", "0", "--topic", TOPIC, "--partition", "0",
                     "--reveal")
    assert one_error_line(result) == (f"kpulse: error: records.visible_topics of cluster test does not match topic "
                                      f"'{TOPIC}': its keys and values are not shown to anyone")
    assert result.stdout == "" and [row[2] for row in audit_rows(tmp_path)] == ["denied"]


def test_the_cli_says_an_unknown_group_in_one_line(capsys, tmp_path, bootstrap, topic):
    result = run_cli(capsys, cli_config(tmp_path, bootstrap), "--group", "no-such-group", "--topic", TOPIC,
                     "--partition", "0")
    assert one_error_line(result) == "kpulse: error: group 'no-such-group' does not exist on this cluster"


def test_the_cli_json_is_the_read(capsys, tmp_path, bootstrap, topic):
    result = run_cli(capsys, cli_config(tmp_path, bootstrap), "--offset", "0", "--topic", TOPIC,
                     "--partition", str(TRANSACTIONS), "--count", "3", "--json")
    printed = json.loads(result.stdout)
    assert (printed["bound"], printed["next_offset"]) == ("count", 3)
    assert [(r["offset"], r["aborted"], r["control"], r["value"]["kind"], r["value"]["text"])
            for r in printed["records"]] == [(0, True, None, "hidden", None), (1, True, None, "hidden", None),
                                            (2, False, "abort", "hidden", None)]
