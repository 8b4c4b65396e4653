"""Skipping records, the pure half (:mod:`operations.skip_plan`): where a skip moves the committed
offset, from a table of cases; the refusals' one line; the plan as the reset executors take it and
as a saved plan reads back; the STALL runbook that leads to it. The real cluster:
``tests/test_ops_skip_records.py``."""

from __future__ import annotations

import pytest

from alerting.runbooks import runbook_text
from operations.errors import BadInput
from operations.skip_plan import SkipRecordsPlan, share_group_refusal, skip_target, stop_then_skip

PLAN = SkipRecordsPlan("c", "billing", "classic", "Empty", "orders", 2, 40, 41, 10, 50, 1_700_000_000_123, 1.0,
                       "CreateTime")


@pytest.mark.parametrize(("committed", "log_start", "log_end", "to_offset", "expected"), [
    pytest.param(40, 10, 50, None, 41, id="the next offset (--shift-by 1)"),
    pytest.param(49, 10, 50, None, 50, id="the last record: to the log end"),
    pytest.param(40, 10, 50, 45, 45, id="to an offset inside the records (--to-offset)"),
    pytest.param(40, 10, 50, 50, 50, id="to the log end"),
    pytest.param(40, 10, 50, 41, 41, id="to-offset the next one: the same as shift-by 1"),
    pytest.param(10, 10, 50, None, 11, id="stuck on the first record of the log"),
])
def test_a_skip_moves_the_committed_offset_forward_within_the_unread_records(committed, log_start, log_end, to_offset,
                                                                              expected):
    assert skip_target("orders-2", committed, log_start, log_end, to_offset) == expected


@pytest.mark.parametrize(("committed", "log_start", "log_end", "to_offset", "message"), [
    pytest.param(None, 0, 50, None, "orders-2: the group has no committed offset there", id="no committed offset"),
    pytest.param(50, 0, 50, None, "orders-2: the committed offset 50 is the log end: no record to skip",
                 id="nothing unread"),
    pytest.param(5, 10, 50, None, "orders-2: the committed offset 5 is before the log start 10", id="deleted records"),
    pytest.param(40, 10, 50, 40, "orders-2: offset 40 is outside the records after the committed offset (41..50)",
                 id="to the committed offset itself"),
    pytest.param(40, 10, 50, 30, "orders-2: offset 30 is outside the records", id="backwards: a replay, not a skip"),
    pytest.param(40, 10, 50, 51, "orders-2: offset 51 is outside the records", id="past the log end"),
])
def test_a_skip_with_nothing_to_skip_or_outside_the_records_is_one_line(committed, log_start, log_end, to_offset,
                                                                        message):
    with pytest.raises(BadInput) as error:
        skip_target("orders-2", committed, log_start, log_end, to_offset)
    assert str(error.value).startswith(message) and "\n" not in str(error.value)


def test_the_refusal_while_members_run_names_them_and_the_stop_then_skip_sequence():
    refusal = str(stop_then_skip("billing", "consumer", "Stable", ["app-1@10.0.0.1", "app-2@10.0.0.2"], "orders", 2,
                                 None))

    assert refusal == ("cannot skip records of group 'billing' on orders-2: the consumer group is Stable with 2 active "
                       "member(s) (app-1@10.0.0.1, app-2@10.0.0.2); nothing changed. Stop its consumers (the group "
                       "must be Empty), run kpulse skip-records --group billing --topic orders --partition 2 "
                       "--execute, then start them again: they resume after the skipped record(s)")
    quoted = str(stop_then_skip("a b", "classic", "Stable", [], "t;x", 0, 45))
    assert "kpulse skip-records --group 'a b' --topic 't;x' --partition 0 --to-offset 45 --execute" in quoted


def test_a_share_group_is_refused_with_its_delivery_settings_or_why_they_are_unknown():
    text = str(share_group_refusal("jobs", {"share.delivery.count.limit": ("3", "the group's config")}))

    assert text.startswith("group 'jobs' is a share group: it needs no skip") and "\n" not in text
    assert "at most share.delivery.count.limit=3 (the group's config) times" in text
    assert "share.record.lock.duration.ms=unknown (not readable)" in text
    assert "kpulse reset-share-group" in text


def test_the_plan_is_the_one_partition_reset_of_the_group_type_and_reads_back():
    reset = PLAN.as_reset_plan()
    streams = PLAN.as_streams_group_plan()

    assert reset.new_offsets() == streams.new_offsets() == {("orders", 2): 41}
    assert [(p.current, p.new, p.skipped, p.lag_before, p.lag_after) for p in reset.partitions] == [(40, 41, 1, 10, 9)]
    assert streams.delete_topics == () and reset.to_csv() == "orders,2,41\n"
    assert PLAN.official_command() == ("kafka-consumer-groups --reset-offsets --group billing --topic orders:2 "
                                       "--shift-by 1 --dry-run")
    assert SkipRecordsPlan.from_dict(PLAN.to_dict()) == PLAN
    assert PLAN.to_dict()["skipped"] == 1 and PLAN.to_dict()["record_timestamp"] == 1_700_000_000_123


@pytest.mark.parametrize(("change", "message"), [
    ({"to_offset": 40}, "to_offset"),
    ({"group_type": "share"}, "group_type"),
    ({"record_timestamp": "yesterday"}, "record_timestamp"),
])
def test_a_saved_plan_that_skips_nothing_or_names_a_share_group_is_refused(change, message):
    with pytest.raises(BadInput, match=f"not a kpulse skip-records plan: {message}"):
        SkipRecordsPlan.from_dict({**PLAN.to_dict(), **change})


def test_the_stall_runbook_leads_to_the_record_and_to_skipping_it():
    text = runbook_text("ConsumerGroupStatus")

    assert "kpulse records --group <group> --topic <t> --partition <p>" in text
    assert "kpulse skip-records --group <group> --topic <t> --partition <p>" in text
    assert "records view" in text


class RecordingPlanner:
    """The service's planner, recorded (no cluster)."""

    def __init__(self):
        self.calls: list[tuple] = []

    def plan_skip_records(self, *args, **kwargs):
        self.calls.append((args, kwargs))
        return "the plan"


def test_the_skip_form_prefilled_by_the_records_view_plans_that_one_partition():
    from dashboard.action_forms import FORMS, skip_prefill

    prefill = skip_prefill("op-group-c-billing-skip-records", "orders", 2, from_offset=40, to_offset=45)
    assert prefill == {"op-group-c-billing-skip-records-skip-topic": "orders",
                       "op-group-c-billing-skip-records-skip-partition": "2",
                       "op-group-c-billing-skip-records-skip-to_offset": "45",
                       "op-group-c-billing-skip-records-skip-from_offset": "40"}
    values = {key.rsplit("-skip-", 1)[1]: value for key, value in prefill.items()}
    planner = RecordingPlanner()

    assert FORMS["skip-records"].plan(planner, "c", "billing", values) == "the plan"
    FORMS["skip-records"].plan(planner, "c", "billing", {**values, "to_offset": " ", "from_offset": ""})
    assert planner.calls == [(("c", "billing", "orders", 2, 45), {"expect_from": 40}),
                             (("c", "billing", "orders", 2, None), {"expect_from": None})]
    with pytest.raises(BadInput, match="partition"):
        FORMS["skip-records"].plan(planner, "c", "billing", {**values, "partition": "1_0"})
