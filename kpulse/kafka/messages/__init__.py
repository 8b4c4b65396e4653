"""Kafka protocol messages kafka-python does not define yet, built from Kafka's own JSON message
specs (``common/message/*.json`` of kafka-clients 4.3.1, Apache License 2.0, kept byte for byte
beside this file; ``tests/test_group_messages.py`` compares them with the jar the local cluster
runs).

kafka-python builds a message class from the JSON file named as the class
(``ApiMessage`` with ``load_json=<this package>``): the classes below are its own kind, sent through
the same connections, with the versions the brokers announce in ApiVersions. What a broker does not
speak (an older Kafka, where Streams or share groups do not exist) is told by
``manager.broker_version_data.api_version(Request) < 0`` before anything is sent.

| API key | request | what it does |
|---|---|---|
| 69 | ConsumerGroupDescribe | a KIP-848 consumer group: epochs, members, current and target assignments |
| 77 | ShareGroupDescribe | a share group (KIP-932): members and their assignments |
| 89 | StreamsGroupDescribe | a Streams group (KIP-1071): topology, members, tasks |
| 90 | DescribeShareGroupOffsets | a share group's start offset and lag per partition, as the broker counts them |
| 91 | AlterShareGroupOffsets | set a share group's start offsets (the group must be empty) |
| 92 | DeleteShareGroupOffsets | forget a share group's start offsets of some topics |
"""

from __future__ import annotations

import sys

from kafka.protocol.api_message import ApiMessage

_HERE = sys.modules[__name__]

# kafka-python has no type information: to the checker ApiMessage is Any, whose class keyword
# (load_json) it does not know

class ConsumerGroupDescribeRequest(ApiMessage, load_json=_HERE): pass  # type: ignore[misc, call-arg]
class ConsumerGroupDescribeResponse(ApiMessage, load_json=_HERE): pass  # type: ignore[misc, call-arg]
class StreamsGroupDescribeRequest(ApiMessage, load_json=_HERE): pass  # type: ignore[misc, call-arg]
class StreamsGroupDescribeResponse(ApiMessage, load_json=_HERE): pass  # type: ignore[misc, call-arg]
class ShareGroupDescribeRequest(ApiMessage, load_json=_HERE): pass  # type: ignore[misc, call-arg]
class ShareGroupDescribeResponse(ApiMessage, load_json=_HERE): pass  # type: ignore[misc, call-arg]
class DescribeShareGroupOffsetsRequest(ApiMessage, load_json=_HERE): pass  # type: ignore[misc, call-arg]
class DescribeShareGroupOffsetsResponse(ApiMessage, load_json=_HERE): pass  # type: ignore[misc, call-arg]
class AlterShareGroupOffsetsRequest(ApiMessage, load_json=_HERE): pass  # type: ignore[misc, call-arg]
class AlterShareGroupOffsetsResponse(ApiMessage, load_json=_HERE): pass  # type: ignore[misc, call-arg]
class DeleteShareGroupOffsetsRequest(ApiMessage, load_json=_HERE): pass  # type: ignore[misc, call-arg]
class DeleteShareGroupOffsetsResponse(ApiMessage, load_json=_HERE): pass  # type: ignore[misc, call-arg]


REQUESTS: tuple[type, ...] = (
    ConsumerGroupDescribeRequest, StreamsGroupDescribeRequest, ShareGroupDescribeRequest,
    DescribeShareGroupOffsetsRequest, AlterShareGroupOffsetsRequest, DeleteShareGroupOffsetsRequest)
"""Every request defined here (its response is the class of the same name ending in Response)."""

__all__ = [cls.__name__ for cls in REQUESTS] + [cls.__name__.replace("Request", "Response") for cls in REQUESTS]
