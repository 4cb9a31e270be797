package gadget.recorder.examples.kafka;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.GZIPInputStream;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.GroupNotEmptyException;

import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.LongSerializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * The Kafka Streams reference jobs: Gadget's operators written as Kafka Streams topologies,
 * run over the Borg job events by {@link TopologyTestDriver} on real RocksDB stores, no broker:
 *
 * <pre>
 * java -javaagent:gadget-recorder-flink.jar=out=traces,root=STATE_DIR -cp ... \
 *     gadget.recorder.examples.kafka.ReferenceStreams --operator count --input borg-jobs.csv.gz \
 *     --state-dir STATE_DIR
 * </pre>
 *
 * <p>Input: CSV (optionally gzip), key = column 0 (a long), event time = column 1 in
 * microseconds, divided by 1000 into milliseconds (the record's timestamp). Events are sorted
 * stably by time unless {@code --order file}. Values are the event time (a long).
 *
 * <p>{@code --operator count}: {@code groupByKey().count()} into a persistent timestamped
 * key-value store named {@code --store} ({@code counts}), reading topic {@code --topic}
 * ({@code events}), as application {@code --application-id} ({@code gadget-reference-count}). {@code --cache-bytes} sets
 * {@code statestore.cache.max.bytes} (Kafka's default 10 MiB), {@code --commit-interval}
 * {@code commit.interval.ms} (30 s); the test driver commits after every record whatever
 * the interval.
 *
 * <p>{@code --operator aggregate}: {@code groupByKey().aggregate(init, add,
 * Materialized.as(--store))} ({@code aggregates}) with a byte-array value: {@code init} is
 * {@code --initial-bytes} zero bytes (0), {@code add} appends {@code --bytes-per-record} (8)
 * bytes of the record's time, so that a key's aggregate grows with its records (a list of
 * its times; 0 bytes per record keeps a fixed-size aggregate).
 *
 * <p>{@code --operator tumbling-count | hopping-count}: {@code groupByKey().windowedBy(
 * TimeWindows.ofSizeAndGrace(--window, --grace))} (advancing by {@code --advance} for the
 * hopping one) {@code .count()} into a segmented window store named {@code --store}
 * ({@code window-counts}): one RocksDB instance per segment (docs/engines.md).
 * {@code --suppress until-window-closes} follows it with {@code suppress(Suppressed
 * .untilWindowCloses(unbounded()))}, whose buffer is in memory but which makes the count send
 * old values (a read of each window the cache flushes).
 *
 * <p>{@code --operator session-count}: {@code groupByKey().windowedBy(SessionWindows
 * .ofInactivityGapAndGrace(--gap, --grace)).count()} into a segmented session store named
 * {@code --store} ({@code session-counts}); {@code --suppress} as for the time windows.
 *
 * <p>{@code --operator stream-join}: a KStream–KStream inner join, {@code left.join(right, sum,
 * JoinWindows.ofTimeDifferenceAndGrace(--window, --grace), StreamJoined.withStoreName(--store))}
 * ({@code joined}): events whose type (column 2) is in {@code --left-types} ({@code SUBMIT})
 * go to topic {@code --topic}, those in {@code --right-types} ({@code FINISH}) to
 * {@code --right-topic} ({@code finishes}), others nowhere; each side keeps its records in a
 * window store with duplicates.
 *
 * <p>{@code --operator count --regroup-column N} (with {@code --bootstrap}) counts by CSV column
 * N (a string) instead of the key: {@code groupBy((key, group) -> group).count(...)}, through a
 * repartition topic to a second sub-topology (tasks {@code 1_<i>}).
 *
 * <p>With {@code --bootstrap HOST:PORT} the same topology runs as a real {@link KafkaStreams}
 * application against that broker instead of under the test driver: the job creates its input
 * topics ({@code --partitions} each, 1 by default), produces every event to them (the event
 * time as the record's timestamp, the partition the default partitioner gives its key), starts
 * the application ({@code --threads} stream threads, 1 by default,
 * {@code auto.offset.reset=earliest}),
 * waits until it has processed every record and closes it. Such an application commits every
 * {@code --commit-interval} ms of wall-clock time, not per record: where those commits fall
 * among the records depends on timing.
 */
public final class ReferenceStreams {
    private ReferenceStreams() {}

    /** The command line. */
    static final class Settings {
        String operator = "count";
        Path input;
        Path stateDir = Paths.get("kafka-streams-state");
        String order = "by-time";
        int limit = Integer.MAX_VALUE;
        long cacheBytes = 10L * 1024 * 1024;
        long commitInterval = 30_000;
        String applicationId;
        String store;
        String topic = "events";
        long window = 5000;
        long advance = -1;
        long grace = 0;
        long gap = 30_000;
        List<String> leftTypes = List.of("SUBMIT");
        List<String> rightTypes = List.of("FINISH");
        String rightTopic = "finishes";
        String suppress = "none";
        String bootstrap;
        int initialBytes = 0;
        int bytesPerRecord = 8;
        int partitions = 1;
        int threads = 1;
        int regroupColumn = -1;

        static Settings parse(String[] args) {
            Settings s = new Settings();
            for (int i = 0; i < args.length; i++) {
                String flag = args[i];
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException(flag + " needs a value");
                }
                String v = args[++i];
                switch (flag) {
                    case "--operator": s.operator = v; break;
                    case "--input": s.input = Paths.get(v); break;
                    case "--state-dir": s.stateDir = Paths.get(v); break;
                    case "--order": s.order = v; break;
                    case "--limit": s.limit = Integer.parseInt(v); break;
                    case "--cache-bytes": s.cacheBytes = Long.parseLong(v); break;
                    case "--commit-interval": s.commitInterval = Long.parseLong(v); break;
                    case "--application-id": s.applicationId = v; break;
                    case "--store": s.store = v; break;
                    case "--topic": s.topic = v; break;
                    case "--window": s.window = Long.parseLong(v); break;
                    case "--advance": s.advance = Long.parseLong(v); break;
                    case "--grace": s.grace = Long.parseLong(v); break;
                    case "--gap": s.gap = Long.parseLong(v); break;
                    case "--left-types": s.leftTypes = List.of(v.split(",")); break;
                    case "--right-types": s.rightTypes = List.of(v.split(",")); break;
                    case "--right-topic": s.rightTopic = v; break;
                    case "--suppress": s.suppress = v; break;
                    case "--initial-bytes": s.initialBytes = Integer.parseInt(v); break;
                    case "--bootstrap": s.bootstrap = v; break;
                    case "--bytes-per-record": s.bytesPerRecord = Integer.parseInt(v); break;
                    case "--partitions": s.partitions = Integer.parseInt(v); break;
                    case "--threads": s.threads = Integer.parseInt(v); break;
                    case "--regroup-column": s.regroupColumn = Integer.parseInt(v); break;
                    default:
                        throw new IllegalArgumentException("unknown flag " + flag + "; the flags are "
                                + "--operator --input --state-dir --order --limit --cache-bytes --commit-interval "
                                + "--application-id --store --topic --window --advance --grace --gap --suppress "
                                + "--left-types --right-types --right-topic --initial-bytes "
                                + "--bytes-per-record --bootstrap --partitions --threads --regroup-column");
                }
            }
            if (s.input == null) {
                throw new IllegalArgumentException("--input FILE is required (CSV, optionally gzip)");
            }
            if (!s.order.equals("by-time") && !s.order.equals("file")) {
                throw new IllegalArgumentException("--order is by-time or file, not " + s.order);
            }
            if (!s.suppress.equals("none") && !s.suppress.equals("until-window-closes")) {
                throw new IllegalArgumentException(
                        "--suppress is none or until-window-closes, not " + s.suppress);
            }
            if (s.partitions < 1 || s.threads < 1) {
                throw new IllegalArgumentException("--partitions and --threads are at least 1");
            }
            if (s.bootstrap == null && (s.partitions > 1 || s.threads > 1)) {
                throw new IllegalArgumentException("--partitions and --threads need --bootstrap: "
                        + "TopologyTestDriver runs one task on one thread");
            }
            if (s.regroupColumn >= 0 && (!s.operator.equals("count") || s.bootstrap == null)) {
                throw new IllegalArgumentException("--regroup-column is for --operator count "
                        + "with --bootstrap (an application, whose repartition topic a broker holds)");
            }
            if (s.initialBytes < 0 || s.bytesPerRecord < 0) {
                throw new IllegalArgumentException("--initial-bytes and --bytes-per-record are at least 0");
            }
            if (s.store == null) {
                s.store = switch (s.operator) {
                    case "count" -> "counts";
                    case "aggregate" -> "aggregates";
                    case "session-count" -> "session-counts";
                    case "stream-join" -> "joined";
                    default -> "window-counts";
                };
            }
            if (s.applicationId == null) {
                s.applicationId = "gadget-reference-" + s.operator;
            }
            return s;
        }
    }

    /** Input records the topology has taken, counted when a broker runs it. */
    static final AtomicLong PROCESSED = new AtomicLong();

    /**
     * The input topic {@code topic} as a stream of longs; with a broker, each record counted
     * into {@link #PROCESSED} as it enters (the driver needs no count: it returns once a record
     * is processed).
     */
    static KStream<Long, Long> input(StreamsBuilder builder, String topic, Settings s) {
        KStream<Long, Long> stream = builder.stream(topic, Consumed.with(Serdes.Long(), Serdes.Long()));
        return s.bootstrap == null ? stream : stream.peek((key, value) -> PROCESSED.incrementAndGet());
    }

    /**
     * {@code groupBy((key, group) -> group).count()}, the input's values being the field to
     * group by (a string): the records go through the repartition topic
     * {@code <application-id>-<store>-repartition} to the count, in sub-topology 1 (tasks
     * {@code 1_<i>}). Written as the aggregation a count is (the same processor, initial 0,
     * one added per record, a long value), so that the records it takes are counted into
     * {@link #PROCESSED} where the count sees them, behind the repartition topic.
     */
    static void regroupedCount(StreamsBuilder builder, Settings s) {
        builder.stream(s.topic, Consumed.with(Serdes.Long(), Serdes.String()))
                .groupBy((key, group) -> group, Grouped.with(Serdes.String(), Serdes.String()))
                .aggregate(() -> 0L, (group, value, count) -> {
                    PROCESSED.incrementAndGet();
                    return count + 1;
                }, Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as(s.store)
                        .withKeySerde(Serdes.String())
                        .withValueSerde(Serdes.Long()));
    }

    /**
     * An input event: key, event time in ms, type (column 2, empty without one) and the field
     * a regrouping count groups by ({@code --regroup-column}, empty without one).
     */
    record Event(long key, long time, String type, String group) {}

    /** Runs the job. */
    public static void main(String[] args) throws IOException, InterruptedException, ExecutionException {
        Settings s = Settings.parse(args);
        List<Event> events = read(s.input, s.limit, s.regroupColumn);
        if (s.order.equals("by-time")) {
            events.sort(Comparator.comparingLong(Event::time));
        }
        StreamsBuilder builder = new StreamsBuilder();
        switch (s.operator) {
            case "count":
                if (s.regroupColumn >= 0) {
                    regroupedCount(builder, s);
                    break;
                }
                input(builder, s.topic, s)
                        .groupByKey()
                        .count(Materialized.as(s.store));
                break;
            case "aggregate": {
                int initial = s.initialBytes;
                int per = s.bytesPerRecord;
                input(builder, s.topic, s)
                        .groupByKey()
                        .aggregate(() -> new byte[initial], (key, time, aggregate) -> {
                            byte[] next = Arrays.copyOf(aggregate, aggregate.length + per);
                            for (int i = 0; i < per; i++) {
                                next[aggregate.length + i] = (byte) (time >>> (8 * (i % 8)));
                            }
                            return next;
                        }, Materialized.<Long, byte[], KeyValueStore<Bytes, byte[]>>as(s.store)
                                .withKeySerde(Serdes.Long())
                                .withValueSerde(Serdes.ByteArray()));
                break;
            }
            case "tumbling-count":
            case "hopping-count": {
                TimeWindows windows = TimeWindows.ofSizeAndGrace(
                        Duration.ofMillis(s.window), Duration.ofMillis(s.grace));
                if (s.operator.equals("hopping-count")) {
                    windows = windows.advanceBy(Duration.ofMillis(s.advance < 0 ? 1000 : s.advance));
                }
                KTable<Windowed<Long>, Long> counts =
                        input(builder, s.topic, s)
                                .groupByKey()
                                .windowedBy(windows)
                                .count(Materialized.as(s.store));
                if (s.suppress.equals("until-window-closes")) {
                    counts.suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()));
                }
                break;
            }
            case "session-count": {
                KTable<Windowed<Long>, Long> counts =
                        input(builder, s.topic, s)
                                .groupByKey()
                                .windowedBy(SessionWindows.ofInactivityGapAndGrace(
                                        Duration.ofMillis(s.gap), Duration.ofMillis(s.grace)))
                                .count(Materialized.as(s.store));
                if (s.suppress.equals("until-window-closes")) {
                    counts.suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()));
                }
                break;
            }
            case "stream-join": {
                KStream<Long, Long> left =
                        input(builder, s.topic, s);
                KStream<Long, Long> right =
                        input(builder, s.rightTopic, s);
                left.join(right, (l, r) -> l + r,
                        JoinWindows.ofTimeDifferenceAndGrace(
                                Duration.ofMillis(s.window), Duration.ofMillis(s.grace)),
                        StreamJoined.with(Serdes.Long(), Serdes.Long(), Serdes.Long())
                                .withStoreName(s.store));
                break;
            }
            default:
                throw new IllegalArgumentException("unknown operator " + s.operator
                        + "; the operators are count aggregate tumbling-count hopping-count "
                        + "session-count stream-join");
        }
        Topology topology = builder.build();
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, s.applicationId);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
        props.put(StreamsConfig.STATE_DIR_CONFIG, s.stateDir.toAbsolutePath().toString());
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, s.cacheBytes);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, s.commitInterval);
        long started = System.nanoTime();
        if (s.bootstrap != null) {
            long records = runApplication(topology, props, events, s);
            long ms = Math.max(1, (System.nanoTime() - started) / 1_000_000);
            System.err.printf("%s: %d records through a KafkaStreams application in %d ms%n",
                    s.operator, records, ms);
            return;
        }
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props)) {
            TestInputTopic<Long, Long> topic = driver.createInputTopic(s.topic,
                    new LongSerializer(), new LongSerializer());
            if (s.operator.equals("stream-join")) {
                TestInputTopic<Long, Long> right = driver.createInputTopic(s.rightTopic,
                        new LongSerializer(), new LongSerializer());
                for (Event e : events) {
                    if (s.leftTypes.contains(e.type())) {
                        topic.pipeInput(e.key(), e.time(), e.time());
                    } else if (s.rightTypes.contains(e.type())) {
                        right.pipeInput(e.key(), e.time(), e.time());
                    }
                }
            } else {
                for (Event e : events) {
                    topic.pipeInput(e.key(), e.time(), e.time());
                }
            }
        }
        long ms = Math.max(1, (System.nanoTime() - started) / 1_000_000);
        // on stderr: stdout belongs to whoever runs the job (gadget record --json)
        System.err.printf("%s: %d events in %d ms (%.0f events/s)%n",
                s.operator, events.size(), ms, events.size() * 1000.0 / ms);
    }

    /**
     * Runs {@code topology} as a {@link KafkaStreams} application against {@code s.bootstrap}:
     * creates the input topics, produces the events (a join's by type to its two topics), waits
     * until the application has taken all of them (at most {@code 300 s}), then closes it,
     * which commits and closes the stores. Returns the records produced.
     */
    static long runApplication(Topology topology, Properties props, List<Event> events, Settings s)
            throws InterruptedException, ExecutionException {
        boolean join = s.operator.equals("stream-join");
        List<String> topics = join ? List.of(s.topic, s.rightTopic) : List.of(s.topic);
        Map<String, Object> admin = Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, s.bootstrap);
        try (Admin client = Admin.create(admin)) {
            startAfresh(client, topics, s.applicationId);
            client.createTopics(topics.stream().map(t -> new NewTopic(t, s.partitions, (short) 1)).toList())
                    .all().get();
        }
        Properties producer = new Properties();
        producer.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, s.bootstrap);
        producer.put(ProducerConfig.ACKS_CONFIG, "all");
        long records = 0;
        LongSerializer longs = new LongSerializer();
        try (KafkaProducer<Long, byte[]> out = new KafkaProducer<>(producer,
                new LongSerializer(), new ByteArraySerializer())) {
            for (Event e : events) {
                String topic = !join ? s.topic
                        : s.leftTypes.contains(e.type()) ? s.topic
                        : s.rightTypes.contains(e.type()) ? s.rightTopic
                        : null;
                if (topic != null) {
                    // no partition: the default partitioner's, murmur2 of the key's bytes
                    byte[] value = s.regroupColumn >= 0
                            ? e.group().getBytes(StandardCharsets.UTF_8)
                            : longs.serialize(topic, e.time());
                    out.send(new ProducerRecord<>(topic, null, e.time(), e.key(), value));
                    records++;
                }
            }
            out.flush();
        }
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, s.bootstrap);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, s.threads);
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        KafkaStreams streams = new KafkaStreams(topology, props);
        streams.start();
        long deadline = System.nanoTime() + 300_000_000_000L;
        while (PROCESSED.get() < records) {
            if (System.nanoTime() > deadline || streams.state() == KafkaStreams.State.ERROR) {
                streams.close(Duration.ofSeconds(30));
                throw new IllegalStateException("the application took " + PROCESSED.get()
                        + " of " + records + " records (state " + streams.state() + ")");
            }
            Thread.sleep(20);
        }
        // leaving the group lets the next run against this broker delete it at once
        streams.close(CloseOptions.groupMembershipOperation(
                CloseOptions.GroupMembershipOperation.LEAVE_GROUP).withTimeout(Duration.ofSeconds(60)));
        return records;
    }

    /**
     * Removes what an earlier run against the same broker left: the application's consumer
     * group (its committed offsets would skip records), its internal topics (a changelog would
     * be restored into the new stores) and the input topics; returns once they are gone.
     */
    static void startAfresh(Admin client, List<String> topics, String applicationId)
            throws InterruptedException, ExecutionException {
        long deadline = System.nanoTime() + 90_000_000_000L;
        while (client.listGroups().all().get().stream().anyMatch(g -> g.groupId().equals(applicationId))) {
            try {
                client.deleteConsumerGroups(List.of(applicationId)).all().get();
            } catch (ExecutionException e) {
                // a member that did not leave stays until its session times out (45 s)
                if (!(e.getCause() instanceof GroupNotEmptyException) || System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.sleep(500);
            }
        }
        List<String> old = client.listTopics().names().get().stream()
                .filter(t -> topics.contains(t) || t.startsWith(applicationId + "-"))
                .toList();
        if (old.isEmpty()) {
            return;
        }
        client.deleteTopics(old).all().get();
        deadline = System.nanoTime() + 60_000_000_000L;
        while (client.listTopics().names().get().stream().anyMatch(old::contains)) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the broker still lists " + old + " after 60 s");
            }
            Thread.sleep(50);
        }
    }

    /**
     * Reads the CSV (gzip when it starts with gzip's magic bytes); {@code groupColumn} (-1:
     * none) is the field each event's {@code group} takes.
     */
    static List<Event> read(Path path, int limit, int groupColumn) throws IOException {
        List<Event> events = new ArrayList<>();
        try (InputStream raw = Files.newInputStream(path)) {
            InputStream in = new java.io.BufferedInputStream(raw);
            in.mark(2);
            boolean gzip = in.read() == 0x1f && in.read() == 0x8b;
            in.reset();
            if (gzip) {
                in = new GZIPInputStream(in);
            }
            BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
            String line;
            int n = 0;
            while ((line = r.readLine()) != null && n < limit) {
                String[] f = line.split(",", 3);
                if (f.length < 2) {
                    continue;
                }
                String type = f.length > 2 ? f[2].split(",", 2)[0] : "";
                String group = "";
                if (groupColumn >= 0) {
                    String[] all = line.split(",", -1);
                    if (groupColumn >= all.length) {
                        throw new IllegalArgumentException("line " + (n + 1) + " has no column "
                                + groupColumn + " to regroup by (it has " + all.length + ")");
                    }
                    group = all[groupColumn];
                }
                events.add(new Event(Long.parseLong(f[0]), Long.parseLong(f[1]) / 1000, type, group));
                n++;
            }
        }
        return events;
    }
}
