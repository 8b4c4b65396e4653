"""The Topics page: the topic list and partition detail from Admin API metadata. Pure.

Metadata comes from :meth:`services.kafka_admin.ClusterAdmin.partitions` (one dict per
partition). Settings such as ``min.insync.replicas`` are read for the page shown only, topic by
topic (:class:`TopicConfigs`): a topic whose configs could not be read keeps its row, its
config-derived columns empty and the reason beside them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from collections.abc import Iterable, Mapping
from urllib.parse import quote

import pandas as pd

from dashboard.services.columns import Column, table
from kpulse.lag_contract import STATUS_SEVERITY
from kpulse.share_contract import SHARE_STATUS_SEVERITY
from kpulse.snapshot import Snapshot

TOPIC_COLUMNS = ["topic", "partitions", "replication_factor", "under_replicated", "offline", "internal"]
LISTED_COLUMNS = [*TOPIC_COLUMNS, "min_isr", "size_bytes", "configs_problem"]
"""The Topics page's list: :data:`TOPIC_COLUMNS`, then :func:`with_min_isr`'s and :func:`with_sizes`'s
columns, the reason a topic's configs were not read last."""
LIST_TABLE = table(
    Column("topic", "Topic", key=True), Column("partitions", "Partitions"),
    Column("under_replicated", "Under-replicated partitions", help="Partitions whose ISR is smaller than their "
                                                                  "replica set."),
    Column("offline", "Offline partitions", help="Partitions without a leader."),
    Column("replication_factor", "Replication factor", help="The largest replica set of its partitions."),
    Column("min_isr", "Min ISR", help="The topic's `min.insync.replicas`. Empty: its configs were not read; the "
                                      "**Why configs not read** column says why."),
    Column("size_bytes", "Size", "bytes", kind="number", format="bytes",
           help="One copy of the data, from the brokers' log dirs. Empty: the log dirs were not read."),
    Column("internal", "Internal"),
    Column("configs_problem", "Why configs not read", help="Why kpulse could not read the topic's configs."))
"""The Topics page's list (:data:`LISTED_COLUMNS`) as it shows it."""
PARTITION_COLUMNS = ["topic", "partition", "leader", "replicas", "isr", "under_replicated", "offline"]
DETAIL_TABLE = table(
    Column("partition", "Partition", key=True), Column("leader", "Leader", help="Empty: no leader (offline)."),
    Column("replicas", "Replicas"), Column("isr", "ISR", help="The in-sync replicas."),
    Column("under_replicated", "Under-replicated"), Column("offline", "Offline"),
    Column("under_min_isr", "Under min ISR", help="Empty: the topic's min ISR is unknown (its configs were not "
                                                  "read)."),
    Column("earliest_offset", "Earliest offset", help="Empty: not read."),
    Column("latest_offset", "Latest offset", help="Empty: not read."),
    Column("messages", "Messages", help="Latest minus earliest offset. Empty: an offset was not read."))
"""One topic's partitions (:func:`partition_detail`) as the page shows them."""
STREAMS_INTERNAL_SUFFIXES = ("-repartition", "-changelog")


def partitions_frame(partitions: Iterable[dict[str, Any]]) -> pd.DataFrame:
    rows = [{**p, "under_replicated": len(p["isr"]) < len(p["replicas"]), "offline": p["leader"] is None
             or p["leader"] < 0} for p in partitions]
    return pd.DataFrame(rows, columns=PARTITION_COLUMNS)


def topics_frame(partitions: pd.DataFrame) -> pd.DataFrame:
    """One row per topic: partitions, replication factor (largest replica set), URP and offline counts."""
    if partitions.empty:
        return pd.DataFrame(columns=TOPIC_COLUMNS)
    work = partitions.assign(rf=partitions["replicas"].map(len))
    grouped = work.groupby("topic", sort=True).agg(partitions=("partition", "size"), replication_factor=("rf", "max"),
                                                   under_replicated=("under_replicated", "sum"),
                                                   offline=("offline", "sum")).reset_index()
    grouped["internal"] = grouped["topic"].str.startswith("__")
    return grouped[TOPIC_COLUMNS]


@dataclass(frozen=True)
class TopicConfigs:
    """The configs of some topics, as one DescribeConfigs answered them, topic by topic."""

    configs: dict[str, dict[str, dict[str, Any]]]
    """Topic -> config name -> {value, source, default}, for each topic whose configs were read."""
    problems: dict[str, str]
    """Topic -> why its configs were not read (one line: "not authorized: DescribeConfigs on topic
    T" when the cluster's ACLs refuse it, else the error)."""

    @classmethod
    def unread(cls, topics: Iterable[str], why: str) -> TopicConfigs:
        """No topic's configs, each for the same reason (the whole call failed)."""
        return cls({}, {topic: why for topic in topics})

    def answers(self, topic: str) -> bool:
        """Whether this reading says anything about ``topic`` (its configs or why they are missing)."""
        return topic in self.configs or topic in self.problems

    def min_isr(self, topic: str) -> int | None:
        """The topic's ``min.insync.replicas``; null when its configs were not read."""
        value = (self.configs.get(topic) or {}).get("min.insync.replicas", {}).get("value")
        return int(value) if value not in (None, "") else None


def with_min_isr(rows: pd.DataFrame, configs: TopicConfigs) -> pd.DataFrame:
    """The page's rows with ``min_isr`` (from the topic configs; null when not read) and
    ``configs_problem``: why a topic's configs, hence its ``min_isr``, were not read (null when they were)."""
    return rows.assign(min_isr=pd.array([configs.min_isr(t) for t in rows["topic"]], dtype="Int64"),
                       configs_problem=[configs.problems.get(t) for t in rows["topic"]])


def configs_caption(rows: pd.DataFrame) -> str | None:
    """"min ISR unknown for 2 of 50 topics on this page: ..." when :func:`with_min_isr` could not
    read some topics' configs (numbers only: safe as a caption); else ``None``."""
    unread = int(rows["configs_problem"].notna().sum())
    if not unread:
        return None
    return (f"min ISR unknown for {unread} of {len(rows)} topics on this page: kpulse could not read their configs "
            "(why: the last column).")


def sizes_from_log_dirs(log_dirs: list[dict[str, Any]]) -> dict[str, int]:
    """Topic -> bytes of one copy of its data: per partition the largest replica, summed."""
    largest: dict[tuple[str, int], int] = {}
    for broker in log_dirs:
        for directory in broker.get("log_dirs") or []:
            if directory.get("error_code"):
                continue
            for topic in directory.get("topics") or []:
                for partition in topic.get("partitions") or []:
                    key = (topic["name"], partition["partition_index"])
                    largest[key] = max(largest.get(key, 0), int(partition.get("partition_size") or 0))
    sizes: dict[str, int] = {}
    for (topic, _), size in largest.items():
        sizes[topic] = sizes.get(topic, 0) + size
    return sizes


def with_sizes(rows: pd.DataFrame, sizes: dict[str, int] | None) -> pd.DataFrame:
    """The page's rows with ``size_bytes`` (null when not known)."""
    known = sizes or {}
    return rows.assign(size_bytes=pd.array([known.get(t) for t in rows["topic"]], dtype="Int64"))


def partition_detail(partitions: pd.DataFrame, topic: str, offsets: dict[int, dict[str, int | None]],
                     min_isr: int | None) -> pd.DataFrame:
    """Partitions of ``topic`` with leader, replicas, ISR, offsets and whether ISR < min ISR."""
    rows = partitions[partitions["topic"] == topic].sort_values("partition").copy()
    rows["earliest_offset"] = pd.array([offsets.get(p, {}).get("earliest") for p in rows["partition"]], dtype="Int64")
    rows["latest_offset"] = pd.array([offsets.get(p, {}).get("latest") for p in rows["partition"]], dtype="Int64")
    rows["messages"] = rows["latest_offset"] - rows["earliest_offset"]
    rows["under_min_isr"] = [None if min_isr is None else len(isr) < min_isr for isr in rows["isr"]]
    rows["leader"] = pd.array([None if leader is None or pd.isna(leader) or leader < 0 else int(leader)
                               for leader in rows["leader"]], dtype="Int64")
    for column in ("replicas", "isr"):
        rows[column] = rows[column].map(lambda ids: ", ".join(map(str, ids)))
    return rows.drop(columns=["topic"]).reset_index(drop=True)


CONFIG_TABLE = table(Column("config", "Config", key=True), Column("value", "Value"), Column("source", "Source"),
                     Column("default", "Default", help="Not set on the topic: the broker's or Kafka's default."))


def config_frame(configs: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """A topic's configs, the ones set explicitly first."""
    frame = pd.DataFrame([{"config": name, "value": entry["value"], "source": entry["source"],
                           "default": entry["default"]} for name, entry in configs.items()],
                         columns=["config", "value", "source", "default"])
    return frame.sort_values(["default", "config"]).reset_index(drop=True)


def internal_topics(topic_names: Iterable[str], application_id: str) -> list[str]:
    """The Streams internal topics of ``application_id`` (``<id>-…-repartition``, ``<id>-…-changelog``)."""
    prefix = f"{application_id}-"
    return sorted(t for t in topic_names if t.startswith(prefix) and t.endswith(STREAMS_INTERNAL_SUFFIXES))


CONSUMER_COLUMNS = ["group_id", "type", "state", "members", "partitions", "lag", "lag_unknown_partitions",
                    "max_lag_seconds", "status", "page"]
CONSUMER_TABLE = table(
    Column("group_id", "Group", key=True),
    Column("status", "Status", help="The worst of its partitions' statuses on this topic."),
    Column("lag", "Lag", "records", help="Summed over its partitions of this topic whose lag is known: a lower bound "
                                         "when **Lag unknown** is above 0."),
    Column("lag_unknown_partitions", "Lag unknown", "partitions", help="Its partitions of this topic whose lag is "
                                                                     "unknown (left out of the sum)."),
    Column("max_lag_seconds", "Max lag", "s", kind="number", format="%.1f",
           help="Its worst partition of this topic, in time. Empty: not known (or a share group: no time lag)."),
    Column("type", "Type"), Column("state", "State"), Column("members", "Members"),
    Column("partitions", "Partitions", help="Its partitions of this topic."),
    Column("page", "Group page", kind="link", link_text="open"))
"""The groups consuming one topic (:func:`consumers_frame`) as its page shows them."""


def _group_page(kind: str | None, group_id: Any) -> str:
    """The relative link to a group's page (``groups?group=``, ``share-groups?sharegroup=``), its
    id percent-encoded: a Kafka-supplied id stays one query value, never markup or a path."""
    page, param = ("share-groups", "sharegroup") if kind == "share" else ("groups", "group")
    return f"{page}?{param}={quote(str(group_id), safe='')}"


def consumer_rows_by_topic(snapshot: Snapshot | None) -> dict[str, list[dict[str, Any]]]:
    """Topic -> the groups of the snapshot that consume it, a row each (:data:`CONSUMER_COLUMNS`;
    :func:`consumers_frame` makes the table shown): consumer groups of every type (classic,
    KIP-848, Streams) by their committed partitions, share groups by the partitions whose start offset the broker reports. ``lag`` sums the lag of
    the group's partitions on that topic whose lag is known (a lower bound when
    ``lag_unknown_partitions`` > 0); ``status`` is the worst of those partitions'; ``page`` links
    to the group's page. Built once per snapshot in one pass over every group partition; the
    table itself is made only for the topic shown (a table for every topic costs more than the
    pass: docs/performance.md, "The dashboard at scale")."""
    if snapshot is None:
        return {}
    rows: dict[str, dict[str, dict[str, Any]]] = {}

    def tally(kind: str | None, group_id: str, group_type: str | None, state: str | None, members: int | None,
              topic: str, lag: int | None, seconds: float | None, status: str | None,
              severity: Mapping[str, int]) -> None:
        row = rows.setdefault(topic, {}).setdefault(f"{kind or 'consumer'}/{group_id}", {
            "group_id": group_id, "type": kind or group_type, "state": state,
            "members": members, "partitions": 0, "lag": None, "lag_unknown_partitions": 0,
            "max_lag_seconds": None, "status": None, "page": _group_page(kind, group_id)})
        row["partitions"] += 1
        if lag is None:
            row["lag_unknown_partitions"] += 1
        else:
            row["lag"] = (row["lag"] or 0) + lag
        if seconds is not None and (row["max_lag_seconds"] is None or seconds > row["max_lag_seconds"]):
            row["max_lag_seconds"] = seconds
        if status is not None and (row["status"] is None or severity.get(status, -1) > severity.get(row["status"], -1)):
            row["status"] = status

    for group in snapshot.get("consumer_groups") or []:
        for partition in group.get("partitions") or []:
            if partition.get("committed_offset") is None:
                continue  # assigned, never committed: not consumed yet
            tally(None, group.get("group_id"), group.get("type"), group.get("state"), group.get("members"),
                  partition.get("topic"), partition.get("lag"), partition.get("lag_seconds"), partition.get("status"),
                  STATUS_SEVERITY)
    share = snapshot.get("share_groups")
    for share_group in (share.get("groups") or []) if share else []:
        for share_partition in share_group.get("partitions") or []:
            tally("share", share_group.get("group_id"), None, share_group.get("state"), share_group.get("members"),
                  share_partition.get("topic"), share_partition.get("lag"), None, share_partition.get("status"),
                  SHARE_STATUS_SEVERITY)
    return {topic: list(by_group.values()) for topic, by_group in rows.items()}


def consumers_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """One topic's :func:`consumer_rows_by_topic` rows as the table its page shows, worst lag first."""
    frame = pd.DataFrame(rows, columns=CONSUMER_COLUMNS)
    for column in ("members", "partitions", "lag", "lag_unknown_partitions"):
        frame[column] = pd.array(frame[column], dtype="Int64")
    frame["max_lag_seconds"] = pd.to_numeric(frame["max_lag_seconds"], errors="coerce")
    return frame.sort_values(["lag", "group_id"], ascending=[False, True], na_position="last", ignore_index=True)
