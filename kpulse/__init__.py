"""kpulse: monitor Apache Kafka clusters and Kafka Streams applications, and act on what you see."""

__version__ = "0.1.0"
