//! Flink's `WindowOperator` with `EventTimeSessionWindows`: merging windows kept in a
//! `MergingWindowSet` persisted in the `merging-window-set` list state.

use rustc_hash::FxHashMap as HashMap;

use crate::access::{Access, AccessSink, Op};
use crate::key::{Key, KeyGroupRange, KeyLayout, Namespace};
use crate::source::element::Event;
use crate::timer::{Timer, TimerQueue, TimerService};

use super::java_hash::{java_set_order, JavaWindowMap, Window};
use super::{
    cleanup_time, max_timestamp, window_timer_requests, Operator, WindowFunction, ACCUMULATOR_BYTES,
};

const WINDOW_CONTENTS: u16 = 0;
const MERGING_WINDOW_SET: u16 = 1;
/// One `Tuple2<TimeWindow, TimeWindow>` mapping, serialized.
const MAPPING_BYTES: u32 = 32;

/// Session windows with a gap, incremental or holistic.
#[derive(Debug)]
pub struct SessionWindowOperator {
    gap: i64,
    function: WindowFunction,
    allowed_lateness: i64,
    layout: KeyLayout,
    timers: TimerQueue<Window>,
    timer_service: TimerService,
    watermark: i64,
    /// The persisted mapping (window → state window) per key, in its serialized list order.
    persisted: HashMap<Key, Vec<(Window, Window)>>,
    /// The length of each state window's stored list (holistic value sizes): its elements
    /// and the merge operator's one-byte delimiter between each two.
    elements: HashMap<(Key, Window), u32>,
}

impl SessionWindowOperator {
    /// `EventTimeSessionWindows.withGap(gap)` with the given window function and lateness.
    pub fn new(
        gap: i64,
        function: WindowFunction,
        allowed_lateness: i64,
        timer_service: TimerService,
        max_parallelism: u32,
    ) -> Self {
        SessionWindowOperator {
            gap,
            function,
            allowed_lateness,
            layout: KeyLayout::new(max_parallelism),
            timers: TimerQueue::new(timer_service, max_parallelism, 2),
            timer_service,
            watermark: i64::MIN,
            persisted: HashMap::default(),
            elements: HashMap::default(),
        }
    }

    /// The operator as subtask of a parallel job that owns the key groups `range` (Flink's
    /// state backend of that subtask): its timer service keeps those key groups alone.
    pub fn with_key_groups(mut self, range: KeyGroupRange) -> Self {
        self.timers.restrict_to(range);
        self
    }

    /// Issues `requests` (op and value length) on the contents of window `w` of `key`, in
    /// order, all with one state key.
    fn contents(&mut self, requests: &[(Op, u32)], key: &Key, w: Window, out: &mut dyn AccessSink) {
        let ns = Namespace::Window {
            start: w.0,
            end: w.1,
        };
        out.access_all(WINDOW_CONTENTS, self.layout.state_key(key, ns), requests);
    }

    fn window_set(&mut self, op: Op, key: &Key, value_len: u32, out: &mut dyn AccessSink) {
        out.access(Access {
            op,
            state: MERGING_WINDOW_SET,
            key: self.layout.state_key(key, Namespace::Void),
            value_len,
        });
    }

    /// `getMergingWindowSet()`: reads the list state and rebuilds the Java map in list order.
    fn load(&mut self, key: &Key, out: &mut dyn AccessSink) -> JavaWindowMap<Window> {
        self.window_set(Op::Get, key, 0, out);
        let mut map = JavaWindowMap::new();
        if let Some(list) = self.persisted.get(key) {
            for &(w, s) in list {
                map.put(w, s);
            }
        }
        map
    }

    /// `MergingWindowSet.persist()`: writes the list if the mapping changed since it was read.
    fn persist(
        &mut self,
        key: &Key,
        mapping: &JavaWindowMap<Window>,
        initial: &JavaWindowMap<Window>,
        out: &mut dyn AccessSink,
    ) {
        if mapping.same_entries(initial) {
            return;
        }
        let list = mapping.iter_ordered();
        if list.is_empty() {
            self.window_set(Op::Delete, key, 0, out);
            self.persisted.remove(key);
        } else {
            let n = list.len() as u32;
            self.window_set(Op::Put, key, n * MAPPING_BYTES + (n - 1), out);
            self.persisted.insert(key.clone(), list);
        }
    }

    fn timer(key: &Key, timestamp: i64, w: Window) -> Timer<Window> {
        Timer {
            timestamp,
            key: key.clone(),
            namespace: w,
        }
    }

    /// `RocksDB*State.mergeNamespaces(target, sources)`.
    fn merge_namespaces(
        &mut self,
        key: &Key,
        target: Window,
        sources: &[Window],
        out: &mut dyn AccessSink,
    ) {
        if sources.is_empty() {
            return;
        }
        match self.function {
            WindowFunction::Holistic { .. } => {
                for &s in sources {
                    // `RocksDBListState.mergeNamespaces`: the source's stored list, read and
                    // deleted, is merged whole into the target (when there was one)
                    let list = self.elements.remove(&(key.clone(), s)).unwrap_or(0);
                    self.contents(&[(Op::Get, 0), (Op::Delete, 0)], key, s, out);
                    if list > 0 {
                        // a value too long for a trace saturates, and is refused where it is
                        // written or issued (crate::trace::MAX_VALUE_LEN)
                        self.contents(&[(Op::Merge, list)], key, target, out);
                        let held = self.elements.entry((key.clone(), target)).or_insert(0);
                        *held = appended(*held, list);
                    }
                }
            }
            WindowFunction::Incremental => {
                for &s in sources {
                    self.elements.remove(&(key.clone(), s));
                    self.contents(&[(Op::Get, 0), (Op::Delete, 0)], key, s, out);
                }
                let read_modify_write = [(Op::Get, 0), (Op::Put, ACCUMULATOR_BYTES)];
                self.contents(&read_modify_write, key, target, out);
            }
        }
    }

    /// `MergingWindowSet.addWindow`: returns the (possibly merged) window holding the element.
    fn add_window(
        &mut self,
        key: &Key,
        mapping: &mut JavaWindowMap<Window>,
        new: Window,
        out: &mut dyn AccessSink,
    ) -> Window {
        // windows = mapping.keySet() + new, stably sorted by start (TimeWindow.mergeWindows).
        let mut windows: Vec<Window> = mapping.iter_ordered().into_iter().map(|e| e.0).collect();
        windows.push(new);
        windows.sort_by_key(|w| w.0);
        let mut groups: Vec<(Window, Vec<Window>)> = Vec::new();
        for w in windows {
            match groups.last_mut() {
                Some((cover, members)) if cover.0 <= w.1 && cover.1 >= w.0 => {
                    *cover = (cover.0.min(w.0), cover.1.max(w.1));
                    if !members.contains(&w) {
                        members.push(w); // a HashSet: equal windows count once
                    }
                }
                _ => groups.push((w, vec![w])),
            }
        }
        let merges: Vec<(Window, Vec<Window>)> =
            groups.into_iter().filter(|g| g.1.len() > 1).collect();
        let mut result = new;
        let mut merged_new = false;
        let no_merges = merges.is_empty();
        for (cover, members) in merges {
            let mut merged: Vec<Window> = java_set_order(&members);
            if let Some(i) = merged.iter().position(|w| *w == new) {
                merged.remove(i);
                merged_new = true;
                result = cover;
            }
            let target = *mapping
                .get(&merged[0])
                .expect("merged window is in the mapping");
            let mut state_sources = Vec::new();
            for m in &merged {
                if let Some(s) = mapping.remove(m) {
                    state_sources.push(s);
                }
            }
            mapping.put(cover, target);
            state_sources.retain(|s| *s != target);
            if !(merged.len() == 1 && merged[0] == cover) {
                // The merge function of WindowOperator.processElement.
                let cover_max = max_timestamp(cover.1);
                if cover_max > self.watermark {
                    self.timers.add(Self::timer(key, cover_max, cover), out);
                }
                for &m in &merged {
                    self.timers
                        .remove(&Self::timer(key, max_timestamp(m.1), m), out);
                    let c = cleanup_time(m.1, self.allowed_lateness);
                    if c != i64::MAX {
                        self.timers.remove(&Self::timer(key, c, m), out);
                    }
                }
                self.merge_namespaces(key, target, &state_sources, out);
            }
        }
        if no_merges || (result == new && !merged_new) {
            mapping.put(result, result);
        }
        result
    }

    fn on_timer(&mut self, timer: Timer<Window>, out: &mut dyn AccessSink) {
        let key = timer.key.clone();
        let window = timer.namespace;
        let mut mapping = self.load(&key, out);
        let initial = mapping.clone();
        let Some(&state_window) = mapping.get(&window) else {
            return; // already purged: nothing to do, nothing persisted
        };
        let fires = timer.timestamp == max_timestamp(window.1);
        let cleans = timer.timestamp == cleanup_time(window.1, self.allowed_lateness);
        self.contents(
            window_timer_requests(fires, cleans),
            &key,
            state_window,
            out,
        );
        if cleans {
            // clearAllState: contents (above), trigger timer, then retire and persist.
            self.elements.remove(&(key.clone(), state_window));
            self.timers
                .remove(&Self::timer(&key, max_timestamp(window.1), window), out);
            mapping.remove(&window);
            self.persist(&key, &mapping, &initial, out);
        }
        self.persist(&key, &mapping, &initial, out);
    }
}

/// The length of a stored list of `held` bytes after a merge of `operand` bytes: the merge
/// operator (Flink's `StringAppendTESTOperator`) puts a one-byte delimiter between a value
/// and what is appended to it. Nothing appended leaves it as it is.
fn appended(held: u32, operand: u32) -> u32 {
    match (held, operand) {
        (_, 0) => held,
        (0, _) => operand,
        _ => held.saturating_add(1).saturating_add(operand),
    }
}

impl Operator for SessionWindowOperator {
    fn states(&self) -> Vec<String> {
        let mut states = vec![
            "window-contents".to_string(),
            "merging-window-set".to_string(),
        ];
        states.extend(TimerQueue::<Window>::states(
            self.timer_service,
            "window-timers",
        ));
        states
    }

    fn on_start(&mut self, out: &mut dyn AccessSink) {
        self.timers.start_up(out);
    }

    fn on_event(&mut self, event: &Event, out: &mut dyn AccessSink) {
        let key = event.key.clone();
        let mut mapping = self.load(&key, out);
        let initial = mapping.clone();
        // Java's long arithmetic: a session starting near the end of time wraps around
        let new = (event.timestamp, event.timestamp.wrapping_add(self.gap));
        let actual = self.add_window(&key, &mut mapping, new, out);
        let cleanup = cleanup_time(actual.1, self.allowed_lateness);
        if cleanup <= self.watermark {
            mapping.remove(&actual);
        } else {
            let state_window = *mapping.get(&actual).expect("window in flight");
            // the bytes the element adds to the window's list (none for an accumulator)
            let mut element = 0;
            match self.function {
                WindowFunction::Incremental => {
                    let read_modify_write = [(Op::Get, 0), (Op::Put, ACCUMULATOR_BYTES)];
                    self.contents(&read_modify_write, &key, state_window, out);
                }
                WindowFunction::Holistic { element_size } => {
                    element = element_size.saturating_add(u32::from(event.payload));
                    self.contents(&[(Op::Merge, element)], &key, state_window, out);
                }
            }
            let held = self
                .elements
                .entry((key.clone(), state_window))
                .or_insert(0);
            *held = appended(*held, element);
            let max_ts = max_timestamp(actual.1);
            let trigger = if max_ts <= self.watermark {
                self.contents(&[(Op::Get, 0)], &key, state_window, out);
                None
            } else {
                Some(max_ts)
            };
            let cleanup = (cleanup != i64::MAX).then_some(cleanup);
            self.timers
                .add_window_timers(&key, actual, trigger, cleanup, out);
        }
        self.persist(&key, &mapping, &initial, out);
    }

    fn on_end(&mut self, out: &mut dyn AccessSink) {
        self.timers.close(out);
    }

    fn on_watermark(&mut self, watermark: i64, out: &mut dyn AccessSink) {
        self.watermark = watermark;
        while let Some(timer) = self.timers.poll_due(watermark, out) {
            self.on_timer(timer, out);
        }
    }
}
