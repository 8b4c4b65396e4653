"""Helpers of the group operations' tests (test_ops_groups, test_ops_streams_groups,
test_ops_share_groups, test_dashboard_group_ops): a group's offsets read and committed through
kafka-python (librdkafka's offset reads can crash on a moving coordinator, librdkafka #5040), and
waiting for a condition. The Streams application and the share consumer are tests/support.py's."""

from __future__ import annotations

import time


def group_requests(bootstrap: str):
    """:class:`operations.group_requests.GroupRequests` on the test cluster (close it, or use ``with``)."""
    from kafka.admin import KafkaAdminClient

    from operations.group_requests import GroupRequests

    return GroupRequests(lambda: KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kpulse-test"))


def read_committed(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    """The group's committed offsets (any group type but share)."""
    with group_requests(bootstrap) as requests:
        return requests.committed(group)


def commit_offsets(bootstrap: str, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Commit ``offsets`` for a group without members; again while the coordinator does not know a
    topic just created yet."""
    with group_requests(bootstrap) as requests:
        for _ in range(20):
            errors = set(requests.commit(group, offsets).values())
            if errors == {None}:
                break
            time.sleep(0.5)
        assert errors == {None} and requests.committed(group) == offsets


def wait_until(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(1)

