"""Demo worker processes: ``python -m localkafka.demo.workers producer|consumer ...``. (The share
consumers are Java, ``kpulse.demo.ShareDemo``: librdkafka's share consumer is a preview.)

Each runs until SIGTERM, then closes its client cleanly (a consumer leaves its group)."""

from __future__ import annotations

import argparse
import random
import signal
import time

from confluent_kafka import Consumer, KafkaException, Producer

from localkafka.demo.topology import ORDER_TOPICS

REGIONS = ("emea", "amer", "apac")


class _Stop:
    requested = False

    @classmethod
    def install(cls) -> None:
        def handler(signum, frame):
            cls.requested = True

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)


def order_value(rng: random.Random) -> str:
    return f"{rng.choice(REGIONS)},customer-{rng.randrange(50)},{rng.randrange(1, 500)}"


def run_producer(bootstrap: str, topics: list[tuple[str, float]]) -> None:
    """Write to every topic at its rate, forever."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20,
                         "client.id": "kpulse-demo-producer"})
    rng = random.Random()
    next_send = {topic: time.monotonic() for topic, _ in topics}
    sequence = 0
    while not _Stop.requested:
        now = time.monotonic()
        for topic, rate in topics:
            while next_send[topic] <= now:
                sequence += 1
                value = order_value(rng) if topic in ORDER_TOPICS else f"event-{sequence}"
                try:
                    producer.produce(topic, key=f"k{sequence % 97}", value=value)
                except BufferError:
                    producer.poll(0.5)
                next_send[topic] += 1.0 / rate
        producer.poll(0.05)
    producer.flush(10)


def consumer_config(bootstrap: str, group: str, protocol: str) -> dict[str, object]:
    """``protocol`` ``classic`` or ``consumer`` (KIP-848). With ``consumer`` the broker owns the
    session timeout, heartbeat interval and assignor: librdkafka refuses those settings."""
    config: dict[str, object] = {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                                 "enable.auto.commit": True, "auto.commit.interval.ms": 1000,
                                 "client.id": f"kpulse-demo-{group}", "group.protocol": protocol}
    if protocol == "classic":
        config["session.timeout.ms"] = 10000
    return config


def run_consumer(bootstrap: str, group: str, topic: str, max_rate: float | None, stop_after: int | None,
                 protocol: str = "classic") -> None:
    consumer = Consumer(consumer_config(bootstrap, group, protocol))
    consumer.subscribe([topic])
    consumed = 0
    try:
        while not _Stop.requested:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                continue
            consumed += 1
            if max_rate:
                time.sleep(1.0 / max_rate)
            if stop_after is not None and consumed >= stop_after:
                consumer.commit(asynchronous=False)
                break
    except KafkaException:
        pass
    finally:
        consumer.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m localkafka.demo.workers")
    roles = parser.add_subparsers(dest="role", required=True)
    producer = roles.add_parser("producer")
    producer.add_argument("--bootstrap", required=True)
    producer.add_argument("--topic", action="append", required=True, help="TOPIC:MESSAGES_PER_SECOND")
    consumer = roles.add_parser("consumer")
    consumer.add_argument("--bootstrap", required=True)
    consumer.add_argument("--group", required=True)
    consumer.add_argument("--topic", required=True)
    consumer.add_argument("--max-rate", type=float)
    consumer.add_argument("--stop-after", type=int)
    consumer.add_argument("--protocol", choices=("classic", "consumer"), default="classic",
                          help="group.protocol: classic, or consumer (KIP-848)")
    args = parser.parse_args(argv)
    _Stop.install()
    if args.role == "producer":
        topics = [(t.rsplit(":", 1)[0], float(t.rsplit(":", 1)[1])) for t in args.topic]
        run_producer(args.bootstrap, topics)
    else:
        run_consumer(args.bootstrap, args.group, args.topic, args.max_rate, args.stop_after, args.protocol)


if __name__ == "__main__":
    main()
