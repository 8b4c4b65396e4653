"""How kpulse says that its principal may not read something: ``not authorized: <Operation> on
<resource>``, the words of Kafka's ACLs (``kafka-acls --operation Describe --group G``), so that the
reason names the ACL that would fix it. Pure: no I/O.

Kafka answers a refusal with an error code inside an answer (GROUP_AUTHORIZATION_FAILED per group,
TOPIC_AUTHORIZATION_FAILED per topic or partition, CLUSTER_AUTHORIZATION_FAILED for cluster-wide
requests); librdkafka raises it as a ``KafkaException`` whose error is named so, kafka-python as an
exception class (``GroupAuthorizationFailedError``) or a code, and some layers only keep the text.
:func:`refused_resource` recognises all of them.
"""

from __future__ import annotations

import re
from collections.abc import Collection

AUTHORIZATION_CODES = {29: "TOPIC", 30: "GROUP", 31: "CLUSTER", 53: "TRANSACTIONAL_ID", 86: "DELEGATION_TOKEN"}
"""Kafka's authorization error codes -> the kind of resource refused."""
_NAMED = re.compile(r"(TOPIC|GROUP|CLUSTER|TRANSACTIONAL_ID)_AUTHORIZATION_FAILED"
                    r"|(Topic|Group|Cluster|TransactionalId)AuthorizationFailed"
                    r"|(Topic|Group|Cluster) authorization failed")


def not_authorized(operation: str, resource_type: str, name: str | None = None) -> str:
    """``not authorized: DescribeConfigs on topic orders`` (``name`` None: the cluster)."""
    resource = resource_type.lower()
    return f"not authorized: {operation} on {resource}" + (f" {name}" if name else "")


def refused_resource(error: object) -> str | None:
    """The kind of resource (``"TOPIC"``, ``"GROUP"``, ``"CLUSTER"``) when ``error`` (an exception,
    a librdkafka ``KafkaError``, an error code or a text) is an authorization refusal, else None."""
    if isinstance(error, int):
        return AUTHORIZATION_CODES.get(error)
    code = getattr(error, "code", None)  # a librdkafka KafkaError
    if callable(code) and code() in AUTHORIZATION_CODES:
        return AUTHORIZATION_CODES[code()]
    first = getattr(error, "args", None)
    if first:
        code = getattr(first[0], "code", None)
        if callable(code) and code() in AUTHORIZATION_CODES:
            return AUTHORIZATION_CODES[code()]
    code = getattr(error, "errno", None)
    if isinstance(code, int) and code in AUTHORIZATION_CODES:
        return AUTHORIZATION_CODES[code]
    match = _NAMED.search(f"{type(error).__name__} {error}")
    if match is None:
        return None
    word = next(group for group in match.groups() if group)
    return {"TRANSACTIONALID": "TRANSACTIONAL_ID"}.get(word.upper(), word.upper())


def refusal_text(error: object, operation: str, resource_type: str, name: str | None = None) -> str | None:
    """``not authorized: <operation> on <resource>`` when ``error`` refuses that kind of resource
    (or the cluster), else None."""
    refused = refused_resource(error)
    if refused is None:
        return None
    if refused == "CLUSTER" and resource_type.upper() != "CLUSTER":
        return not_authorized(operation, "cluster")
    return not_authorized(operation, resource_type, name)


def resource_text(resource_type: str, names: Collection[str], shown: int = 3) -> str:
    """``group team-a-billing``, ``cluster``, ``12 topics (a, b, c, ...)``: resources of one kind as
    a refusal names them (the first ``shown`` by name)."""
    resource_type = resource_type.lower()
    if resource_type == "cluster":
        return "cluster"
    ordered = sorted(names)
    if len(ordered) == 1:
        return f"{resource_type} {ordered[0]}"
    more = ", ..." if len(ordered) > shown else ""
    return f"{len(ordered)} {resource_type}s ({', '.join(ordered[:shown])}{more})"


def summary(operation: str, resource_type: str, names: list[str], shown: int = 3) -> str:
    """One line for many refused resources of one kind: ``not authorized: DescribeConfigs on topic
    orders`` or ``... on 4 topics (a, b, c, ...)``."""
    return f"not authorized: {operation} on {resource_text(resource_type, names, shown)}"
