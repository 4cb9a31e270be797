package gadget.recorder;

import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.watermark.Watermark;

/**
 * Every use of a Flink type, and the dispatch to the class that reads RocksJava objects: a
 * column family, write batch or iterator of RocksDB's {@code org.rocksdb} goes to
 * {@link NativeRocksDB}, one of ForSt's {@code org.forstdb} to {@link NativeForSt}. Each of those
 * names the types of its own package only, and is loaded at its first call, so a JVM without
 * ForSt (Flink 1.x) never loads {@code org.forstdb} and one without RocksDB never loads
 * {@code org.rocksdb}. This class is loaded at the first recorded request (by then the classes
 * it names are loaded, and instrumented, by the job itself).
 */
final class Native {
    private Native() {}

    private static final String FORST = "org.forstdb.";

    /** Whether {@code o} is one of ForSt's RocksJava objects (else RocksDB's). */
    private static boolean forst(Object o) {
        return o.getClass().getName().startsWith(FORST);
    }

    /** The name of a column family handle, {@code null} if RocksDB cannot say. */
    static String columnFamily(Object cf) {
        return forst(cf) ? NativeForSt.columnFamily(cf) : NativeRocksDB.columnFamily(cf);
    }

    /** The entries of a write batch about to be committed. */
    static int entries(Object batch) {
        return forst(batch) ? NativeForSt.entries(batch) : NativeRocksDB.entries(batch);
    }

    /** The key an iterator stands on after a step; empty past the end. */
    static byte[] landedKey(Object iterator) {
        return forst(iterator) ? NativeForSt.landedKey(iterator) : NativeRocksDB.landedKey(iterator);
    }

    /** Whether an operator has keyed state (its elements and watermarks are recorded). */
    static boolean keyed(Object operator) {
        return operator instanceof AbstractStreamOperator
                && ((AbstractStreamOperator<?>) operator).getKeyedStateBackend() != null;
    }

    /** A watermark's timestamp. */
    static long timestamp(Object mark) {
        return ((Watermark) mark).getTimestamp();
    }
}
