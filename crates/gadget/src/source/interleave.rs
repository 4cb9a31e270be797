//! How a two-input operator sees its inputs: both streams merged into one, with the combined
//! watermark (the minimum of the inputs' watermarks) announced when it advances.

use std::collections::VecDeque;

use super::element::StreamElement;
use super::{ElementStream, SourceError};

/// How a two-input operator takes records from its inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Interleaving {
    /// Flink's two-input processor when both inputs have data: one record (event or watermark)
    /// from each input in turn, starting with input 1. Reproduces the reference recordings.
    #[default]
    RoundRobin,
    /// In the order the records come from the combined source (for one file: file order).
    /// With two separate sources this is the same as `ByTime`.
    SourceOrder,
    /// The record with the earlier time first (an event's timestamp, a watermark's value);
    /// ties go to input 1.
    ByTime,
}

enum Inputs {
    /// One stream whose events carry input 1 or 2; watermarks go to both inputs.
    Tagged(ElementStream),
    /// Two streams, one per input, each with its own watermarks.
    Separate([ElementStream; 2]),
}

/// Merges a stream whose events carry input 1 or 2 (watermarks go to both inputs) into the
/// sequence a two-input operator processes.
///
/// It pulls from its source(s) what an [`Interleaver`] needs to decide the next record.
pub struct TwoInputMerger {
    inputs: Inputs,
    merge: Interleaver,
}

impl std::fmt::Debug for TwoInputMerger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TwoInputMerger")
            .field("mode", &self.merge.mode)
            .finish()
    }
}

impl TwoInputMerger {
    /// Merges `source`'s two inputs.
    pub fn new(source: ElementStream, mode: Interleaving) -> Self {
        TwoInputMerger {
            inputs: Inputs::Tagged(source),
            merge: Interleaver::tagged(mode),
        }
    }

    /// Merges two separate streams: `left` becomes input 1 and `right` input 2, whatever
    /// inputs their events carried.
    pub fn separate(left: ElementStream, right: ElementStream, mode: Interleaving) -> Self {
        TwoInputMerger {
            inputs: Inputs::Separate([left, right]),
            merge: Interleaver::separate(mode),
        }
    }
}

impl Iterator for TwoInputMerger {
    type Item = Result<StreamElement, SourceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(rec) = self.merge.pop() {
                return Some(Ok(rec));
            }
            // nothing wanted: every input ended and was taken
            let input = self.merge.wanted()?;
            let pulled = match &mut self.inputs {
                Inputs::Tagged(source) => source.next(),
                Inputs::Separate(streams) => streams[input].next(),
            };
            match pulled {
                None => self.merge.end(input),
                Some(Err(e)) => return Some(Err(e)),
                Some(Ok(rec)) => match self.inputs {
                    Inputs::Tagged(_) => self.merge.push_tagged(rec),
                    Inputs::Separate(_) => self.merge.push_input(input, rec),
                },
            }
        }
    }
}

/// The interleaving of a two-input operator's inputs, as records are pushed into it: decides
/// the next record the operator processes as soon as the records so far decide it, and
/// combines the inputs' watermarks (the minimum, announced when it advances).
///
/// [`TwoInputMerger`] pulls its records from streams; the subtasks of one pass over a job's
/// inputs (`crate::parallel`) push theirs. Both give the same sequence.
#[derive(Debug, Clone)]
pub struct Interleaver {
    mode: Interleaving,
    /// True when the inputs are one tagged stream (they end together).
    tagged: bool,
    queues: [VecDeque<StreamElement>; 2],
    ended: [bool; 2],
    input_watermark: [Option<i64>; 2],
    combined: Option<i64>,
    turn: usize,
}

impl Interleaver {
    /// For one stream whose events carry input 1 or 2, its watermarks both inputs':
    /// [`Interleaver::push_tagged`].
    pub fn tagged(mode: Interleaving) -> Self {
        Self::with(mode, true)
    }

    /// For two streams, one per input, each with its own watermarks:
    /// [`Interleaver::push_input`]. Source order is by time here (two streams have no common
    /// order).
    pub fn separate(mode: Interleaving) -> Self {
        let mode = if mode == Interleaving::SourceOrder {
            Interleaving::ByTime
        } else {
            mode
        };
        Self::with(mode, false)
    }

    fn with(mode: Interleaving, tagged: bool) -> Self {
        Interleaver {
            mode,
            tagged,
            queues: [VecDeque::new(), VecDeque::new()],
            ended: [false; 2],
            input_watermark: [None, None],
            combined: None,
            turn: 0,
        }
    }

    /// The next record of the tagged stream: an event goes to its input (2, or else 1), a
    /// watermark to both.
    pub fn push_tagged(&mut self, rec: StreamElement) {
        match rec {
            // one queue keeps the stream's order
            rec if self.mode == Interleaving::SourceOrder => self.queues[0].push_back(rec),
            StreamElement::Watermark(w) => {
                self.queues[0].push_back(StreamElement::Watermark(w));
                self.queues[1].push_back(StreamElement::Watermark(w));
            }
            StreamElement::Event(e) => {
                let q = if e.input == 2 { 1 } else { 0 };
                self.queues[q].push_back(StreamElement::Event(e));
            }
        }
    }

    /// The next record of input `input` (0: left, 1: right) of separate streams; its events
    /// become events of input 1 or 2.
    pub fn push_input(&mut self, input: usize, rec: StreamElement) {
        let input = input.min(1);
        let rec = match rec {
            StreamElement::Event(mut ev) => {
                ev.input = input as u8 + 1;
                StreamElement::Event(ev)
            }
            w => w,
        };
        self.queues[input].push_back(rec);
    }

    /// Input `input` has no more records (of a tagged stream: both inputs).
    pub fn end(&mut self, input: usize) {
        if self.tagged {
            self.ended = [true, true];
        } else {
            self.ended[input.min(1)] = true;
        }
    }

    /// The input whose next record [`Interleaver::pop`] waits for (of a tagged stream, the
    /// stream's); `None` once every input ended and every record was taken.
    pub fn wanted(&self) -> Option<usize> {
        let waits = |i: usize| self.queues[i].is_empty() && !self.ended[i];
        match self.mode {
            Interleaving::RoundRobin => {
                let other = 1 - self.turn;
                if waits(self.turn) {
                    Some(self.turn)
                } else if self.queues[self.turn].is_empty() && waits(other) {
                    Some(other)
                } else {
                    None
                }
            }
            Interleaving::ByTime => (0..2).find(|&i| waits(i)),
            Interleaving::SourceOrder => waits(0).then_some(0),
        }
    }

    /// Takes the next record from an input, once the records so far decide which: `None`
    /// while it waits for the [`Interleaver::wanted`] input, or when nothing is left.
    fn take(&mut self) -> Option<(usize, StreamElement)> {
        if self.wanted().is_some() {
            return None;
        }
        match self.mode {
            Interleaving::RoundRobin => {
                // Flink's two-input processor: one record from each input in turn, the other
                // input's when this one has ended
                if self.queues[self.turn].is_empty() {
                    self.turn = 1 - self.turn;
                }
                let input = self.turn;
                let rec = self.queues[input].pop_front();
                self.turn = 1 - input;
                rec.map(|r| (input, r))
            }
            Interleaving::ByTime => {
                let time = |r: Option<&StreamElement>| match r {
                    Some(StreamElement::Event(e)) => Some(e.timestamp),
                    Some(StreamElement::Watermark(w)) => Some(*w),
                    None => None,
                };
                let input = match (time(self.queues[0].front()), time(self.queues[1].front())) {
                    (None, None) => return None,
                    (Some(_), None) => 0,
                    (None, Some(_)) => 1,
                    (Some(a), Some(b)) => usize::from(b < a),
                };
                self.queues[input].pop_front().map(|r| (input, r))
            }
            Interleaving::SourceOrder => self.queues[0].pop_front().map(|r| (0, r)),
        }
    }

    /// The next record the operator processes, once it is decided: an event, or the combined
    /// watermark when it advances; `None` while the next one waits for
    /// [`Interleaver::wanted`], or when nothing is left.
    pub fn pop(&mut self) -> Option<StreamElement> {
        loop {
            let (input, rec) = self.take()?;
            match rec {
                StreamElement::Event(e) => return Some(StreamElement::Event(e)),
                StreamElement::Watermark(w) => {
                    if self.mode == Interleaving::SourceOrder {
                        self.input_watermark = [Some(w), Some(w)];
                    } else {
                        self.input_watermark[input] = Some(w);
                    }
                    if let [Some(a), Some(b)] = self.input_watermark {
                        let min = a.min(b);
                        if self.combined.is_none_or(|c| min > c) {
                            self.combined = Some(min);
                            return Some(StreamElement::Watermark(min));
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::Key;
    use crate::source::Event;

    fn ev(input: u8, t: i64) -> StreamElement {
        StreamElement::Event(Event {
            key: Key::Long(0),
            timestamp: t,
            input,
            closes: false,
            payload: 0,
        })
    }

    fn stream(v: Vec<StreamElement>) -> ElementStream {
        Box::new(v.into_iter().map(Ok))
    }

    fn show(m: TwoInputMerger) -> Vec<String> {
        m.map(|r| match r.unwrap() {
            StreamElement::Event(e) => format!("{}@{}", e.input, e.timestamp),
            StreamElement::Watermark(w) => format!("W{w}"),
        })
        .collect()
    }

    #[test]
    fn round_robin_alternates_records_and_waits_for_both_watermarks() {
        // One tagged stream: the watermark after three events goes to both inputs.
        let s = stream(vec![
            ev(1, 1),
            ev(1, 2),
            ev(2, 3),
            StreamElement::Watermark(3),
            ev(1, 4),
        ]);
        let got = show(TwoInputMerger::new(s, Interleaving::RoundRobin));
        // input 1: 1, 2, W3, 4; input 2: 3, W3 -> 1@1 2@3 1@2 (W3 on input 2) (W3 on input 1 -> combined 3) 1@4
        assert_eq!(got, vec!["1@1", "2@3", "1@2", "W3", "1@4"]);
    }

    #[test]
    fn separate_sources_by_time_take_the_earlier_record() {
        let left = stream(vec![ev(0, 1), ev(0, 5), StreamElement::Watermark(5)]);
        let right = stream(vec![ev(0, 2), ev(0, 3), StreamElement::Watermark(4)]);
        let got = show(TwoInputMerger::separate(left, right, Interleaving::ByTime));
        assert_eq!(got, vec!["1@1", "2@2", "2@3", "1@5", "W4"]);
    }

    #[test]
    fn separate_sources_round_robin_and_the_combined_watermark_is_the_minimum() {
        let left = stream(vec![
            ev(0, 1),
            StreamElement::Watermark(10),
            StreamElement::Watermark(20),
        ]);
        let right = stream(vec![ev(0, 2), StreamElement::Watermark(15)]);
        let got = show(TwoInputMerger::separate(
            left,
            right,
            Interleaving::RoundRobin,
        ));
        assert_eq!(got, vec!["1@1", "2@2", "W10", "W15"]);
    }
}
