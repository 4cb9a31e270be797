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
import java.util.Properties;
import java.util.zip.GZIPInputStream;

import org.apache.kafka.common.serialization.LongSerializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Consumed;
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
        int initialBytes = 0;
        int bytesPerRecord = 8;

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
                    case "--bytes-per-record": s.bytesPerRecord = Integer.parseInt(v); break;
                    default:
                        throw new IllegalArgumentException("unknown flag " + flag + "; the flags are "
                                + "--operator --input --state-dir --order --limit --cache-bytes --commit-interval "
                                + "--application-id --store --topic --window --advance --grace --gap --suppress "
                                + "--left-types --right-types --right-topic --initial-bytes "
                                + "--bytes-per-record");
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

    /** An input event: key, event time in ms and type (column 2, empty without one). */
    record Event(long key, long time, String type) {}

    /** Runs the job. */
    public static void main(String[] args) throws IOException {
        Settings s = Settings.parse(args);
        List<Event> events = read(s.input, s.limit);
        if (s.order.equals("by-time")) {
            events.sort(Comparator.comparingLong(Event::time));
        }
        StreamsBuilder builder = new StreamsBuilder();
        switch (s.operator) {
            case "count":
                builder.stream(s.topic, Consumed.with(Serdes.Long(), Serdes.Long()))
                        .groupByKey()
                        .count(Materialized.as(s.store));
                break;
            case "aggregate": {
                int initial = s.initialBytes;
                int per = s.bytesPerRecord;
                builder.stream(s.topic, Consumed.with(Serdes.Long(), Serdes.Long()))
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
                        builder.stream(s.topic, Consumed.with(Serdes.Long(), Serdes.Long()))
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
                        builder.stream(s.topic, Consumed.with(Serdes.Long(), Serdes.Long()))
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
                        builder.stream(s.topic, Consumed.with(Serdes.Long(), Serdes.Long()));
                KStream<Long, Long> right =
                        builder.stream(s.rightTopic, Consumed.with(Serdes.Long(), Serdes.Long()));
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

    /** Reads the CSV (gzip when it starts with gzip's magic bytes). */
    static List<Event> read(Path path, int limit) throws IOException {
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
                events.add(new Event(Long.parseLong(f[0]), Long.parseLong(f[1]) / 1000, type));
                n++;
            }
        }
        return events;
    }
}
