"""The SLO indicators (SLIs), one entry each: the lake table and columns it reads, the scope of
its entities, its parameters, how a sample is judged good and valid (for the Spark job), and the
same judgement in PromQL (for ``kpulse slo export-rules``). Pure.

Adding an indicator: its sampler and its PromQL here, one entry in :data:`INDICATORS`, and an SLO
that uses it in ``spark_jobs/slo-definitions.yaml`` (or the user's definitions file).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING
from collections.abc import Callable, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kpulse.lag_contract import DEFAULT_LAG_SECONDS_THRESHOLD, NOT_CONSUMING, within_lag_threshold
from spark_jobs import keys
from spark_jobs.sampling import SAMPLE_SCHEMA, judged, param, plain, true, values

if TYPE_CHECKING:
    from spark_jobs.definitions import SloDefinition

BAD_CONSUMER_STATUSES = NOT_CONSUMING


@dataclass(frozen=True)
class Indicator:
    """A built-in SLI."""

    table: str
    """The lake table it reads."""
    scope: str
    """What its entities are: cluster, consumer_group, streams_app or broker."""
    params: Mapping[str, float | None]
    """Parameter name -> default (``None``: taken from the samples, e.g. the group's configured threshold)."""
    description: str
    columns: tuple[str, ...]
    """The columns of :attr:`table` it reads, besides ``time`` and ``cluster``."""
    sampler: Callable[[pa.Table, SloDefinition], pa.Table]
    """Rows of :attr:`table` -> ``(cluster, entity, minute, good, valid)`` samples (``sampling.SAMPLE_SCHEMA``)."""
    bad_sample: Callable[[str, Mapping[str, float | None]], str]
    """``(series selector in braces or "", params)`` -> PromQL that is 1 for a bad sample, 0 for a good one,
    over the metrics of kpulse's exporter."""


def _probe_produce_availability(rows: pa.Table, slo: SloDefinition) -> pa.Table:
    produced, errors = values(rows.column("produced")), values(rows.column("produce_errors"))
    both = ~np.isnan(produced) & ~np.isnan(errors)
    return judged(rows, rows.column("cluster"), np.nan_to_num(produced), np.where(both, produced + errors, 0.0))


def _probe_latency(rows: pa.Table, slo: SloDefinition) -> pa.Table:
    entity = rows.column("cluster")
    latency = values(rows.column("latency_p99_ms"))
    with np.errstate(invalid="ignore"):
        good = latency <= param(slo, "latency_p99_ms_threshold", entity)
    return judged(rows, entity, good, ~np.isnan(latency))


def _partition_health(rows: pa.Table, slo: SloDefinition) -> pa.Table:
    offline, under_min_isr = values(rows.column("offline_partitions")), values(rows.column("under_min_isr_partitions"))
    return judged(rows, rows.column("cluster"), (offline == 0) & (under_min_isr == 0),
                   ~np.isnan(offline) & ~np.isnan(under_min_isr))


def _consumer_freshness(rows: pa.Table, slo: SloDefinition) -> pa.Table:
    entity = rows.column("group_id")
    threshold = param(slo, "lag_seconds_threshold", entity)
    own = values(rows.column("lag_seconds_threshold"))
    threshold = np.where(np.isnan(threshold), own, threshold)
    lag = values(rows.column("max_lag_seconds"))
    partial = values(rows.column("lag_seconds_unknown_partitions")) > 0  # null (older rows): complete
    with np.errstate(invalid="ignore"):
        good = within_lag_threshold(lag, threshold)
    # a partial worst lag is a lower bound: over the threshold it is bad, under it it tells nothing
    return judged(rows, entity, good, ~np.isnan(lag) & ~np.isnan(threshold) & ~(partial & good))


def _consumer_progress(rows: pa.Table, slo: SloDefinition) -> pa.Table:
    status = rows.column("status")
    known = true(pc.is_valid(status))
    bad = true(pc.is_in(status, value_set=pa.array(BAD_CONSUMER_STATUSES)))
    return judged(rows, rows.column("group_id"), known & ~bad, known)


def _streams_availability(rows: pa.Table, slo: SloDefinition) -> pa.Table:
    """One sample per application and cycle: good when every expected instance answers and runs;
    while all answer and some are REBALANCING, good for the first ``rebalancing_tolerance_seconds``
    of that rebalance (measured from its first sample), bad after."""
    if rows.num_rows == 0:
        return SAMPLE_SCHEMA.empty_table()
    up = true(rows.column("up"))
    state = rows.column("client_state")
    instances = pa.table({
        "cluster": plain(rows.column("cluster")), "entity": plain(rows.column("application_id")),
        "time": pc.cast(rows.column("time"), pa.int64()),
        "running": (up & true(pc.equal(state, "RUNNING"))).astype(np.int64),
        "rebalancing": (up & true(pc.equal(state, "REBALANCING"))).astype(np.int64),
        "expected_instances": rows.column("expected_instances")})
    cycles = (instances.group_by(["cluster", "entity", "time"])
              .aggregate([("running", "sum"), ("rebalancing", "sum"), ("running", "count"),
                          ("expected_instances", "max")])
              .sort_by([("cluster", "ascending"), ("entity", "ascending"), ("time", "ascending")]))
    running, rebalancing = (cycles.column(c).to_numpy() for c in ("running_sum", "rebalancing_sum"))
    count = cycles.column("running_count").to_numpy()
    expected = values(cycles.column("expected_instances_max"))
    expected = np.where(np.isnan(expected), count, expected)
    healthy = (running + rebalancing == count) & (count >= expected)
    in_rebalance = healthy & (rebalancing > 0)
    times = cycles.column("time").to_numpy()
    entity = cycles.column("entity")
    key = keys.encode(cycles.column("cluster"), entity)[0]
    # A rebalance is a run of consecutive rebalancing cycles of one application; it began at the
    # first of them.
    first_of_run = in_rebalance & ~np.concatenate([[False], in_rebalance[:-1] & (key[1:] == key[:-1])])
    run_start = np.where(first_of_run, np.arange(len(times)), 0)
    np.maximum.accumulate(run_start, out=run_start)  # index of the latest run start at or before each cycle
    began = times[run_start]
    tolerance = param(slo, "rebalancing_tolerance_seconds", entity) * 1_000_000
    with np.errstate(invalid="ignore"):
        within = (times - began) <= tolerance
    good = (healthy & (rebalancing == 0)) | (in_rebalance & within)
    at = pa.table({"cluster": cycles.column("cluster"), "time": pc.cast(cycles.column("time"), pa.timestamp("us", tz="UTC"))})
    return judged(at, entity, good, np.ones(len(good)))


def _broker_saturation(rows: pa.Table, slo: SloDefinition) -> pa.Table:
    entity = pc.cast(rows.column("broker_id"), pa.string())
    idle = values(rows.column("request_handler_idle_ratio"))
    with np.errstate(invalid="ignore"):
        good = idle >= param(slo, "min_request_handler_idle_ratio", entity)
    return judged(rows, entity, good, ~np.isnan(idle))


def _selector_matchers(selector: str) -> str:
    return selector[1:-1] if selector else ""


def _partition_health_promql(s: str, params) -> str:
    return f"clamp_max(kpulse_cluster_offline_partitions{s} + kpulse_cluster_under_min_isr_partitions{s}, 1)"


def _broker_saturation_promql(s: str, params) -> str:
    return f"kpulse_broker_request_handler_idle_ratio{s} < bool {params['min_request_handler_idle_ratio']:g}"


def _consumer_freshness_promql(s: str, params) -> str:
    threshold = params.get("lag_seconds_threshold") or DEFAULT_LAG_SECONDS_THRESHOLD
    return f"kpulse_consumergroup_lag_seconds{s} > bool {threshold:g}"


def _consumer_progress_promql(s: str, params) -> str:
    matchers = ",".join(filter(None, [_selector_matchers(s), f'status=~"{"|".join(BAD_CONSUMER_STATUSES)}"']))
    return f"sum by (cluster, consumergroup) (kpulse_consumergroup_status{{{matchers}}})"


def _streams_availability_promql(s: str, params) -> str:
    return f"1 - kpulse_streams_app_running{s}"


def _probe_produce_availability_promql(s: str, params) -> str:
    return f"1 - kpulse_probe_produce_availability{s}"


def _probe_latency_promql(s: str, params) -> str:
    return f"kpulse_probe_latency_p99_seconds{s} > bool {params['latency_p99_ms_threshold'] / 1000:g}"


INDICATORS: Mapping[str, Indicator] = MappingProxyType({
    "probe_produce_availability": Indicator(
        "probe", "cluster", {}, "probe records acknowledged / probe records sent (produced + produce_errors)",
        ("produced", "produce_errors"), _probe_produce_availability, _probe_produce_availability_promql),
    "probe_latency": Indicator(
        "probe", "cluster", {"latency_p99_ms_threshold": 1000.0},
        "probe samples whose end-to-end p99 latency is at most the threshold / samples with a latency",
        ("latency_p99_ms",), _probe_latency, _probe_latency_promql),
    "partition_health_minutes": Indicator(
        "cluster_health", "cluster", {},
        "samples with no offline and no under-min-ISR partition / samples",
        ("offline_partitions", "under_min_isr_partitions"), _partition_health, _partition_health_promql),
    "consumer_freshness_minutes": Indicator(
        "consumer_group", "consumer_group", {"lag_seconds_threshold": None},
        "samples whose worst time lag is at most the threshold (default: the group's configured one) / "
        "samples with a time lag (a worst lag over some partitions only, under the threshold, is no sample)",
        ("group_id", "max_lag_seconds", "lag_seconds_threshold", "lag_seconds_unknown_partitions"),
        _consumer_freshness, _consumer_freshness_promql),
    "consumer_progress_minutes": Indicator(
        "consumer_group", "consumer_group", {},
        "samples whose Burrow status is not STOP, STALL or ERR / samples with a status",
        ("group_id", "status"), _consumer_progress, _consumer_progress_promql),
    "streams_availability_minutes": Indicator(
        "streams_instance", "streams_app", {"rebalancing_tolerance_seconds": 60.0},
        "samples where every expected instance answers and is RUNNING (REBALANCING tolerated for the "
        "given time) / samples",
        ("application_id", "up", "client_state", "expected_instances"), _streams_availability,
        _streams_availability_promql),
    "broker_saturation_minutes": Indicator(
        "broker_metrics", "broker", {"min_request_handler_idle_ratio": 0.2},
        "samples whose request handler idle ratio is at least the minimum / samples with a ratio",
        ("broker_id", "request_handler_idle_ratio"), _broker_saturation, _broker_saturation_promql),
})
