"""Kafka clients and the batched reads shared by collectors, operations and the dashboard."""
