//! Flink's `WindowOperator` with a non-merging assigner: tumbling and sliding event-time windows.

use crate::access::{AccessSink, Op};
use crate::key::{Key, KeyGroupRange, KeyLayout, Namespace};
use crate::source::element::Event;
use crate::timer::{Timer, TimerQueue, TimerService};

use super::{
    cleanup_time, max_timestamp, window_timer_requests, Operator, WindowFunction, ACCUMULATOR_BYTES,
};

const WINDOW_CONTENTS: u16 = 0;

/// Which windows an element belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowAssigner {
    /// `TumblingEventTimeWindows.of(size, offset)`.
    Tumbling {
        /// Window length, ms.
        size: i64,
        /// Offset of window starts, ms.
        offset: i64,
    },
    /// `SlidingEventTimeWindows.of(size, slide, offset)`.
    Sliding {
        /// Window length, ms.
        size: i64,
        /// Distance between window starts, ms.
        slide: i64,
        /// Offset of window starts, ms.
        offset: i64,
    },
}

/// `TimeWindow.getWindowStartWithOffset`, wrapping around as Java's `long` does.
#[inline]
fn window_start(timestamp: i64, offset: i64, size: i64) -> i64 {
    let remainder = (timestamp.wrapping_sub(offset)) % size;
    if remainder < 0 {
        timestamp.wrapping_sub(remainder + size)
    } else {
        timestamp - remainder
    }
}

impl WindowAssigner {
    /// Calls `window` with each window of `timestamp` as `(start, end)`, in the assigner's
    /// order (no list is built: most events have one window, or a few). Near the ends of
    /// time the arithmetic wraps around as Java's `long` does (a window starting just before
    /// `i64::MAX` ends at a negative time, as in Flink), except that the sliding assigner
    /// stops where its next start would wrap, where Flink's loop would run on for ages.
    #[inline]
    pub fn for_each_window(&self, timestamp: i64, mut window: impl FnMut((i64, i64))) {
        match *self {
            WindowAssigner::Tumbling { size, offset } => {
                let start = window_start(timestamp, offset, size);
                window((start, start.wrapping_add(size)));
            }
            WindowAssigner::Sliding {
                size,
                slide,
                offset,
            } => {
                let last_start = window_start(timestamp, offset, slide);
                let mut start = last_start;
                while start > timestamp.wrapping_sub(size) {
                    window((start, start.wrapping_add(size)));
                    let Some(next) = start.checked_sub(slide) else {
                        break;
                    };
                    start = next;
                }
            }
        }
    }
}

/// Tumbling or sliding windows, keyed or not (`windowAll`), incremental or holistic.
#[derive(Debug)]
pub struct WindowOperator {
    assigner: WindowAssigner,
    function: WindowFunction,
    allowed_lateness: i64,
    keyed: bool,
    layout: KeyLayout,
    timers: TimerQueue<(i64, i64)>,
    timer_service: TimerService,
    watermark: i64,
    /// The payload bytes of the event being processed ([`Event::payload`]), which a holistic
    /// window's element carries beyond `element_size`.
    payload: u32,
}

impl WindowOperator {
    /// A window operator; `keyed = false` is Flink's `windowAll` (every event under one key).
    pub fn new(
        assigner: WindowAssigner,
        function: WindowFunction,
        allowed_lateness: i64,
        keyed: bool,
        timer_service: TimerService,
        max_parallelism: u32,
    ) -> Self {
        WindowOperator {
            assigner,
            function,
            allowed_lateness,
            keyed,
            layout: KeyLayout::new(max_parallelism),
            timers: TimerQueue::new(timer_service, max_parallelism, 1),
            timer_service,
            watermark: i64::MIN,
            payload: 0,
        }
    }

    /// The operator as subtask of a parallel job that owns the key groups `range` (Flink's
    /// state backend of that subtask): its timer service keeps those key groups alone.
    pub fn with_key_groups(mut self, range: KeyGroupRange) -> Self {
        self.timers.restrict_to(range);
        self
    }

    /// Issues `requests` (op and value length) on the window's state of `key`, in order, all
    /// with one state key (built once).
    fn emit(
        &mut self,
        requests: &[(Op, u32)],
        key: &Key,
        window: (i64, i64),
        out: &mut dyn AccessSink,
    ) {
        let ns = Namespace::Window {
            start: window.0,
            end: window.1,
        };
        let key = self.layout.state_key(key, ns);
        out.access_all(WINDOW_CONTENTS, key, requests);
    }

    fn add_element(&mut self, key: &Key, window: (i64, i64), out: &mut dyn AccessSink) {
        match self.function {
            WindowFunction::Incremental => {
                // AggregatingState.add: read the accumulator, write it back
                self.emit(
                    &[(Op::Get, 0), (Op::Put, ACCUMULATOR_BYTES)],
                    key,
                    window,
                    out,
                );
            }
            WindowFunction::Holistic { element_size } => {
                let element = element_size.saturating_add(self.payload);
                self.emit(&[(Op::Merge, element)], key, window, out);
            }
        }
    }

    fn timer(key: &Key, timestamp: i64, window: (i64, i64)) -> Timer<(i64, i64)> {
        Timer {
            timestamp,
            key: key.clone(),
            namespace: window,
        }
    }

    /// `WindowOperator.processElement` for one of the event's windows.
    fn on_window(&mut self, key: &Key, window: (i64, i64), out: &mut dyn AccessSink) {
        let cleanup = cleanup_time(window.1, self.allowed_lateness);
        if cleanup <= self.watermark {
            return; // late: dropped without touching state
        }
        self.add_element(key, window, out);
        let max_ts = max_timestamp(window.1);
        let trigger = if max_ts <= self.watermark {
            // late but within allowed lateness: the trigger fires at once
            self.emit(&[(Op::Get, 0)], key, window, out);
            None
        } else {
            Some(max_ts)
        };
        let cleanup = (cleanup != i64::MAX).then_some(cleanup);
        self.timers
            .add_window_timers(key, window, trigger, cleanup, out);
    }

    /// `WindowOperator.onEventTime`; `fired` (when given) receives each window that fires,
    /// between the read of its contents and their deletion.
    fn on_timer<F: FnMut(&Key, (i64, i64), &mut dyn AccessSink)>(
        &mut self,
        timer: Timer<(i64, i64)>,
        out: &mut dyn AccessSink,
        fired: Option<&mut F>,
    ) {
        let window = timer.namespace;
        let key = &timer.key;
        // EventTimeTrigger.onEventTime: FIRE exactly at the window's max timestamp.
        let fires = timer.timestamp == max_timestamp(window.1);
        let cleans = timer.timestamp == cleanup_time(window.1, self.allowed_lateness);
        if !(fires || cleans) {
            return;
        }
        match fired {
            Some(emit_result) if fires => {
                self.emit(window_timer_requests(true, false), key, window, out);
                emit_result(key, window, out);
                if cleans {
                    self.emit(window_timer_requests(false, true), key, window, out);
                }
            }
            _ => self.emit(window_timer_requests(fires, cleans), key, window, out),
        }
        if cleans {
            self.timers
                .remove(&Self::timer(key, max_timestamp(window.1), window), out);
        }
    }

    /// [`Operator::on_watermark`] with the window's result sent on: `fired` receives the key and
    /// window of each window that fires, after the trigger reads its contents and before they
    /// are deleted, which is when a chained downstream operator (a sink) gets the result in
    /// Flink. Windows that fire at once for a late element (allowed lateness) are not passed.
    pub fn on_watermark_firing(
        &mut self,
        watermark: i64,
        out: &mut dyn AccessSink,
        mut fired: impl FnMut(&Key, (i64, i64), &mut dyn AccessSink),
    ) {
        self.watermark = watermark;
        while let Some(timer) = self.timers.poll_due(watermark, out) {
            self.on_timer(timer, out, Some(&mut fired));
        }
    }
}

impl Operator for WindowOperator {
    fn states(&self) -> Vec<String> {
        let mut states = vec!["window-contents".to_string()];
        states.extend(TimerQueue::<(i64, i64)>::states(
            self.timer_service,
            "window-timers",
        ));
        states
    }

    fn on_start(&mut self, out: &mut dyn AccessSink) {
        self.timers.start_up(out);
    }

    fn on_event(&mut self, event: &Event, out: &mut dyn AccessSink) {
        let key = if self.keyed {
            event.key.clone()
        } else {
            Key::NullByte
        };
        self.payload = u32::from(event.payload);
        let assigner = self.assigner;
        assigner.for_each_window(event.timestamp, |window| {
            self.on_window(&key, window, out);
        });
    }

    fn on_end(&mut self, out: &mut dyn AccessSink) {
        self.timers.close(out);
    }

    fn on_watermark(&mut self, watermark: i64, out: &mut dyn AccessSink) {
        self.watermark = watermark;
        while let Some(timer) = self.timers.poll_due(watermark, out) {
            self.on_timer(
                timer,
                out,
                None::<&mut fn(&Key, (i64, i64), &mut dyn AccessSink)>,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn windows(assigner: WindowAssigner, timestamp: i64) -> Vec<(i64, i64)> {
        let mut windows = Vec::new();
        assigner.for_each_window(timestamp, |w| windows.push(w));
        windows
    }

    #[test]
    fn sliding_assigns_negative_starts_like_flink() {
        let a = WindowAssigner::Sliding {
            size: 5,
            slide: 2,
            offset: 0,
        };
        assert_eq!(windows(a, 1), vec![(0, 5), (-2, 3)]); // [-4, 1) ends before 1
        assert_eq!(windows(a, -3), vec![(-4, 1), (-6, -1)]);
    }

    /// Timestamps at the ends of time (a Pareto gap of shape near 0 reaches them) wrap
    /// around as in Java instead of overflowing, and the sliding loop ends.
    #[test]
    fn windows_at_the_ends_of_time_wrap_around_as_in_java() {
        let tumbling = WindowAssigner::Tumbling {
            size: 10,
            offset: 0,
        };
        let start = i64::MAX - i64::MAX % 10;
        assert_eq!(
            windows(tumbling, i64::MAX),
            vec![(start, start.wrapping_add(10))]
        );
        assert!(
            start.wrapping_add(10) < 0,
            "the end wraps to a negative time"
        );
        // Java: MIN - ((MIN % 10) + 10) wraps to just below MAX
        assert_eq!(
            windows(tumbling, i64::MIN),
            vec![(i64::MAX - 1, i64::MIN + 8)]
        );
        let sliding = WindowAssigner::Sliding {
            size: 10,
            slide: 4,
            offset: 0,
        };
        assert_eq!(windows(sliding, i64::MAX).len(), 2); // starts MAX - 3 and MAX - 7
        for t in [i64::MIN, i64::MIN + 1, i64::MIN + 9, i64::MIN + 11] {
            assert!(windows(sliding, t).len() <= 3, "at {t}");
        }
    }

    #[test]
    fn tumbling_starts_floor_negative_times() {
        let a = WindowAssigner::Tumbling {
            size: 10,
            offset: 0,
        };
        assert_eq!(windows(a, -1), vec![(-10, 0)]);
        assert_eq!(windows(a, 19), vec![(10, 20)]);
    }
}
