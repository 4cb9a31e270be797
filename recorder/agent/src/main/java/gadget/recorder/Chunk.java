package gadget.recorder;

/** A buffer of trace records on its way to the writer thread, with their counts. */
final class Chunk {
    /** Bytes of one buffer. */
    static final int SIZE = 64 * 1024;

    /** The thread whose records these are, set when the chunk is handed over. */
    ThreadTrace owner;
    byte[] bytes;
    int length;
    long records;
    long events;
    long watermarks;
    final long[] byOp = new long[Ops.NAMES.length];

    Chunk(int size) {
        this.bytes = new byte[size];
    }

    void clear() {
        length = 0;
        records = 0;
        events = 0;
        watermarks = 0;
        java.util.Arrays.fill(byOp, 0);
    }

    /** Whether {@code n} more bytes fit. */
    boolean fits(int n) {
        return length + n <= bytes.length;
    }

    /** Grows the buffer for a record larger than it (rare: a huge key). */
    void grow(int n) {
        if (length + n > bytes.length) {
            bytes = java.util.Arrays.copyOf(bytes, length + n);
        }
    }
}
