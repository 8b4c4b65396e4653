"""Kafka client construction shared by every kpulse part that talks to a cluster."""

from __future__ import annotations

import logging

_LIBRDKAFKA_LOG = logging.getLogger("kpulse.librdkafka")
_LIBRDKAFKA_LOG.addHandler(logging.NullHandler())
_LIBRDKAFKA_LOG.propagate = False


def admin_client(settings: dict[str, str]):
    """An AdminClient whose librdkafka log lines (connection refused while a broker is down, ...)
    go to the ``kpulse.librdkafka`` logger instead of stderr: kpulse reports failures itself."""
    from confluent_kafka.admin import AdminClient

    return AdminClient({**settings, "logger": _LIBRDKAFKA_LOG})


def error_text(error: BaseException) -> str:
    """One line for a confluent-kafka exception (whose first argument is a KafkaError)."""
    first = error.args[0] if error.args else None
    return first.str() if hasattr(first, "str") else str(error)
