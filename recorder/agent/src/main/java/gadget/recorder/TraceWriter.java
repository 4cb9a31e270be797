package gadget.recorder;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The background thread that writes the recorded chunks: each thread's records go to a body
 * file as they arrive; at shutdown each body becomes a complete Gadget text trace (header with
 * the thread's state table, the records, a footer with the counts), written to a temporary
 * file and renamed into place. The agent writes Gadget's text format only: its binary format
 * is spelled once, in Gadget, and {@code gadget record --format bin} converts the text to it.
 *
 * <p>Memory is bounded: at most {@code buffers} chunks are shared, plus the first chunk of
 * each recording thread (a task thread; their number is fixed by the job). A thread whose chunk is full
 * takes a free one; when none is free and none may be created, the full chunk's records are
 * dropped and counted (the trace's footer and stderr say how many), so Flink never waits on the
 * recorder.
 */
final class TraceWriter extends Thread {
    private static final Chunk END = new Chunk(0);

    private final Path out;
    private final int maxChunks;
    private final AtomicInteger chunks = new AtomicInteger();
    private final ArrayBlockingQueue<Chunk> full;
    private final ArrayBlockingQueue<Chunk> free;
    private final Map<ThreadTrace, OutputStream> bodies = new HashMap<>();
    private volatile IOException failure;

    TraceWriter(Path out, int buffers) {
        super("gadget-recorder-writer");
        setDaemon(true);
        this.out = out;
        this.maxChunks = Math.max(2, buffers);
        this.full = new ArrayBlockingQueue<>(maxChunks + 1);
        this.free = new ArrayBlockingQueue<>(maxChunks);
    }

    /** A free chunk, or a new one while fewer than the limit exist, else {@code null}. */
    private Chunk available() {
        Chunk c = free.poll();
        if (c != null) {
            return c;
        }
        for (int n = chunks.get(); n < maxChunks; n = chunks.get()) {
            if (chunks.compareAndSet(n, n + 1)) {
                return new Chunk(Chunk.SIZE);
            }
        }
        return null;
    }

    /** A chunk for a thread that has none yet (one is always given: at worst a new one). */
    Chunk freshChunk() {
        Chunk c = available();
        return c != null ? c : new Chunk(Chunk.SIZE);
    }

    /** Queues {@code done} for writing and returns an empty chunk (or drops and reuses it). */
    Chunk handOver(ThreadTrace owner, Chunk done) {
        Chunk next = available();
        done.owner = owner;
        if (next != null && full.offer(done)) {
            return next;
        }
        if (next != null) {
            free.offer(next);
        }
        owner.dropped += done.records;
        done.clear();
        return done;
    }

    @Override
    public void run() {
        try {
            while (true) {
                Chunk c = full.take();
                if (c == END) {
                    return;
                }
                write(c);
                c.clear();
                free.offer(c);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void write(Chunk c) {
        ThreadTrace t = c.owner;
        try {
            OutputStream body = bodies.get(t);
            if (body == null) {
                Files.createDirectories(out);
                body = Files.newOutputStream(bodyPath(t));
                bodies.put(t, body);
            }
            body.write(c.bytes, 0, c.length);
            t.events += c.events;
            t.watermarks += c.watermarks;
            for (int op = 0; op < c.byOp.length; op++) {
                t.byOp[op] += c.byOp[op];
                t.requests += c.byOp[op];
            }
        } catch (IOException e) {
            failure = e;
            t.dropped += c.records;
        }
    }

    private Path bodyPath(ThreadTrace t) {
        return out.resolve(".gadget-recorder-" + t.index + ".body");
    }

    /** Writes the last chunks, stops the thread and writes every trace file. */
    void finish(List<ThreadTrace> traces) {
        try {
            for (ThreadTrace t : traces) {
                Chunk last = t.takeLast();
                if (last != null) {
                    last.owner = t;
                    full.put(last);
                }
            }
            full.put(END);
            join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
        }
        Set<String> names = new HashSet<>();
        for (ThreadTrace t : traces) {
            OutputStream body = bodies.get(t);
            if (body == null) {
                continue;
            }
            try {
                body.close();
                String name = fileName(t.thread);
                if (!names.add(name)) {
                    name = name + "-" + t.index;
                    names.add(name);
                }
                assemble(t, out.resolve(name + ".trace.txt"));
            } catch (IOException e) {
                failure = e;
            }
            if (t.dropped > 0) {
                System.err.println("gadget recorder: dropped " + t.dropped + " records of '"
                        + t.thread + "' (every buffer was in flight); raise buffers=N");
            }
        }
        if (failure != null) {
            System.err.println("gadget recorder: writing traces under " + out + " failed: "
                    + failure);
        }
    }

    /** Header, body and footer into a temporary file, renamed to {@code target}. */
    private void assemble(ThreadTrace t, Path target) throws IOException {
        Path tmp = out.resolve("." + target.getFileName() + ".tmp");
        try (OutputStream o = Files.newOutputStream(tmp)) {
            byte[] header = header(t).getBytes(StandardCharsets.UTF_8);
            byte[] footer = footer(t).getBytes(StandardCharsets.UTF_8);
            o.write("#gadget-trace\ttext\t4\n#header\t".getBytes(StandardCharsets.UTF_8));
            o.write(header);
            o.write('\n');
            Files.copy(bodyPath(t), o);
            o.write("#footer\t".getBytes(StandardCharsets.UTF_8));
            o.write(footer);
            o.write('\n');
        }
        Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        Files.delete(bodyPath(t));
    }

    private static String header(ThreadTrace t) {
        StringBuilder s = new StringBuilder("{\"gadget_version\":\"0.1.0\",\"state_names\":[");
        for (int i = 0; i < t.states.size(); i++) {
            s.append(i == 0 ? "" : ",").append(Json.string(t.states.get(i)));
        }
        s.append("],\"seed\":null,\"config\":{\"recorder\":\"gadget-recorder-flink\",\"thread\":")
                .append(Json.string(t.thread));
        Subtask task = Subtask.of(t.thread);
        if (task != null) {
            s.append(",\"task\":").append(Json.string(task.task))
                    .append(",\"subtask\":").append(task.index)
                    .append(",\"parallelism\":").append(task.parallelism)
                    .append(",\"attempt\":").append(task.attempt);
        }
        s.append("},\"operator\":")
                .append(Json.string(t.thread))
                .append('}');
        return s.toString();
    }

    private static String footer(ThreadTrace t) {
        StringBuilder s = new StringBuilder("{\"events\":").append(t.events)
                .append(",\"watermarks\":").append(t.watermarks)
                .append(",\"requests\":").append(t.requests)
                .append(",\"truncated\":false,\"requests_by_op\":{");
        boolean first = true;
        for (int op = 0; op < t.byOp.length; op++) {
            if (t.byOp[op] > 0) {
                s.append(first ? "" : ",").append('"').append(Ops.NAMES[op]).append("\":")
                        .append(t.byOp[op]);
                first = false;
            }
        }
        return s.append("},\"extra\":{\"dropped_records\":").append(t.dropped).append("}}")
                .toString();
    }

    /**
     * A file name (without extension) from a thread name. A Flink task thread,
     * {@code <task> (<i+1>/<p>)#<attempt>}, gives {@code <task>.<i>}: the task's name made safe,
     * then its subtask index from 0 before the extension, as {@code gadget gen --subtask all}
     * names a job's subtasks ({@code tumbling-incr -> Sink: discard (2/4)#0} becomes
     * {@code tumbling-incr_-_Sink_discard.1}); a restarted attempt adds {@code _attempt<n>} to
     * the task's part. Any other thread: its name made safe.
     */
    static String fileName(String thread) {
        Subtask task = Subtask.of(thread);
        if (task == null) {
            return safe(thread);
        }
        String name = safe(task.task);
        if (task.attempt > 0) {
            name = name + "_attempt" + task.attempt;
        }
        return name + "." + task.index;
    }

    /** Only {@code [A-Za-z0-9._-]}, without leading or trailing {@code _}, at most 120 chars. */
    private static String safe(String name) {
        String safe = name.replaceAll("[^A-Za-z0-9._-]+", "_").replaceAll("^_+|_+$", "");
        if (safe.length() > 120) {
            safe = safe.substring(0, 120);
        }
        return safe.isEmpty() ? "thread" : safe;
    }

    /** A Flink task thread's subtask, from its name (Flink's {@code TaskInfo} format). */
    static final class Subtask {
        private static final java.util.regex.Pattern NAME =
                java.util.regex.Pattern.compile("(.*) \\((\\d+)/(\\d+)\\)#(\\d+)");

        /** The chained operators' names. */
        final String task;
        /** The subtask index, from 0. */
        final int index;
        final int parallelism;
        final int attempt;

        private Subtask(String task, int index, int parallelism, int attempt) {
            this.task = task;
            this.index = index;
            this.parallelism = parallelism;
            this.attempt = attempt;
        }

        /** The subtask a thread named {@code <task> (<i+1>/<p>)#<attempt>} runs, else null. */
        static Subtask of(String thread) {
            java.util.regex.Matcher m = NAME.matcher(thread);
            if (!m.matches()) {
                return null;
            }
            try {
                int oneBased = Integer.parseInt(m.group(2));
                int parallelism = Integer.parseInt(m.group(3));
                if (oneBased < 1 || oneBased > parallelism) {
                    return null;
                }
                return new Subtask(m.group(1), oneBased - 1, parallelism,
                        Integer.parseInt(m.group(4)));
            } catch (NumberFormatException e) {
                return null;
            }
        }
    }
}
