//! One subtask's requests in its job's order: what a client that drives some subtasks of a
//! parallel job needs to keep one arrival schedule with the clients that drive the others.
//!
//! The job's inputs are read once on one thread and every subtask's operator runs, each
//! record going to its key's subtask and each watermark to every subtask in subtask order.
//! That fixes one order of all the job's requests: by input record, then subtask, then the
//! order the operator issued them. The chosen subtask's requests reach the sink in that
//! order; the others' are only counted, and the sink learns how many of them come before
//! each of its own ([`JobSink::others`]). Every client computing the same job agrees on the
//! order without talking, so a schedule drawn over it is the job's, whoever issues what.
//!
//! The chosen subtask's requests are exactly those of generating it alone
//! ([`super::AllSubtasks`] gives the same).

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};

use super::{read_inputs, JobInputs, JobProgress, Lane, Read};
use crate::access::{Access, AccessSink, Op, StateId};
use crate::generate::{Generated, Generator};
use crate::operator::Operator;
use crate::source::interleave::Interleaver;
use crate::source::subtask::SubtaskRouter;
use crate::source::{SourceError, StreamElement};

/// Receives one subtask's requests, and how many of the job's other requests come between.
pub trait JobSink: AccessSink {
    /// `requests` of other subtasks come, in the job's order, before this sink's next request
    /// (or after its last one).
    fn others(&mut self, requests: u64);
}

/// One subtask of a job, generated with its place among all the job's requests.
pub struct SubtaskInJob<'a> {
    /// The keyed exchange: how many subtasks, and which one each key goes to.
    pub router: SubtaskRouter,
    /// Builds subtask i's operator (with the key groups of i).
    pub build_operator: &'a dyn Fn(u32) -> Box<dyn Operator>,
    /// The subtask whose requests the sink receives.
    pub subtask: u32,
    /// The job's requests at most, counted over every subtask in the job's order: each
    /// client stops at the same place of the job.
    pub limit: Option<u64>,
}

/// What the subtasks' sinks share: the job's requests so far and the others' not yet told.
struct Tally {
    requests: Cell<u64>,
    pending_others: Cell<u64>,
    limit: u64,
}

impl Tally {
    /// Counts `n` requests of the job; how many of them fit under the limit.
    #[inline]
    fn take(&self, n: u64) -> u64 {
        let room = self.limit - self.requests.get();
        let taken = n.min(room);
        self.requests.set(self.requests.get() + taken);
        taken
    }

    fn is_full(&self) -> bool {
        self.requests.get() >= self.limit
    }
}

/// Another subtask's sink: counts its requests.
struct Counted<'t> {
    tally: &'t Tally,
}

impl AccessSink for Counted<'_> {
    #[inline]
    fn access(&mut self, _: Access<'_>) {
        let taken = self.tally.take(1);
        let pending = &self.tally.pending_others;
        pending.set(pending.get() + taken);
    }

    #[inline]
    fn access_all(&mut self, _: StateId, _: &[u8], requests: &[(Op, u32)]) {
        let taken = self.tally.take(requests.len() as u64);
        let pending = &self.tally.pending_others;
        pending.set(pending.get() + taken);
    }
}

/// The chosen subtask's sink: tells the others counted so far, then passes the request on.
struct Own<'t, S: JobSink> {
    tally: &'t Tally,
    inner: &'t mut S,
}

impl<S: JobSink> Own<'_, S> {
    #[inline]
    fn tell_others(&mut self) {
        let others = self.tally.pending_others.replace(0);
        if others > 0 {
            self.inner.others(others);
        }
    }
}

impl<S: JobSink> AccessSink for Own<'_, S> {
    #[inline]
    fn access(&mut self, a: Access<'_>) {
        if self.tally.take(1) == 1 {
            self.tell_others();
            self.inner.access(a);
        }
    }

    fn event(&mut self, input: u8) {
        self.inner.event(input);
    }

    fn watermark(&mut self, timestamp: i64) {
        self.inner.watermark(timestamp);
    }
}

/// Records read between two looks at the stop flag.
const STOP_EVERY: u64 = 4096;

impl SubtaskInJob<'_> {
    /// Generates the chosen subtask into `sink`, in the job's order, until the end of
    /// `inputs`, the job's limit or `stop` (looked at every few thousand records, where
    /// `progress` hears the records read and the job's requests so far; the result is then
    /// `interrupted`). A read error ends it with the error.
    ///
    /// # Panics
    /// When the subtask is not below the router's parallelism.
    pub fn generate<S: JobSink>(
        &self,
        inputs: JobInputs,
        sink: &mut S,
        progress: &mut dyn FnMut(JobProgress),
        stop: &AtomicBool,
    ) -> Result<Generated, SourceError> {
        let p = self.router.parallelism();
        assert!(self.subtask < p, "subtask {} of {p}", self.subtask);
        let tally = Tally {
            requests: Cell::new(0),
            pending_others: Cell::new(0),
            limit: self.limit.unwrap_or(u64::MAX),
        };
        let merge = match &inputs {
            JobInputs::One {
                interleaving: Some(mode),
                ..
            } => Some(Interleaver::tagged(*mode)),
            JobInputs::One { .. } => None,
            JobInputs::Two { interleaving, .. } => Some(Interleaver::separate(*interleaving)),
        };
        let mut own = Own {
            tally: &tally,
            inner: sink,
        };
        let mut counted: Vec<Counted<'_>> = (1..p).map(|_| Counted { tally: &tally }).collect();
        let mut counted = counted.iter_mut();
        let mut sinks: Vec<&mut dyn AccessSink> = Vec::with_capacity(p as usize);
        let mut chosen_sink = Some(&mut own as &mut dyn AccessSink);
        for i in 0..p {
            if i == self.subtask {
                sinks.push(chosen_sink.take().expect("one chosen subtask"));
            } else {
                sinks.push(counted.next().expect("one counted sink per other subtask"));
            }
        }
        let mut operators: Vec<Box<dyn Operator>> = (0..p).map(self.build_operator).collect();
        let mut lanes: Vec<Lane<'_, dyn AccessSink>> = sinks
            .into_iter()
            .zip(operators.iter_mut())
            .enumerate()
            .map(|(i, (sink, operator))| Lane {
                subtask: i as u32,
                merge: merge.clone(),
                generator: Generator::start(operator.as_mut(), sink, None),
            })
            .collect();
        let mut pass = Pass {
            router: &self.router,
            lanes: &mut lanes,
            tally: &tally,
            read: 0,
            progress,
        };
        let ended = pass.run(inputs, stop);
        let chosen = self.subtask as usize;
        let mut result = None;
        for (i, mut lane) in lanes.into_iter().enumerate() {
            match ended {
                Ok(End::Input) => {
                    // what the interleaving still holds, then the final watermark's work
                    lane.end(1);
                    lane.end(2);
                }
                Ok(End::Limit | End::Stop) | Err(_) => lane.generator.interrupt(),
            }
            let mut generated = lane.generator.finish();
            generated.interrupted = matches!(ended, Ok(End::Stop));
            if i == chosen {
                result = Some(generated);
            }
        }
        own.tell_others();
        ended?;
        Ok(result.expect("the chosen subtask ran"))
    }
}

/// How a pass over the inputs ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// The inputs ended.
    Input,
    /// The job's limit was reached.
    Limit,
    /// `stop` was set.
    Stop,
}

/// The reading side: every record to its subtasks' lanes, in order.
struct Pass<'p, 'l> {
    router: &'p SubtaskRouter,
    lanes: &'p mut [Lane<'l, dyn AccessSink + 'l>],
    tally: &'p Tally,
    read: u64,
    progress: &'p mut dyn FnMut(JobProgress),
}

impl Pass<'_, '_> {
    fn run(&mut self, inputs: JobInputs, stop: &AtomicBool) -> Result<End, SourceError> {
        // two inputs are read one record of each in turn, as the one-pass generation reads
        // them: the order of reading places the subtasks' requests among each other
        let ended = read_inputs(inputs, |read| match read {
            Read::Record(input, element) => self.route(input, element, stop),
            Read::End(input) => {
                for lane in self.lanes.iter_mut() {
                    lane.end(input);
                }
                self.tally.is_full().then_some(End::Limit)
            }
        })?;
        Ok(ended.unwrap_or(End::Input))
    }

    /// Passes a record to its subtask (an event) or to every subtask in order (a watermark,
    /// or an event of an exchange that sends every event everywhere); how the pass ends when it
    /// ends here.
    #[inline]
    fn route(&mut self, input: u8, element: StreamElement, stop: &AtomicBool) -> Option<End> {
        match element {
            StreamElement::Event(e) => match self.router.subtask_of(&e.key) {
                Some(subtask) => {
                    self.lanes[subtask as usize].push(input, StreamElement::Event(e));
                }
                None => {
                    for lane in self.lanes.iter_mut() {
                        lane.push(input, StreamElement::Event(e.clone()));
                    }
                }
            },
            StreamElement::Watermark(w) => {
                for lane in self.lanes.iter_mut() {
                    lane.push(input, StreamElement::Watermark(w));
                }
            }
        }
        if self.tally.is_full() {
            return Some(End::Limit);
        }
        self.read += 1;
        if self.read % STOP_EVERY != 0 {
            return None;
        }
        (self.progress)(JobProgress {
            read: self.read,
            requests: self.tally.requests.get(),
        });
        stop.load(Ordering::Relaxed).then_some(End::Stop)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{alone, job, join, separate, stream, window, Build};
    use super::*;
    use crate::access::VecSink;
    use crate::source::interleave::Interleaving;

    /// A subtask's records with its requests' places in the job's order.
    #[derive(Default)]
    struct Placed {
        records: VecSink,
        places: Vec<u64>,
        next_place: u64,
        trailing: u64,
    }

    impl AccessSink for Placed {
        fn access(&mut self, a: Access<'_>) {
            self.records.access(a);
            self.places.push(self.next_place);
            self.next_place += 1;
            self.trailing = 0;
        }
        fn event(&mut self, input: u8) {
            self.records.event(input);
        }
        fn watermark(&mut self, timestamp: i64) {
            self.records.watermark(timestamp);
        }
    }

    impl JobSink for Placed {
        fn others(&mut self, requests: u64) {
            self.next_place += requests;
            self.trailing += requests;
        }
    }

    fn placed(p: u32, i: u32, inputs: JobInputs, build: Build, limit: Option<u64>) -> Placed {
        let built = |s| build(p, s);
        let job = SubtaskInJob {
            router: SubtaskRouter::new(p, 128),
            build_operator: &built,
            subtask: i,
            limit,
        };
        let mut sink = Placed::default();
        let generated = job
            .generate(inputs, &mut sink, &mut |_| {}, &AtomicBool::new(false))
            .unwrap();
        assert!(!generated.interrupted);
        sink
    }

    #[test]
    fn progress_hears_the_records_read_and_the_jobs_requests_so_far() {
        let built = |s| window(2, s);
        let subtask = SubtaskInJob {
            router: SubtaskRouter::new(2, 128),
            build_operator: &built,
            subtask: 1,
            limit: None,
        };
        let inputs = JobInputs::One {
            stream: stream(job(false)),
            interleaving: None,
        };
        let mut heard = Vec::new();
        let mut sink = Placed::default();
        subtask
            .generate(
                inputs,
                &mut sink,
                &mut |at| heard.push(at),
                &AtomicBool::new(false),
            )
            .unwrap();
        // 20,400 records: a tick every STOP_EVERY, each with the requests of both subtasks
        let read: Vec<u64> = heard.iter().map(|at| at.read).collect();
        assert_eq!(read, (1..=4).map(|t| t * STOP_EVERY).collect::<Vec<_>>());
        let requests: Vec<u64> = heard.iter().map(|at| at.requests).collect();
        assert!(requests.windows(2).all(|w| w[0] < w[1]), "{requests:?}");
        let whole = sink.next_place;
        assert!(requests[3] < whole, "{requests:?} of {whole}");
    }

    #[test]
    fn each_subtask_gets_its_own_requests_and_together_they_fill_the_job_order() {
        let one = || JobInputs::One {
            stream: stream(job(false)),
            interleaving: None,
        };
        let tagged = || JobInputs::One {
            stream: stream(job(true)),
            interleaving: Some(Interleaving::RoundRobin),
        };
        let separate = || separate(Interleaving::ByTime);
        let cases: [(&dyn Fn() -> JobInputs, Build); 3] =
            [(&one, window), (&tagged, join), (&separate, join)];
        for (inputs, build) in cases {
            for p in [1, 3, 7] {
                let mut places = Vec::new();
                let mut total = None;
                for i in 0..p {
                    let got = placed(p, i, inputs(), build, None);
                    assert_eq!(
                        got.records.records,
                        alone(p, i, inputs, build, None),
                        "p {p}, {i}"
                    );
                    // every subtask counts the whole job
                    let job_total = got.next_place;
                    assert_eq!(*total.get_or_insert(job_total), job_total);
                    places.extend(got.places);
                }
                places.sort_unstable();
                let expected: Vec<u64> = (0..total.unwrap()).collect();
                assert_eq!(places, expected, "p {p}: each place of the job once");
            }
        }
    }

    #[test]
    fn the_limit_is_the_jobs_and_every_subtask_stops_at_the_same_place() {
        let one = || JobInputs::One {
            stream: stream(job(false)),
            interleaving: None,
        };
        let mut places = Vec::new();
        for i in 0..3 {
            let got = placed(3, i, one(), window, Some(5_000));
            assert_eq!(got.next_place, 5_000);
            places.extend(got.places);
        }
        places.sort_unstable();
        assert_eq!(places, (0..5_000).collect::<Vec<u64>>());
    }

    #[test]
    fn a_stop_interrupts_the_pass() {
        let long: Vec<StreamElement> = (0..4).flat_map(|_| job(false)).collect();
        let built = |s| window(2, s);
        let job = SubtaskInJob {
            router: SubtaskRouter::new(2, 128),
            build_operator: &built,
            subtask: 1,
            limit: None,
        };
        let inputs = JobInputs::One {
            stream: stream(long),
            interleaving: None,
        };
        let mut sink = Placed::default();
        let generated = job
            .generate(inputs, &mut sink, &mut |_| {}, &AtomicBool::new(true))
            .unwrap();
        assert!(generated.interrupted && generated.truncated);
        assert!(generated.counts.events < 2 * 20_000);
    }
}
