"""The protocol messages kpulse adds to kafka-python (``kpulse/kafka/messages``) are Kafka's own
specs, and the brokers of the local cluster speak them."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from kpulse.kafka import messages
from kpulse.kafka.messages import REQUESTS, ShareGroupDescribeRequest, StreamsGroupDescribeRequest
from localkafka.runtime import ensure_runtime

SPECS = Path(messages.__file__).parent


def test_every_vendored_spec_is_byte_identical_to_the_one_in_the_kafka_clients_jar():
    [jar] = [jar for jar in ensure_runtime().jars() if Path(jar).name.startswith("kafka-clients-")]
    with zipfile.ZipFile(jar) as archive:
        for spec in sorted(SPECS.glob("*.json")):
            assert archive.read(f"common/message/{spec.name}") == spec.read_bytes(), spec.name
    names = {spec.stem for spec in SPECS.glob("*.json")}
    assert names == {cls.__name__ for cls in REQUESTS} | {cls.__name__.replace("Request", "Response") for cls in REQUESTS}


@pytest.mark.cluster
def test_the_brokers_speak_every_added_request_and_answer_an_unknown_group_with_an_error_code(bootstrap):
    from kafka.admin import KafkaAdminClient

    client = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kpulse-test-messages")
    try:
        manager = client._manager
        assert {cls.__name__: manager.broker_version_data.api_version(cls) >= 0 for cls in REQUESTS} == \
            {cls.__name__: True for cls in REQUESTS}

        async def describe():
            await manager.cluster.refresh_metadata()
            node = manager.cluster.brokers().pop().node_id
            streams = await manager.send(StreamsGroupDescribeRequest(group_ids=["kpulse-no-such-group"],
                                                                     include_authorized_operations=False), node_id=node)
            share = await manager.send(ShareGroupDescribeRequest(group_ids=["kpulse-no-such-group"],
                                                                 include_authorized_operations=False), node_id=node)
            return streams, share

        streams, share = manager.run(describe)
    finally:
        client.close()
    # NOT_COORDINATOR (16) from a broker that is not the group's coordinator, else GROUP_ID_NOT_FOUND (69)
    assert streams.groups[0].group_id == share.groups[0].group_id == "kpulse-no-such-group"
    assert streams.groups[0].error_code in (16, 69) and share.groups[0].error_code in (16, 69)
