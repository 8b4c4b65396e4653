"""Demo worker processes: ``python -m localkafka.demo.workers producer|consumer|poison-consumer ...``.
(The share consumers are Java, ``kpulse.demo.ShareDemo``: librdkafka's share consumer is a preview.)

The poison consumer (:func:`run_poison_consumer`) parses every record as JSON and commits after
each; a record it cannot parse it does not commit: it seeks back to it and retries, forever, so
its group keeps its member and its committed offset while lag grows (STALL). Once the committed
offset is moved past the record (``kpulse skip-records``, with the consumer stopped), it passes it.

Each runs until SIGTERM, then closes its client cleanly (a consumer leaves its group)."""

from __future__ import annotations

import argparse
import json
import random
import sys
import signal
import time

from pathlib import Path

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from localkafka.demo.topology import ORDER_TOPICS, POISON_AFTER, POISON_TOPIC

REGIONS = ("emea", "amer", "apac")
MALFORMED_VALUE = '{"event": "signup", "user": "u-17", "plan"'
"""The malformed record: JSON cut short."""
RETRY_SECONDS = 1.0
"""How long the poison consumer waits before it reads a record it failed on again."""


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


def poison_event(sequence: int) -> str:
    """A well-formed record of :data:`POISON_TOPIC`."""
    return json.dumps({"event": "signup", "user": f"u-{sequence % 50}", "plan": ("free", "team", "pro")[sequence % 3]})


def parse_event(value: bytes | str | None) -> dict:
    """The poison consumer's parse: a JSON object, else ValueError."""
    event = json.loads(value if value is not None else "")
    if not isinstance(event, dict):
        raise ValueError(f"not a JSON object: {type(event).__name__}")
    return event


def run_producer(bootstrap: str, topics: list[tuple[str, float]], poison_marker: Path | None = None) -> None:
    """Write to every topic at its rate, forever. To :data:`POISON_TOPIC`, JSON events and, after
    :data:`POISON_AFTER` of them, the malformed record once: ``poison_marker`` (a file) says it was sent."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20,
                         "client.id": "kpulse-demo-producer"})
    rng = random.Random()
    next_send = {topic: time.monotonic() for topic, _ in topics}
    sequence = 0
    poison_events = 0
    while not _Stop.requested:
        now = time.monotonic()
        for topic, rate in topics:
            while next_send[topic] <= now:
                sequence += 1
                if topic == POISON_TOPIC:
                    value = poison_event(sequence)
                    poison_events += 1
                    if poison_events > POISON_AFTER and poison_marker is not None and not poison_marker.exists():
                        value = MALFORMED_VALUE
                        poison_marker.touch()
                else:
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


def run_poison_consumer(bootstrap: str, group: str, topic: str, protocol: str = "classic") -> None:
    """Parse each record (:func:`parse_event`) and commit it; on one it cannot parse, commit
    nothing, seek back to it and read it again after :data:`RETRY_SECONDS` (module docstring)."""
    config = {**consumer_config(bootstrap, group, protocol), "enable.auto.commit": False}
    consumer = Consumer(config)
    consumer.subscribe([topic])
    failing: tuple[int, int] | None = None
    try:
        while not _Stop.requested:
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            partition, offset = message.partition(), message.offset()
            if partition is None or offset is None:
                continue
            try:
                parse_event(message.value())
            except ValueError as error:
                if (partition, offset) != failing:  # said once per record, not at every retry
                    print(f"cannot parse {topic}-{partition} offset {offset}: {error}; retrying", file=sys.stderr,
                          flush=True)
                    failing = (partition, offset)
                consumer.seek(TopicPartition(topic, partition, offset))
                time.sleep(RETRY_SECONDS)
                continue
            failing = None
            try:
                consumer.commit(message=message, asynchronous=False)
            except KafkaException:  # a rebalance or a moving coordinator: the next commit covers this one
                continue
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
    producer.add_argument("--poison-marker", type=Path,
                          help=f"send the malformed record to {POISON_TOPIC} once: this file says it was sent")
    consumer = roles.add_parser("consumer")
    consumer.add_argument("--bootstrap", required=True)
    consumer.add_argument("--group", required=True)
    consumer.add_argument("--topic", required=True)
    consumer.add_argument("--max-rate", type=float)
    consumer.add_argument("--stop-after", type=int)
    consumer.add_argument("--protocol", choices=("classic", "consumer"), default="classic",
                          help="group.protocol: classic, or consumer (KIP-848)")
    poison = roles.add_parser("poison-consumer", help="parses JSON, retries a record it cannot parse")
    poison.add_argument("--bootstrap", required=True)
    poison.add_argument("--group", required=True)
    poison.add_argument("--topic", required=True)
    poison.add_argument("--protocol", choices=("classic", "consumer"), default="classic")
    args = parser.parse_args(argv)
    _Stop.install()
    if args.role == "producer":
        topics = [(t.rsplit(":", 1)[0], float(t.rsplit(":", 1)[1])) for t in args.topic]
        run_producer(args.bootstrap, topics, args.poison_marker)
    elif args.role == "poison-consumer":
        run_poison_consumer(args.bootstrap, args.group, args.topic, args.protocol)
    else:
        run_consumer(args.bootstrap, args.group, args.topic, args.max_rate, args.stop_after, args.protocol)


if __name__ == "__main__":
    main()
