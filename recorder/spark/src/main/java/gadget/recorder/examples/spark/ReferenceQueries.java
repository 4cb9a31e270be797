package gadget.recorder.examples.spark;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.expr;
import static org.apache.spark.sql.functions.session_window;
import static org.apache.spark.sql.functions.window;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeoutException;
import java.util.zip.GZIPInputStream;

import org.apache.spark.api.java.function.FlatMapGroupsWithStateFunction;
import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.GroupStateTimeout;
import org.apache.spark.sql.streaming.DataStreamWriter;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryException;
import org.apache.spark.sql.streaming.Trigger;

import scala.Tuple2;

/**
 * The Spark Structured Streaming reference queries: Gadget's operators written as streaming
 * queries on the RocksDB state store provider, run over the Borg job events in {@code local[1]}
 * with one shuffle partition, one micro-batch per {@code --trigger-events} events:
 *
 * <pre>
 * java --add-opens=... -javaagent:gadget-recorder-flink.jar=out=traces,root=WORK_DIR -cp ... \
 *     gadget.recorder.examples.spark.ReferenceQueries --operator tumbling-count \
 *     --input borg-jobs.csv.gz --work WORK_DIR
 * </pre>
 *
 * <p>Input: CSV (optionally gzip), key = column 0 (a long), event time = column 1 in
 * microseconds, divided by 1000 into milliseconds. Events are sorted stably by time unless
 * {@code --order file}, then cut into files of {@code --trigger-events} events under
 * {@code WORK_DIR/input}, which a file source reads one per micro-batch
 * ({@code maxFilesPerTrigger = 1}, {@code Trigger.AvailableNow}). With {@code --trigger
 * processing-time} the query runs under the default trigger and each file arrives once it is
 * idle, or, with {@code --input-at-start true}, all files are there before it starts. The
 * checkpoint is {@code WORK_DIR/checkpoint}.
 *
 * <p>{@code --operator tumbling-count}: {@code withWatermark("time", --delay ms)
 * .groupBy(window("time", --window ms), "key").count()} in output mode {@code --mode}
 * ({@code append} or {@code update}) into the {@code noop} sink.
 *
 * <p>{@code --operator drop-duplicates-within-watermark}: {@code withWatermark("time", --delay ms)
 * .dropDuplicatesWithinWatermark("key")} (the first event of a key, then none of that key until
 * the watermark passes the kept event's time plus the delay) in output mode {@code --mode}.
 *
 * <p>{@code --operator stream-join}: the {@code SUBMIT} events (input column 2) joined with the
 * {@code FINISH} events of the same key at most {@code --window} ms apart, each side with
 * {@code withWatermark(--delay ms)}, two file sources over the same files; {@code --join-type}
 * ({@code inner}, {@code left_outer}, {@code right_outer} or {@code full_outer}) chooses the
 * join.
 *
 * <p>{@code --operator session-count}: {@code withWatermark("time", --delay ms)
 * .groupBy(session_window("time", --gap ms), "key").count()}, Spark's native session windows
 * (append mode only).
 *
 * <p>{@code --operator flat-map-groups-with-state}: a session count per key written with
 * {@code groupByKey("key").flatMapGroupsWithState(..., GroupStateTimeout.EventTimeTimeout())}
 * after {@code withWatermark("time", --delay ms)}: the state is (count, latest event time),
 * its timeout the latest event time plus {@code --gap} ms (never before the watermark); a
 * timed-out key emits (key, count) and removes its state.
 *
 * <p>{@code --operator transform-with-state}: the same session count written with
 * {@code groupByKey("key").transformWithState(..., TimeMode.EventTime(), ...)} after
 * {@code withWatermark("time", --delay ms)}, its state a {@code ValueState}, {@code ListState}
 * or {@code MapState} ({@code --state value|list|map}) and its end an event-time timer
 * ({@link TransformWithState}).
 */
public final class ReferenceQueries {
    private ReferenceQueries() {}

    /** The command line. */
    static final class Settings {
        String operator = "tumbling-count";
        Path input;
        Path work = Paths.get("spark-work");
        String order = "by-time";
        int limit = Integer.MAX_VALUE;
        int triggerEvents = 1000;
        long triggerMs = 0;
        int partitions = 1;
        long window = 5000;
        long delay = 0;
        long gap = 30_000;
        String joinType = "inner";
        String state = "value";
        String mode = "append";
        String trigger = "available-now";
        boolean noDataBatches = true;
        boolean inputAtStart = false;

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
                    case "--work": s.work = Paths.get(v); break;
                    case "--order": s.order = v; break;
                    case "--limit": s.limit = Integer.parseInt(v); break;
                    case "--trigger-events": s.triggerEvents = Integer.parseInt(v); break;
                    case "--trigger-ms": s.triggerMs = Long.parseLong(v); break;
                    case "--partitions": s.partitions = Integer.parseInt(v); break;
                    case "--window": s.window = Long.parseLong(v); break;
                    case "--delay": s.delay = Long.parseLong(v); break;
                    case "--gap": s.gap = Long.parseLong(v); break;
                    case "--join-type": s.joinType = v; break;
                    case "--state": s.state = v; break;
                    case "--mode": s.mode = v; break;
                    case "--trigger": s.trigger = v; break;
                    case "--no-data-batches": s.noDataBatches = Boolean.parseBoolean(v); break;
                    case "--input-at-start": s.inputAtStart = Boolean.parseBoolean(v); break;
                    default:
                        throw new IllegalArgumentException("unknown flag " + flag + "; the flags are "
                                + "--operator --input --work --order --limit --trigger-events --trigger-ms "
                                + "--partitions --window --delay --gap --join-type --state --mode --trigger "
                                + "--no-data-batches --input-at-start");
                }
            }
            if (s.input == null) {
                throw new IllegalArgumentException("--input FILE is required (CSV, optionally gzip)");
            }
            if (!s.order.equals("by-time") && !s.order.equals("file")) {
                throw new IllegalArgumentException("--order is by-time or file, not " + s.order);
            }
            if (!s.trigger.equals("available-now") && !s.trigger.equals("processing-time")) {
                throw new IllegalArgumentException(
                        "--trigger is available-now or processing-time, not " + s.trigger);
            }
            if (s.inputAtStart && !s.trigger.equals("processing-time")) {
                throw new IllegalArgumentException("--input-at-start true is for --trigger "
                        + "processing-time (under available-now the input is always all there)");
            }
            if (!s.mode.equals("append") && !s.mode.equals("update")) {
                throw new IllegalArgumentException("--mode is append or update, not " + s.mode);
            }
            if (s.partitions < 1) {
                throw new IllegalArgumentException("--partitions is at least 1");
            }
            if (s.triggerMs < 0) {
                throw new IllegalArgumentException("--trigger-ms is at least 0 (0: by --trigger-events)");
            }
            if (s.gap < 1) {
                throw new IllegalArgumentException("--gap is at least 1 (ms)");
            }
            if (s.triggerEvents < 1) {
                throw new IllegalArgumentException("--trigger-events is at least 1");
            }
            return s;
        }
    }

    /** An input event: key and event time in ms. */
    record Event(long key, long time, String type) {}

    /** Runs the query. */
    public static void main(String[] args) throws IOException, TimeoutException, StreamingQueryException {
        Settings s = Settings.parse(args);
        List<Event> events = read(s.input, s.limit);
        if (s.order.equals("by-time")) {
            events.sort(Comparator.comparingLong(Event::time));
        }
        Path inputDir = s.work.resolve("input");
        List<List<Event>> batches = s.triggerMs > 0
                ? byEventTime(events, s.triggerMs)
                : byCount(events, s.triggerEvents);
        boolean join = s.operator.equals("stream-join");
        // the input files carry the event type for the join
        boolean typed = join;
        // under the processing-time trigger the files arrive one by one, each once the query
        // is idle, unless --input-at-start puts them all there before it starts
        boolean arriving = s.trigger.equals("processing-time") && !s.inputAtStart;
        Files.createDirectories(inputDir);
        if (!arriving) {
            for (int i = 0; i < batches.size(); i++) {
                writeBatch(batches.get(i), i, inputDir, typed);
            }
        }
        SparkSession spark = SparkSession.builder()
                .master("local[1]")
                .appName("gadget-reference-" + s.operator)
                .config("spark.ui.enabled", "false")
                // the state stores' local directories, below the recorder's root
                .config("spark.local.dir", s.work.resolve("local").toAbsolutePath().toString())
                .config("spark.sql.shuffle.partitions", String.valueOf(s.partitions))
                .config("spark.sql.streaming.stateStore.providerClass",
                        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
                .config("spark.sql.streaming.noDataMicroBatches.enabled", String.valueOf(s.noDataBatches))
                .getOrCreate();
        spark.sparkContext().setLogLevel("ERROR");
        Dataset<Row> input = source(spark, inputDir, typed);
        Dataset<Row> result;
        switch (s.operator) {
            case "tumbling-count":
                result = input.withWatermark("time", s.delay + " milliseconds")
                        .groupBy(window(col("time"), s.window + " milliseconds"), col("key"))
                        .count();
                break;
            case "drop-duplicates-within-watermark":
                result = input.withWatermark("time", s.delay + " milliseconds")
                        .dropDuplicatesWithinWatermark("key");
                break;
            case "stream-join": {
                String delay = s.delay + " milliseconds";
                Dataset<Row> left = input.filter(col("type").equalTo("SUBMIT"))
                        .select(col("key").as("lkey"), col("time").as("ltime"))
                        .withWatermark("ltime", delay);
                Dataset<Row> right = source(spark, inputDir, true)
                        .filter(col("type").equalTo("FINISH"))
                        .select(col("key").as("rkey"), col("time").as("rtime"))
                        .withWatermark("rtime", delay);
                result = left.join(right, expr("lkey = rkey AND rtime >= ltime - interval "
                        + s.window + " milliseconds AND rtime <= ltime + interval " + s.window
                        + " milliseconds"), s.joinType);
                break;
            }
            case "session-count":
                result = input.withWatermark("time", s.delay + " milliseconds")
                        .groupBy(session_window(col("time"), s.gap + " milliseconds"), col("key"))
                        .count();
                break;
            case "flat-map-groups-with-state":
                result = sessions(input.withWatermark("time", s.delay + " milliseconds"), s.gap,
                        s.mode.equals("update") ? OutputMode.Update() : OutputMode.Append());
                break;
            case "transform-with-state":
                result = TransformWithState.sessions(
                        input.withWatermark("time", s.delay + " milliseconds"), s.state, s.gap,
                        s.mode.equals("update") ? OutputMode.Update() : OutputMode.Append());
                break;
            default:
                throw new IllegalArgumentException("unknown operator " + s.operator
                        + "; the operators are tumbling-count, drop-duplicates-within-watermark, "
                        + "stream-join, session-count, flat-map-groups-with-state and transform-with-state");
        }
        long started = System.nanoTime();
        DataStreamWriter<Row> writer = result.writeStream()
                .format("noop")
                .outputMode(s.mode)
                .option("checkpointLocation", s.work.resolve("checkpoint").toString());
        if (arriving) {
            // the default trigger; each batch's file arrives once the query has processed
            // everything before it, batches without data included
            StreamingQuery query = writer.trigger(Trigger.ProcessingTime(0)).start();
            for (int i = 0; i < batches.size(); i++) {
                writeBatch(batches.get(i), i, inputDir, typed);
                awaitIdle(query);
            }
            query.stop();
        } else if (s.trigger.equals("processing-time")) {
            // the default trigger over a backlog: every trigger finds the next file there
            StreamingQuery query = writer.trigger(Trigger.ProcessingTime(0)).start();
            awaitIdle(query);
            query.stop();
        } else {
            writer.trigger(Trigger.AvailableNow()).start().awaitTermination();
        }
        long ms = Math.max(1, (System.nanoTime() - started) / 1_000_000);
        spark.stop();
        // on stderr: stdout belongs to whoever runs the job (gadget record --json)
        System.err.printf("%s: %d events in %d micro-batches of data (%s) in %d ms%n",
                s.operator, events.size(), batches.size(), s.trigger, ms);
    }

    /**
     * Returns once {@code query} has processed all the input there is and has no batch left to
     * run, batches without data included. {@code processAllAvailable} returns when a trigger
     * finds nothing to do; a trigger that began before the latest file was written can find
     * nothing and return it early, so it is called twice: the second waits for a trigger that
     * began after the first returned, which sees the file.
     */
    static void awaitIdle(StreamingQuery query) {
        query.processAllAvailable();
        query.processAllAvailable();
    }

    /**
     * A session count per key by {@code flatMapGroupsWithState} with an event-time timeout:
     * the state is (count, latest event time in ms); each call with data adds the key's events
     * and sets the timeout to the latest time plus {@code gap} (or the watermark, if later:
     * Spark refuses a timeout before it); a call on timeout emits (key, count) and removes the
     * state.
     */
    static Dataset<Row> sessions(Dataset<Row> input, long gap, OutputMode mode) {
        FlatMapGroupsWithStateFunction<Long, Row, Tuple2<Long, Long>, Tuple2<Long, Long>> count =
                (key, rows, state) -> {
                    if (state.hasTimedOut()) {
                        long total = state.get()._1();
                        state.remove();
                        return List.of(new Tuple2<>(key, total)).iterator();
                    }
                    long total = state.exists() ? state.get()._1() : 0;
                    long latest = state.exists() ? state.get()._2() : Long.MIN_VALUE;
                    while (rows.hasNext()) {
                        Row row = rows.next();
                        total++;
                        latest = Math.max(latest, row.getLong(1));
                    }
                    state.update(new Tuple2<>(total, latest));
                    state.setTimeoutTimestamp(Math.max(latest + gap, state.getCurrentWatermarkMs()));
                    return List.<Tuple2<Long, Long>>of().iterator();
                };
        return input
                .groupByKey((MapFunction<Row, Long>) row -> row.getLong(0), Encoders.LONG())
                .flatMapGroupsWithState(count, mode,
                        Encoders.tuple(Encoders.LONG(), Encoders.LONG()),
                        Encoders.tuple(Encoders.LONG(), Encoders.LONG()),
                        GroupStateTimeout.EventTimeTimeout())
                .toDF("key", "count");
    }

    /** A file source over the batch files: key, time (and the event type for a join). */
    static Dataset<Row> source(SparkSession spark, Path dir, boolean withType) {
        return spark.readStream()
                .schema(withType ? "key LONG, ms LONG, type STRING" : "key LONG, ms LONG")
                .option("maxFilesPerTrigger", 1)
                .csv(dir.toString())
                .withColumn("time", expr("timestamp_millis(ms)"));
    }

    /** Cuts `events` into micro-batches of `per` events. */
    static List<List<Event>> byCount(List<Event> events, int per) {
        List<List<Event>> batches = new ArrayList<>();
        for (int from = 0; from < events.size(); from += per) {
            batches.add(events.subList(from, Math.min(events.size(), from + per)));
        }
        return batches;
    }

    /**
     * Cuts `events` into micro-batches of `ms` of event time, in input order: a batch covers
     * the interval of `ms` (aligned to multiples of `ms`) that holds its first event, and ends
     * before the first event at or past the interval's end.
     */
    static List<List<Event>> byEventTime(List<Event> events, long ms) {
        List<List<Event>> batches = new ArrayList<>();
        List<Event> batch = new ArrayList<>();
        long end = Long.MIN_VALUE;
        for (Event e : events) {
            if (!batch.isEmpty() && e.time() >= end) {
                batches.add(batch);
                batch = new ArrayList<>();
            }
            if (batch.isEmpty()) {
                end = Math.floorDiv(e.time(), ms) * ms + ms;
            }
            batch.add(e);
        }
        if (!batch.isEmpty()) {
            batches.add(batch);
        }
        return batches;
    }

    /**
     * Writes batch {@code index} as a CSV file, its modification time after those of the
     * batches before it (the file source takes the oldest file first). The file appears whole:
     * it is written under a hidden name, which the file source skips, then renamed.
     */
    static void writeBatch(List<Event> batch, int index, Path dir, boolean withType) throws IOException {
        String name = String.format("batch-%08d.csv", index);
        Path hidden = dir.resolve("." + name);
        try (Writer w = Files.newBufferedWriter(hidden, StandardCharsets.UTF_8)) {
            for (Event e : batch) {
                w.write(e.key() + "," + e.time() + (withType ? "," + e.type() : "") + "\n");
            }
        }
        Files.setLastModifiedTime(hidden, FileTime.fromMillis(1_000_000_000_000L + index * 1000L));
        Files.move(hidden, dir.resolve(name), java.nio.file.StandardCopyOption.ATOMIC_MOVE);
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
