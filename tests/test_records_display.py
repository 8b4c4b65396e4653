"""How a record's key, value and headers are shown, and who may see them: JSON pretty where it is
an object or array, UTF-8 text where it decodes, else a hex view; masks on everything shown; a cut
at a byte limit with the full size; hidden contents show only their size. Pure: no Kafka."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kpulse.config import ConfigError, parse_config
from kpulse.config.model import ClusterConfig, RecordsConfig, RecordsMaskConfig
from kpulse.records.access import reveal_refusal
from kpulse.records.display import MASK, hex_view, show, show_record, transaction_text
from kpulse.records.model import RecordView, RecordsRead
from operations.access import User, UsersFile
from operations.audit import AuditLog
from operations.errors import NotAuthorized, Refused
from operations.records_access import REVEAL_RECORDS, reveal, reveal_refusal_for


def record(key: bytes | None = b"k", value: bytes | None = b"v",
           headers: tuple[tuple[str, bytes | None], ...] = ()) -> RecordView:
    return RecordView(offset=7, timestamp=datetime(2026, 1, 1, tzinfo=UTC), timestamp_type="CreateTime", key=key,
                      value=value, headers=headers, size=40, compression="none", producer_id=None,
                      producer_epoch=None, sequence=None, transactional=False, control=None, aborted=False)


# --- decoding -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("data, kind, text", [
    (None, "null", ""),
    (b"", "text", ""),
    (b"plain words", "text", "plain words"),
    ("héllo \u202e".encode(), "text", "héllo \u202e"),
    (b'{"a":1,"b":[true,null]}', "json", '{\n  "a": 1,\n  "b": [\n    true,\n    null\n  ]\n}'),
    (b"[]", "json", "[]"),
    (b'  {"nested": {}}  ', "json", '{\n  "nested": {}\n}'),
    (b'{"price": 1.10, "big": 123456789012345678901234567890, "e": 1e400}', "json",
     '{\n  "price": 1.10,\n  "big": 123456789012345678901234567890,\n  "e": 1e400\n}'),
    ('{"name": "Zoë <b>x</b>"}'.encode(), "json", '{\n  "name": "Zoë <b>x</b>"\n}'),
    (b"42", "text", "42"),  # a scalar reads the same as text
    (b'{"a": 1, "a": 2}', "text", '{"a": 1, "a": 2}'),  # pretty-printing would lose the repeated key
    (b'{"a": NaN}', "text", '{"a": NaN}'),
    (b'{"a": 1', "text", '{"a": 1'),
    (b"\xff\xfe\x00", "binary", "00000000  ff fe 00" + " " * 39 + "  |...|"),
])
def test_bytes_are_shown_as_json_text_or_hex(data, kind, text):
    shown = show(data)
    assert (shown.kind, shown.text) == (kind, text)
    assert shown.size == (None if data is None else len(data))
    assert not shown.truncated


def test_deeply_nested_json_is_shown_as_its_text():
    data = b"[" * 50_000 + b"]" * 50_000
    shown = show(data, limit=100)
    assert shown.kind == "text" and shown.text == "[" * 100


def test_the_hex_view_has_offsets_hex_and_the_printable_bytes():
    view = hex_view(bytes(range(0x3e, 0x3e + 18)))
    assert view.splitlines() == [
        "00000000  3e 3f 40 41 42 43 44 45 46 47 48 49 4a 4b 4c 4d  |>?@ABCDEFGHIJKLM|",
        "00000010  4e 4f                                            |NO|",
    ]


def test_a_long_value_is_cut_at_the_limit_at_a_character_boundary_with_its_full_size():
    data = ("é" * 3000).encode()  # two bytes a character
    shown = show(data, limit=1001)
    assert shown.text == "é" * 500 and shown.cut_at == 1001 and shown.size == 6000
    assert shown.describe() == "text, 6,000 B, cut at 1,001 B"


def test_a_long_binary_value_shows_a_quarter_of_the_limit_in_hex():
    shown = show(b"\xff" * 1000, limit=256)
    assert len(shown.text.splitlines()) == 4 and shown.cut_at == 64
    assert shown.describe() == "binary (hex), 1,000 B, cut at 64 B"


def test_hostile_text_is_returned_as_the_text_it_is():
    hostile = "# Title\n<script>alert(1)</script> [link](http://x) \x1b[31mred\u202eevil\x00 " + "x" * 5000
    shown = show(hostile.encode(), limit=10_000)
    assert shown.kind == "text" and shown.text == hostile


@pytest.mark.parametrize("changes, text", [
    ({}, "-"), ({"transactional": True}, "committed"), ({"transactional": True, "aborted": True}, "aborted"),
    ({"transactional": True, "control": "commit"}, "marker: commit"),
    ({"transactional": True, "control": "abort"}, "marker: abort"),
])
def test_a_records_part_in_a_transaction_in_words(changes, text):
    assert transaction_text(dataclasses.replace(record(), **changes)) == text


# --- masks ----------------------------------------------------------------------------------------

def test_masked_fields_are_replaced_at_any_depth_case_insensitively():
    mask = RecordsMaskConfig(fields=("password", "Card"))
    shown = show(b'{"user": "ann", "Password": "hunter2", "pay": [{"card": {"n": 4111}}]}', mask=mask)
    assert "hunter2" not in shown.text and "4111" not in shown.text
    assert shown.text.count(f'"{MASK}"') == 2 and shown.masked == 2 and '"user": "ann"' in shown.text


def test_mask_patterns_replace_every_match_in_text_and_json():
    mask = RecordsMaskConfig(patterns=(r"\d{4}-\d{4}",))
    assert show(b"card 1234-5678 and 8765-4321", mask=mask).text == f"card {MASK} and {MASK}"
    shown = show(b'{"note": "call 1111-2222"}', mask=mask)
    assert shown.text == f'{{\n  "note": "call {MASK}"\n}}' and shown.masked == 1


def test_mask_patterns_overwrite_the_bytes_of_a_hex_view():
    shown = show(b"\xffs=1234-5678\x00", mask=RecordsMaskConfig(patterns=(r"\d{4}-\d{4}",)))
    assert shown.kind == "binary" and "31 32 33 34" not in shown.text
    assert shown.text.endswith("|.s=*********.|") and shown.masked == 1


def test_a_masked_field_name_masks_a_header_of_that_name():
    shown = show_record(record(headers=(("Authorization", b"Bearer x"), ("trace", b"abc"))), reveal=True,
                        mask=RecordsMaskConfig(fields=("authorization",)))
    assert [(name, value.text) for name, value in shown.headers] == [("Authorization", MASK), ("trace", "abc")]


# --- hidden unless revealed -------------------------------------------------------------------------

def test_without_reveal_contents_are_hidden_with_their_sizes_and_header_names_stay():
    shown = show_record(record(key=b"user-1", value=b'{"secret": 1}', headers=(("h", b"hv"), ("n", None))),
                        reveal=False)
    assert (shown.key.kind, shown.key.text, shown.key.size) == ("hidden", "", 6)
    assert (shown.value.kind, shown.value.text, shown.value.size) == ("hidden", "", 13)
    assert [(name, value.kind, value.size) for name, value in shown.headers] == [("h", "hidden", 2),
                                                                                 ("n", "null", None)]
    assert not shown.revealed and shown.value.describe() == "hidden, 13 B"


def test_with_reveal_contents_are_shown():
    shown = show_record(record(key=None, value=b"text"), reveal=True)
    assert (shown.key.kind, shown.value.text, shown.revealed) == ("null", "text", True)


# --- who may reveal -------------------------------------------------------------------------------

def cluster(**records) -> ClusterConfig:
    data = {"clusters": [{"name": "prod", "bootstrap_servers": "k:9092", "records": records}]}
    return parse_config(data, source="test", base_dir=Path("/etc"), environ={}).cluster()


def test_records_config_defaults_show_no_topic_and_bound_the_read():
    records = cluster().records
    assert records == RecordsConfig()
    assert (records.visible_topics, records.max_records, records.max_bytes, records.timeout_seconds) == (
        (), 20, 1 << 20, 5.0)


@pytest.mark.parametrize("settings, message", [
    ({"visible_topics": ["orders("]}, "clusters[0].records.visible_topics[0]: invalid regex 'orders('"),
    ({"mask": {"patterns": ["a*"]}}, "clusters[0].records.mask.patterns[0]: 'a*' matches empty text"),
    ({"mask": {"field": ["x"]}}, "clusters[0].records.mask.field: unknown key (did you mean 'fields'?)"),
    ({"max_records": 0}, "clusters[0].records.max_records: must be between 1 and 10000, got 0"),
    ({"timeout_seconds": 0}, "clusters[0].records.timeout_seconds: must be a number of seconds > 0"),
])
def test_bad_records_settings_name_their_key(settings, message):
    with pytest.raises(ConfigError, match=None) as caught:
        cluster(**settings)
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize("operator, topic, allowed", [
    (False, "orders", False),  # rule 2: a viewer never
    (True, "orders", True),  # rule 3: an operator, on a visible topic
    (True, "orders.eu", True),
    (True, "payments", False),  # ... and on no other
    (True, "xorders", False),  # the regex matches the whole name
])
def test_reveal_rules(operator, topic, allowed):
    refusal = reveal_refusal(cluster(visible_topics=["orders(\\..*)?"]), topic, may_see_contents=operator)
    assert (refusal is None) == allowed


def test_by_default_no_topic_is_revealed_even_to_an_admin():
    assert "does not match topic 'orders'" in (reveal_refusal_for(User("ada", "admin"), cluster(), "orders") or "")


@pytest.fixture
def audit(tmp_path) -> AuditLog:
    return AuditLog(str(tmp_path / "lake"), tmp_path / "spool.jsonl")


@pytest.fixture
def users(tmp_path) -> UsersFile:
    users = UsersFile(tmp_path / "users.yaml")
    users.add("otto", "operator", "otto-secret")
    users.add("vic", "viewer", "vic-secret")
    return users


def audit_rows(audit: AuditLog) -> list[tuple[str, str, str, str, str | None]]:
    rows = audit.read()
    return [(row.actor, row.action, row.target, row.result, row.plan_json) for row in rows.itertuples()]


def test_a_reveal_is_audited_with_the_partition_and_offsets_never_the_contents(audit, users):
    current = reveal(audit, users, User("otto", "operator", "users-file"), cluster(visible_topics=[".*"]),
                     "orders", 3, [12, 10, 11, 15])
    assert current.role == "operator"
    assert audit_rows(audit) == [("otto", REVEAL_RECORDS, "orders-3", "ok",
                                  '{"offsets": ["10-12", "15"], "partition": 3, "records": 4, "topic": "orders"}')]


def test_a_viewer_is_refused_and_the_attempt_audited(audit, users):
    with pytest.raises(NotAuthorized, match="operators only"):
        reveal(audit, users, User("vic", "viewer", "users-file"), cluster(visible_topics=[".*"]), "orders", 0, [1])
    assert [row[3] for row in audit_rows(audit)] == ["denied"]


def test_an_operator_is_refused_a_topic_the_config_does_not_show(audit, users):
    with pytest.raises(Refused, match="does not match topic 'payments'"):
        reveal(audit, users, User("otto", "operator", "users-file"), cluster(visible_topics=["orders"]),
               "payments", 0, [1])
    assert [row[3] for row in audit_rows(audit)] == ["denied"]


def test_the_role_is_read_again_at_the_reveal(audit, users):
    users.add("otto", "viewer", "otto-secret")  # demoted after signing in as an operator
    with pytest.raises(NotAuthorized):
        reveal(audit, users, User("otto", "operator", "users-file"), cluster(visible_topics=[".*"]), "t", 0, [1])


def test_a_read_says_when_its_start_is_before_the_log_start():
    read = RecordsRead(cluster="c", topic="t", partition=0, start_from="offset given", requested_start=3,
                       log_start=10, high_watermark=20, last_stable_offset=20, read_from=10, next_offset=12,
                       records=(), notes=(), bound="count", error=None)
    assert read.before_log_start
