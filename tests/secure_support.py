"""What the secured-cluster tests share: the topics and groups the secured cluster holds (made by
its super user), and configs of kpulse for each identity, right or wrong."""

from __future__ import annotations

from pathlib import Path

from localkafka.secure import IDENTITIES, SecureCluster

TOPIC = "orders"
"""Three partitions, :data:`RECORDS` records, read by both groups up to offset 10 on each partition."""
RECORDS = 100
UNDER_MIN_ISR_TOPIC = "strict"
"""Two partitions of one replica with min.insync.replicas=2: under min ISR for whoever may know it."""
GROUPS = ("team-a-billing", "team-b-audit")
"""The partial identity may describe team-a-* only."""
COMMITTED = 10


def seed(cluster: SecureCluster) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    # of confluent-kafka's value type: its stubs take a dict (invariant), not a Mapping
    settings: dict[str, str | int | float | bool] = {**cluster.admin_settings()}
    admin = AdminClient(settings)
    futures = admin.create_topics([NewTopic(TOPIC, 3, 1),
                                   NewTopic(UNDER_MIN_ISR_TOPIC, 2, 1, config={"min.insync.replicas": "2"})])
    for future in futures.values():
        future.result(timeout=30)
    producer = Producer(settings)
    for i in range(RECORDS):
        producer.produce(TOPIC, str(i).encode(), partition=i % 3)
    assert producer.flush(30) == 0
    for group in GROUPS:
        consumer = Consumer({**settings, "group.id": group, "enable.auto.commit": False})
        consumer.commit(offsets=[TopicPartition(TOPIC, p, COMMITTED) for p in range(3)], asynchronous=False)
        consumer.close()


def forget(cluster: SecureCluster, *, topics: tuple[str, ...] = (), groups: tuple[str, ...] = ()) -> None:
    """Delete what a test made on the shared secured cluster (as the super user): the next modules
    count its topics and groups."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({**cluster.admin_settings()})  # a dict of confluent-kafka's value type (see seed)
    futures = list(admin.delete_consumer_groups(list(groups), request_timeout=20).values()) if groups else []
    futures += list(admin.delete_topics(list(topics), operation_timeout=20).values()) if topics else []
    for future in futures:
        future.result(timeout=30)


def misconfigurations(cluster: SecureCluster) -> dict[str, tuple[str, dict, str]]:
    """Case -> (identity, security overrides, the start of what kpulse must say)."""
    untrusted = cluster.certs / "untrusted"
    return {
        "wrong password": ("reader", {"sasl_password": "not-the-password"},
                           "authentication failed: .*invalid credentials with SASL mechanism SCRAM-SHA-512"),
        "no CA file": ("reader", {"ssl_ca_location": None}, "TLS handshake failed: .*certificate verify failed"),
        "wrong SCRAM mechanism": ("partial", {"sasl_mechanism": "SCRAM-SHA-256"},
                                  "authentication failed: .*SASL mechanism SCRAM-SHA-256"),
        "no client certificate": ("kpulse-mtls", {"ssl_certificate_location": None, "ssl_key_location": None,
                                                  "ssl_key_password": None},
                                  "TLS handshake failed: the broker requires a client certificate and none is "
                                  "configured"),
        "untrusted client certificate": ("kpulse-mtls", {"ssl_certificate_location": str(untrusted / "kpulse-mtls.pem"),
                                                         "ssl_key_location": str(untrusted / "kpulse-mtls.key"),
                                                         "ssl_key_password": None},
                                         "TLS handshake failed: the broker refused the client certificate "
                                         ".*untrusted/kpulse-mtls.pem"),
        "wrong key password": ("kpulse-mtls", {"ssl_key_password": "not-the-key-password"},
                               "cannot read the client key .*kpulse-mtls.key: wrong ssl_key_password"),
    }


def config_for(cluster: SecureCluster, directory: Path, identity: str, **security_overrides) -> Path:
    return cluster.write_config(IDENTITIES[identity], directory / f"kpulse-{identity}.yaml", lake=directory / "lake",
                                **security_overrides)
