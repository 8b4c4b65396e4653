"""The lag collector's ``evaluate`` (rows built from the arrays in one pass, group sums by
``group_sums``) gives exactly what its per-partition Python version gave: the same snapshot section,
key order included, and the same lake rows, over random cycles of random groups (empty groups,
partitions never committed, log ends missing or dipping, groups coming and going, groups that
could not be read). The Python version is kept below as the reference: verbatim, but for what a
group not read this cycle shows since (its last known partitions, each unknown, counted unknown in
its sums, its error as every figure's reason and in its lake row)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from collectors.lag.consumer_lag import ConsumerLagCollector, _membership
from collectors.lag.lag_arrays import REASONS, STATUS_BY_CODE
from collectors.lag.lag_math import PartitionTotal, max_over_partitions, sum_over_partitions
from collectors.protocol import CollectContext, CollectorResult
from kpulse.config import parse_config
from kpulse.kafka.group_offsets import ClusterOffsets, GroupOffsets
from kpulse.lake.rows import Columns

TOPICS = ["orders", "paiements-é", "注文"]


class ReferenceLagCollector(ConsumerLagCollector):
    """``evaluate`` as it was before the rows were built from the arrays (commit 06cedb5)."""

    def evaluate(self, offsets: ClusterOffsets, context: CollectContext) -> CollectorResult:
        now = context.now
        self.lag.record(list(offsets.log_end), list(offsets.log_end.values()), now)
        keys = [(group, sorted(group.committed.items())) for group in offsets.groups]
        group_of = [group.group_id for group, items in keys for _ in items]
        partitions = [tp for _, items in keys for tp, _ in items]
        committed = [-1 if c is None else c for _, items in keys for _, c in items]
        log_end_of = offsets.log_end.get
        log_ends = [log_end_of(tp, -1) for tp in partitions]
        members = [group.members > 0 for group, items in keys for _ in items]
        answer = self.lag.evaluate(group_of, partitions, committed, log_ends, members, now)

        lags = [None if lag < 0 else lag for lag in answer.lag.tolist()]
        seconds = [None if value != value else value for value in answer.lag_seconds.round(3).tolist()]
        statuses = [_STATUS_TEXT[code] for code in answer.status.tolist()]
        why_seconds = [REASONS[code] for code in answer.lag_seconds_reason.tolist()]
        committed_or_none = [None if c < 0 else c for c in committed]
        log_end_or_none = [None if end < 0 else end for end in log_ends]
        rows = []
        for (topic, partition), c, end, lag, lag_seconds, status, why in zip(
                partitions, committed_or_none, log_end_or_none, lags, seconds, statuses, why_seconds):
            row = {"topic": topic, "partition": partition, "committed_offset": c,
                   "log_end_offset": end, "lag": lag, "lag_seconds": lag_seconds, "status": status}
            if why is not None or end is None:
                row["reasons"] = _reasons(offsets, topic, partition, c, end, why)
            rows.append(row)
        lake_rows = Columns(len(rows), time=now, cluster=self._cluster.name, group_id=group_of,
                            topic=[topic for topic, _ in partitions], partition=[p for _, p in partitions],
                            committed_offset=committed_or_none, log_end_offset=log_end_or_none, lag=lags,
                            lag_seconds=seconds, status=statuses)

        groups, group_rows = self._reference_groups(keys, rows, committed_or_none, answer.status.tolist(), now)
        self.lag.forget_groups_except({group.group_id for group in offsets.groups})
        self.lag.forget_partitions_except(self._reference_still_consumed(offsets))
        return CollectorResult(sections={"consumer_groups": groups},
                               rows={"consumer_lag": lake_rows, "consumer_group": group_rows})

    def _reference_still_consumed(self, offsets):
        previous, self._partitions_of = self._partitions_of, {}
        for group in offsets.groups:
            partitions = frozenset(group.committed)
            if group.error is not None:
                partitions |= previous.get(group.group_id, frozenset())
            self._partitions_of[group.group_id] = partitions
        return set().union(*self._partitions_of.values())

    def _reference_groups(self, keys, rows, committed, status_codes, now):
        groups_config = self._cluster.consumer_groups
        groups, group_rows = [], []
        start = 0
        for group, items in keys:
            end = start + len(items)
            partitions, offsets = rows[start:end], committed[start:end]
            total = sum_over_partitions([p["lag"] for p in partitions], offsets)
            worst = max_over_partitions([p["lag_seconds"] for p in partitions], offsets)
            status = STATUS_BY_CODE[max(status_codes[start:end], default=0)]
            unread = sorted(self._partitions_of.get(group.group_id, ())) if group.error is not None and not items else []
            summary = {
                "group_id": group.group_id, "type": group.type, "protocol_type": group.protocol_type,
                "state": group.state, "members": group.members,
                "partition_count": len(items),
                "total_lag": total.value, "total_lag_partial": total.partial, "lag_unknown_partitions": total.unknown,
                "max_lag_seconds": worst.value, "max_lag_seconds_partial": worst.partial,
                "lag_seconds_unknown_partitions": worst.unknown,
                "status": status.value if status else None,
                "lag_seconds_threshold": groups_config.lag_seconds_threshold_for(group.group_id),
                "error": group.error,
            }
            reasons = {}
            if unread:
                why = {"committed_offset": f"not read this cycle: {group.error}"}
                partitions = [{"topic": topic, "partition": number, "committed_offset": None, "log_end_offset": None,
                               "lag": None, "lag_seconds": None, "status": None, "reasons": why}
                              for topic, number in unread]
                summary.update(partition_count=len(unread), lag_unknown_partitions=len(unread),
                               lag_seconds_unknown_partitions=len(unread))
            if group.error is not None and not items:  # nothing read this cycle
                reasons = {key: group.error for key in ("total_lag", "max_lag_seconds", "status")}
            else:
                if total.unknown:
                    reasons["total_lag"] = _left_out(total, "lag", "log_end_offset", partitions, offsets)
                if worst.unknown:
                    reasons["max_lag_seconds"] = _left_out(worst, "lag_seconds", "lag_seconds", partitions, offsets)
                if status is None and items:
                    reasons["status"] = ("not enough readings yet: the status needs "
                                         f"{self.lag.min_observations} per partition")
            summary.update(_membership(group.description))
            if reasons:
                summary["reasons"] = reasons
            groups.append({**summary, "partitions": partitions})
            group_rows.append({"time": now, "cluster": self._cluster.name, "partitions": summary["partition_count"],
                               **{k: summary[k] for k in _GROUP_ROW_FIELDS}})
            start = end
        return groups, group_rows


def _left_out(total: PartitionTotal, field, reason_key, partitions, committed) -> str:
    counted = sum(1 for offset in committed if offset is not None)
    missing = [p for p, offset in zip(partitions, committed) if offset is not None and p[field] is None]
    shown = "; ".join(f"{p['topic']}[{p['partition']}]: {p.get('reasons', {}).get(reason_key, 'unknown')}"
                      for p in missing[:3])
    more = f"; and {len(missing) - 3} more" if len(missing) > 3 else ""
    what = "log end could not be read" if field == "lag" else "time lag is unknown"
    prefix = "partial: over the other partitions only; " if total.partial else ""
    return f"{prefix}the {what} for {total.unknown} of {counted} partitions ({shown}{more})"


def _reasons(offsets, topic, partition, committed, log_end, why_seconds):
    reasons = {}
    if log_end is None:
        reasons["log_end_offset"] = offsets.log_end_errors.get((topic, partition), "not read")
    if committed is None:
        reasons["committed_offset"] = "no committed offset"
    if why_seconds is not None:
        reasons["lag_seconds"] = why_seconds
    return reasons


_GROUP_ROW_FIELDS = ("group_id", "type", "state", "members", "total_lag", "lag_unknown_partitions", "max_lag_seconds",
                     "lag_seconds_unknown_partitions", "status", "lag_seconds_threshold", "error")
_STATUS_TEXT = tuple(None if status is None else status.value for status in STATUS_BY_CODE)


def config():
    return parse_config({"clusters": [{"name": "test", "bootstrap_servers": "127.0.0.1:1",
                                       "consumer_groups": {"lag_seconds_threshold": 120,
                                                           "overrides": {"g-3": {"lag_seconds_threshold": 30}}}}]},
                        source="test", base_dir=Path(".")).cluster(None)


def random_cycles(rng: random.Random, cycles: int = 14):
    """Readings of a random cluster, cycle after cycle, with the time of each."""
    every = [(topic, p) for topic in TOPICS for p in range(rng.randint(1, 6))]
    ends = {tp: rng.randint(0, 50) for tp in every}
    groups = {f"g-{i}": rng.sample(every, rng.randint(0, len(every))) for i in range(rng.randint(0, 12))}
    positions = {(g, tp): rng.randint(0, ends[tp]) for g, tps in groups.items() for tp in tps}
    never = {(g, tp) for g, tps in groups.items() for tp in tps if rng.random() < 0.1}
    now = 1_000_000.0
    for _ in range(cycles):
        now += rng.choice([10.0, 10.0, 10.0, 0.0, 3.5])
        for tp in every:
            ends[tp] = max(0, ends[tp] + rng.choice([0, 0, 5, 30, -2, -40]))
        missing = {tp for tp in every if rng.random() < 0.1}
        errors = {tp: "ListOffsets: NOT_LEADER_OR_FOLLOWER" for tp in missing if rng.random() < 0.7}
        readings = []
        for g, tps in groups.items():
            if rng.random() < 0.1:
                continue  # not listed this cycle
            committed: dict[tuple[str, int], int | None] = {}
            for tp in tps:
                if (g, tp) in never:
                    committed[tp] = None
                else:
                    positions[(g, tp)] = max(0, positions[(g, tp)] + rng.choice([0, 0, 0, 3, 10, -5, 100]))
                    committed[tp] = positions[(g, tp)]
            error = "OffsetFetch: NOT_COORDINATOR" if rng.random() < 0.05 else None
            members = rng.choice([0, 0, 1, 3])
            readings.append(GroupOffsets(g, "Stable" if members else "Empty", members,
                                         tuple(f"m{i}" for i in range(members)), {} if error else committed, error))
        yield now, ClusterOffsets(groups=readings, log_end={tp: end for tp, end in ends.items() if tp not in missing},
                                  log_end_errors=errors)


@pytest.mark.parametrize("seed", range(60))
def test_evaluate_gives_what_the_per_partition_python_version_gave(seed):
    cluster = config()
    ours, reference = ConsumerLagCollector(cluster, batched=False), ReferenceLagCollector(cluster, batched=False)
    for now, offsets in random_cycles(random.Random(seed)):
        got = ours.evaluate(offsets, CollectContext(cluster, now))
        expected = reference.evaluate(offsets, CollectContext(cluster, now))
        assert ours.lag.known_partitions() == reference.lag.known_partitions()  # histories kept alike
        assert ours.lag.groups() == reference.lag.groups()
        assert json.dumps(got.sections) == json.dumps(expected.sections)  # the key order too
        assert got.rows["consumer_lag"].values == expected.rows["consumer_lag"].values
        assert json.dumps(got.rows["consumer_group"]) == json.dumps(expected.rows["consumer_group"])


def test_the_random_cycles_reach_every_case_the_comparison_is_for():
    """Partial and null sums, reasons of each kind and statuses all occur (else the comparison above
    proves less than it says)."""
    cluster = config()
    collector = ConsumerLagCollector(cluster, batched=False)
    seen = set()
    for seed in range(60):
        for now, offsets in random_cycles(random.Random(seed)):
            for group in collector.evaluate(offsets, CollectContext(cluster, now)).sections["consumer_groups"]:
                seen.update(f"group:{key}" for key in group.get("reasons", {}))
                seen.update(f"partial:{key}" for key in ("total_lag_partial", "max_lag_seconds_partial") if group[key])
                seen.add(f"status:{group['status']}")
                seen.update(f"partition:{key}" for p in group["partitions"] for key in p.get("reasons", {}))
                seen.add("empty group" if not group["partitions"] else "group")
                seen.add("null total" if group["total_lag"] is None and group["partitions"] else "total")
    assert {"group:total_lag", "group:max_lag_seconds", "group:status", "partial:total_lag_partial",
            "partial:max_lag_seconds_partial", "partition:log_end_offset", "partition:committed_offset",
            "partition:lag_seconds", "empty group", "null total", "status:OK", "status:None"} <= seen
    assert len([s for s in seen if s.startswith("status:")]) >= 4
