package gadget.recorder;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.WeakHashMap;

/**
 * The records of one thread (a Flink task thread, so one subtask), encoded as Gadget text-trace
 * lines into {@link Chunk}s that the {@link TraceWriter} appends to the thread's file.
 *
 * <p>With {@code threads=one} every thread records into one instance, so whatever touches the
 * state table, the iterators or the chunk holds the instance's lock: two Kafka Streams stream
 * threads opening their tasks' stores at once lost a state name from the table otherwise.
 */
final class ThreadTrace {
    private static final byte[] HEX = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] EVENT = "#ev\t\t\t".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] WATERMARK = "#wm\t\t\t".getBytes(StandardCharsets.US_ASCII);
    private static final String DEFAULT_STATE = "default";

    /** The thread's name: Flink's task name with the subtask index. */
    final String thread;
    /** Order of first appearance among the recorded threads. */
    final int index;
    private final TraceWriter writer;

    /** Column family handles (which override equals) by identity, to state ids. */
    private final Map<Object, Integer> cfIds = new IdentityHashMap<>();
    /** Open iterators to the state they read. */
    private final Map<Object, Integer> iterators = new WeakHashMap<>();
    /** State names in order of first appearance: the trace's state table. */
    final List<String> states = new ArrayList<>();
    private final List<byte[]> stateBytes = new ArrayList<>();
    private final Map<String, Integer> stateIds = new HashMap<>();

    private Chunk chunk;

    /** Records dropped because every buffer was in flight. */
    long dropped;
    /** What the writer wrote (writer thread only). */
    long events;
    long watermarks;
    long requests;
    final long[] byOp = new long[Ops.NAMES.length];

    ThreadTrace(String thread, int index, TraceWriter writer) {
        this.thread = thread;
        this.index = index;
        this.writer = writer;
    }

    private synchronized int state(String name) {
        Integer id = stateIds.get(name);
        if (id == null) {
            id = states.size();
            states.add(name);
            stateBytes.add(name.getBytes(StandardCharsets.UTF_8));
            stateIds.put(name, id);
        }
        return id;
    }

    private synchronized int state(Object cf) {
        if (cf == null) {
            return state(DEFAULT_STATE);
        }
        Integer id = cfIds.get(cf);
        if (id == null) {
            String name = Native.columnFamily(cf);
            if (name == null) {
                name = "column-family-" + cfIds.size();
            }
            String instance = Instances.of(cf);
            id = state(instance == null ? name : instance + "/" + name);
            cfIds.put(cf, id);
        }
        return id;
    }

    /** A chunk with room for {@code n} more bytes. */
    private Chunk room(int n) {
        if (chunk == null) {
            chunk = writer.freshChunk();
        }
        if (!chunk.fits(n)) {
            if (chunk.length > 0) {
                chunk = writer.handOver(this, chunk);
            }
            chunk.grow(n);
        }
        return chunk;
    }

    private static int putBytes(byte[] to, int at, byte[] from) {
        System.arraycopy(from, 0, to, at, from.length);
        return at + from.length;
    }

    private static int putHex(byte[] to, int at, byte[] key) {
        for (byte b : key) {
            to[at++] = HEX[(b >> 4) & 0xf];
            to[at++] = HEX[b & 0xf];
        }
        return at;
    }

    private static int putLong(byte[] to, int at, long v) {
        if (v < 0) {
            to[at++] = '-';
            if (v == Long.MIN_VALUE) {
                return putBytes(to, at, "9223372036854775808".getBytes(StandardCharsets.US_ASCII));
            }
            v = -v;
        }
        int start = at;
        do {
            to[at++] = (byte) ('0' + (v % 10));
            v /= 10;
        } while (v != 0);
        for (int i = start, j = at - 1; i < j; i++, j--) {
            byte t = to[i];
            to[i] = to[j];
            to[j] = t;
        }
        return at;
    }

    private synchronized void line(int op, int state, byte[] key, byte[] end, long value) {
        byte[] name = Ops.NAME_BYTES[op];
        byte[] stateName = stateBytes.get(state);
        int keyLen = 2 * key.length + (end == null ? 0 : 2 + 2 * end.length);
        Chunk c = room(name.length + stateName.length + keyLen + 24);
        byte[] b = c.bytes;
        int at = putBytes(b, c.length, name);
        b[at++] = '\t';
        at = putBytes(b, at, stateName);
        b[at++] = '\t';
        at = putHex(b, at, key);
        if (end != null) {
            b[at++] = '.';
            b[at++] = '.';
            at = putHex(b, at, end);
        }
        b[at++] = '\t';
        at = putLong(b, at, value);
        b[at++] = '\n';
        c.length = at;
        c.records++;
        c.byOp[op]++;
    }

    private synchronized void marker(byte[] tag, long value, boolean event) {
        Chunk c = room(tag.length + 24);
        int at = putBytes(c.bytes, c.length, tag);
        at = putLong(c.bytes, at, value);
        c.bytes[at++] = '\n';
        c.length = at;
        c.records++;
        if (event) {
            c.events++;
        } else {
            c.watermarks++;
        }
    }

    void access(int op, Object cf, byte[] key, int valueLen) {
        line(op, state(cf), key, null, valueLen);
    }

    void range(int op, Object cf, byte[] begin, byte[] end) {
        line(op, state(cf), begin, end, 0);
    }

    void commit(int entries) {
        line(Ops.BATCH_COMMIT, state(DEFAULT_STATE), Recorder.EMPTY, null, entries);
    }

    /** The state of instance {@code db}'s default column family: {@code <instance>/default}. */
    private int dbState(Object db) {
        String instance = db == null ? null : Instances.of(db);
        return state(instance == null ? DEFAULT_STATE : instance + "/" + DEFAULT_STATE);
    }

    void dbAccess(int op, Object db, byte[] key, int valueLen) {
        line(op, dbState(db), key, null, valueLen);
    }

    synchronized void dbIteratorOpened(Object iterator, Object db) {
        iterators.put(iterator, dbState(db));
    }

    synchronized void iteratorOpened(Object iterator, Object cf) {
        iterators.put(iterator, state(cf));
    }

    private synchronized int iteratorState(Object iterator) {
        Integer s = iterators.get(iterator);
        return s == null ? state(DEFAULT_STATE) : s;
    }

    void seek(Object iterator, byte[] target) {
        line(Ops.SEEK, iteratorState(iterator), target, null, 0);
    }

    void next(Object iterator, byte[] landed) {
        line(Ops.NEXT, iteratorState(iterator), landed, null, 0);
    }

    void event(int input) {
        marker(EVENT, input, true);
    }

    void watermark(long timestamp) {
        marker(WATERMARK, timestamp, false);
    }

    /** Hands the last chunk to the writer (at shutdown); {@code null} when there is none. */
    synchronized Chunk takeLast() {
        Chunk c = chunk;
        chunk = null;
        return c != null && c.length > 0 ? c : null;
    }
}
