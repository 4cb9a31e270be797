use super::*;

/// The requests of `events` (key, time in s) through a session count in `variable` with a
/// `gap` s gap and micro-batches of `trigger` events. Keys show as `s<key>` (a state keyed
/// by the grouping key, with its family when not the first), `k<key>@<s>` and `t<key>@<s>`
/// (the timers), `m<key>:<minute>` (a map entry), `p<family>:<key>` (a prefix) and
/// `prefix<family>`.
fn requests(variable: StateVariable, events: &[(i64, i64)], trigger: u64, gap: i64) -> Vec<String> {
    let spec = SparkSpec {
        query: super::super::SparkQuery::TransformWithState(variable),
        trigger: super::super::Trigger::Events(trigger),
        size: gap * 1000,
        ..SparkSpec::default()
    };
    let mut op = TransformWithState::new(&spec, variable);
    let timers = variable.timers();
    super::super::requests_of(&mut op, events, |key| {
        let family = u16::from_le_bytes([key[0], key[1]]);
        let long = |at: usize| i64::from_le_bytes(key[at..at + 8].try_into().unwrap());
        match key.len() {
            2 => format!("prefix{family}"),
            19 if family == 2 => format!("s{}", long(11)),
            19 => format!("s{}/{family}", long(11)),
            39 => format!("p{family}:{}", long(31)),
            56 => format!("k{}@{}", long(31), long(48) / 1000),
            72 if family == timers.time_to_key => {
                format!("t{}@{}", long(64), keys::timer_of(key).0 / 1000)
            }
            72 => format!("m{}:{}", long(31), long(64)),
            _ => format!("{key:?}"),
        }
    })
}

#[test]
fn a_value_session_moves_its_timer_and_ends_when_the_watermark_reaches_it() {
    let got = requests(
        StateVariable::Value,
        &[(1, 10), (2, 11), (1, 20), (3, 40)],
        2,
        5,
    );
    assert_eq!(
        got,
        [
            // batch 1 (watermark 0): keys 1 and 2 start sessions, timers at 15 and 16 s
            "get s1",
            "get s1",
            "put s1",
            "get k1@15",
            "get k1@15",
            "put k1@15",
            "get t1@15",
            "put t1@15",
            "get s2",
            "get s2",
            "put s2",
            "get k2@16",
            "get k2@16",
            "put k2@16",
            "get t2@16",
            "put t2@16",
            "seek prefix4",
            "next t2@16",
            "|",
            // batch 2 (watermark 11 s): key 1's timer moves to 25 s; none expires
            "get s1",
            "get k1@15",
            "get k1@15",
            "delete k1@15",
            "get t1@15",
            "delete t1@15",
            "get s1",
            "put s1",
            "get k1@25",
            "get k1@25",
            "put k1@25",
            "get t1@25",
            "put t1@25",
            "get s3",
            "get s3",
            "put s3",
            "get k3@45",
            "get k3@45",
            "put k3@45",
            "get t3@45",
            "put t3@45",
            "seek prefix4",
            "next t1@25",
            "|",
            // no data left, watermark 40 s: 16 s and 25 s expire as the scan reaches them
            "seek prefix4",
            "next t1@25",
            "get s2",
            "get s2",
            "delete s2",
            "get k2@16",
            "get k2@16",
            "delete k2@16",
            "get t2@16",
            "delete t2@16",
            "next t3@45",
            "get s1",
            "get s1",
            "delete s1",
            "get k1@25",
            "get k1@25",
            "delete k1@25",
            "get t1@25",
            "delete t1@25",
            "next -",
            "|",
        ]
    );
}

#[test]
fn a_list_session_appends_its_records_at_once_and_counts_them() {
    let got = requests(
        StateVariable::List,
        &[(1, 10), (1, 11), (1, 20), (9, 40)],
        2,
        5,
    );
    let batch_1 = got.split(|r| r == "|").next().unwrap();
    assert_eq!(
        batch_1,
        [
            // no timer yet; one merge of both records; the count; the timer at 16 s
            "seek p4:1",
            "get s1",
            "get s1/3",
            "merge s1/3",
            "get s1",
            "put s1",
            "get k1@16",
            "get k1@16",
            "put k1@16",
            "get t1@16",
            "put t1@16",
            "seek prefix5",
            "next -",
        ]
    );
    let batch_2 = got.split(|r| r == "|").nth(1).unwrap();
    // the key's timer found by listTimers (the scan lands past it) and deleted
    assert_eq!(
        &batch_2[..7],
        [
            "seek p4:1",
            "next t1@16",
            "get k1@16",
            "get k1@16",
            "delete k1@16",
            "get t1@16",
            "delete t1@16"
        ]
    );
    // at the end (watermark 40 s) key 1's session (25 s) ends: the list read and cleared,
    // its count read and removed, then its timer
    let text = got.join(" ");
    assert!(
        text.contains(
            "seek prefix5 next t9@45 get s1/3 get s1/3 delete s1/3 get s1 get s1 delete s1 \
             get k1@25"
        ),
        "{text}"
    );
}

#[test]
fn a_list_merge_holds_every_record_of_the_key_in_the_batch() {
    let spec = SparkSpec {
        query: super::super::SparkQuery::TransformWithState(StateVariable::List),
        trigger: super::super::Trigger::Events(3),
        size: 5000,
        ..SparkSpec::default()
    };
    let mut op = TransformWithState::new(&spec, StateVariable::List);
    let mut sink = crate::access::VecSink::default();
    for (key, time) in [(1, 10_000), (1, 11_000), (1, 12_000)] {
        let event = Event {
            key: crate::key::Key::Long(key),
            timestamp: time,
            input: 0,
            closes: false,
            payload: 0,
        };
        crate::operator::Operator::on_event(&mut op, &event, &mut sink);
    }
    let merges: Vec<u32> = sink
        .records
        .iter()
        .filter_map(|r| match r {
            crate::access::TraceRecord::Access {
                op: crate::access::Op::Merge,
                value_len,
                ..
            } => Some(*value_len),
            _ => None,
        })
        .collect();
    // three elements of 21 bytes and two delimiters, as recorded from Spark 4.1.1
    assert_eq!(merges, [65]);
}

#[test]
fn a_map_session_counts_by_minute_and_clears_each_entry_on_its_timer() {
    let got = requests(
        StateVariable::Map,
        &[(1, 59), (1, 61), (1, 62), (9, 200)],
        3,
        5,
    );
    let batch_1 = got.split(|r| r == "|").next().unwrap();
    assert_eq!(
        batch_1,
        [
            // per record, in the order they came: its minute read and updated
            "seek p3:1",
            "get m1:0",
            "get m1:0",
            "put m1:0",
            "get m1:1",
            "get m1:1",
            "put m1:1",
            "get m1:1",
            "get m1:1",
            "put m1:1",
            "get k1@67",
            "get k1@67",
            "put k1@67",
            "get t1@67",
            "put t1@67",
            "seek prefix4",
            "next -",
        ]
    );
    let text = got.join(" ");
    // on the timer: values() (a scan), then clear() (a scan removing each entry)
    assert!(
        text.contains(
            "seek p2:1 next m1:1 next m9:3 seek p2:1 next m1:1 get m1:0 delete m1:0 \
             next m9:3 get m1:1 delete m1:1 get k1@67"
        ),
        "{text}"
    );
}
