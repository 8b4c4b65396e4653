"""Skipping the record a consumer is stuck on, on the real cluster: the demo's poison consumer
(``python -m localkafka.demo.workers poison-consumer``) loops on a malformed record of partition 0
(reads it, fails to parse it, commits nothing, seeks back); kpulse refuses the skip while it runs,
as the official tool refuses the reset; once it stops, the skip moves that one partition's committed
offset to the offset `kafka-consumer-groups --reset-offsets --shift-by 1 --dry-run` gives, the audit
row holds the record's offset and timestamp (never its contents), and the consumer, started again,
passes the record. Classic and KIP-848 groups; a share group is refused with its delivery settings."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from localkafka.demo.workers import MALFORMED_VALUE, poison_event
from operations.access import User
from operations.errors import BadInput, Refused
from tests.conftest import one_error_line
from tests.support import (
    admin_for, cli, commit, committed, config_file, create_topic, official, official_rows, operations_for,
    start_share_consumer, stop_process, wait_for,
)

pytestmark = pytest.mark.cluster
OPERATOR = User("tester", "operator")
GOOD_BEFORE, GOOD_AFTER, OTHER = 5, 3, 4
"""Partition 0: 5 good records, the malformed one (offset 5), 3 good; partition 1: 4 good records."""
POISON_OFFSET = GOOD_BEFORE
END = GOOD_BEFORE + 1 + GOOD_AFTER
POISON_MS = int(time.time() * 1000) - 60_000
"""The malformed record's timestamp (CreateTime)."""


@pytest.fixture(scope="module")
def operations(tmp_path_factory, bootstrap):
    return operations_for(tmp_path_factory.mktemp("ops-skip"), bootstrap)


def poison_topic(bootstrap: str, name: str) -> None:
    """Two partitions: partition 0 with the malformed record at :data:`POISON_OFFSET`."""
    from confluent_kafka import Producer

    create_topic(admin_for(bootstrap), name, 2)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    values = [poison_event(i) for i in range(GOOD_BEFORE)] + [MALFORMED_VALUE] + [
        poison_event(i) for i in range(GOOD_BEFORE, GOOD_BEFORE + GOOD_AFTER)]
    for number, value in enumerate(values):
        producer.produce(name, value=value, key=f"k{number}", partition=0,
                         timestamp=POISON_MS if value == MALFORMED_VALUE else POISON_MS - 1000 + number)
    for number in range(OTHER):
        producer.produce(name, value=poison_event(100 + number), partition=1)
    assert producer.flush(30) == 0


def start_consumer(bootstrap: str, group: str, topic: str, protocol: str, log: Path) -> subprocess.Popen:
    """The demo's poison consumer; what it says (the record it cannot parse) goes to ``log``."""
    with open(log, "ab") as output:
        return subprocess.Popen([sys.executable, "-m", "localkafka.demo.workers", "poison-consumer", "--bootstrap",
                                 bootstrap, "--group", group, "--topic", topic, "--protocol", protocol],
                                stdout=subprocess.DEVNULL, stderr=output)


def dry_run_shift_by_one(bootstrap: str, group: str, topic: str) -> str:
    return official("kafka-consumer-groups", "--bootstrap-server", bootstrap, "--reset-offsets", "--group", group,
                    "--topic", f"{topic}:0", "--shift-by", "1", "--dry-run")


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_a_consumer_stuck_on_a_malformed_record_passes_it_after_a_skip_of_that_one_record(operations, bootstrap,
                                                                                         protocol, tmp_path):
    topic, group = f"skip-poison-{protocol}", f"skip-{protocol}"
    poison_topic(bootstrap, topic)
    admin = admin_for(bootstrap)
    log = tmp_path / "consumer.log"
    consumer = start_consumer(bootstrap, group, topic, protocol, log)
    try:
        wait_for(lambda: committed(admin, group) == {(topic, 0): POISON_OFFSET, (topic, 1): OTHER}, 60,
                 what="the consumer commits up to the malformed record")
        with pytest.raises(Refused, match=r"active member.*Stop its consumers.*kpulse skip-records") as refused:
            operations.plan_skip_records("test", group, topic, 0)
        assert "\n" not in str(refused.value)
        assert "can only be reset if the group" in dry_run_shift_by_one(bootstrap, group, topic)  # the tool too
        wait_for(lambda: f"cannot parse {topic}-0 offset {POISON_OFFSET}" in log.read_text(), 30,
                 what="the consumer failing on the malformed record")
        assert committed(admin, group)[(topic, 0)] == POISON_OFFSET  # it retries, and commits nothing past it
    finally:
        stop_process(consumer)

    plan = wait_for(lambda: _planned(operations, group, topic), 60, what="the group Empty after its consumer left")
    official_new = {row["PARTITION"]: int(row["NEW-OFFSET"])
                    for row in official_rows("kafka-consumer-groups", "--bootstrap-server", bootstrap,
                                             "--reset-offsets", "--group", group, "--topic", f"{topic}:0",
                                             "--shift-by", "1", "--dry-run")}
    assert (plan.from_offset, plan.to_offset, plan.skipped) == (POISON_OFFSET, POISON_OFFSET + 1, 1)
    assert official_new == {"0": plan.to_offset}
    assert (plan.record_timestamp, plan.record_timestamp_type, plan.group_type) == (POISON_MS, "CreateTime", protocol)

    outcome = operations.skip_records(OPERATOR, plan)

    assert outcome.result == "ok", outcome.error
    assert committed(admin, group) == {(topic, 0): POISON_OFFSET + 1, (topic, 1): OTHER}
    audit = operations.audit.read().to_dict("records")[-1]
    assert (audit["action"], audit["result"], audit["target"]) == ("skip-records", "ok", f"group {group}")
    recorded = json.loads(audit["plan_json"])
    assert (recorded["from_offset"], recorded["record_timestamp"]) == (POISON_OFFSET, POISON_MS)
    assert "signup" not in json.dumps(audit, default=str) and MALFORMED_VALUE not in json.dumps(audit, default=str)

    consumer = start_consumer(bootstrap, group, topic, protocol, log)
    try:
        wait_for(lambda: committed(admin, group).get((topic, 0)) == END, 60,
                 what="the restarted consumer commits past the skipped record")
    finally:
        stop_process(consumer)


def _planned(operations, group: str, topic: str):
    try:
        return operations.plan_skip_records("test", group, topic, 0)
    except Refused:
        return None  # a KIP-848 member is fenced a moment after it leaves


def test_a_skip_to_an_offset_is_planned_as_the_official_to_offset_and_bad_input_is_one_line(operations, bootstrap,
                                                                                           tmp_path):
    topic, group = "skip-poison-to", "skip-to"
    poison_topic(bootstrap, topic)
    commit(admin_for(bootstrap), group, {(topic, 0): POISON_OFFSET, (topic, 1): 1})

    plan = operations.plan_skip_records("test", group, topic, 0, END - 1, expect_from=POISON_OFFSET)
    official_new = official_rows("kafka-consumer-groups", "--bootstrap-server", bootstrap, "--reset-offsets",
                                 "--group", group, "--topic", f"{topic}:0", "--to-offset", str(END - 1), "--dry-run")

    assert [int(row["NEW-OFFSET"]) for row in official_new] == [plan.to_offset] == [END - 1]
    assert plan.skipped == END - 1 - POISON_OFFSET
    with pytest.raises(Refused, match=f"is {POISON_OFFSET} now, not 3 as read"):
        operations.plan_skip_records("test", group, topic, 0, expect_from=3)
    with pytest.raises(BadInput, match=rf"offset {POISON_OFFSET} is outside the records after the committed offset "
                                       rf"\({POISON_OFFSET + 1}\.\.{END}\)"):
        operations.plan_skip_records("test", group, topic, 0, POISON_OFFSET)
    with pytest.raises(BadInput, match=rf"offset {END + 1} is outside"):
        operations.plan_skip_records("test", group, topic, 0, END + 1)
    with pytest.raises(BadInput, match="unknown group 'skip-tto'"):
        operations.plan_skip_records("test", "skip-tto", topic, 0)
    with pytest.raises(BadInput, match=rf"partition {topic}-7 does not exist"):
        operations.plan_skip_records("test", group, topic, 7)
    with pytest.raises(BadInput, match="unknown topic 'skip-poison-too' \\(did you mean 'skip-poison-to'\\?\\)"):
        operations.plan_skip_records("test", group, "skip-poison-too", 0)

    config = config_file(tmp_path / "kpulse.yaml", bootstrap, tmp_path / "lake")
    shown = cli(config, "skip-records", "--group", group, "--topic", topic, "--partition", "0")
    assert shown.returncode == 0, shown.stderr
    assert (f"classic group {group} (Empty) skips 1 record(s) of {topic}-0: committed offset {POISON_OFFSET} -> "
            f"{POISON_OFFSET + 1} (the record at {POISON_OFFSET} written ") in shown.stdout
    assert "dry run: nothing changed" in shown.stdout
    assert shown.stdout.rstrip().endswith(f"kafka-consumer-groups --reset-offsets --group {group} --topic {topic}:0 "
                                          "--shift-by 1 --dry-run")
    result = cli(config, "skip-records", "--group", group, "--topic", topic, "--partition", "0", "--to-offset",
                 str(END + 5), "--execute")
    assert result.returncode != 0
    assert one_error_line(result).endswith(f"offset {END + 5} is outside the records after the committed offset "
                                           f"({POISON_OFFSET + 1}..{END}); a skip moves forward within them")
    assert committed(admin_for(bootstrap), group)[(topic, 0)] == POISON_OFFSET


def test_a_share_group_is_refused_with_its_delivery_settings(operations, bootstrap):
    topic, group = "skip-share", "skip-share-group"
    create_topic(admin_for(bootstrap), topic, 1)
    result = official("kafka-configs", "--bootstrap-server", bootstrap, "--alter", "--entity-type", "groups",
                      "--entity-name", group, "--add-config", "share.delivery.count.limit=3")
    assert not result.startswith("EXIT"), result
    with start_share_consumer(bootstrap, topic, group):
        wait_for(lambda: _listed_share(bootstrap, group), 60, what="the share group listed")
        with pytest.raises(BadInput) as refused:
            operations.plan_skip_records("test", group, topic, 0)
    text = str(refused.value)
    assert "\n" not in text and text.startswith(f"group '{group}' is a share group: it needs no skip")
    assert "share.delivery.count.limit=3 (the group's config)" in text
    assert "share.record.lock.duration.ms=30000 (the broker's default)" in text


def _listed_share(bootstrap: str, group: str) -> bool:
    return group in official("kafka-share-groups", "--bootstrap-server", bootstrap, "--list").split()
