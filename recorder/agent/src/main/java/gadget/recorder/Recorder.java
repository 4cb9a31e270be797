package gadget.recorder;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * What the advice calls: routes every request and marker to the calling thread's
 * {@link ThreadTrace}. Does nothing until {@link #start} ran (the agent's premain).
 */
public final class Recorder {
    private Recorder() {}

    /** The empty key (a seek to the first entry). */
    public static final byte[] EMPTY = new byte[0];

    private static volatile TraceWriter writer;
    /** Whether every thread records into one trace ({@code threads=one}). */
    private static volatile boolean oneTrace;
    private static final List<ThreadTrace> TRACES = new ArrayList<>();
    /**
     * Each thread's depth of element handlers (an operator's handler calling its super class's
     * nests one in another): kept per thread, also when threads share one trace
     * ({@code threads=one}), so that concurrent threads neither lose nor double markers.
     */
    private static final ThreadLocal<int[]> ELEMENT_DEPTH = ThreadLocal.withInitial(() -> new int[1]);

    private static final ThreadLocal<ThreadTrace> CURRENT = ThreadLocal.withInitial(() -> {
        synchronized (TRACES) {
            if (oneTrace && !TRACES.isEmpty()) {
                return TRACES.get(0);
            }
            String name = oneTrace ? "all-threads" : Thread.currentThread().getName();
            ThreadTrace t = new ThreadTrace(name, TRACES.size(), writer);
            TRACES.add(t);
            return t;
        }
    });

    static void start(Path out, int buffers, boolean oneTraceOfAll) {
        oneTrace = oneTraceOfAll;
        TraceWriter w = new TraceWriter(out, buffers);
        writer = w;
        w.start();
        Runtime.getRuntime().addShutdownHook(new Thread(Recorder::finish, "gadget-recorder-flush"));
    }

    /** Flushes every thread's records and writes the trace files (at JVM shutdown). */
    static void finish() {
        TraceWriter w = writer;
        if (w == null) {
            return;
        }
        writer = null;
        List<ThreadTrace> all;
        synchronized (TRACES) {
            all = new ArrayList<>(TRACES);
        }
        w.finish(all);
    }

    /** A point request on column family {@code cf}. */
    public static void access(int op, Object cf, byte[] key, int valueLen) {
        if (writer != null) {
            CURRENT.get().access(op, cf, key, valueLen);
        }
    }

    /** A request on the default column family of instance {@code db} (no handle given). */
    public static void dbAccess(int op, Object db, byte[] key, int valueLen) {
        if (writer != null) {
            CURRENT.get().dbAccess(op, db, key, valueLen);
        }
    }

    /** A new iterator over the default column family of instance {@code db}. */
    public static void dbIteratorOpened(Object iterator, Object db) {
        if (writer != null) {
            CURRENT.get().dbIteratorOpened(iterator, db);
        }
    }

    /** Checkpoint object {@code checkpoint} copies instance {@code db}. */
    public static void checkpointOf(Object checkpoint, Object db) {
        Instances.checkpointOf(checkpoint, db);
    }

    /** A checkpoint taken with {@code checkpoint}: a request on its instance's default column family. */
    public static void checkpoint(Object checkpoint) {
        if (writer != null) {
            Object db = Instances.checkpointed(checkpoint);
            CURRENT.get().dbAccess(Ops.CHECKPOINT, db, EMPTY, 0);
        }
    }

    /**
     * A multi-get: one {@code get} per key, on the column family at the same index ({@code cfs}
     * and {@code keys} are {@code List}s of equal length), each with the length of what it found
     * ({@code found}, the {@code List<byte[]>} it returned; -1 for nothing).
     */
    public static void multiGet(Object cfs, Object keys, Object found) {
        if (writer != null) {
            List<?> families = (List<?>) cfs;
            List<?> keyList = (List<?>) keys;
            List<?> values = (List<?>) found;
            ThreadTrace t = CURRENT.get();
            int n = Math.min(families.size(), keyList.size());
            for (int i = 0; i < n; i++) {
                byte[] value = i < values.size() ? (byte[]) values.get(i) : null;
                t.access(Ops.GET, families.get(i), (byte[]) keyList.get(i),
                        value == null ? -1 : value.length);
            }
        }
    }

    /** A range request over {@code [begin, end)} on column family {@code cf}. */
    public static void range(int op, Object cf, byte[] begin, byte[] end) {
        if (writer != null) {
            CURRENT.get().range(op, cf, begin, end);
        }
    }

    /** A commit of write batch {@code batch}. */
    public static void commit(Object batch) {
        if (writer != null) {
            CURRENT.get().commit(Native.entries(batch));
        }
    }

    /** A new iterator over column family {@code cf}. */
    public static void iteratorOpened(Object iterator, Object cf) {
        if (writer != null) {
            CURRENT.get().iteratorOpened(iterator, cf);
        }
    }

    /** A seek of {@code iterator} to {@code target}. */
    public static void seek(Object iterator, byte[] target) {
        if (writer != null) {
            CURRENT.get().seek(iterator, target);
        }
    }

    /** A step of {@code iterator}, recorded with the key it landed on (empty past the end). */
    public static void next(Object iterator) {
        if (writer != null) {
            CURRENT.get().next(iterator, Native.landedKey(iterator));
        }
    }

    /** An element handler of {@code operator} was entered (a marker if it has keyed state). */
    public static void elementEnter(Object operator, int input) {
        if (writer != null) {
            int[] depth = ELEMENT_DEPTH.get();
            if (depth[0]++ == 0 && Native.keyed(operator)) {
                CURRENT.get().event(input);
            }
        }
    }

    /** RocksDB instance {@code db} was opened at {@code path} with column families {@code handles}. */
    public static void instanceOpened(Object db, String path, Object handles) {
        Instances.opened(db, path, handles);
    }

    /** Column family {@code created} (a handle or a list of them) was created in instance {@code db}. */
    public static void familyCreated(Object db, Object created) {
        Instances.created(db, created);
    }

    /** An input record reached an engine other than Flink (Kafka Streams): an event marker. */
    public static void engineEvent() {
        if (writer != null) {
            CURRENT.get().event(0);
        }
    }

    /** An element handler returned. */
    public static void elementExit() {
        if (writer != null) {
            ELEMENT_DEPTH.get()[0]--;
        }
    }

    /** Watermark {@code mark} reached {@code operator} (a marker if it has keyed state). */
    public static void watermark(Object operator, Object mark) {
        if (writer != null && Native.keyed(operator)) {
            CURRENT.get().watermark(Native.timestamp(mark));
        }
    }
}
