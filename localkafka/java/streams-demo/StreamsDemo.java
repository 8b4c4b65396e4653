package kpulse.demo;

import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * The demo Kafka Streams application of kpulse.
 *
 * <p>Topology, chosen so the application owns every kind of topic a Streams reset must handle:
 * <pre>
 *   demo.orders (input, value "region,customer,amount")
 *     -> re-key by region -> demo.orders-by-region (intermediate: written and read by this app)
 *     -> group by customer (internal repartition topic kpulse-demo-streams-by-customer-repartition)
 *     -> count into store "order-counts" (internal changelog kpulse-demo-streams-order-counts-changelog)
 *     -> demo.order-counts (output)
 * </pre>
 * Each state transition is printed as {@code STATE from -> to} so the log tells the story too.
 *
 * <p>Usage: {@code StreamsDemo BOOTSTRAP INSTANCE STATE_DIR [APPLICATION_ID GROUP_PROTOCOL TOPIC_PREFIX]}:
 * the optional three run the same topology as another application, on {@code group.protocol}
 * {@code classic} (the default) or {@code streams} (KIP-1071), with its topics named
 * {@code TOPIC_PREFIX + "orders"}, {@code "orders-by-region"} and {@code "order-counts"}.
 */
public final class StreamsDemo {
    public static final String APPLICATION_ID = "kpulse-demo-streams";

    public static void main(String[] args) throws InterruptedException {
        if (args.length != 3 && args.length != 6) {
            System.err.println("usage: StreamsDemo BOOTSTRAP INSTANCE STATE_DIR [APPLICATION_ID GROUP_PROTOCOL TOPIC_PREFIX]");
            System.exit(2);
        }
        String applicationId = args.length == 6 ? args[3] : APPLICATION_ID;
        String groupProtocol = args.length == 6 ? args[4] : "classic";
        String prefix = args.length == 6 ? args[5] : "demo.";
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, groupProtocol);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(StreamsConfig.CLIENT_ID_CONFIG, applicationId + "-" + args[1]);
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[2]);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 1000);
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 3);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        if (groupProtocol.equals("classic")) {  // a streams group's session timeout is the broker's (group config)
            props.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 10000);
        }

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(prefix + "orders", Consumed.with(Serdes.String(), Serdes.String()))
            .filter((key, value) -> value != null && value.split(",").length == 3)
            .map((key, value) -> KeyValue.pair(value.split(",")[0], value))
            .to(prefix + "orders-by-region", Produced.with(Serdes.String(), Serdes.String()));
        builder.stream(prefix + "orders-by-region", Consumed.with(Serdes.String(), Serdes.String()))
            .groupBy((region, value) -> value.split(",")[1], Grouped.as("by-customer"))
            .count(Materialized.as("order-counts"))
            .toStream()
            .mapValues(count -> Long.toString(count))
            .to(prefix + "order-counts", Produced.with(Serdes.String(), Serdes.String()));

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        streams.setStateListener((to, from) ->
            System.out.println("STATE " + from + " -> " + to));
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(20));
            stopped.countDown();
        }, "shutdown"));
        streams.start();
        stopped.await();
    }
}
