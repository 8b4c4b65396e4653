"""TEMPORARY: the minimal ``read_group`` the group operations need, with the signature of
``kpulse.kafka.group_describe.read_group`` (written by another part of issue 15). Replace the
import in :mod:`operations.group_ops` with the real reader and delete this file once
``kpulse/kafka/group_describe.py`` is on main.

Lists the group with its type (ListGroups v5) and describes it with the call of its type:
StreamsGroupDescribe and ShareGroupDescribe through kafka-python; classic and consumer groups
through librdkafka's describe (their members only, which is what the operations check)."""

from __future__ import annotations

from kpulse.errors import KpulseError
from kpulse.kafka.group_model import (
    ClassicGroup, ClassicMember, ConsumerGroup, ConsumerMember, GroupDescription, GroupListing, ShareGroup,
    ShareMember, StreamsGroup, StreamsMember, Subtopology,
)


class GroupNotFound(KpulseError):
    """The cluster has no group of that name."""


def read_group(cluster_config, group_id: str, timeout: float = 10.0) -> tuple[GroupListing, GroupDescription]:
    from kpulse.kafka.clients import admin_client, kafka_python_admin
    from operations import kafka_reads
    from operations.group_requests import GroupRequests

    requests = GroupRequests(lambda: kafka_python_admin(cluster_config, client_id="kpulse-operations", timeout=timeout),
                             timeout)
    try:
        client = requests._manager() and requests._client
        listed = {g["group_id"]: g for g in kafka_reads._retried(client.list_groups)}
        if group_id not in listed:
            raise GroupNotFound(f"group {group_id!r} does not exist on cluster {cluster_config.name!r}")
        entry = listed[group_id]
        listing = GroupListing(group_id, entry.get("group_type") or "classic", entry.get("protocol_type") or "",
                               entry.get("group_state") or "")
        if listing.type == "streams":
            return listing, _streams(requests, group_id)
        if listing.type == "share":
            return listing, _share(requests, group_id)
        view = kafka_reads.describe_group(admin_client(cluster_config.client_config()), group_id)
        if listing.type == "consumer":
            return listing, ConsumerGroup(group_id, view.state, 0, 0, "", tuple(
                ConsumerMember(m.member_id, None, None, 0, m.client_id, m.host, (), None, {}, {}, None)
                for m in view.members))
        return listing, ClassicGroup(group_id, view.state, listing.protocol_type, "", tuple(
            ClassicMember(m.member_id, None, m.client_id, m.host, {}) for m in view.members))
    finally:
        requests.close()


def _streams(requests, group_id: str) -> StreamsGroup:
    from kpulse.kafka.messages import StreamsGroupDescribeRequest

    def answer(response):
        [group] = response.groups
        return group.error_code, group

    group = requests._call(group_id, lambda: StreamsGroupDescribeRequest(
        group_ids=[group_id], include_authorized_operations=False), answer, f"cannot describe group {group_id!r}")
    topology = group.topology
    subtopologies = tuple(Subtopology(s.subtopology_id, tuple(s.source_topics), tuple(s.repartition_sink_topics),
                                      tuple(t.name for t in s.state_changelog_topics),
                                      tuple(t.name for t in s.repartition_source_topics))
                          for s in ((topology.subtopologies or ()) if topology is not None else ()))
    members = tuple(StreamsMember(m.member_id, m.member_epoch, m.instance_id, m.rack_id, m.client_id, m.client_host,
                                  m.topology_epoch, m.process_id, None, {}, {}, {}, {}, {}, {}, bool(m.is_classic))
                    for m in group.members)
    return StreamsGroup(group_id, group.group_state, group.group_epoch, group.assignment_epoch,
                        topology.epoch if topology is not None else None, subtopologies, members)


def _share(requests, group_id: str) -> ShareGroup:
    from kpulse.kafka.messages import ShareGroupDescribeRequest

    def answer(response):
        [group] = response.groups
        return group.error_code, group

    group = requests._call(group_id, lambda: ShareGroupDescribeRequest(
        group_ids=[group_id], include_authorized_operations=False), answer, f"cannot describe group {group_id!r}")
    members = tuple(ShareMember(m.member_id, m.rack_id, m.member_epoch, m.client_id, m.client_host,
                                tuple(m.subscribed_topic_names), {}) for m in group.members)
    return ShareGroup(group_id, group.group_state, group.group_epoch, group.assignment_epoch, group.assignor_name,
                      members)
