package gadget.recorder;

import java.nio.charset.StandardCharsets;

import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.WriteBatch;

/**
 * Every use of a RocksDB or Flink type, in one class that is loaded only at the first
 * recorded request (by then those classes are loaded, and instrumented, by the job itself).
 */
final class Native {
    private Native() {}

    /** The name of a column family handle, {@code null} if RocksDB cannot say. */
    static String columnFamily(Object cf) {
        try {
            return new String(((ColumnFamilyHandle) cf).getName(), StandardCharsets.UTF_8);
        } catch (RocksDBException | ClassCastException e) {
            return null;
        }
    }

    /** The entries of a write batch about to be committed. */
    static int entries(Object batch) {
        return batch instanceof WriteBatch ? ((WriteBatch) batch).count() : 0;
    }

    /** The key an iterator stands on after a step; empty past the end. */
    static byte[] landedKey(Object iterator) {
        if (iterator instanceof RocksIterator && ((RocksIterator) iterator).isValid()) {
            return ((RocksIterator) iterator).key();
        }
        return Recorder.EMPTY;
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
