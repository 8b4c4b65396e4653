"""What a user types or edits, read as the official Kafka tools read it, from tables of cases:
integers (ASCII digits, Java long/int range), datetimes (ASCII digits; before the epoch means
the log start, never a negative timestamp), durations (Java's Duration.parse range), saved plan
files (every field's type checked, one line naming the field), ``--expect-current``."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from operations.errors import BadInput
from operations.numbers import JAVA_INT, PARTITION, parse_integer
from operations.offset_plan import (
    PartitionReset, ResetPlan, Scope, Strategy, choose_offsets, parse_reset_csv,
)
from operations.time_specs import parse_datetime_ms, parse_duration_ms


@pytest.mark.parametrize("text, expected", [
    ("0", 0), ("+5", 5), ("-12", -12), ("007", 7), ("-" + "0" * 30 + "5", -5),
    ("9223372036854775807", 2 ** 63 - 1), ("-9223372036854775808", -(2 ** 63)),
])
def test_integers_are_ascii_digits_with_an_optional_sign(text, expected):
    assert parse_integer(text, "--to-offset") == expected


@pytest.mark.parametrize("text", [
    "1_000", " 1", "1 ", "1 000", "\u0661\u0662", "\u00b2", "\uff11", "", "+", "-", "0x10", "1.0", "1e3", "+-1",
    "9223372036854775808", "-9223372036854775809", "9" * 5000, None,
])
def test_anything_else_is_refused_in_one_line(text):
    with pytest.raises(BadInput, match=r"^--to-offset( needs an integer|: .* is out of range)"):
        parse_integer(text, "--to-offset")


def test_partitions_are_non_negative_java_ints():
    assert parse_integer(str(JAVA_INT[1]), "p", PARTITION) == JAVA_INT[1]
    for bad in (str(JAVA_INT[1] + 1), "-1"):
        with pytest.raises(BadInput, match="out of range"):
            parse_integer(bad, "p", PARTITION)


T0 = ("t", 0)


@pytest.mark.parametrize("strategy", [
    Strategy("to-offset", "1_000"), Strategy("to-offset", " 5"), Strategy("to-offset", "\u0665"),
    Strategy("shift-by", "-1_0"), Strategy("shift-by", "\u0661"), Strategy("to-offset", "99999999999999999999"),
])
def test_offset_and_shift_values_use_the_strict_parser(strategy):
    with pytest.raises(BadInput, match=f"--{strategy.name}"):
        choose_offsets(strategy, [T0], {T0: 5}, {T0: 0}, {T0: 10})


@pytest.mark.parametrize("strategy", [Strategy("to-offset", "2_365"), Strategy("shift-by", "1e3")])
def test_offset_and_shift_values_are_refused_even_with_no_partition_to_move(strategy):
    """A Streams reset with no input topic still names its strategy: a malformed value is refused,
    not ignored because no partition needed it."""
    with pytest.raises(BadInput, match=f"--{strategy.name}"):
        choose_offsets(strategy, [], {}, {}, {})


@pytest.mark.parametrize("arg", ["t:1_0", "t:\u0661", "t: 1", "t:2147483648", "t:0,,1", "t:"])
def test_topic_partitions_use_the_strict_parser(arg):
    with pytest.raises(BadInput, match="partitions in --topic"):
        Scope.parse(False, [arg])


def test_topic_partitions_still_accept_lists():
    assert Scope.parse(False, ["t:2,0,2"]).topics == (("t", (0, 2)),)


@pytest.mark.parametrize("text", ["t,1_0,5\n", "t,0,1_000\n", "t,\u0661,5\n", "t,0,\u0665\n", "t,-1,5\n",
                                  "t,0,99999999999999999999\n"])
def test_csv_plan_fields_use_the_strict_parser(text):
    with pytest.raises(BadInput, match="reset plan line 1"):
        parse_reset_csv(text, "g")


@pytest.mark.parametrize("text", ["other,t,1_0,5\n", "other,t,0,\u0665\n", "g,t,0,5\nother,t,0,x\n"])
def test_csv_lines_of_other_groups_are_read_as_strictly(text):
    """Kafka's tool parses every line of a multi-group file, not only its group's."""
    with pytest.raises(BadInput, match="reset plan line"):
        parse_reset_csv(text, "g")


def test_a_csv_field_over_the_csv_modules_limit_is_one_line():
    with pytest.raises(BadInput, match="reset plan"):
        parse_reset_csv("t," + "9" * 200_000 + ",1\n", "g")


# --- datetimes and durations ---------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("1970-01-01T00:00:00.000", 0),
    ("1969-12-31T23:59:59.999", -1),
    ("1969-12-31T23:59:59.997", -3),
    ("1969-12-31T23:59:59.500", -500),
    ("1969-12-31T23:59:59", -1000),
    ("1970-01-01T00:00:00.001+00:00", 1),
    ("0001-01-01T00:00:00.000", -62135596800000),
    ("0001-01-01T00:00:00.000+18:00", -62135596800000 - 18 * 3_600_000),
    ("9999-12-31T23:59:59.999-18:00", 253402300799999 + 18 * 3_600_000),
])
def test_datetime_milliseconds_are_exact_before_the_epoch_and_at_the_ends_of_the_calendar(text, expected):
    assert parse_datetime_ms(text) == expected


@pytest.mark.parametrize("text", [
    "\u0662\u0660\u0662\u0664-01-01T00:00:00.000", "2024-01-01T00:00:00.\u0660\u0660\u0660",
    "2024-01-01T00:00:00.000+\u0660\u0662:00", "2024-01-01T00:00:00.000+1900",
])
def test_datetimes_with_non_ascii_digits_or_bad_zones_are_refused(text):
    with pytest.raises(BadInput, match="malformed (datetime|time zone)"):
        parse_datetime_ms(text)


@pytest.mark.parametrize("text, expected", [
    ("P99999999999D", 99999999999 * 86_400_000),
    ("PT9223372036854775.807S", 2 ** 63 - 1),
    ("-PT9223372036854775.808S", -(2 ** 63)),
])
def test_durations_reach_the_java_range(text, expected):
    assert parse_duration_ms(text) == expected


@pytest.mark.parametrize("text", [
    "P99999999999999999999D", "P106751991167301D", "PT9223372036854775808S", "PT9223372036854775.808S",
    "P106751991167300DT999999999999H", "P" + "9" * 5000 + "D", "PT" + "9" * 5000 + "S",
])
def test_durations_out_of_range_are_one_line(text):
    with pytest.raises(BadInput, match="out of range"):
        parse_duration_ms(text)


@pytest.mark.parametrize("text", ["P\u0661D", "PT1\u017f", "PT\u0665M", "PT1.\u0665S", "\u212aPT1S"])
def test_durations_with_non_ascii_letters_or_digits_are_refused(text):
    with pytest.raises(BadInput, match="malformed duration"):
        parse_duration_ms(text)


def test_a_negative_timestamp_is_never_sent_to_list_offsets():
    from operations.kafka_reads import log_offsets

    with pytest.raises(ValueError, match="negative timestamp"):
        log_offsets(object(), [T0], -1)


@pytest.mark.parametrize("strategy, now_ms", [
    (Strategy("to-datetime", "1969-12-31T23:59:59.999"), 1_700_000_000_000),
    (Strategy("to-datetime", "1969-12-31T23:59:59.997"), 1_700_000_000_000),
    (Strategy("by-duration", "P99999999999D"), 1_700_000_000_000),
])
def test_a_time_before_the_epoch_means_the_log_start(strategy, now_ms):
    from operations.offset_reset import strategy_timestamp_ms

    assert strategy_timestamp_ms(strategy, lambda: now_ms / 1000) < 0  # the planner reads the log start instead


# --- --expect-current ----------------------------------------------------------------------------

def test_expect_current_lists_partition_offsets():
    from operations.offset_plan import parse_expect_current

    assert parse_expect_current(["a:0=5,a:1=7", "b.c-d:2=0"]) == {("a", 0): 5, ("a", 1): 7, ("b.c-d", 2): 0}
    for bad in ("a:0", "a=5", ":0=5", "a:x=5", "a:0=1_0", "a:0=5,a:0=6"):
        with pytest.raises(BadInput, match="--expect-current"):
            parse_expect_current([bad])


# --- saved plan files ----------------------------------------------------------------------------

PLAN = ResetPlan(cluster="c", group_id="g", group_state="Empty", strategy=Strategy("shift-by", "-9"),
                 scope=Scope.parse(False, ["t:0"]),
                 partitions=(PartitionReset("t", 0, 10, 3, 20, 3, requested=1),), planned_at=1.5)


def edited(change):
    data = json.loads(PLAN.to_json())
    change(data)
    return data


@pytest.mark.parametrize("change, field", [
    (lambda d: d["partitions"][0].update(partition="0"), r"partitions\[0\]\.partition: expected an integer, got '0'"),
    (lambda d: d["partitions"][0].update(partition=True), r"partitions\[0\]\.partition: expected an integer, got true"),
    (lambda d: d["partitions"][0].update(new=5.0), r"partitions\[0\]\.new: expected an integer, got 5\.0"),
    (lambda d: d["partitions"][0].update(new=None), r"partitions\[0\]\.new: expected an integer, got null"),
    (lambda d: d["partitions"][0].update(new=2 ** 63), r"partitions\[0\]\.new: .* out of range"),
    (lambda d: d["partitions"][0].update(partition=-1), r"partitions\[0\]\.partition: -1 is out of range"),
    (lambda d: d["partitions"][0].update(current="10"), r"partitions\[0\]\.current: expected an integer"),
    (lambda d: d["partitions"][0].update(topic=5), r"partitions\[0\]\.topic: expected a string, got 5"),
    (lambda d: d["partitions"][0].pop("new"), r"partitions\[0\]\.new: missing"),
    (lambda d: d.update(partitions={"t": 1}), r"partitions: expected a list, got an object"),
    (lambda d: d["partitions"].append(7), r"partitions\[1\]: expected an object, got 7"),
    (lambda d: d["partitions"].append(copy.deepcopy(d["partitions"][0])), r"partitions: t-0 appears twice"),
    (lambda d: d.update(group_id=["g"]), r"group_id: expected a string, got a list"),
    (lambda d: d.update(group_id=" "), r"group_id: empty"),
    (lambda d: d.pop("cluster"), r"cluster: missing"),
    (lambda d: d.update(strategy="to-latest"), r"strategy: expected an object"),
    (lambda d: d["strategy"].update(name="to-moon"), r"unknown reset strategy 'to-moon'"),
    (lambda d: d["scope"].update(topics=[["t", "0"]]), r"scope\.topics\[0\]"),
    (lambda d: d["scope"].update(all_topics="yes"), r"scope\.all_topics: expected true or false"),
    (lambda d: d.update(planned_at="now"), r"planned_at: expected a number"),
    (lambda d: d.update(warnings=[1]), r"warnings\[0\]: expected a string"),
])
def test_an_edited_reset_plan_fails_in_one_line_naming_the_field(change, field):
    with pytest.raises(BadInput, match=f"^(not a kpulse reset plan: {field}|{field})"):
        ResetPlan.from_dict(edited(change))


@pytest.mark.parametrize("data", [[], "plan", 5, None])
def test_a_plan_that_is_not_an_object_is_one_line(data):
    with pytest.raises(BadInput, match="not a kpulse reset plan: expected an object"):
        ResetPlan.from_dict(data)


def test_a_reset_plan_still_survives_its_json_round_trip():
    assert ResetPlan.from_dict(json.loads(PLAN.to_json())) == PLAN


def streams_plan_dict() -> dict:
    from operations.streams_reset_plan import StreamsResetPlan

    plan = StreamsResetPlan(cluster="c", application_id="app", group_state="Empty", strategy=Strategy("to-earliest"),
                            input=(PartitionReset("in", 0, 5, 0, 9, 0),), intermediate=(PartitionReset("mid", 0, 1, 0, 4, 4),),
                            delete_topics=("app-s-changelog",), untouched=("out",), planned_at=2.0)
    data = json.loads(json.dumps(plan.to_dict()))
    assert StreamsResetPlan.from_dict(data) == StreamsResetPlan.from_dict(plan.to_dict()) == plan
    return data


@pytest.mark.parametrize("change, field", [
    (lambda d: d["input"][0].update(new="0"), r"input\[0\]\.new: expected an integer"),
    (lambda d: d["intermediate"][0].update(partition=False), r"intermediate\[0\]\.partition: expected an integer"),
    (lambda d: d.update(delete_topics="app-s-changelog"), r"delete_topics: expected a list"),
    (lambda d: d.update(untouched=[None]), r"untouched\[0\]: expected a string"),
    (lambda d: d.pop("application_id"), r"application_id: missing"),
    (lambda d: d.update(application_id=""), r"application_id: empty"),
])
def test_an_edited_streams_plan_fails_in_one_line_naming_the_field(change, field):
    from operations.streams_reset_plan import StreamsResetPlan

    data = streams_plan_dict()
    change(data)
    with pytest.raises(BadInput, match=f"^not a kpulse Streams reset plan: {field}"):
        StreamsResetPlan.from_dict(data)


def reassignment_dict() -> dict:
    from operations.reassign_plan import PartitionMove, ReassignmentPlan

    plan = ReassignmentPlan("c", "balance over brokers 1,2,3", (PartitionMove("t", 0, (1, 2), (2, 3)),), 3.0)
    data = json.loads(json.dumps(plan.to_dict()))
    assert ReassignmentPlan.from_dict(data) == ReassignmentPlan.from_dict(plan.to_dict()) == plan
    return data


@pytest.mark.parametrize("change, field", [
    (lambda d: d.pop("goal"), r"goal: missing"),
    (lambda d: d["moves"][0].update(target="2,3"), r"moves\[0\]\.target: expected a list"),
    (lambda d: d["moves"][0].update(target=[2, True]), r"moves\[0\]\.target\[1\]: expected an integer"),
    (lambda d: d["moves"][0].update(target=[]), r"moves\[0\]\.target: no replicas"),
    (lambda d: d["moves"][0].update(target=[2, 2]), r"moves\[0\]\.target: broker 2 appears twice"),
    (lambda d: d["moves"][0].update(target=[-1, 2]), r"moves\[0\]\.target\[0\]: -1 is out of range"),
    (lambda d: d["moves"][0].update(partition="0"), r"moves\[0\]\.partition: expected an integer"),
    (lambda d: d.update(moves=None), r"moves: expected a list, got null"),
])
def test_an_edited_reassignment_plan_fails_in_one_line_naming_the_field(change, field):
    from operations.reassign_plan import ReassignmentPlan

    data = reassignment_dict()
    change(data)
    with pytest.raises(BadInput, match=f"^not a kpulse reassignment plan: {field}"):
        ReassignmentPlan.from_dict(data)


@pytest.mark.parametrize("text, message", [
    ('{"partitions": [{"topic": "t", "partition": 0, "replicas": []}]}', r"partitions\[0\]\.replicas: no replicas"),
    ('{"partitions": [{"topic": "t", "partition": 0, "replicas": [1, 1]}]}', r"partitions\[0\]\.replicas: broker 1 appears twice"),
    ('{"partitions": [{"topic": "t", "partition": "0", "replicas": [1]}]}', "partitions\\[0\\]\\.partition"),
    ('{"partitions": [{"topic": "t", "partition": 0, "replicas": [true]}]}', "replicas\\[0\\]"),
    ('{"partitions": [{"topic": "t", "partition": 0, "replicas": [1]}, {"topic": "t", "partition": 0, "replicas": [2]}]}',
     "t-0 appears twice"),
])
def test_the_official_reassignment_json_is_checked_the_same_way(text, message):
    from operations.reassign_plan import parse_official_json

    with pytest.raises(BadInput, match=f"^not a reassignment JSON: .*{message}"):
        parse_official_json(text)


# --- the config parser: ASCII digits too ----------------------------------------------------------

def config_with(cluster: dict, environ: dict | None = None):
    from kpulse.config import parse_config

    return parse_config({"clusters": [{"name": "a", "bootstrap_servers": "k:9092", **cluster}]}, source="test",
                        base_dir=Path("."), environ=environ or {})


@pytest.mark.parametrize("cluster", [
    {"bootstrap_servers": "k:\u0661\u0662"},
    {"bootstrap_servers": "k:\u00b2"},
    {"metrics": {"source": "jmx_exporter", "broker_endpoints": {"\u0661": "http://x:1"}}},
    {"metrics": {"source": "jmx_exporter", "broker_endpoints": {"\u00b2": "http://x:1"}}},
    {"metrics": {"source": "prometheus", "prometheus_url": "http://p:9090", "prometheus_selector": 'j\u00f6b="x"'}},
])
def test_config_numbers_and_label_names_are_ascii(cluster):
    from kpulse.config.errors import ConfigError

    with pytest.raises(ConfigError):
        config_with(cluster)


@pytest.mark.parametrize("base", ["\u00b2", "\u0662\u0669\u0660\u0669\u0660"])
def test_a_port_base_with_non_ascii_digits_is_a_config_error(base):
    from kpulse.config.errors import ConfigError
    from kpulse.config.load import default_config

    with pytest.raises(ConfigError, match="KPULSE_PORT_BASE"):
        default_config({"KPULSE_PORT_BASE": base})


@pytest.mark.parametrize("text, expected", [("0, 2,5", [0, 2, 5]), ("", []), ("3,3", [3])])
def test_the_dashboard_forms_partitions(text, expected):
    from dashboard.action_forms import _partitions

    assert _partitions(text) == expected


@pytest.mark.parametrize("text", ["1_0", "\u0661", "-1", "0x1", "2147483648"])
def test_the_dashboard_forms_partitions_use_the_strict_parser(text):
    from dashboard.action_forms import _partitions

    with pytest.raises(BadInput, match="partitions"):
        _partitions(text)
