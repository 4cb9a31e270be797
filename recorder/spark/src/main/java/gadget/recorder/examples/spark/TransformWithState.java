package gadget.recorder.examples.spark;

import java.util.ArrayList;
import java.util.List;

import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.ExpiredTimerInfo;
import org.apache.spark.sql.streaming.ListState;
import org.apache.spark.sql.streaming.MapState;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StatefulProcessor;
import org.apache.spark.sql.streaming.TTLConfig;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.streaming.TimerValues;
import org.apache.spark.sql.streaming.ValueState;

import scala.Tuple2;
import scala.collection.Iterator;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Session counts per key written with Spark 4's {@code transformWithState} in event time
 * ({@code TimeMode.EventTime()}), one per kind of state variable: a session of a key ends
 * {@code gap} ms of event time after its latest record, when the key's event-time timer fires
 * and the processor emits (key, count) and clears the key's state.
 *
 * <ul>
 * <li>{@code value}: a {@code ValueState} of (count, latest event time). Per key with data: a
 * {@code get}; when there was a session, the timer at its latest time plus the gap is deleted;
 * the new state is written and a timer set at the new latest time plus the gap.</li>
 * <li>{@code list}: a {@code ListState} of the records' event times, appended per key with
 * data; the key's timers are listed (there is at most one), deleted, and a timer set at the
 * latest time plus the gap. On the timer the list is read for its length.</li>
 * <li>{@code map}: a {@code MapState} from the minute of event time to the records in it
 * (a session's histogram by minute): per record, a read and an update of its minute; the
 * timer as for the list. On the timer the counts are read and the map cleared.</li>
 * </ul>
 */
final class TransformWithState {
    private TransformWithState() {}

    /** The session count over {@code input} (key, ms, [type], time) with state kind {@code state}. */
    static Dataset<Row> sessions(Dataset<Row> input, String state, long gap, OutputMode mode) {
        StatefulProcessor<Long, Row, Tuple2<Long, Long>> processor = switch (state) {
            case "value" -> new ValueSessions(gap);
            case "list" -> new ListSessions(gap);
            case "map" -> new MapSessions(gap);
            default -> throw new IllegalArgumentException(
                    "--state is value, list or map, not " + state);
        };
        return input
                .groupByKey((MapFunction<Row, Long>) row -> row.getLong(0), Encoders.LONG())
                .transformWithState(processor, TimeMode.EventTime(), mode,
                        Encoders.tuple(Encoders.LONG(), Encoders.LONG()))
                .toDF("key", "count");
    }

    /** Nothing to emit. */
    static Iterator<Tuple2<Long, Long>> none() {
        return CollectionConverters.asScala(List.<Tuple2<Long, Long>>of().iterator());
    }

    /** One (key, count) to emit. */
    static Iterator<Tuple2<Long, Long>> one(long key, long count) {
        return CollectionConverters.asScala(List.of(new Tuple2<>(key, count)).iterator());
    }

    /** The latest time of {@code rows} (column 1), at least {@code latest}. */
    static long latest(Iterator<Row> rows, long latest, List<Row> seen) {
        while (rows.hasNext()) {
            Row row = rows.next();
            latest = Math.max(latest, row.getLong(1));
            seen.add(row);
        }
        return latest;
    }

    /** Deletes the key's timers; returns the latest of them, or Long.MIN_VALUE. */
    static long dropTimers(StatefulProcessor<?, ?, ?> processor) {
        long last = Long.MIN_VALUE;
        List<Long> timers = new ArrayList<>();
        Iterator<Object> it = processor.getHandle().listTimers();
        while (it.hasNext()) {
            timers.add((Long) it.next());
        }
        for (long t : timers) {
            processor.getHandle().deleteTimer(t);
            last = Math.max(last, t);
        }
        return last;
    }

    /** The session as a {@code ValueState} of (count, latest event time). */
    static final class ValueSessions extends StatefulProcessor<Long, Row, Tuple2<Long, Long>> {
        private final long gap;
        private transient ValueState<Tuple2<Long, Long>> session;

        ValueSessions(long gap) {
            this.gap = gap;
        }

        @Override
        public void init(OutputMode outputMode, TimeMode timeMode) {
            session = getHandle().getValueState("session",
                    Encoders.tuple(Encoders.LONG(), Encoders.LONG()), TTLConfig.NONE());
        }

        @Override
        public Iterator<Tuple2<Long, Long>> handleInputRows(Long key, Iterator<Row> rows,
                TimerValues timerValues) {
            Tuple2<Long, Long> before = session.get();
            long count = before == null ? 0 : before._1();
            long latest = before == null ? Long.MIN_VALUE : before._2();
            List<Row> seen = new ArrayList<>();
            latest = latest(rows, latest, seen);
            if (before != null) {
                getHandle().deleteTimer(before._2() + gap);
            }
            session.update(new Tuple2<>(count + seen.size(), latest));
            getHandle().registerTimer(latest + gap);
            return none();
        }

        @Override
        public Iterator<Tuple2<Long, Long>> handleExpiredTimer(Long key, TimerValues timerValues,
                ExpiredTimerInfo expired) {
            Tuple2<Long, Long> ended = session.get();
            session.clear();
            return one(key, ended._1());
        }
    }

    /** The session as a {@code ListState} of its records' event times. */
    static final class ListSessions extends StatefulProcessor<Long, Row, Tuple2<Long, Long>> {
        private final long gap;
        private transient ListState<Long> times;

        ListSessions(long gap) {
            this.gap = gap;
        }

        @Override
        public void init(OutputMode outputMode, TimeMode timeMode) {
            times = getHandle().getListState("times", Encoders.LONG(), TTLConfig.NONE());
        }

        @Override
        public Iterator<Tuple2<Long, Long>> handleInputRows(Long key, Iterator<Row> rows,
                TimerValues timerValues) {
            long timer = dropTimers(this);
            List<Row> seen = new ArrayList<>();
            long latest = latest(rows, timer == Long.MIN_VALUE ? Long.MIN_VALUE : timer - gap, seen);
            Long[] appended = new Long[seen.size()];
            for (int i = 0; i < appended.length; i++) {
                appended[i] = seen.get(i).getLong(1);
            }
            times.appendList(appended);
            getHandle().registerTimer(latest + gap);
            return none();
        }

        @Override
        public Iterator<Tuple2<Long, Long>> handleExpiredTimer(Long key, TimerValues timerValues,
                ExpiredTimerInfo expired) {
            long count = 0;
            Iterator<Long> it = times.get();
            while (it.hasNext()) {
                it.next();
                count++;
            }
            times.clear();
            return one(key, count);
        }
    }

    /** The session as a {@code MapState} from the minute of event time to its records. */
    static final class MapSessions extends StatefulProcessor<Long, Row, Tuple2<Long, Long>> {
        private final long gap;
        private transient MapState<Long, Long> byMinute;

        MapSessions(long gap) {
            this.gap = gap;
        }

        @Override
        public void init(OutputMode outputMode, TimeMode timeMode) {
            byMinute = getHandle().getMapState("by-minute", Encoders.LONG(), Encoders.LONG(),
                    TTLConfig.NONE());
        }

        @Override
        public Iterator<Tuple2<Long, Long>> handleInputRows(Long key, Iterator<Row> rows,
                TimerValues timerValues) {
            long timer = dropTimers(this);
            List<Row> seen = new ArrayList<>();
            long latest = latest(rows, timer == Long.MIN_VALUE ? Long.MIN_VALUE : timer - gap, seen);
            for (Row row : seen) {
                long minute = Math.floorDiv(row.getLong(1), 60_000L);
                Long count = byMinute.getValue(minute);
                byMinute.updateValue(minute, count == null ? 1 : count + 1);
            }
            getHandle().registerTimer(latest + gap);
            return none();
        }

        @Override
        public Iterator<Tuple2<Long, Long>> handleExpiredTimer(Long key, TimerValues timerValues,
                ExpiredTimerInfo expired) {
            long count = 0;
            Iterator<Long> it = byMinute.values();
            while (it.hasNext()) {
                count += it.next();
            }
            byMinute.clear();
            return one(key, count);
        }
    }
}
