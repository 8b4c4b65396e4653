"""Kafka on this machine: the Java side from Maven Central, the official tools, the local cluster and the demo workload."""
