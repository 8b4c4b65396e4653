import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;

/**
 * A Kafka Streams application on the streams rebalance protocol (KIP-1071, group.protocol=streams),
 * for tests: its group is a streams group, which librdkafka neither lists nor describes (it shows
 * it as Dead, with no members, while it runs). Internal topics: APP-by-value-repartition and
 * APP-counts-changelog.
 *
 * <p>Usage: {@code StreamsProtocolApp BOOTSTRAP APPLICATION_ID INPUT_TOPIC STATE_DIR}
 */
public final class StreamsProtocolApp {
    public static void main(String[] args) throws InterruptedException {
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[3]);
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 3);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 1000);  // its first commit within seconds, not 30 s

        StreamsBuilder builder = new StreamsBuilder();
        builder.<String, String>stream(args[2])
            .groupBy((key, value) -> value, Grouped.as("by-value"))
            .count(Materialized.as("counts"));
        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        streams.setStateListener((to, from) -> System.out.println("STATE " + from + " -> " + to));
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(10));
            stopped.countDown();
        }, "shutdown"));
        streams.start();
        stopped.await();
    }
}
