package gadget.recorder;

import java.nio.charset.StandardCharsets;

/** Gadget's ops: their codes (as Gadget's binary trace format numbers them) and names (the text format's). */
public final class Ops {
    private Ops() {}

    /** Point read. */
    public static final int GET = 0;
    /** Point write. */
    public static final int PUT = 1;
    /** Merge (append). */
    public static final int MERGE = 2;
    /** Point delete. */
    public static final int DELETE = 3;
    /** New iterator at the first key {@code >=} the key. */
    public static final int SEEK = 4;
    /** Iterator step. */
    public static final int NEXT = 5;
    /** Put added to a write batch. */
    public static final int BATCH_PUT = 6;
    /** Delete added to a write batch. */
    public static final int BATCH_DELETE = 7;
    /** Write-batch commit. */
    public static final int BATCH_COMMIT = 8;
    /** Delete of a key range. */
    public static final int RANGE_DELETE = 9;
    /** Read of a key range. */
    public static final int RANGE_QUERY = 10;
    /** A flush of an instance's memtables (Spark's commit, WAL off). */
    public static final int FLUSH = 13;
    /** A checkpoint of an instance (Spark's commit: {@code Checkpoint.createCheckpoint}). */
    public static final int CHECKPOINT = 14;

    /** The text names, by code. */
    public static final String[] NAMES = {
        "get", "put", "merge", "delete", "seek", "next", "batch_put", "batch_delete",
        "batch_commit", "range_delete", "range_query", "open", "drop", "flush", "checkpoint",
    };

    static final byte[][] NAME_BYTES = new byte[NAMES.length][];

    static {
        for (int i = 0; i < NAMES.length; i++) {
            NAME_BYTES[i] = NAMES[i].getBytes(StandardCharsets.US_ASCII);
        }
    }

    /** {@link #PUT} for a method named {@code put}, else {@link #MERGE}. */
    public static int putOrMerge(String method) {
        return "put".equals(method) ? PUT : MERGE;
    }
}
