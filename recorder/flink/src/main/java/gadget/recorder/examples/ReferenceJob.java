package gadget.recorder.examples;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
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
import org.apache.flink.api.common.functions.JoinFunction;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.tuple.Tuple3;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.contrib.streaming.state.EmbeddedRocksDBStateBackend.PriorityQueueStateType;
import org.apache.flink.contrib.streaming.state.RocksDBOptions;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.co.KeyedCoProcessFunction;
import org.apache.flink.streaming.api.functions.co.ProcessJoinFunction;
import org.apache.flink.streaming.api.functions.sink.DiscardingSink;
import org.apache.flink.streaming.api.functions.windowing.ProcessAllWindowFunction;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.windowing.assigners.EventTimeSessionWindows;
import org.apache.flink.streaming.api.windowing.assigners.SlidingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.assigners.WindowAssigner;
import org.apache.flink.streaming.api.windowing.time.Time;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.util.Collector;

/**
 * The operators of Gadget's reference traces as one Flink job, with the parameters of Gadget's
 * configs, so that anyone can record ground truth for any setting:
 *
 * <pre>
 * java -javaagent:gadget-recorder-flink.jar=out=traces -cp ... gadget.recorder.examples.ReferenceJob \
 *     --operator tumbling-incr --input borg-jobs.csv.gz
 * </pre>
 *
 * <p>Input: CSV (optionally gzip), key = column 0 (a long), event time = column 1 in
 * microseconds, divided by 1000 (integer division) into milliseconds, event type = column 2.
 * Events are sorted stably by time unless {@code --order file}. Watermarks are punctuated:
 * after every {@code --watermark-every} events, the largest event time seen less the
 * out-of-orderness bound less 1 ms (Flink's bounded-out-of-orderness rule). {@code --repeat N}
 * plays the input N times, each copy later in event time (for throughput). RocksDB state
 * backend, timers on the heap or in RocksDB, max parallelism 128 ({@code --max-parallelism}).
 *
 * <p>{@code --parallelism P} runs the keyed operator (and its sink, chained to it) as P
 * subtasks; the source (and the join's filters, chained to it) stays one task, so one source
 * task feeds the keyed exchange and every subtask receives every watermark, as Gadget's
 * {@code parallelism} assumes. Each subtask's task thread is named
 * {@code <operator> -> Sink: discard (<i+1>/<P>)#0}: the recorder writes one trace per subtask.
 *
 * <p>Operators: {@code tumbling-incr tumbling-hol sliding-incr sliding-hol session-incr
 * session-hol aggregation interval-join} (SUBMIT events joined with FINISH events). Windows
 * count their elements, incrementally ({@code -incr}: an {@link AggregateFunction}) or
 * holistically ({@code -hol}: a {@link ProcessWindowFunction} over all elements).
 */
@SuppressWarnings("deprecation")
public final class ReferenceJob {
    private ReferenceJob() {}

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
    private static final long SCHEDULE = 3;
    /** The events that close a job's interval: FINISH, KILL, FAIL, EVICT. */
    private static final java.util.Set<Long> CLOSING = java.util.Set.of(6L, 7L, 5L, 4L);
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
                    case "--parallelism": s.parallelism = Integer.parseInt(v); break;
                    case "--max-parallelism": s.maxParallelism = Integer.parseInt(v); break;
                    default:
                        throw new IllegalArgumentException("unknown flag " + flag + "; the flags are "
                                + "--operator --input --window --slide --gap --watermark-every "
                                + "--out-of-orderness --lateness --lower --upper --timers --order --limit --repeat --buffer-timeout --parallelism --max-parallelism");
                }
            }
            if (s.input == null) {
                throw new IllegalArgumentException("--input FILE is required (CSV, optionally gzip)");
            }
            if (!s.timers.equals("heap") && !s.timers.equals("rocksdb")) {
                throw new IllegalArgumentException("--timers is heap or rocksdb, not " + s.timers);
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
        conf.set(StateBackendOptions.STATE_BACKEND, "rocksdb");
        conf.set(RocksDBOptions.TIMER_SERVICE_FACTORY,
                s.timers.equals("heap") ? PriorityQueueStateType.HEAP : PriorityQueueStateType.ROCKSDB);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        // the source (and what is chained to it) is one task; the keyed operator and its sink
        // run as --parallelism subtasks behind a keyed exchange
        env.setParallelism(1);
        env.setMaxParallelism(s.maxParallelism);
        env.getConfig().setAutoWatermarkInterval(0);
        env.setBufferTimeout(s.bufferTimeout);

        KeySelector<Event, Long> byKey = e -> e.f0;
        if (s.operator.equals("tumbling-join") || s.operator.equals("sliding-join")) {
            // join().where().equalTo().window(): Flink runs it as a coGroup, a holistic window
            // over the tagged union of both inputs
            DataStream<Event> all = source(env, events, s);
            DataStream<Event> left = all.filter(e -> e.f2 == SUBMIT).name("submits");
            DataStream<Event> right = all.filter(e -> e.f2 == FINISH).name("finishes");
            WindowAssigner<Object, TimeWindow> assigner = s.operator.equals("tumbling-join")
                    ? TumblingEventTimeWindows.of(Time.milliseconds(s.window))
                    : SlidingEventTimeWindows.of(Time.milliseconds(s.window), Time.milliseconds(s.slide));
            // apply(...) is declared as DataStream but builds a SingleOutputStreamOperator
            SingleOutputStreamOperator<Long> joined = (SingleOutputStreamOperator<Long>) left.join(right)
                    .where(byKey)
                    .equalTo(byKey)
                    .window(assigner)
                    .allowedLateness(Time.milliseconds(s.lateness))
                    .apply(new JoinPairs());
            joined.name(s.operator)
                    .setParallelism(s.parallelism)
                    .addSink(new DiscardingSink<>()).name("discard")
                    .setParallelism(s.parallelism);
        } else if (s.operator.equals("continuous-join")) {
            // the paper's continuous join as one writes it: a job's SUBMIT opens its interval,
            // FINISH, KILL, FAIL or EVICT closes it; SCHEDULE events join it or wait for it
            DataStream<Event> all = source(env, events, s);
            DataStream<Event> intervals = all.filter(e -> e.f2 == SUBMIT || CLOSING.contains(e.f2))
                    .name("intervals");
            DataStream<Event> schedules = all.filter(e -> e.f2 == SCHEDULE).name("schedules");
            intervals.connect(schedules)
                    .keyBy(byKey, byKey)
                    .process(new ContinuousJoin())
                    .name(s.operator)
                    .setParallelism(s.parallelism)
                    .addSink(new DiscardingSink<>()).name("discard")
                    .setParallelism(s.parallelism);
        } else if (s.operator.startsWith("tumbling-all-") || s.operator.startsWith("sliding-all-")) {
            // windowAll: one subtask whatever the parallelism, its state keyed by Flink's
            // constant null-byte key
            WindowAssigner<Object, TimeWindow> assigner = s.operator.startsWith("tumbling")
                    ? TumblingEventTimeWindows.of(Time.milliseconds(s.window))
                    : SlidingEventTimeWindows.of(Time.milliseconds(s.window), Time.milliseconds(s.slide));
            var windowed = source(env, events, s).windowAll(assigner)
                    .allowedLateness(Time.milliseconds(s.lateness));
            SingleOutputStreamOperator<Long> counted = s.operator.endsWith("-incr")
                    ? windowed.aggregate(new Count())
                    : windowed.process(new CountAllWindow());
            counted.name(s.operator).addSink(new DiscardingSink<>()).name("discard");
        } else if (s.operator.equals("interval-join")) {
            // one source, split by event type: both inputs reach the join through the network
            DataStream<Event> all = source(env, events, s);
            DataStream<Event> left = all.filter(e -> e.f2 == SUBMIT).name("submits");
            DataStream<Event> right = all.filter(e -> e.f2 == FINISH).name("finishes");
            left.keyBy(byKey)
                    .intervalJoin(right.keyBy(byKey))
                    .between(Time.milliseconds(s.lower), Time.milliseconds(s.upper))
                    .process(new CountPairs())
                    .name(s.operator)
                    .setParallelism(s.parallelism)
                    .addSink(new DiscardingSink<>()).name("discard")
                    .setParallelism(s.parallelism);
        } else {
            DataStream<Event> input = source(env, events, s);
            SingleOutputStreamOperator<Long> counted;
            if (s.operator.equals("aggregation")) {
                KeyedStream<Event, Long> keyed = input.keyBy(byKey);
                counted = keyed.process(new RunningSum());
            } else {
                WindowAssigner<Object, TimeWindow> assigner;
                String kind = s.operator.replaceAll("-(incr|hol)$", "");
                switch (kind) {
                    case "tumbling":
                        assigner = TumblingEventTimeWindows.of(Time.milliseconds(s.window));
                        break;
                    case "sliding":
                        assigner = SlidingEventTimeWindows.of(
                                Time.milliseconds(s.window), Time.milliseconds(s.slide));
                        break;
                    case "session":
                        assigner = EventTimeSessionWindows.withGap(Time.milliseconds(s.gap));
                        break;
                    default:
                        throw new IllegalArgumentException("unknown operator " + s.operator
                                + "; the operators are tumbling-incr tumbling-hol sliding-incr "
                                + "sliding-hol session-incr session-hol aggregation interval-join "
                                + "tumbling-join sliding-join continuous-join tumbling-all-incr "
                                + "tumbling-all-hol sliding-all-incr sliding-all-hol");
                }
                if (s.operator.endsWith("-incr")) {
                    counted = input.keyBy(byKey).window(assigner)
                            .allowedLateness(Time.milliseconds(s.lateness))
                            .aggregate(new Count());
                } else {
                    // a holistic window keeps its elements as the reference recordings' job
                    // did: with the event type's name, a String (21-25 bytes each for Borg's
                    // types); the map is chained to the source and touches no state
                    KeySelector<Typed, Long> typedKey = t -> t.f0;
                    var typed = input.map(new WithTypeName()).name("type names").keyBy(typedKey);
                    counted = typed.window(assigner)
                            .allowedLateness(Time.milliseconds(s.lateness))
                            .process(new CountAll());
                }
            }
            counted.name(s.operator)
                    .setParallelism(s.parallelism)
                    .addSink(new DiscardingSink<>()).name("discard")
                    .setParallelism(s.parallelism);
        }
        JobExecutionResult result = env.execute("gadget reference job: " + s.operator);
        long ms = Math.max(1, result.getNetRuntime(TimeUnit.MILLISECONDS));
        // on stderr: stdout belongs to whoever runs the job (gadget record --json)
        System.err.printf("%s: %d events in %d ms of job runtime (%.0f events/s)%n",
                s.operator, events.size(), ms, events.size() * 1000.0 / ms);
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
        public void open(Configuration parameters) {
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

    /** Counts joined pairs. */
    /** Counts a window's elements, for {@code windowAll}. */
    static final class CountAllWindow extends ProcessAllWindowFunction<Event, Long, TimeWindow> {
        private static final long serialVersionUID = 1L;

        @Override
        public void process(Context ctx, Iterable<Event> elements, Collector<Long> out) {
            long n = 0;
            for (Event ignored : elements) {
                n++;
            }
            out.collect(n);
        }
    }

    /** One output per pair a window join finds. */
    static final class JoinPairs implements JoinFunction<Event, Event, Long> {
        private static final long serialVersionUID = 1L;

        @Override
        public Long join(Event left, Event right) {
            return 1L;
        }
    }

    /**
     * The continuous join: {@code left-state} holds the key's open interval (its SUBMIT),
     * {@code right-buffer} the SCHEDULE events that came before it.
     */
    static final class ContinuousJoin extends KeyedCoProcessFunction<Long, Event, Event, Long> {
        private static final long serialVersionUID = 1L;
        private transient ValueState<Event> left;
        private transient ListState<Event> waiting;

        @Override
        public void open(Configuration parameters) {
            left = getRuntimeContext().getState(new ValueStateDescriptor<>("left-state", Event.class));
            waiting = getRuntimeContext().getListState(new ListStateDescriptor<>("right-buffer", Event.class));
        }

        @Override
        public void processElement1(Event e, Context ctx, Collector<Long> out) throws Exception {
            if (CLOSING.contains(e.f2)) {
                left.clear();
                waiting.clear();
                return;
            }
            left.value();
            left.update(e);
            Iterable<Event> before = waiting.get();
            long n = 0;
            for (Event ignored : before) {
                n++;
            }
            if (n > 0) {
                out.collect(n);
                waiting.clear();
            }
        }

        @Override
        public void processElement2(Event e, Context ctx, Collector<Long> out) throws Exception {
            if (left.value() != null) {
                out.collect(1L);
            } else {
                waiting.add(e);
            }
        }
    }

    static final class CountPairs extends ProcessJoinFunction<Event, Event, Long> {
        private static final long serialVersionUID = 1L;

        @Override
        public void processElement(Event left, Event right, Context ctx, Collector<Long> out) {
            out.collect(1L);
        }
    }
}
