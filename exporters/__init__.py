"""Where the collected data goes besides the lake: the Prometheus exporter and the Kafka sink."""
