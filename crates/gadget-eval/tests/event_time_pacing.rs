//! Requests carry the event time of the stream: spread evenly between watermarks.

use std::path::Path;

use gadget::config::Config;
use gadget_eval::workload::{RequestStream, WorkloadSource};

const WORKLOAD: &str = r#"
seed = 9
[source]
type = "synthetic"
events = 5000
key_space = 50
[source.keys]
distribution = "uniform"
[source.gaps]
distribution = "constant"
value = 2
[source.watermarks]
type = "punctuated"
every = 100
[operator]
type = "tumbling"
size = 1000
timers = "heap"
"#;

#[test]
fn requests_get_event_times_between_their_watermarks() {
    let config = Config::parse(WORKLOAD, Path::new("event-time.toml")).unwrap();
    let source = || WorkloadSource::Generate {
        config: Box::new(config.clone()),
        limit: None,
    };
    let mut timed = RequestStream::start_with_event_times(source()).unwrap();
    let mut times = Vec::new();
    while let Some(b) = timed.next_block() {
        assert_eq!(b.event_times_us.len(), b.requests.len());
        times.extend(b.event_times_us.iter().copied());
        timed.recycle(b);
    }
    timed.finish().unwrap();

    let mut plain = RequestStream::start(source()).unwrap();
    let mut count = 0;
    while let Some(b) = plain.next_block() {
        assert!(b.event_times_us.is_empty());
        count += b.requests.len();
        plain.recycle(b);
    }
    plain.finish().unwrap();
    assert_eq!(times.len(), count, "timing must not drop or add requests");

    assert!(
        times.windows(2).all(|w| w[0] <= w[1]),
        "event times go forward"
    );
    // events are 2 ms apart, 5000 of them: watermarks run from ~200 ms to ~10 s
    let (first, last) = (times[0], *times.last().unwrap());
    assert!((150_000..=250_000).contains(&first), "first {first} µs");
    assert!((9_500_000..=10_000_000).contains(&last), "last {last} µs");
    // spread, not bunched: most requests have a time of their own
    let mut distinct = times.clone();
    distinct.dedup();
    assert!(
        distinct.len() > times.len() / 2,
        "{} distinct of {}",
        distinct.len(),
        times.len()
    );
}
