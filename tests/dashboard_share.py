"""A Share groups section as ``kpulse collect`` writes it, with a hostile group: shared by the Share
groups page's tests and the dashboard's table tests."""

from __future__ import annotations

from typing import Any

HOSTILE_GROUP = "**[re-login](https://example.invalid/x)** <img src=x> :material/warning: :red[x] $x^2$ #"
HOSTILE_TOPIC = "_kp_.__strong__"
HOSTILE_CLIENT = "<script>alert(1)</script> [c](https://example.invalid/c)"
GROUPS = 60
"""More than one page of 50."""


def share_group_name(index: int) -> str:
    return f"share-{index:03d}"


def share_section() -> dict:
    """GROUPS share groups (every 7th STALLED, every 11th NOT_CONSUMING without members) and a hostile one."""
    groups: list[dict[str, Any]] = []
    for index in range(GROUPS):
        status = "NOT_CONSUMING" if index % 11 == 10 else "STALLED" if index % 7 == 6 else "OK"
        members = 0 if status == "NOT_CONSUMING" else 2
        member_list = [{"member_id": f"m-{index}-{n}", "client_id": f"client-{n}", "host": f"/10.0.0.{n}",
                        "rack_id": None, "member_epoch": 5, "subscribed_topics": ["jobs"],
                        "assignment": {"jobs": [n - 1, n + 1]}} for n in range(1, members + 1)]
        partitions: list[dict[str, Any]]
        partitions = [{"topic": "jobs", "partition": p, "start_offset": 100 * p, "lag": index + p, "status": status}
                       for p in range(3)]
        groups.append({"group_id": share_group_name(index), "state": "Stable" if members else "Empty",
                       "members": members, "group_epoch": 7, "assignment_epoch": 7, "partition_count": 3,
                       "total_lag": sum(p["lag"] for p in partitions), "total_lag_partial": False,
                       "lag_unknown_partitions": 0, "status": status, "error": None, "member_list": member_list,
                       "partitions": partitions})
    groups.append({"group_id": HOSTILE_GROUP, "state": "Stable", "members": 1, "group_epoch": 1, "assignment_epoch": 1,
                   "partition_count": 2, "total_lag": 5, "total_lag_partial": True, "lag_unknown_partitions": 1,
                   "status": None, "error": None,
                   "member_list": [{"member_id": HOSTILE_CLIENT, "client_id": HOSTILE_CLIENT, "host": HOSTILE_CLIENT,
                                    "rack_id": None, "member_epoch": 1, "subscribed_topics": [HOSTILE_TOPIC],
                                    "assignment": {HOSTILE_TOPIC: [0, 1]}}],
                   "partitions": [{"topic": HOSTILE_TOPIC, "partition": 0, "start_offset": 3, "lag": 5, "status": None,
                                   "reasons": {"status": "not enough readings yet (1 of 3)"}},
                                  {"topic": HOSTILE_TOPIC, "partition": 1, "start_offset": None, "lag": None,
                                   "status": None, "reasons": {"lag": "the broker did not report a lag"}}]})
    return {"groups": groups, "unsupported": None}
