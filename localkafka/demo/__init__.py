"""The demo workload: steady producers, a healthy, a slow and a stopped consumer group, and a real
Kafka Streams application in two instances, so every page of kpulse has something to show."""
