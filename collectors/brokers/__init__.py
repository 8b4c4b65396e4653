"""Broker metrics from the JMX exporters or Prometheus."""
