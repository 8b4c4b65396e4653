"""Why kpulse could not read a value, as the one line a page shows in its place. Pure.

A refusal by the cluster's ACLs names what kpulse's principal lacks, as an operator grants it
(``kafka-acls --operation Describe --group team-b-audit``): "not authorized: Describe on group
team-b-audit", in the product's words (``kpulse/kafka/authorization.py``). Any other failure is
shown as its own text. What the principal cannot see at all for want of an ACL on the cluster
(the snapshot's ``connection.limits``) is worded here for the page it limits. The lines hold
Kafka-supplied names: pages show them as text (``dashboard/literal.py``), never as Markdown."""

from __future__ import annotations

from kpulse.kafka.authorization import not_authorized, refused_resource

__all__ = ["group_problem", "listing_limit", "not_authorized", "quorum_limit", "unread_caption"]

GROUP_LISTING = "groups are listed only where"
"""How a limit on the group listing reads (ListGroups leaves out the groups kpulse may not describe)."""
QUORUM = "quorum is not readable"
"""How a limit on the KRaft quorum reads (DescribeQuorum needs Describe on the cluster)."""


def group_problem(group_id: object, error: str | None) -> str | None:
    """Why a group's values (offsets, lag, members) are missing, from its snapshot ``error``:
    every part of it ("describe: ...; offsets: ...") that is a group refusal (GROUP_AUTHORIZATION_FAILED,
    or librdkafka's "Group authorization failed") becomes "not authorized: Describe on group <id>"
    (once), the other parts stay as they are; ``None`` without an error."""
    if not error:
        return None
    parts: list[str] = []
    for part in str(error).split("; "):
        shown = not_authorized("Describe", "group", str(group_id)) if refused_resource(part) == "GROUP" else part
        if shown not in parts:
            parts.append(shown)
    return "; ".join(parts)


def unread_caption(unread: int, total: int, noun: str) -> str | None:
    """"⚠ 3 of 15 groups kpulse may not read ..." for a list of ``total`` groups of which ``unread``
    could not be read (numbers only: safe as a caption); ``None`` when every one was read."""
    if not unread:
        return None
    return (f"⚠ {unread:,} of {total:,} {noun} kpulse may not read (why: the last column): their lag, status and "
            "partitions are unknown, not zero.")


def _acl(limit: str) -> str:
    """"not authorized: Describe on cluster" of a limit "not authorized: Describe on cluster: what it
    hides"; a limit in other words, whole."""
    parts = limit.split(": ", 2)
    return ": ".join(parts[:2]) if len(parts) == 3 and parts[0] == "not authorized" else limit


def listing_limit(limits: list[str] | None) -> str | None:
    """"Groups are listed only where kpulse may describe them: not authorized: Describe on cluster",
    above a list of groups, when the principal's limits say so; else ``None``."""
    for limit in limits or []:
        if GROUP_LISTING in limit:
            return f"Groups are listed only where kpulse may describe them: {_acl(limit)}"
    return None


def quorum_limit(limits: list[str] | None) -> str | None:
    """"The KRaft quorum is not readable: not authorized: Describe on cluster", when the principal's
    limits say so; else ``None``."""
    for limit in limits or []:
        if QUORUM in limit:
            return f"The KRaft quorum is not readable: {_acl(limit)}"
    return None
