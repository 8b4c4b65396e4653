"""The records view under AppTest, without a cluster: the links to it (a partition's row on a
consumer group's and a share group's page, a STALL/ERR alert and its runbook on the Alerts page),
which partition and offset it opens at, what a viewer and an operator see (keys and values hidden
from viewers, revealed to operators where the config allows, the reveal audited), masks, notes and
errors as one line, hostile contents as text. The read is a fake standing in for
``kpulse.kafka.record_fetch.read_records`` (injected through ``Sources.records_reader``); the
read on the real cluster, in Chromium: tests/test_dashboard_ops_browser.py."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import UTC, datetime
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml
from streamlit.testing.v1 import AppTest

from dashboard.services import records
from dashboard.services.sources import Sources
from kpulse.config import load_config
from kpulse.records.model import RecordsRead, RecordView
from tests.dashboard_ops import CLUSTER, PASSWORDS, sign_in, write_setup
from tests.dashboard_tables import table_problems
from tests.support import APP_FILE, open_page

GROUP = "rec-stuck"
HOSTILE_GROUP = "a&b=#c d/**[x](https://example.invalid)**"
SHARE_GROUP = "rec-share"
TOPIC = "rec.orders"


def stuck_snapshot(path) -> None:
    """The snapshot of write_setup with ``GROUP`` in STALL on partition 1 (committed offset 7), a
    firing ConsumerGroupStatus on it, ``HOSTILE_GROUP`` and a share group acknowledging nothing."""
    snapshot = json.loads(path.read_text())
    for group in snapshot["consumer_groups"]:
        group["partitions"] = [{"topic": TOPIC, "partition": p, "committed_offset": 7 if p == 1 else 10,
                                "log_end_offset": 10, "lag": 3 if p == 1 else 0, "lag_seconds": 0.0,
                                "status": "STALL" if p == 1 else "OK"} for p in range(3)]
        group.update(status="STALL", members=1, state="Stable", total_lag=3)
    snapshot["share_groups"] = {"unsupported": None, "groups": [
        {"group_id": SHARE_GROUP, "state": "Stable", "members": 1, "partition_count": 2, "total_lag": 4,
         "total_lag_partial": False, "lag_unknown_partitions": 0, "status": "STALLED", "error": None,
         "member_list": [], "partitions": [{"topic": TOPIC, "partition": 0, "start_offset": 2, "lag": 0, "status": "OK"},
                                           {"topic": TOPIC, "partition": 2, "start_offset": 6, "lag": 4,
                                            "status": "STALLED"}]}]}
    snapshot["alerts"] = [{"rule": "ConsumerGroupStatus", "severity": "warning", "entity": f"group/{GROUP}",
                           "value": 3.0, "summary": f"consumer group {GROUP} is STALL", "since": snapshot["time"] - 60,
                           "runbook": "ConsumerGroupStatus"}]
    path.write_text(json.dumps(snapshot))


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    directory = tmp_path_factory.mktemp("records-view")
    path = write_setup(directory, "127.0.0.1:9", [GROUP, HOSTILE_GROUP])
    stuck_snapshot(directory / "lake" / "_snapshots" / f"{CLUSTER}.json")
    return path


def signed_in(config, monkeypatch, who: str = "vic"):
    from tests.dashboard_ops import start

    monkeypatch.setenv("KPULSE_STATE_DIR", str(config.parent / "state"))
    return sign_in(start(config, monkeypatch), who, PASSWORDS[who][1])


def link_query(link: str) -> tuple[str, dict[str, str]]:
    """(the page, its query parameters) of a relative link."""
    parts = urlsplit(link)
    return parts.path, {key: values[0] for key, values in parse_qs(parts.query, strict_parsing=True).items()}


# --- links -------------------------------------------------------------------------------------------

def test_a_records_link_names_the_group_and_partition_as_single_query_values():
    for kind, param in (("consumer", "group"), ("share", "sharegroup")):
        link = records.records_link(kind, HOSTILE_GROUP, TOPIC, 2)
        assert link_query(link) == ("records", {param: HOSTILE_GROUP, "topic": TOPIC, "partition": "2"}), link
        assert "[" not in link and "#" not in link and " " not in link
    assert link_query(records.records_link("consumer", GROUP)) == ("records", {"group": GROUP})


def test_the_worst_partition_comes_first_and_a_query_picks_one():
    entry = {"partitions": [{"topic": "a", "partition": 0, "committed_offset": 5, "lag": 9, "status": "OK"},
                            {"topic": "a", "partition": 1, "committed_offset": 5, "lag": 1, "status": "STALL"},
                            {"topic": "b", "partition": 0, "committed_offset": 2, "lag": 4, "status": "STALL"},
                            {"topic": "b", "partition": 1, "committed_offset": None, "lag": None, "status": None}]}
    choices = records.partition_choices(entry, "consumer")
    assert [(c.topic, c.partition) for c in choices] == [("b", 0), ("a", 1), ("a", 0), ("b", 1)]
    assert records.chosen(choices, None, None) == choices[0]
    assert records.chosen(choices, "a", "1") == choices[1]
    assert records.chosen(choices, "a", "7") is None
    assert records.choice_label(choices[0], "consumer") == "b [0] · STALL · committed offset 2 · lag 4"
    assert records.choice_label(choices[3], "consumer") == "b [1] · status unknown · committed offset unknown"
    share = records.partition_choices({"partitions": [
        {"topic": "a", "partition": 0, "start_offset": 3, "lag": 0, "status": "OK"},
        {"topic": "a", "partition": 1, "start_offset": 8, "lag": 2, "status": "STALLED"}]}, "share")
    assert [(c.partition, c.offset) for c in share] == [(1, 8), (0, 3)]


def test_the_group_page_links_each_partition_row_to_its_records(config, monkeypatch):
    app = signed_in(config, monkeypatch)
    open_page(app, "groups")
    for group in (GROUP, HOSTILE_GROUP):
        app.selectbox(key="groups-chosen").set_value(group).run()
        table = app.dataframe[1].value
        links = [link_query(link) for link in table["records"]]
        assert links == [("records", {"group": group, "topic": TOPIC, "partition": str(p)}) for p in range(3)]
        column = json.loads(app.dataframe[1].proto.columns)["records"]
        assert column["label"] == "Records"


def test_the_share_group_page_links_each_partition_row_to_its_records(config, monkeypatch):
    app = signed_in(config, monkeypatch)
    app.query_params["sharegroup"] = SHARE_GROUP
    open_page(app, "share_groups")
    table = next(d.value for d in app.dataframe if "start_offset" in d.value.columns)
    assert [link_query(link) for link in table["records"]] == [
        ("records", {"sharegroup": SHARE_GROUP, "topic": TOPIC, "partition": str(p)}) for p in (0, 2)]


def test_a_stall_alert_and_its_runbook_link_to_the_records_of_the_group(config, monkeypatch):
    app = signed_in(config, monkeypatch)
    app.query_params["rule"] = "ConsumerGroupStatus"
    open_page(app, "alerts")
    links = [link.proto for link in app.get("page_link") if link.proto.page == "records"]
    assert len(links) == 2, [link.proto.page for link in app.get("page_link")]  # beside the alert, under the runbook
    for link in links:
        assert parse_qs(link.query_string) == {"group": [GROUP]}
    assert records.alert_target("ConsumerGroupStatus", "group", GROUP) == "consumer"
    assert records.alert_target("ShareGroupNotAcknowledging", "sharegroup", SHARE_GROUP) == "share"
    assert records.alert_target("BrokerDown", "broker", "1") is None
    assert records.alert_target("ConsumerGroupStatus", "sharegroup", GROUP) is None


# --- the view ----------------------------------------------------------------------------------------

HOSTILE_KEY = "**[key](https://example.invalid/k)** <b>k</b> :red[k] $k$ \u202eevil\x1b[31m"
HOSTILE_HEADER = ("<img src=https://example.invalid/h.png>", b"# h1 :material/warning:\r\nnext")
HOSTILE_VALUE = ("![v](https://example.invalid/v.png) <script>alert(1)</script> -- www.example.invalid\n"
                 + "x" * 5000)
VISIBLE_TOPIC = TOPIC
SECRET_TOPIC = "secret.audit"


def a_record(offset: int, **changes) -> RecordView:
    record = RecordView(offset=offset, timestamp=datetime(2026, 11, 28, 12, 0, offset % 60, 123000, tzinfo=UTC),
                        timestamp_type="CreateTime", key=f"order-{offset}".encode(),
                        value=json.dumps({"id": offset, "password": "hunter2"}).encode(),
                        headers=(("trace-id", f"t-{offset}".encode()), ("source", b"web")), size=80 + offset,
                        compression="zstd", producer_id=4001, producer_epoch=0, sequence=offset, transactional=False,
                        control=None, aborted=False)
    return replace(record, **changes)


def a_read(topic: str, partition: int, start: int, records_read: tuple[RecordView, ...], *, error: str | None = None,
           notes: tuple[str, ...] = (), group: str = GROUP) -> RecordsRead:
    last = records_read[-1].offset + 1 if records_read else None
    return RecordsRead(cluster=CLUSTER, topic=topic, partition=partition, start_from=f"committed offset of group {group}",
                       requested_start=start, log_start=0, high_watermark=10, last_stable_offset=10,
                       read_from=start if records_read else None, next_offset=last, records=records_read, notes=notes,
                       bound="end of log" if not error else None, error=error)


class FakeReader:
    """Stands in for the bounded read: answers ``reads[(topic, partition)]`` and remembers each call."""

    def __init__(self, reads: dict[tuple[str, int], RecordsRead]) -> None:
        self.reads = reads
        self.calls: list[tuple] = []

    def __call__(self, config, kind, group_id, topic, partition, count):
        self.calls.append((config.name, kind, group_id, topic, partition, count))
        return self.reads[(topic, partition)]


STUCK = (a_record(7, key=HOSTILE_KEY.encode(), headers=(("trace-id", b"t-7"), HOSTILE_HEADER),
                  value=HOSTILE_VALUE.encode()),
         a_record(8), a_record(9, transactional=True, aborted=True), a_record(10, control="abort", key=None, value=None,
                                                                                headers=()))
READS = {(TOPIC, 1): a_read(TOPIC, 1, 7, STUCK),
         (TOPIC, 0): a_read(TOPIC, 0, 10, (), notes=("offset 4 is before the log start 10: records 4-9 were deleted "
                                                    "(retention or DeleteRecords); reading from 10",)),
         (TOPIC, 2): a_read(TOPIC, 2, 10, (), error="not authorized: Read on topic 'rec.orders'"),
         (SECRET_TOPIC, 0): a_read(SECRET_TOPIC, 0, 3, (a_record(3),))}


@pytest.fixture(scope="module")
def records_config(config):
    """The config with records: visible_topics naming TOPIC only, the JSON field password masked."""
    data = yaml.safe_load(config.read_text())
    data["clusters"][0]["records"] = {"visible_topics": [r"rec\..+"], "mask": {"fields": ["password"]},
                                      "max_records": 15}
    path = config.parent / "kpulse-records.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def records_view(path, monkeypatch, who: str, reader: FakeReader, **query) -> AppTest:
    """The records view as ``who`` (signed in), the query's group and partition, ``reader`` reading."""
    from dashboard.frame import SOURCES_KEY

    monkeypatch.setenv("KPULSE_STATE_DIR", str(path.parent / "state"))
    monkeypatch.setenv("KPULSE_CONFIG", str(path))
    app = AppTest.from_file(str(APP_FILE), default_timeout=90)
    app.session_state[SOURCES_KEY] = Sources(load_config(str(path)), records_reader=reader)
    app.run()
    sign_in(app, who, PASSWORDS[who][1])
    for key, value in query.items():
        app.query_params[key] = value
    return open_page(app, "records")


def texts(app: AppTest) -> list[str]:
    """Every plain text element (st.text: shown as it is, never Markdown)."""
    return [t.value for t in app.text]


def plain(text: str) -> str:
    """Markdown from ``dashboard.literal.markdown`` read back as the text it shows."""
    return re.sub(r"\\(.)", r"\1", text).replace("\u2060", "").replace("\u00a0", " ")


def markdown(app: AppTest) -> str:
    """Everything the page renders as Markdown, one string."""
    return "\n".join([m.value for m in app.markdown] + [c.value for c in app.caption] + [i.value for i in app.info]
                     + [w.value for w in app.warning] + [e.value for e in app.error] + [s.value for s in app.subheader])


def test_a_viewer_opens_the_stuck_partition_at_the_committed_offset_with_keys_and_values_hidden(
        records_config, monkeypatch):
    reader = FakeReader(READS)
    app = records_view(records_config, monkeypatch, "vic", reader, group=GROUP)
    assert reader.calls == [(CLUSTER, "consumer", GROUP, TOPIC, 1, 10)]  # the STALL partition, worst first
    assert app.selectbox(key=f"records-partition-consumer-{GROUP}").value.partition == 1
    assert "The record at offset 7" in markdown(app)
    assert any("hidden" in i.value and "viewer" in i.value for i in app.info), [i.value for i in app.info]
    assert not [b for b in app.button if "Reveal" in b.label]
    assert not table_problems(app.dataframe[0])  # human headers with units, the offset pinned, empty cells
    table = app.dataframe[0].value
    assert list(table["offset"]) == [7, 8, 9, 10]
    assert list(table["key"][:3]) == [f"(hidden, {len(HOSTILE_KEY.encode()):,} B)", "(hidden, 7 B)", "(hidden, 7 B)"]
    assert table["headers"][1] == "trace-id=(hidden, 3 B); source=(hidden, 3 B)"  # header names shown
    assert list(table["transaction"]) == ["-", "-", "aborted", "marker: abort"]
    assert list(table["compression"]) == ["zstd"] * 4 and list(table["producer_id"]) == [4001] * 4
    assert "order-8" not in "\n".join(texts(app)) + markdown(app) and "hunter2" not in table.to_string()
    assert not [b for b in app.button if b.label.startswith("Skip")]  # a viewer may not skip
    assert any("needs the operator role" in c.value for c in app.caption)


def test_an_operator_reveals_the_contents_of_a_visible_topic_audited_and_masked(records_config, monkeypatch):
    from kpulse.config import load_config as load
    from operations.audit import AuditLog

    reader = FakeReader(READS)
    app = records_view(records_config, monkeypatch, "olga", reader, group=GROUP, topic=TOPIC, partition="1")
    assert "order-8" not in app.dataframe[0].value.to_string()  # hidden until revealed
    next(b for b in app.button if b.label.startswith("Reveal")).click().run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    table = app.dataframe[0].value
    assert table["key"][1] == "order-8"
    assert table["headers"][1] == "trace-id=t-8; source=web"
    assert '"password": "***"' in table["value"][1] or "***" in table["value"][1]
    assert "hunter2" not in table.to_string() + "\n".join(texts(app))
    assert len(reader.calls) == 1  # the reveal shows the records read, not a new read
    lake = load(str(records_config)).lake.path
    rows = AuditLog(lake, records_config.parent / "spool").read(cluster=CLUSTER)
    revealed = rows[rows["action"] == "reveal-records"]
    assert list(revealed["actor"]) == ["olga"] and list(revealed["result"]) == ["ok"]
    assert list(revealed["target"]) == [f"{TOPIC}-1"]
    assert json.loads(revealed["plan_json"].iloc[0])["offsets"] == ["7-10"]
    assert "hunter2" not in revealed.to_string() and "order-8" not in revealed.to_string()


def test_an_operator_sees_why_a_topic_the_config_does_not_name_stays_hidden(records_config, monkeypatch):
    app = records_view(records_config, monkeypatch, "olga", FakeReader(READS), group=GROUP, topic=SECRET_TOPIC,
                       partition="0")
    assert any("visible_topics" in plain(i.value) and SECRET_TOPIC in plain(i.value) for i in app.info)
    assert not [b for b in app.button if "Reveal" in b.label]
    assert app.dataframe[0].value["key"][0] == "(hidden, 7 B)"


def test_notes_and_errors_are_one_line_each_never_a_traceback(records_config, monkeypatch):
    app = records_view(records_config, monkeypatch, "vic", FakeReader(READS), group=GROUP, topic=TOPIC, partition="0")
    assert any("before the log start 10" in plain(w.value) for w in app.warning), [w.value for w in app.warning]
    assert any("end of the partition" in i.value for i in app.info)
    app = records_view(records_config, monkeypatch, "vic", FakeReader(READS), group=GROUP, topic=TOPIC, partition="2")
    assert [plain(e.value) for e in app.error] == ["not authorized: Read on topic 'rec.orders'"]
    app = records_view(records_config, monkeypatch, "vic", FakeReader(READS), group=GROUP, topic=TOPIC, partition="x")
    assert [plain(e.value) for e in app.error] == ["Partition 'x' is not a partition number."]


def test_hostile_record_contents_are_shown_as_text_only(records_config, monkeypatch):
    app = records_view(records_config, monkeypatch, "olga", FakeReader(READS), group=GROUP)
    next(b for b in app.button if b.label.startswith("Reveal")).click().run()
    rendered = markdown(app) + "\n".join(b.label for b in app.button)
    for raw in ("[key](", "<b>", ":red[", "<img", "<script>", "![v]", "\u202e", "\x1b", ":material/warning:"):
        assert raw not in rendered, raw  # nothing Kafka supplied reaches a Markdown string raw
    shown = "\n".join(texts(app))
    assert r"\u202eevil\x1b[31m" in shown and "**[key](https://example.invalid/k)** <b>k</b>" in shown
    assert r"# h1 :material/warning:\r\nnext" in shown and "<script>alert(1)</script>" in shown
    value = next(t for t in texts(app) if t.startswith("![v]"))
    assert len(value.encode()) <= 4096 and "cut at 4,096 B" in markdown(app)  # a long value is cut, its size said
    cell = app.dataframe[0].value["value"][0]
    assert "\n" not in cell and cell.endswith("…") and r"\n" in cell


def test_an_operator_plans_skipping_the_record_from_the_view(records_config, monkeypatch):
    app = records_view(records_config, monkeypatch, "olga", FakeReader(READS), group=GROUP)
    key = f"op-records-{CLUSTER}-consumer-{GROUP}"
    next(b for b in app.button if b.label == "Skip this record (offset 7)").click().run()
    assert app.text_input(key=f"{key}-skip-topic").value == TOPIC
    assert app.text_input(key=f"{key}-skip-partition").value == "1"
    assert app.text_input(key=f"{key}-skip-from_offset").value == "7"
    assert app.text_input(key=f"{key}-skip-to_offset").value == ""
    # the cluster of this config does not answer: the plan is one error line, and nothing executes
    assert len(app.error) == 1 and "plan: " in app.error[0].value, [e.value for e in app.error]
    app.selectbox(key="records-skip-to").set_value(9).run()
    next(b for b in app.button if b.label == "Skip to offset 9").click().run()
    assert app.text_input(key=f"{key}-skip-to_offset").value == "9"
    assert app.selectbox(key="records-skip-to").options == ["to offset 8", "to offset 9", "to offset 10",
                                                            "to offset 11"]


def test_a_share_group_opens_at_its_start_offset_on_the_partition_acknowledging_nothing(records_config, monkeypatch):
    reads = {(TOPIC, 2): replace(a_read(TOPIC, 2, 6, (a_record(6),)), start_from=f"start offset of share group "
                                                                                 f"{SHARE_GROUP}")}
    reader = FakeReader(reads)
    app = records_view(records_config, monkeypatch, "vic", reader, sharegroup=SHARE_GROUP)
    assert reader.calls == [(CLUSTER, "share", SHARE_GROUP, TOPIC, 2, 10)]  # STALLED before OK
    assert app.selectbox(key=f"records-partition-share-{SHARE_GROUP}").value.offset == 6
    assert f"**The record at offset 6** (start offset of share group {SHARE_GROUP})" in plain(markdown(app))
    assert any(link.proto.page == "share-groups" for link in app.get("page_link"))  # back to its page
