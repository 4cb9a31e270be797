//! The locality measures after the scan, shared out over two threads.
//!
//! The main thread counts the trace's key sequences (the longest measure); a helper shuffles a
//! copy of the trace. Then both take the remaining measures from one list, each the next one
//! nobody has started, so neither core idles while work is left: the two stack distances, the
//! shuffled copy's sequences, and a sample's split-half noise.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};

use crate::locality::{stopped_at, StackDistances};
use crate::sampling::{self, Sampling};
use crate::sequences::unique_sequences_until;
use crate::{mix64, shuffle_until};

/// What the locality measures read.
pub(crate) struct Inputs<'a> {
    /// The trace's (or sample's) keys as dense ids.
    pub ids: &'a [u32],
    /// How many distinct ids.
    pub distinct: usize,
    /// Longest key sequence to count (0: none).
    pub max_len: usize,
    /// The shuffled copy's seed.
    pub shuffle_seed: u64,
    /// The sample `ids` are, if any.
    pub sampling: Sampling,
    /// Keyed requests in the whole trace (the sampled curves' denominator).
    pub keyed: u64,
}

/// The locality measures; each is empty (or `None`) if a stop came before it was done.
#[derive(Default)]
pub(crate) struct Measured {
    /// The trace's stack distances.
    pub stack: StackDistances,
    /// The shuffled copy's stack distances.
    pub stack_shuffled: StackDistances,
    /// The trace's distinct key sequences of length `1..=max_len`.
    pub sequences: Vec<u64>,
    /// The shuffled copy's.
    pub sequences_shuffled: Vec<u64>,
    /// A sample's hit-ratio noise by split halves.
    pub hit_ratio_noise: Option<f64>,
}

/// One measure either thread can take.
#[derive(Clone, Copy)]
enum Task {
    TraceStack,
    SplitHalves,
    ShuffledStack,
    ShuffledSequences,
}

impl Task {
    /// Whether the task reads the shuffled copy (and waits for it).
    fn needs_shuffled(self) -> bool {
        matches!(self, Task::ShuffledStack | Task::ShuffledSequences)
    }
}

impl Measured {
    /// Runs every measure `inputs` call for, on this thread and one more, until `stop`.
    pub(crate) fn run(inputs: &Inputs, stop: &AtomicBool) -> Measured {
        let mut tasks = vec![Task::TraceStack];
        if inputs.sampling.shift() > 0 {
            tasks.push(Task::SplitHalves);
        }
        tasks.push(Task::ShuffledStack);
        if inputs.max_len > 0 {
            tasks.push(Task::ShuffledSequences);
        }
        let next = AtomicUsize::new(0);
        let found = Mutex::new(Measured::default());
        // takes tasks until none is left; `shuffled` gives the copy, waiting for it
        let work = |shuffled: &mut dyn FnMut() -> Option<Arc<Vec<u32>>>| {
            while let Some(&task) = tasks.get(next.fetch_add(1, Ordering::Relaxed)) {
                let copy = if task.needs_shuffled() {
                    match shuffled() {
                        Some(copy) => Some(copy),
                        // the other thread panicked; its join passes that on
                        None => return,
                    }
                } else {
                    None
                };
                inputs.run(
                    task,
                    copy.as_deref().map_or(&[], Vec::as_slice),
                    stop,
                    &found,
                );
            }
        };
        let sequences = std::thread::scope(|scope| {
            let (hand_over, copy) = mpsc::sync_channel(1);
            let work = &work;
            let helper = scope.spawn(move || {
                let mut shuffled = inputs.ids.to_vec();
                shuffle_until(&mut shuffled, inputs.shuffle_seed, stop);
                let shuffled = Arc::new(shuffled);
                // the receiver lives until it has received, unless its thread panicked
                let _ = hand_over.send(Arc::clone(&shuffled));
                work(&mut || Some(Arc::clone(&shuffled)));
            });
            let sequences =
                unique_sequences_until(inputs.ids, inputs.distinct, inputs.max_len, stop);
            let mut received: Option<Arc<Vec<u32>>> = None;
            work(&mut || {
                if received.is_none() {
                    received = copy.recv().ok();
                }
                received.clone()
            });
            if let Err(panic) = helper.join() {
                std::panic::resume_unwind(panic);
            }
            sequences
        });
        let mut measured = found.into_inner().unwrap_or_else(|e| e.into_inner());
        measured.sequences = sequences;
        measured
    }
}

impl Inputs<'_> {
    /// Runs one task (`shuffled` is the copy when the task needs it) and puts its result in
    /// `found`, locked only to put it.
    fn run(&self, task: Task, shuffled: &[u32], stop: &AtomicBool, found: &Mutex<Measured>) {
        let found = || found.lock().unwrap_or_else(|e| e.into_inner());
        match task {
            Task::TraceStack => {
                let stack = StackDistances::of_until(self.ids, self.distinct, stop);
                found().stack = stack;
            }
            Task::SplitHalves => {
                let noise = self.split_half_noise(stop);
                found().hit_ratio_noise = noise;
            }
            Task::ShuffledStack => {
                let stack = StackDistances::of_until(shuffled, self.distinct, stop);
                found().stack_shuffled = stack;
            }
            Task::ShuffledSequences => {
                let sequences = unique_sequences_until(shuffled, self.distinct, self.max_len, stop);
                found().sequences_shuffled = sequences;
            }
        }
    }

    /// The sampling noise of a sample's hit-ratio curve: the sample split in two by a hash of
    /// the key id, each half's curve (at twice the shift), and half their mean absolute
    /// difference. `None` when a half holds no access or a stop came.
    fn split_half_noise(&self, stop: &AtomicBool) -> Option<f64> {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for (i, &id) in self.ids.iter().enumerate() {
            if stopped_at(i, stop) {
                return None;
            }
            if mix64(id as u64) & 1 == 0 {
                a.push(id);
            } else {
                b.push(id);
            }
        }
        if a.is_empty() || b.is_empty() {
            return None;
        }
        let half = Sampling::Shards {
            shift: self.sampling.shift() + 1,
        };
        let curve = |ids: &[u32]| {
            sampling::scaled(
                StackDistances::of_until(ids, self.distinct, stop),
                half,
                self.keyed,
            )
            .hit_ratio_curve()
        };
        let (a, b) = (curve(&a), curve(&b));
        (!stop.load(Ordering::Relaxed)).then(|| sampling::curve_difference(&a, &b) / 2.0)
    }
}
