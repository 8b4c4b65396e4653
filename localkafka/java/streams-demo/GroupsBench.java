package kpulse.demo;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;

/**
 * The modern groups of the lag collection bench ({@code bench/lag_collection.py --streams-groups N
 * --share-groups M}), all in ONE JVM: N Kafka Streams applications on {@code group.protocol=streams}
 * (KIP-1071) and M share consumers (KIP-932), each the one member of its group; and the members of
 * the Stable classic groups of the scale bench ({@code bench/scale_state.py}).
 *
 * <p>Usage: {@code GroupsBench BOOTSTRAP STATE_DIR STREAMS_TOPICS SHARE_TOPICS [CLASSIC_GROUPS]}, the
 * topic lists comma-separated (empty for none): Streams app i ({@code bench-streams-NNN}, NNN = i on
 * three digits) reads the i-th of STREAMS_TOPICS, share group i ({@code bench-share-NNN}) the i-th of
 * SHARE_TOPICS. CLASSIC_GROUPS, comma-separated {@code GROUP:TOPIC+TOPIC...}: one classic consumer
 * ({@code group.protocol=classic}) per group, subscribed to its topics, that never commits (the
 * group's committed offsets stay as the bench planned them).
 *
 * <ul>
 *   <li>A Streams app's topology is one source and a {@code foreach}: no state store, no
 *   repartition, so no internal topics; one stream thread, small buffers.</li>
 *   <li>The classic consumers are polled in turn by one thread ({@code poll(0)}: their heartbeat
 *   threads keep them in their groups), with small fetch buffers and auto commit off.</li>
 *   <li>Each share group gets the group config {@code share.auto.offset.reset=earliest} (Admin
 *   incrementalAlterConfigs) before its member starts, so it reads the topic's records; the member
 *   polls in a loop of its own and acknowledges implicitly (each poll accepts the records of the
 *   previous one).</li>
 * </ul>
 *
 * <p>Prints {@code READY} once every Streams app is RUNNING, every share group has its member
 * (Admin describeShareGroups) and every classic group is Stable with its member (describeConsumerGroups), then runs until SIGTERM, which closes everything (members leave
 * their groups) and prints {@code CLOSED}.
 */
public final class GroupsBench {
    static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(30);
    static final long READY_TIMEOUT_MS = 540_000;  // under the bench's 600 s

    public static void main(String[] args) throws Exception {
        try {
            run(args);
        } catch (Exception e) {
            // the members' threads would keep the JVM alive: stop it (the shutdown hook closes them)
            e.printStackTrace();
            System.exit(1);
        }
    }

    static void run(String[] args) throws Exception {
        if (args.length != 4 && args.length != 5) {
            System.err.println("usage: GroupsBench BOOTSTRAP STATE_DIR STREAMS_TOPICS SHARE_TOPICS [CLASSIC_GROUPS]");
            System.exit(2);
        }
        String bootstrap = args[0];
        Path stateDir = Path.of(args[1]);
        List<String> streamsTopics = topics(args[2]);
        List<String> shareTopics = topics(args[3]);
        Map<String, List<String>> classicGroups = classicGroups(args.length == 5 ? args[4] : "");

        AtomicBoolean stopping = new AtomicBoolean(false);
        List<KafkaStreams> apps = new ArrayList<>();
        List<KafkaShareConsumer<byte[], byte[]>> shareConsumers = new ArrayList<>();
        List<Thread> pollers = new ArrayList<>();
        List<KafkaConsumer<byte[], byte[]>> classicConsumers = new ArrayList<>();
        CountDownLatch closed = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stopping.set(true);
            close(apps, shareConsumers, pollers, classicConsumers);
            System.out.println("CLOSED");
            System.out.flush();
            closed.countDown();
        }, "shutdown"));

        List<String> shareGroups = new ArrayList<>();
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            for (int i = 0; i < shareTopics.size(); i++) {
                shareGroups.add(String.format("bench-share-%03d", i));
            }
            setEarliest(admin, shareGroups);
            for (int i = 0; i < streamsTopics.size() && !stopping.get(); i++) {
                KafkaStreams app = streamsApp(bootstrap, stateDir, String.format("bench-streams-%03d", i),
                    streamsTopics.get(i));
                synchronized (apps) {
                    apps.add(app);
                }
                app.start();
            }
            for (int i = 0; i < shareTopics.size() && !stopping.get(); i++) {
                KafkaShareConsumer<byte[], byte[]> consumer = shareConsumer(bootstrap, shareGroups.get(i));
                consumer.subscribe(List.of(shareTopics.get(i)));
                Thread poller = new Thread(() -> poll(consumer, stopping), shareGroups.get(i));
                synchronized (shareConsumers) {
                    shareConsumers.add(consumer);
                    pollers.add(poller);
                }
                poller.start();
            }
            if (!classicGroups.isEmpty() && !stopping.get()) {
                for (Map.Entry<String, List<String>> group : classicGroups.entrySet()) {
                    KafkaConsumer<byte[], byte[]> consumer = classicConsumer(bootstrap, group.getKey());
                    consumer.subscribe(group.getValue());
                    classicConsumers.add(consumer);
                }
                Thread poller = new Thread(() -> pollClassic(classicConsumers, stopping), "classic-members");
                synchronized (shareConsumers) {
                    pollers.add(poller);
                }
                poller.start();
            }
            waitUntilReady(admin, apps, shareGroups, new ArrayList<>(classicGroups.keySet()), stopping);
        }
        if (!stopping.get()) {
            System.out.println("READY " + streamsTopics.size() + " Streams groups, " + shareTopics.size()
                + " share groups, " + classicGroups.size() + " Stable classic groups");
            System.out.flush();
        }
        closed.await();
    }

    static List<String> topics(String list) {
        return list.isEmpty() ? List.of() : Arrays.asList(list.split(","));
    }

    /** {@code GROUP:TOPIC+TOPIC,...} -> group -> its topics, in the order given. */
    static Map<String, List<String>> classicGroups(String list) {
        Map<String, List<String>> groups = new java.util.LinkedHashMap<>();
        for (String entry : topics(list)) {
            int colon = entry.lastIndexOf(':');
            groups.put(entry.substring(0, colon), Arrays.asList(entry.substring(colon + 1).split("\\+")));
        }
        return groups;
    }

    static KafkaConsumer<byte[], byte[]> classicConsumer(String bootstrap, String group) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, group);
        props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, 4096);
        props.put(ConsumerConfig.FETCH_MAX_BYTES_CONFIG, 65536);
        props.put(ConsumerConfig.RECEIVE_BUFFER_CONFIG, 65536);
        return new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    /** Poll every classic consumer in turn until stopping (each then closes: it leaves its group). */
    static void pollClassic(List<KafkaConsumer<byte[], byte[]>> consumers, AtomicBoolean stopping) {
        try {
            while (!stopping.get()) {
                for (KafkaConsumer<byte[], byte[]> consumer : consumers) {
                    consumer.poll(Duration.ZERO);
                }
                Thread.sleep(200);
            }
        } catch (WakeupException | InterruptedException e) {
            // stopping
        } finally {
            List<Thread> closers = new ArrayList<>();
            for (KafkaConsumer<byte[], byte[]> consumer : consumers) {
                Thread closer = new Thread(() -> consumer.close(CLOSE_TIMEOUT));
                closer.start();
                closers.add(closer);
            }
            joinAll(closers);
        }
    }

    static void setEarliest(Admin admin, List<String> groups) throws Exception {
        if (groups.isEmpty()) {
            return;
        }
        Map<ConfigResource, java.util.Collection<AlterConfigOp>> configs = new HashMap<>();
        for (String group : groups) {
            configs.put(new ConfigResource(ConfigResource.Type.GROUP, group), List.of(new AlterConfigOp(
                new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET)));
        }
        admin.incrementalAlterConfigs(configs).all().get(60, TimeUnit.SECONDS);
    }

    static KafkaStreams streamsApp(String bootstrap, Path stateDir, String applicationId, String topic)
            throws Exception {
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.CLIENT_ID_CONFIG, applicationId);
        Path dir = stateDir.resolve(applicationId);
        Files.createDirectories(dir);
        props.put(StreamsConfig.STATE_DIR_CONFIG, dir.toString());
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 5000);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.BUFFERED_RECORDS_PER_PARTITION_CONFIG, 100);
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG), 65536);
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.FETCH_MAX_BYTES_CONFIG), 1048576);
        props.put(StreamsConfig.producerPrefix(ProducerConfig.BUFFER_MEMORY_CONFIG), 1048576);
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(topic, Consumed.with(Serdes.ByteArray(), Serdes.ByteArray())).foreach((key, value) -> { });
        return new KafkaStreams(builder.build(), props);
    }

    static KafkaShareConsumer<byte[], byte[]> shareConsumer(String bootstrap, String group) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, group);
        props.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, 65536);
        props.put(ConsumerConfig.FETCH_MAX_BYTES_CONFIG, 1048576);
        return new KafkaShareConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    /** Poll until stopping; implicit acknowledgement: each poll accepts the records of the one before. */
    static void poll(KafkaShareConsumer<byte[], byte[]> consumer, AtomicBoolean stopping) {
        try {
            while (!stopping.get()) {
                consumer.poll(Duration.ofMillis(1000));
            }
        } catch (WakeupException e) {
            // stopping
        } finally {
            consumer.close(CLOSE_TIMEOUT);
        }
    }

    static void waitUntilReady(Admin admin, List<KafkaStreams> apps, List<String> shareGroups,
                               List<String> classicGroups, AtomicBoolean stopping) throws Exception {
        long deadline = System.currentTimeMillis() + READY_TIMEOUT_MS;
        while (!stopping.get()) {
            long running = apps.stream().filter(app -> app.state() == KafkaStreams.State.RUNNING).count();
            long joined = 0;
            for (KafkaFuture<ShareGroupDescription> described
                    : admin.describeShareGroups(shareGroups).describedGroups().values()) {
                try {
                    joined += described.get(60, TimeUnit.SECONDS).members().size() == 1 ? 1 : 0;
                } catch (ExecutionException e) {
                    if (!(e.getCause() instanceof GroupIdNotFoundException)) {
                        throw e;
                    }  // the member has not joined yet: its group does not exist before
                }
            }
            long stable = 0;
            if (!classicGroups.isEmpty()) {
                for (KafkaFuture<ConsumerGroupDescription> described
                        : admin.describeConsumerGroups(classicGroups).describedGroups().values()) {
                    ConsumerGroupDescription group = described.get(60, TimeUnit.SECONDS);
                    stable += group.groupState() == GroupState.STABLE && !group.members().isEmpty() ? 1 : 0;
                }
            }
            if (running == apps.size() && joined == shareGroups.size() && stable == classicGroups.size()) {
                return;
            }
            if (System.currentTimeMillis() > deadline) {
                System.err.println("NOT READY after " + READY_TIMEOUT_MS / 1000 + " s: " + running + "/" + apps.size()
                    + " Streams apps RUNNING, " + joined + "/" + shareGroups.size() + " share groups with a member, "
                    + stable + "/" + classicGroups.size() + " classic groups Stable");
                System.exit(1);
            }
            Thread.sleep(1000);
        }
    }

    /** Close every member at once (each leaves its group): one after the other would take minutes. */
    static void close(List<KafkaStreams> apps, List<KafkaShareConsumer<byte[], byte[]>> shareConsumers,
                      List<Thread> pollers, List<KafkaConsumer<byte[], byte[]>> classicConsumers) {
        List<Thread> closers = new ArrayList<>();
        synchronized (apps) {
            for (KafkaStreams app : apps) {
                Thread closer = new Thread(() -> app.close(CLOSE_TIMEOUT));
                closer.start();
                closers.add(closer);
            }
        }
        synchronized (shareConsumers) {
            shareConsumers.forEach(KafkaShareConsumer::wakeup);  // each poller closes its own consumer
            classicConsumers.forEach(KafkaConsumer::wakeup);  // their poller closes them
            closers.addAll(pollers);
        }
        joinAll(closers);
    }

    /** Wait for each closing thread (a close takes at most CLOSE_TIMEOUT); stop waiting if interrupted. */
    static void joinAll(List<Thread> closers) {
        for (Thread closer : closers) {
            try {
                closer.join(CLOSE_TIMEOUT.toMillis() + 5000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }
}
