"""kafka-python's modules, imported once, from one thread, before the collectors' threads use them.

kpulse imports kafka-python lazily, inside the functions that send its requests, so a command that
never reads a cluster does not pay for it. The collectors run in threads of their own, and
kafka-python's protocol modules import each other in a cycle: two threads importing them for the
first time at once can meet Python's import deadlock detection (``_DeadlockError: deadlock detected
by _ModuleLock('kafka.protocol.consumer')``). The client that import was building then counts as
unbuildable for five minutes (``kpulse/kafka/batched_client.py``), and the share groups collector,
which reads through kafka-python only, is down for that long. :func:`preload` imports every module
kpulse uses (:data:`MODULES`; ``tests/test_kafka_python_imports.py`` keeps the list complete), and
the collection service calls it before it starts the collectors' threads.
"""

from __future__ import annotations

import importlib
import threading

MODULES = (
    "kafka",
    "kafka.admin",
    "kafka.errors",
    "kafka.net.sasl",
    "kafka.net.sasl.oauth",
    "kafka.protocol.admin",
    "kafka.protocol.api_header",
    "kafka.protocol.api_message",
    "kafka.protocol.consumer",
    "kafka.protocol.consumer.metadata",
    "kafka.protocol.metadata",
    "kafka.record.memory_records",
    "kafka.structs",
)
"""Every kafka-python module kpulse imports (its modules and the packages they are in)."""

_IMPORTING = threading.Lock()


def preload() -> None:
    """Import :data:`MODULES` (at once when they are loaded already)."""
    with _IMPORTING:
        for name in MODULES:
            importlib.import_module(name)
