package gadget.recorder;

import net.bytebuddy.asm.Advice;

/**
 * The advice woven into RocksDB's Java API (in {@code org.rocksdb} and in ForSt's
 * {@code org.forstdb}: the same advice for both) and Flink's operators. Each method is inlined into
 * the instrumented method, so it only calls {@link Recorder}; nothing here allocates.
 *
 * <p>Signatures name no RocksDB, ForSt or Flink type: reading this class (which Byte Buddy does
 * before the agent is installed) must not load the classes it instruments.
 */
public final class Advices {
    private Advices() {}

    /**
     * {@code byte[] RocksDB.get(ColumnFamilyHandle, byte[])}, recorded once it returns, with the
     * length of what it found ({@code -1}: nothing).
     */
    public static final class GetCfKey {
        @Advice.OnMethodExit
        static void exit(@Advice.Argument(0) Object cf, @Advice.Argument(1) byte[] key,
                @Advice.Return byte[] found) {
            Recorder.access(Ops.GET, cf, key, found == null ? -1 : found.length);
        }
    }

    /** {@code byte[] RocksDB.get(ColumnFamilyHandle, ReadOptions, byte[])}, as {@link GetCfKey}. */
    public static final class GetCfOptionsKey {
        @Advice.OnMethodExit
        static void exit(@Advice.Argument(0) Object cf, @Advice.Argument(2) byte[] key,
                @Advice.Return byte[] found) {
            Recorder.access(Ops.GET, cf, key, found == null ? -1 : found.length);
        }
    }

    /**
     * {@code List<byte[]> RocksDB.multiGetAsList(List<ColumnFamilyHandle>, List<byte[]>)}: one
     * {@code get} per key (ForSt's asynchronous backend reads in such batches).
     */
    public static final class MultiGet {
        @Advice.OnMethodExit
        static void exit(@Advice.Argument(0) Object cfs, @Advice.Argument(1) Object keys,
                @Advice.Return Object found) {
            Recorder.multiGet(cfs, keys, found);
        }
    }

    /** {@code List<byte[]> RocksDB.multiGetAsList(ReadOptions, List<ColumnFamilyHandle>, List<byte[]>)}. */
    public static final class MultiGetOptions {
        @Advice.OnMethodExit
        static void exit(@Advice.Argument(1) Object cfs, @Advice.Argument(2) Object keys,
                @Advice.Return Object found) {
            Recorder.multiGet(cfs, keys, found);
        }
    }

    /** {@code RocksDB.put/merge(ColumnFamilyHandle, byte[], byte[])}. */
    public static final class WriteCfKeyValue {
        @Advice.OnMethodEnter
        static void enter(@Advice.Origin("#m") String method, @Advice.Argument(0) Object cf,
                @Advice.Argument(1) byte[] key, @Advice.Argument(2) byte[] value) {
            Recorder.access(Ops.putOrMerge(method), cf, key, value.length);
        }
    }

    /** {@code RocksDB.put/merge(ColumnFamilyHandle, WriteOptions, byte[], byte[])}. */
    public static final class WriteCfOptionsKeyValue {
        @Advice.OnMethodEnter
        static void enter(@Advice.Origin("#m") String method, @Advice.Argument(0) Object cf,
                @Advice.Argument(2) byte[] key, @Advice.Argument(3) byte[] value) {
            Recorder.access(Ops.putOrMerge(method), cf, key, value.length);
        }
    }

    /** {@code RocksDB.delete(ColumnFamilyHandle, byte[])}. */
    public static final class DeleteCfKey {
        @Advice.OnMethodEnter
        static void enter(@Advice.Argument(0) Object cf, @Advice.Argument(1) byte[] key) {
            Recorder.access(Ops.DELETE, cf, key, 0);
        }
    }

    /** {@code RocksDB.delete(ColumnFamilyHandle, WriteOptions, byte[])}. */
    public static final class DeleteCfOptionsKey {
        @Advice.OnMethodEnter
        static void enter(@Advice.Argument(0) Object cf, @Advice.Argument(2) byte[] key) {
            Recorder.access(Ops.DELETE, cf, key, 0);
        }
    }

    /** {@code RocksDB.deleteRange(ColumnFamilyHandle, byte[], byte[])}. */
    public static final class DeleteRangeCf {
        @Advice.OnMethodEnter
        static void enter(@Advice.Argument(0) Object cf, @Advice.Argument(1) byte[] begin,
                @Advice.Argument(2) byte[] end) {
            Recorder.range(Ops.RANGE_DELETE, cf, begin, end);
        }
    }

    /** {@code RocksDB.deleteRange(ColumnFamilyHandle, WriteOptions, byte[], byte[])}. */
    public static final class DeleteRangeCfOptions {
        @Advice.OnMethodEnter
        static void enter(@Advice.Argument(0) Object cf, @Advice.Argument(2) byte[] begin,
                @Advice.Argument(3) byte[] end) {
            Recorder.range(Ops.RANGE_DELETE, cf, begin, end);
        }
    }

    /** {@code RocksDB.write(WriteOptions, WriteBatch)}: a batch commit of {@code count()} entries. */
    public static final class Write {
        @Advice.OnMethodEnter
        static void enter(@Advice.Argument(1) Object batch) {
            Recorder.commit(batch);
        }
    }

    /** {@code RocksDB.newIterator(ColumnFamilyHandle, ...)}: remembers the iterator's state. */
    public static final class NewIterator {
        @Advice.OnMethodExit
        static void exit(@Advice.Argument(0) Object cf, @Advice.Return Object iterator) {
            Recorder.iteratorOpened(iterator, cf);
        }
    }

    /** {@code byte[] RocksDB.get(byte[])}: the default column family, as {@link GetCfKey}. */
    public static final class GetDbKey {
        @Advice.OnMethodExit
        static void exit(@Advice.This Object db, @Advice.Argument(0) byte[] key,
                @Advice.Return byte[] found) {
            Recorder.dbAccess(Ops.GET, db, key, found == null ? -1 : found.length);
        }
    }

    /** {@code byte[] RocksDB.get(ReadOptions, byte[])}: the default column family, as {@link GetCfKey}. */
    public static final class GetDbOptionsKey {
        @Advice.OnMethodExit
        static void exit(@Advice.This Object db, @Advice.Argument(1) byte[] key,
                @Advice.Return byte[] found) {
            Recorder.dbAccess(Ops.GET, db, key, found == null ? -1 : found.length);
        }
    }

    /** {@code RocksDB.put/merge(byte[], byte[])}: the default column family. */
    public static final class WriteDbKeyValue {
        @Advice.OnMethodEnter
        static void enter(@Advice.Origin("#m") String method, @Advice.This Object db,
                @Advice.Argument(0) byte[] key, @Advice.Argument(1) byte[] value) {
            Recorder.dbAccess(Ops.putOrMerge(method), db, key, value.length);
        }
    }

    /** {@code RocksDB.put/merge(WriteOptions, byte[], byte[])}: the default column family. */
    public static final class WriteDbOptionsKeyValue {
        @Advice.OnMethodEnter
        static void enter(@Advice.Origin("#m") String method, @Advice.This Object db,
                @Advice.Argument(1) byte[] key, @Advice.Argument(2) byte[] value) {
            Recorder.dbAccess(Ops.putOrMerge(method), db, key, value.length);
        }
    }

    /** {@code RocksDB.delete(byte[])}: the default column family. */
    public static final class DeleteDbKey {
        @Advice.OnMethodEnter
        static void enter(@Advice.This Object db, @Advice.Argument(0) byte[] key) {
            Recorder.dbAccess(Ops.DELETE, db, key, 0);
        }
    }

    /** {@code RocksDB.delete(WriteOptions, byte[])}: the default column family. */
    public static final class DeleteDbOptionsKey {
        @Advice.OnMethodEnter
        static void enter(@Advice.This Object db, @Advice.Argument(1) byte[] key) {
            Recorder.dbAccess(Ops.DELETE, db, key, 0);
        }
    }

    /** {@code RocksDB.newIterator()} and {@code newIterator(ReadOptions)}: the default column family. */
    public static final class NewIteratorDb {
        @Advice.OnMethodExit
        static void exit(@Advice.This Object db, @Advice.Return Object iterator) {
            Recorder.dbIteratorOpened(iterator, db);
        }
    }

    /** {@code RocksDB.flush(FlushOptions)}: the instance's memtables flushed. */
    public static final class FlushDb {
        @Advice.OnMethodEnter
        static void enter(@Advice.This Object db) {
            Recorder.dbAccess(Ops.FLUSH, db, Recorder.EMPTY, 0);
        }
    }

    /** {@code RocksDB.open(Options, String)}: an instance with only its default column family. */
    public static final class OpenDefault {
        @Advice.OnMethodExit
        static void exit(@Advice.Argument(1) String path, @Advice.Return Object db) {
            Recorder.instanceOpened(db, path, null);
        }
    }

    /** {@code Checkpoint.create(RocksDB)}: which instance the checkpoint object copies. */
    public static final class CheckpointCreate {
        @Advice.OnMethodExit
        static void exit(@Advice.Argument(0) Object db, @Advice.Return Object checkpoint) {
            Recorder.checkpointOf(checkpoint, db);
        }
    }

    /** {@code Checkpoint.createCheckpoint(String)}: a checkpoint of the instance. */
    public static final class CheckpointTaken {
        @Advice.OnMethodEnter
        static void enter(@Advice.This Object checkpoint) {
            Recorder.checkpoint(checkpoint);
        }
    }

    /**
     * Spark's {@code RocksDBStateStoreProvider.getStore} and {@code getReadStore(version, ...)}:
     * a micro-batch's task takes the state store, an event marker.
     */
    public static final class SparkStoreLoaded {
        @Advice.OnMethodEnter
        static void enter() {
            Recorder.engineEvent();
        }
    }

    /** {@code AbstractRocksIterator.seek(byte[])}. */
    public static final class Seek {
        @Advice.OnMethodEnter
        static void enter(@Advice.This Object iterator, @Advice.Argument(0) byte[] target) {
            Recorder.seek(iterator, target);
        }
    }

    /** {@code AbstractRocksIterator.seekToFirst()}: a seek to the empty key. */
    public static final class SeekToFirst {
        @Advice.OnMethodEnter
        static void enter(@Advice.This Object iterator) {
            Recorder.seek(iterator, Recorder.EMPTY);
        }
    }

    /** {@code AbstractRocksIterator.next()}: recorded with the key it lands on. */
    public static final class Next {
        @Advice.OnMethodExit
        static void exit(@Advice.This Object iterator) {
            Recorder.next(iterator);
        }
    }

    /** {@code AbstractWriteBatch.put(ColumnFamilyHandle, byte[], byte[])}. */
    public static final class BatchPut {
        @Advice.OnMethodEnter
        static void enter(@Advice.Argument(0) Object cf, @Advice.Argument(1) byte[] key,
                @Advice.Argument(2) byte[] value) {
            Recorder.access(Ops.BATCH_PUT, cf, key, value.length);
        }
    }

    /** {@code AbstractWriteBatch.delete(ColumnFamilyHandle, byte[])}. */
    public static final class BatchDelete {
        @Advice.OnMethodEnter
        static void enter(@Advice.Argument(0) Object cf, @Advice.Argument(1) byte[] key) {
            Recorder.access(Ops.BATCH_DELETE, cf, key, 0);
        }
    }

    /**
     * {@code RocksDB.open(DBOptions, String, List<ColumnFamilyDescriptor>, List<ColumnFamilyHandle>)}:
     * the instance at the path and its handles ({@link Instances}).
     */
    public static final class OpenWithFamilies {
        @Advice.OnMethodExit
        static void exit(@Advice.Argument(1) String path, @Advice.Argument(3) Object handles,
                @Advice.Return Object db) {
            Recorder.instanceOpened(db, path, handles);
        }
    }

    /**
     * {@code RocksDB.createColumnFamily(ColumnFamilyDescriptor)} and
     * {@code createColumnFamilies(List)}: a handle, or a list of them, of this instance.
     */
    public static final class CreateFamily {
        @Advice.OnMethodExit
        static void exit(@Advice.This Object db, @Advice.Return Object created) {
            Recorder.familyCreated(db, created);
        }
    }

    /** Kafka Streams' {@code SourceNode.process(Record)}: an input record, an event marker. */
    public static final class KafkaRecord {
        @Advice.OnMethodEnter
        static void enter() {
            Recorder.engineEvent();
        }
    }

    /** {@code processElement(StreamRecord)} of a keyed operator: an event marker (input 0). */
    public static final class Element {
        @Advice.OnMethodEnter
        static void enter(@Advice.This Object operator) {
            Recorder.elementEnter(operator, 0);
        }

        @Advice.OnMethodExit(onThrowable = Throwable.class)
        static void exit() {
            Recorder.elementExit();
        }
    }

    /** {@code processElement1(StreamRecord)}: an event marker for input 1. */
    public static final class Element1 {
        @Advice.OnMethodEnter
        static void enter(@Advice.This Object operator) {
            Recorder.elementEnter(operator, 1);
        }

        @Advice.OnMethodExit(onThrowable = Throwable.class)
        static void exit() {
            Recorder.elementExit();
        }
    }

    /** {@code processElement2(StreamRecord)}: an event marker for input 2. */
    public static final class Element2 {
        @Advice.OnMethodEnter
        static void enter(@Advice.This Object operator) {
            Recorder.elementEnter(operator, 2);
        }

        @Advice.OnMethodExit(onThrowable = Throwable.class)
        static void exit() {
            Recorder.elementExit();
        }
    }

    /** {@code AbstractStreamOperator.processWatermark(Watermark)} of a keyed operator. */
    public static final class WatermarkArrived {
        @Advice.OnMethodEnter
        static void enter(@Advice.This Object operator, @Advice.Argument(0) Object mark) {
            Recorder.watermark(operator, mark);
        }
    }
}
