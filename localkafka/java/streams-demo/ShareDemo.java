package kpulse.demo;

import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * A share consumer of the kpulse demo (queues for Kafka, KIP-932): one member of a share group.
 *
 * <p>Usage: {@code ShareDemo BOOTSTRAP GROUP TOPIC ACK_DELAY_MS [CLIENT_ID]}. Acknowledgement is
 * explicit: every record is accepted {@code ACK_DELAY_MS} after it was received, and the
 * acknowledgements of a poll are committed before the next poll. With a delay the consumer asks
 * for at most {@value #SLOW_MAX_RECORDS} records a poll ({@code share.acquire.mode=record_limit}),
 * so a poll's records are acknowledged well within the broker's acquisition lock (30 s by
 * default) and are never redelivered to the other members; the records it holds are the share
 * group's lag that the official {@code kafka-share-groups --describe} shows.
 *
 * <p>Where the group starts (the group config {@code share.auto.offset.reset}) is the group's
 * business, not this consumer's: the demo sets it before the members start.
 *
 * <p>Prints {@code ACQUIRED n records from partitions [..]} per poll that returned records when it
 * acknowledges slowly, and a {@code ACKNOWLEDGED n records in total} line every 10 s either way.
 */
public final class ShareDemo {
    static final int SLOW_MAX_RECORDS = 5;

    public static void main(String[] args) throws InterruptedException {
        if (args.length != 4 && args.length != 5) {
            System.err.println("usage: ShareDemo BOOTSTRAP GROUP TOPIC ACK_DELAY_MS [CLIENT_ID]");
            System.exit(2);
        }
        String group = args[1];
        String topic = args[2];
        long ackDelayMs = Long.parseLong(args[3]);
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, args.length == 5 ? args[4] : group + "-" + ackDelayMs + "ms");
        props.put(ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, "explicit");
        if (ackDelayMs > 0) {
            props.put(ConsumerConfig.SHARE_ACQUIRE_MODE_CONFIG, "record_limit");
            props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, SLOW_MAX_RECORDS);
        }

        KafkaShareConsumer<String, String> consumer =
            new KafkaShareConsumer<>(props, new StringDeserializer(), new StringDeserializer());
        AtomicBoolean stopping = new AtomicBoolean(false);
        CountDownLatch closed = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stopping.set(true);
            consumer.wakeup();
            try {
                closed.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "shutdown"));

        consumer.subscribe(List.of(topic));
        System.out.println("SUBSCRIBED group " + group + " topic " + topic + ", acknowledging each record after "
            + ackDelayMs + " ms");
        long acknowledged = 0;
        long nextReport = System.currentTimeMillis() + 10_000;
        try {
            while (!stopping.get()) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(500));
                if (ackDelayMs > 0 && !records.isEmpty()) {
                    TreeSet<Integer> partitions = new TreeSet<>();
                    records.partitions().forEach(p -> partitions.add(p.partition()));
                    System.out.println("ACQUIRED " + records.count() + " records from partitions " + partitions);
                }
                for (ConsumerRecord<String, String> record : records) {
                    if (stopping.get()) {
                        break;  // the records not acknowledged go back to the group on close
                    }
                    if (ackDelayMs > 0) {
                        Thread.sleep(ackDelayMs);
                    }
                    consumer.acknowledge(record, AcknowledgeType.ACCEPT);
                    acknowledged++;
                }
                if (!records.isEmpty()) {
                    consumer.commitSync();
                }
                if (System.currentTimeMillis() >= nextReport) {
                    System.out.println("ACKNOWLEDGED " + acknowledged + " records in total");
                    nextReport += 10_000;
                }
            }
        } catch (WakeupException | InterruptedException e) {
            // stopping: what was acknowledged is committed by close()
        } finally {
            consumer.close(Duration.ofSeconds(20));
            System.out.println("CLOSED after acknowledging " + acknowledged + " records");
            closed.countDown();
        }
    }
}
