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
 */
final class ThreadTrace {
    private static final byte[] HEX = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] EVENT = "#ev\t\t\t".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] WATERMARK = "#wm\t\t\t".getBytes(StandardCharsets.US_ASCII);
    private static final String DEFAULT_STATE = "default";
    /** Whether the warning that binary traces leave out an op was printed. */
    private static final java.util.concurrent.atomic.AtomicBoolean EXTENDED_WARNED =
            new java.util.concurrent.atomic.AtomicBoolean();

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
    private int elementDepth;
    /** Binary records (Gadget's binary trace format, one data block per chunk), else text. */
    private final boolean binary;
    /** Binary: the previous key of each state in the current block (prefix compression). */
    private final List<byte[]> prevKeys = new ArrayList<>();
    private int[] prevLens = new int[4];
    /** Binary: a range op's `begin ‖ end`. */
    private byte[] rangeKey = new byte[64];

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
        this.binary = writer.binary();
    }

    private int state(String name) {
        Integer id = stateIds.get(name);
        if (id == null) {
            id = states.size();
            states.add(name);
            stateBytes.add(name.getBytes(StandardCharsets.UTF_8));
            stateIds.put(name, id);
            prevKeys.add(new byte[16]);
            if (prevLens.length <= id) {
                prevLens = java.util.Arrays.copyOf(prevLens, 2 * id + 2);
            }
        }
        return id;
    }

    private int state(Object cf) {
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

    private static int putVarint(byte[] to, int at, long v) {
        while ((v & ~0x7fL) != 0) {
            to[at++] = (byte) ((v & 0x7f) | 0x80);
            v >>>= 7;
        }
        to[at++] = (byte) v;
        return at;
    }

    /**
     * A binary record: op, state, the key prefix-compressed against the state's last key.
     * Called by {@link #line}, which holds the lock.
     */
    private void record(int op, int state, byte[] key, int keyLen, long value) {
        Chunk c = room(keyLen + 32);
        if (c.length == 0) {
            // every block starts with empty previous keys, so blocks decode alone
            java.util.Arrays.fill(prevLens, 0);
        }
        byte[] prev = prevKeys.get(state);
        int prevLen = prevLens[state];
        int shared = 0;
        int max = Math.min(prevLen, keyLen);
        while (shared < max && prev[shared] == key[shared]) {
            shared++;
        }
        byte[] b = c.bytes;
        int at = c.length;
        b[at++] = (byte) op;
        at = putVarint(b, at, state);
        at = putVarint(b, at, shared);
        at = putVarint(b, at, keyLen - shared);
        System.arraycopy(key, shared, b, at, keyLen - shared);
        at += keyLen - shared;
        at = putVarint(b, at, value);
        c.length = at;
        c.records++;
        c.byOp[op]++;
        if (prev.length < keyLen) {
            prev = java.util.Arrays.copyOf(prev, Math.max(keyLen, 2 * prev.length));
            prevKeys.set(state, prev);
        }
        System.arraycopy(key, shared, prev, shared, keyLen - shared);
        prevLens[state] = keyLen;
    }

    private synchronized void line(int op, int state, byte[] key, byte[] end, long value) {
        if (binary && op > Ops.RANGE_QUERY) {
            // the binary format written (version 2) has no code for it: say so once, loudly
            if (!EXTENDED_WARNED.getAndSet(true)) {
                System.err.println("gadget recorder: this program issues `" + Ops.NAMES[op]
                        + "`, which the binary trace format (version 2) cannot carry; those "
                        + "requests are left out: record with format=text");
            }
            return;
        }
        if (binary) {
            if (end == null) {
                record(op, state, key, key.length, value);
            } else {
                int n = key.length + end.length;
                if (rangeKey.length < n) {
                    rangeKey = new byte[Math.max(n, 2 * rangeKey.length)];
                }
                System.arraycopy(key, 0, rangeKey, 0, key.length);
                System.arraycopy(end, 0, rangeKey, key.length, end.length);
                record(op, state, rangeKey, n, key.length);
            }
            return;
        }
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
        if (binary) {
            Chunk c = room(16);
            int at = c.length;
            if (event) {
                c.bytes[at++] = 0x10;
                c.bytes[at++] = (byte) value;
                c.events++;
            } else {
                c.bytes[at++] = 0x11;
                at = putVarint(c.bytes, at, (value << 1) ^ (value >> 63));
                c.watermarks++;
            }
            c.length = at;
            c.records++;
            return;
        }
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

    void dbIteratorOpened(Object iterator, Object db) {
        iterators.put(iterator, dbState(db));
    }

    void iteratorOpened(Object iterator, Object cf) {
        iterators.put(iterator, state(cf));
    }

    private int iteratorState(Object iterator) {
        Integer s = iterators.get(iterator);
        return s == null ? state(DEFAULT_STATE) : s;
    }

    void seek(Object iterator, byte[] target) {
        line(Ops.SEEK, iteratorState(iterator), target, null, 0);
    }

    void next(Object iterator, byte[] landed) {
        line(Ops.NEXT, iteratorState(iterator), landed, null, 0);
    }

    /** Enters an element handler; true for the outermost one (not a super call). */
    boolean elementEnter() {
        return elementDepth++ == 0;
    }

    void event(int input) {
        marker(EVENT, input, true);
    }

    void elementExit() {
        elementDepth--;
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
