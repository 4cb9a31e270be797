package gadget.recorder;

import java.nio.charset.StandardCharsets;

import org.forstdb.ColumnFamilyHandle;
import org.forstdb.RocksDBException;
import org.forstdb.RocksIterator;
import org.forstdb.WriteBatch;

/**
 * Every use of a ForSt ({@code org.forstdb}: RocksJava under another package) type, in one
 * class that is loaded only at the first request on a ForSt object (through {@link Native}).
 */
final class NativeForSt {
    private NativeForSt() {}

    /** The name of a column family handle, {@code null} if ForSt cannot say. */
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
}
