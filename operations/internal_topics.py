"""Internal topics: Kafka's own, with the one refusal every planner and executor makes, and those
a Kafka Streams application names after its application id.

A topic is internal when its name starts with ``__``. That covers every topic Kafka 4.x flags
internal (``__consumer_offsets``, ``__transaction_state``, ``__share_group_state``), the KRaft
metadata log ``__cluster_metadata`` (not even listed in metadata), tiered storage's
``__remote_log_metadata``, and the ``__``-named topics other tools keep their state in. Deciding by
name needs no request, so an executor can check a saved or approved plan before it touches the
cluster. The "all topics" scopes of election and reassignment always left ``__`` topics out.

Operations refuse internal topics unless the operator gives ``--include-internal`` (a deliberate
flag of the CLI; the dashboard never offers them). Committing group offsets on the 50 partitions of
``__consumer_offsets``, or moving its replicas, is never what a typo should do.

A Streams application's internal topics are named ``<application.id>-...`` and end in
``-changelog``, ``-repartition``, ``-subscription-registration-topic`` or
``-subscription-response-topic`` (or the foreign-key join
``-KTABLE-FK-JOIN-SUBSCRIPTION-...-<n>-topic`` forms): :func:`is_internal_topic`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from operations.errors import Refused

INTERNAL_PREFIX = "__"
KAFKA_INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state", "__share_group_state", "__cluster_metadata",
                         "__remote_log_metadata")
"""Kafka's own internal topics (for documentation and tests: :func:`is_kafka_internal_topic` decides)."""
_INTERNAL_SUFFIXES = ("-changelog", "-repartition", "-subscription-registration-topic", "-subscription-response-topic")
_FK_JOIN = re.compile(r".+-KTABLE-FK-JOIN-SUBSCRIPTION-(REGISTRATION|RESPONSE)-\d+-topic\Z")


def is_kafka_internal_topic(topic: str) -> bool:
    return topic.startswith(INTERNAL_PREFIX)


def refuse_internal_topics(topics: Iterable[str], include_internal: bool, action: str) -> None:
    """:class:`Refused` naming the internal topics among ``topics`` unless ``include_internal``."""
    internal = sorted({t for t in topics if is_kafka_internal_topic(t)})
    if internal and not include_internal:
        shown = ", ".join(internal[:5]) + (f" and {len(internal) - 5} more" if len(internal) > 5 else "")
        raise Refused(f"{shown}: {action} refused on Kafka's internal topic(s) (names starting with "
                      f"{INTERNAL_PREFIX}); nothing changed (add --include-internal if you really mean it)")


def is_internal_topic(application_id: str, topic: str) -> bool:
    """Whether ``topic`` is named as an internal topic of the Streams application ``application_id``
    (whose it is when application ids are prefixes of each other:
    :func:`operations.streams_reset_plan.topic_owners`)."""
    return topic.startswith(application_id + "-") and (topic.endswith(_INTERNAL_SUFFIXES) or bool(_FK_JOIN.match(topic)))
