package gadget.recorder.examples;

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
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.zip.GZIPInputStream;

import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.api.common.eventtime.Watermark;
import org.apache.flink.api.common.eventtime.WatermarkGenerator;
import org.apache.flink.api.common.eventtime.WatermarkOutput;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.tuple.Tuple3;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.state.forst.ForStOptions;
import org.apache.flink.state.forst.ForStStateBackend;
import org.apache.flink.state.rocksdb.EmbeddedRocksDBStateBackend;
import org.apache.flink.state.rocksdb.RocksDBOptions;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.co.ProcessJoinFunction;
import org.apache.flink.streaming.api.functions.sink.legacy.DiscardingSink;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.windowing.assigners.EventTimeSessionWindows;
import org.apache.flink.streaming.api.windowing.assigners.SlidingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.assigners.WindowAssigner;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.util.Collector;

/**
 * {@code ReferenceJob} on Flink 2.x: the same operators, flags and defaults, on Flink 2.x's
 * embedded RocksDB state backend or its ForSt state backend ({@code --backend rocksdb|forst}):
 *
 * <pre>
 * java -javaagent:gadget-recorder-flink.jar=out=traces -cp ... gadget.recorder.examples.ReferenceJob2 \
 *     --operator tumbling-incr --input borg-jobs.csv.gz --backend forst
 * </pre>
 *
 * <p>What differs from {@code ReferenceJob}, all forced by the 2.x API: window sizes and bounds
 * are {@link Duration}s (2.x removed {@code Time}); the sink is the legacy
 * {@code DiscardingSink} from its 2.x package; the RocksDB options moved to
 * {@code org.apache.flink.state.rocksdb}; rich functions open with an {@link OpenContext}.
 * By default the job uses Flink's synchronous state API (the DataStream operators' default),
 * which ForSt serves from its synchronous keyed backend; {@code --async-state true} (ForSt
 * only) calls {@code enableAsyncState()} on the keyed streams, so Flink runs its asynchronous
 * operators and ForSt its asynchronous backend (requests executed in batches on ForSt's
 * own threads).
 *
 * <p>Input: CSV (optionally gzip), key = column 0 (a long), event time = column 1 in
 * microseconds, divided by 1000 (integer division) into milliseconds, event type = column 2.
 * Events are sorted stably by time unless {@code --order file}. Watermarks are punctuated:
 * after every {@code --watermark-every} events, the largest event time seen less the
 * out-of-orderness bound less 1 ms (Flink's bounded-out-of-orderness rule). {@code --repeat N}
 * plays the input N times, each copy later in event time (for throughput). Timers on the heap
 * or in RocksDB/ForSt; max parallelism 128 ({@code --max-parallelism}).
 *
 * <p>{@code --parallelism P} runs the keyed operator (and its sink, chained to it) as P
 * subtasks behind a keyed exchange from the one source task, as {@code ReferenceJob} does;
 * the recorder writes one trace per subtask.
 *
 * <p>Operators: {@code tumbling-incr tumbling-hol sliding-incr sliding-hol session-incr
 * session-hol aggregation interval-join} (SUBMIT events joined with FINISH events). Windows
 * count their elements, incrementally ({@code -incr}: an {@link AggregateFunction}) or
 * holistically ({@code -hol}: a {@link ProcessWindowFunction} over all elements).
 */
@SuppressWarnings("deprecation")
public final class ReferenceJob2 {
    private ReferenceJob2() {}

    /** An input event: key, event time (ms), event type code. Serialized as 24 bytes. */
    public static final class Event extends Tuple3<Long, Long, Long> {
        private static final long serialVersionUID = 1L;

        /** For Flink's serializer. */
        public Event() {}

        Event(long key, long time, long type) {
            super(key, time, type);
        }
    }

    /**
     * A holistic window's element as the job of the reference recordings kept it: key, event time
     * (ms) and the event type's name. Serialized as 16 bytes and the name as Flink's
     * StringSerializer writes it (its length + 1 as a varint, then the characters).
     */
    public static final class Typed extends Tuple3<Long, Long, String> {
        private static final long serialVersionUID = 1L;

        /** For Flink's serializer. */
        public Typed() {}

        Typed(long key, long time, String type) {
            super(key, time, type);
        }
    }

    /** An event with its type's name in place of its code. */
    static final class WithTypeName implements MapFunction<Event, Typed> {
        private static final long serialVersionUID = 1L;
        /** The names by code, carried with the function to the task that runs it. */
        private final String[] names = NAMES.toArray(new String[0]);

        @Override
        public Typed map(Event e) {
            return new Typed(e.f0, e.f1, names[(int) (long) e.f2]);
        }
    }

    /** The event type codes of Borg's job events, and of any other type name read. */
    static final Map<String, Long> TYPES = new HashMap<>();
    /** The type names by code. */
    static final List<String> NAMES = new ArrayList<>();

    static {
        for (String name : new String[] {"SUBMIT", "QUEUE", "ENABLE", "SCHEDULE", "EVICT", "FAIL",
                "FINISH", "KILL", "LOST", "UPDATE_PENDING", "UPDATE_RUNNING"}) {
            code(name);
        }
    }

    /** The code of type {@code name}, a new one for a name not seen before. */
    static long code(String name) {
        return TYPES.computeIfAbsent(name, n -> {
            NAMES.add(n);
            return (long) NAMES.size() - 1;
        });
    }

    private static final long SUBMIT = 0;
    private static final long FINISH = 6;

    /** Command-line settings, with the reference traces' values as defaults. */
    static final class Settings {
        String operator = "tumbling-incr";
        Path input;
        long window = 5000;
        long slide = 1000;
        long gap = 120000;
        int watermarkEvery = 100;
        long outOfOrderness = 0;
        long lateness = 0;
        long lower = -120000;
        long upper = 180000;
        String timers = "heap";
        String order = "by-time";
        int limit = Integer.MAX_VALUE;
        int repeat = 1;
        long bufferTimeout = 100;
        String backend = "rocksdb";
        boolean asyncState;
        int parallelism = 1;
        int maxParallelism = 128;

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
                    case "--window": s.window = Long.parseLong(v); break;
                    case "--slide": s.slide = Long.parseLong(v); break;
                    case "--gap": s.gap = Long.parseLong(v); break;
                    case "--watermark-every": s.watermarkEvery = Integer.parseInt(v); break;
                    case "--out-of-orderness": s.outOfOrderness = Long.parseLong(v); break;
                    case "--lateness": s.lateness = Long.parseLong(v); break;
                    case "--lower": s.lower = Long.parseLong(v); break;
                    case "--upper": s.upper = Long.parseLong(v); break;
                    case "--timers": s.timers = v; break;
                    case "--order": s.order = v; break;
                    case "--limit": s.limit = Integer.parseInt(v); break;
                    case "--repeat": s.repeat = Integer.parseInt(v); break;
                    case "--buffer-timeout": s.bufferTimeout = Long.parseLong(v); break;
                    case "--backend": s.backend = v; break;
                    case "--async-state": s.asyncState = Boolean.parseBoolean(v); break;
                    case "--parallelism": s.parallelism = Integer.parseInt(v); break;
                    case "--max-parallelism": s.maxParallelism = Integer.parseInt(v); break;
                    default:
                        throw new IllegalArgumentException("unknown flag " + flag + "; the flags are "
                                + "--operator --input --window --slide --gap --watermark-every "
                                + "--out-of-orderness --lateness --lower --upper --timers --order --limit --repeat --buffer-timeout "
                                + "--backend --async-state --parallelism --max-parallelism");
                }
            }
            if (s.input == null) {
                throw new IllegalArgumentException("--input FILE is required (CSV, optionally gzip)");
            }
            if (!s.timers.equals("heap") && !s.timers.equals("rocksdb")) {
                throw new IllegalArgumentException("--timers is heap or rocksdb, not " + s.timers);
            }
            if (!s.backend.equals("rocksdb") && !s.backend.equals("forst")) {
                throw new IllegalArgumentException("--backend is rocksdb or forst, not " + s.backend);
            }
            if (s.asyncState && !s.backend.equals("forst")) {
                throw new IllegalArgumentException("--async-state true needs --backend forst "
                        + "(the only state backend with an asynchronous keyed backend)");
            }
            if (!s.order.equals("by-time") && !s.order.equals("file")) {
                throw new IllegalArgumentException("--order is by-time or file, not " + s.order);
            }
            if (s.maxParallelism < 1 || s.maxParallelism > 32768) {
                throw new IllegalArgumentException(
                        "--max-parallelism is from 1 to 32768, not " + s.maxParallelism);
            }
            if (s.parallelism < 1 || s.parallelism > s.maxParallelism) {
                throw new IllegalArgumentException("--parallelism is from 1 to the max parallelism ("
                        + s.maxParallelism + "), not " + s.parallelism);
            }
            return s;
        }
    }

    /** Runs the job. */
    public static void main(String[] args) throws Exception {
        Settings s = Settings.parse(args);
        List<Event> events = repeat(read(s.input, s.limit), s.repeat);
        if (s.order.equals("by-time")) {
            events.sort(Comparator.comparingLong(e -> e.f1));
        }

        Configuration conf = new Configuration();
        boolean heap = s.timers.equals("heap");
        conf.set(StateBackendOptions.STATE_BACKEND, s.backend);
        if (s.backend.equals("rocksdb")) {
            conf.set(RocksDBOptions.TIMER_SERVICE_FACTORY, heap
                    ? EmbeddedRocksDBStateBackend.PriorityQueueStateType.HEAP
                    : EmbeddedRocksDBStateBackend.PriorityQueueStateType.ROCKSDB);
        } else {
            // --timers rocksdb: ForSt's own timer store, the counterpart of RocksDB's
            conf.set(ForStOptions.TIMER_SERVICE_FACTORY, heap
                    ? ForStStateBackend.PriorityQueueStateType.HEAP
                    : ForStStateBackend.PriorityQueueStateType.ForStDB);
        }
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        // the source (and what is chained to it) is one task; the keyed operator and its sink
        // run as --parallelism subtasks behind a keyed exchange
        env.setParallelism(1);
        env.setMaxParallelism(s.maxParallelism);
        env.getConfig().setAutoWatermarkInterval(0);
        env.setBufferTimeout(s.bufferTimeout);

        KeySelector<Event, Long> byKey = e -> e.f0;
        if (s.operator.equals("interval-join")) {
            // one source, split by event type: both inputs reach the join through the network
            DataStream<Event> all = source(env, events, s);
            DataStream<Event> left = all.filter(e -> e.f2 == SUBMIT).name("submits");
            DataStream<Event> right = all.filter(e -> e.f2 == FINISH).name("finishes");
            KeyedStream<Event, Long> leftKeyed = left.keyBy(byKey);
            KeyedStream<Event, Long> rightKeyed = right.keyBy(byKey);
            if (s.asyncState) {
                leftKeyed = leftKeyed.enableAsyncState();
                rightKeyed = rightKeyed.enableAsyncState();
            }
            leftKeyed
                    .intervalJoin(rightKeyed)
                    .between(Duration.ofMillis(s.lower), Duration.ofMillis(s.upper))
                    .process(new CountPairs())
                    .name(s.operator)
                    .setParallelism(s.parallelism)
                    .addSink(new DiscardingSink<>()).name("discard")
                    .setParallelism(s.parallelism);
        } else {
            DataStream<Event> input = source(env, events, s);
            SingleOutputStreamOperator<Long> counted;
            if (s.operator.equals("aggregation")) {
                KeyedStream<Event, Long> keyed = keyed(input.keyBy(byKey), s);
                counted = keyed.process(s.asyncState ? new AsyncRunningSum() : new RunningSum());
            } else {
                WindowAssigner<Object, TimeWindow> assigner;
                String kind = s.operator.replaceAll("-(incr|hol)$", "");
                switch (kind) {
                    case "tumbling":
                        assigner = TumblingEventTimeWindows.of(Duration.ofMillis(s.window));
                        break;
                    case "sliding":
                        assigner = SlidingEventTimeWindows.of(
                                Duration.ofMillis(s.window), Duration.ofMillis(s.slide));
                        break;
                    case "session":
                        assigner = EventTimeSessionWindows.withGap(Duration.ofMillis(s.gap));
                        break;
                    default:
                        throw new IllegalArgumentException("unknown operator " + s.operator
                                + "; the operators are tumbling-incr tumbling-hol sliding-incr "
                                + "sliding-hol session-incr session-hol aggregation interval-join");
                }
                if (s.operator.endsWith("-incr")) {
                    counted = keyed(input.keyBy(byKey), s).window(assigner)
                            .allowedLateness(Duration.ofMillis(s.lateness))
                            .aggregate(new Count());
                } else {
                    // a holistic window keeps its elements as the reference recordings' job
                    // did: with the event type's name, a String (21-25 bytes each for Borg's
                    // types); the map is chained to the source and touches no state
                    KeySelector<Typed, Long> typedKey = t -> t.f0;
                    var typed = input.map(new WithTypeName()).name("type names").keyBy(typedKey);
                    counted = keyed(typed, s).window(assigner)
                            .allowedLateness(Duration.ofMillis(s.lateness))
                            .process(new CountAll());
                }
            }
            counted.name(s.operator)
                    .setParallelism(s.parallelism)
                    .addSink(new DiscardingSink<>()).name("discard")
                    .setParallelism(s.parallelism);
        }
        JobExecutionResult result = env.execute("gadget reference job (Flink 2.x, " + s.backend + "): " + s.operator);
        long ms = Math.max(1, result.getNetRuntime(TimeUnit.MILLISECONDS));
        // on stderr: stdout belongs to whoever runs the job (gadget record --json)
        System.err.printf("%s on %s: %d events in %d ms of job runtime (%.0f events/s)%n",
                s.operator, s.backend, events.size(), ms, events.size() * 1000.0 / ms);
    }

    /**
     * {@code stream}, its operators Flink 2.x's asynchronous state operators
     * (AsyncWindowOperator, AsyncKeyedProcessOperator) when {@code --async-state} asks for them:
     * ForSt serves those from its asynchronous backend.
     */
    private static <T> KeyedStream<T, Long> keyed(KeyedStream<T, Long> stream, Settings s) {
        return s.asyncState ? stream.enableAsyncState() : stream;
    }

    private static DataStream<Event> source(StreamExecutionEnvironment env, List<Event> events,
            Settings s) {
        int every = s.watermarkEvery;
        long bound = s.outOfOrderness;
        WatermarkStrategy<Event> strategy = WatermarkStrategy
                .<Event>forGenerator(ctx -> new EveryN(every, bound))
                .withTimestampAssigner((e, previous) -> e.f1);
        return env.fromCollection(events, TypeInformation.of(Event.class))
                .assignTimestampsAndWatermarks(strategy);
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
                String[] f = line.split(",", 4);
                if (f.length < 3) {
                    continue;
                }
                events.add(new Event(Long.parseLong(f[0]), Long.parseLong(f[1]) / 1000,
                        code(f[2])));
                n++;
            }
        }
        return events;
    }

    /**
     * The events {@code times} times over, each copy shifted in time past the previous one (a
     * longer input for throughput measurements).
     */
    static List<Event> repeat(List<Event> events, int times) {
        if (times <= 1 || events.isEmpty()) {
            return events;
        }
        long min = Long.MAX_VALUE;
        long max = Long.MIN_VALUE;
        for (Event e : events) {
            min = Math.min(min, e.f1);
            max = Math.max(max, e.f1);
        }
        long span = max - min + 1;
        List<Event> all = new ArrayList<>(events.size() * times);
        for (int r = 0; r < times; r++) {
            for (Event e : events) {
                all.add(new Event(e.f0, e.f1 + r * span, e.f2));
            }
        }
        return all;
    }

    /** Punctuated watermarks after every {@code every} events: max time − bound − 1. */
    static final class EveryN implements WatermarkGenerator<Event> {
        private final int every;
        private final long bound;
        private long max = Long.MIN_VALUE;
        private long seen;

        EveryN(int every, long bound) {
            this.every = every;
            this.bound = bound;
        }

        @Override
        public void onEvent(Event e, long timestamp, WatermarkOutput out) {
            max = Math.max(max, timestamp);
            if (++seen % every == 0) {
                out.emitWatermark(new Watermark(max - bound - 1));
            }
        }

        @Override
        public void onPeriodicEmit(WatermarkOutput out) {}
    }

    /** Incremental count: an 8-byte accumulator per window. */
    static final class Count implements AggregateFunction<Event, Long, Long> {
        private static final long serialVersionUID = 1L;

        @Override
        public Long createAccumulator() {
            return 0L;
        }

        @Override
        public Long add(Event e, Long acc) {
            return acc + 1;
        }

        @Override
        public Long getResult(Long acc) {
            return acc;
        }

        @Override
        public Long merge(Long a, Long b) {
            return a + b;
        }
    }

    /** Holistic count: every element is kept until the window fires. */
    static final class CountAll extends ProcessWindowFunction<Typed, Long, Long, TimeWindow> {
        private static final long serialVersionUID = 1L;

        @Override
        public void process(Long key, Context ctx, Iterable<Typed> elements, Collector<Long> out) {
            long n = 0;
            for (Typed ignored : elements) {
                n++;
            }
            out.collect(n);
        }
    }

    /** A running count per key in {@code ValueState<Long>} named {@code running-sum}. */
    static final class RunningSum extends KeyedProcessFunction<Long, Event, Long> {
        private static final long serialVersionUID = 1L;
        private transient ValueState<Long> sum;

        @Override
        public void open(OpenContext context) {
            sum = getRuntimeContext().getState(new ValueStateDescriptor<>("running-sum", Long.class));
        }

        @Override
        public void processElement(Event e, Context ctx, Collector<Long> out) throws Exception {
            Long current = sum.value();
            long next = (current == null ? 0 : current) + 1;
            sum.update(next);
            out.collect(next);
        }
    }

    /**
     * {@link RunningSum} on the asynchronous state API (State V2), for {@code --async-state
     * true}: read, then write, through state futures.
     */
    static final class AsyncRunningSum extends KeyedProcessFunction<Long, Event, Long> {
        private static final long serialVersionUID = 1L;
        private transient org.apache.flink.api.common.state.v2.ValueState<Long> sum;

        @Override
        public void open(OpenContext context) {
            sum = getRuntimeContext().getState(
                    new org.apache.flink.api.common.state.v2.ValueStateDescriptor<>("running-sum", Long.class));
        }

        @Override
        public void processElement(Event e, Context ctx, Collector<Long> out) {
            sum.asyncValue().thenAccept(current -> {
                long next = (current == null ? 0 : current) + 1;
                sum.asyncUpdate(next).thenAccept(ignored -> out.collect(next));
            });
        }
    }

    /** Counts joined pairs. */
    static final class CountPairs extends ProcessJoinFunction<Event, Event, Long> {
        private static final long serialVersionUID = 1L;

        @Override
        public void processElement(Event left, Event right, Context ctx, Collector<Long> out) {
            out.collect(1L);
        }
    }
}
