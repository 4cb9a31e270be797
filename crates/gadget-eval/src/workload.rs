//! The request stream a run issues, produced ahead on its own thread.
//!
//! Requests travel in [`RequestBlock`]s of 16,384 through a bounded queue; the driver
//! hands emptied blocks back for reuse, so producing and issuing allocate nothing per request
//! and generation cost never shows up as store latency. A shard's stream keeps only the
//! shard's requests ([`Production::shard`]): deciding which those are is the producer's work,
//! off the driver's thread, as reading and generating are.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use gadget::access::{Access, AccessSink, Op, StateId};
use gadget::config::Config;
use gadget::generate::Silence;
use gadget::parallel::in_job::{JobSink, SubtaskInJob};
use gadget::trace::{open_trace, RecordRef};

use crate::shard::{Shard, ShardFilter};

/// Requests per block: large blocks mean few handoffs between the threads (each can wake the
/// producer, a system call on the driver's thread).
pub const BLOCK_REQUESTS: usize = 16_384;
/// Blocks in flight between producer and driver: a few megabytes, ahead of the driver.
const QUEUE_BLOCKS: usize = 4;

/// One request of a block; its key is `keys[key_start..key_start + key_len]`. Sixteen bytes,
/// so that the driver reads little memory per request beside the store's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// What the request does.
    pub op: Op,
    /// Which state (column family) it targets.
    pub state: StateId,
    /// Where its key starts in the block's key bytes.
    pub key_start: u32,
    /// Key length.
    pub key_len: u32,
    /// Bytes written (put, merge, batch put).
    pub value_len: u32,
}

const _: () = assert!(std::mem::size_of::<Request>() == 16);

/// A batch of requests with their keys.
#[derive(Debug, Default, Clone)]
pub struct RequestBlock {
    /// The requests, in order.
    pub requests: Vec<Request>,
    /// Key bytes of all requests.
    pub keys: Vec<u8>,
    /// Event time of each request in microseconds when the stream was started with event
    /// times (see [`RequestStream::start_with_event_times`]); else empty.
    pub event_times_us: Vec<i64>,
    /// For a subtask of a parallel job ([`WorkloadSource::JobSubtask`]) or a shard's stream
    /// ([`Production::shard`]): how many of the workload's requests for other clients come,
    /// in the workload's order, between the previous request and this one; else empty.
    pub others_before: Vec<u64>,
}

impl RequestBlock {
    fn with_capacity(event_times: bool) -> Self {
        RequestBlock {
            requests: Vec::with_capacity(BLOCK_REQUESTS),
            keys: Vec::with_capacity(BLOCK_REQUESTS * 32),
            event_times_us: Vec::with_capacity(if event_times { BLOCK_REQUESTS } else { 0 }),
            others_before: Vec::new(),
        }
    }

    /// Appends a copy of `a`.
    pub fn push(&mut self, a: &Access<'_>) {
        let key_start = self.keys.len() as u32;
        self.keys.extend_from_slice(a.key);
        self.requests.push(Request {
            op: a.op,
            state: a.state,
            key_start,
            key_len: a.key.len() as u32,
            value_len: a.value_len,
        });
    }

    /// How many of the workload's requests for other clients come before request `i` (0 when
    /// the stream is neither a job subtask's nor a shard's).
    #[inline]
    pub fn others_before(&self, i: usize) -> u64 {
        self.others_before.get(i).copied().unwrap_or(0)
    }

    /// The key of `r`.
    pub fn key(&self, r: &Request) -> &[u8] {
        &self.keys[r.key_start as usize..(r.key_start + r.key_len) as usize]
    }

    /// True when the block holds [`BLOCK_REQUESTS`] requests.
    pub fn is_full(&self) -> bool {
        self.requests.len() >= BLOCK_REQUESTS
    }

    fn clear(&mut self) {
        self.requests.clear();
        self.keys.clear();
        self.event_times_us.clear();
        self.others_before.clear();
    }
}

/// Where requests come from.
#[derive(Debug, Clone)]
pub enum WorkloadSource {
    /// A trace file, binary or text (`gadget replay`); `-` is standard input.
    Trace {
        /// The trace's path.
        path: PathBuf,
        /// Stop after this many requests.
        limit: Option<u64>,
    },
    /// A workload config, generated on the fly (`gadget run`); `limit` bounds the requests.
    Generate {
        /// The parsed config.
        config: Box<Config>,
        /// Stop after this many requests.
        limit: Option<u64>,
    },
    /// The subtask a config chose ([`Config::select_subtask`]) of its parallel job, generated
    /// with the whole job so that each request knows its place in the job's order
    /// ([`RequestBlock::others_before`], [`crate::job`]); `limit` bounds the job's requests.
    JobSubtask {
        /// The parsed config, its subtask chosen.
        config: Box<Config>,
        /// Stop once the job issued this many requests (all its subtasks together).
        limit: Option<u64>,
    },
}

/// How a stream is produced from its source.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Production {
    /// Give every request an event time ([`RequestStream::start_with_event_times`]).
    pub event_times: bool,
    /// Keep only this shard's requests (`--shard i/N`, [`crate::shard`]); each kept request
    /// carries how many of the workload's requests went to other shards before it
    /// ([`RequestBlock::others_before`]), so that an open loop draws their starts all the same.
    pub shard: Option<Shard>,
}

/// What the producer tells the driver beside its blocks.
#[derive(Debug)]
struct Told {
    /// The workload's requests for other clients after the stream's last request, set when
    /// the producer ends.
    others_after: AtomicU64,
    /// The event time of the workload's first request, whichever client issues it
    /// ([`NO_EVENT_TIME`] until it is known).
    first_event_time_us: AtomicI64,
}

/// [`Told::first_event_time_us`] before a request has one.
const NO_EVENT_TIME: i64 = i64::MIN;

impl Default for Told {
    fn default() -> Self {
        Told {
            others_after: AtomicU64::new(0),
            first_event_time_us: AtomicI64::new(NO_EVENT_TIME),
        }
    }
}

/// A producer failed: the trace is corrupt or the event source broke.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// Reading the trace failed.
    #[error(transparent)]
    Trace(#[from] gadget::trace::TraceError),
    /// The event source of a generated workload failed.
    #[error(transparent)]
    Source(#[from] gadget::source::SourceError),
    /// A parallel job's subtasks could not be set up from the config.
    #[error(transparent)]
    Config(#[from] gadget::config::ConfigError),
    /// A Flink recording names its states as they appear, so it is read twice: not from
    /// standard input.
    #[error("standard input holds a Flink recording, which is read twice (once for its states); give its path, or convert it first with `gadget trace convert`")]
    RecordingOnStdin,
    /// A generated request writes a value longer than any store is handed
    /// ([`gadget::trace::MAX_VALUE_LEN`]).
    #[error(
        "request {request} of the workload is {what}; lower the config's value sizes (a Kafka \
         Streams `aggregate` grows by `bytes_per_record` with each record of a key)"
    )]
    ValueTooLong {
        /// The request's number in the workload, from 1.
        request: u64,
        /// What is wrong with it.
        what: String,
    },
}

/// The state table of a trace. A Flink recording has no header and names its states as they
/// appear, so it is read through once to learn them all (in first-appearance order, the ids
/// its records get when read again).
pub fn trace_state_names(path: &Path) -> Result<Vec<String>, WorkloadError> {
    let mut reader = open_trace(path)?;
    if reader.is_flink_recording() {
        while reader.next_record().map_err(|e| e.in_file(path))?.is_some() {}
    }
    Ok(reader.state_names().to_vec())
}

/// Says on standard error that a producer's generation has gone [`Silence::EVENTS`] events
/// without a request (the driver meanwhile waits for one, with nothing to show): from the
/// producer's thread, the only one that knows. Once per process: the instances of a parallel
/// run, each with its own producer, would otherwise all say the same.
fn warn_silence(said: &str) {
    static SAID: AtomicBool = AtomicBool::new(false);
    if !SAID.swap(true, Ordering::Relaxed) {
        eprintln!("warning: {said}");
    }
}

/// The consumer's end of a running producer.
#[derive(Debug)]
pub struct RequestStream {
    blocks: Receiver<RequestBlock>,
    /// A block received before the driver asked for it (the first, awaited before the start).
    ready: Option<RequestBlock>,
    recycle: SyncSender<RequestBlock>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<(), WorkloadError>>>,
    /// Names of the states, the index being the request's [`StateId`].
    pub state_names: Vec<String>,
    /// The shard whose requests the stream keeps (`None`: all of them).
    shard: Option<Shard>,
    told: Arc<Told>,
}

impl RequestStream {
    /// Starts producing `source` on its own thread.
    pub fn start(source: WorkloadSource) -> Result<RequestStream, WorkloadError> {
        RequestStream::start_with(source, Production::default())
    }

    /// Starts producing `source`, giving every request an event time: the requests between
    /// two watermarks are spread evenly over the event time between them (requests before
    /// the first watermark get its time; those after the last finite one get that one's).
    pub fn start_with_event_times(source: WorkloadSource) -> Result<RequestStream, WorkloadError> {
        RequestStream::start_with(
            source,
            Production {
                event_times: true,
                shard: None,
            },
        )
    }

    /// Starts producing `source` as `production` says.
    pub fn start_with(
        source: WorkloadSource,
        production: Production,
    ) -> Result<RequestStream, WorkloadError> {
        let told = Arc::new(Told::default());
        let producer_told = told.clone();
        let (tx, rx) = sync_channel::<RequestBlock>(QUEUE_BLOCKS);
        let (recycle_tx, recycle_rx) = sync_channel::<RequestBlock>(QUEUE_BLOCKS + 2);
        let stop = Arc::new(AtomicBool::new(false));
        let producer_stop = stop.clone();
        let sink = {
            let stop = stop.clone();
            move || BlockSink::new(tx, recycle_rx, stop, production, producer_told)
        };
        let (state_names, thread) = match source {
            WorkloadSource::Trace { path, limit } => {
                let (names, mut reader) = if path.as_os_str() == "-" {
                    // standard input is read once: the header names the states
                    let reader = open_trace(&path)?;
                    if reader.is_flink_recording() {
                        return Err(WorkloadError::RecordingOnStdin);
                    }
                    (reader.state_names().to_vec(), reader)
                } else {
                    (trace_state_names(&path)?, open_trace(&path)?)
                };
                let thread = std::thread::Builder::new()
                    .name("gadget-trace-reader".into())
                    .spawn(move || {
                        let mut out = sink();
                        // what was read before a damaged record is still issued
                        let read = feed_trace(&mut reader, &mut out, limit, &path);
                        let sent = out.finish();
                        read.and(sent)
                    })
                    .expect("spawning a thread");
                (names, thread)
            }
            WorkloadSource::Generate { config, limit } => {
                let names = config.build_operator().states();
                // fail early, on this thread, when the event source cannot open
                drop(config.open_source()?);
                let thread = std::thread::Builder::new()
                    .name("gadget-generator".into())
                    .spawn(move || {
                        let mut operator = config.build_operator();
                        let stop = producer_stop.clone();
                        let source = Box::new(
                            config
                                .open_source()?
                                .take_while(move |_| !stop.load(Ordering::Relaxed)),
                        );
                        let mut out = sink();
                        let limit = limit.or(config.limit);
                        let mut silence = Silence::watching(limit);
                        let generated = gadget::generate::generate(
                            source,
                            operator.as_mut(),
                            &mut out,
                            limit,
                            &mut |counts| {
                                if let Some(said) = silence.notice(counts) {
                                    warn_silence(&said);
                                }
                            },
                        );
                        let sent = out.finish();
                        generated?;
                        sent
                    })
                    .expect("spawning a thread");
                (names, thread)
            }
            WorkloadSource::JobSubtask { config, limit } => {
                let names = config.build_operator().states();
                drop(config.open_job_inputs()?);
                let configs: Vec<Config> = (0..config.parallel.parallelism)
                    .map(|i| config.for_subtask(i))
                    .collect::<Result<_, _>>()?;
                let thread = std::thread::Builder::new()
                    .name("gadget-job-generator".into())
                    .spawn(move || {
                        let build = |i: u32| configs[i as usize].build_operator();
                        let job = SubtaskInJob {
                            router: config.subtask_router(),
                            build_operator: &build,
                            subtask: config.parallel.subtask.unwrap_or(0),
                            limit: limit.or(config.limit),
                        };
                        let mut out = sink();
                        out.placed = true;
                        let mut silence = Silence::watching(job.limit);
                        let generated = job.generate(
                            config.open_job_inputs()?,
                            &mut out,
                            &mut |at| {
                                if let Some(said) = silence.notice_at(at.read, at.requests) {
                                    warn_silence(&said);
                                }
                            },
                            &producer_stop,
                        );
                        let sent = out.finish();
                        generated?;
                        sent
                    })
                    .expect("spawning a thread");
                (names, thread)
            }
        };
        Ok(RequestStream {
            blocks: rx,
            ready: None,
            recycle: recycle_tx,
            stop,
            thread: Some(thread),
            state_names,
            shard: production.shard,
            told,
        })
    }

    /// The next block, waiting for the producer; `None` at the end.
    pub fn next_block(&mut self) -> Option<RequestBlock> {
        self.ready.take().or_else(|| self.blocks.recv().ok())
    }

    /// The next block if one is ready now, without waiting.
    pub fn try_next_block(&mut self) -> Option<RequestBlock> {
        self.ready.take().or_else(|| self.blocks.try_recv().ok())
    }

    /// Waits until the producer has its first block ready (or has ended), looking at `stop`
    /// every 50 ms; false when `stop` was set first.
    pub fn wait_for_first_block(&mut self, stop: &AtomicBool) -> bool {
        if self.ready.is_some() {
            return true;
        }
        loop {
            match self
                .blocks
                .recv_timeout(std::time::Duration::from_millis(50))
            {
                Ok(block) => {
                    self.ready = Some(block);
                    return true;
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return true,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if stop.load(Ordering::Relaxed) {
                        return false;
                    }
                }
            }
        }
    }

    /// Hands an issued block back for reuse.
    pub fn recycle(&mut self, mut block: RequestBlock) {
        block.clear();
        let _ = self.recycle.try_send(block);
    }

    /// The workload's requests for other clients after this stream's last one (a job
    /// subtask's or a shard's stream that was read to its end; 0 otherwise).
    pub fn others_after_last(&self) -> u64 {
        self.told.others_after.load(Ordering::Relaxed)
    }

    /// The shard whose requests the stream keeps (`None`: every request).
    pub fn shard(&self) -> Option<Shard> {
        self.shard
    }

    /// The event time of the workload's first request, whichever client issues it: known once
    /// a block with event times was received ([`RequestStream::start_with_event_times`]).
    pub fn first_event_time_us(&self) -> Option<i64> {
        Some(self.told.first_event_time_us.load(Ordering::Relaxed)).filter(|&t| t != NO_EVENT_TIME)
    }

    /// Stops the producer early and waits for it; returns its error, if it had one.
    pub fn finish(mut self) -> Result<(), WorkloadError> {
        self.stop.store(true, Ordering::Relaxed);
        // unblock a producer waiting on a full queue
        while self.blocks.try_recv().is_ok() {}
        drop(self.blocks);
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(panic)) => std::panic::resume_unwind(panic),
            None => Ok(()),
        }
    }
}

/// Hands the records of `reader` to `out`, up to `limit` requests, until `out` takes no more.
fn feed_trace(
    reader: &mut gadget::trace::TraceReader,
    out: &mut BlockSink,
    limit: Option<u64>,
    path: &Path,
) -> Result<(), WorkloadError> {
    let mut left = limit.unwrap_or(u64::MAX);
    while let Some(r) = reader.next_record().map_err(|e| e.in_file(path))? {
        match r {
            RecordRef::Access(_) if left == 0 => break,
            RecordRef::Access(a) => {
                left -= 1;
                out.access(a)
            }
            RecordRef::Watermark { timestamp } => out.watermark(timestamp),
            RecordRef::Event { .. } => {}
        }
        if out.takes_no_more() {
            break;
        }
    }
    Ok(())
}

/// The producer's end: fills blocks and sends them when full.
struct BlockSink {
    tx: SyncSender<RequestBlock>,
    recycled: Receiver<RequestBlock>,
    block: RequestBlock,
    stop: Arc<AtomicBool>,
    closed: bool,
    /// True when requests get event times.
    event_times: bool,
    /// With event times: the requests since the last watermark, timed at the next one.
    segment: Option<RequestBlock>,
    last_watermark: Option<i64>,
    /// True for a job subtask's or a shard's stream: requests carry the workload's others
    /// before them.
    placed: bool,
    /// The workload's requests for other clients since the last request.
    others: u64,
    /// A shard's stream: which requests it keeps.
    filter: Option<ShardFilter>,
    /// With event times and a shard: the requests for other clients since the last request
    /// the segments released.
    carried: u64,
    told: Arc<Told>,
    /// Requests received so far.
    requests: u64,
    /// Why the sink refused a request and closed, if it did.
    refused: Option<WorkloadError>,
}

impl BlockSink {
    fn new(
        tx: SyncSender<RequestBlock>,
        recycled: Receiver<RequestBlock>,
        stop: Arc<AtomicBool>,
        production: Production,
        told: Arc<Told>,
    ) -> Self {
        let event_times = production.event_times;
        BlockSink {
            tx,
            recycled,
            block: RequestBlock::with_capacity(event_times),
            stop,
            closed: false,
            event_times,
            segment: event_times.then(RequestBlock::default),
            last_watermark: None,
            placed: production.shard.is_some(),
            others: 0,
            filter: production.shard.map(ShardFilter::new),
            carried: 0,
            told,
            requests: 0,
            refused: None,
        }
    }

    /// Moves the segment's requests into blocks, timed from `from_ms` to `to_ms` (evenly,
    /// the last one at `to_ms`, whichever shard issues them); a shard's stream keeps its own.
    fn release_segment(&mut self, from_ms: i64, to_ms: i64) {
        let Some(mut segment) = self.segment.take() else {
            return;
        };
        let n = segment.requests.len() as i64;
        let span_us = (to_ms - from_ms).saturating_mul(1000);
        let mut others = std::mem::take(&mut self.carried);
        for (k, r) in segment.requests.iter().enumerate() {
            if self.closed {
                break;
            }
            let offset = (span_us as i128 * (k as i128 + 1) / n as i128) as i64;
            let time_us = from_ms.saturating_mul(1000).saturating_add(offset);
            if k == 0 {
                let _ = self.told.first_event_time_us.compare_exchange(
                    NO_EVENT_TIME,
                    time_us,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                );
            }
            others += segment.others_before(k);
            let key = segment.key(r);
            if let Some(filter) = self.filter.as_mut() {
                if !filter.owns(r.op, r.state, key) {
                    others += 1;
                    continue;
                }
            }
            let key_start = self.block.keys.len() as u32;
            self.block.keys.extend_from_slice(key);
            self.block.requests.push(Request { key_start, ..*r });
            if self.placed {
                self.block.others_before.push(std::mem::take(&mut others));
            }
            self.block.event_times_us.push(time_us);
            if self.block.is_full() {
                self.send();
            }
        }
        self.carried = others;
        segment.clear();
        self.segment = Some(segment);
    }

    fn send(&mut self) {
        let fresh = self
            .recycled
            .try_recv()
            .unwrap_or_else(|_| RequestBlock::with_capacity(self.event_times));
        let full = std::mem::replace(&mut self.block, fresh);
        if self.tx.send(full).is_err() {
            // the driver is gone (stopped or failed): produce no more
            self.closed = true;
            self.stop.store(true, Ordering::Relaxed);
        }
    }

    /// Sends what is left and tells the workload's requests for other clients after the
    /// last one; the error of a request the sink refused, if one was.
    fn finish(mut self) -> Result<(), WorkloadError> {
        if let Some(last) = self.last_watermark {
            self.release_segment(last, last);
        } else {
            self.release_segment(0, 0);
        }
        self.told
            .others_after
            .store(self.others + self.carried, Ordering::Relaxed);
        if !self.closed && !self.block.requests.is_empty() {
            self.send();
        }
        match self.refused.take() {
            Some(refused) => Err(refused),
            None => Ok(()),
        }
    }

    /// Refuses a request with a value no store could be handed: the producer stops, and
    /// [`BlockSink::finish`] gives the error (the run ends with what it measured, partial).
    #[cold]
    fn refuse(&mut self, what: String) {
        self.refused = Some(WorkloadError::ValueTooLong {
            request: self.requests,
            what,
        });
        self.stop.store(true, Ordering::Relaxed);
    }

    /// True once the driver is gone or a request was refused: producing more is useless.
    fn takes_no_more(&self) -> bool {
        self.closed || self.refused.is_some()
    }
}

impl JobSink for BlockSink {
    #[inline]
    fn others(&mut self, requests: u64) {
        self.others += requests;
    }
}

impl AccessSink for BlockSink {
    #[inline]
    fn access(&mut self, a: Access<'_>) {
        if self.takes_no_more() {
            return;
        }
        self.requests += 1;
        if let Err(what) = gadget::trace::check_value_len(a.op, a.value_len) {
            return self.refuse(what);
        }
        if let Some(segment) = self.segment.as_mut() {
            // a shard keeps its own when the segment is timed: the times count every request
            segment.push(&a);
            if self.placed {
                segment.others_before.push(std::mem::take(&mut self.others));
            }
            return;
        }
        if let Some(filter) = self.filter.as_mut() {
            if !filter.owns(a.op, a.state, a.key) {
                self.others += 1;
                return;
            }
        }
        self.block.push(&a);
        if self.placed {
            self.block
                .others_before
                .push(std::mem::take(&mut self.others));
        }
        if self.block.is_full() {
            self.send();
        }
    }

    fn watermark(&mut self, timestamp: i64) {
        if self.segment.is_none() {
            return;
        }
        // the final watermark (+∞) carries no time: what follows the last finite one gets its time
        let to = if timestamp == i64::MAX {
            self.last_watermark.unwrap_or(0)
        } else {
            timestamp
        };
        let from = self.last_watermark.unwrap_or(to).min(to);
        self.release_segment(from, to);
        if timestamp != i64::MAX {
            self.last_watermark = Some(to.max(self.last_watermark.unwrap_or(to)));
        }
    }

    /// The driver is gone or asked the producer to stop: an operator in the middle of an
    /// element's long work (a record in many windows) leaves the rest undone.
    fn stopped(&self) -> bool {
        self.closed || self.stop.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gadget::trace::MAX_VALUE_LEN;

    fn put(value_len: u32) -> Access<'static> {
        Access {
            op: Op::Put,
            state: 0,
            key: b"k",
            value_len,
        }
    }

    #[test]
    fn a_request_writing_a_value_longer_than_any_store_is_handed_ends_the_stream_after_the_ones_before(
    ) {
        let (tx, rx) = sync_channel::<RequestBlock>(QUEUE_BLOCKS);
        let (_recycle_tx, recycle_rx) = sync_channel::<RequestBlock>(1);
        let stop = Arc::new(AtomicBool::new(false));
        let told = Arc::new(Told::default());
        let mut sink = BlockSink::new(tx, recycle_rx, stop.clone(), Production::default(), told);
        sink.access(put(8));
        sink.access(put(MAX_VALUE_LEN));
        sink.access(put(u32::MAX));
        sink.access(put(8));
        assert!(sink.takes_no_more() && stop.load(Ordering::Relaxed));
        let e = sink.finish().unwrap_err().to_string();
        assert_eq!(
            e,
            "request 3 of the workload is a put of a 4294967295-byte value, longer than the \
             67108864 bytes (64 MiB) a value may have; lower the config's value sizes (a Kafka \
             Streams `aggregate` grows by `bytes_per_record` with each record of a key)"
        );
        // the two before it are issued; nothing after it
        let sent: Vec<u32> = rx
            .try_iter()
            .flat_map(|b| b.requests)
            .map(|r| r.value_len)
            .collect();
        assert_eq!(sent, [8, MAX_VALUE_LEN]);
    }
}
