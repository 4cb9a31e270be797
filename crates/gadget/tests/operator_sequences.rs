//! Exact request sequences for small hand-made inputs, one scenario per test, derived from
//! Flink 1.20's WindowOperator, MergingWindowSet, IntervalJoinOperator, the heap and RocksDB
//! timer services and the RocksDB state classes.

use gadget::access::{TraceRecord, VecSink};
use gadget::key::Key;
use gadget::operator::{
    ContinuousAggregation, IntervalJoin, Operator, SessionWindowOperator, WindowAssigner,
    WindowFunction, WindowOperator,
};
use gadget::source::{Event, StreamElement};
use gadget::timer::TimerService;

fn be(b: &[u8]) -> i64 {
    i64::from_be_bytes(b.try_into().unwrap())
}

/// Renders a state key (1-byte key group, long key) readably: `k@[s,e)`, `k`, `k#ts`, `timer k@ts[s,e)`.
fn key(b: &[u8]) -> String {
    match b.len() {
        0 => String::new(),
        10 => format!("{}", be(&b[1..9])),
        18 => format!("{}#{}", be(&b[1..9]), be(&b[10..18])),
        25 => format!("{}@[{},{})", be(&b[1..9]), be(&b[9..17]), be(&b[17..25])),
        33 => format!(
            "timer {}@{}[{},{})",
            be(&b[9..17]),
            (u64::from_be_bytes(b[1..9].try_into().unwrap()) ^ (1 << 63)) as i64,
            be(&b[17..25]),
            be(&b[25..33])
        ),
        // a key group's seek target: its prefix and the zero byte Flink appends
        2 => format!("{:02x}{:02x}", b[0], b[1]),
        n => format!("<{n} bytes>"),
    }
}

fn run(op: &mut dyn Operator, input: &[StreamElement]) -> Vec<String> {
    let states = op.states();
    let mut sink = VecSink::default();
    let stream: Vec<_> = input.iter().cloned().map(Ok).collect();
    gadget::generate::generate(
        Box::new(stream.into_iter()),
        op,
        &mut sink,
        None,
        &mut |_| {},
    )
    .unwrap();
    sink.records
        .iter()
        .map(|r| match r {
            TraceRecord::Event { input } => format!("EV{input}"),
            TraceRecord::Watermark { timestamp } => format!("WM {timestamp}"),
            TraceRecord::Access {
                op,
                state,
                key: k,
                value_len,
            } => {
                let v = if *value_len > 0 {
                    format!(" ={value_len}")
                } else {
                    String::new()
                };
                let k = key(k);
                let k = if k.is_empty() { k } else { format!(" {k}") };
                format!("{op} {}{k}{v}", states[*state as usize])
            }
        })
        .collect()
}

fn ev(k: i64, t: i64) -> StreamElement {
    StreamElement::Event(Event {
        key: Key::Long(k),
        timestamp: t,
        input: 0,
        closes: false,
        payload: 0,
    })
}

fn ev_on(input: u8, k: i64, t: i64) -> StreamElement {
    StreamElement::Event(Event {
        key: Key::Long(k),
        timestamp: t,
        input,
        closes: false,
        payload: 0,
    })
}

fn wm(t: i64) -> StreamElement {
    StreamElement::Watermark(t)
}

const END: i64 = i64::MAX;

fn tumbling(size: i64, f: WindowFunction, lateness: i64, timers: TimerService) -> WindowOperator {
    WindowOperator::new(
        WindowAssigner::Tumbling { size, offset: 0 },
        f,
        lateness,
        true,
        timers,
        128,
    )
}

#[test]
fn tumbling_incremental_reads_and_writes_the_accumulator_then_fires_at_the_watermark() {
    let mut op = tumbling(10, WindowFunction::Incremental, 0, TimerService::Heap);
    let got = run(&mut op, &[ev(1, 1), ev(2, 3), ev(1, 12), wm(9), wm(END)]);
    assert_eq!(
        got,
        vec![
            "EV0",
            "get window-contents 1@[0,10)",
            "put window-contents 1@[0,10) =8",
            "EV0",
            "get window-contents 2@[0,10)",
            "put window-contents 2@[0,10) =8",
            "EV0",
            "get window-contents 1@[10,20)",
            "put window-contents 1@[10,20) =8",
            "WM 9",
            "get window-contents 1@[0,10)",
            "delete window-contents 1@[0,10)",
            "get window-contents 2@[0,10)",
            "delete window-contents 2@[0,10)",
            format!("WM {END}").as_str(),
            "get window-contents 1@[10,20)",
            "delete window-contents 1@[10,20)",
        ]
    );
}

#[test]
fn tumbling_holistic_appends_each_element_with_one_merge() {
    let mut op = tumbling(
        10,
        WindowFunction::Holistic { element_size: 20 },
        0,
        TimerService::Heap,
    );
    let got = run(&mut op, &[ev(1, 1), ev(1, 2), wm(END)]);
    assert_eq!(
        got,
        vec![
            "EV0",
            "merge window-contents 1@[0,10) =20",
            "EV0",
            "merge window-contents 1@[0,10) =20",
            format!("WM {END}").as_str(),
            "get window-contents 1@[0,10)",
            "delete window-contents 1@[0,10)",
        ]
    );
}

#[test]
fn equal_timers_fire_in_heap_order_not_insertion_order() {
    // Five windows ending together: Flink's heap pops the first, then the last-inserted ones.
    let mut op = tumbling(10, WindowFunction::Incremental, 0, TimerService::Heap);
    let mut input: Vec<_> = (1..=5).map(|k| ev(k, 1)).collect();
    input.push(wm(END));
    let fired: Vec<String> = run(&mut op, &input)
        .into_iter()
        .skip_while(|l| !l.starts_with("WM"))
        .filter(|l| l.starts_with("get"))
        .collect();
    assert_eq!(
        fired,
        vec![
            "get window-contents 1@[0,10)",
            "get window-contents 5@[0,10)",
            "get window-contents 4@[0,10)",
            "get window-contents 3@[0,10)",
            "get window-contents 2@[0,10)",
        ]
    );
}

#[test]
fn sliding_windows_are_visited_from_the_latest_start_backwards() {
    let mut op = WindowOperator::new(
        WindowAssigner::Sliding {
            size: 10,
            slide: 5,
            offset: 0,
        },
        WindowFunction::Incremental,
        0,
        true,
        TimerService::Heap,
        128,
    );
    let got = run(&mut op, &[ev(7, 7), wm(END)]);
    assert_eq!(
        got,
        vec![
            "EV0",
            "get window-contents 7@[5,15)",
            "put window-contents 7@[5,15) =8",
            "get window-contents 7@[0,10)",
            "put window-contents 7@[0,10) =8",
            format!("WM {END}").as_str(),
            "get window-contents 7@[0,10)",
            "delete window-contents 7@[0,10)",
            "get window-contents 7@[5,15)",
            "delete window-contents 7@[5,15)",
        ]
    );
}

#[test]
fn a_late_element_is_dropped_without_any_request() {
    let mut op = tumbling(10, WindowFunction::Incremental, 0, TimerService::Heap);
    let got = run(&mut op, &[wm(20), ev(1, 3), wm(END)]);
    assert_eq!(got, vec!["WM 20", "EV0", format!("WM {END}").as_str()]);
}

#[test]
fn allowed_lateness_refires_on_late_elements_and_cleans_up_later() {
    let mut op = tumbling(10, WindowFunction::Incremental, 5, TimerService::Heap);
    let got = run(
        &mut op,
        &[ev(1, 1), wm(10), ev(1, 3), wm(15), ev(1, 4), wm(END)],
    );
    assert_eq!(
        got,
        vec![
            "EV0",
            "get window-contents 1@[0,10)",
            "put window-contents 1@[0,10) =8",
            "WM 10",
            "get window-contents 1@[0,10)", // fires at 9, keeps the contents
            "EV0",
            "get window-contents 1@[0,10)",
            "put window-contents 1@[0,10) =8",
            "get window-contents 1@[0,10)", // late element within lateness fires again
            "WM 15",
            "delete window-contents 1@[0,10)", // cleanup timer at 9 + 5
            "EV0",                             // now beyond lateness: dropped
            format!("WM {END}").as_str(),
        ]
    );
}

#[test]
fn window_all_uses_flinks_constant_byte_key() {
    let mut op = WindowOperator::new(
        WindowAssigner::Tumbling {
            size: 10,
            offset: 0,
        },
        WindowFunction::Incremental,
        0,
        false,
        TimerService::Heap,
        128,
    );
    let states = op.states();
    let mut sink = VecSink::default();
    let input = vec![Ok(ev(1, 1)), Ok(ev(2, 2)), Ok(wm(END))];
    gadget::generate::generate(
        Box::new(input.into_iter()),
        &mut op,
        &mut sink,
        None,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(states, vec!["window-contents"]);
    let keys: Vec<&Vec<u8>> = sink
        .records
        .iter()
        .filter_map(|r| match r {
            TraceRecord::Access { key, .. } => Some(key),
            _ => None,
        })
        .collect();
    assert_eq!(keys.len(), 6);
    assert!(keys.iter().all(|k| *k == keys[0]), "one key for all events");
    // key group of Byte 0 (hash 0), the byte 0 itself, then the window
    let group = gadget::key::key_group_for_hash(0, 128) as u8;
    assert_eq!(&keys[0][..2], &[group, 0]);
    assert_eq!(keys[0].len(), 1 + 1 + 16);
}

fn session(gap: i64, f: WindowFunction, timers: TimerService) -> SessionWindowOperator {
    SessionWindowOperator::new(gap, f, 0, timers, 128)
}

#[test]
fn session_extension_keeps_the_state_window_and_persists_the_window_set() {
    let mut op = session(10, WindowFunction::Incremental, TimerService::Heap);
    let got = run(&mut op, &[ev(1, 0), ev(1, 5), ev(1, 3), wm(END)]);
    assert_eq!(
        got,
        vec![
            "EV0",
            "get merging-window-set 1",
            "get window-contents 1@[0,10)",
            "put window-contents 1@[0,10) =8",
            "put merging-window-set 1 =32",
            "EV0", // extends the session to [0,15): contents stay under [0,10)
            "get merging-window-set 1",
            "get window-contents 1@[0,10)",
            "put window-contents 1@[0,10) =8",
            "put merging-window-set 1 =32",
            "EV0", // inside the session: the set does not change, no put
            "get merging-window-set 1",
            "get window-contents 1@[0,10)",
            "put window-contents 1@[0,10) =8",
            format!("WM {END}").as_str(),
            "get merging-window-set 1",
            "get window-contents 1@[0,10)",
            "delete window-contents 1@[0,10)",
            "delete merging-window-set 1",
            "delete merging-window-set 1",
        ]
    );
}

#[test]
fn session_firing_with_other_sessions_open_persists_twice_with_put() {
    let mut op = session(
        10,
        WindowFunction::Holistic { element_size: 24 },
        TimerService::Heap,
    );
    let got = run(&mut op, &[ev(1, 0), ev(1, 30), wm(20)]);
    assert_eq!(
        got,
        vec![
            "EV0",
            "get merging-window-set 1",
            "merge window-contents 1@[0,10) =24",
            "put merging-window-set 1 =32",
            "EV0",
            "get merging-window-set 1",
            "merge window-contents 1@[30,40) =24",
            "put merging-window-set 1 =65", // two mappings: 32 + ',' + 32
            "WM 20",
            "get merging-window-set 1",
            "get window-contents 1@[0,10)",
            "delete window-contents 1@[0,10)",
            "put merging-window-set 1 =32",
            "put merging-window-set 1 =32",
        ]
    );
}

#[test]
fn an_out_of_order_element_bridging_two_sessions_merges_their_state() {
    let mut op = session(
        10,
        WindowFunction::Holistic { element_size: 24 },
        TimerService::Heap,
    );
    let got = run(&mut op, &[ev(1, 0), ev(1, 15), ev(1, 9)]);
    // [9,19) bridges [0,10) and [15,25): one state window survives, the other is read,
    // deleted and appended to it with its whole list (one element).
    let merge_part: Vec<&str> = got[9..].iter().map(|s| s.as_str()).collect();
    let a = "1@[0,10)";
    let b = "1@[15,25)";
    let (src, dst) = if merge_part[1].ends_with(a) {
        (a, b)
    } else {
        (b, a)
    };
    assert_eq!(
        merge_part,
        vec![
            "get merging-window-set 1",
            format!("get window-contents {src}").as_str(),
            format!("delete window-contents {src}").as_str(),
            format!("merge window-contents {dst} =24").as_str(),
            format!("merge window-contents {dst} =24").as_str(), // the element itself
            "put merging-window-set 1 =32",                      // one session [0,25) left
        ]
    );
}

#[test]
fn a_merged_session_list_carries_its_delimiters_as_flinks_stored_value_does() {
    let mut op = session(
        10,
        WindowFunction::Holistic { element_size: 24 },
        TimerService::Heap,
    );
    // [0,12) and [20,32) hold two elements each (24 + the merge operator's delimiter + 24 =
    // 49 bytes stored); [11,21) bridges them
    let got = run(
        &mut op,
        &[ev(1, 0), ev(1, 2), ev(1, 20), ev(1, 22), ev(1, 11)],
    );
    // `mergeNamespaces`: the source read, deleted and merged whole, then the element itself
    let at = got
        .windows(4)
        .position(|w| {
            w[0].starts_with("get window-contents")
                && w[1].starts_with("delete window-contents")
                && w[2].starts_with("merge window-contents")
                && w[3].starts_with("merge window-contents")
        })
        .unwrap_or_else(|| panic!("no merge of namespaces in {got:#?}"));
    assert!(got[at + 2].ends_with("=49"), "{got:#?}");
    assert!(got[at + 3].ends_with("=24"), "{got:#?}");
}

#[test]
fn a_late_element_for_a_session_costs_one_read_of_the_window_set() {
    let mut op = session(10, WindowFunction::Incremental, TimerService::Heap);
    let got = run(&mut op, &[wm(100), ev(1, 5)]);
    assert_eq!(got, vec!["WM 100", "EV0", "get merging-window-set 1"]);
}

#[test]
fn aggregation_reads_and_writes_the_value_state() {
    let mut op = ContinuousAggregation::new("running-sum", TimerService::Heap, 128);
    let got = run(&mut op, &[ev(3, 1), ev(3, 2), wm(END)]);
    assert_eq!(
        got,
        vec![
            "EV0",
            "get running-sum 3",
            "put running-sum 3 =8",
            "EV0",
            "get running-sum 3",
            "put running-sum 3 =8",
            format!("WM {END}").as_str(),
        ]
    );
}

#[test]
fn interval_join_buffers_scans_the_other_side_and_cleans_up() {
    let mut op = IntervalJoin::new(-5, 5, 10, TimerService::Heap, 128);
    let got = run(
        &mut op,
        &[ev_on(1, 1, 10), ev_on(2, 1, 12), ev_on(1, 1, 10), wm(100)],
    );
    assert_eq!(
        got,
        vec![
            "EV1",
            "get LEFT_BUFFER 1#10",
            "put LEFT_BUFFER 1#10 =15", // count + one entry (element + joined flag)
            "seek RIGHT_BUFFER 1",
            "EV2",
            "get RIGHT_BUFFER 1#12",
            "put RIGHT_BUFFER 1#12 =15",
            "seek LEFT_BUFFER 1",
            "next LEFT_BUFFER", // one bucket found; this next leaves the key's prefix
            "EV1",
            "get LEFT_BUFFER 1#10",
            "put LEFT_BUFFER 1#10 =26", // the bucket now holds two elements
            "seek RIGHT_BUFFER 1",
            "next RIGHT_BUFFER",
            "WM 100",
            "delete LEFT_BUFFER 1#10",  // left cleanup at 10 + upper (15)
            "delete RIGHT_BUFFER 1#12", // right cleanup at 12 - lower (17)
        ]
    );
}

#[test]
fn interval_join_drops_elements_behind_the_watermark() {
    let mut op = IntervalJoin::new(-5, 5, 10, TimerService::Heap, 128);
    let got = run(&mut op, &[wm(50), ev_on(1, 1, 49), ev_on(2, 1, 50)]);
    assert_eq!(&got[..3], &["WM 50", "EV1", "EV2"]);
    assert_eq!(got[3], "get RIGHT_BUFFER 1#50");
}

/// Requests of the RocksDB timer service's start-up at max parallelism 128: a commit and a
/// seek per key group in each of its two queues.
const START_UP: usize = 4 * 128;

#[test]
fn rocksdb_timers_start_up_by_loading_every_key_group_of_both_queues_second_one_first() {
    let mut op = tumbling(10, WindowFunction::Incremental, 0, TimerService::RocksDb);
    let got = run(&mut op, &[ev(1, 1)]);
    assert_eq!(
        &got[..6],
        &[
            "batch_commit default",
            "seek _timer_state/processing_window-timers 0100",
            "batch_commit default",
            "seek _timer_state/processing_window-timers 0000",
            "batch_commit default",
            "seek _timer_state/processing_window-timers 0200",
        ]
    );
    assert_eq!(
        got[START_UP / 2 + 1],
        "seek _timer_state/event_window-timers 0100"
    );
    assert_eq!(
        got[START_UP - 1],
        "seek _timer_state/event_window-timers 7f00"
    );
    assert_eq!(got[START_UP], "EV0");
}

#[test]
fn a_keyed_process_function_starts_up_its_unused_user_timers_in_rocksdb() {
    let mut op = ContinuousAggregation::new("running-sum", TimerService::RocksDb, 128);
    assert_eq!(
        op.states(),
        vec![
            "running-sum",
            "_timer_state/event_user-timers",
            "default",
            "_timer_state/processing_user-timers"
        ]
    );
    let got = run(&mut op, &[ev(1, 1)]);
    assert_eq!(got.len(), START_UP + 3);
    assert_eq!(got[1], "seek _timer_state/processing_user-timers 0100");
    assert_eq!(
        got[START_UP..],
        ["EV0", "get running-sum 1", "put running-sum 1 =8"]
    );
}

#[test]
fn rocksdb_timers_are_written_through_a_batch_and_committed_on_close() {
    let mut op = tumbling(10, WindowFunction::Incremental, 0, TimerService::RocksDb);
    assert_eq!(
        op.states(),
        vec![
            "window-contents",
            "_timer_state/event_window-timers",
            "default",
            "_timer_state/processing_window-timers"
        ]
    );
    let got = run(&mut op, &[ev(1, 1), ev(2, 2), wm(END)]);
    assert_eq!(
        got[START_UP..],
        vec![
            "EV0",
            "get window-contents 1@[0,10)",
            "put window-contents 1@[0,10) =8",
            "batch_put _timer_state/event_window-timers timer 1@9[0,10)",
            "EV0",
            "get window-contents 2@[0,10)",
            "put window-contents 2@[0,10) =8",
            "batch_put _timer_state/event_window-timers timer 2@9[0,10)",
            format!("WM {END}").as_str(),
            // keys 1 and 2 are in different key groups: each group empties on its poll, so
            // the trigger's own delete of the fired timer returns early without a request
            "batch_delete _timer_state/event_window-timers timer 1@9[0,10)",
            "get window-contents 1@[0,10)",
            "delete window-contents 1@[0,10)",
            "batch_delete _timer_state/event_window-timers timer 2@9[0,10)",
            "get window-contents 2@[0,10)",
            "delete window-contents 2@[0,10)",
            "batch_commit default =4",
        ]
    );
}

#[test]
fn rocksdb_timers_delete_twice_while_the_key_group_holds_more_timers() {
    let mut op = tumbling(10, WindowFunction::Incremental, 0, TimerService::RocksDb);
    let got = run(&mut op, &[ev(1, 1), ev(1, 11), wm(9)]);
    assert_eq!(
        &got[START_UP + 8..],
        &[
            "WM 9",
            "batch_delete _timer_state/event_window-timers timer 1@9[0,10)",
            "get window-contents 1@[0,10)",
            "delete window-contents 1@[0,10)",
            // the trigger's delete of the already polled timer is still a request
            "batch_delete _timer_state/event_window-timers timer 1@9[0,10)",
            "batch_commit default =4",
        ]
    );
}

#[test]
fn rocksdb_timer_batches_commit_every_500_entries() {
    let mut op = tumbling(10, WindowFunction::Incremental, 0, TimerService::RocksDb);
    let input: Vec<_> = (0..600).map(|i| ev(i, i * 10)).collect();
    let got = run(&mut op, &input);
    let commits: Vec<&String> = got[START_UP..]
        .iter()
        .filter(|l| l.starts_with("batch_commit"))
        .collect();
    // 600 registrations: one full batch, and the rest committed when the job ends
    assert_eq!(
        commits,
        vec!["batch_commit default =500", "batch_commit default =100"]
    );
}

fn closing(k: i64, t: i64) -> StreamElement {
    StreamElement::Event(Event {
        key: Key::Long(k),
        timestamp: t,
        input: 1,
        closes: true,
        payload: 0,
    })
}

#[test]
fn continuous_join_buffers_right_elements_until_their_left_one_and_clears_on_close() {
    let mut op = gadget::operator::ContinuousJoin::new(10, TimerService::Heap, 128);
    let got = run(
        &mut op,
        &[
            ev_on(2, 1, 1),
            ev_on(1, 1, 2),
            ev_on(2, 1, 3),
            closing(1, 4),
            ev_on(2, 1, 5),
        ],
    );
    assert_eq!(
        got,
        vec![
            "EV2", // no open left element yet: the right element waits
            "get left-state 1",
            "merge right-buffer 1 =10",
            "EV1", // the left element opens the key and joins the waiting one
            "get left-state 1",
            "put left-state 1 =10",
            "get right-buffer 1",
            "delete right-buffer 1",
            "EV2", // joins the open left element: read only
            "get left-state 1",
            "EV1", // closing element
            "delete left-state 1",
            "delete right-buffer 1",
            "EV2",
            "get left-state 1",
            "merge right-buffer 1 =10",
        ]
    );
}
