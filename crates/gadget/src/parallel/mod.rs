//! A parallel job in one pass: the job's inputs are read once, each event goes to the subtask
//! whose key groups hold its key and every watermark to every subtask (Flink's keyed exchange
//! from one source task; a Kafka Streams thread's tasks or, for Spark, every subtask:
//! [`crate::source::subtask`]), and each subtask runs its own operator into its own sink, the
//! subtasks shared among a pool of threads.
//!
//! Each subtask's requests are exactly those of generating it alone from its filtered stream
//! (`Config::open_source` of the subtask): the same elements reach its operator in the same
//! order, whatever the number of threads.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};

use crate::access::AccessSink;
use crate::generate::{Generated, Generator};
use crate::operator::Operator;
use crate::source::interleave::{Interleaver, Interleaving};
use crate::source::subtask::SubtaskRouter;
use crate::source::{ElementStream, SourceError, StreamElement};

pub mod in_job;
pub mod split;

/// A job's inputs as its source task(s) emit them, before the keyed exchange.
pub enum JobInputs {
    /// One stream: a one-input operator's (`interleaving` is `None`), or a two-input
    /// operator's whose events carry input 1 or 2 (its watermarks are both inputs').
    One {
        /// The stream.
        stream: ElementStream,
        /// How a two-input operator interleaves its inputs.
        interleaving: Option<Interleaving>,
    },
    /// A two-input operator's two separate streams, each with its own watermarks.
    Two {
        /// Input 1.
        left: ElementStream,
        /// Input 2.
        right: ElementStream,
        /// How the operator interleaves them.
        interleaving: Interleaving,
    },
}

impl JobInputs {
    /// The stream the operator (of one subtask) sees: each input through `share` (the
    /// subtask's part of it, or all of it), two inputs interleaved as the operator interleaves
    /// them.
    pub fn merged(self, share: impl Fn(ElementStream) -> ElementStream) -> ElementStream {
        use crate::source::interleave::TwoInputMerger;
        match self {
            JobInputs::One {
                stream,
                interleaving: None,
            } => share(stream),
            JobInputs::One {
                stream,
                interleaving: Some(mode),
            } => Box::new(TwoInputMerger::new(share(stream), mode)),
            JobInputs::Two {
                left,
                right,
                interleaving,
            } => Box::new(TwoInputMerger::separate(
                share(left),
                share(right),
                interleaving,
            )),
        }
    }
}

impl std::fmt::Debug for JobInputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JobInputs::One { interleaving, .. } => f
                .debug_struct("JobInputs::One")
                .field("interleaving", interleaving)
                .finish(),
            JobInputs::Two { interleaving, .. } => f
                .debug_struct("JobInputs::Two")
                .field("interleaving", interleaving)
                .finish(),
        }
    }
}

/// Every subtask of a job, generated in one pass over its inputs.
pub struct AllSubtasks<'a> {
    /// The keyed exchange: how many subtasks, and which one each key goes to.
    pub router: SubtaskRouter,
    /// Builds subtask i's operator, on the thread that runs it (with the key groups of i).
    pub build_operator: &'a (dyn Fn(u32) -> Box<dyn Operator> + Sync),
    /// Requests of each subtask's trace at most (each stops at it, the others go on).
    pub limit: Option<u64>,
    /// Threads running operators (at most one per subtask; the calling thread reads the inputs).
    pub threads: usize,
}

/// Elements per message to a worker thread.
const BATCH: usize = 4096;
/// Messages in flight to each worker before the reader waits.
const QUEUED: usize = 4;
/// `Item::to` of a record every subtask of the worker receives.
const EVERY: u32 = u32::MAX;

/// What the reader sends a worker.
enum Item {
    /// A record for the worker's subtask `to` (its index in the worker's list, or [`EVERY`]),
    /// from input 0 (one stream) or 1 / 2 (separate left / right).
    Record {
        to: u32,
        input: u8,
        element: StreamElement,
    },
    /// Separate input 1 or 2 ended.
    End { input: u8 },
}

/// What the reader and the workers share.
struct Shared {
    /// How the pass ended, as the workers learn it once their input ends: [`RUNNING`] (to the
    /// end of the input, or until every subtask's limit) or [`INTERRUPTED`].
    status: AtomicU8,
    /// Subtasks that reached their limit.
    done: AtomicUsize,
    /// The requests the workers' subtasks issued, as of each worker's last batch.
    requests: AtomicU64,
}

/// How far a pass over a job's inputs got, as its `progress` hears it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobProgress {
    /// Records read from the inputs.
    pub read: u64,
    /// Requests the subtasks issued so far (of all of them; with workers, as of their last
    /// batch).
    pub requests: u64,
}

const RUNNING: u8 = 0;
const INTERRUPTED: u8 = 1;

/// One subtask on a worker: its interleaving of two inputs, its generation.
struct Lane<'a, S: AccessSink + ?Sized> {
    subtask: u32,
    merge: Option<Interleaver>,
    generator: Generator<'a, S>,
}

impl<S: AccessSink + ?Sized> Lane<'_, S> {
    /// Passes a record on; true when the lane became done with it (its limit reached).
    #[inline]
    fn push(&mut self, input: u8, element: StreamElement) -> bool {
        if self.generator.is_done() {
            return false;
        }
        let Some(merge) = &mut self.merge else {
            return !self.generator.push(element);
        };
        match input {
            0 => merge.push_tagged(element),
            i => merge.push_input(usize::from(i - 1), element),
        }
        self.drain()
    }

    /// Passes on what the interleaving decided; true when the lane became done.
    fn drain(&mut self) -> bool {
        if let Some(merge) = &mut self.merge {
            while let Some(e) = merge.pop() {
                if !self.generator.push(e) {
                    return true;
                }
            }
        }
        false
    }

    /// Input 1 / 2 of separate streams ended (0: the one stream); true when the lane became done.
    fn end(&mut self, input: u8) -> bool {
        if self.generator.is_done() {
            return false;
        }
        match &mut self.merge {
            Some(merge) => merge.end(usize::from(input.max(1) - 1)),
            None => return false,
        }
        self.drain()
    }
}

impl AllSubtasks<'_> {
    /// Generates every subtask of `inputs` into `sinks` (one per subtask, in order): the
    /// result of each. `progress` hears the records read and the requests issued every
    /// [`PROGRESS_EVERY`](crate::PROGRESS_EVERY) records; there `stop` (Ctrl-C) is looked at,
    /// and once set every subtask ends `interrupted`. A read error ends the pass with it.
    ///
    /// # Panics
    /// When `sinks` does not hold one sink per subtask, or a worker thread panics.
    pub fn generate<S: AccessSink + Send>(
        &self,
        inputs: JobInputs,
        sinks: &mut [S],
        progress: &mut dyn FnMut(JobProgress),
        stop: &AtomicBool,
    ) -> Result<Vec<Generated>, SourceError> {
        let p = self.router.parallelism();
        assert_eq!(sinks.len(), p as usize, "one sink per subtask");
        let workers = self.threads.clamp(1, p as usize);
        let merge = match &inputs {
            JobInputs::One {
                interleaving: Some(mode),
                ..
            } => Some(Interleaver::tagged(*mode)),
            JobInputs::One { .. } => None,
            JobInputs::Two { interleaving, .. } => Some(Interleaver::separate(*interleaving)),
        };
        let shared = Shared {
            status: AtomicU8::new(RUNNING),
            done: AtomicUsize::new(0),
            requests: AtomicU64::new(0),
        };
        // subtask i runs on worker i % workers, as its (i / workers)-th lane
        let mut lanes: Vec<Vec<(u32, &mut S)>> = (0..workers).map(|_| Vec::new()).collect();
        for (i, sink) in sinks.iter_mut().enumerate() {
            lanes[i % workers].push((i as u32, sink));
        }
        std::thread::scope(|scope| {
            let mut reader = Reader {
                router: &self.router,
                workers,
                senders: Vec::with_capacity(workers),
                returned: Vec::with_capacity(workers),
                batches: Vec::with_capacity(workers),
                closed: false,
            };
            let mut handles = Vec::with_capacity(workers);
            for lanes in lanes {
                let (to_worker, from_reader) = mpsc::sync_channel::<Vec<Item>>(QUEUED);
                let (to_reader, from_worker) = mpsc::channel::<Vec<Item>>();
                reader.senders.push(to_worker);
                reader.returned.push(from_worker);
                reader.batches.push(Vec::with_capacity(BATCH));
                let (merge, shared) = (merge.clone(), &shared);
                let handle = std::thread::Builder::new()
                    .name("gadget-subtasks".into())
                    .spawn_scoped(scope, move || {
                        self.work(lanes, from_reader, to_reader, merge, shared)
                    })
                    .expect("spawning a thread");
                handles.push(handle);
            }
            let read = reader.run(inputs, progress, stop, &shared, p as usize);
            if read.as_ref().is_ok_and(|interrupted| *interrupted) || read.is_err() {
                shared.status.store(INTERRUPTED, Ordering::SeqCst);
            }
            reader.close();
            drop(reader);
            let mut results: Vec<Option<Generated>> = (0..p).map(|_| None).collect();
            for handle in handles {
                let finished = handle
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                for (i, generated) in finished {
                    results[i as usize] = Some(generated);
                }
            }
            read?;
            Ok(results
                .into_iter()
                .map(|g| g.expect("every subtask ran on a worker"))
                .collect())
        })
    }
}

impl AllSubtasks<'_> {
    /// The worker of some subtasks: their operators, fed the records it receives.
    fn work<S: AccessSink>(
        &self,
        lanes: Vec<(u32, &mut S)>,
        records: Receiver<Vec<Item>>,
        returned: Sender<Vec<Item>>,
        merge: Option<Interleaver>,
        shared: &Shared,
    ) -> Vec<(u32, Generated)> {
        let (limit, done) = (self.limit, &shared.done);
        let mut operators: Vec<Box<dyn Operator>> = lanes
            .iter()
            .map(|(i, _)| (self.build_operator)(*i))
            .collect();
        let mut lanes: Vec<Lane<'_, S>> = lanes
            .into_iter()
            .zip(operators.iter_mut())
            .map(|((subtask, sink), operator)| Lane {
                subtask,
                merge: merge.clone(),
                generator: Generator::start(operator.as_mut(), sink, limit),
            })
            .collect();
        // a preload may reach the limit before the first record
        let finished = lanes.iter().filter(|l| l.generator.is_done()).count();
        done.fetch_add(finished, Ordering::Relaxed);
        let mut told_requests = 0;
        for mut batch in records {
            for item in batch.drain(..) {
                let became_done = match item {
                    Item::Record {
                        to: EVERY,
                        input,
                        element,
                    } => lanes
                        .iter_mut()
                        .map(|lane| lane.push(input, element.clone()))
                        .filter(|&became_done| became_done)
                        .count(),
                    Item::Record { to, input, element } => {
                        usize::from(lanes[to as usize].push(input, element))
                    }
                    Item::End { input } => lanes
                        .iter_mut()
                        .map(|lane| lane.end(input))
                        .filter(|&became_done| became_done)
                        .count(),
                };
                if became_done > 0 {
                    done.fetch_add(became_done, Ordering::Relaxed);
                }
            }
            let requests: u64 = lanes.iter().map(|l| l.generator.counts().requests()).sum();
            shared
                .requests
                .fetch_add(requests - told_requests, Ordering::Relaxed);
            told_requests = requests;
            // the reader may be gone (it stops once every subtask is done)
            let _ = returned.send(batch);
        }
        let interrupted = shared.status.load(Ordering::SeqCst) == INTERRUPTED;
        lanes
            .into_iter()
            .map(|mut lane| {
                if interrupted {
                    lane.generator.interrupt();
                } else {
                    // the end of the input: what the interleaving still holds
                    lane.end(1);
                    lane.end(2);
                }
                (lane.subtask, lane.generator.finish())
            })
            .collect()
    }
}

/// What a pass over a job's inputs meets.
pub(crate) enum Read {
    /// A record of input 0 (one stream) or 1 / 2 (separate left / right).
    Record(u8, StreamElement),
    /// Separate input 1 or 2 ended.
    End(u8),
}

/// Reads `inputs` as the job's source task emits them: one stream in order, or two separate
/// streams one record of each in turn (whichever still has records). Each record and each
/// end of a separate input goes to `each`, which ends the pass by returning `Some`; that
/// value, or `None` at the end of the inputs. A read error ends the pass with it.
pub(crate) fn read_inputs<T>(
    inputs: JobInputs,
    mut each: impl FnMut(Read) -> Option<T>,
) -> Result<Option<T>, SourceError> {
    match inputs {
        JobInputs::One { stream, .. } => {
            for element in stream {
                if let Some(end) = each(Read::Record(0, element?)) {
                    return Ok(Some(end));
                }
            }
        }
        JobInputs::Two { left, right, .. } => {
            let mut streams = [Some(left), Some(right)];
            let mut turn = 0;
            while streams.iter().any(Option::is_some) {
                if let Some(stream) = &mut streams[turn] {
                    let input = turn as u8 + 1;
                    let read = match stream.next() {
                        None => {
                            streams[turn] = None;
                            Read::End(input)
                        }
                        Some(element) => Read::Record(input, element?),
                    };
                    if let Some(end) = each(read) {
                        return Ok(Some(end));
                    }
                }
                turn = 1 - turn;
            }
        }
    }
    Ok(None)
}

/// The calling thread's part: reads the inputs and routes their records to the workers.
struct Reader<'r> {
    router: &'r SubtaskRouter,
    workers: usize,
    senders: Vec<SyncSender<Vec<Item>>>,
    returned: Vec<Receiver<Vec<Item>>>,
    batches: Vec<Vec<Item>>,
    /// A worker is gone (it panicked): nothing more is sent.
    closed: bool,
}

impl Reader<'_> {
    /// Reads everything, or until `stop` or every subtask's limit; true when `stop` ended it.
    fn run(
        &mut self,
        inputs: JobInputs,
        progress: &mut dyn FnMut(JobProgress),
        stop: &AtomicBool,
        shared: &Shared,
        subtasks: usize,
    ) -> Result<bool, SourceError> {
        let mut read: u64 = 0;
        let mut tick = |reader: &Reader<'_>| -> Option<bool> {
            read += 1;
            if read % crate::PROGRESS_EVERY != 0 {
                return None;
            }
            progress(JobProgress {
                read,
                requests: shared.requests.load(Ordering::Relaxed),
            });
            if stop.load(Ordering::Relaxed) {
                return Some(true);
            }
            let done = shared.done.load(Ordering::Relaxed);
            (reader.closed || done >= subtasks).then_some(false)
        };
        // each subtask's interleaving waits for the input it needs, so the order of reading
        // two inputs changes nothing but memory
        let stopped = read_inputs(inputs, |read| match read {
            Read::Record(input, element) => {
                self.route(input, element);
                tick(self)
            }
            Read::End(input) => {
                for w in 0..self.workers {
                    self.send(w, Item::End { input });
                }
                None
            }
        })?;
        Ok(stopped.unwrap_or(false))
    }

    /// Sends a record where it goes: an event to its key's subtask (or to all, for an exchange
    /// that sends every event everywhere), a watermark to all.
    #[inline]
    fn route(&mut self, input: u8, element: StreamElement) {
        match element {
            StreamElement::Event(e) => match self.router.subtask_of(&e.key) {
                Some(subtask) => {
                    let item = Item::Record {
                        to: subtask / self.workers as u32,
                        input,
                        element: StreamElement::Event(e),
                    };
                    self.send(subtask as usize % self.workers, item);
                }
                None => self.send_to_every(input, StreamElement::Event(e)),
            },
            watermark => self.send_to_every(input, watermark),
        }
    }

    /// Sends a record to every subtask (each worker's lanes).
    fn send_to_every(&mut self, input: u8, element: StreamElement) {
        for worker in 0..self.workers {
            let item = Item::Record {
                to: EVERY,
                input,
                element: element.clone(),
            };
            self.send(worker, item);
        }
    }

    /// Adds an item to worker `w`'s batch, and sends the batch once it is full.
    #[inline]
    fn send(&mut self, w: usize, item: Item) {
        self.batches[w].push(item);
        if self.batches[w].len() >= BATCH {
            self.flush(w);
        }
    }

    fn flush(&mut self, w: usize) {
        if self.batches[w].is_empty() {
            return;
        }
        // a batch the worker emptied, or a new one until it returned one
        let next = self.returned[w]
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(BATCH));
        let full = std::mem::replace(&mut self.batches[w], next);
        if self.closed || self.senders[w].send(full).is_err() {
            self.closed = true;
        }
    }

    /// Sends what is left; the workers end once they took it.
    fn close(&mut self) {
        for w in 0..self.workers {
            self.flush(w);
        }
        self.senders.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::{TraceRecord, VecSink};
    use crate::generate::generate;
    use crate::key::{Key, KeyGroupRange};
    use crate::operator::{IntervalJoin, WindowAssigner, WindowFunction, WindowOperator};
    use crate::source::subtask::SubtaskFilter;
    use crate::source::Event;
    use crate::timer::TimerService;

    /// 20,000 events of 500 keys, on inputs 1 and 2 when `two`, a watermark every 50.
    pub(super) fn job(two: bool) -> Vec<StreamElement> {
        let mut v = Vec::new();
        for t in 0..20_000i64 {
            v.push(StreamElement::Event(Event {
                key: Key::Long((t * 7919) % 500),
                timestamp: t,
                input: if two { 1 + (t % 3 == 0) as u8 } else { 0 },
                closes: false,
                payload: 0,
            }));
            if t % 50 == 49 {
                v.push(StreamElement::Watermark(t - 100));
            }
        }
        v
    }

    /// The job as two separate inputs interleaved by `mode`: every watermark on both, a
    /// quarter of the events on the right.
    pub(super) fn separate(mode: Interleaving) -> JobInputs {
        let side = |left: bool| {
            stream(
                job(false)
                    .into_iter()
                    .filter(|e| match e {
                        StreamElement::Event(ev) => (ev.timestamp % 4 != 0) == left,
                        StreamElement::Watermark(_) => true,
                    })
                    .collect(),
            )
        };
        JobInputs::Two {
            left: side(true),
            right: side(false),
            interleaving: mode,
        }
    }

    pub(super) fn stream(v: Vec<StreamElement>) -> ElementStream {
        Box::new(v.into_iter().map(Ok))
    }

    pub(super) fn window(p: u32, i: u32) -> Box<dyn Operator> {
        let op = WindowOperator::new(
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
        Box::new(op.with_key_groups(KeyGroupRange::of_subtask(128, p, i)))
    }

    pub(super) fn join(p: u32, i: u32) -> Box<dyn Operator> {
        let op = IntervalJoin::new(-300, 200, 16, TimerService::RocksDb, 128);
        Box::new(op.with_key_groups(KeyGroupRange::of_subtask(128, p, i)))
    }

    pub(super) type Build = fn(u32, u32) -> Box<dyn Operator>;

    /// Subtask i alone: its filtered stream (interleaved when `mode`) through its operator.
    pub(super) fn alone(
        p: u32,
        i: u32,
        inputs: &dyn Fn() -> JobInputs,
        build: Build,
        limit: Option<u64>,
    ) -> Vec<TraceRecord> {
        let router = SubtaskRouter::new(p, 128);
        let share = |s: ElementStream| -> ElementStream {
            Box::new(SubtaskFilter::new(s, router.clone(), i))
        };
        let source = inputs().merged(share);
        let mut sink = VecSink::default();
        let mut operator = build(p, i);
        generate(source, operator.as_mut(), &mut sink, limit, &mut |_| {}).unwrap();
        sink.records
    }

    fn in_one_pass(
        p: u32,
        threads: usize,
        inputs: JobInputs,
        build: &(dyn Fn(u32) -> Box<dyn Operator> + Sync),
        limit: Option<u64>,
    ) -> (Vec<Vec<TraceRecord>>, Vec<Generated>) {
        let mut sinks: Vec<VecSink> = (0..p).map(|_| VecSink::default()).collect();
        let all = AllSubtasks {
            router: SubtaskRouter::new(p, 128),
            build_operator: build,
            limit,
            threads,
        };
        let generated = all
            .generate(inputs, &mut sinks, &mut |_| {}, &AtomicBool::new(false))
            .unwrap();
        (sinks.into_iter().map(|s| s.records).collect(), generated)
    }

    #[test]
    fn one_pass_gives_each_subtask_what_it_gives_alone_on_any_number_of_threads() {
        let one = || JobInputs::One {
            stream: stream(job(false)),
            interleaving: None,
        };
        let tagged = || JobInputs::One {
            stream: stream(job(true)),
            interleaving: Some(Interleaving::RoundRobin),
        };
        let by_time = || separate(Interleaving::ByTime);
        let round_robin = || separate(Interleaving::RoundRobin);
        let cases: [(&dyn Fn() -> JobInputs, Build); 4] = [
            (&one, window),
            (&tagged, join),
            (&by_time, join),
            (&round_robin, join),
        ];
        for (inputs, build) in cases {
            for p in [1, 3, 4] {
                let expected: Vec<Vec<TraceRecord>> =
                    (0..p).map(|i| alone(p, i, inputs, build, None)).collect();
                for threads in [1, 2, 3] {
                    let built = |i| build(p, i);
                    let (got, generated) = in_one_pass(p, threads, inputs(), &built, None);
                    assert_eq!(got, expected, "p {p}, {threads} threads");
                    assert!(generated.iter().all(|g| !g.truncated));
                }
            }
        }
    }

    #[test]
    fn each_subtask_stops_at_the_limit_and_the_others_go_on() {
        let one = || JobInputs::One {
            stream: stream(job(false)),
            interleaving: None,
        };
        let built = |i| window(2, i);
        let (got, generated) = in_one_pass(2, 2, one(), &built, Some(5_000));
        for (i, records) in got.iter().enumerate() {
            assert_eq!(*records, alone(2, i as u32, &one, window, Some(5_000)));
            assert!(generated[i].truncated && !generated[i].interrupted);
            assert_eq!(generated[i].counts.requests(), 5_000);
        }
    }

    /// The windowed job `copies` times over as 2 subtasks on 2 threads, `progress` hearing it.
    fn two_subtasks_over(
        copies: usize,
        progress: &mut dyn FnMut(JobProgress),
        stop: bool,
    ) -> Vec<Generated> {
        let long: Vec<StreamElement> = (0..copies).flat_map(|_| job(false)).collect();
        let built = |i| window(2, i);
        let mut sinks = vec![VecSink::default(), VecSink::default()];
        let all = AllSubtasks {
            router: SubtaskRouter::new(2, 128),
            build_operator: &built,
            limit: None,
            threads: 2,
        };
        let inputs = JobInputs::One {
            stream: stream(long),
            interleaving: None,
        };
        all.generate(inputs, &mut sinks, progress, &AtomicBool::new(stop))
            .unwrap()
    }

    #[test]
    fn progress_hears_the_records_read_and_the_requests_the_workers_issued() {
        // 163,200 records: two ticks of progress, the second after the workers were sent more
        // than they can hold unprocessed
        let mut heard = Vec::new();
        let generated = two_subtasks_over(8, &mut |at| heard.push(at), false);
        let read: Vec<u64> = heard.iter().map(|at| at.read).collect();
        assert_eq!(read, [crate::PROGRESS_EVERY, 2 * crate::PROGRESS_EVERY]);
        let total: u64 = generated.iter().map(|g| g.counts.requests()).sum();
        let last = heard[1].requests;
        assert!(last > 0 && last < total, "{last} of {total}");
        assert!(heard[0].requests <= last);
    }

    #[test]
    fn a_stop_interrupts_every_subtask() {
        let generated = two_subtasks_over(4, &mut |_| {}, true);
        let events: u64 = generated.iter().map(|g| g.counts.events).sum();
        assert!(generated.iter().all(|g| g.interrupted && g.truncated));
        assert!(events < 4 * 20_000, "{events}");
    }

    #[test]
    fn a_read_error_ends_the_pass_with_it() {
        let failing: ElementStream = Box::new(job(false).into_iter().map(Ok).take(100).chain(
            std::iter::once(Err(SourceError::Parse {
                path: "in.csv".into(),
                line: 7,
                message: "bad".into(),
            })),
        ));
        let built = |i| window(2, i);
        let mut sinks = vec![VecSink::default(), VecSink::default()];
        let all = AllSubtasks {
            router: SubtaskRouter::new(2, 128),
            build_operator: &built,
            limit: None,
            threads: 2,
        };
        let inputs = JobInputs::One {
            stream: failing,
            interleaving: None,
        };
        let e = all
            .generate(inputs, &mut sinks, &mut |_| {}, &AtomicBool::new(false))
            .unwrap_err();
        assert_eq!(e.to_string(), "in.csv:7: bad");
    }
}
