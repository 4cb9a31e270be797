package gadget.recorder;

import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * Which RocksDB instance each column family handle belongs to, for engines that open one
 * instance per store (Kafka Streams, Spark): with {@code root=DIR} among the agent's
 * arguments, an instance opened under {@code DIR} names its column families
 * {@code <path below DIR>/<column family>} in the trace, so that the stores' states stay
 * apart and their names do not depend on where the state lives. Without {@code root} (Flink,
 * whose subtask has one instance) nothing is tracked and states keep their column family's
 * name.
 */
final class Instances {
    private Instances() {}

    private static volatile Path root;
    /** A {@code -} and a random UUID, as Spark appends them to its temporary directories. */
    private static final java.util.regex.Pattern UUID_SUFFIX = java.util.regex.Pattern.compile(
            "-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
    /** Handles and databases (which may override equals) by identity, to their instance's path. */
    private static final Map<Object, String> PATHS =
            Collections.synchronizedMap(new IdentityHashMap<>());

    /** Checkpoint objects to the instance each copies, by identity. */
    private static final Map<Object, Object> CHECKPOINTS =
            Collections.synchronizedMap(new IdentityHashMap<>());

    /** Checkpoint object {@code checkpoint} copies instance {@code db}. */
    static void checkpointOf(Object checkpoint, Object db) {
        if (checkpoint != null && db != null) {
            CHECKPOINTS.put(checkpoint, db);
        }
    }

    /** The instance checkpoint object {@code checkpoint} copies, {@code null} if unknown. */
    static Object checkpointed(Object checkpoint) {
        return CHECKPOINTS.get(checkpoint);
    }

    /** Tracks instances opened under {@code dir}. */
    static void root(Path dir) {
        root = dir.toAbsolutePath().normalize();
    }

    /** Instance {@code db} was opened at {@code path} with the column family handles {@code handles}. */
    static void opened(Object db, String path, Object handles) {
        String name = below(path);
        if (name == null) {
            return;
        }
        PATHS.put(db, name);
        if (handles instanceof List) {
            for (Object handle : (List<?>) handles) {
                PATHS.put(handle, name);
            }
        }
    }

    /** Column family {@code created} (a handle, or a list of handles) was created in instance {@code db}. */
    static void created(Object db, Object created) {
        String name = PATHS.get(db);
        if (name == null || created == null) {
            return;
        }
        if (created instanceof List) {
            for (Object handle : (List<?>) created) {
                PATHS.put(handle, name);
            }
        } else {
            PATHS.put(created, name);
        }
    }

    /** The instance path of a column family handle, {@code null} when not tracked. */
    static String of(Object handle) {
        return root == null ? null : PATHS.get(handle);
    }

    /** {@code path} relative to the root, with {@code /} separators; {@code null} outside it. */
    private static String below(String path) {
        Path r = root;
        if (r == null || path == null) {
            return null;
        }
        Path p = Paths.get(path).toAbsolutePath().normalize();
        if (!p.startsWith(r) || p.equals(r)) {
            return null;
        }
        // random parts of a path (Spark's `-<UUID>` suffixes) would make every run's names
        // differ: they are left out
        return UUID_SUFFIX.matcher(r.relativize(p).toString().replace('\\', '/')).replaceAll("");
    }
}
