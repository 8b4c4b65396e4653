"""Kafka Streams applications: state and transitions."""
