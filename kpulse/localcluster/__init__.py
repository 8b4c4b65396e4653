"""The embedded local Kafka cluster: three KRaft nodes on 127.0.0.1 with the JMX exporter agent."""
