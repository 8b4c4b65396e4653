"""The scale bench's pure parts (``bench/scale_state.py``, ``bench/lag_peer.py``, the options of
``bench/lag_collection.py --groups``): which partitions each group commits on and at which offset,
which groups get a live member, how kminion is configured and its scrape read. The benches
themselves run by hand on a real cluster (docs/performance.md), where the state builder checks
every delivery, commit and committed offset against this plan."""

from __future__ import annotations

import importlib.util
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"{name}_bench", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None, f"no bench/{name}.py"
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def scale():
    return load("scale_state")


@pytest.fixture(scope="module")
def peer():
    return load("lag_peer")


@pytest.fixture(scope="module")
def lag_bench():
    return load("lag_collection")


def test_the_default_plan_is_10000_groups_on_shared_topics_with_100000_group_partitions(scale):
    plan = scale.ScalePlan()
    commits = plan.commits()
    assert len(commits) == 10_000 and plan.group_partitions == 100_000
    assert sum(len(partitions) for partitions in commits.values()) == 100_000
    readers = Counter(tp for partitions in commits.values() for tp in partitions)
    assert len(readers) == 10_000, "every one of the 10,000 partitions is read"
    assert set(readers.values()) == {10}, "each partition by 10 groups"
    assert plan.partitions_of(1234) == [("bench.t234", p) for p in range(10)]


def test_planned_offsets_are_within_the_log_so_no_lag_is_negative_and_lags_differ(scale):
    plan = scale.ScalePlan(groups=300, topics=30, records=10)
    offsets = [o for partitions in plan.commits().values() for o in partitions.values()]
    assert min(offsets) >= 0 and max(offsets) <= plan.records
    assert len(set(offsets)) == plan.records + 1


def test_groups_wrap_around_the_partitions_when_there_are_more_group_partitions_than_partitions(scale):
    plan = scale.ScalePlan(groups=3, partitions_per_group=4, topics=2, partitions=3, stable_groups=0)
    assert plan.partitions_of(0) == [("bench.t000", 0), ("bench.t000", 1), ("bench.t000", 2), ("bench.t001", 0)]
    assert plan.partitions_of(1) == [("bench.t001", 1), ("bench.t001", 2), ("bench.t000", 0), ("bench.t000", 1)]


def test_stable_groups_are_spread_over_the_groups(scale):
    plan = scale.ScalePlan(groups=10_000, stable_groups=300)
    indexes = plan.stable_group_indexes()
    assert len(set(indexes)) == 300 and indexes[0] == 0 and max(indexes) < 10_000
    assert scale.ScalePlan(groups=10, stable_groups=0).stable_group_indexes() == []


def test_stable_members_subscribe_to_the_topics_of_their_group(scale):
    plan = scale.ScalePlan(groups=20, partitions_per_group=15, topics=10, partitions=10, stable_groups=2)
    members = scale.StableMembers("127.0.0.1:1", plan)
    assert members.groups() == {"bench-g00000": ["bench.t000", "bench.t001"],
                                "bench-g00010": ["bench.t005", "bench.t006"]}


@pytest.mark.parametrize("fields, message", [
    ({"groups": 0}, "groups must be at least 1"),
    ({"partitions_per_group": 11, "topics": 1, "partitions": 10}, "11 partitions per group"),
    ({"groups": 5, "stable_groups": 6}, "stable groups"),
])
def test_a_plan_that_cannot_be_built_is_refused(scale, fields, message):
    with pytest.raises(ValueError, match=message):
        scale.ScalePlan(**fields)


def test_kminion_runs_lag_only_on_the_bench_groups(peer):
    config = peer.kminion_config("a:1,b:2", 9999)
    minion = config["minion"]
    assert config["kafka"]["brokers"] == ["a:1", "b:2"]
    assert minion["consumerGroups"] == {"enabled": True, "scrapeMode": "adminApi", "granularity": "partition",
                                        "allowedGroups": ["/bench-.*/"]}
    assert not minion["topics"]["enabled"] and not minion["logDirs"]["enabled"]
    assert config["exporter"]["port"] == 9999


def test_a_kminion_scrape_is_read_for_its_per_partition_lag_series(peer):
    metrics = "\n".join([
        "# HELP kminion_kafka_consumer_group_topic_partition_lag lag",
        'kminion_kafka_consumer_group_topic_partition_lag{group_id="bench-g00001",partition_id="0",topic_name="t"} 3',
        'kminion_kafka_consumer_group_topic_partition_lag{group_id="bench-g00001",partition_id="1",topic_name="t"} 0',
        'kminion_kafka_consumer_group_topic_lag{group_id="bench-g00001",topic_name="t"} 3',
    ])
    assert peer.lag_series(metrics) == 2
    assert peer.paired_ratio([1.0, 3.0, 2.0], [2.0, 3.0, 8.0]) == 0.5


def test_groups_alone_is_the_10000_group_scale_bench_and_the_classic_bench_keeps_its_defaults(lag_bench):
    args = lag_bench.parse_args(["--groups"])
    assert (args.plan.groups, args.plan.partitions_per_group, args.plan.topics, args.plan.partitions) == \
        (10_000, 10, 1_000, 10)
    classic = lag_bench.parse_args([])
    assert classic.plan is None and (classic.topics, classic.partitions) == (200, 50)
    small = lag_bench.parse_args(["--groups", "500", "--topics", "50", "--stable-groups", "20"])
    assert (small.plan.groups, small.plan.topics, small.plan.stable_groups) == (500, 50, 20)


@pytest.mark.parametrize("argv, message", [
    (["--groups", "10", "--streams-groups", "1"], "go with the classic bench"),
    (["--groups", "10", "--stable-groups", "11"], "stable groups"),
    (["--bootstrap", "h:1", "--kminion", "k"], "--broker-pid"),
    (["--sustain", "0"], "--sustain"),
])
def test_options_that_do_not_go_together_are_refused(lag_bench, argv, message, capsys):
    with pytest.raises(SystemExit):
        lag_bench.parse_args(argv)
    assert message in capsys.readouterr().err
