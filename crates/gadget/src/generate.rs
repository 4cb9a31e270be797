//! The generation loop: a source's elements through an operator into a sink.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::access::{Access, AccessCounts, AccessSink, Op, StateId};
use crate::operator::Operator;
use crate::source::{ElementStream, SourceError, StreamElement};
use crate::summary::EventKeyCounter;

/// What a generation run produced.
#[derive(Debug, Clone, Default)]
pub struct Generated {
    /// Requests by op and state, events and watermarks.
    pub counts: AccessCounts,
    /// True when `limit` or a stop cut the run short (open windows were not fired).
    pub truncated: bool,
    /// True when a stop cut the run short ([`generate_until`]).
    pub interrupted: bool,
    /// Distinct event keys.
    pub event_keys: EventKeyCounter,
    /// Requests the operator issued before the first event ([`Operator::on_start`]: the
    /// lookup-join's table preload, the RocksDB timer service's start-up), the first ones of
    /// the trace.
    pub preload_requests: u64,
}

/// Notices a generation that reads event after event and issues no request: one cut at a
/// request limit then runs until the source ends, which for an endless source is never (a Kafka
/// Streams application whose record cache holds every key writes only when it closes).
#[derive(Debug, Clone, Copy)]
pub struct Silence {
    /// The requests when last seen growing.
    requests: u64,
    /// The events then.
    events: u64,
    /// True once said, or when there is nothing to say: a generation without a limit ends
    /// with its source, as asked.
    said: bool,
}

impl Silence {
    /// Events without a request after which [`Silence::notice`] speaks.
    pub const EVENTS: u64 = 10_000_000;

    /// Watches a generation cut at `limit` requests; without one it never speaks.
    pub fn watching(limit: Option<u64>) -> Self {
        Silence {
            requests: 0,
            events: 0,
            said: limit.is_none(),
        }
    }

    /// Takes in the counts so far ([`generate`]'s progress); the first time
    /// [`Silence::EVENTS`] events have passed since the last request, a warning saying so and
    /// what to do.
    pub fn notice(&mut self, counts: &AccessCounts) -> Option<String> {
        self.notice_at(counts.events, counts.requests())
    }

    /// [`Silence::notice`] from the counts alone: `events` read and `requests` issued so far
    /// (a job's records and the requests of all its subtasks).
    pub fn notice_at(&mut self, events: u64, requests: u64) -> Option<String> {
        if requests != self.requests {
            (self.requests, self.events) = (requests, events);
        }
        let quiet = events.saturating_sub(self.events);
        if self.said || quiet < Silence::EVENTS {
            return None;
        }
        self.said = true;
        Some(format!(
            "{quiet} events have passed without a request ({requests} requests so far): the \
             workload may issue no more before its source ends (a Kafka Streams record cache \
             that holds every key writes only when the application closes), and an endless \
             source never ends; Ctrl-C stops it and keeps what was done so far"
        ))
    }
}

/// Counts what passes and stops passing requests on at the limit.
struct Limiter<'a, S: AccessSink + ?Sized> {
    inner: &'a mut S,
    counts: AccessCounts,
    /// `counts.requests()`, kept as a running total.
    requests: u64,
    limit: u64,
    /// Set from elsewhere (Ctrl-C) to end the run.
    stop: &'a AtomicBool,
}

impl<S: AccessSink + ?Sized> Limiter<'_, S> {
    /// True when the run was asked to stop, here or by the sink it feeds.
    fn stop_asked(&self) -> bool {
        self.stop.load(Ordering::Relaxed) || self.inner.stopped()
    }
}

/// The stop flag of a generation nothing stops but its limit.
static NEVER: AtomicBool = AtomicBool::new(false);

impl<S: AccessSink + ?Sized> AccessSink for Limiter<'_, S> {
    #[inline]
    fn access(&mut self, a: Access<'_>) {
        if self.requests < self.limit {
            self.requests += 1;
            self.counts.count(a.op, a.state);
            self.inner.access(a);
        }
    }
    #[inline]
    fn access_all(&mut self, state: StateId, key: &[u8], requests: &[(Op, u32)]) {
        let room = usize::try_from(self.limit - self.requests).unwrap_or(usize::MAX);
        let requests = &requests[..requests.len().min(room)];
        if requests.is_empty() {
            return;
        }
        self.requests += requests.len() as u64;
        for &(op, _) in requests {
            self.counts.count(op, state);
        }
        self.inner.access_all(state, key, requests);
    }
    fn event(&mut self, input: u8) {
        self.counts.events += 1;
        self.inner.event(input);
    }
    fn watermark(&mut self, timestamp: i64) {
        self.counts.watermarks += 1;
        self.inner.watermark(timestamp);
    }
    #[inline]
    fn stopped(&self) -> bool {
        self.requests >= self.limit || self.stop_asked()
    }
}

/// Runs `source` through `operator` into `sink`.
///
/// Watermarks that do not advance event time are dropped, as Flink's watermark valve does.
/// `limit` stops after that many requests; `progress` is called every
/// [`PROGRESS_EVERY`](crate::PROGRESS_EVERY) elements. A
/// sink of a concrete type has its calls inlined into the loop (a `dyn` one works too).
pub fn generate<S: AccessSink + ?Sized>(
    source: ElementStream,
    operator: &mut dyn Operator,
    sink: &mut S,
    limit: Option<u64>,
    progress: &mut dyn FnMut(&AccessCounts),
) -> Result<Generated, SourceError> {
    generate_until(
        source,
        operator,
        sink,
        limit,
        progress,
        &AtomicBool::new(false),
    )
}

/// [`generate`] that also stops once `stop` is set (Ctrl-C), looking at it after every element
/// and, through [`AccessSink::stopped`], within an element's long work: the requests so far
/// stay in the sink, and the result is marked `interrupted` and `truncated` (the operator's
/// open windows are not fired).
pub fn generate_until<S: AccessSink + ?Sized>(
    source: ElementStream,
    operator: &mut dyn Operator,
    sink: &mut S,
    limit: Option<u64>,
    progress: &mut dyn FnMut(&AccessCounts),
    stop: &AtomicBool,
) -> Result<Generated, SourceError> {
    let mut generator = Generator::start_until(operator, sink, limit, stop);
    let mut elements: u64 = 0;
    // a preload that reaches the limit (or is stopped) ends the run before the first element
    let source = (!generator.is_done()).then_some(source);
    for element in source.into_iter().flatten() {
        if !generator.push(element?) {
            break;
        }
        elements += 1;
        if elements % crate::PROGRESS_EVERY == 0 {
            progress(generator.counts());
        }
    }
    let generated = generator.finish();
    progress(&generated.counts);
    Ok(generated)
}

/// One generation in progress, fed one element at a time: what [`generate_until`] runs over a
/// stream, and what one pass over a job's stream runs for each of its subtasks
/// (`crate::parallel`).
pub struct Generator<'a, S: AccessSink + ?Sized> {
    operator: &'a mut dyn Operator,
    out: Limiter<'a, S>,
    watermark: i64,
    event_keys: EventKeyCounter,
    key_bytes: Vec<u8>,
    preload_requests: u64,
    truncated: bool,
    interrupted: bool,
}

impl<'a, S: AccessSink + ?Sized> Generator<'a, S> {
    /// Starts `operator` ([`Operator::on_start`]) writing to `sink`; `limit` stops it after
    /// that many requests.
    pub fn start(operator: &'a mut dyn Operator, sink: &'a mut S, limit: Option<u64>) -> Self {
        Generator::start_until(operator, sink, limit, &NEVER)
    }

    /// [`Generator::start`] that also stops once `stop` is set (Ctrl-C): after the element
    /// during which it was set, whose own work the operator may cut short
    /// ([`AccessSink::stopped`]).
    pub fn start_until(
        operator: &'a mut dyn Operator,
        sink: &'a mut S,
        limit: Option<u64>,
        stop: &'a AtomicBool,
    ) -> Self {
        let limit = limit.unwrap_or(u64::MAX);
        let mut out = Limiter {
            inner: sink,
            counts: AccessCounts::default(),
            requests: 0,
            limit,
            stop,
        };
        operator.on_start(&mut out);
        let preload_requests = out.requests;
        let mut generator = Generator {
            operator,
            truncated: out.requests >= limit,
            out,
            watermark: i64::MIN,
            event_keys: EventKeyCounter::default(),
            key_bytes: Vec::with_capacity(32),
            preload_requests,
            interrupted: false,
        };
        if generator.out.stop_asked() {
            generator.interrupt();
        }
        generator
    }

    /// True once the limit was reached or the run was interrupted: it takes no more elements.
    #[inline]
    pub fn is_done(&self) -> bool {
        self.truncated
    }

    /// What passed so far: requests by op and state, events, watermarks.
    pub fn counts(&self) -> &AccessCounts {
        &self.out.counts
    }

    /// Passes the next element through the operator; false once the run is done (the limit
    /// reached: this element's requests were the last ones taken; or a stop asked for).
    #[inline]
    pub fn push(&mut self, element: StreamElement) -> bool {
        if self.truncated {
            return false;
        }
        match element {
            StreamElement::Event(e) if self.operator.owns(&e) => {
                self.event_keys.add(&e.key, &mut self.key_bytes);
                self.out.event(e.input);
                self.operator.on_event(&e, &mut self.out);
            }
            StreamElement::Event(e) => self.operator.on_others_event(&e, &mut self.out),
            StreamElement::Watermark(w) => {
                if w > self.watermark {
                    self.watermark = w;
                    self.out.watermark(w);
                    self.operator.on_watermark(w, &mut self.out);
                }
            }
        }
        if self.out.requests >= self.out.limit {
            self.truncated = true;
        } else if self.out.stop_asked() {
            self.interrupt();
        }
        !self.truncated
    }

    /// Stops the run where it is (Ctrl-C): it ends `truncated` and `interrupted`, open windows
    /// not fired.
    pub fn interrupt(&mut self) {
        if !self.truncated {
            (self.truncated, self.interrupted) = (true, true);
        }
    }

    /// Ends the run: at the end of the input ([`Operator::on_end`], the final watermark's
    /// work) unless it was cut short.
    pub fn finish(self) -> Generated {
        let Generator {
            operator,
            mut out,
            event_keys,
            preload_requests,
            truncated,
            interrupted,
            ..
        } = self;
        if !truncated {
            operator.on_end(&mut out);
        }
        Generated {
            counts: out.counts,
            truncated,
            interrupted,
            event_keys,
            preload_requests,
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn silence_is_noticed_once_after_ten_million_events_without_a_request() {
        let mut silence = Silence::watching(Some(1_000));
        let mut counts = AccessCounts::default();
        counts.count(Op::Put, 0);
        counts.events = 5;
        assert_eq!(silence.notice(&counts), None);
        counts.events = 5 + Silence::EVENTS - 1;
        assert_eq!(silence.notice(&counts), None, "not yet");
        // a request restarts the wait
        counts.count(Op::Get, 0);
        assert_eq!(silence.notice(&counts), None);
        counts.events += Silence::EVENTS;
        let said = silence.notice(&counts).expect("ten million quiet events");
        assert!(
            said.starts_with("10000000 events have passed without a request (2 requests"),
            "{said}"
        );
        assert!(said.contains("Ctrl-C"), "{said}");
        counts.events += Silence::EVENTS;
        assert_eq!(silence.notice(&counts), None, "said once");
    }

    #[test]
    fn silence_without_a_limit_is_never_noticed() {
        let mut silence = Silence::watching(None);
        assert_eq!(silence.notice_at(Silence::EVENTS * 3, 0), None);
    }

    #[test]
    fn silence_is_noticed_from_a_jobs_records_and_requests() {
        let mut silence = Silence::watching(Some(1_000));
        assert_eq!(silence.notice_at(1_000, 40), None);
        assert_eq!(silence.notice_at(1_000 + Silence::EVENTS - 1, 40), None);
        let said = silence
            .notice_at(1_000 + Silence::EVENTS, 40)
            .expect("quiet");
        assert!(said.contains("(40 requests so far)"), "{said}");
    }

    use super::*;
    use crate::access::VecSink;
    use crate::key::Key;
    use crate::operator::{WindowAssigner, WindowFunction, WindowOperator};
    use crate::source::Event;
    use crate::timer::TimerService;

    /// A sink that asks the run to stop (sets `stop`) once it has seen `stop_at` events.
    struct StopsAt<'a> {
        records: VecSink,
        stop: &'a AtomicBool,
        stop_at: u64,
        events: u64,
    }

    impl AccessSink for StopsAt<'_> {
        fn access(&mut self, a: Access<'_>) {
            self.records.access(a);
        }
        fn event(&mut self, input: u8) {
            self.events += 1;
            if self.events == self.stop_at {
                self.stop.store(true, Ordering::Relaxed);
            }
            self.records.event(input);
        }
        fn watermark(&mut self, timestamp: i64) {
            self.records.watermark(timestamp);
        }
    }

    /// 200,000 events of ten keys, one per ms, through a 1 s tumbling window, stopped (as by
    /// Ctrl-C) when the sink has seen `stop_at` events.
    fn run(stop_at: u64) -> (Generated, VecSink) {
        let events = (0..200_000i64).map(|t| {
            Ok(StreamElement::Event(Event {
                key: Key::Long(t % 10),
                timestamp: t,
                input: 0,
                closes: false,
                payload: 0,
            }))
        });
        let mut operator = WindowOperator::new(
            WindowAssigner::Tumbling {
                size: 1000,
                offset: 0,
            },
            WindowFunction::Incremental,
            0,
            true,
            TimerService::RocksDb,
            128,
        );
        let stop = AtomicBool::new(false);
        let mut sink = StopsAt {
            records: VecSink::default(),
            stop: &stop,
            stop_at,
            events: 0,
        };
        let generated = generate_until(
            Box::new(events),
            &mut operator,
            &mut sink,
            None,
            &mut |_| {},
            &stop,
        )
        .unwrap();
        (generated, sink.records)
    }

    #[test]
    fn a_stop_ends_the_run_after_the_element_it_came_in_marked_interrupted() {
        let (whole, _) = run(u64::MAX);
        assert_eq!(whole.counts.events, 200_000);
        assert!(!whole.truncated && !whole.interrupted);

        let (stopped, sink) = run(1_000);
        assert_eq!(stopped.counts.events, 1_000);
        assert!(stopped.truncated && stopped.interrupted);
        assert_eq!(sink.records.len() as u64, {
            let c = &stopped.counts;
            c.events + c.watermarks + c.requests()
        });
    }
}
