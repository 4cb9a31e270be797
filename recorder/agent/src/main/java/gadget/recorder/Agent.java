package gadget.recorder;

import static net.bytebuddy.matcher.ElementMatchers.any;
import static net.bytebuddy.matcher.ElementMatchers.declaresMethod;
import static net.bytebuddy.matcher.ElementMatchers.failSafe;
import static net.bytebuddy.matcher.ElementMatchers.hasSuperType;
import static net.bytebuddy.matcher.ElementMatchers.isAbstract;
import static net.bytebuddy.matcher.ElementMatchers.isBootstrapClassLoader;
import static net.bytebuddy.matcher.ElementMatchers.isPublic;
import static net.bytebuddy.matcher.ElementMatchers.isStatic;
import static net.bytebuddy.matcher.ElementMatchers.nameEndsWith;
import static net.bytebuddy.matcher.ElementMatchers.named;
import static net.bytebuddy.matcher.ElementMatchers.nameStartsWith;
import static net.bytebuddy.matcher.ElementMatchers.not;
import static net.bytebuddy.matcher.ElementMatchers.returns;
import static net.bytebuddy.matcher.ElementMatchers.takesArgument;
import static net.bytebuddy.matcher.ElementMatchers.takesArguments;

import java.lang.instrument.Instrumentation;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;

import net.bytebuddy.agent.builder.AgentBuilder;
import net.bytebuddy.asm.Advice;
import net.bytebuddy.description.method.MethodDescription;
import net.bytebuddy.matcher.ElementMatcher;

/**
 * The Java agent: {@code -javaagent:gadget-recorder-flink.jar=out=DIR}. It weaves
 * {@link Advice} into the RocksDB Java API that Flink's RocksDB state backend calls (and into
 * its ForSt fork, {@code org.forstdb}, that Flink 2.x's ForSt state backend calls), and into
 * the element and watermark handlers of Flink's stream operators, and records every request,
 * per task thread, as a Gadget trace under {@code DIR}.
 *
 * <p>Arguments, comma-separated: {@code out=DIR} (default {@code gadget-traces}),
 * {@code format=text} (Gadget's text trace format, the only one it writes: {@code gadget record
 * --format bin} converts it to the binary format, which only Gadget spells),
 * {@code buffers=N} (64 KiB record buffers in flight to the writer thread, default 256:
 * when all are in flight, records are dropped and counted instead of blocking Flink),
 * {@code root=DIR} (name the states of RocksDB instances opened under {@code DIR} by their
 * path below it, {@link Instances}: for engines with one instance per store, such as Kafka
 * Streams), {@code threads=each|one} (a trace per thread, the default, or one trace of every
 * thread's requests in the order they were made: for Spark in {@code local[1]}, whose tasks
 * run one at a time on whichever executor thread is free), {@code engine=flink|spark|kafka-streams}
 * (weave only that engine's handlers beside the RocksDB API: matching every class a Spark
 * driver loads against Flink's operator hierarchy took longer than the query; default: every
 * engine's).
 */
public final class Agent {
    private Agent() {}

    /** Entry point of {@code -javaagent:}. */
    public static void premain(String args, Instrumentation inst) {
        Path out = Paths.get("gadget-traces");
        int buffers = 256;
        boolean oneTrace = false;
        String engine = "all";
        if (args != null && !args.isEmpty()) {
            for (String arg : args.split(",")) {
                int eq = arg.indexOf('=');
                String key = eq < 0 ? arg : arg.substring(0, eq);
                String value = eq < 0 ? "" : arg.substring(eq + 1);
                switch (key) {
                    case "out":
                        out = Paths.get(value);
                        break;
                    case "root":
                        Instances.root(Paths.get(value));
                        break;
                    case "buffers":
                        buffers = Integer.parseInt(value);
                        break;
                    case "format":
                        if (!value.equals("text")) {
                            throw new IllegalArgumentException("gadget recorder: the agent writes "
                                    + "Gadget's text format (format=text), not '" + value
                                    + "'; `gadget record --format bin` converts it to the binary format");
                        }
                        break;
                    case "engine":
                        if (!ENGINES.contains(value)) {
                            throw new IllegalArgumentException("gadget recorder: engine is one of "
                                    + String.join(", ", ENGINES) + ", not '" + value + "'");
                        }
                        engine = value;
                        break;
                    case "threads":
                        if (!value.equals("each") && !value.equals("one")) {
                            throw new IllegalArgumentException(
                                    "gadget recorder: threads is each or one, not '" + value + "'");
                        }
                        oneTrace = value.equals("one");
                        break;
                    default:
                        throw new IllegalArgumentException(
                                "gadget recorder: unknown agent argument '" + key
                                        + "'; the arguments are out=DIR, format=text, buffers=N, root=DIR, threads=each|one and engine=flink|spark|kafka-streams");
                }
            }
        }
        Recorder.start(out, buffers, oneTrace);
        install(inst, engine);
    }

    /** The engines {@code engine=} names. */
    static final List<String> ENGINES = List.of("flink", "spark", "kafka-streams");

    /** Entry point when attached to a running JVM. */
    public static void agentmain(String args, Instrumentation inst) {
        premain(args, inst);
    }

    private static ElementMatcher.Junction<MethodDescription> arg(int i, String type) {
        return takesArgument(i, named(type));
    }

    /**
     * The packages of the RocksJava APIs instrumented, all by name with the same matchers:
     * RocksDB's own ({@code frocksdbjni}, Flink's RocksDB state backend) and ForSt's fork of it
     * ({@code forstjni}, Flink 2.x's ForSt state backend), which mirrors RocksJava class for
     * class and method for method under another package.
     */
    static final String[] ROCKS_JAVA = {"org.rocksdb.", "org.forstdb."};

    /** The RocksJava API under package {@code pkg} ({@code "org.rocksdb."} or {@code "org.forstdb."}). */
    private static AgentBuilder rocksJava(AgentBuilder builder, String pkg) {
        String cf = pkg + "ColumnFamilyHandle";
        String readOptions = pkg + "ReadOptions";
        String writeOptions = pkg + "WriteOptions";
        return builder
                .type(named(pkg + "RocksDB"))
                .transform((b, type, loader, module, domain) -> b
                        .visit(Advice.to(Advices.GetCfKey.class).on(named("get")
                                .and(takesArguments(2)).and(arg(0, cf)).and(takesArgument(1, byte[].class))
                                .and(returns(byte[].class))))
                        .visit(Advice.to(Advices.GetCfOptionsKey.class).on(named("get")
                                .and(takesArguments(3)).and(arg(0, cf)).and(arg(1, readOptions))
                                .and(takesArgument(2, byte[].class)).and(returns(byte[].class))))
                        .visit(Advice.to(Advices.MultiGet.class).on(named("multiGetAsList")
                                .and(takesArguments(2)).and(takesArgument(0, List.class))
                                .and(takesArgument(1, List.class))))
                        .visit(Advice.to(Advices.MultiGetOptions.class).on(named("multiGetAsList")
                                .and(takesArguments(3)).and(arg(0, readOptions))
                                .and(takesArgument(1, List.class)).and(takesArgument(2, List.class))))
                        .visit(Advice.to(Advices.WriteCfKeyValue.class).on(named("put").or(named("merge"))
                                .and(takesArguments(3)).and(arg(0, cf))
                                .and(takesArgument(1, byte[].class)).and(takesArgument(2, byte[].class))))
                        .visit(Advice.to(Advices.WriteCfOptionsKeyValue.class).on(named("put").or(named("merge"))
                                .and(takesArguments(4)).and(arg(0, cf)).and(arg(1, writeOptions))
                                .and(takesArgument(2, byte[].class)).and(takesArgument(3, byte[].class))))
                        .visit(Advice.to(Advices.DeleteCfKey.class).on(named("delete")
                                .and(takesArguments(2)).and(arg(0, cf)).and(takesArgument(1, byte[].class))))
                        .visit(Advice.to(Advices.DeleteCfOptionsKey.class).on(named("delete")
                                .and(takesArguments(3)).and(arg(0, cf)).and(arg(1, writeOptions))
                                .and(takesArgument(2, byte[].class))))
                        .visit(Advice.to(Advices.DeleteRangeCf.class).on(named("deleteRange")
                                .and(takesArguments(3)).and(arg(0, cf))))
                        .visit(Advice.to(Advices.DeleteRangeCfOptions.class).on(named("deleteRange")
                                .and(takesArguments(4)).and(arg(0, cf)).and(arg(1, writeOptions))))
                        .visit(Advice.to(Advices.Write.class).on(named("write")
                                .and(takesArguments(2)).and(arg(1, pkg + "WriteBatch"))))
                        .visit(Advice.to(Advices.NewIterator.class).on(named("newIterator")
                                .and(isPublic()).and(arg(0, cf))))
                        .visit(Advice.to(Advices.GetDbKey.class).on(named("get")
                                .and(takesArguments(1)).and(takesArgument(0, byte[].class))
                                .and(returns(byte[].class))))
                        .visit(Advice.to(Advices.GetDbOptionsKey.class).on(named("get")
                                .and(takesArguments(2)).and(arg(0, readOptions))
                                .and(takesArgument(1, byte[].class)).and(returns(byte[].class))))
                        .visit(Advice.to(Advices.WriteDbKeyValue.class).on(named("put").or(named("merge"))
                                .and(takesArguments(2)).and(takesArgument(0, byte[].class))
                                .and(takesArgument(1, byte[].class))))
                        .visit(Advice.to(Advices.WriteDbOptionsKeyValue.class).on(named("put").or(named("merge"))
                                .and(takesArguments(3)).and(arg(0, writeOptions))
                                .and(takesArgument(1, byte[].class)).and(takesArgument(2, byte[].class))))
                        .visit(Advice.to(Advices.DeleteDbKey.class).on(named("delete")
                                .and(takesArguments(1)).and(takesArgument(0, byte[].class))))
                        .visit(Advice.to(Advices.DeleteDbOptionsKey.class).on(named("delete")
                                .and(takesArguments(2)).and(arg(0, writeOptions))
                                .and(takesArgument(1, byte[].class))))
                        .visit(Advice.to(Advices.NewIteratorDb.class).on(named("newIterator")
                                .and(isPublic()).and(takesArguments(0)
                                        .or(takesArguments(1).and(arg(0, readOptions))))))
                        .visit(Advice.to(Advices.FlushDb.class).on(named("flush")
                                .and(takesArguments(1)).and(arg(0, pkg + "FlushOptions"))))
                        .visit(Advice.to(Advices.OpenDefault.class).on(named("open")
                                .and(isStatic()).and(takesArguments(2))
                                .and(arg(0, pkg + "Options")).and(takesArgument(1, String.class))))
                        .visit(Advice.to(Advices.OpenWithFamilies.class).on(named("open")
                                .and(isStatic()).and(takesArguments(4))
                                .and(takesArgument(1, String.class))
                                .and(takesArgument(2, List.class)).and(takesArgument(3, List.class))))
                        .visit(Advice.to(Advices.CreateFamily.class).on(named("createColumnFamily")
                                .and(takesArguments(1)).and(arg(0, pkg + "ColumnFamilyDescriptor"))
                                .or(named("createColumnFamilies").and(takesArguments(1))
                                        .and(takesArgument(0, List.class))))))
                .type(named(pkg + "Checkpoint"))
                .transform((b, type, loader, module, domain) -> b
                        .visit(Advice.to(Advices.CheckpointCreate.class).on(named("create")
                                .and(isStatic()).and(takesArguments(1))))
                        .visit(Advice.to(Advices.CheckpointTaken.class).on(named("createCheckpoint")
                                .and(takesArguments(1)).and(takesArgument(0, String.class)))))
                .type(named(pkg + "AbstractRocksIterator"))
                .transform((b, type, loader, module, domain) -> b
                        .visit(Advice.to(Advices.Seek.class).on(named("seek")
                                .and(takesArguments(1)).and(takesArgument(0, byte[].class))))
                        .visit(Advice.to(Advices.SeekToFirst.class).on(named("seekToFirst")
                                .and(takesArguments(0))))
                        .visit(Advice.to(Advices.Next.class).on(named("next").and(takesArguments(0)))))
                .type(named(pkg + "AbstractWriteBatch"))
                .transform((b, type, loader, module, domain) -> b
                        .visit(Advice.to(Advices.BatchPut.class).on(named("put")
                                .and(takesArguments(3)).and(arg(0, cf))
                                .and(takesArgument(1, byte[].class)).and(takesArgument(2, byte[].class))))
                        .visit(Advice.to(Advices.BatchDelete.class).on(named("delete")
                                .and(takesArguments(2)).and(arg(0, cf)).and(takesArgument(1, byte[].class)))));
    }

    /** The methods of a Flink operator that take element advice. */
    private static final ElementMatcher<MethodDescription> ADVISED_ELEMENT_METHODS =
            named("processElement").or(named("processElement1")).or(named("processElement2"));

    private static void install(Instrumentation inst, String engine) {
        String operator = "org.apache.flink.streaming.api.operators.AbstractStreamOperator";
        String streamRecord = "org.apache.flink.streaming.runtime.streamrecord.StreamRecord";
        boolean all = engine.equals("all");
        AgentBuilder builder = new AgentBuilder.Default()
                .disableClassFormatChanges()
                .with(AgentBuilder.RedefinitionStrategy.RETRANSFORMATION)
                .with(AgentBuilder.Listener.StreamWriting.toSystemError().withErrorsOnly())
                // the JDK's own classes hold no engine's code; Flink's shaded libraries hold no
                // operator, and skipping them also spares the operator matcher netty's optional
                // log4j classes, whose super types Flink 2.x does not ship (Byte Buddy would
                // print each as an error)
                .ignore(any(), isBootstrapClassLoader())
                .or(nameStartsWith("gadget.recorder.").or(nameStartsWith("net.bytebuddy."))
                        .or(nameStartsWith("org.apache.flink.shaded.")));
        for (String pkg : ROCKS_JAVA) {
            builder = rocksJava(builder, pkg);
        }
        if (all || engine.equals("flink")) {
            builder = builder
                    // only a class that declares one of the advised methods can take advice, so
                    // its own methods are read before its super types: resolving the super
                    // types of each of the ~7,000 classes a Flink job loads cost about 2.5 s of
                    // the JVM's start. Fail-safe: a class whose superclass is missing from the
                    // class path (an optional logging binding, say) is no operator, not an
                    // error to report
                    .type(not(isAbstract()).and(declaresMethod(ADVISED_ELEMENT_METHODS))
                            .and(failSafe(hasSuperType(named(operator)))))
                    .transform((b, type, loader, module, domain) -> b
                            .visit(Advice.to(Advices.Element.class).on(named("processElement")
                                    .and(takesArguments(1)).and(arg(0, streamRecord))))
                            .visit(Advice.to(Advices.Element1.class).on(named("processElement1")
                                    .and(takesArguments(1)).and(arg(0, streamRecord))))
                            .visit(Advice.to(Advices.Element2.class).on(named("processElement2")
                                    .and(takesArguments(1)).and(arg(0, streamRecord)))))
                    .type(named(operator))
                    .transform((b, type, loader, module, domain) -> b
                            .visit(Advice.to(Advices.WatermarkArrived.class).on(named("processWatermark")
                                    .and(takesArguments(1))
                                    .and(arg(0, "org.apache.flink.streaming.api.watermark.Watermark")))));
        }
        if (all || engine.equals("spark")) {
            builder = builder
                    .type(nameEndsWith(".streaming.state.RocksDBStateStoreProvider"))
                    .transform((b, type, loader, module, domain) -> b
                            .visit(Advice.to(Advices.SparkStoreLoaded.class).on(named("getStore")
                                    .or(named("getReadStore")).and(isPublic()).and(takesArguments(2)))));
        }
        if (all || engine.equals("kafka-streams")) {
            builder = builder
                    .type(named("org.apache.kafka.streams.processor.internals.SourceNode"))
                    .transform((b, type, loader, module, domain) -> b
                            .visit(Advice.to(Advices.KafkaRecord.class).on(named("process")
                                    .and(takesArguments(1)))));
        }
        builder.installOn(inst);
    }
}
