"""The demo workload: steady producers, a healthy, a slow and a stopped consumer group, a real
Kafka Streams application in two instances, and one group of each modern kind (a KIP-848 consumer
group, the Streams app again as a KIP-1071 Streams group, a share group with a slow member), so
every page of kpulse has something to show."""
