"""kpulse's Grafana dashboards, written as JSON to docker/grafana/dashboards/ (what the compose Grafana
provisions, and what an existing Grafana imports).

    .venv/bin/python docker/grafana/dashboards.py           # write the JSON files
    .venv/bin/python docker/grafana/dashboards.py --check   # exit 1 when a file differs from this

The panels query the series of kpulse's exporter (docs/monitoring.md, "Metric names"): kafka_exporter's
names where it has one, kpulse's own otherwise. Every panel states its unit (``fieldConfig`` and,
where a reader needs it, the title); every query selects ``cluster="$cluster"`` (a Prometheus that
scrapes several clusters' kpulse never sums them), through the data source variable
``$datasource`` whose default is the provisioned data source (:data:`DATASOURCE_UID`).
``tests/test_grafana_dashboards.py`` checks the files' structure and, against a real Prometheus
scraping kpulse on a cluster with the demo running, that every query returns data."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUTPUT = HERE / "dashboards"
DATASOURCE_UID = "kpulse-prometheus"
"""The uid of the Prometheus data source docker/grafana/provisioning/datasources/ provisions."""
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
C = 'cluster="$cluster"'
"""The cluster matcher every query carries."""
RATE = "$__rate_interval"

# --- units (Grafana's unit ids; count:<unit> is a custom count unit: 1.2K records) ---------------------------
NONE = "none"
RECORDS = "count:records"
MSG_PER_S = "count:msg/s"
RECORDS_PER_S = "count:records/s"
PARTITIONS = "count:partitions"
BROKERS = "count:brokers"
GROUPS = "count:groups"
MEMBERS = "count:members"
SECONDS = "s"
BYTES_PER_S = "Bps"
RATIO = "percentunit"
BURN = "count:× budget"
"""A burn rate: the error rate over the rate that spends exactly the budget in the SLO window."""

UP_DOWN = [{"type": "value", "options": {"0": {"text": "down", "color": "red", "index": 0},
                                         "1": {"text": "up", "color": "green", "index": 1}}}]
"""Value mappings of a 0/1 health series."""


@dataclass(frozen=True)
class Query:
    expr: str
    legend: str = ""


@dataclass
class Panel:
    """One panel; :func:`render` places it and gives it its id."""
    kind: str  # timeseries, stat, table
    title: str
    unit: str
    queries: list[Query]
    description: str = ""
    width: int = 12
    height: int = 8
    mappings: list[dict[str, Any]] = field(default_factory=list)
    thresholds: list[tuple[float | None, str]] = field(default_factory=list)
    hide_columns: tuple[str, ...] = ()
    value_title: str = ""
    stack: bool = False


@dataclass
class Row:
    title: str
    panels: list[Panel]


def series(title: str, unit: str, *queries: Query, description: str = "", width: int = 12, stack: bool = False,
           mappings: list[dict[str, Any]] | None = None) -> Panel:
    return Panel("timeseries", title, unit, list(queries), description, width, mappings=mappings or [], stack=stack)


def stat(title: str, unit: str, *queries: Query, description: str = "", width: int = 4,
         mappings: list[dict[str, Any]] | None = None, thresholds: list[tuple[float | None, str]] | None = None) -> Panel:
    return Panel("stat", title, unit, list(queries), description, width, 4, mappings or [], thresholds or [])


def table(title: str, unit: str, query: Query, description: str = "", width: int = 12, value: str = "",
          hide: tuple[str, ...] = ()) -> Panel:
    """An instant query as a table, one row per series (its labels as columns); the value column
    titled ``value``, or hidden without one (a series whose labels are the information)."""
    return Panel("table", title, unit, [query], description, width, 8,
                 hide_columns=hide if value else (*hide, "Value"), value_title=value)


def bad_above(limit: float) -> list[tuple[float | None, str]]:
    return [(None, "green"), (limit, "red")]


# --- the dashboards -----------------------------------------------------------------------------------------

def cluster_dashboard() -> tuple[str, str, str, list[Row]]:
    by_topic = f'{C},topic=~"$topic"'
    return ("kpulse-cluster", "kpulse / Cluster and brokers",
            "Brokers, partitions, topics, KRaft quorum and the end-to-end probe of one cluster", [
        Row("Cluster", [
            stat("Brokers up", BROKERS, Query(f"kafka_brokers{{{C}}}"),
                 description="Brokers in the cluster metadata (kafka_exporter's kafka_brokers)"),
            stat("Brokers known", BROKERS, Query(f"kpulse_cluster_known_brokers{{{C}}}"),
                 description="Brokers known to the cluster, up or not"),
            stat("Offline partitions", PARTITIONS, Query(f"kpulse_cluster_offline_partitions{{{C}}}"),
                 thresholds=bad_above(1), description="Partitions without a leader"),
            stat("Under-replicated partitions", PARTITIONS, Query(f"kpulse_cluster_under_replicated_partitions{{{C}}}"),
                 thresholds=bad_above(1), description="Partitions whose ISR is smaller than the replica set"),
            stat("Under-min-ISR partitions", PARTITIONS, Query(f"kpulse_cluster_under_min_isr_partitions{{{C}}}"),
                 thresholds=bad_above(1), description="Partitions whose ISR is below min.insync.replicas: "
                                                      "producers with acks=all are refused"),
            stat("Active controllers", NONE, Query(f"kpulse_cluster_active_controllers{{{C}}}"),
                 thresholds=[(None, "red"), (1, "green"), (2, "red")], description="Healthy: exactly 1"),
            series("Problem partitions (partitions)", PARTITIONS,
                   Query(f"kpulse_cluster_offline_partitions{{{C}}}", "offline"),
                   Query(f"kpulse_cluster_under_replicated_partitions{{{C}}}", "under-replicated"),
                   Query(f"kpulse_cluster_under_min_isr_partitions{{{C}}}", "under min ISR"),
                   Query(f"kpulse_cluster_preferred_leader_imbalance{{{C}}}", "not led by the preferred replica")),
            series("Messages in, all topics (msg/s)", MSG_PER_S,
                   Query(f"sum(rate(kafka_topic_partition_current_offset{{{C}}}[{RATE}]))", "all topics"),
                   description="Growth of the partitions' log end offsets"),
        ]),
        Row("Brokers", [
            table("Brokers", NONE, Query(f"kafka_broker_info{{{C}}}"),
                  description="Live brokers: id and address (kafka_exporter's kafka_broker_info)"),
            series("Broker up (1 = in the metadata)", NONE, Query(f"kpulse_broker_up{{{C}}}", "broker {{broker}}"),
                   mappings=UP_DOWN),
            series("Bytes in per broker (B/s)", BYTES_PER_S,
                   Query(f"rate(kpulse_broker_produced_bytes_total{{{C}}}[{RATE}])", "broker {{broker}}"),
                   description="Bytes producers wrote (BytesInPerSec's count, as a rate)", stack=True),
            series("Bytes out per broker (B/s)", BYTES_PER_S,
                   Query(f"rate(kpulse_broker_fetched_bytes_total{{{C}}}[{RATE}])", "broker {{broker}}"),
                   description="Bytes consumers fetched (BytesOutPerSec's count, as a rate)", stack=True),
            series("Messages in per broker (msg/s)", MSG_PER_S,
                   Query(f"rate(kpulse_broker_produced_messages_total{{{C}}}[{RATE}])", "broker {{broker}}"),
                   stack=True),
            series("Request handlers idle (%)", RATIO,
                   Query(f"kpulse_broker_request_handler_idle_ratio{{{C}}}", "broker {{broker}}"),
                   description="Below 20 % the broker is saturated (RequestHandlerIdleLow)"),
            series("Network processors idle (%)", RATIO,
                   Query(f"kpulse_broker_network_processor_idle_ratio{{{C}}}", "broker {{broker}}")),
            series("Request time p99 (s)", SECONDS,
                   Query(f"kpulse_broker_produce_p99_seconds{{{C}}}", "Produce, broker {{broker}}"),
                   Query(f"kpulse_broker_fetch_p99_seconds{{{C}}}", "FetchConsumer, broker {{broker}}")),
            series("Partitions per broker (partitions)", PARTITIONS,
                   Query(f"kpulse_broker_partitions{{{C}}}", "replicas on broker {{broker}}"),
                   Query(f"kpulse_broker_leader_partitions{{{C}}}", "led by broker {{broker}}")),
        ]),
        Row("Topics", [
            series("Messages in per topic (msg/s)", MSG_PER_S,
                   Query(f"sum by (topic) (rate(kafka_topic_partition_current_offset{{{by_topic}}}[{RATE}]))",
                         "{{topic}}")),
            series("Records retained per topic (records)", RECORDS,
                   Query(f"sum by (topic) (kafka_topic_partition_current_offset{{{by_topic}}} - "
                         f"kafka_topic_partition_oldest_offset{{{by_topic}}})", "{{topic}}"),
                   description="Log end minus log start offset, summed over the topic's partitions"),
            table("Partitions per topic", PARTITIONS, Query(f"kafka_topic_partitions{{{by_topic}}}"),
                  value="Partitions"),
            series("Partitions out of sync per topic (partitions)", PARTITIONS,
                   Query(f"sum by (topic) (kafka_topic_partition_under_replicated_partition{{{by_topic}}})",
                         "under-replicated, {{topic}}"),
                   Query(f"sum by (topic) (1 - kafka_topic_partition_leader_is_preferred{{{by_topic}}})",
                         "not led by the preferred replica, {{topic}}"),
                   Query(f"sum by (topic) (kafka_topic_partition_replicas{{{by_topic}}} - "
                         f"kafka_topic_partition_in_sync_replica{{{by_topic}}})", "replicas out of the ISR, {{topic}}")),
            series("Partitions led per broker (partitions)", PARTITIONS,
                   Query(f'count_values("leader", kafka_topic_partition_leader{{{by_topic}}})', "broker {{leader}}"),
                   description="Partitions of the chosen topics by their leader's broker id"),
        ]),
        Row("KRaft quorum", [
            table("Quorum leader", NONE, Query(f"kpulse_kraft_quorum_leader_info{{{C}}} == 1"), width=6),
            stat("Leader epoch", NONE, Query(f"kpulse_kraft_quorum_leader_epoch{{{C}}}"), width=6,
                 description="Grows at every election"),
            stat("Fenced brokers", BROKERS, Query(f"kpulse_kraft_fenced_brokers{{{C}}}"), width=6,
                 thresholds=bad_above(1)),
            stat("Active brokers", BROKERS, Query(f"kpulse_kraft_active_brokers{{{C}}}"), width=6),
            series("Metadata errors (errors per 5 min)", NONE,
                   Query(f"increase(kpulse_kraft_metadata_errors_total{{{C}}}[5m])", "node {{broker}}"),
                   description="MetadataErrorCount of the controller-role nodes"),
            series("Metadata apply lag (s)", SECONDS,
                   Query(f"kpulse_kraft_metadata_apply_lag_seconds{{{C}}}", "node {{broker}}")),
            series("Quorum replica lag (records)", RECORDS,
                   Query(f"kpulse_kraft_quorum_replica_lag{{{C}}}", "{{role}} {{node}}")),
            series("Quorum replica caught up (s ago)", SECONDS,
                   Query(f"kpulse_kraft_quorum_replica_caught_up_age_seconds{{{C}}}", "{{role}} {{node}}")),
        ]),
        Row("End-to-end probe", [
            series("Probe availability (%)", RATIO,
                   Query(f"kpulse_probe_produce_availability{{{C}}}", "produce (acks=all)"),
                   Query(f"kpulse_probe_consume_availability{{{C}}}", "consume")),
            series("Probe latency p99, produce to consume (s)", SECONDS,
                   Query(f"kpulse_probe_latency_p99_seconds{{{C}}}", "p99")),
            series("Probe records (records/s)", RECORDS_PER_S,
                   Query(f"rate(kpulse_probe_produced_records_total{{{C}}}[{RATE}])", "produced"),
                   Query(f"rate(kpulse_probe_consumed_records_total{{{C}}}[{RATE}])", "consumed")),
            series("Probe records lost or duplicated (records per 5 min)", RECORDS,
                   Query(f"increase(kpulse_probe_lost_records_total{{{C}}}[5m])", "lost"),
                   Query(f"increase(kpulse_probe_duplicated_records_total{{{C}}}[5m])", "duplicated")),
        ]),
    ])


def consumer_lag_dashboard() -> tuple[str, str, str, list[Row]]:
    g = f'{C},consumergroup=~"$consumergroup"'
    with_type = f"* on (cluster, consumergroup) group_left(type) kpulse_consumergroup_info{{{C}}}"
    return ("kpulse-consumer-lag", "kpulse / Consumer lag",
            "Lag in records and seconds, status and state of every group type: classic, consumer (KIP-848), "
            "streams (KIP-1071) and share (KIP-932)", [
        Row("Groups", [
            stat("Groups by type (groups)", GROUPS, Query(f"count by (type) (kpulse_consumergroup_info{{{C}}})", "{{type}}"),
                 Query(f"count(kpulse_sharegroup_members{{{C}}})", "share"), width=8,
                 description="Consumer groups by protocol type (classic, consumer, streams), and share groups"),
            stat("Groups by status (groups)", GROUPS,
                 Query(f"count by (status) (kpulse_consumergroup_status{{{C}}} == 1)", "{{status}}"), width=8,
                 description="Burrow-style status of the consumer and Streams groups"),
            stat("Share groups by status (groups)", GROUPS,
                 Query(f"count by (status) (kpulse_sharegroup_status{{{C}}} == 1)", "{{status}}"), width=8),
            table("Status, type and state per group", NONE,
                  Query(f"(kpulse_consumergroup_status{{{g}}} == 1) * on (cluster, consumergroup) "
                        f"group_left(type, protocol_type) kpulse_consumergroup_info{{{C}}}")),
            table("Status per share group", NONE, Query(f"kpulse_sharegroup_status{{{C}}} == 1")),
        ]),
        Row("Lag", [
            series("Lag per group (records)", RECORDS, Query(f"kpulse_consumergroup_lag{{{g}}} {with_type}",
                                                            "{{consumergroup}} ({{type}})"),
                   description="Summed over the group's partitions whose lag is known"),
            series("Time lag per group, worst partition (s)", SECONDS,
                   Query(f"kpulse_consumergroup_lag_seconds{{{g}}} {with_type}", "{{consumergroup}} ({{type}})"),
                   description="How far behind the newest record the group's slowest partition is, in time"),
            series("Lag per group and topic (records)", RECORDS,
                   Query(f"kafka_consumergroup_lag_sum{{{g}}}", "{{consumergroup}} / {{topic}}")),
            series("Partitions left out of the sums (partitions)", PARTITIONS,
                   Query(f"kpulse_consumergroup_lag_unknown_partitions{{{g}}}", "lag, {{consumergroup}}"),
                   Query(f"kpulse_consumergroup_lag_seconds_unknown_partitions{{{g}}}", "time lag, {{consumergroup}}"),
                   description="> 0: a partition's log end or offset could not be read, so the sum is a lower bound"),
            series("Share group lag, not acknowledged (records)", RECORDS,
                   Query(f"kpulse_sharegroup_lag{{{C}}}", "{{sharegroup}} (share)")),
            series("Streams group input lag (records)", RECORDS,
                   Query(f"kpulse_streams_group_lag{{{C}}}", "{{application_id}} (streams)"),
                   description="Input lag of the Streams groups (KIP-1071), as kafka-streams-groups --describe"),
        ]),
        Row("Partitions and members of the chosen groups", [
            series("Partition lag, top 20 (records)", RECORDS,
                   Query(f"topk(20, kafka_consumergroup_lag{{{g}}})", "{{consumergroup}} {{topic}}[{{partition}}]")),
            series("Partition time lag, top 20 (s)", SECONDS,
                   Query(f"topk(20, kpulse_consumergroup_partition_lag_seconds{{{g}}})",
                         "{{consumergroup}} {{topic}}[{{partition}}]")),
            series("Consumed per group (msg/s)", MSG_PER_S,
                   Query(f"sum by (consumergroup) (rate(kafka_consumergroup_current_offset{{{g}}}[{RATE}]))",
                         "{{consumergroup}}"),
                   description="Growth of the group's committed offsets"),
            series("Members per group (members)", MEMBERS,
                   Query(f"kafka_consumergroup_members{{{g}}}", "{{consumergroup}}")),
            table("State per group", NONE, Query(f"kpulse_consumergroup_state{{{g}}} == 1")),
            series("Members still reconciling, KIP-848 and Streams groups (members)", MEMBERS,
                   Query(f"kpulse_consumergroup_reconciling_members{{{g}}}", "{{consumergroup}}"),
                   description="Members whose epoch is behind the target assignment epoch"),
            series("Group and assignment epochs, KIP-848 and Streams groups", NONE,
                   Query(f"kpulse_consumergroup_group_epoch{{{g}}}", "group epoch, {{consumergroup}}"),
                   Query(f"kpulse_consumergroup_assignment_epoch{{{g}}}", "assignment epoch, {{consumergroup}}")),
        ]),
    ])


def streams_dashboard() -> tuple[str, str, str, list[Row]]:
    a = f'{C},application_id=~"$application_id"'
    as_group = (f'and on (cluster, consumergroup) label_replace(kpulse_streams_app_running{{{a}}}, '
                '"consumergroup", "$1", "application_id", "(.*)")')
    return ("kpulse-streams", "kpulse / Streams apps",
            "Kafka Streams applications: instances, the Streams group (KIP-1071) and their input lag", [
        Row("Applications", [
            series("App running (1 = every expected instance RUNNING)", NONE,
                   Query(f"kpulse_streams_app_running{{{a}}}", "{{application_id}}"), mappings=UP_DOWN),
            table("Instance state", NONE, Query(f"kpulse_streams_instance_state{{{a}}} == 1"),
                  description="Each instance's Kafka Streams client state, from its metrics endpoint"),
            series("Input lag (records)", RECORDS,
                   Query(f"kpulse_consumergroup_lag{{{C}}} {as_group}", "{{consumergroup}}"),
                   description="The application's group lag, summed over its input partitions"),
            series("Input time lag, worst partition (s)", SECONDS,
                   Query(f"kpulse_consumergroup_lag_seconds{{{C}}} {as_group}", "{{consumergroup}}")),
        ]),
        Row("Streams groups (KIP-1071)", [
            table("Streams group state", NONE, Query(f"kpulse_streams_group_state{{{a}}} == 1")),
            series("Streams group members (members)", MEMBERS,
                   Query(f"kpulse_streams_group_members{{{a}}}", "{{application_id}}")),
            series("Streams group epochs", NONE,
                   Query(f"kpulse_streams_group_epoch{{{a}}}", "group, {{application_id}}"),
                   Query(f"kpulse_streams_group_assignment_epoch{{{a}}}", "assignment, {{application_id}}"),
                   Query(f"kpulse_streams_group_topology_epoch{{{a}}}", "topology, {{application_id}}")),
            series("Streams group input lag (records)", RECORDS,
                   Query(f"kpulse_streams_group_lag{{{a}}}", "{{application_id}}"),
                   description="As kafka-streams-groups --describe --offsets sums it"),
        ]),
    ])


def share_groups_dashboard() -> tuple[str, str, str, list[Row]]:
    s = f'{C},sharegroup=~"$sharegroup"'
    return ("kpulse-share-groups", "kpulse / Share groups",
            "Share groups (KIP-932): status, state, members, records not acknowledged", [
        Row("Share groups", [
            table("Status per share group", NONE, Query(f"kpulse_sharegroup_status{{{s}}} == 1"), width=8),
            table("State per share group", NONE, Query(f"kpulse_sharegroup_state{{{s}}} == 1"), width=8),
            series("Members (members)", MEMBERS, Query(f"kpulse_sharegroup_members{{{s}}}", "{{sharegroup}}"), width=8),
            series("Lag, not acknowledged (records)", RECORDS, Query(f"kpulse_sharegroup_lag{{{s}}}", "{{sharegroup}}"),
                   description="Records of the share partitions not yet acknowledged, as the broker counts them"),
            series("Partitions left out of the lag (partitions)", PARTITIONS,
                   Query(f"kpulse_sharegroup_lag_unknown_partitions{{{s}}}", "{{sharegroup}}")),
            series("Partition lag, top 20 (records)", RECORDS,
                   Query(f"topk(20, kpulse_sharegroup_partition_lag{{{s}}})", "{{sharegroup}} {{topic}}[{{partition}}]")),
            series("Acknowledged (records/s)", RECORDS_PER_S,
                   Query(f"sum by (sharegroup, topic) (rate(kpulse_sharegroup_start_offset{{{s}}}[{RATE}]))",
                         "{{sharegroup}} / {{topic}}"),
                   description="How fast the share-partition start offset advances: every record before it "
                               "is acknowledged"),
            series("Reading of the share groups (s)", SECONDS,
                   Query(f"time() - kpulse_sharegroups_read_timestamp_seconds{{{C}}}", "age"),
                   Query(f"kpulse_sharegroups_read_duration_seconds{{{C}}}", "duration"),
                   description="Share groups are read less often while the brokers are slow to answer"),
        ]),
    ])


def slo_dashboard() -> tuple[str, str, str, list[Row]]:
    o = f'{C},slo=~"$slo"'
    legend = "{{slo}} {{entity}}"

    def burn(long: str, short: str, level: str) -> Panel:
        return series(f"Burn rate over {long} and {short}, {level} pair (× budget)", BURN,
                      Query(f'kpulse_slo_burn_rate{{{o},window="{long}"}}', f"{long}, {legend}"),
                      Query(f'kpulse_slo_burn_rate{{{o},window="{short}"}}', f"{short}, {legend}"),
                      description=f"The {level} alert is met when both windows burn faster than its factor")
    return ("kpulse-slo", "kpulse / SLOs",
            "What kpulse's SLO job evaluated: error budget left, burn rates, page and ticket alerts", [
        Row("Alerts and budgets", [
            stat("SLOs paging (SLOs)", "count:SLOs", Query(f'sum(kpulse_slo_alert{{{o},severity="page"}})'), width=6,
                 thresholds=bad_above(1)),
            stat("SLOs ticketing (SLOs)", "count:SLOs", Query(f'sum(kpulse_slo_alert{{{o},severity="ticket"}})'),
                 width=6, thresholds=[(None, "green"), (1, "orange")]),
            stat("Budgets exhausted (SLOs)", "count:SLOs",
                 Query(f'sum(kpulse_slo_budget_status{{{o},status="exhausted"}})'), width=6, thresholds=bad_above(1)),
            stat("Evaluated (s ago)", SECONDS, Query(f"time() - max(kpulse_slo_evaluation_timestamp_seconds{{{C}}})"),
                 width=6, description="When the SLO job last wrote the status kpulse serves"),
            table("Alert per SLO and entity", NONE, Query(f"kpulse_slo_alert{{{o}}}"), value="Met (1 = yes)"),
            table("Budget status per SLO and entity", NONE, Query(f"kpulse_slo_budget_status{{{o}}} == 1")),
            series("Error budget left (%)", RATIO, Query(f"kpulse_slo_error_budget_remaining{{{o}}}", legend),
                   description="Below 0 when overspent"),
            series("Time to exhaustion at the 1h burn rate (s)", SECONDS,
                   Query(f"kpulse_slo_time_to_exhaustion_seconds{{{o}}}", legend)),
        ]),
        Row("Burn rates", [
            burn("1h", "5m", "page"), burn("6h", "30m", "page"), burn("1d", "2h", "ticket"), burn("3d", "6h", "ticket"),
            series("Burn rate over the SLO window (× budget)", BURN,
                   Query(f'kpulse_slo_burn_rate{{{o},window="window"}}', legend)),
        ]),
        Row("Indicators", [
            series("SLI and objective (%)", RATIO, Query(f"kpulse_slo_sli{{{o}}}", f"SLI, {legend}"),
                   Query(f"kpulse_slo_objective{{{o}}}", "objective, {{slo}}")),
            series("Coverage of the window (%)", RATIO, Query(f"kpulse_slo_coverage{{{o}}}", legend),
                   description="Minutes of the SLO window with data"),
            series("Bad one-minute slices, used and allowed (slices)", "count:slices",
                   Query(f"kpulse_slo_bad_timeslices{{{o}}}", f"bad, {legend}"),
                   Query(f"kpulse_slo_allowed_bad_timeslices{{{o}}}", f"allowed, {legend}"),
                   description="Timeslices SLOs: the budget in one-minute slices"),
            series("Events in the window, Occurrences SLOs (events)", "count:events",
                   Query(f"kpulse_slo_events{{{o}}}", f"valid, {legend}"),
                   Query(f"kpulse_slo_min_events{{{o}}}", f"needed to page, {legend}")),
        ]),
    ])


def health_dashboard() -> tuple[str, str, str, list[Row]]:
    j = 'job="$job"'
    return ("kpulse-health", "kpulse / kpulse's own health",
            "The collectors, the exporter's scrape, what kpulse may not read, its alerts and their delivery", [
        Row("Collection", [
            series("Collectors up (1 = last cycle succeeded)", NONE,
                   Query(f"kpulse_collector_up{{{C}}}", "{{collector}}"), mappings=UP_DOWN),
            series("Collector cycle time (s)", SECONDS,
                   Query(f"kpulse_collector_duration_seconds{{{C}}}", "{{collector}}")),
            series("Exporter up (1 = scraped)", NONE, Query(f"up{{{j}}}", "{{instance}}"), width=8,
                   mappings=UP_DOWN),
            series("Exporter scrape time (s)", SECONDS, Query(f"scrape_duration_seconds{{{j}}}", "{{instance}}"),
                   width=8),
            series("Series served (series)", "count:series", Query(f"scrape_samples_scraped{{{j}}}", "{{instance}}"),
                   width=8),
            series("Values kpulse may not read (values)", "count:values",
                   Query(f"kpulse_not_authorized_values{{{C}}}", "{{area}}"),
                   description="Values kpulse's principal is not authorized to read, by area"),
        ]),
        Row("Alerts", [
            series("Firing alerts (alerts)", "count:alerts",
                   Query(f"sum by (rule, severity) (kpulse_alerts_firing{{{C}}})", "{{rule}} ({{severity}})")),
            series("Alertmanager: last send accepted (1 = yes)", NONE,
                   Query(f"kpulse_alertmanager_up{{{C}}}", "{{alertmanager}}"), mappings=UP_DOWN),
            series("Alerts sent to Alertmanager (alerts per 5 min)", "count:alerts",
                   Query(f"increase(kpulse_alertmanager_notifications_sent_total{{{C}}}[5m])", "sent, {{alertmanager}}"),
                   Query(f"increase(kpulse_alertmanager_notifications_failed_total{{{C}}}[5m])",
                         "failed, {{alertmanager}}")),
            series("Alerts waiting for Alertmanager (alerts)", "count:alerts",
                   Query(f"kpulse_alertmanager_notifications_pending{{{C}}}", "{{alertmanager}}")),
        ]),
    ])


DASHBOARDS = (cluster_dashboard, consumer_lag_dashboard, streams_dashboard, share_groups_dashboard, slo_dashboard,
              health_dashboard)


# --- variables --------------------------------------------------------------------------------------------

def query_variable(name: str, label: str, query: str, *, include_all: bool = False) -> dict[str, Any]:
    """A query variable; with ``include_all``, multi-valued, All being ``.*`` (one short regex, whatever
    the number of groups)."""
    return {"name": name, "label": label, "type": "query", "datasource": DATASOURCE, "definition": query,
            "query": query, "refresh": 2, "sort": 1, "regex": "", "hide": 0, "includeAll": include_all,
            "multi": include_all, "allValue": ".*" if include_all else None,
            "current": {"text": "All", "value": "$__all"} if include_all else {}, "options": []}


VARIABLES = {
    "kpulse-cluster": [query_variable("topic", "Topic", f"label_values(kafka_topic_partitions{{{C}}}, topic)",
                                      include_all=True)],
    "kpulse-consumer-lag": [query_variable("consumergroup", "Group",
                                           f"label_values(kpulse_consumergroup_info{{{C}}}, consumergroup)",
                                           include_all=True)],
    "kpulse-streams": [query_variable("application_id", "Application",
                                      f"label_values(kpulse_streams_app_running{{{C}}}, application_id)",
                                      include_all=True)],
    "kpulse-share-groups": [query_variable("sharegroup", "Share group",
                                           f"label_values(kpulse_sharegroup_members{{{C}}}, sharegroup)",
                                           include_all=True)],
    "kpulse-slo": [query_variable("slo", "SLO", f"label_values(kpulse_slo_objective{{{C}}}, slo)", include_all=True)],
    "kpulse-health": [query_variable("job", "Scrape job", f"label_values(kpulse_collector_up{{{C}}}, job)")],
}
"""The variables of each dashboard after ``datasource`` and ``cluster``."""


def templating(uid: str) -> dict[str, Any]:
    return {"list": [
        {"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus", "regex": "",
         "hide": 0, "refresh": 1, "includeAll": False, "multi": False, "options": [],
         "current": {"text": "Prometheus", "value": DATASOURCE_UID}},
        query_variable("cluster", "Cluster", "label_values(kafka_brokers, cluster)"),
        *VARIABLES[uid]]}


# --- rendering ----------------------------------------------------------------------------------------------

COLUMN_NAMES = {"consumergroup": "Group", "sharegroup": "Share group", "application_id": "Application",
                "streams_instance": "Instance", "status": "Status", "state": "State", "type": "Type",
                "protocol_type": "Protocol type", "topic": "Topic", "partition": "Partition", "id": "Broker id",
                "address": "Address", "node": "Node", "role": "Role", "slo": "SLO", "entity": "Entity",
                "severity": "Severity"}
HIDDEN_COLUMNS = ("Time", "job", "instance", "cluster", "namespace", "__name__")


def _thresholds(steps: list[tuple[float | None, str]]) -> dict[str, Any]:
    return {"mode": "absolute", "steps": [{"color": color, "value": value}
                                          for value, color in steps or [(None, "green")]]}


def _panel(panel: Panel, panel_id: int, x: int, y: int) -> dict[str, Any]:
    doc: dict[str, Any] = {"id": panel_id, "type": panel.kind, "title": panel.title, "description": panel.description,
                           "datasource": DATASOURCE,
                           "gridPos": {"h": panel.height, "w": panel.width, "x": x, "y": y}}
    defaults: dict[str, Any] = {"unit": panel.unit, "mappings": panel.mappings,
                                "thresholds": _thresholds(panel.thresholds)}
    refs = "ABCDEFGHIJ"
    if panel.kind == "table":
        doc["targets"] = [{"refId": refs[i], "datasource": DATASOURCE, "expr": q.expr, "format": "table",
                           "instant": True, "range": False, "editorMode": "code"}
                          for i, q in enumerate(panel.queries)]
        doc["options"] = {"showHeader": True, "cellHeight": "sm", "footer": {"show": False}}
        doc["transformations"] = [{"id": "organize", "options": {
            "excludeByName": {name: True for name in (*HIDDEN_COLUMNS, *panel.hide_columns)},
            "renameByName": {**COLUMN_NAMES, "Value": panel.value_title or "Value"}}}]
        defaults["custom"] = {"align": "auto", "filterable": True}
    else:
        doc["targets"] = [{"refId": refs[i], "datasource": DATASOURCE, "expr": q.expr, "legendFormat": q.legend or "__auto",
                           "range": True, "instant": False, "editorMode": "code"}
                          for i, q in enumerate(panel.queries)]
        defaults["color"] = {"mode": "palette-classic" if panel.kind == "timeseries" else "thresholds"}
        if panel.kind == "timeseries":
            defaults["custom"] = {"drawStyle": "line", "lineWidth": 1, "fillOpacity": 10, "showPoints": "never",
                                  "spanNulls": False, "stacking": {"mode": "normal" if panel.stack else "none",
                                                                   "group": "A"}}
            doc["options"] = {"legend": {"displayMode": "list", "placement": "bottom", "showLegend": True},
                              "tooltip": {"mode": "multi", "sort": "desc"}}
        else:
            doc["options"] = {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                              "colorMode": "value", "graphMode": "area", "justifyMode": "auto",
                              "orientation": "auto", "textMode": "auto"}
    doc["fieldConfig"] = {"defaults": defaults, "overrides": []}
    return doc


def render(uid: str, title: str, description: str, rows: list[Row]) -> dict[str, Any]:
    """The Grafana dashboard JSON: rows in order, each row's panels left to right, 24 columns wide."""
    panels: list[dict[str, Any]] = []
    y = 0
    for row in rows:
        panels.append({"id": len(panels) + 1, "type": "row", "title": row.title, "collapsed": False, "panels": [],
                       "gridPos": {"h": 1, "w": 24, "x": 0, "y": y}})
        y += 1
        x, line_height = 0, 0
        for panel in row.panels:
            if x + panel.width > 24:
                x, y, line_height = 0, y + line_height, 0
            panels.append(_panel(panel, len(panels) + 1, x, y))
            x += panel.width
            line_height = max(line_height, panel.height)
        y += line_height
    return {"id": None, "uid": uid, "title": title, "description": description, "tags": ["kpulse", "kafka"],
            "timezone": "browser", "editable": True, "graphTooltip": 1, "schemaVersion": 41, "version": 1,
            "refresh": "30s", "time": {"from": "now-6h", "to": "now"}, "fiscalYearStartMonth": 0,
            "annotations": {"list": []}, "templating": templating(uid),
            "links": [{"type": "dashboards", "tags": ["kpulse"], "asDropdown": True, "title": "kpulse dashboards",
                       "includeVars": True, "keepTime": True, "icon": "external link", "targetBlank": False,
                       "tooltip": "", "url": ""}],
            "panels": panels}


def dashboards() -> dict[str, dict[str, Any]]:
    """File name -> dashboard JSON document."""
    return {f"{uid}.json": render(uid, title, description, rows)
            for uid, title, description, rows in (build() for build in DASHBOARDS)}


def text(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description="Write kpulse's Grafana dashboards to docker/grafana/dashboards/")
    parser.add_argument("--check", action="store_true", help="exit 1 when a file differs from what would be written")
    args = parser.parse_args()
    expected = {name: text(doc) for name, doc in dashboards().items()}
    if args.check:
        present = {path.name: path.read_text() for path in OUTPUT.glob("*.json")}
        differ = sorted(name for name in expected.keys() | present.keys() if expected.get(name) != present.get(name))
        for name in differ:
            print(f"docker/grafana/dashboards/{name}: differs from docker/grafana/dashboards.py (run it to rewrite)")
        return 1 if differ else 0
    OUTPUT.mkdir(exist_ok=True)
    for name, content in expected.items():
        (OUTPUT / name).write_text(content)
    for stale in set(p.name for p in OUTPUT.glob("*.json")) - expected.keys():
        (OUTPUT / stale).unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
