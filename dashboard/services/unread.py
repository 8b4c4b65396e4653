"""Why kpulse could not read a value, as the one line a page shows in its place. Pure.

A refusal by the cluster's ACLs names what kpulse's principal lacks, as an operator grants it
(``kafka-acls --operation Describe --group team-b-audit``): "not authorized: Describe on group
team-b-audit". Any other failure is shown as its own text. The lines hold Kafka-supplied names:
pages show them as text (``dashboard/literal.py``), never as Markdown."""

from __future__ import annotations

import re

TOPIC_AUTHORIZATION_FAILED = "TOPIC_AUTHORIZATION_FAILED"
_GROUP_REFUSED = re.compile(r"GROUP_AUTHORIZATION_FAILED|GroupAuthorizationFailed|Group authorization failed")
"""A group refused, as the error's name (kpulse's own reads), kafka-python's exception class or
librdkafka's text says it."""


def not_authorized(operation: str, resource_type: str, name: str) -> str:
    """"not authorized: DescribeConfigs on topic orders": the ACL kpulse's principal lacks."""
    return f"not authorized: {operation} on {resource_type} {name}"


def group_problem(group_id: object, error: str | None) -> str | None:
    """Why a group's values (offsets, lag, members) are missing, from its snapshot ``error``:
    every part of it ("describe: ...; offsets: ...") that names GROUP_AUTHORIZATION_FAILED (or
    librdkafka's "Group authorization failed") becomes "not authorized: Describe on group <id>"
    (once), the other parts stay as they are; ``None`` without an error."""
    if not error:
        return None
    parts: list[str] = []
    for part in str(error).split("; "):
        shown = not_authorized("Describe", "group", str(group_id)) if _GROUP_REFUSED.search(part) else part
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
